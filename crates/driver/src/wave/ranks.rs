//! A wave problem file run over several ranks (`mpirun -np N ferrofem wave FILE.toml`):
//! rank 0 loads the mesh, partitions it and hands every rank its part
//! ([`ferrofem_dist::scatter_parts`]); every rank reads the same file, sets the problem up
//! on its own cells and steps them, summing interface values with its neighbours at every
//! step; every rank writes its piece of each snapshot, rank 0 the gathered seismograms,
//! the `.pvtu` and `.pvd` files and the report. The whole mesh never reaches the other
//! ranks.

use super::run::{component_names, file_name, next_stop, sibling, write_seismograms};
use super::WaveReport;
use crate::backend::BackendArg;
use crate::file::ProblemFile;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use ferrofem_base::Real;
use ferrofem_dist::{scatter_parts, Communicator, LocalPart, WavePartition};
use ferrofem_io::{write_pvd, write_space_pvtu, write_space_vtu_piece, Encoding};
use ferrofem_space::H1Space;
use ferrofem_wave::{Progress, Simulation};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Runs the wave problem of `file` with its cells split over the ranks of `comm`, with the
/// command line's precision and backend, when given, over the file's. Collective: every
/// rank calls it; `progress` is called on rank 0 only. Returns the report of the whole run
/// (on every rank) and the mesh's origin.
///
/// The steps run on the CPU: `backend = "cuda"` is refused, `auto` says so in the
/// report's note. Snapshots are written as one `.vtu` piece per rank and step, a `.pvtu`
/// over them and the `.pvd` series of the `.pvtu` files.
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
    let note = match (&def.outputs.snapshots, def.outputs.plots) {
        (Some(_), true) => Some(
            note.map_or(String::new(), |n| n + "; ")
                + "snapshots are written as .pvtu pieces, drawn as PNG by one-rank runs only",
        ),
        _ => note,
    };
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
    /// Steps to `target`, checking the energy (collective) after the last one when
    /// `check`.
    fn run_to(&mut self, target: usize, check: bool) -> Result<(), PipelineError> {
        each!(self, s => rayon::scope(|_| -> Result<(), PipelineError> {
            while s.step_count() < target {
                s.advance(check && s.step_count() + 1 == target)?;
            }
            Ok(())
        }))
    }
    fn space(&self) -> &H1Space {
        each!(self, s => s.space())
    }
    fn field(&self) -> Vec<f64> {
        each!(self, s => s.field().iter().map(|v| v.as_f64()).collect())
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
        let field = run.field();
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
