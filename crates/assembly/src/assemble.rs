//! Global assembly of element matrices (and element right-hand sides) into CSR, with
//! selectable race-free parallel strategies after Cecka, Lew and Darve (2011):
//!
//! - [`Strategy::Serial`]: element by element, the reference.
//! - [`Strategy::Colored`]: element colouring (§4.1): the elements of one colour share no
//!   node, so threads compute and add their element matrices directly, colour after colour.
//! - [`Strategy::ByRow`]: the element matrices of a batch of consecutive elements are
//!   computed into a buffer (in parallel, sized to stay in cache); then every matrix row
//!   touched by the batch (in parallel over nodes) adds its contributions, found through
//!   the node → element transpose (assembly by row, §3.4, with element storage in global
//!   memory partitioned into passes as the paper suggests).
//! - [`Strategy::ByNonzero`]: as `ByRow`, but every nonzero sums the element entries of its
//!   precomputed reduction list (assembly by nonzero from global memory, §4.2.3).
//!
//! The buffered strategies add in increasing element order, exactly like the serial one,
//! so the three give bitwise identical matrices; the coloured one sums in colour order.
//!
//! By-row is the default: on 16 cores it was the fastest or within noise of the fastest on
//! every problem measured (P1 tetrahedra, scalar and 3-component, and Q2 hexahedra; the
//! 2-core figures are in docs/assembly.md), it needs no colouring, it is deterministic, and
//! its buffer is bounded.
//! With one thread it runs the serial loop, which gives the same sums.
//!
//! Dirichlet dofs are eliminated element-wise (§3.3, third approach): the element
//! right-hand side is modified before assembly, `F_e[i] -= Σ_{j constrained} K_e[i][j] g_j`
//! for free local rows `i`, and constrained rows and columns are never assembled.

use crate::blocks::{par_eq, ROW_BLOCK};
use crate::dirichlet::{check_len, CONSTRAINED};
use crate::plan::NO_TARGET;
use crate::{AssemblyError, AssemblyPlan, Dirichlet, DofMap};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_operator::ElementMatrices;
use rayon::prelude::*;
use std::ops::AddAssign;
use std::sync::Mutex;

/// An element right-hand-side provider: `f(e, out)` adds element `e`'s load vector (E-vector
/// layout `c * elem_size + i`) to `out`, which assembly zeroes before the call.
pub type ElementVectorFn<'a, T> = &'a (dyn Fn(usize, &mut [T]) + Sync);

/// How element contributions are summed into the global matrix (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// One thread, element by element: the reference.
    Serial,
    /// Parallel over the elements of each colour, writing directly.
    Colored,
    /// Element matrices buffered in cache-sized batches, then parallel over matrix rows.
    ByRow,
    /// Element matrices buffered, then parallel over nonzeros with reduction lists.
    ByNonzero,
}

impl Strategy {
    /// Every strategy, in the order of the module docs.
    pub const ALL: [Strategy; 4] = [
        Strategy::Serial,
        Strategy::Colored,
        Strategy::ByRow,
        Strategy::ByNonzero,
    ];

    /// The name used on command lines and in benchmark records.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Serial => "serial",
            Strategy::Colored => "colored",
            Strategy::ByRow => "by-row",
            Strategy::ByNonzero => "by-nonzero",
        }
    }

    /// The strategy of a [`Strategy::name`] (also `colour`/`coloured`/`color`, and
    /// underscores for hyphens).
    pub fn parse(s: &str) -> Option<Strategy> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "serial" => Some(Strategy::Serial),
            "colored" | "coloured" | "color" | "colour" => Some(Strategy::Colored),
            "by-row" | "row" => Some(Strategy::ByRow),
            "by-nonzero" | "nonzero" | "by-nz" | "nz" => Some(Strategy::ByNonzero),
            _ => None,
        }
    }
}

