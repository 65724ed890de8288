//! `mpirun -np N ferrofem solve FILE.toml` (N = 2, 3, 4, `--oversubscribe`) against the
//! serial `ferrofem solve FILE.toml` of the same file, for the examples: two layers of
//! different conductivity (a Gmsh quadrilateral mesh, named regions, a line of probes), the
//! plate with a hole (Gmsh triangles, P2 plane-strain elasticity, one-component Dirichlet
//! conditions, tractions as expressions) and the cantilever (a generated hexahedral box,
//! Q2 elasticity). The whole mesh's counts must be the serial ones; the solution at the
//! probes and in the `.pvtu` pieces (checked by `scripts/check_pvtu.py` with meshio where
//! `FERROFEM_CHECK_VTU=1`) must equal the serial solution to 1e-12 of its largest value;
//! the derived fields at the probes, the region and boundary integrals (reactions
//! included) to 1e-10 of their largest value (they differentiate a solution converged to
//! the file's tolerance). What the ranks cannot do is refused with its reason.
//!
//! Where a GPU is present, the ranks solve on it (`--backend cuda`): a hexahedral Poisson
//! file (the bake-off kernel) and the plate with a hole (the residual kernel, two
//! components) on 2 and 3 ranks, all solved to `rtol` 1e-10: the solution at the probes
//! within 1e-8 of its largest value of the serial CPU solve's; the iterations at most 1.6
//! times the serial GPU solve's (the open defect of docs/distribution.md: the GPU ranks
//! take 10–50 % more). `auto` solves on the CPU ranks and says so.

use super::wave::{check_pvtu, mpirun_with, report};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// Example `name` copied into a fresh folder (its mesh read where it is), so that its
/// `out/` files are written there.
fn example_in(name: &str, label: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "ferrofem-mpi-solve-{name}-{label}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let meshes = examples().join("meshes");
    let text = std::fs::read_to_string(examples().join(format!("{name}.toml")))
        .expect("the example")
        .replace("\"meshes/", &format!("\"{}/", meshes.display()));
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("write the problem");
    path
}

/// The largest difference between `a` and `b` over the largest value of `b`.
fn relative_difference(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    if scale > 0.0 {
        diff / scale
    } else {
        diff
    }
}

/// Every number of `key` (a number or a list of numbers) over the entries of `list`.
fn numbers(list: &Value, key: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for entry in list.as_array().expect("a list") {
        match &entry[key] {
            Value::Number(n) => out.push(n.as_f64().unwrap()),
            Value::Array(v) => out.extend(v.iter().map(|x| x.as_f64().unwrap())),
            _ => {}
        }
    }
    out
}

/// The probes' values of the columns of field `field` (`u`, `u_0`, `stress_2`, ...).
fn probe_field(r: &Value, field: &str) -> Vec<f64> {
    let mut out = Vec::new();
    for p in r["probes"].as_array().expect("probes") {
        for pair in p["values"].as_array().expect("values") {
            let column = pair[0].as_str().unwrap();
            let base = column
                .rsplit_once('_')
                .filter(|(_, k)| k.parse::<usize>().is_ok())
                .map_or(column, |(b, _)| b);
            if base == field {
                out.push(pair[1].as_f64().unwrap());
            }
        }
    }
    out
}

