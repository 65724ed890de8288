//! `ferrofem bench wave`: the spectral-element time step (stiffness action and leapfrog
//! update) per element and step, with its byte and flop model and the copy bandwidth
//! measured in the same process, on a uniform box of squares or cubes, on the CPU or the
//! GPU.

use crate::error::CliError;
use clap::{Args, ValueEnum};
use ferrofem_base::{CellType, Real};
#[cfg(feature = "cuda")]
use ferrofem_driver::Backend;
use ferrofem_driver::{select, BackendArg, Precision};
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_operator::tensor::measure_copy_bandwidth;
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, RunLength, Simulation, TimeSpec, WaveKind,
    WaveSetup,
};
use serde::Serialize;
use std::io::Write;
use std::time::Instant;

/// The wave equation benchmarked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KindArg {
    /// Pressure (scalar).
    Acoustic,
    /// Displacement (`d` components).
    Elastic,
}

/// Options of `ferrofem bench wave`.
#[derive(Args, Debug)]
pub struct WaveBenchArgs {
    /// Dimension (2: squares, 3: cubes).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
    dim: u8,
    /// The wave equation.
    #[arg(long, value_enum, default_value_t = KindArg::Acoustic)]
    kind: KindArg,
    /// Polynomial orders, comma-separated (1 to 10).
    #[arg(long, value_delimiter = ',', default_value = "2,4")]
    order: Vec<usize>,
    /// Elements (the box is the nearest square or cube of elements).
    #[arg(long, default_value_t = 40_000.0)]
    elements: f64,
    /// Field precision.
    #[arg(long, value_enum, default_value_t = Precision::F32)]
    precision: Precision,
    /// Timed steps (after 5 warm-up steps).
    #[arg(long, default_value_t = 100)]
    steps: usize,
    /// Threads (default: all; the CPU backend).
    #[arg(long)]
    threads: Option<usize>,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Print one JSON record per order instead of the table.
    #[arg(long)]
    json: bool,
}

/// One order's figures.
#[derive(Serialize)]
struct Record {
    bench: &'static str,
    backend: String,
    kind: &'static str,
    dim: usize,
    order: usize,
    precision: &'static str,
    threads: usize,
    elements: usize,
    dofs: usize,
    steps: usize,
    seconds_per_step: f64,
    seconds_per_element_step: f64,
    stiffness_share: f64,
    gdof_steps_per_s: f64,
    model_bytes_per_step: f64,
    model_flops_per_step: f64,
    gbytes_per_s: f64,
    gflops_per_s: f64,
    copy_gbytes_per_s: f64,
    roofline_fraction: f64,
}

/// Runs the benchmark.
pub fn run(a: WaveBenchArgs) -> Result<(), CliError> {
    let backend = select(a.backend).map_err(CliError::Pipeline)?;
    #[cfg(feature = "cuda")]
    if let Backend::Cuda(dev) = &backend {
        return run_gpu(&a, dev);
    }
    if let Some(note) = backend.fallback_note() {
        eprintln!("{note}");
    }
    let threads = a.threads.unwrap_or_else(rayon::current_num_threads).max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| CliError::Usage(format!("thread pool: {e}")))?;
    pool.install(|| run_in_pool(&a, threads))
}

fn run_in_pool(a: &WaveBenchArgs, threads: usize) -> Result<(), CliError> {
    if a.order.iter().any(|&p| !(1..=10).contains(&p)) || a.steps == 0 {
        return Err(CliError::Usage(
            "--order takes orders 1 to 10 and --steps at least 1".into(),
        ));
    }
    if !(a.elements >= 1.0 && a.elements <= 1e9) {
        return Err(CliError::Usage("--elements: 1 to 1e9".into()));
    }
    let copy = measure_copy_bandwidth(1 << 28, threads);
    run_orders(a, &format!("{threads} thread(s)"), copy, |p| {
        match a.precision {
            Precision::F64 => measure::<f64>(a, p, threads, copy),
            Precision::F32 => measure::<f32>(a, p, threads, copy),
        }
    })
}

