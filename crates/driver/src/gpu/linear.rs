//! The GPU's linear solves, every Krylov vector on the device: CG, Jacobi-PCG or
//! Jacobi-GMRES. The operator is the bake-off diffusion kernel on hexahedra (Poisson) or the
//! residual kernel of the problem's physics on triangles and tetrahedra, or, with
//! `--operator assembled`, the matrix assembled on the device (any cell); the right-hand side
//! (forcing, boundary lifting, Neumann load) comes from the CPU form operator once, and
//! Dirichlet rows are identity rows on the device. The Jacobi diagonal is computed
//! matrix-free on the device for the bake-off kernel ([`GpuBp::diagonal`]) and by the CPU
//! form operator for the residual kernels.

use super::assembled::AssembledSolve;
use crate::krylov::{krylov_name, krylov_options, run_krylov};
use crate::model_setup::CasePhysics;
use crate::pipeline_error::PipelineError;
use crate::policy::accept_accuracy_limit;
use crate::problem::{Definition, Problem, ProblemKind};
use crate::progress::Progress;
use crate::report::ResidualReport;
use crate::seam::{Outcome, SolveCase};
use crate::settings::{OperatorKind, Preconditioner, SolveSettings, SolverKind};
use crate::terms::{correction_rhs, to_real};
use ferrofem_base::{CellType, Real};
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::bp::{BpPlan, DeviceClass, GpuBp};
use ferrofem_cuda::krylov::{Constrained, GpuKrylov, GpuLinearOperator, JacobianAt};
use ferrofem_cuda::residual::{Aux, GpuResidual, ResidualConfig};
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::TensorKind;
use ferrofem_operator::{add_boundary_values, AuxField, FormOperator};
use ferrofem_physics::{CudaPhysics, Elasticity, Physics, Poisson, PoissonVarCoef};
use ferrofem_solver::SolveOptions;
use std::sync::Arc;
use std::time::Instant;

/// Solves the linear problem on `dev` (see the module documentation).
pub(crate) fn linear_gpu<T: Real, P: Physics<T>>(
    case: &SolveCase<'_>,
    op: &FormOperator<T, P>,
    dev: &Arc<GpuDevice>,
) -> Result<Outcome, PipelineError> {
    let SolveCase {
        mesh,
        problem,
        settings,
        solver,
        progress,
    } = *case;
    if solver == SolverKind::Direct {
        return Err(PipelineError::NoGpuPath(
            "--solver direct runs on the CPU; use --solver pcg, cg or gmres with --backend cuda"
                .into(),
        ));
    }
    if problem.robin::<f64>().is_some() {
        return Err(PipelineError::NoGpuPath(
            "Robin conditions run on the CPU (--backend cpu)".into(),
        ));
    }
    let t = Instant::now();
    // the device computes the bake-off kernel's diagonal itself: the CPU's only where the
    // residual kernels run a Jacobi-preconditioned solve
    let cpu_diagonal = needs_jacobi(solver)
        && !uses_bp_kernel(mesh, problem)
        && settings.operator == OperatorKind::MatrixFree;
    progress.stage(if cpu_diagonal {
        "right-hand side, boundary lifting and Jacobi diagonal (CPU)"
    } else {
        "right-hand side and boundary lifting (CPU)"
    });
    let constrained = &problem.dirichlet_dofs;
    // the correction w = u − g̃, zero on the constrained dofs, from w = 0
    let neumann: Vec<T> = to_real(&problem.neumann_load(mesh)?);
    let b = correction_rhs(op, problem, &neumann)?;
    let d64: Option<Vec<f64>> = cpu_diagonal.then(|| {
        let mut diag = op.diagonal(&[]);
        for &d in constrained {
            diag[d as usize] = T::one();
        }
        diag.iter().map(|x| x.as_f64()).collect()
    });
    let b64: Vec<f64> = b.iter().map(|x| x.as_f64()).collect();
    let host = t.elapsed().as_secs_f64();
    let mut warnings = Vec::new();
    let (w, stats, method, build, solve_s) = match T::NAME {
        "f32" => run::<f32>(
            mesh,
            problem,
            settings,
            solver,
            op.rule(),
            &b64,
            d64.as_deref(),
            progress,
            dev,
            &mut warnings,
        )?,
        _ => run::<f64>(
            mesh,
            problem,
            settings,
            solver,
            op.rule(),
            &b64,
            d64.as_deref(),
            progress,
            dev,
            &mut warnings,
        )?,
    };
    let mut u = w;
    add_boundary_values(&mut u, constrained, &problem.boundary_values)?;
    Ok(Outcome {
        u,
        method,
        iterations: stats.iterations,
        newton: None,
        residual: ResidualReport::of_krylov(&stats),
        setup: 0.0,
        assembly: host + build,
        solve: solve_s,
        warnings,
    })
}

