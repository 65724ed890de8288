//! Essential (Dirichlet) boundary conditions by elimination, the third approach of Cecka,
//! Lew and Darve (2011, §3.3): constrained dofs are not unknowns of the linear system.
//!
//! A [`DofMap`] splits the dofs of a space into free and constrained ones and numbers the
//! free ones `0..num_free` in increasing order of their full index (so the reduced numbering
//! is monotone and sorted CSR columns stay sorted). A [`Dirichlet`] adds the prescribed
//! values `g`. Assembly with a dof map produces the reduced matrix `A_ff` directly from the
//! element matrices and moves the known values to the right-hand side element by element
//! (`F_e[i] -= Σ_{j constrained} K_e[i][j] g_j`), never forming the full matrix.

use crate::AssemblyError;
use ferrofem_base::Real;

/// Marks a full dof that has no reduced index (it is constrained).
pub const CONSTRAINED: u32 = u32::MAX;

/// The split of the dofs of a space into free (unknown) and constrained ones.
///
/// Owns both directions of the renumbering; immutable once built, so the invariants
/// (sorted, consistent, in range) hold for every holder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DofMap {
    free: Vec<u32>,
    constrained: Vec<u32>,
    reduced_of: Vec<u32>,
}

impl DofMap {
    /// The map of a space with `num_dofs` dofs of which `constrained` (sorted, unique, each
    /// `< num_dofs`) are prescribed.
    pub fn new(num_dofs: usize, constrained: &[u32]) -> Result<DofMap, AssemblyError> {
        if num_dofs > u32::MAX as usize {
            return Err(AssemblyError::TooLarge {
                what: "dofs",
                count: num_dofs,
            });
        }
        for (p, w) in constrained.windows(2).enumerate() {
            if w[1] <= w[0] {
                return Err(AssemblyError::ConstraintsNotSorted {
                    position: p + 1,
                    dof: w[1],
                });
            }
        }
        if let Some(&last) = constrained.last() {
            if last as usize >= num_dofs {
                return Err(AssemblyError::DofOutOfRange {
                    dof: last as u64,
                    num_dofs,
                });
            }
        }
        let mut reduced_of = vec![0u32; num_dofs];
        for &c in constrained {
            reduced_of[c as usize] = CONSTRAINED;
        }
        let mut free = Vec::with_capacity(num_dofs - constrained.len());
        for (d, r) in reduced_of.iter_mut().enumerate() {
            if *r != CONSTRAINED {
                *r = free.len() as u32;
                free.push(d as u32);
            }
        }
        Ok(DofMap {
            free,
            constrained: constrained.to_vec(),
            reduced_of,
        })
    }

    /// The map with no constrained dofs (reduced numbering = full numbering).
    pub fn unconstrained(num_dofs: usize) -> Result<DofMap, AssemblyError> {
        DofMap::new(num_dofs, &[])
    }

    /// Number of dofs of the space.
    pub fn num_dofs(&self) -> usize {
        self.reduced_of.len()
    }
    /// Number of free dofs (unknowns of the reduced system).
    pub fn num_free(&self) -> usize {
        self.free.len()
    }
    /// Free dofs in increasing order: `free()[r]` is the full index of reduced dof `r`.
    pub fn free(&self) -> &[u32] {
        &self.free
    }
    /// Constrained dofs in increasing order.
    pub fn constrained(&self) -> &[u32] {
        &self.constrained
    }
    /// For every full dof its reduced index, or [`CONSTRAINED`].
    pub fn reduced_of(&self) -> &[u32] {
        &self.reduced_of
    }
    /// True when no dof is constrained.
    pub fn is_unconstrained(&self) -> bool {
        self.constrained.is_empty()
    }

    /// The free entries of a full vector (`num_dofs` long), in reduced order.
    pub fn restrict<T: Copy>(&self, full: &[T]) -> Result<Vec<T>, AssemblyError> {
        check_len("full vector", self.num_dofs(), full.len())?;
        Ok(self.free.iter().map(|&d| full[d as usize]).collect())
    }
}

/// Prescribed values on a set of constrained dofs: the dof map plus `g`.
///
/// The caller owns it for the lifetime of a solve: assembly reads it to eliminate the
/// constrained dofs, [`Dirichlet::expand`] uses it again to rebuild the full solution.
#[derive(Clone, Debug, PartialEq)]
pub struct Dirichlet<T> {
    map: DofMap,
    values: Vec<T>,
}

impl<T: Real> Dirichlet<T> {
    /// `u[constrained[k]] = values[k]` on a space of `num_dofs` dofs; `constrained` sorted
    /// and unique.
    pub fn new(
        num_dofs: usize,
        constrained: &[u32],
        values: Vec<T>,
    ) -> Result<Dirichlet<T>, AssemblyError> {
        check_len("constrained values", constrained.len(), values.len())?;
        Ok(Dirichlet {
            map: DofMap::new(num_dofs, constrained)?,
            values,
        })
    }

