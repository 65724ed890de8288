//! The GPU path of `ferrofem solve` for linear problems: CG or Jacobi-PCG with every
//! vector on the device. The operator is the bake-off diffusion kernel on hexahedra
//! (Poisson) or the residual kernel of the problem's physics on triangles and tetrahedra;
//! the right-hand side (forcing, boundary lifting, Neumann load) and the Jacobi diagonal
//! come from the CPU form operator once, and Dirichlet rows are identity rows on the device.

use crate::linear_system::to_real;
use crate::problem::{Coefficient, Problem, ProblemKind};
use crate::progress::Progress;
use crate::solve::{Outcome, ResidualReport, SolveSettings, SolverKind};
use crate::PipelineError;
use ferrofem_base::{CellType, Real};
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::bp::{BpConfig, GpuBp};
use ferrofem_cuda::krylov::{Constrained, GpuKrylov, GpuLinearOperator};
use ferrofem_cuda::residual::{Aux, GpuResidual, ResidualConfig};
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::TensorKind;
use ferrofem_operator::{lift_residual, FormOperator};
use ferrofem_physics::{Elasticity, Physics, Poisson, PoissonVarCoef};
use ferrofem_solver::{cg, pcg, SolveOptions};
use std::sync::Arc;
use std::time::Instant;

fn ge(e: ferrofem_cuda::GpuError) -> PipelineError {
    PipelineError::Unsupported(format!("GPU: {e}"))
}

/// Solves the linear problem on `dev`.
pub(crate) fn linear_gpu<T: Real, P: Physics<T>>(
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    solver: SolverKind,
    op: &FormOperator<T, P>,
    progress: &Progress,
    dev: &Arc<GpuDevice>,
) -> Result<Outcome, PipelineError> {
    if !problem.is_linear() {
        return Err(PipelineError::Unsupported(
            "the GPU solve is for linear problems (the nonlinear Jacobian is not symmetric, so CG does not apply); use --backend cpu".into(),
        ));
    }
    if solver == SolverKind::Direct {
        return Err(PipelineError::Unsupported(
            "--solver direct runs on the CPU; use --solver pcg or cg with --backend cuda".into(),
        ));
    }
    let t = Instant::now();
    progress.stage("right-hand side, boundary lifting and Jacobi diagonal (CPU)");
    let constrained = &problem.dirichlet_dofs;
    let g: Vec<T> = to_real(&problem.boundary_values);
    let mut b = lift_residual(op, constrained, &g)?;
    let neumann: Vec<T> = to_real(&problem.neumann_load(mesh)?);
    let mut is_c = vec![false; b.len()];
    for &d in constrained {
        is_c[d as usize] = true;
    }
    for i in 0..b.len() {
        if is_c[i] {
            b[i] = T::zero(); // solve for the correction w = u - g, zero on constrained dofs
        } else {
            b[i] += neumann[i];
        }
    }
    let mut diag = op.diagonal(&[]);
    for &d in constrained {
        diag[d as usize] = T::one();
    }
    let b64: Vec<f64> = b.iter().map(|x| x.as_f64()).collect();
    let d64: Vec<f64> = diag.iter().map(|x| x.as_f64()).collect();
    let host = t.elapsed().as_secs_f64();
    let (w, stats, method, build, solve_s) = match T::NAME {
        "f32" => run::<f32>(
            mesh,
            problem,
            settings,
            solver,
            op.rule(),
            &b64,
            &d64,
            progress,
            dev,
        )?,
        _ => run::<f64>(
            mesh,
            problem,
            settings,
            solver,
            op.rule(),
            &b64,
            &d64,
            progress,
            dev,
        )?,
    };
    let mut u = w;
    for &d in constrained {
        u[d as usize] = problem.boundary_values[d as usize];
    }
    Ok(Outcome {
        u,
        method,
        iterations: stats.iterations,
        newton: None,
        residual: ResidualReport {
            initial: stats.initial_residual,
            last: stats.final_residual,
            relative: if stats.rhs_norm > 0.0 {
                stats.final_residual / stats.rhs_norm
            } else {
                0.0
            },
        },
        setup: 0.0,
        assembly: host + build,
        solve: solve_s,
    })
}

/// Solution correction, Krylov statistics, method description, build and solve seconds.
type GpuRun = (Vec<f64>, ferrofem_solver::SolveStats, String, f64, f64);

