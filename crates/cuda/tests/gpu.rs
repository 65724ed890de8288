//! GPU results against their CPU twins. Needs a CUDA device: skipped (with a message) when
//! none is usable, unless FERROFEM_REQUIRE_GPU=1 (set by scripts/gpu-check.sh).

use ferrofem_base::random::random_vector;
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::bp::{bp_kernel, tested_configurations, BpConfig, GpuBp, Variant};
use ferrofem_cuda::compile::{DiskCache, KernelSpec};
use ferrofem_cuda::krylov::GpuKrylov;
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, QuadratureRule, Rule1D};
use ferrofem_geometry::QuadGeometry;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::{TensorKind, TensorOperator, TensorOptions};
use ferrofem_solver::{pcg, CpuSpace, SolveOptions};
use ferrofem_space::{H1Space, SlotOrder};
use std::sync::Arc;

fn gpu() -> Option<Arc<GpuDevice>> {
    match GpuDevice::new(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("FERROFEM_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("FERROFEM_REQUIRE_GPU=1 but no GPU: {e}");
            }
            eprintln!("no GPU ({e}): GPU tests skipped");
            None
        }
    }
}

/// A tested configuration's options, to name it in a test's rows and failures.
fn config_label(cfg: &BpConfig, p: usize, f32: bool) -> String {
    format!(
        "{} p={p} alpha={} {:?} {:?} il={} epb={:?} minb={:?} pers={} direct={} regcol={} pw={} cf={} sa={} zero={:?} chunk={} bricks={:?} rolled={} rp={:#b} steps={} boundary={:?} split={} 1a={} slots={:?} {}",
        cfg.kind.name(),
        cfg.kind.alpha(),
        cfg.variant,
        cfg.geo,
        cfg.interior_last,
        cfg.elems_per_block,
        cfg.min_blocks,
        cfg.persistent,
        cfg.direct_geometry,
        cfg.register_columns,
        cfg.pencil_weights,
        cfg.conflict_free_pitches,
        cfg.slot_arithmetic,
        cfg.skeleton_zeroing,
        cfg.groups_in_sequence,
        cfg.bricks,
        cfg.rolled_element_loops,
        cfg.rolled_phases,
        cfg.lattice_steps,
        cfg.lattice_boundary,
        cfg.split_lines,
        cfg.one_lattice_array,
        cfg.lattice_slots,
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

fn mesh(n: usize) -> Mesh {
    generate_box(&BoxSpec::parse(&format!("hex:{n}x{n}x{n},perturb=0.25,seed=5")).unwrap()).unwrap()
}

fn cpu_apply(mesh: &Mesh, space: &H1Space, kind: TensorKind, x: &[f64]) -> Vec<f64> {
    let op = TensorOperator::<f64>::new(mesh, space, &TensorOptions::new(kind)).unwrap();
    let mut y = vec![0.0; x.len()];
    op.try_apply(x, &mut y).unwrap();
    y
}

/// The operator of `cfg`; `None` when a forced block shape is refused as unsupported (e.g.
/// too many elements per block for the shared memory at this order); any other refusal
/// fails the test.
fn gpu_op<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
) -> Option<GpuBp<T>> {
    match GpuBp::<T>::new(dev, mesh, space, cfg) {
        Ok(op) => Some(op),
        Err(ferrofem_cuda::GpuError::Unsupported(msg)) if cfg.elems_per_block.is_some() => {
            eprintln!("skipped {cfg:?}: {msg}");
            None
        }
        Err(e) => panic!("{cfg:?}: {e}"),
    }
}

/// `A x` on the device; `None` where [`gpu_op`] skips the configuration.
fn gpu_apply<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
    x: &[f64],
) -> Option<Vec<f64>> {
    let op = gpu_op::<T>(dev, mesh, space, cfg)?;
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let u = DeviceVec::from_host(dev, &xt, "x").unwrap();
    let mut v = DeviceVec::<T>::from_host(dev, &vec![T::of(f64::NAN); x.len()], "y").unwrap();
    op.apply(&u, &mut v).unwrap();
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

/// Compiles every tested specialisation ([`tested_configurations`]) in parallel.
fn precompile(dev: &Arc<GpuDevice>) {
    let specs: Vec<KernelSpec> = tested_configurations()
        .into_iter()
        .filter_map(|(cfg, p, f32)| {
            if f32 {
                bp_kernel::<f32>(cfg, p).ok()
            } else {
                bp_kernel::<f64>(cfg, p).ok()
            }
            .map(|k| k.spec)
        })
        .collect();
    compile_all(dev, &specs);
}

#[test]
fn bp_operators_match_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let t = std::time::Instant::now();
    precompile(&dev);
    eprintln!(
        "precompiled {} kernels in {:.1} s",
        tested_configurations().len(),
        t.elapsed().as_secs_f64()
    );
    let m = mesh(3);
    // (the brick kernels need a space numbered per brick: brick_kernels_match_the_cpu_twin)
    let configs: Vec<_> = tested_configurations()
        .into_iter()
        .filter(|(c, _, _)| c.bricks.is_none())
        .collect();
    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for p in 1..=8 {
        let natural = H1Space::new(&m, p, 1).unwrap();
        let interior_last = natural.interior_last();
        let mut reference: std::collections::HashMap<(String, bool), (Vec<f64>, Vec<f64>)> =
            Default::default();
        for (cfg, _, f32) in configs.iter().filter(|(_, q, _)| *q == p) {
            let space = if cfg.interior_last {
                &interior_last
            } else {
                &natural
            };
            let key = (format!("{:?}", cfg.kind), cfg.interior_last);
            let (x, want) = reference
                .entry(key)
                .or_insert_with(|| {
                    let x = random_vector(space.num_dofs(), p as u64);
                    let want = cpu_apply(&m, space, cfg.kind, &x);
                    (x, want)
                })
                .clone();
            let got = if *f32 {
                gpu_apply::<f32>(&dev, &m, space, *cfg, &x)
            } else {
                gpu_apply::<f64>(&dev, &m, space, *cfg, &x)
            };
            let Some(got) = got else { continue };
            checked += 1;
            let err = rel_err(&got, &want);
            let tol = if *f32 { 1e-5 } else { 1e-12 };
            let label = config_label(cfg, p, *f32);
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

/// The mesh with its cells in a random order: element numbering with no structure, so the
/// owner schedule of the in-kernel skeleton zeroing has irregular predecessor lists.
fn shuffled_cells(mesh: &Mesh, seed: u64) -> Mesh {
    let mut rng = ferrofem_base::random::Lcg::new(seed);
    let mut order: Vec<usize> = (0..mesh.num_cells()).collect();
    for i in (1..order.len()).rev() {
        order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
    }
    let cells: Vec<u32> = order.iter().flat_map(|&c| mesh.cell(c).to_vec()).collect();
    Mesh::new(mesh.cell_type(), mesh.coords().to_vec(), cells).unwrap()
}

/// v8, v12 and v16: the kernel zeroes the skeleton itself (owner flags between blocks; v12
/// one wave ahead, or a few groups ahead so that blocks do wait; v16 each launch of a
/// pipeline for the next, from 2 launches to launches of a few blocks). A race
/// would show as a wrong or NaN entry (the output starts as NaN) in some launch, so each
/// case is launched many times on meshes with thousands of blocks, structured and shuffled.
#[test]
fn owner_zeroing_matches_the_cpu_twin_in_every_launch() {
    use ferrofem_cuda::bp::SkeletonZeroing;
    let Some(dev) = gpu() else { return };
    let cases = [
        (TensorKind::Mass, 3, 20, false),
        (TensorKind::Mass, 7, 10, false),
        (TensorKind::Mass, 7, 8, true),
        (TensorKind::Diffusion { alpha: 0.0 }, 4, 14, false),
        (TensorKind::Diffusion { alpha: 0.0 }, 2, 12, true),
        (TensorKind::CollocatedDiffusion { alpha: 1.5 }, 6, 10, false),
        (TensorKind::CollocatedDiffusion { alpha: 0.0 }, 3, 12, true),
    ];
    let mut checked = 0;
    for (kind, p, n, shuffle) in cases {
        let m = if shuffle {
            shuffled_cells(&mesh(n), 11)
        } else {
            mesh(n)
        };
        let space = H1Space::new(&m, p, 1).unwrap().interior_last();
        let x = random_vector(space.num_dofs(), 3);
        let want = cpu_apply(&m, &space, kind, &x);
        // (zeroing, groups in sequence, lookahead in percent of a wave: 1 % makes blocks
        // wait for flags still being raised, 100 % is the default; pipeline launches)
        let modes = [
            (SkeletonZeroing::Owner, 1, 0, 0),
            (SkeletonZeroing::Owner, 4, 0, 0),
            (SkeletonZeroing::Lookahead, 1, 1, 0),
            (SkeletonZeroing::Lookahead, 1, 100, 0),
            (SkeletonZeroing::LookaheadLate, 1, 2, 0),
            (SkeletonZeroing::Pipelined, 1, 0, 0),
            (SkeletonZeroing::Pipelined, 1, 0, 2),
            (SkeletonZeroing::Pipelined, 1, 0, 7),
            (SkeletonZeroing::Pipelined, 1, 0, 150),
        ];
        for (zeroing, chunk, ahead, launches) in modes {
            for epb in [None, Some(1)] {
                let mut cfg = BpConfig::tuned(kind, ferrofem_cuda::bp::GeoMode::Stored, p);
                cfg.persistent = false;
                cfg.elems_per_block = epb;
                cfg.skeleton_zeroing = zeroing;
                cfg.groups_in_sequence = chunk;
                cfg.zero_ahead = ahead;
                cfg.pipeline_chunks = launches;
                let op = GpuBp::<f64>::new(&dev, &m, &space, cfg).unwrap();
                if let Some(pl) = op.pipeline() {
                    // the launches cover every group once, in order
                    let mut next = 0;
                    for ch in &pl.chunks {
                        assert_eq!(ch.gbase, next);
                        next += ch.groups;
                    }
                    assert_eq!(next, op.grid());
                    if launches > 0 {
                        assert_eq!(pl.chunks.len(), (launches as usize).min(op.grid() as usize));
                    }
                }
                let u = DeviceVec::from_host(&dev, &x, "x").unwrap();
                let nan = vec![f64::NAN; x.len()];
                let mut v = DeviceVec::<f64>::from_host(&dev, &nan, "y").unwrap();
                for launch in 0..25 {
                    if launch % 5 == 0 {
                        v = DeviceVec::<f64>::from_host(&dev, &nan, "y").unwrap();
                    }
                    op.apply(&u, &mut v).unwrap();
                    let got = v.to_host().unwrap();
                    let err = rel_err(&got, &want);
                    assert!(
                        err < 1e-12,
                        "{} p={p} {n}^3 shuffled={shuffle} {zeroing:?} chunk={chunk} ahead={:?} launches={:?} epb={epb:?} launch {launch}: rel err {err:e}",
                        kind.name(),
                        op.zero_ahead_groups(),
                        op.pipeline().map(|pl| pl.chunks.len())
                    );
                    checked += 1;
                }
            }
        }
    }
    eprintln!("in-kernel skeleton zeroing: {checked} launches match the CPU twin");
}

/// BP3 with its arrays' own shared pitches (v20c) at every order, stored and on the fly,
/// screened and not, in the default block and one element per block, matches the CPU twin
/// in every one of many launches on meshes of thousands of blocks. The first v20c kernel
/// raced there (its transposed sC overlaid the fluxes another thread was still reading)
/// and passed the 3^3-element table; v21 moves sC to a region no thread reads any more.
#[test]
fn bp3_pitched_layouts_match_the_cpu_twin_in_every_launch() {
    use ferrofem_cuda::bp::GeoMode;
    let Some(dev) = gpu() else { return };
    let mut cases = Vec::new();
    for p in 3..=8 {
        for alpha in [0.0, 1.0] {
            for geo in [GeoMode::Stored, GeoMode::OnTheFly] {
                for epb in [None, Some(1)] {
                    let kind = TensorKind::Diffusion { alpha };
                    let mut cfg = BpConfig::tuned(kind, geo, p);
                    cfg.persistent = false;
                    cfg.conflict_free_pitches = true;
                    cfg.elems_per_block = epb;
                    cases.push((p, alpha, cfg));
                }
            }
        }
    }
    let specs: Vec<KernelSpec> = cases
        .iter()
        .filter_map(|(p, _, cfg)| bp_kernel::<f64>(*cfg, *p).ok().map(|k| k.spec))
        .collect();
    compile_all(&dev, &specs);
    let mut checked = 0;
    let mut pitched = 0;
    for p in 3..=8 {
        // ~2700 elements at p = 3..5, 1000 at p = 6..8 (hundreds to thousands of blocks)
        let m = mesh(if p <= 5 { 14 } else { 10 });
        let space = H1Space::new(&m, p, 1).unwrap().interior_last();
        let x = random_vector(space.num_dofs(), 17);
        let u = DeviceVec::from_host(&dev, &x, "x").unwrap();
        let nan = vec![f64::NAN; x.len()];
        for alpha in [0.0, 1.0] {
            let kind = TensorKind::Diffusion { alpha };
            let want = cpu_apply(&m, &space, kind, &x);
            for (_, _, cfg) in cases.iter().filter(|(q, a, _)| *q == p && *a == alpha) {
                let op = GpuBp::<f64>::new(&dev, &m, &space, *cfg)
                    .unwrap_or_else(|e| panic!("{}: {e}", config_label(cfg, p, false)));
                let spec = bp_kernel::<f64>(*cfg, p).unwrap().spec;
                if spec.value("UPR").is_some() {
                    pitched += 1;
                }
                let mut v = DeviceVec::<f64>::from_host(&dev, &nan, "y").unwrap();
                for launch in 0..12 {
                    if launch % 4 == 0 {
                        v = DeviceVec::<f64>::from_host(&dev, &nan, "y").unwrap();
                    }
                    op.apply(&u, &mut v).unwrap();
                    let err = rel_err(&v.to_host().unwrap(), &want);
                    assert!(
                        err < 1e-12,
                        "{} launch {launch}: rel err {err:e}",
                        config_label(cfg, p, false)
                    );
                    checked += 1;
                }
            }
        }
    }
    // every case carries the pitches (the macros reach the kernel)
    assert_eq!(pitched, cases.len());
    eprintln!(
        "BP3 pitched layouts: {} configurations, {checked} launches match the CPU twin",
        cases.len()
    );
}

/// An operator's output in compressible memory matches the CPU twin, as plain memory does
/// in the other tests (every BP, both ways of zeroing the skeleton, and BP1's lattice
/// defaults at p = 3..8), with the restriction's offsets in plain or compressible memory
/// (v37), and such vectors copy and free cleanly.
#[test]
fn compressible_output_matches_the_cpu_twin() {
    use ferrofem_cuda::bp::SkeletonZeroing;
    use ferrofem_cuda::GpuError;
    let Some(dev) = gpu() else { return };
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
        let v = DeviceVec::<f64>::zeros_compressible(&dev, host.len(), "round trip").unwrap();
        let mut v = v;
        assert_eq!(v.to_host().unwrap(), vec![0.0; host.len()]);
        v.upload(&host).unwrap();
        assert_eq!(v.to_host().unwrap(), host);
    }
    // three applications into an output `v` that starts as NaN, each against the CPU twin
    let apply_thrice =
        |op: &GpuBp<f64>, x: &[f64], mut v: DeviceVec<f64>, want: &[f64], label: &str| {
            let u = DeviceVec::from_host(&dev, x, "x").unwrap();
            v.upload(&vec![f64::NAN; x.len()]).unwrap();
            for _ in 0..3 {
                op.apply(&u, &mut v).unwrap();
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
        let space = H1Space::new(&m, p, 1).unwrap().interior_last();
        let x = random_vector(space.num_dofs(), 5);
        let want = cpu_apply(&m, &space, kind, &x);
        for (zeroing, indices) in [
            (SkeletonZeroing::Host, false),
            (SkeletonZeroing::Owner, false),
            (SkeletonZeroing::Host, true),
        ] {
            let mut cfg = BpConfig::tuned(kind, ferrofem_cuda::bp::GeoMode::Stored, p);
            cfg.skeleton_zeroing = zeroing;
            cfg.compressible_indices = indices;
            let op = GpuBp::<f64>::new(&dev, &m, &space, cfg).unwrap();
            assert_eq!(op.indices_compressible(), indices);
            let v = DeviceVec::<f64>::zeros_compressible(&dev, x.len(), "y").unwrap();
            let label = format!(
                "{} p={p} {zeroing:?} compressible indices {indices}",
                kind.name()
            );
            checked += apply_thrice(&op, &x, v, &want, &label);
        }
    }
    // BP1's lattice defaults on a brick-sorted perturbed box, output and offsets compressible
    for p in 3..=8 {
        let cfg =
            BpConfig::tuned_on_bricks(TensorKind::Mass, ferrofem_cuda::bp::GeoMode::Stored, p)
                .unwrap();
        let shape = cfg.bricks.unwrap();
        let m = bricked_box(shape, 5);
        let space = H1Space::new(&m, p, 1)
            .unwrap()
            .bricked_in(shape, cfg.lattice_slots)
            .unwrap()
            .0;
        let x = random_vector(space.num_dofs(), p as u64 + 90);
        let want = cpu_apply(&m, &space, TensorKind::Mass, &x);
        for indices in [false, true] {
            let cfg = BpConfig {
                compressible_indices: indices,
                ..cfg
            };
            let op = GpuBp::<f64>::new(&dev, &m, &space, cfg).unwrap();
            assert_eq!(op.indices_compressible(), indices);
            // the defaults' output vector (v37: compressible)
            let v = op.output_vector("y").unwrap();
            assert!(v.is_compressible());
            let label = format!("lattice p={p} compressible indices {indices}");
            checked += apply_thrice(&op, &x, v, &want, &label);
        }
    }
    assert_eq!(checked, 4 * 3 * 3 + 6 * 2 * 3);
    eprintln!("compressible output: {checked} applications match the CPU twin");
}

#[test]
fn device_geometry_matches_host_geometry() {
    let Some(dev) = gpu() else { return };
    let m = mesh(3);
    for p in [2usize, 5] {
        let space = H1Space::new(&m, p, 1).unwrap();
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
            let op = GpuBp::<f64>::new(&dev, &m, &space, BpConfig::new(kind)).unwrap();
            let g = op.geometry_to_host().unwrap();
            let q3 = q * q * q;
            // v2 pads each element's factors to 16 bytes
            let stride = g.len() / m.num_cells();
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
                        let dev_v = g[e * stride + c * q3 + qp];
                        worst = worst.max((host - dev_v).abs() / host.abs().max(1e-3));
                    }
                }
            }
            assert!(
                worst < 1e-12,
                "{} p={p}: geometry differs by {worst:e}",
                kind.name()
            );
        }
    }
}

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

