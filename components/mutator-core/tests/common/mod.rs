pub mod edit_model;