fn run<G: GpuReal>(
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    solver: SolverKind,
    rule: &ferrofem_fe::QuadratureRule,
    b: &[f64],
    diag: &[f64],
    progress: &Progress,
    dev: &Arc<GpuDevice>,
) -> Result<GpuRun, PipelineError> {
    let t = Instant::now();
    progress.stage("building the GPU operator (kernels compiled or loaded from the cache)");
    let blas = GpuBlas::<G>::new(dev).map_err(ge)?;
    let space = &problem.space;
    let ct = mesh.cell_type();
    let o = &problem.options;
    let dim = mesh.dim();
    let conv = |v: &[f64]| v.iter().map(|&x| G::of(x)).collect::<Vec<G>>();
    let (bd, dd) = (conv(b), conv(diag));
    enum Op<G: GpuReal> {
        Bp(GpuBp<G>),
        Res(GpuResidual<G>),
    }
    let (gop, scale, label) = if ct == CellType::Hexahedron && o.kind == ProblemKind::Poisson {
        let q1d = rule.rule_1d.as_ref().map(|r| r.len());
        let cfg = BpConfig {
            q1d,
            ..BpConfig::new(TensorKind::Diffusion { alpha: 0.0 })
        };
        (
            Op::Bp(GpuBp::<G>::new(dev, mesh, space, cfg).map_err(ge)?),
            o.kappa,
            "BP3 sum-factorised diffusion kernel",
        )
    } else if ct.is_simplex() {
        let err = |e: ferrofem_physics::PhysicsError| PipelineError::Unsupported(e.to_string());
        let cuda = match o.kind {
            ProblemKind::Poisson => {
                Physics::<f64>::cuda(&Poisson::new(dim, o.kappa, None).map_err(err)?)
            }
            ProblemKind::PoissonVarcoef => {
                Physics::<f64>::cuda(&PoissonVarCoef::new(dim, None).map_err(err)?)
            }
            ProblemKind::Elasticity => {
                Physics::<f64>::cuda(&Elasticity::new(dim, o.lambda, o.mu, None).map_err(err)?)
            }
            ProblemKind::Nonlinear => unreachable!("checked linear"),
        };
        // the GPU kernel reads a nodal coefficient in the solution's scalar space
        let scalar = space.with_ncomp(1)?;
        let nodal: Vec<f64>;
        let aux = match &problem.coefficient {
            None => Aux::None,
            Some(Coefficient::Cellwise(v)) => Aux::Cellwise(v),
            Some(Coefficient::Nodal { space: cs, values }) => {
                if cs.num_nodes() == scalar.num_nodes() && cs.order() == scalar.order() {
                    Aux::Nodal(values)
                } else if cs.order() <= scalar.order() {
                    // the same field, represented exactly in the solution's space (P_k ⊂ P_p)
                    nodal = represent_in(cs, values, &scalar)?;
                    Aux::Nodal(&nodal)
                } else {
                    return Err(PipelineError::Unsupported(format!(
                        "the GPU kernel reads the coefficient in the solution's space; a P{} coefficient does not fit P{}",
                        cs.order(),
                        scalar.order()
                    )));
                }
            }
        };
        let r = GpuResidual::<G>::new(
            dev,
            mesh,
            space,
            &cuda,
            rule,
            aux,
            ResidualConfig::new(),
            false,
        )
        .map_err(ge)?;
        (Op::Res(r), 1.0, "thread-transposition residual kernel")
    } else {
        return Err(PipelineError::Unsupported(format!(
            "the GPU solve covers Poisson on hexahedra and linear problems on triangles and tetrahedra, not {} on {}",
            o.kind.name(),
            ct
        )));
    };
    let dofs = &problem.dirichlet_dofs;
    let db = DeviceVec::from_host(dev, &bd, "right-hand side").map_err(ge)?;
    let mut dx = DeviceVec::<G>::zeros(dev, b.len(), "solution").map_err(ge)?;
    let opts = SolveOptions {
        rtol: settings.rtol(),
        max_iter: settings.max_iter,
        ..SolveOptions::default()
    };
    // the BP kernel integrates ∫∇v·∇u; the problem's operator is κ times that
    let s = G::of(scale);
    let build = t.elapsed().as_secs_f64();
    progress.stage("solving on the GPU");
    let t = Instant::now();
    fn krylov<G: GpuReal, A: GpuLinearOperator<G>>(
        op: &A,
        blas: &GpuBlas<G>,
        dofs: &[u32],
        s: G,
        diag: &[G],
        pre: bool,
        b: &DeviceVec<G>,
        x: &mut DeviceVec<G>,
        opts: &SolveOptions,
    ) -> Result<ferrofem_solver::SolveStats, PipelineError> {
        let c = Constrained::new(op, blas, dofs, s).map_err(ge)?;
        let stats = if pre {
            let space = GpuKrylov::with_jacobi(&c, blas, diag).map_err(ge)?;
            pcg(&space, b, x, opts)?
        } else {
            let space = GpuKrylov::new(&c, blas);
            cg(&space, b, x, opts)?
        };
        Ok(stats)
    }
    let pre = solver == SolverKind::Pcg;
    let stats = match &gop {
        Op::Bp(op) => krylov(op, &blas, dofs, s, &dd, pre, &db, &mut dx, &opts)?,
        Op::Res(op) => krylov(op, &blas, dofs, s, &dd, pre, &db, &mut dx, &opts)?,
    };
    dev.synchronize().map_err(ge)?;
    let solve_s = t.elapsed().as_secs_f64();
    let w: Vec<f64> = dx
        .to_host()
        .map_err(ge)?
        .iter()
        .map(|x| x.as_f64())
        .collect();
    let method = format!(
        "GPU ({}): {label}, {}, every vector on the device",
        dev.name(),
        if pre { "Jacobi-PCG" } else { "CG" }
    );
    Ok((w, stats, method, build, solve_s))
}

/// The nodal values, in `to` (a scalar space on the same mesh of order ≥ `from`'s), of the
/// field with nodal values `values` in `from`: each cell's interpolant evaluated at `to`'s
/// nodes (exact, since `from`'s polynomials lie in `to`'s).
fn represent_in(
    from: &ferrofem_space::H1Space,
    values: &[f64],
    to: &ferrofem_space::H1Space,
) -> Result<Vec<f64>, PipelineError> {
    let tab = from
        .element()
        .tabulate(to.element().nodes())
        .map_err(|e| PipelineError::Unsupported(e.to_string()))?;
    let (rf, rt) = (from.restriction(), to.restriction());
    let nbf = rf.elem_size();
    let mut out = vec![0.0; to.num_nodes()];
    for c in 0..rt.num_elem() {
        let ef = rf.elem(c);
        for (i, &n) in rt.elem(c).iter().enumerate() {
            out[n as usize] = (0..nbf)
                .map(|b| tab.values[i * nbf + b] * values[ef[b] as usize])
                .sum();
        }
    }
    Ok(out)
}
