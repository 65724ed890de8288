//! Race-free parallel summation of element vectors into a global L-vector (`Eᵀ`), in three
//! selectable strategies:
//!
//! - [`Accumulation::Coloring`]: the cells are coloured so that cells of one colour share
//!   no vertex; colours run one after another, the cells of a colour in parallel, each
//!   adding its element vector straight into the L-vector.
//! - [`Accumulation::PerThread`]: each of the `n` rayon threads takes a contiguous range of
//!   cells and accumulates into its own copy of the L-vector; the copies are then summed
//!   in parallel over index blocks.
//! - [`Accumulation::ElementVectors`]: all element vectors are written to an E-vector
//!   buffer, then each global dof sums its entries through the transposed restriction
//!   (grouped by node). Race-free, deterministic, independent of the thread count.

use ferrofem_base::Real;
use ferrofem_mesh::Mesh;
use ferrofem_space::ElemRestriction;
use rayon::prelude::*;
use std::sync::{Mutex, OnceLock};

/// Elements handed to one rayon task (and sharing one scratch allocation).
const CHUNK: usize = 256;
/// L-vector entries per task of the reductions and the by-node gather.
const BLOCK: usize = 1 << 13;

/// How a [`FormOperator`](crate::FormOperator) sums element contributions into global
/// vectors in parallel without races. All three give the same result up to rounding.
///
/// - `Coloring`: cells of one colour share no vertex (hence no dof), so a colour's cells
///   run in parallel and add straight into the global vector; colours run in sequence.
///   Reproducible, no extra memory, but each colour pass strides through the whole mesh
///   (poor locality: the slowest on the CPU, measured 2-3× behind the others).
/// - `PerThread`: each of the `n` rayon threads takes a contiguous range of cells and
///   accumulates into its own L-vector, then the copies are summed in parallel. Extra
///   memory `(n - 1)` L-vectors; static split; reproducible for a fixed thread count.
/// - `ElementVectors` (default): element vectors go to an E-vector buffer in parallel
///   chunks (dynamically balanced), then each dof sums its entries through the
///   transposed restriction. Extra memory one E-vector; bit-for-bit reproducible for any
///   thread count; as fast as `PerThread` in the measurements (P1 tetrahedra, Q2
///   hexahedra, 2 threads).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Accumulation {
    /// Colour classes one after another, the cells of a class in parallel, writing
    /// directly into the global vector.
    Coloring,
    /// One L-vector per thread, then a parallel reduction.
    PerThread,
    /// Element vectors into an E-vector buffer, then a gather by node through the
    /// transposed restriction.
    #[default]
    ElementVectors,
}

impl Accumulation {
    /// All strategies, for benchmarks and tests.
    pub const ALL: [Accumulation; 3] = [
        Accumulation::Coloring,
        Accumulation::PerThread,
        Accumulation::ElementVectors,
    ];

    /// Lower-case name used in benchmark records (`coloring`, `per-thread`, `element-vectors`).
    pub const fn name(self) -> &'static str {
        match self {
            Accumulation::Coloring => "coloring",
            Accumulation::PerThread => "per-thread",
            Accumulation::ElementVectors => "element-vectors",
        }
    }
}

/// Per-task scratch of the element loops: gathered coefficients of up to two fields.
pub(crate) struct Scratch<T> {
    /// First field (the state `u`, or the direction `v` of a Jacobian action).
    pub ue: Vec<T>,
    /// Second field.
    pub ve: Vec<T>,
}

/// Cells grouped by colour, checked against the restriction (no two cells of one colour
/// share a node).
#[derive(Clone, Debug)]
struct ColorGroups {
    offsets: Vec<usize>,
    cells: Vec<u32>,
}

impl ColorGroups {
    /// The mesh's colouring, if it really separates the nodes of `r` within each colour.
    fn new(mesh: &Mesh, r: &ElemRestriction) -> Option<ColorGroups> {
        let col = mesh.color_cells();
        if col.cells.len() != r.num_elem() {
            return None;
        }
        let offsets: Vec<usize> = col.offsets.iter().map(|&o| o as usize).collect();
        let mut mark = vec![u32::MAX; r.num_nodes()];
        for k in 0..col.num_colors {
            for &c in &col.cells[offsets[k]..offsets[k + 1]] {
                if c as usize >= r.num_elem() {
                    return None;
                }
                for &n in r.elem(c as usize) {
                    if mark[n as usize] == k as u32 {
                        return None;
                    }
                    mark[n as usize] = k as u32;
                }
            }
        }
        Some(ColorGroups {
            offsets,
            cells: col.cells,
        })
    }
}

