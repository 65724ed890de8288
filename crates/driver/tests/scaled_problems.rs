//! Problems at other physical scales are solved as well by every iterative solver as by
//! the direct one: coefficients from 1e-12 to 1e12, soft and stiff elasticity, domains
//! from 1e-9 m to 1e6 m, in f64 and f32, on the CPU and (when a GPU is usable) on the GPU.
//!
//! The Krylov stopping test is relative to the norm of the free equations' right-hand
//! side, which scales with the operator; the Dirichlet values, which do not, never enter
//! it. Were they to, a small coefficient or a small domain would stop the solve after a
//! few iterations with an error of order one while reporting a tiny residual.
//!
//! The GPU half runs with FERROFEM_REQUIRE_GPU=1 on a machine with a device; elsewhere it
//! is skipped with a note (the CPU half always runs).

use ferrofem_driver::{
    solve, Backend, PipelineError, Precision, ProblemKind, ProblemOptions, Progress, Solution,
    SolveSettings, SolverKind,
};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};

const ITERATIVE: [SolverKind; 3] = [SolverKind::Pcg, SolverKind::Cg, SolverKind::Gmres];

fn mesh(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// The device to run the GPU half on, if any.
#[cfg(feature = "cuda")]
type Device = std::sync::Arc<ferrofem_cuda::GpuDevice>;
#[cfg(not(feature = "cuda"))]
type Device = ();

fn gpu() -> Option<Device> {
    #[cfg(feature = "cuda")]
    return ferrofem_cuda::GpuDevice::for_tests();
    #[cfg(not(feature = "cuda"))]
    None
}

fn run(
    mesh: &Mesh,
    options: &ProblemOptions,
    solver: SolverKind,
    precision: Precision,
    rtol: f64,
    device: Option<&Device>,
) -> Solution {
    let settings = SolveSettings {
        solver: Some(solver),
        precision,
        rtol: Some(rtol),
        ..SolveSettings::default()
    };
    let backend = match device {
        #[cfg(feature = "cuda")]
        Some(d) => Backend::Cuda(d.clone()),
        _ => Backend::cpu(),
    };
    solve(mesh, options, &settings, &backend, &Progress::hidden())
        .unwrap_or_else(|e| panic!("{} {:?} {:?}: {e}", options.kind.name(), solver, precision))
}

fn relative_difference(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den).sqrt()
}

/// How an iterative solution must compare with the direct one.
#[derive(Clone, Copy)]
enum Agreement {
    /// The L² errors against the exact solution agree within 5 %.
    Error,
    /// Where the discretisation error sits at the level of rounding (a solution that is
    /// nearly affine on a tiny domain), the solutions themselves agree to this relative
    /// difference (what the tolerance gives), or the errors within 5 %.
    Solution(f64),
}

/// Solves `options` on `mesh` directly on the CPU (the reference) and by every iterative
/// solver on the CPU and on `device`, and checks the agreement.
fn check(
    label: &str,
    mesh: &Mesh,
    options: &ProblemOptions,
    precision: Precision,
    rtol: f64,
    agreement: Agreement,
    device: Option<&Device>,
) {
    let direct = run(mesh, options, SolverKind::Direct, precision, rtol, None);
    let e_direct = direct.report.errors.expect("manufactured errors").l2_rel;
    let mut backends: Vec<(&str, Option<&Device>)> = vec![("cpu", None)];
    if let Some(d) = device {
        backends.push(("gpu", Some(d)));
    }
    for (backend, dev) in backends {
        for solver in ITERATIVE {
            let s = run(mesh, options, solver, precision, rtol, dev);
            let e = s.report.errors.expect("manufactured errors").l2_rel;
            let gap = (e - e_direct).abs() / e_direct;
            let diff = relative_difference(&s.u, &direct.u);
            eprintln!(
                "{label} {backend} {solver:?} {precision:?}: {} it, relative residual {:.2e}, \
                 L2 error {e:.4e} (direct {e_direct:.4e}, {:.2} %), solution difference {diff:.1e}",
                s.report.iterations,
                s.report.residual.relative,
                100.0 * gap
            );
            let ok = match agreement {
                Agreement::Error => gap <= 0.05,
                Agreement::Solution(limit) => gap <= 0.05 || diff <= limit,
            };
            assert!(
                ok,
                "{label} {backend} {solver:?} {precision:?}: L2 error {e:e} against the \
                 direct {e_direct:e}, solution difference {diff:e}"
            );
            // the residual reported is the recomputed one, and it meets the tolerance
            assert!(
                s.report.residual.relative <= rtol,
                "{label} {backend} {solver:?}: relative residual {:e} > {rtol:e}",
                s.report.residual.relative
            );
            assert!(s.report.iterations > 0, "{label}: no iteration");
        }
    }
}

/// [`check`] in f64 at order 2 (`rtol` 1e-10) and in f32 at order 1 (`rtol` 1e-5: f32
/// resolves about 1e-6 of the residual, and P1's discretisation error lies far above what
/// that leaves), `options(order)` giving the problem.
fn check_both_precisions(
    label: &str,
    mesh: &Mesh,
    options: impl Fn(usize) -> ProblemOptions,
    agreement: [Agreement; 2],
    device: Option<&Device>,
) {
    check(
        label,
        mesh,
        &options(2),
        Precision::F64,
        1e-10,
        agreement[0],
        device,
    );
    check(
        label,
        mesh,
        &options(1),
        Precision::F32,
        1e-5,
        agreement[1],
        device,
    );
}

fn poisson(order: usize, kappa: f64) -> ProblemOptions {
    ProblemOptions {
        kind: ProblemKind::Poisson,
        order,
        kappa,
        ..ProblemOptions::default()
    }
}

