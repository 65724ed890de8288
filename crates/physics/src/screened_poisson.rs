//! The screened Poisson (reaction–diffusion) problem `αu − Δu = f` (CEED BP3 operator with
//! a mass shift).

use crate::cuda_source::{call_forcing, cuda_name, physics_source};
use crate::error::{check_dim, check_param, PhysicsError};
use crate::manufactured::{c_real, check_forcing, forcing_at, Manufactured};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Screened Poisson: `f0 = αu − f(x)`, `f1 = ∇u`, `g0 = α`, `g3 = I`. Linear and
/// symmetric; positive definite for `α > 0` even without Dirichlet conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct ScreenedPoisson {
    /// Spatial dimension (1–3).
    pub dim: usize,
    /// Reaction coefficient `α ≥ 0`.
    pub alpha: f64,
    /// Optional source term `f`.
    pub forcing: Option<Manufactured>,
}

impl ScreenedPoisson {
    /// A validated screened Poisson physics.
    pub fn new(
        dim: usize,
        alpha: f64,
        forcing: Option<Manufactured>,
    ) -> Result<ScreenedPoisson, PhysicsError> {
        let p = ScreenedPoisson {
            dim,
            alpha,
            forcing,
        };
        p.validate()?;
        Ok(p)
    }

    /// With the forcing of its manufactured solution (`dim` 2 or 3).
    pub fn manufactured(dim: usize, alpha: f64) -> Result<ScreenedPoisson, PhysicsError> {
        ScreenedPoisson::new(
            dim,
            alpha,
            Some(Manufactured::screened_poisson(dim, alpha)?),
        )
    }

    /// Checks the dimension, `α ≥ 0` and the forcing's shape.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("screened-poisson", self.dim)?;
        check_param(
            "screened-poisson",
            "alpha",
            self.alpha,
            self.alpha >= 0.0,
            "finite and >= 0",
        )?;
        check_forcing("screened-poisson", self.dim, 1, &self.forcing)
    }
}

impl<T: Real> Physics<T> for ScreenedPoisson {
    fn name(&self) -> &str {
        "screened-poisson"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
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
        let mut f = [T::zero()];
        if let Some(m) = &self.forcing {
            forcing_at(m, p.x, &mut f);
        }
        f0[0] = T::of(self.alpha) * p.u[0] - f[0];
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        f1[..self.dim].copy_from_slice(&p.du[..self.dim]);
    }
    fn g0(&self, _p: &Point<'_, T>, g0: &mut [T]) {
        g0[0] = T::of(self.alpha);
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        for k in 0..self.dim {
            for l in 0..self.dim {
                g3[k * self.dim + l] = if k == l { T::one() } else { T::zero() };
            }
        }
    }

    fn cuda(&self) -> CudaPhysics {
        let d = self.dim;
        let forcing = self.forcing.as_ref();
        let alpha = c_real(self.alpha);
        let f0 = match forcing {
            Some(_) => format!(
                "{}  f0[0] = {alpha} * u[0] - ff[0];\n",
                call_forcing(forcing, 1)
            ),
            None => format!("  f0[0] = {alpha} * u[0];\n"),
        };
        let f1 = format!("  for (int k = 0; k < {d}; ++k) f1[k] = du[k];\n");
        let g0 = format!("  g0[0] = {alpha};\n");
        let g3 = format!(
            "  for (int k = 0; k < {d}; ++k)\n    \
             for (int l = 0; l < {d}; ++l) g3[k * {d} + l] = k == l ? (real)1 : (real)0;\n"
        );
        CudaPhysics {
            name: cuda_name("screened-poisson", d),
            source: physics_source(
                &format!("screened-poisson, dim {d}, alpha {:e}", self.alpha),
                forcing,
                [f0, f1, g0, String::new(), String::new(), g3],
            ),
            dim: d,
            ncomp: 1,
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
        assert!(ScreenedPoisson::new(2, 0.0, None).is_ok());
        assert!(ScreenedPoisson::new(2, -1e-3, None).is_err());
        assert!(ScreenedPoisson::manufactured(3, 2.0).is_ok());
        assert!(ScreenedPoisson::new(2, 1.0, Manufactured::nonlinear(3).ok()).is_err());
    }
}
