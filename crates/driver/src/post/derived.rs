//! Quantities derived from a model's solution, projected to the nodes: the gradient `∇u`
//! and the flux (the physics' `f1`: `κ∇u` for the scalar kinds); for configured elasticity
//! instead the strain, the stress (`f1`) and the von Mises stress. Each cell evaluates them at its own nodes from
//! its polynomial, and every node takes the average over the cells that share it.

use super::reduction::{Reduction, WholeMesh};
use crate::model_setup::ModelCase;
use crate::pipeline_error::PipelineError;
use ferrofem_fe::LagrangeElement;
use ferrofem_geometry::Jacobian;
use ferrofem_mesh::Mesh;
use ferrofem_physics::{ModelKind, Point};
use ferrofem_space::H1Space;

/// A nodal field: `values[node * ncomp + c]` over the nodes of the solution's space.
#[derive(Clone, Debug, PartialEq)]
pub struct DerivedField {
    /// Its name (`grad_u`, `flux`, `strain`, `stress`, `von_mises`).
    pub name: &'static str,
    /// Components: vectors `dim`; symmetric tensors 3 in 2-D (`xx, yy, xy`) and 6 in 3-D
    /// (`xx, yy, zz, xy, yz, xz`, ParaView's order); scalars 1.
    pub ncomp: usize,
    /// The values.
    pub values: Vec<f64>,
}

/// Components of a symmetric tensor field and their `(i, j)` entries.
fn voigt(d: usize) -> &'static [(usize, usize)] {
    if d == 2 {
        &[(0, 0), (1, 1), (0, 1)]
    } else {
        &[(0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2)]
    }
}

/// The derived fields of `model`'s solution `u` (an L-vector of `space`).
pub fn derived_fields(
    mesh: &Mesh,
    space: &H1Space,
    model: &ModelCase,
    u: &[f64],
) -> Result<Vec<DerivedField>, PipelineError> {
    derived_fields_with(mesh, space, model, u, &WholeMesh)
}

