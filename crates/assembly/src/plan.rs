//! The assembly plan: everything about a global assembly that depends only on the mesh
//! connectivity and the boundary dofs, computed once and reused for every assembly (for
//! example every Newton step).
//!
//! The central piece is the *element → nonzero map* of Cecka, Lew and Darve (2011,
//! §4.1.3): for every element `e` and local entry `(i, j)` of its `n × n` matrix, the
//! position of the global entry in the CSR value array (a `u32`, or [`NO_TARGET`] when the
//! row or the column is an eliminated Dirichlet dof). It is computed by binary searches in
//! the sorted CSR rows (one per local node pair, the components following from the block
//! structure), in parallel over elements. Its inverse, the element entries that
//! add up to each nonzero (the "reduction lists" of §4.2.3), is built on first use by the
//! by-nonzero strategy.

use crate::blocks::{par_new_chunks, split_rows, try_alloc, ROW_BLOCK};
use crate::dirichlet::CONSTRAINED;
use crate::sparsity::NodeGraph;
use crate::{AssemblyError, DofMap, ElementColoring, SparsityPattern};
use ferrofem_base::memory::Bytes;
use ferrofem_base::Real;
use ferrofem_space::{ElemRestriction, TransposeMap};
use rayon::prelude::*;
use std::any::Any;
use std::sync::{Mutex, OnceLock};

/// Entry of the element → nonzero map for an element entry that is not assembled (its row
/// or column is a constrained dof).
pub const NO_TARGET: u32 = u32::MAX;

/// For every nonzero `k` of the pattern, the element entries that sum to it, as indices
/// into the element-data buffer (`e * data_stride + i * n + j`): `src[ptr[k]..ptr[k + 1]]`,
/// in increasing element order.
#[derive(Clone, Debug)]
pub(crate) struct NonzeroSources {
    pub(crate) ptr: Vec<u32>,
    pub(crate) src: Vec<u32>,
}

/// The reusable, connectivity-only part of assembling matrices on one restriction.
///
/// Owns a copy of the restriction it was built for (assembly checks that the element
/// matrices use the same one), the optional dof map of eliminated Dirichlet dofs, the
/// sparsity pattern (in reduced numbering when there is a map), the node → element
/// transpose, the element → nonzero map and, created on demand, the element colouring and
/// the nonzero → element-entries map. Assembled matrices are new objects owned by the
/// caller; [`AssemblyPlan::assemble_matrix_into`] refills one in place. The buffered
/// strategies keep their element-data buffer in the plan between calls
/// ([`AssemblyPlan::release_scratch`] frees it).
///
/// A plan is `Sync`: several threads may assemble with it at once.
pub struct AssemblyPlan {
    pub(crate) restriction: ElemRestriction,
    pub(crate) map: Option<DofMap>,
    pub(crate) pattern: SparsityPattern,
    pub(crate) transpose: TransposeMap,
    pub(crate) targets: Vec<u32>,
    pub(crate) coloring: OnceLock<ElementColoring>,
    pub(crate) sources: OnceLock<Result<NonzeroSources, AssemblyError>>,
    pub(crate) batch_bytes: usize,
    pub(crate) batches: OnceLock<Batches>,
    /// The element-data buffer of the last buffered assembly (a `Vec<T>`), kept so that
    /// repeated assemblies do not fault in fresh pages every time.
    scratch: Mutex<Option<Box<dyn Any + Send>>>,
}

/// Nodes whose neighbourhoods are counted exactly to estimate the nonzeros of a pattern.
const NNZ_SAMPLE: usize = 1024;

