//! Race-free accumulation of element results into the output L-vector: either through an
//! E-vector and a sum by node over the transposed restriction, or directly from the
//! kernels with the elements grouped into blocks whose colours share no node.

use super::kernel::BatchSink;
use super::lane_runs::{scatter_rows_folded, scatter_runs, BatchRuns, LaneRuns};
use super::lanes::{lanes_are_the_vector, Lane, LANES};
use ferrofem_base::Real;
use ferrofem_space::{ElemRestriction, TransposeMap};
use rayon::prelude::*;
use std::marker::PhantomData;

/// Nodes summed by one task of the by-node accumulation.
const NODES_PER_TASK: usize = 4096;

/// How element contributions are added into the output vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Accumulation {
    /// The kernels write an E-vector; a parallel pass over nodes then sums each node's
    /// entries through [`ElemRestriction::transpose`] (deterministic, no colouring, but the
    /// E-vector makes a round trip through memory).
    ByNode,
    /// Elements are grouped in contiguous blocks, the blocks coloured so that blocks of
    /// one colour share no node, and each colour's blocks are applied in parallel, adding
    /// straight into the output (deterministic too: each node is updated in colour order).
    #[default]
    Colored,
}

/// Contiguous blocks of elements, coloured so that no two blocks of one colour touch a
/// common node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockColoring {
    /// Elements per block (the last one may be shorter).
    pub block_len: usize,
    /// Number of elements.
    pub num_elem: usize,
    /// Blocks of each colour, increasing.
    pub colors: Vec<Vec<u32>>,
}

impl BlockColoring {
    /// Greedy colouring of blocks of `block_len` consecutive elements (each block takes the
    /// smallest colour none of its neighbours has). Linear in the size of the restriction
    /// times the largest node multiplicity.
    pub fn new(r: &ElemRestriction, t: &TransposeMap, block_len: usize) -> BlockColoring {
        let block_len = block_len.max(1);
        let ne = r.num_elem();
        let nn = r.elem_size();
        let nb = ne.div_ceil(block_len);
        let mut color = vec![u32::MAX; nb];
        // forbidden[c] == b marks colour c as taken by a neighbour of block b
        let mut forbidden: Vec<usize> = Vec::new();
        let mut colors: Vec<Vec<u32>> = Vec::new();
        for b in 0..nb {
            for e in b * block_len..((b + 1) * block_len).min(ne) {
                for &node in r.elem(e) {
                    let (s, f) = (
                        t.node_offsets[node as usize] as usize,
                        t.node_offsets[node as usize + 1] as usize,
                    );
                    for &pos in &t.entries[s..f] {
                        let ob = pos as usize / nn / block_len;
                        let c = color[ob];
                        if ob != b && c != u32::MAX {
                            forbidden[c as usize] = b;
                        }
                    }
                }
            }
            let c = (0..forbidden.len())
                .find(|&c| forbidden[c] != b)
                .unwrap_or_else(|| {
                    forbidden.push(usize::MAX);
                    colors.push(Vec::new());
                    forbidden.len() - 1
                });
            color[b] = c as u32;
            colors[c].push(b as u32);
        }
        BlockColoring {
            block_len,
            num_elem: ne,
            colors,
        }
    }

    /// The elements of block `b`.
    pub fn block(&self, b: usize) -> std::ops::Range<usize> {
        b * self.block_len..((b + 1) * self.block_len).min(self.num_elem)
    }
}

/// Writes batch results into an E-vector slice holding the elements from `base` on.
pub(crate) struct EVecSink<'a, T> {
    pub evec: &'a mut [T],
    pub base: usize,
    pub ncomp: usize,
    pub nodes: usize,
}

impl<T: Real> BatchSink<T> for EVecSink<'_, T> {
    #[inline]
    fn put(&mut self, elems: &[usize; LANES], count: usize, comp: usize, r: &[Lane<T>]) {
        for (l, &e) in elems.iter().enumerate().take(count) {
            let start = ((e - self.base) * self.ncomp + comp) * self.nodes;
            let dst = &mut self.evec[start..start + self.nodes];
            for (d, ri) in dst.iter_mut().zip(r) {
                lanes_are_the_vector();
                *d = ri[l];
            }
        }
    }
}

/// A mutable slice shared by the threads of one colour, which touch disjoint entries.
pub(crate) struct SharedSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: the slice is only written through a `SharedSink`'s output, whose users guarantee
// that no two threads touch the same entry at the same time (colouring), and `T` is Send.
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}

impl<'a, T: Real> SharedSlice<'a, T> {
    pub(crate) fn new(s: &'a mut [T]) -> SharedSlice<'a, T> {
        SharedSlice {
            ptr: s.as_mut_ptr(),
            len: s.len(),
            _borrow: PhantomData,
        }
    }
}

/// Adds batch results straight into the output L-vector.
pub(crate) struct SharedSink<'b, T> {
    out: DirectOut<'b, T>,
}

impl<'b, T: Real> SharedSink<'b, T> {
    /// A sink adding into `y`, an L-vector of `r`'s space, with `runs` recorded from `r`.
    /// It is only used for the blocks of one colour at a time, which share no node.
    ///
    /// # Panics
    /// If `y` is not as long as `r`'s L-vectors.
    pub(crate) fn new(
        y: &'b SharedSlice<'_, T>,
        r: &'b ElemRestriction,
        runs: &'b LaneRuns,
    ) -> Self {
        assert_eq!(y.len, r.lvec_len(), "output length");
        SharedSink {
            out: DirectOut {
                y: y.ptr,
                offsets: r.offsets(),
                ncomp: r.ncomp(),
                nodes: r.elem_size(),
                runs,
            },
        }
    }
}

