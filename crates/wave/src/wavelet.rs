//! Source time functions `w(t)` for the explicit wave solver.
//!
//! Time is measured from the start of the simulation: `t = 0` at step 0. The analytic
//! wavelets are centred at `t = delay`; with the default delay `1.2 / f0` (SPECFEM's choice)
//! they start small at `t = 0` (Gaussian about 7e-7, Gaussian derivative about 6e-6,
//! Ricker about 2e-5 of the peak), so switching the source on at `t = 0` hardly matters.
//!
//! All three analytic wavelets use SPECFEM's Gaussian exponent `a = π² f0²`:
//!
//! | wavelet               | `w(t)`, `τ = t − delay`      | amplitude spectrum, `y = f / f0` |
//! |-----------------------|------------------------------|----------------------------------|
//! | Ricker                | `(1 − 2aτ²) exp(−aτ²)`       | `∝ y² exp(−y²)` (peak at `f0`)   |
//! | Gaussian              | `exp(−aτ²)`                  | `∝ exp(−y²)` (peak at `0`)       |
//! | Gaussian derivative   | `−2aτ exp(−aτ²)`             | `∝ y exp(−y²)` (peak at `f0/√2`) |

use std::f64::consts::PI;
use std::path::{Path, PathBuf};

/// `max_frequency / f0` of the Ricker wavelet: the root `y > 1` of
/// `y² exp(1 − y²) = 0.01` (spectrum `y² exp(−y²)` over its peak `e⁻¹` at `y = 1`).
const RICKER_FMAX_OVER_F0: f64 = 2.763_756_875_702_676;
/// `max_frequency / f0` of the Gaussian: `exp(−y²) = 0.01`, so `y = sqrt(ln 100)`.
const GAUSSIAN_FMAX_OVER_F0: f64 = 2.145_966_026_289_347;
/// `max_frequency / f0` of the Gaussian derivative: the root `y > 1/√2` of
/// `√2 e^{1/2} y exp(−y²) = 0.01` (spectrum `y exp(−y²)` over its peak at `y = 1/√2`).
const GAUSSIAN_DERIVATIVE_FMAX_OVER_F0: f64 = 2.525_507_000_831_261;

/// Default delay in units of the period `1 / f0` (SPECFEM's choice).
const DEFAULT_DELAY_PERIODS: f64 = 1.2;

/// Relative tail level that [`Wavelet::end_time`] guarantees.
const END_TIME_TOLERANCE: f64 = 1e-10;

