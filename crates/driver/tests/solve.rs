//! The solve/assemble pipelines on small meshes (CPU): convergence rates, agreement of the
//! solvers, natural boundary conditions, Newton's quadratic convergence, exported matrices
//! and error messages.

use ferrofem_driver::{
    assemble_problem, solve, Backend, BcMode, CoefField, DirichletSpec, OperatorKind,
    PipelineError, Precision, Preconditioner, Problem, ProblemKind, ProblemOptions, Progress,
    Solution, SolveSettings, SolverKind,
};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use std::path::PathBuf;

fn mesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).expect("valid spec")).expect("mesh")
}

fn options(kind: ProblemKind, order: usize) -> ProblemOptions {
    ProblemOptions {
        kind,
        order,
        ..ProblemOptions::default()
    }
}

fn settings(solver: SolverKind) -> SolveSettings {
    SolveSettings {
        solver: Some(solver),
        ..SolveSettings::default()
    }
}

fn run(spec: &str, opts: &ProblemOptions, s: &SolveSettings) -> Solution {
    let m = mesh(spec);
    match solve(&m, opts, s, &Backend::cpu(), &Progress::hidden()) {
        Ok(sol) => sol,
        Err(e) => panic!("{spec} {opts:?}: {e}"),
    }
}

/// Observed rates `log2(e_coarse / e_fine)` of (L², H¹) between consecutive halvings.
fn rates(levels: &[Solution]) -> Vec<(f64, f64)> {
    levels
        .windows(2)
        .map(|w| {
            let (a, b) = (
                w[0].report.errors.expect("manufactured errors"),
                w[1].report.errors.expect("manufactured errors"),
            );
            ((a.l2 / b.l2).log2(), (a.h1 / b.h1).log2())
        })
        .collect()
}

#[test]
fn p1_and_p2_poisson_converge_at_the_optimal_rates() {
    // P1 (matrix-free PCG) and P2 (direct) on triangles: L² rate p + 1, H¹ rate p.
    for (order, solver, specs) in [
        (1, SolverKind::Pcg, ["tri:8x8", "tri:16x16", "tri:32x32"]),
        (2, SolverKind::Direct, ["tri:4x4", "tri:8x8", "tri:16x16"]),
    ] {
        let opts = options(ProblemKind::Poisson, order);
        let levels: Vec<Solution> = specs
            .iter()
            .map(|s| run(s, &opts, &settings(solver)))
            .collect();
        for (l2, h1) in rates(&levels) {
            let p = order as f64;
            assert!((l2 - (p + 1.0)).abs() < 0.25, "P{order}: L2 rate {l2}");
            assert!((h1 - p).abs() < 0.2, "P{order}: H1 rate {h1}");
        }
        for l in &levels {
            assert!(l.report.errors.expect("manufactured errors").l2_rel < 0.05);
            assert!(l.report.residual.relative < 1e-9);
        }
    }
    // Q2 on perturbed hexahedra, matrix-free PCG: the same rates in 3-D.
    let opts = options(ProblemKind::Poisson, 2);
    let levels: Vec<Solution> = ["hex:2x2x2,perturb=0.1", "hex:4x4x4,perturb=0.1"]
        .iter()
        .map(|s| run(s, &opts, &settings(SolverKind::Pcg)))
        .collect();
    let (l2, h1) = rates(&levels)[0];
    assert!(l2 > 2.6 && h1 > 1.7, "Q2 hex rates {l2} {h1}");
}

