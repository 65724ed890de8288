//! Lagrange polynomials on the equispaced lattice of a simplex (Silvester's product form in
//! barycentric coordinates).

/// Barycentric multi-indices of the order-`p` lattice of a `d`-simplex in ferrofem's node
/// order: vertices, then edge interiors (edge order of `CellType::edges`, from the edge's
/// first vertex to its second), then face interiors (tetrahedra: facet order), then the
/// cell interior. Each entry has `d + 1` components summing to `p`, together with the
/// entity `(dim, index)` it belongs to.
pub(crate) fn lattice(
    d: usize,
    p: usize,
    edges: &[[usize; 2]],
    facets: &[&[usize]],
) -> Vec<([u32; 4], (usize, usize))> {
    let mut out = Vec::new();
    let mk = |pairs: &[(usize, usize)]| {
        let mut a = [0u32; 4];
        for &(v, m) in pairs {
            a[v] = m as u32;
        }
        a
    };
    for v in 0..=d {
        out.push((mk(&[(v, p)]), (0, v)));
    }
    for (e, &[a, b]) in edges.iter().enumerate() {
        for m in 1..p {
            out.push((mk(&[(a, p - m), (b, m)]), (1, e)));
        }
    }
    // interior of a triangle with vertices (a, b, c)
    let tri_interior = |a: usize, b: usize, c: usize, ent: (usize, usize), out: &mut Vec<_>| {
        for j in 1..p {
            for i in 1..p {
                if i + j < p {
                    out.push((mk(&[(a, p - i - j), (b, i), (c, j)]), ent));
                }
            }
        }
    };
    if d == 2 {
        tri_interior(0, 1, 2, (2, 0), &mut out);
    } else {
        for (f, verts) in facets.iter().enumerate() {
            tri_interior(verts[0], verts[1], verts[2], (2, f), &mut out);
        }
        for k in 1..p {
            for j in 1..p {
                for i in 1..p {
                    if i + j + k < p {
                        out.push((mk(&[(0, p - i - j - k), (1, i), (2, j), (3, k)]), (3, 0)));
                    }
                }
            }
        }
    }
    out
}

/// `s_m(l) = prod_{j<m} (p l - j) / (j + 1)` and its derivative in `l`.
#[inline]
fn silvester(p: usize, m: u32, l: f64) -> (f64, f64) {
    let mut v = 1.0;
    let mut dv = 0.0;
    let pf = p as f64;
    for j in 0..m {
        let jf = j as f64;
        let f = (pf * l - jf) / (jf + 1.0);
        let df = pf / (jf + 1.0);
        dv = dv * f + v * df;
        v *= f;
    }
    (v, dv)
}

/// Value and reference gradient (length `d`) of the Lagrange polynomial with multi-index
/// `alpha` at reference point `x` of the unit `d`-simplex.
pub(crate) fn eval(d: usize, p: usize, alpha: &[u32; 4], x: &[f64], grad: &mut [f64]) -> f64 {
    let mut lam = [0.0; 4];
    lam[0] = 1.0 - x[..d].iter().sum::<f64>();
    lam[1..=d].copy_from_slice(&x[..d]);
    let mut s = [0.0; 4];
    let mut ds = [0.0; 4];
    for i in 0..=d {
        let (v, dv) = silvester(p, alpha[i], lam[i]);
        s[i] = v;
        ds[i] = dv;
    }
    let value: f64 = s[..=d].iter().product();
    // d phi / d lambda_i = ds_i * prod_{k != i} s_k
    let mut dlam = [0.0; 4];
    for i in 0..=d {
        dlam[i] = ds[i] * (0..=d).filter(|&k| k != i).map(|k| s[k]).product::<f64>();
    }
    for k in 0..d {
        grad[k] = dlam[k + 1] - dlam[0];
    }
    value
}
