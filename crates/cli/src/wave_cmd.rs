//! `ferrofem wave`: explicit spectral-element wave propagation, from a problem file
//! (`ferrofem wave problem.toml`) or from flags for quick runs
//! (`ferrofem wave --box quad:100x100,max=0.1:0.1 --f0 50e3 --duration 1e-4 ...`).

use crate::error::CliError;
use clap::{Args, ValueEnum};
use ferrofem_driver::wave::{run_wave, SeismogramFormat, WaveCase, WaveOutputs, WaveReport};
use ferrofem_driver::{
    BackendArg, MeshInput, MeshOrigin, Precision, ProblemFile, Progress, Reorder, StepProgress,
};
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Source, SourceKind,
    TimeSpec, WaveKind, WaveSetup, Wavelet,
};
use std::io::Write;
use std::path::PathBuf;

/// The wave equation of a quick run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// Pressure in a fluid.
    Acoustic,
    /// Displacement in an isotropic solid.
    Elastic,
}

/// The condition on the whole boundary of a quick run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BoundaryArg {
    /// Free surface (acoustic p = 0; elastic traction-free).
    Free,
    /// Rigid wall (acoustic ∂p/∂n = 0; elastic u = 0).
    Rigid,
    /// Stacey's absorbing condition.
    Absorbing,
}

