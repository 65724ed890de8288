//! A nonlinear diffusion problem, `−∇·((1 + u²)∇u) = f`, for testing Newton solvers.

use crate::cuda_source::{call_forcing, cuda_name, physics_source};
use crate::error::{check_dim, PhysicsError};
use crate::manufactured::{check_forcing, forcing_at, Manufactured};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Nonlinear diffusion: `f1 = (1 + u²)∇u`, `f0 = −f(x)` (only with a forcing),
/// `g2 = 2u∇u`, `g3 = (1 + u²) I`. Not linear; the Jacobian is not symmetric (the `g2`
/// block has no `g1` partner).
#[derive(Clone, Debug, PartialEq)]
pub struct NonlinearDiffusion {
    /// Spatial dimension (1–3).
    pub dim: usize,
    /// Optional source term `f`.
    pub forcing: Option<Manufactured>,
}

impl NonlinearDiffusion {
    /// A validated nonlinear diffusion physics.
    pub fn new(
        dim: usize,
        forcing: Option<Manufactured>,
    ) -> Result<NonlinearDiffusion, PhysicsError> {
        let p = NonlinearDiffusion { dim, forcing };
        p.validate()?;
        Ok(p)
    }

    /// With the forcing of its manufactured solution (`dim` 2 or 3).
    pub fn manufactured(dim: usize) -> Result<NonlinearDiffusion, PhysicsError> {
        NonlinearDiffusion::new(dim, Some(Manufactured::nonlinear(dim)?))
    }

    /// Checks the dimension and the forcing's shape.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("nonlinear-diffusion", self.dim)?;
        check_forcing("nonlinear-diffusion", self.dim, 1, &self.forcing)
    }
}

impl<T: Real> Physics<T> for NonlinearDiffusion {
    fn name(&self) -> &str {
        "nonlinear-diffusion"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
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
            g2: true,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        false
    }
    fn is_symmetric(&self) -> bool {
        false
    }

    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        if let Some(m) = &self.forcing {
            let mut f = [T::zero()];
            forcing_at(m, p.x, &mut f);
            f0[0] = -f[0];
        }
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let u = p.u[0];
        let c = T::one() + u * u;
        for k in 0..self.dim {
            f1[k] = c * p.du[k];
        }
    }
    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        let two_u = T::of(2.0) * p.u[0];
        for k in 0..self.dim {
            g2[k] = two_u * p.du[k];
        }
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let u = p.u[0];
        let c = T::one() + u * u;
        for k in 0..self.dim {
            for l in 0..self.dim {
                g3[k * self.dim + l] = if k == l { c } else { T::zero() };
            }
        }
    }

    fn cuda(&self) -> CudaPhysics {
        let d = self.dim;
        let forcing = self.forcing.as_ref();
        let f0 = match forcing {
            Some(_) => format!("{}  f0[0] = -ff[0];\n", call_forcing(forcing, 1)),
            None => String::new(),
        };
        let f1 = format!(
            "  const real c = (real)1 + u[0] * u[0];\n  for (int k = 0; k < {d}; ++k) f1[k] = c * du[k];\n"
        );
        let g2 = format!(
            "  const real two_u = (real)2 * u[0];\n  for (int k = 0; k < {d}; ++k) g2[k] = two_u * du[k];\n"
        );
        let g3 = format!(
            "  const real c = (real)1 + u[0] * u[0];\n  for (int k = 0; k < {d}; ++k)\n    \
             for (int l = 0; l < {d}; ++l) g3[k * {d} + l] = k == l ? c : (real)0;\n"
        );
        CudaPhysics {
            name: cuda_name("nonlinear-diffusion", d),
            source: physics_source(
                &format!("nonlinear-diffusion, dim {d}"),
                forcing,
                [f0, f1, String::new(), String::new(), g2, g3],
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
        assert!(NonlinearDiffusion::new(1, None).is_ok());
        assert!(NonlinearDiffusion::new(4, None).is_err());
        assert!(NonlinearDiffusion::manufactured(2).is_ok());
        assert!(NonlinearDiffusion::new(2, Manufactured::elasticity(2, 1.0, 1.0).ok()).is_err());
    }
}