/// [`derived_fields`] of a rank's part: a node's average is over the cells of every rank
/// that holds it (`reduction` sums the cells' values and counts at shared nodes).
pub fn derived_fields_with(
    mesh: &Mesh,
    space: &H1Space,
    model: &ModelCase,
    u: &[f64],
    reduction: &dyn Reduction,
) -> Result<Vec<DerivedField>, PipelineError> {
    let d = mesh.dim();
    let nc = space.ncomp();
    let element = space.element();
    let nb = element.num_nodes();
    let tab = element.tabulate(element.nodes()).map_err(to_pipeline)?;
    let coord = LagrangeElement::new(mesh.cell_type(), 1).map_err(to_pipeline)?;
    let ctab = coord.tabulate(element.nodes()).map_err(to_pipeline)?;
    let nv = coord.num_nodes();
    let configured = model.physics.configured();
    let elastic = configured.is_some_and(|p| matches!(p.kind(), ModelKind::Elasticity { .. }));
    let physics = model.physics.as_f64();
    let vo = voigt(d);
    // per node: gradient (nc·d), f1 (nc·d), von Mises (elasticity)
    let per = 2 * nc * d + usize::from(elastic);
    let nn = space.num_nodes();
    let mut acc = vec![0.0; nn * per];
    let mut count = vec![0.0f64; nn];
    let r = space.restriction();
    let (mut ue, mut du, mut f1) = (vec![0.0; nb * nc], vec![0.0; nc * d], vec![0.0; nc * d]);
    for cell in 0..mesh.num_cells() {
        let nodes = r.elem(cell);
        for (i, &n) in nodes.iter().enumerate() {
            for c in 0..nc {
                ue[i * nc + c] = u[n as usize * nc + c];
            }
        }
        let verts = mesh.cell(cell);
        let slot = if model.cell_slots.is_empty() {
            0.0
        } else {
            model.cell_slots[cell]
        };
        for (i, &n) in nodes.iter().enumerate() {
            let mut j = [[0.0; 3]; 3];
            for (v, &vid) in verts.iter().enumerate().take(nv) {
                let xv = mesh.vertex(vid as usize);
                for a in 0..d {
                    for k in 0..d {
                        j[a][k] += xv[a] * ctab.grads[(i * nv + v) * d + k];
                    }
                }
            }
            let inv = Jacobian::from_matrix(d, j).inverse();
            du.iter_mut().for_each(|v| *v = 0.0);
            for b in 0..nb {
                let g = &tab.grads[(i * nb + b) * d..(i * nb + b + 1) * d];
                for k in 0..d {
                    // ∂φ_b/∂x_k = Σ_m ∂φ_b/∂ξ_m ∂ξ_m/∂x_k
                    let gk: f64 = (0..d).map(|m| g[m] * inv[m][k]).sum();
                    for c in 0..nc {
                        du[c * d + k] += ue[b * nc + c] * gk;
                    }
                }
            }
            let x = space.node_coord(n as usize);
            let point = Point {
                x,
                u: &ue[i * nc..(i + 1) * nc],
                du: &du,
                a: std::slice::from_ref(&slot),
                da: &[0.0; 3][..d],
            };
            physics.f1(&point, &mut f1);
            let o = &mut acc[n as usize * per..(n as usize + 1) * per];
            for k in 0..nc * d {
                o[k] += du[k];
                o[nc * d + k] += f1[k];
            }
            if let (true, Some(p)) = (elastic, configured) {
                let szz = p.out_of_plane_stress(slot as usize, x, &du);
                o[2 * nc * d] += von_mises(d, &f1, szz);
            }
            count[n as usize] += 1.0;
        }
    }
    reduction.sum_shared(&mut acc, per)?;
    reduction.sum_shared(&mut count, 1)?;
    for (n, &k) in count.iter().enumerate() {
        let w = 1.0 / k.max(1.0);
        acc[n * per..(n + 1) * per].iter_mut().for_each(|v| *v *= w);
    }
    let take = |offset: usize, comps: &[usize]| -> Vec<f64> {
        let mut out = Vec::with_capacity(nn * comps.len());
        for n in 0..nn {
            out.extend(comps.iter().map(|&c| acc[n * per + offset + c]));
        }
        out
    };
    Ok(if elastic {
        let sym: Vec<usize> = vo.iter().map(|&(i, j)| i * d + j).collect();
        // the strain from the averaged displacement gradient: ε = ½(∇u + ∇uᵀ)
        let grad = take(0, &(0..d * d).collect::<Vec<_>>());
        let mut strain = Vec::with_capacity(nn * vo.len());
        for n in 0..nn {
            let g = &grad[n * d * d..(n + 1) * d * d];
            strain.extend(vo.iter().map(|&(i, j)| 0.5 * (g[i * d + j] + g[j * d + i])));
        }
        vec![
            DerivedField {
                name: "strain",
                ncomp: vo.len(),
                values: strain,
            },
            DerivedField {
                name: "stress",
                ncomp: vo.len(),
                values: take(nc * d, &sym),
            },
            DerivedField {
                name: "von_mises",
                ncomp: 1,
                values: take(2 * nc * d, &[0]),
            },
        ]
    } else {
        vec![
            DerivedField {
                name: "grad_u",
                ncomp: nc * d,
                values: take(0, &(0..nc * d).collect::<Vec<_>>()),
            },
            DerivedField {
                name: "flux",
                ncomp: nc * d,
                values: take(nc * d, &(0..nc * d).collect::<Vec<_>>()),
            },
        ]
    })
}

/// The von Mises stress of the stress `s` (`d × d`, row-major) with out-of-plane normal
/// stress `szz` in 2-D.
pub(crate) fn von_mises(d: usize, s: &[f64], szz: f64) -> f64 {
    let (sxx, syy, sxy) = (s[0], s[d + 1], s[1]);
    let (zz, yz, xz) = if d == 3 {
        (s[8], s[5], s[2])
    } else {
        (szz, 0.0, 0.0)
    };
    (0.5 * ((sxx - syy).powi(2) + (syy - zz).powi(2) + (zz - sxx).powi(2))
        + 3.0 * (sxy * sxy + yz * yz + xz * xz))
        .sqrt()
}

fn to_pipeline(e: ferrofem_fe::FeError) -> PipelineError {
    ferrofem_space::SpaceError::from(e).into()
}
