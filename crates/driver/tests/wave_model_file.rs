//! Velocity model files in wave problems: a material sampled from a regular-grid model
//! (SPECFEM's ASCII tomography file) gives the same seismograms as the same material
//! written as expressions when the model is linear (which bilinear interpolation
//! reproduces); a model given with rho/vp, a missing file, a model that does not cover the
//! mesh, a model of the wrong dimension and interpolated values that are not physical are
//! refused before the time loop, with their place.

use ferrofem_driver::{PipelineError, ProblemFile};
use ferrofem_wave::{Simulation, WaveError};
use std::path::{Path, PathBuf};

/// A fresh temporary folder.
fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ferrofem-model-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Writes a 2-D model file `dir/name`: the grid `origin + i·spacing`, `n` points per
/// axis, `[vp, vs, rho] = f(x, y)` at each point, x varying fastest.
fn write_model(
    dir: &Path,
    name: &str,
    origin: [f64; 2],
    spacing: [f64; 2],
    n: [usize; 2],
    f: impl Fn(f64, f64) -> [f64; 3],
) {
    let end = [
        origin[0] + (n[0] - 1) as f64 * spacing[0],
        origin[1] + (n[1] - 1) as f64 * spacing[1],
    ];
    let mut s = String::from("# test model: x z vp vs rho\n");
    s += &format!("{} {} {} {}\n", origin[0], origin[1], end[0], end[1]);
    s += &format!("{} {}\n{} {}\n", spacing[0], spacing[1], n[0], n[1]);
    s += "1000 5000 0 5000 500 3000\n";
    for j in 0..n[1] {
        for i in 0..n[0] {
            let x = origin[0] + i as f64 * spacing[0];
            let y = origin[1] + j as f64 * spacing[1];
            let [vp, vs, rho] = f(x, y);
            s += &format!("{x} {y} {vp} {vs} {rho}\n");
        }
    }
    std::fs::write(dir.join(name), s).unwrap();
}

/// A 2-D problem on the unit square, order 4, 300 steps, with `material` for all cells.
fn problem(kind: &str, material: &str) -> String {
    let source = if kind == "acoustic" {
        "amplitude = 1.0"
    } else {
        "force = [0.3, -1.0]"
    };
    format!(
        "[mesh]\nbox = \"quad:8x8,max=1:1\"\norder = 4\n\n\
         [problem]\nkind = \"{kind}\"\n\n\
         [[material]]\nregion = \"all\"\n{material}\n\n\
         [[boundary]]\nregion = \"xmax\"\nabsorbing = \"stacey\"\n\n\
         [[boundary]]\nregion = \"ymin\"\nabsorbing = \"stacey\"\n\n\
         [time]\nsteps = 300\n\n\
         [[source]]\nat = [0.4, 0.55]\nwavelet = {{ kind = \"ricker\", f0 = 5e3 }}\n{source}\n\n\
         [[receiver]]\nline = {{ from = [0.1, 0.2], to = [0.9, 0.8], count = 5 }}\n"
    )
}

/// The problem file `text` in `dir` (which locates its model file).
fn parse(dir: &Path, text: &str) -> ProblemFile {
    ProblemFile::parse(&dir.join("case.toml"), text.to_string()).expect("parses")
}

/// Runs `text` in f64: the time step and the seismograms.
fn seismograms(dir: &Path, text: &str) -> (f64, Vec<f64>) {
    let case = parse(dir, text).wave_case().expect("set up");
    let mut sim = Simulation::<f64>::new(&case.mesh.mesh, &case.setup).expect("simulation");
    sim.run(|_| {}).expect("runs");
    (sim.dt(), sim.seismograms().to_vec())
}

/// `a` equals `b` to `rel` of `b`'s largest value, and `b` is not zero.
fn assert_same(a: &[f64], b: &[f64], rel: f64) {
    assert_eq!(a.len(), b.len());
    let peak = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(peak > 0.0, "the seismograms are zero");
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    assert!(diff <= rel * peak, "differ by {diff:e} of a peak {peak:e}");
}

/// The located error of setting `text` up in `dir`, as `line:column: message`.
fn setup_error(dir: &Path, text: &str) -> String {
    match parse(dir, text).wave_case() {
        Ok(_) => panic!("set up without error:\n{text}"),
        Err(PipelineError::File(e)) => format!("{}:{}: {}", e.line, e.column, e.message),
        Err(e) => format!("unlocated: {e}"),
    }
}

/// The 1-based line of `text` that starts with `start`.
fn line_of(text: &str, start: &str) -> usize {
    text.lines().position(|l| l.starts_with(start)).unwrap() + 1
}

