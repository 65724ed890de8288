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
//!
//! **Memory.** The fill of a sparse factor is far larger than the matrix (for 3-D finite
//! elements it grows like `n^(4/3)`), so a factorisation that does not fit would abort the
//! process or drive the machine into swap. The Cholesky factorisation is therefore split:
//! faer's symbolic factorisation (fill-reducing AMD ordering, elimination tree, supernodes)
//! gives the exact number of values of `L`, which is checked against the available memory
//! (with the numeric workspace) before any numeric allocation. The LU factorisation with
//! partial pivoting grows its factors during the numeric phase, so its size cannot be
//! known beforehand; it is predicted from the Cholesky symbolic structure of the same
//! (structurally symmetric) pattern: `L` and `U` each at least as large as the Cholesky
//! factor, plus a margin for pivoting and the column ordering. [`predicted_bytes`] gives a
//! cheaper estimate from the size alone, for refusing a direct solve before the matrix is
//! even assembled.

use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::cholesky::llt::factor::LltRegularization;
use faer::linalg::solvers::Solve;
use faer::sparse::linalg::cholesky::{
    factorize_symbolic_cholesky, LltRef, SymbolicCholesky, SymmetricOrdering,
};
use faer::sparse::linalg::solvers::Lu;
use faer::sparse::linalg::LuError;
use faer::sparse::{SparseColMatRef, SymbolicSparseColMatRef};
use faer::{Conj, MatMut, Side};
use ferrofem_base::memory::{fits, try_filled, Bytes, MemoryError};
use ferrofem_base::{available_memory, CsrMatrix, Real};

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

/// Values of `L` and `U` of faer's sparse LU relative to the values of the Cholesky
/// factor of the same pattern. Measured on Lagrange discretisations (2-D and 3-D, orders 1
/// to 3, Poisson and elasticity), the LU held 1.6 to 2.1 times as many bytes as the
/// Cholesky factor's values with one index each: the two factors, and the extra fill of
/// the column ordering (COLAMD on `AᵀA` rather than AMD on `A`) and of partial pivoting.
const LU_FILL_OVER_CHOLESKY: f64 = 2.25;

/// A Cholesky factorisation: the symbolic structure and the values of `L`.
struct Cholesky {
    symbolic: SymbolicCholesky<usize>,
    values: Vec<f64>,
}

enum Factor {
    Cholesky(Box<Cholesky>),
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
        let nnz = a.nnz();
        // the matrix in the index and scalar types faer takes (16 bytes per nonzero)
        let memory = SolverError::Memory;
        let mut row_ptr = ferrofem_base::memory::try_vec(n + 1, "the direct solver's matrix copy")
            .map_err(memory)?;
        row_ptr.extend_from_slice(a.row_ptr());
        let mut col_idx = ferrofem_base::memory::try_vec(nnz, "the direct solver's matrix copy")
            .map_err(memory)?;
        col_idx.extend(a.col_idx().iter().map(|&c| c as usize));
        let mut values = ferrofem_base::memory::try_vec(nnz, "the direct solver's matrix copy")
            .map_err(memory)?;
        values.extend(a.values().iter().map(|v| v.as_f64()));
        let symmetric = || a.asymmetry() <= SYMMETRY_TOL_EPS * T::EPS;

