//! Elastic waves against a manufactured solution (forcing added): convergence in space
//! (h and p) and second order in time.

use ferrofem_base::CellType;
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, RunLength, Simulation, TimeSpec, WaveKind,
    WaveSetup,
};
use std::f64::consts::PI;
use std::sync::Arc;

const RHO: f64 = 1.0;
const VP: f64 = 2.0;
const VS: f64 = 1.0;
const OMEGA: f64 = 3.0;
const A: f64 = 0.5;
const T_END: f64 = 0.4;

/// `u(x, t) = S(t) U(x)`, `S = sin²(ωt)` (at rest at t = 0), `U = (sin πx sin πy,
/// a sin 2πx sin πy)`: zero on the boundary of the unit square.
fn exact(x: &[f64], t: f64) -> [f64; 2] {
    let s = (OMEGA * t).sin().powi(2);
    let (sx, sy) = ((PI * x[0]).sin(), (PI * x[1]).sin());
    [s * sx * sy, s * A * (2.0 * PI * x[0]).sin() * sy]
}

/// `f = ρ u_tt − ∇·σ(u)` with `∇·σ = (λ + μ) ∇(∇·u) + μ Δu`.
fn forcing(x: &[f64; 3], t: f64, out: &mut [f64]) {
    let mu = RHO * VS * VS;
    let lambda = RHO * VP * VP - 2.0 * mu;
    let s = (OMEGA * t).sin().powi(2);
    let s2 = 2.0 * OMEGA * OMEGA * (2.0 * OMEGA * t).cos();
    let (sx, cx, sy, cy) = (
        (PI * x[0]).sin(),
        (PI * x[0]).cos(),
        (PI * x[1]).sin(),
        (PI * x[1]).cos(),
    );
    let (s2x, c2x) = ((2.0 * PI * x[0]).sin(), (2.0 * PI * x[0]).cos());
    let p2 = PI * PI;
    let u = [sx * sy, A * s2x * sy];
    let div_grad = [
        -p2 * sx * sy + 2.0 * p2 * A * c2x * cy,
        p2 * cx * cy - p2 * A * s2x * sy,
    ];
    let lap = [-2.0 * p2 * sx * sy, -5.0 * p2 * A * s2x * sy];
    for c in 0..2 {
        out[c] = RHO * s2 * u[c] - s * ((lambda + mu) * div_grad[c] + mu * lap[c]);
    }
}

