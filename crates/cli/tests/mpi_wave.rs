//! `mpirun -np N ferrofem wave FILE.toml` (N = 2, 3, 4, `--oversubscribe`) against the
//! serial `ferrofem wave FILE.toml` of the same file: the wave example (two solids on an
//! unstructured Gmsh mesh, a free surface, absorbing sides, a point force and 31 receivers
//! on the surface), in f64. The seismograms must agree to 1e-12 of their largest value,
//! the report the whole mesh's sizes, time step and energy; the snapshots are `.pvtu`
//! files over one piece per rank, whose fields equal the serial snapshots' at every node
//! (checked by `scripts/check_pvtu.py` with meshio where `FERROFEM_CHECK_VTU=1`); an error
//! on the ranks ends the job with its message. Where an NVIDIA GPU is present, the same
//! with the ranks stepping on GPUs. Needs the system's MPI (feature `mpi`).

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

/// The wave example, shortened, in f64, with its seismograms (CSV) and snapshots (every
/// 200 steps) under `out` and no plots; written to `out/problem.toml`.
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
        .replace("every = 100", "every = 200")
        .replace("plots = true", "plots = false");
    let path = out.join("problem.toml");
    std::fs::write(&path, text).expect("write the problem");
    path
}

fn mpirun(np: usize, args: &[&str]) -> Output {
    mpirun_with(np, args, &[])
}

/// `mpirun` with the environment variables `vars` passed to every rank.
pub(crate) fn mpirun_with(np: usize, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("mpirun");
    cmd.args(["--oversubscribe", "-np", &np.to_string()]);
    for (k, v) in vars {
        cmd.env(k, v).args(["-x", k]);
    }
    cmd.arg(env!("CARGO_BIN_EXE_ferrofem"))
        .args(args)
        // Open MPI refuses root (CI containers) unless told, and is told to stay on the
        // loopback and shared memory.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl", "self,vader")
        .output()
        .expect("mpirun must be installed to run the MPI tests (openmpi-bin)")
}

pub(crate) fn report(out: &Output, what: &str) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{what} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("{what}: one JSON object from rank 0 alone"))
}

/// The samples of a seismogram CSV file: every number but the header and the time column.
fn csv_values(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .skip(1)
        .flat_map(|l| l.split(',').skip(1))
        .map(|v| v.trim().parse::<f64>().expect("a number"))
        .collect()
}

#[test]
fn the_wave_example_on_ranks_equals_the_serial_run() {
    on_ranks_against_serial(&[(2, None), (3, None), (4, None)], "cpu", 1e-12);
}

/// The ranks step on GPUs (a machine's ranks share its GPUs when there are fewer), against
/// the serial run on the CPU: equal to the GPU's rounding (1e-10 of the largest value, as
/// the one-GPU run). Two ranks with the default transport (NCCL where each has its own GPU)
/// and with the host's; three ranks (two of them share a GPU on a two-GPU machine, so the
/// host's there). Skipped where no NVIDIA GPU is present.
#[test]
fn the_wave_example_on_gpu_ranks_equals_the_serial_run() {
    if !Path::new("/dev/nvidiactl").exists() {
        eprintln!("no NVIDIA GPU here: the GPU ranks are not run");
        return;
    }
    on_ranks_against_serial(&[(2, None), (2, Some("host")), (3, None)], "cuda", 1e-10);
}

