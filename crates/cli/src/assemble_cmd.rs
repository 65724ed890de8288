//! `ferrofem assemble`: assemble a problem's matrix and right-hand side and export them
//! (Matrix Market) with the dof coordinates (CSV).

use crate::error::CliError;
use crate::problem_args::{MeshInfo, ProblemArgs};
use clap::Args;
use ferrofem_driver::{assemble_problem, BcMode, Problem};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Options of `ferrofem assemble`.
#[derive(Args, Debug)]
pub struct AssembleArgs {
    #[command(flatten)]
    problem: ProblemArgs,
    /// Boundary conditions of the exported system: none (all dofs, the full matrix) or
    /// Dirichlet dofs eliminated (the reduced system).
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
    /// Print one JSON object instead of the text summary.
    #[arg(long)]
    json: bool,
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
    let (loaded, info) = a.problem.load_mesh()?;
    let mesh = &loaded.mesh;
    let mesh_time = start.elapsed().as_secs_f64();
    let t = Instant::now();
    let problem = Problem::new(mesh, &a.problem.options())?;
    let setup = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let sys = assemble_problem(mesh, &problem, a.bc, a.problem.precision)?;
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
        order: problem.order(),
        precision: a.problem.precision.name(),
        bc: a.bc,
        dofs: problem.num_dofs(),
        constrained_dofs: sys.dof_map.constrained().len(),
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
        }
    )?;
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