/// Errors from building a [`Wavelet`].
#[derive(Debug, thiserror::Error)]
pub enum WaveletError {
    /// The peak frequency is not finite and positive.
    #[error("peak frequency f0 must be finite and > 0, got {0}")]
    InvalidFrequency(f64),
    /// The delay is not finite and non-negative.
    #[error("delay must be finite and >= 0, got {0}")]
    InvalidDelay(f64),
    /// Fewer than two samples.
    #[error("a sampled wavelet needs at least 2 samples, got {0}")]
    TooFewSamples(usize),
    /// The time and value vectors differ in length.
    #[error("{times} sample times but {values} sample values")]
    LengthMismatch {
        /// Number of times.
        times: usize,
        /// Number of values.
        values: usize,
    },
    /// A sample time or value is NaN or infinite.
    #[error("sample {index}: time {time} and value {value} must be finite")]
    NonFiniteSample {
        /// 0-based sample index.
        index: usize,
        /// The sample time.
        time: f64,
        /// The sample value.
        value: f64,
    },
    /// Sample times are not strictly increasing.
    #[error("sample {index}: time {time} is not greater than the previous time {previous}")]
    NotIncreasing {
        /// 0-based sample index.
        index: usize,
        /// The previous sample time.
        previous: f64,
        /// The offending sample time.
        time: f64,
    },
    /// The CSV file could not be read.
    #[error("{}: cannot read wavelet file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The CSV file is malformed.
    #[error("{}:{line}: {reason}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// 1-based line number (for "too few samples", the last line of the file, at least 1).
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// A source time function `w(t)`.
///
/// Build one through the validating constructors ([`Wavelet::ricker`],
/// [`Wavelet::gaussian`], [`Wavelet::gaussian_derivative`], [`Wavelet::from_samples`],
/// [`Wavelet::from_csv`]); the methods never panic, even on a hand-built invalid value
/// (they then return NaN or 0 instead).
#[derive(Debug, Clone, PartialEq)]
pub enum Wavelet {
    /// Ricker (Mexican hat): `(1 − 2π² f0² τ²) exp(−π² f0² τ²)`, `τ = t − delay`; peak 1.
    Ricker {
        /// Peak frequency (Hz).
        f0: f64,
        /// Time of the central peak (s).
        delay: f64,
    },
    /// Gaussian `exp(−π² f0² τ²)`, `τ = t − delay` (SPECFEM's definition: `a = π² f0²`); peak 1.
    Gaussian {
        /// Frequency parameter (Hz).
        f0: f64,
        /// Time of the peak (s).
        delay: f64,
    },
    /// First time derivative of that Gaussian: `−2π² f0² τ exp(−π² f0² τ²)`;
    /// peak magnitude `√2 π f0 e^{−1/2}` at `τ = ∓1/(√2 π f0)`.
    GaussianDerivative {
        /// Frequency parameter of the Gaussian (Hz).
        f0: f64,
        /// Time of the zero crossing between the two lobes (s).
        delay: f64,
    },
    /// User samples `(t_i, v_i)`, `t` strictly increasing; linear interpolation between
    /// samples, 0 outside `[t_0, t_last]`.
    Samples {
        /// Sample times (s), strictly increasing.
        times: Vec<f64>,
        /// Sample values, one per time.
        values: Vec<f64>,
    },
}

/// Checks `f0` and the delay (defaulting to `1.2 / f0`) of an analytic wavelet.
fn check_analytic(f0: f64, delay: Option<f64>) -> Result<(f64, f64), WaveletError> {
    if !(f0.is_finite() && f0 > 0.0) {
        return Err(WaveletError::InvalidFrequency(f0));
    }
    let delay = delay.unwrap_or(DEFAULT_DELAY_PERIODS / f0);
    if !(delay.is_finite() && delay >= 0.0) {
        return Err(WaveletError::InvalidDelay(delay));
    }
    Ok((f0, delay))
}

/// The shape of an analytic wavelet, for the shared tail and spectrum formulas.
#[derive(Clone, Copy)]
enum Shape {
    Ricker,
    Gaussian,
    GaussianDerivative,
}

/// The smallest `x ≥ 0` such that `|w| / peak < tol` for every `|π f0 τ| > x`.
///
/// With `x = π f0 τ` and `L = ln(1/tol)` the normalised tails are
/// Gaussian `exp(−x²)`, so `x² = L`;
/// Ricker `(2x² − 1) exp(−x²)` (decreasing for `x² > 3/2`), so `x² = L + ln(2x² − 1)`;
/// Gaussian derivative `√(2e) x exp(−x²)` (decreasing for `x² > 1/2`), so
/// `x² = L + ½ ln(2e x²)`.
/// The last two are fixed points of contractions (slope `≤ 1/(x² − ½)` in `x²`), iterated
/// from `x² = L` to machine precision. Requires `0 < tol < 0.4`.
fn tail_extent(shape: Shape, tol: f64) -> f64 {
    let l = (1.0 / tol).ln();
    let mut y = l;
    for _ in 0..100 {
        let next = match shape {
            Shape::Gaussian => l,
            Shape::Ricker => l + (2.0 * y - 1.0).ln(),
            Shape::GaussianDerivative => l + 0.5 * (2.0 * std::f64::consts::E * y).ln(),
        };
        let done = (next - y).abs() <= 1e-15 * next;
        y = next;
        if done {
            break;
        }
    }
    y.sqrt()
}

impl Wavelet {
    /// A Ricker wavelet with peak frequency `f0` centred at `delay` (default `1.2 / f0`).
    ///
    /// Errors unless `f0` is finite and positive and the delay finite and non-negative.
    pub fn ricker(f0: f64, delay: Option<f64>) -> Result<Self, WaveletError> {
        let (f0, delay) = check_analytic(f0, delay)?;
        Ok(Self::Ricker { f0, delay })
    }

