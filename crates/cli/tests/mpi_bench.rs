//! `mpirun -np N ferrofem bench bp3.5 --solve TOL` (N = 2, 3, 4): the screened problem's
//! Jacobi-PCG solve over the ranks' parts of the generated box, on the CPU, whose exact
//! solution is known: every rank count finds it (to the solve's tolerance) in about the
//! same number of iterations, over the same box. Where an NVIDIA GPU is present, the same
//! with the ranks on GPUs, against the CPU ranks.

use super::wave::{mpirun_with, report};
use std::path::Path;

/// The record of `mpirun -np np ferrofem bench bp3.5 ... --backend backend`.
fn solve_on(np: usize, backend: &str, vars: &[(&str, &str)]) -> serde_json::Value {
    let run = mpirun_with(
        np,
        &[
            "bench",
            "bp3.5",
            "--order",
            "3",
            "--dofs",
            "3e4",
            "--geo",
            "stored",
            "--solve",
            "1e-10",
            "--backend",
            backend,
            "--json",
        ],
        vars,
    );
    report(&run, &format!("bench bp3.5 on {np} ranks ({backend})"))
}

/// Checks a record against the first rank count's, and its own solve.
fn check(r: &serde_json::Value, first: &serde_json::Value, np: usize, label: &str) {
    assert_eq!(r["ranks"], np, "{label}");
    for key in ["dofs", "elements", "order", "mesh"] {
        assert_eq!(r[key], first[key], "{label}: {key}");
    }
    let error = r["solve_error"].as_f64().expect("the solve's error");
    let residual = r["solve_rel_residual"].as_f64().expect("the residual");
    assert!(residual <= 1e-10, "{label}: residual {residual:e}");
    // the error is bounded by the conditioning times the residual (CPU 5e-9, GPU 1e-7);
    // a wrong interface sum leaves errors of order one
    assert!(
        error <= 1e-6,
        "{label}: error {error:e} against the exact solution"
    );
    let (it, it0) = (
        r["solve_iterations"].as_u64().unwrap() as f64,
        first["solve_iterations"].as_u64().unwrap() as f64,
    );
    assert!(
        (it - it0).abs() <= 0.05 * it0 + 2.0,
        "{label}: {it} iterations against {it0}"
    );
    let roof = r["roofline_fraction"].as_f64().unwrap();
    assert!(roof > 0.0 && roof.is_finite(), "{label}: roofline {roof}");
    println!(
        "{label}: {it} iterations, residual {residual:.1e}, error {error:.1e}, halo {}",
        r["transport"]
    );
}

#[test]
fn the_bake_off_solve_on_ranks_finds_the_exact_solution() {
    let first = solve_on(2, "cpu", &[]);
    check(&first, &first, 2, "2 ranks (cpu)");
    for np in [3, 4] {
        let r = solve_on(np, "cpu", &[]);
        check(&r, &first, np, &format!("{np} ranks (cpu)"));
    }
    if !Path::new("/dev/nvidiactl").exists() {
        eprintln!("no NVIDIA GPU here: the GPU ranks are not run");
        return;
    }
    for (np, transport) in [(2, None), (2, Some("host")), (3, None)] {
        let vars: Vec<(&str, &str)> = transport
            .map(|t| ("FERROFEM_GPU_EXCHANGE", t))
            .into_iter()
            .collect();
        let r = solve_on(np, "cuda", &vars);
        let label = format!("{np} ranks (cuda, {})", transport.unwrap_or("default"));
        check(&r, &first, np, &label);
        if transport == Some("host") {
            assert_eq!(r["transport"], "host", "{label}");
        }
    }
}

#[test]
fn the_bake_off_bench_on_ranks_asks_for_a_solve() {
    let run = mpirun_with(2, &["bench", "bp3.5", "--order", "2", "--dofs", "1e3"], &[]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("--solve"), "{stderr}");
}
