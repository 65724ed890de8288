//! The host side of block sums: the elements partitioned into compact sets along a
//! space-filling curve through their centroids, each set small enough for one block's
//! shared memory, and per set the nonzeros its element matrices add to with the places of
//! their entries. A block then adds each nonzero's sum once: stored where no other set adds
//! to it, atomically where one does, so that a nonzero takes about one global update
//! instead of one per element entry.

use super::shared_sums::{check_nnz, morton_keys, BlockSet, SharedSums, ONLY_HERE};
use crate::GpuError;
use ferrofem_assembly::{AssemblyPlan, NO_TARGET};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU8, Ordering};

/// Partitions the plan's elements into sets of at most `cap` along a Morton curve through
/// their centroids (node coordinates `coords`, `d` per node) and builds each set's sums.
pub(crate) fn element_sets(
    plan: &AssemblyPlan,
    coords: &[f64],
    d: usize,
    cap: usize,
) -> Result<SharedSums, GpuError> {
    let n = plan.element_matrix_size();
    let nn = n * n;
    check_nnz(plan.pattern().nnz())?;
    if cap == 0 || cap * nn > u16::MAX as usize + 1 {
        return Err(GpuError::Unsupported(format!(
            "block sums: {cap} element matrices of {n}x{n} per block"
        )));
    }
    let r = plan.restriction();
    let (ncells, m) = (r.num_elem(), r.elem_size());
    let offsets = r.offsets();
    let centroids: Vec<f64> = (0..ncells)
        .into_par_iter()
        .flat_map_iter(|e| {
            let nodes = &offsets[e * m..(e + 1) * m];
            (0..d).map(move |k| {
                nodes
                    .iter()
                    .map(|&v| coords[v as usize * d + k])
                    .sum::<f64>()
                    / m as f64
            })
        })
        .collect();
    let keys = morton_keys(&centroids, d);
    drop(centroids);
    let mut order: Vec<u32> = (0..ncells as u32).collect();
    order.par_sort_by_key(|&e| (keys[e as usize], e));
    drop(keys);
    let targets = plan.targets();
    // how many sets add to each nonzero (saturating at 2: only "one" matters)
    let touched: Vec<AtomicU8> = (0..plan.pattern().nnz())
        .map(|_| AtomicU8::new(0))
        .collect();
    let mut sets: Vec<BlockSet> = order
        .par_chunks(cap)
        .map(|chunk| {
            let mut pairs: Vec<(u32, u16)> = Vec::with_capacity(chunk.len() * nn);
            for (l, &e) in chunk.iter().enumerate() {
                let t = &targets[e as usize * nn..(e as usize + 1) * nn];
                for (ij, &k) in t.iter().enumerate() {
                    if k != NO_TARGET {
                        pairs.push((k, (l * nn + ij) as u16));
                    }
                }
            }
            pairs.sort_unstable();
            let mut sums: Vec<(u32, Vec<u16>)> = Vec::new();
            for (k, p) in pairs {
                match sums.last_mut() {
                    Some((last, list)) if *last == k => list.push(p),
                    _ => {
                        let _ = touched[k as usize].fetch_update(
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                            |c| Some(c.saturating_add(1).min(2)),
                        );
                        sums.push((k, vec![p]));
                    }
                }
            }
            BlockSet {
                elems: chunk.to_vec(),
                sums,
            }
        })
        .collect();
    sets.par_iter_mut().for_each(|s| {
        for (k, _) in &mut s.sums {
            if touched[*k as usize].load(Ordering::Relaxed) == 1 {
                *k |= ONLY_HERE;
            }
        }
    });
    SharedSums::from_sets(sets)
}
