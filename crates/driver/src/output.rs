//! The solution's output for ParaView.

use crate::pipeline_error::PipelineError;
use crate::report::Solution;
use ferrofem_io::{write_space_vtu, Encoding};
use ferrofem_mesh::Mesh;
use std::path::Path;

/// Writes the solution as VTU for ParaView: point fields `u` (the discrete solution,
/// `ncomp` components), `u_exact` (the interpolant of the manufactured solution) and
/// `error` (their difference), on the sub-cells of the space's node lattice.
pub fn write_solution_vtu(
    path: &Path,
    mesh: &Mesh,
    solution: &Solution,
) -> Result<(), PipelineError> {
    let exact = solution.problem.exact_interpolant();
    let error: Vec<f64> = solution.u.iter().zip(&exact).map(|(u, e)| u - e).collect();
    write_space_vtu(
        path,
        mesh,
        &solution.problem.space,
        &[("u", &solution.u), ("u_exact", &exact), ("error", &error)],
        &[],
        Encoding::Binary,
    )?;
    Ok(())
}
