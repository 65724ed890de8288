//! GPU results against their CPU twins. Needs a CUDA device: skipped (with a message) when
//! none is usable, unless FERROFEM_REQUIRE_GPU=1 (set by scripts/gpu-check.sh).
//!
//! Every bake-off kernel is checked against the CPU tensor operator
//! ([`TensorOperator`]) on the same space, numbered as the kernel's plan reads it
//! ([`BpPlan::number`]), with the same quadrature rule.

use ferrofem_base::random::random_vector;
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::bp::{
    bp_kernel, lattice_shapes, tested_configurations, BpOperator, BpPlan, CellArrangement,
    DeviceClass, GpuBp, KernelSpace, LatticePlan, PencilPlan, Tested, TESTED_KINDS,
};
use ferrofem_cuda::compile::{DiskCache, KernelSpec};
use ferrofem_cuda::krylov::GpuKrylov;
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, QuadratureRule, Rule1D};
use ferrofem_geometry::{GeometrySource, QuadGeometry};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::{TensorKind, TensorOperator, TensorOptions};
use ferrofem_solver::{pcg, CpuSpace, SolveOptions};
use ferrofem_space::H1Space;
use std::collections::HashMap;
use std::sync::Arc;

fn gpu() -> Option<Arc<GpuDevice>> {
    GpuDevice::for_tests()
}

/// An operator and plan at order `p` in a few words, to name them in a test's rows and
/// failures.
fn label(op: &BpOperator, plan: &BpPlan, p: usize, f32: bool) -> String {
    format!(
        "{} alpha={} {} q={} p={p} {} {}",
        op.kind.name(),
        op.kind.alpha(),
        op.geo.tag(),
        op.points(p),
        plan.describe(),
        if f32 { "f32" } else { "f64" }
    )
}

fn rel_err(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt();
    let den: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    num / den.max(1e-300)
}

/// A perturbed `n × n × n` box of hexahedra.
fn mesh(n: usize) -> Mesh {
    generate_box(&BoxSpec::parse(&format!("hex:{n}x{n}x{n},perturb=0.25,seed=5")).unwrap()).unwrap()
}

/// `space` numbered for `plan` (the test's mesh must suit the plan).
fn numbered(plan: &BpPlan, space: &H1Space) -> KernelSpace {
    plan.number(space)
        .unwrap_or_else(|e| panic!("{}: {e}", plan.describe()))
}

/// The CPU twin of `op`: the tensor operator with the same quadrature points on `space`.
fn cpu_twin(mesh: &Mesh, space: &H1Space, op: &BpOperator) -> TensorOperator<f64> {
    let opts = TensorOptions {
        q_points: Some(op.points(space.order())),
        ..TensorOptions::new(op.kind)
    };
    TensorOperator::<f64>::new(mesh, space, &opts).unwrap()
}

/// `A x` by the CPU twin of `op`.
fn cpu_apply(mesh: &Mesh, space: &H1Space, op: &BpOperator, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    cpu_twin(mesh, space, op).try_apply(x, &mut y).unwrap();
    y
}

/// The GPU operator of `op` and `plan`; `None` when a forced block shape is refused as
/// unsupported (e.g. too many elements per block for the shared memory at this order); any
/// other refusal fails the test.
fn gpu_op<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
) -> Option<GpuBp<T>> {
    let forced_block = matches!(
        plan,
        BpPlan::Pencil(PencilPlan {
            elems_per_block: Some(_),
            ..
        })
    );
    match GpuBp::<T>::new(dev, mesh, space, op, plan) {
        Ok(g) => Some(g),
        Err(GpuError::Unsupported(msg)) if forced_block => {
            eprintln!("skipped {op:?} {}: {msg}", plan.describe());
            None
        }
        Err(e) => panic!("{op:?} {}: {e}", plan.describe()),
    }
}

/// `A x` on the device into an output that starts as NaN; `None` where [`gpu_op`] skips
/// the configuration.
fn gpu_apply<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
    x: &[f64],
) -> Option<Vec<f64>> {
    let g = gpu_op::<T>(dev, mesh, space, op, plan)?;
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let u = DeviceVec::from_host(dev, &xt, "x").unwrap();
    let mut v = DeviceVec::<T>::from_host(dev, &vec![T::of(f64::NAN); x.len()], "y").unwrap();
    g.apply(&u, &mut v).unwrap();
    Some(v.to_host().unwrap().iter().map(|t| t.as_f64()).collect())
}

/// Compiles `specs` in parallel (NVRTC is single-threaded per call), so the sequential
/// checks that follow find them in the device's module cache.
fn compile_all(dev: &Arc<GpuDevice>, specs: &[KernelSpec]) {
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(16);
    std::thread::scope(|s| {
        for t in 0..threads {
            let dev = dev.clone();
            s.spawn(move || {
                for spec in specs.iter().skip(t).step_by(threads) {
                    dev.module(spec).unwrap_or_else(|e| panic!("{e}"));
                }
            });
        }
    });
}

/// The apply kernel of `op` and `plan` at order `p` in f32 or f64.
fn apply_spec(op: &BpOperator, plan: &BpPlan, p: usize, f32: bool) -> KernelSpec {
    let k = if f32 {
        bp_kernel::<f32>(op, plan, p)
    } else {
        bp_kernel::<f64>(op, plan, p)
    };
    k.unwrap_or_else(|e| panic!("{}: {e}", label(op, plan, p, f32)))
        .spec
}

/// Whether a tested configuration runs the lattice kernel (which needs a mesh sorted into
/// its bricks).
fn is_lattice(t: &Tested) -> bool {
    matches!(t.1, BpPlan::Lattice(_))
}

/// Every tested configuration but the lattice kernel's
/// ([`lattice_kernels_match_the_cpu_twin`]) against the CPU twin on a perturbed 3³ box, at
/// p = 1..8: the paper's slice kernel on the plain numbering, and the pencil kernel with the
/// tuned plans of every tabled device class and their neighbours (each tuned choice
/// switched), on the interior-last numbering, with the default rule and (BP1, BP3) a
/// solve's rules of one point fewer and one more; f64 to 1e-12 and f32 to 1e-5. The output
/// starts as NaN, so an entry the kernel misses shows.
#[test]
fn every_tested_plan_matches_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let configs: Vec<Tested> = tested_configurations()
        .into_iter()
        .filter(|t| !is_lattice(t))
        .collect();
    let t = std::time::Instant::now();
    let specs: Vec<KernelSpec> = configs
        .iter()
        .map(|(op, plan, p, f32)| apply_spec(op, plan, *p, *f32))
        .collect();
    compile_all(&dev, &specs);
    eprintln!(
        "precompiled {} kernels in {:.1} s",
        specs.len(),
        t.elapsed().as_secs_f64()
    );
    let m = mesh(3);
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for p in 1..=8 {
        let natural = H1Space::new(&m, p, 1).unwrap();
        let mut spaces: HashMap<String, KernelSpace> = HashMap::new();
        let mut reference: HashMap<String, (Vec<f64>, Vec<f64>)> = HashMap::new();
        for (op, plan, _, f32) in configs.iter().filter(|t| t.2 == p) {
            let numbering = format!("{:?}", plan.numbering());
            let space = spaces
                .entry(numbering.clone())
                .or_insert_with(|| numbered(plan, &natural));
            let key = format!("{:?} q={} {numbering}", op.kind, op.points(p));
            let (x, want) = reference
                .entry(key)
                .or_insert_with(|| {
                    let x = random_vector(space.space().num_dofs(), p as u64);
                    let want = cpu_apply(&m, space.space(), op, &x);
                    (x, want)
                })
                .clone();
            let got = if *f32 {
                gpu_apply::<f32>(&dev, &m, space, *op, *plan, &x)
            } else {
                gpu_apply::<f64>(&dev, &m, space, *op, *plan, &x)
            };
            let Some(got) = got else { continue };
            checked += 1;
            let err = rel_err(&got, &want);
            let tol = if *f32 { 1e-5 } else { 1e-12 };
            let label = label(op, plan, p, *f32);
            if err.is_nan() || err >= tol {
                failures.push(format!("{label}: rel err {err:e}"));
            }
            rows.push(format!("{label}: {err:.1e}"));
        }
    }
    for r in rows {
        eprintln!("{r}");
    }
    eprintln!("checked {checked} configurations against the CPU twin");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 500);
}

