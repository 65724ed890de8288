//! The wave kernels' node numbering: skeleton nodes first (those with the plain leapfrog
//! update, then the absorbing ones), then each element's interior nodes, contiguous and
//! in element order, so that the stiffness kernel updates an interior node where it
//! computes it and reads offsets only for the skeleton.

use crate::GpuError;
use ferrofem_space::{ElemRestriction, H1Space};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Local node `l`'s tensor coordinates (first direction fastest).
fn coords(l: usize, np: usize, dim: usize) -> [usize; 3] {
    let mut c = [0; 3];
    let mut r = l;
    for x in c.iter_mut().take(dim) {
        *x = r % np;
        r /= np;
    }
    c
}

/// Where each local node of an element goes: a skeleton slot or an interior index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalSlots {
    /// Per local node (lexicographic): `s ≥ 0` skeleton slot `s`, `s < 0` interior index
    /// `−s − 1`.
    pub slot: Vec<i16>,
    /// Skeleton nodes per element.
    pub skeleton: usize,
    /// Interior nodes per element.
    pub interior: usize,
}

impl LocalSlots {
    /// The slots of an element with `np` nodes per direction in dimension `dim`: a node is
    /// interior when no coordinate is on the element's boundary; both kinds lexicographic.
    pub fn new(dim: usize, np: usize) -> LocalSlots {
        let npe = np.pow(dim as u32);
        let (mut sk, mut it) = (0i16, 0i16);
        let slot = (0..npe)
            .map(|l| {
                let c = coords(l, np, dim);
                if c[..dim].iter().all(|&x| x > 0 && x + 1 < np) {
                    it += 1;
                    -it
                } else {
                    sk += 1;
                    sk - 1
                }
            })
            .collect();
        LocalSlots {
            slot,
            skeleton: sk as usize,
            interior: it as usize,
        }
    }
}

/// The wave kernels' numbering of a scalar space's nodes.
#[derive(Clone, Debug)]
pub struct WaveLayout {
    /// The element's local slots.
    pub local: LocalSlots,
    /// Skeleton nodes (numbered `0..skeleton`), the plain ones first.
    pub skeleton: usize,
    /// Skeleton nodes with the plain update (`0..plain`); the absorbing ones follow.
    pub plain: usize,
    /// The kernels' node of each of the space's nodes.
    pub new_of: Vec<u32>,
    /// The space's node of each of the kernels' nodes.
    pub old_of: Vec<u32>,
    /// `[elem][skeleton slot]`: the kernels' node of each skeleton slot.
    pub skeleton_nodes: Vec<u32>,
}

