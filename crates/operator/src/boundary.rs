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

use crate::{FormError, FormOperator};
use ferrofem_base::{CellType, LinearOperator, Real};
use ferrofem_fe::{gauss_legendre, LagrangeElement, QuadratureRule};
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

/// A rule on the reference facet in affine parameters `t` (`t ∈ [0,1]` for segments,
/// the unit triangle, or `[0,1]²`), weights summing to the parameter domain's measure.
fn facet_rule(ct: CellType, degree: usize) -> Result<(Vec<f64>, Vec<f64>), FormError> {
    match ct.facet_type() {
        None => {
            let r = gauss_legendre(degree / 2 + 1)?;
            Ok((
                r.points.iter().map(|s| 0.5 * (s + 1.0)).collect(),
                r.weights.iter().map(|w| 0.5 * w).collect(),
            ))
        }
        Some(CellType::Triangle) => {
            let r = QuadratureRule::for_degree(CellType::Triangle, degree)?;
            Ok((r.points, r.weights))
        }
        Some(ft) => {
            let r = QuadratureRule::for_degree(ft, degree)?;
            Ok((
                r.points.iter().map(|s| 0.5 * (s + 1.0)).collect(),
                r.weights.iter().map(|w| 0.25 * w).collect(),
            ))
        }
    }
}

/// One local facet of the reference cell: its affine parametrisation
/// `ξ(t) = v0 + Σ_a t_a T_a`, the outward reference normal, and the space's and the
/// coordinate map's tabulations at the facet quadrature points.
struct RefFacet {
    tangents: [[f64; 3]; 2],
    normal: [f64; 3],
    basis: ferrofem_fe::Tabulation,
    coord: ferrofem_fe::Tabulation,
}

fn ref_facet(
    ct: CellType,
    f: usize,
    tpoints: &[f64],
    element: &LagrangeElement,
    coord: &LagrangeElement,
) -> Result<RefFacet, FormError> {
    let d = ct.dim();
    let fv = ct.facets()[f];
    let v0 = ct.reference_vertex(fv[0]);
    let mut tangents = [[0.0; 3]; 2];
    for (a, t) in tangents.iter_mut().enumerate().take(d - 1) {
        // simplex facets: vertices 1, 2; tensor facets (lexicographic): vertices 1, 2 too
        // (1 << a for a < 2)
        let va = ct.reference_vertex(fv[if ct.is_simplex() { a + 1 } else { 1 << a }]);
        for k in 0..d {
            t[k] = va[k] - v0[k];
        }
    }
    let mut normal = [0.0; 3];
    if ct.is_tensor() {
        normal[f / 2] = if f % 2 == 0 { -1.0 } else { 1.0 };
    } else if f == 0 {
        normal[..d].iter_mut().for_each(|n| *n = 1.0);
    } else {
        normal[f - 1] = -1.0;
    }
    let nt = tpoints.len() / (d - 1);
    let mut xi = Vec::with_capacity(nt * d);
    for q in 0..nt {
        let t = &tpoints[q * (d - 1)..(q + 1) * (d - 1)];
        for k in 0..d {
            let mut x = v0[k];
            for a in 0..d - 1 {
                x += t[a] * tangents[a][k];
            }
            xi.push(x);
        }
    }
    Ok(RefFacet {
        tangents,
        normal,
        basis: element.tabulate(&xi)?,
        coord: coord.tabulate(&xi)?,
    })
}

