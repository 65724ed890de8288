//! Exact solutions to test the wave solver against.
//!
//! The acoustic point-source solutions solve `p_tt − c² Δp = w(t) δ(x − x_s)` with zero
//! initial state at `t = 0`. The simulation starts at `t = 0`, so the source acting is
//! `w(t) H(t)`: values of the wavelet at negative times never enter, and `p = 0` before the
//! arrival time `r / c`.
//!
//! Invalid arguments (`c` or `r` not finite and positive, `t` not finite, traces of unequal
//! length) give NaN rather than a panic, so that these helpers can be used inside test loops
//! without unwrapping; [`rayleigh_wave_speed`] returns a `Result`.

use std::f64::consts::PI;
use std::sync::OnceLock;

use crate::wavelet::Wavelet;

/// Errors from the analytic helpers.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnalyticError {
    /// The wave speeds do not satisfy `0 < vs < vp < ∞`.
    #[error("need finite wave speeds with 0 < vs < vp, got vp = {vp}, vs = {vs}")]
    InvalidSpeeds {
        /// P-wave speed.
        vp: f64,
        /// S-wave speed.
        vs: f64,
    },
}

/// Level (relative to the wavelet's peak) below which the 2-D integrand is dropped: far below
/// the rounding error of the retained part.
const TAIL_TOLERANCE: f64 = 1e-17;
/// Target of the adaptive quadrature: the (pessimistic) error estimate must fall below this
/// fraction of `|integral|` ...
const QUADRATURE_REL_TOL: f64 = 1e-12;
/// ... or below this fraction of `∫|integrand|` (the rounding floor when the integral
/// cancels, e.g. the Ricker's zero-mean tail).
const QUADRATURE_ABS_TOL: f64 = 1e-14;
/// Upper bound on the number of panels of the adaptive quadrature.
const MAX_PANELS: usize = 4000;
/// Number of Gauss–Legendre points per panel.
const GL_POINTS: usize = 10;

/// `true` when `x` is finite and positive.
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// The 3-D free-space solution `p(r, t) = w(t − r/c) H(t − r/c) / (4π c² r)`.
///
/// NaN unless `c` and `r` are finite and positive and `t` is finite.
pub fn acoustic_point_source_3d(wavelet: &Wavelet, c: f64, r: f64, t: f64) -> f64 {
    if !(positive(c) && positive(r) && t.is_finite()) {
        return f64::NAN;
    }
    let retarded = t - r / c;
    if retarded < 0.0 {
        return 0.0;
    }
    wavelet.value(retarded) / (4.0 * PI * c * c * r)
}

/// The 2-D free-space solution (a line source in 3-D)
/// `p(r, t) = (1/(2π c²)) ∫_{r/c}^{t} w(t − τ) / sqrt(τ² − r²/c²) dτ` for `t > r/c`, else 0.
///
/// The inverse-square-root singularity is removed by `τ = (r/c) cosh s`:
/// `p = (1/(2π c²)) ∫_0^{acosh(ct/r)} w(t − (r/c) cosh s) ds`, whose integrand is as smooth
/// as `w`. Source times where `|w|` is below `1e-17` of its peak are dropped. Analytic
/// wavelets are integrated by globally adaptive 10-point Gauss–Legendre (panels start
/// `1/(4 f0)` wide in source time, and are bisected until the difference between the one- and
/// two-half-panel rules, which overestimates the error of the latter by orders of magnitude,
/// sums to below `1e-12 |p|`, or `1e-14` of the integral of `|integrand|` when the integral
/// cancels). Sampled wavelets are integrated exactly on each sample interval (the interpolant
/// is linear in `cosh s` there). Verified against brute-force quadratures in `τ` and in the
/// line-source variable to about `1e-13` of the trace maximum.
///
/// NaN unless `c` and `r` are finite and positive and `t` is finite.
pub fn acoustic_point_source_2d(wavelet: &Wavelet, c: f64, r: f64, t: f64) -> f64 {
    if !(positive(c) && positive(r) && t.is_finite()) {
        return f64::NAN;
    }
    let t0 = r / c;
    // Source times t' = t − τ range over [0, lag].
    let lag = t - t0;
    if lag <= 0.0 {
        return 0.0;
    }
    let integral = match wavelet {
        Wavelet::Samples { times, values } => samples_integral(times, values, t0, lag),
        _ => {
            // A hand-built analytic wavelet may carry invalid parameters.
            let f0 = wavelet.peak_frequency().unwrap_or(f64::NAN);
            let (w_lo, w_hi) = wavelet.support(TAIL_TOLERANCE);
            if !(positive(f0) && w_lo.is_finite() && w_hi.is_finite()) {
                return f64::NAN;
            }
            let (lo, hi) = (w_lo.max(0.0), w_hi.min(lag));
            if lo >= hi {
                return 0.0;
            }
            // Initial panels a quarter period wide in source time.
            let panels = ((hi - lo) * 4.0 * f0).ceil().clamp(2.0, 256.0) as usize;
            let cuts: Vec<f64> = (0..=panels)
                .map(|i| hi - (hi - lo) * i as f64 / panels as f64)
                .collect();
            integrate_source_times(wavelet, t0, lag, &cuts)
        }
    };
    integral / (2.0 * PI * c * c)
}