fn elasticity(order: usize, lambda: f64, mu: f64) -> ProblemOptions {
    ProblemOptions {
        kind: ProblemKind::Elasticity,
        order,
        lambda,
        mu,
        ..ProblemOptions::default()
    }
}

const KAPPAS: [f64; 5] = [1e-12, 1e-6, 1.0, 1e6, 1e12];

#[test]
fn poisson_with_coefficients_from_1e_minus_12_to_1e12() {
    let device = gpu();
    let dev = device.as_ref();
    for kappa in KAPPAS {
        let tri = mesh("tri:8x8,perturb=0.2");
        let tet = mesh("tet:4x4x4,perturb=0.2");
        let hex = mesh("hex:4x4x4,perturb=0.2");
        for (m, name) in [(&tri, "tri"), (&tet, "tet"), (&hex, "hex")] {
            let label = format!("poisson {name} κ={kappa:e}");
            let options = |order| poisson(order, kappa);
            check_both_precisions(&label, m, options, [Agreement::Error; 2], dev);
        }
    }
}

#[test]
fn soft_and_stiff_elasticity() {
    let device = gpu();
    let dev = device.as_ref();
    // a gel (Pa), rubber, and steel (λ, μ in Pa)
    for (what, lambda, mu) in [
        ("gel", 2e3, 1e3),
        ("rubber", 2e6, 6e5),
        ("steel", 1.15e11, 7.7e10),
    ] {
        for (spec, name) in [
            ("tri:6x6,perturb=0.2", "tri"),
            ("tet:3x3x3,perturb=0.2", "tet"),
        ] {
            let m = mesh(spec);
            let label = format!("elasticity {what} {name}");
            let options = |order| elasticity(order, lambda, mu);
            check_both_precisions(&label, &m, options, [Agreement::Error; 2], dev);
        }
    }
}

#[test]
fn domains_from_a_nanometre_to_a_thousand_kilometres() {
    // The manufactured solution is given in physical coordinates: on a tiny domain it is
    // nearly affine, so the discretisation error is at the level of rounding and only the
    // solutions themselves can be compared; on the large ones it is not resolved at all,
    // and the errors (of order one) must still agree.
    let device = gpu();
    let dev = device.as_ref();
    for length in [1e-9, 1e-6, 1e-3, 1.0, 1e3, 1e6] {
        for cell in ["tri:8x8", "tet:4x4x4", "hex:3x3x3"] {
            let max = if cell.starts_with("tri") {
                format!("{length:e}:{length:e}")
            } else {
                format!("{length:e}:{length:e}:{length:e}")
            };
            let m = mesh(&format!("{cell},perturb=0.2,max={max}"));
            let label = format!("poisson {cell} L={length:e} m");
            if !cell.starts_with("tri") && length >= 1e3 {
                // exp(z/2) at z = 1e3 is 1e217: refused up front, not solved into NaN
                let settings = SolveSettings::default();
                let e = solve(
                    &m,
                    &poisson(1, 1.0),
                    &settings,
                    &Backend::cpu(),
                    &Progress::hidden(),
                )
                .err()
                .unwrap_or_else(|| panic!("{label}: solved a solution that overflows"));
                assert!(
                    matches!(e, PipelineError::UnrepresentableSolution { .. }),
                    "{label}: {e}"
                );
                assert!(e.to_string().contains("overflows"), "{e}");
                continue;
            }
            let agreement = [Agreement::Solution(1e-7), Agreement::Solution(1e-3)];
            check_both_precisions(&label, &m, |order| poisson(order, 1.0), agreement, dev);
        }
    }
}

#[test]
fn a_tolerance_below_the_rounding_level_is_warned_of_and_the_true_residual_reported() {
    let m = mesh("tri:16x16");
    for solver in ITERATIVE {
        let settings = SolveSettings {
            solver: Some(solver),
            precision: Precision::F32,
            rtol: Some(1e-14),
            ..SolveSettings::default()
        };
        let s = solve(
            &m,
            &poisson(2, 1.0),
            &settings,
            &Backend::cpu(),
            &Progress::hidden(),
        )
        .unwrap_or_else(|e| panic!("{solver:?}: {e}"));
        let r = &s.report;
        // the relative residual f32 can reach here is about 5e-7: reported as it is
        assert!(
            r.residual.relative > 1e-8 && r.residual.relative < 1e-5,
            "{solver:?}: {:?}",
            r.residual
        );
        let recursive = r.residual.recursive.expect("a Krylov solve");
        assert!(recursive < r.residual.last, "{solver:?}: {:?}", r.residual);
        assert_eq!(r.warnings.len(), 2, "{solver:?}: {:?}", r.warnings);
        assert!(r.warnings[0].contains("below what f32 arithmetic can resolve"));
        assert!(r.warnings[1].contains("the tolerance was not reached"));
        assert!(r.warnings[1].contains("rounding level"));
        // the solution is still what f32 gives: the direct solver's error within 5 %
        let direct = run(
            &m,
            &poisson(2, 1.0),
            SolverKind::Direct,
            Precision::F32,
            1e-5,
            None,
        );
        let gap = (r.errors.expect("manufactured errors").l2_rel
            - direct.report.errors.expect("manufactured errors").l2_rel)
            .abs()
            / direct.report.errors.expect("manufactured errors").l2_rel;
        assert!(
            gap < 0.05,
            "{solver:?}: {} vs {}",
            r.errors.expect("manufactured errors").l2_rel,
            direct.report.errors.expect("manufactured errors").l2_rel
        );
    }
}