/// The memory an [`AssemblyPlan`] and the matrices assembled with it take, estimated from
/// the restriction before any of it is allocated ([`AssemblyPlan::estimate`]).
///
/// The nonzeros are counted exactly on an evenly spaced sample of nodes (every node of
/// small meshes) and scaled to all nodes; the plan's bytes are then
///
/// - the node → element transpose and the plan's copy of the restriction:
///   `4 (2 E s + N)` for `E` elements of `s` nodes and `N` nodes;
/// - the node graph, built in blocks and then joined (twice its `4 nnz_N` bytes at the
///   peak) with its offsets: `8 nnz_N + 16 N`, `nnz_N = nnz / c²` for `c` components;
/// - the pattern: row lengths, offsets (`16 rows`) and column indices (`4 nnz`);
/// - the element → nonzero map: `4 E n²` for element matrices of `n = c s` rows.
///
/// A matrix adds its own copy of the pattern and the values: `8 rows + (4 + b) nnz` for
/// `b`-byte scalars ([`PlanEstimate::matrix_bytes`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanEstimate {
    /// Rows (and columns) of the assembled matrix: all dofs, or the free ones.
    pub rows: usize,
    /// Nonzeros of the assembled matrix (exact when every node was sampled).
    pub nnz: u64,
    /// Bytes of building and keeping the plan (see the type's documentation).
    pub plan_bytes: u64,
}

impl PlanEstimate {
    /// The estimate for `r` (with its transpose `t`) and the optional map of eliminated
    /// dofs (`None` or unconstrained: the full system).
    fn new(r: &ElemRestriction, t: &TransposeMap, map: Option<&DofMap>) -> PlanEstimate {
        let (s, nc, nn, ne) = (r.elem_size(), r.ncomp(), r.num_nodes(), r.num_elem());
        let map = map.filter(|m| !m.is_unconstrained());
        let rows = map.map_or(r.lvec_len(), |m| m.num_free());
        let free = |node: usize| -> u64 {
            map.map_or(nc as u64, |m| {
                m.reduced_of()[node * nc..(node + 1) * nc]
                    .iter()
                    .filter(|&&d| d != CONSTRAINED)
                    .count() as u64
            })
        };
        let samples = nn.min(NNZ_SAMPLE);
        let mut scratch: Vec<u32> = Vec::new();
        let (mut graph_sum, mut nnz_sum) = (0u64, 0u64);
        for k in 0..samples {
            let node = k * nn / samples;
            scratch.clear();
            let (a, z) = (
                t.node_offsets[node] as usize,
                t.node_offsets[node + 1] as usize,
            );
            for &pos in &t.entries[a..z] {
                scratch.extend_from_slice(r.elem(pos as usize / s));
            }
            scratch.sort_unstable();
            scratch.dedup();
            graph_sum += scratch.len() as u64;
            let row_len: u64 = scratch.iter().map(|&m| free(m as usize)).sum();
            nnz_sum += free(node) * row_len;
        }
        let scale = |sum: u64| -> u64 {
            if samples == 0 {
                0
            } else {
                (sum as f64 * nn as f64 / samples as f64).round() as u64
            }
        };
        let (graph_nnz, nnz) = (scale(graph_sum), scale(nnz_sum));
        let n = (nc * s) as u64;
        let (ne, s, nn, rows64) = (ne as u64, s as u64, nn as u64, rows as u64);
        let plan_bytes = Bytes::array::<u32>(ne.saturating_mul(s).saturating_mul(2) + nn)
            + Bytes::array::<u32>(graph_nnz).times(2)
            + Bytes::array::<usize>(nn).times(2)
            + Bytes::array::<usize>(rows64).times(2)
            + Bytes::array::<u32>(nnz)
            + Bytes::array::<u32>(ne.saturating_mul(n).saturating_mul(n));
        PlanEstimate {
            rows,
            nnz,
            plan_bytes: plan_bytes.0,
        }
    }

    /// Bytes of one matrix assembled with the plan, with `scalar_bytes`-byte values: its
    /// row offsets, column indices and values.
    pub fn matrix_bytes(&self, scalar_bytes: usize) -> u64 {
        matrix_bytes(self.rows, self.nnz, scalar_bytes)
    }

    /// Refuses the plan and one matrix of `scalar_bytes`-byte values when they exceed the
    /// available memory ([`ferrofem_base::check_fits`]).
    pub fn check(&self, scalar_bytes: usize) -> Result<(), AssemblyError> {
        self.check_in(scalar_bytes, ferrofem_base::available_memory())
    }