/// The mesh with its cells in a random order: element numbering with no structure, so that
/// the elements a block shares nodes with are scattered over the whole launch.
fn shuffled_cells(mesh: &Mesh, seed: u64) -> Mesh {
    let mut rng = ferrofem_base::random::Lcg::new(seed);
    let mut order: Vec<usize> = (0..mesh.num_cells()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let cells: Vec<u32> = order.iter().flat_map(|&c| mesh.cell(c).to_vec()).collect();
    Mesh::new(mesh.cell_type(), mesh.coords().to_vec(), cells).unwrap()
}

/// The brick shape of a lattice plan.
fn brick(plan: &BpPlan) -> [usize; 3] {
    match plan {
        BpPlan::Lattice(l) => l.brick,
        _ => panic!("{} is not a lattice plan", plan.describe()),
    }
}

/// A perturbed box of `bricks[0] × bricks[1] × bricks[2]` bricks of the lattice plan's
/// shape (noise `seed`), its cells sorted by [`BpPlan::sort_cells`] as the plan's kernel
/// walks them.
fn bricked_box(plan: &BpPlan, bricks: [usize; 3], seed: u64) -> Mesh {
    let shape = brick(plan);
    let grid = [0, 1, 2].map(|d| bricks[d] * shape[d]);
    let mut m = generate_box(
        &BoxSpec::parse(&format!(
            "hex:{}x{}x{},perturb=0.25,seed={seed}",
            grid[0], grid[1], grid[2]
        ))
        .unwrap(),
    )
    .unwrap();
    plan.sort_cells(&mut m, CellArrangement::Grid(grid))
        .unwrap_or_else(|e| panic!("{e}"));
    m
}

/// Applies a GPU operator `launches` times into one output that starts as NaN (and is reset
/// to NaN every 5 launches), each result against the CPU twin's `want` to 1e-12 (f64).
fn check_every_launch(
    dev: &Arc<GpuDevice>,
    g: &GpuBp<f64>,
    x: &[f64],
    want: &[f64],
    launches: usize,
    label: &str,
) {
    let u = DeviceVec::from_host(dev, x, "x").unwrap();
    let nan = vec![f64::NAN; x.len()];
    let mut v = DeviceVec::<f64>::from_host(dev, &nan, "y").unwrap();
    for launch in 0..launches {
        if launch % 5 == 0 {
            v.upload(&nan).unwrap();
        }
        g.apply(&u, &mut v).unwrap();
        let err = rel_err(&v.to_host().unwrap(), want);
        assert!(err < 1e-12, "{label} launch {launch}: rel err {err:e}");
    }
}

/// The kernels whose blocks run concurrently with other work of the same apply, launched
/// many times on meshes of thousands of blocks, structured and with shuffled cells: the
/// pencil kernel with its skeleton fill overlapped (it waits for the fill only before its
/// scatter) and not, the persistent pencil kernel (the next element's gather in flight
/// while the current one is computed), each in the tuned block and one element per block;
/// and the tuned lattice kernels (fill overlapped, the gather asked of L2 bricks ahead) on a
/// box of hundreds of bricks. A race shows as a wrong or NaN entry (the output starts as
/// NaN) in some launch; the small mesh of the main test runs too few blocks to show one.
#[test]
fn concurrent_plans_match_the_cpu_twin_in_every_launch() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    let cases = [
        (TensorKind::Mass, 3, 20, false),
        (TensorKind::Mass, 7, 10, false),
        (TensorKind::Mass, 7, 8, true),
        (TensorKind::Diffusion { alpha: 0.0 }, 4, 14, false),
        (TensorKind::Diffusion { alpha: 0.0 }, 2, 12, true),
        (TensorKind::CollocatedDiffusion { alpha: 1.5 }, 6, 10, false),
        (TensorKind::CollocatedDiffusion { alpha: 0.0 }, 3, 12, true),
    ];
    let mut launches = 0;
    for (kind, p, n, shuffle) in cases {
        let m = if shuffle {
            shuffled_cells(&mesh(n), 11)
        } else {
            mesh(n)
        };
        let op = BpOperator::new(kind, GeometrySource::Stored);
        let BpPlan::Pencil(t) = BpPlan::tuned(&class, &op, p) else {
            panic!("tuned plans are pencil plans")
        };
        let space = numbered(&BpPlan::Pencil(t), &H1Space::new(&m, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), 3);
        let want = cpu_apply(&m, space.space(), &op, &x);
        let one_shot = PencilPlan {
            persistent: false,
            ..t
        };
        let persistent = PencilPlan {
            persistent: true,
            register_columns: false,
            pencil_weights: false,
            overlapped_fill: false,
            ..t
        };
        let mut plans: Vec<PencilPlan> = Vec::new();
        for plan in [
            PencilPlan {
                overlapped_fill: true,
                ..one_shot
            },
            PencilPlan {
                overlapped_fill: false,
                ..one_shot
            },
            persistent,
        ] {
            for epb in [plan.elems_per_block, Some(1)] {
                let plan = PencilPlan {
                    elems_per_block: epb,
                    ..plan
                };
                if !plans.contains(&plan) {
                    plans.push(plan);
                }
            }
        }
        for plan in plans {
            let plan = BpPlan::Pencil(plan);
            let label = format!("{} {n}^3 shuffled={shuffle}", label(&op, &plan, p, false));
            let g = GpuBp::<f64>::new(&dev, &m, &space, op, plan)
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            check_every_launch(&dev, &g, &x, &want, 25, &label);
            launches += 25;
        }
    }
    let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    for p in 3..=8 {
        let Some(plan) = BpPlan::tuned_on_bricks(&class, &op, p) else {
            continue;
        };
        let m = bricked_box(&plan, [8, 6, 6], 13);
        let space = numbered(&plan, &H1Space::new(&m, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), p as u64 + 30);
        let want = cpu_apply(&m, space.space(), &op, &x);
        let label = label(&op, &plan, p, false);
        let g = GpuBp::<f64>::new(&dev, &m, &space, op, plan)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        check_every_launch(&dev, &g, &x, &want, 25, &label);
        launches += 25;
    }
    eprintln!("concurrent plans: {launches} launches match the CPU twin");
}

