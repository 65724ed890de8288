//! Problem files on the GPU: the configured physics (per-region materials, expression
//! coefficients inlined in the residual kernel) give the CPU's solution. Needs a CUDA
//! device: skipped when none is usable, unless FERROFEM_REQUIRE_GPU=1.
#![cfg(feature = "cuda")]

use crate::common::examples;
use ferrofem_driver::{
    solve_problem, Backend, OperatorKind, Precision, ProblemFile, Progress, SolveSettings,
    SolverKind,
};

fn gpu() -> Option<std::sync::Arc<ferrofem_cuda::GpuDevice>> {
    ferrofem_cuda::GpuDevice::for_tests()
}

/// Two regions with expression conductivities, an expression source, Dirichlet and Neumann
/// boundaries on a Gmsh triangle mesh, P2.
const LAYERS: &str = "[mesh]\nfile = \"meshes/two_layers_tri.msh\"\norder = 2\n\
    [problem]\nkind = \"poisson\"\nsource = \"1e3 * sin(3*x) * (1 + y)\"\n\
    [[material]]\nregion = \"copper\"\nkappa = \"400 * (1 + 0.5*x*y)\"\n\
    [[material]]\nregion = \"steel\"\nkappa = \"50 + 20*exp(-x)\"\n\
    [[boundary]]\nregion = \"hot\"\ndirichlet = \"100 + 10*y\"\n\
    [[boundary]]\nregion = \"cold\"\ndirichlet = 0\n\
    [[boundary]]\nregion = \"sides\"\nneumann = \"5 * x\"\n";

/// Kirsch's plate example on its second-finest mesh.
fn plate_hole() -> String {
    std::fs::read_to_string(examples().join("plate_hole.toml"))
        .expect("example")
        .replace("plate_hole_3", "plate_hole_2")
}

/// Solves `text` (a file in `examples/`) on the CPU and the GPU with `solver` on `operator`
/// in `precision` and returns the relative 2-norm difference of the solutions.
fn cpu_vs_gpu(
    label: &str,
    text: &str,
    (solver, operator): (SolverKind, OperatorKind),
    precision: Precision,
    dev: &std::sync::Arc<ferrofem_cuda::GpuDevice>,
) -> f64 {
    let dir = examples();
    let file = ProblemFile::parse(&dir.join("case.toml"), text.to_string()).expect("parses");
    let case = file.setup().expect("sets up");
    let settings = SolveSettings {
        solver: Some(solver),
        precision,
        // f32 Newton stalls at its rounding level (about 1e-6 relative) before 1e-6
        rtol: Some(match (precision, solver) {
            (Precision::F64, _) => 1e-13,
            (Precision::F32, SolverKind::Gmres) => 1e-4,
            (Precision::F32, _) => 1e-6,
        }),
        operator,
        ..SolveSettings::default()
    };
    let mesh = &case.mesh.mesh;
    let run = |backend: &Backend| {
        solve_problem(mesh, &case.problem, &settings, backend, &Progress::hidden())
            .unwrap_or_else(|e| panic!("{label}: {e}"))
    };
    let cpu = run(&Backend::cpu());
    let gpu = run(&Backend::Cuda(dev.clone()));
    assert!(
        gpu.report.method.starts_with("GPU")
            && (operator == OperatorKind::MatrixFree
                || gpu.report.method.contains("assembled on the device")),
        "{}",
        gpu.report.method
    );
    let num: f64 = cpu.u.iter().zip(&gpu.u).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = cpu.u.iter().map(|a| a * a).sum();
    let rel = (num / den).sqrt();
    eprintln!(
        "{label} {}: {} dofs, cpu {} it, gpu {} it, relative difference {rel:.2e} ({})",
        precision.name(),
        cpu.report.dofs,
        cpu.report.iterations,
        gpu.report.iterations,
        gpu.report.method
    );
    rel
}

