//! The batched element kernels: gather, sum-factorised interpolation and gradient,
//! pointwise geometry, transposed contractions and the hand-off of the element results,
//! for a batch of [`LANES`] elements at a time.
//!
//! Every kernel is written once with run-time sizes and `#[inline(always)]`; the
//! const-generic entry points pass compile-time sizes (`D`, `N = p + 1`, `Q`), so each
//! specialisation has fixed loop bounds, while the dynamic entry point serves any order.
//! On x86-64 two more sets of instances are compiled, with AVX2 and FMA and with AVX-512,
//! and chosen at run time when the processor has them; the baseline instances run on any
//! x86-64.

use super::accumulate::DirectOut;
use super::geometry::lane_factors;
use super::lane_runs::{gather_runs, BatchRuns, LaneRuns};
use super::lanes::{contract, lanes_are_the_vector, madd, zero, AlignedLanes, Lane, LANES};
use super::{
    CompactData, Diffusion, Elastic, FactorLayout, Mass, PointBatch, TensorGeometry, TensorPhysics,
};
use ferrofem_base::Real;
use ferrofem_geometry::GeometrySource;
use std::ops::Range;

/// Expands to a `match` over the specialised sizes of the Gauss shapes (`q = n + 1`, the
/// default `q = p + 2`), returning the instance of `$run` for those and of `$dyn`
/// otherwise.
macro_rules! pick_gauss {
    ($run:ident, $dyn:ident, $T:ty, $P:ty, $K:expr, $s:expr; $($N:literal),*) => {
        match ($s.dim, $s.n, $s.q) {
            $(
                (2, $N, q) if q == $N + 1 => $run::<$T, $P, { $K }, 2, $N, { $N + 1 }>,
                (3, $N, q) if q == $N + 1 => $run::<$T, $P, { $K }, 3, $N, { $N + 1 }>,
            )*
            _ => $dyn::<$T, $P, { $K }>,
        }
    };
}

/// The collocated twin of [`pick_gauss`] (`q = n`).
macro_rules! pick_colloc {
    ($run:ident, $dyn:ident, $T:ty, $P:ty, $s:expr; $($N:literal),*) => {
        match ($s.dim, $s.n, $s.q) {
            $(
                (2, $N, $N) => $run::<$T, $P, COLLOC, 2, $N, $N>,
                (3, $N, $N) => $run::<$T, $P, COLLOC, 3, $N, $N>,
            )*
            _ => $dyn::<$T, $P, COLLOC>,
        }
    };
}

/// Most data per point a physics may have for the compact (per-element) factors; more
/// keep the full stored factors.
pub(crate) const MAX_COMPACT: usize = 16;

/// Kernel shape: values only, interpolated to Gauss points (mass-like physics, BP1).
pub(crate) const INTERP: u8 = 0;
/// Kernel shape: interpolation to Gauss points and gradients there (BP3).
pub(crate) const GAUSS: u8 = 1;
/// Kernel shape: collocated at the GLL nodes, no interpolation (BP3.5, the SEM).
pub(crate) const COLLOC: u8 = 2;

/// Sizes of an element kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sizes {
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Nodes per direction.
    pub n: usize,
    /// Quadrature points per direction.
    pub q: usize,
}

impl Sizes {
    #[inline(always)]
    pub(crate) fn nodes(self) -> usize {
        if self.dim == 2 {
            self.n * self.n
        } else {
            self.n * self.n * self.n
        }
    }
    #[inline(always)]
    pub(crate) fn points(self) -> usize {
        if self.dim == 2 {
            self.q * self.q
        } else {
            self.q * self.q * self.q
        }
    }
    /// Largest intermediate of the interpolation (`max(n, q)^dim`).
    fn work(self) -> usize {
        self.n.max(self.q).pow(self.dim as u32)
    }
}

/// Everything a kernel reads besides the vectors (all in the operator's scalar type).
pub(crate) struct KernelData<'a, T> {
    /// Run-time sizes (used by the dynamic instance; the const ones carry their own).
    pub sizes: Sizes,
    /// `B`, `q × n`.
    pub b: &'a [T],
    /// `Bᵀ`, `n × q`.
    pub bt: &'a [T],
    /// Collocated derivative `D̂`, `q × q`.
    pub d: &'a [T],
    /// `D̂ᵀ`.
    pub dt: &'a [T],
    /// Whether the physics reads and writes values.
    pub uses_value: bool,
    /// Whether the physics reads and writes gradients.
    pub uses_gradient: bool,
    /// Whether the physics reads compact data ([`TensorPhysics::reads_compact`]).
    pub reads_compact: bool,
    /// Geometry.
    pub geo: &'a TensorGeometry<T>,
    /// Map derivatives `[point][k][v - 1]` for on-the-fly geometry.
    pub dphi: &'a [T],
    /// Tensor quadrature weights.
    pub w: &'a [T],
    /// Restriction offsets, `nodes` per element, each below `num_nodes` (an
    /// [`ElemRestriction`](ferrofem_space::ElemRestriction)'s, which checks that).
    pub offsets: &'a [u32],
    /// Global nodes of the input vectors.
    pub num_nodes: usize,
    /// Components per node.
    pub ncomp: usize,
    /// Runs of consecutive nodes across the lanes of each batch.
    pub runs: &'a LaneRuns,
}

