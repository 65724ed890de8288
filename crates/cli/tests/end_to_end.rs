//! The built `ferrofem` binary end to end: solve, assemble and mesh with their outputs, a
//! bad option as a one-line error, and where `--backend auto|cuda` runs and what it says.

use std::path::PathBuf;
use std::process::{Command, Output};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferrofem-cli-solve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

fn ferrofem(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(args)
        .output()
        .expect("run ferrofem")
}

/// The one JSON object a successful run printed.
fn json_of(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn binary_solves_and_assembles() {
    let exe = env!("CARGO_BIN_EXE_ferrofem");
    let vtu = tmp("u.vtu");
    let out = Command::new(exe)
        .args([
            "solve",
            "--box",
            "tri:8x8",
            "--json",
            "--backend",
            "cpu",
            "--output",
        ])
        .arg(&vtu)
        .output()
        .expect("run ferrofem solve");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["problem"], "poisson");
    assert!(v["mesh"].as_str().expect("origin").contains("triangle"));
    assert_eq!(v["cells"], 128);
    assert_eq!(v["dofs"], 81);
    assert!(v["iterations"].as_u64().expect("iterations") > 0);
    let l2 = v["errors"]["l2"].as_f64().expect("l2");
    assert!(l2 > 0.0 && l2 < 1e-2 && v["errors"]["h1_rel"].as_f64().expect("h1") < 0.1);
    for phase in ["setup", "assembly", "solve", "total"] {
        assert!(v["timings"][phase].as_f64().expect("timing") >= 0.0);
    }
    assert_eq!(v["output"], vtu.display().to_string());
    assert!(std::fs::metadata(&vtu).expect("vtu written").len() > 0);

    let (a, b, d) = (tmp("A.mtx"), tmp("b.mtx"), tmp("dofs.csv"));
    let out = Command::new(exe)
        .args([
            "assemble",
            "--box",
            "quad:3x3",
            "--order",
            "2",
            "--bc",
            "dirichlet",
        ])
        .arg("--export-matrix")
        .arg(&a)
        .arg("--export-rhs")
        .arg(&b)
        .arg("--export-dofs")
        .arg(&d)
        .output()
        .expect("run ferrofem assemble");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let coo = ferrofem_io::read_matrix(&a).expect("read A.mtx");
    // Q2 on 3x3 quads: 7x7 nodes, 5x5 interior ones
    assert_eq!((coo.nrows, coo.ncols), (25, 25));
    assert_eq!(coo.symmetry, ferrofem_io::Symmetry::Symmetric);
    assert_eq!(ferrofem_io::read_vector(&b).expect("read b.mtx").len(), 25);
    let csv = std::fs::read_to_string(&d).expect("dofs.csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("dof,node,component,x,y,reduced"));
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 49);
    assert_eq!(rows.iter().filter(|r| r.ends_with(",-1")).count(), 24);

    // the same with identity rows: every dof, the 24 boundary ones as identity rows
    let v = json_of(&ferrofem(&[
        "assemble",
        "--box",
        "quad:3x3",
        "--order",
        "2",
        "--bc",
        "identity",
        "--json",
        "--export-matrix",
        a.to_str().expect("a UTF-8 path"),
    ]));
    assert_eq!(
        (v["bc"].as_str(), v["constrained_dofs"].as_u64()),
        (Some("identity"), Some(24))
    );
    let coo = ferrofem_io::read_matrix(&a).expect("read A.mtx");
    assert_eq!((coo.nrows, coo.ncols), (49, 49));

    // a Gmsh mesh refined on loading: 8 children per hexahedron, the origin says so
    let plate = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh/plate_hole_hex_v41_binary.msh");
    let out = Command::new(exe)
        .args(["mesh", "--refine", "1", "--json"])
        .arg(&plate)
        .output()
        .expect("run ferrofem mesh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["cells"], 2912 * 8);
    assert!(v["origin"].as_str().expect("origin").ends_with("refined 1"));

    // a bad option is one line on stderr and exit code 1, not a panic
    let out = Command::new(exe)
        .args(["solve", "--box", "tri:2x2", "--dirichlet", "nowhere"])
        .output()
        .expect("run ferrofem solve");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("nowhere") && err.contains("xmin"), "{err}");
    let _ = std::fs::remove_dir_all(vtu.parent().expect("dir"));
}

