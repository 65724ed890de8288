//! Every numeric option has a range that the argument parser checks: a value outside it is
//! refused before the command starts (exit code 2), with a message that gives the range.
//! Values inside a range (including the written forms of sizes) are accepted.

use std::process::{Command, Output};

fn ferrofem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(args)
        .output()
        .expect("run ferrofem")
}

/// Runs `args`, expects the parser's refusal of `value` for `option`, naming `range`.
fn refused(args: &[&str], option: &str, value: &str, range: &str) {
    let out = ferrofem(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(
        err.contains(&format!("invalid value '{value}' for '{option}")),
        "{args:?}: {err}"
    );
    assert!(err.contains(range), "{args:?}: no '{range}' in: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed a result");
}

#[test]
fn solver_options_are_checked() {
    let box_ = ["solve", "--box", "tri:4x4", "--backend", "cpu"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        box_.iter().chain(extra).copied().collect()
    };
    let rtol = "a relative tolerance in (0, 1)";
    refused(&with(&["--rtol", "2"]), "--rtol", "2", rtol);
    refused(&with(&["--rtol", "1"]), "--rtol", "1", rtol);
    refused(&with(&["--rtol", "0"]), "--rtol", "0", rtol);
    refused(&with(&["--rtol", "-0.5"]), "--rtol", "-0.5", rtol);
    refused(&with(&["--rtol", "nan"]), "--rtol", "nan", rtol);
    refused(
        &with(&["--max-iter", "0"]),
        "--max-iter",
        "0",
        "a whole number >= 1",
    );
}

#[test]
fn problem_options_are_checked() {
    for cmd in ["solve", "assemble"] {
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            [cmd, "--box", "tri:4x4"]
                .iter()
                .chain(extra)
                .copied()
                .collect()
        };
        let positive = "a positive finite number, in (0, inf)";
        refused(&with(&["--kappa", "-1"]), "--kappa", "-1", positive);
        refused(&with(&["--kappa", "0"]), "--kappa", "0", positive);
        refused(&with(&["--kappa", "nan"]), "--kappa", "nan", positive);
        refused(&with(&["--kappa", "inf"]), "--kappa", "inf", positive);
        refused(&with(&["--mu", "0"]), "--mu", "0", positive);
        refused(&with(&["--mu", "-2"]), "--mu", "-2", positive);
        refused(
            &with(&["--lambda", "inf"]),
            "--lambda",
            "inf",
            "a finite number",
        );
        refused(
            &with(&["--lambda", "nan"]),
            "--lambda",
            "nan",
            "a finite number",
        );
        refused(
            &with(&["--order", "0"]),
            "--order",
            "0",
            "0 is not in 1..=15",
        );
        refused(
            &with(&["--order", "16"]),
            "--order",
            "16",
            "16 is not in 1..=15",
        );
    }
}