/// BP3 with the bank-modelled shared pitches at every order they exist for (3..=8), stored
/// and on the fly, screened and not, in the tuned block and one element per block, matches
/// the CPU twin in every one of many launches on meshes of thousands of blocks: with its
/// own pitch per array, a region overlaid on another while a thread still reads it races,
/// which the 3³ mesh of the main test does not show.
#[test]
fn bp3_bank_pitches_match_the_cpu_twin_in_every_launch() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    let mut cases = Vec::new();
    for p in 3..=8 {
        for alpha in [0.0, 1.0] {
            for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
                let op = BpOperator::new(TensorKind::Diffusion { alpha }, geo);
                let BpPlan::Pencil(t) = BpPlan::tuned(&class, &op, p) else {
                    panic!("tuned plans are pencil plans")
                };
                for epb in [t.elems_per_block, Some(1)] {
                    let plan = BpPlan::Pencil(PencilPlan {
                        persistent: false,
                        bank_pitches: true,
                        elems_per_block: epb,
                        ..t
                    });
                    cases.push((p, op, plan));
                }
            }
        }
    }
    let specs: Vec<KernelSpec> = cases
        .iter()
        .map(|(p, op, plan)| apply_spec(op, plan, *p, false))
        .collect();
    // every case carries the pitches (the macros reach the kernel)
    let pitched = specs.iter().filter(|s| s.value("UPR").is_some()).count();
    assert_eq!(pitched, cases.len());
    compile_all(&dev, &specs);
    let mut launches = 0;
    for p in 3..=8 {
        // ~2700 elements at p = 3..5, 1000 at p = 6..8 (hundreds to thousands of blocks)
        let m = mesh(if p <= 5 { 14 } else { 10 });
        let natural = H1Space::new(&m, p, 1).unwrap();
        let space = numbered(&BpPlan::Pencil(PencilPlan::new()), &natural);
        let x = random_vector(space.space().num_dofs(), 17);
        for alpha in [0.0, 1.0] {
            let kind = TensorKind::Diffusion { alpha };
            let want = cpu_apply(
                &m,
                space.space(),
                &BpOperator::new(kind, GeometrySource::Stored),
                &x,
            );
            for (_, op, plan) in cases.iter().filter(|(q, op, _)| *q == p && op.kind == kind) {
                let label = label(op, plan, p, false);
                let g = GpuBp::<f64>::new(&dev, &m, &space, *op, *plan)
                    .unwrap_or_else(|e| panic!("{label}: {e}"));
                check_every_launch(&dev, &g, &x, &want, 12, &label);
                launches += 12;
            }
        }
    }
    eprintln!(
        "BP3 bank pitches: {} configurations, {launches} launches match the CPU twin",
        cases.len()
    );
}

/// The output vector an operator hands out ([`GpuBp::output_vector`]) and the restriction's
/// offsets live in compressible memory where the device compresses, and applications into
/// such an output match the CPU twin (the tuned pencil plans of every BP, and BP1's tuned
/// lattice plans at p = 3..8); such vectors copy and free cleanly.
#[test]
fn compressible_output_matches_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    match DeviceVec::<f64>::zeros_compressible(&dev, 10, "probe") {
        Ok(v) => assert!(v.is_compressible()),
        Err(GpuError::Unsupported(why)) => {
            eprintln!("compressible memory: not on this device ({why})");
            return;
        }
        Err(e) => panic!("compressible allocation failed: {e}"),
    }
    // allocate and free more than the granularity many times (Drop unmaps and releases)
    for k in 0..20 {
        let host: Vec<f64> = (0..300_000 + k).map(|i| i as f64).collect();
        let mut v = DeviceVec::<f64>::zeros_compressible(&dev, host.len(), "round trip").unwrap();
        assert_eq!(v.to_host().unwrap(), vec![0.0; host.len()]);
        v.upload(&host).unwrap();
        assert_eq!(v.to_host().unwrap(), host);
    }
    // three applications into the operator's own output, which starts as NaN
    let apply_thrice = |g: &GpuBp<f64>, x: &[f64], want: &[f64], label: &str| {
        assert!(
            g.indices_compressible(),
            "{label}: offsets not compressible"
        );
        let mut v = g.output_vector("y").unwrap();
        assert!(v.is_compressible(), "{label}: output not compressible");
        v.upload(&vec![f64::NAN; x.len()]).unwrap();
        let u = DeviceVec::from_host(&dev, x, "x").unwrap();
        for _ in 0..3 {
            g.apply(&u, &mut v).unwrap();
            let err = rel_err(&v.to_host().unwrap(), want);
            assert!(err < 1e-12, "{label}: rel err {err:e}");
        }
        3
    };
    let m = mesh(9);
    let mut checked = 0;
    for (kind, p) in [
        (TensorKind::Mass, 3),
        (TensorKind::Mass, 7),
        (TensorKind::Diffusion { alpha: 0.0 }, 5),
        (TensorKind::CollocatedDiffusion { alpha: 0.0 }, 4),
    ] {
        let op = BpOperator::new(kind, GeometrySource::Stored);
        let plan = BpPlan::tuned(&class, &op, p);
        let space = numbered(&plan, &H1Space::new(&m, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), 5);
        let want = cpu_apply(&m, space.space(), &op, &x);
        let g = GpuBp::<f64>::new(&dev, &m, &space, op, plan).unwrap();
        checked += apply_thrice(&g, &x, &want, &label(&op, &plan, p, false));
    }
    // BP1's tuned lattice plans on a brick-sorted perturbed box
    let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    let mut lattices = 0;
    for p in 3..=8 {
        let Some(plan) = BpPlan::tuned_on_bricks(&class, &op, p) else {
            continue;
        };
        let m = bricked_box(&plan, [3, 2, 2], 5);
        let space = numbered(&plan, &H1Space::new(&m, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), p as u64 + 90);
        let want = cpu_apply(&m, space.space(), &op, &x);
        let g = GpuBp::<f64>::new(&dev, &m, &space, op, plan).unwrap();
        checked += apply_thrice(&g, &x, &want, &label(&op, &plan, p, false));
        lattices += 1;
    }
    assert_eq!(checked, (4 + lattices) * 3);
    eprintln!("compressible output: {checked} applications match the CPU twin");
}

/// The stored geometric factors the device computes from the vertices (weights times
/// Jacobian determinant, and the symmetric metric of BP3/BP3.5) match the host's
/// [`QuadGeometry`] at every point, for the slice kernel's unpadded layout and the pencil
/// kernel's padded one.
#[test]
fn device_geometry_matches_host_geometry() {
    let Some(dev) = gpu() else { return };
    let m = mesh(3);
    for p in [2usize, 5] {
        let natural = H1Space::new(&m, p, 1).unwrap();
        for (kind, q) in [
            (TensorKind::Diffusion { alpha: 1.0 }, p + 2),
            (TensorKind::CollocatedDiffusion { alpha: 0.0 }, p + 1),
            (TensorKind::Mass, p + 2),
        ] {
            let (pts, wts) = if kind.is_collocated() {
                let g = gauss_lobatto_legendre(q).unwrap();
                (g.points, g.weights)
            } else {
                let g = gauss_legendre(q).unwrap();
                (g.points, g.weights)
            };
            let rule = QuadratureRule::tensor(
                ferrofem_base::CellType::Hexahedron,
                &Rule1D {
                    points: pts,
                    weights: wts,
                },
                0,
            );
            let qg = QuadGeometry::compute(&m, &rule).unwrap();
            let metric = qg.metric();
            let op = BpOperator::new(kind, GeometrySource::Stored);
            for plan in [BpPlan::Slice2d, BpPlan::Pencil(PencilPlan::new())] {
                let space = numbered(&plan, &natural);
                let g = GpuBp::<f64>::new(&dev, &m, &space, op, plan).unwrap();
                let geo = g.geometry_to_host().unwrap();
                let q3 = q * q * q;
                // the pencil kernel pads each element's factors to 16 bytes
                let stride = geo.len() / m.num_cells();
                let ngeo = stride / q3;
                let mut worst: f64 = 0.0;
                for e in 0..m.num_cells() {
                    for qp in 0..q3 {
                        for c in 0..ngeo {
                            let host = if kind == TensorKind::Mass || c == 6 {
                                qg.wdetj[e * q3 + qp]
                            } else {
                                metric[(e * q3 + qp) * 6 + c]
                            };
                            let dev_v = geo[e * stride + c * q3 + qp];
                            worst = worst.max((host - dev_v).abs() / host.abs().max(1e-3));
                        }
                    }
                }
                assert!(
                    worst < 1e-12,
                    "{} p={p} {}: geometry differs by {worst:e}",
                    kind.name(),
                    plan.describe()
                );
            }
        }
    }
}

