//! Direct sparse solves on the CPU through faer's supernodal Cholesky and LU.
//!
//! The computation is in `f64` whatever the input precision (f32 matrices are widened).
//! A CSR matrix is handed to faer without copying its pattern by reading it as the CSC
//! form of `Aᵀ`: Cholesky factors that (equal to `A` for a symmetric matrix), and LU
//! factors `Aᵀ` and solves with its transpose.
//!
//! Failures are typed: a non-positive Cholesky pivot, a structurally singular matrix, and a
//! numerically singular one (a factorisation that yields NaN/Inf, or a computed solution
//! whose backward error `‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞)` is far above rounding). A nearly
//! singular matrix whose solution has a small backward error is not detected; its solution
//! is as good as the conditioning allows.

use faer::linalg::solvers::Solve;
use faer::sparse::linalg::solvers::{Llt, Lu};
use faer::sparse::linalg::{LltError, LuError};
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{MatMut, Side};
use ferrofem_base::{CsrMatrix, Real};

use crate::SolverError;

/// Which factorisation a direct solve uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectKind {
    /// Sparse Cholesky `A = LLᵀ`; the matrix must be symmetric positive definite.
    Cholesky,
    /// Sparse LU with partial pivoting; any nonsingular square matrix.
    Lu,
    /// Cholesky when the matrix is symmetric, falling back to LU when the Cholesky
    /// factorisation meets a non-positive pivot; LU otherwise.
    #[default]
    Auto,
}

/// Largest relative asymmetry (see [`CsrMatrix::asymmetry`]) still treated as symmetric,
/// in units of the input precision's epsilon.
const SYMMETRY_TOL_EPS: f64 = 1e3;

/// Largest acceptable backward error of a direct solution: `max(1e-8, 100 ε_T)`.
fn backward_error_tol<T: Real>() -> f64 {
    (100.0 * T::EPS).max(1e-8)
}

enum Factor {
    Cholesky(Llt<usize, f64>),
    Lu(Box<Lu<usize, f64>>),
}

/// A sparse factorisation of a square matrix, reusable for many right-hand sides.
pub struct DirectFactorization {
    factor: Factor,
    n: usize,
    /// The matrix in `f64` (CSR arrays), kept for the backward-error check.
    row_ptr: Vec<usize>,
    col_idx: Vec<usize>,
    values: Vec<f64>,
    tol: f64,
}

impl std::fmt::Debug for DirectFactorization {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectFactorization")
            .field("kind", &self.kind())
            .field("n", &self.n)
            .field("nnz", &self.values.len())
            .finish()
    }
}

impl DirectFactorization {
    /// Factors `a` with the requested kind (see [`DirectKind`]).
    pub fn new<T: Real>(a: &CsrMatrix<T>, kind: DirectKind) -> Result<Self, SolverError> {
        let (nrows, ncols) = (a.nrows(), a.ncols());
        if nrows != ncols {
            return Err(SolverError::NotSquare { nrows, ncols });
        }
        if let Some(index) = a.values().iter().position(|v| !v.as_f64().is_finite()) {
            return Err(SolverError::NonFiniteInput {
                what: "matrix",
                index,
            });
        }
        let n = nrows;
        let row_ptr = a.row_ptr().to_vec();
        let col_idx: Vec<usize> = a.col_idx().iter().map(|&c| c as usize).collect();
        let values: Vec<f64> = a.values().iter().map(|v| v.as_f64()).collect();
        let symmetric = || a.asymmetry() <= SYMMETRY_TOL_EPS * T::EPS;

        let factor = {
            // CSR of A read as CSC of Aᵀ. The pattern was validated by `CsrMatrix`.
            let symbolic = SymbolicSparseColMatRef::new_checked(n, n, &row_ptr, None, &col_idx);
            let at = SparseColMatRef::new(symbolic, &values);
            match kind {
                DirectKind::Cholesky => {
                    let asymmetry = a.asymmetry();
                    if asymmetry > SYMMETRY_TOL_EPS * T::EPS {
                        return Err(SolverError::NotSymmetric { asymmetry });
                    }
                    Factor::Cholesky(cholesky(at)?)
                }
                DirectKind::Lu => Factor::Lu(Box::new(lu(at)?)),
                DirectKind::Auto if symmetric() => match cholesky(at) {
                    Ok(llt) => Factor::Cholesky(llt),
                    Err(SolverError::CholeskyNotPositiveDefinite { .. }) => {
                        Factor::Lu(Box::new(lu(at)?))
                    }
                    Err(e) => return Err(e),
                },
                DirectKind::Auto => Factor::Lu(Box::new(lu(at)?)),
            }
        };
        Ok(DirectFactorization {
            factor,
            n,
            row_ptr,
            col_idx,
            values,
            tol: backward_error_tol::<T>(),
        })
    }

