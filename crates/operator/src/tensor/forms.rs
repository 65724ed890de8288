//! The built-in pointwise physics of the tensor-product operators: the weighted mass
//! (BP1; collocated, the lumped SEM mass), diffusion with a coefficient (BP3/BP3.5; with
//! `1/ρ`, the acoustic stiffness) and isotropic linear elasticity (the elastic stiffness).

use super::lanes::{lanes_are_the_vector, madd, zero, Lane, LANES};
use super::physics::{Coefficient, CompactData, PointBatch, PointGeometry, TensorPhysics};
use ferrofem_base::Real;

/// `∫ ρ v·u`: every component weighted by `ρ w det J` (quadrature data: that one value).
#[derive(Clone, Debug)]
pub struct Mass {
    /// Components (the same weight on each).
    pub ncomp: usize,
    /// The density `ρ`.
    pub rho: Coefficient,
}

impl Mass {
    /// The unweighted mass of BP1 (`ρ = 1`).
    pub fn unit(ncomp: usize) -> Mass {
        Mass {
            ncomp,
            rho: Coefficient::Constant(1.0),
        }
    }
}

impl<T: Real> TensorPhysics<T> for Mass {
    fn name(&self) -> &str {
        "mass"
    }
    fn ncomp(&self) -> usize {
        self.ncomp
    }
    fn uses_value(&self) -> bool {
        true
    }
    fn uses_gradient(&self) -> bool {
        false
    }
    fn qdata_len(&self, _dim: usize) -> usize {
        1
    }
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]) {
        out[0] = at.wdetj() * self.rho.at(at);
    }
    fn affine_weighting(&self, _dim: usize) -> Option<Vec<bool>> {
        self.rho.is_cellwise().then(|| vec![true])
    }
    fn plain_geometry(&self) -> bool {
        self.rho.is_one()
    }
    fn reads_compact(&self) -> bool {
        true
    }
    #[inline(always)]
    fn apply(&self, b: &PointBatch<'_, T>, v: &mut [Lane<T>], _g: &mut [Lane<T>]) {
        let nq = b.num_points;
        for c in 0..self.ncomp {
            let vc = &mut v[c * nq..(c + 1) * nq];
            match b.compact {
                Some(cd) => scale(vc, Compact(cd, nq), 0, T::one()),
                None => scale(vc, Full(b.qdata, nq), 0, T::one()),
            }
        }
    }
    fn flops_per_point(&self, _dim: usize) -> f64 {
        self.ncomp as f64
    }
}

/// `∫ κ ∇v:∇u + α v·u` on every component: the diffusion of BP3/BP3.5 (`κ = 1`), the
/// acoustic stiffness (`κ = 1/ρ`, `α = 0`). Quadrature data: the packed metric times `κ`
/// (`d(d+1)/2` values), then `w det J` when `α ≠ 0`.
#[derive(Clone, Debug)]
pub struct Diffusion {
    /// Components (the same scalar operator on each).
    pub ncomp: usize,
    /// The diffusivity `κ`.
    pub kappa: Coefficient,
    /// The screening coefficient `α` (a constant).
    pub alpha: f64,
}

impl Diffusion {
    /// The bake-off diffusion: `κ = 1`.
    pub fn unit(ncomp: usize, alpha: f64) -> Diffusion {
        Diffusion {
            ncomp,
            kappa: Coefficient::Constant(1.0),
            alpha,
        }
    }
}

impl<T: Real> TensorPhysics<T> for Diffusion {
    fn name(&self) -> &str {
        "diffusion"
    }
    fn ncomp(&self) -> usize {
        self.ncomp
    }
    fn uses_value(&self) -> bool {
        self.alpha != 0.0
    }
    fn uses_gradient(&self) -> bool {
        true
    }
    fn qdata_len(&self, dim: usize) -> usize {
        dim * (dim + 1) / 2 + (self.alpha != 0.0) as usize
    }
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]) {
        let m = at.metric(out);
        let kappa = self.kappa.at(at);
        for g in &mut out[..m] {
            *g *= kappa;
        }
        if self.alpha != 0.0 {
            out[m] = at.wdetj();
        }
    }
    fn affine_weighting(&self, dim: usize) -> Option<Vec<bool>> {
        // the metric w det J J⁻¹ J⁻ᵀ κ and w det J
        let n = dim * (dim + 1) / 2 + (self.alpha != 0.0) as usize;
        self.kappa.is_cellwise().then(|| vec![true; n])
    }
    fn plain_geometry(&self) -> bool {
        self.kappa.is_one()
    }
    fn reads_compact(&self) -> bool {
        true
    }
    #[inline(always)]
    fn apply(&self, b: &PointBatch<'_, T>, v: &mut [Lane<T>], g: &mut [Lane<T>]) {
        let (d, nq) = (b.dim, b.num_points);
        let m = d * (d + 1) / 2;
        for c in 0..self.ncomp {
            let gc = &mut g[c * d * nq..(c + 1) * d * nq];
            match (b.compact, b.fma) {
                (Some(cd), true) => metric_times::<T, true>(d, nq, Compact(cd, nq), gc),
                (Some(cd), false) => metric_times::<T, false>(d, nq, Compact(cd, nq), gc),
                (None, true) => metric_times::<T, true>(d, nq, Full(b.qdata, nq), gc),
                (None, false) => metric_times::<T, false>(d, nq, Full(b.qdata, nq), gc),
            }
            if self.alpha != 0.0 {
                let (vc, a) = (&mut v[c * nq..(c + 1) * nq], T::of(self.alpha));
                match b.compact {
                    Some(cd) => scale(vc, Compact(cd, nq), m, a),
                    None => scale(vc, Full(b.qdata, nq), m, a),
                }
            }
        }
    }
    fn flops_per_point(&self, dim: usize) -> f64 {
        let mass = if self.alpha != 0.0 { 2.0 } else { 0.0 };
        self.ncomp as f64 * ((dim * (2 * dim - 1)) as f64 + mass)
    }
}

