//! Quadrature on boundary facets: a rule on each reference facet mapped into the cell, with
//! the surface element, the outward unit normal, the space's basis and the Jacobian at
//! every point ([`for_each_facet_point`]); Neumann loads, Robin terms and boundary
//! integrals (fluxes, tractions) are built on it.

use crate::FormError;
use ferrofem_base::CellType;
use ferrofem_fe::{gauss_legendre, LagrangeElement, QuadratureRule};
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;

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

/// One quadrature point on a boundary facet.
#[derive(Clone, Copy, Debug)]
pub struct FacetPoint<'a> {
    /// The cell the facet belongs to.
    pub cell: usize,
    /// The physical point (first `dim` entries).
    pub x: [f64; 3],
    /// The outward unit normal (first `dim` entries).
    pub normal: [f64; 3],
    /// Quadrature weight times the surface element.
    pub weight: f64,
    /// The space's basis functions at the point (one per node of the cell).
    pub basis: &'a [f64],
    /// Their reference gradients, `ref_grads[i * dim + k] = ∂φ_i/∂ξ_k`.
    pub ref_grads: &'a [f64],
    /// The coordinate map's Jacobian `J[i][k] = ∂x_i/∂ξ_k`.
    pub jacobian: [[f64; 3]; 3],
}

/// Calls `visit` at every quadrature point of the boundary facets `facets` (`(cell, local
/// facet)`). The facet rule (Gauss on edges, a triangle or quadrilateral rule on faces) is
/// exact for degree `quad_degree` in the facet parameters; it is mapped into the cell's
/// reference coordinates, the surface element is `|τ_1|` (2-D) or `|τ_1 × τ_2|` (3-D) for
/// the mapped tangents `τ_a = J T_a`, and the normal is `cof(J) n̂`, normalised.
pub fn for_each_facet_point<F>(
    mesh: &Mesh,
    space: &H1Space,
    facets: &[(u32, u8)],
    quad_degree: usize,
    mut visit: F,
) -> Result<(), FormError>
where
    F: FnMut(&FacetPoint<'_>),
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
    let (tpoints, tweights) = facet_rule(ct, quad_degree)?;
    let coord = LagrangeElement::new(ct, 1)?;
    let refs = (0..nf)
        .map(|f| ref_facet(ct, f, &tpoints, space.element(), &coord))
        .collect::<Result<Vec<_>, _>>()?;
    let nb = space.element().num_nodes();
    let nv = ct.num_vertices();
    for &(cell, f) in facets {
        let rf = &refs[f as usize];
        let verts = mesh.cell(cell as usize);
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
            visit(&FacetPoint {
                cell: cell as usize,
                x,
                normal: n,
                weight: tw * ds,
                basis: &rf.basis.values[q * nb..(q + 1) * nb],
                ref_grads: &rf.basis.grads[q * nb * d..(q + 1) * nb * d],
                jacobian: j,
            });
        }
    }
    Ok(())
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