impl WaveLayout {
    /// Numbers the nodes of `restriction` (scalar, elements with `np^dim` lexicographic
    /// nodes) for the kernels, with the nodes `absorbing` (in that order) last among the
    /// skeleton. An error if an element's interior node is shared with another element or
    /// an absorbing node is interior to an element (a mesh that is not conforming).
    pub fn new(
        restriction: &ElemRestriction,
        dim: usize,
        np: usize,
        absorbing: &[u32],
    ) -> Result<WaveLayout, GpuError> {
        let local = LocalSlots::new(dim, np);
        let npe = local.slot.len();
        if restriction.elem_size() != npe || restriction.ncomp() != 1 {
            return Err(GpuError::Unsupported(format!(
                "the wave kernels need a scalar restriction with {npe} nodes per element, got {} with {} components",
                restriction.elem_size(),
                restriction.ncomp()
            )));
        }
        let ne = restriction.num_elem();
        let nn = restriction.num_nodes();
        // 0: not seen, 1: skeleton, 2 + e: interior of element e
        const UNSEEN: u32 = 0;
        const SKELETON: u32 = 1;
        let kind: Vec<AtomicU32> = (0..nn)
            .into_par_iter()
            .map(|_| AtomicU32::new(UNSEEN))
            .collect();
        // interior nodes first, each claimed by one element; then the skeleton, which must
        // not meet a claimed node (the lowest element of a clash is reported)
        let interior_clash = (0..ne)
            .into_par_iter()
            .filter_map(|e| {
                let en = restriction.elem(e);
                en.iter().enumerate().find_map(|(l, &n)| {
                    (local.slot[l] < 0
                        && kind[n as usize]
                            .compare_exchange(UNSEEN, 2 + e as u32, Relaxed, Relaxed)
                            .is_err())
                    .then_some((e, n))
                })
            })
            .min();
        let skeleton_clash = || {
            (0..ne)
                .into_par_iter()
                .filter_map(|e| {
                    let en = restriction.elem(e);
                    en.iter().enumerate().find_map(|(l, &n)| {
                        if local.slot[l] < 0 {
                            return None;
                        }
                        let k = &kind[n as usize];
                        if k.load(Relaxed) >= 2 {
                            return Some((e, n));
                        }
                        k.store(SKELETON, Relaxed);
                        None
                    })
                })
                .min()
        };
        if let Some((e, n)) = interior_clash.or_else(skeleton_clash) {
            return Err(GpuError::Unsupported(format!(
                "node {n} is interior to an element and shared with element {e}: the mesh is not conforming"
            )));
        }
        let kind: Vec<u32> = kind.into_par_iter().map(AtomicU32::into_inner).collect();
        if kind.par_iter().any(|&k| k == UNSEEN) {
            return Err(GpuError::Unsupported(
                "a node of the space belongs to no element".into(),
            ));
        }
        let mut is_absorbing = vec![false; nn];
        for &a in absorbing {
            match kind.get(a as usize) {
                Some(&SKELETON) if !is_absorbing[a as usize] => is_absorbing[a as usize] = true,
                Some(&SKELETON) => {
                    return Err(GpuError::Unsupported(format!(
                        "absorbing node {a} is listed twice"
                    )))
                }
                _ => {
                    return Err(GpuError::Unsupported(format!(
                        "absorbing node {a} is not on an element's boundary"
                    )))
                }
            }
        }
        // the kernels' order, as the space's nodes: the plain skeleton in the space's
        // order, the absorbing nodes in theirs, then the elements' interiors
        // (an ordered filter in parallel: each chunk of nodes counts its plain skeleton
        // nodes, then writes them at its offset)
        const CHUNK: usize = 1 << 16;
        let is_plain = |n: usize| kind[n] == SKELETON && !is_absorbing[n];
        let counts: Vec<usize> = (0..nn.div_ceil(CHUNK))
            .into_par_iter()
            .map(|k| {
                (k * CHUNK..nn.min((k + 1) * CHUNK))
                    .filter(|&n| is_plain(n))
                    .count()
            })
            .collect();
        let plain: usize = counts.iter().sum();
        let skeleton = plain + absorbing.len();
        let mut old_of = vec![0u32; nn];
        let (plain_part, rest) = old_of.split_at_mut(plain);
        rest[..absorbing.len()].copy_from_slice(absorbing);
        let mut parts = Vec::with_capacity(counts.len());
        let mut tail = plain_part;
        for &c in &counts {
            let (head, t) = tail.split_at_mut(c);
            parts.push(head);
            tail = t;
        }
        parts.into_par_iter().enumerate().for_each(|(k, out)| {
            let nodes = (k * CHUNK..nn.min((k + 1) * CHUNK)).filter(|&n| is_plain(n));
            for (o, n) in out.iter_mut().zip(nodes) {
                *o = n as u32;
            }
        });
        let interior_local: Vec<usize> = (0..npe).filter(|&l| local.slot[l] < 0).collect();
        if !interior_local.is_empty() {
            old_of[skeleton..]
                .par_chunks_mut(local.interior)
                .enumerate()
                .for_each(|(e, out)| {
                    let en = restriction.elem(e);
                    for &l in &interior_local {
                        out[(-local.slot[l] - 1) as usize] = en[l];
                    }
                });
        }
        let new_of: Vec<AtomicU32> = (0..nn).into_par_iter().map(|_| AtomicU32::new(0)).collect();
        old_of
            .par_iter()
            .enumerate()
            .for_each(|(new, &old)| new_of[old as usize].store(new as u32, Relaxed));
        let new_of: Vec<u32> = new_of.into_par_iter().map(AtomicU32::into_inner).collect();
        Ok(WaveLayout::with_skeleton_slots(
            restriction,
            local,
            (skeleton, plain),
            new_of,
            old_of,
        ))
    }