/// Two regions with expression conductivities and an expression source on triangles, P2;
/// Kirsch's plate (elasticity, expression tractions) on triangles, P2; a graded elastic
/// block (Young's modulus an expression of x, y) with a body force on tetrahedra, P2; a
/// conductivity that depends on u (Newton–GMRES): f64 within 1e-10, f32 within 1e-4.
#[test]
fn configured_physics_on_the_gpu_equals_the_cpu() {
    let Some(dev) = gpu() else { return };
    let (layers, plate) = (LAYERS, plate_hole());
    let block = "[mesh]\nbox = \"tet:6x6x6,perturb=0.2,seed=3\"\norder = 2\n\
        [problem]\nkind = \"elasticity\"\nsource = [\"0\", \"0\", \"-rho\"]\n\
        [[material]]\nregion = \"all\"\nE = \"1 + 0.5*x*y\"\nnu = 0.25\nrho = 0.1\n\
        [[boundary]]\nregion = \"zmin\"\ndirichlet = [0, 0, 0]\n\
        [[boundary]]\nregion = \"zmax\"\nneumann = [\"0.01*nz\", 0, \"-0.02*x\"]\n";
    let nonlinear = "[mesh]\nbox = \"tri:16x16\"\norder = 2\n\
        [problem]\nkind = \"nonlinear-diffusion\"\nsource = \"10\"\n\
        [[material]]\nregion = \"all\"\nkappa = \"1 + u^2 + 0.5*x\"\n\
        [[boundary]]\nregion = \"xmin\"\ndirichlet = \"y\"\n\
        [[boundary]]\nregion = \"xmax\"\ndirichlet = 1\n";
    for (label, text, solver) in [
        ("two layers", layers, SolverKind::Pcg),
        ("plate with hole", plate.as_str(), SolverKind::Pcg),
        ("graded block", block, SolverKind::Pcg),
        ("nonlinear diffusion", nonlinear, SolverKind::Gmres),
    ] {
        let s = (solver, OperatorKind::MatrixFree);
        let rel = cpu_vs_gpu(label, text, s, Precision::F64, &dev);
        assert!(rel <= 1e-10, "{label} f64: {rel:e}");
        let rel = cpu_vs_gpu(label, text, s, Precision::F32, &dev);
        assert!(rel <= 1e-4, "{label} f32: {rel:e}");
    }
}

/// The same files with `--operator assembled` (the matrix assembled on the device from the
/// configured physics: region expressions, a nodal or cellwise coefficient), and the graded
/// block on hexahedra, which only the assembled operator covers on the GPU: f64 within
/// 1e-10 of the CPU.
#[test]
fn configured_physics_assembled_on_the_gpu_equals_the_cpu() {
    let Some(dev) = gpu() else { return };
    let (layers, plate) = (LAYERS, plate_hole());
    let block = |cells: &str| {
        format!(
            "[mesh]\nbox = \"{cells},perturb=0.2,seed=3\"\norder = 2\n\
        [problem]\nkind = \"elasticity\"\nsource = [\"0\", \"0\", \"-rho\"]\n\
        [[material]]\nregion = \"all\"\nE = \"1 + 0.5*x*y\"\nnu = 0.25\nrho = 0.1\n\
        [[boundary]]\nregion = \"zmin\"\ndirichlet = [0, 0, 0]\n\
        [[boundary]]\nregion = \"zmax\"\nneumann = [\"0.01*nz\", 0, \"-0.02*x\"]\n"
        )
    };
    for (label, text) in [
        ("two layers", layers.to_string()),
        ("plate with hole", plate),
        ("graded block, tetrahedra", block("tet:6x6x6")),
        ("graded block, hexahedra", block("hex:5x5x5")),
    ] {
        let s = (SolverKind::Pcg, OperatorKind::Assembled);
        let rel = cpu_vs_gpu(label, &text, s, Precision::F64, &dev);
        assert!(rel <= 1e-10, "{label} assembled f64: {rel:e}");
    }
}