/// The device dot product (whole and at listed entries), axpy and xpby against the host at
/// lengths from 1 to 2²⁰.
#[test]
fn blas_matches_host() {
    let Some(dev) = gpu() else { return };
    let blas = GpuBlas::<f64>::new(&dev).unwrap();
    for n in [1usize, 1000, 1 << 20] {
        let x = random_vector(n, 1);
        let y = random_vector(n, 2);
        let dx = DeviceVec::from_host(&dev, &x, "x").unwrap();
        let mut dy = DeviceVec::from_host(&dev, &y, "y").unwrap();
        let dot = blas.dot(&dx, &dy).unwrap();
        let want: f64 = x.iter().zip(&y).map(|(a, b)| a * b).sum();
        assert!((dot - want).abs() < 1e-10 * (n as f64).sqrt(), "dot n={n}");
        let idx: Vec<u32> = (0..n as u32).step_by(3).rev().collect();
        let didx = DeviceVec::from_host(&dev, &idx, "indices").unwrap();
        let at = blas.dot_at(&dx, &dy, &didx).unwrap();
        let want_at: f64 = idx.iter().map(|&i| x[i as usize] * y[i as usize]).sum();
        assert!(
            (at - want_at).abs() < 1e-10 * (n as f64).sqrt(),
            "dot_at n={n}"
        );
        blas.axpy(0.5, &dx, &mut dy).unwrap();
        let got = dy.to_host().unwrap();
        assert!(got
            .iter()
            .zip(x.iter().zip(&y))
            .all(|(g, (a, b))| (g - (b + 0.5 * a)).abs() < 1e-15));
        blas.xpby(&dx, -2.0, &mut dy).unwrap();
        let got2 = dy.to_host().unwrap();
        assert!(got2
            .iter()
            .zip(x.iter().zip(&got))
            .all(|(g, (a, b))| (g - (a - 2.0 * b)).abs() < 1e-14));
    }
}

/// Jacobi-PCG on the device (the solvers' default plan for screened BP3.5, the CPU
/// diagonal) reaches the solution in the CPU PCG's iterations, within 2.
#[test]
fn device_pcg_matches_cpu_pcg() {
    let Some(dev) = gpu() else { return };
    let m = mesh(4);
    let p = 4;
    let kind = TensorKind::CollocatedDiffusion { alpha: 1.0 };
    let (op, plan) = BpPlan::fastest(&DeviceClass::of(&dev), kind, None, p);
    let space = numbered(&plan, &H1Space::new(&m, p, 1).unwrap());
    let cpu_op = cpu_twin(&m, space.space(), &op);
    let xtrue = random_vector(space.space().num_dofs(), 9);
    let mut b = vec![0.0; xtrue.len()];
    cpu_op.try_apply(&xtrue, &mut b).unwrap();
    let diag = cpu_op.diagonal().unwrap();
    let opts = SolveOptions {
        rtol: 1e-10,
        max_iter: 2000,
        ..Default::default()
    };
    let cpu_space = CpuSpace::with_jacobi(&cpu_op, &diag).unwrap();
    let mut xc = vec![0.0; b.len()];
    let cpu_stats = pcg(&cpu_space, &b, &mut xc, &opts).unwrap();

    let gop = GpuBp::<f64>::new(&dev, &m, &space, op, plan).unwrap();
    let blas = GpuBlas::<f64>::new(&dev).unwrap();
    let gspace = GpuKrylov::with_jacobi(&gop, &blas, &diag).unwrap();
    let db = DeviceVec::from_host(&dev, &b, "b").unwrap();
    let mut dx = DeviceVec::<f64>::zeros(&dev, b.len(), "x").unwrap();
    let gstats = pcg(&gspace, &db, &mut dx, &opts).unwrap();
    let xg = dx.to_host().unwrap();
    assert!(
        rel_err(&xg, &xtrue) < 1e-8,
        "device solution error {:e}",
        rel_err(&xg, &xtrue)
    );
    assert!(
        (gstats.iterations as i64 - cpu_stats.iterations as i64).abs() <= 2,
        "iterations {} vs {}",
        gstats.iterations,
        cpu_stats.iterations
    );
    eprintln!(
        "PCG iterations: cpu {} gpu {}",
        cpu_stats.iterations, gstats.iterations
    );
}

/// With Dirichlet rows set, the operator copies the input through on them and applies the
/// CPU twin elsewhere (the input is zero on them, as CG keeps it).
fn check_dirichlet_rows(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
) {
    let s = space.space();
    let bnd = s.node_dofs(&s.boundary_nodes(mesh).unwrap(), None);
    assert!(!bnd.is_empty() && bnd.len() < s.num_dofs());
    let mut x = random_vector(s.num_dofs(), 4);
    for &d in &bnd {
        x[d as usize] = 0.0;
    }
    let want_free = cpu_apply(mesh, s, &op, &x);
    let mut g = GpuBp::<f64>::new(dev, mesh, space, op, plan).unwrap();
    g.set_dirichlet(&bnd).unwrap();
    let u = DeviceVec::from_host(dev, &x, "x").unwrap();
    let mut v = DeviceVec::<f64>::zeros(dev, x.len(), "y").unwrap();
    g.apply(&u, &mut v).unwrap();
    let got = v.to_host().unwrap();
    let mut is_bnd = vec![false; x.len()];
    for &d in &bnd {
        is_bnd[d as usize] = true;
    }
    let label = label(&op, &plan, s.order(), false);
    for i in 0..x.len() {
        if is_bnd[i] {
            assert_eq!(got[i], x[i], "{label}: Dirichlet row {i}");
        } else {
            assert!(
                (got[i] - want_free[i]).abs() < 1e-12 * (1.0 + want_free[i].abs()),
                "{label}: row {i}: {} vs {}",
                got[i],
                want_free[i]
            );
        }
    }
}

/// Dirichlet rows are identity rows for each kernel: BP3 by the slice kernel and the tuned
/// pencil plan, BP1 by the tuned lattice plan on a brick-sorted box.
#[test]
fn dirichlet_rows_are_identity() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    let m = mesh(3);
    let natural = H1Space::new(&m, 3, 1).unwrap();
    let laplace = BpOperator::new(TensorKind::Diffusion { alpha: 0.0 }, GeometrySource::Stored);
    for plan in [BpPlan::Slice2d, BpPlan::tuned(&class, &laplace, 3)] {
        check_dirichlet_rows(&dev, &m, &numbered(&plan, &natural), laplace, plan);
    }
    let mass = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    if let Some(plan) = BpPlan::tuned_on_bricks(&class, &mass, 3) {
        let m = bricked_box(&plan, [3, 2, 2], 3);
        let space = numbered(&plan, &H1Space::new(&m, 3, 1).unwrap());
        check_dirichlet_rows(&dev, &m, &space, mass, plan);
    }
}