impl Default for Strategy {
    /// [`Strategy::ByRow`], the fastest on multicore CPUs in our measurements.
    fn default() -> Strategy {
        Strategy::ByRow
    }
}

/// An assembled linear system on the plan's unknowns (all dofs, or the free ones).
///
/// Owned by the caller; the [`Dirichlet`] it was assembled with stays with the caller
/// too and maps a solution back with [`Dirichlet::expand`].
#[derive(Clone, Debug, PartialEq)]
pub struct System<T> {
    /// The matrix (`A_ff` when Dirichlet dofs were eliminated).
    pub matrix: CsrMatrix<T>,
    /// The right-hand side (`b_f - A_fc g` when Dirichlet dofs were eliminated).
    pub rhs: Vec<T>,
}

/// What one assembly run reads: the provider, the linearisation state and the optional
/// right-hand side with the boundary values.
struct Inputs<'a, T, E> {
    em: &'a E,
    u: Option<&'a [T]>,
    rhs: Option<ElementVectorFn<'a, T>>,
    /// Full vector with `g` at constrained dofs (`None` when nothing is eliminated).
    g_full: Option<&'a [T]>,
    /// Whether element right-hand sides are computed at all.
    want_rhs: bool,
}

/// A raw pointer that threads share for writes the algorithm keeps disjoint (a valid
/// colouring for the coloured strategy, row ownership for the by-row one).
#[derive(Clone, Copy)]
struct SharedMut<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: only used for writes to positions that no two threads share at the same time
// (elements of one colour share no node, hence no matrix row and no right-hand-side entry;
// in by-row each thread owns the rows of its nodes).
unsafe impl<T: Send> Send for SharedMut<T> {}
unsafe impl<T: Send> Sync for SharedMut<T> {}

impl<T: AddAssign + Copy> SharedMut<T> {
    fn new(s: &mut [T]) -> SharedMut<T> {
        SharedMut {
            ptr: s.as_mut_ptr(),
            len: s.len(),
        }
    }
    /// `s[k] += v`.
    ///
    /// # Safety
    /// `k < len`, and no other thread accesses position `k` concurrently.
    #[inline(always)]
    unsafe fn add(self, k: usize, v: T) {
        debug_assert!(k < self.len);
        unsafe { *self.ptr.add(k) += v }
    }
}

/// Keeps the error of the lowest-numbered failing element, so that parallel runs report
/// the same element as the serial one.
struct FirstError(Mutex<Option<(usize, AssemblyError)>>);

impl FirstError {
    fn new() -> FirstError {
        FirstError(Mutex::new(None))
    }
    fn record(&self, e: usize, err: AssemblyError) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.as_ref().is_none_or(|(e0, _)| e < *e0) {
            *g = Some((e, err));
        }
    }
    fn into_result(self) -> Result<(), AssemblyError> {
        match self.0.into_inner().unwrap_or_else(|p| p.into_inner()) {
            Some((_, err)) => Err(err),
            None => Ok(()),
        }
    }
}

impl AssemblyPlan {
    /// Assembles the matrix of `em` (linearised about the full L-vector `u` when given) on
    /// the plan's unknowns.
    pub fn assemble_matrix<T: Real, E: ElementMatrices<T>>(
        &self,
        em: &E,
        u: Option<&[T]>,
        strategy: Strategy,
    ) -> Result<CsrMatrix<T>, AssemblyError> {
        let mut a = self.pattern.zeros();
        self.assemble_matrix_into(em, u, strategy, &mut a)?;
        Ok(a)
    }

    /// Reassembles into `a`, a matrix with this plan's pattern (made by
    /// [`AssemblyPlan::assemble_matrix`] or [`crate::SparsityPattern::zeros`]); its values
    /// are overwritten.
    pub fn assemble_matrix_into<T: Real, E: ElementMatrices<T>>(
        &self,
        em: &E,
        u: Option<&[T]>,
        strategy: Strategy,
        a: &mut CsrMatrix<T>,
    ) -> Result<(), AssemblyError> {
        if !self.pattern.matches(a) {
            return Err(AssemblyError::PatternMismatch);
        }
        let inputs = Inputs {
            em,
            u,
            rhs: None,
            g_full: None,
            want_rhs: false,
        };
        self.run(&inputs, strategy, a.values_mut(), &mut [])
    }

