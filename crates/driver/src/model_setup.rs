//! A model set up on its mesh (a problem file's, or one with the user's own physics:
//! [`own_problem`]): materials resolved to regions of cells,
//! boundary conditions to groups of facets, the space, the Dirichlet values, the natural
//! load, and the configured physics ([`ModelPhysics`]).

use crate::file::{BoundaryCondition, BoundarySpec, MaterialSpec, ProblemFile, RegionRef};
use crate::pipeline_error::PipelineError;
use crate::problem::{BoundaryGroup, Definition, Problem};
use ferrofem_base::CsrMatrix;
use ferrofem_mesh::Mesh;
use ferrofem_operator::{for_each_facet_point, neumann_rhs};
use ferrofem_physics::{
    Coef, ModelKind, ModelPhysics, Physics, Region, SharedPhysics, MAX_VARIABLES,
};
use ferrofem_space::H1Space;
use std::ops::Range;
use std::sync::Arc;

/// A model as the file defines it, before it meets the mesh.
#[derive(Clone, Debug)]
pub struct ModelInput {
    /// The kind as written (`poisson`, ...).
    pub name: String,
    /// The equation.
    pub kind: ModelKind,
    /// Polynomial order.
    pub order: usize,
    /// `[[material]]` entries.
    pub materials: Vec<MaterialSpec>,
    /// `[[boundary]]` entries.
    pub boundaries: Vec<BoundarySpec>,
}

/// A boundary condition resolved to its facet group.
#[derive(Clone, Debug)]
pub struct ResolvedBoundary {
    /// The group.
    pub group: BoundaryGroup,
    /// The condition.
    pub condition: BoundaryCondition,
    /// Its facets `(cell, local facet)`.
    pub facets: Vec<(u32, u8)>,
    /// The dofs it constrains (Dirichlet only), sorted.
    pub dofs: Vec<u32>,
}

/// Where a model is set up: on the whole mesh, or on one rank's part of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    WholeMesh,
    Part,
}

/// The errors a part's set-up defers, one entry per check in the same order on every rank:
/// a region no cell or facet of the part carries, a part without a Dirichlet condition.
/// Each stands only where every rank's part raises it (the whole mesh then does too).
pub type PendingErrors = Vec<Option<PipelineError>>;

/// The physics of a model: configured from a problem file's data, or the user's own.
#[derive(Clone, Debug)]
pub enum CasePhysics {
    /// Kind, per-region coefficients and sources from a problem file.
    Configured(ModelPhysics),
    /// A physics the user wrote (see [`own_problem`]).
    Own(SharedPhysics),
}

impl CasePhysics {
    /// The physics as a trait object in `f64` (for post-processing).
    pub fn as_f64(&self) -> &dyn Physics<f64> {
        match self {
            CasePhysics::Configured(p) => p,
            CasePhysics::Own(p) => p,
        }
    }

    /// The physics shared, usable as a `Physics<T>` of either precision.
    pub fn shared(&self) -> SharedPhysics {
        match self {
            CasePhysics::Configured(p) => SharedPhysics(Arc::new(p.clone())),
            CasePhysics::Own(p) => p.clone(),
        }
    }

    /// The configured physics, when it is one.
    pub fn configured(&self) -> Option<&ModelPhysics> {
        match self {
            CasePhysics::Configured(p) => Some(p),
            CasePhysics::Own(_) => None,
        }
    }
}

/// A model on its mesh: a problem file's, or one with the user's own physics (see the
/// module documentation).
#[derive(Clone, Debug)]
pub struct ModelCase {
    /// The kind as written (or the name given).
    pub name: String,
    /// The physics (with its sources).
    pub physics: CasePhysics,
    /// Region slot of every cell (the physics' auxiliary field; empty with one region).
    pub cell_slots: Vec<f64>,
    /// The boundary conditions, resolved.
    pub boundaries: Vec<ResolvedBoundary>,
    /// `∫ φ g` over the Neumann facets and `∫ φ h u_inf` over the Robin facets (full
    /// L-vector).
    pub natural_load: Vec<f64>,
    /// The Robin term `∫ h φ_i φ_j` over the Robin facets, added to the operator (none
    /// without Robin conditions).
    pub robin: Option<CsrMatrix<f64>>,
}

