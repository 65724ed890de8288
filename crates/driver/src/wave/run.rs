//! Running a wave case: set-up, the time loop with snapshots, then seismograms and plots.

use super::outputs::SeismogramFormat;
use super::raster::Raster2d;
#[cfg(feature = "cuda")]
use super::stepper::GpuStepper;
use super::stepper::{Snapshot, WaveReal, WaveStepper};
use super::WaveCase;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use ferrofem_io::{write_pvd, write_space_vtu, Encoding, Seismograms, Station};
use ferrofem_wave::{Progress, Simulation, WaveKind};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Width in pixels of 2-D snapshot plots.
const SNAPSHOT_WIDTH: usize = 480;

/// What a wave run reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WaveReport {
    /// `acoustic` or `elastic`.
    pub kind: &'static str,
    /// Dimension.
    pub dim: usize,
    /// Polynomial order.
    pub order: usize,
    /// Elements.
    pub elements: usize,
    /// Degrees of freedom.
    pub dofs: usize,
    /// `f64` or `f32`.
    pub precision: &'static str,
    /// Where it ran.
    pub backend: &'static str,
    /// Why it ran there, when `auto` chose.
    pub backend_note: Option<String>,
    /// The processes (MPI ranks) the mesh was split over; 1 for a serial run.
    pub ranks: usize,
    /// The time step (s).
    pub dt: f64,
    /// The stable bound (s).
    pub stable_dt: f64,
    /// Steps.
    pub steps: usize,
    /// Simulated time (s).
    pub duration: f64,
    /// Sources.
    pub sources: usize,
    /// Receivers.
    pub receivers: usize,
    /// Set-up time (s): operators, mass, boundaries, sources and receivers.
    pub setup_seconds: f64,
    /// Time in the steps (s), outputs excluded.
    pub step_seconds: f64,
    /// Time writing snapshots, seismograms and plots (s).
    pub output_seconds: f64,
    /// Seconds per element and step.
    pub seconds_per_element_step: f64,
    /// The discrete energy at the end.
    pub energy: f64,
    /// The files written.
    pub files: Vec<String>,
}

/// Runs `case`, calling `progress` after every energy check.
///
/// With `--backend cuda` the time loop runs on the GPU (an error when none is usable or the
/// problem does not fit its memory); `auto` runs it there when a GPU is usable and the
/// problem fits, else on the CPU, saying why.
pub fn run_wave(
    case: &WaveCase,
    progress: &mut dyn FnMut(&Progress),
) -> Result<WaveReport, PipelineError> {
    case.outputs.check_writable()?;
    match case.precision {
        Precision::F64 => run::<f64>(case, progress),
        Precision::F32 => run::<f32>(case, progress),
    }
}

/// The time loop of `case` on the backend it asks for, with the note when `auto` fell back
/// to the CPU.
#[allow(clippy::type_complexity)]
fn stepper<T: WaveReal>(
    case: &WaveCase,
) -> Result<(Box<dyn WaveStepper>, &'static str, Option<String>), PipelineError> {
    let mesh = &case.mesh.mesh;
    // where a GPU may run it, the device opens (driver, context) while the host sets the
    // simulation up for it
    #[cfg(feature = "cuda")]
    let (backend, prebuilt) =
        if case.backend != crate::backend::BackendArg::Cpu && ferrofem_cuda::driver_present() {
            std::thread::scope(|s| {
                let opening = s.spawn(|| crate::backend::select(case.backend));
                let sim = Simulation::<T>::for_device(mesh, &case.setup);
                let backend = opening
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (backend, Some(sim))
            })
        } else {
            (crate::backend::select(case.backend), None)
        };
    #[cfg(not(feature = "cuda"))]
    let backend = crate::backend::select(case.backend);
    let backend = backend?;
    let note = backend.fallback_note();
    match backend {
        crate::backend::Backend::Cpu { .. } => {
            #[cfg(feature = "cuda")]
            drop(prebuilt);
            Ok((
                Box::new(Simulation::<T>::new(mesh, &case.setup)?),
                "cpu",
                note,
            ))
        }
        #[cfg(feature = "cuda")]
        crate::backend::Backend::Cuda(dev) => {
            let sim = match prebuilt {
                Some(sim) => sim?,
                None => Simulation::<T>::for_device(mesh, &case.setup)?,
            };
            match ferrofem_cuda::wave::GpuWave::new(&dev, &sim) {
                Ok(gpu) => Ok((Box::new(GpuStepper { sim, gpu }), "cuda", None)),
                Err(e) => {
                    let e = PipelineError::from(e);
                    match (case.backend, crate::backend::fallback_reason(&e)) {
                        (crate::backend::BackendArg::Auto, Some(why)) => {
                            // (set up again in the CPU kernels' node order)
                            drop(sim);
                            Ok((
                                Box::new(Simulation::<T>::new(mesh, &case.setup)?),
                                "cpu",
                                Some(format!("{why}; running on the CPU")),
                            ))
                        }
                        _ => Err(e),
                    }
                }
            }
        }
    }
}

