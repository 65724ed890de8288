//! Boundary conditions for matrix-free solves.
//!
//! - Dirichlet: [`ConstrainedOperator`] applies `A` on the free dofs and the identity on
//!   the constrained ones, `[A_ff 0; 0 I]`, so a Krylov method works on the full vector;
//!   [`lift_rhs`] (or [`lift_residual`] for a [`FormOperator`]) moves the known boundary
//!   values to the right-hand side of the correction `w = u − g̃`: `b_f = F_f − (A g̃)_f`,
//!   `b_c = 0`. The constrained rows carry no right-hand side, so a Krylov stopping test
//!   relative to `‖b‖` measures the free equations alone, whatever the size of the
//!   boundary values next to the operator's scale (a small coefficient, a micro-scale
//!   domain): the test is invariant to scaling the problem.
//! - Neumann: [`neumann_rhs`] integrates `∫_Γ φ · g_N(x, n)` over boundary facets.

use crate::facet::for_each_facet_point;
use crate::{FormError, FormOperator};
use ferrofem_base::{LinearOperator, Real};
use ferrofem_mesh::Mesh;
use ferrofem_physics::Physics;
use ferrofem_space::H1Space;
use rayon::prelude::*;
use std::sync::Mutex;

/// Checks that `dofs` index rows of an `n`-row operator and marks them.
fn mask_of(dofs: &[u32], n: usize) -> Result<Vec<bool>, FormError> {
    let mut mask = vec![false; n];
    for &d in dofs {
        if d as usize >= n {
            return Err(FormError::DofOutOfRange { dof: d, n });
        }
        mask[d as usize] = true;
    }
    Ok(mask)
}

/// A square operator with Dirichlet rows replaced by the identity: `y_f = A_ff x_f` (the
/// constrained entries of `x` are treated as zero), `y_c = x_c`. Symmetric (positive
/// definite) when `A` is, so conjugate gradients apply to the full vector.
pub struct ConstrainedOperator<T, A> {
    op: A,
    mask: Vec<bool>,
    dofs: Vec<u32>,
    scratch: Mutex<Vec<T>>,
}

