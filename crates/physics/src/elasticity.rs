//! Linear elasticity `−∇·σ(u) = f` with the isotropic Hooke law.

use crate::cuda_source::{call_forcing, cuda_name, physics_source};
use crate::error::{check_dim, check_param, PhysicsError};
use crate::manufactured::{c_real, check_forcing, forcing_at, Manufactured};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Linear elasticity: `ncomp = dim`, `f1 = σ(u) = λ tr(ε) I + 2μ ε` with
/// `ε = ½(∇u + ∇uᵀ)`, `f0 = −f(x)` (only with a forcing), and
/// `g3[i,j,k,l] = ∂σ_ik/∂(∂_l u_j) = λ δ_ik δ_jl + μ (δ_ij δ_kl + δ_il δ_jk)`.
/// Linear and symmetric (`g3[i,j,k,l] = g3[j,i,l,k]`); the second benchmark of the first
/// paper.
#[derive(Clone, Debug, PartialEq)]
pub struct Elasticity {
    /// Spatial dimension (1–3), also the number of components.
    pub dim: usize,
    /// First Lamé parameter λ.
    pub lambda: f64,
    /// Shear modulus μ.
    pub mu: f64,
    /// Optional body force `f`.
    pub forcing: Option<Manufactured>,
}

/// Lamé parameters must give a positive definite Hooke tensor: `μ > 0` and
/// `dim·λ + 2μ > 0` (positive bulk modulus).
pub(crate) fn check_lame(
    physics: &'static str,
    dim: usize,
    lambda: f64,
    mu: f64,
) -> Result<(), PhysicsError> {
    check_param(physics, "mu", mu, mu > 0.0, "finite and > 0")?;
    check_param(
        physics,
        "lambda",
        lambda,
        dim as f64 * lambda + 2.0 * mu > 0.0,
        "finite with dim*lambda + 2*mu > 0",
    )
}

/// The isotropic Hooke stress `σ = λ tr(ε) I + 2μ ε` of the displacement gradient `du`
/// (`du[c * d + k]`), into `f1[i * d + k]`.
#[inline]
pub(crate) fn hooke_stress<T: Real>(d: usize, lambda: T, mu: T, du: &[T], f1: &mut [T]) {
    let mut tr = T::zero();
    for k in 0..d {
        tr += du[k * d + k];
    }
    for i in 0..d {
        for k in 0..d {
            let mut s = mu * (du[i * d + k] + du[k * d + i]);
            if i == k {
                s += lambda * tr;
            }
            f1[i * d + k] = s;
        }
    }
}

/// `∂σ_ik/∂(∂_l u_j) = λ δ_ik δ_jl + μ (δ_ij δ_kl + δ_il δ_jk)` into
/// `g3[((i * d + j) * d + k) * d + l]`.
#[inline]
pub(crate) fn hooke_tensor<T: Real>(d: usize, lambda: T, mu: T, g3: &mut [T]) {
    for i in 0..d {
        for j in 0..d {
            for k in 0..d {
                for l in 0..d {
                    let mut s = T::zero();
                    if i == k && j == l {
                        s += lambda;
                    }
                    if i == j && k == l {
                        s += mu;
                    }
                    if i == l && j == k {
                        s += mu;
                    }
                    g3[((i * d + j) * d + k) * d + l] = s;
                }
            }
        }
    }
}

/// [`hooke_stress`] as CUDA C statements, with `lam` and `mu` in scope.
pub(crate) fn hooke_stress_cuda(d: usize) -> String {
    format!(
        "  real tr = (real)0;\n  for (int k = 0; k < {d}; ++k) tr += du[k * {d} + k];\n  \
         for (int i = 0; i < {d}; ++i)\n    for (int k = 0; k < {d}; ++k) {{\n      \
         real s = mu * (du[i * {d} + k] + du[k * {d} + i]);\n      \
         if (i == k) s += lam * tr;\n      f1[i * {d} + k] = s;\n    }}\n"
    )
}

/// [`hooke_tensor`] as CUDA C statements, with `lam` and `mu` in scope.
pub(crate) fn hooke_tensor_cuda(d: usize) -> String {
    format!(
        "  for (int i = 0; i < {d}; ++i)\n  for (int j = 0; j < {d}; ++j)\n  \
         for (int k = 0; k < {d}; ++k)\n  for (int l = 0; l < {d}; ++l) {{\n    \
         real s = (real)0;\n    if (i == k && j == l) s += lam;\n    \
         if (i == j && k == l) s += mu;\n    if (i == l && j == k) s += mu;\n    \
         g3[((i * {d} + j) * {d} + k) * {d} + l] = s;\n  }}\n"
    )
}