/// Prints the copy bandwidth `copy` (GB/s) measured on `place` and the table's header
/// (unless `--json`), then the record of every order.
fn run_orders(
    a: &WaveBenchArgs,
    place: &str,
    copy: f64,
    measure: impl Fn(usize) -> Result<Record, CliError>,
) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    if !a.json {
        writeln!(
            out,
            "copy bandwidth {copy:.1} GB/s on {place}; {} {}-D, {}",
            kind_name(a.kind),
            a.dim,
            a.precision.name()
        )?;
        writeln!(out, "{HEADER}")?;
    }
    for &p in &a.order {
        emit(&mut out, &measure(p)?, a.json)?;
    }
    Ok(())
}

/// The table's header.
const HEADER: &str =
    " p  elements      dofs  ns/elem/step  stiffness  GDOF*steps/s  model B/elem  GB/s  roof  GFLOP/s";

/// One order's record as a JSON line or a table row.
fn emit(out: &mut impl Write, rec: &Record, json: bool) -> Result<(), CliError> {
    if json {
        serde_json::to_writer(&mut *out, rec)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:2} {:9} {:9} {:13.4} {:9.0}% {:13.3} {:13.0} {:5.0} {:4.0}% {:8.1}",
            rec.order,
            rec.elements,
            rec.dofs,
            1e9 * rec.seconds_per_element_step,
            100.0 * rec.stiffness_share,
            rec.gdof_steps_per_s,
            rec.model_bytes_per_step / rec.elements as f64,
            rec.gbytes_per_s,
            100.0 * rec.roofline_fraction,
            rec.gflops_per_s
        )?;
    }
    Ok(())
}

fn kind_name(k: KindArg) -> &'static str {
    match k {
        KindArg::Acoustic => "acoustic",
        KindArg::Elastic => "elastic",
    }
}

/// The benchmark's simulation at `order`: a uniform box of about `a.elements` elements,
/// free boundaries, a smooth field everywhere (so that no step works on zeros or subnormal
/// numbers), and its mesh.
fn bench_simulation<T: Real>(
    a: &WaveBenchArgs,
    order: usize,
) -> Result<(Simulation<T>, usize), CliError> {
    let d = a.dim as usize;
    let n = (a.elements.powf(1.0 / d as f64).round() as usize).max(1);
    let ct = if d == 2 {
        CellType::Quadrilateral
    } else {
        CellType::Hexahedron
    };
    let mesh = generate_box(&BoxSpec::unit(ct, &vec![n; d]))?;
    let kind = match a.kind {
        KindArg::Acoustic => WaveKind::Acoustic,
        KindArg::Elastic => WaveKind::Elastic,
    };
    let material = Material {
        rho: 1000.0,
        vp: 1500.0,
        vs: if kind == WaveKind::Elastic {
            800.0
        } else {
            0.0
        },
    };
    let mut setup = WaveSetup::new(kind, order, Medium::Uniform(material), a.steps + 5);
    setup.boundaries = vec![BoundarySpec::new("all", BoundaryCondition::Free)];
    setup.time = TimeSpec {
        dt: None,
        length: RunLength::Steps(a.steps + 5),
    };
    setup.check_every = a.steps + 5;
    let mut sim =
        Simulation::<T>::new(&mesh, &setup).map_err(ferrofem_driver::PipelineError::from)?;
    let space = sim.space().clone();
    let nc = space.ncomp();
    let u0: Vec<f64> = (0..space.num_dofs())
        .map(|i| {
            let x = space.node_coord(i / nc);
            1.0 + (3.0 * x[0]).sin() * (2.0 * x[1]).cos() + 0.1 * (i % nc) as f64
        })
        .collect();
    sim.set_state(&u0, &u0)
        .map_err(ferrofem_driver::PipelineError::from)?;
    Ok((sim, mesh.num_cells()))
}