#[test]
fn device_pcg_matches_cpu_pcg() {
    let Some(dev) = gpu() else { return };
    let m = mesh(4);
    let p = 4;
    let space = H1Space::new(&m, p, 1).unwrap();
    let alpha = 1.0;
    let cpu_op = TensorOperator::<f64>::new(
        &m,
        &space,
        &TensorOptions::new(TensorKind::CollocatedDiffusion { alpha }),
    )
    .unwrap();
    let xtrue = random_vector(space.num_dofs(), 9);
    let mut b = vec![0.0; xtrue.len()];
    cpu_op.try_apply(&xtrue, &mut b).unwrap();
    let diag = cpu_op.diagonal();
    let opts = SolveOptions {
        rtol: 1e-10,
        max_iter: 2000,
        ..Default::default()
    };
    let cpu_space = CpuSpace::with_jacobi(&cpu_op, &diag).unwrap();
    let mut xc = vec![0.0; b.len()];
    let cpu_stats = pcg(&cpu_space, &b, &mut xc, &opts).unwrap();

    let gop = GpuBp::<f64>::new(
        &dev,
        &m,
        &space,
        BpConfig::new(TensorKind::CollocatedDiffusion { alpha }),
    )
    .unwrap();
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

#[test]
fn dirichlet_rows_are_identity() {
    let Some(dev) = gpu() else { return };
    let m = mesh(3);
    let space = H1Space::new(&m, 3, 1).unwrap();
    let bnd = space.node_dofs(&space.boundary_nodes(&m).unwrap(), None);
    let mut x = random_vector(space.num_dofs(), 4);
    for &d in &bnd {
        x[d as usize] = 0.0;
    }
    let laplace = TensorKind::Diffusion { alpha: 0.0 };
    let want_free = cpu_apply(&m, &space, laplace, &x);
    let mut op = GpuBp::<f64>::new(&dev, &m, &space, BpConfig::new(laplace)).unwrap();
    op.set_dirichlet(&bnd).unwrap();
    let u = DeviceVec::from_host(&dev, &x, "x").unwrap();
    let mut v = DeviceVec::<f64>::zeros(&dev, x.len(), "y").unwrap();
    op.apply(&u, &mut v).unwrap();
    let got = v.to_host().unwrap();
    let mut is_bnd = vec![false; x.len()];
    for &d in &bnd {
        is_bnd[d as usize] = true;
    }
    for i in 0..x.len() {
        if is_bnd[i] {
            assert_eq!(got[i], x[i]);
        } else {
            assert!((got[i] - want_free[i]).abs() < 1e-12 * (1.0 + want_free[i].abs()));
        }
    }
}

#[test]
fn second_device_object_loads_kernels_from_the_disk_cache() {
    let Some(_) = gpu() else { return };
    let dir = std::env::temp_dir().join(format!("ferrofem-cache-test-{}", std::process::id()));
    let m = mesh(2);
    let space = H1Space::new(&m, 2, 1).unwrap();
    let d1 = GpuDevice::with_cache(0, Some(DiskCache::at(&dir))).unwrap();
    GpuBp::<f64>::new(&d1, &m, &space, BpConfig::new(TensorKind::Mass)).unwrap();
    let s1 = d1.compile_stats();
    assert!(s1.compiled >= 1 && s1.from_disk == 0, "{s1:?}");
    let d2 = GpuDevice::with_cache(0, Some(DiskCache::at(&dir))).unwrap();
    GpuBp::<f64>::new(&d2, &m, &space, BpConfig::new(TensorKind::Mass)).unwrap();
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
        let run = |f32: bool| -> Result<Vec<f64>, ferrofem_cuda::GpuError> {
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
            ) -> Result<Vec<f64>, ferrofem_cuda::GpuError> {
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
            Err(ferrofem_cuda::GpuError::Unsupported(m)) => {
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

/// The device diagonal ([`GpuBp::diagonal`]) of `cfg` on `space`, with identity rows on
/// `dirichlet`; `None` where [`gpu_op`] skips the configuration.
fn gpu_diagonal<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
    dirichlet: &[u32],
) -> Option<Vec<f64>> {
    let mut op = gpu_op::<T>(dev, mesh, space, cfg)?;
    op.set_dirichlet(dirichlet).unwrap();
    let d = op.diagonal().unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
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
/// on-the-fly geometry, the natural numbering (v2 and v1 kernels' layouts) and the
/// interior-last one (the tuned configurations the solvers use), f64 and f32, p = 1..8, on a
/// perturbed mesh; and identity rows on Dirichlet dofs.
#[test]
fn bp_diagonal_matches_the_cpu_twin() {
    use ferrofem_cuda::bp::GeoMode;
    let Some(dev) = gpu() else { return };
    let m = mesh(3);
    let kinds = ferrofem_cuda::bp::TESTED_KINDS;
    // (config, order, interior-last space) of every case
    let mut cases = Vec::new();
    for p in 1..=8 {
        for kind in kinds {
            for geo in [GeoMode::Stored, GeoMode::OnTheFly] {
                let mut natural = BpConfig::new(kind);
                natural.geo = geo;
                cases.push((natural, p, false));
                if geo == GeoMode::Stored {
                    // the v1 kernel's layout: stored factors without padding
                    natural.variant = Variant::Slice2D;
                    cases.push((natural, p, false));
                }
                let tuned = BpConfig::tuned(kind, geo, p);
                cases.push((tuned, p, true));
                // v20: the register-column kernel's weights in the other layout than the
                // tuned one (pencil order or lexicographic): the diagonal kernel reads
                // whichever the operator stores
                if tuned.register_columns && geo == GeoMode::Stored {
                    let pw = BpConfig {
                        pencil_weights: !tuned.pencil_weights,
                        ..tuned
                    };
                    cases.push((pw, p, true));
                }
            }
        }
    }
    // compile the operators' and the diagonal's kernels in parallel first
    let specs: Vec<KernelSpec> = cases
        .iter()
        .flat_map(|&(cfg, p, _)| {
            [
                bp_kernel::<f64>(cfg, p).map(|k| k.spec),
                bp_kernel::<f32>(cfg, p).map(|k| k.spec),
                GpuBp::<f64>::diagonal_kernel(cfg, p),
                GpuBp::<f32>::diagonal_kernel(cfg, p),
            ]
        })
        .flatten()
        .collect();
    compile_all(&dev, &specs);
    let mut failures = Vec::new();
    let mut rows = Vec::new();
    let mut checked = 0;
    for p in 1..=8 {
        let natural = H1Space::new(&m, p, 1).unwrap();
        let interior_last = natural.interior_last();
        let mut want: std::collections::HashMap<(String, bool), Vec<f64>> = Default::default();
        for (cfg, _, il) in cases.iter().filter(|c| c.1 == p) {
            let space = if *il { &interior_last } else { &natural };
            let want = want
                .entry((format!("{:?}", cfg.kind), *il))
                .or_insert_with(|| {
                    TensorOperator::<f64>::new(&m, space, &TensorOptions::new(cfg.kind))
                        .unwrap()
                        .diagonal()
                });
            for f32 in [false, true] {
                let got = if f32 {
                    gpu_diagonal::<f32>(&dev, &m, space, *cfg, &[])
                } else {
                    gpu_diagonal::<f64>(&dev, &m, space, *cfg, &[])
                };
                let Some(got) = got else { continue };
                checked += 1;
                let err = max_rel_err(&got, want);
                let tol = if f32 { 1e-5 } else { 1e-12 };
                let label = format!("{} (space il={il})", config_label(cfg, p, f32));
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
    for il in [false, true] {
        let natural = H1Space::new(&m, 3, 1).unwrap();
        let space = if il { natural.interior_last() } else { natural };
        let bnd = space.node_dofs(&space.boundary_nodes(&m).unwrap(), None);
        let kind = TensorKind::Diffusion { alpha: 0.0 };
        let want = TensorOperator::<f64>::new(&m, &space, &TensorOptions::new(kind))
            .unwrap()
            .diagonal();
        let cfg = if il {
            BpConfig::tuned(kind, GeoMode::OnTheFly, 3)
        } else {
            BpConfig::new(kind)
        };
        let got = gpu_diagonal::<f64>(&dev, &m, &space, cfg, &bnd).expect("supported");
        let mut is_bnd = vec![false; got.len()];
        for &d in &bnd {
            is_bnd[d as usize] = true;
        }
        assert!(!bnd.is_empty() && bnd.len() < got.len());
        for i in 0..got.len() {
            if is_bnd[i] {
                assert_eq!(got[i], 1.0, "il={il}: Dirichlet row {i}");
            } else {
                let err = (got[i] - want[i]).abs() / want[i];
                assert!(err < 1e-12, "il={il}: row {i}: {} vs {}", got[i], want[i]);
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
    // the 200 base cases (8 orders, 5 kinds, 5 layouts) and v20's other weight layout
    assert!(cases.len() >= 8 * 5 * 5, "{} cases", cases.len());
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
/// CPU's iterations (CPU diagonal, CPU PCG) and reaches the same solution.
#[test]
fn device_pcg_with_the_device_diagonal_matches_cpu_pcg() {
    let Some(dev) = gpu() else { return };
    let m = mesh(4);
    let space = H1Space::new(&m, 5, 1).unwrap().interior_last();
    for kind in [
        TensorKind::Diffusion { alpha: 1.0 },
        TensorKind::CollocatedDiffusion { alpha: 1.0 },
    ] {
        let cpu_op = TensorOperator::<f64>::new(&m, &space, &TensorOptions::new(kind)).unwrap();
        let xtrue = random_vector(space.num_dofs(), 9);
        let mut b = vec![0.0; xtrue.len()];
        cpu_op.try_apply(&xtrue, &mut b).unwrap();
        let opts = SolveOptions {
            rtol: 1e-10,
            max_iter: 2000,
            ..Default::default()
        };
        let cpu_space = CpuSpace::with_jacobi(&cpu_op, &cpu_op.diagonal()).unwrap();
        let mut xc = vec![0.0; b.len()];
        let cpu_stats = pcg(&cpu_space, &b, &mut xc, &opts).unwrap();
        let cfg = BpConfig::fastest(kind, 5);
        let gop = GpuBp::<f64>::new(&dev, &m, &space, cfg).unwrap();
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

/// v19: a block per brick of elements (faces inside the brick summed in shared memory) on
/// a space numbered per brick, against the CPU twin on the same space: every brick
/// configuration the CI compiles (BP1, BP3, BP3.5, screened and not, stored and on the
/// fly, 2x1x1, 2x2x1, 2x2x2, p = 1..8, f64 and f32), each applied twice into an output
/// that starts as NaN (the fill and the stores must cover every entry each time); the
/// device diagonal of a bricked operator; and a space that is not bricked as asked is
/// refused.
#[test]
fn brick_kernels_match_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let grid = [4, 4, 6];
    let mut m = generate_box(&BoxSpec::parse("hex:4x4x6,perturb=0.25,seed=5").unwrap()).unwrap();
    m.sort_cells_in_bricks(grid, [2, 2, 2]).unwrap();
    let configs: Vec<_> = tested_configurations()
        .into_iter()
        .filter(|(c, _, _)| c.bricks.is_some() && c.variant == Variant::Pencil)
        .collect();
    compile_all(&dev, &apply_and_diagonal_specs(&configs));
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut diagonals = 0;
    for p in 1..=8 {
        let natural = H1Space::new(&m, p, 1).unwrap();
        let mut spaces: Vec<([usize; 3], H1Space)> = Vec::new();
        let mut reference: BrickReference = Default::default();
        let mut diag_done = std::collections::HashSet::new();
        for (cfg, _, f32) in configs.iter().filter(|c| c.1 == p) {
            let shape = cfg.bricks.unwrap();
            if !spaces.iter().any(|(s, _)| *s == shape) {
                spaces.push((shape, natural.bricked(shape).unwrap().0));
            }
            let space = &spaces.iter().find(|(s, _)| *s == shape).unwrap().1;
            let (x, want) = reference
                .entry((format!("{:?}", cfg.kind), shape))
                .or_insert_with(|| {
                    let x = random_vector(space.num_dofs(), p as u64 + 40);
                    let want = cpu_apply(&m, space, cfg.kind, &x);
                    (x, want)
                })
                .clone();
            let label = config_label(cfg, p, *f32);
            check_twice(
                &dev,
                &m,
                space,
                *cfg,
                *f32,
                (&x, &want),
                &label,
                &mut failures,
            );
            checked += 1;
            // the Jacobi diagonal of a bricked operator (full offsets), once per kind
            if !*f32 && diag_done.insert(format!("{:?}{:?}", cfg.kind, cfg.geo)) {
                check_diagonal(&dev, &m, space, *cfg, &label, &mut failures);
                diagonals += 1;
            }
        }
        // a space numbered otherwise is refused with a typed error
        if let Some((cfg, _, _)) = configs.iter().find(|c| c.1 == p && !c.2) {
            for wrong in [
                natural.interior_last(),
                natural.bricked([1, 1, 1]).unwrap().0,
            ] {
                match GpuBp::<f64>::new(&dev, &m, &wrong, *cfg) {
                    Err(ferrofem_cuda::GpuError::Unsupported(_)) => {}
                    Err(e) => failures.push(format!("p={p}: wrong space gave {e}")),
                    Ok(_) => failures.push(format!("p={p}: a wrong space was accepted")),
                }
            }
        }
    }
    eprintln!("checked {checked} brick configurations (each applied twice) and {diagonals} diagonals against the CPU twin");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 5 * 2 * 8 * 3);
}

/// A perturbed box of 3 x 2 x 2 bricks of `shape` elements (noise `seed`), its cells sorted
/// brick by brick, as the lattice kernel needs them.
fn bricked_box(shape: [usize; 3], seed: u64) -> Mesh {
    let grid = [3 * shape[0], 2 * shape[1], 2 * shape[2]];
    let mut m = generate_box(
        &BoxSpec::parse(&format!(
            "hex:{}x{}x{},perturb=0.25,seed={seed}",
            grid[0], grid[1], grid[2]
        ))
        .unwrap(),
    )
    .unwrap();
    m.sort_cells_in_bricks(grid, shape).unwrap();
    m
}

/// v26: BP1 on the brick lattice against the CPU twin, every shape and order the CI
/// compiles (f64, and the tuned candidate shape in f32), each on a perturbed box of 3 x 2 x 2
/// bricks numbered per brick, applied twice into an output that starts as NaN (the fill and
/// the stores must cover every entry each time); the device diagonal of each f64 operator
/// (weights in brick-lattice order); and a space bricked in another shape or with the other
/// slot order is refused.
#[test]
fn lattice_kernels_match_the_cpu_twin() {
    let Some(dev) = gpu() else { return };
    let configs: Vec<_> = tested_configurations()
        .into_iter()
        .filter(|(c, _, _)| c.variant == Variant::Lattice)
        .collect();
    compile_all(&dev, &apply_and_diagonal_specs(&configs));
    let mut failures = Vec::new();
    let (mut checked, mut diagonals) = (0, 0);
    for (cfg, p, f32) in &configs {
        let (cfg, p) = (*cfg, *p);
        let shape = cfg.bricks.unwrap();
        let m = bricked_box(shape, 7);
        let natural = H1Space::new(&m, p, 1).unwrap();
        let space = natural.bricked_in(shape, cfg.lattice_slots).unwrap().0;
        let x = random_vector(space.num_dofs(), p as u64 + 60);
        let want = cpu_apply(&m, &space, cfg.kind, &x);
        let label = config_label(&cfg, p, *f32);
        check_twice(
            &dev,
            &m,
            &space,
            cfg,
            *f32,
            (&x, &want),
            &label,
            &mut failures,
        );
        checked += 1;
        if !*f32 {
            check_diagonal(&dev, &m, &space, cfg, &label, &mut failures);
            diagonals += 1;
            // the same cells bricked in single elements, or in this shape with the other
            // slot order (v35): refused with a typed error
            let other = match cfg.lattice_slots {
                SlotOrder::Lexicographic => SlotOrder::Ring,
                SlotOrder::Ring => SlotOrder::Lexicographic,
            };
            for wrong in [
                natural.bricked([1, 1, 1]).unwrap().0,
                natural.bricked_in(shape, other).unwrap().0,
            ] {
                match GpuBp::<f64>::new(&dev, &m, &wrong, cfg) {
                    Err(ferrofem_cuda::GpuError::Unsupported(_)) => {}
                    Err(e) => failures.push(format!("{label}: wrong space gave {e}")),
                    Ok(_) => failures.push(format!("{label}: a wrong space was accepted")),
                }
            }
        }
    }
    eprintln!("checked {checked} lattice configurations (each applied twice) and {diagonals} diagonals against the CPU twin");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked >= 8 * 3);
}

/// Applies `cfg` (in f32 or f64) twice into an output that starts as NaN and records each
/// application whose relative error against the CPU result `x_want.1` of `x_want.0` is NaN
/// or reaches the precision's tolerance (the fill and the stores must cover every entry
/// each time).
#[allow(clippy::too_many_arguments)]
fn check_twice(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
    f32: bool,
    x_want: (&[f64], &[f64]),
    label: &str,
    failures: &mut Vec<String>,
) {
    let (x, want) = x_want;
    let runs: Vec<Vec<f64>> = if f32 {
        apply_twice::<f32>(dev, mesh, space, cfg, x)
    } else {
        apply_twice::<f64>(dev, mesh, space, cfg, x)
    };
    let tol = if f32 { 1e-5 } else { 1e-12 };
    for got in &runs {
        let err = rel_err(got, want);
        if err.is_nan() || err >= tol {
            failures.push(format!("{label}: rel err {err:e}"));
        }
    }
}

/// The device diagonal of `cfg` (f64) against the CPU twin's, to 1e-12; a failure is
/// recorded.
fn check_diagonal(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
    label: &str,
    failures: &mut Vec<String>,
) {
    let got = gpu_diagonal::<f64>(dev, mesh, space, cfg, &[]).unwrap();
    let want = TensorOperator::<f64>::new(mesh, space, &TensorOptions::new(cfg.kind))
        .unwrap()
        .diagonal();
    let err = max_rel_err(&got, &want);
    if err >= 1e-12 {
        failures.push(format!("{label}: diagonal rel err {err:e}"));
    }
}

/// The apply kernel of each configuration (in its precision) and its f64 diagonal kernel.
fn apply_and_diagonal_specs(configs: &[(BpConfig, usize, bool)]) -> Vec<KernelSpec> {
    configs
        .iter()
        .flat_map(|&(cfg, p, f32)| {
            [
                if f32 {
                    bp_kernel::<f32>(cfg, p).map(|k| k.spec)
                } else {
                    bp_kernel::<f64>(cfg, p).map(|k| k.spec)
                },
                GpuBp::<f64>::diagonal_kernel(cfg, p),
            ]
        })
        .map(|k| k.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Input and CPU result per operator and brick shape.
type BrickReference = std::collections::HashMap<(String, [usize; 3]), (Vec<f64>, Vec<f64>)>;

/// `A x` twice on the device into one output that starts as NaN.
fn apply_twice<T: GpuReal>(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    space: &H1Space,
    cfg: BpConfig,
    x: &[f64],
) -> Vec<Vec<f64>> {
    let op = GpuBp::<T>::new(dev, mesh, space, cfg).unwrap_or_else(|e| panic!("{cfg:?}: {e}"));
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let u = DeviceVec::from_host(dev, &xt, "x").unwrap();
    let mut v = DeviceVec::<T>::from_host(dev, &vec![T::of(f64::NAN); x.len()], "y").unwrap();
    (0..2)
        .map(|_| {
            op.apply(&u, &mut v).unwrap();
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

/// The defaults a user gets on a real mesh, against the CPU twin, each applied twice into
/// NaN: every BP's tuned one-element kernel (stored and on the fly, p = 1..8) on the Gmsh
/// plate as read, and BP1's tuned lattice kernel (p = 3..8) on the plate refined so that each
/// cell's children take the lattice's bricks (`Mesh::sort_cells_in_bricks_by_block`).
#[test]
fn defaults_match_the_cpu_twin_on_a_gmsh_mesh() {
    use ferrofem_cuda::bp::GeoMode;
    let Some(dev) = gpu() else { return };
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
        let interior_last = natural.interior_last();
        for kind in kinds {
            for geo in [GeoMode::Stored, GeoMode::OnTheFly] {
                let cfg = BpConfig::tuned(kind, geo, p);
                let space = if cfg.interior_last {
                    &interior_last
                } else {
                    &natural
                };
                let x = random_vector(space.num_dofs(), p as u64 + 80);
                let want = cpu_apply(&plate, space, kind, &x);
                let label = format!("plate {}", config_label(&cfg, p, false));
                check_twice(
                    &dev,
                    &plate,
                    space,
                    cfg,
                    false,
                    (&x, &want),
                    &label,
                    &mut failures,
                );
                checked += 1;
            }
        }
    }
    let mut lattices = 0;
    for p in 3..=8 {
        let Some(cfg) = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p) else {
            continue;
        };
        let shape = cfg.bricks.unwrap();
        let levels = shape
            .iter()
            .map(|&b| b.trailing_zeros() as usize)
            .max()
            .unwrap();
        let m = 1 << levels;
        let mut fine = plate.refined(levels).unwrap();
        fine.sort_cells_in_bricks_by_block([m; 3], shape).unwrap();
        let space = H1Space::new(&fine, p, 1)
            .unwrap()
            .bricked_in(shape, cfg.lattice_slots)
            .unwrap()
            .0;
        let x = random_vector(space.num_dofs(), p as u64 + 90);
        let want = cpu_apply(&fine, &space, cfg.kind, &x);
        let label = format!("refined plate {}", config_label(&cfg, p, false));
        check_twice(
            &dev,
            &fine,
            &space,
            cfg,
            false,
            (&x, &want),
            &label,
            &mut failures,
        );
        check_diagonal(&dev, &fine, &space, cfg, &label, &mut failures);
        lattices += 1;
    }
    eprintln!(
        "checked {checked} one-element defaults on the Gmsh plate and {lattices} lattice defaults \
         on it refined (each applied twice, and the lattice's diagonals) against the CPU twin"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!((checked, lattices), (48, 6));
}
