//! `ferrofem assemble`: assemble a problem's matrix and right-hand side and export them
//! (Matrix Market) with the dof coordinates (CSV).

use crate::error::CliError;
use crate::problem_args::{MeshInfo, ProblemArgs};
use clap::Args;
use ferrofem_cuda::assembly::GpuStrategy;
use ferrofem_driver::{
    assemble_problem, assemble_problem_gpu, select, Backend, BackendArg, BcMode, PipelineError,
    Problem,
};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Options of `ferrofem assemble`.
#[derive(Args, Debug)]
pub struct AssembleArgs {
    #[command(flatten)]
    problem: ProblemArgs,
    /// Boundary conditions of the exported system: none (all dofs, the full matrix),
    /// Dirichlet dofs eliminated (the reduced system), or identity (every dof, the
    /// eliminated rows with an identity row and the prescribed value at each Dirichlet dof).
    #[arg(long, value_enum, default_value_t = BcMode::Dirichlet)]
    bc: BcMode,
    /// Write the matrix (Matrix Market; symmetric storage for symmetric problems).
    #[arg(long, value_name = "A.mtx")]
    export_matrix: Option<PathBuf>,
    /// Write the right-hand side (Matrix Market array).
    #[arg(long, value_name = "b.mtx")]
    export_rhs: Option<PathBuf>,
    /// Write the dof table (CSV: dof, node, component, x, y[, z][, reduced]).
    #[arg(long, value_name = "dofs.csv")]
    export_dofs: Option<PathBuf>,
    /// Where to assemble: the CPU, or the GPU (auto: the GPU when one is usable; triangles
    /// and tetrahedra without Robin conditions).
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// The GPU assembly strategy: auto (the fastest by the measured table), atomic,
    /// elem-color, global-nz, shared-nz, block-sums or local-row.
    #[arg(long, default_value = "auto", value_parser = gpu_strategy)]
    strategy: StrategyChoice,
    /// Print one JSON object instead of the text summary.
    #[arg(long)]
    json: bool,
}

/// `--strategy`: a GPU strategy, or `None` for the measured table's.
#[derive(Clone, Copy, Debug)]
struct StrategyChoice(Option<GpuStrategy>);

fn gpu_strategy(s: &str) -> Result<StrategyChoice, String> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(StrategyChoice(None));
    }
    let names: Vec<&str> = GpuStrategy::ALL.iter().map(|s| s.name()).collect();
    GpuStrategy::parse(s)
        .map(|g| StrategyChoice(Some(g)))
        .ok_or_else(|| format!("give auto, {}", names.join(", ")))
}

#[derive(Serialize)]
struct Timings {
    mesh: f64,
    setup: f64,
    assembly: f64,
    output: f64,
    total: f64,
}

#[derive(Serialize)]
struct Record<'a> {
    problem: String,
    mesh: &'a MeshInfo,
    backend: String,
    order: usize,
    precision: &'static str,
    bc: BcMode,
    dofs: usize,
    constrained_dofs: usize,
    rows: usize,
    cols: usize,
    nnz: usize,
    symmetric: bool,
    timings: Timings,
    matrix: Option<String>,
    rhs: Option<String>,
    dof_table: Option<String>,
}

