//! The lumped (diagonal) mass of the collocated GLL rule, summed in parallel in the order a
//! sequential loop over the elements sums it.

use crate::WaveError;
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::{Coefficient, Mass, PhysicsOptions, TensorOperator};
use ferrofem_space::{ElemRestriction, H1Space};
use rayon::prelude::*;

/// Element chunks per thread of the parallel sum (more chunks balance better; fewer leave
/// fewer contributions to nodes that an earlier chunk reaches first).
const CHUNKS_PER_THREAD: usize = 4;

/// The lumped mass per node of the scalar `space`: the sum of `ρ w det J` over the points
/// at the node, in element order.
pub(crate) fn lumped_mass(
    mesh: &Mesh,
    space: &H1Space,
    rho: Coefficient,
    colloc: &PhysicsOptions,
) -> Result<Vec<f64>, WaveError> {
    let op = TensorOperator::<f64>::with_physics(mesh, space, Mass { ncomp: 1, rho }, colloc)?;
    let g = op.geometry();
    // (stored data: collocated points are the element's nodes, lexicographic)
    let value = |e: usize, l: usize| g.factor(e, 0, l).unwrap_or(f64::NAN);
    Ok(sum_in_element_order(
        space.restriction(),
        space.first_nodes(),
        value,
    ))
}

/// `out[n] = Σ value(e, l)` over the elements `e` in ascending order and their local nodes
/// `l` at node `n` of the scalar restriction `r`: every node's terms are added in element
/// order, whatever the threads.
///
/// With `first` ([`H1Space::first_nodes`]: each cell's first-reached nodes), chunks of
/// consecutive elements run in parallel. A chunk adds directly into the nodes it reaches
/// first (no earlier element touches them) and keeps its terms for nodes an earlier chunk
/// reached first; those are added afterwards, per receiving chunk in parallel, in chunk
/// order. Each node thus gets its terms in ascending element order, as the sequential loop
/// (used without `first`) gives them.
pub(crate) fn sum_in_element_order(
    r: &ElemRestriction,
    first: Option<&[u32]>,
    value: impl Fn(usize, usize) -> f64 + Sync,
) -> Vec<f64> {
    let (ne, nn) = (r.num_elem(), r.num_nodes());
    let mut out = vec![0.0; nn];
    let sequential = |out: &mut [f64]| {
        for e in 0..ne {
            for (l, &n) in r.elem(e).iter().enumerate() {
                out[n as usize] += value(e, l);
            }
        }
    };
    let first = match first {
        Some(f) if ne > 0 && f.len() == ne + 1 && f[ne] as usize == nn => f,
        _ => {
            sequential(&mut out);
            return out;
        }
    };
    let nchunks = (rayon::current_num_threads() * CHUNKS_PER_THREAD).clamp(1, ne);
    let cell_at = |k: usize| k * ne / nchunks;
    let starts: Vec<usize> = (0..=nchunks).map(|k| first[cell_at(k)] as usize).collect();
    let node_at = |k: usize| starts[k];
    // the chunk whose first-reached nodes hold node `n`
    let chunk_of = |n: u32| starts[1..].partition_point(|&s| s <= n as usize);
    // each chunk's own nodes, and its terms for earlier chunks' nodes (by receiving chunk,
    // then element order); `None` if a node lies beyond the chunk's ranges
    let deferred: Option<Vec<Vec<(u32, u32, f64)>>> = split(&mut out, &starts)
        .into_par_iter()
        .map(|(k, own)| {
            let lo = node_at(k);
            let mut later = Vec::new();
            for e in cell_at(k)..cell_at(k + 1) {
                for (l, &n) in r.elem(e).iter().enumerate() {
                    let v = value(e, l);
                    match (n as usize).checked_sub(lo) {
                        Some(i) => *own.get_mut(i)? += v,
                        None => later.push((chunk_of(n) as u32, n, v)),
                    }
                }
            }
            // (stable: element order kept within a receiving chunk)
            later.sort_by_key(|t| t.0);
            Some(later)
        })
        .collect();
    let Some(deferred) = deferred else {
        // (not a first-reached numbering after all: the plain loop)
        out.fill(0.0);
        sequential(&mut out);
        return out;
    };
    split(&mut out, &starts)
        .into_par_iter()
        .for_each(|(t, own)| {
            let lo = node_at(t);
            for later in &deferred[t + 1..] {
                let from = later.partition_point(|x| (x.0 as usize) < t);
                for &(_, n, v) in later[from..].iter().take_while(|x| x.0 as usize == t) {
                    own[n as usize - lo] += v;
                }
            }
        });
    out
}

/// `out` cut at `starts` (ascending, from 0 to `out.len()`): the parts with their indices.
fn split<'a>(out: &'a mut [f64], starts: &[usize]) -> Vec<(usize, &'a mut [f64])> {
    let mut parts = Vec::with_capacity(starts.len().saturating_sub(1));
    let mut rest = out;
    for (k, w) in starts.windows(2).enumerate() {
        let (own, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
        parts.push((k, own));
        rest = tail;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrofem_base::CellType;
    use ferrofem_mesh::{generate_box, BoxSpec};

    /// Terms that make the sum depend on its order in the last bits.
    fn term(e: usize, l: usize) -> f64 {
        1.0 / (1.0 + (e * 31 + l * 7) as f64).sqrt() + 1e-3 * ((e + l) % 5) as f64
    }

    fn plain(r: &ElemRestriction) -> Vec<f64> {
        sum_in_element_order(r, None, term)
    }

    #[test]
    fn the_parallel_sum_equals_the_sequential_one_bit_for_bit() {
        for (ct, dims, p) in [
            (CellType::Quadrilateral, vec![7, 5], 3),
            (CellType::Hexahedron, vec![5, 4, 3], 2),
            (CellType::Hexahedron, vec![3, 3, 3], 4),
            (CellType::Quadrilateral, vec![1, 1], 1),
        ] {
            let mesh = generate_box(&BoxSpec::unit(ct, &dims)).unwrap();
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let r = space.restriction();
            let first = space
                .first_nodes()
                .expect("a fresh space knows its first nodes");
            let want = plain(r);
            for threads in [1, 2, 3, 8] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let got = pool.install(|| sum_in_element_order(r, Some(first), term));
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{ct:?} {dims:?} p{p}, {threads} threads"
                );
            }
        }
    }

    #[test]
    fn inconsistent_first_nodes_fall_back_to_the_plain_loop() {
        let mesh = generate_box(&BoxSpec::unit(CellType::Quadrilateral, &[4, 4])).unwrap();
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        let r = space.restriction();
        let want = plain(r);
        // every node claimed by the last cell: earlier cells reach nodes beyond their ranges
        let mut first = vec![0; r.num_elem() + 1];
        first[r.num_elem()] = r.num_nodes() as u32;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .unwrap();
        let got = pool.install(|| sum_in_element_order(r, Some(&first), term));
        assert_eq!(got, want);
        // a renumbered space has no first nodes
        let n = space.num_nodes() as u32;
        let reversed: Vec<u32> = (0..n).rev().collect();
        assert!(space.renumbered(&reversed).first_nodes().is_none());
    }
}
