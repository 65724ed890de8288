//! Boundary integrals of a model's solution, per facet group: the group's measure, the
//! normal flux `∫ f1·n` (`κ∂u/∂n` or the traction `σn`: the quantity a Neumann condition
//! prescribes) from the cells' gradients, and on Dirichlet groups the consistent reaction:
//! the sum of the residual `r(u) − N` over the group's constrained dofs, which equals the
//! same integral for the discrete solution's fluxes in the weak sense and, unlike the
//! gradient's trace, is as accurate as the solve (the total of the reactions balances the
//! loads to the solver's tolerance). Where two Dirichlet groups share nodes, each reaction
//! includes the shared nodes' residuals.

use crate::file::BoundaryCondition;
use crate::pipeline_error::PipelineError;
use crate::problem::{facet_groups, Problem};
use ferrofem_geometry::Jacobian;
use ferrofem_mesh::Mesh;
use ferrofem_operator::{for_each_facet_point, FormOperator, FormOptions};
use ferrofem_physics::{Physics, Point};
use serde::Serialize;

/// The integrals over one facet group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BoundaryIntegral {
    /// The group, in words (`name (tag)`).
    pub group: String,
    /// Its tag.
    pub tag: i32,
    /// `dirichlet`, `neumann`, `robin` or `free` (no condition: zero flux).
    pub condition: &'static str,
    /// Its length (2-D) or area (3-D).
    pub measure: f64,
    /// `∫ f1·n` per component, from the cells' gradients.
    pub normal_flux: Vec<f64>,
    /// The consistent reaction per component (Dirichlet groups).
    pub reaction: Option<Vec<f64>>,
}

/// The boundary integrals of `problem`'s solution `u` (a model; empty for a manufactured
/// problem).
pub fn boundary_integrals(
    mesh: &Mesh,
    problem: &Problem,
    u: &[f64],
) -> Result<Vec<BoundaryIntegral>, PipelineError> {
    let Some(model) = problem.model() else {
        return Ok(Vec::new());
    };
    let space = &problem.space;
    let (d, nc) = (mesh.dim(), space.ncomp());
    let located = mesh.locate_tagged_facets()?;
    let op = FormOperator::<f64, _>::with_options(
        mesh,
        space,
        model.physics.clone(),
        FormOptions {
            aux: problem.aux(),
            ..FormOptions::default()
        },
    )?;
    let mut residual = vec![0.0; u.len()];
    op.residual(u, &mut residual);
    crate::terms::add_robin(problem, u, &mut residual);
    for (r, n) in residual.iter_mut().zip(&model.natural_load) {
        *r -= n;
    }
    let r = space.restriction();
    let degree = 2 * space.order() + 2;
    let mut out = Vec::new();
    for group in facet_groups(mesh) {
        let facets: Vec<(u32, u8)> = located
            .iter()
            .filter(|(_, _, t)| *t == group.tag)
            .map(|&(c, f, _)| (c, f))
            .collect();
        let resolved = model.boundaries.iter().find(|b| b.group.tag == group.tag);
        let condition = match resolved.map(|b| &b.condition) {
            None => "free",
            Some(BoundaryCondition::Dirichlet(_)) => "dirichlet",
            Some(BoundaryCondition::Neumann(_)) => "neumann",
            Some(BoundaryCondition::Robin(_)) => "robin",
        };
        let mut measure = 0.0;
        let mut flux = vec![0.0; nc];
        let (mut ue, mut du, mut f1) = (vec![0.0; nc], vec![0.0; nc * d], vec![0.0; nc * d]);
        for_each_facet_point(mesh, space, &facets, degree, |p| {
            let nodes = r.elem(p.cell);
            let inv = Jacobian::from_matrix(d, p.jacobian).inverse();
            ue.iter_mut().for_each(|v| *v = 0.0);
            du.iter_mut().for_each(|v| *v = 0.0);
            for (b, &n) in nodes.iter().enumerate() {
                let g = &p.ref_grads[b * d..(b + 1) * d];
                for c in 0..nc {
                    let un = u[n as usize * nc + c];
                    ue[c] += p.basis[b] * un;
                    for k in 0..d {
                        du[c * d + k] += un * (0..d).map(|m| g[m] * inv[m][k]).sum::<f64>();
                    }
                }
            }
            let slot = if model.cell_slots.is_empty() {
                0.0
            } else {
                model.cell_slots[p.cell]
            };
            Physics::<f64>::f1(
                &model.physics,
                &Point {
                    x: &p.x[..d],
                    u: &ue,
                    du: &du,
                    a: std::slice::from_ref(&slot),
                    da: &[0.0; 3][..d],
                },
                &mut f1,
            );
            measure += p.weight;
            for c in 0..nc {
                flux[c] += p.weight * (0..d).map(|k| f1[c * d + k] * p.normal[k]).sum::<f64>();
            }
        })?;
        let reaction = resolved
            .filter(|b| matches!(b.condition, BoundaryCondition::Dirichlet(_)))
            .map(|b| {
                let mut sum = vec![0.0; nc];
                for &dof in &b.dofs {
                    sum[dof as usize % nc] += residual[dof as usize];
                }
                sum
            });
        out.push(BoundaryIntegral {
            group: group.to_string(),
            tag: group.tag,
            condition,
            measure,
            normal_flux: flux,
            reaction,
        });
    }
    Ok(out)
}