/// Per-thread work arrays of a kernel (lane layout, cache-line aligned).
pub(crate) struct Scratch<T> {
    u: AlignedLanes<T>,
    t1: AlignedLanes<T>,
    t2: AlignedLanes<T>,
    uq: AlignedLanes<T>,
    g: AlignedLanes<T>,
    geo: AlignedLanes<T>,
    vd: AlignedLanes<T>,
    r: AlignedLanes<T>,
}

impl<T: Real> Scratch<T> {
    /// Work arrays of no size (a placeholder that allocates nothing).
    pub(crate) fn empty() -> Scratch<T> {
        Scratch::new(Sizes { dim: 2, n: 0, q: 0 }, 0, 0)
    }

    pub(crate) fn new(s: Sizes, num_factors: usize, ncomp: usize) -> Scratch<T> {
        let (nn, nq, nw) = (s.nodes(), s.points(), s.work());
        let a = AlignedLanes::new;
        Scratch {
            u: a(ncomp * nn),
            t1: a(nw),
            t2: a(nw),
            uq: a(ncomp * nq.max(nn)),
            g: a(ncomp * s.dim * nq),
            geo: a(num_factors * nq),
            vd: a(if nn == 0 {
                0
            } else {
                s.dim * ((1 << s.dim) - 1)
            }),
            r: a(nn),
        }
    }
}

/// Receives the element results of a batch.
pub(crate) trait BatchSink<T> {
    /// Component `comp` of the results `r` (`nodes` lanes) of elements `elems[..count]`.
    fn put(&mut self, elems: &[usize; LANES], count: usize, comp: usize, r: &[Lane<T>]);
    /// The L-vector the sink adds into, for the kernels to add into it themselves.
    fn direct(&mut self) -> Option<DirectOut<'_, T>> {
        None
    }
}

