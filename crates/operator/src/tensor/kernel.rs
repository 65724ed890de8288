//! The batched element kernels: gather, sum-factorised interpolation and gradient,
//! pointwise geometry, transposed contractions and the hand-off of the element results,
//! for a batch of [`LANES`] elements at a time.
//!
//! Every kernel is written once with run-time sizes and `#[inline(always)]`; the
//! const-generic entry points pass compile-time sizes (`D`, `N = p + 1`, `Q`), so each
//! specialisation has fixed loop bounds, while the dynamic entry point serves any order.
//! On x86-64 a second set of instances is compiled with AVX2 and FMA enabled and chosen
//! at run time when the processor has them; the baseline instances run on any x86-64.

use super::geometry::lane_factors;
use super::lanes::{contract, madd, zero, Lane, LANES};
use super::{FactorLayout, TensorGeometry};
use ferrofem_base::Real;
use ferrofem_geometry::GeometrySource;
use std::ops::Range;

/// Expands to a `match` over the specialised sizes (orders 1..=8 at the default number of
/// points), returning the instance of `$run` for those and of `$dyn` otherwise.
macro_rules! pick {
    ($run:ident, $dyn:ident, $T:ty, $kind:expr, $s:expr; $($N:literal),*) => {
        match ($kind, $s.dim, $s.n, $s.q) {
            $(
                (MASS, 2, $N, q) if q == $N + 1 => $run::<$T, MASS, 2, $N, { $N + 1 }>,
                (MASS, 3, $N, q) if q == $N + 1 => $run::<$T, MASS, 3, $N, { $N + 1 }>,
                (DIFFUSION, 2, $N, q) if q == $N + 1 => $run::<$T, DIFFUSION, 2, $N, { $N + 1 }>,
                (DIFFUSION, 3, $N, q) if q == $N + 1 => $run::<$T, DIFFUSION, 3, $N, { $N + 1 }>,
                (COLLOCATED, 2, $N, $N) => $run::<$T, COLLOCATED, 2, $N, $N>,
                (COLLOCATED, 3, $N, $N) => $run::<$T, COLLOCATED, 3, $N, $N>,
            )*
            (MASS, ..) => $dyn::<$T, MASS>,
            (DIFFUSION, ..) => $dyn::<$T, DIFFUSION>,
            _ => $dyn::<$T, COLLOCATED>,
        }
    };
}

/// Kernel kind: mass `∫ v u` at the quadrature points (BP1).
pub(crate) const MASS: u8 = 0;
/// Kernel kind: `∫ ∇v·∇u (+ α v u)` with interpolation to Gauss points (BP3).
pub(crate) const DIFFUSION: u8 = 1;
/// Kernel kind: the same collocated at the GLL nodes (BP3.5 / CEED BP5).
pub(crate) const COLLOCATED: u8 = 2;

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
    /// Coefficient of the mass term of diffusion kernels.
    pub alpha: T,
    /// Whether diffusion kernels have a mass term (`α ≠ 0`).
    pub has_alpha: bool,
    /// Geometry.
    pub geo: &'a TensorGeometry<T>,
    /// Map derivatives `[point][k][v - 1]` for on-the-fly geometry.
    pub dphi: &'a [T],
    /// Tensor quadrature weights.
    pub w: &'a [T],
    /// Restriction offsets, `nodes` per element.
    pub offsets: &'a [u32],
    /// Components per node.
    pub ncomp: usize,
}

/// Per-thread work arrays of a kernel (lane layout).
pub(crate) struct Scratch<T> {
    u: Vec<Lane<T>>,
    t1: Vec<Lane<T>>,
    t2: Vec<Lane<T>>,
    uq: Vec<Lane<T>>,
    g: Vec<Lane<T>>,
    geo: Vec<Lane<T>>,
    vd: Vec<Lane<T>>,
    r: Vec<Lane<T>>,
}

impl<T: Real> Scratch<T> {
    /// Work arrays of no size (a placeholder that allocates nothing).
    pub(crate) fn empty() -> Scratch<T> {
        Scratch {
            u: Vec::new(),
            t1: Vec::new(),
            t2: Vec::new(),
            uq: Vec::new(),
            g: Vec::new(),
            geo: Vec::new(),
            vd: Vec::new(),
            r: Vec::new(),
        }
    }

    pub(crate) fn new(s: Sizes, num_factors: usize) -> Scratch<T> {
        let (nn, nq, nw) = (s.nodes(), s.points(), s.work());
        Scratch {
            u: vec![zero(); nn],
            t1: vec![zero(); nw],
            t2: vec![zero(); nw],
            uq: vec![zero(); nq.max(nn)],
            g: vec![zero(); s.dim * nq],
            geo: vec![zero(); num_factors * nq],
            vd: vec![zero(); s.dim * ((1 << s.dim) - 1)],
            r: vec![zero(); nn],
        }
    }
}