/// A physics of one's own with its source in `f0` and a coefficient of the coordinates
/// (the configured physics of a file, handed over as a plain `Physics<f64>`): on the GPU
/// its Jacobian kernel is the operator, and the solution is the CPU's.
#[test]
fn an_own_physics_on_the_gpu_equals_the_cpu() {
    let Some(dev) = gpu() else { return };
    let (case, own) = crate::common::configured_and_own();
    let mesh = &case.mesh.mesh;
    let settings = SolveSettings {
        solver: Some(SolverKind::Pcg),
        rtol: Some(1e-13),
        ..SolveSettings::default()
    };
    let cpu = solve_problem(mesh, &own, &settings, &Backend::cpu(), &Progress::hidden()).unwrap();
    let on_gpu = Backend::Cuda(dev.clone());
    // matrix-free (its Jacobian kernel) and assembled on the device (its g0..g3)
    for (operator, says) in [
        (OperatorKind::MatrixFree, "Jacobian kernel"),
        (OperatorKind::Assembled, "assembled on the device"),
    ] {
        let s = SolveSettings {
            operator,
            ..settings.clone()
        };
        let gpu = solve_problem(mesh, &own, &s, &on_gpu, &Progress::hidden()).unwrap();
        assert!(gpu.report.method.contains(says), "{}", gpu.report.method);
        let num: f64 = cpu.u.iter().zip(&gpu.u).map(|(a, b)| (a - b).powi(2)).sum();
        let den: f64 = cpu.u.iter().map(|a| a * a).sum();
        let rel = (num / den).sqrt();
        eprintln!(
            "own physics: relative difference {rel:.2e} ({})",
            gpu.report.method
        );
        assert!(rel <= 1e-10, "{operator:?}: {rel:e}");
    }
}

/// The wave example (two solids on an unstructured Gmsh mesh, free top, absorbing sides
/// and bottom, a force source and 31 receivers) on the GPU: after 1,000 steps its
/// seismograms equal the CPU's to 1e-10 (f64) and 1e-4 (f32) relative to each trace's peak;
/// `run_wave` with `--backend cuda` runs it there and writes the outputs.
#[test]
fn the_wave_example_on_the_gpu_equals_the_cpu() {
    use ferrofem_cuda::wave::GpuWave;
    use ferrofem_wave::Simulation;
    let Some(dev) = gpu() else { return };
    let out = std::env::temp_dir().join(format!("ferrofem-gpu-wave-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let text = std::fs::read_to_string(examples().join("wave_layers.toml"))
        .unwrap()
        .replace("duration = 12e-6", "steps = 1000")
        .replace("out/wave_layers", &out.display().to_string());
    for (precision, tol) in [("f64", 1e-10), ("f32", 1e-4)] {
        let text = text.replace(
            "precision = \"f32\"",
            &format!("precision = \"{precision}\""),
        );
        let file = ProblemFile::parse(&examples().join("wave_gpu.toml"), text).unwrap();
        let mut case = file.wave_case().unwrap();
        let (mesh, setup) = (&case.mesh.mesh, &case.setup);
        let worst = if precision == "f64" {
            let mut cpu = Simulation::<f64>::new(mesh, setup).unwrap();
            let mut gpu =
                GpuWave::new(&dev, &Simulation::<f64>::new(mesh, setup).unwrap()).unwrap();
            cpu.run(|_| {}).unwrap();
            gpu.run_to(1000, true).unwrap();
            trace_difference(cpu.seismograms(), gpu.seismograms().unwrap(), 1001)
        } else {
            let mut cpu = Simulation::<f32>::new(mesh, setup).unwrap();
            let mut gpu =
                GpuWave::new(&dev, &Simulation::<f32>::new(mesh, setup).unwrap()).unwrap();
            cpu.run(|_| {}).unwrap();
            gpu.run_to(1000, true).unwrap();
            trace_difference(cpu.seismograms(), gpu.seismograms().unwrap(), 1001)
        };
        println!("wave example {precision}: seismograms differ by {worst:.2e}");
        assert!(worst <= tol, "{precision}: {worst:e}");
        case.backend = ferrofem_driver::BackendArg::Cuda;
        let report = ferrofem_driver::wave::run_wave(&case, &mut |_| {}).unwrap();
        assert_eq!(report.backend, "cuda");
        assert_eq!(report.steps, 1000);
        assert!(out.join("seis_uy.csv").is_file() && out.join("field.pvd").is_file());
    }
}

/// The largest difference of two seismogram sets (`[trace][sample]`, `ns` samples) over
/// each trace's peak; every trace must move.
fn trace_difference(cpu: &[f64], gpu: &[f64], ns: usize) -> f64 {
    assert_eq!(cpu.len(), gpu.len());
    let mut worst = 0.0f64;
    for c in cpu.chunks(ns).zip(gpu.chunks(ns)) {
        assert!(c.0.iter().any(|&v| v != 0.0), "a trace never moved");
        worst = worst.max(ferrofem_wave::analytic::peak_relative_difference(c.1, c.0));
    }
    worst
}