    /// [`WaveLayout::new`] for the scalar nodes of `space`, the same numbering. A space
    /// numbered by [`H1Space::new`] numbers each cell's interior nodes last in the range of
    /// nodes that cell reaches first ([`H1Space::first_nodes`]): the layout then follows
    /// from those ranges, without claiming nodes element by element. Any other space (or
    /// one whose ranges do not hold its interiors) takes [`WaveLayout::new`].
    pub fn for_space(space: &H1Space, absorbing: &[u32]) -> Result<WaveLayout, GpuError> {
        let (dim, np) = (space.dim(), space.order() + 1);
        let r = space.restriction().with_ncomp(1);
        let general = || WaveLayout::new(&r, dim, np, absorbing);
        let local = LocalSlots::new(dim, np);
        let (ne, nn, ni) = (r.num_elem(), r.num_nodes(), local.interior);
        let Some(first) = space.first_nodes() else {
            return general();
        };
        if r.elem_size() != local.slot.len()
            || first.len() != ne + 1
            || first[0] != 0
            || first[ne] as usize != nn
        {
            return general();
        }
        let interior_local: Vec<usize> = (0..local.slot.len())
            .filter(|&l| local.slot[l] < 0)
            .collect();
        // the interior of cell e: the last `ni` nodes of its range, in local order
        let interior_at = |e: usize| first[e + 1] as usize - ni;
        let ranges_hold = (0..ne).into_par_iter().all(|e| {
            let en = r.elem(e);
            first[e] as usize + ni <= first[e + 1] as usize
                && interior_local
                    .iter()
                    .enumerate()
                    .all(|(k, &l)| en[l] as usize == interior_at(e) + k)
        });
        if !ranges_hold {
            return general();
        }
        // absorbing nodes: skeleton nodes (before the interior of the cell reaching them),
        // each once; `absorbing_index[n]` is its place in the list plus one
        let mut absorbing_index = vec![0u32; nn];
        for (i, &a) in absorbing.iter().enumerate() {
            let n = a as usize;
            let cell = first[1..].partition_point(|&f| f as usize <= n);
            if n >= nn || n >= interior_at(cell) {
                return Err(GpuError::Unsupported(format!(
                    "absorbing node {a} is not on an element's boundary"
                )));
            }
            if absorbing_index[n] != 0 {
                return Err(GpuError::Unsupported(format!(
                    "absorbing node {a} is listed twice"
                )));
            }
            absorbing_index[n] = i as u32 + 1;
        }
        // chunks of cells: their node ranges, their plain skeleton nodes (counted, then
        // numbered at the chunk's offset) and their interiors are disjoint
        const CELLS_PER_CHUNK: usize = 1 << 10;
        let nchunks = ne.div_ceil(CELLS_PER_CHUNK);
        let cells = |k: usize| k * CELLS_PER_CHUNK..((k + 1) * CELLS_PER_CHUNK).min(ne);
        let skeleton_of = |e: usize| first[e] as usize..interior_at(e);
        let counts: Vec<usize> = (0..nchunks)
            .into_par_iter()
            .map(|k| {
                cells(k)
                    .flat_map(skeleton_of)
                    .filter(|&n| absorbing_index[n] == 0)
                    .count()
            })
            .collect();
        let plain: usize = counts.iter().sum();
        let skeleton = plain + absorbing.len();
        let mut old_of = vec![0u32; nn];
        let mut new_of = vec![0u32; nn];
        let (plain_part, rest) = old_of.split_at_mut(plain);
        let (absorbing_part, interior_part) = rest.split_at_mut(absorbing.len());
        absorbing_part.copy_from_slice(absorbing);
        let mut parts = Vec::with_capacity(nchunks);
        let (mut plain_rest, mut interior_rest, mut new_rest) =
            (plain_part, interior_part, new_of.as_mut_slice());
        let mut offset = 0;
        for (k, &c) in counts.iter().enumerate() {
            let range = cells(k);
            let (p, t) = plain_rest.split_at_mut(c);
            plain_rest = t;
            let (i, t) = interior_rest.split_at_mut(range.len() * ni);
            interior_rest = t;
            let nodes = (first[range.end] - first[range.start]) as usize;
            let (nw, t) = new_rest.split_at_mut(nodes);
            new_rest = t;
            parts.push((range, offset, p, i, nw));
            offset += c;
        }
        parts
            .into_par_iter()
            .for_each(|(range, offset, plain_out, interior_out, new_out)| {
                let n0 = first[range.start] as usize;
                let mut next = 0;
                for e in range.clone() {
                    for n in skeleton_of(e) {
                        new_out[n - n0] = match absorbing_index[n] {
                            0 => {
                                plain_out[next] = n as u32;
                                next += 1;
                                (offset + next - 1) as u32
                            }
                            a => (plain + a as usize - 1) as u32,
                        };
                    }
                    let at = (e - range.start) * ni;
                    for k in 0..ni {
                        let n = interior_at(e) + k;
                        interior_out[at + k] = n as u32;
                        new_out[n - n0] = (skeleton + e * ni + k) as u32;
                    }
                }
            });
        Ok(WaveLayout::with_skeleton_slots(
            &r,
            local,
            (skeleton, plain),
            new_of,
            old_of,
        ))
    }

