//! Quadrature rules: Gauss–Legendre, Gauss–Lobatto–Legendre and Gauss–Jacobi on `[-1, 1]`,
//! their tensor products on quadrilaterals and hexahedra, and rules on simplices.

use crate::FeError;
use ferrofem_base::CellType;

/// A 1-D rule on `[-1, 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule1D {
    /// Nodes, increasing.
    pub points: Vec<f64>,
    /// Weights.
    pub weights: Vec<f64>,
}

impl Rule1D {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.points.len()
    }
    /// True for an empty rule (never produced by the constructors here).
    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }
}

/// Legendre polynomial `P_n(x)` and its derivative, by the three-term recurrence.
fn legendre(n: usize, x: f64) -> (f64, f64, f64) {
    // returns (P_n, P_{n-1}, P_n')
    if n == 0 {
        return (1.0, 0.0, 0.0);
    }
    let (mut p0, mut p1) = (1.0, x);
    for k in 2..=n {
        let kf = k as f64;
        let p2 = ((2.0 * kf - 1.0) * x * p1 - (kf - 1.0) * p0) / kf;
        p0 = p1;
        p1 = p2;
    }
    let nf = n as f64;
    let dp = if (1.0 - x * x).abs() > 1e-300 {
        nf * (x * p1 - p0) / (x * x - 1.0)
    } else {
        // P_n'(±1) = (±1)^{n-1} n(n+1)/2
        let s = if x > 0.0 || n % 2 == 1 { 1.0 } else { -1.0 };
        s * nf * (nf + 1.0) / 2.0
    };
    (p1, p0, dp)
}