/// `s(t') = acosh(1 + d)`, `d = (lag − t') / t0 ≥ 0`: the substitution variable at source
/// time `t'`, computed without cancellation near the wavefront (`d → 0`).
fn s_of_source_time(t0: f64, lag: f64, source_time: f64) -> f64 {
    let d = ((lag - source_time) / t0).max(0.0);
    if d > 1e8 {
        // acosh(x) = ln(2x) − 1/(4x²) − …; the correction is below 1e-17.
        std::f64::consts::LN_2 + d.ln_1p()
    } else {
        (d + (d * (2.0 + d)).sqrt()).ln_1p()
    }
}

/// The source time `t' = t − t0 cosh s = lag − 2 t0 sinh²(s/2)` (accurate near `s = 0`).
fn source_time_of_s(t0: f64, lag: f64, s: f64) -> f64 {
    let h = (0.5 * s).sinh();
    lag - 2.0 * t0 * h * h
}

/// `∫ w(t − t0 cosh s) ds` over the source times between consecutive `cuts` (given in
/// decreasing source time, i.e. increasing `s`), by adaptive Gauss–Legendre in `s`.
fn integrate_source_times(wavelet: &Wavelet, t0: f64, lag: f64, cuts: &[f64]) -> f64 {
    let breaks: Vec<f64> = cuts
        .iter()
        .map(|&tp| s_of_source_time(t0, lag, tp))
        .collect();
    integrate_adaptive(|s| wavelet.value(source_time_of_s(t0, lag, s)), &breaks)
}

/// Exact `∫ w(t − t0 cosh s) ds` over source times `[0, lag]` for a piecewise-linear `w`.
///
/// On a sample interval `w = w̄ + m (t' − t̄')` is linear in `t' = t − t0 cosh s`. With the
/// panel `[s̄ − δ, s̄ + δ]` and `t̄' = t'(s̄)`, `∫ (t' − t̄') ds = −2 t0 cosh s̄ (sinh δ − δ)`,
/// so the panel contributes `2δ w̄ − 2 m t0 cosh s̄ (sinh δ − δ)`: the midpoint rule plus its
/// exact correction, with no cancellation between large terms.
fn samples_integral(times: &[f64], values: &[f64], t0: f64, lag: f64) -> f64 {
    let n = times.len().min(values.len());
    let (times, values) = (&times[..n], &values[..n]);
    // First interval that ends after t' = 0.
    let first = times.partition_point(|&s| s <= 0.0).saturating_sub(1);
    let mut sum = 0.0;
    for k in first..n.saturating_sub(1) {
        let (ta, tb) = (times[k], times[k + 1]);
        if ta >= lag {
            break;
        }
        let (a, b) = (ta.max(0.0), tb.min(lag));
        // Also skips intervals of a hand-built wavelet with NaN times.
        if a >= b || a.is_nan() || b.is_nan() {
            continue;
        }
        let slope = (values[k + 1] - values[k]) / (tb - ta);
        // Later source times lie at smaller s.
        let (s_lo, s_hi) = (s_of_source_time(t0, lag, b), s_of_source_time(t0, lag, a));
        let (s_mid, delta) = (0.5 * (s_lo + s_hi), 0.5 * (s_hi - s_lo));
        let w_mid = values[k] + slope * (source_time_of_s(t0, lag, s_mid) - ta);
        sum += 2.0 * delta * w_mid - 2.0 * slope * t0 * s_mid.cosh() * sinh_minus_identity(delta);
    }
    sum
}

