//! Distributed operators and solves on 1, 2, 3 and 4 MPI ranks against the serial ones.
//!
//! Run by `cargo test --features mpi`: the test starts itself under
//! `mpirun --oversubscribe -np N` for each N; every rank then partitions the same mesh,
//! builds its part's space and operator, and checks against the serial operator of the
//! whole mesh (which each rank builds too, the meshes being small):
//! - the owned nodes of all ranks are the nodes of the whole mesh, each once;
//! - the operator applied part by part and summed across the interfaces equals the
//!   serial operator's product (1e-13), and a distributed dot product the serial one;
//! - taking the owners' values makes a vector consistent;
//! - a Dirichlet problem solved by distributed PCG equals the serial solution (1e-12);
//! - a wave simulation on the parts equals the serial one: the time step, the
//!   seismograms (gathered), the field at every node and the energy (1e-12).
//!
//! Cases: the sum-factorised diffusion and mass operators on hexahedra (three components
//! for the mass) and the pointwise Poisson form with its forcing on triangles,
//! quadrilaterals and tetrahedra; acoustic waves on quadrilaterals (absorbing and rigid
//! sides, a monopole) and elastic waves on hexahedra (a medium varying in space, absorbing,
//! rigid and free sides, a moment-tensor source and a point force, a body force).

use ferrofem_base::LinearOperator;
use ferrofem_dist::{
    node_keys, partition_cells, Communicator, Decomposition, DistSpace, LocalPart, MpiComm,
    NodeInterface, NodeKey, WavePartition,
};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::{TensorKind, TensorOperator, TensorOptions};
use ferrofem_operator::{lift_rhs, ConstrainedOperator, FormOperator, Linearized};
use ferrofem_physics::Poisson;
use ferrofem_solver::{pcg, CpuSpace, SolveOptions};
use ferrofem_space::H1Space;
use ferrofem_wave::{
    BoundaryCondition, BoundarySpec, Material, Medium, Receiver, RunLength, Simulation, Source,
    SourceKind, TimeSpec, WaveKind, WaveSetup, Wavelet,
};
use std::collections::HashMap;
use std::process::Command;
use std::sync::Arc;

fn main() {
    if ferrofem_dist::launched_in_parallel()
        || std::env::var_os("FERROFEM_MPI_RANK_CHECKS").is_some()
    {
        run_rank_checks();
    } else {
        launch_all();
    }
}

/// Starts this executable under `mpirun` on 1–4 ranks; fails where any run fails.
fn launch_all() {
    let exe = std::env::current_exe().expect("the test's own path");
    for np in 1..=4 {
        let out = Command::new("mpirun")
            .args(["--oversubscribe", "-np", &np.to_string()])
            .arg(&exe)
            // Open MPI refuses root (CI containers) unless told, and is told to stay on
            // the loopback and shared memory.
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_btl", "self,vader")
            .env("FERROFEM_MPI_RANK_CHECKS", "1")
            .output()
            .expect("mpirun must be installed to run the MPI tests (openmpi-bin)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "mpirun -np {np} failed:\n{text}");
        print!("{text}");
    }
    println!("test result: ok. distributed checks passed on 1, 2, 3 and 4 ranks");
}

fn boxed(spec: &str) -> Mesh {
    generate_box(&BoxSpec::parse(spec).expect("spec")).expect("mesh")
}

/// A reproducible vector of values in [-1, 1).
fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Relative max-norm difference of the local vector `local` from the global `global` at
/// the mapped nodes.
fn rel_diff(local: &[f64], global: &[f64], map: &[u32], ncomp: usize) -> f64 {
    let mut d = 0.0f64;
    for (n, &g) in map.iter().enumerate() {
        for c in 0..ncomp {
            d = d.max((local[n * ncomp + c] - global[g as usize * ncomp + c]).abs());
        }
    }
    d / max_abs(global)
}

fn restrict(global: &[f64], map: &[u32], ncomp: usize) -> Vec<f64> {
    map.iter()
        .flat_map(|&g| (0..ncomp).map(move |c| global[g as usize * ncomp + c]))
        .collect()
}

/// One case: the whole mesh and its space, and this rank's part with its space.
struct Case<'c, C: Communicator> {
    name: String,
    comm: &'c C,
    mesh: Mesh,
    space: H1Space,
    part: LocalPart,
    local_space: H1Space,
    interface: NodeInterface,
    /// The global node of each local node.
    map: Vec<u32>,
}

