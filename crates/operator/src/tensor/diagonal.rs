//! Matrix-free diagonal of the tensor-product operators, sum-factorised per element.
//!
//! The diagonal entry of node `i = (i_0, .., i_{d-1})` of an element is
//! `Σ_q [α w det J(q) Π_a B[q_a][i_a]² + Σ_kl G_kl(q) Π_a M^{kl}_a[q_a][i_a]]` with
//! `M^{kl}_a = B'∘B'` when `a = k = l`, `B'∘B` when `a` is one of `k ≠ l`, `B∘B` otherwise
//! (`∘` entrywise, `B' ` the nodal derivative at the points). Each term is separable, so
//! it is one transposed tensor contraction of a point field: `O(q^{d+1})` per term.

use super::basis::TensorBasis;
use super::geometry::{point_factors, MapTable};
use rayon::prelude::*;

/// Entrywise product of two `q × n` matrices.
fn hadamard(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).map(|(x, y)| x * y).collect()
}

/// Per-element diagonals, `[elem][node]`, in `f64`.
///
/// `vertex_offsets` as in [`TensorGeometry`](super::TensorGeometry); `metric` adds the
/// gradient term, `mass_coef` the mass term with that coefficient.
pub(crate) fn element_diagonals(
    basis: &TensorBasis,
    vertex_offsets: &[f64],
    num_elem: usize,
    metric: bool,
    mass_coef: Option<f64>,
) -> Vec<f64> {
    let dim = basis.dim;
    let (n, q) = (basis.n, basis.q);
    let nn = basis.nodes_per_elem();
    let nq = basis.points_per_elem();
    let table = MapTable::new(basis);
    let per = dim * table.nv1;
    let b = &basis.interp;
    let bd = &basis.grad_nodal;
    let bb = hadamard(b, b);
    let db = hadamard(bd, b);
    let dd = hadamard(bd, bd);
    let nf = super::geometry::factor_count(dim, metric, mass_coef.is_some());
    let work = n.max(q).pow(dim as u32);
    let mut diag = vec![0.0; num_elem * nn];
    diag.par_chunks_mut(nn)
        .enumerate()
        .with_min_len(16)
        .for_each_init(
            || (vec![0.0; nf * nq], vec![0.0; work], vec![0.0; work]),
            |(f, t0, t1), (e, out)| {
                let vd = &vertex_offsets[e * per..(e + 1) * per];
                let mut pf = [0.0; 7];
                for i in 0..nq {
                    point_factors(
                        dim,
                        vd,
                        table.dphi_at(i),
                        table.w[i],
                        metric,
                        mass_coef.is_some(),
                        &mut pf,
                    );
                    for c in 0..nf {
                        f[c * nq + i] = pf[c];
                    }
                }
                out.fill(0.0);
                let mut c = 0;
                if metric {
                    for k in 0..dim {
                        for l in k..dim {
                            let mats: Vec<&[f64]> = (0..dim)
                                .map(|a| match (a == k, a == l) {
                                    (true, true) => &dd[..],
                                    (true, false) | (false, true) => &db[..],
                                    _ => &bb[..],
                                })
                                .collect();
                            let scale = if k == l { 1.0 } else { 2.0 };
                            let field = &f[c * nq..(c + 1) * nq];
                            add_transposed(dim, n, q, &mats, field, scale, out, t0, t1);
                            c += 1;
                        }
                    }
                }
                if let Some(alpha) = mass_coef {
                    let mats: Vec<&[f64]> = (0..dim).map(|_| &bb[..]).collect();
                    let field = &f[c * nq..(c + 1) * nq];
                    add_transposed(dim, n, q, &mats, field, alpha, out, t0, t1);
                }
            },
        );
    diag
}

/// `out += scale · (M_0 ⊗ .. ⊗ M_{d-1})ᵀ field` for `q × n` matrices `M_a`, a point field
/// of `q^d` values and `n^d` outputs (first direction fastest).
fn add_transposed(
    dim: usize,
    n: usize,
    q: usize,
    mats: &[&[f64]],
    field: &[f64],
    scale: f64,
    out: &mut [f64],
    t0: &mut [f64],
    t1: &mut [f64],
) {
    t0[..field.len()].copy_from_slice(field);
    let (mut cur, mut next) = (t0, t1);
    let mut post = 1;
    for (a, m) in mats.iter().enumerate().take(dim) {
        let pre = q.pow((dim - 1 - a) as u32);
        for p in 0..pre {
            for i in 0..n {
                for s in 0..post {
                    let mut acc = 0.0;
                    for j in 0..q {
                        acc += m[j * n + i] * cur[(p * q + j) * post + s];
                    }
                    next[(p * n + i) * post + s] = acc;
                }
            }
        }
        std::mem::swap(&mut cur, &mut next);
        post *= n;
    }
    for (o, v) in out.iter_mut().zip(cur.iter()) {
        *o += scale * v;
    }
}
