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

use super::lanes::{Lane, LANES};
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
/// elements of a batch ([`LANES`] consecutive elements) consecutive wherever the element
/// order allows: batch by batch and node by node, the batch's nodes not numbered yet get
/// consecutive numbers when they are distinct, all of them or all but the first or the
/// last lane (the node shared with the previous batch's or the previous node's run); other
/// nodes are numbered one by one in order of first use, which keeps an element's nodes close
/// in memory as well.
pub fn lane_numbering(r: &ElemRestriction) -> Vec<u32> {
    let (nn, ne) = (r.elem_size(), r.num_elem());
    let mut new_of = vec![UNNUMBERED; r.num_nodes()];
    let mut next = 0u32;
    let offsets = r.offsets();
    let mut e0 = 0;
    while e0 < ne {
        let count = LANES.min(ne - e0);
        for i in 0..nn {
            let node = |l: usize| offsets[(e0 + l) * nn + i] as usize;
            if count == LANES {
                let fresh = |lanes: std::ops::Range<usize>| {
                    lanes.clone().all(|l| {
                        new_of[node(l)] == UNNUMBERED
                            && (lanes.start..l).all(|m| node(m) != node(l))
                    })
                };
                let run = [0..LANES, 1..LANES, 0..LANES - 1]
                    .into_iter()
                    .find(|lanes| fresh(lanes.clone()));
                if let Some(lanes) = run {
                    for l in lanes {
                        new_of[node(l)] = next;
                        next += 1;
                    }
                }
            }
            for l in 0..count {
                if new_of[node(l)] == UNNUMBERED {
                    new_of[node(l)] = next;
                    next += 1;
                }
            }
        }
        e0 += count;
    }
    // nodes that no element uses keep their relative order, last
    for n in new_of.iter_mut().filter(|n| **n == UNNUMBERED) {
        *n = next;
        next += 1;
    }
    new_of
}

/// The run pattern of every node of every full batch of a restriction with one component
/// (`codes[b · nodes + i]`), or nothing when no batch has a run.
#[derive(Clone, Debug, Default)]
pub(crate) struct LaneRuns {
    codes: Vec<u8>,
    nodes: usize,
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
        LaneRuns { codes, nodes: nn }
    }

    /// The patterns of the batch starting at element `e0` with `count` elements, when it
    /// is a full batch with recorded patterns.
    #[inline(always)]
    pub(crate) fn batch(&self, e0: usize, count: usize) -> Option<&[u8]> {
        if count != LANES || e0 % LANES != 0 || self.codes.is_empty() {
            return None;
        }
        let b = e0 / LANES;
        self.codes.get(b * self.nodes..(b + 1) * self.nodes)
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
    codes: &[u8],
    rows: &[&[u32]; LANES],
    x: &[T],
    u: &mut [Lane<T>],
) {
    for (i, (ui, &code)) in u.iter_mut().zip(codes).enumerate() {
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
    codes: &[u8],
    rows: &[&[u32]; LANES],
    r: &[Lane<T>],
    y: *mut T,
) {
    for (i, (ri, &code)) in r.iter().zip(codes).enumerate() {
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
                // every node of every batch is a run of at least LANES - 1
                assert_eq!(runs.run_fraction(), 1.0, "{nx}x{ny} order {p}");
            } else {
                assert!(runs.run_fraction() > 0.3, "{nx}x{ny} order {p}");
            }
        }
    }

    #[test]
    fn gather_and_scatter_match_the_scalar_formulas() {
        let r = grid(16, 3, 2);
        let r = renumber(&r, &lane_numbering(&r));
        let runs = LaneRuns::new(&r);
        let nn = r.elem_size();
        let x: Vec<f64> = (0..r.num_nodes()).map(|i| (i as f64 * 0.7).sin()).collect();
        let mut y_runs = vec![0.0; r.num_nodes()];
        let mut y_scalar = vec![0.0; r.num_nodes()];
        let mut seen = [false; 4];
        for e0 in (0..r.num_elem()).step_by(LANES) {
            let codes = runs.batch(e0, LANES).expect("full batch");
            for &c in codes {
                seen[c as usize] = true;
            }
            let rows: [&[u32]; LANES] = std::array::from_fn(|l| r.elem(e0 + l));
            let mut u = vec![[0.0; LANES]; nn];
            // SAFETY: the restriction's offsets are below its node count.
            unsafe { gather_runs(codes, &rows, &x, &mut u) };
            for (i, ui) in u.iter().enumerate() {
                for l in 0..LANES {
                    assert_eq!(ui[l], x[rows[l][i] as usize]);
                }
            }
            let contrib: Vec<Lane<f64>> = (0..nn)
                .map(|i| std::array::from_fn(|l| (i * LANES + l + e0) as f64))
                .collect();
            // SAFETY: as above, single thread.
            unsafe { scatter_runs(codes, &rows, &contrib, y_runs.as_mut_ptr()) };
            for (i, ci) in contrib.iter().enumerate() {
                for l in 0..LANES {
                    y_scalar[rows[l][i] as usize] += ci[l];
                }
            }
        }
        assert_eq!(y_runs, y_scalar);
        assert!(seen[RUN as usize] && seen[RUN_LOW as usize] && seen[RUN_HIGH as usize]);
    }

    #[test]
    fn several_components_record_no_runs() {
        let r = grid(16, 2, 2).with_ncomp(2);
        assert!(LaneRuns::new(&r).batch(0, LANES).is_none());
    }
}