    /// The factorisation actually used ([`DirectKind::Cholesky`] or [`DirectKind::Lu`]).
    pub fn kind(&self) -> DirectKind {
        match self.factor {
            Factor::Cholesky(_) => DirectKind::Cholesky,
            Factor::Lu(_) => DirectKind::Lu,
        }
    }

    /// The number of unknowns.
    pub fn dim(&self) -> usize {
        self.n
    }

    /// Solves `A x = b`, checking that the solution is finite and has a small backward error.
    pub fn solve<T: Real>(&self, b: &[T]) -> Result<Vec<T>, SolverError> {
        if b.len() != self.n {
            return Err(SolverError::DimensionMismatch {
                what: "right-hand side",
                expected: self.n,
                found: b.len(),
            });
        }
        if let Some(index) = b.iter().position(|v| !v.as_f64().is_finite()) {
            return Err(SolverError::NonFiniteInput {
                what: "right-hand side",
                index,
            });
        }
        let rhs: Vec<f64> = b.iter().map(|v| v.as_f64()).collect();
        let mut x = rhs.clone();
        if self.n > 0 {
            let view = MatMut::from_column_major_slice_mut(&mut x, self.n, 1);
            match &self.factor {
                Factor::Cholesky(llt) => llt.solve_in_place(view),
                // The LU is of Aᵀ, so A x = b is its transposed solve.
                Factor::Lu(lu) => lu.solve_transpose_in_place(view),
            }
        }
        if x.iter().any(|v| !v.is_finite()) {
            return Err(SolverError::Singular(
                "the factorisation produced NaN or Inf (zero pivot)".into(),
            ));
        }
        let berr = self.backward_error(&x, &rhs);
        if berr.is_nan() || berr > self.tol {
            return Err(SolverError::Singular(format!(
                "the computed solution has backward error {berr:e} (tolerance {:e})",
                self.tol
            )));
        }
        Ok(x.into_iter().map(T::of).collect())
    }

    /// `‖b − Ax‖∞ / (‖A‖∞‖x‖∞ + ‖b‖∞)` (zero when `A x = b = 0`).
    fn backward_error(&self, x: &[f64], b: &[f64]) -> f64 {
        let mut res: f64 = 0.0;
        let mut a_norm: f64 = 0.0;
        for i in 0..self.n {
            let range = self.row_ptr[i]..self.row_ptr[i + 1];
            let (mut ax, mut row_abs) = (0.0, 0.0);
            for (&c, &v) in self.col_idx[range.clone()].iter().zip(&self.values[range]) {
                ax += v * x[c];
                row_abs += v.abs();
            }
            res = res.max((b[i] - ax).abs());
            a_norm = a_norm.max(row_abs);
        }
        let inf_norm = |v: &[f64]| v.iter().fold(0.0f64, |m, e| m.max(e.abs()));
        let denom = a_norm * inf_norm(x) + inf_norm(b);
        if denom > 0.0 {
            res / denom
        } else {
            0.0
        }
    }
}

fn cholesky(at: SparseColMatRef<'_, usize, f64>) -> Result<Llt<usize, f64>, SolverError> {
    at.sp_cholesky(Side::Lower).map_err(|e| match e {
        LltError::Numeric(faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot {
            index,
        }) => SolverError::CholeskyNotPositiveDefinite { pivot: index },
        LltError::Generic(g) => SolverError::Factorization(format!("{g:?}")),
    })
}

fn lu(at: SparseColMatRef<'_, usize, f64>) -> Result<Lu<usize, f64>, SolverError> {
    at.sp_lu().map_err(|e| match e {
        LuError::SymbolicSingular { index } => SolverError::Singular(format!(
            "structurally singular: no pivot available at elimination step {index}"
        )),
        LuError::Generic(g) => SolverError::Factorization(format!("{g:?}")),
    })
}

/// Solves `A x = b` with a sparse direct factorisation (computed in `f64`).
///
/// One-shot form of [`DirectFactorization`]; see the module documentation for the errors.
pub fn solve_direct<T: Real>(
    a: &CsrMatrix<T>,
    b: &[T],
    kind: DirectKind,
) -> Result<Vec<T>, SolverError> {
    DirectFactorization::new(a, kind)?.solve(b)
}
