//! Runs of consecutive nodes across the lanes of a batch, so that the kernels move a node's
//! values for the whole batch with one vector load and one vector add instead of
//! [`LANES`] scalar ones.
//!
//! The kernels hold node `i` of the [`LANES`] elements of a batch in one lane array. When
//! those elements' `i`-th nodes are consecutive global nodes, the gather is a contiguous
//! load and the accumulation a contiguous read-modify-write. [`lane_numbering`] numbers the
//! nodes of a space so that this is the common case on meshes whose consecutive elements
//! are neighbours (generated boxes, structured blocks), and [`LaneRuns`] records, per batch
//! and node, which pattern holds; any other pattern keeps the scalar gather, so every mesh
//! and numbering stays correct.

use super::lanes::{lanes_are_the_vector, Lane, LANES};
use ferrofem_base::Real;
use ferrofem_space::ElemRestriction;

/// Node `i` of the batch's lanes are unrelated nodes: scalar gather and scatter.
pub(crate) const SCATTERED: u8 = 0;
/// Lanes `0..LANES` hold consecutive nodes.
pub(crate) const RUN: u8 = 1;
/// Lanes `0..LANES - 1` hold consecutive nodes; the last lane another one.
pub(crate) const RUN_LOW: u8 = 2;
/// Lanes `1..LANES` hold consecutive nodes; the first lane another one.
pub(crate) const RUN_HIGH: u8 = 3;

const UNNUMBERED: u32 = u32::MAX;

/// A numbering of `r`'s nodes (`new_of[old]`, a permutation, for
/// [`H1Space::renumbered`](ferrofem_space::H1Space::renumbered)) that makes node `i` of the
/// elements of a batch ([`LANES`] consecutive elements) consecutive wherever the mesh allows.
///
/// Every batch and local node ask for links "the node of lane `l + 1` follows the node of
/// lane `l`"; a link is kept when neither end has one already that way and it closes no
/// cycle, so the kept links form chains, and each chain is numbered consecutively, in order
/// of first use by the elements. On a row of elements the shared nodes chain the batches
/// together (the nodes of lanes `1..=LANES` of one side are the nodes of lanes `0..LANES` of
/// the other), so on generated boxes every node of every batch is a run; on other meshes
/// the links that conflict are dropped and those nodes are gathered one by one.
pub fn lane_numbering(r: &ElemRestriction) -> Vec<u32> {
    let (nn, ne, n) = (r.elem_size(), r.num_elem(), r.num_nodes());
    let offsets = r.offsets();
    let mut next_of = vec![UNNUMBERED; n];
    let mut prev_of = vec![UNNUMBERED; n];
    // chain heads by union-find, to refuse links that would close a cycle
    let mut root: Vec<u32> = (0..n as u32).collect();
    fn find(root: &mut [u32], mut a: u32) -> u32 {
        while root[a as usize] != a {
            let up = root[root[a as usize] as usize];
            root[a as usize] = up;
            a = up;
        }
        a
    }
    for b in 0..ne / LANES {
        for i in 0..nn {
            for l in 0..LANES - 1 {
                let a = offsets[(b * LANES + l) * nn + i];
                let c = offsets[(b * LANES + l + 1) * nn + i];
                let (au, cu) = (a as usize, c as usize);
                if next_of[au] == c {
                    continue;
                }
                if next_of[au] != UNNUMBERED || prev_of[cu] != UNNUMBERED {
                    continue;
                }
                let (ra, rc) = (find(&mut root, a), find(&mut root, c));
                if ra == rc {
                    continue;
                }
                root[ra as usize] = rc;
                next_of[au] = c;
                prev_of[cu] = a;
            }
        }
    }
    let mut new_of = vec![UNNUMBERED; n];
    let mut next = 0u32;
    let mut number_chain = |start: usize, new_of: &mut Vec<u32>| {
        let mut head = start;
        while prev_of[head] != UNNUMBERED {
            head = prev_of[head] as usize;
        }
        let mut at = head as u32;
        loop {
            new_of[at as usize] = next;
            next += 1;
            at = next_of[at as usize];
            if at == UNNUMBERED {
                break;
            }
        }
    };
    for &o in offsets.iter().take(ne * nn) {
        if new_of[o as usize] == UNNUMBERED {
            number_chain(o as usize, &mut new_of);
        }
    }
    // nodes that no element uses keep their relative order, last
    for old in 0..n {
        if new_of[old] == UNNUMBERED {
            number_chain(old, &mut new_of);
        }
    }
    new_of
}

