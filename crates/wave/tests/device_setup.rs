//! The set-up for a device ([`Simulation::for_device`]: the space's own node order) runs
//! the same problem as [`Simulation::new`]: the same seismograms to rounding, on affine
//! and distorted meshes, with media constant per cell and varying inside cells, with
//! absorbing boundaries.

use ferrofem_base::CellType;
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Simulation, Source,
    SourceKind, TimeSpec, WaveKind, WaveSetup, Wavelet,
};

fn setup(kind: WaveKind, dim: usize, medium: Medium) -> WaveSetup {
    let at = |x: f64| [x, x, if dim == 3 { x } else { 0.0 }];
    WaveSetup {
        kind,
        order: 3,
        medium,
        boundaries: vec![BoundarySpec::new("all", BoundaryCondition::Absorbing)],
        sources: vec![Source {
            name: "s".into(),
            position: at(0.45),
            kind: match kind {
                WaveKind::Acoustic => SourceKind::Monopole { amplitude: 1.0 },
                WaveKind::Elastic => SourceKind::Force([1.0, 0.5, 0.25]),
            },
            wavelet: Wavelet::ricker(30.0, None).unwrap(),
        }],
        receivers: vec![Receiver::new("a", at(0.7)), Receiver::new("b", at(0.2))],
        time: TimeSpec {
            dt: None,
            length: RunLength::Steps(300),
        },
        check_every: 0,
        body_force: None,
    }
}

#[test]
fn the_device_set_up_runs_the_same_problem() {
    let solid = Material {
        rho: 2000.0,
        vp: 200.0,
        vs: 110.0,
    };
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        for perturb in [0.0, 0.2] {
            let mut spec = BoxSpec::unit(ct, &vec![if d == 2 { 8 } else { 4 }; d]);
            spec.perturb = perturb;
            spec.seed = 5;
            let mesh = generate_box(&spec).unwrap();
            for kind in [WaveKind::Acoustic, WaveKind::Elastic] {
                let media = [
                    Medium::Uniform(solid),
                    Medium::function(move |x| Material {
                        vp: solid.vp * (1.0 + 0.2 * x[0]),
                        ..solid
                    }),
                ];
                for medium in media {
                    let s = setup(kind, d, medium);
                    let mut a = Simulation::<f64>::new(&mesh, &s).unwrap();
                    let mut b = Simulation::<f64>::for_device(&mesh, &s).unwrap();
                    assert_eq!(a.dt(), b.dt());
                    a.run(|_| {}).unwrap();
                    b.run(|_| {}).unwrap();
                    let (sa, sb) = (a.seismograms(), b.seismograms());
                    let peak = sa.iter().fold(0.0f64, |m, v| m.max(v.abs()));
                    assert!(peak > 0.0);
                    let diff = sa
                        .iter()
                        .zip(sb)
                        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
                    assert!(
                        diff <= 1e-10 * peak,
                        "{ct:?} perturb {perturb} {kind:?}: {diff:e} of {peak:e}"
                    );
                }
            }
        }
    }
}