#[test]
fn an_acoustic_model_file_matches_its_expressions() {
    let dir = temp_dir("acoustic");
    // a grid that covers the mesh without sharing its lines; the vs column (above vp) is
    // not used by acoustic waves
    write_model(&dir, "vp.xyz", [-0.1, -0.2], [0.3, 0.35], [5, 5], |x, y| {
        [
            1500.0 + 400.0 * x + 200.0 * y,
            5000.0,
            1000.0 + 100.0 * x - 50.0 * y,
        ]
    });
    let (dt_model, model) = seismograms(&dir, &problem("acoustic", "model = \"vp.xyz\""));
    let (dt_expr, expr) = seismograms(
        &dir,
        &problem(
            "acoustic",
            "vp = \"1500 + 400*x + 200*y\"\nrho = \"1000 + 100*x - 50*y\"",
        ),
    );
    assert!((dt_model - dt_expr).abs() <= 1e-14 * dt_expr);
    assert_same(&model, &expr, 1e-12);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_elastic_model_file_matches_its_expressions() {
    let dir = temp_dir("elastic");
    write_model(
        &dir,
        "rock.xyz",
        [0.0, -0.05],
        [0.25, 0.3],
        [5, 5],
        |x, y| {
            [
                3000.0 + 400.0 * x + 200.0 * y,
                1700.0 + 100.0 * x - 150.0 * y,
                2500.0 - 200.0 * x + 100.0 * y,
            ]
        },
    );
    let (dt_model, model) = seismograms(&dir, &problem("elastic", "model = \"rock.xyz\""));
    let (dt_expr, expr) = seismograms(
        &dir,
        &problem(
            "elastic",
            "vp = \"3000 + 400*x + 200*y\"\nvs = \"1700 + 100*x - 150*y\"\n\
             rho = \"2500 - 200*x + 100*y\"",
        ),
    );
    assert!((dt_model - dt_expr).abs() <= 1e-14 * dt_expr);
    assert_same(&model, &expr, 1e-12);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_models_are_refused_with_their_place() {
    let dir = temp_dir("bad");
    let good = |x: f64, y: f64| [1500.0 + 100.0 * x, 800.0 + 50.0 * y, 1000.0];
    write_model(&dir, "vp.xyz", [0.0, 0.0], [0.5, 0.5], [3, 3], good);
    // covers x ∈ [0, 0.75] only
    write_model(&dir, "small.xyz", [0.0, 0.0], [0.25, 0.5], [4, 3], good);
    let mut cube = String::from("0 0 0 1 1 1\n1 1 1\n2 2 2\n1 2 1 2 1 2\n");
    for r in 0..8 {
        cube += &format!("{} {} {} 1500 800 1000\n", r % 2, (r / 2) % 2, r / 4);
    }
    std::fs::write(dir.join("cube.xyz"), cube).unwrap();
    // a data line out of order: file line 11 is grid point (1, 0.5) but says (0, 1)
    let text = std::fs::read_to_string(dir.join("vp.xyz")).unwrap();
    let swapped = text.replacen("1 0.5 1600", "0 1 1600", 1);
    assert_ne!(text, swapped);
    std::fs::write(dir.join("swapped.xyz"), swapped).unwrap();

    // rho, vp or vs given too: at the key's line
    let both = problem("acoustic", "model = \"vp.xyz\"\nvp = 1500");
    let got = setup_error(&dir, &both);
    assert!(
        got.starts_with(&format!("{}:", line_of(&both, "vp = 1500")))
            && got.contains("`vp` cannot be given with `model`"),
        "{got}"
    );
    // a missing file: named, at the model key
    let missing = problem("acoustic", "model = \"nowhere.xyz\"");
    let got = setup_error(&dir, &missing);
    assert!(
        got.starts_with(&format!("{}:", line_of(&missing, "model =")))
            && got.contains("nowhere.xyz")
            && got.contains("cannot read the velocity model"),
        "{got}"
    );
    // a model that does not cover the mesh: the point and the grid's extent
    let outside = problem("acoustic", "model = \"small.xyz\"");
    let got = setup_error(&dir, &outside);
    assert!(
        got.starts_with(&format!("{}:", line_of(&outside, "model =")))
            && got.contains("is outside the velocity model")
            && got.contains("small.xyz")
            && got.contains("x ∈ [0, 0.75]")
            && got.contains("a vertex of element"),
        "{got}"
    );
    // a 3-D model for a 2-D mesh
    let got = setup_error(&dir, &problem("elastic", "model = \"cube.xyz\""));
    assert!(
        got.contains("cube.xyz is a 3-D velocity model; the mesh is 2-D"),
        "{got}"
    );
    // an error inside the model file: its own line, at the model key
    let got = setup_error(&dir, &problem("acoustic", "model = \"swapped.xyz\""));
    assert!(
        got.contains("swapped.xyz:11: data line 6 is for the grid point (1, 0.5) but gives (0, 1)"),
        "{got}"
    );
    // a solve file refuses the key
    let solve = "[mesh]\nbox = \"quad:4x4\"\norder = 1\n[problem]\nkind = \"poisson\"\n\
                 [[material]]\nregion = \"all\"\nkappa = 1\nmodel = \"vp.xyz\"\n\
                 [[boundary]]\nregion = \"xmin\"\ndirichlet = 0\n";
    let err = parse(&dir, solve).definition().unwrap_err().to_string();
    assert!(
        err.contains(":9:") && err.contains("model (a velocity model file) is for wave problems"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interpolated_values_are_checked_at_every_point() {
    let dir = temp_dir("unphysical");
    // vs crosses vp inside the mesh, between x = 0.5 and x = 1
    write_model(&dir, "soft.xyz", [0.0, 0.0], [0.5, 1.0], [3, 2], |x, _| {
        [2000.0, 1000.0 + 2000.0 * x, 2000.0]
    });
    let case = parse(&dir, &problem("elastic", "model = \"soft.xyz\""))
        .wave_case()
        .expect("set up");
    match Simulation::<f64>::new(&case.mesh.mesh, &case.setup) {
        Err(e @ WaveError::Material { .. }) => {
            let WaveError::Material { elem, x, .. } = &e else {
                unreachable!()
            };
            let msg = e.to_string();
            assert!(x[0] >= 0.5 - 1e-12, "{msg}");
            assert!(
                msg.contains("must be below vp = 2000") && msg.contains(&format!("element {elem}")),
                "{msg}"
            );
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("accepted vs >= vp"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
