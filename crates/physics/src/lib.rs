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
//!
//! Physics: [`Poisson`], [`PoissonVarCoef`] (coefficient as auxiliary field),
//! [`Elasticity`], [`Mass`] (BP1), [`ScreenedPoisson`] (BP3 operator with a shift) and
//! [`NonlinearDiffusion`]. Each can carry the forcing of a [`Manufactured`] solution, whose
//! exact solution, gradient, forcing and boundary flux are available on the host and the
//! forcing and exact solution also as CUDA C.
//!
//! [`ModelPhysics`] is the physics of problem files: the equation chosen by name, and per
//! region coefficients and sources given as constants or expressions ([`Coef`]).

mod coefficient;
mod cuda_source;
mod elasticity;
mod error;
mod manufactured;
mod mass;
mod model;
mod model_cuda;
mod nonlinear_diffusion;
mod point;
mod poisson;
mod poisson_varcoef;
mod screened_poisson;
mod shared;

pub use coefficient::{Coef, MAX_VARIABLES};
pub use elasticity::Elasticity;
pub use error::PhysicsError;
pub use manufactured::{varcoef_kappa, varcoef_kappa_cuda, Manufactured};
pub use mass::Mass;
pub use model::{Material, ModelKind, ModelPhysics, Moduli, Region};
pub use nonlinear_diffusion::NonlinearDiffusion;
pub use point::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
pub use poisson::Poisson;
pub use poisson_varcoef::PoissonVarCoef;
pub use screened_poisson::ScreenedPoisson;
pub use shared::SharedPhysics;
