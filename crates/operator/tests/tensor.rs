//! Sum-factorised tensor-product operators (BP1, BP3, BP3.5) against a reference built
//! from the full tabulation of the element and the geometry crate, and their properties.

use ferrofem_base::random::Lcg;
use ferrofem_base::{CellType, LinearOperator, Real};
use ferrofem_fe::QuadratureRule;
use ferrofem_geometry::{GeometrySource, QuadGeometry};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::{
    measure_copy_bandwidth, Accumulation, FactorLayout, SimdLevel, TensorError, TensorKind,
    TensorOperator, TensorOptions,
};
use ferrofem_space::H1Space;

const ALPHA: f64 = 0.7;

/// Every way the operator can get its geometry: stored in either layout, or on the fly.
const GEOMETRIES: [(GeometrySource, FactorLayout); 3] = [
    (GeometrySource::Stored, FactorLayout::ElementMajor),
    (GeometrySource::Stored, FactorLayout::Interleaved),
    (GeometrySource::OnTheFly, FactorLayout::Interleaved),
];

fn mesh(ct: CellType, n: usize, seed: u64) -> Mesh {
    let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
    spec.perturb = 0.25;
    spec.seed = seed;
    generate_box(&spec).unwrap()
}

fn random(len: usize, seed: u64) -> Vec<f64> {
    let mut g = Lcg::new(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    (0..len).map(|_| g.symmetric()).collect()
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn max_abs(a: &[f64]) -> f64 {
    a.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    max_abs(&d) / max_abs(b)
}

fn op<T: Real>(mesh: &Mesh, space: &H1Space, opts: TensorOptions) -> TensorOperator<T> {
    TensorOperator::<T>::new(mesh, space, &opts).unwrap()
}

fn apply<T: Real>(a: &TensorOperator<T>, x: &[f64]) -> Vec<f64> {
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let mut y = vec![T::zero(); xt.len()];
    a.try_apply(&xt, &mut y).unwrap();
    y.iter().map(|v| v.as_f64()).collect()
}

/// The reference action: for every element, values and gradients of all basis functions
/// at every point of the full tensor rule from `LagrangeElement::tabulate`, physical
/// gradients through `QuadGeometry::jinv`, weights `QuadGeometry::wdetj`, and the
/// straightforward loops `y_b += Σ_q w|J| (∇φ_b · ∇u + α φ_b u)` (`O(n q)` per element, no
/// sum factorisation).
fn reference_apply(
    mesh: &Mesh,
    space: &H1Space,
    kind: TensorKind,
    q: usize,
    x: &[f64],
) -> Vec<f64> {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let rule = match kind {
        TensorKind::CollocatedDiffusion { .. } => QuadratureRule::gauss_lobatto(ct, q).unwrap(),
        _ => QuadratureRule::gauss(ct, q).unwrap(),
    };
    let geo = QuadGeometry::compute(mesh, &rule).unwrap();
    let tab = space.element().tabulate(&rule.points).unwrap();
    let (nb, nq) = (tab.num_basis, tab.num_points);
    let r = space.restriction();
    let nc = r.ncomp();
    let (grad, alpha) = match kind {
        TensorKind::Mass => (false, 1.0),
        TensorKind::Diffusion { alpha } | TensorKind::CollocatedDiffusion { alpha } => {
            (true, alpha)
        }
    };
    let mut y = vec![0.0; x.len()];
    let mut ue = vec![0.0; nc * nb];
    let mut ye = vec![0.0; nc * nb];
    for e in 0..mesh.num_cells() {
        r.gather_elem(e, x, &mut ue);
        ye.iter_mut().for_each(|v| *v = 0.0);
        for c in 0..nc {
            let u = &ue[c * nb..(c + 1) * nb];
            for iq in 0..nq {
                let p = e * nq + iq;
                let wdet = geo.wdetj[p];
                let jinv = &geo.jinv[p * d * d..(p + 1) * d * d];
                let phi = &tab.values[iq * nb..(iq + 1) * nb];
                let dphi = &tab.grads[iq * nb * d..(iq + 1) * nb * d];
                let uval: f64 = (0..nb).map(|b| phi[b] * u[b]).sum();
                let mut gref = [0.0; 3];
                for b in 0..nb {
                    for k in 0..d {
                        gref[k] += dphi[b * d + k] * u[b];
                    }
                }
                // physical gradient g_i = Σ_k ∂ξ_k/∂x_i gref_k, then back to the reference
                // frame for the test functions: f_k = Σ_i ∂ξ_k/∂x_i g_i w|J|
                let mut fref = [0.0; 3];
                for i in 0..d {
                    let gi: f64 = (0..d).map(|k| jinv[k * d + i] * gref[k]).sum();
                    for k in 0..d {
                        fref[k] += jinv[k * d + i] * gi * wdet;
                    }
                }
                let m = alpha * wdet * uval;
                let out = &mut ye[c * nb..(c + 1) * nb];
                for b in 0..nb {
                    let mut v = m * phi[b];
                    if grad {
                        for k in 0..d {
                            v += dphi[b * d + k] * fref[k];
                        }
                    }
                    out[b] += v;
                }
            }
        }
        r.scatter_add_elem(e, &ye, &mut y);
    }
    y
}

fn kinds(alpha: f64) -> [TensorKind; 3] {
    [
        TensorKind::Mass,
        TensorKind::Diffusion { alpha },
        TensorKind::CollocatedDiffusion { alpha },
    ]
}

#[test]
fn sum_factorised_operators_match_the_tabulated_reference() {
    let mut cases: Vec<(CellType, usize, usize)> = Vec::new();
    for p in (1..=8).chain([10]) {
        cases.push((CellType::Quadrilateral, p, 3));
        cases.push((CellType::Hexahedron, p, if p <= 4 { 3 } else { 2 }));
    }
    // the highest order the elements support, through the dynamic kernel
    cases.push((CellType::Quadrilateral, 15, 2));
    for (ct, p, n) in cases {
        let m = mesh(ct, n, 7 + p as u64);
        let space = H1Space::new(&m, p, 1).unwrap();
        let x = random(space.num_dofs(), p as u64);
        for kind in kinds(ALPHA)
            .into_iter()
            .chain([TensorKind::Diffusion { alpha: 0.0 }])
        {
            let a = op::<f64>(&m, &space, TensorOptions::new(kind));
            let q = a.basis().q;
            let want = reference_apply(&m, &space, kind, q, &x);
            let got = apply(&a, &x);
            let err = rel_diff(&got, &want);
            assert!(err < 1e-12, "{ct} p={p} {kind:?}: relative error {err:e}");
        }
    }
}

#[test]
fn non_default_points_use_the_dynamic_kernel() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let m = mesh(ct, 2, 5);
        let p = 3;
        let space = H1Space::new(&m, p, 1).unwrap();
        let x = random(space.num_dofs(), 9);
        for q in [p + 1, p + 4] {
            for kind in [TensorKind::Mass, TensorKind::Diffusion { alpha: ALPHA }] {
                let opts = TensorOptions {
                    q_points: Some(q),
                    ..TensorOptions::new(kind)
                };
                let a = op::<f64>(&m, &space, opts);
                let err = rel_diff(&apply(&a, &x), &reference_apply(&m, &space, kind, q, &x));
                assert!(err < 1e-12, "{ct} q={q} {kind:?}: {err:e}");
            }
        }
    }
}