        let factor = {
            // CSR of A read as CSC of Aᵀ. The pattern was validated by `CsrMatrix`.
            let symbolic = SymbolicSparseColMatRef::new_checked(n, n, &row_ptr, None, &col_idx);
            let at = SparseColMatRef::new(symbolic, &values);
            let available = available_memory();
            match kind {
                DirectKind::Cholesky => {
                    let asymmetry = a.asymmetry();
                    if asymmetry > SYMMETRY_TOL_EPS * T::EPS {
                        return Err(SolverError::NotSymmetric { asymmetry });
                    }
                    Factor::Cholesky(Box::new(cholesky(at, available)?))
                }
                DirectKind::Lu => Factor::Lu(Box::new(lu(at, available)?)),
                DirectKind::Auto if symmetric() => match cholesky(at, available) {
                    Ok(llt) => Factor::Cholesky(Box::new(llt)),
                    Err(SolverError::CholeskyNotPositiveDefinite { .. }) => {
                        Factor::Lu(Box::new(lu(at, available)?))
                    }
                    Err(e) => return Err(e),
                },
                DirectKind::Auto => Factor::Lu(Box::new(lu(at, available)?)),
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
                Factor::Cholesky(c) => c.solve_in_place(view)?,
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

/// faer's symbolic Cholesky factorisation (AMD ordering) of the lower triangle of `at`'s
/// pattern.
fn symbolic_cholesky(
    at: SymbolicSparseColMatRef<'_, usize>,
) -> Result<SymbolicCholesky<usize>, SolverError> {
    factorize_symbolic_cholesky(at, Side::Lower, SymmetricOrdering::Amd, Default::default())
        .map_err(|e| SolverError::Factorization(format!("symbolic factorisation: {e:?}")))
}

/// Bytes of the numeric Cholesky factorisation of `symbolic`: the values of `L` and the
/// factorisation's workspace.
fn cholesky_bytes(symbolic: &SymbolicCholesky<usize>) -> u64 {
    let scratch = symbolic
        .factorize_numeric_llt_scratch::<f64>(faer::get_global_parallelism(), Default::default());
    (Bytes::array::<f64>(symbolic.len_val() as u64) + Bytes(scratch.size_bytes() as u64)).0
}

/// The error of a factor too large for the `available` memory.
fn too_large(what: String, needed: u64, available: Option<u64>) -> Result<(), SolverError> {
    fits(&what, needed, available).map_err(|e| {
        SolverError::Memory(e.with_remedy(
            "use an iterative solver, or a smaller problem (fewer cells or a lower order)",
        ))
    })
}

/// Allocation failures of the numeric phase, as the typed memory error's message.
fn out_of_memory(what: &str, bytes: u64) -> SolverError {
    SolverError::Memory(MemoryError::AllocationFailed {
        what: what.to_string(),
        bytes,
        remedy: "use an iterative solver, or a smaller problem".into(),
    })
}

fn cholesky(
    at: SparseColMatRef<'_, usize, f64>,
    available: Option<u64>,
) -> Result<Cholesky, SolverError> {
    let symbolic = symbolic_cholesky(at.symbolic())?;
    let len = symbolic.len_val();
    let needed = cholesky_bytes(&symbolic);
    too_large(
        format!(
            "the sparse Cholesky factor ({len} values, n = {})",
            at.nrows()
        ),
        needed,
        available,
    )?;
    let mut values = try_filled(len, 0.0f64, "the sparse Cholesky factor")
        .map_err(|_| out_of_memory("the sparse Cholesky factor", needed))?;
    let par = faer::get_global_parallelism();
    let req = symbolic.factorize_numeric_llt_scratch::<f64>(par, Default::default());
    let mut buf = MemBuffer::try_new(req)
        .map_err(|_| out_of_memory("the Cholesky workspace", req.size_bytes() as u64))?;
    symbolic
        .factorize_numeric_llt(
            &mut values,
            at,
            Side::Lower,
            LltRegularization::default(),
            par,
            MemStack::new(&mut buf),
            Default::default(),
        )
        .map_err(
            |faer::linalg::cholesky::llt::factor::LltError::NonPositivePivot { index }| {
                SolverError::CholeskyNotPositiveDefinite { pivot: index }
            },
        )?;
    Ok(Cholesky { symbolic, values })
}

impl Cholesky {
    /// `x ← A⁻¹ x`.
    fn solve_in_place(&self, x: MatMut<'_, f64>) -> Result<(), SolverError> {
        let par = faer::get_global_parallelism();
        let req = self.symbolic.solve_in_place_scratch::<f64>(x.ncols(), par);
        let mut buf = MemBuffer::try_new(req).map_err(|_| {
            out_of_memory("the Cholesky solve's workspace", req.size_bytes() as u64)
        })?;
        LltRef::new(&self.symbolic, &self.values).solve_in_place_with_conj(
            Conj::No,
            x,
            par,
            MemStack::new(&mut buf),
        );
        Ok(())
    }
}

/// The predicted bytes of the LU factors of a structurally symmetric pattern whose
/// Cholesky factor has `cholesky_values` values (see [`LU_FILL_OVER_CHOLESKY`]), with
/// their row indices.
fn lu_bytes(cholesky_values: usize) -> u64 {
    let values = cholesky_values as f64 * LU_FILL_OVER_CHOLESKY;
    // values (f64) and one row index (usize) per value
    (values * 16.0).min(u64::MAX as f64) as u64
}

fn lu(
    at: SparseColMatRef<'_, usize, f64>,
    available: Option<u64>,
) -> Result<Lu<usize, f64>, SolverError> {
    // The fill is known only as the numeric phase runs: predicted from the Cholesky
    // structure of the pattern (the matrices here are structurally symmetric). That costs
    // a symbolic factorisation, so it is skipped where even dense triangular factors (with
    // an index per value) would fit.
    let n = at.nrows() as f64;
    let dense = n * (n + 1.0) * 16.0;
    let predicted = match available {
        Some(a) if dense > a as f64 => {
            let predicted = symbolic_cholesky(at.symbolic())?.len_val();
            too_large(
                format!(
                    "the sparse LU factors (about {:.2e} values predicted, n = {})",
                    predicted as f64 * LU_FILL_OVER_CHOLESKY,
                    at.nrows()
                ),
                lu_bytes(predicted),
                available,
            )?;
            lu_bytes(predicted)
        }
        _ => dense.min(u64::MAX as f64) as u64,
    };
    at.sp_lu().map_err(|e| match e {
        LuError::SymbolicSingular { index } => SolverError::Singular(format!(
            "structurally singular: no pivot available at elimination step {index}"
        )),
        LuError::Generic(faer::sparse::FaerError::OutOfMemory) => {
            out_of_memory("the sparse LU factors", predicted)
        }
        LuError::Generic(g) => SolverError::Factorization(format!("{g:?}")),
    })
}

/// Nonzeros of the Cholesky factor `L` of a finite-element matrix with `n` unknowns in
/// `dim` dimensions, predicted from its size alone: `c n^(4/3)` in 3-D and `c n log2 n`
/// in 2-D (the growth of nested-dissection fill), at least the lower triangle of the
/// matrix (`nnz`) with the diagonal. The constants are a lower envelope of the fill of
/// faer's AMD ordering on Lagrange discretisations (orders 1 to 3, Poisson and
/// elasticity, hexahedra, tetrahedra, quadrilaterals and triangles, from 10³ to 10⁵
/// unknowns), where the measured `L / n^(4/3)` ran from 10 to 44 and `L / (n log2 n)` from
/// 1.6 to 5.7, rising with `n`: a solve refused by this prediction would not fit, and one
/// near the limit goes on to the exact symbolic count of the factorisation.
pub fn predicted_factor_nonzeros(n: usize, nnz: usize, dim: usize) -> f64 {
    let nf = n as f64;
    let lower = (nnz as f64 + nf) / 2.0;
    let fill = if dim >= 3 {
        FILL_3D * nf.powf(4.0 / 3.0)
    } else {
        FILL_2D * nf * nf.max(2.0).log2()
    };
    fill.max(lower)
}

/// The constant of the 3-D fill model of [`predicted_factor_nonzeros`].
const FILL_3D: f64 = 8.0;
/// The constant of the 2-D fill model of [`predicted_factor_nonzeros`].
const FILL_2D: f64 = 1.5;

/// Bytes a direct solve of a matrix with `n` rows and `nnz` nonzeros from a `dim`-D
/// finite-element discretisation is predicted to need, the matrix itself not counted:
/// the solver's copy of the matrix, the factor's values (Cholesky; LU with
/// [`LU_FILL_OVER_CHOLESKY`] times as many, with row indices), and vectors. For refusing
/// a direct solve before the matrix is assembled; the factorisation checks its exact
/// symbolic size again.
pub fn predicted_bytes(n: usize, nnz: usize, dim: usize, symmetric: bool) -> u64 {
    let factor = predicted_factor_nonzeros(n, nnz, dim);
    let factor_bytes = if symmetric {
        factor * 8.0
    } else {
        lu_bytes(factor.min(usize::MAX as f64) as usize) as f64
    };
    let copy = 16.0 * nnz as f64 + 8.0 * n as f64;
    let vectors = 4.0 * 8.0 * n as f64;
    (factor_bytes + copy + vectors).min(u64::MAX as f64) as u64
}

/// Refuses a direct solve that [`predicted_bytes`] (plus `other` bytes still to be
/// allocated before it, e.g. the assembled matrix) says does not fit in the available
/// memory, with the estimate, what is available and what to do instead.
pub fn check_predicted_memory(
    n: usize,
    nnz: usize,
    dim: usize,
    symmetric: bool,
    other: u64,
) -> Result<(), SolverError> {
    predicted_fits(n, nnz, dim, symmetric, other, available_memory())
}

/// [`check_predicted_memory`] against a given amount of available memory.
fn predicted_fits(
    n: usize,
    nnz: usize,
    dim: usize,
    symmetric: bool,
    other: u64,
    available: Option<u64>,
) -> Result<(), SolverError> {
    let needed = predicted_bytes(n, nnz, dim, symmetric).saturating_add(other);
    let values = predicted_factor_nonzeros(n, nnz, dim)
        * if symmetric {
            1.0
        } else {
            LU_FILL_OVER_CHOLESKY
        };
    too_large(
        format!(
            "a direct solve with {n} unknowns (sparse {}, at least {values:.2e} values in the factor predicted)",
            if symmetric { "Cholesky" } else { "LU" },
        ),
        needed,
        available,
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The number of values faer's sparse Cholesky factor of `a` stores (the lower triangle
    /// of `a`'s pattern read, AMD ordering; supernodes stored as dense blocks), from the
    /// symbolic factorisation alone: the exact size of the factor, without computing it.
    fn cholesky_factor_values<T: Real>(a: &CsrMatrix<T>) -> Result<usize, SolverError> {
        let n = a.nrows();
        if n != a.ncols() {
            return Err(SolverError::NotSquare {
                nrows: n,
                ncols: a.ncols(),
            });
        }
        let col_idx: Vec<usize> = a.col_idx().iter().map(|&c| c as usize).collect();
        let pattern = SymbolicSparseColMatRef::new_checked(n, n, a.row_ptr(), None, &col_idx);
        Ok(symbolic_cholesky(pattern)?.len_val())
    }

    /// The `k^d` grid matrix with every lattice neighbour coupled (the pattern of Q1
    /// elements: 27 points in 3-D, 9 in 2-D), diagonally dominant.
    fn grid(k: usize, d: usize) -> CsrMatrix<f64> {
        let n = k.pow(d as u32);
        let stride = |a: usize| k.pow(a as u32);
        let mut row_ptr = vec![0];
        let mut col_idx = Vec::new();
        let mut values = Vec::new();
        for i in 0..n {
            let ci: Vec<usize> = (0..d).map(|a| (i / stride(a)) % k).collect();
            let mut row = Vec::new();
            // every offset in {-1, 0, 1}^d that stays inside the grid
            for o in 0..3usize.pow(d as u32) {
                let mut j = 0isize;
                let inside = (0..d).all(|a| {
                    let c = ci[a] as isize + (o / 3usize.pow(a as u32) % 3) as isize - 1;
                    j += c * stride(a) as isize;
                    (0..k as isize).contains(&c)
                });
                if inside {
                    row.push(j as u32);
                }
            }
            row.sort_unstable();
            for j in row {
                col_idx.push(j);
                values.push(if j as usize == i {
                    3f64.powi(d as i32)
                } else {
                    -1.0
                });
            }
            row_ptr.push(col_idx.len());
        }
        CsrMatrix::new(n, n, row_ptr, col_idx, values).unwrap()
    }

    #[test]
    fn the_prediction_is_below_the_symbolic_count_and_not_far_from_it() {
        for (k, d) in [(10, 3), (14, 3), (60, 2), (90, 2)] {
            let a = grid(k, d);
            let exact = cholesky_factor_values(&a).unwrap() as f64;
            let predicted = predicted_factor_nonzeros(a.nrows(), a.nnz(), d);
            assert!(
                predicted <= exact && predicted >= exact / 8.0,
                "k = {k}, d = {d}: predicted {predicted}, exact {exact}"
            );
        }
    }

    #[test]
    fn the_factor_has_the_symbolic_size_and_solves() {
        let a = grid(6, 3);
        let f = DirectFactorization::new(&a, DirectKind::Cholesky).unwrap();
        let Factor::Cholesky(c) = &f.factor else {
            panic!("Cholesky expected")
        };
        assert_eq!(c.values.len(), cholesky_factor_values(&a).unwrap());
        let x: Vec<f64> = (0..a.nrows()).map(|i| (i % 7) as f64 - 3.0).collect();
        let mut b = vec![0.0; x.len()];
        a.matvec(&x, &mut b);
        for kind in [DirectKind::Cholesky, DirectKind::Lu] {
            let y = solve_direct(&a, &b, kind).unwrap();
            let err = y
                .iter()
                .zip(&x)
                .map(|(p, q)| (p - q).abs())
                .fold(0.0, f64::max);
            assert!(err < 1e-10, "{kind:?}: {err}");
        }
    }

    #[test]
    fn a_factor_larger_than_the_memory_is_refused_before_it_is_computed() {
        let a = grid(8, 3);
        let n = a.nrows();
        let col_idx: Vec<usize> = a.col_idx().iter().map(|&c| c as usize).collect();
        let pattern = SymbolicSparseColMatRef::new_checked(n, n, a.row_ptr(), None, &col_idx);
        let at = SparseColMatRef::new(pattern, a.values());
        let exact = cholesky_factor_values(&a).unwrap() as u64 * 8;
        let msg = match cholesky(at, Some(exact / 2)) {
            Err(SolverError::Memory(e)) => e.to_string(),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("a factor of {exact} bytes fitted into {}", exact / 2),
        };
        assert!(
            msg.starts_with("not enough memory for the sparse Cholesky factor ("),
            "{msg}"
        );
        assert!(
            msg.contains(&format!(
                "it needs about {}",
                ferrofem_base::memory::human_bytes(cholesky_bytes(
                    &symbolic_cholesky(pattern).unwrap()
                ))
            )),
            "{msg}"
        );
        assert!(msg.contains("use an iterative solver"), "{msg}");
        assert!(cholesky(at, Some(u64::MAX)).is_ok());
        // the LU: predicted 2.25 times the Cholesky values, with an index each
        let msg = match lu(at, Some(exact)) {
            Err(SolverError::Memory(e)) => e.to_string(),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("the LU fitted into the Cholesky factor's memory"),
        };
        assert!(
            msg.starts_with("not enough memory for the sparse LU factors"),
            "{msg}"
        );
        assert_eq!(lu_bytes(1000), 36_000);
    }

    #[test]
    fn a_direct_solve_predicted_too_large_is_refused_with_both_numbers() {
        // 14 million unknowns of a 3-D problem (a P2 hexahedral box of 120^3 cells)
        let (n, nnz) = (14_000_000, 14_000_000 * 64);
        let predicted = predicted_bytes(n, nnz, 3, true);
        // at least 8 n^(4/3) values of 8 bytes: hundreds of GiB
        assert!(predicted as f64 >= 8.0 * 8.0 * (n as f64).powf(4.0 / 3.0));
        let available = 24u64 << 30;
        let e = predicted_fits(n, nnz, 3, true, 0, Some(available)).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(
                "not enough memory for a direct solve with 14000000 unknowns (sparse Cholesky"
            ),
            "{msg}"
        );
        assert!(
            msg.contains(&format!(
                "it needs about {}",
                ferrofem_base::memory::human_bytes(predicted)
            )),
            "{msg}"
        );
        assert!(msg.contains("but 24.0 GiB is available"), "{msg}");
        // a small problem passes, and so does anything when the memory is unknown
        assert!(predicted_fits(10_000, 270_000, 3, false, 0, Some(available)).is_ok());
        assert!(predicted_fits(n, nnz, 3, true, 0, None).is_ok());
        // the LU needs more than the Cholesky factor
        assert!(predicted_bytes(n, nnz, 3, false) > predicted);
        // 2-D grows like n log n
        assert!(
            predicted_bytes(1_000_000, 9_000_000, 2, true)
                < predicted_bytes(1_000_000, 9_000_000, 3, true)
        );
    }
}
