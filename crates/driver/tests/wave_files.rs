//! Wave problem files: the example (two solids on a Gmsh mesh, absorbing boundaries) runs
//! and writes its seismograms, snapshots and plots; bad input is refused before the time
//! loop, with its place in the file, and leaves no files behind.

use ferrofem_driver::wave::run_wave;
use ferrofem_driver::{PipelineError, ProblemFile};
use ferrofem_wave::WaveError;
use std::path::PathBuf;

use crate::common::examples;

fn example_text() -> String {
    std::fs::read_to_string(examples().join("wave_layers.toml")).expect("example")
}

/// A fresh temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrofem-wave-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The example with its outputs under `out` and a shorter run.
fn example_in(out: &std::path::Path) -> String {
    example_text()
        .replace("duration = 12e-6", "duration = 3e-6")
        .replace("out/wave_layers", &out.display().to_string())
        .replace("every = 100", "every = 200")
}

fn parse(text: &str) -> ProblemFile {
    ProblemFile::parse(&examples().join("wave_test.toml"), text.to_string()).expect("parses")
}

/// The located error of setting `text` up, as `line:column: message`.
fn setup_error(text: &str) -> String {
    match parse(text).wave_case() {
        Ok(_) => panic!("set up without error"),
        Err(PipelineError::File(e)) => format!("{}:{}: {}", e.line, e.column, e.message),
        Err(e) => format!("unlocated: {e}"),
    }
}