    /// [`PlanEstimate::check`] against a given amount of available memory.
    pub fn check_in(
        &self,
        scalar_bytes: usize,
        available: Option<u64>,
    ) -> Result<(), AssemblyError> {
        let needed = (Bytes(self.plan_bytes) + Bytes(self.matrix_bytes(scalar_bytes))).0;
        ferrofem_base::memory::fits(
            &format!(
                "the assembled matrix ({} rows, about {} nonzeros) and its assembly plan",
                self.rows, self.nnz
            ),
            needed,
            available,
        )
        .map_err(|e| {
            e.with_remedy(
                "use a matrix-free solver, or a smaller problem (fewer cells or a lower order)",
            )
            .into()
        })
    }
}

/// Bytes of a CSR matrix of `rows` rows and `nnz` nonzeros with `scalar_bytes`-byte values.
fn matrix_bytes(rows: usize, nnz: u64, scalar_bytes: usize) -> u64 {
    (Bytes::array::<usize>(rows as u64 + 1) + Bytes::of(nnz, 4 + scalar_bytes as u64)).0
}

/// Default size of the element-data buffer of one batch of the by-row strategy: meant to
/// stay in the last-level cache between computing and summing (the fastest of 4 MiB,
/// 32 MiB and unbatched on a 16-core Xeon with 300 MiB L3; smaller batches pay more
/// per-batch synchronisation).
pub const DEFAULT_BATCH_BYTES: usize = 32 << 20;

/// The element batches of the by-row strategy: consecutive runs of `per_batch` elements,
/// and for batch `b` the nodes its elements touch, `nodes[ptr[b]..ptr[b + 1]]` (sorted,
/// unique).
#[derive(Clone, Debug)]
pub(crate) struct Batches {
    pub(crate) per_batch: usize,
    pub(crate) ptr: Vec<usize>,
    pub(crate) nodes: Vec<u32>,
}

impl std::fmt::Debug for AssemblyPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssemblyPlan")
            .field("num_elem", &self.restriction.num_elem())
            .field("element_matrix_size", &self.element_matrix_size())
            .field("nrows", &self.pattern.nrows())
            .field("nnz", &self.pattern.nnz())
            .field(
                "eliminated",
                &self.map.as_ref().map_or(0, |m| m.constrained().len()),
            )
            .field("batch_bytes", &self.batch_bytes)
            .finish_non_exhaustive()
    }
}

impl AssemblyPlan {
    /// The plan for the full system on all dofs of `r` (`map` is `None` or has no
    /// constrained dofs) or for the reduced system on the free dofs of `map`.
    pub fn new(r: &ElemRestriction, map: Option<&DofMap>) -> Result<AssemblyPlan, AssemblyError> {
        if let Some(m) = map {
            crate::dirichlet::check_len("dof map", r.lvec_len(), m.num_dofs())?;
        }
        let map = map.filter(|m| !m.is_unconstrained()).cloned();
        let transpose = r.transpose();
        // refused before the node graph, the pattern and the maps are allocated
        PlanEstimate::new(r, &transpose, map.as_ref()).check(8)?;
        let graph = NodeGraph::new(r, &transpose);
        let pattern = SparsityPattern::from_graph(r, &graph, map.as_ref())?;
        drop(graph);
        let n = r.ncomp() * r.elem_size();
        let len = r
            .num_elem()
            .checked_mul(n * n)
            .ok_or(AssemblyError::TooLarge {
                what: "element matrix entries",
                count: usize::MAX,
            })?;
        // with the exact pattern: the element -> nonzero map and one matrix still to come
        ferrofem_base::check_fits(
            &format!(
                "the element -> nonzero map and the matrix ({} nonzeros)",
                pattern.nnz()
            ),
            (Bytes::array::<u32>(len as u64)
                + Bytes(matrix_bytes(pattern.nrows(), pattern.nnz() as u64, 8)))
            .0,
        )?;
        let targets = if len > 0 {
            compute_targets(r, map.as_ref(), &pattern)?
        } else {
            Vec::new()
        };
        Ok(AssemblyPlan {
            restriction: r.clone(),
            map,
            pattern,
            transpose,
            targets,
            coloring: OnceLock::new(),
            sources: OnceLock::new(),
            batch_bytes: DEFAULT_BATCH_BYTES,
            batches: OnceLock::new(),
            scratch: Mutex::new(None),
        })
    }