fn run<T: WaveReal>(
    case: &WaveCase,
    progress: &mut dyn FnMut(&Progress),
) -> Result<WaveReport, PipelineError> {
    let mesh = &case.mesh.mesh;
    let out = &case.outputs;
    let t0 = Instant::now();
    let (mut stepper, backend, backend_note) = stepper::<T>(case)?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    let info = stepper.simulation();
    let steps = info.steps();
    let check_every = info.check_every();
    let space = info.space().clone();
    let nc = space.ncomp();
    let dim = mesh.dim();
    let names = component_names(case.setup.kind, dim);
    let mut files = Vec::new();
    let mut output_seconds = 0.0;
    // snapshots: VTU per snapshot, PNG in 2-D with plots, PVD at the end
    let every = out.every.unwrap_or((steps / 20).max(1));
    let raster = match (&out.snapshots, out.plots, dim) {
        (Some(_), true, 2) => Raster2d::new(mesh, &space, SNAPSHOT_WIDTH),
        _ => None,
    };
    // snapshots are written on a thread of their own while the steps go on (on the GPU,
    // the field reaches the host beside the next steps)
    // (at most two waiting: the host memory a snapshot holds stays bounded)
    let (sender, receiver) = std::sync::mpsc::sync_channel::<Snapshot>(2);
    let writer = |receiver: std::sync::mpsc::Receiver<Snapshot>| {
        let mut series: Vec<(f64, String)> = Vec::new();
        let mut files = Vec::new();
        let mut seconds = 0.0;
        let Some(pvd) = &out.snapshots else {
            return Ok((series, files, seconds));
        };
        for snap in receiver {
            let start = Instant::now();
            let (k, u) = (snap.step, &snap.field);
            let vtu = sibling(pvd, &format!("{k:07}.vtu"));
            let field = if nc == 1 { "p" } else { "u" };
            write_space_vtu(&vtu, mesh, &space, &[(field, u)], &[], Encoding::Binary)?;
            series.push((snap.time, file_name(&vtu)));
            files.push(vtu.display().to_string());
            if let Some(r) = &raster {
                let png = sibling(pvd, &format!("{k:07}.png"));
                let c = nc - 1;
                let values = r.sample(u, nc, c);
                plot_snapshot(&png, r, &values, names[c], snap.time, &case.setup)?;
                files.push(png.display().to_string());
            }
            seconds += start.elapsed().as_secs_f64();
        }
        Ok::<_, PipelineError>((series, files, seconds))
    };
    let wants_snapshots = out.snapshots.is_some();
    let mut step_seconds = 0.0;
    let (stepped, written) = std::thread::scope(|scope| {
        let writing = scope.spawn(move || writer(receiver));
        let stepped = (|| -> Result<(), PipelineError> {
            let send = |snap: Option<Snapshot>| {
                if let Some(snap) = snap {
                    // (a closed channel means the writer failed: its error is reported)
                    let _ = sender.send(snap);
                }
            };
            if wants_snapshots {
                send(stepper.request_snapshot()?);
            }
            while stepper.step_count() < steps {
                let (target, check) = next_stop(stepper.step_count(), check_every, every, steps);
                let start = Instant::now();
                stepper.run_to(target, check)?;
                step_seconds += start.elapsed().as_secs_f64();
                if check {
                    progress(&Progress {
                        step: stepper.step_count(),
                        steps,
                        time: stepper.time(),
                        energy: stepper.energy(),
                    });
                }
                send(stepper.take_snapshot()?);
                if wants_snapshots
                    && (stepper.step_count() % every == 0 || stepper.step_count() == steps)
                {
                    send(stepper.request_snapshot()?);
                }
            }
            send(stepper.take_snapshot()?);
            Ok(())
        })();
        drop(sender);
        // (a panic of the writer is a bug: passed on)
        let written = writing
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (stepped, written)
    });
    stepped?;
    let (series, snapshot_files, snapshot_seconds) = written?;
    files.extend(snapshot_files);
    output_seconds += snapshot_seconds;
    let start = Instant::now();
    if let Some(pvd) = &out.snapshots {
        write_pvd(pvd, &series)?;
        files.push(pvd.display().to_string());
    }
    let info = stepper.simulation();
    let (dt, stable_dt, receivers) = (info.dt(), info.stable_bound(), info.receivers().to_vec());
    if let Some(prefix) = &out.seismograms {
        if !receivers.is_empty() {
            let samples = stepper.seismograms()?;
            files.extend(write_seismograms(
                &receivers,
                dt,
                &samples,
                prefix,
                &out.formats,
                &names,
                out.plots,
            )?);
        }
    }
    output_seconds += start.elapsed().as_secs_f64();
    let elements = mesh.num_cells();
    Ok(WaveReport {
        kind: case.setup.kind.name(),
        dim,
        order: case.setup.order,
        elements,
        dofs: space.num_dofs(),
        precision: T::NAME,
        backend,
        backend_note,
        ranks: 1,
        dt,
        stable_dt,
        steps,
        duration: stepper.time(),
        sources: case.setup.sources.len(),
        receivers: receivers.len(),
        setup_seconds,
        step_seconds,
        output_seconds,
        seconds_per_element_step: step_seconds / (elements as f64 * steps as f64),
        energy: stepper.energy(),
        files,
    })
}

