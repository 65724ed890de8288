//! `ferrofem solve`: solve a manufactured problem and report its error, timing and output.

use crate::error::CliError;
use crate::problem_args::ProblemArgs;
use clap::Args;
use ferrofem_driver::{
    select, solve_with_fallback, write_solution_vtu, BackendArg, Progress, SolveReport,
    SolveSettings, SolverKind,
};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// Options of `ferrofem solve`.
#[derive(Args, Debug)]
pub struct SolveArgs {
    #[command(flatten)]
    problem: ProblemArgs,
    /// Linear solver: matrix-free (P)CG, matrix-free Jacobi-GMRES, or assembled direct
    /// (default: pcg; for the nonlinear problem, whose Jacobian is not symmetric, direct on
    /// the CPU and gmres on the GPU).
    #[arg(long, value_enum)]
    solver: Option<SolverKind>,
    /// Relative tolerance of the Krylov solve or of Newton (default 1e-10 in f64, 1e-5 in
    /// f32).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::problem_args::ranges::rtol)]
    rtol: Option<f64>,
    /// Iteration limit of the Krylov solve.
    #[arg(long, default_value_t = 10_000, value_parser = crate::problem_args::ranges::usize_from(1))]
    max_iter: usize,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Write the solution, the exact solution and the error to a VTU file for ParaView.
    #[arg(long, short, value_name = "FILE.vtu")]
    output: Option<PathBuf>,
    /// Print one JSON object instead of the text summary (no progress display).
    #[arg(long)]
    json: bool,
}

/// The JSON record of a solve.
#[derive(Serialize)]
struct Record<'a> {
    /// Where the mesh came from (its counts are in the report).
    mesh: &'a str,
    backend: String,
    backend_note: Option<String>,
    #[serde(flatten)]
    report: &'a SolveReport,
    output: Option<String>,
}

/// Runs `ferrofem solve`.
pub fn run(a: SolveArgs) -> Result<(), CliError> {
    let start = Instant::now();
    // `cuda` without a usable GPU is refused before the mesh is loaded
    let selected = select(a.backend)?;
    let progress = Progress::stderr(a.json);
    progress.stage("loading the mesh");
    let (loaded, info) = a.problem.load_mesh()?;
    let mesh_time = start.elapsed().as_secs_f64();
    let settings = SolveSettings {
        solver: a.solver,
        precision: a.problem.precision,
        rtol: a.rtol,
        max_iter: a.max_iter,
    };
    let result = solve_with_fallback(
        &loaded.mesh,
        &a.problem.options(),
        &settings,
        a.backend,
        selected,
        &progress,
    );
    let (mut solution, used) = match result {
        Ok(s) => s,
        Err(e) => {
            progress.finish();
            return Err(e.into());
        }
    };
    let (backend, backend_note) = (used.name(), used.fallback_note());
    if let Some(path) = &a.output {
        progress.stage(format!("writing {}", path.display()));
        let t = Instant::now();
        let written = write_solution_vtu(path, &loaded.mesh, &solution);
        solution.report.timings.output = t.elapsed().as_secs_f64();
        if let Err(e) = written {
            progress.finish();
            return Err(e.into());
        }
    }
    progress.finish();
    let r = &mut solution.report;
    r.timings.mesh = mesh_time;
    r.timings.total = start.elapsed().as_secs_f64();
    let output = a.output.as_ref().map(|p| p.display().to_string());
    let mut out = std::io::stdout().lock();
    if a.json {
        // the record lists the warnings; stderr shows them to a person too
        for warning in &r.warnings {
            eprintln!("warning: {warning}");
        }
        let rec = Record {
            mesh: &info.origin,
            backend,
            backend_note,
            report: r,
            output,
        };
        serde_json::to_writer(&mut out, &rec)?;
        writeln!(out)?;
        return Ok(());
    }
    writeln!(
        out,
        "problem    {} (manufactured solution), P{} {} on {}",
        r.problem, r.order, r.precision, info.origin
    )?;
    writeln!(
        out,
        "mesh       {} {} cells, {} vertices",
        info.cells, info.cell_type, info.vertices
    )?;
    write!(
        out,
        "dofs       {} ({} free; Dirichlet on {}",
        r.dofs, r.free_dofs, r.dirichlet
    )?;
    if r.natural_facets > 0 {
        write!(out, ", natural on the other {} facets", r.natural_facets)?;
    }
    writeln!(out, ")")?;
    writeln!(out, "backend    {backend}")?;
    if let Some(note) = &backend_note {
        writeln!(out, "note       {note}")?;
    }
    write!(out, "solver     {}: {}", r.solver, r.method)?;
    if r.iterations > 0 {
        write!(out, ", {} iterations", r.iterations)?;
    }
    writeln!(
        out,
        ", relative residual {:.2e} (recomputed from the solution)",
        r.residual.relative
    )?;
    if let Some(nw) = &r.newton {
        let hist: Vec<String> = nw
            .residual_history
            .iter()
            .map(|v| format!("{v:.2e}"))
            .collect();
        writeln!(
            out,
            "newton     {} steps, ‖F‖: {}",
            nw.steps,
            hist.join(" → ")
        )?;
        if !nw.orders.is_empty() {
            let ord: Vec<String> = nw.orders.iter().map(|v| format!("{v:.2}")).collect();
            writeln!(out, "           observed orders {}", ord.join(", "))?;
        }
        if nw.linear_iterations.iter().any(|&k| k > 0) {
            let its: Vec<String> = nw.linear_iterations.iter().map(|k| k.to_string()).collect();
            writeln!(
                out,
                "           {} iterations per step {}",
                r.solver,
                its.join(", ")
            )?;
        }
    }
    writeln!(
        out,
        "error      L2 {:.4e} (relative {:.3e}), H1-seminorm {:.4e} (relative {:.3e})",
        r.errors.l2, r.errors.l2_rel, r.errors.h1, r.errors.h1_rel
    )?;
    for warning in &r.warnings {
        writeln!(out, "warning    {warning}")?;
    }
    let t = &r.timings;
    writeln!(
        out,
        "time       {:.3} s total: mesh {:.3}, setup {:.3}, assembly {:.3}, solve {:.3}, errors {:.3}, output {:.3}",
        t.total, t.mesh, t.setup, t.assembly, t.solve, t.errors, t.output
    )?;
    match &output {
        Some(p) => writeln!(out, "output     {p} (fields u, u_exact, error)")?,
        None => writeln!(out, "output     none (use --output FILE.vtu)")?,
    }
    Ok(())
}