/// The run pattern of every node of every full batch of a restriction with one component
/// (`codes[b · nodes + i]`), or nothing when no batch has a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct LaneRuns {
    codes: Vec<u8>,
    /// Per full batch: every node is a [`RUN`].
    all_full: Vec<bool>,
    nodes: usize,
}

/// The run patterns of one batch's nodes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BatchRuns<'a> {
    /// The pattern of each node.
    pub codes: &'a [u8],
    /// Every node is a [`RUN`] (the gather skips the pattern tests; the accumulation keeps
    /// them: issued back to back, the read-modify-writes of a run and the run one node
    /// later, which overlap, stall on each other's stores and made it slower).
    pub all_full: bool,
}

impl LaneRuns {
    /// The patterns of `r`'s batches; empty for several components (their nodes'
    /// components are interleaved, so consecutive nodes are not consecutive values).
    pub(crate) fn new(r: &ElemRestriction) -> LaneRuns {
        let (nn, ne) = (r.elem_size(), r.num_elem());
        if r.ncomp() != 1 {
            return LaneRuns::default();
        }
        let offsets = r.offsets();
        let full = ne / LANES;
        let mut codes = vec![SCATTERED; full * nn];
        for (b, cb) in codes.chunks_exact_mut(nn.max(1)).enumerate() {
            for (i, c) in cb.iter_mut().enumerate() {
                let node = |l: usize| offsets[(b * LANES + l) * nn + i];
                let consecutive = |lanes: std::ops::Range<usize>| {
                    lanes.skip(1).all(|l| node(l) == node(l - 1) + 1)
                };
                *c = if consecutive(0..LANES) {
                    RUN
                } else if consecutive(0..LANES - 1) {
                    RUN_LOW
                } else if consecutive(1..LANES) {
                    RUN_HIGH
                } else {
                    SCATTERED
                };
            }
        }
        if codes.iter().all(|&c| c == SCATTERED) {
            return LaneRuns::default();
        }
        let all_full = codes
            .chunks_exact(nn.max(1))
            .map(|cb| cb.iter().all(|&c| c == RUN))
            .collect();
        LaneRuns {
            codes,
            all_full,
            nodes: nn,
        }
    }

    /// The patterns of the batch starting at element `e0` with `count` elements, when it
    /// is a full batch with recorded patterns.
    #[inline(always)]
    pub(crate) fn batch(&self, e0: usize, count: usize) -> Option<BatchRuns<'_>> {
        if count != LANES || e0 % LANES != 0 || self.codes.is_empty() {
            return None;
        }
        let b = e0 / LANES;
        Some(BatchRuns {
            codes: self.codes.get(b * self.nodes..(b + 1) * self.nodes)?,
            all_full: *self.all_full.get(b)?,
        })
    }

    /// Fraction of the batch nodes whose lanes are all one run.
    #[cfg(test)]
    fn full_run_fraction(&self) -> f64 {
        let full = self.codes.iter().filter(|&&c| c == RUN).count();
        full as f64 / self.codes.len().max(1) as f64
    }

    /// Fraction of the batch nodes with a run of at least `LANES - 1` lanes (for reports).
    pub(crate) fn run_fraction(&self) -> f64 {
        if self.codes.is_empty() {
            return 0.0;
        }
        self.codes.iter().filter(|&&c| c != SCATTERED).count() as f64 / self.codes.len() as f64
    }
}

