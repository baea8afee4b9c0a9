pub mod disk;
pub mod edit_model;
pub mod memory;
pub mod tree_model;