impl<T: Real> BatchSink<T> for SharedSink<'_, T> {
    #[inline]
    fn put(&mut self, elems: &[usize; LANES], count: usize, comp: usize, r: &[Lane<T>]) {
        self.out.add(elems, count, comp, r);
    }
    fn direct(&mut self) -> Option<DirectOut<'_, T>> {
        Some(self.out)
    }
}

/// The output of a [`SharedSink`], which the kernels add into themselves (inlined, with
/// their instruction set) instead of calling the sink.
#[derive(Clone, Copy)]
pub(crate) struct DirectOut<'b, T> {
    y: *mut T,
    offsets: &'b [u32],
    ncomp: usize,
    nodes: usize,
    runs: &'b LaneRuns,
}

impl<T: Real> DirectOut<'_, T> {
    /// Adds component `comp` of the results `r` of elements `elems[..count]`.
    #[inline(always)]
    pub(crate) fn add(&self, elems: &[usize; LANES], count: usize, comp: usize, r: &[Lane<T>]) {
        let nn = self.nodes;
        let mut rows: [&[u32]; LANES] = [&[]; LANES];
        for (row, &e) in rows.iter_mut().zip(elems) {
            *row = &self.offsets[e * nn..(e + 1) * nn];
        }
        self.add_rows(&rows, self.runs.batch(elems[0], count), count, comp, r);
    }

    /// Adds the results `r` of a full batch of the 2-D collocated kernel (one component,
    /// `N × N` nodes) whose nodes are all full runs, lane 0's restriction row `row0`
    /// ([`scatter_rows_folded`]).
    #[inline(always)]
    pub(crate) fn add_runs_folded<const N: usize>(&self, row0: &[u32], r: &[[Lane<T>; N]; N]) {
        assert_eq!(self.ncomp, 1, "runs are recorded for one component");
        // SAFETY: in bounds and exclusive as in `add_rows`; the caller hands a batch whose
        // nodes are all full runs.
        unsafe { scatter_rows_folded(row0, r, self.y) };
    }

    /// [`DirectOut::add`] with the lanes' restriction rows `rows` (of this sink's
    /// restriction) and their run patterns `runs` (as [`LaneRuns::batch`] gives them).
    #[inline(always)]
    pub(crate) fn add_rows(
        &self,
        rows: &[&[u32]; LANES],
        runs: Option<BatchRuns<'_>>,
        count: usize,
        comp: usize,
        r: &[Lane<T>],
    ) {
        let nc = self.ncomp;
        if let Some(runs) = runs {
            // SAFETY: in bounds and exclusive as in the scalar loop below; the codes were
            // recorded from these rows of a full batch with one component.
            unsafe { scatter_runs(runs, rows, r, self.y) };
            return;
        }
        for (l, row) in rows.iter().enumerate().take(count) {
            for (&j, ri) in row.iter().zip(r) {
                lanes_are_the_vector();
                // SAFETY: in bounds, since the restriction's offsets are below its node
                // count and `y` holds that many nodes (checked in `SharedSink::new`);
                // exclusive, since the sink is only used for the blocks of one colour at a
                // time, which share no node, so no other thread touches node `j`.
                unsafe { *self.y.add(j as usize * nc + comp) += ri[l] };
            }
        }
    }
}

/// `y[n, c] = Σ` of the E-vector entries of node `n`, component `c` (overwrites `y`).
pub(crate) fn sum_by_node<T: Real>(
    t: &TransposeMap,
    nodes: usize,
    ncomp: usize,
    evec: &[T],
    y: &mut [T],
) {
    y.par_chunks_mut(ncomp * NODES_PER_TASK)
        .enumerate()
        .for_each(|(chunk, ys)| {
            let n0 = chunk * NODES_PER_TASK;
            for (k, yn) in ys.chunks_exact_mut(ncomp).enumerate() {
                let n = n0 + k;
                let ent = &t.entries[t.node_offsets[n] as usize..t.node_offsets[n + 1] as usize];
                if ncomp == 1 {
                    yn[0] = ent.iter().map(|&p| evec[p as usize]).sum();
                } else {
                    for (c, yc) in yn.iter_mut().enumerate() {
                        *yc = ent
                            .iter()
                            .map(|&p| {
                                let (e, i) = (p as usize / nodes, p as usize % nodes);
                                evec[(e * ncomp + c) * nodes + i]
                            })
                            .sum();
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_colours_share_no_node() {
        // a 1-D chain of 40 two-node elements
        let offsets: Vec<u32> = (0..40u32).flat_map(|e| [e, e + 1]).collect();
        let r = ElemRestriction::new(2, 1, 41, offsets);
        let t = r.transpose();
        for len in [1, 3, 8] {
            let bc = BlockColoring::new(&r, &t, len);
            assert_eq!(bc.colors.len(), 2, "a chain of blocks needs two colours");
            let total: usize = bc.colors.iter().map(|c| c.len()).sum();
            assert_eq!(total, 40usize.div_ceil(len));
            for col in &bc.colors {
                let mut seen = [false; 41];
                for &b in col {
                    let mut mine: Vec<u32> = bc
                        .block(b as usize)
                        .flat_map(|e| r.elem(e).to_vec())
                        .collect();
                    mine.sort_unstable();
                    mine.dedup();
                    for n in mine {
                        assert!(!seen[n as usize]);
                        seen[n as usize] = true;
                    }
                }
            }
        }
    }
}