/// Gathers node values of a batch: `u[i][l] = x[rows[l][i]]`, with a contiguous load
/// where `codes` says so.
///
/// # Safety
/// Every `rows[l][i]` must be below `x.len()`, and `codes` must describe `rows`.
#[inline(always)]
pub(crate) unsafe fn gather_runs<T: Real>(
    runs: BatchRuns<'_>,
    rows: &[&[u32]; LANES],
    x: &[T],
    u: &mut [Lane<T>],
) {
    if runs.all_full {
        for (i, ui) in u.iter_mut().enumerate().take(runs.codes.len()) {
            // SAFETY: a run's nodes are consecutive, from lane 0's, all in bounds.
            *ui = unsafe { std::ptr::read_unaligned(x.as_ptr().add(rows[0][i] as usize).cast()) };
        }
        return;
    }
    let codes = runs.codes;
    for (i, (ui, &code)) in u.iter_mut().zip(codes).enumerate() {
        lanes_are_the_vector();
        let at = |l: usize| rows[l][i] as usize;
        // SAFETY (all arms): indices from `rows` are in bounds (caller's contract), and a
        // run's consecutive nodes lie between two of them.
        unsafe {
            let x = x.as_ptr();
            match code {
                RUN => *ui = std::ptr::read_unaligned(x.add(at(0)).cast()),
                RUN_LOW => {
                    let low: [T; LANES - 1] = std::ptr::read_unaligned(x.add(at(0)).cast());
                    ui[..LANES - 1].copy_from_slice(&low);
                    ui[LANES - 1] = *x.add(at(LANES - 1));
                }
                RUN_HIGH => {
                    let high: [T; LANES - 1] = std::ptr::read_unaligned(x.add(at(1)).cast());
                    ui[0] = *x.add(at(0));
                    ui[1..].copy_from_slice(&high);
                }
                _ => {
                    for (l, v) in ui.iter_mut().enumerate() {
                        *v = *x.add(at(l));
                    }
                }
            }
        }
    }
}

/// `y[rows[l][i]] += r[i][l]` for a batch, with a contiguous read-modify-write where
/// `codes` says so.
///
/// # Safety
/// `y` must be valid for reads and writes at every `rows[l][i]` (`< len`), no other thread
/// may touch those entries during the call, and `codes` must describe `rows`.
#[inline(always)]
pub(crate) unsafe fn scatter_runs<T: Real>(
    runs: BatchRuns<'_>,
    rows: &[&[u32]; LANES],
    r: &[Lane<T>],
    y: *mut T,
) {
    let codes = runs.codes;
    for (i, (ri, &code)) in r.iter().zip(codes).enumerate() {
        lanes_are_the_vector();
        let at = |l: usize| rows[l][i] as usize;
        // SAFETY (all arms): as the caller guarantees, and the runs' entries are nodes of
        // the batch.
        unsafe {
            match code {
                RUN => add_run(y.add(at(0)), ri),
                RUN_LOW => {
                    add_run7(y.add(at(0)), ri[..LANES - 1].try_into().expect("7 lanes"));
                    *y.add(at(LANES - 1)) += ri[LANES - 1];
                }
                RUN_HIGH => {
                    *y.add(at(0)) += ri[0];
                    add_run7(y.add(at(1)), ri[1..].try_into().expect("7 lanes"));
                }
                _ => {
                    for (l, &v) in ri.iter().enumerate() {
                        *y.add(at(l)) += v;
                    }
                }
            }
        }
    }
}

/// [`scatter_runs`] for a batch of a 2-D collocated kernel (`N × N` nodes, `r[j][i]`) whose
/// nodes are all full runs, given lane 0's row `row0` (node `i` of lane `l` is `row0[i] +
/// l`). Where the last node of a row `j` is its first node's run moved by one (neighbouring
/// elements share it: `lane_numbering` makes it so on a row of elements), the two runs are
/// added in registers first and written with one read-modify-write of [`LANES`] values and
/// one of a single value: issued back to back, two overlapping read-modify-writes make the
/// second read wait until the first write has left the store buffer. The sums are the same
/// as [`scatter_runs`]' up to the association of the two runs' terms.
///
/// # Safety
/// As for [`scatter_runs`], with every node of the batch a full run.
#[inline(always)]
pub(crate) unsafe fn scatter_rows_folded<T: Real, const N: usize>(
    row0: &[u32],
    r: &[[Lane<T>; N]; N],
    y: *mut T,
) {
    let row0 = &row0[..N * N];
    for (j, rj) in r.iter().enumerate() {
        lanes_are_the_vector();
        let (first, last) = (row0[j * N] as usize, row0[j * N + N - 1] as usize);
        // SAFETY (both arms): every run lies in `y` and is exclusive (the caller's
        // contract); when folded, the last run's nodes are `first + 1 ..= first + LANES`.
        unsafe {
            if N > 1 && last == first + 1 {
                let (r0, rl) = (&rj[0], &rj[N - 1]);
                let mut v = *r0;
                for l in 1..LANES {
                    v[l] += rl[l - 1];
                }
                add_run(y.add(first), &v);
                for i in 1..N - 1 {
                    add_run(y.add(row0[j * N + i] as usize), &rj[i]);
                }
                *y.add(first + LANES) += rl[LANES - 1];
            } else {
                for (i, ri) in rj.iter().enumerate() {
                    add_run(y.add(row0[j * N + i] as usize), ri);
                }
            }
        }
    }
}

