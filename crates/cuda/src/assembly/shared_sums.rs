//! What the `shared_sums` kernel reads: sets of elements a block computes into shared
//! memory, and for each set the CSR nonzeros its element matrices add to with the places of
//! their entries in that shared buffer. Built by SharedNZ's row sets
//! ([`super::shared_nz`]) and by the element partition of block sums
//! ([`super::block_sums`]).

use crate::GpuError;
use rayon::prelude::*;

/// Set on a nonzero of [`SharedSums::nzs`] that no other block adds to: the kernel stores
/// its sum instead of adding it atomically.
pub(crate) const ONLY_HERE: u32 = 1 << 31;

/// The sets of the `shared_sums` kernel, one per block.
#[derive(Clone, Debug, Default)]
pub(crate) struct SharedSums {
    /// Block `b` computes the elements `elems[eptr[b]..eptr[b + 1]]`.
    pub eptr: Vec<u32>,
    /// The elements of each block.
    pub elems: Vec<u32>,
    /// Block `b` adds to the nonzeros `nzs[zptr[b]..zptr[b + 1]]`.
    pub zptr: Vec<u32>,
    /// The CSR position of each nonzero of a block, with [`ONLY_HERE`] when no other block
    /// adds to it.
    pub nzs: Vec<u32>,
    /// Nonzero `t` sums the shared entries `lists[lptr[t]..lptr[t + 1]]`.
    pub lptr: Vec<u32>,
    /// Places in a block's shared buffer: local element × n² + entry.
    pub lists: Vec<u16>,
    /// The most elements of one block.
    pub emax: usize,
}

/// One block's set: its elements, and per nonzero (CSR position, with [`ONLY_HERE`] where
/// it applies) its shared entries.
pub(crate) struct BlockSet {
    pub elems: Vec<u32>,
    pub sums: Vec<(u32, Vec<u16>)>,
}

impl SharedSums {
    /// Concatenates the blocks' sets; fails when an index outgrows its `u32`.
    pub(crate) fn from_sets(sets: Vec<BlockSet>) -> Result<SharedSums, GpuError> {
        let too_large = |what: &str| GpuError::Unsupported(format!("{what} beyond 2^32"));
        let nsums: usize = sets.iter().map(|s| s.sums.len()).sum();
        let nlists: usize = sets
            .iter()
            .flat_map(|s| &s.sums)
            .map(|(_, l)| l.len())
            .sum();
        let nelems: usize = sets.iter().map(|s| s.elems.len()).sum();
        if nsums >= u32::MAX as usize || nlists >= u32::MAX as usize || nelems >= u32::MAX as usize
        {
            return Err(too_large("shared-sum entries"));
        }
        let mut out = SharedSums {
            eptr: Vec::with_capacity(sets.len() + 1),
            elems: Vec::with_capacity(nelems),
            zptr: Vec::with_capacity(sets.len() + 1),
            nzs: Vec::with_capacity(nsums),
            lptr: Vec::with_capacity(nsums + 1),
            lists: Vec::with_capacity(nlists),
            emax: 0,
        };
        out.eptr.push(0);
        out.zptr.push(0);
        out.lptr.push(0);
        for s in sets {
            out.emax = out.emax.max(s.elems.len());
            out.elems.extend_from_slice(&s.elems);
            out.eptr.push(out.elems.len() as u32);
            for (k, l) in s.sums {
                out.nzs.push(k);
                out.lists.extend_from_slice(&l);
                out.lptr.push(out.lists.len() as u32);
            }
            out.zptr.push(out.nzs.len() as u32);
        }
        Ok(out)
    }
}

/// Morton keys (21 bits per axis) of points (`d` coordinates each) scaled into their
/// bounding box.
pub(crate) fn morton_keys(points: &[f64], d: usize) -> Vec<u64> {
    let d = d.max(1);
    let mut lo = vec![f64::INFINITY; d];
    let mut hi = vec![f64::NEG_INFINITY; d];
    for x in points.chunks_exact(d) {
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
    let top = ((1u64 << 21) - 1) as f64;
    points
        .par_chunks_exact(d)
        .map(|x| {
            let q: Vec<u64> = (0..d)
                .map(|k| (((x[k] - lo[k]) * scale[k]).clamp(0.0, 1.0) * top) as u64)
                .collect();
            let mut key = 0u64;
            for bit in (0..21).rev() {
                for qk in &q {
                    key = (key << 1) | ((qk >> bit) & 1);
                }
            }
            key
        })
        .collect()
}

/// Checks that CSR positions leave [`ONLY_HERE`] free.
pub(crate) fn check_nnz(nnz: usize) -> Result<(), GpuError> {
    if nnz >= ONLY_HERE as usize {
        return Err(GpuError::Unsupported(format!(
            "{nnz} nonzeros: sums in shared memory address at most 2^31"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_keys_interleave_the_scaled_coordinates() {
        // corners of a rectangle: x takes the upper bit of each pair
        let keys = morton_keys(&[0.0, 0.0, 2.0, 0.0, 0.0, 1.0, 2.0, 1.0], 2);
        let all = (1u64 << 42) - 1;
        let x_bits = all & 0xaaaa_aaaa_aaaa;
        assert_eq!(keys, [0, x_bits, all ^ x_bits, all]);
    }

    #[test]
    fn sets_concatenate_with_their_offsets() {
        let s = SharedSums::from_sets(vec![
            BlockSet {
                elems: vec![3, 1],
                sums: vec![(7 | ONLY_HERE, vec![0, 5]), (2, vec![1])],
            },
            BlockSet {
                elems: vec![0],
                sums: vec![(2, vec![3])],
            },
        ])
        .unwrap();
        assert_eq!(s.eptr, [0, 2, 3]);
        assert_eq!(s.elems, [3, 1, 0]);
        assert_eq!(s.zptr, [0, 2, 3]);
        assert_eq!(s.nzs, [7 | ONLY_HERE, 2, 2]);
        assert_eq!(s.lptr, [0, 2, 3, 4]);
        assert_eq!(s.lists, [0, 5, 1, 3]);
        assert_eq!(s.emax, 2);
    }
}
