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

/// A node inside an edge: its local index and its offset in the edge's block when the
/// cell runs the edge forwards (`[0]`) or backwards (`[1]`).
struct EdgeNode {
    local: usize,
    offset: [u32; 2],
}

/// A node inside a face: its local index and its offset in the face's block for each
/// orientation of the face in the cell (see [`number_face_nodes`]).
struct FaceNode {
    local: usize,
    offset: [u32; 9],
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
    let p = el.order() as u32;
    for n in 0..el.num_nodes() {
        let ent = el.node_entity(n);
        let w = el.vertex_weights(n);
        match ent.dim {
            0 => g.vertex[ent.index] = n,
            1 => {
                let [a, b] = ct.edges()[ent.index];
                let (wa, wb) = (w[a], w[b]);
                g.edges[ent.index].push(EdgeNode {
                    local: n,
                    offset: [wb * p / (wa + wb) - 1, wa * p / (wa + wb) - 1],
                });
            }
            2 if d == 3 => {
                let f = facets[ent.index];
                let mut fw = [0u32; 4];
                for (k, &v) in f.iter().enumerate() {
                    fw[k] = w[v];
                }
                g.faces[ent.index].push(FaceNode {
                    local: n,
                    offset: face_offsets(&fw[..f.len()], p),
                });
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

/// The offsets in a face's block of the node with integer vertex weights `w` (3: a
/// triangle, 4: a quadrilateral, its vertices lexicographic) at order `p`, for every
/// orientation of the face, indexed as [`number_face_nodes`] indexes them.
///
/// Triangle: index `3 o₁ + o₂` for the face's positions `(o₀, o₁, o₂)` in ascending global
/// vertex order; the node is the barycentric point `(a₁, a₂)` of `o₁` and `o₂`.
/// Quadrilateral: index `2 o + s` with `o` the position of the lowest global vertex and
/// `s = 0` when the first axis runs to its neighbour `o ^ 1` (else to `o ^ 2`); the node is
/// `(s, t)` along the two axes from `o`.
fn face_offsets(w: &[u32], p: u32) -> [u32; 9] {
    let wsum: u32 = w.iter().sum();
    let mut offset = [0; 9];
    if w.len() == 3 {
        for (o1, o2) in [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)] {
            let (a1, a2) = (w[o1] * p / wsum, w[o2] * p / wsum);
            offset[3 * o1 + o2] = tri_interior_index(p, a1, a2);
        }
    } else {
        for o in 0..4 {
            for swap in 0..2 {
                let (n1, n2) = if swap == 0 {
                    (o ^ 1, o ^ 2)
                } else {
                    (o ^ 2, o ^ 1)
                };
                let opp = o ^ 3;
                let s = (w[n1] + w[opp]) * p / wsum;
                let t = (w[n2] + w[opp]) * p / wsum;
                offset[2 * o + swap] = (s - 1) + (t - 1) * (p - 1);
            }
        }
    }
    offset
}

/// Numbers the nodes inside an edge from `base`, in the edge's canonical direction (from
/// its lower global vertex): `reversed` when the cell's local edge runs the other way.
fn number_edge_nodes(nodes: &[EdgeNode], reversed: bool, base: u32, out: &mut [u32]) {
    for n in nodes {
        out[n.local] = base + n.offset[reversed as usize];
    }
}

/// Numbers the nodes inside facet `fv` (local vertices) of `cell` from `base`, in the
/// facet's canonical frame.
fn number_face_nodes(nodes: &[FaceNode], fv: &[usize], cell: &[u32], base: u32, out: &mut [u32]) {
    let orientation = if fv.len() == 3 {
        // positions of the facet's local vertices in ascending global order
        let mut order = [0usize, 1, 2];
        order.sort_by_key(|&k| cell[fv[k]]);
        3 * order[1] + order[2]
    } else {
        // quad facet, vertices lexicographic in the facet: neighbours of position k are
        // k^1 and k^2, the opposite corner is k^3
        let o = (0..4).min_by_key(|&k| cell[fv[k]]).unwrap_or(0);
        2 * o + usize::from(cell[fv[o ^ 1]] >= cell[fv[o ^ 2]])
    };
    for n in nodes {
        out[n.local] = base + n.offset[orientation];
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

/// Groups the positions `cell * per_cell + k` by entity. `key(cell, k)` is the entity's
/// sorted global vertices, split into the lowest (below `nvertices`) and the others.
///
/// A counting sort by the lowest vertex puts the few positions that can share an entity
/// side by side; each vertex's bucket is then sorted by the rest of the key, in parallel
/// over chunks of vertices. Linear in the positions, where a sort of all the keys is not.
fn entities<R: Ord + Copy + Send + Sync>(
    ncells: usize,
    per_cell: usize,
    nvertices: usize,
    key: impl Fn(usize, usize) -> (u32, R) + Sync,
) -> Entities {
    let n = ncells * per_cell;
    if n == 0 {
        return Entities {
            of: Vec::new(),
            first: Vec::new(),
        };
    }
    let key_of = |pos: u32| key(pos as usize / per_cell, pos as usize % per_cell);
    // bucket starts by the lowest vertex
    let cursor: Vec<AtomicU32> = (0..nvertices)
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    (0..n as u32).into_par_iter().for_each(|pos| {
        cursor[key_of(pos).0 as usize].fetch_add(1, Ordering::Relaxed);
    });
    let mut start = Vec::with_capacity(nvertices + 1);
    let mut at = 0u32;
    start.push(0);
    for c in &cursor {
        at += c.load(Ordering::Relaxed);
        start.push(at);
    }
    cursor
        .par_iter()
        .zip(&start[..nvertices])
        .for_each(|(c, &s)| c.store(s, Ordering::Relaxed));
    let slots: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    (0..n as u32).into_par_iter().for_each(|pos| {
        let i = cursor[key_of(pos).0 as usize].fetch_add(1, Ordering::Relaxed);
        slots[i as usize].store(pos, Ordering::Relaxed);
    });
    drop(cursor);
    let mut slots: Vec<u32> = slots.into_par_iter().map(AtomicU32::into_inner).collect();
    // each bucket in (rest of the key, position) order, so that an entity's positions are
    // consecutive, its lowest first; the entities counted per chunk of vertices
    const VERTICES_PER_CHUNK: usize = 1 << 12;
    let chunk_vertices = |k: usize| {
        (
            k * VERTICES_PER_CHUNK,
            ((k + 1) * VERTICES_PER_CHUNK).min(nvertices),
        )
    };
    let nchunks = nvertices.div_ceil(VERTICES_PER_CHUNK);
    let mut parts = Vec::with_capacity(nchunks);
    let mut rest = slots.as_mut_slice();
    for k in 0..nchunks {
        let (v0, v1) = chunk_vertices(k);
        let (head, tail) = rest.split_at_mut((start[v1] - start[v0]) as usize);
        parts.push((k, head));
        rest = tail;
    }
    let counts: Vec<u32> = parts
        .into_par_iter()
        .map_init(Vec::new, |scratch, (k, part)| {
            let (v0, v1) = chunk_vertices(k);
            let mut count = 0;
            for v in v0..v1 {
                let bucket =
                    &mut part[(start[v] - start[v0]) as usize..(start[v + 1] - start[v0]) as usize];
                scratch.clear();
                scratch.extend(bucket.iter().map(|&pos| (key_of(pos).1, pos)));
                scratch.sort_unstable();
                for (i, &(r, pos)) in scratch.iter().enumerate() {
                    bucket[i] = pos;
                    if i == 0 || scratch[i - 1].0 != r {
                        count += 1;
                    }
                }
            }
            count
        })
        .collect();
    // entity ids: the chunks' in order, each chunk's in its buckets' order
    let total: u32 = counts.iter().sum();
    let mut first = vec![0u32; total as usize];
    let mut parts = Vec::with_capacity(nchunks);
    let mut rest = first.as_mut_slice();
    let mut id = 0u32;
    for (k, &c) in counts.iter().enumerate() {
        let (head, tail) = rest.split_at_mut(c as usize);
        parts.push((k, id, head));
        rest = tail;
        id += c;
    }
    let of: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    parts.into_par_iter().for_each(|(k, id0, out)| {
        let (v0, v1) = chunk_vertices(k);
        let mut next = 0usize;
        for v in v0..v1 {
            let mut prev = None;
            for &pos in &slots[start[v] as usize..start[v + 1] as usize] {
                let r = key_of(pos).1;
                if prev != Some(r) {
                    out[next] = pos;
                    next += 1;
                    prev = Some(r);
                }
                of[pos as usize].store(id0 + next as u32 - 1, Ordering::Relaxed);
            }
        }
    });
    Entities {
        of: of.into_par_iter().map(AtomicU32::into_inner).collect(),
        first,
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
        .into_par_iter()
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
    let nvertices = mesh.num_vertices();
    let edges = entities(ncells, nedge, nvertices, |c, e| {
        let [a, b] = ct.edges()[e];
        let (ga, gb) = (mesh.cell(c)[a], mesh.cell(c)[b]);
        (ga.min(gb), ga.max(gb))
    });
    let faces = entities(ncells, nface, nvertices, |c, f| {
        let cell = mesh.cell(c);
        let mut key = [NONE; 4];
        for (k, &v) in facets[f].iter().enumerate() {
            key[k] = cell[v];
        }
        key.sort_unstable();
        (key[0], [key[1], key[2], key[3]])
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
        .into_par_iter()
        .map(|_| AtomicU32::new(NONE))
        .collect();
    let edge_base: Vec<AtomicU32> = (0..edges.first.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
    let face_base: Vec<AtomicU32> = (0..faces.first.len())
        .into_par_iter()
        .map(|_| AtomicU32::new(0))
        .collect();
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
    // (filled in parallel: a plain `vec!` of a non-zero value writes it on one thread)
    let mut elem_nodes: Vec<u32> = (0..ncells * nb).into_par_iter().map(|_| NONE).collect();
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
                number_edge_nodes(nodes, ga > gb, eb, out);
            }
            for (f, nodes) in groups.faces.iter().enumerate().take(nface) {
                let fv = facets[f];
                let fb = base(&face_base[faces.of[c * nface + f] as usize]);
                number_face_nodes(nodes, fv, cell, fb, out);
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
                    number_edge_nodes(nodes, ga > gb, base, out);
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
                    number_face_nodes(nodes, fv, cell, base, out);
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
