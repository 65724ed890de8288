//! `ferrofem solve` on the GPU (linear problems, and the nonlinear one by Newton–GMRES)
//! reaches the CPU's discrete solution, and a case without a GPU path runs on the CPU under
//! `--backend auto` only. Needs a CUDA device: skipped when none is usable, unless
//! FERROFEM_REQUIRE_GPU=1.
#![cfg(feature = "cuda")]

use ferrofem_driver::{
    solve, solve_with_fallback, Backend, BackendArg, DirichletSpec, OperatorKind, PipelineError,
    Precision, Preconditioner, ProblemKind, ProblemOptions, Progress, SolveSettings, SolverKind,
};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};

fn gpu() -> Option<std::sync::Arc<ferrofem_cuda::GpuDevice>> {
    ferrofem_cuda::GpuDevice::for_tests()
}

fn check(
    mesh: &Mesh,
    kind: ProblemKind,
    order: usize,
    dirichlet: DirichletSpec,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) {
    check_with(mesh, kind, order, dirichlet, SolverKind::Pcg, dev)
}

fn check_with(
    mesh: &Mesh,
    kind: ProblemKind,
    order: usize,
    dirichlet: DirichletSpec,
    solver: SolverKind,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) {
    let options = ProblemOptions {
        kind,
        order,
        dirichlet,
        ..ProblemOptions::default()
    };
    let settings = SolveSettings {
        solver: Some(solver),
        precision: Precision::F64,
        rtol: Some(1e-12),
        ..SolveSettings::default()
    };
    let cpu = solve(
        mesh,
        &options,
        &settings,
        &Backend::cpu(),
        &Progress::hidden(),
    )
    .unwrap();
    let on_gpu = Backend::Cuda(dev.clone());
    let gpu = solve(mesh, &options, &settings, &on_gpu, &Progress::hidden()).unwrap();
    let num: f64 = cpu
        .u
        .iter()
        .zip(&gpu.u)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let den: f64 = cpu.u.iter().map(|a| a * a).sum::<f64>().sqrt();
    eprintln!(
        "{} P{order} {}: cpu {} it L2 {:.3e} | gpu {} it L2 {:.3e} | rel diff {:.1e} | {}",
        kind.name(),
        mesh.cell_type(),
        cpu.report.iterations,
        cpu.report.errors.expect("manufactured errors").l2,
        gpu.report.iterations,
        gpu.report.errors.expect("manufactured errors").l2,
        num / den,
        gpu.report.method
    );
    assert!(
        num / den < 1e-9,
        "GPU and CPU discrete solutions differ by {:e}",
        num / den
    );
    // the two errors differ by at most the L2 norm of the difference of the two discrete
    // solutions (triangle inequality), which the nodal relative difference bounds up to a
    // mesh constant (10 here); where the discretisation error is itself near round-off
    // (high orders) that term, not the first, is what remains
    let (e, u_norm) = (
        cpu.report.errors.expect("manufactured errors"),
        cpu.report.errors.expect("manufactured errors").l2
            / cpu.report.errors.expect("manufactured errors").l2_rel,
    );
    assert!(
        (gpu.report.errors.expect("manufactured errors").l2 - e.l2).abs()
            <= 1e-6 * e.l2 + 10.0 * (num / den) * u_norm,
        "L2 errors {:e} (gpu) and {:e} (cpu)",
        gpu.report.errors.expect("manufactured errors").l2,
        e.l2
    );
}