/// Relative max-norm nodal error at `T_END` on an `n × n` grid at order `p` with step `dt`.
fn error(n: usize, p: usize, dt: f64) -> f64 {
    let mut spec = BoxSpec::unit(CellType::Quadrilateral, &[n, n]);
    spec.perturb = 0.0;
    spec.seed = 5;
    let mesh = generate_box(&spec).unwrap();
    let mut setup = WaveSetup::new(
        WaveKind::Elastic,
        p,
        Medium::Uniform(Material {
            rho: RHO,
            vp: VP,
            vs: VS,
        }),
        1,
    );
    setup.boundaries = vec![BoundarySpec::new("all", BoundaryCondition::Rigid)];
    let steps = (T_END / dt).round() as usize;
    setup.time = TimeSpec {
        dt: Some(dt),
        length: RunLength::Steps(steps),
    };
    setup.body_force = Some(Arc::new(forcing));
    let mut sim = Simulation::<f64>::new(&mesh, &setup).unwrap();
    let s = sim.space().clone();
    let at = |t: f64| -> Vec<f64> {
        (0..s.num_nodes())
            .flat_map(|i| exact(s.node_coord(i), t))
            .collect()
    };
    sim.set_state(&at(-dt), &at(0.0)).unwrap();
    sim.run(|_| {}).unwrap();
    let want = at(steps as f64 * dt);
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    sim.field()
        .iter()
        .zip(&want)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

#[test]
fn elastic_manufactured_solution_converges_in_space() {
    let dt = 5e-5;
    println!("| order | elements per side | relative nodal error | rate |");
    for p in [2, 3, 4] {
        let mut last: Option<f64> = None;
        for n in [4, 8, 16] {
            let e = error(n, p, dt);
            let rate = last.map(|l| (l / e).log2());
            println!(
                "| {p} | {n} | {e:.2e} | {} |",
                rate.map_or("".into(), |r| format!("{r:.2}"))
            );
            if let Some(r) = rate {
                // nodal errors of the spectral-element method converge at about p + 1
                assert!(r > p as f64 + 0.5, "p={p} n={n}: rate {r:.2}");
            }
            last = Some(e);
        }
    }
    let mut last = f64::INFINITY;
    for p in 2..=7 {
        let e = error(3, p, dt);
        println!("| {p} | 3 | {e:.2e} | |");
        assert!(e < 0.5 * last, "p-refinement p={p}: {e:e} after {last:e}");
        last = e;
    }
}

#[test]
fn elastic_manufactured_solution_is_second_order_in_time() {
    let mut last: Option<f64> = None;
    for dt in [2e-3, 1e-3, 5e-4] {
        let e = error(4, 8, dt);
        if let Some(l) = last {
            let rate = (l / e).log2();
            println!("dt {dt:e}: error {e:.3e}, rate {rate:.3}");
            assert!((rate - 2.0).abs() < 0.1, "dt {dt}: rate {rate}");
        }
        last = Some(e);
    }
}

/// Lamb's problem in 2-D: a vertical point force on the free surface of a half-space. The
/// Rayleigh wave along the surface travels at `c_R` (0.9194 vs for vp/vs = √3); its speed is
/// measured from the delay between two surface receivers (cross-correlation of the
/// vertical traces around the Rayleigh arrival).
#[test]
fn rayleigh_wave_speed_on_a_free_surface() {
    use ferrofem_wave::analytic::rayleigh_wave_speed;
    use ferrofem_wave::{Receiver, Source, SourceKind, Wavelet};
    let (vp, vs, f0) = (3.0f64.sqrt() * 1000.0, 1000.0, 50.0);
    let ls = vs / f0; // 20 m
    let (length, depth) = (40.0 * ls, 8.0 * ls);
    let mut spec = BoxSpec::unit(CellType::Quadrilateral, &[150, 30]);
    spec.min = vec![0.0, -depth];
    spec.max = vec![length, 0.0];
    let mesh = generate_box(&spec).unwrap();
    let xs = 4.0 * ls;
    let (d1, d2) = (14.0 * ls, 30.0 * ls);
    let mut setup = WaveSetup::new(
        WaveKind::Elastic,
        4,
        Medium::Uniform(Material {
            rho: 2000.0,
            vp,
            vs,
        }),
        1,
    );
    setup.boundaries = ["xmin", "xmax", "ymin"]
        .iter()
        .map(|b| BoundarySpec::new(*b, BoundaryCondition::Absorbing))
        .collect();
    let wavelet = Wavelet::ricker(f0, None).unwrap();
    setup.sources = vec![Source {
        name: "lamb".into(),
        position: [xs, 0.0, 0.0],
        kind: SourceKind::Force([0.0, -1e6, 0.0]),
        wavelet,
    }];
    setup.receivers = vec![
        Receiver::new("near", [xs + d1, 0.0, 0.0]),
        Receiver::new("far", [xs + d2, 0.0, 0.0]),
    ];
    let c_r = rayleigh_wave_speed(vp, vs).unwrap();
    setup.time.length = RunLength::Duration((d2 / c_r) + 3.0 / f0);
    let mut sim = Simulation::<f64>::new(&mesh, &setup).unwrap();
    sim.run(|_| {}).unwrap();
    let dt = sim.dt();
    // windows of ±1.5 periods around the predicted Rayleigh arrivals
    let delay = 1.2 / f0;
    let window = |r: usize, d: f64| -> (usize, Vec<f64>) {
        let t = d / c_r + delay;
        let (a, b) = (
            ((t - 1.5 / f0) / dt) as usize,
            ((t + 1.5 / f0) / dt) as usize,
        );
        (a, sim.trace(r, 1)[a..b].to_vec())
    };
    let (a1, w1) = window(0, d1);
    let (a2, w2) = window(1, d2);
    // cross-correlation over shifts of the far window against the near one
    let corr = |shift: isize| -> f64 {
        (0..w1.len())
            .filter_map(|i| {
                let j = i as isize + shift;
                (j >= 0 && (j as usize) < w2.len()).then(|| w1[i] * w2[j as usize])
            })
            .sum()
    };
    let shifts = -(w1.len() as isize) / 2..(w1.len() as isize) / 2;
    let best = shifts
        .clone()
        .max_by(|&x, &y| corr(x).total_cmp(&corr(y)))
        .unwrap();
    let (cm, c0, cp) = (corr(best - 1), corr(best), corr(best + 1));
    let frac = 0.5 * (cm - cp) / (cm - 2.0 * c0 + cp);
    let lag = (a2 as f64 - a1 as f64 + best as f64 + frac) * dt;
    let speed = (d2 - d1) / lag;
    let err = (speed - c_r).abs() / c_r;
    println!("Rayleigh speed {speed:.2} m/s, analytic {c_r:.2} m/s: {err:.2e}");
    assert!(err < 0.005, "{speed} vs {c_r}: {err:e}");
}