/// Receives the element results of a batch.
pub(crate) trait BatchSink<T> {
    /// Component `comp` of the results `r` (`nodes` lanes) of elements `elems[..count]`.
    fn put(&mut self, elems: &[usize; LANES], count: usize, comp: usize, r: &[Lane<T>]);
}

/// Signature of a kernel instance: apply the element operator to the elements in `range`
/// of `x` (an L-vector) and hand the results to `sink`.
pub(crate) type RangeFn<T> =
    fn(&KernelData<'_, T>, Range<usize>, &mut Scratch<T>, &[T], &mut dyn BatchSink<T>);

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

/// `g ← G g` at every point, and `m ← α (w det J) m` when `alpha` is given.
#[inline(always)]
fn pointwise_diffusion<T: Real, const FMA: bool>(
    dim: usize,
    nq: usize,
    geo: &[Lane<T>],
    g: &mut [Lane<T>],
    m: &mut [Lane<T>],
    alpha: Option<T>,
) {
    if dim == 2 {
        let (g0, g1) = g[..2 * nq].split_at_mut(nq);
        let (f0, rest) = geo[..3 * nq].split_at(nq);
        let (f1, f2) = rest.split_at(nq);
        for i in 0..nq {
            let (x, y) = (g0[i], g1[i]);
            let (a, b, c) = (f0[i], f1[i], f2[i]);
            let mut o0 = zero::<T>();
            let mut o1 = zero::<T>();
            for l in 0..LANES {
                o0[l] = madd::<T, FMA>(a[l] * x[l], b[l], y[l]);
                o1[l] = madd::<T, FMA>(b[l] * x[l], c[l], y[l]);
            }
            g0[i] = o0;
            g1[i] = o1;
        }
        if let Some(alpha) = alpha {
            scale_mass(alpha, &geo[3 * nq..4 * nq], &mut m[..nq]);
        }
    } else {
        let (g0, rest) = g[..3 * nq].split_at_mut(nq);
        let (g1, g2) = rest.split_at_mut(nq);
        let f = &geo[..6 * nq];
        for i in 0..nq {
            let (x, y, z) = (g0[i], g1[i], g2[i]);
            let (f00, f01, f02) = (f[i], f[nq + i], f[2 * nq + i]);
            let (f11, f12, f22) = (f[3 * nq + i], f[4 * nq + i], f[5 * nq + i]);
            let mut o0 = zero::<T>();
            let mut o1 = zero::<T>();
            let mut o2 = zero::<T>();
            for l in 0..LANES {
                o0[l] = madd::<T, FMA>(madd::<T, FMA>(f00[l] * x[l], f01[l], y[l]), f02[l], z[l]);
                o1[l] = madd::<T, FMA>(madd::<T, FMA>(f01[l] * x[l], f11[l], y[l]), f12[l], z[l]);
                o2[l] = madd::<T, FMA>(madd::<T, FMA>(f02[l] * x[l], f12[l], y[l]), f22[l], z[l]);
            }
            g0[i] = o0;
            g1[i] = o1;
            g2[i] = o2;
        }
        if let Some(alpha) = alpha {
            scale_mass(alpha, &geo[6 * nq..7 * nq], &mut m[..nq]);
        }
    }
}

/// `m ← α w m` pointwise (lanes copied in and out so that the loop vectorises).
#[inline(always)]
fn scale_mass<T: Real>(alpha: T, w: &[Lane<T>], m: &mut [Lane<T>]) {
    for (mi, wi) in m.iter_mut().zip(w) {
        let (v, w) = (*mi, *wi);
        let mut o = zero::<T>();
        for l in 0..LANES {
            o[l] = alpha * w[l] * v[l];
        }
        *mi = o;
    }
}

/// Applies the element operator of kind `K` to the elements in `range`.
#[inline(always)]
fn apply_range<T: Real, const FMA: bool, const K: u8>(
    k: &KernelData<'_, T>,
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
    let alpha = if K != MASS && k.has_alpha {
        Some(k.alpha)
    } else {
        None
    };
    let mut e0 = range.start;
    while e0 < range.end {
        let count = LANES.min(range.end - e0);
        let elems: [usize; LANES] = std::array::from_fn(|l| e0 + l.min(count - 1));
        // geometry of the batch in lane layout
        let geo_lanes: &[Lane<T>] = match (geo.source, geo.layout) {
            (GeometrySource::Stored, FactorLayout::Interleaved) if e0 % LANES == 0 => {
                let b = e0 / LANES;
                &geo.interleaved[b * nf * nq..(b + 1) * nf * nq]
            }
            (GeometrySource::OnTheFly, _) => {
                let per = geo.offsets_per_elem();
                let vd = &mut s.vd[..per];
                for (l, &e) in elems.iter().enumerate() {
                    let src = &geo.vertex_offsets[e * per..(e + 1) * per];
                    for (dst, &v) in vd.iter_mut().zip(src) {
                        dst[l] = v;
                    }
                }
                let sgeo = &mut s.geo[..nf * nq];
                lane_factors::<T, FMA>(
                    dim,
                    nq,
                    vd,
                    k.dphi,
                    k.w,
                    geo.has_metric,
                    geo.has_mass,
                    sgeo,
                );
                sgeo
            }
            (GeometrySource::Stored, FactorLayout::ElementMajor) => {
                let sgeo = &mut s.geo[..nf * nq];
                for (l, &e) in elems.iter().enumerate() {
                    let src = &geo.factors[e * nf * nq..(e + 1) * nf * nq];
                    for (dst, &v) in sgeo.iter_mut().zip(src) {
                        dst[l] = v;
                    }
                }
                sgeo
            }
            (GeometrySource::Stored, FactorLayout::Interleaved) => {
                // a batch that does not start on a lane boundary (not produced by the
                // operator's task and block sizes, kept for safety)
                let sgeo = &mut s.geo[..nf * nq];
                for (l, &e) in elems.iter().enumerate() {
                    let (b, le) = (e / LANES, e % LANES);
                    let src = &geo.interleaved[b * nf * nq..(b + 1) * nf * nq];
                    for (dst, v) in sgeo.iter_mut().zip(src) {
                        dst[l] = v[le];
                    }
                }
                sgeo
            }
        };
        for c in 0..nc {
            // gather: one lane array per node from the batch's index rows
            let rows: [&[u32]; LANES] = std::array::from_fn(|l| {
                let e = elems[l];
                &k.offsets[e * nn..(e + 1) * nn]
            });
            let u = &mut s.u[..nn];
            if nc == 1 {
                for (i, ui) in u.iter_mut().enumerate() {
                    *ui = std::array::from_fn(|l| x[rows[l][i] as usize]);
                }
            } else {
                for (i, ui) in u.iter_mut().enumerate() {
                    *ui = std::array::from_fn(|l| x[rows[l][i] as usize * nc + c]);
                }
            }
            match K {
                MASS => {
                    let uq = &mut s.uq[..nq];
                    interp::<T, FMA>(dim, n, q, k.b, &s.u, &mut s.t1, &mut s.t2, uq);
                    scale_mass(T::one(), &geo_lanes[..nq], uq);
                    interp::<T, FMA>(dim, q, n, k.bt, &s.uq, &mut s.t1, &mut s.t2, &mut s.r);
                }
                DIFFUSION => {
                    interp::<T, FMA>(dim, n, q, k.b, &s.u, &mut s.t1, &mut s.t2, &mut s.uq);
                    grad::<T, FMA>(dim, q, k.d, &s.uq, &mut s.g);
                    pointwise_diffusion::<T, FMA>(dim, nq, geo_lanes, &mut s.g, &mut s.uq, alpha);
                    grad_t::<T, FMA>(dim, q, k.dt, &s.g, &mut s.uq, alpha.is_some());
                    interp::<T, FMA>(dim, q, n, k.bt, &s.uq, &mut s.t1, &mut s.t2, &mut s.r);
                }
                _ => {
                    grad::<T, FMA>(dim, q, k.d, &s.u, &mut s.g);
                    if alpha.is_some() {
                        s.r[..nn].copy_from_slice(&s.u[..nn]);
                    }
                    pointwise_diffusion::<T, FMA>(dim, nq, geo_lanes, &mut s.g, &mut s.r, alpha);
                    grad_t::<T, FMA>(dim, q, k.dt, &s.g, &mut s.r, alpha.is_some());
                }
            }
            sink.put(&elems, count, c, &s.r[..nn]);
        }
        e0 += count;
    }
}

/// Const-size instance without FMA (runs on every target).
fn run_base<T: Real, const K: u8, const D: usize, const N: usize, const Q: usize>(
    k: &KernelData<'_, T>,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    let sz = Sizes { dim: D, n: N, q: Q };
    debug_assert_eq!(sz, k.sizes);
    apply_range::<T, false, K>(k, sz, range, s, x, sink)
}

/// Dynamic-size instance without FMA.
fn run_base_dyn<T: Real, const K: u8>(
    k: &KernelData<'_, T>,
    range: Range<usize>,
    s: &mut Scratch<T>,
    x: &[T],
    sink: &mut dyn BatchSink<T>,
) {
    apply_range::<T, false, K>(k, k.sizes, range, s, x, sink)
}

#[cfg(target_arch = "x86_64")]
mod fma {
    //! Instances compiled with AVX2 and FMA, selected only when the processor has both.
    use super::*;

    /// # Safety
    /// The processor must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn range_fma<T: Real, const K: u8, const D: usize, const N: usize, const Q: usize>(
        k: &KernelData<'_, T>,
        range: Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn BatchSink<T>,
    ) {
        apply_range::<T, true, K>(k, Sizes { dim: D, n: N, q: Q }, range, s, x, sink)
    }

    /// # Safety
    /// The processor must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn range_fma_dyn<T: Real, const K: u8>(
        k: &KernelData<'_, T>,
        range: Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn BatchSink<T>,
    ) {
        apply_range::<T, true, K>(k, k.sizes, range, s, x, sink)
    }

    /// Const-size FMA instance. Only [`select`](super::select) hands it out, and only
    /// after [`available`] returned true.
    pub(super) fn run<T: Real, const K: u8, const D: usize, const N: usize, const Q: usize>(
        k: &KernelData<'_, T>,
        range: Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn BatchSink<T>,
    ) {
        // SAFETY: this instance is selected only when `available()` detected AVX2 and FMA.
        unsafe { range_fma::<T, K, D, N, Q>(k, range, s, x, sink) }
    }

    /// Dynamic-size FMA instance (same contract as [`run`]).
    pub(super) fn run_dyn<T: Real, const K: u8>(
        k: &KernelData<'_, T>,
        range: Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn BatchSink<T>,
    ) {
        // SAFETY: as in `run`.
        unsafe { range_fma_dyn::<T, K>(k, range, s, x, sink) }
    }

    /// The FMA instance for `kind` and `sizes` (see [`super::select`]).
    pub(super) fn select<T: Real>(kind: u8, sizes: Sizes) -> RangeFn<T> {
        pick!(run, run_dyn, T, kind, sizes; 2, 3, 4, 5, 6, 7, 8, 9)
    }

    /// Whether this processor has AVX2 and FMA.
    pub(super) fn available() -> bool {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
}

