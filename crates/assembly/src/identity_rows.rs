//! Dirichlet conditions as identity rows: the system on every dof, built from the reduced
//! one. A free dof's row is its reduced row (the constrained columns already moved to the
//! right-hand side by the elimination), with the columns renumbered to full dofs; a
//! constrained dof's row is the identity and its right-hand side its prescribed value. The
//! matrix stays symmetric when the reduced one is, and the solution of the full system is
//! the reduced solution with the prescribed values in place.

use crate::dirichlet::{DofMap, CONSTRAINED};
use crate::error::AssemblyError;
use ferrofem_base::{CsrMatrix, Real};

/// The full system with identity rows of the reduced system `reduced`, `reduced_rhs` on the
/// free dofs of `map`, the constrained dofs taking `constrained_values` (one per
/// `map.constrained()` entry, in that order).
pub fn with_identity_rows<T: Real>(
    reduced: &CsrMatrix<T>,
    reduced_rhs: &[T],
    map: &DofMap,
    constrained_values: &[T],
) -> Result<(CsrMatrix<T>, Vec<T>), AssemblyError> {
    let (n, nf) = (map.num_dofs(), map.num_free());
    for (what, expected, got) in [
        ("reduced matrix rows", nf, reduced.nrows()),
        ("reduced matrix columns", nf, reduced.ncols()),
        ("reduced right-hand side", nf, reduced_rhs.len()),
        (
            "constrained values",
            map.constrained().len(),
            constrained_values.len(),
        ),
    ] {
        if expected != got {
            return Err(AssemblyError::LengthMismatch {
                what,
                expected,
                got,
            });
        }
    }
    let free = map.free();
    let mut row_ptr = Vec::with_capacity(n + 1);
    let mut col_idx = Vec::with_capacity(reduced.nnz() + map.constrained().len());
    let mut values = Vec::with_capacity(col_idx.capacity());
    let mut rhs = Vec::with_capacity(n);
    let mut next_constrained = 0;
    row_ptr.push(0);
    for (d, &r) in map.reduced_of().iter().enumerate() {
        if r == CONSTRAINED {
            col_idx.push(d as u32);
            values.push(T::one());
            rhs.push(constrained_values[next_constrained]);
            next_constrained += 1;
        } else {
            let (cols, vals) = reduced.row(r as usize);
            // free dofs are numbered in increasing order, so the columns stay sorted
            col_idx.extend(cols.iter().map(|&c| free[c as usize]));
            values.extend_from_slice(vals);
            rhs.push(reduced_rhs[r as usize]);
        }
        row_ptr.push(col_idx.len());
    }
    Ok((CsrMatrix::new(n, n, row_ptr, col_idx, values)?, rhs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 1-D Laplacian on five nodes with both ends prescribed: the identity-row system
    /// keeps the reduced rows on the interior, identity rows at the ends, and solves to the
    /// reduced solution with the prescribed values in place.
    #[test]
    fn identity_rows_embed_the_reduced_system() {
        let map = DofMap::new(5, &[0, 4]).unwrap();
        // reduced: tridiag(-1, 2, -1) on dofs 1..=3, rhs with the lifted ends g0 = 1, g4 = 3
        let reduced = CsrMatrix::new(
            3,
            3,
            vec![0, 2, 5, 7],
            vec![0, 1, 0, 1, 2, 1, 2],
            vec![2.0, -1.0, -1.0, 2.0, -1.0, -1.0, 2.0],
        )
        .unwrap();
        let (a, b) = with_identity_rows(&reduced, &[1.0, 0.0, 3.0], &map, &[1.0, 3.0]).unwrap();
        assert_eq!(a.nrows(), 5);
        assert_eq!(a.row(0), (&[0u32][..], &[1.0][..]));
        assert_eq!(a.row(4), (&[4u32][..], &[1.0][..]));
        assert_eq!(a.row(2), (&[1u32, 2, 3][..], &[-1.0, 2.0, -1.0][..]));
        assert_eq!(b, vec![1.0, 1.0, 0.0, 3.0, 3.0]);
        // the exact solution, linear from 1 to 3, satisfies every row
        let u = [1.0f64, 1.5, 2.0, 2.5, 3.0];
        let mut au = [0.0f64; 5];
        a.matvec(&u, &mut au);
        for (x, y) in au.iter().zip(&b) {
            assert!((x - y).abs() < 1e-14);
        }
        assert_eq!(a.asymmetry(), 0.0);
    }

    #[test]
    fn mismatched_lengths_are_refused() {
        let map = DofMap::new(3, &[0]).unwrap();
        let reduced = CsrMatrix::new(2, 2, vec![0, 1, 2], vec![0, 1], vec![1.0, 1.0]).unwrap();
        assert!(matches!(
            with_identity_rows(&reduced, &[0.0, 0.0], &map, &[]),
            Err(AssemblyError::LengthMismatch { .. })
        ));
    }
}