/// `∫ ε(v) : σ(u)` with `σ = λ tr ε I + 2 μ ε` (isotropic linear elasticity, `ncomp = dim`).
/// Quadrature data: the inverse Jacobian `∂ξ_a/∂x_k` (`d²` values, row-major), then
/// `λ w det J` and `μ w det J`.
#[derive(Clone, Debug)]
pub struct Elastic {
    /// Dimension (the number of components).
    pub dim: usize,
    /// Lamé's first parameter `λ`.
    pub lambda: Coefficient,
    /// The shear modulus `μ`.
    pub mu: Coefficient,
}

impl<T: Real> TensorPhysics<T> for Elastic {
    fn name(&self) -> &str {
        "elastic"
    }
    fn ncomp(&self) -> usize {
        self.dim
    }
    fn uses_value(&self) -> bool {
        false
    }
    fn uses_gradient(&self) -> bool {
        true
    }
    fn qdata_len(&self, dim: usize) -> usize {
        dim * dim + 2
    }
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]) {
        let d = at.dim;
        let a = at.inverse();
        for r in 0..d {
            for c in 0..d {
                out[r * d + c] = a[r][c];
            }
        }
        out[d * d] = self.lambda.at(at) * at.wdetj();
        out[d * d + 1] = self.mu.at(at) * at.wdetj();
    }
    fn affine_weighting(&self, dim: usize) -> Option<Vec<bool>> {
        // J⁻¹, then λ w det J and μ w det J
        (self.lambda.is_cellwise() && self.mu.is_cellwise()).then(|| {
            let mut w = vec![false; dim * dim];
            w.extend([true, true]);
            w
        })
    }
    fn reads_compact(&self) -> bool {
        true
    }
    #[inline(always)]
    fn apply(&self, b: &PointBatch<'_, T>, _v: &mut [Lane<T>], g: &mut [Lane<T>]) {
        let nq = b.num_points;
        match (b.compact, b.dim == 2) {
            (Some(cd), true) => elastic_on::<T, 2, _>(b.fma, nq, Compact(cd, nq), g),
            (Some(cd), false) => elastic_on::<T, 3, _>(b.fma, nq, Compact(cd, nq), g),
            (None, true) => elastic_on::<T, 2, _>(b.fma, nq, Full(b.qdata, nq), g),
            (None, false) => elastic_on::<T, 3, _>(b.fma, nq, Full(b.qdata, nq), g),
        }
    }
    fn flops_per_point(&self, dim: usize) -> f64 {
        // ∇u = ĝ A and f̂ = A σ: 2 d³ each; σ from ∇u: about 3 d² + d
        (4 * dim * dim * dim + 3 * dim * dim + dim) as f64
    }
}

/// A batch's quadrature data as the built-in physics read them: the choice between full
/// and compact data is made once per batch, not per value.
trait Data<T>: Copy {
    /// Datum `c` at point `i` of every lane.
    fn at(self, c: usize, i: usize) -> Lane<T>;
}

/// Full data (`[datum][point]` lanes) with the number of points.
#[derive(Clone, Copy)]
struct Full<'a, T>(&'a [Lane<T>], usize);

/// Compact data with the number of points.
#[derive(Clone, Copy)]
struct Compact<'a, T>(CompactData<'a, T>, usize);

impl<T: Real> Data<T> for Full<'_, T> {
    #[inline(always)]
    fn at(self, c: usize, i: usize) -> Lane<T> {
        self.0[c * self.1 + i]
    }
}