#[test]
fn gpu_solves_reach_the_cpu_discrete_solution() {
    let Some(dev) = gpu() else { return };
    let b = |s: &str| generate_box(&BoxSpec::parse(s).unwrap()).unwrap();
    check(
        &b("hex:6x6x6,perturb=0.2,seed=2"),
        ProblemKind::Poisson,
        3,
        DirichletSpec::default(),
        &dev,
    );
    // p = 4: the fastest BP3 kernel there reads stored geometric factors
    assert_eq!(
        ferrofem_cuda::bp::BpPlan::fastest_geometry(
            &ferrofem_cuda::bp::DeviceClass::of(&dev),
            ferrofem_operator::tensor::TensorKind::Diffusion { alpha: 0.0 },
            4
        ),
        ferrofem_operator::tensor::GeometrySource::Stored
    );
    check(
        &b("hex:4x4x4,perturb=0.2,seed=3"),
        ProblemKind::Poisson,
        4,
        DirichletSpec::default(),
        &dev,
    );
    // p = 6: the fastest BP3 kernel there computes the geometry on the fly
    check(
        &b("hex:3x3x3,perturb=0.2,seed=2"),
        ProblemKind::Poisson,
        6,
        DirichletSpec::default(),
        &dev,
    );
    check(
        &b("tri:24x24,perturb=0.2,seed=2"),
        ProblemKind::PoissonVarcoef,
        2,
        DirichletSpec::default(),
        &dev,
    );
    check(
        &b("tet:8x8x8,perturb=0.2,seed=2"),
        ProblemKind::PoissonVarcoef,
        1,
        DirichletSpec::default(),
        &dev,
    );
    check(
        &b("tet:6x6x6,perturb=0.2,seed=2"),
        ProblemKind::Elasticity,
        2,
        DirichletSpec::default(),
        &dev,
    );
    // GMRES on a linear problem: the same solution as the CPU's GMRES
    check_with(
        &b("tri:16x16,perturb=0.2,seed=2"),
        ProblemKind::PoissonVarcoef,
        2,
        DirichletSpec::default(),
        SolverKind::Gmres,
        &dev,
    );
    // a real Gmsh mesh with Dirichlet on named groups only (natural conditions elsewhere)
    let gmsh = |name: &str| {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/gmsh")
            .join(name);
        ferrofem_mesh::read_gmsh(&file).unwrap()
    };
    check(
        &gmsh("box_tet_v41_binary.msh"),
        ProblemKind::Poisson,
        2,
        DirichletSpec::parse_list("xmin,ymin"),
        &dev,
    );
    // a real Gmsh hexahedral mesh through the tuned BP3 kernel (Dirichlet on named groups,
    // natural conditions elsewhere); at p = 3 the discretisation error dominates the
    // solver's, so the two L2 errors are comparable (at p = 7 both are round-off)
    check(
        &gmsh("box_hex_v41_binary.msh"),
        ProblemKind::Poisson,
        3,
        DirichletSpec::parse_list("xmin,ymin"),
        &dev,
    );
}

/// The assembled GPU solve (the reduced matrix assembled on the device, Krylov with device
/// SpMV) reaches the CPU's direct solution of the same discrete problem to 1e-10.
fn check_assembled(
    mesh: &Mesh,
    kind: ProblemKind,
    order: usize,
    solver: SolverKind,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) {
    check_assembled_with(mesh, kind, order, solver, Preconditioner::Jacobi, dev)
}

fn check_assembled_with(
    mesh: &Mesh,
    kind: ProblemKind,
    order: usize,
    solver: SolverKind,
    preconditioner: Preconditioner,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) {
    let options = ProblemOptions {
        kind,
        order,
        ..ProblemOptions::default()
    };
    let direct = SolveSettings {
        solver: Some(SolverKind::Direct),
        ..SolveSettings::default()
    };
    let cpu = solve(
        mesh,
        &options,
        &direct,
        &Backend::cpu(),
        &Progress::hidden(),
    )
    .unwrap();
    let assembled = SolveSettings {
        solver: Some(solver),
        rtol: Some(1e-13),
        operator: OperatorKind::Assembled,
        preconditioner,
        ..SolveSettings::default()
    };
    let on_gpu = Backend::Cuda(dev.clone());
    let gpu = solve(mesh, &options, &assembled, &on_gpu, &Progress::hidden()).unwrap();
    let num: f64 = cpu
        .u
        .iter()
        .zip(&gpu.u)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let den: f64 = cpu.u.iter().map(|a| a * a).sum::<f64>().sqrt();
    eprintln!(
        "assembled {} P{order} {} ({} dofs): gpu {} it, assembly {:.4} s, solve {:.4} s | rel diff {:.1e} | {}",
        kind.name(),
        mesh.cell_type(),
        gpu.u.len(),
        gpu.report.iterations,
        gpu.report.timings.assembly,
        gpu.report.timings.solve,
        num / den,
        gpu.report.method
    );
    assert!(
        gpu.report.method.contains("assembled on the device"),
        "{}",
        gpu.report.method
    );
    assert!(
        num / den <= 1e-10,
        "assembled GPU and direct CPU solutions differ by {:e}",
        num / den
    );
}