/// `sinh x − x` without cancellation for small `x` (Taylor series `Σ x^{2k+1}/(2k+1)!`,
/// `k ≥ 1`, for `|x| ≤ 2`).
fn sinh_minus_identity(x: f64) -> f64 {
    if x.abs() > 2.0 {
        return x.sinh() - x;
    }
    let x2 = x * x;
    let mut term = x * x2 / 6.0;
    let mut sum = term;
    for k in 2..40 {
        let j = 2.0 * k as f64;
        term *= x2 / (j * (j + 1.0));
        sum += term;
        if term.abs() <= 1e-17 * sum.abs() {
            break;
        }
    }
    sum
}

/// Nodes and weights of the `GL_POINTS`-point Gauss–Legendre rule on `[−1, 1]`, by Newton's
/// method on the Legendre polynomial from the Chebyshev initial guesses.
fn gauss_legendre() -> &'static ([f64; GL_POINTS], [f64; GL_POINTS]) {
    static RULE: OnceLock<([f64; GL_POINTS], [f64; GL_POINTS])> = OnceLock::new();
    RULE.get_or_init(|| {
        let n = GL_POINTS;
        let mut nodes = [0.0; GL_POINTS];
        let mut weights = [0.0; GL_POINTS];
        for i in 0..n {
            let mut x = (PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
            let mut dp = 1.0;
            for _ in 0..100 {
                // Three-term recurrence for P_n(x) and its derivative.
                let (mut p0, mut p1) = (1.0, x);
                for k in 2..=n {
                    let kf = k as f64;
                    let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
                    p0 = p1;
                    p1 = p2;
                }
                dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
                let dx = p1 / dp;
                x -= dx;
                if dx.abs() <= 1e-16 {
                    break;
                }
            }
            nodes[i] = x;
            weights[i] = 2.0 / ((1.0 - x * x) * dp * dp);
        }
        (nodes, weights)
    })
}

/// `(∫ f, ∫ |f|)` over `[a, b]` by the Gauss–Legendre rule.
fn gauss_legendre_panel(f: &impl Fn(f64) -> f64, a: f64, b: f64) -> (f64, f64) {
    let (nodes, weights) = gauss_legendre();
    let (mid, half) = (0.5 * (a + b), 0.5 * (b - a));
    let (mut sum, mut abs) = (0.0, 0.0);
    for (x, w) in nodes.iter().zip(weights) {
        let v = f(mid + half * x);
        sum += w * v;
        abs += w * v.abs();
    }
    (half * sum, half * abs.abs())
}

/// One panel of the adaptive quadrature: the two-half-panel estimate and the difference
/// from the one-panel rule as its error estimate.
struct Panel {
    a: f64,
    b: f64,
    estimate: f64,
    error: f64,
    abs: f64,
}

impl Panel {
    fn new(f: &impl Fn(f64) -> f64, a: f64, b: f64) -> Self {
        let m = 0.5 * (a + b);
        let (whole, _) = gauss_legendre_panel(f, a, b);
        let (left, left_abs) = gauss_legendre_panel(f, a, m);
        let (right, right_abs) = gauss_legendre_panel(f, m, b);
        let estimate = left + right;
        Self {
            a,
            b,
            estimate,
            error: (estimate - whole).abs(),
            abs: left_abs + right_abs,
        }
    }
}

/// `∫ f` over `[breaks[0], breaks[last]]` (increasing breaks) by globally adaptive
/// Gauss–Legendre: the panel with the largest error estimate is bisected until the estimates
/// sum to below `max(1e-12 |∫ f|, 1e-14 ∫ |f|)` or `MAX_PANELS` is reached.
fn integrate_adaptive(f: impl Fn(f64) -> f64, breaks: &[f64]) -> f64 {
    let mut panels: Vec<Panel> = breaks
        .windows(2)
        .filter(|w| w[0] < w[1])
        .map(|w| Panel::new(&f, w[0], w[1]))
        .collect();
    loop {
        let (mut total, mut error, mut abs) = (0.0, 0.0, 0.0);
        let mut worst = 0;
        for (i, p) in panels.iter().enumerate() {
            total += p.estimate;
            error += p.error;
            abs += p.abs;
            if p.error > panels[worst].error {
                worst = i;
            }
        }
        let target = (QUADRATURE_REL_TOL * total.abs()).max(QUADRATURE_ABS_TOL * abs);
        if panels.is_empty() || error <= target || error.is_nan() || panels.len() >= MAX_PANELS {
            return total;
        }
        let p = panels.swap_remove(worst);
        let m = 0.5 * (p.a + p.b);
        if !(p.a < m && m < p.b) {
            // The panel cannot be split any further in floating point.
            return total;
        }
        panels.push(Panel::new(&f, p.a, m));
        panels.push(Panel::new(&f, m, p.b));
    }
}