    /// The memory this plan and one matrix assembled with it will take, estimated before
    /// any of it is allocated (the node → element transpose is built for it).
    pub fn estimate(
        r: &ElemRestriction,
        map: Option<&DofMap>,
    ) -> Result<PlanEstimate, AssemblyError> {
        if let Some(m) = map {
            crate::dirichlet::check_len("dof map", r.lvec_len(), m.num_dofs())?;
        }
        let map = map.filter(|m| !m.is_unconstrained());
        Ok(PlanEstimate::new(r, &r.transpose(), map))
    }

    /// Sets the size of the element-data buffer per batch of the by-row strategy (in bytes
    /// of `f64` data; at least one element per batch). A tuning knob for benchmarks.
    pub fn with_batch_bytes(self, bytes: usize) -> AssemblyPlan {
        AssemblyPlan {
            batch_bytes: bytes,
            batches: OnceLock::new(),
            ..self
        }
    }

    /// Uses `coloring` (checked against this plan's restriction) for the coloured strategy
    /// instead of the greedy colouring made on demand.
    pub fn with_coloring(self, coloring: ElementColoring) -> Result<AssemblyPlan, AssemblyError> {
        coloring.validate(&self.restriction)?;
        let coloring = OnceLock::from(coloring);
        Ok(AssemblyPlan { coloring, ..self })
    }

    /// The restriction the plan was built for.
    pub fn restriction(&self) -> &ElemRestriction {
        &self.restriction
    }
    /// The dof map of eliminated dofs, `None` for the full system.
    pub fn dof_map(&self) -> Option<&DofMap> {
        self.map.as_ref()
    }
    /// The sparsity pattern of the assembled matrices.
    pub fn pattern(&self) -> &SparsityPattern {
        &self.pattern
    }
    /// Rows (and columns) of the assembled matrix: all dofs, or the free ones.
    pub fn nrows(&self) -> usize {
        self.pattern.nrows()
    }
    /// Rows of each element matrix: `ncomp * elem_size`.
    pub fn element_matrix_size(&self) -> usize {
        self.restriction.ncomp() * self.restriction.elem_size()
    }
    /// The element → nonzero map: entry `(e * n + i) * n + j` is the position in the CSR
    /// value array that entry `(i, j)` of element `e`'s matrix adds to, or [`NO_TARGET`].
    /// (The GPU assembly kernels take it as input.)
    pub fn targets(&self) -> &[u32] {
        &self.targets
    }
    /// The node → element transpose of the restriction (the by-row strategies' input).
    pub fn transpose(&self) -> &TransposeMap {
        &self.transpose
    }
    /// The nonzero → element-entries map of the by-nonzero strategy (built on first use):
    /// `(ptr, src)`, nonzero `k` summing the element-data entries `src[ptr[k]..ptr[k + 1]]`
    /// in increasing element order, entry `(i, j)` of element `e` at `e * (n² + n) + i n + j`
    /// (the element data hold each matrix followed by its right-hand side).
    pub fn nonzero_sources(&self) -> Result<(&[u32], &[u32]), AssemblyError> {
        let s = self.sources()?;
        Ok((&s.ptr, &s.src))
    }
    /// The colouring used by the coloured strategy (greedy unless one was given).
    pub fn coloring(&self) -> &ElementColoring {
        ferrofem_base::lazy::get_or_compute(&self.coloring, || {
            ElementColoring::greedy(&self.restriction)
        })
    }

    /// Row index (full or reduced) of local dof `i` of element `e`, or [`CONSTRAINED`].
    #[inline]
    pub(crate) fn row_of(&self, e: usize, i: usize) -> u32 {
        let s = self.restriction.elem_size();
        let nc = self.restriction.ncomp();
        let full = self.restriction.elem(e)[i % s] as usize * nc + i / s;
        match &self.map {
            None => full as u32,
            Some(m) => m.reduced_of()[full],
        }
    }

    /// Full dof index of (full or reduced) row `row`.
    #[inline]
    pub(crate) fn full_dof(&self, row: usize) -> usize {
        match &self.map {
            None => row,
            Some(m) => m.free()[row] as usize,
        }
    }