    /// Assembles matrix and right-hand side with the Dirichlet dofs of `bc` eliminated
    /// (`bc` must have the plan's dof map; [`Dirichlet::none`] for a plan without one).
    /// `rhs` gives the element load vectors (zero when `None`).
    pub fn assemble_system<T: Real, E: ElementMatrices<T>>(
        &self,
        em: &E,
        u: Option<&[T]>,
        rhs: Option<ElementVectorFn<'_, T>>,
        bc: &Dirichlet<T>,
        strategy: Strategy,
    ) -> Result<System<T>, AssemblyError> {
        let same_map = match &self.map {
            None => {
                bc.map().is_unconstrained() && bc.map().num_dofs() == self.restriction.lvec_len()
            }
            Some(m) => m == bc.map(),
        };
        if !same_map {
            return Err(AssemblyError::DofMapMismatch);
        }
        let g_full = self.map.as_ref().map(|_| bc.full_values());
        let inputs = Inputs {
            em,
            u,
            rhs,
            g_full: g_full.as_deref(),
            want_rhs: true,
        };
        let mut matrix = self.pattern.zeros();
        let mut b = vec![T::zero(); self.nrows()];
        self.run(&inputs, strategy, matrix.values_mut(), &mut b)?;
        Ok(System { matrix, rhs: b })
    }

