//! Compressed sparse row matrices.

use crate::{LinearOperator, Real};
use rayon::prelude::*;

/// Why a set of CSR arrays is not a valid matrix.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CsrError {
    /// `row_ptr` has the wrong length or is not non-decreasing from 0 to nnz.
    #[error("row pointer array is invalid: {0}")]
    RowPtr(String),
    /// A column index is out of range or columns of a row are not strictly increasing.
    #[error("row {row}: {msg}")]
    Columns {
        /// The row.
        row: usize,
        /// What is wrong.
        msg: String,
    },
}

/// A sparse matrix in CSR form with sorted, unique column indices per row.
#[derive(Clone, Debug, PartialEq)]
pub struct CsrMatrix<T> {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    values: Vec<T>,
}

impl<T: Real> CsrMatrix<T> {
    /// Builds a matrix, checking the structure (sorted unique columns in range).
    pub fn new(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<u32>,
        values: Vec<T>,
    ) -> Result<Self, CsrError> {
        if row_ptr.len() != nrows + 1 || row_ptr[0] != 0 {
            return Err(CsrError::RowPtr(format!(
                "expected {} entries starting at 0",
                nrows + 1
            )));
        }
        if *row_ptr.last().unwrap_or(&0) != col_idx.len() || col_idx.len() != values.len() {
            return Err(CsrError::RowPtr(
                "last entry must equal the number of nonzeros".into(),
            ));
        }
        for r in 0..nrows {
            let (a, b) = (row_ptr[r], row_ptr[r + 1]);
            if b < a {
                return Err(CsrError::RowPtr(format!("decreases at row {r}")));
            }
            let cols = &col_idx[a..b];
            if cols.iter().any(|&c| c as usize >= ncols) {
                return Err(CsrError::Columns {
                    row: r,
                    msg: format!("column index out of range (ncols = {ncols})"),
                });
            }
            if cols.windows(2).any(|w| w[0] >= w[1]) {
                return Err(CsrError::Columns {
                    row: r,
                    msg: "columns not strictly increasing".into(),
                });
            }
        }
        Ok(CsrMatrix {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values,
        })
    }

    /// A matrix with the given sparsity pattern and all values zero (pattern trusted: it
    /// comes from ferrofem's own sparsity builder, which sorts and deduplicates).
    pub fn zeros_with_pattern(
        nrows: usize,
        ncols: usize,
        row_ptr: Vec<usize>,
        col_idx: Vec<u32>,
    ) -> Self {
        debug_assert_eq!(row_ptr.len(), nrows + 1);
        let nnz = col_idx.len();
        CsrMatrix {
            nrows,
            ncols,
            row_ptr,
            col_idx,
            values: vec![T::zero(); nnz],
        }
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }
    /// Columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointers (`nrows + 1`).
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    /// Column indices.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Values.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// Values, mutably (the pattern stays fixed).
    pub fn values_mut(&mut self) -> &mut [T] {
        &mut self.values
    }
    /// Column indices and values of row `r`.
    pub fn row(&self, r: usize) -> (&[u32], &[T]) {
        let (a, b) = (self.row_ptr[r], self.row_ptr[r + 1]);
        (&self.col_idx[a..b], &self.values[a..b])
    }
    /// Position of entry `(r, c)` in the value array, if stored.
    pub fn position(&self, r: usize, c: u32) -> Option<usize> {
        let (a, b) = (self.row_ptr[r], self.row_ptr[r + 1]);
        self.col_idx[a..b].binary_search(&c).ok().map(|k| a + k)
    }
    /// Value of entry `(r, c)` (zero when not stored).
    pub fn get(&self, r: usize, c: usize) -> T {
        self.position(r, c as u32)
            .map_or(T::zero(), |k| self.values[k])
    }

    /// `y = A x`, parallel over rows.
    pub fn matvec(&self, x: &[T], y: &mut [T]) {
        assert_eq!(x.len(), self.ncols);
        assert_eq!(y.len(), self.nrows);
        y.par_chunks_mut(1024).enumerate().for_each(|(chunk, ys)| {
            let r0 = chunk * 1024;
            for (i, yi) in ys.iter_mut().enumerate() {
                let (cols, vals) = self.row(r0 + i);
                let mut acc = T::zero();
                for (&c, &v) in cols.iter().zip(vals) {
                    acc += v * x[c as usize];
                }
                *yi = acc;
            }
        });
    }

    /// The main diagonal (zero where not stored).
    pub fn diag(&self) -> Vec<T> {
        (0..self.nrows.min(self.ncols))
            .map(|r| self.get(r, r))
            .collect()
    }

    /// Largest `|A_ij - A_ji|` relative to the largest `|A_ij|` (0 for a symmetric matrix).
    pub fn asymmetry(&self) -> f64 {
        let mut worst: f64 = 0.0;
        let mut scale: f64 = 0.0;
        for r in 0..self.nrows {
            let (cols, vals) = self.row(r);
            for (&c, &v) in cols.iter().zip(vals) {
                scale = scale.max(v.as_f64().abs());
                let t = if (c as usize) < self.nrows {
                    self.get(c as usize, r).as_f64()
                } else {
                    0.0
                };
                worst = worst.max((v.as_f64() - t).abs());
            }
        }
        if scale == 0.0 {
            0.0
        } else {
            worst / scale
        }
    }

    /// The same matrix with values converted to another precision.
    pub fn convert<U: Real>(&self) -> CsrMatrix<U> {
        CsrMatrix {
            nrows: self.nrows,
            ncols: self.ncols,
            row_ptr: self.row_ptr.clone(),
            col_idx: self.col_idx.clone(),
            values: self.values.iter().map(|v| U::of(v.as_f64())).collect(),
        }
    }
}

impl<T: Real> LinearOperator<T> for CsrMatrix<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }
    fn ncols(&self) -> usize {
        self.ncols
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        self.matvec(x, y)
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        Some(self.diag())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structure_is_checked() {
        assert!(CsrMatrix::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, 2.0]).is_ok());
        assert!(CsrMatrix::<f64>::new(2, 2, vec![0, 2, 2], vec![1, 0], vec![1.0, 2.0]).is_err());
        assert!(CsrMatrix::<f64>::new(2, 2, vec![0, 1, 2], vec![0, 2], vec![1.0, 2.0]).is_err());
        assert!(CsrMatrix::<f64>::new(2, 2, vec![0, 1], vec![0], vec![1.0]).is_err());
    }

    #[test]
    fn matvec_diagonal_and_symmetry() {
        // [[2, -1, 0], [-1, 2, -1], [0, -1, 2]]
        let a = CsrMatrix::new(
            3,
            3,
            vec![0, 2, 5, 7],
            vec![0, 1, 0, 1, 2, 1, 2],
            vec![2.0, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0],
        )
        .unwrap();
        let mut y = vec![0.0; 3];
        a.apply(&[1.0, 2.0, 3.0], &mut y);
        assert_eq!(y, vec![0.0, 0.0, 4.0]);
        assert_eq!(a.diagonal().unwrap(), vec![2.0, 2.0, 2.0]);
        assert_eq!(a.asymmetry(), 0.0);
        let mut b = a.clone();
        b.values_mut()[1] = -1.5;
        assert!((b.asymmetry() - 0.25).abs() < 1e-15);
        let f: CsrMatrix<f32> = a.convert();
        assert_eq!(f.get(1, 2), -1.0f32);
    }
}
