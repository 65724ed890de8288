//! The linear-operator interface that assembled matrices and matrix-free operators share,
//! so that the same solvers run on either.

use crate::Real;

/// A linear map `y = A x` on vectors of scalars `T`.
pub trait LinearOperator<T: Real>: Sync {
    /// Number of rows (length of `y`).
    fn nrows(&self) -> usize;
    /// Number of columns (length of `x`).
    fn ncols(&self) -> usize;
    /// Computes `y = A x`, overwriting `y`.
    fn apply(&self, x: &[T], y: &mut [T]);
    /// The diagonal of `A`, when the operator can provide it (for Jacobi preconditioning).
    fn diagonal(&self) -> Option<Vec<T>> {
        None
    }
}

impl<T: Real, L: LinearOperator<T> + ?Sized> LinearOperator<T> for &L {
    fn nrows(&self) -> usize {
        (**self).nrows()
    }
    fn ncols(&self) -> usize {
        (**self).ncols()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        (**self).apply(x, y)
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        (**self).diagonal()
    }
}
