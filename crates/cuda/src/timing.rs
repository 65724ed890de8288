//! Timing GPU work with CUDA events.

use crate::{GpuDevice, GpuError};
use std::sync::Arc;

/// Times closures that queue work on a device's stream, with events around each repeat.
pub struct GpuTimer {
    dev: Arc<GpuDevice>,
}

impl GpuTimer {
    /// A timer for `dev`.
    pub fn new(dev: &Arc<GpuDevice>) -> GpuTimer {
        GpuTimer { dev: dev.clone() }
    }

    /// Runs `work` `warmup` times untimed, then `reps` times, each between two events;
    /// returns the seconds of each timed repeat.
    pub fn time<F>(&self, warmup: usize, reps: usize, mut work: F) -> Result<Vec<f64>, GpuError>
    where
        F: FnMut() -> Result<(), GpuError>,
    {
        for _ in 0..warmup {
            work()?;
        }
        self.dev.synchronize()?;
        let ctx = self.dev.context();
        let stream = self.dev.stream();
        let mut out = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start = ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| GpuError::driver("creating an event", e))?;
            let stop = ctx
                .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(|e| GpuError::driver("creating an event", e))?;
            start
                .record(stream)
                .map_err(|e| GpuError::driver("recording an event", e))?;
            work()?;
            stop.record(stream)
                .map_err(|e| GpuError::driver("recording an event", e))?;
            stop.synchronize()
                .map_err(|e| GpuError::driver("waiting for an event", e))?;
            let ms = start
                .elapsed_ms(&stop)
                .map_err(|e| GpuError::driver("reading an event", e))?;
            out.push(ms as f64 * 1e-3);
        }
        Ok(out)
    }
}

/// Median of a non-empty list (0 for an empty one).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}
