//! The leapfrog's discrete energy: conserved to rounding without sources and with free or
//! rigid boundaries over 10⁴ steps, decaying with absorbing boundaries; a step above the
//! stable bound is refused, and an unstable run is stopped with its step and place.

use ferrofem_base::CellType;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, RunLength, Simulation, TimeSpec, WaveError,
    WaveKind, WaveSetup,
};

fn mesh(ct: CellType, n: usize) -> Mesh {
    let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
    spec.perturb = 0.2;
    spec.seed = 3;
    generate_box(&spec).unwrap()
}

fn material(kind: WaveKind) -> Material {
    match kind {
        WaveKind::Acoustic => Material::fluid(1000.0, 1500.0),
        WaveKind::Elastic => Material {
            rho: 2700.0,
            vp: 6000.0,
            vs: 3100.0,
        },
    }
}

/// A Gaussian bump at rest, in every component.
fn bump(sim: &Simulation<f64>) -> Vec<f64> {
    let s = sim.space();
    let (d, nc) = (s.dim(), s.ncomp());
    (0..s.num_dofs())
        .map(|i| {
            let x = s.node_coord(i / nc);
            let r2: f64 = (0..d).map(|k| (x[k] - 0.45).powi(2)).sum();
            (1.0 + 0.3 * (i % nc) as f64) * (-r2 / 0.01).exp()
        })
        .collect()
}

/// Energies at every check of a run of `steps` from the bump at rest.
fn energies(ct: CellType, kind: WaveKind, bc: BoundaryCondition, steps: usize) -> Vec<f64> {
    let m = mesh(ct, if ct.dim() == 2 { 8 } else { 3 });
    let mut setup = WaveSetup::new(kind, 4, Medium::Uniform(material(kind)), steps);
    setup.boundaries = vec![BoundarySpec::new("all", bc)];
    setup.check_every = steps / 50;
    let mut sim = Simulation::<f64>::new(&m, &setup).unwrap();
    let u0 = bump(&sim);
    sim.set_state(&u0, &u0).unwrap();
    let mut out = Vec::new();
    sim.run(|p| out.push(p.energy)).unwrap();
    out
}

#[test]
fn energy_is_conserved_with_free_and_rigid_boundaries() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let steps = if ct.dim() == 2 { 10_000 } else { 2_000 };
        for kind in [WaveKind::Acoustic, WaveKind::Elastic] {
            for bc in [BoundaryCondition::Free, BoundaryCondition::Rigid] {
                let e = energies(ct, kind, bc, steps);
                let e0 = e[0];
                let drift = e.iter().map(|v| (v - e0).abs()).fold(0.0, f64::max) / e0;
                assert!(
                    e0 > 0.0 && drift < 1e-11,
                    "{ct} {kind:?} {bc:?}: drift {drift:e}"
                );
            }
        }
    }
}

#[test]
fn energy_decays_with_absorbing_boundaries() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        for kind in [WaveKind::Acoustic, WaveKind::Elastic] {
            let e = energies(ct, kind, BoundaryCondition::Absorbing, 2_000);
            for w in e.windows(2) {
                assert!(
                    w[1] <= w[0] * (1.0 + 1e-12),
                    "{ct} {kind:?}: {} after {}",
                    w[1],
                    w[0]
                );
            }
            let left = e[e.len() - 1] / e[0];
            assert!(left < 0.05, "{ct} {kind:?}: {left} of the energy left");
        }
    }
}

#[test]
fn a_step_above_the_bound_is_refused_and_a_blow_up_is_stopped() {
    let m = mesh(CellType::Quadrilateral, 6);
    let kind = WaveKind::Acoustic;
    let mut setup = WaveSetup::new(kind, 3, Medium::Uniform(material(kind)), 400);
    let sim = Simulation::<f64>::new(&m, &setup).unwrap();
    let bound = sim.stable_step().bound;
    setup.time = TimeSpec {
        dt: Some(1.01 * bound),
        length: RunLength::Steps(400),
    };
    match Simulation::<f64>::new(&m, &setup) {
        Err(WaveError::TimeStep { bound: b, .. }) => assert_eq!(b, bound),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a step above the bound was accepted"),
    }
    setup.time.dt = None;
    setup.check_every = 10;
    let mut sim = Simulation::<f64>::new(&m, &setup).unwrap();
    let u0 = bump(&sim);
    sim.set_state(&u0, &u0).unwrap();
    sim.override_time_step(1.6 * bound).unwrap();
    match sim.run(|_| {}) {
        Err(WaveError::BlowUp { step, x, .. }) => {
            assert!(step < 400 && step % 10 == 0, "{step}");
            assert!(x[0] >= 0.0 && x[0] <= 1.0 && x[1] >= 0.0 && x[1] <= 1.0);
        }
        other => panic!("{other:?}"),
    }
}
