//! The empirical copy bandwidth of the CPU: the roofline that operator throughput is
//! compared with (the paper calibrates its roofline with device-to-device copies; this is
//! the host twin).

use rayon::prelude::*;
use std::time::Instant;

/// Timed repetitions after the warm-up; the median is reported.
const REPEATS: usize = 9;
/// Bytes copied by one task.
const CHUNK_BYTES: usize = 1 << 20;

/// Measures the copy bandwidth in GB/s (bytes read plus bytes written, per second) of a
/// parallel copy of a `bytes`-sized buffer into another, with `threads` rayon threads
/// (`0`: the global pool). Both buffers are first touched by the copying threads; the
/// result is the median of several timed copies after one warm-up. Pick `bytes` well
/// above the last-level cache (e.g. 256 MiB) to measure memory rather than cache.
///
/// Returns 0 for an empty buffer.
pub fn measure_copy_bandwidth(bytes: usize, threads: usize) -> f64 {
    let len = bytes / std::mem::size_of::<f64>();
    if len == 0 {
        return 0.0;
    }
    let run = || copy_bandwidth(len);
    if threads == 0 {
        return run();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(run),
        // a pool that cannot be built (resource limits) falls back to the global one
        Err(_) => run(),
    }
}

fn copy_bandwidth(len: usize) -> f64 {
    let chunk = CHUNK_BYTES / std::mem::size_of::<f64>();
    // first touch in parallel, so pages are placed where the copying threads run
    let mut src: Vec<f64> = Vec::with_capacity(len);
    src.par_extend((0..len).into_par_iter().map(|i| i as f64));
    let mut dst: Vec<f64> = Vec::with_capacity(len);
    dst.par_extend((0..len).into_par_iter().map(|_| 0.0));
    let copy = |dst: &mut [f64]| {
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| d.copy_from_slice(s));
    };
    copy(&mut dst);
    let mut times: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            copy(&mut dst);
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    let median = times[REPEATS / 2].max(f64::MIN_POSITIVE);
    std::hint::black_box(&dst);
    2.0 * (len * std::mem::size_of::<f64>()) as f64 / median / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_bandwidth_is_positive_and_finite() {
        let bw = measure_copy_bandwidth(8 << 20, 1);
        assert!(bw.is_finite() && bw > 0.1, "{bw} GB/s");
        assert_eq!(measure_copy_bandwidth(0, 1), 0.0);
    }
}