/// Gauss–Legendre rule with `n >= 1` points (exact for degree `2n - 1`).
pub fn gauss_legendre(n: usize) -> Result<Rule1D, FeError> {
    if n == 0 {
        return Err(FeError::TooFewPoints {
            rule: "Gauss-Legendre",
            n,
            min: 1,
        });
    }
    let mut points = vec![0.0; n];
    let mut weights = vec![0.0; n];
    for i in 0..n.div_ceil(2) {
        // root i counted from the right end
        let mut x = (std::f64::consts::PI * (i as f64 + 0.75) / (n as f64 + 0.5)).cos();
        for _ in 0..100 {
            let (p, _, dp) = legendre(n, x);
            let dx = p / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        let (_, _, dp) = legendre(n, x);
        let w = 2.0 / ((1.0 - x * x) * dp * dp);
        points[n - 1 - i] = x;
        points[i] = -x;
        weights[n - 1 - i] = w;
        weights[i] = w;
    }
    if n % 2 == 1 {
        points[n / 2] = 0.0;
    }
    Ok(Rule1D { points, weights })
}

/// Gauss–Lobatto–Legendre rule with `n >= 2` points, including both end points (exact for
/// degree `2n - 3`); these are also the nodes of the tensor-product Lagrange bases.
pub fn gauss_lobatto_legendre(n: usize) -> Result<Rule1D, FeError> {
    if n < 2 {
        return Err(FeError::TooFewPoints {
            rule: "Gauss-Lobatto-Legendre",
            n,
            min: 2,
        });
    }
    let deg = n - 1; // interior nodes are roots of P'_deg
    let mut points = vec![0.0; n];
    let mut weights = vec![0.0; n];
    let nf = deg as f64;
    for i in 0..n.div_ceil(2) {
        let mut x = -(std::f64::consts::PI * i as f64 / nf).cos();
        if i > 0 {
            // Newton on q(x) = (1 - x^2) P'_deg(x), written via P_deg and P_{deg-1}:
            // (1-x^2) P' = deg (P_{deg-1} - x P_deg)
            for _ in 0..100 {
                let (p, pm, _) = legendre(deg, x);
                let q = pm - x * p;
                // d/dx (P_{deg-1} - x P_deg) = P'_{deg-1} - P_deg - x P'_deg = -(deg+1) P_deg
                let dq = -(nf + 1.0) * p;
                let dx = q / dq;
                x -= dx;
                if dx.abs() < 1e-16 {
                    break;
                }
            }
        }
        let (p, _, _) = legendre(deg, x);
        let w = 2.0 / (nf * (nf + 1.0) * p * p);
        points[i] = x;
        points[n - 1 - i] = -x;
        weights[i] = w;
        weights[n - 1 - i] = w;
    }
    if n % 2 == 1 {
        points[n / 2] = 0.0;
    }
    Ok(Rule1D { points, weights })
}

/// Jacobi polynomial `P_n^{(a,b)}(x)` and its derivative.
fn jacobi(n: usize, a: f64, b: f64, x: f64) -> (f64, f64) {
    fn value(n: usize, a: f64, b: f64, x: f64) -> f64 {
        if n == 0 {
            return 1.0;
        }
        let mut p0 = 1.0;
        let mut p1 = 0.5 * (a - b + (a + b + 2.0) * x);
        for k in 2..=n {
            let k = k as f64;
            let c = 2.0 * k + a + b;
            let a1 = 2.0 * k * (k + a + b) * (c - 2.0);
            let a2 = (c - 1.0) * (a * a - b * b);
            let a3 = (c - 2.0) * (c - 1.0) * c;
            let a4 = 2.0 * (k + a - 1.0) * (k + b - 1.0) * c;
            let p2 = ((a2 + a3 * x) * p1 - a4 * p0) / a1;
            p0 = p1;
            p1 = p2;
        }
        p1
    }
    let p = value(n, a, b, x);
    let dp = if n == 0 {
        0.0
    } else {
        0.5 * (n as f64 + a + b + 1.0) * value(n - 1, a + 1.0, b + 1.0, x)
    };
    (p, dp)
}

/// Gauss–Jacobi rule with `n >= 1` points for the weight `(1 - x)^a (1 + x)^b` on `[-1, 1]`
/// (exact for `(1-x)^a (1+x)^b q(x)` with `q` of degree `2n - 1`). Used by the collapsed
/// (Duffy) simplex rules.
pub fn gauss_jacobi(n: usize, a: f64, b: f64) -> Result<Rule1D, FeError> {
    if n == 0 {
        return Err(FeError::TooFewPoints {
            rule: "Gauss-Jacobi",
            n,
            min: 1,
        });
    }
    // Roots by Newton with deflation, starting from Chebyshev points.
    let mut points: Vec<f64> = Vec::with_capacity(n);
    for k in 0..n {
        let mut x = -(std::f64::consts::PI * (2.0 * k as f64 + 1.0) / (2.0 * n as f64)).cos();
        if k > 0 {
            x = 0.5 * (x + points[k - 1]);
        }
        for _ in 0..200 {
            let (p, dp) = jacobi(n, a, b, x);
            let s: f64 = points.iter().map(|&r| 1.0 / (x - r)).sum();
            let dx = p / (dp - s * p);
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        points.push(x);
    }
    points.sort_by(|x, y| x.total_cmp(y));
    // Weights w_i = ∫ (1-x)^a (1+x)^b l_i(x) dx, integrated exactly with Gauss–Jacobi's
    // defining property replaced by a Gauss–Legendre rule when a, b are non-negative
    // integers (the only use here), on the polynomial l_i (1-x)^a (1+x)^b.
    let deg = n - 1 + a.max(0.0).ceil() as usize + b.max(0.0).ceil() as usize;
    let gl = gauss_legendre(deg / 2 + 2)?;
    let mut weights = vec![0.0; n];
    for (q, (&xq, &wq)) in gl.points.iter().zip(&gl.weights).enumerate() {
        let _ = q;
        let wfun = (1.0 - xq).powf(a) * (1.0 + xq).powf(b);
        for i in 0..n {
            let mut li = 1.0;
            for j in 0..n {
                if j != i {
                    li *= (xq - points[j]) / (points[i] - points[j]);
                }
            }
            weights[i] += wq * wfun * li;
        }
    }
    Ok(Rule1D { points, weights })
}

/// A quadrature rule on a reference cell.
#[derive(Clone, Debug, PartialEq)]
pub struct QuadratureRule {
    /// The reference cell.
    pub cell_type: CellType,
    /// Points, `dim` coordinates each.
    pub points: Vec<f64>,
    /// Weights (summing to the reference measure).
    pub weights: Vec<f64>,
    /// Polynomial degree integrated exactly.
    pub degree: usize,
    /// For tensor rules, the 1-D factor (points are its lexicographic product).
    pub rule_1d: Option<Rule1D>,
}

impl QuadratureRule {
    /// Number of points.
    pub fn len(&self) -> usize {
        self.weights.len()
    }
    /// True for an empty rule.
    pub fn is_empty(&self) -> bool {
        self.weights.is_empty()
    }
    /// Dimension of the points.
    pub fn dim(&self) -> usize {
        self.cell_type.dim()
    }
    /// Point `q`.
    pub fn point(&self, q: usize) -> &[f64] {
        let d = self.dim();
        &self.points[q * d..(q + 1) * d]
    }

    /// Lexicographic tensor product of a 1-D rule on a quadrilateral or hexahedron
    /// (first coordinate fastest). `degree` is the 1-D exactness.
    pub fn tensor(cell_type: CellType, rule: &Rule1D, degree: usize) -> QuadratureRule {
        assert!(cell_type.is_tensor(), "tensor rules need a tensor cell");
        let d = cell_type.dim();
        let n = rule.len();
        let total = n.pow(d as u32);
        let mut points = Vec::with_capacity(total * d);
        let mut weights = Vec::with_capacity(total);
        for idx in 0..total {
            let mut w = 1.0;
            let mut r = idx;
            for _ in 0..d {
                let i = r % n;
                r /= n;
                points.push(rule.points[i]);
                w *= rule.weights[i];
            }
            weights.push(w);
        }
        QuadratureRule {
            cell_type,
            points,
            weights,
            degree,
            rule_1d: Some(rule.clone()),
        }
    }

    /// Tensor Gauss–Legendre rule with `n` points per direction.
    pub fn gauss(cell_type: CellType, n: usize) -> Result<QuadratureRule, FeError> {
        Ok(Self::tensor(cell_type, &gauss_legendre(n)?, 2 * n - 1))
    }

    /// Tensor Gauss–Lobatto–Legendre rule with `n` points per direction.
    pub fn gauss_lobatto(cell_type: CellType, n: usize) -> Result<QuadratureRule, FeError> {
        Ok(Self::tensor(
            cell_type,
            &gauss_lobatto_legendre(n)?,
            2 * n - 3,
        ))
    }

    /// A rule exact for polynomials of total degree `degree` (per-direction degree on
    /// tensor cells). Simplices use small symmetric rules for degree <= 2 (tetrahedra) and
    /// <= 5 (triangles, except 3), and collapsed Gauss–Jacobi products otherwise.
    pub fn for_degree(cell_type: CellType, degree: usize) -> Result<QuadratureRule, FeError> {
        let n = degree / 2 + 1;
        match cell_type {
            CellType::Quadrilateral | CellType::Hexahedron => Self::gauss(cell_type, n),
            CellType::Triangle => Ok(triangle_rule(degree)),
            CellType::Tetrahedron => Ok(tetrahedron_rule(degree)),
        }
    }
}

fn symmetric(cell_type: CellType, pts: &[(f64, &[[f64; 3]])], degree: usize) -> QuadratureRule {
    let d = cell_type.dim();
    let mut points = Vec::new();
    let mut weights = Vec::new();
    for (w, orbit) in pts {
        for p in orbit.iter() {
            points.extend_from_slice(&p[..d]);
            weights.push(*w);
        }
    }
    QuadratureRule {
        cell_type,
        points,
        weights,
        degree,
        rule_1d: None,
    }
}

/// Triangle orbit of barycentric (a, b, b) as Cartesian points on the unit triangle.
fn tri_orbit3(a: f64) -> [[f64; 3]; 3] {
    let b = 0.5 * (1.0 - a);
    [[b, b, 0.0], [a, b, 0.0], [b, a, 0.0]]
}

fn triangle_rule(degree: usize) -> QuadratureRule {
    let t = CellType::Triangle;
    match degree {
        0 | 1 => symmetric(t, &[(0.5, &[[1.0 / 3.0, 1.0 / 3.0, 0.0]])], 1),
        2 => symmetric(t, &[(1.0 / 6.0, &tri_orbit3(2.0 / 3.0))], 2),
        4 => symmetric(
            t,
            &[
                (
                    0.5 * 0.223_381_589_678_011,
                    &tri_orbit3(0.108_103_018_168_070),
                ),
                (
                    0.5 * 0.109_951_743_655_322,
                    &tri_orbit3(0.816_847_572_980_459),
                ),
            ],
            4,
        ),
        5 => symmetric(
            t,
            &[
                (0.5 * 0.225, &[[1.0 / 3.0, 1.0 / 3.0, 0.0]]),
                (
                    0.5 * 0.132_394_152_788_506,
                    &tri_orbit3(0.059_715_871_789_770),
                ),
                (
                    0.5 * 0.125_939_180_544_827,
                    &tri_orbit3(0.797_426_985_353_087),
                ),
            ],
            5,
        ),
        _ => collapsed_rule(t, degree),
    }
}

fn tetrahedron_rule(degree: usize) -> QuadratureRule {
    let t = CellType::Tetrahedron;
    match degree {
        0 | 1 => symmetric(t, &[(1.0 / 6.0, &[[0.25, 0.25, 0.25]])], 1),
        2 => {
            let a = 0.585_410_196_624_968_5;
            let b = 0.138_196_601_125_010_5;
            symmetric(
                t,
                &[(1.0 / 24.0, &[[b, b, b], [a, b, b], [b, a, b], [b, b, a]])],
                2,
            )
        }
        _ => collapsed_rule(t, degree),
    }
}

/// Collapsed-coordinate (Duffy) product rule on a simplex, exact for total degree `degree`.
fn collapsed_rule(cell_type: CellType, degree: usize) -> QuadratureRule {
    let n = degree / 2 + 1;
    // rules on [0, 1]: Legendre for the first direction, Jacobi (1-x)^k for the others.
    let to01 = |r: Rule1D, a: i32| -> Vec<(f64, f64)> {
        let scale = 0.5f64.powi(1 + a);
        r.points
            .iter()
            .zip(&r.weights)
            .map(|(&x, &w)| (0.5 * (x + 1.0), w * scale))
            .collect()
    };
    let g0 = to01(gauss_legendre(n).expect("n >= 1"), 0);
    let g1 = to01(gauss_jacobi(n, 1.0, 0.0).expect("n >= 1"), 1);
    let mut points = Vec::new();
    let mut weights = Vec::new();
    match cell_type {
        CellType::Triangle => {
            for &(b, wb) in &g1 {
                for &(a, wa) in &g0 {
                    points.extend_from_slice(&[a * (1.0 - b), b]);
                    weights.push(wa * wb);
                }
            }
        }
        CellType::Tetrahedron => {
            let g2 = to01(gauss_jacobi(n, 2.0, 0.0).expect("n >= 1"), 2);
            for &(c, wc) in &g2 {
                for &(b, wb) in &g1 {
                    for &(a, wa) in &g0 {
                        points.extend_from_slice(&[a * (1.0 - b) * (1.0 - c), b * (1.0 - c), c]);
                        weights.push(wa * wb * wc);
                    }
                }
            }
        }
        _ => unreachable!("collapsed rules are for simplices"),
    }
    QuadratureRule {
        cell_type,
        points,
        weights,
        degree,
        rule_1d: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use ferrofem_base::random::Lcg;

    fn exact_monomial_1d(k: usize) -> f64 {
        if k % 2 == 1 {
            0.0
        } else {
            2.0 / (k as f64 + 1.0)
        }
    }

    #[test]
    fn gauss_legendre_exact_to_2n_minus_1() {
        let mut rng = Lcg::new(1);
        for n in 1..=20 {
            let r = gauss_legendre(n).unwrap();
            let deg = 2 * n - 1;
            let c: Vec<f64> = (0..=deg).map(|_| rng.symmetric()).collect();
            let exact: f64 = c
                .iter()
                .enumerate()
                .map(|(k, ck)| ck * exact_monomial_1d(k))
                .sum();
            let q: f64 = r
                .points
                .iter()
                .zip(&r.weights)
                .map(|(&x, &w)| w * c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck))
                .sum();
            assert!((q - exact).abs() < 1e-13, "n={n}: {q} vs {exact}");
            // and not exact for degree 2n (x^{2n}); the error constant shrinks fast with n
            if n > 8 {
                continue;
            }
            let q2: f64 = r
                .points
                .iter()
                .zip(&r.weights)
                .map(|(&x, &w)| w * x.powi(2 * n as i32))
                .sum();
            assert!((q2 - exact_monomial_1d(2 * n)).abs() > 1e-8);
        }
    }

    #[test]
    fn gauss_lobatto_exact_to_2n_minus_3_with_endpoints() {
        let mut rng = Lcg::new(2);
        for n in 2..=20 {
            let r = gauss_lobatto_legendre(n).unwrap();
            assert_eq!(r.points[0], -1.0);
            assert_eq!(r.points[n - 1], 1.0);
            assert!(r.points.windows(2).all(|w| w[0] < w[1]));
            let deg = 2 * n - 3;
            let c: Vec<f64> = (0..=deg).map(|_| rng.symmetric()).collect();
            let exact: f64 = c
                .iter()
                .enumerate()
                .map(|(k, ck)| ck * exact_monomial_1d(k))
                .sum();
            let q: f64 = r
                .points
                .iter()
                .zip(&r.weights)
                .map(|(&x, &w)| w * c.iter().rev().fold(0.0, |acc, &ck| acc * x + ck))
                .sum();
            assert!((q - exact).abs() < 1e-13, "n={n}: {q} vs {exact}");
        }
    }

    #[test]
    fn gauss_jacobi_integrates_weighted_polynomials() {
        // ∫_{-1}^{1} (1-x)^a x^k dx by a fine Gauss-Legendre rule as reference
        let fine = gauss_legendre(40).unwrap();
        for a in [1.0, 2.0] {
            for n in 1..=8 {
                let r = gauss_jacobi(n, a, 0.0).unwrap();
                for k in 0..2 * n {
                    let exact: f64 = fine
                        .points
                        .iter()
                        .zip(&fine.weights)
                        .map(|(&x, &w)| w * (1.0 - x).powf(a) * x.powi(k as i32))
                        .sum();
                    let q: f64 = r
                        .points
                        .iter()
                        .zip(&r.weights)
                        .map(|(&x, &w)| w * x.powi(k as i32))
                        .sum();
                    assert!(
                        (q - exact).abs() < 1e-12,
                        "a={a} n={n} k={k}: {q} vs {exact}"
                    );
                }
            }
        }
    }

    fn factorial(n: usize) -> f64 {
        (1..=n).map(|k| k as f64).product()
    }

    /// ∫ over the unit simplex of x^a y^b (z^c) = a! b! c! / (a+b+c+d)!
    fn simplex_monomial(e: &[usize]) -> f64 {
        let num: f64 = e.iter().map(|&k| factorial(k)).product();
        num / factorial(e.iter().sum::<usize>() + e.len())
    }

    /// ∫ over [-1,1]^d of x^a y^b z^c.
    fn cube_monomial(e: &[usize]) -> f64 {
        e.iter().map(|&k| exact_monomial_1d(k)).product()
    }

    fn exponents(dim: usize, max_total: usize, per_axis: bool) -> Vec<Vec<usize>> {
        let mut out = Vec::new();
        let n = max_total + 1;
        for idx in 0..n.pow(dim as u32) {
            let mut e = Vec::new();
            let mut r = idx;
            for _ in 0..dim {
                e.push(r % n);
                r /= n;
            }
            let ok = if per_axis {
                true
            } else {
                e.iter().sum::<usize>() <= max_total
            };
            if ok {
                out.push(e);
            }
        }
        out
    }

    fn check_random_polynomials(rule: &QuadratureRule, degree: usize, per_axis: bool, seed: u64) {
        let d = rule.dim();
        let exps = exponents(d, degree, per_axis);
        let mut rng = Lcg::new(seed);
        for _trial in 0..3 {
            let coef: Vec<f64> = exps.iter().map(|_| rng.symmetric()).collect();
            let exact: f64 = exps
                .iter()
                .zip(&coef)
                .map(|(e, c)| {
                    c * if per_axis {
                        cube_monomial(e)
                    } else {
                        simplex_monomial(e)
                    }
                })
                .sum();
            let mut q = 0.0;
            for (i, w) in rule.weights.iter().enumerate() {
                let x = rule.point(i);
                let f: f64 = exps
                    .iter()
                    .zip(&coef)
                    .map(|(e, c)| {
                        c * e
                            .iter()
                            .zip(x)
                            .map(|(&k, &xi)| xi.powi(k as i32))
                            .product::<f64>()
                    })
                    .sum();
                q += w * f;
            }
            assert!(
                (q - exact).abs() < 1e-12 * exact.abs().max(1.0),
                "{:?} degree {degree}: {q} vs {exact}",
                rule.cell_type
            );
        }
    }

    #[test]
    fn simplex_rules_exact_for_random_polynomials() {
        for degree in 0..=12 {
            let r = QuadratureRule::for_degree(CellType::Triangle, degree).unwrap();
            assert!(r.degree >= degree);
            assert!(r.weights.iter().all(|&w| w > 0.0), "positive weights");
            check_random_polynomials(&r, degree, false, 10 + degree as u64);
        }
        for degree in 0..=8 {
            let r = QuadratureRule::for_degree(CellType::Tetrahedron, degree).unwrap();
            assert!(r.degree >= degree);
            assert!(r.weights.iter().all(|&w| w > 0.0), "positive weights");
            check_random_polynomials(&r, degree, false, 30 + degree as u64);
        }
    }

    #[test]
    fn simplex_points_inside_reference_cell() {
        for (ct, maxdeg) in [(CellType::Triangle, 12), (CellType::Tetrahedron, 8)] {
            for degree in 0..=maxdeg {
                let r = QuadratureRule::for_degree(ct, degree).unwrap();
                for q in 0..r.len() {
                    let x = r.point(q);
                    assert!(x.iter().all(|&c| c > 0.0) && x.iter().sum::<f64>() < 1.0);
                }
            }
        }
    }

    #[test]
    fn tensor_rules_exact_for_random_polynomials() {
        for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
            for n in 1..=6 {
                let r = QuadratureRule::gauss(ct, n).unwrap();
                check_random_polynomials(&r, 2 * n - 1, true, n as u64);
                let s: f64 = r.weights.iter().sum();
                assert!((s - ct.reference_measure()).abs() < 1e-13);
            }
            for n in 2..=6 {
                let r = QuadratureRule::gauss_lobatto(ct, n).unwrap();
                check_random_polynomials(&r, 2 * n - 3, true, 100 + n as u64);
            }
        }
    }

    #[test]
    fn too_few_points_is_an_error() {
        assert!(gauss_legendre(0).is_err());
        assert!(gauss_lobatto_legendre(1).is_err());
        assert!(gauss_jacobi(0, 1.0, 0.0).is_err());
    }
}
