//! The Jacobian of a cell's coordinate map at one point, its determinant and inverse, by
//! explicit 2×2 / 3×3 formulas (adjugate divided by the determinant).

/// Relative threshold for a degenerate Jacobian: a cell is reported degenerate where
/// `det J <= DEGENERACY_TOLERANCE · Π_k |∂x/∂ξ_k|`. The ratio `det J / Π_k |∂x/∂ξ_k|` is
/// the (generalised) sine of the angle between the mapped reference axes, so the test does
/// not depend on the cell's size or aspect ratio, only on how flat it is; a cell flatter
/// than this has an inverse Jacobian dominated by rounding.
pub const DEGENERACY_TOLERANCE: f64 = 1e-12;

/// The Jacobian `J[i][k] = ∂x_i/∂ξ_k` of a coordinate map at one point, with its
/// determinant. Only the leading `d × d` block is meaningful; the rest is zero.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jacobian {
    /// Dimension (2 or 3).
    pub d: usize,
    /// `j[i][k] = ∂x_i/∂ξ_k`.
    pub j: [[f64; 3]; 3],
    /// `det J` (positive for a positively oriented cell).
    pub det: f64,
}

impl Jacobian {
    /// Wraps the leading `d × d` block of `j` (`d` is 2 or 3), computing the determinant.
    pub fn from_matrix(d: usize, j: [[f64; 3]; 3]) -> Jacobian {
        let (det, _) = adjugate(d, &j);
        Jacobian { d, j, det }
    }

    /// The inverse, `inv[k][i] = ∂ξ_k/∂x_i` (leading `d × d` block; zero elsewhere).
    /// Entries are infinite or NaN when `det == 0`; check
    /// [`is_inverted_or_degenerate`](Self::is_inverted_or_degenerate) first where that can
    /// happen.
    pub fn inverse(&self) -> [[f64; 3]; 3] {
        let (det, mut adj) = adjugate(self.d, &self.j);
        let r = 1.0 / det;
        for row in adj.iter_mut() {
            for v in row.iter_mut() {
                *v *= r;
            }
        }
        adj
    }

    /// True when the map is orientation-reversing or (relative to
    /// [`DEGENERACY_TOLERANCE`]) singular at this point.
    pub fn is_inverted_or_degenerate(&self) -> bool {
        is_inverted_or_degenerate(self.d, &self.j, self.det)
    }
}

/// Determinant and adjugate (`adj = det · J⁻¹`) of the leading `d × d` block of `j`
/// (`d` is 2 or 3; the rest of the returned adjugate is zero), by the explicit cofactor
/// formulas. Returning the adjugate rather than the inverse lets callers divide by the
/// determinant once, or fold it into other factors (the metric `w det J · J⁻¹J⁻ᵀ` is
/// `(w / det J) · adj adjᵀ`), and check the determinant before dividing. Always inlined:
/// it sits in the per-point loops of the geometry setup of every operator.
#[inline(always)]
pub fn adjugate(d: usize, j: &[[f64; 3]; 3]) -> (f64, [[f64; 3]; 3]) {
    let mut a = [[0.0; 3]; 3];
    if d == 2 {
        a[0][0] = j[1][1];
        a[0][1] = -j[0][1];
        a[1][0] = -j[1][0];
        a[1][1] = j[0][0];
        (j[0][0] * j[1][1] - j[0][1] * j[1][0], a)
    } else {
        a[0][0] = j[1][1] * j[2][2] - j[1][2] * j[2][1];
        a[0][1] = j[0][2] * j[2][1] - j[0][1] * j[2][2];
        a[0][2] = j[0][1] * j[1][2] - j[0][2] * j[1][1];
        a[1][0] = j[1][2] * j[2][0] - j[1][0] * j[2][2];
        a[1][1] = j[0][0] * j[2][2] - j[0][2] * j[2][0];
        a[1][2] = j[0][2] * j[1][0] - j[0][0] * j[1][2];
        a[2][0] = j[1][0] * j[2][1] - j[1][1] * j[2][0];
        a[2][1] = j[0][1] * j[2][0] - j[0][0] * j[2][1];
        a[2][2] = j[0][0] * j[1][1] - j[0][1] * j[1][0];
        let det = j[0][0] * a[0][0] + j[0][1] * a[1][0] + j[0][2] * a[2][0];
        (det, a)
    }
}