/// Where a kernel hands its batch results.
enum Out<'s, T> {
    /// Added straight into an L-vector, inlined in the kernel.
    Direct(DirectOut<'s, T>),
    /// Through the sink.
    Sink(&'s mut dyn BatchSink<T>),
}

impl<'s, T: Real> Out<'s, T> {
    /// The sink's L-vector when it has one (the kernels add into it themselves), else the
    /// sink.
    #[inline(always)]
    fn of(sink: &'s mut dyn BatchSink<T>) -> Out<'s, T> {
        if sink.direct().is_some() {
            Out::Direct(sink.direct().expect("checked just before"))
        } else {
            Out::Sink(sink)
        }
    }

    /// Hands over component `comp` of the results `r` of batch `b`.
    #[inline(always)]
    fn put(&mut self, b: &BatchNodes<'_>, comp: usize, r: &[Lane<T>]) {
        match self {
            Out::Direct(d) => d.add_rows(&b.rows, b.runs, b.count, comp, r),
            Out::Sink(s) => s.put(&b.elems, b.count, comp, r),
        }
    }
}

/// The elements of a batch and where their nodes are.
pub(crate) struct BatchNodes<'o> {
    /// The elements of the lanes (lanes past `count` repeat the last element).
    pub elems: [usize; LANES],
    /// Lanes holding distinct elements.
    pub count: usize,
    /// Each lane's restriction row (its element's node offsets).
    pub rows: [&'o [u32]; LANES],
    /// The run patterns of the batch's nodes, when recorded.
    pub runs: Option<BatchRuns<'o>>,
}

impl<'o> BatchNodes<'o> {
    /// The batch of up to [`LANES`] elements from `e0` to at most `end`.
    #[inline(always)]
    fn new(k: &KernelData<'o, impl Real>, nn: usize, e0: usize, end: usize) -> BatchNodes<'o> {
        let count = LANES.min(end - e0);
        let mut elems = [0; LANES];
        let mut rows: [&[u32]; LANES] = [&[]; LANES];
        for l in 0..LANES {
            let e = e0 + l.min(count - 1);
            elems[l] = e;
            rows[l] = &k.offsets[e * nn..(e + 1) * nn];
        }
        BatchNodes {
            elems,
            count,
            rows,
            runs: k.runs.batch(e0, count),
        }
    }

    /// Gathers component `c` of `x` (`nc` components per node) into `u`, one lane array
    /// per node.
    #[inline(always)]
    fn gather<T: Real>(&self, x: &[T], nc: usize, c: usize, u: &mut [Lane<T>]) {
        match self.runs {
            // SAFETY: the offsets are below `num_nodes`, and `x` holds that many nodes (the
            // kernels assert it); the codes were recorded from these rows (one component).
            Some(runs) if nc == 1 => unsafe { gather_runs(runs, &self.rows, x, u) },
            _ => {
                for (i, ui) in u.iter_mut().enumerate() {
                    lanes_are_the_vector();
                    for l in 0..LANES {
                        let j = self.rows[l][i] as usize * nc + c;
                        // SAFETY: `j < num_nodes · nc <= x.len()` (offsets below
                        // `num_nodes`, the length the kernels assert).
                        ui[l] = unsafe { *x.get_unchecked(j) };
                    }
                }
            }
        }
    }
}

/// Signature of a kernel instance: apply the element operator of physics `P` to the
/// elements in `range` of `x` (an L-vector) and hand the results to `sink`.
pub(crate) type RangeFn<T, P> =
    fn(&KernelData<'_, T>, &P, Range<usize>, &mut Scratch<T>, &[T], &mut dyn BatchSink<T>);

/// `v · s`, one scalar for all lanes.
#[inline(always)]
fn scaled<T: Real>(v: Lane<T>, s: T) -> Lane<T> {
    let mut o = v;
    for x in &mut o {
        *x *= s;
    }
    o
}

/// Interpolation `N^d → Q^d` (or its transpose `Q^d → N^d` with `bt` and swapped sizes).
#[inline(always)]
fn interp<T: Real, const FMA: bool>(
    dim: usize,
    n: usize,
    q: usize,
    b: &[T],
    u: &[Lane<T>],
    t1: &mut [Lane<T>],
    t2: &mut [Lane<T>],
    out: &mut [Lane<T>],
) {
    if dim == 2 {
        contract::<T, FMA, false>(b, q, n, n, 1, u, t1);
        contract::<T, FMA, false>(b, q, n, 1, q, t1, out);
    } else {
        contract::<T, FMA, false>(b, q, n, n * n, 1, u, t1);
        contract::<T, FMA, false>(b, q, n, n, q, t1, t2);
        contract::<T, FMA, false>(b, q, n, 1, q * q, t2, out);
    }
}

/// Reference gradient at the points with the collocated derivative: `g[a] = D̂_a uq`.
#[inline(always)]
fn grad<T: Real, const FMA: bool>(
    dim: usize,
    q: usize,
    d: &[T],
    uq: &[Lane<T>],
    g: &mut [Lane<T>],
) {
    let nq = q.pow(dim as u32);
    let mut post = 1;
    for a in 0..dim {
        let pre = nq / (q * post);
        contract::<T, FMA, false>(d, q, q, pre, post, uq, &mut g[a * nq..(a + 1) * nq]);
        post *= q;
    }
}

/// Transposed gradient: `out (+)= Σ_a D̂_aᵀ g[a]` (`add` keeps what `out` holds).
#[inline(always)]
fn grad_t<T: Real, const FMA: bool>(
    dim: usize,
    q: usize,
    dt: &[T],
    g: &[Lane<T>],
    out: &mut [Lane<T>],
    add: bool,
) {
    let nq = q.pow(dim as u32);
    let mut post = 1;
    for a in 0..dim {
        let pre = nq / (q * post);
        let ga = &g[a * nq..(a + 1) * nq];
        if a == 0 && !add {
            contract::<T, FMA, false>(dt, q, q, pre, post, ga, out);
        } else {
            contract::<T, FMA, true>(dt, q, q, pre, post, ga, out);
        }
        post *= q;
    }
}

/// The quadrature data of the batch of `elems` (starting at `e0`) in lane layout, or, when
/// the physics reads compact data as it is, nothing and that compact data (in `per`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn batch_qdata<'s, T: Real, const FMA: bool>(
    k: &'s KernelData<'s, T>,
    dim: usize,
    nq: usize,
    e0: usize,
    elems: &[usize; LANES],
    per: &'s mut [Lane<T>; MAX_COMPACT],
    sgeo: &'s mut [Lane<T>],
    vd: &'s mut [Lane<T>],
) -> (&'s [Lane<T>], Option<CompactData<'s, T>>) {
    let geo = k.geo;
    let nf = geo.num_factors();
    // quadrature data of the batch in lane layout (none when compact data is handed
    // to the physics as it is)
    let mut compact = None;
    let geo_lanes: &[Lane<T>] = match (geo.source, geo.layout) {
        (GeometrySource::Stored, FactorLayout::Interleaved) if geo.compact.is_some() => {
            let cf = geo.compact.as_ref().expect("checked by the guard");
            let per = &mut per[..nf];
            if e0 % LANES == 0 {
                for (p, v) in per
                    .iter_mut()
                    .zip(&cf.per_elem[(e0 / LANES) * nf..(e0 / LANES + 1) * nf])
                {
                    *p = *v;
                }
            } else {
                for (l, &e) in elems.iter().enumerate() {
                    for (c, pc) in per.iter_mut().enumerate() {
                        lanes_are_the_vector();
                        pc[l] = cf.per_elem[(e / LANES) * nf + c][e % LANES];
                    }
                }
            }
            if k.reads_compact {
                compact = Some(CompactData {
                    per: &per[..nf],
                    scale: &cf.scale[..nf * nq],
                });
                &[]
            } else {
                for (c, &pc) in per.iter().enumerate() {
                    let out = &mut sgeo[c * nq..(c + 1) * nq];
                    for (o, &sc) in out.iter_mut().zip(&cf.scale[c * nq..(c + 1) * nq]) {
                        lanes_are_the_vector();
                        *o = scaled(pc, sc);
                    }
                }
                sgeo
            }
        }
        (GeometrySource::Stored, FactorLayout::Interleaved) if e0 % LANES == 0 => {
            let b = e0 / LANES;
            &geo.interleaved[b * nf * nq..(b + 1) * nf * nq]
        }
        (GeometrySource::OnTheFly, _) => {
            let per = geo.offsets_per_elem();
            let vd = &mut vd[..per];
            for (l, &e) in elems.iter().enumerate() {
                let src = &geo.vertex_offsets[e * per..(e + 1) * per];
                for (dst, &v) in vd.iter_mut().zip(src) {
                    lanes_are_the_vector();
                    dst[l] = v;
                }
            }
            lane_factors::<T, FMA>(dim, nq, vd, k.dphi, k.w, geo.has_metric, geo.has_mass, sgeo);
            sgeo
        }
        (GeometrySource::Stored, FactorLayout::ElementMajor) => {
            for (l, &e) in elems.iter().enumerate() {
                let src = &geo.factors[e * nf * nq..(e + 1) * nf * nq];
                for (dst, &v) in sgeo.iter_mut().zip(src) {
                    lanes_are_the_vector();
                    dst[l] = v;
                }
            }
            sgeo
        }
        (GeometrySource::Stored, FactorLayout::Interleaved) => {
            // a batch that does not start on a lane boundary (not produced by the
            // operator's task and block sizes, kept for safety)

            for (l, &e) in elems.iter().enumerate() {
                let (b, le) = (e / LANES, e % LANES);
                let src = &geo.interleaved[b * nf * nq..(b + 1) * nf * nq];
                for (dst, v) in sgeo.iter_mut().zip(src) {
                    lanes_are_the_vector();
                    dst[l] = v[le];
                }
            }
            sgeo
        }
    };
    (geo_lanes, compact)
}

/// Applies the element operator of physics `P` with kernel shape `K` to the elements in
/// `range`: per batch, gather every component and interpolate/differentiate it to the
/// points, run the physics on all components at once, then apply the transposed
/// contractions component by component and hand each result to `sink`.
#[inline(always)]
fn apply_range<T: Real, P: TensorPhysics<T> + ?Sized, const FMA: bool, const K: u8>(
    k: &KernelData<'_, T>,
    phys: &P,
    sz: Sizes,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    let (dim, n, q) = (sz.dim, sz.n, sz.q);
    let (nn, nq) = (sz.nodes(), sz.points());
    let nc = k.ncomp;
    let geo = k.geo;
    let nf = geo.num_factors();
    let (uses_v, uses_g) = (k.uses_value, k.uses_gradient);
    assert!(x.len() >= k.num_nodes * nc, "input shorter than the space");
    let mut sink = Out::of(sink);
    let mut e0 = range.start;
    let mut per = [zero::<T>(); MAX_COMPACT];
    while e0 < range.end {
        let bn = BatchNodes::new(k, nn, e0, range.end);
        let (geo_lanes, compact) = batch_qdata::<T, FMA>(
            k,
            dim,
            nq,
            e0,
            &bn.elems,
            &mut per,
            &mut s.geo[..nf * nq],
            &mut s.vd,
        );
        // gather: one lane array per node from the batch's index rows
        for c in 0..nc {
            bn.gather(x, nc, c, &mut s.u[c * nn..(c + 1) * nn]);
            let u = &s.u[c * nn..(c + 1) * nn];
            let gc = &mut s.g[c * dim * nq..(c + 1) * dim * nq];
            match K {
                INTERP => {
                    let uq = &mut s.uq[c * nq..(c + 1) * nq];
                    interp::<T, FMA>(dim, n, q, k.b, u, &mut s.t1, &mut s.t2, uq);
                }
                GAUSS => {
                    let uq = &mut s.uq[c * nq..(c + 1) * nq];
                    interp::<T, FMA>(dim, n, q, k.b, u, &mut s.t1, &mut s.t2, uq);
                    grad::<T, FMA>(dim, q, k.d, uq, gc);
                }
                _ => {
                    if uses_g {
                        grad::<T, FMA>(dim, q, k.d, u, gc);
                    }
                }
            }
        }
        let batch = PointBatch {
            dim,
            num_points: nq,
            qdata: geo_lanes,
            elems: &bn.elems,
            count: bn.count,
            fma: FMA,
            compact,
        };
        // collocated values live at the nodes: the physics works on the gathered ones
        let values = if K == COLLOC {
            &mut s.u[..nc * nn]
        } else {
            &mut s.uq[..nc * nq]
        };
        phys.apply(&batch, values, &mut s.g[..nc * dim * nq]);
        for c in 0..nc {
            let gc = &s.g[c * dim * nq..(c + 1) * dim * nq];
            match K {
                INTERP => {
                    let uq = &s.uq[c * nq..(c + 1) * nq];
                    interp::<T, FMA>(dim, q, n, k.bt, uq, &mut s.t1, &mut s.t2, &mut s.r);
                    sink.put(&bn, c, &s.r[..nn]);
                }
                GAUSS => {
                    let uq = &mut s.uq[c * nq..(c + 1) * nq];
                    grad_t::<T, FMA>(dim, q, k.dt, gc, uq, uses_v);
                    let uq = &s.uq[c * nq..(c + 1) * nq];
                    interp::<T, FMA>(dim, q, n, k.bt, uq, &mut s.t1, &mut s.t2, &mut s.r);
                    sink.put(&bn, c, &s.r[..nn]);
                }
                _ => {
                    if uses_v {
                        let uc = &mut s.u[c * nn..(c + 1) * nn];
                        if uses_g {
                            grad_t::<T, FMA>(dim, q, k.dt, gc, uc, true);
                        }
                        sink.put(&bn, c, &s.u[c * nn..(c + 1) * nn]);
                    } else {
                        grad_t::<T, FMA>(dim, q, k.dt, gc, &mut s.r, false);
                        sink.put(&bn, c, &s.r[..nn]);
                    }
                }
            }
        }
        e0 += bn.count;
    }
}

/// Reference gradient of one component on the `N × N` collocated points of a 2-D batch:
/// `g[0][j][i] = Σ_b D̂[i][b] u[j][b]` (along x, the fast index) and
/// `g[1][j][i] = Σ_b D̂[j][b] u[b][i]`. Fixed sizes, so the loops unroll and the node
/// values can stay in registers.
#[inline(always)]
fn grad2<T: Real, const FMA: bool, const N: usize>(
    d: &[[T; N]; N],
    u: &[[Lane<T>; N]; N],
    g: &mut [[[Lane<T>; N]; N]; 2],
) {
    for j in 0..N {
        for i in 0..N {
            lanes_are_the_vector();
            let mut a0 = scaled(u[j][0], d[i][0]);
            let mut a1 = scaled(u[0][i], d[j][0]);
            for b in 1..N {
                let (x0, x1) = (u[j][b], u[b][i]);
                for l in 0..LANES {
                    a0[l] = madd::<T, FMA>(a0[l], d[i][b], x0[l]);
                    a1[l] = madd::<T, FMA>(a1[l], d[j][b], x1[l]);
                }
            }
            g[0][j][i] = a0;
            g[1][j][i] = a1;
        }
    }
}

/// Transposed [`grad2`]: `r[j][i] = base[j][i] + Σ_a D̂[a][i] g[0][j][a] + Σ_a D̂[a][j]
/// g[1][a][i]` (no base: zero), the x terms first (the order of [`grad_t`]).
#[inline(always)]
fn grad2_t<T: Real, const FMA: bool, const N: usize>(
    d: &[[T; N]; N],
    g: &[[[Lane<T>; N]; N]; 2],
    base: Option<&[[Lane<T>; N]; N]>,
    r: &mut [[Lane<T>; N]; N],
) {
    for j in 0..N {
        for i in 0..N {
            lanes_are_the_vector();
            let mut acc = base.map_or_else(zero, |b| b[j][i]);
            for a in 0..N {
                let x0 = g[0][j][a];
                for l in 0..LANES {
                    acc[l] = madd::<T, FMA>(acc[l], d[a][i], x0[l]);
                }
            }
            for a in 0..N {
                let x1 = g[1][a][i];
                for l in 0..LANES {
                    acc[l] = madd::<T, FMA>(acc[l], d[a][j], x1[l]);
                }
            }
            r[j][i] = acc;
        }
    }
}

/// The first `M · N · N` lanes of `v` as `M` blocks of `N × N` lanes (`[block][y][x]`),
/// so that the fixed-size kernels index them with constants.
#[inline(always)]
fn blocks<T, const N: usize, const M: usize>(v: &mut [Lane<T>]) -> &mut [[[Lane<T>; N]; N]; M] {
    let v = &mut v[..M * N * N];
    // SAFETY: `[[[Lane<T>; N]; N]; M]` is laid out as `M · N · N` consecutive lanes, which
    // `v` holds, with the alignment of a lane; the borrow is `v`'s.
    unsafe { &mut *v.as_mut_ptr().cast::<[[[Lane<T>; N]; N]; M]>() }
}

/// The gradient blocks (x, then y) of component `c` of the gradients `g` of a 2-D batch
/// (`[component][direction][point]` lanes, the physics' layout).
#[inline(always)]
fn gradient_pair<T, const N: usize>(g: &mut [Lane<T>], c: usize) -> &mut [[[Lane<T>; N]; N]; 2] {
    blocks::<T, N, 2>(&mut g[2 * c * N * N..])
}

/// The collocated 2-D kernel (BP3.5's shape, the 2-D spectral-element stiffness) with `N`
/// nodes per direction and `NC` components: per batch, the node values and the gradients
/// are fixed-size local arrays rather than slices of the work arrays, so gather, gradient,
/// physics, transposed gradient and accumulation run without loop bookkeeping and mostly
/// in registers. The results equal [`apply_range`]'s (the same sums, in the same order
/// of the terms within each contraction). Faster than [`apply_range`] at orders 2 and 3
/// (5–10 % of the wave step, `f32`, Zen 5), equal at 4.
#[inline(always)]
fn apply_colloc2<
    T: Real,
    P: TensorPhysics<T> + ?Sized,
    const FMA: bool,
    const N: usize,
    const NC: usize,
>(
    k: &KernelData<'_, T>,
    phys: &P,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    let nq = N * N;
    let nf = k.geo.num_factors();
    let (uses_v, uses_g) = (k.uses_value, k.uses_gradient);
    assert_eq!(k.ncomp, NC, "the instance's components");
    assert!(x.len() >= k.num_nodes * NC, "input shorter than the space");
    let d: [[T; N]; N] = std::array::from_fn(|i| std::array::from_fn(|b| k.d[i * N + b]));
    let mut sink = Out::of(sink);
    let mut e0 = range.start;
    let mut per = [zero::<T>(); MAX_COMPACT];
    while e0 < range.end {
        let bn = BatchNodes::new(k, nq, e0, range.end);
        let (geo_lanes, compact) = batch_qdata::<T, FMA>(
            k,
            2,
            nq,
            e0,
            &bn.elems,
            &mut per,
            &mut s.geo[..nf * nq],
            &mut s.vd,
        );
        for c in 0..NC {
            bn.gather(x, NC, c, &mut s.u[c * nq..(c + 1) * nq]);
        }
        if uses_g {
            let u = blocks::<T, N, NC>(&mut s.u);
            for (c, uc) in u.iter().enumerate() {
                grad2::<T, FMA, N>(&d, uc, gradient_pair::<T, N>(&mut s.g, c));
            }
        }
        let batch = PointBatch {
            dim: 2,
            num_points: nq,
            qdata: geo_lanes,
            elems: &bn.elems,
            count: bn.count,
            fma: FMA,
            compact,
        };
        phys.apply(&batch, &mut s.u[..NC * nq], &mut s.g[..2 * NC * nq]);
        for c in 0..NC {
            let r = &mut blocks::<T, N, 1>(&mut s.r)[0];
            let u = &blocks::<T, N, NC>(&mut s.u)[c];
            match (uses_v, uses_g) {
                (_, true) => grad2_t::<T, FMA, N>(
                    &d,
                    gradient_pair::<T, N>(&mut s.g, c),
                    uses_v.then_some(u),
                    r,
                ),
                (true, false) => *r = *u,
                (false, false) => *r = [[zero(); N]; N],
            }
            match (&sink, bn.runs) {
                (Out::Direct(d), Some(runs)) if NC == 1 && runs.all_full => {
                    d.add_runs_folded::<N>(bn.rows[0], r)
                }
                _ => sink.put(&bn, c, &s.r[..nq]),
            }
        }
        e0 += bn.count;
    }
}

/// The kernel of the const-size instances: [`apply_colloc2`] for the collocated 2-D shape
/// with one or two components, [`apply_range`] otherwise.
#[inline(always)]
fn apply_const<
    T: Real,
    P: TensorPhysics<T> + ?Sized,
    const FMA: bool,
    const K: u8,
    const D: usize,
    const N: usize,
    const Q: usize,
>(
    k: &KernelData<'_, T>,
    phys: &P,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    if K == COLLOC && D == 2 && N == Q {
        match k.ncomp {
            1 => return apply_colloc2::<T, P, FMA, N, 1>(k, phys, range, s, x, sink),
            2 => return apply_colloc2::<T, P, FMA, N, 2>(k, phys, range, s, x, sink),
            _ => {}
        }
    }
    let sz = Sizes { dim: D, n: N, q: Q };
    apply_range::<T, P, FMA, K>(k, phys, sz, range, s, x, sink)
}

/// Const-size instance without FMA (runs on every target).
fn run_base<
    T: Real,
    P: TensorPhysics<T>,
    const K: u8,
    const D: usize,
    const N: usize,
    const Q: usize,
>(
    k: &KernelData<'_, T>,
    phys: &P,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    debug_assert_eq!(Sizes { dim: D, n: N, q: Q }, k.sizes);
    apply_const::<T, P, false, K, D, N, Q>(k, phys, range, s, x, sink)
}

/// Dynamic-size instance without FMA.
fn run_base_dyn<T: Real, P: TensorPhysics<T>, const K: u8>(
    k: &KernelData<'_, T>,
    phys: &P,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    apply_range::<T, P, false, K>(k, phys, k.sizes, range, s, x, sink)
}

/// Defines a module of kernel instances compiled with the target features `$features`,
/// selected only when the processor has them (`$detect`).
macro_rules! simd_instances {
    ($module:ident, $features:literal, $detect:expr) => {
        #[cfg(target_arch = "x86_64")]
        mod $module {
            //! Instances compiled with extra target features, selected only when the
            //! processor has them.
            use super::*;

            /// # Safety
            /// The processor must support the module's target features.
            #[target_feature(enable = $features)]
            unsafe fn range_simd<
                T: Real,
                P: TensorPhysics<T>,
                const K: u8,
                const D: usize,
                const N: usize,
                const Q: usize,
            >(
                k: &KernelData<'_, T>,
                phys: &P,
                range: Range<usize>,
                s: &mut Scratch<T>,
                x: &[T],
                sink: &mut dyn BatchSink<T>,
            ) {
                apply_const::<T, P, true, K, D, N, Q>(k, phys, range, s, x, sink)
            }

            /// # Safety
            /// The processor must support the module's target features.
            #[target_feature(enable = $features)]
            unsafe fn range_simd_dyn<T: Real, P: TensorPhysics<T>, const K: u8>(
                k: &KernelData<'_, T>,
                phys: &P,
                range: Range<usize>,
                s: &mut Scratch<T>,
                x: &[T],
                sink: &mut dyn BatchSink<T>,
            ) {
                apply_range::<T, P, true, K>(k, phys, k.sizes, range, s, x, sink)
            }

            /// Const-size instance. Only the selection functions hand it out, and only
            /// after [`available`] returned true.
            pub(super) fn run<
                T: Real,
                P: TensorPhysics<T>,
                const K: u8,
                const D: usize,
                const N: usize,
                const Q: usize,
            >(
                k: &KernelData<'_, T>,
                phys: &P,
                range: Range<usize>,
                s: &mut Scratch<T>,
                x: &[T],
                sink: &mut dyn BatchSink<T>,
            ) {
                // SAFETY: selected only when `available()` detected the features.
                unsafe { range_simd::<T, P, K, D, N, Q>(k, phys, range, s, x, sink) }
            }

            /// Dynamic-size instance (same contract as [`run`]).
            pub(super) fn run_dyn<T: Real, P: TensorPhysics<T>, const K: u8>(
                k: &KernelData<'_, T>,
                phys: &P,
                range: Range<usize>,
                s: &mut Scratch<T>,
                x: &[T],
                sink: &mut dyn BatchSink<T>,
            ) {
                // SAFETY: as in `run`.
                unsafe { range_simd_dyn::<T, P, K>(k, phys, range, s, x, sink) }
            }

            /// Whether this processor has the module's target features.
            pub(super) fn available() -> bool {
                $detect
            }
        }
    };
}

simd_instances!(
    fma,
    "avx2,fma",
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
);
simd_instances!(
    avx512,
    "avx512f,avx512vl,avx2,fma",
    std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
        && std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
);

/// The instruction set the kernels use on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    /// Baseline instructions of the target (SSE2 on x86-64).
    Baseline,
    /// AVX2 with fused multiply-add (x86-64, detected at run time).
    Avx2Fma,
    /// AVX-512 (foundation and vector-length extensions) with FMA: twice the vector
    /// registers, and eight `f64` lanes in one register (x86-64, detected at run time).
    Avx512,
}

impl SimdLevel {
    /// The best level this processor supports.
    pub fn detect() -> SimdLevel {
        #[cfg(target_arch = "x86_64")]
        {
            if avx512::available() {
                return SimdLevel::Avx512;
            }
            if fma::available() {
                return SimdLevel::Avx2Fma;
            }
        }
        SimdLevel::Baseline
    }

    /// `self` if this processor supports it, else the best level below it that it does.
    pub fn supported(self) -> SimdLevel {
        self.min(SimdLevel::detect())
    }
}

/// The instance set that runs a physics of one's own at `level` on this processor for
/// scalar type `T`: AVX-512 serves its `f32` kernels only. Its `apply` may loop over points
/// in a way the compiler vectorises across points with gathers when it targets AVX-512
/// (the built-in physics keep their loops scalar with [`lanes_are_the_vector`]); for `f64`
/// that made kernels 1.5 to 2.4 times slower than the AVX2 ones (Zen 5), for `f32` the
/// AVX-512 build still gained.
pub(crate) fn simd_set<T: Real>(level: SimdLevel) -> SimdLevel {
    match level.supported() {
        SimdLevel::Avx512 if T::BYTES != 4 => SimdLevel::Avx2Fma,
        l => l,
    }
}

/// Defines, for one built-in physics, a non-generic selection function per scalar type:
/// every kernel instance of that physics is compiled once, in this crate, rather than again
/// in each crate that builds an operator. The built-in instances run at the best level the
/// processor has, AVX-512 included, in `f64` and `f32`: on Zen 5 the AVX-512 kernels were
/// as fast as the AVX2 ones or faster, up to 1.9 times in the 3-D BP operators (`f64`) and
/// 5 to 10 % in the 2-D wave step (`f32`). `gauss`/`colloc` say which shapes get const-size
/// specialisations (orders 1..=8 at the default number of points); the others run the
/// dynamic-size kernel.
macro_rules! built_in_selection {
    ($name:ident, $P:ty, $T:ty, gauss: $gauss:tt, colloc: $colloc:tt, simd: [$($m:ident = $lvl:ident),*]) => {
        #[inline(never)]
        pub(crate) fn $name(shape: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<$T, $P> {
            #[cfg(target_arch = "x86_64")]
            {
                let set = level.supported();
                $(
                    if set == SimdLevel::$lvl {
                        use $m::{run, run_dyn};
                        return built_in_selection!(@shapes run, run_dyn, $T, $P, shape, sizes, $gauss, $colloc);
                    }
                )*
            }
            let _ = level;
            built_in_selection!(@shapes run_base, run_base_dyn, $T, $P, shape, sizes, $gauss, $colloc)
        }
    };
    (@shapes $run:ident, $dyn:ident, $T:ty, $P:ty, $shape:expr, $sizes:expr, [$($gk:expr),*], $colloc:tt) => {{
        $(
            if $shape == $gk {
                return pick_gauss!($run, $dyn, $T, $P, $gk, $sizes; 2, 3, 4, 5, 6, 7, 8, 9);
            }
        )*
        built_in_selection!(@colloc $colloc, $run, $dyn, $T, $P, $shape, $sizes)
    }};
    (@colloc true, $run:ident, $dyn:ident, $T:ty, $P:ty, $shape:expr, $sizes:expr) => {
        match $shape {
            COLLOC => pick_colloc!($run, $dyn, $T, $P, $sizes; 2, 3, 4, 5, 6, 7, 8, 9),
            INTERP => $dyn::<$T, $P, INTERP>,
            _ => $dyn::<$T, $P, GAUSS>,
        }
    };
    (@colloc false, $run:ident, $dyn:ident, $T:ty, $P:ty, $shape:expr, $sizes:expr) => {
        match $shape {
            COLLOC => $dyn::<$T, $P, COLLOC>,
            INTERP => $dyn::<$T, $P, INTERP>,
            _ => $dyn::<$T, $P, GAUSS>,
        }
    };
}

built_in_selection!(mass_f64, Mass, f64, gauss: [INTERP], colloc: false, simd: [avx512 = Avx512, fma = Avx2Fma]);
built_in_selection!(mass_f32, Mass, f32, gauss: [INTERP], colloc: false, simd: [avx512 = Avx512, fma = Avx2Fma]);
built_in_selection!(diffusion_f64, Diffusion, f64, gauss: [GAUSS], colloc: true, simd: [avx512 = Avx512, fma = Avx2Fma]);
built_in_selection!(diffusion_f32, Diffusion, f32, gauss: [GAUSS], colloc: true, simd: [avx512 = Avx512, fma = Avx2Fma]);
built_in_selection!(elastic_f64, Elastic, f64, gauss: [], colloc: true, simd: [avx512 = Avx512, fma = Avx2Fma]);
built_in_selection!(elastic_f32, Elastic, f32, gauss: [], colloc: true, simd: [avx512 = Avx512, fma = Avx2Fma]);

/// The dynamic-size kernel of any physics (a physics of one's own).
pub(crate) fn select_dyn<T: Real, P: TensorPhysics<T>>(
    shape: u8,
    level: SimdLevel,
) -> RangeFn<T, P> {
    #[cfg(target_arch = "x86_64")]
    match simd_set::<T>(level) {
        SimdLevel::Avx512 => {
            return match shape {
                INTERP => avx512::run_dyn::<T, P, INTERP>,
                GAUSS => avx512::run_dyn::<T, P, GAUSS>,
                _ => avx512::run_dyn::<T, P, COLLOC>,
            };
        }
        SimdLevel::Avx2Fma => {
            return match shape {
                INTERP => fma::run_dyn::<T, P, INTERP>,
                GAUSS => fma::run_dyn::<T, P, GAUSS>,
                _ => fma::run_dyn::<T, P, COLLOC>,
            };
        }
        SimdLevel::Baseline => {}
    }
    let _ = level;
    match shape {
        INTERP => run_base_dyn::<T, P, INTERP>,
        GAUSS => run_base_dyn::<T, P, GAUSS>,
        _ => run_base_dyn::<T, P, COLLOC>,
    }
}

/// Picks the `f64` or `f32` instance of a built-in physics for a generic scalar type
/// (`Real` has no other types; a third one would get the dynamic kernel).
macro_rules! select_built_in {
    ($fname:ident, $P:ty, $f64:ident, $f32:ident) => {
        /// The kernel instance of this built-in physics for `T`, shape and sizes.
        pub(crate) fn $fname<T: Real>(shape: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<T, $P> {
            use std::any::{Any, TypeId};
            let f: Box<dyn Any> = if TypeId::of::<T>() == TypeId::of::<f64>() {
                Box::new($f64(shape, sizes, level))
            } else if TypeId::of::<T>() == TypeId::of::<f32>() {
                Box::new($f32(shape, sizes, level))
            } else {
                Box::new(())
            };
            match f.downcast::<RangeFn<T, $P>>() {
                Ok(f) => *f,
                Err(_) => select_dyn::<T, $P>(shape, level),
            }
        }
    };
}

select_built_in!(select_mass, Mass, mass_f64, mass_f32);
select_built_in!(select_diffusion, Diffusion, diffusion_f64, diffusion_f32);
select_built_in!(select_elastic, Elastic, elastic_f64, elastic_f32);