/// A convergence study on real meshes: Gmsh's unstructured hexahedra of a plate with a
/// hole (no two cells need share axes), refined uniformly (`--refine`), Dirichlet on both
/// named boundary groups, Q1 and Q2 by matrix-free PCG; and Gmsh's tetrahedra of a box,
/// refined by red refinement, P1 and P2: L² rate p + 1, H¹ rate p.
#[test]
fn refined_gmsh_meshes_converge_at_the_optimal_rates() {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gmsh");
    // (file, Dirichlet groups (empty: the whole boundary), order, refinement levels)
    let cases = [
        ("box_tet_v41_binary.msh", "", 1, 1..=3),
        ("box_tet_v41_binary.msh", "", 2, 0..=2),
        ("plate_hole_hex_v41_binary.msh", "outer,hole", 1, 0..=2),
        ("plate_hole_hex_v41_binary.msh", "outer,hole", 2, 0..=1),
    ];
    for (file, dirichlet, order, levels) in cases {
        let coarse = ferrofem_mesh::read_gmsh(data.join(file)).expect("test mesh");
        let mut opts = options(ProblemKind::Poisson, order);
        if !dirichlet.is_empty() {
            opts.dirichlet = DirichletSpec::parse_list(dirichlet);
        }
        let sols: Vec<Solution> = levels
            .map(|l| {
                let m = coarse.refined(l).expect("refines");
                solve(
                    &m,
                    &opts,
                    &settings(SolverKind::Pcg),
                    &Backend::cpu(),
                    &Progress::hidden(),
                )
                .unwrap_or_else(|e| panic!("{file} order {order} refined {l}: {e}"))
            })
            .collect();
        for s in &sols {
            assert!(dirichlet.split(',').all(|g| s.report.dirichlet.contains(g)));
            assert!(s.report.residual.relative < 1e-9);
        }
        let p = order as f64;
        for (l2, h1) in rates(&sols) {
            eprintln!("{file} order {order} refined: L2 rate {l2:.3}, H1 rate {h1:.3}");
            assert!(l2 > p + 0.75, "{file} order {order}: L2 rate {l2}");
            assert!(h1 > p - 0.2, "{file} order {order}: H1 rate {h1}");
        }
    }
}

#[test]
fn direct_and_matrix_free_solvers_agree() {
    for (spec, kind, order) in [
        (
            "tet:3x3x3,perturb=0.2,seed=3",
            ProblemKind::PoissonVarcoef,
            2,
        ),
        ("quad:6x6,perturb=0.2", ProblemKind::Elasticity, 2),
        ("tri:10x10", ProblemKind::Poisson, 3),
    ] {
        let opts = options(kind, order);
        let direct = run(spec, &opts, &settings(SolverKind::Direct));
        let u_ref = &direct.u;
        let scale = u_ref.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let krylov = [SolverKind::Pcg, SolverKind::Cg, SolverKind::Gmres];
        let variants = krylov.iter().flat_map(|&k| {
            [
                (k, OperatorKind::MatrixFree, Preconditioner::Jacobi),
                (k, OperatorKind::Assembled, Preconditioner::Jacobi),
                (k, OperatorKind::MatrixFree, Preconditioner::Chebyshev),
            ]
        });
        for (solver, operator, preconditioner) in variants {
            let s = SolveSettings {
                operator,
                preconditioner,
                ..settings(solver)
            };
            let it = run(spec, &opts, &s);
            if operator == OperatorKind::Assembled {
                assert!(
                    it.report.method.starts_with("assembled"),
                    "{}",
                    it.report.method
                );
            }
            let diff =
                it.u.iter()
                    .zip(u_ref)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
            assert!(
                diff <= 1e-7 * scale,
                "{spec} {kind:?}: {solver:?} ({operator:?}, {preconditioner:?}) differs from direct by {diff}"
            );
            assert!(it.report.iterations > 0);
            let (e1, e2) = (
                it.report.errors.expect("manufactured errors").l2,
                direct.report.errors.expect("manufactured errors").l2,
            );
            // the solutions agree far below the discretisation error
            assert!((e1 - e2).abs() <= 1e-3 * e2, "{e1} vs {e2}");
        }
        assert_eq!(direct.report.iterations, 0);
    }
}

#[test]
fn natural_conditions_on_part_of_the_boundary_still_converge() {
    // Dirichlet only on xmin and ymin (by name and by ID); the exact flux elsewhere.
    let mut opts = options(ProblemKind::Poisson, 2);
    opts.dirichlet = DirichletSpec::parse_list("xmin,3");
    let levels: Vec<Solution> = ["tri:4x4", "tri:8x8", "tri:16x16"]
        .iter()
        .map(|s| run(s, &opts, &settings(SolverKind::Pcg)))
        .collect();
    for l in &levels {
        assert!(l.report.natural_facets > 0);
        assert!(l.report.dirichlet.contains("xmin") && l.report.dirichlet.contains("ymin"));
        assert!(l.report.free_dofs < l.report.dofs);
    }
    for (l2, h1) in rates(&levels) {
        assert!(l2 > 2.7 && h1 > 1.8, "natural BC rates {l2} {h1}");
    }
    // Elasticity with traction on all but one side, in 3-D.
    let mut opts = options(ProblemKind::Elasticity, 1);
    opts.dirichlet = DirichletSpec::Tags(vec!["zmin".into()]);
    let levels: Vec<Solution> = ["hex:3x3x3", "hex:6x6x6"]
        .iter()
        .map(|s| run(s, &opts, &settings(SolverKind::Pcg)))
        .collect();
    let (l2, h1) = rates(&levels)[0];
    assert!(
        l2 > 1.7 && h1 > 0.85,
        "elasticity natural BC rates {l2} {h1}"
    );
}