    /// A Gaussian `exp(−π² f0² (t − delay)²)` (default delay `1.2 / f0`).
    ///
    /// Errors unless `f0` is finite and positive and the delay finite and non-negative.
    pub fn gaussian(f0: f64, delay: Option<f64>) -> Result<Self, WaveletError> {
        let (f0, delay) = check_analytic(f0, delay)?;
        Ok(Self::Gaussian { f0, delay })
    }

    /// The first derivative of [`Wavelet::gaussian`] (default delay `1.2 / f0`).
    ///
    /// Errors unless `f0` is finite and positive and the delay finite and non-negative.
    pub fn gaussian_derivative(f0: f64, delay: Option<f64>) -> Result<Self, WaveletError> {
        let (f0, delay) = check_analytic(f0, delay)?;
        Ok(Self::GaussianDerivative { f0, delay })
    }

    /// A sampled wavelet: at least 2 samples, equally many times and values, all finite,
    /// times strictly increasing.
    pub fn from_samples(times: Vec<f64>, values: Vec<f64>) -> Result<Self, WaveletError> {
        if times.len() != values.len() {
            return Err(WaveletError::LengthMismatch {
                times: times.len(),
                values: values.len(),
            });
        }
        if times.len() < 2 {
            return Err(WaveletError::TooFewSamples(times.len()));
        }
        for (index, (&time, &value)) in times.iter().zip(&values).enumerate() {
            if !(time.is_finite() && value.is_finite()) {
                return Err(WaveletError::NonFiniteSample { index, time, value });
            }
            if index > 0 && time <= times[index - 1] {
                return Err(WaveletError::NotIncreasing {
                    index,
                    previous: times[index - 1],
                    time,
                });
            }
        }
        Ok(Self::Samples { times, values })
    }

    /// Reads a sampled wavelet from a text file of two columns `t,value`.
    ///
    /// Columns are separated by a comma or by whitespace; `#` starts a comment (to the end
    /// of the line); blank lines are skipped; the first non-blank line may be a header whose
    /// fields are all non-numeric (e.g. `t,value`). The samples must satisfy
    /// [`Wavelet::from_samples`]. Errors name the file and the 1-based line.
    pub fn from_csv(path: impl AsRef<Path>) -> Result<Self, WaveletError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| WaveletError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse_csv(&text, path)
    }

