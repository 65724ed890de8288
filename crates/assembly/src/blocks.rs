//! Splitting CSR-like arrays into disjoint row blocks, so that threads can fill or
//! accumulate whole rows without sharing memory.

use crate::AssemblyError;
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::ops::Range;

/// Rows per parallel work item in row-wise loops: large enough to amortise scheduling,
/// small enough to balance rows of unequal length.
pub(crate) const ROW_BLOCK: usize = 512;

/// Splits `data` (the entries of rows `0..nrows`, row `r` at `ptr[r]..ptr[r + 1]`) into
/// the pieces of consecutive row blocks of `block` rows. Returns each block's row range
/// with its entries.
pub(crate) fn split_rows<'a, T>(
    mut data: &'a mut [T],
    ptr: &[usize],
    block: usize,
) -> Vec<(Range<usize>, &'a mut [T])> {
    let nrows = ptr.len() - 1;
    debug_assert_eq!(ptr[nrows] - ptr[0], data.len());
    let mut out = Vec::with_capacity(nrows.div_ceil(block));
    let mut r0 = 0;
    while r0 < nrows {
        let r1 = (r0 + block).min(nrows);
        let (head, tail) = std::mem::take(&mut data).split_at_mut(ptr[r1] - ptr[r0]);
        out.push((r0..r1, head));
        data = tail;
        r0 = r1;
    }
    out
}

/// `a == b`, compared in parallel chunks (used to check large index arrays on every
/// assembly without a serial pass).
pub(crate) fn par_eq<T: PartialEq + Sync>(a: &[T], b: &[T]) -> bool {
    const CHUNK: usize = 1 << 15;
    a.len() == b.len()
        && a.par_chunks(CHUNK)
            .zip(b.par_chunks(CHUNK))
            .all(|(x, y)| x == y)
}

/// Exclusive prefix sum of `lens`: `nrows + 1` offsets starting at 0.
pub(crate) fn offsets_of(lens: &[usize]) -> Vec<usize> {
    let mut ptr = Vec::with_capacity(lens.len() + 1);
    let mut acc = 0usize;
    ptr.push(0);
    for &l in lens {
        acc += l;
        ptr.push(acc);
    }
    ptr
}

/// An empty vector with room for `len` entries, or an out-of-memory error naming `what`.
pub(crate) fn try_alloc<T>(len: usize, what: &'static str) -> Result<Vec<T>, AssemblyError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| AssemblyError::OutOfMemory {
            what,
            bytes: len.saturating_mul(std::mem::size_of::<T>()),
        })?;
    Ok(v)
}

/// A new vector of `len` entries whose consecutive chunks of `chunk` entries are zeroed and
/// then filled by `fill(state, chunk_index, chunk)` in parallel, so that its pages are
/// first touched by the threads that fill them (no serial zeroing pass over a large
/// buffer). `init` makes per-thread scratch state.
pub(crate) fn par_new_chunks<T, S, I, F>(
    len: usize,
    chunk: usize,
    zero: T,
    what: &'static str,
    init: I,
    fill: F,
) -> Result<Vec<T>, AssemblyError>
where
    T: Copy + Send + Sync,
    I: Fn() -> S + Sync + Send,
    F: Fn(&mut S, usize, &mut [T]) + Sync + Send,
{
    let mut v = try_alloc::<T>(len, what)?;
    v.spare_capacity_mut()[..len]
        .par_chunks_mut(chunk)
        .enumerate()
        .for_each_init(init, |state, (i, c)| {
            for x in c.iter_mut() {
                x.write(zero);
            }
            // SAFETY: every entry of `c` was initialised just above, and `MaybeUninit<T>`
            // has the layout of `T`.
            let c = unsafe { &mut *(c as *mut [MaybeUninit<T>] as *mut [T]) };
            fill(state, i, c);
        });
    // SAFETY: the chunks cover `0..len`, all initialised above (the capacity is at least
    // `len` by `try_alloc`).
    unsafe { v.set_len(len) };
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_rows_exactly() {
        let ptr = offsets_of(&[2, 0, 3, 1, 4]);
        assert_eq!(ptr, vec![0, 2, 2, 5, 6, 10]);
        let mut data: Vec<usize> = (0..10).collect();
        let parts = split_rows(&mut data, &ptr, 2);
        let ranges: Vec<_> = parts.iter().map(|(r, s)| (r.clone(), s.len())).collect();
        assert_eq!(ranges, vec![(0..2, 2), (2..4, 4), (4..5, 4)]);
        assert_eq!(parts[1].1[0], 2);
    }
}