/// Options of `ferrofem wave`.
#[derive(Args, Debug)]
pub struct WaveArgs {
    /// A problem file (`.toml`) with kind = "acoustic" or "elastic".
    #[arg(value_name = "FILE.toml", conflicts_with = "box_spec")]
    file: Option<PathBuf>,
    /// Quick run on a structured box, e.g. `quad:200x200,max=1:1` or `hex:20x20x20`.
    #[arg(long = "box", value_name = "SPEC")]
    box_spec: Option<String>,
    /// Quick run: the wave equation.
    #[arg(long, value_enum, default_value_t = KindArg::Acoustic)]
    kind: KindArg,
    /// Quick run: polynomial order (1 to 10).
    #[arg(long, default_value_t = 4)]
    order: usize,
    /// Quick run: compressional (sound) speed, m/s.
    #[arg(long, default_value_t = 1500.0)]
    vp: f64,
    /// Quick run: shear speed, m/s (elastic).
    #[arg(long)]
    vs: Option<f64>,
    /// Quick run: density, kg/m³.
    #[arg(long, default_value_t = 1000.0)]
    rho: f64,
    /// Quick run: the source position, `x,y[,z]` (default: the centre of the box).
    #[arg(long, value_name = "X,Y[,Z]")]
    source: Option<String>,
    /// Quick run: the Ricker wavelet's peak frequency, Hz.
    #[arg(long)]
    f0: Option<f64>,
    /// Quick run: a receiver `x,y[,z]` (repeat for more).
    #[arg(long, value_name = "X,Y[,Z]")]
    receiver: Vec<String>,
    /// Quick run: number of steps.
    #[arg(long, conflicts_with = "duration")]
    steps: Option<usize>,
    /// Quick run: simulated time, s.
    #[arg(long)]
    duration: Option<f64>,
    /// Quick run: the time step in s (default: the stable one).
    #[arg(long)]
    dt: Option<f64>,
    /// Quick run: the condition on the whole boundary (default: natural).
    #[arg(long, value_enum)]
    boundary: Option<BoundaryArg>,
    /// Quick run: seismogram path prefix (`PREFIX_p.csv`, `PREFIX_p.su`).
    #[arg(long, value_name = "PREFIX")]
    seismograms: Option<PathBuf>,
    /// Quick run: snapshots as a PVD series.
    #[arg(long, value_name = "FILE.pvd")]
    snapshots: Option<PathBuf>,
    /// Quick run: PNG plots of the seismograms and (2-D) snapshots.
    #[arg(long)]
    plots: bool,
    /// Field precision (default f64, or the problem file's).
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Where to run (default auto, or the problem file's).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Print one JSON object instead of the text summary (no progress display).
    #[arg(long)]
    json: bool,
}

/// Runs `ferrofem wave` (under `mpirun -np N`, N > 1, over N ranks).
pub fn run(a: WaveArgs) -> Result<(), CliError> {
    if ferrofem_dist::launched_in_parallel() {
        return run_on_ranks(&a);
    }
    let spinner = Progress::stderr(a.json);
    spinner.stage("setting up");
    let case = match &a.file {
        Some(path) => {
            check_file_options(&a)?;
            let file = ProblemFile::read(path)?;
            let mut case = file.wave_case()?;
            if let Some(p) = a.precision {
                case.precision = p;
            }
            if let Some(b) = a.backend {
                case.backend = b;
            }
            case
        }
        None => quick_case(&a)?,
    };
    let mut bar: Option<StepProgress> = None;
    let result = run_wave(&case, &mut |p| {
        spinner.finish();
        bar.get_or_insert_with(|| StepProgress::stderr(a.json, p.steps))
            .update(p.step, p.time, p.energy);
    });
    spinner.finish();
    if let Some(b) = &bar {
        b.finish();
    }
    let report = result?;
    let memory: Vec<u64> = crate::peak_memory::peak_resident_bytes()
        .into_iter()
        .collect();
    print_report(&a, &case.mesh.origin, &report, &memory)
}

/// `mpirun -np N ferrofem wave FILE.toml`: the file's problem split over the ranks; rank 0
/// shows the progress and prints the report. An error on any rank ends the whole job (the
/// other ranks may be waiting for it in an exchange).
#[cfg(feature = "mpi")]
fn run_on_ranks(a: &WaveArgs) -> Result<(), CliError> {
    use ferrofem_dist::Communicator;
    let Some(path) = &a.file else {
        return Err(CliError::Usage(
            "a run on several ranks takes a problem file (FILE.toml)".into(),
        ));
    };
    check_file_options(a)?;
    let comm = std::sync::Arc::new(
        ferrofem_dist::MpiComm::init().map_err(ferrofem_driver::PipelineError::from)?,
    );
    let rank = comm.rank();
    let run = || -> Result<(), CliError> {
        let file = ProblemFile::read(path)?;
        let mut bar: Option<StepProgress> = None;
        let (report, origin) = ferrofem_driver::wave::run_wave_on_ranks(
            comm.clone(),
            &file,
            a.precision,
            a.backend,
            &mut |p| {
                bar.get_or_insert_with(|| StepProgress::stderr(a.json, p.steps))
                    .update(p.step, p.time, p.energy);
            },
        )?;
        if let Some(b) = &bar {
            b.finish();
        }
        let memory = crate::ranks::peak_memory_of_ranks(&*comm)?;
        if rank == 0 {
            print_report(a, &origin, &report, &memory)?;
        }
        Ok(())
    };
    crate::ranks::run_or_abort(&comm, run);
    Ok(())
}

/// Without MPI a launch on several ranks would run the whole problem once per rank.
#[cfg(not(feature = "mpi"))]
fn run_on_ranks(_: &WaveArgs) -> Result<(), CliError> {
    Err(crate::ranks::without_mpi())
}

/// With a problem file, only the precision, the backend and `--json` may be given.
fn check_file_options(a: &WaveArgs) -> Result<(), CliError> {
    let quick = a.source.is_some()
        || a.f0.is_some()
        || !a.receiver.is_empty()
        || a.steps.is_some()
        || a.duration.is_some()
        || a.dt.is_some()
        || a.boundary.is_some()
        || a.seismograms.is_some()
        || a.snapshots.is_some()
        || a.plots
        || a.vs.is_some();
    if quick {
        return Err(CliError::Usage(
            "with a problem file, the run is described by the file (flags allowed: --precision, \
             --backend, --json)"
                .into(),
        ));
    }
    Ok(())
}

/// `x,y[,z]` as a point of dimension `dim`.
fn point(s: &str, dim: usize, what: &str) -> Result<[f64; 3], CliError> {
    let v: Vec<f64> = s
        .split(',')
        .map(|t| t.trim().parse::<f64>())
        .collect::<Result<_, _>>()
        .map_err(|_| CliError::Usage(format!("--{what} {s}: expected {dim} numbers x,y[,z]")))?;
    if v.len() != dim {
        return Err(CliError::Usage(format!(
            "--{what} {s}: expected {dim} coordinates for this {dim}-D mesh"
        )));
    }
    Ok(std::array::from_fn(|a| v.get(a).copied().unwrap_or(0.0)))
}

/// The case of a quick run from flags.
fn quick_case(a: &WaveArgs) -> Result<WaveCase, CliError> {
    let Some(spec) = &a.box_spec else {
        return Err(CliError::Usage(
            "give a problem file (FILE.toml) or, for a quick run, --box SPEC with --f0 and \
             --steps or --duration"
                .into(),
        ));
    };
    let (Some(f0), true) = (a.f0, a.steps.is_some() || a.duration.is_some()) else {
        return Err(CliError::Usage(
            "a quick run needs --f0 (the Ricker's peak frequency) and --steps or --duration".into(),
        ));
    };
    let mesh = MeshInput {
        origin: MeshOrigin::Box(spec.clone()),
        reorder: Reorder::None,
        refine: 0,
    }
    .load()?;
    let dim = mesh.mesh.dim();
    let (lo, hi) = mesh.mesh.bounding_box();
    let kind = match a.kind {
        KindArg::Acoustic => WaveKind::Acoustic,
        KindArg::Elastic => WaveKind::Elastic,
    };
    let vs = match (kind, a.vs) {
        (WaveKind::Elastic, Some(vs)) => vs,
        (WaveKind::Elastic, None) => {
            return Err(CliError::Usage("--kind elastic needs --vs".into()))
        }
        (WaveKind::Acoustic, Some(_)) => {
            return Err(CliError::Usage("--vs is for --kind elastic".into()))
        }
        (WaveKind::Acoustic, None) => 0.0,
    };
    let position = match &a.source {
        Some(s) => point(s, dim, "source")?,
        None => std::array::from_fn(|k| if k < dim { 0.5 * (lo[k] + hi[k]) } else { 0.0 }),
    };
    let wavelet = Wavelet::ricker(f0, None)
        .map_err(ferrofem_wave::WaveError::from)
        .map_err(ferrofem_driver::PipelineError::from)?;
    let source_kind = match kind {
        WaveKind::Acoustic => SourceKind::Monopole { amplitude: 1.0 },
        WaveKind::Elastic => {
            let mut f = [0.0; 3];
            f[dim - 1] = -1.0;
            SourceKind::Force(f)
        }
    };
    let receivers = a
        .receiver
        .iter()
        .enumerate()
        .map(|(i, s)| Ok(Receiver::new(format!("r{i}"), point(s, dim, "receiver")?)))
        .collect::<Result<Vec<_>, CliError>>()?;
    let mut setup = WaveSetup::new(
        kind,
        a.order,
        Medium::Uniform(Material {
            rho: a.rho,
            vp: a.vp,
            vs,
        }),
        1,
    );
    setup.sources = vec![Source {
        name: "source".into(),
        position,
        kind: source_kind,
        wavelet,
    }];
    setup.receivers = receivers;
    setup.time = TimeSpec {
        dt: a.dt,
        length: match (a.steps, a.duration) {
            (Some(n), _) => RunLength::Steps(n),
            (None, Some(t)) => RunLength::Duration(t),
            (None, None) => RunLength::Steps(1),
        },
    };
    if let Some(b) = a.boundary {
        let condition = match b {
            BoundaryArg::Free => BoundaryCondition::Free,
            BoundaryArg::Rigid => BoundaryCondition::Rigid,
            BoundaryArg::Absorbing => BoundaryCondition::Absorbing,
        };
        setup.boundaries = vec![BoundarySpec::new("all", condition)];
    }
    Ok(WaveCase {
        mesh,
        setup,
        precision: a.precision.unwrap_or(Precision::F64),
        backend: a.backend.unwrap_or(BackendArg::Auto),
        outputs: WaveOutputs {
            seismograms: a.seismograms.clone(),
            formats: vec![SeismogramFormat::Csv, SeismogramFormat::Su],
            snapshots: a.snapshots.clone(),
            every: None,
            plots: a.plots,
        },
    })
}

/// Prints the report; `memory` is the peak resident memory of each rank (bytes; empty where
/// unknown).
fn print_report(
    a: &WaveArgs,
    origin: &str,
    r: &WaveReport,
    memory: &[u64],
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if a.json {
        #[derive(serde::Serialize)]
        struct Record<'a> {
            mesh: &'a str,
            #[serde(flatten)]
            report: &'a WaveReport,
            /// Peak resident memory of each rank, bytes.
            peak_memory_per_rank: &'a [u64],
        }
        serde_json::to_writer(
            &mut out,
            &Record {
                mesh: origin,
                report: r,
                peak_memory_per_rank: memory,
            },
        )?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(out, "mesh       {origin}")?;
    let ranks = match r.ranks {
        1 => String::new(),
        n => format!(", {n} ranks"),
    };
    writeln!(
        out,
        "problem    {} {}-D, order {}, {} elements, {} dofs ({}, {}{ranks})",
        r.kind, r.dim, r.order, r.elements, r.dofs, r.precision, r.backend
    )?;
    if let Some(note) = &r.backend_note {
        writeln!(out, "backend    {note}")?;
    }
    writeln!(
        out,
        "time       {} steps of {:.4e} s (stable bound {:.4e} s): t = {:.4e} s",
        r.steps, r.dt, r.stable_dt, r.duration
    )?;
    writeln!(
        out,
        "run        set-up {:.3} s, steps {:.3} s ({:.3e} s per element and step), output {:.3} s",
        r.setup_seconds, r.step_seconds, r.seconds_per_element_step, r.output_seconds
    )?;
    writeln!(out, "energy     {:.6e} at the end", r.energy)?;
    if let Some(line) = crate::peak_memory::memory_line(memory) {
        writeln!(out, "memory     {line}")?;
    }
    writeln!(
        out,
        "recorded   {} receivers, {} sources",
        r.receivers, r.sources
    )?;
    for f in &r.files {
        writeln!(out, "wrote      {f}")?;
    }
    Ok(())
}