    /// Checks the inputs against the plan, then dispatches to the strategy. `values` has
    /// the plan's nnz entries, `b` the plan's rows (or is empty when no rhs is wanted).
    fn run<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        strategy: Strategy,
        values: &mut [T],
        b: &mut [T],
    ) -> Result<(), AssemblyError> {
        self.check_provider(inp.em)?;
        if let Some(u) = inp.u {
            check_len(
                "linearisation state u",
                self.restriction.lvec_len(),
                u.len(),
            )?;
        }
        values.par_iter_mut().for_each(|v| *v = T::zero());
        b.par_iter_mut().for_each(|v| *v = T::zero());
        if self.restriction.num_elem() == 0 || self.element_matrix_size() == 0 {
            return Ok(());
        }
        match strategy {
            Strategy::Serial => self.run_serial(inp, values, b),
            Strategy::Colored => self.run_colored(inp, values, b),
            Strategy::ByRow => self.run_by_row(inp, values, b),
            Strategy::ByNonzero => self.run_by_nonzero(inp, values, b),
        }
    }

    fn check_provider<T: Real, E: ElementMatrices<T>>(&self, em: &E) -> Result<(), AssemblyError> {
        let (a, b) = (&self.restriction, em.restriction());
        let mismatch = |what: String| Err(AssemblyError::RestrictionMismatch(what));
        if (a.num_elem(), a.elem_size(), a.ncomp(), a.num_nodes())
            != (b.num_elem(), b.elem_size(), b.ncomp(), b.num_nodes())
        {
            return mismatch(format!(
                "plan has {} elements of {} nodes, {} components, {} nodes; provider has {}, {}, {}, {}",
                a.num_elem(),
                a.elem_size(),
                a.ncomp(),
                a.num_nodes(),
                b.num_elem(),
                b.elem_size(),
                b.ncomp(),
                b.num_nodes()
            ));
        }
        if em.element_matrix_size() != self.element_matrix_size() {
            return mismatch(format!(
                "provider's element matrices have {} rows, expected {}",
                em.element_matrix_size(),
                self.element_matrix_size()
            ));
        }
        if !par_eq(a.offsets(), b.offsets()) {
            return mismatch("element connectivity differs".into());
        }
        Ok(())
    }

    /// Computes element `e`'s matrix into `ke` and (when wanted) its load vector, modified
    /// for the eliminated dofs, into `fe`. `ue` is scratch for the element state.
    fn element<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        e: usize,
        ue: &mut [T],
        ke: &mut [T],
        fe: &mut [T],
    ) -> Result<(), AssemblyError> {
        let n = self.element_matrix_size();
        ke.fill(T::zero());
        let u_e = match inp.u {
            Some(u) => {
                self.restriction.gather_elem(e, u, ue);
                Some(&*ue)
            }
            None => None,
        };
        inp.em.element_matrix(e, u_e, ke);
        if let Some(q) = ke.iter().position(|v| !v.is_finite()) {
            return Err(AssemblyError::NonFiniteElementMatrix {
                element: e,
                row: q / n,
                col: q % n,
                value: ke[q].as_f64(),
            });
        }
        if !inp.want_rhs {
            return Ok(());
        }
        fe.fill(T::zero());
        if let Some(f) = inp.rhs {
            f(e, fe);
            if let Some(q) = fe.iter().position(|v| !v.is_finite()) {
                return Err(AssemblyError::NonFiniteElementVector {
                    element: e,
                    entry: q,
                    value: fe[q].as_f64(),
                });
            }
        }
        if let Some(g) = inp.g_full {
            let (s, nc) = (self.restriction.elem_size(), self.restriction.ncomp());
            let nodes = self.restriction.elem(e);
            let targets = &self.targets[e * n * n..(e + 1) * n * n];
            for i in 0..n {
                if self.row_of(e, i) == CONSTRAINED {
                    continue;
                }
                // in a free row, exactly the constrained columns have no target
                let mut acc = fe[i];
                for j in 0..n {
                    if targets[i * n + j] == NO_TARGET {
                        let gj = g[nodes[j % s] as usize * nc + j / s];
                        acc -= ke[i * n + j] * gj;
                    }
                }
                fe[i] = acc;
            }
        }
        Ok(())
    }

    fn run_serial<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        values: &mut [T],
        b: &mut [T],
    ) -> Result<(), AssemblyError> {
        let n = self.element_matrix_size();
        let (mut ue, mut ke, mut fe) = (
            vec![T::zero(); n],
            vec![T::zero(); n * n],
            vec![T::zero(); n],
        );
        for e in 0..self.restriction.num_elem() {
            self.element(inp, e, &mut ue, &mut ke, &mut fe)?;
            let targets = &self.targets[e * n * n..(e + 1) * n * n];
            for (&k, &v) in targets.iter().zip(&ke) {
                if k != NO_TARGET {
                    values[k as usize] += v;
                }
            }
            if inp.want_rhs {
                for (i, &v) in fe.iter().enumerate() {
                    let row = self.row_of(e, i);
                    if row != CONSTRAINED {
                        b[row as usize] += v;
                    }
                }
            }
        }
        Ok(())
    }

    fn run_colored<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        values: &mut [T],
        b: &mut [T],
    ) -> Result<(), AssemblyError> {
        let n = self.element_matrix_size();
        let coloring = self.coloring();
        let vals = SharedMut::new(values);
        let rhs = SharedMut::new(b);
        let first = FirstError::new();
        for k in 0..coloring.num_colors() {
            coloring.color(k).par_iter().for_each_init(
                || {
                    (
                        vec![T::zero(); n],
                        vec![T::zero(); n * n],
                        vec![T::zero(); n],
                    )
                },
                |(ue, ke, fe), &e| {
                    let e = e as usize;
                    if let Err(err) = self.element(inp, e, ue, ke, fe) {
                        first.record(e, err);
                        return;
                    }
                    let targets = &self.targets[e * n * n..(e + 1) * n * n];
                    for (&t, &v) in targets.iter().zip(ke.iter()) {
                        if t != NO_TARGET {
                            // SAFETY: targets of elements of one colour lie in rows of
                            // their own nodes, which no other element of the colour has
                            // (validated colouring); every target is < nnz by
                            // construction of the plan.
                            unsafe { vals.add(t as usize, v) };
                        }
                    }
                    if inp.want_rhs {
                        for (i, &v) in fe.iter().enumerate() {
                            let row = self.row_of(e, i);
                            if row != CONSTRAINED {
                                // SAFETY: as above, the row belongs to a node of `e`
                                // only, within this colour; rows are < b.len().
                                unsafe { rhs.add(row as usize, v) };
                            }
                        }
                    }
                },
            );
            // stop after the colour that failed, like the serial loop would (soon)
            if first.0.lock().map(|g| g.is_some()).unwrap_or(true) {
                break;
            }
        }
        first.into_result()
    }

    /// By row, in batches of consecutive elements whose element data fit in cache: compute
    /// a batch in parallel over elements, then add it in parallel over the nodes the batch
    /// touches (each thread owns whole rows). Rows receive their contributions in
    /// increasing element order, as in the serial loop.
    fn run_by_row<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        values: &mut [T],
        b: &mut [T],
    ) -> Result<(), AssemblyError> {
        let n = self.element_matrix_size();
        let ne = self.restriction.num_elem();
        let (s, nc) = (self.restriction.elem_size(), self.restriction.ncomp());
        let stride = self.data_stride();
        let batches = self.batches();
        let per = batches.per_batch;
        if rayon::current_num_threads() == 1 {
            // identical sums in identical order, without the buffer
            return self.run_serial(inp, values, b);
        }
        let mut data: Vec<T> =
            self.take_scratch(per.min(ne) * stride, "the element data buffer")?;
        let vals = SharedMut::new(values);
        let rhs = SharedMut::new(b);
        let t = &self.transpose;
        for (bi, e0) in (0..ne).step_by(per).enumerate() {
            let e1 = (e0 + per).min(ne);
            let first = FirstError::new();
            data[..(e1 - e0) * stride]
                .par_chunks_mut(stride)
                .enumerate()
                .for_each_init(
                    || vec![T::zero(); n],
                    |ue, (q, chunk)| {
                        let (ke, fe) = chunk.split_at_mut(n * n);
                        if let Err(err) = self.element(inp, e0 + q, ue, ke, fe) {
                            first.record(e0 + q, err);
                        }
                    },
                );
            first.into_result()?;
            let data = &data;
            let nodes = &batches.nodes[batches.ptr[bi]..batches.ptr[bi + 1]];
            nodes.par_chunks(16).for_each(|chunk| {
                for &m in chunk {
                    let m = m as usize;
                    let (a0, z0) = (t.node_offsets[m] as usize, t.node_offsets[m + 1] as usize);
                    let entries = &t.entries[a0..z0];
                    // the node's entries of this batch (entries are sorted by element)
                    let lo = entries.partition_point(|&p| (p as usize / s) < e0);
                    let hi = entries.partition_point(|&p| (p as usize / s) < e1);
                    for c in 0..nc {
                        let row = match &self.map {
                            None => (m * nc + c) as u32,
                            Some(mp) => mp.reduced_of()[m * nc + c],
                        };
                        if row == CONSTRAINED {
                            continue;
                        }
                        for &pos in &entries[lo..hi] {
                            let (e, i) = (pos as usize / s, c * s + pos as usize % s);
                            let tg = &self.targets[(e * n + i) * n..][..n];
                            let d = &data[(e - e0) * stride..][..stride];
                            for (&k, &v) in tg.iter().zip(&d[i * n..(i + 1) * n]) {
                                if k != NO_TARGET {
                                    // SAFETY: `k` lies in row `row`, which belongs to
                                    // node `m` alone; nodes of a batch are distinct, so
                                    // no other thread writes this row; `k < nnz`.
                                    unsafe { vals.add(k as usize, v) };
                                }
                            }
                            if inp.want_rhs {
                                // SAFETY: as above, row `row` is this thread's.
                                unsafe { rhs.add(row as usize, d[n * n + i]) };
                            }
                        }
                    }
                }
            });
        }
        self.keep_scratch(data);
        Ok(())
    }

    /// By nonzero: all element data computed into one buffer, then every nonzero sums its
    /// reduction list (Cecka et al. §4.2.3) and every right-hand-side row its entries.
    fn run_by_nonzero<T: Real, E: ElementMatrices<T>>(
        &self,
        inp: &Inputs<'_, T, E>,
        values: &mut [T],
        b: &mut [T],
    ) -> Result<(), AssemblyError> {
        let n = self.element_matrix_size();
        let ne = self.restriction.num_elem();
        let stride = self.data_stride();
        // stage 1: every element matrix (and vector), in parallel over elements, into one
        // buffer of `stride` entries per element (matrix, then right-hand side)
        let first = FirstError::new();
        let mut data: Vec<T> = self.take_scratch(ne * stride, "the element data buffer")?;
        data.par_chunks_mut(stride).enumerate().for_each_init(
            || vec![T::zero(); n],
            |ue, (e, chunk)| {
                let (ke, fe) = chunk.split_at_mut(n * n);
                if let Err(err) = self.element(inp, e, ue, ke, fe) {
                    first.record(e, err);
                }
            },
        );
        first.into_result()?;
        // stage 2: every nonzero sums its reduction list
        let src = self.sources()?;
        values
            .par_chunks_mut(4096)
            .enumerate()
            .for_each(|(chunk, vals)| {
                let k0 = chunk * 4096;
                for (q, v) in vals.iter_mut().enumerate() {
                    let k = k0 + q;
                    let (a, z) = (src.ptr[k] as usize, src.ptr[k + 1] as usize);
                    let mut acc = T::zero();
                    for &p in &src.src[a..z] {
                        acc += data[p as usize];
                    }
                    *v = acc;
                }
            });
        // the right-hand side, row by row through the transpose
        if inp.want_rhs {
            b.par_chunks_mut(ROW_BLOCK)
                .enumerate()
                .for_each(|(chunk, rows)| {
                    for (q, bi) in rows.iter_mut().enumerate() {
                        self.for_each_row_source(chunk * ROW_BLOCK + q, |e, i| {
                            *bi += data[e * stride + n * n + i]
                        });
                    }
                });
        }
        self.keep_scratch(data);
        Ok(())
    }
}

