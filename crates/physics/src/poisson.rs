//! The Poisson problem `−∇·(κ∇u) = f` with a constant coefficient `κ`.

use crate::cuda_source::{call_forcing, cuda_name, physics_source};
use crate::error::{check_dim, check_param, PhysicsError};
use crate::manufactured::{c_real, check_forcing, forcing_at, Manufactured};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Poisson with constant coefficient: `f1 = κ∇u`, `f0 = −f(x)` (only with a forcing),
/// `g3 = κ I`. Linear and symmetric; the operator of the first paper's benchmark (with
/// `κ = 1`) and of CEED BP3 (Gauss quadrature) / BP5 (collocated GLL).
#[derive(Clone, Debug, PartialEq)]
pub struct Poisson {
    /// Spatial dimension (1–3).
    pub dim: usize,
    /// Diffusion coefficient `κ > 0`.
    pub kappa: f64,
    /// Optional source term `f` (from a manufactured solution).
    pub forcing: Option<Manufactured>,
}

impl Poisson {
    /// A validated Poisson physics.
    pub fn new(
        dim: usize,
        kappa: f64,
        forcing: Option<Manufactured>,
    ) -> Result<Poisson, PhysicsError> {
        let p = Poisson {
            dim,
            kappa,
            forcing,
        };
        p.validate()?;
        Ok(p)
    }

    /// Poisson with the forcing of its manufactured solution (`dim` 2 or 3).
    pub fn manufactured(dim: usize, kappa: f64) -> Result<Poisson, PhysicsError> {
        Poisson::new(dim, kappa, Some(Manufactured::poisson(dim, kappa)?))
    }

    /// Checks dimension, `κ > 0` and the forcing's shape.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("poisson", self.dim)?;
        check_param(
            "poisson",
            "kappa",
            self.kappa,
            self.kappa > 0.0,
            "finite and > 0",
        )?;
        check_forcing("poisson", self.dim, 1, &self.forcing)
    }
}

impl<T: Real> Physics<T> for Poisson {
    fn name(&self) -> &str {
        "poisson"
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
            let mut f = [T::zero()];
            forcing_at(m, p.x, &mut f);
            f0[0] = -f[0];
        }
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let kappa = T::of(self.kappa);
        for k in 0..self.dim {
            f1[k] = kappa * p.du[k];
        }
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        let kappa = T::of(self.kappa);
        for k in 0..self.dim {
            for l in 0..self.dim {
                g3[k * self.dim + l] = if k == l { kappa } else { T::zero() };
            }
        }
    }

    fn cuda(&self) -> CudaPhysics {
        let d = self.dim;
        let forcing = self.forcing.as_ref();
        let kappa = c_real(self.kappa);
        let f0 = match forcing {
            Some(_) => format!("{}  f0[0] = -ff[0];\n", call_forcing(forcing, 1)),
            None => String::new(),
        };
        let f1 = format!(
            "  const real kappa = {kappa};\n  for (int k = 0; k < {d}; ++k) f1[k] = kappa * du[k];\n"
        );
        let g3 = format!(
            "  const real kappa = {kappa};\n  for (int k = 0; k < {d}; ++k)\n    \
             for (int l = 0; l < {d}; ++l) g3[k * {d} + l] = k == l ? kappa : (real)0;\n"
        );
        CudaPhysics {
            name: cuda_name("poisson", d),
            source: physics_source(
                &format!("poisson, dim {d}, kappa {:e}", self.kappa),
                forcing,
                [f0, f1, String::new(), String::new(), String::new(), g3],
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
        assert!(Poisson::new(2, 1.0, None).is_ok());
        assert!(Poisson::new(0, 1.0, None).is_err());
        assert!(Poisson::new(4, 1.0, None).is_err());
        assert!(Poisson::new(2, -1.0, None).is_err());
        assert!(Poisson::new(2, f64::INFINITY, None).is_err());
        let wrong_dim = Manufactured::poisson(3, 1.0).ok();
        assert!(matches!(
            Poisson::new(2, 1.0, wrong_dim),
            Err(PhysicsError::ForcingMismatch { .. })
        ));
        let vector = Manufactured::elasticity(2, 1.0, 1.0).ok();
        assert!(Poisson::new(2, 1.0, vector).is_err());
    }
}
