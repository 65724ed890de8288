//! Global node numbering of a continuous Lagrange space.
//!
//! Nodes are numbered in the order cells first reach them, so that a cell's nodes (and
//! those of its neighbours in a well-ordered mesh) are close in memory. A node on a shared
//! edge or face is identified by its entity (the sorted global vertices) and its position in
//! a canonical frame of that entity, computed from the node's integer vertex weights
//! (see [`LagrangeElement`]): edges run from the lower to the higher global vertex; a
//! triangular face orders its barycentric lattice by sorted global vertices; a
//! quadrilateral face has its origin at the lowest global vertex and its first axis towards
//! the lower of that vertex's two face neighbours. Any two cells therefore agree on the
//! number of every shared node, whatever their local orientation.

use crate::SpaceError;
use ferrofem_fe::LagrangeElement;
use ferrofem_mesh::Mesh;
use rustc_hash::FxHashMap;

const NONE: u32 = u32::MAX;

/// Result of numbering: the element-to-node map and per-vertex node numbers.
pub(crate) struct Numbering {
    pub elem_nodes: Vec<u32>,
    pub num_nodes: usize,
}

struct EdgeNode {
    local: usize,
    wa: u32,
    wb: u32,
}

struct FaceNode {
    local: usize,
    w: [u32; 4],
}

/// Local node lists of the element, grouped by entity.
struct EntityNodes {
    vertex: Vec<usize>,
    edges: Vec<Vec<EdgeNode>>,
    faces: Vec<Vec<FaceNode>>,
    interior: Vec<usize>,
}

fn group_nodes(el: &LagrangeElement) -> EntityNodes {
    let ct = el.cell_type();
    let d = ct.dim();
    let nv = ct.num_vertices();
    let mut g = EntityNodes {
        vertex: vec![0; nv],
        edges: (0..ct.edges().len()).map(|_| Vec::new()).collect(),
        faces: if d == 3 {
            (0..ct.num_facets()).map(|_| Vec::new()).collect()
        } else {
            Vec::new()
        },
        interior: Vec::new(),
    };
    let facets = ct.facets();
    for n in 0..el.num_nodes() {
        let ent = el.node_entity(n);
        let w = el.vertex_weights(n);
        match ent.dim {
            0 => g.vertex[ent.index] = n,
            1 => {
                let [a, b] = ct.edges()[ent.index];
                g.edges[ent.index].push(EdgeNode {
                    local: n,
                    wa: w[a],
                    wb: w[b],
                });
            }
            2 if d == 3 => {
                let f = facets[ent.index];
                let mut fw = [0u32; 4];
                for (k, &v) in f.iter().enumerate() {
                    fw[k] = w[v];
                }
                g.faces[ent.index].push(FaceNode { local: n, w: fw });
            }
            _ => g.interior.push(n),
        }
    }
    g
}

/// Index of barycentric interior point `(a1, a2)` (both >= 1, a1 + a2 < p) of a triangle
/// of order `p`, enumerated with `a2` outer and `a1` inner.
fn tri_interior_index(p: u32, a1: u32, a2: u32) -> u32 {
    let before: u32 = (1..a2).map(|j| p - 1 - j).sum();
    before + (a1 - 1)
}

/// Numbers the nodes of the order-`el.order()` space on `mesh`.
pub(crate) fn number(mesh: &Mesh, el: &LagrangeElement) -> Result<Numbering, SpaceError> {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let nb = el.num_nodes();
    let p = el.order() as u32;
    let groups = group_nodes(el);
    let facets = ct.facets();
    let ncells = mesh.num_cells();
    let mut elem_nodes = vec![NONE; ncells * nb];
    let mut vertex_node = vec![NONE; mesh.num_vertices()];
    let mut edge_base: FxHashMap<(u32, u32), u32> = FxHashMap::default();
    let mut face_base: FxHashMap<[u32; 4], u32> = FxHashMap::default();
    let per_edge = p - 1;
    let per_face = match ct {
        ferrofem_base::CellType::Tetrahedron => (p - 1) * p.saturating_sub(2) / 2,
        _ => (p - 1) * (p - 1),
    };
    let mut next: u64 = 0;
    let alloc = |count: u32, next: &mut u64| -> u32 {
        let b = *next as u32;
        *next += count as u64;
        b
    };
    for c in 0..ncells {
        let cell = mesh.cell(c);
        let out = &mut elem_nodes[c * nb..(c + 1) * nb];
        for (v, &local) in groups.vertex.iter().enumerate() {
            let gv = cell[v] as usize;
            if vertex_node[gv] == NONE {
                vertex_node[gv] = alloc(1, &mut next);
            }
            out[local] = vertex_node[gv];
        }
        if per_edge > 0 {
            for (e, nodes) in groups.edges.iter().enumerate() {
                let [a, b] = ct.edges()[e];
                let (ga, gb) = (cell[a], cell[b]);
                let key = (ga.min(gb), ga.max(gb));
                let base = *edge_base
                    .entry(key)
                    .or_insert_with(|| alloc(per_edge, &mut next));
                for n in nodes {
                    let w_hi = if ga > gb { n.wa } else { n.wb };
                    let m = w_hi * p / (n.wa + n.wb);
                    out[n.local] = base + m - 1;
                }
            }
        }
        if d == 3 && per_face > 0 {
            for (f, nodes) in groups.faces.iter().enumerate() {
                let fv = facets[f];
                let mut key = [NONE; 4];
                for (k, &v) in fv.iter().enumerate() {
                    key[k] = cell[v];
                }
                key.sort_unstable();
                let base = *face_base
                    .entry(key)
                    .or_insert_with(|| alloc(per_face, &mut next));
                if fv.len() == 3 {
                    // positions of the facet's local vertices in ascending global order
                    let mut order = [0usize, 1, 2];
                    order.sort_by_key(|&k| cell[fv[k]]);
                    for n in nodes {
                        let wsum: u32 = n.w[..3].iter().sum();
                        let a1 = n.w[order[1]] * p / wsum;
                        let a2 = n.w[order[2]] * p / wsum;
                        out[n.local] = base + tri_interior_index(p, a1, a2);
                    }
                } else {
                    // quad facet, vertices lexicographic in the facet: neighbours of
                    // position k are k^1 and k^2, the opposite corner is k^3
                    let o = (0..4).min_by_key(|&k| cell[fv[k]]).expect("4 vertices");
                    let (na, nb2) = (o ^ 1, o ^ 2);
                    let (n1, n2) = if cell[fv[na]] < cell[fv[nb2]] {
                        (na, nb2)
                    } else {
                        (nb2, na)
                    };
                    let opp = o ^ 3;
                    for n in nodes {
                        let wsum: u32 = n.w.iter().sum();
                        let s = (n.w[n1] + n.w[opp]) * p / wsum;
                        let t = (n.w[n2] + n.w[opp]) * p / wsum;
                        out[n.local] = base + (s - 1) + (t - 1) * (p - 1);
                    }
                }
            }
        }
        if !groups.interior.is_empty() {
            let base = alloc(groups.interior.len() as u32, &mut next);
            for (k, &local) in groups.interior.iter().enumerate() {
                out[local] = base + k as u32;
            }
        }
        if next > u32::MAX as u64 {
            return Err(SpaceError::TooLarge {
                count: next as usize,
            });
        }
    }
    debug_assert!(elem_nodes.iter().all(|&n| n != NONE));
    Ok(Numbering {
        elem_nodes,
        num_nodes: next as usize,
    })
}