/// Assembles the matrix of `em` (linearised about the full L-vector `u` when given) on all
/// dofs (`dofs` is `None`) or on the free dofs of `dofs`. Builds a throw-away
/// [`AssemblyPlan`]; keep a plan to assemble repeatedly.
pub fn assemble_matrix<T: Real, E: ElementMatrices<T>>(
    em: &E,
    u: Option<&[T]>,
    dofs: Option<&DofMap>,
    strategy: Strategy,
) -> Result<CsrMatrix<T>, AssemblyError> {
    AssemblyPlan::new(em.restriction(), dofs)?.assemble_matrix(em, u, strategy)
}

/// Assembles the reduced system (matrix on the free dofs of `bc`, right-hand side from the
/// element vectors `rhs` with the boundary values moved over); with [`Dirichlet::none`]
/// the full system. Builds a throw-away [`AssemblyPlan`].
pub fn assemble_system<T: Real, E: ElementMatrices<T>>(
    em: &E,
    u: Option<&[T]>,
    rhs: Option<ElementVectorFn<'_, T>>,
    bc: &Dirichlet<T>,
    strategy: Strategy,
) -> Result<System<T>, AssemblyError> {
    AssemblyPlan::new(em.restriction(), Some(bc.map()))?.assemble_system(em, u, rhs, bc, strategy)
}
