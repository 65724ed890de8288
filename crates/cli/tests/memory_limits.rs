//! Commands whose memory needs exceed the machine are refused before they allocate: a
//! non-zero exit and a message with the estimate and the available memory, instead of the
//! process being aborted by a failed allocation part-way through.
//!
//! The estimates of these cases run from 34 GiB to petabytes; a case whose estimate would
//! fit the machine running the tests (more memory than the estimate) is skipped with a
//! note, since there it would rightly run.

use ferrofem_base::available_memory;
use ferrofem_base::memory::human_bytes;
use std::process::Command;
use std::time::{Duration, Instant};

/// True (with a note) when the machine has `bytes` available, so that the case would fit.
fn roomy(bytes: u64, case: &str) -> bool {
    let roomy = available_memory().is_some_and(|a| a >= bytes);
    if roomy {
        eprintln!(
            "{case}: skipped, this machine has {} available",
            human_bytes(bytes)
        );
    }
    roomy
}

/// Runs `args`, expects a refusal for lack of memory within `limit`, and returns the
/// message; checks that it names an estimate and the available memory.
fn refused(args: &[&str], limit: Duration) -> String {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(args)
        .output()
        .expect("run ferrofem");
    let elapsed = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(
        err.contains("error: not enough memory for ") || err.contains(": not enough memory for "),
        "{args:?}: {err}"
    );
    let needs = err.split("it needs about ").nth(1).expect("an estimate");
    let (needed, rest) = needs.split_once(", but ").expect("the available memory");
    assert!(
        needed.ends_with("GiB") || needed.ends_with("TiB"),
        "{args:?}: estimate '{needed}'"
    );
    assert!(rest.contains(" is available; "), "{args:?}: {err}");
    assert!(
        elapsed < limit,
        "{args:?}: refused after {elapsed:?}, not before allocating"
    );
    err
}

#[test]
fn refining_a_file_mesh_too_far_is_refused_with_the_estimate() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/data/gmsh/plate_hole_hex_v41_binary.msh"
    );
    let mesh = ferrofem_mesh::read_gmsh(path).expect("read the plate");
    let needed = mesh.refinement_bytes(5);
    if roomy(needed, "mesh --refine 5") {
        return;
    }
    let err = refused(&["mesh", path, "--refine", "5"], Duration::from_secs(20));
    assert!(
        err.contains(&format!(
            "not enough memory for the mesh refined 5 times (9.542e7 cells): it needs about {}",
            human_bytes(needed)
        )),
        "{err}"
    );
    assert!(err.contains("give fewer refinement levels"), "{err}");
    // and so for the problem commands
    let err = refused(
        &["assemble", "--mesh", path, "--refine", "5"],
        Duration::from_secs(20),
    );
    assert!(err.contains(&human_bytes(needed)), "{err}");
}

#[test]
fn a_copy_buffer_larger_than_the_memory_is_refused() {
    let err = refused(
        &["bench", "stream", "--backend", "cpu", "--bytes", "1e15"],
        Duration::from_secs(20),
    );
    assert!(
        err.contains(&format!(
            "not enough memory for 2 host buffers of {}: it needs about {}",
            human_bytes(1_000_000_000_000_000),
            human_bytes(2_000_000_000_000_000)
        )),
        "{err}"
    );
    assert!(err.contains("give a smaller --bytes"), "{err}");
    // `info` copies at most 512 MiB on the CPU: without a GPU it runs; with one, the
    // device's buffers (and their host copies) are refused
    let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(["info", "--bytes", "1e15"])
        .output()
        .expect("run ferrofem");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    if out.status.success() {
        assert!(!stdout.contains("\ngpu "), "{stdout}");
    } else {
        assert!(stderr.contains("not enough memory for 2 "), "{stderr}");
        assert!(stderr.contains("give a smaller --bytes"), "{stderr}");
    }
}

#[test]
fn a_quadrature_table_larger_than_the_memory_is_refused() {
    // a million tetrahedra with 101^3 points each: the geometry at the points alone is
    // 10^12 points of 14 doubles
    let err = refused(
        &["bench", "residual", "--backend", "cpu", "--qdegree", "200"],
        Duration::from_secs(20),
    );
    assert!(
        err.contains(
            "not enough memory for the residual operator on 998250 cells with up to 1030301 quadrature points each"
        ),
        "{err}"
    );
    assert!(err.contains("TiB"), "{err}");
    assert!(
        err.contains("give a lower --qdegree or fewer --cells"),
        "{err}"
    );
}

#[test]
fn element_matrices_larger_than_the_memory_are_refused() {
    // order 15 on hexahedra: 4096 nodes per cell, 4096^2 entries per element matrix
    let err = refused(
        &[
            "bench",
            "assembly",
            "--box",
            "hex:8x8x8",
            "--order",
            "15",
            "--reps",
            "1",
        ],
        Duration::from_secs(30),
    );
    assert!(
        err.contains("not enough memory for assembling 4096x4096 element matrices of 512 cells (1771561 rows, about "),
        "{err}"
    );
    // the element -> nonzero map alone is 512 * 4096^2 * 4 bytes = 32 GiB
    let needed: f64 = err
        .split("it needs about ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("a number");
    assert!(err.contains("GiB") && needed >= 32.0, "{err}");
    // on tetrahedra the element refuses the order with its range
    let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(["bench", "assembly", "--order", "15"])
        .output()
        .expect("run ferrofem");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("order 15 is not supported on tetrahedron (supported: 1..=4)"),
        "{err}"
    );
}

#[test]
fn a_bake_off_larger_than_the_memory_is_refused_before_its_table() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args([
            "bench",
            "bp1",
            "--backend",
            "cpu",
            "--dofs",
            "1e12",
            "--order",
            "1,2",
        ])
        .output()
        .expect("run ferrofem");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not enough memory for order 1 on "), "{err}");
    assert!(err.contains("give a smaller --dofs"), "{err}");
    // refused before the table's header
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// A direct solve whose factorisation cannot fit: refused from the mesh's counts, before
/// the space or the operator is built, with the predicted size of the factor.
fn direct_solve_refused(args: &[&str]) {
    // the predicted factors of these cases need more than 200 GiB
    if roomy(200 << 30, &format!("{args:?}")) {
        return;
    }
    let err = refused(args, Duration::from_secs(5));
    assert!(
        err.contains("not enough memory for a direct solve with "),
        "{err}"
    );
    assert!(err.contains("use an iterative solver"), "{err}");
}

#[test]
fn a_direct_solve_of_a_large_hexahedral_p2_box_is_refused() {
    direct_solve_refused(&[
        "solve",
        "--box",
        "hex:120x120x120",
        "--order",
        "2",
        "--solver",
        "direct",
        "--backend",
        "cpu",
    ]);
}

#[test]
fn a_direct_solve_of_p3_elasticity_on_a_large_tetrahedral_box_is_refused() {
    direct_solve_refused(&[
        "solve",
        "--box",
        "tet:60x60x60",
        "--problem",
        "elasticity",
        "--order",
        "3",
        "--solver",
        "direct",
        "--backend",
        "cpu",
    ]);
}