/// The transposed restriction with E-vector offsets: node `n` collects
/// `evec[index[j] + c * nb]` for `j` in `offsets[n]..offsets[n + 1]` and component `c`.
#[derive(Clone, Debug)]
struct NodeGather {
    offsets: Vec<u32>,
    index: Vec<u32>,
}

/// A raw pointer into the global vector shared by the tasks of one colour.
#[derive(Clone, Copy)]
struct SharedVec<T>(*mut T);
// SAFETY: the pointer is only dereferenced in `Accumulator::run_coloring`, where tasks
// running at the same time write to disjoint entries (see there).
unsafe impl<T: Send> Send for SharedVec<T> {}
unsafe impl<T: Send> Sync for SharedVec<T> {}

impl<T> SharedVec<T> {
    /// The pointer (a method, so that closures capture the `Sync` wrapper, not the field).
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// The accumulation machinery of one operator: strategy, colouring, transposed
/// restriction and reusable buffers.
pub(crate) struct Accumulator<T> {
    strategy: Accumulation,
    colors: Option<ColorGroups>,
    gather: OnceLock<Option<NodeGather>>,
    thread_buffers: Mutex<Vec<Vec<T>>>,
    evec: Mutex<Vec<T>>,
}

impl<T: Real> Accumulator<T> {
    /// An accumulator using `strategy`; colours `mesh` when the strategy needs it.
    pub fn new(strategy: Accumulation, mesh: &Mesh, r: &ElemRestriction) -> Accumulator<T> {
        let mut a = Accumulator {
            strategy,
            colors: None,
            gather: OnceLock::new(),
            thread_buffers: Mutex::new(Vec::new()),
            evec: Mutex::new(Vec::new()),
        };
        a.set_strategy(strategy, mesh, r);
        a
    }

    /// The strategy in use.
    pub fn strategy(&self) -> Accumulation {
        self.strategy
    }

    /// Switches strategy (colouring the mesh on first use of [`Accumulation::Coloring`]).
    pub fn set_strategy(&mut self, strategy: Accumulation, mesh: &Mesh, r: &ElemRestriction) {
        if strategy == Accumulation::Coloring && self.colors.is_none() {
            self.colors = ColorGroups::new(mesh, r);
        }
        self.strategy = strategy;
    }

    /// Number of colours (when colouring is set up).
    pub fn num_colors(&self) -> Option<usize> {
        self.colors.as_ref().map(|c| c.offsets.len() - 1)
    }

    fn node_gather(&self, r: &ElemRestriction) -> Option<&NodeGather> {
        ferrofem_base::lazy::get_or_compute(&self.gather, || {
            let esize = r.ncomp() * r.elem_size();
            if r.num_elem().checked_mul(esize)? > u32::MAX as usize {
                return None;
            }
            let t = r.transpose();
            let nb = r.elem_size();
            let index = t
                .entries
                .iter()
                .map(|&pos| {
                    let pos = pos as usize;
                    ((pos / nb) * esize + pos % nb) as u32
                })
                .collect();
            Some(NodeGather {
                offsets: t.node_offsets,
                index,
            })
        })
        .as_ref()
    }

    /// `out = Σ_e Eᵀ k_e`, where `kernel(e, scratch, k_e)` overwrites the element vector
    /// `k_e` (`[comp][node]`) of element `e`.
    pub fn run<F>(&self, r: &ElemRestriction, out: &mut [T], kernel: F)
    where
        F: Fn(usize, &mut Scratch<T>, &mut [T]) + Sync,
    {
        assert_eq!(out.len(), r.lvec_len(), "global vector length");
        let strategy = match self.strategy {
            Accumulation::Coloring if self.colors.is_none() => Accumulation::ElementVectors,
            s => s,
        };
        let strategy = match strategy {
            Accumulation::ElementVectors if self.node_gather(r).is_none() => {
                Accumulation::PerThread
            }
            s => s,
        };
        match strategy {
            Accumulation::Coloring => self.run_coloring(r, out, &kernel),
            Accumulation::PerThread => self.run_per_thread(r, out, &kernel),
            Accumulation::ElementVectors => self.run_element_vectors(r, out, &kernel),
        }
    }

    fn scratch(r: &ElemRestriction) -> (Scratch<T>, Vec<T>) {
        let esize = r.ncomp() * r.elem_size();
        (
            Scratch {
                ue: vec![T::zero(); esize],
                ve: vec![T::zero(); esize],
            },
            vec![T::zero(); esize],
        )
    }