#[test]
fn newton_converges_quadratically() {
    let opts = options(ProblemKind::Nonlinear, 2);
    let s = run("tri:12x12,perturb=0.2", &opts, &SolveSettings::default());
    assert_eq!(s.report.solver, "direct");
    let nw = s.report.newton.as_ref().expect("Newton report");
    let h = &nw.residual_history;
    assert!(nw.steps >= 2 && nw.steps <= 8, "{h:?}");
    assert!(h[h.len() - 1] <= 1e-10 * h[0], "{h:?}");
    // quadratic: some step squares the relative residual (order close to 2), and every
    // step at least roughly doubles the number of correct digits once in the basin
    assert!(nw.orders.iter().any(|&q| q > 1.7), "orders {:?}", nw.orders);
    assert!(nw.step_lengths.iter().all(|&l| l > 0.0 && l <= 1.0));
    assert!(
        s.report.errors.expect("manufactured errors").l2_rel < 1e-3,
        "{:?}",
        s.report.errors
    );

    // direct solves report no Krylov iterations, one entry per step
    assert_eq!(nw.linear_iterations, vec![0; nw.steps]);

    // CG/PCG are refused for the nonsymmetric Jacobian, with a reason.
    let m = mesh("tri:4x4");
    let err = solve(
        &m,
        &opts,
        &settings(SolverKind::Pcg),
        &Backend::cpu(),
        &Progress::hidden(),
    )
    .expect_err("pcg refused");
    assert!(matches!(err, PipelineError::Unsupported(_)));
    assert!(err.to_string().contains("direct"), "{err}");
    assert!(err.to_string().contains("gmres"), "{err}");
}

#[test]
fn newton_gmres_reaches_the_newton_direct_solution() {
    // Newton with matrix-free Jacobi-GMRES steps against Newton with sparse LU steps, both
    // to ‖F‖ <= 1e-12 ‖F₀‖: the same discrete solution. With natural conditions on part of
    // the boundary, so that the Neumann load is part of the residual.
    for (spec, order, dirichlet) in [
        ("tri:12x12,perturb=0.2,seed=4", 2, DirichletSpec::default()),
        ("tet:4x4x4,perturb=0.2,seed=4", 2, DirichletSpec::default()),
        (
            "tri:16x16,perturb=0.2,seed=5",
            1,
            DirichletSpec::parse_list("xmin,ymin"),
        ),
    ] {
        let opts = ProblemOptions {
            dirichlet,
            ..options(ProblemKind::Nonlinear, order)
        };
        let tight = |solver| SolveSettings {
            rtol: Some(1e-12),
            ..settings(solver)
        };
        let direct = run(spec, &opts, &tight(SolverKind::Direct));
        let it = run(spec, &opts, &tight(SolverKind::Gmres));
        assert_eq!(it.report.solver, "gmres");
        assert!(it.report.method.contains("GMRES"), "{}", it.report.method);
        let diff =
            it.u.iter()
                .zip(&direct.u)
                .map(|(a, b)| (a - b) * (a - b))
                .sum::<f64>()
                .sqrt();
        let scale = direct.u.iter().map(|a| a * a).sum::<f64>().sqrt();
        assert!(
            diff <= 1e-9 * scale,
            "{spec}: GMRES and direct Newton differ by {:e}",
            diff / scale
        );
        let nw = it.report.newton.as_ref().expect("Newton report");
        eprintln!(
            "{spec} P{order}: rel diff {:.1e}, Newton steps {} (direct {}), GMRES per step {:?}",
            diff / scale,
            nw.steps,
            direct.report.newton.as_ref().expect("report").steps,
            nw.linear_iterations
        );
        let h = &nw.residual_history;
        assert!(h[h.len() - 1] <= 1e-12 * h[0], "{h:?}");
        // inexact Newton with the forcing term min(0.1, ‖F_k‖/‖F₀‖) stays fast: a few more
        // steps than exact Newton at most, and quadratic once in the basin
        let direct_steps = direct.report.newton.as_ref().expect("report").steps;
        assert!(nw.steps <= direct_steps + 3, "{h:?}");
        assert!(nw.orders.iter().any(|&q| q > 1.7), "orders {:?}", nw.orders);
        // per-step GMRES iterations: one entry per step, all positive, summing to the total
        assert_eq!(nw.linear_iterations.len(), nw.steps);
        assert!(nw.linear_iterations.iter().all(|&k| k > 0));
        assert_eq!(
            nw.linear_iterations.iter().sum::<usize>(),
            it.report.iterations
        );
        let (e1, e2) = (
            it.report.errors.expect("manufactured errors").l2,
            direct.report.errors.expect("manufactured errors").l2,
        );
        assert!((e1 - e2).abs() <= 1e-6 * e2, "{e1} vs {e2}");
    }
}