/// `mpirun -np N ferrofem wave --backend BACKEND` for each `(N, transport)` of `cases`
/// (the GPU ranks' exchange, `FERROFEM_GPU_EXCHANGE`, where given) against
/// `ferrofem wave --backend cpu`: the report's sizes and step, the energy, the seismograms
/// and the snapshots equal to `tol` of their largest value.
fn on_ranks_against_serial(cases: &[(usize, Option<&str>)], backend: &str, tol: f64) {
    let serial_out = temp_dir(&format!("serial-{backend}"));
    let serial = Command::new(env!("CARGO_BIN_EXE_ferrofem"))
        .args(["wave", "--json", "--backend", "cpu"])
        .arg(problem_in(&serial_out))
        .output()
        .expect("run ferrofem");
    let serial = report(&serial, "the serial run");
    assert_eq!(serial["ranks"], 1);
    for &(np, transport) in cases {
        let label = format!("np{np}-{backend}-{}", transport.unwrap_or("default"));
        let out = temp_dir(&label);
        let problem = problem_in(&out);
        let vars: Vec<(&str, &str)> = transport
            .map(|t| ("FERROFEM_GPU_EXCHANGE", t))
            .into_iter()
            .collect();
        let run = mpirun_with(
            np,
            &[
                "wave",
                "--json",
                "--backend",
                backend,
                &problem.display().to_string(),
            ],
            &vars,
        );
        let r = report(&run, &format!("mpirun -np {np} ({label})"));
        assert_eq!(r["ranks"], np);
        assert_eq!(r["backend"], backend);
        if backend == "cuda" {
            let note = r["backend_note"].as_str().unwrap_or_default();
            let expected = match transport {
                Some("host") => "host memory",
                _ => "",
            };
            assert!(
                note.contains("interface sums exchanged") && note.contains(expected),
                "{label}: the report names the transport: {note}"
            );
            println!("{label}: {note}");
        }
        let memory = r["peak_memory_per_rank"]
            .as_array()
            .expect("memory per rank");
        assert_eq!(memory.len(), np);
        assert!(memory.iter().all(|m| m.as_u64().is_some_and(|b| b > 0)));
        for key in ["elements", "dofs", "steps", "receivers", "dt", "stable_dt"] {
            assert_eq!(r[key], serial[key], "{key} on {np} ranks");
        }
        let (e, e_serial) = (
            r["energy"].as_f64().unwrap(),
            serial["energy"].as_f64().unwrap(),
        );
        assert!(
            (e - e_serial).abs() <= tol * e_serial,
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
                scale > 0.0 && diff <= tol * scale,
                "{name}: {diff:e} of {scale:e}"
            );
            println!(
                "{label}: {name} differs by {:.1e} of its largest value",
                diff / scale
            );
        }
        check_snapshots(&out, &serial_out, np, tol);
    }
}

/// The series lists one `.pvtu` per snapshot, each over `np` pieces that exist; where
/// meshio is at hand, the fields equal the serial run's.
fn check_snapshots(out: &Path, serial_out: &Path, np: usize, tol: f64) {
    let pvd = std::fs::read_to_string(out.join("field.pvd")).expect("the series");
    for step in [0, 200, 400, 460] {
        let pvtu = format!("field_{step:07}.pvtu");
        assert!(pvd.contains(&pvtu), "{pvtu} not in the series:\n{pvd}");
        let text = std::fs::read_to_string(out.join(&pvtu)).expect("the .pvtu");
        for r in 0..np {
            let piece = format!("field_{step:07}_p{r}.vtu");
            assert!(
                text.contains(&format!("Source=\"{piece}\"")),
                "{pvtu}: {piece}"
            );
            assert!(out.join(&piece).is_file(), "{piece} was not written");
        }
        assert!(!out.join(format!("field_{step:07}_p{np}.vtu")).exists());
    }
    if std::env::var("FERROFEM_CHECK_VTU").as_deref() != Ok("1") {
        eprintln!("snapshot fields not compared: set FERROFEM_CHECK_VTU=1 (python3 with meshio)");
        return;
    }
    for step in [200, 460] {
        check_pvtu(
            &out.join(format!("field_{step:07}.pvtu")),
            &serial_out.join(format!("field_{step:07}.vtu")),
            "u",
            tol,
        );
    }
}

/// `scripts/check_pvtu.py`: the point field `field` of the pieces of `pvtu` equals the
/// serial file's at every node to `tol` of its largest value (meshio reads both).
pub(crate) fn check_pvtu(pvtu: &Path, serial: &Path, field: &str, tol: f64) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/check_pvtu.py");
    let check = Command::new("python3")
        .arg(&script)
        .arg(pvtu)
        .arg(serial)
        .args([field, &format!("{tol:e}")])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    print!("{text}");
}

#[test]
fn an_error_on_the_ranks_ends_the_job_with_its_message() {
    let out = temp_dir("refused");
    let problem = problem_in(&out);
    // a time step beyond the whole mesh's stable one, found by every rank together
    let text = std::fs::read_to_string(&problem).expect("the problem");
    std::fs::write(&problem, text.replace("dt = \"auto\"", "dt = 1e-3")).expect("write");
    let run = mpirun(2, &["wave", &problem.display().to_string()]);
    assert!(!run.status.success());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("(rank "), "{stderr}");
    assert!(stderr.contains("stable"), "{stderr}");
    assert!(!out.join("seis_ux.csv").exists());
    let quick = mpirun(
        2,
        &["wave", "--box", "quad:4x4", "--f0", "10", "--steps", "2"],
    );
    assert!(!quick.status.success());
    assert!(String::from_utf8_lossy(&quick.stderr).contains("takes a problem file"));
}