/// `y[0..LANES] += v` through a local copy, so that it compiles to vector loads and stores.
///
/// # Safety
/// `y..y + LANES` must be valid and exclusive.
#[inline(always)]
unsafe fn add_run<T: Real>(y: *mut T, v: &Lane<T>) {
    // SAFETY: caller's contract; `Lane<T>` has the alignment of `T`.
    unsafe {
        let mut cur: Lane<T> = std::ptr::read_unaligned(y.cast());
        for (c, &a) in cur.iter_mut().zip(v) {
            *c += a;
        }
        std::ptr::write_unaligned(y.cast(), cur);
    }
}

/// `y[0..LANES - 1] += v`.
///
/// # Safety
/// `y..y + LANES - 1` must be valid and exclusive.
#[inline(always)]
unsafe fn add_run7<T: Real>(y: *mut T, v: &[T; LANES - 1]) {
    // SAFETY: caller's contract.
    unsafe {
        let mut cur: [T; LANES - 1] = std::ptr::read_unaligned(y.cast());
        for (c, &a) in cur.iter_mut().zip(v) {
            *c += a;
        }
        std::ptr::write_unaligned(y.cast(), cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The restriction of an `nx × ny` grid of order-`p` quadrilaterals, nodes numbered
    /// lexicographically, elements x-fastest.
    fn grid(nx: usize, ny: usize, p: usize) -> ElemRestriction {
        let nxn = nx * p + 1;
        let mut offsets = Vec::new();
        for ey in 0..ny {
            for ex in 0..nx {
                for j in 0..=p {
                    for i in 0..=p {
                        offsets.push(((ey * p + j) * nxn + ex * p + i) as u32);
                    }
                }
            }
        }
        ElemRestriction::new((p + 1) * (p + 1), 1, nxn * (ny * p + 1), offsets)
    }

    fn renumber(r: &ElemRestriction, new_of: &[u32]) -> ElemRestriction {
        let offsets = r.offsets().iter().map(|&o| new_of[o as usize]).collect();
        ElemRestriction::new(r.elem_size(), 1, r.num_nodes(), offsets)
    }

    #[test]
    fn numbering_is_a_permutation_with_runs_on_grids() {
        for (nx, ny, p) in [(16, 5, 1), (16, 3, 2), (24, 4, 4), (13, 7, 3)] {
            let r = grid(nx, ny, p);
            let new_of = lane_numbering(&r);
            let mut seen = vec![false; r.num_nodes()];
            for &n in &new_of {
                assert!(!std::mem::replace(&mut seen[n as usize], true));
            }
            let runs = LaneRuns::new(&renumber(&r, &new_of));
            if nx % LANES == 0 {
                // every node of every batch is a whole run
                assert_eq!(runs.full_run_fraction(), 1.0, "{nx}x{ny} order {p}");
            } else {
                assert!(runs.run_fraction() > 0.3, "{nx}x{ny} order {p}");
            }
        }
    }

    /// The gather and the accumulation of every full batch of `r` equal the scalar
    /// formulas; `all_full` says whether every batch must be all runs.
    fn check_gather_scatter(r: &ElemRestriction, all_full: bool) {
        let nn = r.elem_size();
        let runs = LaneRuns::new(r);
        let x: Vec<f64> = (0..r.num_nodes()).map(|i| (i as f64 * 0.7).sin()).collect();
        let mut y_runs = vec![0.0; r.num_nodes()];
        let mut y_scalar = vec![0.0; r.num_nodes()];
        for e0 in (0..r.num_elem()).step_by(LANES) {
            let batch = runs.batch(e0, LANES).expect("full batch");
            assert_eq!(batch.all_full, all_full);
            let rows: [&[u32]; LANES] = std::array::from_fn(|l| r.elem(e0 + l));
            let mut u = vec![[0.0; LANES]; nn];
            // SAFETY: the restriction's offsets are below its node count.
            unsafe { gather_runs(batch, &rows, &x, &mut u) };
            for (i, ui) in u.iter().enumerate() {
                for l in 0..LANES {
                    assert_eq!(ui[l], x[rows[l][i] as usize]);
                }
            }
            let contrib: Vec<Lane<f64>> = (0..nn)
                .map(|i| std::array::from_fn(|l| (i * LANES + l + e0) as f64))
                .collect();
            // SAFETY: as above, single thread.
            unsafe { scatter_runs(batch, &rows, &contrib, y_runs.as_mut_ptr()) };
            for (i, ci) in contrib.iter().enumerate() {
                for l in 0..LANES {
                    y_scalar[rows[l][i] as usize] += ci[l];
                }
            }
        }
        assert_eq!(y_runs, y_scalar);
    }

    #[test]
    fn gather_and_scatter_match_the_scalar_formulas() {
        // two batches of five-node elements, one node of each pattern
        let mut offsets = Vec::new();
        for b in 0..2u32 {
            for l in 0..LANES as u32 {
                offsets.push(if l == 0 { 150 + b } else { b * 40 + l }); // RUN_HIGH
                offsets.push(b * 40 + 10 + l); // RUN
                offsets.push(b * 40 + 11 + l); // RUN, one node later
                offsets.push(if l == 7 { 160 + b } else { b * 40 + 20 + l }); // RUN_LOW
                offsets.push(100 + (l * 5) % 8 + 8 * b); // SCATTERED
            }
        }
        let r = ElemRestriction::new(5, 1, 200, offsets);
        let runs = LaneRuns::new(&r);
        for e0 in [0, LANES] {
            let codes = runs.batch(e0, LANES).expect("full batch").codes;
            assert_eq!(codes, &[RUN_HIGH, RUN, RUN, RUN_LOW, SCATTERED]);
        }
        check_gather_scatter(&r, false);
        // batches whose nodes are all runs (overlapping ones included) take the fast path
        let mut offsets = Vec::new();
        for b in 0..3u32 {
            for l in 0..LANES as u32 {
                offsets.extend([b * 8 + l, b * 8 + l + 1, 50 + b * 8 + l]);
            }
        }
        check_gather_scatter(&ElemRestriction::new(3, 1, 80, offsets), true);
    }

    /// The folded accumulation of a lane-numbered grid of order `N - 1` equals the runs'
    /// (integer contributions, so that the association of the sums does not matter), and it
    /// folds the rows whose first and last runs overlap.
    fn check_folded<const N: usize>() {
        let natural = grid(16, 3, N - 1);
        let r = renumber(&natural, &lane_numbering(&natural));
        let runs = LaneRuns::new(&r);
        let mut y_runs = vec![0.0f64; r.num_nodes()];
        let mut y_folded = vec![0.0f64; r.num_nodes()];
        let mut folded_rows = 0;
        for e0 in (0..r.num_elem()).step_by(LANES) {
            let batch = runs.batch(e0, LANES).expect("full batch");
            assert!(batch.all_full);
            let rows: [&[u32]; LANES] = std::array::from_fn(|l| r.elem(e0 + l));
            let contrib: [[Lane<f64>; N]; N] = std::array::from_fn(|j| {
                std::array::from_fn(|i| {
                    std::array::from_fn(|l| ((j * N + i) * LANES + l + e0) as f64)
                })
            });
            let flat: Vec<Lane<f64>> = contrib.iter().flatten().copied().collect();
            // SAFETY: the restriction's offsets are below its node count, single thread.
            unsafe {
                scatter_runs(batch, &rows, &flat, y_runs.as_mut_ptr());
                scatter_rows_folded(rows[0], &contrib, y_folded.as_mut_ptr());
            }
            folded_rows += (0..N)
                .filter(|&j| rows[0][j * N + N - 1] == rows[0][j * N] + 1)
                .count();
        }
        assert_eq!(y_folded, y_runs, "order {}", N - 1);
        assert!(folded_rows > 0, "order {}", N - 1);
    }

    #[test]
    fn folded_rows_add_what_the_runs_add() {
        check_folded::<2>();
        check_folded::<3>();
        check_folded::<5>();
    }

    #[test]
    fn several_components_record_no_runs() {
        let r = grid(16, 2, 2).with_ncomp(2);
        assert!(LaneRuns::new(&r).batch(0, LANES).is_none());
    }
}