#[test]
fn f32_solves_reach_the_f64_discretisation_error() {
    let mut opts = options(ProblemKind::PoissonVarcoef, 2);
    opts.coef = CoefField::Pk;
    let s64 = run("quad:8x8,perturb=0.2", &opts, &settings(SolverKind::Pcg));
    let s32 = run(
        "quad:8x8,perturb=0.2",
        &opts,
        &SolveSettings {
            precision: Precision::F32,
            ..settings(SolverKind::Pcg)
        },
    );
    assert_eq!(s32.report.precision, "f32");
    let (a, b) = (
        s32.report.errors.expect("manufactured errors").l2,
        s64.report.errors.expect("manufactured errors").l2,
    );
    assert!((a - b).abs() <= 0.05 * b, "f32 {a} vs f64 {b}");
}

#[test]
fn assembled_laplacian_without_bc_is_symmetric_with_zero_row_sums() {
    let m = mesh("quad:5x4,perturb=0.2");
    let p = Problem::new(&m, &options(ProblemKind::Poisson, 2)).expect("problem");
    let sys = assemble_problem(&m, &p, BcMode::None, Precision::F64).expect("assembly");
    let a = &sys.matrix;
    assert_eq!(a.nrows(), p.num_dofs());
    assert!(sys.symmetric);
    let amax = a.values().iter().fold(0.0f64, |x, v| x.max(v.abs()));
    assert!(a.asymmetry() < 1e-13, "asymmetry {}", a.asymmetry());
    for r in 0..a.nrows() {
        let (_, vals) = a.row(r);
        let sum: f64 = vals.iter().sum();
        assert!(sum.abs() < 1e-12 * amax, "row {r} sums to {sum}");
        assert!(a.get(r, r) > 0.0);
    }
    // with elimination: one row per free dof, and the right-hand side of the reduced
    // system reproduces the direct solve's solution
    let red = assemble_problem(&m, &p, BcMode::Dirichlet, Precision::F64).expect("reduced");
    assert_eq!(red.matrix.nrows(), p.num_dofs() - p.dirichlet_dofs.len());
    assert_eq!(red.rhs.len(), red.matrix.nrows());
    // the nonlinear Jacobian is not symmetric
    let pn = Problem::new(&m, &options(ProblemKind::Nonlinear, 1)).expect("problem");
    let jn = assemble_problem(&m, &pn, BcMode::Dirichlet, Precision::F64).expect("jacobian");
    assert!(!jn.symmetric && jn.matrix.asymmetry() > 1e-8);
}

