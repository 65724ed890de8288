//! The GPU wave time loop against its CPU twin ([`Simulation`]): after 1,000 steps the
//! seismograms agree to 1e-10 (f64) or 1e-4 (f32) relative to each trace's peak, and so do
//! the fields and energies at an intermediate step, in 2-D and 3-D,
//! acoustic and elastic, several orders, compact (affine elements, uniform media) and stored
//! quadrature data (perturbed elements, media varying in space), absorbing, free and rigid
//! boundaries. Needs a CUDA device: skipped (with a message) when none is usable, unless
//! FERROFEM_REQUIRE_GPU=1 (set by scripts/gpu-check.sh).

use ferrofem_base::{CellType, Real};
use ferrofem_cuda::wave::GpuWave;
use ferrofem_cuda::{GpuDevice, GpuReal};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_wave::analytic::peak_relative_difference;
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Simulation, Source,
    SourceKind, TimeSpec, WaveKind, WaveSetup, Wavelet,
};
use std::sync::Arc;

const STEPS: usize = 1000;

fn gpu() -> Option<Arc<GpuDevice>> {
    GpuDevice::for_tests()
}

/// One case: the mesh, physics, order, boundary conditions and whether the medium varies.
struct Case {
    dim: usize,
    n: Vec<usize>,
    perturb: f64,
    kind: WaveKind,
    order: usize,
    varying: bool,
    boundaries: Vec<(&'static str, BoundaryCondition)>,
}

impl Case {
    fn mesh(&self) -> Mesh {
        let ct = if self.dim == 2 {
            CellType::Quadrilateral
        } else {
            CellType::Hexahedron
        };
        let mut spec = BoxSpec::unit(ct, &self.n);
        spec.perturb = self.perturb;
        spec.seed = 3;
        generate_box(&spec).unwrap()
    }

    fn setup(&self) -> WaveSetup {
        let elastic = self.kind == WaveKind::Elastic;
        let base = Material {
            rho: 1.3,
            vp: 2.0,
            vs: if elastic { 1.1 } else { 0.0 },
        };
        let medium = if self.varying {
            Medium::Function(Arc::new(move |_, x: &[f64; 3]| {
                let s = 1.0 + 0.3 * x[0] - 0.2 * x[1] + 0.1 * x[2];
                Some(Material {
                    rho: base.rho * (1.0 + 0.5 * x[1]),
                    vp: base.vp * s,
                    vs: base.vs * s,
                })
            }))
        } else {
            Medium::Uniform(base)
        };
        let mut setup = WaveSetup::new(self.kind, self.order, medium, STEPS);
        setup.time = TimeSpec {
            dt: None,
            length: RunLength::Steps(STEPS),
        };
        setup.boundaries = self
            .boundaries
            .iter()
            .map(|(name, c)| BoundarySpec::new(*name, *c))
            .collect();
        let d = self.dim;
        let kind = if elastic {
            SourceKind::Force([0.3, -1.0, 0.5])
        } else {
            SourceKind::Monopole { amplitude: 1.0 }
        };
        let at = |x: f64, y: f64, z: f64| {
            let mut p = [x, y, 0.0];
            if d == 3 {
                p[2] = z;
            }
            p
        };
        setup.sources = vec![
            Source {
                name: "a".into(),
                position: at(0.37, 0.41, 0.44),
                kind,
                wavelet: Wavelet::ricker(4.0, None).unwrap(),
            },
            // on the boundary: an absorbing node's damped update takes part
            Source {
                name: "b".into(),
                position: at(0.0, 0.7, 0.3),
                kind,
                wavelet: Wavelet::ricker(5.0, Some(0.4)).unwrap(),
            },
        ];
        setup.receivers = vec![
            Receiver::new("r0", at(0.8, 0.25, 0.6)),
            Receiver::new("r1", at(0.15, 0.9, 0.2)),
            Receiver::new("r2", at(0.55, 0.55, 0.5)),
            Receiver::new("edge", at(1.0, 0.33, 0.71)),
        ];
        setup
    }

