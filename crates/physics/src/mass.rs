//! The mass operator (CEED BP1): `f0 = u`.

use crate::cuda_source::{cuda_name, physics_source};
use crate::error::{check_dim, PhysicsError};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// The mass operator `∫ φ·u` for `ncomp` components: `f0 = u`, `g0 = I`, no `f1`.
/// Linear and symmetric. Used by CEED BP1/BP2, for L² projections (e.g. of a coefficient
/// into an auxiliary field) and as the wave solver's mass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mass {
    /// Spatial dimension (1–3).
    pub dim: usize,
    /// Number of components (at least 1).
    pub ncomp: usize,
}

impl Mass {
    /// A validated mass physics.
    pub fn new(dim: usize, ncomp: usize) -> Result<Mass, PhysicsError> {
        let m = Mass { dim, ncomp };
        m.validate()?;
        Ok(m)
    }

    /// Checks the dimension and `ncomp ≥ 1`.
    pub fn validate(&self) -> Result<(), PhysicsError> {
        check_dim("mass", self.dim)?;
        if self.ncomp == 0 {
            return Err(PhysicsError::Components {
                physics: "mass",
                ncomp: 0,
            });
        }
        Ok(())
    }
}

impl<T: Real> Physics<T> for Mass {
    fn name(&self) -> &str {
        "mass"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.ncomp
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: true,
            f1: false,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: false,
            g2: false,
            g3: false,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }

    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        f0[..self.ncomp].copy_from_slice(&p.u[..self.ncomp]);
    }
    fn f1(&self, _p: &Point<'_, T>, _f1: &mut [T]) {}
    fn g0(&self, _p: &Point<'_, T>, g0: &mut [T]) {
        let nc = self.ncomp;
        for ci in 0..nc {
            for cj in 0..nc {
                g0[ci * nc + cj] = if ci == cj { T::one() } else { T::zero() };
            }
        }
    }

    fn cuda(&self) -> CudaPhysics {
        let nc = self.ncomp;
        let f0 = format!("  for (int c = 0; c < {nc}; ++c) f0[c] = u[c];\n");
        let g0 = format!(
            "  for (int i = 0; i < {nc}; ++i)\n    \
             for (int j = 0; j < {nc}; ++j) g0[i * {nc} + j] = i == j ? (real)1 : (real)0;\n"
        );
        CudaPhysics {
            name: format!("{}_c{nc}", cuda_name("mass", self.dim)),
            source: physics_source(
                &format!("mass, dim {}, ncomp {nc}", self.dim),
                None,
                [
                    f0,
                    String::new(),
                    g0,
                    String::new(),
                    String::new(),
                    String::new(),
                ],
            ),
            dim: self.dim,
            ncomp: nc,
            naux: 0,
            reads_x: false,
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
        assert!(Mass::new(3, 3).is_ok());
        assert!(Mass::new(3, 0).is_err());
        assert!(Mass::new(5, 1).is_err());
    }
}