#[test]
fn variants_agree_geometry_accumulation_and_instruction_set() {
    for (ct, p) in [
        (CellType::Quadrilateral, 4),
        (CellType::Hexahedron, 3),
        (CellType::Hexahedron, 9),
    ] {
        let m = mesh(ct, 3, 11);
        let space = H1Space::new(&m, p, 1).unwrap();
        let x = random(space.num_dofs(), 4);
        for kind in kinds(ALPHA) {
            let base = apply(&op::<f64>(&m, &space, TensorOptions::new(kind)), &x);
            for (geometry, factor_layout) in GEOMETRIES {
                for accumulation in [Accumulation::ByNode, Accumulation::Colored] {
                    for simd in [SimdLevel::Baseline, SimdLevel::detect()] {
                        for block_len in [1, 40] {
                            let opts = TensorOptions {
                                geometry,
                                factor_layout,
                                accumulation,
                                simd: Some(simd),
                                block_len: Some(block_len),
                                ..TensorOptions::new(kind)
                            };
                            let a = op::<f64>(&m, &space, opts);
                            assert_eq!(a.simd(), simd);
                            let err = rel_diff(&apply(&a, &x), &base);
                            assert!(
                                err < 1e-13,
                                "{ct} p={p} {kind:?} {geometry:?} {factor_layout:?} {accumulation:?} {simd:?}: {err:e}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn vector_fields_apply_the_scalar_operator_per_component() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let m = mesh(ct, 3, 2);
        let scalar = H1Space::new(&m, 3, 1).unwrap();
        for nc in [ct.dim(), 2] {
            let vector = scalar.with_ncomp(nc).unwrap();
            let x = random(vector.num_dofs(), 21);
            for kind in kinds(ALPHA) {
                for accumulation in [Accumulation::ByNode, Accumulation::Colored] {
                    let opts = TensorOptions {
                        accumulation,
                        ..TensorOptions::new(kind)
                    };
                    let av = op::<f64>(&m, &vector, opts);
                    let a1 = op::<f64>(&m, &scalar, opts);
                    let y = apply(&av, &x);
                    for c in 0..nc {
                        let xc: Vec<f64> = x.iter().skip(c).step_by(nc).copied().collect();
                        let yc: Vec<f64> = y.iter().skip(c).step_by(nc).copied().collect();
                        let err = rel_diff(&yc, &apply(&a1, &xc));
                        assert!(err < 1e-14, "{ct} ncomp={nc} comp {c} {kind:?}: {err:e}");
                    }
                    let diag = av.diagonal().unwrap();
                    let d1 = a1.diagonal().unwrap();
                    assert!((0..diag.len()).all(|i| diag[i] == d1[i / nc]));
                }
            }
        }
    }
}

#[test]
fn operators_are_symmetric() {
    for (ct, p) in [(CellType::Quadrilateral, 5), (CellType::Hexahedron, 4)] {
        let m = mesh(ct, 3, 13);
        let space = H1Space::new(&m, p, 1).unwrap();
        let u = random(space.num_dofs(), 1);
        let v = random(space.num_dofs(), 2);
        for kind in kinds(ALPHA) {
            let a = op::<f64>(&m, &space, TensorOptions::new(kind));
            let (au, av) = (apply(&a, &u), apply(&a, &v));
            let (l, r) = (dot(&au, &v), dot(&u, &av));
            assert!(
                (l - r).abs() < 1e-12 * l.abs().max(1.0),
                "{ct} {kind:?}: {l} vs {r}"
            );
            // positive (semi-)definite
            assert!(dot(&au, &u) > 0.0);
        }
    }
}

#[test]
fn mass_of_one_is_the_volume_and_diffusion_annihilates_constants() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let m = mesh(ct, 4, 17);
        for p in [1, 3, 6] {
            let space = H1Space::new(&m, p, 1).unwrap();
            let one = vec![1.0; space.num_dofs()];
            let mass = op::<f64>(&m, &space, TensorOptions::new(TensorKind::Mass));
            let vol = dot(&one, &apply(&mass, &one));
            assert!((vol - 1.0).abs() < 1e-13, "{ct} p={p}: volume {vol}");
            for kind in [
                TensorKind::Diffusion { alpha: 0.0 },
                TensorKind::CollocatedDiffusion { alpha: 0.0 },
            ] {
                let a = op::<f64>(&m, &space, TensorOptions::new(kind));
                let a1 = apply(&a, &one);
                assert!(
                    max_abs(&a1) < 1e-12,
                    "{ct} p={p} {kind:?}: |A 1| = {}",
                    max_abs(&a1)
                );
                // with α the constant sees α times the (collocated) mass
                let screened = match kind {
                    TensorKind::Diffusion { .. } => TensorKind::Diffusion { alpha: 2.5 },
                    _ => TensorKind::CollocatedDiffusion { alpha: 2.5 },
                };
                let s = op::<f64>(&m, &space, TensorOptions::new(screened));
                let e = dot(&one, &apply(&s, &one));
                // det J of a trilinear map has degree 2 per direction: 2-point GLL (p = 1,
                // collocated) does not integrate it exactly in 3-D, 3 points and more do
                let exact = p >= 2 || ct == CellType::Quadrilateral || !screened.is_collocated();
                if exact {
                    assert!((e - 2.5).abs() < 1e-12, "{ct} p={p} {screened:?}: {e}");
                } else {
                    assert!((e - 2.5).abs() < 1e-2, "{ct} p={p} {screened:?}: {e}");
                }
            }
        }
    }
}

#[test]
fn collocated_diffusion_approximates_gauss_diffusion_for_smooth_fields() {
    let m = mesh(CellType::Hexahedron, 4, 23);
    let space = H1Space::new(&m, 4, 1).unwrap();
    let u =
        space.interpolate(|x, out| out[0] = (1.3 * x[0]).sin() * (0.7 * x[1] + 0.4 * x[2]).cos());
    let gauss = op::<f64>(
        &m,
        &space,
        TensorOptions::new(TensorKind::Diffusion { alpha: ALPHA }),
    );
    let gll = op::<f64>(
        &m,
        &space,
        TensorOptions::new(TensorKind::CollocatedDiffusion { alpha: ALPHA }),
    );
    let eg = dot(&u, &apply(&gauss, &u));
    let el = dot(&u, &apply(&gll, &u));
    let rel = (eg - el).abs() / eg;
    assert!(rel < 1e-4, "energies {eg} vs {el}");
    assert!(
        rel > 1e-12,
        "collocation is not exact on perturbed hexahedra: {rel:e}"
    );
}

#[test]
fn diagonal_matches_the_assembled_operator() {
    for (ct, p) in [
        (CellType::Quadrilateral, 2),
        (CellType::Quadrilateral, 5),
        (CellType::Hexahedron, 2),
        (CellType::Hexahedron, 3),
    ] {
        let m = mesh(ct, 2, 29);
        let space = H1Space::new(&m, p, 1).unwrap();
        let n = space.num_dofs();
        for kind in kinds(ALPHA)
            .into_iter()
            .chain([TensorKind::Diffusion { alpha: 0.0 }])
        {
            for (geometry, factor_layout) in GEOMETRIES {
                let opts = TensorOptions {
                    geometry,
                    factor_layout,
                    ..TensorOptions::new(kind)
                };
                let a = op::<f64>(&m, &space, opts);
                let diag = a.diagonal().unwrap();
                let trait_diag = LinearOperator::diagonal(&a).unwrap();
                assert_eq!(diag, trait_diag);
                let mut e = vec![0.0; n];
                for j in 0..n {
                    e[j] = 1.0;
                    let col = apply(&a, &e);
                    e[j] = 0.0;
                    let err = (col[j] - diag[j]).abs() / col[j].abs();
                    assert!(
                        err < 1e-12,
                        "{ct} p={p} {kind:?} dof {j}: {} vs {}",
                        col[j],
                        diag[j]
                    );
                }
            }
        }
    }
}

#[test]
fn single_precision_agrees_with_double() {
    for (ct, p) in [
        (CellType::Quadrilateral, 3),
        (CellType::Quadrilateral, 7),
        (CellType::Hexahedron, 3),
        (CellType::Hexahedron, 6),
        (CellType::Hexahedron, 10),
    ] {
        let m = mesh(ct, 3, 31);
        let space = H1Space::new(&m, p, 1).unwrap();
        let x = random(space.num_dofs(), 8);
        for kind in kinds(ALPHA) {
            for (geometry, factor_layout) in GEOMETRIES {
                let opts = TensorOptions {
                    geometry,
                    factor_layout,
                    ..TensorOptions::new(kind)
                };
                let y64 = apply(&op::<f64>(&m, &space, opts), &x);
                let y32 = apply(&op::<f32>(&m, &space, opts), &x);
                let num: f64 = y64.iter().zip(&y32).map(|(a, b)| (a - b) * (a - b)).sum();
                let rel = (num / dot(&y64, &y64)).sqrt();
                assert!(
                    rel < 1e-5,
                    "{ct} p={p} {kind:?} {geometry:?} {factor_layout:?}: {rel:e}"
                );
                let d32 = op::<f32>(&m, &space, opts).diagonal().unwrap();
                let d64 = op::<f64>(&m, &space, opts).diagonal().unwrap();
                assert!(d32
                    .iter()
                    .zip(&d64)
                    .all(|(a, b)| (a.as_f64() - b).abs() <= 1e-6 * b.abs()));
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    let tets = generate_box(&BoxSpec::unit(CellType::Tetrahedron, &[1, 1, 1])).unwrap();
    let tspace = H1Space::new(&tets, 1, 1).unwrap();
    let err = TensorOperator::<f64>::new(&tets, &tspace, &TensorOptions::new(TensorKind::Mass));
    assert!(matches!(err, Err(TensorError::NotTensorCell(_))));

    let m = mesh(CellType::Hexahedron, 2, 1);
    let other = mesh(CellType::Hexahedron, 3, 1);
    let space = H1Space::new(&m, 2, 1).unwrap();
    let err = TensorOperator::<f64>::new(&other, &space, &TensorOptions::new(TensorKind::Mass));
    assert!(matches!(err, Err(TensorError::MeshMismatch { .. })));

    let colloc = TensorOptions {
        q_points: Some(5),
        ..TensorOptions::new(TensorKind::CollocatedDiffusion { alpha: 0.0 })
    };
    assert!(matches!(
        TensorOperator::<f64>::new(&m, &space, &colloc),
        Err(TensorError::CollocatedPoints { nodes: 3, q: 5 })
    ));
    let nan = TensorOptions::new(TensorKind::Diffusion { alpha: f64::NAN });
    assert!(matches!(
        TensorOperator::<f64>::new(&m, &space, &nan),
        Err(TensorError::Alpha(_))
    ));
    let zero_q = TensorOptions {
        q_points: Some(0),
        ..TensorOptions::new(TensorKind::Mass)
    };
    assert!(TensorOperator::<f64>::new(&m, &space, &zero_q).is_err());

    // an inverted element is reported with its index
    let mut bad = m.clone();
    let cell = bad.cell(3).to_vec();
    let (a, b) = (cell[0] as usize, cell[1] as usize);
    let (xa, xb) = (bad.vertex(a)[0], bad.vertex(b)[0]);
    bad.coords_mut()[a * 3] = xb;
    bad.coords_mut()[b * 3] = xa;
    let err = TensorOperator::<f64>::new(&bad, &space, &TensorOptions::new(TensorKind::Mass));
    assert!(
        matches!(err, Err(TensorError::InvertedElement { .. })),
        "{err:?}"
    );

    let a = op::<f64>(&m, &space, TensorOptions::new(TensorKind::Mass));
    let mut y = vec![0.0; a.len()];
    assert!(matches!(
        a.try_apply(&[1.0; 3], &mut y),
        Err(TensorError::VectorLength { what: "input", .. })
    ));
}

/// Hand-run throughput measurement (not part of the regular test run):
/// `cargo test --release -p ferrofem-operator --test integration -- --ignored --nocapture tensor::`.
/// Env `FERROFEM_BENCH_DOFS` (default 2e6), `FERROFEM_BENCH_ORDERS` (default "3,7"),
/// `FERROFEM_BENCH_REPEATS` (default 7), `FERROFEM_BENCH_PRECISION` (`f64`, `f32` or
/// both, default `f64`) and `FERROFEM_BENCH_FILTER` (substring of the printed label, like
/// `BP3 f64 Interleaved Colored best`).
#[test]
#[ignore]
fn throughput_by_hand() {
    let env = |k: &str| std::env::var(k).ok();
    let dofs: f64 = env("FERROFEM_BENCH_DOFS")
        .and_then(|s| s.parse().ok())
        .unwrap_or(2e6);
    let orders: Vec<usize> = env("FERROFEM_BENCH_ORDERS")
        .unwrap_or_else(|| "3,7".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let precision = env("FERROFEM_BENCH_PRECISION").unwrap_or_else(|| "f64".into());
    let bench = Bench {
        filter: env("FERROFEM_BENCH_FILTER").unwrap_or_default(),
        repeats: env("FERROFEM_BENCH_REPEATS")
            .and_then(|s| s.parse().ok())
            .unwrap_or(7usize)
            .max(1),
        copy: measure_copy_bandwidth(256 << 20, 0),
    };
    println!(
        "threads {}  copy bandwidth {:.1} GB/s  simd {:?}",
        rayon::current_num_threads(),
        bench.copy,
        SimdLevel::detect()
    );
    for p in orders {
        let n = ((dofs.cbrt() - 1.0) / p as f64).round().max(1.0) as usize;
        let m = mesh(CellType::Hexahedron, n, 1);
        let space = H1Space::new(&m, p, 1).unwrap();
        let x = random(space.num_dofs(), 3);
        if precision.contains("64") {
            bench.run::<f64>(&m, &space, &x);
        }
        if precision.contains("32") {
            bench.run::<f32>(&m, &space, &x);
        }
    }
}

struct Bench {
    filter: String,
    repeats: usize,
    copy: f64,
}

impl Bench {
    fn run<T: Real>(&self, m: &Mesh, space: &H1Space, x64: &[f64]) {
        let x: Vec<T> = x64.iter().map(|&v| T::of(v)).collect();
        let p = space.order();
        for kind in [
            TensorKind::Mass,
            TensorKind::Diffusion { alpha: 0.0 },
            TensorKind::CollocatedDiffusion { alpha: 0.0 },
        ] {
            for (geometry, factor_layout) in GEOMETRIES {
                for accumulation in [Accumulation::Colored, Accumulation::ByNode] {
                    for (name, simd) in
                        [("base", SimdLevel::Baseline), ("best", SimdLevel::detect())]
                    {
                        let label = format!(
                            "{} {} {geometry:?} {factor_layout:?} {accumulation:?} {name}",
                            kind.name(),
                            T::NAME
                        );
                        if !label.contains(self.filter.as_str()) {
                            continue;
                        }
                        let opts = TensorOptions {
                            geometry,
                            factor_layout,
                            accumulation,
                            simd: Some(simd),
                            ..TensorOptions::new(kind)
                        };
                        let a = op::<T>(m, space, opts);
                        let mut y = vec![T::zero(); x.len()];
                        a.try_apply(&x, &mut y).unwrap();
                        let mut times = Vec::new();
                        let mut cpu = Vec::new();
                        for _ in 0..self.repeats {
                            let c0 = process_cpu_seconds();
                            let t = std::time::Instant::now();
                            a.try_apply(&x, &mut y).unwrap();
                            times.push(t.elapsed().as_secs_f64());
                            cpu.push(process_cpu_seconds() - c0);
                        }
                        times.sort_by(f64::total_cmp);
                        cpu.sort_by(f64::total_cmp);
                        let (t, tmin, tcpu) =
                            (times[self.repeats / 2], times[0], cpu[self.repeats / 2]);
                        let model = a.model();
                        let colors = a.coloring().map_or(String::new(), |c| {
                            format!(
                                " [{} colours of {}-element blocks]",
                                c.colors.len(),
                                c.block_len
                            )
                        });
                        println!(
                            "{:5} {} p={p} dofs={:8} {:8?} {:12?} {:8?} {name:4}: {:7.2} ms (min {:7.2}, cpu {:7.2})  {:6.1} MDoF/s  {:6.2} GB/s ({:4.0}% of copy)  {:6.2} GFLOP/s{colors}",
                            kind.name(),
                            T::NAME,
                            x.len(),
                            geometry,
                            factor_layout,
                            accumulation,
                            t * 1e3,
                            tmin * 1e3,
                            tcpu * 1e3,
                            x.len() as f64 / t / 1e6,
                            model.gbytes_per_s(t),
                            100.0 * model.roofline_fraction(t, self.copy),
                            model.gflops_per_s(t),
                        );
                    }
                }
            }
        }
    }
}

/// CPU time of all threads of this process so far (Linux `schedstat`, nanosecond
/// resolution; 0 elsewhere), to time kernels on a machine shared with other work.
fn process_cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|v| v.parse::<f64>().ok())
        })
        .sum::<f64>()
        * 1e-9
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    let m = mesh(CellType::Hexahedron, 6, 37);
    let space = H1Space::new(&m, 3, 2).unwrap();
    let x = random(space.num_dofs(), 12);
    for accumulation in [Accumulation::Colored, Accumulation::ByNode] {
        let opts = TensorOptions {
            accumulation,
            block_len: Some(16),
            ..TensorOptions::new(TensorKind::Diffusion { alpha: ALPHA })
        };
        let a = op::<f64>(&m, &space, opts);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| apply(&a, &x))
        };
        let one = run(1);
        assert_eq!(one, run(3), "{accumulation:?}");
        assert_eq!(one, run(4), "{accumulation:?}");
    }
}
