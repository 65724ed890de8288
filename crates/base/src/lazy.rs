//! Values computed on first use, safely from inside a thread pool.
//!
//! `OnceLock::get_or_init` runs its initialiser while the cell is marked as being
//! initialised. When the initialiser itself runs on the rayon pool, the thread that runs it
//! waits for its parallel work and, while waiting, may take up another queued task; if that
//! task asks for the same cell it waits for an initialisation further down its own stack,
//! and the program hangs. [`get_or_compute`] computes outside the cell and only stores the
//! result inside it.

use std::sync::OnceLock;

/// The value of `cell`, computed by `compute` if the cell is empty. Several threads that
/// find it empty at once may each compute it; the first to store it wins and the others'
/// values are dropped. No thread ever waits on a computation in progress, so `compute` may
/// run parallel work.
pub fn get_or_compute<T>(cell: &OnceLock<T>, compute: impl FnOnce() -> T) -> &T {
    if let Some(v) = cell.get() {
        return v;
    }
    let value = compute();
    cell.get_or_init(|| value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn computes_once_when_asked_in_turn() {
        let cell = OnceLock::new();
        let calls = AtomicUsize::new(0);
        let f = || {
            calls.fetch_add(1, Ordering::Relaxed);
            7
        };
        assert_eq!(*get_or_compute(&cell, f), 7);
        assert_eq!(*get_or_compute(&cell, || 8), 7);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    /// The pattern that hangs with `get_or_init`: a parallel initialiser while other tasks
    /// of the same pool ask for the same cell.
    #[test]
    fn a_parallel_initialiser_asked_for_from_the_pool_returns() {
        use rayon::prelude::*;
        for _ in 0..20 {
            let cell: OnceLock<Vec<u64>> = OnceLock::new();
            let sums: Vec<u64> = (0..64u64)
                .into_par_iter()
                .map(|i| {
                    let v = get_or_compute(&cell, || (0..20_000u64).into_par_iter().collect());
                    v[i as usize] + v.len() as u64
                })
                .collect();
            assert_eq!(sums, (0..64u64).map(|i| i + 20_000).collect::<Vec<_>>());
        }
    }
}
