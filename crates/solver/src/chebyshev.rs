//! Chebyshev–Jacobi preconditioning on any [`KrylovSpace`]: `M⁻¹ r` is `degree` steps of
//! the Chebyshev iteration for `D⁻¹A z = D⁻¹r` from `z = 0` (`D⁻¹` the space's own Jacobi
//! preconditioner), on the interval `[λ/RANGE, λ]` where `λ` bounds the spectrum of `D⁻¹A`
//! from above, estimated by power iteration and raised by [`SAFETY`]. The result is a fixed
//! polynomial `q(D⁻¹A) D⁻¹`; with the bound above the spectrum and an odd degree, `q > 0` on
//! it, so the preconditioner is symmetric positive definite for PCG. Written once against
//! the space's operations: the same on host and device vectors.

use crate::{KrylovSpace, SolverError};
use ferrofem_base::Real;
use std::sync::Mutex;

/// The lower end of the Chebyshev interval is the upper bound divided by this.
pub const RANGE: f64 = 20.0;

/// The power-iteration estimate of the largest eigenvalue is raised by this factor (power
/// iteration approaches it from below).
pub const SAFETY: f64 = 1.1;

/// Power iterations for the eigenvalue estimate.
const POWER_ITERATIONS: usize = 20;

/// A space whose preconditioner is Chebyshev–Jacobi of the inner space's operator and
/// Jacobi preconditioner; every other operation is the inner space's.
pub struct ChebyshevSpace<'a, T: Real, S: KrylovSpace<T>> {
    inner: &'a S,
    degree: usize,
    lmax: f64,
    /// Direction, operator output/preconditioned residual, residual, zero.
    scratch: Mutex<[S::Vector; 4]>,
    _t: std::marker::PhantomData<T>,
}

impl<'a, T: Real, S: KrylovSpace<T>> ChebyshevSpace<'a, T, S> {
    /// Chebyshev–Jacobi of odd `degree` on `inner` (which must be Jacobi-preconditioned),
    /// its eigenvalue bound estimated by power iteration from `D⁻¹ start` (e.g. the
    /// right-hand side; nonzero).
    pub fn new(inner: &'a S, degree: usize, start: &S::Vector) -> Result<Self, SolverError> {
        if degree == 0 || degree % 2 == 0 {
            return Err(SolverError::InvalidOptions(format!(
                "Chebyshev degree {degree}: an odd degree keeps the preconditioner positive"
            )));
        }
        let (mut v, mut w) = (inner.zeros()?, inner.zeros()?);
        inner.precondition(start, &mut v)?;
        let mut norm = inner.norm(&v)?;
        let mut lambda = 0.0;
        for _ in 0..POWER_ITERATIONS {
            if !(norm > 0.0 && norm.is_finite()) {
                return Err(SolverError::InvalidOptions(
                    "Chebyshev eigenvalue estimate: the start vector vanished or is not finite"
                        .into(),
                ));
            }
            inner.apply(&v, &mut w)?;
            let mut z = inner.zeros()?;
            inner.precondition(&w, &mut z)?;
            let zn = inner.norm(&z)?;
            lambda = zn / norm;
            // v = z / ‖z‖ (scaled through an axpy into zeros)
            v = inner.zeros()?;
            inner.axpy(T::of(1.0 / zn), &z, &mut v)?;
            norm = 1.0;
        }
        if !(lambda > 0.0 && lambda.is_finite()) {
            return Err(SolverError::InvalidOptions(format!(
                "Chebyshev eigenvalue estimate {lambda}: the preconditioned operator is not positive"
            )));
        }
        Ok(ChebyshevSpace {
            inner,
            degree,
            lmax: SAFETY * lambda,
            scratch: Mutex::new([
                inner.zeros()?,
                inner.zeros()?,
                inner.zeros()?,
                inner.zeros()?,
            ]),
            _t: std::marker::PhantomData,
        })
    }

    /// The upper end of the Chebyshev interval.
    pub fn upper_bound(&self) -> f64 {
        self.lmax
    }
}