/// What the matrix-free GPU solve covers (the start of its refusal of anything else).
const NOT_COVERED: &str = "the matrix-free GPU solve covers Poisson with one constant \
    coefficient on hexahedra and linear problems on triangles and tetrahedra";

/// The device operator of a matrix-free solve (see [`matrix_free_operator`]).
pub(super) struct DeviceOperator<G: GpuReal> {
    /// The kernel.
    pub(super) op: MatrixFree<G>,
    /// The problem's operator over the kernel's (κ for the bake-off kernel, else 1).
    pub(super) scale: f64,
    /// The kernel, in words.
    pub(super) label: &'static str,
    /// The kernel's node of each of the space's nodes, where it numbers them otherwise.
    pub(super) new_of: Option<Vec<u32>>,
}

/// The matrix-free device operator of the linear `problem` on `mesh`: the bake-off
/// diffusion kernel (Poisson with a constant coefficient on hexahedra), or the residual
/// (or, for the user's own physics, Jacobian) kernel on triangles and tetrahedra; any
/// other case has no matrix-free GPU path.
pub(super) fn matrix_free_operator<G: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    problem: &Problem,
    rule: &ferrofem_fe::QuadratureRule,
) -> Result<DeviceOperator<G>, PipelineError> {
    let space = &problem.space;
    let ct = mesh.cell_type();
    let dim = mesh.dim();
    // where the GPU operator numbers the nodes differently: new_of[old]
    let mut new_of: Option<Vec<u32>> = None;
    let (op, scale, label) = if uses_bp_kernel(mesh, problem) {
        let q1d = rule.rule_1d.as_ref().map(|r| r.len());
        // the benchmarks' fastest kernel and geometry for this order, on the numbering they
        // were measured on (interior-last: the solve carries its vectors there and back);
        // the register caps were measured for p + 2 points, so other rules run uncapped
        let p = space.order();
        let (bp, plan) = BpPlan::fastest(
            &DeviceClass::of(dev),
            TensorKind::Diffusion { alpha: 0.0 },
            q1d,
            p,
        );
        let numbered = plan.number(space)?;
        let op = GpuBp::<G>::new(dev, mesh, &numbered, bp, plan)?;
        new_of = numbered.new_of().map(<[u32]>::to_vec);
        let kappa = problem.constant_diffusion().unwrap_or(1.0);
        (
            MatrixFree::Bp(op),
            kappa,
            "BP3 sum-factorised diffusion kernel",
        )
    } else if ct.is_simplex() {
        let cuda = operator_physics(problem, dim)?;
        let mut nodal = None;
        let aux = device_aux(problem, &mut nodal)?;
        // the user's own physics may hold its source in f0: its Jacobian kernel (at zero:
        // the physics is linear) is the operator
        let own = matches!(
            problem.model().map(|m| &m.physics),
            Some(CasePhysics::Own(_))
        );
        let r = GpuResidual::<G>::new(
            dev,
            mesh,
            space,
            &cuda,
            rule,
            aux,
            ResidualConfig::new(),
            own,
        )?;
        if own {
            let zero = DeviceVec::<G>::zeros(dev, r.vector_len(), "Jacobian state")?;
            (
                MatrixFree::Jac(JacobianAt::new(r, zero)?),
                1.0,
                "thread-transposition Jacobian kernel",
            )
        } else {
            (
                MatrixFree::Res(r),
                1.0,
                "thread-transposition residual kernel",
            )
        }
    } else {
        return Err(PipelineError::NoGpuPath(format!(
            "{NOT_COVERED}, not {} on {}",
            problem.name(),
            ct
        )));
    };
    Ok(DeviceOperator {
        op,
        scale,
        label,
        new_of,
    })
}

