//! Element batches in lane layout and the 1-D contraction every kernel is made of.
//!
//! A batch holds [`LANES`] elements; every per-node or per-point value of the batch is a
//! `[T; LANES]` array (one entry per element), so that each arithmetic step of the sum
//! factorisation is a fixed-length loop over lanes that the compiler turns into SIMD
//! instructions of whatever width the target has, with no intrinsics.

use ferrofem_base::Real;

/// Elements processed together by one kernel call (the SIMD direction).
pub const LANES: usize = 8;

/// One value per element of a batch.
pub type Lane<T> = [T; LANES];

/// A cache line, the unit of [`AlignedLanes`]' storage.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct CacheLine([u8; 64]);

/// A zeroed array of lanes starting on a cache-line boundary, so that no lane load or store
/// is split across two lines (a `Vec<Lane<f64>>` from the allocator usually starts 16 bytes
/// into a line, and then every 64-byte lane straddles two).
pub(crate) struct AlignedLanes<T> {
    lines: Vec<CacheLine>,
    len: usize,
    _scalar: std::marker::PhantomData<T>,
}

impl<T: Real> AlignedLanes<T> {
    /// `len` zero lanes.
    pub(crate) fn new(len: usize) -> AlignedLanes<T> {
        let bytes = len * std::mem::size_of::<Lane<T>>();
        AlignedLanes {
            lines: vec![CacheLine([0; 64]); bytes.div_ceil(64)],
            len,
            _scalar: std::marker::PhantomData,
        }
    }
}

impl<T: Real> std::ops::Deref for AlignedLanes<T> {
    type Target = [Lane<T>];
    fn deref(&self) -> &[Lane<T>] {
        // SAFETY: the lines hold at least `len` lanes' bytes, are aligned more strictly than
        // a lane, and every bit pattern (zero included) is a valid float lane (`Real` is
        // implemented by `f32` and `f64` only).
        unsafe { std::slice::from_raw_parts(self.lines.as_ptr().cast(), self.len) }
    }
}

impl<T: Real> std::ops::DerefMut for AlignedLanes<T> {
    fn deref_mut(&mut self) -> &mut [Lane<T>] {
        // SAFETY: as in `deref`, and the borrow is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.lines.as_mut_ptr().cast(), self.len) }
    }
}

/// Placed in the body of a loop over points or nodes whose work is lane arithmetic, keeps
/// LLVM's loop vectorizer off that loop, so that the lanes (one element each) stay the
/// vector direction; each lane loop still becomes vector instructions. Without it the
/// AVX-512 instances vectorise such loops across points instead, reading one value of each
/// lane array per gather instruction: the 3-D `f64` kernels ran 1.2 to 2.6 times slower
/// than with it (Zen 5). An empty `asm!` reads and writes nothing, but the vectorizer does
/// not vectorise a loop that holds one.
#[inline(always)]
pub(crate) fn lanes_are_the_vector() {
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    // SAFETY: no instructions, no operands; memory, stack and flags are left alone.
    unsafe {
        std::arch::asm!("", options(nomem, nostack, preserves_flags));
    }
}

/// The all-zero lane.
#[inline(always)]
pub(crate) fn zero<T: Real>() -> Lane<T> {
    [T::zero(); LANES]
}

/// `acc + a b`, fused when `FMA` (only used where the target has FMA instructions, since
/// a software fused multiply-add is slow).
#[inline(always)]
pub(crate) fn madd<T: Real, const FMA: bool>(acc: T, a: T, b: T) -> T {
    if FMA {
        a.mul_add(b, acc)
    } else {
        acc + a * b
    }
}