impl<T: Real> Data<T> for Compact<'_, T> {
    #[inline(always)]
    fn at(self, c: usize, i: usize) -> Lane<T> {
        let (p, s) = (self.0.per[c], self.0.scale[c * self.1 + i]);
        std::array::from_fn(|l| p[l] * s)
    }
}

/// `v ← s w v` pointwise, `w` datum `datum` of `data`.
#[inline(always)]
fn scale<T: Real>(v: &mut [Lane<T>], data: impl Data<T>, datum: usize, s: T) {
    for (i, vi) in v.iter_mut().enumerate() {
        lanes_are_the_vector();
        let (x, w) = (*vi, data.at(datum, i));
        let mut o = zero::<T>();
        for l in 0..LANES {
            o[l] = s * w[l] * x[l];
        }
        *vi = o;
    }
}

/// `g ← G g` at every point with the packed symmetric `G` of the batch's first data.
#[inline(always)]
fn metric_times<T: Real, const FMA: bool>(
    dim: usize,
    nq: usize,
    data: impl Data<T>,
    g: &mut [Lane<T>],
) {
    let f = |c: usize, i: usize| data.at(c, i);
    if dim == 2 {
        let (g0, g1) = g[..2 * nq].split_at_mut(nq);
        for i in 0..nq {
            lanes_are_the_vector();
            let (x, y) = (g0[i], g1[i]);
            let (a, b, c) = (f(0, i), f(1, i), f(2, i));
            let mut o0 = zero::<T>();
            let mut o1 = zero::<T>();
            for l in 0..LANES {
                o0[l] = madd::<T, FMA>(a[l] * x[l], b[l], y[l]);
                o1[l] = madd::<T, FMA>(b[l] * x[l], c[l], y[l]);
            }
            g0[i] = o0;
            g1[i] = o1;
        }
    } else {
        let (g0, rest) = g[..3 * nq].split_at_mut(nq);
        let (g1, g2) = rest.split_at_mut(nq);
        for i in 0..nq {
            lanes_are_the_vector();
            let (x, y, z) = (g0[i], g1[i], g2[i]);
            let (f00, f01, f02) = (f(0, i), f(1, i), f(2, i));
            let (f11, f12, f22) = (f(3, i), f(4, i), f(5, i));
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
    }
}

/// [`elastic_points`] with or without fused multiply-add.
#[inline(always)]
fn elastic_on<T: Real, const D: usize, S: Data<T>>(
    fma: bool,
    nq: usize,
    data: S,
    g: &mut [Lane<T>],
) {
    if fma {
        elastic_points::<T, D, true>(nq, data, g)
    } else {
        elastic_points::<T, D, false>(nq, data, g)
    }
}

/// Isotropic elasticity at every point: physical gradient `H = ĝ A`, stress
/// `σ = λ tr H I + μ (H + Hᵀ)` (with `w det J` folded into `λ`, `μ`), back to reference
/// coefficients `f̂[c][a] = Σ_k A[a][k] σ[c][k]`.
#[inline(always)]
fn elastic_points<T: Real, const D: usize, const FMA: bool>(
    nq: usize,
    data: impl Data<T>,
    g: &mut [Lane<T>],
) {
    let nd = D * D;
    let g = &mut g[..D * D * nq];
    for i in 0..nq {
        lanes_are_the_vector();
        let a: [[Lane<T>; D]; D] =
            std::array::from_fn(|r| std::array::from_fn(|c| data.at(r * D + c, i)));
        let (wl, wm) = (data.at(nd, i), data.at(nd + 1, i));
        let gh: [[Lane<T>; D]; D] =
            std::array::from_fn(|c| std::array::from_fn(|r| g[(c * D + r) * nq + i]));
        let mut out: [[Lane<T>; D]; D] = [[zero(); D]; D];
        for l in 0..LANES {
            // H[c][k] = Σ_a ĝ[c][a] A[a][k]
            let mut h = [[T::zero(); D]; D];
            for c in 0..D {
                for k in 0..D {
                    let mut acc = T::zero();
                    for r in 0..D {
                        acc = madd::<T, FMA>(acc, gh[c][r][l], a[r][k][l]);
                    }
                    h[c][k] = acc;
                }
            }
            let mut tr = T::zero();
            for c in 0..D {
                tr += h[c][c];
            }
            let lt = wl[l] * tr;
            let mut s = [[T::zero(); D]; D];
            for c in 0..D {
                for k in 0..D {
                    s[c][k] = wm[l] * (h[c][k] + h[k][c]);
                }
                s[c][c] += lt;
            }
            for c in 0..D {
                for r in 0..D {
                    let mut acc = T::zero();
                    for k in 0..D {
                        acc = madd::<T, FMA>(acc, a[r][k][l], s[c][k]);
                    }
                    out[c][r][l] = acc;
                }
            }
        }
        for c in 0..D {
            for r in 0..D {
                g[(c * D + r) * nq + i] = out[c][r];
            }
        }
    }
}