    /// Parses the text of a wavelet file; `path` is used in error messages only.
    fn parse_csv(text: &str, path: &Path) -> Result<Self, WaveletError> {
        let error = |line: usize, reason: String| WaveletError::Csv {
            path: path.to_path_buf(),
            line,
            reason,
        };
        let mut times = Vec::new();
        let mut values = Vec::new();
        let mut seen_content = false;
        let mut last_line = 1;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            last_line = line;
            // Strip a UTF-8 byte-order mark (spreadsheet exports) and comments.
            let raw = if i == 0 {
                raw.trim_start_matches('\u{feff}')
            } else {
                raw
            };
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let fields: Vec<&str> = if content.contains(',') {
                content.split(',').map(str::trim).collect()
            } else {
                content.split_whitespace().collect()
            };
            let parsed: Vec<Option<f64>> = fields.iter().map(|f| f.parse().ok()).collect();
            let first_content = !seen_content;
            seen_content = true;
            // A header is only accepted as the first content line and only if no field is a
            // number, so that a mistyped first data line is still reported.
            if first_content && parsed.iter().all(Option::is_none) {
                continue;
            }
            if fields.len() != 2 {
                return Err(error(
                    line,
                    format!("expected 2 columns (t, value), found {}", fields.len()),
                ));
            }
            let (Some(time), Some(value)) = (parsed[0], parsed[1]) else {
                let bad = if parsed[0].is_none() {
                    fields[0]
                } else {
                    fields[1]
                };
                return Err(error(line, format!("'{bad}' is not a number")));
            };
            if !(time.is_finite() && value.is_finite()) {
                return Err(error(
                    line,
                    format!("time {time} and value {value} must be finite"),
                ));
            }
            if let Some(&previous) = times.last() {
                if time <= previous {
                    return Err(error(
                        line,
                        format!("time {time} is not greater than the previous time {previous}"),
                    ));
                }
            }
            times.push(time);
            values.push(value);
        }
        if times.len() < 2 {
            return Err(error(
                last_line,
                format!("need at least 2 samples, found {}", times.len()),
            ));
        }
        Self::from_samples(times, values).map_err(|e| error(last_line, e.to_string()))
    }

    /// `(shape, f0, delay)` of an analytic wavelet, `None` for samples.
    fn analytic(&self) -> Option<(Shape, f64, f64)> {
        match *self {
            Self::Ricker { f0, delay } => Some((Shape::Ricker, f0, delay)),
            Self::Gaussian { f0, delay } => Some((Shape::Gaussian, f0, delay)),
            Self::GaussianDerivative { f0, delay } => Some((Shape::GaussianDerivative, f0, delay)),
            Self::Samples { .. } => None,
        }
    }

    /// The value `w(t)`.
    pub fn value(&self, t: f64) -> f64 {
        match self {
            Self::Samples { times, values } => {
                // Tolerate a hand-built value with unequal lengths: use the common prefix.
                let n = times.len().min(values.len());
                let (times, values) = (&times[..n], &values[..n]);
                if n == 0 || !(t >= times[0] && t <= times[n - 1]) {
                    return 0.0;
                }
                // First index with times[k] > t; the sample interval is [k − 1, k]. (k ≥ 1
                // since times[0] <= t; the max only guards hand-built NaN times.)
                let k = times.partition_point(|&s| s <= t).max(1);
                if k >= n {
                    return values[n - 1];
                }
                let (t0, t1) = (times[k - 1], times[k]);
                let (v0, v1) = (values[k - 1], values[k]);
                v0 + (v1 - v0) * ((t - t0) / (t1 - t0))
            }
            _ => {
                let Some((shape, f0, delay)) = self.analytic() else {
                    return 0.0;
                };
                let a = (PI * f0).powi(2);
                let tau = t - delay;
                let g = (-a * tau * tau).exp();
                match shape {
                    Shape::Ricker => (1.0 - 2.0 * a * tau * tau) * g,
                    Shape::Gaussian => g,
                    Shape::GaussianDerivative => -2.0 * a * tau * g,
                }
            }
        }
    }

    /// The largest `|w(t)|`: 1 for the Ricker and the Gaussian, `√2 π f0 e^{−1/2}` for the
    /// Gaussian derivative, the largest `|v_i|` for samples.
    pub fn peak_amplitude(&self) -> f64 {
        match self {
            Self::Samples { values, .. } => values.iter().fold(0.0, |m, v| m.max(v.abs())),
            _ => match self.analytic() {
                Some((Shape::GaussianDerivative, f0, _)) => {
                    std::f64::consts::SQRT_2 * PI * f0 * (-0.5f64).exp()
                }
                _ => 1.0,
            },
        }
    }

    /// The interval outside which `|w| < tol · peak` (for samples, where `w` is nonzero at
    /// all: `[t_0, t_last]`). `tol` must lie in `(0, 0.4)`.
    pub(crate) fn support(&self, tol: f64) -> (f64, f64) {
        match self {
            Self::Samples { times, values } => {
                let n = times.len().min(values.len());
                if n == 0 {
                    (0.0, 0.0)
                } else {
                    (times[0], times[n - 1])
                }
            }
            _ => match self.analytic() {
                Some((shape, f0, delay)) => {
                    let half = tail_extent(shape, tol) / (PI * f0);
                    (delay - half, delay + half)
                }
                None => (0.0, 0.0),
            },
        }
    }

    /// A time after which `|w(t)|` stays below `1e-10` of its peak.
    ///
    /// Analytic wavelets: `delay + x / (π f0)` with `x` the root of the normalised tail
    /// `= 1e-10` (see the module docs): Gaussian `x = sqrt(ln 1e10) ≈ 4.7985`, Ricker
    /// `(2x² − 1) e^{−x²} = 1e-10 ⇒ x ≈ 5.1958`, Gaussian derivative
    /// `√(2e) x e^{−x²} = 1e-10 ⇒ x ≈ 5.0489`; each tail decreases monotonically beyond its
    /// root. Samples: the last sample time.
    pub fn end_time(&self) -> f64 {
        self.support(END_TIME_TOLERANCE).1
    }

    /// The peak frequency `f0` of the analytic wavelets (`None` for samples).
    pub fn peak_frequency(&self) -> Option<f64> {
        self.analytic().map(|(_, f0, _)| f0)
    }

    /// A frequency above which the amplitude spectrum stays below 1 % of its peak, for
    /// checking points per wavelength (`None` for samples).
    ///
    /// With `y = f / f0`: Ricker `y² e^{1−y²} = 0.01 ⇒ 2.7638 f0` (the common rule of thumb
    /// `2.5 f0` is the 3.3 % level); Gaussian `e^{−y²} = 0.01 ⇒ sqrt(ln 100) f0 = 2.1460 f0`;
    /// Gaussian derivative `√2 e^{1/2} y e^{−y²} = 0.01 ⇒ 2.5255 f0`.
    pub fn max_frequency(&self) -> Option<f64> {
        self.analytic().map(|(shape, f0, _)| {
            f0 * match shape {
                Shape::Ricker => RICKER_FMAX_OVER_F0,
                Shape::Gaussian => GAUSSIAN_FMAX_OVER_F0,
                Shape::GaussianDerivative => GAUSSIAN_DERIVATIVE_FMAX_OVER_F0,
            }
        })
    }

    /// A short lower-case name: `ricker`, `gaussian`, `gaussian_derivative` or `samples`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Ricker { .. } => "ricker",
            Self::Gaussian { .. } => "gaussian",
            Self::GaussianDerivative { .. } => "gaussian_derivative",
            Self::Samples { .. } => "samples",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn constructors_validate_and_default_delay() {
        let w = Wavelet::ricker(10.0, None).unwrap();
        assert_eq!(
            w,
            Wavelet::Ricker {
                f0: 10.0,
                delay: 0.12
            }
        );
        assert!(matches!(
            Wavelet::gaussian(4.0, Some(0.5)).unwrap(),
            Wavelet::Gaussian { f0, delay } if f0 == 4.0 && delay == 0.5
        ));
        for f0 in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Wavelet::ricker(f0, None),
                Err(WaveletError::InvalidFrequency(_))
            ));
        }
        for delay in [-1e-3, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Wavelet::gaussian_derivative(1.0, Some(delay)),
                Err(WaveletError::InvalidDelay(_))
            ));
        }
        assert!(Wavelet::gaussian(1.0, Some(0.0)).is_ok());
    }

    #[test]
    fn sample_constructor_validates() {
        assert!(matches!(
            Wavelet::from_samples(vec![0.0], vec![1.0]),
            Err(WaveletError::TooFewSamples(1))
        ));
        assert!(matches!(
            Wavelet::from_samples(vec![0.0, 1.0], vec![1.0]),
            Err(WaveletError::LengthMismatch {
                times: 2,
                values: 1
            })
        ));
        assert!(matches!(
            Wavelet::from_samples(vec![0.0, 1.0, 1.0], vec![1.0, 2.0, 3.0]),
            Err(WaveletError::NotIncreasing { index: 2, .. })
        ));
        assert!(matches!(
            Wavelet::from_samples(vec![0.0, 1.0], vec![1.0, f64::NAN]),
            Err(WaveletError::NonFiniteSample { index: 1, .. })
        ));
        assert!(matches!(
            Wavelet::from_samples(vec![f64::NEG_INFINITY, 1.0], vec![1.0, 2.0]),
            Err(WaveletError::NonFiniteSample { index: 0, .. })
        ));
    }

    #[test]
    fn peak_values() {
        let f0 = 7.0;
        let delay = 0.3;
        let r = Wavelet::ricker(f0, Some(delay)).unwrap();
        let g = Wavelet::gaussian(f0, Some(delay)).unwrap();
        let d = Wavelet::gaussian_derivative(f0, Some(delay)).unwrap();
        assert_eq!(r.value(delay), 1.0);
        assert_eq!(g.value(delay), 1.0);
        assert_eq!(d.value(delay), 0.0);
        // Ricker minima at τ = ±sqrt(3/2)/(π f0) with value −2 e^{−3/2}.
        let tm = (1.5f64).sqrt() / (PI * f0);
        for t in [delay - tm, delay + tm] {
            assert!(close(r.value(t), -2.0 * (-1.5f64).exp(), 1e-15));
        }
        // Derivative extrema at τ = ∓1/(√2 π f0), ±√2 π f0 e^{−1/2}.
        let te = 1.0 / (std::f64::consts::SQRT_2 * PI * f0);
        let peak = d.peak_amplitude();
        assert!(close(d.value(delay - te), peak, 1e-13 * peak));
        assert!(close(d.value(delay + te), -peak, 1e-13 * peak));
        // Scan: no |w| exceeds the stated peak, and the scan maximum reaches it.
        for w in [&r, &g, &d] {
            let peak = w.peak_amplitude();
            let mut max = 0.0f64;
            for i in 0..=200_000 {
                let t = delay - 1.0 / f0 + 2.0 / f0 * i as f64 / 200_000.0;
                max = max.max(w.value(t).abs());
            }
            assert!(max <= peak * (1.0 + 1e-14), "{}", w.name());
            assert!(max >= peak * (1.0 - 1e-9), "{}", w.name());
        }
    }

    #[test]
    fn ricker_zero_crossings() {
        let f0 = 3.0;
        let delay = 0.5;
        let r = Wavelet::ricker(f0, Some(delay)).unwrap();
        let tz = 1.0 / (std::f64::consts::SQRT_2 * PI * f0);
        for t in [delay - tz, delay + tz] {
            assert!(r.value(t).abs() < 1e-15);
            // A genuine sign change, not a touch.
            assert!(r.value(t - 1e-6) * r.value(t + 1e-6) < 0.0);
        }
    }

    #[test]
    fn derivative_is_finite_difference_of_gaussian() {
        let f0 = 5.0;
        let g = Wavelet::gaussian(f0, None).unwrap();
        let d = Wavelet::gaussian_derivative(f0, None).unwrap();
        let h = 1e-5 / f0;
        let peak = d.peak_amplitude();
        for i in 0..=100 {
            let t = 2.4 / f0 * i as f64 / 100.0;
            let fd = (g.value(t + h) - g.value(t - h)) / (2.0 * h);
            // Central difference error ≈ h² w'''/6 ~ 1e-10 · peak; round-off ~ 1e-16/h.
            assert!(close(fd, d.value(t), 1e-8 * peak), "t = {t}");
        }
    }

    #[test]
    fn end_time_bounds_the_tail() {
        for w in [
            Wavelet::ricker(2.0, None).unwrap(),
            Wavelet::gaussian(2.0, Some(1.0)).unwrap(),
            Wavelet::gaussian_derivative(2.0, None).unwrap(),
        ] {
            let f0 = w.peak_frequency().unwrap();
            let end = w.end_time();
            let peak = w.peak_amplitude();
            for i in 0..=10_000 {
                let t = end + 5.0 / f0 * i as f64 / 10_000.0;
                assert!(
                    w.value(t).abs() <= 1e-10 * peak * (1.0 + 1e-9),
                    "{} at {t}",
                    w.name()
                );
            }
            // Tight: just before the end time the tail is still above 0.9e-10.
            assert!(
                w.value(end - 1e-4 / f0).abs() > 0.9e-10 * peak,
                "{}",
                w.name()
            );
        }
        // The stated constants x = π f0 (end − delay).
        let x = |w: Wavelet| {
            let (f0, delay) = match w {
                Wavelet::Ricker { f0, delay }
                | Wavelet::Gaussian { f0, delay }
                | Wavelet::GaussianDerivative { f0, delay } => (f0, delay),
                Wavelet::Samples { .. } => unreachable!(),
            };
            PI * f0 * (w.end_time() - delay)
        };
        assert!(close(
            x(Wavelet::gaussian(1.0, None).unwrap()),
            4.7985,
            1e-4
        ));
        assert!(close(x(Wavelet::ricker(1.0, None).unwrap()), 5.1958, 1e-4));
        assert!(close(
            x(Wavelet::gaussian_derivative(1.0, None).unwrap()),
            5.0489,
            1e-4
        ));
        let s = Wavelet::from_samples(vec![0.0, 1.0, 2.5], vec![0.0, 1.0, 0.0]).unwrap();
        assert_eq!(s.end_time(), 2.5);
    }

    #[test]
    fn default_delay_start_level() {
        // The documented levels at t = 0 for the default delay 1.2 / f0.
        let r = Wavelet::ricker(1.0, None).unwrap();
        let g = Wavelet::gaussian(1.0, None).unwrap();
        let d = Wavelet::gaussian_derivative(1.0, None).unwrap();
        assert!(close(r.value(0.0).abs(), 1.844e-5, 1e-8));
        assert!(close(g.value(0.0), 6.725e-7, 1e-10));
        assert!(close(d.value(0.0) / d.peak_amplitude(), 5.912e-6, 1e-9));
    }

    #[test]
    fn max_frequency_constants_solve_their_equations() {
        let ricker = |y: f64| y * y * (1.0 - y * y).exp();
        let gauss = |y: f64| (-y * y).exp();
        let deriv = |y: f64| std::f64::consts::SQRT_2 * 0.5f64.exp() * y * (-y * y).exp();
        assert!(close(ricker(RICKER_FMAX_OVER_F0), 0.01, 1e-8));
        assert!(close(gauss(GAUSSIAN_FMAX_OVER_F0), 0.01, 1e-8));
        assert!(close(deriv(GAUSSIAN_DERIVATIVE_FMAX_OVER_F0), 0.01, 1e-8));
        // Normalisations: each spectrum peaks at 1.
        assert!(close(ricker(1.0), 1.0, 1e-15));
        assert!(close(deriv(std::f64::consts::FRAC_1_SQRT_2), 1.0, 1e-15));
        let w = Wavelet::ricker(10.0, None).unwrap();
        assert_eq!(w.peak_frequency(), Some(10.0));
        assert!(close(w.max_frequency().unwrap(), 27.63757, 1e-4));
        let s = Wavelet::from_samples(vec![0.0, 1.0], vec![0.0, 1.0]).unwrap();
        assert_eq!(s.peak_frequency(), None);
        assert_eq!(s.max_frequency(), None);
    }

    /// `|∫ w(t) e^{−2πift} dt|` by the trapezoidal rule over the wavelet's support (spectrally
    /// accurate for a smooth function that is negligible at both ends).
    fn amplitude_spectrum(w: &Wavelet, f: f64) -> f64 {
        let (lo, hi) = w.support(1e-16);
        let n = 20_000;
        let h = (hi - lo) / n as f64;
        let (mut re, mut im) = (0.0, 0.0);
        for i in 0..=n {
            let t = lo + h * i as f64;
            let phase = 2.0 * PI * f * t;
            re += w.value(t) * phase.cos();
            im -= w.value(t) * phase.sin();
        }
        h * re.hypot(im)
    }

    #[test]
    fn max_frequency_matches_numerical_spectrum() {
        // Independent of the spectrum formulas: a direct Fourier integral of the wavelet.
        let f0 = 2.0;
        for (w, f_peak) in [
            (Wavelet::ricker(f0, Some(3.0)).unwrap(), f0),
            (Wavelet::gaussian(f0, Some(3.0)).unwrap(), 0.0),
            (
                Wavelet::gaussian_derivative(f0, Some(3.0)).unwrap(),
                f0 * std::f64::consts::FRAC_1_SQRT_2,
            ),
        ] {
            let peak = amplitude_spectrum(&w, f_peak);
            let fmax = w.max_frequency().unwrap();
            let ratio = amplitude_spectrum(&w, fmax) / peak;
            assert!(close(ratio, 0.01, 1e-6), "{}: {ratio}", w.name());
            // Above fmax the spectrum keeps falling.
            assert!(
                amplitude_spectrum(&w, 1.2 * fmax) < 0.01 * peak,
                "{}",
                w.name()
            );
        }
    }

    #[test]
    fn sample_interpolation() {
        let w = Wavelet::from_samples(vec![-1.0, 0.0, 2.0], vec![1.0, 3.0, -1.0]).unwrap();
        assert_eq!(w.value(-1.5), 0.0);
        assert_eq!(w.value(-1.0), 1.0);
        assert_eq!(w.value(-0.5), 2.0);
        assert_eq!(w.value(0.0), 3.0);
        assert_eq!(w.value(1.0), 1.0);
        assert_eq!(w.value(2.0), -1.0);
        assert_eq!(w.value(2.0 + 1e-12), 0.0);
        assert_eq!(w.value(f64::NAN), 0.0);
        assert_eq!(w.peak_amplitude(), 3.0);
        assert_eq!(w.name(), "samples");
        // A hand-built inconsistent value does not panic.
        let bad = Wavelet::Samples {
            times: vec![0.0, 1.0],
            values: vec![],
        };
        assert_eq!(bad.value(0.5), 0.0);
        assert_eq!(bad.end_time(), 0.0);
    }

    #[test]
    fn names() {
        assert_eq!(Wavelet::ricker(1.0, None).unwrap().name(), "ricker");
        assert_eq!(Wavelet::gaussian(1.0, None).unwrap().name(), "gaussian");
        assert_eq!(
            Wavelet::gaussian_derivative(1.0, None).unwrap().name(),
            "gaussian_derivative"
        );
    }

    /// Writes `text` to a fresh file in the temporary directory.
    fn temp_file(tag: &str, text: &str) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "ferrofem-wave-wavelet-{}-{tag}.csv",
            std::process::id()
        ));
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Reads `text` from a temporary file and removes the file again.
    fn read_csv(tag: &str, text: &str) -> (PathBuf, Result<Wavelet, WaveletError>) {
        let path = temp_file(tag, text);
        let result = Wavelet::from_csv(&path);
        std::fs::remove_file(&path).unwrap();
        (path, result)
    }

    #[test]
    fn csv_parsing() {
        let text = "\u{feff}# source time function\n\
                    t,value\n\
                    \n\
                    0.0, 0.0   # start\n\
                    0.5,1.0\n\
                    1.0 , -2e-1\r\n";
        let (_, w) = read_csv("ok-comma", text);
        assert_eq!(
            w.unwrap(),
            Wavelet::Samples {
                times: vec![0.0, 0.5, 1.0],
                values: vec![0.0, 1.0, -0.2]
            }
        );
        let (_, w) = read_csv("ok-space", "time value\n0 1\n1\t2\n  3   4  \n");
        assert_eq!(
            w.unwrap(),
            Wavelet::Samples {
                times: vec![0.0, 1.0, 3.0],
                values: vec![1.0, 2.0, 4.0]
            }
        );
        // No header at all.
        let (_, w) = read_csv("ok-noheader", "0,1\n1,2\n");
        assert!(w.is_ok());
    }

    /// Asserts a CSV error at `line` whose message contains `needle` and the path.
    fn expect_csv_error(tag: &str, text: &str, line: usize, needle: &str) {
        let (path, result) = read_csv(tag, text);
        match result {
            Err(e @ WaveletError::Csv { .. }) => {
                let WaveletError::Csv {
                    path: p, line: l, ..
                } = &e
                else {
                    unreachable!()
                };
                assert_eq!(p, &path);
                assert_eq!(*l, line, "{e}");
                let message = e.to_string();
                assert!(message.contains(needle), "{message}");
                assert!(
                    message.starts_with(&format!("{}:{line}:", path.display())),
                    "{message}"
                );
            }
            other => panic!("{tag}: expected a CSV error, got {other:?}"),
        }
    }

    #[test]
    fn csv_errors() {
        expect_csv_error("columns", "t,v\n0,1\n1,2,3\n", 3, "expected 2 columns");
        expect_csv_error("one-column", "0\n1\n", 1, "expected 2 columns");
        expect_csv_error("number", "# c\n0,1\n1,abc\n", 3, "'abc' is not a number");
        // A first line with a numeric field is data, not a header.
        expect_csv_error("bad-first", "0.0,x\n1,2\n", 1, "'x' is not a number");
        // A second header-like line is an error.
        expect_csv_error("two-headers", "t,v\nt,v\n0,1\n", 2, "is not a number");
        expect_csv_error("nan", "0,1\n1,nan\n", 2, "must be finite");
        expect_csv_error("order", "0,1\n1,2\n1,3\n", 3, "not greater");
        expect_csv_error("few", "t,v\n0,1\n\n", 3, "at least 2 samples, found 1");
        expect_csv_error("empty", "", 1, "found 0");
        let missing = std::env::temp_dir().join("ferrofem-wave-no-such-file.csv");
        match Wavelet::from_csv(&missing) {
            Err(e @ WaveletError::Io { .. }) => {
                assert!(e.to_string().contains("no-such-file"), "{e}")
            }
            other => panic!("expected an I/O error, got {other:?}"),
        }
    }
}
