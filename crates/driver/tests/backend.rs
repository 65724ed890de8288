//! Choosing the backend, as a library: where no GPU is usable, `auto` runs on the CPU and
//! says why while `cuda` is an error; the CPU is never left and never retried. (The other
//! half, a case without a GPU path under `auto` and `cuda`, needs a device: see
//! `gpu_solve.rs`.)

use ferrofem_driver::{
    fallback_reason, select, solve_with_fallback, Backend, BackendArg, PipelineError, ProblemKind,
    ProblemOptions, Progress, SolveSettings, SolverKind,
};
use ferrofem_mesh::{generate_box, BoxSpec};

#[test]
fn auto_without_a_usable_gpu_runs_on_the_cpu_with_a_note() {
    let err = match select(BackendArg::Cuda) {
        Ok(_) => {
            eprintln!("a GPU is usable here: the fallback without one is not exercised");
            return;
        }
        Err(e) => e,
    };
    let Some(why) = fallback_reason(&err) else {
        // a GPU that is present but failed is reported under `auto` too, never hidden
        let auto = select(BackendArg::Auto).expect_err("auto reports a failed GPU");
        assert_eq!(auto.to_string(), err.to_string());
        return;
    };
    assert!(
        why.starts_with("GPU backend unavailable: ") || why.contains("without the `cuda` feature"),
        "{why}"
    );
    let backend = select(BackendArg::Auto).expect("auto falls back");
    assert!(!backend.is_gpu());
    let note = backend.fallback_note().expect("a note says why");
    assert_eq!(note, format!("{why}; running on the CPU"));
    assert_eq!(note.lines().count(), 1, "{note}");

    // the pipeline runs on the CPU it was given and hands the note back
    let mesh = generate_box(&BoxSpec::parse("tri:6x6").expect("spec")).expect("mesh");
    let (solution, used) = solve_with_fallback(
        &mesh,
        &ProblemOptions::default(),
        &SolveSettings::default(),
        BackendArg::Auto,
        backend,
        &Progress::hidden(),
    )
    .expect("solves on the CPU");
    assert_eq!(used.fallback_note(), Some(note));
    assert!(solution.report.errors.expect("manufactured errors").l2_rel < 0.05);
}

#[test]
fn a_cpu_error_is_returned_not_retried() {
    let mesh = generate_box(&BoxSpec::parse("tri:4x4").expect("spec")).expect("mesh");
    let options = ProblemOptions {
        kind: ProblemKind::Nonlinear,
        ..ProblemOptions::default()
    };
    let settings = SolveSettings {
        solver: Some(SolverKind::Pcg),
        ..SolveSettings::default()
    };
    for requested in [BackendArg::Auto, BackendArg::Cpu] {
        let err = solve_with_fallback(
            &mesh,
            &options,
            &settings,
            requested,
            Backend::cpu(),
            &Progress::hidden(),
        )
        .expect_err("CG is refused for the nonlinear problem");
        assert!(matches!(err, PipelineError::Unsupported(_)), "{err}");
        assert_eq!(fallback_reason(&err), None);
    }
}