fn measure<T: Real>(
    a: &WaveBenchArgs,
    order: usize,
    threads: usize,
    copy: f64,
) -> Result<Record, CliError> {
    let d = a.dim as usize;
    let (mut sim, elements) = bench_simulation::<T>(a, order)?;
    let space = sim.space().clone();
    let err = |e| CliError::Pipeline(ferrofem_driver::PipelineError::from(e));
    for _ in 0..5 {
        sim.advance(false).map_err(err)?;
    }
    let start = Instant::now();
    for _ in 0..a.steps {
        sim.advance(false).map_err(err)?;
    }
    let per_step = start.elapsed().as_secs_f64() / a.steps as f64;
    // the stiffness alone, on the current field
    let k = sim.stiffness();
    let x: Vec<T> = sim.field().to_vec();
    let mut y = vec![T::zero(); x.len()];
    let reps = a.steps.clamp(1, 50);
    let start = Instant::now();
    for _ in 0..reps {
        k.try_apply(&x, &mut y)?;
    }
    let stiffness = start.elapsed().as_secs_f64() / reps as f64;
    let stiff_model = k.model();
    // the update reads u, u_prev, K u, dt² M⁻¹ and writes u_prev
    let dofs = space.num_dofs();
    let update_bytes = 5.0 * (dofs * T::BYTES) as f64;
    let bytes = stiff_model.bytes + update_bytes;
    let flops = stiff_model.flops + 3.0 * dofs as f64;
    Ok(Record {
        bench: "wave",
        backend: format!("cpu ({threads} threads)"),
        kind: kind_name(a.kind),
        dim: d,
        order,
        precision: T::NAME,
        threads,
        elements,
        dofs,
        steps: a.steps,
        seconds_per_step: per_step,
        seconds_per_element_step: per_step / elements as f64,
        stiffness_share: (stiffness / per_step).min(1.0),
        gdof_steps_per_s: dofs as f64 / per_step / 1e9,
        model_bytes_per_step: bytes,
        model_flops_per_step: flops,
        gbytes_per_s: bytes / per_step / 1e9,
        gflops_per_s: flops / per_step / 1e9,
        copy_gbytes_per_s: copy,
        roofline_fraction: bytes / per_step / 1e9 / copy,
    })
}

/// The benchmark on the GPU: per order, the median step time of `--steps` steps (CUDA
/// events) and of the stiffness kernel alone, against the device's copy bandwidth measured
/// in the same process.
#[cfg(feature = "cuda")]
fn run_gpu(
    a: &WaveBenchArgs,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) -> Result<(), CliError> {
    use ferrofem_cuda::wave::MAX_GPU_ORDER;
    if a.order.iter().any(|&p| !(1..=MAX_GPU_ORDER).contains(&p)) || a.steps == 0 {
        return Err(CliError::Usage(format!(
            "--order takes orders 1 to {MAX_GPU_ORDER} on the GPU and --steps at least 1"
        )));
    }
    if !(a.elements >= 1.0 && a.elements <= 1e9) {
        return Err(CliError::Usage("--elements: 1 to 1e9".into()));
    }
    let gpu_err = |e| CliError::Pipeline(ferrofem_driver::PipelineError::Gpu(e));
    let copy = ferrofem_cuda::blas::copy_bandwidth(dev, 1 << 30, 20).map_err(gpu_err)? / 1e9;
    run_orders(a, dev.name(), copy, |p| match a.precision {
        Precision::F64 => measure_gpu::<f64>(a, p, dev, copy),
        Precision::F32 => measure_gpu::<f32>(a, p, dev, copy),
    })
}

#[cfg(feature = "cuda")]
fn measure_gpu<T: ferrofem_cuda::GpuReal>(
    a: &WaveBenchArgs,
    order: usize,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
    copy: f64,
) -> Result<Record, CliError> {
    let d = a.dim as usize;
    let gpu_err = |e| CliError::Pipeline(ferrofem_driver::PipelineError::Gpu(e));
    let (sim, elements) = bench_simulation::<T>(a, order)?;
    let dofs = sim.space().num_dofs();
    let gpu = ferrofem_cuda::wave::GpuWave::new(dev, &sim).map_err(gpu_err)?;
    drop(sim);
    let model = gpu.model();
    let t = gpu.benchmark(5, a.steps).map_err(gpu_err)?;
    let per_step = t.step;
    Ok(Record {
        bench: "wave",
        backend: format!("cuda ({})", dev.name()),
        kind: kind_name(a.kind),
        dim: d,
        order,
        precision: T::NAME,
        threads: 0,
        elements,
        dofs,
        steps: a.steps,
        seconds_per_step: per_step,
        seconds_per_element_step: per_step / elements as f64,
        stiffness_share: (t.stiffness / per_step).min(1.0),
        gdof_steps_per_s: dofs as f64 / per_step / 1e9,
        model_bytes_per_step: model.bytes,
        model_flops_per_step: model.flops,
        gbytes_per_s: model.bytes / per_step / 1e9,
        gflops_per_s: model.flops / per_step / 1e9,
        copy_gbytes_per_s: copy,
        roofline_fraction: model.bytes / per_step / 1e9 / copy,
    })
}
