//! Integrals of a model's solution: per region its measure and `∫ u`; per facet group the group's measure, the
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
use ferrofem_fe::QuadratureRule;
use ferrofem_geometry::{Jacobian, QuadGeometry};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{for_each_facet_point, FormOperator, FormOptions};
use ferrofem_physics::Point;
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
        model.physics.shared(),
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
            model.physics.as_f64().f1(
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

/// The integrals over one region (a material's cells).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RegionIntegral {
    /// The region, as the problem file names it.
    pub region: String,
    /// Its area (2-D) or volume (3-D).
    pub measure: f64,
    /// `∫ u` per component.
    pub integral: Vec<f64>,
}

/// The measure and `∫ u` of every region of `problem`'s model (empty for a manufactured
/// problem), with the rule of degree `2p` on each cell.
pub fn region_integrals(
    mesh: &Mesh,
    problem: &Problem,
    u: &[f64],
) -> Result<Vec<RegionIntegral>, PipelineError> {
    let Some(model) = problem.model() else {
        return Ok(Vec::new());
    };
    let space = &problem.space;
    let nc = space.ncomp();
    let rule = QuadratureRule::for_degree(mesh.cell_type(), 2 * space.order())
        .map_err(ferrofem_space::SpaceError::from)?;
    let geo = QuadGeometry::compute(mesh, &rule)?;
    let tab = space
        .element()
        .tabulate(&rule.points)
        .map_err(ferrofem_space::SpaceError::from)?;
    let (nq, nb) = (rule.len(), tab.num_basis);
    let names: Vec<String> = match model.physics.configured() {
        Some(p) => p.regions().iter().map(|r| r.name.clone()).collect(),
        None => vec!["all".to_string()],
    };
    let mut out: Vec<RegionIntegral> = names
        .into_iter()
        .map(|region| RegionIntegral {
            region,
            measure: 0.0,
            integral: vec![0.0; nc],
        })
        .collect();
    let r = space.restriction();
    for cell in 0..mesh.num_cells() {
        let slot = model.cell_slots.get(cell).map_or(0, |&s| s as usize);
        let o = &mut out[slot];
        let nodes = r.elem(cell);
        for q in 0..nq {
            let w = geo.wdetj[cell * nq + q];
            o.measure += w;
            for (b, &n) in nodes.iter().enumerate() {
                let phi = tab.values[q * nb + b];
                for c in 0..nc {
                    o.integral[c] += w * phi * u[n as usize * nc + c];
                }
            }
        }
    }
    Ok(out)
}