/// The `n × n` matrix of the summed triplets, or `None` when there are none.
fn csr_of(
    n: usize,
    mut triplets: Vec<(u32, u32, f64)>,
) -> Result<Option<CsrMatrix<f64>>, PipelineError> {
    if triplets.is_empty() {
        return Ok(None);
    }
    triplets.sort_unstable_by_key(|&(r, c, _)| (r, c));
    let mut row_ptr = vec![0usize; n + 1];
    let (mut cols, mut vals): (Vec<u32>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut last: Option<(u32, u32)> = None;
    for (r, c, v) in triplets {
        if last == Some((r, c)) {
            *vals.last_mut().expect("an entry") += v;
        } else {
            cols.push(c);
            vals.push(v);
            row_ptr[r as usize + 1] += 1;
            last = Some((r, c));
        }
    }
    for i in 0..n {
        row_ptr[i + 1] += row_ptr[i];
    }
    CsrMatrix::new(n, n, row_ptr, cols, vals)
        .map(Some)
        .map_err(|e| PipelineError::Unsupported(format!("the Robin term: {e}")))
}

/// An error at `span` of `file`, or a plain one without a file.
fn at(file: Option<&ProblemFile>, span: &Range<usize>, message: String) -> PipelineError {
    match file {
        Some(f) => f.error(span, message),
        None => PipelineError::Unsupported(message),
    }
}

/// The physical groups of dimension `dim` of `mesh`: `(tag, name)`.
fn groups_of_dim(mesh: &Mesh, dim: usize) -> Vec<(i32, Option<String>)> {
    let mut tags: Vec<i32> = if dim == mesh.dim() {
        mesh.cell_tags().to_vec()
    } else if dim + 1 == mesh.dim() {
        mesh.facets().tags.clone()
    } else {
        Vec::new()
    };
    tags.extend(
        mesh.physical_names()
            .iter()
            .filter(|n| n.dim == dim)
            .map(|n| n.tag),
    );
    tags.sort_unstable();
    tags.dedup();
    tags.into_iter()
        .map(|t| {
            let name = mesh
                .physical_names()
                .iter()
                .find(|n| n.dim == dim && n.tag == t)
                .map(|n| n.name.clone());
            (t, name)
        })
        .collect()
}

/// Words for a list of groups.
fn list(groups: &[(i32, Option<String>)]) -> String {
    if groups.is_empty() {
        return "none".into();
    }
    groups
        .iter()
        .map(|(t, n)| match n {
            Some(n) => format!("{} ({t})", n.escape_debug()),
            None => format!("{t}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The tag of `r` among the groups of dimension `dim`, with errors that say where a name of
/// another dimension lives.
fn resolve(mesh: &Mesh, r: &RegionRef, dim: usize, what: &str) -> Result<BoundaryGroup, String> {
    let groups = groups_of_dim(mesh, dim);
    let found = match r {
        RegionRef::All => None,
        RegionRef::Tag(t) => groups.iter().find(|(g, _)| g == t),
        RegionRef::Name(n) => groups.iter().find(|(_, g)| g.as_deref() == Some(n)),
    };
    if let Some((tag, name)) = found {
        return Ok(BoundaryGroup {
            tag: *tag,
            name: name.clone(),
        });
    }
    if let RegionRef::Name(n) = r {
        if let Some(other) = mesh
            .physical_names()
            .iter()
            .find(|p| &p.name == n && p.dim != dim)
        {
            return Err(format!(
                "`{r}` is a physical group of dimension {}, but {what} need{} a group of \
                 dimension {dim}",
                other.dim,
                if what.ends_with('s') { "" } else { "s" }
            ));
        }
    }
    Err(format!(
        "the mesh has no physical group `{r}` of dimension {dim} for {what} (available: {})",
        list(&groups)
    ))
}

impl ModelInput {
    /// Sets the model up on `mesh` (errors located in `file` when given).
    pub fn setup(&self, mesh: &Mesh, file: Option<&ProblemFile>) -> Result<Problem, PipelineError> {
        let (problem, _) = self.setup_in(mesh, file, Scope::WholeMesh)?;
        Ok(problem)
    }

    /// Sets the model up on a rank's part `mesh`: as [`ModelInput::setup`], but a region
    /// the part lacks is empty here and the checks that need the whole mesh are returned
    /// (see [`PendingErrors`]). Every boundary condition has its entry in the problem's
    /// model, in the file's order, on every rank.
    pub fn setup_on_part(
        &self,
        mesh: &Mesh,
        file: Option<&ProblemFile>,
    ) -> Result<(Problem, PendingErrors), PipelineError> {
        self.setup_in(mesh, file, Scope::Part)
    }

    fn setup_in(
        &self,
        mesh: &Mesh,
        file: Option<&ProblemFile>,
        scope: Scope,
    ) -> Result<(Problem, PendingErrors), PipelineError> {
        mesh.validate()?;
        let mut pending = PendingErrors::new();
        let d = mesh.dim();
        // materials → a region slot per cell; named groups override `all`
        let n = mesh.num_cells();
        let mut slot_of: Vec<Option<usize>> = vec![None; n];
        let mut named_tags: Vec<(i32, usize)> = Vec::new();
        for (slot, m) in self.materials.iter().enumerate() {
            if m.region == RegionRef::All {
                if let Some(prev) = self.materials[..slot]
                    .iter()
                    .find(|p| p.region == RegionRef::All)
                {
                    return Err(at(
                        file,
                        &m.span,
                        format!(
                            "a second material for region \"all\" (the first is at byte {})",
                            prev.span.start
                        ),
                    ));
                }
                for s in slot_of.iter_mut().filter(|s| s.is_none()) {
                    *s = Some(slot);
                }
                continue;
            }
            let group = match (resolve(mesh, &m.region, d, "materials"), scope) {
                (Ok(group), _) => group,
                (Err(e), Scope::WholeMesh) => return Err(at(file, &m.span, e)),
                (Err(e), Scope::Part) => {
                    pending.push(Some(at(file, &m.span, e)));
                    continue;
                }
            };
            if scope == Scope::Part {
                pending.push(None);
            }
            if named_tags.iter().any(|(t, _)| *t == group.tag) {
                return Err(at(
                    file,
                    &m.span,
                    format!("region `{}` has a second material", m.region),
                ));
            }
            named_tags.push((group.tag, slot));
        }
        for (c, tag) in mesh.cell_tags().iter().enumerate() {
            if let Some((_, slot)) = named_tags.iter().find(|(t, _)| t == tag) {
                slot_of[c] = Some(*slot);
            }
        }
        if let Some(c) = slot_of.iter().position(Option::is_none) {
            let tag = mesh.cell_tags()[c];
            let name = groups_of_dim(mesh, d)
                .into_iter()
                .find(|(t, _)| *t == tag)
                .and_then(|(_, n)| n)
                .unwrap_or_else(|| tag.to_string());
            return Err(at(
                file,
                &(0..0),
                format!(
                    "the cells of region `{}` (tag {tag}, cell {c} first) have no material: add a \
                     [[material]] with region = \"{}\" or region = \"all\"",
                    name.escape_debug(),
                    name.escape_debug()
                ),
            ));
        }
        let regions: Vec<Region> = self
            .materials
            .iter()
            .map(|m| Region {
                name: m.region.to_string(),
                material: m.material.clone(),
                source: m.source.clone(),
            })
            .collect();
        // a parameter out of range is reported at its material's entry
        let located = |e: ferrofem_physics::PhysicsError| -> PipelineError {
            if let ferrofem_physics::PhysicsError::RegionParameter { region, .. } = &e {
                if let Some(m) = self
                    .materials
                    .iter()
                    .find(|m| &m.region.to_string() == region)
                {
                    return at(file, &m.span, e.to_string());
                }
            }
            e.into()
        };
        let physics = ModelPhysics::new(d, self.kind, regions).map_err(located)?;
        let slots: Vec<usize> = slot_of.into_iter().map(|s| s.unwrap_or(0)).collect();
        check_coefficients(mesh, &physics, &slots).map_err(located)?;
        let cell_slots = if self.materials.len() > 1 {
            slots.iter().map(|&s| s as f64).collect()
        } else {
            Vec::new()
        };

        let ncomp = physics.components();
        let space = H1Space::new(mesh, self.order, ncomp)?;
        let has_reaction = physics.regions().iter().any(|r| {
            matches!(&r.material, ferrofem_physics::Material::Diffusion { reaction, .. }
                if reaction.constant() != Some(0.0))
        });
        let nonlinear = self.kind == ModelKind::NonlinearDiffusion;
        finish(
            mesh,
            space,
            &self.name,
            CasePhysics::Configured(physics),
            cell_slots,
            &self.boundaries,
            has_reaction,
            nonlinear,
            file,
            scope,
            pending,
        )
    }
}

/// A problem with the user's own `physics` (any [`Physics`] in `f64`; see
/// [`SharedPhysics`]) on `mesh`: the Lagrange space of `order` with the physics' number of
/// components, and the boundary conditions `boundaries` (Dirichlet, Neumann or Robin per
/// boundary group, named as in problem files). The physics' `f0` may hold its source; on
/// the GPU the linear solve applies its Jacobian kernel (`g0`–`g3`) and the right-hand side
/// comes from the CPU.
pub fn own_problem(
    mesh: &Mesh,
    name: &str,
    order: usize,
    physics: Arc<dyn Physics<f64>>,
    boundaries: &[BoundarySpec],
) -> Result<Problem, PipelineError> {
    mesh.validate()?;
    if physics.dim() != mesh.dim() {
        return Err(PipelineError::Unsupported(format!(
            "the physics {} is {}-D, the mesh {}-D",
            physics.name(),
            physics.dim(),
            mesh.dim()
        )));
    }
    if physics.naux() != 0 {
        return Err(PipelineError::Unsupported(format!(
            "the physics {} reads {} auxiliary fields; a problem of one's own provides none",
            physics.name(),
            physics.naux()
        )));
    }
    let space = H1Space::new(mesh, order, physics.ncomp())?;
    // a g0 term (a reaction) makes the problem definite without Dirichlet conditions
    let definite = physics.jacobian_terms().g0;
    let nonlinear = !physics.is_linear();
    let (problem, _) = finish(
        mesh,
        space,
        name,
        CasePhysics::Own(SharedPhysics(physics)),
        Vec::new(),
        boundaries,
        definite,
        nonlinear,
        None,
        Scope::WholeMesh,
        PendingErrors::new(),
    )?;
    Ok(problem)
}

/// Resolves `specs` on `space` and builds the problem of `physics` (see the module
/// documentation); `definite`: the operator is definite without a Dirichlet condition.
/// On a part, the checks that need the whole mesh are added to `pending`.
#[allow(clippy::too_many_arguments)]
fn finish(
    mesh: &Mesh,
    space: H1Space,
    name: &str,
    physics: CasePhysics,
    cell_slots: Vec<f64>,
    specs: &[BoundarySpec],
    definite: bool,
    nonlinear: bool,
    file: Option<&ProblemFile>,
    scope: Scope,
    mut pending: PendingErrors,
) -> Result<(Problem, PendingErrors), PipelineError> {
    let d = mesh.dim();
    let ncomp = space.ncomp();
    let order = space.order();
    let facets_by_tag = mesh.locate_tagged_facets()?;
    let mut boundaries: Vec<ResolvedBoundary> = Vec::new();
    let mut boundary_values = vec![0.0; space.num_dofs()];
    let mut natural_load = vec![0.0; space.num_dofs()];
    let mut constrained: Vec<u32> = Vec::new();
    // Robin terms ∫ h φ_i φ_j as (row, column, value) triplets
    let mut robin: Vec<(u32, u32, f64)> = Vec::new();
    for b in specs {
        let group = match (
            resolve(mesh, &b.region, d - 1, "boundary conditions"),
            scope,
        ) {
            (Ok(group), _) => {
                if scope == Scope::Part {
                    pending.push(None);
                }
                group
            }
            (Err(e), Scope::WholeMesh) => return Err(at(file, &b.span, e)),
            (Err(e), Scope::Part) => {
                // no facet of this part carries the group: the condition is empty here
                pending.push(Some(at(file, &b.span, e)));
                boundaries.push(ResolvedBoundary {
                    group: BoundaryGroup {
                        tag: match &b.region {
                            RegionRef::Tag(t) => *t,
                            _ => i32::MIN,
                        },
                        name: None,
                    },
                    condition: b.condition.clone(),
                    facets: Vec::new(),
                    dofs: Vec::new(),
                });
                continue;
            }
        };
        if boundaries.iter().any(|r| r.group.tag == group.tag) {
            return Err(at(
                file,
                &b.span,
                format!("boundary `{}` has a second condition", b.region),
            ));
        }
        let facets: Vec<(u32, u8)> = facets_by_tag
            .iter()
            .filter(|(_, _, t)| *t == group.tag)
            .map(|&(c, f, _)| (c, f))
            .collect();
        let mut dofs = Vec::new();
        match &b.condition {
            BoundaryCondition::Dirichlet(values) => {
                // a part may hold none of the group's facets (a named group is known
                // to every part)
                let nodes = if scope == Scope::Part && facets.is_empty() {
                    Vec::new()
                } else {
                    space.tagged_nodes(mesh, &[group.tag])?
                };
                let mut vars = [0.0; MAX_VARIABLES];
                for &node in &nodes {
                    let x = space.node_coord(node as usize);
                    vars[..d].copy_from_slice(x);
                    for (c, v) in values.iter().enumerate() {
                        if let Some(v) = v {
                            let dof = node as usize * ncomp + c;
                            let value = v.eval(&vars);
                            if !value.is_finite() {
                                return Err(at(
                                    file,
                                    &b.span,
                                    format!(
                                        "boundary `{}`: the Dirichlet value is {value} at {x:?}",
                                        b.region
                                    ),
                                ));
                            }
                            boundary_values[dof] = value;
                            dofs.push(dof as u32);
                        }
                    }
                }
                constrained.extend_from_slice(&dofs);
            }
            BoundaryCondition::Neumann(g) => {
                let degree = 2 * order + 2;
                let load = neumann_rhs(
                    mesh,
                    &space,
                    &facets,
                    |x, nrm, out| {
                        let mut vars = [0.0; 6];
                        vars[..d].copy_from_slice(x);
                        vars[d..2 * d].copy_from_slice(nrm);
                        for (o, gc) in out.iter_mut().zip(g) {
                            *o = gc.eval(&vars);
                        }
                    },
                    degree,
                )?;
                if let Some(bad) = load.iter().find(|v| !v.is_finite()) {
                    return Err(at(
                        file,
                        &b.span,
                        format!("boundary `{}`: the Neumann load is {bad}", b.region),
                    ));
                }
                for (l, v) in natural_load.iter_mut().zip(load) {
                    *l += v;
                }
            }
            BoundaryCondition::Robin(coefs) => {
                let [h, u_inf] = &**coefs;
                let degree = 2 * order + 2;
                let r = space.restriction();
                let mut bad = None;
                for_each_facet_point(mesh, &space, &facets, degree, |p| {
                    let hx = h.eval(&p.x[..]);
                    let ux = u_inf.eval(&p.x[..]);
                    if !(hx.is_finite() && hx >= 0.0 && ux.is_finite()) {
                        bad.get_or_insert((hx, ux, p.x));
                    }
                    let nodes = r.elem(p.cell);
                    for (i, &ni) in nodes.iter().enumerate() {
                        let wi = p.weight * hx * p.basis[i];
                        if wi == 0.0 {
                            continue;
                        }
                        natural_load[ni as usize] += wi * ux;
                        for (j, &nj) in nodes.iter().enumerate() {
                            if p.basis[j] != 0.0 {
                                robin.push((ni, nj, wi * p.basis[j]));
                            }
                        }
                    }
                })?;
                if let Some((hx, ux, x)) = bad {
                    return Err(at(
                        file,
                        &b.span,
                        format!(
                            "boundary `{}`: robin h = {hx} (must be finite and >= 0), \
                                 u_inf = {ux} at {:?}",
                            b.region,
                            &x[..d]
                        ),
                    ));
                }
            }
        }
        dofs.sort_unstable();
        dofs.dedup();
        boundaries.push(ResolvedBoundary {
            group,
            condition: b.condition.clone(),
            facets,
            dofs,
        });
    }
    constrained.sort_unstable();
    constrained.dedup();
    let singular = (constrained.is_empty() && !definite && robin.is_empty()).then(|| {
        at(
            file,
            &(0..0),
            format!(
                "no [[boundary]] has a dirichlet condition: {name} is then singular (its \
                     solution is fixed only up to {}); constrain some boundary",
                if ncomp == 1 {
                    "a constant"
                } else {
                    "a rigid motion"
                }
            ),
        )
    });
    match (singular, scope) {
        (Some(e), Scope::WholeMesh) => return Err(e),
        (singular, Scope::Part) => pending.push(singular),
        (None, Scope::WholeMesh) => {}
    }
    let dirichlet_facets: Vec<(u32, u8)> = {
        let mut v: Vec<(u32, u8)> = boundaries
                .iter()
                .filter(|b| matches!(&b.condition, BoundaryCondition::Dirichlet(c) if c.iter().all(Option::is_some)))
                .flat_map(|b| b.facets.iter().copied())
                .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let natural_facets: Vec<(u32, u8)> = mesh
        .boundary_facets()
        .into_iter()
        .filter(|cf| dirichlet_facets.binary_search(cf).is_err())
        .collect();
    // zero the values of dofs no Dirichlet condition constrains
    let mut is_constrained = vec![false; space.num_dofs()];
    for &c in &constrained {
        is_constrained[c as usize] = true;
    }
    for (v, &c) in boundary_values.iter_mut().zip(&is_constrained) {
        if !c {
            *v = 0.0;
        }
    }
    if !robin.is_empty() && nonlinear {
        return Err(at(
            file,
            &(0..0),
            "robin conditions are for the linear problems".into(),
        ));
    }
    let space_dofs = space.num_dofs();
    let problem = Problem {
        space,
        dirichlet_dofs: constrained,
        boundary_values,
        natural_facets,
        definition: Definition::Model(Box::new(ModelCase {
            name: name.to_string(),
            physics,
            cell_slots,
            boundaries,
            natural_load,
            robin: csr_of(space_dofs, robin)?,
        })),
    };
    Ok((problem, pending))
}

/// Checks every region's coefficients (and source) at the vertices and centroid of each of
/// its cells that are expressions; constants were checked when the physics was built.
fn check_coefficients(
    mesh: &Mesh,
    physics: &ModelPhysics,
    slots: &[usize],
) -> Result<(), ferrofem_physics::PhysicsError> {
    let d = mesh.dim();
    let constant = physics.regions().iter().all(|r| {
        let coefs: Vec<&Coef> = match &r.material {
            ferrofem_physics::Material::Diffusion { kappa, reaction } => vec![kappa, reaction],
            ferrofem_physics::Material::Elasticity(ferrofem_physics::Moduli::Lame {
                lambda,
                mu,
            }) => vec![lambda, mu],
            ferrofem_physics::Material::Elasticity(ferrofem_physics::Moduli::Young {
                young,
                poisson,
            }) => vec![young, poisson],
        };
        coefs
            .iter()
            .chain(r.source.iter().collect::<Vec<_>>().iter())
            .all(|c| c.constant().is_some())
    });
    if constant {
        return Ok(());
    }
    for (c, &slot) in slots.iter().enumerate() {
        let verts = mesh.cell(c);
        let mut centroid = [0.0; 3];
        for &v in verts {
            let x = mesh.vertex(v as usize);
            physics.check_at(slot, x, 0.0)?;
            for k in 0..d {
                centroid[k] += x[k] / verts.len() as f64;
            }
        }
        physics.check_at(slot, &centroid[..d], 0.0)?;
    }
    Ok(())
}
