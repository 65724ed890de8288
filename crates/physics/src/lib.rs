//! Pointwise physics in the form of Knepley, Rupp & Terrel (2016), eq. (2.1)/(4.1):
//!
//! ```text
//! ∫ φ · f0(u, ∇u, a, ∇a, x) + ∇φ : f1(u, ∇u, a, ∇a, x) = 0
//! ```
//!
//! with the Jacobian blocks `g0 = ∂f0/∂u`, `g1 = ∂f0/∂∇u`, `g2 = ∂f1/∂u`, `g3 = ∂f1/∂∇u`.
//! Each physics is defined once in Rust (generic over `f32`/`f64`) and also carries the
//! same functions as CUDA C source with a fixed signature ([`CudaPhysics`]), which the GPU
//! kernels inline. Tests check that both halves agree.

mod point;

pub use point::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
