//! 1-D Lagrange interpolation on a set of nodes, and the interpolation/differentiation
//! matrices used by sum factorisation (GLL→Gauss, GLL→GLL, Gauss→Gauss).

/// The Lagrange polynomials `l_0..l_{n-1}` through `n` distinct nodes.
#[derive(Clone, Debug, PartialEq)]
pub struct Lagrange1D {
    nodes: Vec<f64>,
    /// 1 / prod_{k != j} (x_j - x_k)
    denom: Vec<f64>,
}

impl Lagrange1D {
    /// Builds the basis on `nodes` (distinct; typically GLL points of `[-1, 1]`).
    ///
    /// # Panics
    /// If two nodes coincide (nodes come from the quadrature module, not from users).
    pub fn new(nodes: &[f64]) -> Lagrange1D {
        let n = nodes.len();
        let denom = (0..n)
            .map(|j| {
                let p: f64 = (0..n)
                    .filter(|&k| k != j)
                    .map(|k| nodes[j] - nodes[k])
                    .product();
                assert!(p != 0.0, "Lagrange1D nodes must be distinct");
                1.0 / p
            })
            .collect();
        Lagrange1D {
            nodes: nodes.to_vec(),
            denom,
        }
    }

    /// Number of basis functions (= nodes).
    pub fn len(&self) -> usize {
        self.nodes.len()
    }
    /// True for an empty basis.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
    /// The nodes.
    pub fn nodes(&self) -> &[f64] {
        &self.nodes
    }

    /// Values `l_j(x)` and derivatives `l_j'(x)` for all `j`, by products (no division by
    /// `x - x_k`, so exact at the nodes).
    pub fn eval(&self, x: f64, values: &mut [f64], derivs: &mut [f64]) {
        let n = self.nodes.len();
        let diff: Vec<f64> = self.nodes.iter().map(|&xk| x - xk).collect();
        for j in 0..n {
            let mut v = 1.0;
            let mut dv = 0.0;
            for k in 0..n {
                if k == j {
                    continue;
                }
                // d/dx of product: dv = dv * diff_k + v * 1
                dv = dv * diff[k] + v;
                v *= diff[k];
            }
            values[j] = v * self.denom[j];
            derivs[j] = dv * self.denom[j];
        }
    }

    /// `B[q][j] = l_j(points[q])`, row-major `points.len() x n`.
    pub fn interpolation_matrix(&self, points: &[f64]) -> Vec<f64> {
        self.matrices(points).0
    }

    /// `D[q][j] = l_j'(points[q])`, row-major `points.len() x n`.
    pub fn derivative_matrix(&self, points: &[f64]) -> Vec<f64> {
        self.matrices(points).1
    }

    /// Both matrices at once.
    pub fn matrices(&self, points: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let n = self.len();
        let mut b = vec![0.0; points.len() * n];
        let mut d = vec![0.0; points.len() * n];
        for (q, &x) in points.iter().enumerate() {
            self.eval(x, &mut b[q * n..(q + 1) * n], &mut d[q * n..(q + 1) * n]);
        }
        (b, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gauss_legendre, gauss_lobatto_legendre};

    #[test]
    fn kronecker_and_exact_derivatives() {
        for n in 2..=12 {
            let gll = gauss_lobatto_legendre(n).unwrap();
            let l = Lagrange1D::new(&gll.points);
            let (b, d) = l.matrices(&gll.points);
            for q in 0..n {
                for j in 0..n {
                    let e = if q == j { 1.0 } else { 0.0 };
                    assert!((b[q * n + j] - e).abs() < 1e-14);
                }
                // derivative of the interpolant of x^k equals k x^{k-1}
                for k in 1..n {
                    let du: f64 = (0..n)
                        .map(|j| d[q * n + j] * gll.points[j].powi(k as i32))
                        .sum();
                    let exact = k as f64 * gll.points[q].powi(k as i32 - 1);
                    assert!((du - exact).abs() < 1e-11 * (n * n) as f64, "n={n} k={k}");
                }
            }
        }
    }

    #[test]
    fn gll_to_gauss_interpolation_is_exact_for_polynomials() {
        for n in 2..=11 {
            let gll = gauss_lobatto_legendre(n).unwrap();
            let gl = gauss_legendre(n + 1).unwrap();
            let b = Lagrange1D::new(&gll.points).interpolation_matrix(&gl.points);
            for k in 0..n {
                for (q, &x) in gl.points.iter().enumerate() {
                    let v: f64 = (0..n)
                        .map(|j| b[q * n + j] * gll.points[j].powi(k as i32))
                        .sum();
                    assert!((v - x.powi(k as i32)).abs() < 1e-13);
                }
                // rows sum to one (partition of unity)
            }
            for q in 0..gl.len() {
                let s: f64 = b[q * n..(q + 1) * n].iter().sum();
                assert!((s - 1.0).abs() < 1e-14);
            }
        }
    }
}
