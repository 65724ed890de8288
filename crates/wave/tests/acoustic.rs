//! Acoustic point sources in a homogeneous medium against the analytic Green's function
//! convolved with the Ricker wavelet, in the window before the first boundary reflection;
//! discrete energy conservation; the time-axis convention.

use ferrofem_base::{CellType, Real};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_wave::analytic::{
    acoustic_point_source_2d, acoustic_point_source_3d, relative_l2_misfit,
};
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Simulation, Source,
    SourceKind, TimeSpec, WaveKind, WaveSetup, Wavelet,
};

fn boxed(ct: CellType, n: usize, size: f64) -> Mesh {
    let d = ct.dim();
    let mut spec = BoxSpec::unit(ct, &vec![n; d]);
    spec.max = vec![size; d];
    generate_box(&spec).unwrap()
}

struct Case {
    ct: CellType,
    n: usize,
    size: f64,
    order: usize,
    f0: f64,
    source: [f64; 3],
    receivers: Vec<[f64; 3]>,
}

/// Runs a case until the first reflection can reach a receiver; returns per receiver
/// the misfit of its trace against the analytic one, and the points per wavelength.
fn misfits<T: Real>(case: &Case) -> (Vec<f64>, f64) {
    let d = case.ct.dim();
    let mesh = boxed(case.ct, case.n, case.size);
    let c = 1500.0;
    let wavelet = Wavelet::ricker(case.f0, None).unwrap();
    // earliest reflection: the nearest mirror image of the source in a face
    let t_end = case
        .receivers
        .iter()
        .map(|x| {
            (0..d)
                .flat_map(|a| [0.0, case.size].map(|wall| (a, wall)))
                .map(|(a, wall)| {
                    let mut img = case.source;
                    img[a] = 2.0 * wall - img[a];
                    (0..d).map(|k| (x[k] - img[k]).powi(2)).sum::<f64>().sqrt() / c
                })
                .fold(f64::INFINITY, f64::min)
        })
        .fold(f64::INFINITY, f64::min);
    let setup = WaveSetup {
        kind: WaveKind::Acoustic,
        order: case.order,
        medium: Medium::Uniform(Material::fluid(1000.0, c)),
        boundaries: vec![BoundarySpec::new("all", BoundaryCondition::Free)],
        sources: vec![Source {
            name: "s".into(),
            position: case.source,
            kind: SourceKind::Monopole { amplitude: 1.0 },
            wavelet: wavelet.clone(),
        }],
        receivers: case
            .receivers
            .iter()
            .enumerate()
            .map(|(i, &x)| Receiver::new(format!("r{i}"), x))
            .collect(),
        time: TimeSpec {
            dt: None,
            length: RunLength::Duration(t_end),
        },
        check_every: 0,
        body_force: None,
    };
    let mut sim = Simulation::<T>::new(&mesh, &setup).unwrap();
    sim.run(|_| {}).unwrap();
    let dt = sim.dt();
    let h = case.size / case.n as f64;
    let ppw = c / wavelet.max_frequency().unwrap() / (h / case.order as f64);
    let out = case
        .receivers
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let r = (0..d)
                .map(|k| (x[k] - case.source[k]).powi(2))
                .sum::<f64>()
                .sqrt();
            let exact: Vec<f64> = (0..=sim.steps())
                .map(|k| {
                    let t = k as f64 * dt;
                    if d == 2 {
                        acoustic_point_source_2d(&wavelet, c, r, t)
                    } else {
                        acoustic_point_source_3d(&wavelet, c, r, t)
                    }
                })
                .collect();
            relative_l2_misfit(sim.trace(i, 0), &exact)
        })
        .collect();
    (out, ppw)
}

fn case_2d(n: usize, order: usize) -> Case {
    // a 0.3 m square, source off the nodes, receivers at 4 and 7 cm in two directions
    let s = [0.151, 0.1497, 0.0];
    Case {
        ct: CellType::Quadrilateral,
        n,
        size: 0.3,
        order,
        f0: 12e3,
        source: s,
        receivers: vec![
            [s[0] + 0.04, s[1] + 0.001, 0.0],
            [s[0] - 0.03, s[1] + 0.06, 0.0],
        ],
    }
}

#[test]
fn acoustic_2d_matches_the_analytic_solution() {
    // 9 elements of 33 mm at order 4: 5.4 GLL points per wavelength at the Ricker's
    // highest frequency (2.76 f0)
    let (m64, ppw) = misfits::<f64>(&case_2d(9, 4));
    assert!((5.0..6.0).contains(&ppw), "{ppw}");
    for (i, m) in m64.iter().enumerate() {
        assert!(*m < 0.01, "receiver {i}: misfit {m:e} (ppw {ppw:.2})");
    }
    let (m32, _) = misfits::<f32>(&case_2d(9, 4));
    for (a, b) in m32.iter().zip(&m64) {
        assert!((a - b).abs() < 1e-3, "f32 {a:e} vs f64 {b:e}");
    }
}

#[test]
fn acoustic_2d_converges_under_h_and_p_refinement() {
    let mut last = f64::INFINITY;
    println!("| order | elements per side | points per wavelength | misfit r0 | misfit r1 |");
    for n in [9, 14, 20, 30, 40, 60] {
        let (m, ppw) = misfits::<f64>(&case_2d(n, 4));
        println!("| 4 | {n} | {ppw:.2} | {:.2e} | {:.2e} |", m[0], m[1]);
        assert!(m[0] < last, "h-refinement: {} after {last}", m[0]);
        last = m[0];
    }
    let mut last = f64::INFINITY;
    for p in [2, 3, 4, 5, 6, 8] {
        let (m, ppw) = misfits::<f64>(&case_2d(9, p));
        println!("| {p} | 9 | {ppw:.2} | {:.2e} | {:.2e} |", m[0], m[1]);
        assert!(m[0] < last, "p-refinement: {} after {last}", m[0]);
        last = m[0];
    }
}

#[test]
fn acoustic_3d_matches_the_analytic_solution() {
    let s = [0.3005, 0.2996, 0.3002];
    let case = Case {
        ct: CellType::Hexahedron,
        n: 12,
        size: 0.6,
        order: 4,
        f0: 8.5e3,
        source: s,
        receivers: vec![
            [s[0] + 0.08, s[1], s[2] + 0.01],
            [s[0], s[1] - 0.05, s[2] - 0.07],
        ],
    };
    let (m, ppw) = misfits::<f64>(&case);
    assert!((5.0..6.0).contains(&ppw), "{ppw}");
    for (i, m) in m.iter().enumerate() {
        assert!(*m < 0.01, "receiver {i}: misfit {m:e} (ppw {ppw:.2})");
    }
}
