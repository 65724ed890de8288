//! A wave problem file run over several ranks (`mpirun -np N ferrofem wave FILE.toml`):
//! rank 0 loads the mesh, partitions it and hands every rank its part
//! ([`ferrofem_dist::scatter_parts`]); every rank reads the same file, sets the problem up
//! on its own cells and steps them, summing interface values with its neighbours at every
//! step; every rank writes its piece of each snapshot, rank 0 the gathered seismograms,
//! the `.pvtu` and `.pvd` files and the report. The whole mesh never reaches the other
//! ranks.

use super::run::{component_names, file_name, next_stop, sibling, write_seismograms};
#[cfg(feature = "cuda")]
use super::stepper::GpuStepper;
use super::stepper::{WaveReal, WaveStepper};
use super::WaveReport;
use crate::backend::{select_for_rank, Backend, BackendArg};
use crate::file::ProblemFile;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use ferrofem_dist::{scatter_parts, Communicator, LocalPart, WavePartition};
use ferrofem_io::{write_pvd, write_space_pvtu, write_space_vtu_piece, Encoding};
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use ferrofem_wave::{NodeExchange, Progress, Simulation, WavePart, WaveSetup};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Runs the wave problem of `file` with its cells split over the ranks of `comm`, with the
/// command line's precision and backend, when given, over the file's. Collective: every
/// rank calls it; `progress` is called on rank 0 only. Returns the report of the whole run
/// (on every rank) and the mesh's origin.
///
/// With `cuda`, every rank steps on its machine's GPU of its place among the machine's
/// ranks, exchanging the interface sums through NCCL or host memory; with `cpu` or `auto`,
/// on the CPU. Snapshots are written as one `.vtu` piece per rank and step, a `.pvtu` over
/// them and the `.pvd` series of the `.pvtu` files.
pub fn run_wave_on_ranks<C: Communicator + Send + Sync + 'static>(
    comm: Arc<C>,
    file: &ProblemFile,
    precision: Option<Precision>,
    backend: Option<BackendArg>,
    progress: &mut dyn FnMut(&Progress),
) -> Result<(WaveReport, String), PipelineError> {
    let def = file.wave_definition()?;
    let requested = backend.unwrap_or(def.backend);
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
    // `auto` steps on the CPU here: runs on GPU ranks are asked for with `cuda` while an
    // intermittent stall of two-GPU f64 runs is open (docs/distribution.md)
    let (requested, auto_note) = match requested {
        BackendArg::Auto => (
            BackendArg::Cpu,
            Some(
                "on several ranks `auto` steps on the CPU; --backend cuda steps on the ranks' GPUs",
            ),
        ),
        b => (b, None),
    };
    // every rank opens its machine's GPU of its place there (or runs on the CPU)
    let chosen = select_for_rank(requested, comm.node_rank())?;
    let mut run = match precision {
        Precision::F64 => Run::new::<f64>(&part.mesh, &setup, &partition, &chosen)?,
        Precision::F32 => Run::new::<f32>(&part.mesh, &setup, &partition, &chosen)?,
    };
    let mut notes: Vec<String> = auto_note.map(String::from).into_iter().collect();
    match run.transport {
        Some("NCCL") => notes.push("interface sums exchanged GPU to GPU through NCCL".into()),
        Some(_) => {
            notes.push("interface sums exchanged through page-locked host memory and MPI".into())
        }
        None => {}
    }
    if def.outputs.snapshots.is_some() && def.outputs.plots {
        notes.push(
            "snapshots are written as .pvtu pieces, drawn as PNG by one-rank runs only".into(),
        );
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    let backend_name = if run.on_gpu { "cuda" } else { "cpu" };
    let setup_seconds = t0.elapsed().as_secs_f64();

    let (steps, check_every) = (run.steps(), run.check_every());
    let out = &def.outputs;
    let every = out.every.unwrap_or((steps / 20).max(1));
    let mut snapshots = Snapshots {
        comm: &*comm,
        part: &part,
        series: Vec::new(),
        files: Vec::new(),
        seconds: 0.0,
    };
    if let Some(pvd) = &out.snapshots {
        snapshots.write(pvd, &run)?;
    }
    let mut step_seconds = 0.0;
    while run.step_count() < steps {
        let (target, check) = next_stop(run.step_count(), check_every, every, steps);
        let start = Instant::now();
        run.run_to(target, check)?;
        step_seconds += start.elapsed().as_secs_f64();
        if check && comm.rank() == 0 {
            progress(&Progress {
                step: run.step_count(),
                steps,
                time: run.time(),
                energy: run.energy(),
            });
        }
        if let Some(pvd) = &out.snapshots {
            if run.step_count() % every == 0 || run.step_count() == steps {
                snapshots.write(pvd, &run)?;
            }
        }
    }

    let start = Instant::now();
    let mut files = std::mem::take(&mut snapshots.files);
    if let (0, Some(pvd)) = (comm.rank(), &out.snapshots) {
        write_pvd(pvd, &snapshots.series)?;
        files.push(pvd.display().to_string());
    }
    let snapshot_seconds = snapshots.seconds;
    let samples = run.gathered_seismograms()?;
    let (dt, stable_dt, receivers) = run.timing_and_receivers();
    let dim = part.mesh.dim();
    let names = component_names(setup.kind, dim);
    if let (0, Some(prefix)) = (comm.rank(), &def.outputs.seismograms) {
        if !receivers.is_empty() {
            files.extend(write_seismograms(
                &receivers,
                dt,
                &samples,
                prefix,
                &def.outputs.formats,
                &names,
                def.outputs.plots,
            )?);
        }
    }
    let output_seconds = snapshot_seconds + start.elapsed().as_secs_f64();
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
        backend: backend_name,
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

/// The rank's time loop (on the CPU or its GPU) and what the whole run's outputs need of
/// it.
struct Run {
    stepper: Box<dyn WaveStepper>,
    exchange: Arc<dyn NodeExchange>,
    /// Dofs of the nodes this rank owns.
    owned_dofs: usize,
    on_gpu: bool,
    /// On GPUs, how the interface sums travel (`"NCCL"` or `"host"`).
    transport: Option<&'static str>,
}

impl Run {
    /// The simulation of `mesh` (this rank's part) on `backend`. Collective.
    fn new<T: WaveReal>(
        mesh: &Mesh,
        setup: &WaveSetup,
        part: &dyn WavePart,
        backend: &Backend,
    ) -> Result<Run, PipelineError> {
        let link = |sim: &Simulation<T>| -> Result<(Arc<dyn NodeExchange>, usize), PipelineError> {
            let exchange = sim.exchange().cloned().ok_or_else(|| {
                PipelineError::Wave(ferrofem_wave::WaveError::Invalid(
                    "a part's simulation without its exchange".into(),
                ))
            })?;
            Ok((exchange, sim.owned_nodes() * sim.components()))
        };
        match backend {
            Backend::Cpu { .. } => {
                let sim = Simulation::<T>::on_part(mesh, setup, part)?;
                let (exchange, owned_dofs) = link(&sim)?;
                Ok(Run {
                    stepper: Box::new(sim),
                    exchange,
                    owned_dofs,
                    on_gpu: false,
                    transport: None,
                })
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(dev) => {
                let sim = Simulation::<T>::for_device_on_part(mesh, setup, part)?;
                let (exchange, owned_dofs) = link(&sim)?;
                let gpu = ferrofem_cuda::wave::GpuWave::new(dev, &sim)?;
                let transport = gpu.halo_transport();
                Ok(Run {
                    stepper: Box::new(GpuStepper { sim, gpu }),
                    exchange,
                    owned_dofs,
                    on_gpu: true,
                    transport,
                })
            }
        }
    }
    fn steps(&self) -> usize {
        self.stepper.simulation().steps()
    }
    fn check_every(&self) -> usize {
        self.stepper.simulation().check_every().max(1)
    }
    fn step_count(&self) -> usize {
        self.stepper.step_count()
    }
    fn time(&self) -> f64 {
        self.stepper.time()
    }
    fn energy(&self) -> f64 {
        self.stepper.energy()
    }
    /// Steps to `target`, checking the energy (collective) after the last one when
    /// `check`.
    fn run_to(&mut self, target: usize, check: bool) -> Result<(), PipelineError> {
        self.stepper.run_to(target, check)
    }
    fn space(&self) -> &H1Space {
        self.stepper.simulation().space()
    }
    fn field(&self) -> Result<Vec<f64>, PipelineError> {
        self.stepper.field()
    }
    /// The seismograms of every rank's receivers (collective): each receiver is recorded
    /// by one rank, zero on the others.
    fn gathered_seismograms(&mut self) -> Result<Vec<f64>, PipelineError> {
        let mut all = self.stepper.seismograms()?;
        self.exchange.sum_all(&mut all)?;
        Ok(all)
    }
    fn timing_and_receivers(&self) -> (f64, f64, Vec<ferrofem_wave::Receiver>) {
        let sim = self.stepper.simulation();
        (sim.dt(), sim.stable_bound(), sim.receivers().to_vec())
    }
    /// Dofs of the nodes this rank owns.
    fn owned_dofs(&self) -> usize {
        self.owned_dofs
    }
}

/// The snapshots of a distributed run: every rank writes its piece of each, rank 0 the
/// `.pvtu` over the pieces and the series.
struct Snapshots<'a, C> {
    comm: &'a C,
    part: &'a LocalPart,
    /// `(time, .pvtu name)` on rank 0.
    series: Vec<(f64, String)>,
    files: Vec<String>,
    seconds: f64,
}

impl<C: Communicator> Snapshots<'_, C> {
    /// Writes the current field: `<stem>_<step>_p<rank>.vtu` beside `pvd`, and on rank 0
    /// `<stem>_<step>.pvtu`.
    fn write(&mut self, pvd: &Path, run: &Run) -> Result<(), PipelineError> {
        let start = Instant::now();
        let k = run.step_count();
        let space = run.space();
        let name = if space.ncomp() == 1 { "p" } else { "u" };
        let piece = |r: usize| sibling(pvd, &format!("{k:07}_p{r}.vtu"));
        let field = run.field()?;
        write_space_vtu_piece(
            piece(self.comm.rank()),
            &self.part.mesh,
            space,
            &[(name, &field)],
            &self.part.cell_global,
            Encoding::Binary,
        )?;
        if self.comm.rank() == 0 {
            let pvtu = sibling(pvd, &format!("{k:07}.pvtu"));
            let pieces: Vec<String> = (0..self.comm.size())
                .map(|r| file_name(&piece(r)))
                .collect();
            write_space_pvtu(&pvtu, &pieces, &[(name, space.ncomp())])?;
            self.series.push((run.time(), file_name(&pvtu)));
            self.files.push(pvtu.display().to_string());
        }
        self.seconds += start.elapsed().as_secs_f64();
        Ok(())
    }
}
