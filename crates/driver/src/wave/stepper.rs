//! Where a wave run's steps happen: the CPU time loop ([`Simulation`]) or the device's
//! ([`GpuWave`](ferrofem_cuda::wave::GpuWave)), behind one interface for the run loop.

use crate::pipeline_error::PipelineError;
use ferrofem_base::Real;
use ferrofem_space::H1Space;
use ferrofem_wave::{Receiver, Simulation};

/// A field scalar of a wave run: `f32` or `f64` (and, with the GPU backend, a device
/// scalar).
#[cfg(feature = "cuda")]
pub trait WaveReal: ferrofem_cuda::GpuReal {}
/// A field scalar of a wave run: `f32` or `f64`.
#[cfg(not(feature = "cuda"))]
pub trait WaveReal: Real {}
impl WaveReal for f32 {}
impl WaveReal for f64 {}

/// What the run loop needs from a time loop.
pub(crate) trait WaveStepper {
    /// The set-up (space, receivers, step) of the run.
    fn simulation(&self) -> &dyn SimulationInfo;
    /// Steps done.
    fn step_count(&self) -> usize;
    /// The time reached (s).
    fn time(&self) -> f64;
    /// The discrete energy at the last check.
    fn energy(&self) -> f64;
    /// Runs up to step `target`, checking the energy after the last one when `check`;
    /// returns when the steps are done.
    fn run_to(&mut self, target: usize, check: bool) -> Result<(), PipelineError>;
    /// The current field in the space's numbering.
    fn field(&self) -> Result<Vec<f64>, PipelineError>;
    /// A snapshot of the current field: returned at once where taking it costs nothing
    /// (the CPU), else started beside the next steps and returned by
    /// [`take_snapshot`](Self::take_snapshot).
    fn request_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError>;
    /// The snapshot started last, if any (waits for its copy).
    fn take_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError>;
    /// The seismograms so far, `[receiver][component][sample]`.
    fn seismograms(&mut self) -> Result<Vec<f64>, PipelineError>;
}

/// A field at a step, for the output.
pub(crate) struct Snapshot {
    /// Its step.
    pub step: usize,
    /// Its time (s).
    pub time: f64,
    /// The field in the space's numbering.
    pub field: Vec<f64>,
}

/// The set-up of a run, whatever its precision.
pub(crate) trait SimulationInfo {
    fn space(&self) -> &H1Space;
    fn receivers(&self) -> &[Receiver];
    fn dt(&self) -> f64;
    fn steps(&self) -> usize;
    fn check_every(&self) -> usize;
    fn stable_bound(&self) -> f64;
}

impl<T: Real> SimulationInfo for Simulation<T> {
    fn space(&self) -> &H1Space {
        Simulation::space(self)
    }
    fn receivers(&self) -> &[Receiver] {
        Simulation::receivers(self)
    }
    fn dt(&self) -> f64 {
        Simulation::dt(self)
    }
    fn steps(&self) -> usize {
        Simulation::steps(self)
    }
    fn check_every(&self) -> usize {
        Simulation::check_every(self)
    }
    fn stable_bound(&self) -> f64 {
        self.stable_step().bound
    }
}

impl<T: Real> WaveStepper for Simulation<T> {
    fn simulation(&self) -> &dyn SimulationInfo {
        self
    }
    fn step_count(&self) -> usize {
        Simulation::step_count(self)
    }
    fn time(&self) -> f64 {
        Simulation::time(self)
    }
    fn energy(&self) -> f64 {
        Simulation::energy(self)
    }
    fn run_to(&mut self, target: usize, check: bool) -> Result<(), PipelineError> {
        // the steps run on a thread of the pool, so that the kernels' parallel loops start
        // there instead of waking the pool from outside at every loop of every step (which
        // costs 10-20 % of a small step)
        rayon::scope(|_| -> Result<(), PipelineError> {
            while self.step_count() < target {
                self.advance(check && self.step_count() + 1 == target)?;
            }
            Ok(())
        })
    }
    fn field(&self) -> Result<Vec<f64>, PipelineError> {
        Ok(Simulation::field(self).iter().map(|v| v.as_f64()).collect())
    }
    fn request_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError> {
        Ok(Some(Snapshot {
            step: Simulation::step_count(self),
            time: Simulation::time(self),
            field: WaveStepper::field(self)?,
        }))
    }
    fn take_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError> {
        Ok(None)
    }
    fn seismograms(&mut self) -> Result<Vec<f64>, PipelineError> {
        Ok(Simulation::seismograms(self).to_vec())
    }
}

/// The device's time loop, with the host set-up it was built from.
#[cfg(feature = "cuda")]
pub(crate) struct GpuStepper<T: ferrofem_cuda::GpuReal> {
    pub sim: Simulation<T>,
    pub gpu: ferrofem_cuda::wave::GpuWave<T>,
}

#[cfg(feature = "cuda")]
impl<T: ferrofem_cuda::GpuReal> WaveStepper for GpuStepper<T> {
    fn simulation(&self) -> &dyn SimulationInfo {
        &self.sim
    }
    fn step_count(&self) -> usize {
        self.gpu.step_count()
    }
    fn time(&self) -> f64 {
        self.gpu.time()
    }
    fn energy(&self) -> f64 {
        self.gpu.energy()
    }
    fn run_to(&mut self, target: usize, check: bool) -> Result<(), PipelineError> {
        use ferrofem_cuda::wave::GpuWaveError;
        let r = self.gpu.run_to(target, check).and_then(|()| {
            self.gpu.synchronize()?;
            Ok(())
        });
        r.map_err(|e| match e {
            GpuWaveError::Gpu(g) => PipelineError::Gpu(g),
            GpuWaveError::Wave(w) => PipelineError::Wave(w),
        })
    }
    fn field(&self) -> Result<Vec<f64>, PipelineError> {
        Ok(self.gpu.field()?.iter().map(|v| v.as_f64()).collect())
    }
    fn request_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError> {
        self.gpu.request_snapshot()?;
        Ok(None)
    }
    fn take_snapshot(&mut self) -> Result<Option<Snapshot>, PipelineError> {
        Ok(self
            .gpu
            .take_snapshot()?
            .map(|(step, time, field)| Snapshot {
                step,
                time,
                field: field.iter().map(|v| v.as_f64()).collect(),
            }))
    }
    fn seismograms(&mut self) -> Result<Vec<f64>, PipelineError> {
        Ok(self.gpu.seismograms()?.to_vec())
    }
}