impl<'c, C: Communicator> Case<'c, C> {
    fn new(comm: &'c C, spec: &str, order: usize, ncomp: usize) -> Self {
        let name = format!("{spec} p={order} ncomp={ncomp} on {} ranks", comm.size());
        let mesh = boxed(spec);
        let space = H1Space::new(&mesh, order, ncomp).expect("space");
        let partition = partition_cells(&mesh, comm.size()).expect("partition");
        let decomposition = Decomposition::new(&mesh, partition).expect("decomposition");
        let part = LocalPart::extract(&mesh, &decomposition, comm.rank()).expect("part");
        let local_space = H1Space::new(&part.mesh, order, ncomp).expect("local space");
        let interface = NodeInterface::new(comm, &part, &local_space).expect("interface");

        let ids: Vec<u32> = (0..mesh.num_cells() as u32).collect();
        let vids: Vec<u32> = (0..mesh.num_vertices() as u32).collect();
        let global_keys = node_keys(&space, &mesh, &ids, &vids).expect("keys");
        let index: HashMap<NodeKey, u32> = global_keys
            .iter()
            .enumerate()
            .map(|(n, k)| (*k, n as u32))
            .collect();
        assert_eq!(index.len(), space.num_nodes(), "{name}: keys are unique");
        let local_keys = node_keys(
            &local_space,
            &part.mesh,
            &part.cell_global,
            &part.vertex_global,
        )
        .expect("local keys");
        let map: Vec<u32> = local_keys
            .iter()
            .map(|k| {
                *index
                    .get(k)
                    .expect("every local node is a node of the whole mesh")
            })
            .collect();
        // the nodes owned by all ranks are the global nodes, each once
        let owned = comm
            .gather_all(interface.num_owned() as u64)
            .expect("gather");
        assert_eq!(
            owned.iter().sum::<u64>(),
            space.num_nodes() as u64,
            "{name}: owned nodes"
        );
        // ... and no node is owned twice: the sums of the owned global numbers and of their
        // squares over all ranks are those of 0..n
        let (mut s1, mut s2) = (0u64, 0u64);
        for n in (0..map.len()).filter(|&n| interface.is_owned(n)) {
            let g = u64::from(map[n]);
            s1 += g;
            s2 += g * g;
        }
        let n = space.num_nodes() as u64;
        let s1: u64 = comm.gather_all(s1).expect("gather").iter().sum();
        let s2: u64 = comm.gather_all(s2).expect("gather").iter().sum();
        assert_eq!(s1, n * (n - 1) / 2, "{name}: owned nodes once each");
        assert_eq!(
            s2,
            (n - 1) * n * (2 * n - 1) / 6,
            "{name}: owned nodes once each"
        );
        Case {
            name,
            comm,
            mesh,
            space,
            part,
            local_space,
            interface,
            map,
        }
    }

    fn ncomp(&self) -> usize {
        self.space.ncomp()
    }

    /// The distributed product equals the serial one; dot products agree; owners' values
    /// make a vector consistent.
    fn check_apply(&self, serial: &dyn LinearOperator<f64>, local: &dyn LinearOperator<f64>) {
        let nc = self.ncomp();
        let x_global = pseudo_random(serial.nrows(), 11);
        let mut y_global = vec![0.0; serial.nrows()];
        serial.apply(&x_global, &mut y_global);
        let x = restrict(&x_global, &self.map, nc);
        let mut y = vec![0.0; local.nrows()];
        local.apply(&x, &mut y);
        self.interface
            .sum_shared(self.comm, &mut y, nc)
            .expect("sum");
        let err = rel_diff(&y, &y_global, &self.map, nc);
        assert!(err < 1e-13, "{}: product differs by {err:e}", self.name);

        let dot_serial: f64 = x_global.iter().zip(&y_global).map(|(a, b)| a * b).sum();
        let dot = self.interface.dot(self.comm, &x, &y, nc).expect("dot");
        assert!(
            (dot - dot_serial).abs() <= 1e-13 * dot_serial.abs(),
            "{}: dot {dot} against {dot_serial}",
            self.name
        );

        let mut rank_valued = vec![self.comm.rank() as f64; local.nrows()];
        self.interface
            .take_owners(self.comm, &mut rank_valued, nc)
            .expect("owners");
        for n in 0..self.map.len() {
            let owner = self.interface.is_owned(n);
            let v = rank_valued[n * nc];
            assert_eq!(
                owner,
                v == self.comm.rank() as f64,
                "{}: node {n} has its owner's value {v}",
                self.name
            );
            assert!(
                v <= self.comm.rank() as f64,
                "the owner is the lowest holder"
            );
        }
    }

