//! `ferrofem solve`: solve a problem file's model (`ferrofem solve problem.toml`: derived
//! fields, boundary integrals, probes) or a manufactured problem (its error), and report
//! timing and output.

use crate::error::CliError;
use crate::mesh_source::Loaded;
use crate::problem_args::ProblemArgs;
use clap::Args;
use ferrofem_driver::file::Outputs;
use ferrofem_driver::post::{
    boundary_integrals, derived_fields, locate_probes, probe_values, region_integrals,
    write_probes_csv, BoundaryIntegral, LocatedProbe, RegionIntegral,
};
use ferrofem_driver::{
    select, solve_problem_with_fallback, solve_with_fallback, write_solution_vtu, Backend,
    BackendArg, OperatorKind, Preconditioner, ProblemFile, ProblemKind, Progress, Solution,
    SolveReport, SolveSettings, SolverKind,
};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// The default iteration limit of the Krylov solve.
const DEFAULT_MAX_ITER: usize = 10_000;

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
    #[arg(long, default_value_t = DEFAULT_MAX_ITER, value_parser = crate::problem_args::ranges::usize_from(1))]
    max_iter: usize,
    /// What the Krylov solver applies: the operator matrix-free, or the reduced matrix
    /// assembled once (on the GPU: assembled on the device, SpMV there). `--solver direct`
    /// always assembles; the nonlinear problem's Newton–GMRES is matrix-free only.
    #[arg(long, value_enum)]
    operator: Option<OperatorKind>,
    /// Preconditioner of PCG and GMRES: jacobi, or chebyshev (a degree-3 Chebyshev
    /// polynomial in the Jacobi-preconditioned operator).
    #[arg(long, value_enum)]
    preconditioner: Option<Preconditioner>,
    /// Where to run (default: auto, or the problem file's `[solver] backend`).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Write the solution, the exact solution and the error to a VTU file for ParaView.
    #[arg(long, short, value_name = "FILE.vtu")]
    output: Option<PathBuf>,
    /// Print one JSON object instead of the text summary (no progress display).
    #[arg(long)]
    json: bool,
}

/// What a solve prints: the JSON record, or the text summary made of the same.
#[derive(Serialize)]
struct Record<'a> {
    /// Where the mesh came from (its counts are in the report).
    mesh: &'a str,
    backend: String,
    backend_note: Option<String>,
    /// MPI ranks the problem was split over (1: not split).
    ranks: usize,
    #[serde(flatten)]
    report: &'a SolveReport,
    /// Region integrals (problem files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    regions: Vec<RegionIntegral>,
    /// Boundary integrals (problem files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    boundaries: Vec<BoundaryIntegral>,
    /// Probe values (problem files): name, point, columns and values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    probes: Vec<ProbeRecord>,
    output: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    probes_file: Option<String>,
    /// The fields in the output file.
    #[serde(skip)]
    fields: Vec<&'static str>,
    /// Peak resident memory of each rank, bytes.
    peak_memory_per_rank: Vec<u64>,
}

/// One probe point's values.
#[derive(Serialize)]
struct ProbeRecord {
    name: String,
    at: Vec<f64>,
    values: Vec<(String, f64)>,
}

/// Runs `ferrofem solve`: a problem file when the positional FILE ends in `.toml`, else
/// a manufactured problem.
pub fn run(a: SolveArgs) -> Result<(), CliError> {
    if ferrofem_dist::launched_in_parallel() {
        return run_on_ranks(&a);
    }
    if let Some(path) = a.problem.source.file.clone() {
        if path.extension().is_some_and(|e| e == "toml") {
            return run_file(&path, a);
        }
    }
    let start = Instant::now();
    let requested = a.backend.unwrap_or(BackendArg::Auto);
    // `cuda` without a usable GPU is refused before the mesh is loaded
    let selected = select(requested)?;
    let progress = Progress::stderr(a.json);
    progress.stage("loading the mesh");
    let (loaded, info) = a.problem.load_mesh()?;
    let mesh_time = start.elapsed().as_secs_f64();
    let settings = SolveSettings {
        solver: a.solver,
        precision: a.problem.precision,
        rtol: a.rtol,
        max_iter: a.max_iter,
        operator: a.operator.unwrap_or_default(),
        preconditioner: a.preconditioner.unwrap_or_default(),
    };
    let result = solve_with_fallback(
        &loaded.mesh,
        &a.problem.options(),
        &settings,
        requested,
        selected,
        &progress,
    );
    let (solution, used) = finish_on_error(result, &progress)?;
    let outputs = Outputs {
        vtu: a.output.clone(),
        probes: None,
    };
    report(
        &a,
        &loaded,
        &info.origin,
        solution,
        used,
        &outputs,
        &[],
        start,
        mesh_time,
        &progress,
    )
}

