//! The crate's integration tests, one module per file, built as one test executable
//! (one link instead of one per file).

#[path = "form.rs"]
mod form;
#[path = "tensor.rs"]
mod tensor;
#[path = "tensor_physics.rs"]
mod tensor_physics;