/// `∫_Γ φ_i · g_N(x, n) ds` over the boundary facets `facets` (`(cell, local facet)`, as
/// from [`Mesh::boundary_facets`] or [`Mesh::locate_tagged_facets`]), as an L-vector of
/// `space`. `flux(x, n, out)` gets the physical point, the outward unit normal and writes
/// `ncomp` values. The facet rule (Gauss on edges, a triangle or quadrilateral rule on
/// faces) is exact for degree `quad_degree` in the facet parameters; it is mapped into the
/// cell's reference coordinates, the surface element is `|τ_1|` (2-D) or `|τ_1 × τ_2|`
/// (3-D) for the mapped tangents `τ_a = J T_a`, and the normal is `cof(J) n̂`, normalised.
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
    let ct = mesh.cell_type();
    crate::form::check_space_on_mesh(mesh, space)?;
    let nf = ct.num_facets();
    if let Some(&(cell, facet)) = facets
        .iter()
        .find(|&&(c, f)| c as usize >= mesh.num_cells() || f as usize >= nf)
    {
        return Err(FormError::FacetOutOfRange {
            cell,
            facet,
            num_cells: mesh.num_cells(),
            num_facets: nf,
        });
    }
    let d = ct.dim();
    let nc = space.ncomp();
    let (tpoints, tweights) = facet_rule(ct, quad_degree)?;
    let coord = LagrangeElement::new(ct, 1)?;
    let refs = (0..nf)
        .map(|f| ref_facet(ct, f, &tpoints, space.element(), &coord))
        .collect::<Result<Vec<_>, _>>()?;
    let nb = space.element().num_nodes();
    let nv = ct.num_vertices();
    let r = space.restriction();
    let mut rhs = vec![0.0; space.num_dofs()];
    let mut g = vec![0.0; nc];
    for &(cell, f) in facets {
        let rf = &refs[f as usize];
        let verts = mesh.cell(cell as usize);
        let nodes = r.elem(cell as usize);
        for (q, &tw) in tweights.iter().enumerate() {
            // x and J[i][k] = ∂x_i/∂ξ_k from the coordinate map
            let mut x = [0.0; 3];
            let mut j = [[0.0; 3]; 3];
            for (v, &vid) in verts.iter().enumerate().take(nv) {
                let xv = mesh.vertex(vid as usize);
                let phi = rf.coord.values[q * nv + v];
                for i in 0..d {
                    x[i] += phi * xv[i];
                    for k in 0..d {
                        j[i][k] += xv[i] * rf.coord.grads[(q * nv + v) * d + k];
                    }
                }
            }
            let mut tau = [[0.0; 3]; 2];
            for a in 0..d - 1 {
                for i in 0..d {
                    tau[a][i] = (0..d).map(|k| j[i][k] * rf.tangents[a][k]).sum();
                }
            }
            let ds = if d == 2 {
                norm(&tau[0])
            } else {
                norm(&cross(&tau[0], &tau[1]))
            };
            // cof(J) n̂: in 2-D cof = [[j11, -j10], [-j01, j00]]; in 3-D the columns of
            // cof(J) are J_1 × J_2, J_2 × J_0, J_0 × J_1 (J_k the k-th column of J)
            let mut n = [0.0; 3];
            if d == 2 {
                let nh = rf.normal;
                n[0] = j[1][1] * nh[0] - j[1][0] * nh[1];
                n[1] = -j[0][1] * nh[0] + j[0][0] * nh[1];
            } else {
                let col = |k: usize| [j[0][k], j[1][k], j[2][k]];
                let cof = [
                    cross(&col(1), &col(2)),
                    cross(&col(2), &col(0)),
                    cross(&col(0), &col(1)),
                ];
                for k in 0..3 {
                    for i in 0..3 {
                        n[i] += cof[k][i] * rf.normal[k];
                    }
                }
            }
            let nn = norm(&n);
            n.iter_mut().for_each(|v| *v /= nn);
            flux(&x[..d], &n[..d], &mut g);
            let w = tw * ds;
            for (i, &node) in nodes.iter().enumerate().take(nb) {
                let phi = rf.basis.values[q * nb + i];
                if phi == 0.0 {
                    continue;
                }
                for c in 0..nc {
                    rhs[node as usize * nc + c] += w * phi * g[c];
                }
            }
        }
    }
    Ok(rhs)
}

fn cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

fn norm(a: &[f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}