    /// `u = 0` on the constrained dofs.
    pub fn homogeneous(
        num_dofs: usize,
        constrained: &[u32],
    ) -> Result<Dirichlet<T>, AssemblyError> {
        Dirichlet::new(num_dofs, constrained, vec![T::zero(); constrained.len()])
    }

    /// No boundary conditions: every dof is free (the full, possibly singular, system).
    pub fn none(num_dofs: usize) -> Result<Dirichlet<T>, AssemblyError> {
        Dirichlet::new(num_dofs, &[], Vec::new())
    }

    /// Prescribed values taken from a full vector `g_full` at the constrained dofs.
    pub fn from_full(
        num_dofs: usize,
        constrained: &[u32],
        g_full: &[T],
    ) -> Result<Dirichlet<T>, AssemblyError> {
        check_len("full vector of boundary values", num_dofs, g_full.len())?;
        let map = DofMap::new(num_dofs, constrained)?;
        let values = constrained.iter().map(|&d| g_full[d as usize]).collect();
        Ok(Dirichlet { map, values })
    }

    /// The dof map.
    pub fn map(&self) -> &DofMap {
        &self.map
    }
    /// The prescribed values, one per constrained dof in increasing dof order.
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// A full vector holding `g` on the constrained dofs and zero elsewhere.
    pub fn full_values(&self) -> Vec<T> {
        let mut g = vec![T::zero(); self.map.num_dofs()];
        for (&d, &v) in self.map.constrained.iter().zip(&self.values) {
            g[d as usize] = v;
        }
        g
    }

    /// The full vector whose free dofs are `reduced` and whose constrained dofs are `g`.
    pub fn expand(&self, reduced: &[T]) -> Result<Vec<T>, AssemblyError> {
        check_len("reduced vector", self.map.num_free(), reduced.len())?;
        let mut full = self.full_values();
        for (&d, &v) in self.map.free.iter().zip(reduced) {
            full[d as usize] = v;
        }
        Ok(full)
    }

    /// The free entries of a full vector, in reduced order.
    pub fn restrict(&self, full: &[T]) -> Result<Vec<T>, AssemblyError> {
        self.map.restrict(full)
    }
}

/// `Ok` when `got == expected`, a [`AssemblyError::LengthMismatch`] naming `what` otherwise.
pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    got: usize,
) -> Result<(), AssemblyError> {
    if expected == got {
        Ok(())
    } else {
        Err(AssemblyError::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_numbers_free_dofs_in_order() {
        let m = DofMap::new(6, &[0, 3, 5]).unwrap();
        assert_eq!(m.free(), &[1, 2, 4]);
        assert_eq!(
            m.reduced_of(),
            &[CONSTRAINED, 0, 1, CONSTRAINED, 2, CONSTRAINED]
        );
        assert_eq!(
            m.restrict(&[10, 11, 12, 13, 14, 15]).unwrap(),
            vec![11, 12, 14]
        );
        assert!(DofMap::unconstrained(4).unwrap().is_unconstrained());
    }

    #[test]
    fn bad_constraints_are_reported() {
        assert_eq!(
            DofMap::new(4, &[1, 1]),
            Err(AssemblyError::ConstraintsNotSorted {
                position: 1,
                dof: 1
            })
        );
        assert_eq!(
            DofMap::new(4, &[2, 1]),
            Err(AssemblyError::ConstraintsNotSorted {
                position: 1,
                dof: 1
            })
        );
        assert_eq!(
            DofMap::new(4, &[1, 4]),
            Err(AssemblyError::DofOutOfRange {
                dof: 4,
                num_dofs: 4
            })
        );
        assert!(matches!(
            Dirichlet::new(4, &[1, 2], vec![1.0f64]),
            Err(AssemblyError::LengthMismatch {
                expected: 2,
                got: 1,
                ..
            })
        ));
    }

    #[test]
    fn expand_and_restrict_are_inverse_on_free_dofs() {
        let bc = Dirichlet::new(5, &[1, 4], vec![7.0f64, 9.0]).unwrap();
        let full = bc.expand(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(full, vec![1.0, 7.0, 2.0, 3.0, 9.0]);
        assert_eq!(bc.restrict(&full).unwrap(), vec![1.0, 2.0, 3.0]);
        assert_eq!(bc.full_values(), vec![0.0, 7.0, 0.0, 0.0, 9.0]);
        assert!(bc.expand(&[1.0]).is_err());
        let g = Dirichlet::from_full(5, &[1, 4], &full).unwrap();
        assert_eq!(g.values(), &[7.0, 9.0]);
    }
}