/// Whether `solver` is preconditioned by Jacobi (and so needs the operator's diagonal).
pub(super) fn needs_jacobi(solver: SolverKind) -> bool {
    matches!(solver, SolverKind::Pcg | SolverKind::Gmres)
}

/// Whether the GPU solve of `problem` runs the bake-off diffusion kernel (Poisson on
/// hexahedra), whose diagonal the device computes; otherwise the residual kernels.
fn uses_bp_kernel(mesh: &Mesh, problem: &Problem) -> bool {
    mesh.cell_type() == CellType::Hexahedron
        && problem.constant_diffusion().is_some()
        && matches!(problem.aux(), AuxField::None)
}

/// Solution correction, Krylov statistics, method description, build and solve seconds.
pub(super) type GpuRun = (Vec<f64>, ferrofem_solver::SolveStats, String, f64, f64);

/// The matrix-free device operator of a solve.
// one per solve, on the stack for its duration: the variants' sizes do not matter
#[allow(clippy::large_enum_variant)]
pub(super) enum MatrixFree<G: GpuReal> {
    /// The bake-off diffusion kernel (hexahedra).
    Bp(GpuBp<G>),
    /// The residual kernel of a linear physics without its source.
    Res(GpuResidual<G>),
    /// The Jacobian kernel at zero (the user's own physics, whose `f0` may hold a source).
    Jac(JacobianAt<G>),
}

impl<G: GpuReal> GpuLinearOperator<G> for MatrixFree<G> {
    fn dim(&self) -> usize {
        match self {
            MatrixFree::Bp(op) => op.dim(),
            MatrixFree::Res(op) => op.dim(),
            MatrixFree::Jac(op) => op.dim(),
        }
    }
    fn apply_device(&self, x: &DeviceVec<G>, y: &mut DeviceVec<G>) -> Result<(), GpuError> {
        match self {
            MatrixFree::Bp(op) => op.apply_device(x, y),
            MatrixFree::Res(op) => op.apply_device(x, y),
            MatrixFree::Jac(op) => op.apply_device(x, y),
        }
    }
    fn output_vector(&self, dev: &Arc<GpuDevice>, what: &str) -> Result<DeviceVec<G>, GpuError> {
        match self {
            MatrixFree::Bp(op) => GpuLinearOperator::output_vector(op, dev, what),
            MatrixFree::Res(op) => op.output_vector(dev, what),
            MatrixFree::Jac(op) => op.output_vector(dev, what),
        }
    }
}

/// The CUDA half of the problem's linear operator, without its source (the right-hand
/// side comes from the CPU; the user's own physics keeps its `f0`, which only the residual
/// would read).
fn operator_physics(problem: &Problem, dim: usize) -> Result<CudaPhysics, PipelineError> {
    Ok(match &problem.definition {
        Definition::Model(m) => match &m.physics {
            CasePhysics::Configured(p) => Physics::<f64>::cuda(&p.without_source()),
            CasePhysics::Own(p) => Physics::<f64>::cuda(p),
        },
        Definition::Manufactured(m) => {
            let o = &m.options;
            match o.kind {
                ProblemKind::Poisson => Physics::<f64>::cuda(&Poisson::new(dim, o.kappa, None)?),
                ProblemKind::PoissonVarcoef => {
                    Physics::<f64>::cuda(&PoissonVarCoef::new(dim, None)?)
                }
                ProblemKind::Elasticity => {
                    Physics::<f64>::cuda(&Elasticity::new(dim, o.lambda, o.mu, None)?)
                }
                ProblemKind::Nonlinear => unreachable!("checked linear"),
            }
        }
    })
}

