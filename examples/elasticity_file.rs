//! Kirsch's plate with a hole from its problem file, through the library: read and set up
//! the file, solve (GPU when one is usable, else the CPU), and read the stress
//! concentration factor at the top of the hole from the derived stress field.
//!
//! `cargo run --release --example elasticity_file [PROBLEM.toml]`

use ferrofem::driver::post::{derived_fields, locate_probes, probe_values};
use ferrofem::driver::{select, solve_problem_with_fallback, ProblemFile, Progress};
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/plate_hole.toml")
        });
    // every key, region, expression and parameter is checked here, before any solve
    let file = ProblemFile::read(&path)?;
    let case = file.setup()?;
    let mesh = &case.mesh.mesh;
    println!(
        "{}: {} on {} ({} cells), P{}, {} dofs",
        path.display(),
        case.problem.name(),
        case.mesh.origin,
        mesh.num_cells(),
        case.problem.order(),
        case.problem.num_dofs()
    );
    let backend = select(case.backend)?;
    let (solution, used) = solve_problem_with_fallback(
        mesh,
        &case.problem,
        &case.settings,
        case.backend,
        backend,
        &Progress::hidden(),
    )?;
    println!(
        "solved on {} in {:.3} s: {} ({} iterations)",
        used.name(),
        solution.report.timings.solve,
        solution.report.method,
        solution.report.iterations
    );
    let model = solution
        .problem
        .model()
        .ok_or("not a problem file's model")?;
    let fields = derived_fields(mesh, &solution.problem.space, model, &solution.u)?;
    let probes = locate_probes(mesh, &case.probes)?;
    let (columns, rows) = probe_values(&solution.problem.space, &solution.u, &fields, &probes)?;
    let column = |name: &str| columns.iter().position(|c| c == name);
    if let (Some(sxx), Some(top)) = (
        column("stress_0"),
        probes.iter().position(|p| p.name == "hole_top"),
    ) {
        let scf = rows[top][sxx];
        println!(
            "stress concentration σ_xx(0, a)/S = {scf:.5} (Kirsch: 3, error {:.3} %)",
            100.0 * (scf - 3.0).abs() / 3.0
        );
    }
    Ok(())
}
