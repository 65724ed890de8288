//! The host side of SharedNZ (Cecka, Lew & Darve 2011, §4.3): the matrix rows grouped into
//! compact sets whose adjacent elements' matrices fit in one block's shared memory, and for
//! every nonzero of a set the places of its contributions in that shared buffer.

use super::shared_sums::{check_nnz, morton_keys, BlockSet, SharedSums, ONLY_HERE};
use crate::GpuError;
use ferrofem_assembly::AssemblyPlan;
use rayon::prelude::*;

/// Groups the plan's rows, in the order of a space-filling curve through their nodes
/// (`coords`, `d` per node), into sets whose adjacent elements number at most `cap`, and
/// builds the lists. Every nonzero belongs to one set (stored, never added atomically).
/// Fails when the elements of one row alone exceed `cap` (the paper's limit: high orders do
/// not fit in shared memory).
pub(crate) fn row_sets(
    plan: &AssemblyPlan,
    coords: &[f64],
    d: usize,
    cap: usize,
) -> Result<SharedSums, GpuError> {
    let (ptr, src) = plan
        .nonzero_sources()
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let n = plan.element_matrix_size();
    let (nn, stride) = (n * n, n * n + n);
    let row_ptr = plan.pattern().row_ptr();
    check_nnz(plan.pattern().nnz())?;
    let nrows = plan.nrows();
    let nc = plan.restriction().ncomp();
    let ncells = plan.restriction().num_elem();
    if cap == 0 || cap * nn > u16::MAX as usize + 1 {
        return Err(GpuError::Unsupported(format!(
            "SharedNZ: {cap} element matrices of {n}x{n} per block"
        )));
    }
    // rows along a Morton curve through their nodes
    let node_of = |row: usize| -> usize {
        let full = match plan.dof_map() {
            Some(m) if !m.is_unconstrained() => m.free()[row] as usize,
            _ => row,
        };
        full / nc
    };
    let node_keys = morton_keys(coords, d);
    let mut rows: Vec<u32> = (0..nrows as u32).collect();
    rows.par_sort_by_key(|&r| (node_keys[node_of(r as usize)], r));
    // greedy sets of rows along the curve
    let elems_of_row = |r: usize, f: &mut dyn FnMut(u32)| {
        let (a, z) = (ptr[row_ptr[r]] as usize, ptr[row_ptr[r + 1]] as usize);
        for &p in &src[a..z] {
            f(p / stride as u32);
        }
    };
    let mut stamp = vec![u32::MAX; ncells];
    let mut bounds = vec![0usize];
    let (mut block, mut count) = (0u32, 0usize);
    let mut i = 0;
    while i < rows.len() {
        let r = rows[i] as usize;
        let mut added = Vec::new();
        elems_of_row(r, &mut |e| {
            if stamp[e as usize] != block {
                stamp[e as usize] = block;
                added.push(e);
            }
        });
        if count + added.len() > cap {
            if count == 0 {
                return Err(GpuError::Unsupported(format!(
                    "SharedNZ: the {} elements of one row do not fit in a block's {cap}",
                    added.len()
                )));
            }
            // close the set and take the row again in a fresh one
            for &e in &added {
                stamp[e as usize] = u32::MAX;
            }
            bounds.push(i);
            block += 1;
            count = 0;
            continue;
        }
        count += added.len();
        i += 1;
    }
    if bounds.last() != Some(&rows.len()) {
        bounds.push(rows.len());
    }
    drop(stamp);
    // per set: its sorted elements, and each nonzero of its rows with the shared places of
    // its sources
    let sets: Vec<BlockSet> = bounds
        .par_windows(2)
        .map(|w| {
            let mut elems = Vec::new();
            for &r in &rows[w[0]..w[1]] {
                elems_of_row(r as usize, &mut |e| elems.push(e));
            }
            elems.sort_unstable();
            elems.dedup();
            let mut sums = Vec::new();
            for &r in &rows[w[0]..w[1]] {
                let r = r as usize;
                for k in row_ptr[r]..row_ptr[r + 1] {
                    let (a, z) = (ptr[k] as usize, ptr[k + 1] as usize);
                    let local: Vec<u16> = src[a..z]
                        .iter()
                        .map(|&p| {
                            let (e, ij) = (p as usize / stride, p as usize % stride);
                            let l = elems
                                .binary_search(&(e as u32))
                                .expect("the set's elements come from these sources");
                            (l * nn + ij) as u16
                        })
                        .collect();
                    sums.push((k as u32 | ONLY_HERE, local));
                }
            }
            BlockSet { elems, sums }
        })
        .collect();
    SharedSums::from_sets(sets)
}