    fn run_coloring<F>(&self, r: &ElemRestriction, out: &mut [T], kernel: &F)
    where
        F: Fn(usize, &mut Scratch<T>, &mut [T]) + Sync,
    {
        let Some(colors) = &self.colors else {
            return self.run_element_vectors(r, out, kernel);
        };
        out.fill(T::zero());
        let nc = r.ncomp();
        let nb = r.elem_size();
        let len = out.len();
        let shared = SharedVec(out.as_mut_ptr());
        for k in 0..colors.offsets.len() - 1 {
            let cells = &colors.cells[colors.offsets[k]..colors.offsets[k + 1]];
            cells.par_chunks(CHUNK).for_each(|chunk| {
                let (mut s, mut ev) = Self::scratch(r);
                for &e in chunk {
                    let e = e as usize;
                    kernel(e, &mut s, &mut ev);
                    for (i, &n) in r.elem(e).iter().enumerate() {
                        let base = n as usize * nc;
                        for c in 0..nc {
                            debug_assert!(base + c < len);
                            // SAFETY: `base + c < len` because every offset of the
                            // restriction is below `num_nodes` (checked when it was built)
                            // and `len == num_nodes * nc` (asserted in `run`), so the write
                            // is inside `out`, which outlives this loop (it is borrowed
                            // mutably for the whole call). No other task writes this entry
                            // concurrently: all tasks running now handle cells of colour
                            // `k`, and `ColorGroups::new` checked that no two cells of one
                            // colour have a node in common; colours are separated by the
                            // implicit barrier at the end of `for_each`. Nothing reads
                            // `out` during the loop.
                            unsafe {
                                *shared.get().add(base + c) += ev[c * nb + i];
                            }
                        }
                    }
                }
            });
        }
    }

    fn run_per_thread<F>(&self, r: &ElemRestriction, out: &mut [T], kernel: &F)
    where
        F: Fn(usize, &mut Scratch<T>, &mut [T]) + Sync,
    {
        let nt = rayon::current_num_threads().max(1);
        let ne = r.num_elem();
        let per = ne.div_ceil(nt).max(1);
        let n = out.len();
        let mut pool = self
            .thread_buffers
            .try_lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        pool.resize_with(nt - 1, Vec::new);
        for b in pool.iter_mut() {
            if b.len() != n {
                *b = vec![T::zero(); n];
            }
        }
        {
            let mut targets: Vec<&mut [T]> = Vec::with_capacity(nt);
            targets.push(&mut *out);
            targets.extend(pool.iter_mut().map(|b| b.as_mut_slice()));
            targets.into_par_iter().enumerate().for_each(|(t, target)| {
                target.fill(T::zero());
                let (mut s, mut ev) = Self::scratch(r);
                for e in (t * per).min(ne)..((t + 1) * per).min(ne) {
                    kernel(e, &mut s, &mut ev);
                    r.scatter_add_elem(e, &ev, target);
                }
            });
        }
        if !pool.is_empty() {
            out.par_chunks_mut(BLOCK).enumerate().for_each(|(blk, o)| {
                let start = blk * BLOCK;
                let end = start + o.len();
                for b in &pool {
                    for (x, &y) in o.iter_mut().zip(&b[start..end]) {
                        *x += y;
                    }
                }
            });
        }
        if let Ok(mut g) = self.thread_buffers.try_lock() {
            *g = pool;
        }
    }

    fn run_element_vectors<F>(&self, r: &ElemRestriction, out: &mut [T], kernel: &F)
    where
        F: Fn(usize, &mut Scratch<T>, &mut [T]) + Sync,
    {
        let Some(gather) = self.node_gather(r) else {
            return self.run_per_thread(r, out, kernel);
        };
        let esize = r.ncomp() * r.elem_size();
        let len = r.num_elem() * esize;
        let mut evec = self
            .evec
            .try_lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default();
        if evec.len() != len {
            evec = vec![T::zero(); len];
        }
        evec.par_chunks_mut(CHUNK * esize.max(1))
            .enumerate()
            .for_each(|(blk, chunk)| {
                let (mut s, _) = Self::scratch(r);
                for (j, ev) in chunk.chunks_exact_mut(esize).enumerate() {
                    kernel(blk * CHUNK + j, &mut s, ev);
                }
            });
        let nc = r.ncomp();
        let nb = r.elem_size();
        let nodes_per_task = (BLOCK / nc.max(1)).max(1);
        let ev = &evec;
        out.par_chunks_mut(nodes_per_task * nc)
            .enumerate()
            .for_each(|(blk, o)| {
                let first = blk * nodes_per_task;
                for (m, on) in o.chunks_exact_mut(nc).enumerate() {
                    let n = first + m;
                    let (a, b) = (gather.offsets[n] as usize, gather.offsets[n + 1] as usize);
                    for c in 0..nc {
                        let mut s = T::zero();
                        for &p in &gather.index[a..b] {
                            s += ev[p as usize + c * nb];
                        }
                        on[c] = s;
                    }
                }
            });
        if let Ok(mut g) = self.evec.try_lock() {
            *g = evec;
        }
    }
}