#[test]
fn the_examples_solved_on_ranks_equal_the_serial_solve() {
    for (name, derived) in [
        ("two_layers", &["grad_u", "flux"][..]),
        ("plate_hole", &["strain", "stress", "von_mises"][..]),
        ("cantilever", &["strain", "stress", "von_mises"][..]),
    ] {
        let serial_file = example_in(name, "serial");
        let serial = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
            .args(["solve", "--json", "--backend", "cpu"])
            .arg(&serial_file)
            .output()
            .expect("run ferrofem");
        let serial = report(&serial, &format!("{name}: the serial solve"));
        assert_eq!(serial["ranks"], 1);
        for np in [2, 3, 4] {
            let file = example_in(name, &format!("np{np}"));
            let path = file.display().to_string();
            let run = mpirun_with(np, &["solve", "--json", "--backend", "cpu", &path], &[]);
            let r = report(&run, &format!("{name}: mpirun -np {np}"));
            let label = format!("{name} on {np} ranks");
            assert_eq!(r["ranks"], np, "{label}");
            let memory = r["peak_memory_per_rank"]
                .as_array()
                .expect("memory per rank");
            assert_eq!(memory.len(), np, "{label}");
            assert!(memory.iter().all(|m| m.as_u64().is_some_and(|b| b > 0)));
            assert_eq!(r["backend"], "cpu", "{label}");
            for key in [
                "cells",
                "vertices",
                "dofs",
                "free_dofs",
                "natural_facets",
                "order",
            ] {
                assert_eq!(r[key], serial[key], "{label}: {key}");
            }
            let its = (
                r["iterations"].as_i64().unwrap(),
                serial["iterations"].as_i64().unwrap(),
            );
            assert!((its.0 - its.1).abs() <= 2, "{label}: iterations {its:?}");
            let relative = r["residual"]["relative"].as_f64().unwrap();
            assert!(relative <= 1e-10, "{label}: relative residual {relative}");

            let u = relative_difference(&probe_field(&r, "u"), &probe_field(&serial, "u"));
            assert!(u <= 1e-12, "{label}: u at the probes differs by {u:e}");
            let mut worst = vec![("u at the probes".to_string(), u)];
            for field in derived {
                let d = relative_difference(&probe_field(&r, field), &probe_field(&serial, field));
                worst.push((format!("{field} at the probes"), d));
            }
            for (list, key) in [
                ("regions", "measure"),
                ("regions", "integral"),
                ("boundaries", "measure"),
                ("boundaries", "normal_flux"),
                ("boundaries", "reaction"),
            ] {
                assert_eq!(
                    r[list].as_array().map(Vec::len),
                    serial[list].as_array().map(Vec::len),
                    "{label}: {list}"
                );
                let d = relative_difference(&numbers(&r[list], key), &numbers(&serial[list], key));
                worst.push((format!("{list} {key}"), d));
            }
            for (what, d) in &worst {
                assert!(*d <= 1e-10, "{label}: {what} differs by {d:e}");
            }
            let text: Vec<String> = worst
                .iter()
                .map(|(what, d)| format!("{what} {d:.1e}"))
                .collect();
            println!("{label}: {}", text.join(", "));
            check_pieces(&file, &serial_file, name, np, derived);
        }
    }
}

/// The `.pvtu` lists `np` pieces that exist; where meshio is at hand, the solution in them
/// equals the serial file's to 1e-12 of its largest value at every node, and the derived
/// fields to 1e-10.
fn check_pieces(file: &Path, serial_file: &Path, name: &str, np: usize, derived: &[&str]) {
    let out = file.parent().unwrap().join("out");
    let pvtu = out.join(format!("{name}.pvtu"));
    let text = std::fs::read_to_string(&pvtu).expect("the .pvtu");
    for r in 0..np {
        let piece = format!("{name}_p{r}.vtu");
        assert!(text.contains(&format!("Source=\"{piece}\"")), "{piece}");
        assert!(out.join(&piece).is_file(), "{piece} was not written");
    }
    if std::env::var("FERROFEM_CHECK_VTU").as_deref() != Ok("1") {
        eprintln!("pieces not compared: set FERROFEM_CHECK_VTU=1 (python3 with meshio)");
        return;
    }
    let serial = serial_file
        .parent()
        .unwrap()
        .join("out")
        .join(format!("{name}.vtu"));
    for (field, tol) in std::iter::once(("u", 1e-12)).chain(derived.iter().map(|f| (*f, 1e-10))) {
        check_pvtu(&pvtu, &serial, field, tol);
    }
}

/// What the ranks refuse, and an error found on the ranks, each end the job with its
/// message.
#[test]
fn what_the_ranks_cannot_solve_is_refused_with_its_reason() {
    let file = example_in("two_layers", "refused");
    let path = file.display().to_string();
    let refused = |args: &[&str], expected: &str| {
        let run = mpirun_with(2, args, &[]);
        assert!(!run.status.success(), "{args:?} ran");
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        stderr.contains("(rank ")
    };
    // quadrilaterals have no matrix-free GPU kernel; without a GPU, no GPU is usable
    assert!(refused(
        &["solve", &path, "--backend", "cuda"],
        if Path::new("/dev/nvidiactl").exists() {
            "matrix-free GPU solve covers"
        } else {
            "no GPU is usable"
        }
    ));
    assert!(refused(
        &["solve", &path, "--solver", "direct"],
        "use pcg, cg or gmres"
    ));
    assert!(refused(
        &["solve", &path, "--operator", "assembled"],
        "matrix-free"
    ));
    // refused before MPI starts, by every rank alike
    refused(&["solve", "--box", "quad:4x4"], "takes a problem file");
    // a condition on a group no rank's facets carry, and no Dirichlet condition at all:
    // each is the serial command's error, raised once every rank's part has been asked
    let text = std::fs::read_to_string(&file).expect("the problem");
    std::fs::write(&file, text.replace("region = \"cold\"", "region = 77")).expect("write");
    assert!(refused(&["solve", &path], "no physical group `77`"));
    let floating = text
        .replace("dirichlet = 100.0", "neumann = 1.0")
        .replace("dirichlet = 0.0", "neumann = -1.0");
    std::fs::write(&file, floating).expect("write");
    assert!(refused(&["solve", &path], "singular"));
}