    /// The Dirichlet problem `A u = f` with `u = g` on the boundary, solved by Jacobi PCG
    /// on the whole mesh and distributed: the solutions agree.
    fn check_solve<S, L>(&self, serial: S, local: L, f_global: &[f64], f_partial: &[f64])
    where
        S: LinearOperator<f64>,
        L: LinearOperator<f64>,
    {
        let nc = self.ncomp();
        let g_of = |x: &[f64], o: &mut [f64]| {
            for (c, oc) in o.iter_mut().enumerate() {
                *oc = 1.0 + x[0] - 0.5 * x[1] + 0.25 * c as f64;
            }
        };
        let opts = SolveOptions {
            rtol: 1e-13,
            max_iter: 5000,
            ..SolveOptions::default()
        };

        let boundary = self.space.boundary_nodes(&self.mesh).expect("boundary");
        let dofs = self.space.node_dofs(&boundary, None);
        let g_global = self.space.interpolate(g_of);
        let b_global = lift_rhs(&serial, &dofs, f_global, &g_global).expect("lift");
        let constrained = ConstrainedOperator::new(serial, &dofs).expect("constrained");
        let serial_space = CpuSpace::with_operator_jacobi(&constrained).expect("jacobi");
        let mut u_global = vec![0.0; b_global.len()];
        let serial_stats = pcg(&serial_space, &b_global, &mut u_global, &opts).expect("serial");
        for &d in &dofs {
            u_global[d as usize] = g_global[d as usize];
        }

        let local_boundary = self
            .local_space
            .facet_nodes(&self.part.mesh, &self.part.boundary_facets)
            .expect("local boundary");
        let local_dofs = self.local_space.node_dofs(&local_boundary, None);
        let dist = DistSpace::new(self.comm, &self.interface, local, nc, &local_dofs)
            .expect("distributed space")
            .with_jacobi()
            .expect("jacobi");
        let mut g = self.local_space.interpolate(g_of);
        self.interface
            .take_owners(self.comm, &mut g, nc)
            .expect("owners");
        let b = dist.lift(f_partial, &g).expect("lift");
        let mut u = vec![0.0; b.len()];
        let stats = pcg(&dist, &b, &mut u, &opts).expect("distributed solve");
        dist.add_boundary_values(&mut u, &g).expect("values");
        let err = rel_diff(&u, &u_global, &self.map, nc);
        if self.comm.rank() == 0 {
            println!(
                "{}: {} iterations (serial {}), solution differs by {err:.1e}",
                self.name, stats.iterations, serial_stats.iterations
            );
        }
        assert!(err <= 1e-12, "{}: solution differs by {err:e}", self.name);
    }
}