/// A second device object with the same disk cache loads the kernel the first compiled
/// instead of compiling it again.
#[test]
fn second_device_object_loads_kernels_from_the_disk_cache() {
    let Some(_) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("ferrofem-cache-test-{}", std::process::id()));
    let m = mesh(2);
    let plan = BpPlan::Slice2d;
    let space = numbered(&plan, &H1Space::new(&m, 2, 1).unwrap());
    let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    let d1 = GpuDevice::with_cache(0, Some(DiskCache::at(&dir))).unwrap();
    GpuBp::<f64>::new(&d1, &m, &space, op, plan).unwrap();
    let s1 = d1.compile_stats();
    assert!(s1.compiled >= 1 && s1.from_disk == 0, "{s1:?}");
    let d2 = GpuDevice::with_cache(0, Some(DiskCache::at(&dir))).unwrap();
    GpuBp::<f64>::new(&d2, &m, &space, op, plan).unwrap();
    let s2 = d2.compile_stats();
    assert!(s2.compiled == 0 && s2.from_disk >= 1, "{s2:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn simplex_mesh(dim: usize) -> Mesh {
    // large enough that the biggest batch shapes (up to 384 cells per batch, four batches
    // per block) take several blocks, a double-buffered second batch and a partial last one
    let spec = if dim == 2 {
        "tri:32x32,perturb=0.25,seed=3"
    } else {
        "tet:8x8x8,perturb=0.25,seed=3"
    };
    generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
}

/// Every residual configuration (strategies, outputs, geometry, precision, Jacobian
/// action) against the CPU form operator on the same quadrature rule.
#[test]
fn residual_kernels_match_the_cpu_form_operator() {
    use ferrofem_cuda::residual::{case_physics, tested_cases, Aux, GpuResidual, Output};
    use ferrofem_operator::{AuxField, FormOperator, FormOptions, Quadrature};
    let Some(dev) = gpu() else { return };
    let cases = tested_cases();
    // compile in parallel first
    let threads = std::thread::available_parallelism()
        .map_or(4, |n| n.get())
        .min(16);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (cases, dev) = (&cases, dev.clone());
            s.spawn(move || {
                for c in cases.iter().skip(t).step_by(threads) {
                    if let Ok(k) = c.kernel() {
                        dev.module(&k.spec).unwrap_or_else(|e| panic!("{e}"));
                    }
                }
            });
        }
    });
    let mut failures = Vec::new();
    let mut checked = 0;
    for c in &cases {
        let mesh = simplex_mesh(c.dim);
        let (physics, cuda, aux_kind) = case_physics(c.physics, c.dim).unwrap();
        let ncomp = cuda.ncomp;
        let space = H1Space::new(&mesh, c.order, ncomp).unwrap();
        let scalar = space.with_ncomp(1).unwrap();
        let ct = mesh.cell_type();
        let rule = ferrofem_fe::QuadratureRule::for_degree(ct, c.qdegree).unwrap();
        let nodal = scalar.interpolate(|x, out| out[0] = ferrofem_physics::varcoef_kappa(x));
        let cellwise: Vec<f64> = (0..mesh.num_cells())
            .map(|e| 1.0 + 0.3 * ((e * 7 % 11) as f64 / 11.0))
            .collect();
        let (aux_cpu, aux_gpu) = match aux_kind {
            1 => (
                AuxField::Nodal {
                    space: &scalar,
                    values: &nodal,
                },
                Aux::Nodal(&nodal),
            ),
            2 => (
                AuxField::Cellwise {
                    ncomp: 1,
                    values: &cellwise,
                },
                Aux::Cellwise(&cellwise),
            ),
            _ => (AuxField::None, Aux::None),
        };
        let opts = FormOptions {
            quadrature: Quadrature::Rule(rule.clone()),
            aux: aux_cpu,
            ..Default::default()
        };
        let cpu = FormOperator::<f64, _>::with_options(&mesh, &space, physics, opts).unwrap();
        let u = random_vector(space.num_dofs(), 3 + c.order as u64);
        let w = random_vector(space.num_dofs(), 5 + c.dim as u64);
        let mut want = vec![0.0; u.len()];
        if c.jacobian {
            cpu.jacobian_apply(&u, &w, &mut want);
        } else {
            cpu.residual(&u, &mut want);
        }
        let r = space.restriction();
        let to_e = |l: &[f64]| {
            let mut e = vec![0.0; r.evec_len()];
            r.gather(l, &mut e);
            e
        };
        let run = |f32: bool| -> Result<Vec<f64>, GpuError> {
            #[allow(clippy::too_many_arguments)]
            fn go<T: GpuReal>(
                dev: &Arc<GpuDevice>,
                mesh: &Mesh,
                space: &H1Space,
                cuda: &ferrofem_physics::CudaPhysics,
                rule: &ferrofem_fe::QuadratureRule,
                aux: Aux<'_>,
                c: &ferrofem_cuda::residual::ResidualCase,
                u: &[f64],
                w: &[f64],
            ) -> Result<Vec<f64>, GpuError> {
                let op =
                    GpuResidual::<T>::new(dev, mesh, space, cuda, rule, aux, c.cfg, c.jacobian)?;
                let ut: Vec<T> = u.iter().map(|&x| T::of(x)).collect();
                let wt: Vec<T> = w.iter().map(|&x| T::of(x)).collect();
                let du = DeviceVec::from_host(dev, &ut, "u")?;
                let dw = DeviceVec::from_host(dev, &wt, "w")?;
                let mut out = DeviceVec::from_host(dev, &vec![T::of(f64::NAN); u.len()], "out")?;
                if c.jacobian {
                    op.jacobian_apply(&du, &dw, &mut out)?
                } else {
                    op.apply(&du, &mut out)?
                }
                Ok(out.to_host()?.iter().map(|x| x.as_f64()).collect())
            }
            if c.cfg.output == Output::ElementVectors {
                let (ue, we) = (to_e(&u), to_e(&w));
                let e = if f32 {
                    go::<f32>(&dev, &mesh, &space, &cuda, &rule, aux_gpu, c, &ue, &we)?
                } else {
                    go::<f64>(&dev, &mesh, &space, &cuda, &rule, aux_gpu, c, &ue, &we)?
                };
                let mut l = vec![0.0; u.len()];
                r.scatter_add(&e, &mut l);
                Ok(l)
            } else if f32 {
                go::<f32>(&dev, &mesh, &space, &cuda, &rule, aux_gpu, c, &u, &w)
            } else {
                go::<f64>(&dev, &mesh, &space, &cuda, &rule, aux_gpu, c, &u, &w)
            }
        };
        let got = match run(c.f32) {
            Ok(g) => g,
            Err(GpuError::Unsupported(m)) => {
                eprintln!("unsupported {c:?}: {m}");
                continue;
            }
            Err(e) => panic!("{c:?}: {e}"),
        };
        checked += 1;
        let err = rel_err(&got, &want);
        let tol = if c.f32 { 1e-5 } else { 1e-12 };
        if err.is_nan() || err >= tol {
            failures.push(format!("{c:?}: rel err {err:e}"));
        }
    }
    eprintln!("checked {checked} residual configurations against the CPU form operator");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 300);
}

/// The device diagonal ([`GpuBp::diagonal`]) of `op` and `plan` on `space`, with identity
/// rows on `dirichlet`; `None` where [`gpu_op`] skips the configuration.
fn gpu_diagonal<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
    dirichlet: &[u32],
) -> Option<Vec<f64>> {
    let mut g = gpu_op::<T>(dev, mesh, space, op, plan)?;
    g.set_dirichlet(dirichlet).unwrap();
    let d = g
        .diagonal()
        .unwrap_or_else(|e| panic!("{op:?} {}: {e}", plan.describe()));
    Some(d.to_host().unwrap().iter().map(|t| t.as_f64()).collect())
}