/// One tensor contraction along a middle axis, for a whole batch:
/// `out[p][a][s] (+)= Σ_b m[a][b] · inp[p][b][s]` with `m` row-major `na × nb`,
/// `p < pre`, `s < post`. With `ADD` the result is added to `out`, otherwise it
/// overwrites it. Sizes are run-time arguments; the const-generic kernels pass constants,
/// and after inlining all loop bounds are known at compile time.
///
/// Rows of `m` are taken several at a time (up to eight for `f32`, whose lanes are one
/// register, four for `f64`), so each input lane array loaded feeds that many independent
/// accumulators (more arithmetic per load, no chain of dependent adds).
#[inline(always)]
pub(crate) fn contract<T: Real, const FMA: bool, const ADD: bool>(
    m: &[T],
    na: usize,
    nb: usize,
    pre: usize,
    post: usize,
    inp: &[Lane<T>],
    out: &mut [Lane<T>],
) {
    let m = &m[..na * nb];
    let inp = &inp[..pre * nb * post];
    let out = &mut out[..pre * na * post];
    for (ip, op) in inp
        .chunks_exact(nb * post)
        .zip(out.chunks_exact_mut(na * post))
    {
        for s in 0..post {
            lanes_are_the_vector();
            let mut a = 0;
            if T::BYTES == 4 {
                while a + 8 <= na {
                    rows::<T, FMA, ADD, 8>(m, a, nb, post, s, ip, op);
                    a += 8;
                }
                let rest = na - a;
                if rest >= 5 {
                    match rest {
                        7 => rows::<T, FMA, ADD, 7>(m, a, nb, post, s, ip, op),
                        6 => rows::<T, FMA, ADD, 6>(m, a, nb, post, s, ip, op),
                        _ => rows::<T, FMA, ADD, 5>(m, a, nb, post, s, ip, op),
                    }
                    a = na;
                }
            }
            while a + 4 <= na {
                rows::<T, FMA, ADD, 4>(m, a, nb, post, s, ip, op);
                a += 4;
            }
            match na - a {
                3 => rows::<T, FMA, ADD, 3>(m, a, nb, post, s, ip, op),
                2 => rows::<T, FMA, ADD, 2>(m, a, nb, post, s, ip, op),
                1 => rows::<T, FMA, ADD, 1>(m, a, nb, post, s, ip, op),
                _ => {}
            }
        }
    }
}

/// Outputs `a0..a0 + R` at position `s` of one `pre` slab (see [`contract`]).
#[inline(always)]
fn rows<T: Real, const FMA: bool, const ADD: bool, const R: usize>(
    m: &[T],
    a0: usize,
    nb: usize,
    post: usize,
    s: usize,
    ip: &[Lane<T>],
    op: &mut [Lane<T>],
) {
    let mrows: [&[T]; R] = std::array::from_fn(|r| &m[(a0 + r) * nb..(a0 + r + 1) * nb]);
    let mut acc: [Lane<T>; R] = if ADD {
        std::array::from_fn(|r| op[(a0 + r) * post + s])
    } else {
        [zero(); R]
    };
    for b in 0..nb {
        let x = ip[b * post + s];
        for r in 0..R {
            let mab = mrows[r][b];
            for l in 0..LANES {
                acc[r][l] = madd::<T, FMA>(acc[r][l], mab, x[l]);
            }
        }
    }
    for r in 0..R {
        op[(a0 + r) * post + s] = acc[r];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contraction_matches_index_formula() {
        let (na, nb, pre, post) = (3, 4, 2, 5);
        let m: Vec<f64> = (0..na * nb).map(|i| (i as f64 * 0.37).sin()).collect();
        let inp: Vec<Lane<f64>> = (0..pre * nb * post)
            .map(|i| std::array::from_fn(|l| ((i * LANES + l) as f64 * 0.11).cos()))
            .collect();
        let mut out = vec![[1.0; LANES]; pre * na * post];
        contract::<f64, false, true>(&m, na, nb, pre, post, &inp, &mut out);
        for p in 0..pre {
            for a in 0..na {
                for s in 0..post {
                    for l in 0..LANES {
                        let want: f64 = 1.0
                            + (0..nb)
                                .map(|b| m[a * nb + b] * inp[(p * nb + b) * post + s][l])
                                .sum::<f64>();
                        let got = out[(p * na + a) * post + s][l];
                        assert!((got - want).abs() < 1e-14);
                    }
                }
            }
        }
    }
}
