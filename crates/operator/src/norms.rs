//! Discretisation errors against an exact solution: `‖u_h − u‖_{L²}` and
//! `|u_h − u|_{H¹}`, absolute and relative, integrated with a rule of higher degree than the
//! discrete solution (so that the quadrature error stays below the discretisation error).

use crate::FormError;
use ferrofem_fe::QuadratureRule;
use ferrofem_geometry::QuadGeometry;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use rayon::prelude::*;

/// Cells per parallel task of the error integration.
const CELLS_PER_TASK: usize = 512;

/// Errors of a discrete solution (see [`errors`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Errors {
    /// `‖u_h − u‖_{L²}`.
    pub l2: f64,
    /// `|u_h − u|_{H¹} = ‖∇(u_h − u)‖_{L²}`.
    pub h1_semi: f64,
    /// `‖u_h − u‖ / ‖u‖` (the absolute error where `‖u‖ = 0`).
    pub l2_rel: f64,
    /// `|u_h − u|_1 / |u|_1` (the absolute error where `|u|_1 = 0`).
    pub h1_rel: f64,
}

/// The errors of the L-vector `u` of `space` against `exact(x, out)` (`ncomp` values) and
/// its gradient `exact_grad(x, out)` (`out[c * dim + k] = ∂u_c/∂x_k`), integrated with the
/// rule of degree `quad_degree` (default `2p + 2`). Parallel over cells, deterministic.
///
/// Fails when the space was built on another mesh, `u` has the wrong length, or a cell is
/// inverted.
pub fn errors<F, G>(
    mesh: &Mesh,
    space: &H1Space,
    u: &[f64],
    exact: F,
    exact_grad: G,
    quad_degree: Option<usize>,
) -> Result<Errors, FormError>
where
    F: Fn(&[f64], &mut [f64]) + Sync,
    G: Fn(&[f64], &mut [f64]) + Sync,
{
    let ct = mesh.cell_type();
    crate::form::check_space_on_mesh(mesh, space)?;
    if u.len() != space.num_dofs() {
        return Err(FormError::VectorLength {
            what: "u",
            got: u.len(),
            expected: space.num_dofs(),
        });
    }
    let rule = QuadratureRule::for_degree(ct, quad_degree.unwrap_or(2 * space.order() + 2))?;
    let geo = QuadGeometry::compute(mesh, &rule)?;
    let tab = space.element().tabulate(&rule.points)?;
    let (d, nc, nb, nq) = (ct.dim(), space.ncomp(), tab.num_basis, rule.len());
    let r = space.restriction();
    let ncells = mesh.num_cells();
    // [‖e‖², |e|₁², ‖u‖², |u|₁²] per task, summed in task order
    let partial: Vec<[f64; 4]> = (0..ncells.div_ceil(CELLS_PER_TASK))
        .into_par_iter()
        .map(|t| {
            let mut sums = [0.0; 4];
            let mut ue = vec![0.0; nc * nb];
            let mut uh = vec![0.0; nc];
            let mut guh = vec![0.0; nc * d];
            let mut ux = vec![0.0; nc];
            let mut gux = vec![0.0; nc * d];
            let mut gref = vec![0.0; d];
            for c in t * CELLS_PER_TASK..((t + 1) * CELLS_PER_TASK).min(ncells) {
                r.gather_elem(c, u, &mut ue);
                for q in 0..nq {
                    let p = c * nq + q;
                    let jinv = &geo.jinv[p * d * d..(p + 1) * d * d];
                    let x = &geo.x[p * d..(p + 1) * d];
                    for comp in 0..nc {
                        let mut s = 0.0;
                        gref.iter_mut().for_each(|g| *g = 0.0);
                        for i in 0..nb {
                            let v = ue[comp * nb + i];
                            s += tab.values[q * nb + i] * v;
                            for k in 0..d {
                                gref[k] += tab.grads[(q * nb + i) * d + k] * v;
                            }
                        }
                        uh[comp] = s;
                        for l in 0..d {
                            guh[comp * d + l] = (0..d).map(|k| gref[k] * jinv[k * d + l]).sum();
                        }
                    }
                    exact(x, &mut ux);
                    exact_grad(x, &mut gux);
                    let w = geo.wdetj[p];
                    for comp in 0..nc {
                        sums[0] += w * (uh[comp] - ux[comp]).powi(2);
                        sums[2] += w * ux[comp].powi(2);
                    }
                    for j in 0..nc * d {
                        sums[1] += w * (guh[j] - gux[j]).powi(2);
                        sums[3] += w * gux[j].powi(2);
                    }
                }
            }
            sums
        })
        .collect();
    let mut s = [0.0; 4];
    for p in &partial {
        for k in 0..4 {
            s[k] += p[k];
        }
    }
    let rel = |e: f64, n: f64| if n > 0.0 { e / n } else { e };
    let (l2, h1) = (s[0].sqrt(), s[1].sqrt());
    Ok(Errors {
        l2,
        h1_semi: h1,
        l2_rel: rel(l2, s[2].sqrt()),
        h1_rel: rel(h1, s[3].sqrt()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofem_base::CellType;
    use ferrofem_mesh::{generate_box, BoxSpec};

    fn mesh(ct: CellType, n: usize, perturb: f64) -> Mesh {
        let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
        spec.perturb = perturb;
        spec.seed = 3;
        generate_box(&spec).unwrap()
    }

    /// A polynomial of degree `p` per variable (total degree p on simplices), and its
    /// gradient.
    fn poly(x: &[f64], p: i32, simplex: bool) -> (f64, [f64; 3]) {
        let d = x.len();
        // simplices: sum of x_k^p + x_0^{p-1} x_1; tensor cells: prod_k (1 + x_k^p)
        let mut g = [0.0; 3];
        if simplex {
            let mut v = x[0].powi(p - 1) * x[1];
            g[0] = (p - 1) as f64 * x[0].powi((p - 2).max(0)) * x[1] * (p > 1) as i32 as f64;
            g[1] = x[0].powi(p - 1);
            for k in 0..d {
                v += x[k].powi(p);
                g[k] += p as f64 * x[k].powi(p - 1);
            }
            (v, g)
        } else {
            let f: Vec<f64> = (0..d).map(|k| 1.0 + x[k].powi(p)).collect();
            let v: f64 = f.iter().product();
            for k in 0..d {
                let others: f64 = (0..d).filter(|&j| j != k).map(|j| f[j]).product();
                g[k] = p as f64 * x[k].powi(p - 1) * others;
            }
            (v, g)
        }
    }

    #[test]
    fn interpolated_polynomials_of_the_space_degree_have_no_error() {
        for ct in CellType::ALL {
            let p_max = if ct == CellType::Hexahedron { 2 } else { 3 };
            for p in 1..=p_max {
                // affine meshes: simplices may be perturbed, tensor cells stay parallelograms
                let m = if ct.is_simplex() {
                    mesh(ct, 3, 0.2)
                } else {
                    mesh(ct, 3, 0.0)
                };
                let space = H1Space::new(&m, p, 2).unwrap();
                let d = ct.dim();
                let simplex = ct.is_simplex();
                let f = move |x: &[f64], out: &mut [f64]| {
                    let (v, _) = poly(x, p as i32, simplex);
                    out[0] = v;
                    out[1] = 2.0 - v;
                };
                let fg = move |x: &[f64], out: &mut [f64]| {
                    let (_, g) = poly(x, p as i32, simplex);
                    for k in 0..d {
                        out[k] = g[k];
                        out[d + k] = -g[k];
                    }
                };
                let u = space.interpolate(f);
                let e = errors(&m, &space, &u, f, fg, None).unwrap();
                assert!(e.l2_rel < 1e-12, "{ct} p={p}: {e:?}");
                assert!(e.h1_rel < 1e-11, "{ct} p={p}: {e:?}");
                // and a wrong vector is measured as wrong
                let wrong: Vec<f64> = u.iter().map(|v| v + 0.1).collect();
                let e = errors(&m, &space, &wrong, f, fg, None).unwrap();
                assert!(
                    (e.l2 - 0.1 * 2f64.sqrt()).abs() < 1e-10,
                    "{ct} p={p}: {e:?}"
                );
            }
        }
    }

    #[test]
    fn interpolation_error_of_a_sine_converges_at_rate_p_plus_one() {
        use std::f64::consts::PI;
        let f = |x: &[f64], out: &mut [f64]| {
            out[0] = x.iter().map(|&c| (PI * c).sin()).product();
        };
        let fg = |x: &[f64], out: &mut [f64]| {
            let d = x.len();
            for k in 0..d {
                out[k] = (0..d)
                    .map(|j| {
                        if j == k {
                            PI * (PI * x[j]).cos()
                        } else {
                            (PI * x[j]).sin()
                        }
                    })
                    .product();
            }
        };
        for ct in CellType::ALL {
            let (n0, p_max) = if ct.dim() == 3 { (3, 2) } else { (6, 3) };
            for p in 1..=p_max {
                let err = |n: usize| {
                    let m = mesh(ct, n, 0.0);
                    let s = H1Space::new(&m, p, 1).unwrap();
                    let u = s.interpolate(f);
                    errors(&m, &s, &u, f, fg, None).unwrap()
                };
                let (a, b) = (err(n0), err(2 * n0));
                let rate = (a.l2 / b.l2).log2();
                let rate_h1 = (a.h1_semi / b.h1_semi).log2();
                assert!(
                    (rate - (p + 1) as f64).abs() < 0.35,
                    "{ct} p={p}: L2 rate {rate}"
                );
                assert!(
                    (rate_h1 - p as f64).abs() < 0.35,
                    "{ct} p={p}: H1 rate {rate_h1}"
                );
            }
        }
    }

    #[test]
    fn bad_inputs_are_errors() {
        let m = mesh(CellType::Triangle, 2, 0.0);
        let other = mesh(CellType::Triangle, 3, 0.0);
        let s = H1Space::new(&m, 1, 1).unwrap();
        let zero = |_: &[f64], o: &mut [f64]| o.iter_mut().for_each(|v| *v = 0.0);
        assert!(matches!(
            errors(&m, &s, &[0.0; 2], zero, zero, None),
            Err(FormError::VectorLength { .. })
        ));
        let u = vec![0.0; s.num_dofs()];
        assert!(matches!(
            errors(&other, &s, &u, zero, zero, None),
            Err(FormError::MeshMismatch { .. })
        ));
        let e = errors(&m, &s, &u, zero, zero, None).unwrap();
        assert_eq!((e.l2, e.l2_rel), (0.0, 0.0));
    }
}
