//! The solution's output for ParaView.

use crate::pipeline_error::PipelineError;
use crate::report::Solution;
use ferrofem_io::{write_space_vtu, Encoding};
use ferrofem_mesh::Mesh;
use std::path::Path;

/// Writes the solution as VTU for ParaView: point fields `u` (the discrete solution,
/// `ncomp` components) and, for a manufactured problem, `u_exact` (the interpolant of the
/// manufactured solution) and `error` (their difference), plus `extra` point fields (L-vectors
/// over the space's nodes, e.g. derived quantities), on the sub-cells of the space's node
/// lattice.
pub fn write_solution_vtu(
    path: &Path,
    mesh: &Mesh,
    solution: &Solution,
    extra: &[(&str, &[f64])],
) -> Result<(), PipelineError> {
    let mut fields: Vec<(&str, &[f64])> = vec![("u", &solution.u)];
    let exact = solution.problem.exact_interpolant();
    let error: Option<Vec<f64>> = exact
        .as_ref()
        .map(|e| solution.u.iter().zip(e).map(|(u, e)| u - e).collect());
    if let (Some(e), Some(err)) = (&exact, &error) {
        fields.push(("u_exact", e));
        fields.push(("error", err));
    }
    fields.extend_from_slice(extra);
    write_space_vtu(
        path,
        mesh,
        &solution.problem.space,
        &fields,
        &[],
        Encoding::Binary,
    )?;
    Ok(())
}
