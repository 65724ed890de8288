//! The Poisson problem with a variable coefficient, `−∇·(κ(x)∇u) = f`, where `κ` is an
//! auxiliary field (Knepley, Rupp & Terrel 2016, section 4).

use crate::cuda_source::{call_forcing, cuda_name, physics_source};
use crate::error::{check_dim, PhysicsError};
use crate::manufactured::{check_forcing, forcing_at, Manufactured};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Variable-coefficient Poisson: the coefficient is the auxiliary field `a[0]` (`naux = 1`),
/// `f1 = a₀∇u`, `f0 = −f(x)` (only with a forcing), `g3 = a₀ I`.
///
/// Whether `a₀` comes from a P1 field, a P0 (cellwise constant) field or quadrature-point
/// data is the operator's business; for the manufactured problem it is the interpolant of
/// [`crate::varcoef_kappa`]. Linear and symmetric (for `a₀ > 0` also positive definite).
#[derive(Clone, Debug, PartialEq)]
pub struct PoissonVarCoef {
    /// Spatial dimension (1–3).
    pub dim: usize,
    /// Optional source term `f`.
    pub forcing: Option<Manufactured>,
}

impl PoissonVarCoef {
    /// A validated variable-coefficient Poisson physics.
    pub fn new(dim: usize, forcing: Option<Manufactured>) -> Result<PoissonVarCoef, PhysicsError> {
        let p = PoissonVarCoef { dim, forcing };
        p.validate()?;
        Ok(p)
    }

    /// With the forcing of its manufactured solution (`dim` 2 or 3).
    pub fn manufactured(dim: usize) -> Result<PoissonVarCoef, PhysicsError> {
        PoissonVarCoef::new(dim, Some(Manufactured::poisson_varcoef(dim)?))
    }

    /// Checks the dimension and the forcing's shape.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("poisson-varcoef", self.dim)?;
        check_forcing("poisson-varcoef", self.dim, 1, &self.forcing)
    }
}

impl<T: Real> Physics<T> for PoissonVarCoef {
    fn name(&self) -> &str {
        "poisson-varcoef"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn naux(&self) -> usize {
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
        let kappa = p.a[0];
        for k in 0..self.dim {
            f1[k] = kappa * p.du[k];
        }
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let kappa = p.a[0];
        for k in 0..self.dim {
            for l in 0..self.dim {
                g3[k * self.dim + l] = if k == l { kappa } else { T::zero() };
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
            "  const real kappa = a[0];\n  for (int k = 0; k < {d}; ++k) f1[k] = kappa * du[k];\n"
        );
        let g3 = format!(
            "  const real kappa = a[0];\n  for (int k = 0; k < {d}; ++k)\n    \
             for (int l = 0; l < {d}; ++l) g3[k * {d} + l] = k == l ? kappa : (real)0;\n"
        );
        CudaPhysics {
            name: cuda_name("poisson-varcoef", d),
            source: physics_source(
                &format!("poisson-varcoef, dim {d}, kappa = a[0]"),
                forcing,
                [f0, f1, String::new(), String::new(), String::new(), g3],
            ),
            dim: d,
            ncomp: 1,
            naux: 1,
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
        assert!(PoissonVarCoef::new(3, None).is_ok());
        assert!(PoissonVarCoef::new(0, None).is_err());
        assert!(PoissonVarCoef::manufactured(1).is_err());
        assert!(PoissonVarCoef::manufactured(3).is_ok());
        let wrong = Manufactured::poisson_varcoef(2).ok();
        assert!(PoissonVarCoef::new(3, wrong).is_err());
    }
}
