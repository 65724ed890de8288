//! The pointwise-physics interface.

use ferrofem_base::Real;

/// Field values at one quadrature point, handed to the pointwise functions.
///
/// Gradient layout: `du[c * dim + k] = ∂u_c/∂x_k` (likewise `da`).
#[derive(Clone, Copy, Debug)]
pub struct Point<'a, T> {
    /// Physical coordinates (`dim`).
    pub x: &'a [T],
    /// Solution components (`ncomp`).
    pub u: &'a [T],
    /// Solution gradient (`ncomp * dim`).
    pub du: &'a [T],
    /// Auxiliary fields, e.g. a coefficient (`naux`).
    pub a: &'a [T],
    /// Auxiliary gradients (`naux * dim`).
    pub da: &'a [T],
}

/// Which residual terms a physics has (kernels skip the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResidualTerms {
    /// `f0` is not identically zero.
    pub f0: bool,
    /// `f1` is not identically zero.
    pub f1: bool,
}

/// Which Jacobian blocks a physics has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JacobianTerms {
    /// `g0 = ∂f0/∂u` is present.
    pub g0: bool,
    /// `g1 = ∂f0/∂∇u` is present.
    pub g1: bool,
    /// `g2 = ∂f1/∂u` is present.
    pub g2: bool,
    /// `g3 = ∂f1/∂∇u` is present.
    pub g3: bool,
}

/// The CUDA C half of a physics: `__device__` functions with fixed signatures
///
/// ```c
/// __device__ void ff_f0(const real* x, const real* u, const real* du,
///                       const real* a, const real* da, real* f0);   // f0[NCOMP]
/// __device__ void ff_f1(..., real* f1);                              // f1[NCOMP*DIM]
/// __device__ void ff_g0(..., real* g0);  // g0[ci*NCOMP + cj]
/// __device__ void ff_g1(..., real* g1);  // g1[(ci*NCOMP + cj)*DIM + l]
/// __device__ void ff_g2(..., real* g2);  // g2[(ci*NCOMP + cj)*DIM + k]
/// __device__ void ff_g3(..., real* g3);  // g3[((ci*NCOMP + cj)*DIM + k)*DIM + l]
/// ```
///
/// (all six are always defined; absent terms write nothing and are flagged in `terms` /
/// `jacobian`), using the `real` type of the kernel prelude. Constants such as Lamé
/// parameters are embedded as literals, so each parameter set is its own specialisation.
#[derive(Clone, Debug, PartialEq)]
pub struct CudaPhysics {
    /// Name (for kernel cache files).
    pub name: String,
    /// The C source defining `ff_f0` … `ff_g3`.
    pub source: String,
    /// Spatial dimension.
    pub dim: usize,
    /// Solution components.
    pub ncomp: usize,
    /// Auxiliary fields.
    pub naux: usize,
    /// The functions read the physical point `x` (a coefficient or forcing of the
    /// coordinates), so kernels must supply it.
    pub reads_x: bool,
    /// The Jacobian does not depend on the state (`Physics::is_linear`): kernels that
    /// assemble it need no linearisation point.
    pub linear: bool,
    /// Residual terms present.
    pub terms: ResidualTerms,
    /// Jacobian blocks present.
    pub jacobian: JacobianTerms,
}

/// A weak form given by pointwise functions (see the crate documentation).
///
/// Output layouts: `f0[c]`, `f1[c * dim + k]`, `g0[ci * nc + cj]`,
/// `g1[(ci * nc + cj) * dim + l]`, `g2[(ci * nc + cj) * dim + k]`,
/// `g3[((ci * nc + cj) * dim + k) * dim + l]`. Implementations overwrite the whole output
/// slice of the terms they declare present; callers never read absent terms.
pub trait Physics<T: Real>: Send + Sync {
    /// Short name, e.g. `poisson-varcoef`.
    fn name(&self) -> &str;
    /// Spatial dimension.
    fn dim(&self) -> usize;
    /// Solution components (1 for scalar problems, `dim` for elasticity).
    fn ncomp(&self) -> usize;
    /// Number of auxiliary fields read from `Point::a`.
    fn naux(&self) -> usize {
        0
    }
    /// Which residual terms are present.
    fn terms(&self) -> ResidualTerms;
    /// Which Jacobian blocks are present.
    fn jacobian_terms(&self) -> JacobianTerms;
    /// True when the residual is affine in `u` (the Jacobian does not depend on `u`).
    fn is_linear(&self) -> bool;
    /// True when the Jacobian is symmetric (so CG and Cholesky apply).
    fn is_symmetric(&self) -> bool;

    /// `f0` at a point.
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]);
    /// `f1` at a point.
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]);
    /// `g0 = ∂f0/∂u`.
    fn g0(&self, _p: &Point<'_, T>, _g0: &mut [T]) {}
    /// `g1 = ∂f0/∂∇u`.
    fn g1(&self, _p: &Point<'_, T>, _g1: &mut [T]) {}
    /// `g2 = ∂f1/∂u`.
    fn g2(&self, _p: &Point<'_, T>, _g2: &mut [T]) {}
    /// `g3 = ∂f1/∂∇u`.
    fn g3(&self, _p: &Point<'_, T>, _g3: &mut [T]) {}

    /// The same physics as CUDA C.
    fn cuda(&self) -> CudaPhysics;
}

/// A boxed physics is a physics (so operators can take `Box<dyn Physics<T>>` chosen at run
/// time).
impl<T: Real, P: Physics<T> + ?Sized> Physics<T> for Box<P> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn dim(&self) -> usize {
        (**self).dim()
    }
    fn ncomp(&self) -> usize {
        (**self).ncomp()
    }
    fn naux(&self) -> usize {
        (**self).naux()
    }
    fn terms(&self) -> ResidualTerms {
        (**self).terms()
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        (**self).jacobian_terms()
    }
    fn is_linear(&self) -> bool {
        (**self).is_linear()
    }
    fn is_symmetric(&self) -> bool {
        (**self).is_symmetric()
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        (**self).f0(p, f0)
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        (**self).f1(p, f1)
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        (**self).g0(p, g0)
    }
    fn g1(&self, p: &Point<'_, T>, g1: &mut [T]) {
        (**self).g1(p, g1)
    }
    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        (**self).g2(p, g2)
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        (**self).g3(p, g3)
    }
    fn cuda(&self) -> CudaPhysics {
        (**self).cuda()
    }
}
