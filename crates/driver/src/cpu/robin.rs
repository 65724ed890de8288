//! A matrix-free operator plus a problem's Robin term `R = ∫ h φ_i φ_j` (a sparse matrix on
//! the Robin facets' dofs): `y = A x + R x`, with the diagonal of both.

use ferrofem_base::{CsrMatrix, LinearOperator, Real};

/// `A + R`, or `A` alone without a Robin term.
pub(crate) struct WithRobin<T: Real, A> {
    pub(crate) op: A,
    pub(crate) robin: Option<CsrMatrix<T>>,
}

impl<T: Real, A: LinearOperator<T>> LinearOperator<T> for WithRobin<T, A> {
    fn nrows(&self) -> usize {
        self.op.nrows()
    }
    fn ncols(&self) -> usize {
        self.op.ncols()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        self.op.apply(x, y);
        if let Some(r) = &self.robin {
            for (row, yr) in y.iter_mut().enumerate() {
                let (cols, vals) = r.row(row);
                for (&c, &v) in cols.iter().zip(vals) {
                    *yr += v * x[c as usize];
                }
            }
        }
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        let mut d = self.op.diagonal()?;
        if let Some(r) = &self.robin {
            for (di, ri) in d.iter_mut().zip(r.diag()) {
                *di += ri;
            }
        }
        Some(d)
    }
}
