//! `mpirun -np N ferrofem wave FILE.toml` (N = 2, 3, 4, `--oversubscribe`) against the
//! serial `ferrofem wave FILE.toml` of the same file: the wave example (two solids on an
//! unstructured Gmsh mesh, a free surface, absorbing sides, a point force and 31 receivers
//! on the surface), in f64. The seismograms must agree to 1e-12 of their largest value,
//! the report the whole mesh's sizes, time step and energy; an error on the ranks ends the
//! job with its message. Needs the system's MPI (feature `mpi`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

/// A fresh temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrofem-mpi-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// The wave example, shortened, in f64, with its seismograms (CSV) under `out` and no
/// snapshots or plots; written to `out/problem.toml`.
fn problem_in(out: &Path) -> PathBuf {
    let mesh = examples().join("meshes/wave_layers.msh");
    let text = std::fs::read_to_string(examples().join("wave_layers.toml"))
        .expect("the example")
        .replace("meshes/wave_layers.msh", &mesh.display().to_string())
        .replace("duration = 12e-6", "duration = 3e-6")
        .replace("precision = \"f32\"", "precision = \"f64\"")
        .replace("out/wave_layers", &out.display().to_string())
        .replace(
            "formats = [\"csv\", \"su\", \"segy\"]",
            "formats = [\"csv\"]",
        )
        .replace("snapshots = ", "# snapshots = ")
        .replace("every = 100", "")
        .replace("plots = true", "plots = false");
    let path = out.join("problem.toml");
    std::fs::write(&path, text).expect("write the problem");
    path
}

fn mpirun(np: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-np", &np.to_string()])
        .arg(env!("CARGO_BIN_EXE_ferrofem"))
        .args(args)
        // Open MPI refuses root (CI containers) unless told, and is told to stay on the
        // loopback and shared memory.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .output()
        .expect("mpirun must be installed to run the MPI tests (openmpi-bin)")
}

fn report(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{what}: one JSON object from rank 0 alone"))
}

/// Every number of a seismogram CSV file, header skipped.
fn csv_values(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .flat_map(|l| l.split(','))
        .map(|v| v.trim().parse::<f64>().expect("a number"))
        .collect()
}

#[test]
fn the_wave_example_on_ranks_equals_the_serial_run() {
    let serial_out = temp_dir("serial");
    let serial = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(["wave", "--json"])
        .arg(problem_in(&serial_out))
        .output()
        .expect("run ferrofem");
    let serial = report(&serial, "the serial run");
    assert_eq!(serial["ranks"], 1);
    for np in 2..=4 {
        let out = temp_dir(&format!("np{np}"));
        let problem = problem_in(&out);
        let run = mpirun(np, &["wave", "--json", &problem.display().to_string()]);
        let r = report(&run, &format!("mpirun -np {np}"));
        assert_eq!(r["ranks"], np);
        assert_eq!(r["backend"], "cpu");
        for key in ["elements", "dofs", "steps", "receivers", "dt", "stable_dt"] {
            assert_eq!(r[key], serial[key], "{key} on {np} ranks");
        }
        let (e, e_serial) = (
            r["energy"].as_f64().unwrap(),
            serial["energy"].as_f64().unwrap(),
        );
        assert!(
            (e - e_serial).abs() <= 1e-12 * e_serial,
            "energy {e} vs {e_serial}"
        );
        for component in ["ux", "uy"] {
            let name = format!("seis_{component}.csv");
            let (a, b) = (
                csv_values(&out.join(&name)),
                csv_values(&serial_out.join(&name)),
            );
            assert_eq!(a.len(), b.len());
            let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let diff = a
                .iter()
                .zip(&b)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            assert!(
                scale > 0.0 && diff <= 1e-12 * scale,
                "{name}: {diff:e} of {scale:e}"
            );
            println!(
                "{np} ranks: {name} differs by {:.1e} of its largest value",
                diff / scale
            );
        }
    }
}

#[test]
fn an_error_on_the_ranks_ends_the_job_with_its_message() {
    let out = temp_dir("refused");
    let problem = problem_in(&out);
    let text = std::fs::read_to_string(&problem)
        .expect("problem")
        .replace("# snapshots = ", "snapshots = ");
    std::fs::write(&problem, text).expect("write");
    let run = mpirun(2, &["wave", &problem.display().to_string()]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("writes no snapshots yet"), "{stderr}");
    let quick = mpirun(
        2,
        &["wave", "--box", "quad:4x4", "--f0", "10", "--steps", "2"],
    );
    assert!(!quick.status.success());
    assert!(String::from_utf8_lossy(&quick.stderr).contains("takes a problem file"));
}