/// Largest entrywise relative difference (the diagonals are positive); NaN-safe.
fn max_rel_err(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    got.iter()
        .zip(want)
        .map(|(g, w)| (g - w).abs() / w.abs())
        .fold(
            0.0,
            |a: f64, e| if e.is_nan() { f64::INFINITY } else { a.max(e) },
        )
}

/// The Jacobi diagonal computed on the device (kernels/bp_diag.cu) against the CPU tensor
/// operator's diagonal, entry by entry: BP1, BP3 and BP3.5, screened and not, stored and
/// on-the-fly geometry, p = 1..8, f64 and f32, on a perturbed mesh, for the slice kernel
/// (plain numbering, unpadded factors), the plain pencil plan and the tuned plans of every
/// tabled device class (interior-last numbering), the tuned plans with the other way to the
/// skeleton slots and (register columns) the other weight layout, since the diagonal kernel
/// reads whatever the operator stores, and (BP1, BP3) a solve's rules of one point fewer
/// and one more; and identity rows on Dirichlet dofs.
#[test]
fn bp_diagonal_matches_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let m = mesh(3);
    // (operator, plan, order) of every case
    let mut cases: Vec<(BpOperator, BpPlan, usize)> = Vec::new();
    let mut add = |case: (BpOperator, BpPlan, usize)| {
        if !cases.contains(&case) {
            cases.push(case);
        }
    };
    for p in 1..=8 {
        for kind in TESTED_KINDS {
            for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
                let op = BpOperator::new(kind, geo);
                add((op, BpPlan::Slice2d, p));
                add((op, BpPlan::Pencil(PencilPlan::new()), p));
                for class in DeviceClass::TABLED {
                    let BpPlan::Pencil(t) = BpPlan::tuned(&class, &op, p) else {
                        panic!("tuned plans are pencil plans")
                    };
                    add((op, BpPlan::Pencil(t), p));
                    let free = PencilPlan {
                        min_blocks: None,
                        ..t
                    };
                    let slots = PencilPlan {
                        slot_table: !t.slot_table,
                        ..free
                    };
                    add((op, BpPlan::Pencil(slots), p));
                    if t.register_columns && geo == GeometrySource::Stored {
                        let weights = PencilPlan {
                            pencil_weights: !t.pencil_weights,
                            ..free
                        };
                        add((op, BpPlan::Pencil(weights), p));
                    }
                    if !kind.is_collocated() {
                        for q in [p + 1, p + 3] {
                            let op = BpOperator { q1d: Some(q), ..op };
                            add((op, BpPlan::tuned(&class, &op, p), p));
                        }
                    }
                }
            }
        }
    }
    // compile the operators' and the diagonal's kernels in parallel first
    let specs: Vec<KernelSpec> = cases
        .iter()
        .flat_map(|(op, plan, p)| {
            [
                bp_kernel::<f64>(op, plan, *p).map(|k| k.spec),
                bp_kernel::<f32>(op, plan, *p).map(|k| k.spec),
                GpuBp::<f64>::diagonal_kernel(op, plan, *p),
                GpuBp::<f32>::diagonal_kernel(op, plan, *p),
            ]
        })
        .map(|k| k.unwrap_or_else(|e| panic!("{e}")))
        .collect();
    compile_all(&dev, &specs);
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    let mut checked = 0;
    for p in 1..=8 {
        let natural = H1Space::new(&m, p, 1).unwrap();
        let mut spaces: HashMap<String, KernelSpace> = HashMap::new();
        let mut want: HashMap<String, Vec<f64>> = HashMap::new();
        for (op, plan, _) in cases.iter().filter(|c| c.2 == p) {
            let numbering = format!("{:?}", plan.numbering());
            let space = spaces
                .entry(numbering.clone())
                .or_insert_with(|| numbered(plan, &natural));
            let want = want
                .entry(format!("{:?} q={} {numbering}", op.kind, op.points(p)))
                .or_insert_with(|| cpu_twin(&m, space.space(), op).diagonal().unwrap());
            for f32 in [false, true] {
                let got = if f32 {
                    gpu_diagonal::<f32>(&dev, &m, space, *op, *plan, &[])
                } else {
                    gpu_diagonal::<f64>(&dev, &m, space, *op, *plan, &[])
                };
                let Some(got) = got else { continue };
                checked += 1;
                let err = max_rel_err(&got, want);
                let tol = if f32 { 1e-5 } else { 1e-12 };
                let label = label(op, plan, p, f32);
                if err.is_nan() || err > tol {
                    failures.push(format!("{label}: max rel err {err:e}"));
                }
                rows.push(format!("{label}: {err:.1e}"));
            }
        }
    }
    for r in rows {
        eprintln!("{r}");
    }
    // Dirichlet rows: 1 there, the operator's diagonal elsewhere (both numberings)
    let natural = H1Space::new(&m, 3, 1).unwrap();
    let kind = TensorKind::Diffusion { alpha: 0.0 };
    let otf = BpOperator::new(kind, GeometrySource::OnTheFly);
    for (op, plan) in [
        (
            BpOperator::new(kind, GeometrySource::Stored),
            BpPlan::Slice2d,
        ),
        (otf, BpPlan::tuned(&DeviceClass::of(&dev), &otf, 3)),
    ] {
        let space = numbered(&plan, &natural);
        let s = space.space();
        let bnd = s.node_dofs(&s.boundary_nodes(&m).unwrap(), None);
        let want = cpu_twin(&m, s, &op).diagonal().unwrap();
        let got = gpu_diagonal::<f64>(&dev, &m, &space, op, plan, &bnd).expect("supported");
        let mut is_bnd = vec![false; got.len()];
        for &d in &bnd {
            is_bnd[d as usize] = true;
        }
        assert!(!bnd.is_empty() && bnd.len() < got.len());
        let label = label(&op, &plan, 3, false);
        for i in 0..got.len() {
            if is_bnd[i] {
                assert_eq!(got[i], 1.0, "{label}: Dirichlet row {i}");
            } else {
                let err = (got[i] - want[i]).abs() / want[i];
                assert!(err < 1e-12, "{label}: row {i}: {} vs {}", got[i], want[i]);
            }
        }
    }
    eprintln!("checked {checked} device diagonals against the CPU twin");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // at least the slice kernel, the plain and the tuned pencil plan and the other slots
    // for 8 orders, 5 kinds and 2 geometries
    assert!(cases.len() >= 8 * 5 * 2 * 3, "{} cases", cases.len());
    assert_eq!(checked, cases.len() * 2, "every case ran");
}