impl Elasticity {
    /// A validated elasticity physics.
    pub fn new(
        dim: usize,
        lambda: f64,
        mu: f64,
        forcing: Option<Manufactured>,
    ) -> Result<Elasticity, PhysicsError> {
        let p = Elasticity {
            dim,
            lambda,
            mu,
            forcing,
        };
        p.validate()?;
        Ok(p)
    }

    /// With the body force of its manufactured solution (`dim` 2 or 3).
    pub fn manufactured(dim: usize, lambda: f64, mu: f64) -> Result<Elasticity, PhysicsError> {
        Elasticity::new(
            dim,
            lambda,
            mu,
            Some(Manufactured::elasticity(dim, lambda, mu)?),
        )
    }

    /// Checks the dimension, the Lamé parameters and the forcing's shape.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("elasticity", self.dim)?;
        check_lame("elasticity", self.dim, self.lambda, self.mu)?;
        check_forcing("elasticity", self.dim, self.dim, &self.forcing)
    }
}

impl<T: Real> Physics<T> for Elasticity {
    fn name(&self) -> &str {
        "elasticity"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.dim
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: self.forcing.is_some(),
            f1: true,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: false,
            g1: false,
            g2: false,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }

    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        if let Some(m) = &self.forcing {
            let mut f = [T::zero(); 3];
            forcing_at(m, p.x, &mut f[..self.dim]);
            for c in 0..self.dim {
                f0[c] = -f[c];
            }
        }
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        hooke_stress(self.dim, T::of(self.lambda), T::of(self.mu), p.du, f1);
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        hooke_tensor(self.dim, T::of(self.lambda), T::of(self.mu), g3);
    }

    fn cuda(&self) -> CudaPhysics {
        let d = self.dim;
        let forcing = self.forcing.as_ref();
        let consts = format!(
            "  const real lam = {};\n  const real mu = {};\n",
            c_real(self.lambda),
            c_real(self.mu)
        );
        let f0 = match forcing {
            Some(_) => format!(
                "{}  for (int c = 0; c < {d}; ++c) f0[c] = -ff[c];\n",
                call_forcing(forcing, d)
            ),
            None => String::new(),
        };
        let f1 = format!("{consts}{}", hooke_stress_cuda(d));
        let g3 = format!("{consts}{}", hooke_tensor_cuda(d));
        CudaPhysics {
            name: cuda_name("elasticity", d),
            source: physics_source(
                &format!(
                    "elasticity, dim {d}, lambda {:e}, mu {:e}",
                    self.lambda, self.mu
                ),
                forcing,
                [f0, f1, String::new(), String::new(), String::new(), g3],
            ),
            dim: d,
            ncomp: d,
            naux: 0,
            reads_x: forcing.is_some(),
            linear: Physics::<T>::is_linear(self),
            terms: Physics::<T>::terms(self),
            jacobian: Physics::<T>::jacobian_terms(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        assert!(Elasticity::new(3, 1.0, 1.0, None).is_ok());
        // Slightly negative λ is physical (auxetic) as long as the bulk modulus is positive.
        assert!(Elasticity::new(3, -0.5, 1.0, None).is_ok());
        assert!(Elasticity::new(3, -1.0, 1.0, None).is_err());
        assert!(Elasticity::new(2, 1.0, 0.0, None).is_err());
        assert!(Elasticity::new(2, f64::NAN, 1.0, None).is_err());
        let scalar = Manufactured::poisson(2, 1.0).ok();
        assert!(Elasticity::new(2, 1.0, 1.0, scalar).is_err());
    }

    #[test]
    fn stress_of_a_pure_shear_and_a_dilation() {
        // ∇u = [[0, γ], [0, 0]] (simple shear): σ_01 = σ_10 = μγ, no normal stress.
        let e = Elasticity::new(2, 2.0, 3.0, None).unwrap();
        let (x, u, du) = ([0.0; 2], [0.0; 2], [0.0, 0.5, 0.0, 0.0]);
        let p = Point {
            x: &x,
            u: &u,
            du: &du,
            a: &[],
            da: &[],
        };
        let mut s = [0.0; 4];
        Physics::<f64>::f1(&e, &p, &mut s);
        assert_eq!(s, [0.0, 1.5, 1.5, 0.0]);
        // ∇u = ε I (dilation): σ = (2λ + 2μ) ε I in 2-D.
        let du = [0.1, 0.0, 0.0, 0.1];
        let p = Point { du: &du, ..p };
        Physics::<f64>::f1(&e, &p, &mut s);
        assert!((s[0] - 1.0).abs() < 1e-15 && (s[3] - 1.0).abs() < 1e-15);
        assert_eq!((s[1], s[2]), (0.0, 0.0));
    }
}
