//! A rank's part of a distributed linear solve on its GPU (`mpirun -np N ferrofem solve
//! FILE.toml --backend cuda`): the serial GPU solve's matrix-free kernel on the part's
//! cells ([`super::linear::matrix_free_operator`]), its products summed at the shared dofs
//! through the device halo and its dot products over the owned dofs
//! ([`GpuPartKrylov`]); the right-hand side is the CPU ranks' consistent, lifted load.
//!
//! A constrained dof is an identity row on the rank that owns it and a zero row on the
//! other holders, so the sum over the holders is the identity once; the Jacobi diagonal is
//! summed over the holders, then set to one on the constrained rows.

use super::linear::{matrix_free_operator, needs_jacobi, DeviceOperator, MatrixFree};
use crate::krylov::{krylov_name, krylov_options, run_krylov};
use crate::pipeline_error::PipelineError;
use crate::policy::accept_accuracy_limit;
use crate::problem::Problem;
use crate::settings::{SolveSettings, SolverKind};
use ferrofem_base::Real;
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::krylov::Constrained;
use ferrofem_cuda::part_krylov::GpuPartKrylov;
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
use ferrofem_mesh::Mesh;
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use ferrofem_solver::SolveStats;
use ferrofem_wave::NodeExchange;
use std::sync::Arc;
use std::time::Instant;

/// The distributed system of one rank, as the CPU ranks set it up.
pub(crate) struct PartSystem<'a> {
    /// The exchange of the problem's space on this part (collective calls).
    pub exchange: &'a Arc<dyn NodeExchange>,
    /// The right-hand side for the correction to the lifted boundary values: consistent
    /// across the holders, zero on the constrained dofs (the space's numbering).
    pub b: &'a [f64],
    /// The dofs constrained on any holder (the space's numbering).
    pub constrained: &'a [u32],
}

/// What a rank's GPU solve gives back.
pub(crate) struct PartGpuSolve {
    /// The correction, in the space's numbering (zero on the constrained dofs).
    pub w: Vec<f64>,
    pub stats: SolveStats,
    pub method: String,
    /// Building the operator, its diagonal and the halo, seconds.
    pub build: f64,
    /// The Krylov solve, seconds.
    pub solve: f64,
    pub warnings: Vec<String>,
}

/// Solves the part's system on `dev`. Collective. Every rank returns the same refusal where
/// any rank's part has no GPU path (a [`PipelineError::NoGpuPath`]: a Robin condition, a
/// case the kernels do not cover), so that no rank waits for another's exchange.
pub(crate) fn solve_part_gpu<T: Real, P: Physics<T>>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    problem: &Problem,
    (settings, solver): (&SolveSettings, SolverKind),
    op: &FormOperator<T, P>,
    system: &PartSystem<'_>,
) -> Result<PartGpuSolve, PipelineError> {
    let exchange = system.exchange;
    if exchange
        .first_rank_with(problem.robin::<f64>().is_some())?
        .is_some()
    {
        return Err(PipelineError::NoGpuPath(
            "Robin conditions run on the CPU (--backend cpu)".into(),
        ));
    }
    match T::NAME {
        "f32" => run::<f32, T, P>(dev, mesh, problem, settings, solver, op, system),
        _ => run::<f64, T, P>(dev, mesh, problem, settings, solver, op, system),
    }
}

fn run<G: GpuReal, T: Real, P: Physics<T>>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    solver: SolverKind,
    op: &FormOperator<T, P>,
    system: &PartSystem<'_>,
) -> Result<PartGpuSolve, PipelineError> {
    let t = Instant::now();
    let exchange = system.exchange;
    let built = matrix_free_operator::<G>(dev, mesh, problem, op.rule());
    // every rank builds its kernel, or none solves on its GPU
    let failed = exchange.first_rank_with(built.is_err())?;
    let DeviceOperator {
        op: gop,
        scale,
        label,
        new_of,
    } = match (built, failed) {
        (Ok(d), None) => d,
        (Err(e), _) => return Err(e),
        (Ok(_), Some(r)) => {
            return Err(PipelineError::NoGpuPath(format!(
                "rank {r}'s part has no matrix-free GPU path"
            )))
        }
    };
    let ncomp = problem.space.ncomp();
    let num_nodes = problem.space.num_nodes();
    let node_of = |n: usize| new_of.as_ref().map_or(n as u32, |m| m[n]);
    let dof_of = |d: u32| node_of(d as usize / ncomp) * ncomp as u32 + d % ncomp as u32;
    let (owned, elsewhere): (Vec<u32>, Vec<u32>) = system
        .constrained
        .iter()
        .partition(|&&d| exchange.is_owned(d as usize / ncomp));
    let to_device = |v: &[u32]| v.iter().map(|&d| dof_of(d)).collect::<Vec<u32>>();
    let constrained_dev = to_device(system.constrained);
    let blas = GpuBlas::<G>::new(dev)?;
    let s = G::of(scale);
    let cop = Constrained::on_part(&gop, &blas, &to_device(&owned), &to_device(&elsewhere), s)?;
    let space = GpuPartKrylov::new(dev, &cop, &blas, exchange, num_nodes, ncomp, |n| {
        node_of(n as usize)
    })?;
    let forward = |v: &[f64]| -> Vec<G> {
        let mut out = vec![G::zero(); v.len()];
        for (d, &x) in v.iter().enumerate() {
            out[dof_of(d as u32) as usize] = G::of(x);
        }
        out
    };
    // the part's own diagonal: the bake-off kernel's on the device (scaled like the
    // operator), the CPU form operator's for the residual kernels
    let space = if needs_jacobi(solver) {
        let diag = match &gop {
            MatrixFree::Bp(bp) => {
                let mut d = bp.diagonal()?;
                if s != G::one() {
                    blas.scale(s, &mut d)?;
                }
                d
            }
            MatrixFree::Res(_) | MatrixFree::Jac(_) => {
                let d: Vec<f64> = op.diagonal(&[]).iter().map(|x| x.as_f64()).collect();
                DeviceVec::from_host(dev, &forward(&d), "Jacobi diagonal")?
            }
        };
        space.with_jacobi(diag, &constrained_dev)?
    } else {
        space
    };
    let b = DeviceVec::from_host(dev, &forward(system.b), "right-hand side")?;
    let mut x = DeviceVec::<G>::zeros(dev, b.len(), "solution")?;
    dev.synchronize()?;
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut warnings = Vec::new();
    let result = run_krylov(
        &space,
        solver,
        settings.preconditioner,
        &b,
        &mut x,
        &krylov_options(settings),
    );
    let stats = accept_accuracy_limit(result, &mut warnings).map_err(|e| super::typed(e.into()))?;
    dev.synchronize()?;
    let solve = t.elapsed().as_secs_f64();
    let on_device = x.to_host()?;
    let w = (0..on_device.len() as u32)
        .map(|d| on_device[dof_of(d) as usize].as_f64())
        .collect();
    let diag_where = match gop {
        MatrixFree::Bp(_) => "diagonal computed on the device",
        MatrixFree::Res(_) | MatrixFree::Jac(_) => "diagonal from the CPU",
    };
    Ok(PartGpuSolve {
        w,
        stats,
        method: format!(
            "GPU ({}) on each of {} ranks: {label}, {}, interface sums through {}",
            dev.name(),
            exchange.size(),
            krylov_name(solver, settings.preconditioner, Some(diag_where)),
            match space.transport() {
                "NCCL" => "NCCL",
                _ => "page-locked host memory and MPI",
            }
        ),
        build,
        solve,
        warnings,
    })
}
