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
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const NONE: u32 = u32::MAX;

/// Result of numbering: the element-to-node map and per-vertex node numbers.
pub(crate) struct Numbering {
    pub elem_nodes: Vec<u32>,
    pub num_nodes: usize,
    /// `[cell]`: the first node the cell numbers (its own nodes are
    /// `cell_base[c]..cell_base[c + 1]`), with the node count last.
    pub cell_base: Vec<u32>,
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

/// Nodes strictly inside an edge and inside a face of a cell of type `ct` at order `p`.
fn nodes_inside_entities(ct: ferrofem_base::CellType, p: u32) -> (u32, u32) {
    let per_face = match ct {
        ferrofem_base::CellType::Tetrahedron => (p - 1) * p.saturating_sub(2) / 2,
        _ => (p - 1) * (p - 1),
    };
    (p - 1, per_face)
}

/// Numbers the nodes inside an edge from `base`, in the edge's canonical direction (from
/// its lower global vertex): `reversed` when the cell's local edge runs the other way.
fn number_edge_nodes(nodes: &[EdgeNode], reversed: bool, p: u32, base: u32, out: &mut [u32]) {
    for n in nodes {
        let w_hi = if reversed { n.wa } else { n.wb };
        let m = w_hi * p / (n.wa + n.wb);
        out[n.local] = base + m - 1;
    }
}

/// Numbers the nodes inside facet `fv` (local vertices) of `cell` from `base`, in the
/// facet's canonical frame.
fn number_face_nodes(
    nodes: &[FaceNode],
    fv: &[usize],
    cell: &[u32],
    p: u32,
    base: u32,
    out: &mut [u32],
) {
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
        // quad facet, vertices lexicographic in the facet: neighbours of position k are
        // k^1 and k^2, the opposite corner is k^3
        let o = (0..4).min_by_key(|&k| cell[fv[k]]).unwrap_or(0);
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

/// The shared entities (edges or faces) of a mesh: every `(cell, local entity)` position
/// `pos = cell · per_cell + local` mapped to its entity, and each entity's first position
/// (the lowest cell that has it, then its lowest local index there).
struct Entities {
    /// `[pos]`: the entity.
    of: Vec<u32>,
    /// `[entity]`: its first position.
    first: Vec<u32>,
}

/// Groups the positions by `key` (the entity's sorted global vertices): a parallel sort.
fn entities<K: Ord + Copy + Send + Sync>(
    ncells: usize,
    per_cell: usize,
    key: impl Fn(usize, usize) -> K + Sync,
) -> Entities {
    let n = ncells * per_cell;
    let mut keyed: Vec<(K, u32)> = (0..n)
        .into_par_iter()
        .map(|pos| (key(pos / per_cell, pos % per_cell), pos as u32))
        .collect();
    keyed.par_sort_unstable();
    // the first of each group of equal keys starts an entity
    let starts: Vec<u32> = (0..n)
        .into_par_iter()
        .filter(|&i| i == 0 || keyed[i].0 != keyed[i - 1].0)
        .map(|i| i as u32)
        .collect();
    let of: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    starts.par_iter().enumerate().for_each(|(id, &s)| {
        let end = starts.get(id + 1).map_or(n, |&e| e as usize);
        for (_, pos) in &keyed[s as usize..end] {
            of[*pos as usize].store(id as u32, Ordering::Relaxed);
        }
    });
    Entities {
        of: of.into_par_iter().map(AtomicU32::into_inner).collect(),
        first: starts.par_iter().map(|&s| keyed[s as usize].1).collect(),
    }
}

/// Numbers the nodes of the order-`el.order()` space on `mesh`, in parallel.
///
/// The numbering is sequential in spirit: cells are visited in order and each entity
/// (vertex, edge, face, then the cell's interior) not met before gets the next block of
/// numbers, in the cell's local order of its vertices, edges and faces. An entity thus
/// belongs to its first cell, and a cell's own blocks are one contiguous range: the
/// ranges follow from a prefix sum over the cells, and every cell fills its nodes
/// independently.
pub(crate) fn number(mesh: &Mesh, el: &LagrangeElement) -> Result<Numbering, SpaceError> {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let nb = el.num_nodes();
    let p = el.order() as u32;
    let groups = group_nodes(el);
    let facets = ct.facets();
    let ncells = mesh.num_cells();
    let nv = groups.vertex.len();
    let (per_edge, per_face) = nodes_inside_entities(ct, p);
    let nedge = if per_edge > 0 { groups.edges.len() } else { 0 };
    let nface = if d == 3 && per_face > 0 {
        groups.faces.len()
    } else {
        0
    };
    let ninterior = groups.interior.len() as u64;
    // each vertex's first position: the lowest (cell, local vertex)
    let vertex_first: Vec<AtomicU64> = (0..mesh.num_vertices())
        .map(|_| AtomicU64::new(u64::MAX))
        .collect();
    (0..ncells).into_par_iter().for_each(|c| {
        for (v, &gv) in mesh.cell(c).iter().take(nv).enumerate() {
            vertex_first[gv as usize].fetch_min((c * nv + v) as u64, Ordering::Relaxed);
        }
    });
    let vertex_first: Vec<u64> = vertex_first
        .into_iter()
        .map(AtomicU64::into_inner)
        .collect();
    let edges = entities(ncells, nedge, |c, e| {
        let [a, b] = ct.edges()[e];
        let (ga, gb) = (mesh.cell(c)[a], mesh.cell(c)[b]);
        (ga.min(gb), ga.max(gb))
    });
    let faces = entities(ncells, nface, |c, f| {
        let cell = mesh.cell(c);
        let mut key = [NONE; 4];
        for (k, &v) in facets[f].iter().enumerate() {
            key[k] = cell[v];
        }
        key.sort_unstable();
        key
    });
    // the numbers each cell's own entities take, and where its range starts
    let owned = |c: usize| -> u64 {
        let cell = mesh.cell(c);
        let vertices = (0..nv)
            .filter(|&v| vertex_first[cell[v] as usize] == (c * nv + v) as u64)
            .count() as u64;
        let owns = |ent: &Entities, per: usize, k: usize| {
            ent.first[ent.of[c * per + k] as usize] as usize == c * per + k
        };
        let edges = (0..nedge).filter(|&e| owns(&edges, nedge, e)).count() as u64;
        let faces = (0..nface).filter(|&f| owns(&faces, nface, f)).count() as u64;
        vertices + edges * per_edge as u64 + faces * per_face as u64 + ninterior
    };
    let mut cell_base: Vec<u64> = (0..ncells).into_par_iter().map(owned).collect();
    let mut next = 0u64;
    for b in cell_base.iter_mut() {
        next += std::mem::replace(b, next);
    }
    if next > u32::MAX as u64 {
        return Err(SpaceError::TooLarge {
            count: next as usize,
        });
    }
    // each entity's first number, set by its first cell
    let vertex_base: Vec<AtomicU32> = (0..mesh.num_vertices())
        .map(|_| AtomicU32::new(NONE))
        .collect();
    let edge_base: Vec<AtomicU32> = (0..edges.first.len()).map(|_| AtomicU32::new(0)).collect();
    let face_base: Vec<AtomicU32> = (0..faces.first.len()).map(|_| AtomicU32::new(0)).collect();
    let interior_base: Vec<u32> = (0..ncells)
        .into_par_iter()
        .map(|c| {
            let cell = mesh.cell(c);
            let mut at = cell_base[c] as u32;
            for (v, &gv) in cell.iter().take(nv).enumerate() {
                if vertex_first[gv as usize] == (c * nv + v) as u64 {
                    vertex_base[gv as usize].store(at, Ordering::Relaxed);
                    at += 1;
                }
            }
            for e in 0..nedge {
                let id = edges.of[c * nedge + e] as usize;
                if edges.first[id] as usize == c * nedge + e {
                    edge_base[id].store(at, Ordering::Relaxed);
                    at += per_edge;
                }
            }
            for f in 0..nface {
                let id = faces.of[c * nface + f] as usize;
                if faces.first[id] as usize == c * nface + f {
                    face_base[id].store(at, Ordering::Relaxed);
                    at += per_face;
                }
            }
            at
        })
        .collect();
    let base = |b: &AtomicU32| b.load(Ordering::Relaxed);
    let mut elem_nodes = vec![NONE; ncells * nb];
    elem_nodes
        .par_chunks_mut(nb.max(1))
        .enumerate()
        .for_each(|(c, out)| {
            let cell = mesh.cell(c);
            for (v, &local) in groups.vertex.iter().enumerate() {
                out[local] = base(&vertex_base[cell[v] as usize]);
            }
            for (e, nodes) in groups.edges.iter().enumerate().take(nedge) {
                let [a, b] = ct.edges()[e];
                let (ga, gb) = (cell[a], cell[b]);
                let eb = base(&edge_base[edges.of[c * nedge + e] as usize]);
                number_edge_nodes(nodes, ga > gb, p, eb, out);
            }
            for (f, nodes) in groups.faces.iter().enumerate().take(nface) {
                let fv = facets[f];
                let fb = base(&face_base[faces.of[c * nface + f] as usize]);
                number_face_nodes(nodes, fv, cell, p, fb, out);
            }
            for (k, &local) in groups.interior.iter().enumerate() {
                out[local] = interior_base[c] + k as u32;
            }
        });
    debug_assert!(elem_nodes.iter().all(|&n| n != NONE));
    Ok(Numbering {
        elem_nodes,
        num_nodes: next as usize,
        cell_base: cell_base
            .into_iter()
            .map(|b| b as u32)
            .chain([next as u32])
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashMap;

    /// The numbering's definition, cell after cell: the reference of the parallel one.
    fn number_in_order(mesh: &Mesh, el: &LagrangeElement) -> Result<Numbering, SpaceError> {
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
        let (per_edge, per_face) = nodes_inside_entities(ct, p);
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
                    number_edge_nodes(nodes, ga > gb, p, base, out);
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
                    number_face_nodes(nodes, fv, cell, p, base, out);
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
            cell_base: Vec::new(),
        })
    }

    #[test]
    fn parallel_numbering_is_the_numbering_in_cell_order() {
        use ferrofem_base::CellType;
        use ferrofem_mesh::{generate_box, BoxSpec};
        let boxes = [
            (CellType::Triangle, vec![5, 4]),
            (CellType::Quadrilateral, vec![5, 4]),
            (CellType::Tetrahedron, vec![3, 2, 3]),
            (CellType::Hexahedron, vec![3, 4, 2]),
        ];
        for (ct, n) in boxes {
            let mut mesh = generate_box(&BoxSpec::unit(ct, &n)).unwrap();
            for pass in 0..2 {
                if pass == 1 {
                    // cells in another order, vertices renumbered
                    let (nv, nc, k) = (mesh.num_vertices(), mesh.num_cells(), ct.num_vertices());
                    let vperm: Vec<u32> = (0..nv).map(|v| ((v * 7 + 3) % nv) as u32).collect();
                    let mut coords = vec![0.0; mesh.coords().len()];
                    let d = mesh.dim();
                    for v in 0..nv {
                        let w = vperm[v] as usize;
                        coords[w * d..(w + 1) * d].copy_from_slice(mesh.vertex(v));
                    }
                    let cells: Vec<u32> = (0..nc)
                        .rev()
                        .flat_map(|c| mesh.cell(c).iter().map(|&v| vperm[v as usize]))
                        .collect();
                    assert_eq!(cells.len(), nc * k);
                    mesh = Mesh::new(ct, coords, cells).unwrap();
                }
                let ct = mesh.cell_type();
                for order in 1..=4 {
                    let Ok(el) = LagrangeElement::new(ct, order) else {
                        continue;
                    };
                    let a = number(&mesh, &el).unwrap();
                    let b = number_in_order(&mesh, &el).unwrap();
                    assert_eq!(a.num_nodes, b.num_nodes, "{ct:?} order {order}");
                    assert_eq!(a.elem_nodes, b.elem_nodes, "{ct:?} order {order}");
                    // each cell's own nodes are its range
                    let nb = el.num_nodes();
                    for c in 0..mesh.num_cells() {
                        let (lo, hi) = (a.cell_base[c], a.cell_base[c + 1]);
                        let own = a.elem_nodes[c * nb..(c + 1) * nb]
                            .iter()
                            .filter(|&&n| n >= lo && n < hi)
                            .count();
                        assert_eq!(own as u32, hi - lo);
                    }
                }
            }
        }
    }
}