    /// Frees the element-data buffer that buffered strategies keep between assemblies
    /// (up to [`DEFAULT_BATCH_BYTES`] for by-row, all element matrices for by-nonzero).
    pub fn release_scratch(&self) {
        *self.scratch.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// A buffer of `len` entries, reusing the kept one when it has the right type and room.
    /// Its contents are unspecified (callers overwrite what they read).
    pub(crate) fn take_scratch<T: Real>(
        &self,
        len: usize,
        what: &'static str,
    ) -> Result<Vec<T>, AssemblyError> {
        let kept = self
            .scratch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(b) = kept {
            if let Ok(mut v) = b.downcast::<Vec<T>>() {
                if v.capacity() >= len {
                    v.resize(len, T::zero());
                    return Ok(*v);
                }
            }
        }
        let mut v = try_alloc::<T>(len, what)?;
        // zeroed in parallel: the pages are first touched by many threads
        v.par_extend(rayon::iter::repeat_n(T::zero(), len));
        Ok(v)
    }

    /// Keeps `v` for the next buffered assembly.
    pub(crate) fn keep_scratch<T: Real>(&self, v: Vec<T>) {
        *self.scratch.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(v));
    }

    /// The element batches of the by-row strategy, built on first use.
    pub(crate) fn batches(&self) -> &Batches {
        ferrofem_base::lazy::get_or_compute(&self.batches, || {
            let r = &self.restriction;
            let per_batch = (self.batch_bytes / (self.data_stride() * 8)).max(1);
            let nb = r.num_elem().div_ceil(per_batch);
            let lists: Vec<Vec<u32>> = (0..nb)
                .into_par_iter()
                .map(|b| {
                    let e0 = b * per_batch;
                    let e1 = (e0 + per_batch).min(r.num_elem());
                    let mut v = r.offsets()[e0 * r.elem_size()..e1 * r.elem_size()].to_vec();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect();
            let mut ptr = Vec::with_capacity(nb + 1);
            ptr.push(0);
            for l in &lists {
                ptr.push(ptr[ptr.len() - 1] + l.len());
            }
            Batches {
                per_batch,
                ptr,
                nodes: lists.concat(),
            }
        })
    }

    /// The nonzero → element-entries map, built on first use.
    pub(crate) fn sources(&self) -> Result<&NonzeroSources, AssemblyError> {
        ferrofem_base::lazy::get_or_compute(&self.sources, || self.build_sources())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Calls `f(e, i)` for every element `e` and local dof `i` whose row is matrix row
    /// `row`, in increasing element order.
    #[inline]
    pub(crate) fn for_each_row_source(&self, row: usize, mut f: impl FnMut(usize, usize)) {
        let r = &self.restriction;
        let (s, nc) = (r.elem_size(), r.ncomp());
        let full = self.full_dof(row);
        let (node, c) = (full / nc, full % nc);
        let t = &self.transpose;
        let (a, z) = (
            t.node_offsets[node] as usize,
            t.node_offsets[node + 1] as usize,
        );
        for &pos in &t.entries[a..z] {
            let pos = pos as usize;
            f(pos / s, c * s + pos % s);
        }
    }

    /// Entries per element in the element-data buffer of the buffered strategies: the
    /// `n × n` matrix followed by the `n` right-hand-side entries.
    pub(crate) fn data_stride(&self) -> usize {
        let n = self.element_matrix_size();
        n * n + n
    }

    fn build_sources(&self) -> Result<NonzeroSources, AssemblyError> {
        let n = self.element_matrix_size();
        let stride = self.data_stride();
        let data_len = self.restriction.num_elem() * stride;
        if data_len >= u32::MAX as usize {
            return Err(AssemblyError::TooLarge {
                what: "element data entries (for the by-nonzero reduction lists)",
                count: data_len,
            });
        }
        let row_ptr = self.pattern.row_ptr();
        let nnz = self.pattern.nnz();
        // pass 1: count the contributions of every nonzero, row by row
        let mut counts = vec![0u32; nnz];
        split_rows(&mut counts, row_ptr, ROW_BLOCK)
            .into_par_iter()
            .for_each(|(rows, cnt)| {
                let start = row_ptr[rows.start];
                for row in rows {
                    self.for_each_row_source(row, |e, i| {
                        let base = (e * n + i) * n;
                        for &k in &self.targets[base..base + n] {
                            if k != NO_TARGET {
                                cnt[k as usize - start] += 1;
                            }
                        }
                    });
                }
            });
        let mut ptr = Vec::with_capacity(nnz + 1);
        let mut acc = 0u32;
        ptr.push(0);
        for &c in &counts {
            acc += c;
            ptr.push(acc);
        }
        drop(counts);
        // pass 2: fill, per row block, in increasing element order
        let row_src: Vec<usize> = row_ptr.iter().map(|&p| ptr[p] as usize).collect();
        let mut src = try_alloc::<u32>(acc as usize, "the nonzero -> element-entries map")?;
        src.resize(acc as usize, 0);
        split_rows(&mut src, &row_src, ROW_BLOCK)
            .into_par_iter()
            .for_each(|(rows, out)| {
                let base_out = row_src[rows.start];
                let mut cursor: Vec<u32> = Vec::new();
                for row in rows {
                    let (k0, k1) = (row_ptr[row], row_ptr[row + 1]);
                    cursor.clear();
                    cursor.extend_from_slice(&ptr[k0..k1]);
                    self.for_each_row_source(row, |e, i| {
                        let base = (e * n + i) * n;
                        let data = e * stride + i * n;
                        for (j, &k) in self.targets[base..base + n].iter().enumerate() {
                            if k != NO_TARGET {
                                let slot = &mut cursor[k as usize - k0];
                                out[*slot as usize - base_out] = (data + j) as u32;
                                *slot += 1;
                            }
                        }
                    });
                }
            });
        Ok(NonzeroSources { ptr, src })
    }
}

/// Fills the element → nonzero map by binary search in the sorted rows of `pattern`.
///
/// Uses the block structure of the pattern: all free dofs of a node have the same columns
/// (those of the node's neighbours), and the free dofs of a node are consecutive in the
/// (full or reduced, node-major and monotone) numbering. So one binary search per local
/// node pair `(a, b)` finds where node `b`'s columns start in node `a`'s rows, and the
/// component offsets follow by counting.
fn compute_targets(
    r: &ElemRestriction,
    map: Option<&DofMap>,
    pattern: &SparsityPattern,
) -> Result<Vec<u32>, AssemblyError> {
    let (s, nc) = (r.elem_size(), r.ncomp());
    let n = nc * s;
    let row_ptr = pattern.row_ptr();
    par_new_chunks(
        r.num_elem() * n * n,
        n * n,
        0u32,
        "the element -> nonzero map",
        || (vec![0u32; n], vec![0u32; n], vec![0u32; s * s]),
        |(dofs, rank, block), e, out| {
            let nodes = r.elem(e);
            // dofs[c * s + a]: row/column index of component c of local node a
            for (i, d) in dofs.iter_mut().enumerate() {
                let full = nodes[i % s] as usize * nc + i / s;
                *d = map.map_or(full as u32, |m| m.reduced_of()[full]);
            }
            // rank[c * s + b]: free components of node b before c; first free dof per node
            let first = |a: usize| (0..nc).map(|c| dofs[c * s + a]).find(|&d| d != CONSTRAINED);
            for b in 0..s {
                let mut k = 0;
                for c in 0..nc {
                    rank[c * s + b] = k;
                    if dofs[c * s + b] != CONSTRAINED {
                        k += 1;
                    }
                }
            }
            // block[a * s + b]: where node b's columns start in the rows of node a
            for a in 0..s {
                let Some(fa) = first(a) else { continue };
                let cols = pattern.row(fa as usize);
                for b in 0..s {
                    if let Some(fb) = first(b) {
                        block[a * s + b] = match cols.binary_search(&fb) {
                            Ok(k) => k as u32,
                            // the pattern holds every coupling of the restriction
                            Err(_) => unreachable!("pattern misses a coupling"),
                        };
                    }
                }
            }
            for i in 0..n {
                let out_row = &mut out[i * n..(i + 1) * n];
                let row = dofs[i];
                if row == CONSTRAINED {
                    out_row.fill(NO_TARGET);
                    continue;
                }
                let (a, start) = (i % s, row_ptr[row as usize] as u32);
                for (j, t) in out_row.iter_mut().enumerate() {
                    let b = j % s;
                    *t = if dofs[j] == CONSTRAINED {
                        NO_TARGET
                    } else {
                        start + block[a * s + b] + rank[j]
                    };
                }
            }
        },
    )
}
