//! The host side of SharedNZ (Cecka, Lew & Darve 2011, §4.3): the matrix rows grouped into
//! compact sets whose adjacent elements' matrices fit in one block's shared memory, and for
//! every nonzero the positions of its contributions in that shared buffer.

use crate::GpuError;
use ferrofem_assembly::AssemblyPlan;
use rayon::prelude::*;

/// The row sets of SharedNZ and their lists, as the `shared_nz` kernel reads them.
#[derive(Clone, Debug)]
pub(crate) struct SharedNzPartition {
    /// Block `b` writes the nonzeros `nzs[zptr[b]..zptr[b + 1]]`.
    pub zptr: Vec<u32>,
    /// The nonzeros of each block (those of its rows, in row order).
    pub nzs: Vec<u32>,
    /// Block `b` computes the elements `elems[eptr[b]..eptr[b + 1]]` (sorted).
    pub eptr: Vec<u32>,
    /// The elements of each block.
    pub elems: Vec<u32>,
    /// For every contribution `p` of the plan's nonzero → element-entries map, its place in
    /// its block's shared buffer: local element × n² + entry.
    pub lists: Vec<u16>,
    /// The most elements of one block.
    pub emax: usize,
}

/// Morton key of a point scaled into `[0, 1)^d` (21 bits per axis).
fn morton(x: &[f64], lo: &[f64], scale: &[f64]) -> u64 {
    let mut key = 0u64;
    let d = x.len();
    let q: Vec<u64> = (0..d)
        .map(|k| (((x[k] - lo[k]) * scale[k]).clamp(0.0, 1.0) * ((1u64 << 21) - 1) as f64) as u64)
        .collect();
    for bit in (0..21).rev() {
        for qk in &q {
            key = (key << 1) | ((qk >> bit) & 1);
        }
    }
    key
}

/// Groups the plan's rows, in the order of a space-filling curve through their nodes
/// (`coords`, `d` per node), into sets whose adjacent elements number at most `cap`, and
/// builds the lists. Fails when the elements of one row alone exceed `cap` (the paper's
/// limit: high orders do not fit in shared memory).
pub(crate) fn partition(
    plan: &AssemblyPlan,
    coords: &[f64],
    d: usize,
    cap: usize,
) -> Result<SharedNzPartition, GpuError> {
    let (ptr, src) = plan
        .nonzero_sources()
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let n = plan.element_matrix_size();
    let (nn, stride) = (n * n, n * n + n);
    let row_ptr = plan.pattern().row_ptr();
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
    let nnodes = coords.len() / d.max(1);
    let mut lo = vec![f64::INFINITY; d];
    let mut hi = vec![f64::NEG_INFINITY; d];
    for x in coords.chunks_exact(d) {
        for k in 0..d {
            lo[k] = lo[k].min(x[k]);
            hi[k] = hi[k].max(x[k]);
        }
    }
    let scale: Vec<f64> = (0..d)
        .map(|k| {
            if hi[k] > lo[k] {
                1.0 / (hi[k] - lo[k])
            } else {
                0.0
            }
        })
        .collect();
    let node_keys: Vec<u64> = (0..nnodes)
        .into_par_iter()
        .map(|m| morton(&coords[m * d..(m + 1) * d], &lo, &scale))
        .collect();
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
    // per set: its sorted elements, its nonzeros, and the shared positions of their sources
    type Set = (Vec<u32>, Vec<u32>, Vec<(usize, Vec<u16>)>);
    let sets: Vec<Set> = bounds
        .par_windows(2)
        .map(|w| {
            let mut elems = Vec::new();
            let mut nzs = Vec::new();
            for &r in &rows[w[0]..w[1]] {
                let r = r as usize;
                elems_of_row(r, &mut |e| elems.push(e));
                nzs.extend((row_ptr[r] as u32)..(row_ptr[r + 1] as u32));
            }
            elems.sort_unstable();
            elems.dedup();
            let lists = nzs
                .iter()
                .map(|&k| {
                    let (a, z) = (ptr[k as usize] as usize, ptr[k as usize + 1] as usize);
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
                    (a, local)
                })
                .collect();
            (elems, nzs, lists)
        })
        .collect();
    let mut out = SharedNzPartition {
        zptr: vec![0],
        nzs: Vec::with_capacity(plan.pattern().nnz()),
        eptr: vec![0],
        elems: Vec::new(),
        lists: vec![0; src.len()],
        emax: 0,
    };
    for (elems, nzs, lists) in sets {
        out.emax = out.emax.max(elems.len());
        out.elems.extend_from_slice(&elems);
        out.eptr.push(out.elems.len() as u32);
        out.nzs.extend_from_slice(&nzs);
        out.zptr.push(out.nzs.len() as u32);
        for (a, local) in lists {
            out.lists[a..a + local.len()].copy_from_slice(&local);
        }
    }
    Ok(out)
}
