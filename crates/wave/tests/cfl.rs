//! The stable step: the Courant table against the exact leapfrog bound `2/√λ_max(M⁻¹K)`,
//! on uniform grids (where the table must be tight) and on distorted ones and elastic media
//! (where the safety factor must cover the difference).

use ferrofem_base::CellType;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_wave::cfl::{courant_number, max_eigenvalue, SAFETY};
use ferrofem_wave::{Material, Medium, RunLength, Simulation, TimeSpec, WaveKind, WaveSetup};

fn setup(kind: WaveKind, order: usize, material: Material) -> WaveSetup {
    WaveSetup {
        kind,
        order,
        medium: Medium::Uniform(material),
        boundaries: vec![],
        sources: vec![],
        receivers: vec![],
        time: TimeSpec {
            dt: None,
            length: RunLength::Steps(1),
        },
        check_every: 0,
        body_force: None,
    }
}

/// The exact stable step of a simulation's operators.
fn exact_step(sim: &Simulation<f64>) -> f64 {
    // (the lumped mass is per node: each component of a node has it)
    let nc = sim.components();
    let minv: Vec<f64> = sim
        .lumped_mass()
        .iter()
        .flat_map(|m| std::iter::repeat_n(1.0 / m, nc))
        .collect();
    let k = sim.stiffness();
    let lambda = max_eigenvalue(&mut |x, y| k.try_apply(x, y).unwrap(), &minv, 1000);
    2.0 / lambda.sqrt()
}

fn grid(ct: CellType, n: usize, perturb: f64) -> Mesh {
    let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
    spec.perturb = perturb;
    spec.seed = 11;
    generate_box(&spec).unwrap()
}

#[test]
fn courant_table_is_tight_on_uniform_grids() {
    let water = Material::fluid(1.0, 1.0);
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        let orders: Vec<usize> = if d == 2 {
            (1..=10).collect()
        } else {
            (1..=6).collect()
        };
        for p in orders {
            let mesh = grid(ct, if d == 2 { 6 } else { 3 }, 0.0);
            let sim = Simulation::<f64>::new(&mesh, &setup(WaveKind::Acoustic, p, water)).unwrap();
            let exact = exact_step(&sim);
            let table = sim.stable_step().bound / SAFETY;
            let ratio = table / exact;
            println!(
                "{ct} p={p}: exact Courant {:.4}, table {:.4}",
                exact / sim.stable_step().h_min,
                courant_number(d, p) / SAFETY
            );
            // at order 1 the table is the exact bound: equal up to the eigenvalue's rounding
            assert!(
                (0.97..=1.0 + 1e-12).contains(&ratio),
                "{ct} p={p}: table/exact = {ratio}"
            );
        }
    }
}

#[test]
fn stable_step_holds_on_distorted_grids_and_elastic_media() {
    let rock = Material {
        rho: 2500.0,
        vp: 3000.0,
        vs: 1700.0,
    };
    let water = Material::fluid(1000.0, 1500.0);
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        for p in [1, 2, 4, 6] {
            let mesh = grid(ct, if d == 2 { 6 } else { 3 }, 0.3);
            for (kind, m) in [(WaveKind::Acoustic, water), (WaveKind::Elastic, rock)] {
                let sim = Simulation::<f64>::new(&mesh, &setup(kind, p, m)).unwrap();
                let exact = exact_step(&sim);
                let bound = sim.stable_step().bound;
                assert!(
                    bound < exact,
                    "{ct} p={p} {kind:?}: bound {bound:e} >= exact {exact:e}"
                );
            }
        }
    }
}
