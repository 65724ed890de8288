//! Running a wave case: set-up, the time loop with snapshots, then seismograms and plots.

use super::outputs::SeismogramFormat;
use super::raster::Raster2d;
use super::WaveCase;
use crate::backend::BackendArg;
use crate::pipeline_error::PipelineError;
use crate::settings::Precision;
use ferrofem_base::Real;
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
pub fn run_wave(
    case: &WaveCase,
    progress: &mut dyn FnMut(&Progress),
) -> Result<WaveReport, PipelineError> {
    let backend_note = match case.backend {
        BackendArg::Cuda => {
            return Err(PipelineError::NoGpuPath(
                "the wave solver runs on the CPU; its GPU kernels are not built yet".into(),
            ))
        }
        BackendArg::Auto => Some("the wave solver has no GPU path yet: running on the CPU".into()),
        BackendArg::Cpu => None,
    };
    case.outputs.check_writable()?;
    let mut report = match case.precision {
        Precision::F64 => run::<f64>(case, progress)?,
        Precision::F32 => run::<f32>(case, progress)?,
    };
    report.backend_note = backend_note;
    Ok(report)
}

fn run<T: Real>(
    case: &WaveCase,
    progress: &mut dyn FnMut(&Progress),
) -> Result<WaveReport, PipelineError> {
    let mesh = &case.mesh.mesh;
    let out = &case.outputs;
    let t0 = Instant::now();
    let mut sim = Simulation::<T>::new(mesh, &case.setup)?;
    let setup_seconds = t0.elapsed().as_secs_f64();
    let steps = sim.steps();
    let nc = sim.components();
    let dim = mesh.dim();
    let names = component_names(case.setup.kind, dim);
    let mut files = Vec::new();
    let mut output_seconds = 0.0;
    // snapshots: VTU per snapshot, PNG in 2-D with plots, PVD at the end
    let every = out.every.unwrap_or((steps / 20).max(1));
    let raster = match (&out.snapshots, out.plots, dim) {
        (Some(_), true, 2) => Raster2d::new(mesh, sim.space(), SNAPSHOT_WIDTH),
        _ => None,
    };
    let mut series: Vec<(f64, String)> = Vec::new();
    let mut snapshot =
        |sim: &Simulation<T>, files: &mut Vec<String>| -> Result<f64, PipelineError> {
            let Some(pvd) = &out.snapshots else {
                return Ok(0.0);
            };
            let start = Instant::now();
            let u: Vec<f64> = sim.field().iter().map(|v| v.as_f64()).collect();
            let k = sim.step_count();
            let vtu = sibling(pvd, &format!("{k:07}.vtu"));
            let field = if nc == 1 { "p" } else { "u" };
            write_space_vtu(
                &vtu,
                mesh,
                sim.space(),
                &[(field, &u)],
                &[],
                Encoding::Binary,
            )?;
            series.push((sim.time(), file_name(&vtu)));
            files.push(vtu.display().to_string());
            if let Some(r) = &raster {
                let png = sibling(pvd, &format!("{k:07}.png"));
                let c = nc - 1;
                let values = r.sample(&u, nc, c);
                plot_snapshot(&png, r, &values, names[c], sim.time(), &case.setup)?;
                files.push(png.display().to_string());
            }
            Ok(start.elapsed().as_secs_f64())
        };
    output_seconds += snapshot(&sim, &mut files)?;
    let mut step_seconds = 0.0;
    let check_every = sim.check_every();
    while sim.step_count() < steps {
        // the steps up to the next check or snapshot run on a thread of the pool, so that
        // the kernels' parallel loops start there instead of waking the pool from outside
        // at every loop of every step (which costs 10-20 % of a small step)
        let k = sim.step_count();
        let next = |every: usize| (k / every + 1) * every;
        let target = next(check_every).min(next(every)).min(steps);
        let check = target % check_every == 0 || target == steps;
        let start = Instant::now();
        rayon::scope(|_| -> Result<(), PipelineError> {
            while sim.step_count() < target {
                sim.advance(check && sim.step_count() + 1 == target)?;
            }
            Ok(())
        })?;
        step_seconds += start.elapsed().as_secs_f64();
        if check {
            progress(&Progress {
                step: sim.step_count(),
                steps,
                time: sim.time(),
                energy: sim.energy(),
            });
        }
        if sim.step_count() % every == 0 || sim.step_count() == steps {
            output_seconds += snapshot(&sim, &mut files)?;
        }
    }
    let start = Instant::now();
    if let Some(pvd) = &out.snapshots {
        write_pvd(pvd, &series)?;
        files.push(pvd.display().to_string());
    }
    if let Some(prefix) = &out.seismograms {
        if !sim.receivers().is_empty() {
            files.extend(write_seismograms(
                &sim,
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
        dofs: sim.space().num_dofs(),
        precision: T::NAME,
        backend: "cpu",
        backend_note: None,
        dt: sim.dt(),
        stable_dt: sim.stable_step().bound,
        steps,
        duration: sim.time(),
        sources: case.setup.sources.len(),
        receivers: sim.receivers().len(),
        setup_seconds,
        step_seconds,
        output_seconds,
        seconds_per_element_step: step_seconds / (elements as f64 * steps as f64),
        energy: sim.energy(),
        files,
    })
}

/// Names of the recorded components.
fn component_names(kind: WaveKind, dim: usize) -> Vec<&'static str> {
    match kind {
        WaveKind::Acoustic => vec!["p"],
        WaveKind::Elastic => ["ux", "uy", "uz"][..dim].to_vec(),
    }
}

/// `pvd`'s path with its extension replaced by `_<suffix>`.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!("{stem}_{suffix}"))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes the seismograms in `formats` (and their gathers as PNG); returns the files.
fn write_seismograms<T: Real>(
    sim: &Simulation<T>,
    prefix: &Path,
    formats: &[SeismogramFormat],
    names: &[&str],
    plots: bool,
) -> Result<Vec<String>, PipelineError> {
    let stations: Vec<Station> = sim
        .receivers()
        .iter()
        .map(|r| Station::new(r.name.clone(), r.position))
        .collect();
    let seis = Seismograms {
        t0: 0.0,
        dt: sim.dt(),
        stations: &stations,
        components: names,
        samples: sim.seismograms(),
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