/// `diag`: the CPU's Jacobi diagonal (one on the constrained rows) where the device does
/// not compute it (the residual kernels with a Jacobi-preconditioned `solver`).
#[allow(clippy::too_many_arguments)]
fn run<G: GpuReal>(
    mesh: &Mesh,
    problem: &Problem,
    settings: &SolveSettings,
    solver: SolverKind,
    rule: &ferrofem_fe::QuadratureRule,
    b: &[f64],
    diag: Option<&[f64]>,
    progress: &Progress,
    dev: &Arc<GpuDevice>,
    warnings: &mut Vec<String>,
) -> Result<GpuRun, PipelineError> {
    let t = Instant::now();
    let bp = uses_bp_kernel(mesh, problem) && settings.operator == OperatorKind::MatrixFree;
    progress.stage(match settings.operator {
        OperatorKind::Assembled => "assembling the matrix on the GPU (kernels compiled or loaded from the cache)",
        OperatorKind::MatrixFree if needs_jacobi(solver) && bp => {
            "building the GPU operator and its Jacobi diagonal (kernels compiled or loaded from the cache)"
        }
        OperatorKind::MatrixFree => {
            "building the GPU operator (kernels compiled or loaded from the cache)"
        }
    });
    let blas = GpuBlas::<G>::new(dev)?;
    let space = &problem.space;
    let dim = mesh.dim();
    let conv = |v: &[f64]| v.iter().map(|&x| G::of(x)).collect::<Vec<G>>();
    if settings.operator == OperatorKind::Assembled {
        let cuda = operator_physics(problem, dim)?;
        let mut nodal = None;
        let a = AssembledSolve {
            dev,
            blas: &blas,
            space,
            physics: &cuda,
            rule,
            aux: device_aux(problem, &mut nodal)?,
        };
        return a.run(problem, settings, solver, b, t, warnings);
    }
    let DeviceOperator {
        op: gop,
        scale,
        label,
        new_of: renumbered,
    } = matrix_free_operator::<G>(dev, mesh, problem, rule).map_err(|e| match e {
        PipelineError::NoGpuPath(why) if why.starts_with(NOT_COVERED) => PipelineError::NoGpuPath(
            format!("{why} (--operator assembled assembles it on the GPU)"),
        ),
        e => e,
    })?;
    // the right-hand side and the constrained dofs in the operator's numbering
    let (bd, dofs) = match &renumbered {
        Some(new_of) => {
            let forward = |v: &[f64]| {
                let mut out = vec![0.0; v.len()];
                for (old, &x) in v.iter().enumerate() {
                    out[new_of[old] as usize] = x;
                }
                conv(&out)
            };
            let dofs: Vec<u32> = problem
                .dirichlet_dofs
                .iter()
                .map(|&d| new_of[d as usize])
                .collect();
            (forward(b), dofs)
        }
        None => (conv(b), problem.dirichlet_dofs.clone()),
    };
    let dofs = &dofs;
    // the BP kernel integrates ∫∇v·∇u; the problem's operator is κ times that
    let s = G::of(scale);
    // the Jacobi diagonal on the device, in the operator's numbering, one on the constrained
    // rows: the bake-off kernel's own (matrix-free, on the device, scaled like the operator),
    // or the CPU's (the residual kernels: their numbering is the problem's)
    let dd: Option<DeviceVec<G>> = match (&gop, diag) {
        _ if !needs_jacobi(solver) => None,
        (MatrixFree::Bp(op), _) => {
            let mut d = op.diagonal()?;
            if s != G::one() {
                blas.scale(s, &mut d)?;
            }
            if !dofs.is_empty() {
                let idx = DeviceVec::from_host(dev, dofs, "Dirichlet dofs")?;
                blas.set_indices(&mut d, &idx, G::one())?;
            }
            Some(d)
        }
        (_, Some(h)) => Some(DeviceVec::from_host(dev, &conv(h), "Jacobi diagonal")?),
        (_, None) => {
            return Err(PipelineError::NoGpuPath(
                "the residual kernels' Jacobi preconditioner needs the CPU diagonal".into(),
            ))
        }
    };
    let db = DeviceVec::from_host(dev, &bd, "right-hand side")?;
    let mut dx = DeviceVec::<G>::zeros(dev, b.len(), "solution")?;
    let opts = krylov_options(settings);
    dev.synchronize()?;
    let build = t.elapsed().as_secs_f64();
    progress.stage("solving on the GPU");
    let t = Instant::now();
    let stats = krylov(
        &gop,
        &blas,
        dofs,
        s,
        dd,
        (solver, settings.preconditioner),
        &db,
        &mut dx,
        &opts,
        warnings,
    )?;
    dev.synchronize()?;
    let solve_s = t.elapsed().as_secs_f64();
    let mut w: Vec<f64> = dx.to_host()?.iter().map(|x| x.as_f64()).collect();
    if let Some(new_of) = &renumbered {
        w = new_of.iter().map(|&n| w[n as usize]).collect();
    }
    let diag_where = match gop {
        MatrixFree::Bp(_) => "diagonal computed on the device",
        MatrixFree::Res(_) | MatrixFree::Jac(_) => "diagonal from the CPU",
    };
    let method = format!(
        "GPU ({}): {label}, {}, every vector on the device",
        dev.name(),
        krylov_name(solver, settings.preconditioner, Some(diag_where))
    );
    Ok((w, stats, method, build, solve_s))
}

