//! The vectors both backends and the assembled system build a solve from: the full
//! residual `R(u) = r(u) − N`, the right-hand side of the correction solve, conversions
//! between f64 and the working precision, and norms of host vectors.

use crate::pipeline_error::PipelineError;
use crate::problem::Problem;
use ferrofem_assembly::DofMap;
use ferrofem_base::Real;
use ferrofem_operator::{lift_residual, FormOperator};
use ferrofem_physics::Physics;

/// `R(u) = r(u) − N` into `out` (full L-vectors).
pub(crate) fn full_residual<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    neumann: &[T],
    u: &[T],
    out: &mut [T],
) {
    op.residual(u, out);
    for (o, &n) in out.iter_mut().zip(neumann) {
        *o -= n;
    }
}

/// The right-hand side of the matrix-free solve for the correction `w = u − g̃` (CPU and
/// GPU): the boundary values lifted into the free rows with one residual evaluation
/// (`−r(g̃)_f`, [`lift_residual`], and `−(R g̃)_f` for a Robin term `R`) plus the
/// natural-boundary load `neumann` there, and zero on the constrained rows (so its norm is
/// that of the free equations alone).
pub(crate) fn correction_rhs<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    problem: &Problem,
    neumann: &[T],
) -> Result<Vec<T>, PipelineError> {
    let g: Vec<T> = to_real(&problem.boundary_values);
    let mut b = lift_residual(op, &problem.dirichlet_dofs, &g)?;
    let map = DofMap::new(problem.num_dofs(), &problem.dirichlet_dofs)?;
    let mut rg = vec![T::zero(); g.len()];
    add_robin(problem, &g, &mut rg);
    for &d in map.free() {
        b[d as usize] += neumann[d as usize] - rg[d as usize];
    }
    Ok(b)
}

/// `out += R u` for the problem's Robin term `R` (nothing without one).
pub(crate) fn add_robin<T: Real>(problem: &Problem, u: &[T], out: &mut [T]) {
    if let Some(r) = problem.robin::<T>() {
        let mut ru = vec![T::zero(); u.len()];
        r.matvec(u, &mut ru);
        for (o, v) in out.iter_mut().zip(ru) {
            *o += v;
        }
    }
}

/// Converts an f64 slice to `T`.
pub(crate) fn to_real<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

/// Converts a `T` slice to f64.
pub(crate) fn to_f64<T: Real>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.as_f64()).collect()
}

/// 2-norm accumulated in f64.
pub(crate) fn norm2<T: Real>(v: &[T]) -> f64 {
    v.iter().map(|x| x.as_f64().powi(2)).sum::<f64>().sqrt()
}