/// A Poisson problem on a perturbed hexahedral box (the bake-off kernel on the GPU): a
/// constant κ ≠ 1, a source, two Dirichlet faces, a flux through a third, probes on a line.
const HEX_POISSON: &str = r#"
[mesh]
box = "hex:6x5x4,perturb=0.15,seed=4"
order = 3

[problem]
kind = "poisson"
source = "1 + x*y"

[[material]]
region = "all"
kappa = 2.5

[[boundary]]
region = "xmin"
dirichlet = 1.0
[[boundary]]
region = "xmax"
dirichlet = 0.0
[[boundary]]
region = "ymin"
neumann = 0.5

[[probe]]
name = "line"
line = { from = [0.05, 0.3, 0.4], to = [0.95, 0.6, 0.7], count = 9 }

[output]
vtu = "out/hex_poisson.vtu"
"#;

#[test]
fn the_ranks_solve_on_their_gpus_as_the_serial_cpu_solve() {
    let hex_poisson = |label: &str| {
        let dir = std::env::temp_dir().join(format!(
            "ferrofem-mpi-solve-hex-{label}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("hex_poisson.toml");
        std::fs::write(&path, HEX_POISSON).expect("write the problem");
        path
    };
    // `auto` solves on the CPU ranks, GPU or not, and says how to have the GPUs
    let auto = hex_poisson("auto").display().to_string();
    let auto = report(&mpirun_with(2, &["solve", "--json", &auto], &[]), "auto");
    assert_eq!(auto["backend"], "cpu", "auto");
    let note = auto["backend_note"].as_str().unwrap_or_default();
    assert!(note.contains("--backend cuda"), "auto: {note}");
    if !Path::new("/dev/nvidiactl").exists() {
        eprintln!("no NVIDIA GPU here: the GPU ranks are not run");
        return;
    }
    type Maker<'a> = &'a dyn Fn(&str) -> PathBuf;
    let plate = |label: &str| example_in("plate_hole", &format!("gpu-{label}"));
    let cases: [(&str, Maker, &str); 2] = [
        ("hex Poisson", &hex_poisson, "BP3"),
        ("plate with a hole", &plate, "residual kernel"),
    ];
    for (name, make, kernel) in cases {
        let serial_on = |backend: &str| {
            let out = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
                .args(["solve", "--json", "--backend", backend, "--rtol", "1e-10"])
                .arg(make(&format!("serial-{backend}")))
                .output()
                .expect("run ferrofem");
            report(&out, &format!("{name}: the serial solve ({backend})"))
        };
        let (serial, serial_gpu) = (serial_on("cpu"), serial_on("cuda"));
        for (np, backend, transport) in [
            (2, "cuda", None),
            (2, "cuda", Some("host")),
            (3, "cuda", None),
        ] {
            let label = format!("{name} on {np} ranks ({backend}, {transport:?})");
            let file = make(&format!(
                "np{np}-{backend}-{}",
                transport.unwrap_or("default")
            ));
            let path = file.display().to_string();
            let vars: Vec<(&str, &str)> = transport
                .map(|t| ("FERROFEM_GPU_EXCHANGE", t))
                .into_iter()
                .collect();
            let args = [
                "solve",
                "--json",
                "--backend",
                backend,
                "--rtol",
                "1e-10",
                &path,
            ];
            let r = report(&mpirun_with(np, &args, &vars), &label);
            assert_eq!(r["backend"], "cuda", "{label}: {}", r["backend_note"]);
            let method = r["method"].as_str().unwrap_or_default();
            assert!(method.contains(kernel), "{label}: {method}");
            if transport == Some("host") {
                assert!(method.contains("host memory"), "{label}: {method}");
            }
            for key in ["cells", "vertices", "dofs", "free_dofs", "natural_facets"] {
                assert_eq!(r[key], serial[key], "{label}: {key}");
            }
            let relative = r["residual"]["relative"].as_f64().unwrap();
            assert!(relative <= 1e-10, "{label}: relative residual {relative}");
            let its = (
                r["iterations"].as_f64().unwrap(),
                serial_gpu["iterations"].as_f64().unwrap(),
                serial["iterations"].as_f64().unwrap(),
            );
            let u = relative_difference(&probe_field(&r, "u"), &probe_field(&serial, "u"));
            println!(
                "{label}: {} iterations (serial GPU {}, CPU {}), u at the probes {u:.1e}; {method}",
                its.0, its.1, its.2
            );
            assert!(its.0 <= 1.6 * its.1 + 2.0, "{label}: iterations {its:?}");
            assert!(u <= 1e-8, "{label}: u at the probes differs by {u:e}");
        }
    }
}