#[test]
fn assembled_gpu_solves_reach_the_cpu_direct_solution() {
    let Some(dev) = gpu() else { return };
    let b = |s: &str| generate_box(&BoxSpec::parse(s).unwrap()).unwrap();
    let tets = b("tet:10x10x10,perturb=0.2,seed=2");
    check_assembled(&tets, ProblemKind::Poisson, 1, SolverKind::Pcg, &dev);
    check_assembled(&tets, ProblemKind::Poisson, 2, SolverKind::Pcg, &dev);
    check_assembled(
        &tets,
        ProblemKind::PoissonVarcoef,
        2,
        SolverKind::Gmres,
        &dev,
    );
    // Chebyshev–Jacobi on the device, through the same generic code as on the CPU
    check_assembled_with(
        &tets,
        ProblemKind::Poisson,
        2,
        SolverKind::Pcg,
        Preconditioner::Chebyshev,
        &dev,
    );
    check_assembled(
        &b("tet:5x5x5,perturb=0.2,seed=2"),
        ProblemKind::Elasticity,
        2,
        SolverKind::Pcg,
        &dev,
    );
    check_assembled(
        &b("tri:24x24,perturb=0.2,seed=2"),
        ProblemKind::Poisson,
        2,
        SolverKind::Cg,
        &dev,
    );
    // quadrilaterals and hexahedra: assembled on the device (the matrix-free path has no
    // kernel for elasticity or a varying coefficient there)
    check_assembled(
        &b("hex:6x6x6,perturb=0.2,seed=2"),
        ProblemKind::PoissonVarcoef,
        2,
        SolverKind::Pcg,
        &dev,
    );
    check_assembled(
        &b("quad:16x16,perturb=0.2,seed=2"),
        ProblemKind::Elasticity,
        3,
        SolverKind::Gmres,
        &dev,
    );
}

/// Newton–GMRES on the GPU (the default solver there for the nonlinear problem) against
/// Newton with sparse LU on the CPU, both to `‖F‖ <= 1e-12 ‖F₀‖`.
fn check_nonlinear(
    mesh: &Mesh,
    order: usize,
    dirichlet: DirichletSpec,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) {
    let options = ProblemOptions {
        kind: ProblemKind::Nonlinear,
        order,
        dirichlet,
        ..ProblemOptions::default()
    };
    let settings = SolveSettings {
        solver: None,
        precision: Precision::F64,
        rtol: Some(1e-12),
        ..SolveSettings::default()
    };
    let cpu = solve(
        mesh,
        &options,
        &settings,
        &Backend::cpu(),
        &Progress::hidden(),
    )
    .unwrap();
    assert_eq!(cpu.report.solver, "direct");
    let on_gpu = Backend::Cuda(dev.clone());
    let gpu = solve(mesh, &options, &settings, &on_gpu, &Progress::hidden()).unwrap();
    assert_eq!(gpu.report.solver, "gmres");
    let num: f64 = cpu
        .u
        .iter()
        .zip(&gpu.u)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let den: f64 = cpu.u.iter().map(|a| a * a).sum::<f64>().sqrt();
    let (cn, gn) = (
        cpu.report.newton.as_ref().expect("CPU Newton report"),
        gpu.report.newton.as_ref().expect("GPU Newton report"),
    );
    eprintln!(
        "nonlinear P{order} {}: cpu {} Newton steps L2 {:.3e} | gpu {} Newton steps, GMRES {:?}, \
         L2 {:.3e}, ‖F‖ {:?} | rel diff {:.1e} | {}",
        mesh.cell_type(),
        cn.steps,
        cpu.report.errors.expect("manufactured errors").l2,
        gn.steps,
        gn.linear_iterations,
        gpu.report.errors.expect("manufactured errors").l2,
        gn.residual_history,
        num / den,
        gpu.report.method
    );
    assert!(
        num / den < 1e-8,
        "GPU and CPU Newton solutions differ by {:e}",
        num / den
    );
    assert!(
        (gpu.report.errors.expect("manufactured errors").l2
            - cpu.report.errors.expect("manufactured errors").l2)
            .abs()
            <= 1e-6 * cpu.report.errors.expect("manufactured errors").l2
    );
    // converged, in few steps, quadratically once in the basin
    let h = &gn.residual_history;
    assert!(h[h.len() - 1] <= 1e-12 * h[0], "{h:?}");
    assert!(gn.steps <= cn.steps + 3 && gn.steps <= 12, "{h:?}");
    assert!(gn.orders.iter().any(|&q| q > 1.5), "orders {:?}", gn.orders);
    // the GMRES iterations of every Newton step, summing to the total
    assert_eq!(gn.linear_iterations.len(), gn.steps);
    assert!(gn.linear_iterations.iter().all(|&k| k > 0));
    assert_eq!(
        gn.linear_iterations.iter().sum::<usize>(),
        gpu.report.iterations
    );
}