    /// The layout of the numbering `new_of`/`old_of` with `(skeleton, plain)` counts, with
    /// each element's skeleton slots looked up in it.
    fn with_skeleton_slots(
        restriction: &ElemRestriction,
        local: LocalSlots,
        (skeleton, plain): (usize, usize),
        new_of: Vec<u32>,
        old_of: Vec<u32>,
    ) -> WaveLayout {
        let mut skeleton_nodes = vec![0u32; restriction.num_elem() * local.skeleton];
        skeleton_nodes
            .par_chunks_mut(local.skeleton.max(1))
            .enumerate()
            .for_each(|(e, out)| {
                for (l, &n) in restriction.elem(e).iter().enumerate() {
                    if let Ok(s) = usize::try_from(local.slot[l]) {
                        out[s] = new_of[n as usize];
                    }
                }
            });
        WaveLayout {
            local,
            skeleton,
            plain,
            new_of,
            old_of,
            skeleton_nodes,
        }
    }

    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.new_of.len()
    }

    /// Element `e`'s local node `l` in the kernels' numbering (what the kernel computes).
    pub fn node(&self, e: usize, l: usize) -> u32 {
        let s = self.local.slot[l];
        if s >= 0 {
            self.skeleton_nodes[e * self.local.skeleton + s as usize]
        } else {
            (self.skeleton + e * self.local.interior + (-s - 1) as usize) as u32
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofem_base::CellType;
    use ferrofem_mesh::{generate_box, BoxSpec};
    use ferrofem_space::H1Space;

    #[test]
    fn slots_split_an_element_into_its_boundary_and_interior() {
        for (dim, np, sk, it) in [(2, 2, 4, 0), (2, 5, 16, 9), (3, 2, 8, 0), (3, 5, 98, 27)] {
            let s = LocalSlots::new(dim, np);
            assert_eq!((s.skeleton, s.interior), (sk, it), "dim {dim} np {np}");
            // both kinds numbered 0.. without gaps
            let mut skel: Vec<i16> = s.slot.iter().copied().filter(|&v| v >= 0).collect();
            let mut int: Vec<i16> = s.slot.iter().map(|&v| -v - 1).filter(|&v| v >= 0).collect();
            skel.sort();
            int.sort();
            assert!(skel.iter().enumerate().all(|(i, &v)| v as usize == i));
            assert!(int.iter().enumerate().all(|(i, &v)| v as usize == i));
        }
    }

    #[test]
    fn the_numbering_is_a_permutation_that_keeps_every_element() {
        for (ct, dims, p) in [
            (CellType::Quadrilateral, vec![3, 2], 4),
            (CellType::Hexahedron, vec![2, 2, 3], 3),
            (CellType::Quadrilateral, vec![2, 2], 1),
            // (more cells than one chunk of the fast path)
            (CellType::Quadrilateral, vec![50, 45], 2),
        ] {
            let mesh = generate_box(&BoxSpec::unit(ct, &dims)).unwrap();
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let r = space.restriction();
            let dim = mesh.dim();
            let boundary = space.boundary_nodes(&mesh).unwrap();
            let absorbing: Vec<u32> = boundary.iter().copied().step_by(2).collect();
            let lay = WaveLayout::new(r, dim, p + 1, &absorbing).unwrap();
            // the same numbering from the space's first-reached ranges
            let fast = WaveLayout::for_space(&space, &absorbing).unwrap();
            assert_eq!(
                (&fast.new_of, &fast.old_of, &fast.skeleton_nodes),
                (&lay.new_of, &lay.old_of, &lay.skeleton_nodes)
            );
            assert_eq!((fast.plain, fast.skeleton), (lay.plain, lay.skeleton));
            let vector = space.with_ncomp(dim).unwrap();
            let from_vector = WaveLayout::for_space(&vector, &absorbing).unwrap();
            assert_eq!(from_vector.new_of, lay.new_of);
            let nn = space.num_nodes();
            let mut seen = vec![false; nn];
            for &n in &lay.new_of {
                assert!(!seen[n as usize]);
                seen[n as usize] = true;
            }
            for e in 0..mesh.num_cells() {
                for (l, &old) in r.elem(e).iter().enumerate() {
                    assert_eq!(lay.node(e, l), lay.new_of[old as usize]);
                    assert_eq!(lay.old_of[lay.node(e, l) as usize], old);
                }
            }
            // the absorbing nodes close the skeleton, in their order
            for (a, &n) in absorbing.iter().enumerate() {
                assert_eq!(lay.new_of[n as usize] as usize, lay.plain + a);
            }
            assert_eq!(lay.skeleton, lay.plain + absorbing.len());
            assert_eq!(
                nn - lay.skeleton,
                mesh.num_cells() * lay.local.interior,
                "interior nodes"
            );
        }
    }

    #[test]
    fn an_interior_absorbing_node_is_refused() {
        let mesh = generate_box(&BoxSpec::unit(CellType::Quadrilateral, &[1, 1])).unwrap();
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        let r = space.restriction();
        let centre = r.elem(0)[4];
        for e in [
            WaveLayout::new(r, 2, 3, &[centre]).unwrap_err(),
            WaveLayout::for_space(&space, &[centre]).unwrap_err(),
        ] {
            assert!(
                e.to_string().contains("not on an element's boundary"),
                "{e}"
            );
        }
        let twice = WaveLayout::for_space(&space, &[0, 0]).unwrap_err();
        assert!(twice.to_string().contains("listed twice"), "{twice}");
    }
}