#[test]
fn auto_runs_a_case_without_a_gpu_path_on_the_cpu_and_says_why() {
    // elasticity on quadrilaterals has no GPU path, so wherever this runs (with a GPU or
    // without one) `auto` ends on the CPU with a one-line note saying why
    let out = ferrofem(&[
        "solve",
        "--box",
        "quad:4x4",
        "--problem",
        "elasticity",
        "--backend",
        "auto",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(v["backend"].as_str().expect("backend").starts_with("cpu ("));
    let note = v["backend_note"].as_str().expect("a note");
    assert!(note.ends_with("; running on the CPU"), "{note}");
    assert_eq!(note.lines().count(), 1, "{note}");

    // and the text summary prints it
    let out = ferrofem(&[
        "solve",
        "--box",
        "quad:4x4",
        "--problem",
        "elasticity",
        "--backend",
        "auto",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("note ") && l.ends_with("; running on the CPU")),
        "{text}"
    );
}

#[test]
fn cuda_never_falls_back() {
    let out = ferrofem(&["solve", "--box", "tri:4x4", "--backend", "cuda", "--json"]);
    if out.status.success() {
        // a GPU is usable here: the solve ran on it
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert!(v["backend"]
            .as_str()
            .expect("backend")
            .starts_with("cuda ("));
        assert!(v["backend_note"].is_null());
        return;
    }
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && !err.contains("running on the CPU"),
        "{err}"
    );
    assert!(err.contains("GPU") || err.contains("cuda"), "{err}");
}

/// The README's main job, `ferrofem solve examples/plate_hole.toml`, on the CPU: its JSON
/// record carries the boundary integrals and the probes (Kirsch's stress concentration
/// within 0.2 % of 3), and it writes the VTU and the probe CSV where the file says.
#[test]
fn the_main_job_solves_the_plate_with_a_hole() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let text = std::fs::read_to_string(root.join("examples/plate_hole.toml")).expect("example");
    let meshes = root.join("examples/meshes");
    let text = text.replace(
        "file = \"meshes/",
        &format!("file = \"{}/", meshes.display()),
    );
    let file = tmp("plate_hole.toml");
    std::fs::write(&file, text).expect("write");
    let out = ferrofem(&[
        "solve",
        file.to_str().expect("path"),
        "--backend",
        "cpu",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(v["problem"], "elasticity");
    assert!(
        v.get("errors").is_none_or(|e| e.is_null()),
        "{}",
        v["errors"]
    );
    let probes = v["probes"].as_array().expect("probes");
    let top = probes
        .iter()
        .find(|p| p["name"] == "hole_top")
        .expect("hole_top");
    let sxx = top["values"]
        .as_array()
        .expect("values")
        .iter()
        .find(|c| c[0] == "stress_0")
        .and_then(|c| c[1].as_f64())
        .expect("stress_0");
    assert!((sxx - 3.0).abs() < 0.006, "sigma_xx at the hole: {sxx}");
    let groups: Vec<&str> = v["boundaries"]
        .as_array()
        .expect("boundaries")
        .iter()
        .map(|b| b["group"].as_str().expect("group"))
        .collect();
    assert_eq!(
        groups,
        ["left (1)", "bottom (2)", "right (3)", "top (4)", "hole (5)"]
    );
    let dir = file.parent().expect("dir");
    assert!(
        std::fs::metadata(dir.join("out/plate_hole.vtu"))
            .expect("vtu")
            .len()
            > 0
    );
    let csv = std::fs::read_to_string(dir.join("out/plate_hole_probes.csv")).expect("csv");
    assert!(csv.starts_with("probe,x,y,u_0,u_1,strain_0"), "{csv}");
    assert_eq!(csv.lines().count(), 3, "{csv}");
}

/// Started by an MPI launcher on several ranks, a build without MPI refuses instead of
/// running the whole problem once per rank.
#[cfg(not(feature = "mpi"))]
#[test]
fn several_ranks_need_the_mpi_build() {
    let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(["wave", "--box", "quad:4x4", "--f0", "10", "--steps", "2"])
        .env("OMPI_COMM_WORLD_SIZE", "2")
        .output()
        .expect("run ferrofem");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("built without MPI"), "{stderr}");
}
