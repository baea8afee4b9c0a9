pub mod disk;
pub mod edit_model;
pub mod memory;