/// The Rayleigh-wave speed `c_R` of an isotropic elastic half-space.
///
/// `ξ = c_R² / vs²` is the root in `(0, 1)` of `(2 − ξ)² = 4 sqrt(1 − ξ vs²/vp²) sqrt(1 − ξ)`.
/// Squaring and dividing by `ξ` gives the cubic
/// `g(ξ) = ξ³ − 8ξ² + (24 − 16k²)ξ − 16(1 − k²)`, `k = vs/vp`, with `g(0) = −16(1 − k²) < 0`
/// and `g(1) = 1 > 0`; in `(0, 1)` both sides of the unsquared equation are positive, so the
/// roots coincide. Bisection on `g` down to adjacent floating-point numbers (about `1e-16`).
///
/// Errors unless `0 < vs < vp` and both are finite.
pub fn rayleigh_wave_speed(vp: f64, vs: f64) -> Result<f64, AnalyticError> {
    if !(positive(vp) && positive(vs) && vs < vp) {
        return Err(AnalyticError::InvalidSpeeds { vp, vs });
    }
    let k2 = (vs / vp).powi(2);
    // 1 − k² without cancellation when vs ≈ vp.
    let one_minus_k2 = (vp - vs) * (vp + vs) / (vp * vp);
    let g = |x: f64| ((x - 8.0) * x + (24.0 - 16.0 * k2)) * x - 16.0 * one_minus_k2;
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..2000 {
        let mid = 0.5 * (lo + hi);
        if !(lo < mid && mid < hi) {
            break;
        }
        if g(mid) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(vs * (0.5 * (lo + hi)).sqrt())
}

/// Relative L2 misfit `‖a − b‖₂ / ‖b‖₂` of two equally long traces (`b` the reference).
///
/// NaN for traces of different lengths; when `‖b‖₂ = 0`, 0 if `a = b` and infinity otherwise.
pub fn relative_l2_misfit(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let norm: f64 = b.iter().map(|y| y * y).sum();
    if norm == 0.0 {
        return if diff == 0.0 { 0.0 } else { f64::INFINITY };
    }
    (diff / norm).sqrt()
}

/// Largest pointwise difference `max |a − b| / max |b|` of two equally long traces (`b` the
/// reference): how two runs of the same problem compare sample by sample.
///
/// NaN for traces of different lengths; when `b` is zero everywhere, 0 if `a = b` and
/// infinity otherwise.
pub fn peak_relative_difference(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::NAN;
    }
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    let peak = b.iter().fold(0.0f64, |m, y| m.max(y.abs()));
    if peak == 0.0 {
        return if diff == 0.0 { 0.0 } else { f64::INFINITY };
    }
    diff / peak
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Composite Gauss–Legendre with `panels` equal panels on `[a, b]`.
    fn composite_gl(f: impl Fn(f64) -> f64, a: f64, b: f64, panels: usize) -> f64 {
        let h = (b - a) / panels as f64;
        (0..panels)
            .map(|i| gauss_legendre_panel(&f, a + h * i as f64, a + h * (i + 1) as f64).0)
            .sum()
    }

    /// Brute-force 2-D solution in the τ variable with `τ = r/c + u²`:
    /// `∫ w(t − τ)/sqrt(τ² − t0²) dτ = ∫_0^{sqrt(t − t0)} 2 w(t − t0 − u²)/sqrt(u² + 2 t0) du`,
    /// by the composite Simpson rule with `n` intervals.
    fn brute_force_tau(w: &Wavelet, c: f64, r: f64, t: f64, n: usize) -> f64 {
        let t0 = r / c;
        let lag = t - t0;
        if lag <= 0.0 {
            return 0.0;
        }
        let umax = lag.sqrt();
        let f = |u: f64| 2.0 * w.value(lag - u * u) / (u * u + 2.0 * t0).sqrt();
        let h = umax / n as f64;
        let mut sum = f(0.0) + f(umax);
        for i in 1..n {
            sum += f(h * i as f64) * if i % 2 == 1 { 4.0 } else { 2.0 };
        }
        sum * h / 3.0 / (2.0 * PI * c * c)
    }

    /// The 2-D solution as the superposition of 3-D point sources along a line:
    /// `p_2D(r, t) = 2 ∫_0^∞ p_3D(sqrt(r² + z²), t) dz`, by composite Gauss–Legendre in `z`
    /// (a smooth integrand; causality cuts it at `z = sqrt(c² t² − r²)`).
    fn line_source(w: &Wavelet, c: f64, r: f64, t: f64, panels: usize) -> f64 {
        let zmax2 = c * c * t * t - r * r;
        if zmax2 <= 0.0 {
            return 0.0;
        }
        let f = |z: f64| acoustic_point_source_3d(w, c, r.hypot(z), t);
        2.0 * composite_gl(f, 0.0, zmax2.sqrt(), panels)
    }

    #[test]
    fn gauss_legendre_rule_is_exact_to_degree_19() {
        let (nodes, weights) = gauss_legendre();
        assert!((weights.iter().sum::<f64>() - 2.0).abs() < 1e-15);
        for degree in 0..20 {
            let exact = if degree % 2 == 0 {
                2.0 / (degree as f64 + 1.0)
            } else {
                0.0
            };
            let quad: f64 = nodes
                .iter()
                .zip(weights)
                .map(|(x, w)| w * x.powi(degree))
                .sum();
            assert!((quad - exact).abs() < 1e-15, "degree {degree}");
        }
    }

    #[test]
    fn sinh_minus_identity_is_accurate() {
        for x in [0.1f64, 0.7, 1.9, 2.1, 5.0] {
            let exact = x.sinh() - x;
            let got = sinh_minus_identity(x);
            // The direct difference is accurate to ~ε sinh(x) only.
            assert!((got - exact).abs() <= 4e-16 * x.sinh(), "{x}");
            assert!((sinh_minus_identity(-x) + got).abs() <= 1e-30 + 1e-16 * got.abs());
        }
        // Small x: x³/6 (1 + x²/20).
        for x in [1e-8f64, 1e-4] {
            let series = x.powi(3) / 6.0 * (1.0 + x * x / 20.0);
            assert!((sinh_minus_identity(x) / series - 1.0).abs() < 1e-15, "{x}");
        }
    }

    #[test]
    fn three_d_matches_direct_evaluation() {
        let (f0, delay) = (5.0, 0.3);
        let w = Wavelet::ricker(f0, Some(delay)).unwrap();
        let (c, r) = (1500.0, 700.0);
        for i in 0..200 {
            let t = 1.2 * i as f64 / 200.0;
            let tau = t - r / c - delay;
            let a = (PI * f0).powi(2);
            let direct = if t < r / c {
                0.0
            } else {
                (1.0 - 2.0 * a * tau * tau) * (-a * tau * tau).exp() / (4.0 * PI * c * c * r)
            };
            let got = acoustic_point_source_3d(&w, c, r, t);
            assert!(
                (got - direct).abs() <= 1e-15 * direct.abs() + 1e-300,
                "t = {t}"
            );
        }
    }

    #[test]
    fn invalid_arguments_give_nan() {
        let w = Wavelet::ricker(1.0, None).unwrap();
        for (c, r, t) in [
            (0.0, 1.0, 1.0),
            (-1.0, 1.0, 1.0),
            (1.0, 0.0, 1.0),
            (1.0, f64::NAN, 1.0),
            (f64::INFINITY, 1.0, 1.0),
            (1.0, 1.0, f64::INFINITY),
        ] {
            assert!(acoustic_point_source_2d(&w, c, r, t).is_nan());
            assert!(acoustic_point_source_3d(&w, c, r, t).is_nan());
        }
        // Hand-built wavelets with invalid parameters: NaN or 0, no panic.
        for f0 in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let bad = Wavelet::Ricker { f0, delay: 0.1 };
            assert!(
                acoustic_point_source_2d(&bad, 1.0, 1.0, 2.0).is_nan(),
                "{f0}"
            );
        }
        let bad = Wavelet::Samples {
            times: vec![0.0, f64::NAN, 1.0],
            values: vec![1.0],
        };
        assert_eq!(acoustic_point_source_2d(&bad, 1.0, 1.0, 2.0), 0.0);
        let bad = Wavelet::Samples {
            times: vec![0.0, f64::NAN, 1.0],
            values: vec![1.0, 1.0, 1.0],
        };
        assert!(!acoustic_point_source_2d(&bad, 1.0, 1.0, 2.0).is_infinite());
    }

    /// A trace of the 2-D solution and of a reference, compared relative to the trace maximum.
    fn compare_traces(
        w: &Wavelet,
        c: f64,
        r: f64,
        times: &[f64],
        reference: impl Fn(f64) -> f64,
    ) -> f64 {
        let got: Vec<f64> = times
            .iter()
            .map(|&t| acoustic_point_source_2d(w, c, r, t))
            .collect();
        let want: Vec<f64> = times.iter().map(|&t| reference(t)).collect();
        let max = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        got.iter()
            .zip(&want)
            .map(|(g, w)| (g - w).abs() / max)
            .fold(0.0, f64::max)
    }

    #[test]
    fn two_d_matches_brute_force_in_tau() {
        let cases = [
            (Wavelet::ricker(10.0, None).unwrap(), 2000.0, 500.0),
            (Wavelet::gaussian(3.0, Some(0.6)).unwrap(), 1.0, 0.05),
            (
                Wavelet::gaussian_derivative(25.0, None).unwrap(),
                340.0,
                100.0,
            ),
        ];
        for (w, c, r) in cases {
            let f0 = w.peak_frequency().unwrap();
            let t0 = r / c;
            let times: Vec<f64> = (0..60)
                .map(|i| t0 - 0.2 / f0 + 6.0 / f0 * i as f64 / 60.0)
                .collect();
            let err = compare_traces(&w, c, r, &times, |t| brute_force_tau(&w, c, r, t, 400_000));
            assert!(err < 1e-10, "{}: {err:e}", w.name());
        }
    }

    #[test]
    fn two_d_matches_line_source_to_1e12() {
        // Reference converged to ~1e-15: doubling the panels changes it by less than that.
        let w = Wavelet::ricker(10.0, None).unwrap();
        let (c, r) = (2000.0, 300.0);
        let t0 = r / c;
        let times: Vec<f64> = (0..40).map(|i| t0 + 0.6 * i as f64 / 40.0).collect();
        let coarse: Vec<f64> = times
            .iter()
            .map(|&t| line_source(&w, c, r, t, 2000))
            .collect();
        let fine: Vec<f64> = times
            .iter()
            .map(|&t| line_source(&w, c, r, t, 4000))
            .collect();
        let max = fine.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in coarse.iter().zip(&fine) {
            assert!((a - b).abs() < 1e-14 * max);
        }
        let err = compare_traces(&w, c, r, &times, |t| line_source(&w, c, r, t, 4000));
        assert!(err < 1e-12, "{err:e}");
        // Pointwise relative accuracy where the trace is not small.
        for (&t, want) in times.iter().zip(&fine) {
            let got = acoustic_point_source_2d(&w, c, r, t);
            if want.abs() > 1e-3 * max {
                assert!((got - want).abs() <= 1e-12 * want.abs(), "t = {t}");
            }
        }
    }

    #[test]
    fn two_d_is_causal_and_continuous() {
        let w = Wavelet::ricker(10.0, Some(0.0)).unwrap(); // w(0) = 1: the harshest onset
        let (c, r) = (1000.0, 200.0);
        let t0 = r / c;
        assert_eq!(acoustic_point_source_2d(&w, c, r, t0), 0.0);
        assert_eq!(acoustic_point_source_2d(&w, c, r, t0 - 1e-9), 0.0);
        assert_eq!(acoustic_point_source_2d(&w, c, r, 0.0), 0.0);
        // Just after arrival p ≈ w(0) acosh(ct/r)/(2πc²) ≈ sqrt(2ε/t0)/(2πc²) → 0.
        for eps in [1e-6, 1e-9, 1e-12] {
            let p = acoustic_point_source_2d(&w, c, r, t0 + eps);
            let expected = (2.0 * eps / t0).sqrt() / (2.0 * PI * c * c);
            assert!(
                (p / expected - 1.0).abs() < 1e-3,
                "{eps}: {p} vs {expected}"
            );
        }
        // No jumps along a fine trace: increments bounded by the maximal slope.
        let dt = 1e-6;
        let trace: Vec<f64> = (0..20_000)
            .map(|i| acoustic_point_source_2d(&w, c, r, t0 + dt * i as f64))
            .collect();
        let max = trace.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for pair in trace.windows(2) {
            assert!((pair[1] - pair[0]).abs() < 0.05 * max);
        }
    }

    #[test]
    fn two_d_late_time_asymptote() {
        // For t ≫ t0, delay: 1/sqrt((t − t')² − t0²) = (1 + t'/t + O(t'², t0²)/t²)/t, so
        // p ≈ (M0 + M1/t)/(2π c² t) with M0 = ∫ w = 1/(√π f0) and M1 = ∫ t' w = delay M0
        // (the Gaussian's part at negative times, ~1e-7 relative, is left out by both).
        let (f0, delay) = (2.0, 3.0);
        let w = Wavelet::gaussian(f0, Some(delay)).unwrap();
        let (c, r) = (1.0, 1.0);
        let m0 = 1.0 / (PI.sqrt() * f0);
        for t in [1e3, 1e4, 1e5] {
            let p = acoustic_point_source_2d(&w, c, r, t);
            let asymptote = m0 * (1.0 + delay / t) / (2.0 * PI * c * c * t);
            let rel = (p / asymptote - 1.0).abs();
            assert!(rel < 20.0 / (t * t) + 1e-12, "t = {t}: {rel:e}");
        }
    }

    #[test]
    fn two_d_samples_exact_on_linear_pieces() {
        // The closed form for piecewise-linear wavelets against the adaptive quadrature with
        // the sample times as breakpoints.
        let times = vec![-0.05, 0.0, 0.013, 0.03, 0.05, 0.08, 0.1, 0.2];
        let values = vec![0.3, 1.0, -2.0, 0.5, 0.25, 3.0, -1.0, 0.0];
        let w = Wavelet::from_samples(times.clone(), values).unwrap();
        let (c, r) = (1.0, 0.02);
        let t0 = r / c;
        let mut pairs = Vec::new();
        for i in 0..200 {
            let t = t0 + 0.5 * (i as f64 / 200.0).powi(2);
            let lag = t - t0;
            let mut cuts: Vec<f64> = times
                .iter()
                .copied()
                .filter(|&s| s > 0.0 && s < lag)
                .chain([0.0, lag.min(0.2)])
                .collect();
            cuts.sort_by(|a, b| b.total_cmp(a));
            let quad = integrate_source_times(&w, t0, lag, &cuts) / (2.0 * PI * c * c);
            pairs.push((t, acoustic_point_source_2d(&w, c, r, t), quad));
        }
        let max = pairs.iter().fold(0.0f64, |m, p| m.max(p.2.abs()));
        for (t, exact, quad) in pairs {
            assert!(
                (exact - quad).abs() <= 1e-13 * max,
                "t = {t}: {exact} vs {quad}"
            );
        }
    }

    #[test]
    fn two_d_sampled_gaussian_converges_to_analytic() {
        // Linear interpolation error is O(dt²): the misfit drops ~4x per halving.
        let w = Wavelet::gaussian(5.0, None).unwrap();
        let (c, r) = (1.0, 0.5);
        let times: Vec<f64> = (0..100).map(|i| 0.5 + 1.5 * i as f64 / 100.0).collect();
        let exact: Vec<f64> = times
            .iter()
            .map(|&t| acoustic_point_source_2d(&w, c, r, t))
            .collect();
        let misfit = |dt: f64| {
            let n = (1.0 / dt).round() as usize;
            let ts: Vec<f64> = (0..=n).map(|i| i as f64 * dt).collect();
            let vs: Vec<f64> = ts.iter().map(|&t| w.value(t)).collect();
            let s = Wavelet::from_samples(ts, vs).unwrap();
            let got: Vec<f64> = times
                .iter()
                .map(|&t| acoustic_point_source_2d(&s, c, r, t))
                .collect();
            relative_l2_misfit(&got, &exact)
        };
        let (e1, e2) = (misfit(2e-3), misfit(1e-3));
        assert!(e1 < 1e-3, "{e1:e}");
        assert!((e1 / e2 - 4.0).abs() < 0.2, "{e1:e} {e2:e}");
    }

    #[test]
    fn rayleigh_speed_poisson_solid() {
        let vs = 1000.0;
        let cr = rayleigh_wave_speed(vs * 3f64.sqrt(), vs).unwrap();
        let exact = (2.0 - 2.0 / 3f64.sqrt()).sqrt();
        assert!((cr / vs - exact).abs() < 1e-14, "{}", cr / vs - exact);
        assert!((cr / vs - 0.919402).abs() < 1e-6);
    }

    #[test]
    fn rayleigh_speed_solves_the_unsquared_equation() {
        for nu in [-0.9f64, -0.5, 0.0, 0.1, 0.2, 0.3, 0.4, 0.45, 0.49, 0.4999] {
            // vp²/vs² = 2(1 − ν)/(1 − 2ν).
            let vp_over_vs = (2.0 * (1.0 - nu) / (1.0 - 2.0 * nu)).sqrt();
            let cr = rayleigh_wave_speed(vp_over_vs, 1.0).unwrap();
            let xi = cr * cr;
            let k2 = 1.0 / (vp_over_vs * vp_over_vs);
            let residual = (2.0 - xi).powi(2) - 4.0 * (1.0 - xi * k2).sqrt() * (1.0 - xi).sqrt();
            assert!(xi > 0.0 && xi < 1.0);
            // |d residual/dξ| is O(1): a residual of ~1e-15 means ξ to ~1e-15.
            assert!(residual.abs() < 1e-14, "ν = {nu}: {residual:e}");
            // Viktorov's approximation (0.87 + 1.12ν)/(1 + ν), good to ~0.5 % for ν ≥ 0.
            if nu >= 0.0 {
                let approx = (0.87 + 1.12 * nu) / (1.0 + nu);
                assert!((cr / approx - 1.0).abs() < 5e-3, "ν = {nu}");
            }
        }
        // ν = 0 (vp/vs = √2): g = (ξ − 2)(ξ² − 6ξ + 4), so ξ = 3 − √5.
        let cr = rayleigh_wave_speed(2f64.sqrt(), 1.0).unwrap();
        assert!((cr - (3.0 - 5f64.sqrt()).sqrt()).abs() < 1e-14);
        // Incompressible limit: the root of ξ³ − 8ξ² + 24ξ − 16, c_R/vs = 0.955313.
        let cr = rayleigh_wave_speed(1e8, 1.0).unwrap();
        assert!((cr - 0.955_313).abs() < 1e-6);
        // Near vs = vp the root tends to 0 without losing the sign of g(0).
        let cr = rayleigh_wave_speed(1.0 + 1e-12, 1.0).unwrap();
        assert!(cr > 0.0 && cr < 1e-5);
    }

    #[test]
    fn rayleigh_speed_rejects_bad_speeds() {
        for (vp, vs) in [
            (1.0, 1.0),
            (1.0, 2.0),
            (1.0, 0.0),
            (1.0, -1.0),
            (f64::INFINITY, 1.0),
            (f64::NAN, 1.0),
        ] {
            let err = rayleigh_wave_speed(vp, vs).unwrap_err();
            assert!(matches!(err, AnalyticError::InvalidSpeeds { .. }), "{err}");
        }
    }

    #[test]
    fn misfit() {
        assert_eq!(peak_relative_difference(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        assert_eq!(peak_relative_difference(&[1.0, 2.5], &[1.0, -2.0]), 2.25);
        assert_eq!(peak_relative_difference(&[1.0], &[0.0]), f64::INFINITY);
        assert!(peak_relative_difference(&[1.0], &[1.0, 2.0]).is_nan());
        assert_eq!(relative_l2_misfit(&[1.0, 2.0], &[1.0, 2.0]), 0.0);
        let m = relative_l2_misfit(&[3.0, 4.0], &[0.0, 5.0]);
        assert!((m - (10f64).sqrt() / 5.0).abs() < 1e-15);
        assert!(relative_l2_misfit(&[1.0], &[1.0, 2.0]).is_nan());
        assert_eq!(relative_l2_misfit(&[0.0], &[0.0]), 0.0);
        assert_eq!(relative_l2_misfit(&[1.0], &[0.0]), f64::INFINITY);
        assert_eq!(relative_l2_misfit(&[], &[]), 0.0);
    }
}