/// Stops the progress display before an error is returned.
fn finish_on_error<T>(
    result: Result<T, ferrofem_driver::PipelineError>,
    progress: &Progress,
) -> Result<T, CliError> {
    result.map_err(|e| {
        progress.finish();
        e.into()
    })
}

/// Refuses the manufactured problem's options next to a problem file (the file defines the
/// problem); `--backend`, `--precision`-free options `--solver`, `--rtol`, `--max-iter`,
/// `--output` and `--json` are allowed and override the file.
fn check_file_options(a: &SolveArgs) -> Result<(), CliError> {
    let p = &a.problem;
    let mut given = Vec::new();
    if p.source.box_spec.is_some() || p.mesh.is_some() {
        given.push("--box/--mesh");
    }
    if p.source.refine != 0 {
        given.push("--refine");
    }
    if p.problem != ProblemKind::Poisson {
        given.push("--problem");
    }
    if p.order != 1 {
        given.push("--order");
    }
    if p.dirichlet.is_some() {
        given.push("--dirichlet");
    }
    if p.kappa != 1.0 || p.lambda != 1.0 || p.mu != 1.0 {
        given.push("--kappa/--lambda/--mu");
    }
    if p.precision != ferrofem_driver::Precision::F64 {
        given.push("--precision");
    }
    if given.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(format!(
            "{} define a manufactured problem; with a problem file, set them in the file \
             (the command line may override --backend, --solver, --rtol, --max-iter, \
             --output and --json)",
            given.join(", ")
        )))
    }
}

/// `ferrofem solve problem.toml`.
fn run_file(path: &std::path::Path, a: SolveArgs) -> Result<(), CliError> {
    let start = Instant::now();
    check_file_options(&a)?;
    let file = ProblemFile::read(path)?;
    let def = file.definition()?;
    let requested = a.backend.unwrap_or(def.backend);
    let selected = select(requested)?;
    let progress = Progress::stderr(a.json);
    progress.stage("loading the mesh and setting up the problem");
    let case = finish_on_error(file.setup(), &progress)?;
    let mesh_time = start.elapsed().as_secs_f64();
    let probes = finish_on_error(locate_probes(&case.mesh.mesh, &case.probes), &progress)?;
    let mut settings = case.settings.clone();
    if a.solver.is_some() {
        settings.solver = a.solver;
    }
    if let Some(o) = a.operator {
        settings.operator = o;
    }
    if let Some(p) = a.preconditioner {
        settings.preconditioner = p;
    }
    if a.rtol.is_some() {
        settings.rtol = a.rtol;
    }
    if a.max_iter != DEFAULT_MAX_ITER {
        settings.max_iter = a.max_iter;
    }
    let result = solve_problem_with_fallback(
        &case.mesh.mesh,
        &case.problem,
        &settings,
        requested,
        selected,
        &progress,
    );
    let (solution, used) = finish_on_error(result, &progress)?;
    let mut outputs = case.outputs.clone();
    if a.output.is_some() {
        outputs.vtu = a.output.clone();
    }
    // the file's output directories are made, as a user writing `out/u.vtu` expects
    for path in [&outputs.vtu, &outputs.probes].into_iter().flatten() {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| CliError::Usage(format!("cannot create {}: {e}", dir.display())))?;
        }
    }
    let origin = format!("{} ({})", case.mesh.origin, path.display());
    report(
        &a, &case.mesh, &origin, solution, used, &outputs, &probes, start, mesh_time, &progress,
    )
}