#[test]
fn values_inside_the_ranges_are_accepted() {
    // lambda may be zero (and negative while d lambda + 2 mu > 0, the physics' check)
    let out = ferrofem(&[
        "solve",
        "--box",
        "tri:4x4",
        "--backend",
        "cpu",
        "--problem",
        "elasticity",
        "--lambda",
        "-0.5",
        "--mu",
        "1",
        "--rtol",
        "1e-6",
        "--max-iter",
        "1000",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // beyond the bulk-modulus bound, the physics refuses lambda with its condition
    let out = ferrofem(&[
        "solve",
        "--box",
        "tri:4x4",
        "--backend",
        "cpu",
        "--problem",
        "elasticity",
        "--lambda",
        "-1",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("dim*lambda + 2*mu > 0"), "{err}");
    // an order the cell type lacks: the element's own range
    let out = ferrofem(&["solve", "--box", "tet:2x2x2", "--order", "5"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("order 5 is not supported on tetrahedron (supported: 1..=4)"),
        "{err}"
    );
    // sizes written with a binary suffix or an exponent
    for bytes in ["2MiB", "2097152", "2.097152e6"] {
        let out = ferrofem(&[
            "bench",
            "stream",
            "--backend",
            "cpu",
            "--bytes",
            bytes,
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON record");
        assert_eq!(v["bytes"], 2 << 20, "{bytes}");
        assert!(v["gbytes_per_s"].as_f64().expect("bandwidth") > 0.0);
    }
}

#[test]
fn bandwidth_options_are_checked() {
    let bytes = "a whole number of bytes from 1 MiB to 1 EiB";
    for cmd in [&["bench", "stream"][..], &["info"][..]] {
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            cmd.iter().chain(extra).copied().collect()
        };
        refused(&with(&["--bytes", "0"]), "--bytes", "0", bytes);
        refused(&with(&["--bytes", "1000"]), "--bytes", "1000", bytes);
        refused(&with(&["--bytes", "nan"]), "--bytes", "nan", bytes);
        refused(&with(&["--bytes", "1.5"]), "--bytes", "1.5", bytes);
        refused(&with(&["--bytes", "2EiB"]), "--bytes", "2EiB", bytes);
        refused(&with(&["--bytes", "1e300"]), "--bytes", "1e300", bytes);
    }
    refused(
        &["bench", "stream", "--reps", "0"],
        "--reps",
        "0",
        "0 is not in 1..=1000000",
    );
}

#[test]
fn bake_off_options_are_checked() {
    let with = |extra: &[&'static str]| -> Vec<&'static str> {
        ["bench", "bp1", "--backend", "cpu"]
            .iter()
            .chain(extra)
            .copied()
            .collect()
    };
    refused(
        &with(&["--reps", "0"]),
        "--reps",
        "0",
        "0 is not in 1..=1000000",
    );
    let dofs = "a number in [1, 1e12]";
    refused(&with(&["--dofs", "nan"]), "--dofs", "nan", dofs);
    refused(&with(&["--dofs", "0"]), "--dofs", "0", dofs);
    refused(&with(&["--dofs", "-5"]), "--dofs", "-5", dofs);
    refused(&with(&["--dofs", "1e13"]), "--dofs", "1e13", dofs);
    refused(&with(&["--order", "0..3"]), "--order", "0..3", "1..=15");
    refused(&with(&["--order", "16"]), "--order", "16", "1..=15");
    refused(&with(&["--order", "8..1"]), "--order", "8..1", "1..=15");
    refused(
        &with(&["--solve", "1"]),
        "--solve",
        "1",
        "a relative tolerance in (0, 1)",
    );
    refused(
        &with(&["--refine", "11"]),
        "--refine",
        "11",
        "give auto or a number of levels, 0 to 10",
    );
}

#[test]
fn residual_and_assembly_benchmark_options_are_checked() {
    let residual = |extra: &[&'static str]| -> Vec<&'static str> {
        ["bench", "residual"].iter().chain(extra).copied().collect()
    };
    refused(
        &residual(&["--dim", "4"]),
        "--dim",
        "4",
        "4 is not in 2..=3",
    );
    refused(
        &residual(&["--order", "0"]),
        "--order",
        "0",
        "0 is not in 1..=6",
    );
    refused(
        &residual(&["--order", "7"]),
        "--order",
        "7",
        "7 is not in 1..=6",
    );
    refused(
        &residual(&["--cells", "nan"]),
        "--cells",
        "nan",
        "a number in [1, 1e12]",
    );
    refused(
        &residual(&["--qdegree", "401"]),
        "--qdegree",
        "401",
        "401 is not in 0..=400",
    );
    refused(
        &residual(&["--perturb", "-0.1"]),
        "--perturb",
        "-0.1",
        "a number in [0, 0.35]",
    );
    refused(
        &residual(&["--reps", "0"]),
        "--reps",
        "0",
        "0 is not in 1..=1000000",
    );
    let assembly = |extra: &[&'static str]| -> Vec<&'static str> {
        ["bench", "assembly"].iter().chain(extra).copied().collect()
    };
    refused(
        &assembly(&["--order", "0"]),
        "--order",
        "0",
        "0 is not in 1..=15",
    );
    refused(
        &assembly(&["--order", "16"]),
        "--order",
        "16",
        "16 is not in 1..=15",
    );
    refused(
        &assembly(&["--qdegree", "1000"]),
        "--qdegree",
        "1000",
        "1000 is not in 0..=400",
    );
    refused(
        &assembly(&["--reps", "0"]),
        "--reps",
        "0",
        "0 is not in 1..=1000000",
    );
    refused(
        &assembly(&["--warmup", "1000001"]),
        "--warmup",
        "1000001",
        "1000001 is not in 0..=1000000",
    );
}

/// A strategy of the other backend is refused with the backend to give; a GPU strategy
/// without a usable GPU says why.
#[test]
fn assembly_strategies_belong_to_their_backend() {
    let out = ferrofem(&[
        "bench",
        "assembly",
        "--strategy",
        "atomic",
        "--box",
        "tet:2x2x2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("GPU strategy: give --backend cuda"), "{err}");
    let out = ferrofem(&[
        "bench",
        "assembly",
        "--backend",
        "cuda",
        "--strategy",
        "by-row",
        "--box",
        "tet:2x2x2",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    // with a GPU: the CPU strategy is refused; without: the missing GPU is explained
    assert!(
        err.contains(
            "CPU strategy: give atomic, elem-color, global-nz, shared-nz, block-sums or local-row"
        ) || err.to_lowercase().contains("cuda")
            || err.to_lowercase().contains("gpu"),
        "{err}"
    );
}
