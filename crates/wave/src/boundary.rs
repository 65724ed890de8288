//! Boundary conditions per named boundary: free surface, rigid wall and the Stacey
//! first-order absorbing condition, turned into the nodes held at zero and the lumped
//! damping of the absorbing faces.
//!
//! Acoustic (pressure): a free surface is `p = 0` (held at zero), a rigid wall
//! `∂p/∂n = 0` (natural). Elastic (displacement): a free surface is traction-free
//! (natural), a rigid wall `u = 0` (held at zero). Boundaries given no condition are
//! natural. Stacey's condition adds `∫_Γ v · C u_t` with `C = 1/(ρ vp)` (acoustic) or
//! `C = ρ (vp n nᵀ + vs (I − n nᵀ))` (elastic), lumped onto the boundary nodes (row sums,
//! which equal the GLL quadrature of the spectral-element method on straight faces).

use crate::{Medium, WaveError, WaveKind};
use ferrofem_mesh::Mesh;
use ferrofem_operator::for_each_facet_point;
use ferrofem_space::H1Space;

/// A boundary condition of the wave equation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BoundaryCondition {
    /// Free surface: `p = 0` (acoustic), traction-free (elastic).
    Free,
    /// Rigid wall: `∂p/∂n = 0` (acoustic), `u = 0` (elastic).
    Rigid,
    /// Stacey's first-order absorbing condition.
    Absorbing,
}

impl BoundaryCondition {
    /// The condition's name as users write it.
    pub fn name(self) -> &'static str {
        match self {
            BoundaryCondition::Free => "free",
            BoundaryCondition::Rigid => "rigid",
            BoundaryCondition::Absorbing => "absorbing",
        }
    }
    /// True when it holds the field at zero for `kind`.
    pub fn is_dirichlet(self, kind: WaveKind) -> bool {
        matches!(
            (self, kind),
            (BoundaryCondition::Free, WaveKind::Acoustic)
                | (BoundaryCondition::Rigid, WaveKind::Elastic)
        )
    }
}

/// A condition on one named boundary: a physical group of dimension `d - 1` by name or
/// tag number, a generated box side (`xmin`, ...), or `all` for the whole boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundarySpec {
    /// The boundary's name.
    pub name: String,
    /// Its condition.
    pub condition: BoundaryCondition,
}

impl BoundarySpec {
    /// `condition` on boundary `name`.
    pub fn new(name: impl Into<String>, condition: BoundaryCondition) -> BoundarySpec {
        BoundarySpec {
            name: name.into(),
            condition,
        }
    }
}

/// The boundary conditions as the time loop applies them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BoundarySetup {
    /// Nodes held at zero, sorted.
    pub zero_nodes: Vec<u32>,
    /// Absorbing nodes (not held at zero), sorted, with their lumped damping: `c[0]`
    /// (acoustic) or the `d × d` matrix `c[r * d + s]` (elastic).
    pub absorbing: Vec<(u32, [f64; 9])>,
}

/// Where a named boundary is: the whole boundary or tagged facets.
enum Target {
    All,
    Tag(i32),
}

fn resolve(mesh: &Mesh, name: &str) -> Result<Target, WaveError> {
    if name == "all" {
        return Ok(Target::All);
    }
    let fd = mesh.dim() - 1;
    let tag = mesh.tag_of(fd, name).or_else(|| {
        name.parse::<i32>()
            .ok()
            .filter(|t| mesh.facets().tags.contains(t))
    });
    match tag {
        Some(t) => Ok(Target::Tag(t)),
        None => {
            let mut names: Vec<String> = mesh
                .physical_names()
                .iter()
                .filter(|n| n.dim == fd)
                .map(|n| format!("'{}'", n.name))
                .collect();
            names.push("'all'".into());
            Err(WaveError::UnknownBoundary {
                name: name.into(),
                available: names.join(", "),
            })
        }
    }
}

/// Resolves `specs` on `mesh` for a field on `space` (scalar for acoustic, `d` components
/// for elastic; only its scalar node numbering is used). Later specs do not undo earlier
/// ones: a node held at zero by any condition stays so.
pub fn setup_boundaries(
    mesh: &Mesh,
    space: &H1Space,
    kind: WaveKind,
    medium: &Medium,
    specs: &[BoundarySpec],
) -> Result<BoundarySetup, WaveError> {
    let d = mesh.dim();
    let mut zero = Vec::new();
    let mut absorbing_facets = Vec::new();
    let mut located = None;
    for spec in specs {
        let target = resolve(mesh, &spec.name)?;
        if spec.condition.is_dirichlet(kind) {
            zero.extend(match target {
                Target::All => space.boundary_nodes(mesh)?,
                Target::Tag(t) => space.tagged_nodes(mesh, &[t])?,
            });
        } else if spec.condition == BoundaryCondition::Absorbing {
            match target {
                Target::All => absorbing_facets.extend(mesh.boundary_facets()),
                Target::Tag(t) => {
                    if located.is_none() {
                        located = Some(mesh.locate_tagged_facets()?);
                    }
                    let all = located.as_deref().unwrap_or(&[]);
                    absorbing_facets.extend(
                        all.iter()
                            .filter(|&&(_, _, tag)| tag == t)
                            .map(|&(c, f, _)| (c, f)),
                    );
                }
            }
        }
    }
    zero.sort_unstable();
    zero.dedup();
    absorbing_facets.sort_unstable();
    absorbing_facets.dedup();
    // (per boundary node: a map, not a vector over every node of the space)
    let mut damping: std::collections::BTreeMap<u32, [f64; 9]> = Default::default();
    let mut bad = None;
    let scalar = if space.ncomp() == 1 {
        space.clone()
    } else {
        space.with_ncomp(1)?
    };
    for_each_facet_point(
        mesh,
        &scalar,
        &absorbing_facets,
        2 * space.order() + 1,
        |p| {
            let Some(m) = medium.in_cell(mesh, p.cell, &p.x) else {
                bad = bad.or(Some(p.cell));
                return;
            };
            let nodes = scalar.restriction().elem(p.cell);
            let n = p.normal;
            for (&node, &phi) in nodes.iter().zip(p.basis) {
                if phi == 0.0 {
                    continue;
                }
                let w = p.weight * phi;
                let c = damping.entry(node).or_insert([0.0; 9]);
                match kind {
                    WaveKind::Acoustic => c[0] += w / (m.rho * m.vp),
                    WaveKind::Elastic => {
                        for r in 0..d {
                            for s in 0..d {
                                let nn = n[r] * n[s];
                                let id = if r == s { 1.0 } else { 0.0 };
                                c[r * d + s] += w * m.rho * (m.vp * nn + m.vs * (id - nn));
                            }
                        }
                    }
                }
            }
        },
    )?;
    if let Some(cell) = bad {
        return Err(WaveError::Invalid(format!(
            "no material for element {cell} on an absorbing boundary"
        )));
    }
    let absorbing = damping
        .into_iter()
        .filter(|(i, _)| zero.binary_search(i).is_err())
        .collect();
    Ok(BoundarySetup {
        zero_nodes: zero,
        absorbing,
    })
}