/// Post-processing (models), outputs and the report, text or JSON.
#[allow(clippy::too_many_arguments)]
fn report(
    a: &SolveArgs,
    loaded: &Loaded,
    origin: &str,
    mut solution: Solution,
    used: Backend,
    outputs: &Outputs,
    probes: &[LocatedProbe],
    start: Instant,
    mesh_time: f64,
    progress: &Progress,
) -> Result<(), CliError> {
    let mesh = &loaded.mesh;
    let (backend, backend_note) = (used.name(), used.fallback_note());
    let t = Instant::now();
    let (fields, regions, boundaries) = match solution.problem.model() {
        Some(model) => {
            progress.stage("derived quantities and integrals");
            let fields = finish_on_error(
                derived_fields(mesh, &solution.problem.space, model, &solution.u),
                progress,
            )?;
            let regions = finish_on_error(
                region_integrals(mesh, &solution.problem, &solution.u),
                progress,
            )?;
            let boundaries = finish_on_error(
                boundary_integrals(mesh, &solution.problem, &solution.u),
                progress,
            )?;
            (fields, regions, boundaries)
        }
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let (columns, rows) = finish_on_error(
        probe_values(&solution.problem.space, &solution.u, &fields, probes),
        progress,
    )?;
    if let Some(path) = &outputs.probes {
        finish_on_error(
            write_probes_csv(path, mesh.dim(), probes, &columns, &rows),
            progress,
        )?;
    }
    if let Some(path) = &outputs.vtu {
        progress.stage(format!("writing {}", path.display()));
        let extra: Vec<(&str, &[f64])> = fields.iter().map(|f| (f.name, &f.values[..])).collect();
        finish_on_error(write_solution_vtu(path, mesh, &solution, &extra), progress)?;
    }
    solution.report.timings.output = t.elapsed().as_secs_f64();
    progress.finish();
    let r = &mut solution.report;
    r.timings.mesh = mesh_time;
    r.timings.total = start.elapsed().as_secs_f64();
    let output = outputs.vtu.as_ref().map(|p| p.display().to_string());
    let probe_records: Vec<ProbeRecord> = probes
        .iter()
        .zip(&rows)
        .map(|(p, row)| ProbeRecord {
            name: p.name.clone(),
            at: p.x[..mesh.dim()].to_vec(),
            values: columns.iter().cloned().zip(row.iter().copied()).collect(),
        })
        .collect();
    let names: Vec<&str> = std::iter::once("u")
        .chain(if r.errors.is_some() {
            vec!["u_exact", "error"]
        } else {
            fields.iter().map(|f| f.name).collect()
        })
        .collect();
    let rec = Record {
        mesh: origin,
        backend,
        backend_note,
        ranks: 1,
        report: r,
        regions,
        boundaries,
        probes: probe_records,
        output,
        probes_file: outputs.probes.as_ref().map(|p| p.display().to_string()),
        fields: names,
        peak_memory_per_rank: crate::peak_memory::peak_resident_bytes()
            .into_iter()
            .collect(),
    };
    print_record(a.json, &rec)
}

/// Prints `rec`: one JSON object, or the text summary.
fn print_record(json: bool, rec: &Record) -> Result<(), CliError> {
    let r = rec.report;
    let mut out = std::io::stdout().lock();
    if json {
        // the record lists the warnings; stderr shows them to a person too
        for warning in &r.warnings {
            eprintln!("warning: {warning}");
        }
        serde_json::to_writer(&mut out, rec)?;
        writeln!(out)?;
        return Ok(());
    }
    let (origin, backend) = (rec.mesh, &rec.backend);
    let ranks = match rec.ranks {
        1 => String::new(),
        n => format!(", {n} ranks"),
    };
    let what = if r.errors.is_some() {
        " (manufactured solution)"
    } else {
        ""
    };
    writeln!(
        out,
        "problem    {}{what}, P{} {} on {origin}{ranks}",
        r.problem, r.order, r.precision
    )?;
    writeln!(
        out,
        "mesh       {} {} cells, {} vertices",
        r.cells, r.cell_type, r.vertices
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
    if let Some(note) = &rec.backend_note {
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
    if let Some(e) = &r.errors {
        writeln!(
            out,
            "error      L2 {:.4e} (relative {:.3e}), H1-seminorm {:.4e} (relative {:.3e})",
            e.l2, e.l2_rel, e.h1, e.h1_rel
        )?;
    }
    let vec = |v: &[f64]| {
        let s: Vec<String> = v.iter().map(|x| format!("{x:.6e}")).collect();
        if s.len() == 1 {
            s[0].clone()
        } else {
            format!("({})", s.join(", "))
        }
    };
    for g in &rec.regions {
        writeln!(
            out,
            "region     {}: measure {:.6e}, ∫u {}",
            g.region,
            g.measure,
            vec(&g.integral)
        )?;
    }
    for b in &rec.boundaries {
        write!(
            out,
            "boundary   {} [{}]: measure {:.6e}, ∫f1·n {}",
            b.group,
            b.condition,
            b.measure,
            vec(&b.normal_flux)
        )?;
        if let Some(re) = &b.reaction {
            write!(out, ", reaction {}", vec(re))?;
        }
        writeln!(out)?;
    }
    for p in &rec.probes {
        let vals: Vec<String> = p
            .values
            .iter()
            .map(|(c, v)| format!("{c} {v:.6e}"))
            .collect();
        writeln!(
            out,
            "probe      {} at {}: {}",
            p.name,
            vec(&p.at),
            vals.join(", ")
        )?;
    }
    for warning in &r.warnings {
        writeln!(out, "warning    {warning}")?;
    }
    let t = &r.timings;
    if let Some(line) = crate::peak_memory::memory_line(&rec.peak_memory_per_rank) {
        writeln!(out, "memory     {line}")?;
    }
    writeln!(
        out,
        "time       {:.3} s total: mesh {:.3}, setup {:.3}, assembly {:.3}, solve {:.3}, errors {:.3}, output {:.3}",
        t.total, t.mesh, t.setup, t.assembly, t.solve, t.errors, t.output
    )?;
    match &rec.output {
        Some(p) => writeln!(out, "output     {p} (fields {})", rec.fields.join(", "))?,
        None => writeln!(out, "output     none (use --output FILE.vtu)")?,
    }
    if let Some(p) = &rec.probes_file {
        writeln!(out, "probes     {p}")?;
    }
    Ok(())
}

/// `mpirun -np N ferrofem solve FILE.toml`: the file's problem split over the ranks; rank
/// 0 prints the report. An error on any rank ends the whole job (the other ranks may be
/// waiting for it in an exchange).
#[cfg(feature = "mpi")]
fn run_on_ranks(a: &SolveArgs) -> Result<(), CliError> {
    use ferrofem_dist::Communicator;
    let path = a
        .problem
        .source
        .file
        .as_ref()
        .filter(|p| p.extension().is_some_and(|e| e == "toml"));
    let Some(path) = path else {
        return Err(CliError::Usage(
            "a solve on several ranks takes a problem file (FILE.toml)".into(),
        ));
    };
    check_file_options(a)?;
    let comm = std::sync::Arc::new(
        ferrofem_dist::MpiComm::init().map_err(ferrofem_driver::PipelineError::from)?,
    );
    let rank = comm.rank();
    let run = || -> Result<(), CliError> {
        let file = ProblemFile::read(path)?;
        let overrides = ferrofem_driver::SolveOverrides {
            solver: a.solver,
            rtol: a.rtol,
            max_iter: (a.max_iter != DEFAULT_MAX_ITER).then_some(a.max_iter),
            operator: a.operator,
            preconditioner: a.preconditioner,
            backend: a.backend,
            vtu: a.output.clone(),
        };
        let s = ferrofem_driver::solve_file_on_ranks(&comm, &file, &overrides)?;
        let memory = crate::ranks::peak_memory_of_ranks(&*comm)?;
        if rank != 0 {
            return Ok(());
        }
        let origin = format!("{} ({})", s.origin, path.display());
        let rec = Record {
            mesh: &origin,
            backend: s.backend.into(),
            backend_note: s.backend_note.clone(),
            ranks: comm.size(),
            report: &s.report,
            regions: s.regions.clone(),
            boundaries: s.boundaries.clone(),
            probes: s
                .probes
                .iter()
                .map(|(name, x, row)| ProbeRecord {
                    name: name.clone(),
                    at: x[..s.dim].to_vec(),
                    values: s
                        .probe_columns
                        .iter()
                        .cloned()
                        .zip(row.iter().copied())
                        .collect(),
                })
                .collect(),
            output: s.vtu.as_ref().map(|p| p.display().to_string()),
            probes_file: s.probes_file.as_ref().map(|p| p.display().to_string()),
            fields: s.fields.clone(),
            peak_memory_per_rank: memory,
        };
        print_record(a.json, &rec)
    };
    crate::ranks::run_or_abort(&comm, run);
    Ok(())
}

/// Without MPI a launch on several ranks would solve the whole problem once per rank.
#[cfg(not(feature = "mpi"))]
fn run_on_ranks(_: &SolveArgs) -> Result<(), CliError> {
    Err(crate::ranks::without_mpi())
}