/// `--bc identity`: the eliminated rows on every dof, identity rows with the boundary
/// values at the Dirichlet dofs, symmetric, and solved by the direct solver's solution.
#[test]
fn identity_rows_carry_the_eliminated_system_and_its_solution() {
    let spec = "quad:5x4,perturb=0.2";
    let m = mesh(spec);
    let opts = options(ProblemKind::Poisson, 2);
    let p = Problem::new(&m, &opts).expect("problem");
    let red = assemble_problem(&m, &p, BcMode::Dirichlet, Precision::F64).expect("reduced");
    let full = assemble_problem(&m, &p, BcMode::Identity, Precision::F64).expect("identity");
    let n = p.num_dofs();
    assert_eq!((full.matrix.nrows(), full.rhs.len()), (n, n));
    assert!(full.symmetric && full.matrix.asymmetry() < 1e-13);
    assert!(full.dof_map.is_unconstrained());
    let map = &red.dof_map;
    for (d, &r) in map.reduced_of().iter().enumerate() {
        let (cols, vals) = full.matrix.row(d);
        if p.dirichlet_dofs.binary_search(&(d as u32)).is_ok() {
            assert_eq!((cols, vals), (&[d as u32][..], &[1.0][..]));
            assert_eq!(full.rhs[d], p.boundary_values[d]);
        } else {
            let (rc, rv) = red.matrix.row(r as usize);
            let mapped: Vec<u32> = rc.iter().map(|&c| map.free()[c as usize]).collect();
            assert_eq!((cols, vals), (&mapped[..], rv));
            assert_eq!(full.rhs[d], red.rhs[r as usize]);
        }
    }
    // the direct solve's discrete solution satisfies every row
    let sol = run(spec, &opts, &settings(SolverKind::Direct));
    let mut au = vec![0.0; n];
    full.matrix.matvec(&sol.u, &mut au);
    let scale = full.rhs.iter().fold(1.0f64, |x, v| x.max(v.abs()));
    for (d, (x, y)) in au.iter().zip(&full.rhs).enumerate() {
        assert!((x - y).abs() < 1e-10 * scale, "row {d}: {x} against {y}");
    }
    // the nonlinear problem's system is its first Newton correction: zero at the
    // constrained dofs
    let pn = Problem::new(&m, &options(ProblemKind::Nonlinear, 1)).expect("problem");
    let jn = assemble_problem(&m, &pn, BcMode::Identity, Precision::F64).expect("jacobian");
    for &d in &pn.dirichlet_dofs {
        assert_eq!(jn.rhs[d as usize], 0.0);
        assert_eq!(jn.matrix.row(d as usize).1, &[1.0][..]);
    }
}

#[test]
fn bad_options_are_clear_errors() {
    let m = mesh("tri:4x4");
    let mut opts = options(ProblemKind::Poisson, 1);
    opts.dirichlet = DirichletSpec::parse_list("xmin,nowhere");
    let err = Problem::new(&m, &opts).expect_err("unknown name");
    let msg = err.to_string();
    assert!(matches!(err, PipelineError::UnknownBoundary { .. }));
    for want in ["nowhere", "xmin (1)", "ymax (4)"] {
        assert!(msg.contains(want), "{msg}");
    }
    opts.dirichlet = DirichletSpec::parse_list("17");
    assert!(Problem::new(&m, &opts).is_err());

    // an order the cell type lacks (tetrahedra go to P4)
    let t = mesh("tet:1x1x1");
    let err = Problem::new(&t, &options(ProblemKind::Elasticity, 5)).expect_err("order");
    assert!(err.to_string().contains("not supported"), "{err}");
    // invalid material parameters
    let mut e = options(ProblemKind::Elasticity, 1);
    e.mu = -1.0;
    assert!(matches!(
        Problem::new(&m, &e).err(),
        Some(PipelineError::Physics(_))
    ));
}

#[test]
fn an_assembled_operator_for_newton_gmres_is_refused() {
    let m = mesh("tri:4x4");
    let opts = options(ProblemKind::Nonlinear, 1);
    let s = SolveSettings {
        solver: Some(SolverKind::Gmres),
        operator: OperatorKind::Assembled,
        ..SolveSettings::default()
    };
    let err = solve(&m, &opts, &s, &Backend::cpu(), &Progress::hidden()).expect_err("refused");
    assert!(matches!(err, PipelineError::Unsupported(_)), "{err}");
    assert!(err.to_string().contains("--solver direct"), "{err}");
    // the direct solver assembles the Jacobian at every step: the same request is accepted
    let direct = SolveSettings {
        solver: Some(SolverKind::Direct),
        ..s
    };
    let sol = solve(&m, &opts, &direct, &Backend::cpu(), &Progress::hidden()).expect("direct");
    let errors = sol.report.errors.expect("manufactured errors");
    assert!(errors.l2_rel < 0.1, "{errors:?}");
}