#[test]
fn the_example_runs_and_writes_its_outputs() {
    let out = temp_dir("example");
    let case = parse(&example_in(&out)).wave_case().expect("set up");
    let mut checks = 0;
    let report = run_wave(&case, &mut |_| checks += 1).expect("runs");
    assert_eq!((report.kind, report.dim, report.order), ("elastic", 2, 4));
    assert_eq!(report.receivers, 31);
    assert!(report.steps > 400 && checks > 10, "{} steps", report.steps);
    assert!(report.energy.is_finite() && report.energy > 0.0);
    for f in [
        "seis_ux.csv",
        "seis_uy.csv",
        "seis_ux.su",
        "seis_uy.segy",
        "seis_uy.png",
        "field.pvd",
        "field_0000000.vtu",
        "field_0000200.png",
    ] {
        assert!(out.join(f).is_file(), "{f} missing");
    }
    // the vertical trace under the transducer's neighbours moves, every value finite
    let csv = std::fs::read_to_string(out.join("seis_uy.csv")).unwrap();
    let rows: Vec<Vec<f64>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert_eq!(rows.len(), report.steps + 1);
    assert!(rows.iter().flatten().all(|v| v.is_finite()));
    let peak = rows.iter().map(|r| r[16].abs()).fold(0.0, f64::max);
    assert!(peak > 0.0);
    // sample k is at t = k dt
    assert!((rows[10][0] - 10.0 * report.dt).abs() < 1e-12 * report.dt * 10.0);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn an_unwritable_output_is_refused_before_the_run() {
    let out = temp_dir("blocked");
    let blocker = out.join("a-file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let text = example_in(&out).replace(
        &format!("{}/seis", out.display()),
        &format!("{}/seis", blocker.display()),
    );
    let case = parse(&text).wave_case().expect("set up");
    match run_wave(&case, &mut |_| panic!("the time loop started")) {
        Err(PipelineError::Output(m)) => assert!(m.contains("a-file"), "{m}"),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran"),
    }
    // nothing was written
    let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
    assert_eq!(left.len(), 1);
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_input_is_located_in_the_file() {
    let base = example_text();
    let cases: Vec<(String, &str)> = vec![
        (
            base.replace("region = \"sides\"", "region = \"walls\""),
            "no region `walls` of dimension 1",
        ),
        (
            base.replace("vs = 3230", "vs = 6000"),
            "vs = 6000 must be below vp = 5900",
        ),
        (
            base.replace("rho = 2700", "rho = -1"),
            "density rho = -1 must be positive",
        ),
        (
            base.replace("region = \"steel\"\nrho", "region = \"aluminium2\"\nrho"),
            "no region `aluminium2`",
        ),
        (
            base.replace("kind = \"ricker\"", "kind = \"sinc\""),
            "unknown wavelet `sinc`",
        ),
        (
            base.replace("force = [0.0, -1.0]", "amplitude = 1.0"),
            "elastic sources take `force` or `moment`",
        ),
        (
            base.replace("absorbing = \"stacey\"", "absorbing = \"pml\""),
            "unknown `pml`",
        ),
        (
            base.replace("duration = 12e-6", "duration = -1"),
            "must be positive",
        ),
        (
            base.replace("[time]", "[solver]\nrtol = 1e-8\n[time]")
                .replace("[solver]\nprecision = \"f32\"", ""),
            "[solver] rtol is for solves",
        ),
        (
            base.replace("free = true", "dirichlet = 0"),
            "`dirichlet` is for solves",
        ),
        (
            base.replace("at = [0.02, 0.0]", "at = [0.02]"),
            "expected 2 finite coordinates",
        ),
    ];
    for (text, want) in cases {
        let got = setup_error(&text);
        assert!(got.contains(want), "expected `{want}` in `{got}`");
        assert!(
            !got.starts_with("unlocated") && !got.starts_with("0:"),
            "{got}"
        );
    }
    // a region without a material: the mesh has two solids
    let one = base.replace(
        "[[material]]\nregion = \"steel\"\nrho = 7850\nvp = 5900\nvs = 3230\n",
        "",
    );
    let got = setup_error(&one);
    assert!(
        got.contains("`steel` (tag 11) have no [[material]]"),
        "{got}"
    );
}

#[test]
fn points_outside_and_steps_above_the_bound_are_refused() {
    let out = temp_dir("outside");
    let base = example_in(&out);
    let outside = parse(&base.replace("at = [0.02, 0.0]", "at = [0.02, 0.01]"))
        .wave_case()
        .expect("set up");
    match run_wave(&outside, &mut |_| panic!("ran")) {
        Err(PipelineError::Wave(WaveError::Outside { what, name, .. })) => {
            assert_eq!((what, name.as_str()), ("source", "transducer"))
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran"),
    }
    let fast = parse(&base.replace("dt = \"auto\"", "dt = 1e-7"))
        .wave_case()
        .expect("set up");
    match run_wave(&fast, &mut |_| panic!("ran")) {
        Err(PipelineError::Wave(WaveError::TimeStep { bound, .. })) => assert!(bound < 1e-7),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("ran"),
    }
    // a solve file is not a wave file and the reverse
    let err = parse(&base).definition().unwrap_err().to_string();
    assert!(
        err.contains("is a wave problem: run it with `ferrofem wave`"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// The elastic box example (the problem of the wave step's scaling runs) reads as written
/// and, shrunk to a 4³ box and 40 steps, runs on the CPU: a 3-D elastic order-4 problem
/// with its source and receiver found and a finite, positive energy.
#[test]
fn the_elastic_box_example_runs_on_a_small_box() {
    let text = std::fs::read_to_string(examples().join("elastic_box.toml")).expect("example");
    parse(&text).wave_case().expect("the example as written");
    let small = text
        .replace("hex:64x64x64", "hex:4x4x4")
        .replace("steps = 1000", "steps = 40");
    let mut case = parse(&small).wave_case().expect("the small box");
    case.backend = ferrofem_driver::BackendArg::Cpu;
    let report = run_wave(&case, &mut |_| {}).expect("runs");
    assert_eq!((report.kind, report.dim, report.order), ("elastic", 3, 4));
    assert_eq!(
        (report.steps, report.receivers, report.elements),
        (40, 1, 64)
    );
    assert!(report.energy.is_finite() && report.energy > 0.0);
}