impl<T: Real, S: KrylovSpace<T>> KrylovSpace<T> for ChebyshevSpace<'_, T, S> {
    type Vector = S::Vector;

    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn zeros(&self) -> Result<S::Vector, SolverError> {
        self.inner.zeros()
    }
    fn dot(&self, a: &S::Vector, b: &S::Vector) -> Result<f64, SolverError> {
        self.inner.dot(a, b)
    }
    fn axpy(&self, alpha: T, x: &S::Vector, y: &mut S::Vector) -> Result<(), SolverError> {
        self.inner.axpy(alpha, x, y)
    }
    fn xpby(&self, x: &S::Vector, beta: T, y: &mut S::Vector) -> Result<(), SolverError> {
        self.inner.xpby(x, beta, y)
    }
    fn copy(&self, x: &S::Vector, y: &mut S::Vector) -> Result<(), SolverError> {
        self.inner.copy(x, y)
    }
    fn apply(&self, x: &S::Vector, y: &mut S::Vector) -> Result<(), SolverError> {
        self.inner.apply(x, y)
    }
    /// `z = q(D⁻¹A) D⁻¹ r`: the Chebyshev iteration, the direction kept as `f d̂`.
    fn precondition(&self, r: &S::Vector, z: &mut S::Vector) -> Result<(), SolverError> {
        let s = self.inner;
        let mut guard = self
            .scratch
            .lock()
            .map_err(|_| SolverError::InvalidOptions("Chebyshev scratch poisoned".into()))?;
        let [d, w, res, zero] = &mut *guard;
        let (lmax, lmin) = (self.lmax, self.lmax / RANGE);
        let (theta, delta) = ((lmax + lmin) / 2.0, (lmax - lmin) / 2.0);
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        // d = D⁻¹ r / θ, z = d
        s.precondition(r, d)?;
        let mut f = 1.0 / theta;
        s.copy(zero, z)?;
        s.axpy(T::of(f), d, z)?;
        for _ in 1..self.degree {
            // w = D⁻¹ (r − A z)
            s.apply(z, w)?;
            s.copy(r, res)?;
            s.axpy(-T::one(), w, res)?;
            s.precondition(res, w)?;
            let rho_new = 1.0 / (2.0 * sigma - rho);
            let (a, b) = (2.0 * rho_new / delta, rho_new * rho);
            // d ← a w + b d, stored as d̂ = w + (b f / a) d̂ with f = a
            s.xpby(w, T::of(b * f / a), d)?;
            f = a;
            s.axpy(T::of(f), d, z)?;
            rho = rho_new;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{pcg, CpuSpace, SolveOptions};
    use ferrofem_base::CsrMatrix;

    /// The 2-D five-point Laplacian (Dirichlet outside) with a slightly varying diagonal on
    /// an `n × n` grid.
    fn laplacian(n: usize) -> CsrMatrix<f64> {
        let (mut row_ptr, mut col_idx, mut values) = (vec![0], Vec::new(), Vec::new());
        for i in 0..n {
            for j in 0..n {
                let r = i * n + j;
                let mut row: Vec<(u32, f64)> = vec![(r as u32, 4.0 + 0.5 * (r % 3) as f64)];
                for (di, dj) in [(0i64, 1i64), (1, 0), (0, -1), (-1, 0)] {
                    let (a, b) = (i as i64 + di, j as i64 + dj);
                    if a >= 0 && b >= 0 && (a as usize) < n && (b as usize) < n {
                        row.push(((a as usize * n + b as usize) as u32, -1.0));
                    }
                }
                row.sort_by_key(|e| e.0);
                for (c, v) in row {
                    col_idx.push(c);
                    values.push(v);
                }
                row_ptr.push(col_idx.len());
            }
        }
        CsrMatrix::new(n * n, n * n, row_ptr, col_idx, values).unwrap()
    }

    #[test]
    fn chebyshev_jacobi_pcg_reaches_the_jacobi_solution_in_fewer_iterations() {
        let a = laplacian(40);
        let n = a.nrows();
        let b: Vec<f64> = (0..n).map(|i| ((i * 37 % 11) as f64) - 5.0).collect();
        let diag = a.diag();
        let jacobi = CpuSpace::with_jacobi(&a, &diag).unwrap();
        let opts = SolveOptions {
            rtol: 1e-12,
            ..SolveOptions::default()
        };
        let mut x1 = vec![0.0; n];
        let s1 = pcg(&jacobi, &b, &mut x1, &opts).unwrap();
        let cheb = ChebyshevSpace::new(&jacobi, 3, &b).unwrap();
        // the bound lies above the spectrum of D⁻¹A (Gershgorin: at most 2)
        assert!(cheb.upper_bound() > 1.0 && cheb.upper_bound() < 2.0 * SAFETY);
        let mut x2 = vec![0.0; n];
        let s2 = pcg(&cheb, &b, &mut x2, &opts).unwrap();
        let diff = x1
            .iter()
            .zip(&x2)
            .fold(0.0f64, |m, (p, q)| m.max((p - q).abs()));
        let scale = x1.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(diff <= 1e-9 * scale, "{diff:e}");
        assert!(
            2 * s2.iterations < s1.iterations,
            "Chebyshev {} against Jacobi {} iterations",
            s2.iterations,
            s1.iterations
        );
    }

    #[test]
    fn even_degrees_and_zero_starts_are_refused() {
        let a = laplacian(4);
        let diag = a.diag();
        let jacobi = CpuSpace::with_jacobi(&a, &diag).unwrap();
        let b = vec![1.0; a.nrows()];
        assert!(ChebyshevSpace::new(&jacobi, 2, &b).is_err());
        assert!(ChebyshevSpace::new(&jacobi, 3, &vec![0.0; a.nrows()]).is_err());
    }
}