    fn label<T: Real>(&self) -> String {
        format!(
            "{} {}-D p={} {:?}{}{} {}",
            self.kind.name(),
            self.dim,
            self.order,
            self.n,
            if self.perturb > 0.0 { " perturbed" } else { "" },
            if self.varying { " varying medium" } else { "" },
            T::NAME
        )
    }
}

/// Largest difference over the largest value: of the fields and energies after `MID`
/// steps (the wave well inside the domain), of every trace after [`STEPS`] and of the final
/// energies over the energy at `MID` (most of it has left through the absorbing sides by
/// then). `None` when all are within `tol`, else what differs.
fn compare<T: GpuReal>(dev: &Arc<GpuDevice>, case: &Case, tol: f64) -> Option<String> {
    const MID: usize = 200;
    let label = case.label::<T>();
    let mesh = case.mesh();
    let setup = case.setup();
    let mut cpu = Simulation::<T>::new(&mesh, &setup).unwrap();
    let start = Simulation::<T>::new(&mesh, &setup).unwrap();
    let mut gpu = match GpuWave::new(dev, &start) {
        Ok(g) => g,
        Err(e) => return Some(format!("{label}: {e}")),
    };
    assert_eq!(
        gpu.compact(),
        case.perturb == 0.0 && !case.varying,
        "{label}"
    );
    drop(start);
    let every = gpu.check_every();
    assert_eq!(MID % every, 0, "{label}: checks every {every} steps");
    let mut field_diff = 0.0;
    let mut mid_energy = 0.0;
    let mut mid_energy_diff = 0.0;
    let mut mid_field = Vec::new();
    for stop in [MID, STEPS] {
        while cpu.step_count() < stop {
            let target = (cpu.step_count() / every + 1) * every;
            while cpu.step_count() < target {
                cpu.advance(cpu.step_count() + 1 == target).unwrap();
            }
            if let Err(e) = gpu.run_to(target, true) {
                return Some(format!("{label}: {e}"));
            }
        }
        if stop == MID {
            let uc: Vec<f64> = cpu.field().iter().map(|v| v.as_f64()).collect();
            let ug: Vec<f64> = gpu.field().unwrap().iter().map(|v| v.as_f64()).collect();
            let peak = uc.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            field_diff = uc
                .iter()
                .zip(&ug)
                .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
                / peak;
            mid_energy = cpu.energy().abs();
            mid_energy_diff = (gpu.energy() - cpu.energy()).abs() / mid_energy;
            // a snapshot copied beside the steps that follow
            gpu.request_snapshot().unwrap();
            mid_field = ug;
        }
    }
    let (step, time, snap) = gpu
        .take_snapshot()
        .unwrap()
        .expect("the snapshot requested");
    assert_eq!(step, MID, "{label}: the snapshot's step");
    assert!(
        (time - MID as f64 * gpu.dt()).abs() <= 1e-12 * time,
        "{label}"
    );
    let snap: Vec<f64> = snap.iter().map(|v| v.as_f64()).collect();
    assert!(
        snap == mid_field,
        "{label}: the snapshot differs from the field at its step"
    );
    assert!(
        gpu.take_snapshot().unwrap().is_none(),
        "{label}: taken twice"
    );
    let ns = STEPS + 1;
    let g = gpu.seismograms().unwrap().to_vec();
    let c = cpu.seismograms();
    let worst = trace_difference(c, &g, ns, &label);
    let end_energy_diff = (gpu.energy() - cpu.energy()).abs() / mid_energy;
    // the whole run in one call: the plain steps replayed from CUDA graphs, the samples
    // flushed between them
    let mut whole = GpuWave::new(dev, &Simulation::<T>::new(&mesh, &setup).unwrap()).unwrap();
    if let Err(e) = whole.run_to(STEPS, true) {
        return Some(format!("{label} (one call): {e}"));
    }
    let graphed = trace_difference(c, whole.seismograms().unwrap(), ns, &label);
    let graphed_energy_diff = (whole.energy() - cpu.energy()).abs() / mid_energy;
    let row = format!(
        "{label}: {} | seismograms {worst:.2e}, field {field_diff:.2e}, energy {mid_energy_diff:.2e} / {end_energy_diff:.2e}; in one call: seismograms {graphed:.2e}, energy {graphed_energy_diff:.2e}",
        gpu.describe()
    );
    println!("{row}");
    let ok = [
        worst,
        field_diff,
        mid_energy_diff,
        end_energy_diff,
        graphed,
        graphed_energy_diff,
    ]
    .iter()
    .all(|&d| d <= tol);
    (!ok).then_some(row)
}

/// The largest difference of two seismogram sets (`[trace][sample]`, `ns` samples) over
/// each trace's peak; every trace of `cpu` must move.
fn trace_difference(cpu: &[f64], gpu: &[f64], ns: usize, label: &str) -> f64 {
    assert_eq!(cpu.len(), gpu.len(), "{label}");
    let mut worst = 0.0f64;
    for (t, (ct, gt)) in cpu.chunks(ns).zip(gpu.chunks(ns)).enumerate() {
        assert!(
            ct.iter().any(|&v| v != 0.0),
            "{label}: trace {t} never moved"
        );
        worst = worst.max(peak_relative_difference(gt, ct));
    }
    worst
}

/// Every case in precision `T`; fails listing the cases beyond `tol`.
fn all_cases<T: GpuReal>(dev: &Arc<GpuDevice>, tol: f64) {
    let failed: Vec<String> = cases()
        .iter()
        .filter_map(|c| compare::<T>(dev, c, tol))
        .collect();
    assert!(failed.is_empty(), "beyond {tol:e}:\n{}", failed.join("\n"));
}

fn cases() -> Vec<Case> {
    use BoundaryCondition::{Absorbing, Free, Rigid};
    let absorbing_but_top = |dim: usize| {
        let mut b = vec![
            ("xmin", Absorbing),
            ("xmax", Absorbing),
            ("ymin", Absorbing),
            ("ymax", Free),
        ];
        if dim == 3 {
            b.push(("zmin", Absorbing));
            b.push(("zmax", Rigid));
        }
        b
    };
    let mut v = Vec::new();
    for (dim, kind, order, n, perturb, varying) in [
        (2, WaveKind::Acoustic, 4, vec![12, 10], 0.0, false),
        (2, WaveKind::Acoustic, 1, vec![40, 36], 0.0, false),
        (2, WaveKind::Acoustic, 2, vec![14, 12], 0.2, true),
        (2, WaveKind::Acoustic, 7, vec![6, 5], 0.15, false),
        (2, WaveKind::Elastic, 3, vec![10, 9], 0.2, false),
        (2, WaveKind::Elastic, 5, vec![8, 7], 0.0, false),
        (2, WaveKind::Elastic, 8, vec![5, 4], 0.0, true),
        (3, WaveKind::Acoustic, 3, vec![5, 4, 4], 0.0, false),
        (3, WaveKind::Acoustic, 2, vec![6, 5, 5], 0.2, true),
        (3, WaveKind::Acoustic, 6, vec![3, 3, 2], 0.1, false),
        (3, WaveKind::Elastic, 4, vec![4, 4, 3], 0.0, false),
        (3, WaveKind::Elastic, 1, vec![9, 8, 8], 0.2, false),
        (3, WaveKind::Elastic, 2, vec![5, 5, 4], 0.1, true),
        (3, WaveKind::Elastic, 8, vec![2, 2, 2], 0.0, false),
    ] {
        v.push(Case {
            dim,
            n,
            perturb,
            kind,
            order,
            varying,
            boundaries: absorbing_but_top(dim),
        });
    }
    v
}

#[test]
fn gpu_time_loop_equals_the_cpu_in_f64() {
    let Some(dev) = gpu() else { return };
    all_cases::<f64>(&dev, 1e-10);
}

#[test]
fn gpu_time_loop_equals_the_cpu_in_f32() {
    let Some(dev) = gpu() else { return };
    all_cases::<f32>(&dev, 1e-4);
}

#[test]
fn orders_beyond_the_kernels_are_refused_for_the_cpu() {
    let Some(dev) = gpu() else { return };
    let case = Case {
        dim: 2,
        n: vec![3, 3],
        perturb: 0.0,
        kind: WaveKind::Acoustic,
        order: ferrofem_cuda::wave::MAX_GPU_ORDER + 1,
        varying: false,
        boundaries: Vec::new(),
    };
    let sim = Simulation::<f64>::new(&case.mesh(), &case.setup()).unwrap();
    let e = GpuWave::new(&dev, &sim).err().expect("refused");
    assert!(
        matches!(e, ferrofem_cuda::GpuError::Unsupported(_)) && e.to_string().contains("order 9"),
        "{e}"
    );
}
