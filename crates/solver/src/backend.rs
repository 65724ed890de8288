//! The vector backend that Krylov methods are written against.
//!
//! CG needs only a handful of vector operations, an operator application and a
//! preconditioner application. Writing the algorithm against this trait lets one
//! implementation run on host vectors ([`crate::CpuSpace`]) and, later, on GPU device
//! buffers, whose backend fills in the same methods with kernel launches.

use ferrofem_base::Real;

use crate::SolverError;

/// A vector space with an operator `A` and a preconditioner `M⁻¹` on it.
///
/// Every method returns a `Result` because a device backend can fail (out of memory, a
/// failed launch); host backends fail only on mismatched lengths. Reductions return `f64`
/// whatever `T` is, so that f32 solves do not lose their stopping test to rounding.
pub trait KrylovSpace<T: Real> {
    /// The vector type (`Vec<T>` on the host, a device buffer on the GPU).
    type Vector;

    /// The length of the vectors (the number of unknowns).
    fn dim(&self) -> usize;
    /// A new vector of zeros.
    fn zeros(&self) -> Result<Self::Vector, SolverError>;
    /// `aᵀb`, accumulated in `f64` in an order that does not depend on thread count.
    fn dot(&self, a: &Self::Vector, b: &Self::Vector) -> Result<f64, SolverError>;
    /// `y ← y + αx`.
    fn axpy(&self, alpha: T, x: &Self::Vector, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// `y ← x + βy`.
    fn xpby(&self, x: &Self::Vector, beta: T, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// `y ← x`.
    fn copy(&self, x: &Self::Vector, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// `y ← A x`.
    fn apply(&self, x: &Self::Vector, y: &mut Self::Vector) -> Result<(), SolverError>;
    /// `z ← M⁻¹ r` (the identity when the space has no preconditioner).
    fn precondition(&self, r: &Self::Vector, z: &mut Self::Vector) -> Result<(), SolverError>;

    /// `‖a‖₂`, from [`KrylovSpace::dot`] (NaN stays NaN, so callers can detect it).
    fn norm(&self, a: &Self::Vector) -> Result<f64, SolverError> {
        Ok(self.dot(a, a)?.sqrt())
    }
}