/// Runs `ferrofem assemble`.
pub fn run(a: AssembleArgs) -> Result<(), CliError> {
    let start = Instant::now();
    let backend = select(a.backend)?;
    if !backend.is_gpu() && a.strategy.0.is_some() {
        return Err(CliError::Usage(
            "--strategy chooses a GPU assembly strategy: give --backend cuda".to_string(),
        ));
    }
    let (loaded, info) = a.problem.load_mesh()?;
    let mesh = &loaded.mesh;
    let mesh_time = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let problem = Problem::new(mesh, &a.problem.options())?;
    let setup = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let (sys, where_) = match &backend {
        Backend::Cuda(dev) => {
            let space = &problem.space;
            let s = a.strategy.0.unwrap_or_else(|| {
                GpuStrategy::auto(space.element().cell_type(), space.order(), space.ncomp())
            });
            match assemble_problem_gpu(dev, mesh, &problem, a.bc, a.problem.precision, Some(s)) {
                Ok(sys) => (sys, format!("cuda ({}), {}", dev.name(), s.name())),
                // what the GPU does not cover runs on the CPU under auto
                Err(PipelineError::NoGpuPath(why)) if a.backend == BackendArg::Auto => (
                    assemble_problem(mesh, &problem, a.bc, a.problem.precision)?,
                    format!("cpu ({why})"),
                ),
                Err(e) => return Err(e.into()),
            }
        }
        _ => (
            assemble_problem(mesh, &problem, a.bc, a.problem.precision)?,
            backend.name(),
        ),
    };
    let assembly = t.elapsed().as_secs_f64();
    let t = Instant::now();
    if let Some(p) = &a.export_matrix {
        sys.write_matrix(p)?;
    }
    if let Some(p) = &a.export_rhs {
        sys.write_rhs(p)?;
    }
    if let Some(p) = &a.export_dofs {
        sys.write_dofs(p, &problem)?;
    }
    let output = t.elapsed().as_secs_f64();
    let shown = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
    let rec = Record {
        problem: problem.name().to_string(),
        mesh: &info,
        backend: where_,
        order: problem.order(),
        precision: a.problem.precision.name(),
        bc: a.bc,
        dofs: problem.num_dofs(),
        constrained_dofs: match a.bc {
            BcMode::None => 0,
            BcMode::Dirichlet | BcMode::Identity => problem.dirichlet_dofs.len(),
        },
        rows: sys.matrix.nrows(),
        cols: sys.matrix.ncols(),
        nnz: sys.matrix.nnz(),
        symmetric: sys.symmetric,
        timings: Timings {
            mesh: mesh_time,
            setup,
            assembly,
            output,
            total: start.elapsed().as_secs_f64(),
        },
        matrix: shown(&a.export_matrix),
        rhs: shown(&a.export_rhs),
        dof_table: shown(&a.export_dofs),
    };
    let mut out = std::io::stdout().lock();
    if a.json {
        serde_json::to_writer(&mut out, &rec)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "problem    {} P{} {} on {} ({} {} cells)",
        rec.problem, rec.order, rec.precision, info.origin, info.cells, info.cell_type
    )?;
    writeln!(
        out,
        "system     {} x {}, {} nonzeros, {}; {}",
        rec.rows,
        rec.cols,
        rec.nnz,
        if rec.symmetric {
            "symmetric"
        } else {
            "nonsymmetric"
        },
        match a.bc {
            BcMode::None => "no boundary conditions (all dofs)".to_string(),
            BcMode::Dirichlet => format!(
                "{} Dirichlet dofs ({}) eliminated",
                rec.constrained_dofs,
                problem.dirichlet_description()
            ),
            BcMode::Identity => format!(
                "{} Dirichlet dofs ({}) as identity rows",
                rec.constrained_dofs,
                problem.dirichlet_description()
            ),
        }
    )?;
    writeln!(out, "assembled  on {}", rec.backend)?;
    let t = &rec.timings;
    writeln!(
        out,
        "time       {:.3} s total: mesh {:.3}, setup {:.3}, assembly {:.3}, output {:.3}",
        t.total, t.mesh, t.setup, t.assembly, t.output
    )?;
    let written: Vec<&str> = [&rec.matrix, &rec.rhs, &rec.dof_table]
        .into_iter()
        .flatten()
        .map(|s| s.as_str())
        .collect();
    if written.is_empty() {
        writeln!(
            out,
            "wrote      nothing (use --export-matrix, --export-rhs, --export-dofs)"
        )?;
    } else {
        writeln!(out, "wrote      {}", written.join(", "))?;
    }
    Ok(())
}