/// The instruction set the kernels use on this machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimdLevel {
    /// Baseline instructions of the target (SSE2 on x86-64).
    Baseline,
    /// AVX2 with fused multiply-add (x86-64, detected at run time).
    Avx2Fma,
}

impl SimdLevel {
    /// The best level this processor supports.
    pub fn detect() -> SimdLevel {
        #[cfg(target_arch = "x86_64")]
        if fma::available() {
            return SimdLevel::Avx2Fma;
        }
        SimdLevel::Baseline
    }
}

/// [`select`] for `f64`. Not generic and not inlined, so that every kernel instance is
/// compiled once, in this crate, rather than again in each crate that uses the operator.
#[inline(never)]
fn select_f64(kind: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<f64> {
    select::<f64>(kind, sizes, level)
}

/// [`select`] for `f32` (see [`select_f64`]).
#[inline(never)]
fn select_f32(kind: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<f32> {
    select::<f32>(kind, sizes, level)
}

/// The kernel instance for scalar type `T` (see [`select`]), taken from the instances
/// compiled in this crate for `f64` and `f32`. A scalar type other than those two (`Real`
/// has no others today) gets the dynamic-size baseline kernel.
pub(crate) fn select_for<T: Real>(kind: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<T> {
    use std::any::{Any, TypeId};
    let f: Box<dyn Any> = if TypeId::of::<T>() == TypeId::of::<f64>() {
        Box::new(select_f64(kind, sizes, level))
    } else if TypeId::of::<T>() == TypeId::of::<f32>() {
        Box::new(select_f32(kind, sizes, level))
    } else {
        Box::new(())
    };
    match f.downcast::<RangeFn<T>>() {
        Ok(f) => *f,
        Err(_) => match kind {
            MASS => run_base_dyn::<T, MASS>,
            DIFFUSION => run_base_dyn::<T, DIFFUSION>,
            _ => run_base_dyn::<T, COLLOCATED>,
        },
    }
}

/// The kernel instance for `kind` and `sizes`: a const-size specialisation for orders
/// 1..=8 at the default number of points (`q = p + 2` Gauss, `q = p + 1` collocated),
/// the dynamic one otherwise. `Avx2Fma` is only honoured where it was detected.
fn select<T: Real>(kind: u8, sizes: Sizes, level: SimdLevel) -> RangeFn<T> {
    #[cfg(target_arch = "x86_64")]
    if level == SimdLevel::Avx2Fma && fma::available() {
        return fma::select::<T>(kind, sizes);
    }
    let _ = level;
    pick!(run_base, run_base_dyn, T, kind, sizes; 2, 3, 4, 5, 6, 7, 8, 9)
}