/// The vector kernels behind the device Jacobi preconditioner: scaling, setting indexed
/// entries, and the checked in-place reciprocal (which reports the first entry that is not
/// positive and finite, and leaves it as it was).
#[test]
fn blas_scale_set_indices_and_reciprocal_match_host() {
    let Some(dev) = gpu() else { return };
    let blas = GpuBlas::<f64>::new(&dev).unwrap();
    let n = 5000;
    let x: Vec<f64> = random_vector(n, 21).iter().map(|v| 1.5 + v).collect();
    assert!(x.iter().all(|&v| v > 0.0));
    let mut dx = DeviceVec::from_host(&dev, &x, "x").unwrap();
    blas.scale(2.5, &mut dx).unwrap();
    let idx: Vec<u32> = vec![0, 17, 4999];
    let didx = DeviceVec::from_host(&dev, &idx, "idx").unwrap();
    blas.set_indices(&mut dx, &didx, 1.0).unwrap();
    let mut want: Vec<f64> = x.iter().map(|v| 2.5 * v).collect();
    for &i in &idx {
        want[i as usize] = 1.0;
    }
    assert_eq!(dx.to_host().unwrap(), want);
    assert_eq!(blas.reciprocal(&mut dx).unwrap(), None);
    let got = dx.to_host().unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g * w - 1.0).abs() < 1e-15, "{g} vs 1/{w}");
    }
    for (bad, first) in [
        (vec![(40, 0.0), (3000, -1.0)], 40),
        (vec![(4000, f64::INFINITY), (2, f64::NAN)], 2),
    ] {
        let mut y = x.clone();
        for &(i, v) in &bad {
            y[i] = v;
        }
        let mut dy = DeviceVec::from_host(&dev, &y, "y").unwrap();
        assert_eq!(blas.reciprocal(&mut dy).unwrap(), Some(first));
        let got = dy.to_host().unwrap();
        for &(i, v) in &bad {
            assert!(
                got[i] == v || (v.is_nan() && got[i].is_nan()),
                "entry {i} changed"
            );
        }
    }
}

/// Jacobi-PCG on the device with the diagonal computed and inverted on the device takes the
/// CPU's iterations (CPU diagonal, CPU PCG) and reaches the same solution, for screened BP3
/// and BP3.5 with the solvers' default plans.
#[test]
fn device_pcg_with_the_device_diagonal_matches_cpu_pcg() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    let m = mesh(4);
    let p = 5;
    let natural = H1Space::new(&m, p, 1).unwrap();
    for kind in [
        TensorKind::Diffusion { alpha: 1.0 },
        TensorKind::CollocatedDiffusion { alpha: 1.0 },
    ] {
        let (op, plan) = BpPlan::fastest(&class, kind, None, p);
        let space = numbered(&plan, &natural);
        let cpu_op = cpu_twin(&m, space.space(), &op);
        let xtrue = random_vector(space.space().num_dofs(), 9);
        let mut b = vec![0.0; xtrue.len()];
        cpu_op.try_apply(&xtrue, &mut b).unwrap();
        let opts = SolveOptions {
            rtol: 1e-10,
            max_iter: 2000,
            ..Default::default()
        };
        let cpu_space = CpuSpace::with_jacobi(&cpu_op, &cpu_op.diagonal().unwrap()).unwrap();
        let mut xc = vec![0.0; b.len()];
        let cpu_stats = pcg(&cpu_space, &b, &mut xc, &opts).unwrap();
        let gop = GpuBp::<f64>::new(&dev, &m, &space, op, plan).unwrap();
        let blas = GpuBlas::<f64>::new(&dev).unwrap();
        let gspace = GpuKrylov::with_jacobi_device(&gop, &blas, gop.diagonal().unwrap()).unwrap();
        let db = DeviceVec::from_host(&dev, &b, "b").unwrap();
        let mut dx = DeviceVec::<f64>::zeros(&dev, b.len(), "x").unwrap();
        let gstats = pcg(&gspace, &db, &mut dx, &opts).unwrap();
        let xg = dx.to_host().unwrap();
        assert!(
            rel_err(&xg, &xtrue) < 1e-8,
            "{}: {:e}",
            kind.name(),
            rel_err(&xg, &xtrue)
        );
        assert!(
            (gstats.iterations as i64 - cpu_stats.iterations as i64).abs() <= 2,
            "{}: iterations {} vs {}",
            kind.name(),
            gstats.iterations,
            cpu_stats.iterations
        );
    }
}

/// BP1 on the brick lattice against the CPU twin: every lattice plan the tests and CI
/// compile ([`tested_configurations`]: the tuned plans and the tested shapes of
/// [`lattice_shapes`], with and without rolled phases, lookahead and weights in shared
/// memory, f64 and f32), each on a perturbed box of 3 × 2 × 2 bricks sorted by
/// [`BpPlan::sort_cells`] and numbered by [`BpPlan::number`], applied twice into an output
/// that starts as NaN (the fill and the stores must cover every entry each time); and the
/// device diagonal of each f64 operator (weights in brick-lattice order).
#[test]
fn lattice_kernels_match_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let configs: Vec<Tested> = tested_configurations()
        .into_iter()
        .filter(is_lattice)
        .collect();
    compile_all(&dev, &apply_and_diagonal_specs(&configs));
    let mut failures = Vec::new();
    let (mut checked, mut diagonals) = (0, 0);
    for (op, plan, p, f32) in &configs {
        let (op, plan, p) = (*op, *plan, *p);
        let m = bricked_box(&plan, [3, 2, 2], 7);
        let space = numbered(&plan, &H1Space::new(&m, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), p as u64 + 60);
        let want = cpu_apply(&m, space.space(), &op, &x);
        let label = label(&op, &plan, p, *f32);
        check_twice(
            &dev,
            &m,
            &space,
            (op, plan),
            *f32,
            (&x, &want),
            &label,
            &mut failures,
        );
        checked += 1;
        if !*f32 {
            check_diagonal(&dev, &m, &space, op, plan, &label, &mut failures);
            diagonals += 1;
        }
    }
    eprintln!(
        "checked {checked} lattice configurations (each applied twice) and {diagonals} \
         diagonals against the CPU twin"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let shapes: usize = (1..=8).map(|p| lattice_shapes(p).len()).sum();
    assert!(checked >= 2 * shapes, "{checked} lattice configurations");
}

/// A space numbered for another plan, or for bricks of another shape, is refused with a
/// typed error ([`GpuError::Unsupported`]) by the pencil and lattice kernels rather than
/// read wrongly; a lattice plan refuses to number (or sort) cells that are not whole bricks
/// of its shape. The numbering checks need no GPU and run without one.
#[test]
fn a_space_numbered_for_another_plan_is_refused() {
    let p = 3;
    let lattice = |brick| {
        BpPlan::Lattice(LatticePlan {
            brick,
            min_blocks: None,
            rolled_phases: 0,
            weights_in_shared: false,
            lookahead: 0,
        })
    };
    let (wide, cube) = (lattice([4, 4, 2]), lattice([2, 2, 2]));
    let pencil = BpPlan::Pencil(PencilPlan::new());
    // cells that are not whole bricks: a lexicographic box not sorted into them, and a box
    // of 27 cells
    let (unsorted, odd) = (mesh(4), mesh(3));
    for (m, plan) in [(&unsorted, cube), (&odd, cube), (&odd, lattice([2, 2, 1]))] {
        match plan.number(&H1Space::new(m, p, 1).unwrap()) {
            Err(GpuError::Unsupported(_)) => {}
            Err(e) => panic!("{}: numbering unsorted cells gave {e}", plan.describe()),
            Ok(_) => panic!("{}: unsorted cells were numbered", plan.describe()),
        }
    }
    // a grid that the brick does not divide, and cells of no known structure, are not
    // sorted; other plans leave the cells as they are
    let mut m3 = mesh(3);
    for cells in [
        CellArrangement::Grid([3, 3, 3]),
        CellArrangement::Unstructured,
    ] {
        assert!(
            matches!(
                cube.sort_cells(&mut m3, cells),
                Err(GpuError::Unsupported(_))
            ),
            "{cells:?} sorted into bricks of 2 x 2 x 2"
        );
        pencil.sort_cells(&mut m3, cells).unwrap();
    }
    // a box sorted into bricks of 4 x 4 x 2, numbered for each kernel
    let m = bricked_box(&wide, [2, 2, 2], 9);
    let natural = H1Space::new(&m, p, 1).unwrap();
    let spaces: Vec<KernelSpace> = [BpPlan::Slice2d, pencil, wide, lattice([1, 1, 1])]
        .iter()
        .map(|plan| numbered(plan, &natural))
        .collect();
    let numberings = [
        BpPlan::Slice2d.numbering(),
        pencil.numbering(),
        wide.numbering(),
        lattice([1, 1, 1]).numbering(),
    ];
    let Some(dev) = gpu() else { return };
    let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    let mut refused = 0;
    for plan in [pencil, wide, cube] {
        for (space, numbering) in spaces.iter().zip(numberings) {
            if numbering == plan.numbering() {
                continue;
            }
            match GpuBp::<f64>::new(&dev, &m, space, op, plan) {
                Err(GpuError::Unsupported(_)) => refused += 1,
                Err(e) => panic!(
                    "{}: a space numbered {numbering:?} gave {e}",
                    plan.describe()
                ),
                Ok(_) => panic!(
                    "{}: a space numbered {numbering:?} was accepted",
                    plan.describe()
                ),
            }
        }
    }
    assert_eq!(refused, 3 + 3 + 4);
}

