//! The CPU's linear solves: the assembled reduced system factored by faer (`direct`), or
//! the matrix-free constrained Jacobian action solved for the correction `w = u − g̃` by
//! CG, Jacobi-PCG or Jacobi-GMRES (see [`crate::cpu`]).

use super::counted::Counted;
use super::robin::WithRobin;
use crate::krylov::{krylov_name, krylov_options, preconditioner_name, run_krylov};
use crate::linear_system::{assemble_system_of, BcMode, LinearSystem};
use crate::pipeline_error::PipelineError;
use crate::policy::{accept_accuracy_limit, GMRES_RESTART};
use crate::report::{ratio, ResidualReport};
use crate::seam::{Outcome, SolveCase};
use crate::settings::SolverKind;
use crate::terms::{correction_rhs, norm2, to_f64};
use ferrofem_base::{LinearOperator, Real};
use ferrofem_operator::{add_boundary_values, ConstrainedOperator, FormOperator};
use ferrofem_physics::Physics;
use ferrofem_solver::{CpuSpace, DirectFactorization, DirectKind};
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

/// The reduced system (Dirichlet dofs eliminated) and the seconds it took.
fn reduced_system<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<(LinearSystem<T>, f64), PipelineError> {
    let t = Instant::now();
    case.progress.stage("assembling the matrix");
    let neumann = case.neumann::<T>()?;
    let sys = assemble_system_of(op, case.problem, &neumann, BcMode::Dirichlet)?;
    Ok((sys, t.elapsed().as_secs_f64()))
}

/// The full solution: the boundary values, and `x` at the free dofs of `sys`.
fn full_solution<T: Real>(case: &SolveCase<'_>, sys: &LinearSystem<T>, x: &[T]) -> Vec<f64> {
    let mut u = case.problem.boundary_values.clone();
    for (&d, &v) in sys.dof_map.free().iter().zip(x) {
        u[d as usize] = v.as_f64();
    }
    u
}

/// Assembled reduced system, Cholesky (symmetric) or LU.
pub(super) fn direct<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<Outcome, PipelineError> {
    let (sys, assembly) = reduced_system(case, op)?;
    let t = Instant::now();
    case.progress.stage(format!(
        "factorising the {} x {} matrix ({} nonzeros)",
        sys.matrix.nrows(),
        sys.matrix.ncols(),
        sys.matrix.nnz()
    ));
    let kind = if sys.symmetric {
        DirectKind::Cholesky
    } else {
        DirectKind::Lu
    };
    let x: Vec<T> = DirectFactorization::new(&sys.matrix, kind)?.solve(&sys.rhs)?;
    let solve = t.elapsed().as_secs_f64();
    let mut ax = vec![T::zero(); x.len()];
    sys.matrix.matvec(&x, &mut ax);
    let b_norm = norm2(&sys.rhs);
    let r_norm = norm2(
        &sys.rhs
            .iter()
            .zip(&ax)
            .map(|(&b, &a)| b - a)
            .collect::<Vec<T>>(),
    );
    Ok(Outcome {
        u: full_solution(case, &sys, &x),
        method: format!(
            "assembled ({} nonzeros), sparse {} (faer)",
            sys.matrix.nnz(),
            if kind == DirectKind::Cholesky {
                "Cholesky"
            } else {
                "LU"
            }
        ),
        iterations: 0,
        newton: None,
        residual: ResidualReport {
            initial: b_norm,
            last: r_norm,
            relative: ratio(r_norm, b_norm),
            recursive: None,
        },
        setup: 0.0,
        assembly,
        solve,
        warnings: Vec::new(),
    })
}

/// The Krylov solve of `op x = b` from `x = 0` by `case.solver` (Jacobi-preconditioned
/// by `op`'s diagonal for PCG and GMRES), counted in the progress display; the statistics
/// and the warnings of a solve stopped at the precision's limit.
fn krylov<T: Real, A: LinearOperator<T>>(
    case: &SolveCase<'_>,
    op: &A,
    b: &Vec<T>,
    x: &mut Vec<T>,
) -> Result<(ferrofem_solver::SolveStats, Vec<String>), PipelineError> {
    let counted = Counted {
        op,
        progress: case.progress,
        label: case.solver.name(),
        applies: AtomicUsize::new(0),
    };
    let space = if preconditioned(case.solver) {
        case.progress.stage("Jacobi diagonal");
        let diag = op.diagonal().unwrap_or_default();
        CpuSpace::with_jacobi(&counted, &diag)?
    } else {
        CpuSpace::new(&counted)?
    };
    let opts = krylov_options(case.settings);
    let result = run_krylov(
        &space,
        case.solver,
        case.settings.preconditioner,
        b,
        x,
        &opts,
    );
    let mut warnings = Vec::new();
    let stats = accept_accuracy_limit(result, &mut warnings)?;
    Ok((stats, warnings))
}

/// Whether `solver` is Jacobi-preconditioned.
fn preconditioned(solver: SolverKind) -> bool {
    matches!(solver, SolverKind::Pcg | SolverKind::Gmres)
}

/// CG, Jacobi-PCG or Jacobi-GMRES on the assembled reduced system (Dirichlet dofs
/// eliminated).
pub(super) fn assembled<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<Outcome, PipelineError> {
    let (sys, assembly) = reduced_system(case, op)?;
    let t = Instant::now();
    let mut x = vec![T::zero(); sys.rhs.len()];
    let (stats, warnings) = krylov(case, &sys.matrix, &sys.rhs, &mut x)?;
    let solve = t.elapsed().as_secs_f64();
    Ok(Outcome {
        u: full_solution(case, &sys, &x),
        method: format!(
            "assembled ({} nonzeros), {}",
            sys.matrix.nnz(),
            krylov_name(case.solver, case.settings.preconditioner, None)
        ),
        iterations: stats.iterations,
        newton: None,
        residual: ResidualReport::of_krylov(&stats),
        setup: 0.0,
        assembly,
        solve,
        warnings,
    })
}

/// Matrix-free CG/PCG on the constrained operator.
pub(super) fn matrix_free<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
) -> Result<Outcome, PipelineError> {
    let t = Instant::now();
    case.progress.stage("right-hand side and boundary lifting");
    let constrained = &case.problem.dirichlet_dofs;
    let b = correction_rhs(op, case.problem, &case.neumann::<T>()?)?;
    let cop = ConstrainedOperator::new(
        WithRobin {
            op: op.linearize(&[]),
            robin: case.problem.robin::<T>(),
        },
        constrained,
    )?;
    let assembly = t.elapsed().as_secs_f64();
    let t = Instant::now();
    // the correction w = u − g̃ from w = 0: the constrained rows carry no right-hand side
    let mut x = vec![T::zero(); b.len()];
    let (stats, warnings) = krylov(case, &cop, &b, &mut x)?;
    let solve = t.elapsed().as_secs_f64();
    let mut u = to_f64(&x);
    add_boundary_values(&mut u, constrained, &case.problem.boundary_values)?;
    Ok(Outcome {
        u,
        method: format!(
            "matrix-free Jacobian action, {}{}",
            if preconditioned(case.solver) {
                format!(
                    "{} preconditioner",
                    preconditioner_name(case.settings.preconditioner)
                )
            } else {
                "no preconditioner".to_string()
            },
            if case.solver == SolverKind::Gmres {
                format!(" (right), GMRES({GMRES_RESTART})")
            } else {
                String::new()
            }
        ),
        iterations: stats.iterations,
        newton: None,
        residual: ResidualReport::of_krylov(&stats),
        setup: 0.0,
        assembly,
        solve,
        warnings,
    })
}
