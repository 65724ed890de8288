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

use crate::distribution::NodeExchange;
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
    /// A tag that other ranks hold and this one does not.
    Elsewhere,
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
    setup_boundaries_on(mesh, space, kind, medium, specs, None)
}

/// A part's facets on the boundary of the whole mesh and its exchange.
pub(crate) type PartBoundary<'a> = (&'a [(u32, u8)], &'a dyn NodeExchange);

/// [`setup_boundaries`] on one part of a distributed mesh when `part` gives the part's
/// facets on the boundary of the whole mesh and its exchange (for the scalar numbering of
/// `space`): a boundary named on another rank only is empty here, not unknown, and a node
/// is held or absorbing, with the damping of all its holders' facets, on every rank that
/// holds it. Collective then.
pub(crate) fn setup_boundaries_on(
    mesh: &Mesh,
    space: &H1Space,
    kind: WaveKind,
    medium: &Medium,
    specs: &[BoundarySpec],
    part: Option<PartBoundary<'_>>,
) -> Result<BoundarySetup, WaveError> {
    let d = mesh.dim();
    let mut zero = Vec::new();
    let mut absorbing_facets = Vec::new();
    let scalar = if space.ncomp() == 1 {
        space.clone()
    } else {
        space.with_ncomp(1)?
    };
    let whole_boundary = match part {
        Some((facets, _)) => facets.to_vec(),
        None => mesh.boundary_facets(),
    };
    let mut located = None;
    for spec in specs {
        let mut target = resolve(mesh, &spec.name);
        if let Some((_, exchange)) = part {
            if exchange.first_rank_with(target.is_ok())?.is_some() && target.is_err() {
                target = Ok(Target::Elsewhere);
            }
        }
        let facets: Vec<(u32, u8)> = match target? {
            Target::All => whole_boundary.clone(),
            Target::Tag(t) => {
                if located.is_none() {
                    located = Some(mesh.locate_tagged_facets()?);
                }
                let all = located.as_deref().unwrap_or(&[]);
                all.iter()
                    .filter(|&&(_, _, tag)| tag == t)
                    .map(|&(c, f, _)| (c, f))
                    .collect()
            }
            Target::Elsewhere => Vec::new(),
        };
        if spec.condition.is_dirichlet(kind) {
            zero.extend(scalar.facet_nodes(mesh, &facets)?);
        } else if spec.condition == BoundaryCondition::Absorbing {
            absorbing_facets.extend(facets);
        }
    }
    zero.sort_unstable();
    zero.dedup();
    absorbing_facets.sort_unstable();
    absorbing_facets.dedup();
    // (per boundary node: a map, not a vector over every node of the space)
    let mut damping: std::collections::BTreeMap<u32, [f64; 9]> = Default::default();
    let mut bad = None;
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
    if let Some((_, exchange)) = part {
        (zero, damping) = share_boundary_nodes(exchange, scalar.num_nodes(), &zero, &damping)?;
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

/// The held nodes and the damping of a part made the same on every rank that holds a node:
/// a node is held where any holder holds it, and absorbing with the sum of its holders'
/// damping where any holder's facets absorb. (One vector of 11 values per node, for the
/// set-up only.)
#[allow(clippy::type_complexity)]
fn share_boundary_nodes(
    exchange: &dyn NodeExchange,
    num_nodes: usize,
    zero: &[u32],
    damping: &std::collections::BTreeMap<u32, [f64; 9]>,
) -> Result<(Vec<u32>, std::collections::BTreeMap<u32, [f64; 9]>), WaveError> {
    const W: usize = 11;
    let mut packed = vec![0.0f64; num_nodes * W];
    for &n in zero {
        packed[n as usize * W] = 1.0;
    }
    for (&n, c) in damping {
        packed[n as usize * W + 1] = 1.0;
        packed[n as usize * W + 2..(n as usize + 1) * W].copy_from_slice(c);
    }
    exchange.sum_shared_f64(&mut packed, W)?;
    let mut zero = Vec::new();
    let mut shared_damping = std::collections::BTreeMap::new();
    for (n, v) in packed.chunks_exact(W).enumerate() {
        if v[0] > 0.0 {
            zero.push(n as u32);
        }
        if v[1] > 0.0 {
            shared_damping.insert(n as u32, std::array::from_fn(|k| v[2 + k]));
        }
    }
    Ok((zero, shared_damping))
}
