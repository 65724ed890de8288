//! `ferrofem assemble --backend cuda`: the system assembled on the GPU (matrix by every
//! strategy, Dirichlet dofs eliminated, the right-hand side lifted on the device, the
//! natural-boundary load added) equals the CPU's entry by entry. Needs a CUDA device:
//! skipped when none is usable, unless FERROFEM_REQUIRE_GPU=1.
#![cfg(feature = "cuda")]

use ferrofem_cuda::assembly::GpuStrategy;
use ferrofem_driver::{
    assemble_problem, assemble_problem_gpu, BcMode, DirichletSpec, LinearSystem, Precision,
    Problem, ProblemKind, ProblemOptions,
};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};

fn gpu() -> Option<std::sync::Arc<ferrofem_cuda::GpuDevice>> {
    ferrofem_cuda::GpuDevice::for_tests()
}

/// The largest difference of matrix entries relative to their row's largest, and of the
/// right-hand side relative to its largest entry.
fn differences(got: &LinearSystem<f64>, want: &LinearSystem<f64>) -> (f64, f64) {
    let (a, b) = (&got.matrix, &want.matrix);
    assert_eq!(a.row_ptr(), b.row_ptr());
    assert_eq!(a.col_idx(), b.col_idx());
    let mut worst = 0.0f64;
    for r in 0..b.nrows() {
        let (s, e) = (b.row_ptr()[r], b.row_ptr()[r + 1]);
        let scale = b.values()[s..e]
            .iter()
            .fold(0.0f64, |m, v| m.max(v.abs()))
            .max(f64::MIN_POSITIVE);
        for k in s..e {
            worst = worst.max((a.values()[k] - b.values()[k]).abs() / scale);
        }
    }
    let scale = want.rhs.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let rhs = got
        .rhs
        .iter()
        .zip(&want.rhs)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / scale.max(f64::MIN_POSITIVE);
    (worst, rhs)
}

#[test]
fn gpu_assembled_systems_equal_the_cpu_ones() {
    let Some(dev) = gpu() else { return };
    let b = |s: &str| generate_box(&BoxSpec::parse(s).unwrap()).unwrap();
    let gmsh = {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/gmsh/box_tet_v41_binary.msh");
        ferrofem_mesh::read_gmsh(&file).unwrap()
    };
    let gmsh_hex = {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/gmsh/box_hex_v41_binary.msh");
        ferrofem_mesh::read_gmsh(&file).unwrap()
    };
    let tets = b("tet:5x5x5,perturb=0.2,seed=2");
    let tris = b("tri:12x12,perturb=0.2,seed=2");
    let quads = b("quad:10x9,perturb=0.2,seed=2");
    let hexes = b("hex:4x4x3,perturb=0.2,seed=2");
    let cases: [(&Mesh, ProblemKind, usize, DirichletSpec); 10] = [
        (&tets, ProblemKind::Poisson, 2, DirichletSpec::default()),
        (&tets, ProblemKind::Elasticity, 1, DirichletSpec::default()),
        (
            &tris,
            ProblemKind::PoissonVarcoef,
            2,
            DirichletSpec::default(),
        ),
        (&tets, ProblemKind::Nonlinear, 1, DirichletSpec::default()),
        // Dirichlet on two named groups: the natural-boundary load elsewhere
        (
            &gmsh,
            ProblemKind::Poisson,
            2,
            DirichletSpec::parse_list("xmin,ymin"),
        ),
        (
            &gmsh,
            ProblemKind::Elasticity,
            1,
            DirichletSpec::parse_list("xmin"),
        ),
        // quadrilaterals and hexahedra: the right-hand side from the CPU form operator
        (&hexes, ProblemKind::Poisson, 2, DirichletSpec::default()),
        (&quads, ProblemKind::Elasticity, 3, DirichletSpec::default()),
        (&hexes, ProblemKind::Nonlinear, 1, DirichletSpec::default()),
        (
            &gmsh_hex,
            ProblemKind::PoissonVarcoef,
            2,
            DirichletSpec::parse_list("xmin,ymin"),
        ),
    ];
    let mut failures = Vec::new();
    for (i, (mesh, kind, order, dirichlet)) in cases.into_iter().enumerate() {
        let options = ProblemOptions {
            kind,
            order,
            dirichlet,
            ..ProblemOptions::default()
        };
        let problem = Problem::new(mesh, &options).unwrap();
        for bc in [BcMode::Dirichlet, BcMode::None, BcMode::Identity] {
            let want = assemble_problem(mesh, &problem, bc, Precision::F64).unwrap();
            // every strategy on the first simplex and tensor cases, the measured table's on
            // the others
            let strategies: Vec<Option<GpuStrategy>> = if i == 0 || i == 6 {
                GpuStrategy::ALL.iter().map(|&s| Some(s)).collect()
            } else {
                vec![None]
            };
            for s in strategies {
                let got =
                    assemble_problem_gpu(&dev, mesh, &problem, bc, Precision::F64, s).unwrap();
                let (a, r) = differences(&got, &want);
                eprintln!("{kind:?} P{order} {bc:?} {s:?}: matrix {a:.1e}, rhs {r:.1e}");
                if a > 1e-12 || r > 1e-12 {
                    failures.push(format!("{kind:?} P{order} {bc:?} {s:?}: {a:e} {r:e}"));
                }
                assert_eq!(got.dof_map.free(), want.dof_map.free());
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
