//! Integrals of a model's solution: per region its measure and `∫ u`; per facet group the group's measure, the
//! normal flux `∫ f1·n` (`κ∂u/∂n` or the traction `σn`: the quantity a Neumann condition
//! prescribes) from the cells' gradients, and on Dirichlet groups the consistent reaction:
//! the sum of the residual `r(u) − N` over the group's constrained dofs, which equals the
//! same integral for the discrete solution's fluxes in the weak sense and, unlike the
//! gradient's trace, is as accurate as the solve (the total of the reactions balances the
//! loads to the solver's tolerance). Where two Dirichlet groups share nodes, each reaction
//! includes the shared nodes' residuals.

use super::reduction::{Reduction, WholeMesh};
use crate::file::BoundaryCondition;
use crate::pipeline_error::PipelineError;
use crate::problem::{facet_group, facet_groups, Problem};
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
    boundary_integrals_with(mesh, problem, u, &WholeMesh)
}

/// [`boundary_integrals`] of a rank's part, summed over the ranks by `reduction`: every
/// group any rank's facets carry, its measure and flux summed over the ranks' facets, a
/// reaction over the group's dofs with the residual summed at shared nodes, each dof
/// counted on its owner.
pub fn boundary_integrals_with(
    mesh: &Mesh,
    problem: &Problem,
    u: &[f64],
    reduction: &dyn Reduction,
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
    reduction.sum_shared(&mut residual, nc)?;
    let r = space.restriction();
    let degree = 2 * space.order() + 2;
    let mut out = Vec::new();
    let tags = reduction.union_tags(facet_groups(mesh).iter().map(|g| g.tag).collect())?;
    for tag in tags {
        let group = facet_group(mesh, tag);
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
        let mut sums = vec![measure];
        sums.extend_from_slice(&flux);
        reduction.sum_ranks(&mut sums)?;
        measure = sums[0];
        flux.copy_from_slice(&sums[1..]);
        let reaction = match resolved.map(|b| (&b.condition, &b.dofs)) {
            Some((BoundaryCondition::Dirichlet(_), dofs)) => {
                // the group's dofs as every holder knows them (a rank may hold a dof of
                // the group without its facet)
                let mut in_group = vec![0.0; residual.len()];
                for &dof in dofs {
                    in_group[dof as usize] = 1.0;
                }
                reduction.sum_shared(&mut in_group, nc)?;
                let mut sum = vec![0.0; nc];
                for (dof, &flag) in in_group.iter().enumerate() {
                    if flag > 0.0 && reduction.counts_node(dof / nc) {
                        sum[dof % nc] += residual[dof];
                    }
                }
                reduction.sum_ranks(&mut sum)?;
                Some(sum)
            }
            _ => None,
        };
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
    region_integrals_with(mesh, problem, u, &WholeMesh)
}

/// [`region_integrals`] of a rank's part, summed over the ranks by `reduction`.
pub fn region_integrals_with(
    mesh: &Mesh,
    problem: &Problem,
    u: &[f64],
    reduction: &dyn Reduction,
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
    for o in &mut out {
        let mut sums = vec![o.measure];
        sums.extend_from_slice(&o.integral);
        reduction.sum_ranks(&mut sums)?;
        o.measure = sums[0];
        o.integral.copy_from_slice(&sums[1..]);
    }
    Ok(out)
}