/// The test behind [`Jacobian::is_inverted_or_degenerate`]; also true for a NaN
/// determinant.
#[inline(always)]
pub(crate) fn is_inverted_or_degenerate(d: usize, j: &[[f64; 3]; 3], det: f64) -> bool {
    let mut scale = 1.0;
    for k in 0..d {
        let mut s = 0.0;
        for i in 0..d {
            s += j[i][k] * j[i][k];
        }
        scale *= s;
    }
    // det <= tol * sqrt(scale), written without the square root (det > 0 branch only)
    !(det > 0.0 && det * det > DEGENERACY_TOLERANCE * DEGENERACY_TOLERANCE * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn degeneracy_test_ignores_size_and_aspect_but_catches_flat_cells() {
        // a valid right triangle stretched to aspect ratio 1e8 and shrunk to 1e-6
        let thin = Jacobian::from_matrix(2, [[1e-6, 0.0, 0.0], [0.0, 1e-14, 0.0], [0.0; 3]]);
        assert!(thin.det > 0.0);
        assert!(!thin.is_inverted_or_degenerate());
        // mirrored: inverted
        let mirrored = Jacobian::from_matrix(2, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0; 3]]);
        assert_eq!(mirrored.det, -1.0);
        assert!(mirrored.is_inverted_or_degenerate());
        // collinear edges up to rounding: positive but negligible determinant
        let flat = Jacobian::from_matrix(2, [[1.0, 2.0, 0.0], [0.0, 1e-15, 0.0], [0.0; 3]]);
        assert!(flat.det > 0.0);
        assert!(flat.is_inverted_or_degenerate());
        // 3-D: two mapped axes nearly parallel
        let flat3 = Jacobian::from_matrix(3, [[1.0, 1.0, 0.0], [0.0, 1e-14, 0.0], [0.0, 0.0, 1.0]]);
        assert!(flat3.det > 0.0 && flat3.is_inverted_or_degenerate());
        let nan = Jacobian::from_matrix(2, [[f64::NAN, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0; 3]]);
        assert!(nan.is_inverted_or_degenerate());
    }

    #[test]
    fn determinant_is_multilinear_and_alternating_in_the_columns() {
        let j = [[2.0, 0.5, -1.0], [0.3, 1.5, 0.2], [-0.4, 0.1, 3.0]];
        let det = Jacobian::from_matrix(3, j).det;
        // swapping two columns flips the sign
        let mut s = j;
        for row in s.iter_mut() {
            row.swap(0, 2);
        }
        assert!((Jacobian::from_matrix(3, s).det + det).abs() < 1e-14);
        // scaling a column scales the determinant
        let mut t = j;
        for row in t.iter_mut() {
            row[1] *= 3.0;
        }
        assert!((Jacobian::from_matrix(3, t).det - 3.0 * det).abs() < 1e-13);
        // adding a multiple of one column to another leaves it unchanged
        let mut u = j;
        for row in u.iter_mut() {
            row[2] += 0.7 * row[0];
        }
        assert!((Jacobian::from_matrix(3, u).det - det).abs() < 1e-13);
        // the identity has determinant one and is its own inverse
        let id = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
        for d in [2, 3] {
            let jid = Jacobian::from_matrix(d, id);
            assert_eq!(jid.det, 1.0);
            let inv = jid.inverse();
            for k in 0..d {
                for i in 0..d {
                    assert_eq!(inv[k][i], id[k][i]);
                }
            }
        }
    }
}