impl<T: Real, A: LinearOperator<T>> ConstrainedOperator<T, A> {
    /// Constrains the dofs `dofs` (duplicates allowed) of the square operator `op`.
    pub fn new(op: A, dofs: &[u32]) -> Result<ConstrainedOperator<T, A>, FormError> {
        if op.nrows() != op.ncols() {
            return Err(FormError::NotSquare {
                nrows: op.nrows(),
                ncols: op.ncols(),
            });
        }
        let mask = mask_of(dofs, op.nrows())?;
        let mut dofs = dofs.to_vec();
        dofs.sort_unstable();
        dofs.dedup();
        Ok(ConstrainedOperator {
            op,
            mask,
            dofs,
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The unconstrained operator.
    pub fn inner(&self) -> &A {
        &self.op
    }
    /// The constrained dofs, sorted.
    pub fn constrained_dofs(&self) -> &[u32] {
        &self.dofs
    }
    /// True where a dof is constrained.
    pub fn mask(&self) -> &[bool] {
        &self.mask
    }
}

impl<T: Real, A: LinearOperator<T>> LinearOperator<T> for ConstrainedOperator<T, A> {
    fn nrows(&self) -> usize {
        self.op.nrows()
    }
    fn ncols(&self) -> usize {
        self.op.ncols()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        let mut tmp = self
            .scratch
            .try_lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        tmp.clear();
        tmp.extend_from_slice(x);
        for &d in &self.dofs {
            tmp[d as usize] = T::zero();
        }
        self.op.apply(&tmp, y);
        for &d in &self.dofs {
            y[d as usize] = x[d as usize];
        }
        if let Ok(mut g) = self.scratch.try_lock() {
            *g = tmp;
        }
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        let mut d = self.op.diagonal()?;
        for &c in &self.dofs {
            d[c as usize] = T::one();
        }
        Some(d)
    }
}

/// The right-hand side of the constrained system for the correction `w = u − g̃`, with
/// Dirichlet values `g` (a full vector; only its constrained entries are read) and
/// `g̃ = g` on `dofs`, zero elsewhere: `b_f = f_f − (A g̃)_f`, `b_c = 0`. Solving
/// `ConstrainedOperator(A) w = b` from `w = 0` gives `w_c = 0` and
/// `A_ff w_f = f_f − A_fc g_c`; the solution is `u = g̃ + w` (see [`add_boundary_values`]).
pub fn lift_rhs<T: Real, A: LinearOperator<T>>(
    op: &A,
    dofs: &[u32],
    f: &[T],
    g: &[T],
) -> Result<Vec<T>, FormError> {
    let n = op.nrows();
    if op.ncols() != n {
        return Err(FormError::NotSquare {
            nrows: n,
            ncols: op.ncols(),
        });
    }
    for (what, v) in [("f", f), ("g", g)] {
        if v.len() != n {
            return Err(FormError::VectorLength {
                what,
                got: v.len(),
                expected: n,
            });
        }
    }
    let mask = mask_of(dofs, n)?;
    let gt: Vec<T> = g
        .par_iter()
        .zip(&mask)
        .map(|(&v, &m)| if m { v } else { T::zero() })
        .collect();
    let mut b = vec![T::zero(); n];
    op.apply(&gt, &mut b);
    b.par_iter_mut()
        .zip(f)
        .zip(&gt)
        .zip(&mask)
        .for_each(|(((b, &f), _), &m)| *b = if m { T::zero() } else { f - *b });
    Ok(b)
}

/// `u ← w + g̃`: the solution from the correction `w` of [`lift_rhs`] or
/// [`lift_residual`], with the boundary values `g` set on `dofs` (where `w` is zero).
pub fn add_boundary_values<T: Real>(w: &mut [T], dofs: &[u32], g: &[T]) -> Result<(), FormError> {
    let n = w.len();
    if g.len() != n {
        return Err(FormError::VectorLength {
            what: "g",
            got: g.len(),
            expected: n,
        });
    }
    for &d in dofs {
        let d = d as usize;
        if d >= n {
            return Err(FormError::DofOutOfRange { dof: d as u32, n });
        }
        w[d] = g[d];
    }
    Ok(())
}

/// [`lift_rhs`] for a form whose residual is affine, `r(u) = K u − F`: `b_f = −r(g̃)_f`,
/// `b_c = 0` (the right-hand side of the correction `w = u − g̃`), in one residual
/// evaluation.
pub fn lift_residual<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    dofs: &[u32],
    g: &[T],
) -> Result<Vec<T>, FormError> {
    let n = op.num_dofs();
    if g.len() != n {
        return Err(FormError::VectorLength {
            what: "g",
            got: g.len(),
            expected: n,
        });
    }
    let mask = mask_of(dofs, n)?;
    let gt: Vec<T> = g
        .iter()
        .zip(&mask)
        .map(|(&v, &m)| if m { v } else { T::zero() })
        .collect();
    let mut b = vec![T::zero(); n];
    op.residual(&gt, &mut b);
    for (b, &m) in b.iter_mut().zip(&mask) {
        *b = if m { T::zero() } else { -*b };
    }
    Ok(b)
}

/// `∫_Γ φ_i · g_N(x, n) ds` over the boundary facets `facets` (`(cell, local facet)`, as
/// from [`Mesh::boundary_facets`] or [`Mesh::locate_tagged_facets`]), as an L-vector of
/// `space`. `flux(x, n, out)` gets the physical point, the outward unit normal and writes
/// `ncomp` values; the facet rule is exact for degree `quad_degree` in the facet
/// parameters (see [`for_each_facet_point`]).
pub fn neumann_rhs<F>(
    mesh: &Mesh,
    space: &H1Space,
    facets: &[(u32, u8)],
    flux: F,
    quad_degree: usize,
) -> Result<Vec<f64>, FormError>
where
    F: Fn(&[f64], &[f64], &mut [f64]),
{
    let d = mesh.dim();
    let nc = space.ncomp();
    let r = space.restriction();
    let mut rhs = vec![0.0; space.num_dofs()];
    let mut g = vec![0.0; nc];
    for_each_facet_point(mesh, space, facets, quad_degree, |p| {
        flux(&p.x[..d], &p.normal[..d], &mut g);
        let nodes = r.elem(p.cell);
        for (i, &node) in nodes.iter().enumerate() {
            let phi = p.basis[i];
            if phi == 0.0 {
                continue;
            }
            for c in 0..nc {
                rhs[node as usize * nc + c] += p.weight * phi * g[c];
            }
        }
    })?;
    Ok(rhs)
}