fn run_rank_checks() {
    let comm = Arc::new(MpiComm::init().expect("MPI"));
    run_wave_checks(&comm);
    let comm = &*comm;

    // sum-factorised operators on hexahedra: BP3 diffusion and BP1 mass of 3 components
    for (spec, order, ncomp, kind) in [
        (
            "hex:5x4x3,perturb=0.2,seed=3",
            3,
            1,
            TensorKind::Diffusion { alpha: 0.0 },
        ),
        ("hex:4x4x3,perturb=0.2,seed=5", 2, 3, TensorKind::Mass),
    ] {
        let case = Case::new(comm, spec, order, ncomp);
        let opts = TensorOptions::new(kind);
        let serial = TensorOperator::<f64>::new(&case.mesh, &case.space, &opts).expect("serial op");
        let local = TensorOperator::<f64>::new(&case.part.mesh, &case.local_space, &opts)
            .expect("local op");
        case.check_apply(&serial, &local);
        let f_global = pseudo_random(serial.nrows(), 7);
        // each node's load given on its owner alone, summed across the interfaces
        let mut f_partial = restrict(&f_global, &case.map, ncomp);
        for n in 0..case.map.len() {
            if !case.interface.is_owned(n) {
                f_partial[n * ncomp..(n + 1) * ncomp].fill(0.0);
            }
        }
        case.check_solve(&serial, &local, &f_global, &f_partial);
    }

    // the pointwise Poisson form with its manufactured forcing, load from each rank's cells
    for (spec, order) in [
        ("tri:9x7,perturb=0.2,seed=1", 3),
        ("quad:8x6,perturb=0.2,seed=2", 2),
        ("tet:4x4x3,perturb=0.2,seed=4", 2),
    ] {
        let case = Case::new(comm, spec, order, 1);
        let dim = case.mesh.dim();
        let physics = Poisson::manufactured(dim, 1.0).expect("physics");
        let serial_form =
            FormOperator::<f64, _>::new(&case.mesh, &case.space, physics.clone()).expect("form");
        let local_form = FormOperator::<f64, _>::new(&case.part.mesh, &case.local_space, physics)
            .expect("local form");
        let (serial, local) = (
            Linearized::new(&serial_form, &[]),
            Linearized::new(&local_form, &[]),
        );
        case.check_apply(&serial, &local);
        // the load F = −r(0), the residual at zero of the whole mesh and of the part
        let mut f_global = vec![0.0; serial.nrows()];
        serial_form.residual(&vec![0.0; serial.nrows()], &mut f_global);
        f_global.iter_mut().for_each(|v| *v = -*v);
        let mut f_partial = vec![0.0; local.nrows()];
        local_form.residual(&vec![0.0; local.nrows()], &mut f_partial);
        f_partial.iter_mut().for_each(|v| *v = -*v);
        case.check_solve(serial, local, &f_global, &f_partial);
    }
}

/// The global node of each node of a simulation's space on a part, from the keys of the
/// serial simulation's space.
fn wave_node_map(
    serial: &Simulation<f64>,
    mesh: &Mesh,
    local: &Simulation<f64>,
    part: &LocalPart,
) -> Vec<u32> {
    let ids: Vec<u32> = (0..mesh.num_cells() as u32).collect();
    let vids: Vec<u32> = (0..mesh.num_vertices() as u32).collect();
    let index: HashMap<NodeKey, u32> = node_keys(serial.space(), mesh, &ids, &vids)
        .expect("keys")
        .into_iter()
        .enumerate()
        .map(|(n, k)| (k, n as u32))
        .collect();
    node_keys(
        local.space(),
        &part.mesh,
        &part.cell_global,
        &part.vertex_global,
    )
    .expect("local keys")
    .iter()
    .map(|k| index[k])
    .collect()
}

/// Runs `setup` on `spec` serially and on this rank's part; compares them.
fn check_wave(comm: &Arc<MpiComm>, spec: &str, setup: &WaveSetup) {
    let name = format!(
        "{spec} {:?} p={} on {} ranks",
        setup.kind,
        setup.order,
        comm.size()
    );
    let mesh = boxed(spec);
    let mut serial = Simulation::<f64>::new(&mesh, setup).expect("serial simulation");
    serial.run(|_| {}).expect("serial run");

    let partition = partition_cells(&mesh, comm.size()).expect("partition");
    let decomposition = Decomposition::new(&mesh, partition).expect("decomposition");
    let part = Arc::new(LocalPart::extract(&mesh, &decomposition, comm.rank()).expect("part"));
    let wave_part = WavePartition::new(comm.clone(), part.clone()).expect("wave part");
    let mut local =
        Simulation::<f64>::on_part(&part.mesh, setup, &wave_part).expect("simulation on a part");
    assert_eq!(
        local.dt(),
        serial.dt(),
        "{name}: the whole mesh's time step"
    );
    assert_eq!(local.steps(), serial.steps());
    local.run(|_| {}).expect("distributed run");

    let want = serial.seismograms();
    let got = local.gathered_seismograms().expect("gather");
    let scale = max_abs(want);
    assert!(scale > 0.0, "{name}: the receivers record the wave");
    let err = want
        .iter()
        .zip(&got)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale;
    let map = wave_node_map(&serial, &mesh, &local, &part);
    let nc = local.components();
    let field_err = rel_diff(local.field(), serial.field(), &map, nc);
    let energy_err = (local.energy() - serial.energy()).abs() / serial.energy().abs();
    if comm.rank() == 0 {
        println!(
            "{name}: {} steps, seismograms differ by {err:.1e}, field by {field_err:.1e}, \
             energy by {energy_err:.1e}",
            serial.steps()
        );
    }
    assert!(err <= 1e-12, "{name}: seismograms differ by {err:e}");
    assert!(field_err <= 1e-12, "{name}: field differs by {field_err:e}");
    assert!(
        energy_err <= 1e-12,
        "{name}: energy differs by {energy_err:e}"
    );
}