/// Where the time loop stops next from step `k`: the next energy check or snapshot, or
/// the end; and whether the energy is checked there.
pub(super) fn next_stop(k: usize, check_every: usize, every: usize, steps: usize) -> (usize, bool) {
    let next = |every: usize| (k / every + 1) * every;
    let target = next(check_every).min(next(every)).min(steps);
    (target, target % check_every == 0 || target == steps)
}

/// Names of the recorded components.
pub(super) fn component_names(kind: WaveKind, dim: usize) -> Vec<&'static str> {
    match kind {
        WaveKind::Acoustic => vec!["p"],
        WaveKind::Elastic => ["ux", "uy", "uz"][..dim].to_vec(),
    }
}

/// `pvd`'s path with its extension replaced by `_<suffix>`.
pub(super) fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}_{suffix}"))
}

pub(super) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes the seismograms in `formats` (and their gathers as PNG); returns the files.
pub(super) fn write_seismograms(
    receivers: &[ferrofem_wave::Receiver],
    dt: f64,
    samples: &[f64],
    prefix: &Path,
    formats: &[SeismogramFormat],
    names: &[&str],
    plots: bool,
) -> Result<Vec<String>, PipelineError> {
    let stations: Vec<Station> = receivers
        .iter()
        .map(|r| Station::new(r.name.clone(), r.position))
        .collect();
    let seis = Seismograms {
        t0: 0.0,
        dt,
        stations: &stations,
        components: names,
        samples,
    };
    let mut files = Vec::new();
    for f in formats {
        match f {
            SeismogramFormat::Csv => {
                for p in ferrofem_io::write_seismograms_csv(prefix, &seis)? {
                    files.push(p.display().to_string());
                }
            }
            SeismogramFormat::Su | SeismogramFormat::Segy => {
                for (c, name) in names.iter().enumerate() {
                    let path = with_suffix(prefix, &format!("_{name}.{}", f.extension()));
                    if *f == SeismogramFormat::Su {
                        ferrofem_io::write_su(&path, &seis, c)?;
                    } else {
                        ferrofem_io::write_segy(&path, &seis, c)?;
                    }
                    files.push(path.display().to_string());
                }
            }
        }
    }
    if plots {
        for (c, name) in names.iter().enumerate() {
            let path = with_suffix(prefix, &format!("_{name}.png"));
            let opts = ferrofem_io::GatherPlot {
                title: Some(format!("{name} at {} receivers", stations.len())),
                ..Default::default()
            };
            ferrofem_io::write_trace_gather_png(&path, &seis, c, &opts)?;
            files.push(path.display().to_string());
        }
    }
    Ok(files)
}

/// `prefix` with `suffix` appended to its file name.
fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// A 2-D snapshot as PNG, with the sources and receivers marked.
fn plot_snapshot(
    path: &Path,
    r: &Raster2d,
    values: &[f64],
    name: &str,
    time: f64,
    setup: &ferrofem_wave::WaveSetup,
) -> Result<(), PipelineError> {
    let raster = ferrofem_io::Raster {
        nx: r.nx,
        ny: r.ny,
        x0: r.bounds[0],
        x1: r.bounds[1],
        y0: r.bounds[2],
        y1: r.bounds[3],
        values,
    };
    let opts = ferrofem_io::FieldPlot {
        title: Some(format!("{name} at t = {time:.4e} s")),
        sources: setup
            .sources
            .iter()
            .map(|s| [s.position[0], s.position[1]])
            .collect(),
        receivers: setup
            .receivers
            .iter()
            .map(|s| [s.position[0], s.position[1]])
            .collect(),
        ..Default::default()
    };
    ferrofem_io::write_field_png(path, &raster, &opts)?;
    Ok(())
}