/// The Krylov solve of `op` (Dirichlet rows `dofs` as identity rows scaled by `s`; none
/// for a reduced system) by `solver`, Jacobi-preconditioned by `diag` where it applies.
#[allow(clippy::too_many_arguments)]
pub(super) fn krylov<G: GpuReal, A: GpuLinearOperator<G>>(
    op: &A,
    blas: &GpuBlas<G>,
    dofs: &[u32],
    s: G,
    diag: Option<DeviceVec<G>>,
    (solver, preconditioner): (SolverKind, Preconditioner),
    b: &DeviceVec<G>,
    x: &mut DeviceVec<G>,
    opts: &SolveOptions,
    warnings: &mut Vec<String>,
) -> Result<ferrofem_solver::SolveStats, PipelineError> {
    let c = Constrained::new(op, blas, dofs, s)?;
    let jacobi = |diag: Option<DeviceVec<G>>| {
        let d = diag.ok_or_else(|| {
            PipelineError::NoGpuPath("Jacobi preconditioning without a diagonal".into())
        })?;
        GpuKrylov::with_jacobi_device(&c, blas, d).map_err(PipelineError::Gpu)
    };
    let result = match solver {
        SolverKind::Pcg | SolverKind::Gmres => {
            let space = jacobi(diag)?;
            run_krylov(&space, solver, preconditioner, b, x, opts)
        }
        _ => run_krylov(
            &GpuKrylov::new(&c, blas),
            solver,
            preconditioner,
            b,
            x,
            opts,
        ),
    };
    Ok(accept_accuracy_limit(result, warnings)?)
}

/// The problem's auxiliary field as the GPU kernels read it (a nodal coefficient in the
/// solution's scalar space: represented there, in `store`, when it lives in a lower-order
/// one).
pub(super) fn device_aux<'a>(
    problem: &'a Problem,
    store: &'a mut Option<Vec<f64>>,
) -> Result<Aux<'a>, PipelineError> {
    let scalar = problem.space.with_ncomp(1)?;
    Ok(match problem.aux() {
        AuxField::None => Aux::None,
        AuxField::Cellwise { values, .. } => Aux::Cellwise(values),
        AuxField::Nodal { space: cs, values } => {
            if cs.num_nodes() == scalar.num_nodes() && cs.order() == scalar.order() {
                Aux::Nodal(values)
            } else if cs.order() <= scalar.order() {
                // the same field, represented exactly in the solution's space (P_k ⊂ P_p)
                Aux::Nodal(store.insert(represent_in(cs, values, &scalar)?))
            } else {
                return Err(PipelineError::NoGpuPath(format!(
                    "the GPU kernel reads the coefficient in the solution's space; a P{} coefficient does not fit P{}",
                    cs.order(),
                    scalar.order()
                )));
            }
        }
    })
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
        .map_err(|e| PipelineError::NoGpuPath(e.to_string()))?;
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
