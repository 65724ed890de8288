//! A wave problem file run over several ranks (`mpirun -np N ferrofem wave FILE.toml`):
//! rank 0 loads the mesh, partitions it and hands every rank its part
//! ([`ferrofem_dist::scatter_parts`]); every rank reads the same file, sets the problem up
//! on its own cells and steps them, summing interface values with its neighbours at every
//! step; rank 0 writes the gathered seismograms and reports. The whole mesh never reaches
//! the other ranks.

use super::run::{component_names, write_seismograms};
use super::WaveReport;
use crate::backend::BackendArg;
use crate::file::ProblemFile;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use ferrofem_dist::{scatter_parts, Communicator, WavePartition};
use ferrofem_wave::{Progress, Simulation};
use std::sync::Arc;
use std::time::Instant;

/// Runs the wave problem of `file` with its cells split over the ranks of `comm`, with the
/// command line's precision and backend, when given, over the file's. Collective: every
/// rank calls it; `progress` is called on rank 0 only. Returns the report of the whole run
/// (on every rank) and the mesh's origin.
///
/// The steps run on the CPU: `backend = "cuda"` is refused, `auto` says so in the
/// report's note. Snapshots are refused (a distributed run writes no VTU pieces yet).
pub fn run_wave_on_ranks<C: Communicator + Send + Sync + 'static>(
    comm: Arc<C>,
    file: &ProblemFile,
    precision: Option<Precision>,
    backend: Option<BackendArg>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(WaveReport, String), PipelineError> {
    let def = file.wave_definition()?;
    let backend = backend.unwrap_or(def.backend);
    let note = match backend {
        BackendArg::Cuda => {
            return Err(PipelineError::Unsupported(format!(
                "a wave run on {} ranks steps on the CPU: the GPU time loop runs on one \
                 process (use --backend cpu or auto, or run on one rank)",
                comm.size()
            )))
        }
        BackendArg::Auto => Some(format!(
            "{} ranks: the distributed time loop runs on the CPU",
            comm.size()
        )),
        BackendArg::Cpu => None,
    };
    if def.outputs.snapshots.is_some() {
        return Err(PipelineError::Unsupported(format!(
            "[output] snapshots: a run on {} ranks writes no snapshots yet (run it on one \
             rank for snapshots, or leave them out)",
            comm.size()
        )));
    }
    if comm.rank() == 0 {
        def.outputs.check_writable()?;
    }
    let t0 = Instant::now();
    let (part, origin, elements) = if comm.rank() == 0 {
        let loaded = def.mesh.load()?;
        let part = scatter_parts(&*comm, Some(&loaded.mesh))?;
        (part, loaded.origin, loaded.mesh.num_cells())
    } else {
        (scatter_parts(&*comm, None)?, String::new(), 0)
    };
    let part = Arc::new(part);
    let setup = file.wave_setup_on(&part.mesh, &def)?;
    let partition = WavePartition::new(comm.clone(), part.clone())?;
    let precision = precision.unwrap_or(def.precision);
    let mut run = match precision {
        Precision::F64 => Run::F64(Simulation::<f64>::on_part(&part.mesh, &setup, &partition)?),
        Precision::F32 => Run::F32(Simulation::<f32>::on_part(&part.mesh, &setup, &partition)?),
    };
    let setup_seconds = t0.elapsed().as_secs_f64();

    let (steps, check_every) = (run.steps(), run.check_every());
    let start = Instant::now();
    while run.step_count() < steps {
        let target = ((run.step_count() / check_every + 1) * check_every).min(steps);
        run.run_to(target)?;
        if comm.rank() == 0 {
            progress(&Progress {
                step: run.step_count(),
                steps,
                time: run.time(),
                energy: run.energy(),
            });
        }
    }
    let step_seconds = start.elapsed().as_secs_f64();

    let start = Instant::now();
    let samples = run.gathered_seismograms()?;
    let (dt, stable_dt, receivers) = run.timing_and_receivers();
    let dim = part.mesh.dim();
    let names = component_names(setup.kind, dim);
    let mut files = Vec::new();
    if let (0, Some(prefix)) = (comm.rank(), &def.outputs.seismograms) {
        if !receivers.is_empty() {
            files = write_seismograms(
                &receivers,
                dt,
                &samples,
                prefix,
                &def.outputs.formats,
                &names,
                def.outputs.plots,
            )?;
        }
    }
    let output_seconds = start.elapsed().as_secs_f64();
    // the whole run's sizes, and the slowest rank's times
    let elements = comm.sum(elements as f64)? as usize;
    let dofs = comm.sum(run.owned_dofs() as f64)? as usize;
    let slowest = |s: f64| comm.min(-s).map(|m| -m);
    let (setup_seconds, step_seconds, output_seconds) = (
        slowest(setup_seconds)?,
        slowest(step_seconds)?,
        slowest(output_seconds)?,
    );
    let report = WaveReport {
        kind: setup.kind.name(),
        dim,
        order: setup.order,
        elements,
        dofs,
        precision: precision.name(),
        backend: "cpu",
        backend_note: note,
        ranks: comm.size(),
        dt,
        stable_dt,
        steps,
        duration: run.time(),
        sources: setup.sources.len(),
        receivers: receivers.len(),
        setup_seconds,
        step_seconds,
        output_seconds,
        seconds_per_element_step: step_seconds / (elements as f64 * steps as f64),
        energy: run.energy(),
        files,
    };
    Ok((report, origin))
}

/// The rank's simulation in the precision asked for.
enum Run {
    F64(Simulation<f64>),
    F32(Simulation<f32>),
}

macro_rules! each {
    ($run:expr, $sim:ident => $e:expr) => {
        match $run {
            Run::F64($sim) => $e,
            Run::F32($sim) => $e,
        }
    };
}

impl Run {
    fn steps(&self) -> usize {
        each!(self, s => s.steps())
    }
    fn check_every(&self) -> usize {
        each!(self, s => s.check_every().max(1))
    }
    fn step_count(&self) -> usize {
        each!(self, s => s.step_count())
    }
    fn time(&self) -> f64 {
        each!(self, s => s.time())
    }
    fn energy(&self) -> f64 {
        each!(self, s => s.energy())
    }
    /// Steps to `target`, checking the energy (collective) after the last one.
    fn run_to(&mut self, target: usize) -> Result<(), PipelineError> {
        each!(self, s => rayon::scope(|_| -> Result<(), PipelineError> {
            while s.step_count() < target {
                s.advance(s.step_count() + 1 == target)?;
            }
            Ok(())
        }))
    }
    /// The seismograms of every rank's receivers (collective).
    fn gathered_seismograms(&self) -> Result<Vec<f64>, PipelineError> {
        Ok(each!(self, s => s.gathered_seismograms())?)
    }
    fn timing_and_receivers(&self) -> (f64, f64, Vec<ferrofem_wave::Receiver>) {
        each!(self, s => (s.dt(), s.stable_step().bound, s.receivers().to_vec()))
    }
    /// Dofs of the nodes this rank owns.
    fn owned_dofs(&self) -> usize {
        each!(self, s => s.owned_nodes() * s.components())
    }
}