/// Applies `op` and `plan` (in f32 or f64) twice into an output that starts as NaN and
/// records each application whose relative error against the CPU result `x_want.1` of
/// `x_want.0` is NaN or reaches the precision's tolerance (1e-5, 1e-12): the fill and the
/// stores must cover every entry each time.
#[allow(clippy::too_many_arguments)]
fn check_twice(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    (op, plan): (BpOperator, BpPlan),
    f32: bool,
    x_want: (&[f64], &[f64]),
    label: &str,
    failures: &mut Vec<String>,
) {
    let (x, want) = x_want;
    let runs: Vec<Vec<f64>> = if f32 {
        apply_twice::<f32>(dev, mesh, space, op, plan, x)
    } else {
        apply_twice::<f64>(dev, mesh, space, op, plan, x)
    };
    let tol = if f32 { 1e-5 } else { 1e-12 };
    for got in &runs {
        let err = rel_err(got, want);
        if err.is_nan() || err >= tol {
            failures.push(format!("{label}: rel err {err:e}"));
        }
    }
}

/// The device diagonal of `op` and `plan` (f64) against the CPU twin's, to 1e-12; a failure
/// is recorded.
fn check_diagonal(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
    label: &str,
    failures: &mut Vec<String>,
) {
    let got = gpu_diagonal::<f64>(dev, mesh, space, op, plan, &[]).unwrap();
    let want = cpu_twin(mesh, space.space(), &op).diagonal().unwrap();
    let err = max_rel_err(&got, &want);
    if err.is_nan() || err >= 1e-12 {
        failures.push(format!("{label}: diagonal rel err {err:e}"));
    }
}

/// The apply kernel of each configuration (in its precision) and its f64 diagonal kernel.
fn apply_and_diagonal_specs(configs: &[Tested]) -> Vec<KernelSpec> {
    configs
        .iter()
        .flat_map(|(op, plan, p, f32)| {
            [
                apply_spec(op, plan, *p, *f32),
                GpuBp::<f64>::diagonal_kernel(op, plan, *p).unwrap_or_else(|e| panic!("{e}")),
            ]
        })
        .collect()
}

/// `A x` twice on the device into one output that starts as NaN.
fn apply_twice<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &KernelSpace,
    op: BpOperator,
    plan: BpPlan,
    x: &[f64],
) -> Vec<Vec<f64>> {
    let g = GpuBp::<T>::new(dev, mesh, space, op, plan)
        .unwrap_or_else(|e| panic!("{op:?} {}: {e}", plan.describe()));
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let u = DeviceVec::from_host(dev, &xt, "x").unwrap();
    let mut v = DeviceVec::<T>::from_host(dev, &vec![T::of(f64::NAN); x.len()], "y").unwrap();
    (0..2)
        .map(|_| {
            g.apply(&u, &mut v).unwrap();
            v.to_host().unwrap().iter().map(|t| t.as_f64()).collect()
        })
        .collect()
}

/// The plate with a hole from Gmsh (`tests/data/gmsh`): hexahedra whose local axes differ
/// from cell to cell.
fn plate_mesh() -> Mesh {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data/gmsh/plate_hole_hex_v41_binary.msh");
    ferrofem_mesh::read_gmsh(&path).unwrap()
}

/// The plans a user gets on a real mesh, against the CPU twin, each applied twice into
/// NaN: every BP's tuned pencil plan for the device (stored and on the fly, p = 1..8) on
/// the Gmsh plate as read, and BP1's tuned lattice plan (p = 3..8) on the plate refined so
/// that each cell's children make whole bricks, sorted by [`BpPlan::sort_cells`] from
/// [`CellArrangement::Blocks`], with its device diagonal.
#[test]
fn tuned_plans_match_the_cpu_twin_on_a_gmsh_mesh() {
    let Some(dev) = gpu() else { return };
    let class = DeviceClass::of(&dev);
    let plate = plate_mesh();
    let mut failures = Vec::new();
    let mut checked = 0;
    let kinds = [
        TensorKind::Mass,
        TensorKind::Diffusion { alpha: 0.0 },
        TensorKind::CollocatedDiffusion { alpha: 0.0 },
    ];
    for p in 1..=8 {
        let natural = H1Space::new(&plate, p, 1).unwrap();
        for kind in kinds {
            for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
                let op = BpOperator::new(kind, geo);
                let plan = BpPlan::tuned(&class, &op, p);
                let space = numbered(&plan, &natural);
                let x = random_vector(space.space().num_dofs(), p as u64 + 80);
                let want = cpu_apply(&plate, space.space(), &op, &x);
                let label = format!("plate {}", label(&op, &plan, p, false));
                check_twice(
                    &dev,
                    &plate,
                    &space,
                    (op, plan),
                    false,
                    (&x, &want),
                    &label,
                    &mut failures,
                );
                checked += 1;
            }
        }
    }
    let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
    let (mut lattices, mut tuned) = (0, 0);
    for p in 3..=8 {
        let Some(plan) = BpPlan::tuned_on_bricks(&class, &op, p) else {
            continue;
        };
        tuned += 1;
        let levels = brick(&plan)
            .iter()
            .map(|&b| b.trailing_zeros() as usize)
            .max()
            .unwrap();
        let mut fine = plate.refined(levels).unwrap();
        plan.sort_cells(&mut fine, CellArrangement::Blocks(1 << levels))
            .unwrap_or_else(|e| panic!("{e}"));
        let space = numbered(&plan, &H1Space::new(&fine, p, 1).unwrap());
        let x = random_vector(space.space().num_dofs(), p as u64 + 90);
        let want = cpu_apply(&fine, space.space(), &op, &x);
        let label = format!("refined plate {}", label(&op, &plan, p, false));
        check_twice(
            &dev,
            &fine,
            &space,
            (op, plan),
            false,
            (&x, &want),
            &label,
            &mut failures,
        );
        check_diagonal(&dev, &fine, &space, op, plan, &label, &mut failures);
        lattices += 1;
    }
    eprintln!(
        "checked {checked} tuned pencil plans on the Gmsh plate and {lattices} tuned lattice \
         plans on it refined (each applied twice, and the lattice's diagonals) against the \
         CPU twin"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!((checked, lattices), (48, tuned));
}
