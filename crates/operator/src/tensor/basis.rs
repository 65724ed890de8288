//! The 1-D matrices of a tensor-product operator: interpolation from the GLL nodes to the
//! quadrature points and differentiation, from which every 2-D and 3-D contraction is
//! built.

use super::TensorError;
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, Lagrange1D};

/// Largest number of quadrature points per direction an operator accepts.
pub const MAX_QUADRATURE_POINTS: usize = 32;

/// 1-D matrices (row-major, `f64`) of a sum-factorised operator of order `p` with `q`
/// points per direction, on the GLL nodal basis of
/// [`LagrangeElement`](ferrofem_fe::LagrangeElement).
///
/// With Gauss quadrature (`collocated == false`) the operator works as in BP1/BP3 of
/// Świrydowicz et al. (2019): interpolate the nodal values to the Gauss points with
/// [`interp`](Self::interp) (`B`, `q × n`), differentiate there with the *collocated*
/// derivative [`grad`](Self::grad) (`D̂`, `q × q`, the derivative matrix of the Lagrange
/// basis on the Gauss points), then apply the transposes. Collocated (GLL, BP3.5) operators
/// have `q = n`, `B = I` and `D̂ = D`, the derivative matrix of the GLL basis at its own
/// nodes, so no interpolation is done.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorBasis {
    /// Reference dimension (2 or 3).
    pub dim: usize,
    /// Polynomial order `p`.
    pub order: usize,
    /// Nodes per direction, `n = p + 1`.
    pub n: usize,
    /// Quadrature points per direction.
    pub q: usize,
    /// True for collocation at the GLL nodes (no interpolation step).
    pub collocated: bool,
    /// 1-D quadrature points on `[-1, 1]`.
    pub points: Vec<f64>,
    /// 1-D quadrature weights.
    pub weights: Vec<f64>,
    /// `B[i][j] = l_j(x_i)`, `q × n` (identity when collocated).
    pub interp: Vec<f64>,
    /// Derivative on the quadrature-point basis, `q × q`: `D̂[i][k] = ℓ_k'(x_i)` with `ℓ_k`
    /// the Lagrange polynomials through the quadrature points.
    pub grad: Vec<f64>,
    /// Derivative of the nodal basis at the quadrature points, `q × n`:
    /// `B'[i][j] = l_j'(x_i)` (equals `D̂ B` for `q > p`); used by the diagonal.
    pub grad_nodal: Vec<f64>,
}

impl TensorBasis {
    /// The basis of order `order` in dimension `dim` with `q` Gauss points per direction, or
    /// collocated at the `order + 1` GLL nodes (then `q` must be `order + 1`).
    pub fn new(
        dim: usize,
        order: usize,
        q: usize,
        collocated: bool,
    ) -> Result<TensorBasis, TensorError> {
        let n = order + 1;
        if !(1..=MAX_QUADRATURE_POINTS).contains(&q) {
            return Err(TensorError::QuadraturePoints {
                q,
                min: 1,
                max: MAX_QUADRATURE_POINTS,
            });
        }
        if collocated && q != n {
            return Err(TensorError::CollocatedPoints { nodes: n, q });
        }
        let gll = gauss_lobatto_legendre(n)?;
        let nodal = Lagrange1D::new(&gll.points);
        let (points, weights) = if collocated {
            (gll.points.clone(), gll.weights.clone())
        } else {
            let g = gauss_legendre(q)?;
            (g.points, g.weights)
        };
        let (interp, grad_nodal) = nodal.matrices(&points);
        let grad = if collocated {
            grad_nodal.clone()
        } else {
            Lagrange1D::new(&points).derivative_matrix(&points)
        };
        let interp = if collocated {
            let mut id = vec![0.0; n * n];
            for i in 0..n {
                id[i * n + i] = 1.0;
            }
            id
        } else {
            interp
        };
        Ok(TensorBasis {
            dim,
            order,
            n,
            q,
            collocated,
            points,
            weights,
            interp,
            grad,
            grad_nodal,
        })
    }

    /// Nodes per element, `n^dim`.
    pub fn nodes_per_elem(&self) -> usize {
        self.n.pow(self.dim as u32)
    }
    /// Quadrature points per element, `q^dim`.
    pub fn points_per_elem(&self) -> usize {
        self.q.pow(self.dim as u32)
    }
    /// Tensor quadrature weight of point `i` (lexicographic, first direction fastest).
    pub fn weight(&self, mut i: usize) -> f64 {
        let mut w = 1.0;
        for _ in 0..self.dim {
            w *= self.weights[i % self.q];
            i /= self.q;
        }
        w
    }
}

/// Transpose of a row-major `rows × cols` matrix.
pub(crate) fn transpose(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauss_gradient_composes_with_interpolation() {
        // D̂ B = B' when q > p: the interpolant to the Gauss points is exact.
        for p in 1..=9 {
            let b = TensorBasis::new(3, p, p + 2, false).unwrap();
            let (n, q) = (b.n, b.q);
            for i in 0..q {
                for j in 0..n {
                    let db: f64 = (0..q)
                        .map(|k| b.grad[i * q + k] * b.interp[k * n + j])
                        .sum();
                    let want = b.grad_nodal[i * n + j];
                    assert!((db - want).abs() < 1e-11 * (1.0 + want.abs()), "p={p}");
                }
            }
        }
    }

    #[test]
    fn bad_point_counts_are_errors() {
        assert!(TensorBasis::new(3, 3, 0, false).is_err());
        assert!(TensorBasis::new(3, 3, MAX_QUADRATURE_POINTS + 1, false).is_err());
        assert!(TensorBasis::new(3, 3, 5, true).is_err());
        let c = TensorBasis::new(2, 3, 4, true).unwrap();
        assert_eq!(c.interp[0], 1.0);
        assert_eq!(c.interp[1], 0.0);
        let wsum: f64 = (0..c.points_per_elem()).map(|i| c.weight(i)).sum();
        assert!((wsum - 4.0).abs() < 1e-13);
    }
}