#[test]
fn gpu_newton_gmres_reaches_the_cpu_newton_solution() {
    let Some(dev) = gpu() else { return };
    let b = |s: &str| generate_box(&BoxSpec::parse(s).unwrap()).unwrap();
    check_nonlinear(
        &b("tri:16x16,perturb=0.2,seed=2"),
        2,
        DirichletSpec::default(),
        &dev,
    );
    check_nonlinear(
        &b("tet:6x6x6,perturb=0.2,seed=2"),
        1,
        DirichletSpec::default(),
        &dev,
    );
    check_nonlinear(
        &b("tet:4x4x4,perturb=0.2,seed=2"),
        2,
        DirichletSpec::default(),
        &dev,
    );
    // natural conditions on part of the boundary: the Neumann load enters the residual
    check_nonlinear(
        &b("tri:16x16,perturb=0.2,seed=3"),
        1,
        DirichletSpec::parse_list("xmin,ymin"),
        &dev,
    );
    // a real Gmsh mesh, Dirichlet on named groups only
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh/box_tet_v41_binary.msh");
    let mesh = ferrofem_mesh::read_gmsh(&file).unwrap();
    check_nonlinear(&mesh, 2, DirichletSpec::parse_list("xmin,ymin"), &dev);
}

#[test]
fn a_case_without_a_gpu_path_falls_back_under_auto_and_is_an_error_under_cuda() {
    let Some(dev) = gpu() else { return };
    // elasticity on quadrilaterals: the GPU solve covers neither
    let mesh = generate_box(&BoxSpec::parse("quad:4x4").unwrap()).unwrap();
    let options = ProblemOptions {
        kind: ProblemKind::Elasticity,
        ..ProblemOptions::default()
    };
    let settings = SolveSettings::default();
    let on_gpu = || Backend::Cuda(dev.clone());
    let err =
        solve(&mesh, &options, &settings, &on_gpu(), &Progress::hidden()).expect_err("no GPU path");
    assert!(matches!(err, PipelineError::NoGpuPath(_)), "{err}");
    let err = solve_with_fallback(
        &mesh,
        &options,
        &settings,
        BackendArg::Cuda,
        on_gpu(),
        &Progress::hidden(),
    )
    .expect_err("cuda never falls back");
    assert!(matches!(err, PipelineError::NoGpuPath(_)), "{err}");
    let (solution, used) = solve_with_fallback(
        &mesh,
        &options,
        &settings,
        BackendArg::Auto,
        on_gpu(),
        &Progress::hidden(),
    )
    .expect("auto runs it on the CPU");
    assert!(!used.is_gpu());
    let note = used.fallback_note().expect("a note");
    assert_eq!(note, format!("{err}; running on the CPU"));
    assert!(solution.report.errors.expect("manufactured errors").l2_rel < 0.1);
}