fn run_wave_checks(comm: &Arc<MpiComm>) {
    let ricker = |f0: f64| Wavelet::ricker(f0, None).expect("wavelet");
    let receivers = |d: usize| -> Vec<Receiver> {
        (0..5)
            .map(|i| {
                let a = 0.13 + 0.17 * i as f64;
                let mut x = [a, 0.71 - 0.09 * i as f64, 0.0];
                if d == 3 {
                    x[2] = 0.37 + 0.05 * i as f64;
                }
                Receiver::new(format!("r{i}"), x)
            })
            .collect()
    };

    // acoustic, 2-D: absorbing and rigid sides, a monopole
    let water = Material {
        rho: 1000.0,
        vp: 1500.0,
        vs: 0.0,
    };
    let mut acoustic = WaveSetup::new(WaveKind::Acoustic, 4, Medium::Uniform(water), 1);
    acoustic.boundaries = vec![
        BoundarySpec::new("all", BoundaryCondition::Absorbing),
        BoundarySpec::new("ymax", BoundaryCondition::Free),
    ];
    acoustic.sources = vec![Source {
        name: "shot".into(),
        position: [0.43, 0.52, 0.0],
        kind: SourceKind::Monopole { amplitude: 1e6 },
        wavelet: ricker(3000.0),
    }];
    acoustic.receivers = receivers(2);
    acoustic.time = TimeSpec {
        dt: None,
        length: RunLength::Duration(6e-4),
    };
    check_wave(comm, "quad:12x10,perturb=0.2,seed=6", &acoustic);

    // elastic, 3-D: a medium varying in space, absorbing, rigid and free sides, a moment
    // tensor and a point force, a body force
    let medium = Medium::Function(Arc::new(|_, x: &[f64; 3]| {
        Some(Material {
            rho: 2000.0 + 300.0 * x[2],
            vp: 3000.0 + 500.0 * x[0],
            vs: 1700.0 + 200.0 * x[1],
        })
    }));
    let mut elastic = WaveSetup::new(WaveKind::Elastic, 3, medium, 1);
    elastic.boundaries = vec![
        BoundarySpec::new("all", BoundaryCondition::Absorbing),
        BoundarySpec::new("zmin", BoundaryCondition::Rigid),
        BoundarySpec::new("zmax", BoundaryCondition::Free),
    ];
    elastic.sources = vec![
        Source {
            name: "quake".into(),
            position: [0.41, 0.47, 0.53],
            kind: SourceKind::Moment([[1e9, 2e8, 0.0], [2e8, -5e8, 1e8], [0.0, 1e8, 3e8]]),
            wavelet: ricker(2500.0),
        },
        Source {
            name: "push".into(),
            position: [0.72, 0.28, 0.61],
            kind: SourceKind::Force([0.0, 1e7, -2e7]),
            wavelet: ricker(2000.0),
        },
    ];
    elastic.receivers = receivers(3);
    elastic.body_force = Some(Arc::new(|x: &[f64; 3], t: f64, out: &mut [f64]| {
        let s = (-((t - 2e-4) / 1e-4).powi(2)).exp() * 1e6;
        out[0] = s * x[1];
        out[1] = -s * x[0];
        out[2] = 0.5 * s;
    }));
    elastic.time = TimeSpec {
        dt: None,
        length: RunLength::Duration(4e-4),
    };
    check_wave(comm, "hex:5x4x4,perturb=0.2,seed=8", &elastic);
}
