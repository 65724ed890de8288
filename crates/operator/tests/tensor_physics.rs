//! The tensor-product operator with pointwise physics (variable-coefficient mass and
//! diffusion, isotropic elasticity, a physics of one's own) against a reference built
//! from the full tabulation of the element: no sum factorisation, physical gradients
//! through the geometry crate, the pointwise law written out directly.

use ferrofem_base::random::Lcg;
use ferrofem_base::{CellType, Real};
use ferrofem_fe::QuadratureRule;
use ferrofem_geometry::{GeometrySource, QuadGeometry};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::{
    Coefficient, Diffusion, Elastic, Form, Lane, Mass, PhysicsOptions, PointBatch, PointGeometry,
    Quadrature, TensorError, TensorKind, TensorOperator, TensorOptions, TensorPhysics,
};
use ferrofem_space::H1Space;
use std::sync::Arc;

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

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let m = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
        / m
}

fn apply<T: Real>(a: &TensorOperator<T>, x: &[f64]) -> Vec<f64> {
    let xt: Vec<T> = x.iter().map(|&v| T::of(v)).collect();
    let mut y = vec![T::zero(); xt.len()];
    a.try_apply(&xt, &mut y).unwrap();
    y.iter().map(|v| v.as_f64()).collect()
}

/// A smooth positive coefficient of the position.
fn kappa(x: &[f64; 3]) -> f64 {
    1.5 + (2.0 * x[0]).sin() * 0.5 + x[1] * x[1] + 0.3 * x[2]
}
fn lame(x: &[f64; 3]) -> (f64, f64) {
    (
        2.0 + x[0] - 0.5 * x[1],
        1.0 + 0.25 * (3.0 * x[1]).cos() + 0.1 * x[2],
    )
}

/// The pointwise law of the reference: `(f0[c], f1[c][k])` from the point `x`, the values
/// `u[c]` and the physical gradients `h[c][k]`.
type Law = dyn Fn(&[f64; 3], &[f64], &[[f64; 3]; 3], &mut [f64], &mut [[f64; 3]; 3]);

/// `y_bc = Σ_q w|J| (f0_c φ_b + Σ_k f1_ck ∂φ_b/∂x_k)` on the rule (`gll`: GLL points).
fn reference(mesh: &Mesh, space: &H1Space, q: usize, gll: bool, law: &Law, x: &[f64]) -> Vec<f64> {
    let ct = mesh.cell_type();
    let d = ct.dim();
    let rule = if gll {
        QuadratureRule::gauss_lobatto(ct, q).unwrap()
    } else {
        QuadratureRule::gauss(ct, q).unwrap()
    };
    let geo = QuadGeometry::compute(mesh, &rule).unwrap();
    let tab = space.element().tabulate(&rule.points).unwrap();
    let (nb, nq) = (tab.num_basis, tab.num_points);
    let r = space.restriction();
    let nc = r.ncomp();
    let mut y = vec![0.0; x.len()];
    let mut ue = vec![0.0; nc * nb];
    let mut ye = vec![0.0; nc * nb];
    for e in 0..mesh.num_cells() {
        r.gather_elem(e, x, &mut ue);
        ye.fill(0.0);
        for iq in 0..nq {
            let p = e * nq + iq;
            let wdet = geo.wdetj[p];
            let jinv = &geo.jinv[p * d * d..(p + 1) * d * d];
            let mut xp = [0.0; 3];
            xp[..d].copy_from_slice(&geo.x[p * d..(p + 1) * d]);
            let phi = &tab.values[iq * nb..(iq + 1) * nb];
            let dphi = &tab.grads[iq * nb * d..(iq + 1) * nb * d];
            // physical gradients of the basis: ∂φ_b/∂x_i = Σ_k ∂φ_b/∂ξ_k ∂ξ_k/∂x_i
            let gphys = |b: usize, i: usize| -> f64 {
                (0..d).map(|k| dphi[b * d + k] * jinv[k * d + i]).sum()
            };
            let mut uval = [0.0; 3];
            let mut h = [[0.0; 3]; 3];
            for c in 0..nc {
                let u = &ue[c * nb..(c + 1) * nb];
                uval[c] = (0..nb).map(|b| phi[b] * u[b]).sum();
                for i in 0..d {
                    h[c][i] = (0..nb).map(|b| gphys(b, i) * u[b]).sum();
                }
            }
            let mut f0 = [0.0; 3];
            let mut f1 = [[0.0; 3]; 3];
            law(&xp, &uval[..nc], &h, &mut f0[..nc], &mut f1);
            for c in 0..nc {
                for b in 0..nb {
                    let mut v = f0[c] * phi[b];
                    for i in 0..d {
                        v += f1[c][i] * gphys(b, i);
                    }
                    ye[c * nb + b] += wdet * v;
                }
            }
        }
        r.scatter_add_elem(e, &ye, &mut y);
    }
    y
}

fn diffusion_law(alpha: f64) -> Box<Law> {
    Box::new(move |x, u, h, f0, f1| {
        let k = kappa(x);
        for c in 0..u.len() {
            f0[c] = alpha * u[c];
            for i in 0..3 {
                f1[c][i] = k * h[c][i];
            }
        }
    })
}

fn mass_law() -> Box<Law> {
    Box::new(|x, u, _h, f0, _f1| {
        for c in 0..u.len() {
            f0[c] = kappa(x) * u[c];
        }
    })
}

fn elastic_law(d: usize) -> Box<Law> {
    Box::new(move |x, _u, h, _f0, f1| {
        let (lambda, mu) = lame(x);
        let tr: f64 = (0..d).map(|c| h[c][c]).sum();
        for c in 0..d {
            for k in 0..d {
                f1[c][k] = mu * (h[c][k] + h[k][c]) + if c == k { lambda * tr } else { 0.0 };
            }
        }
    })
}

fn field_kappa() -> Coefficient {
    Coefficient::field(|p: &PointGeometry| kappa(&p.x))
}

fn elastic(d: usize) -> Elastic {
    Elastic {
        dim: d,
        lambda: Coefficient::field(|p: &PointGeometry| lame(&p.x).0),
        mu: Coefficient::field(|p: &PointGeometry| lame(&p.x).1),
    }
}

/// A physics under test: name, components, how to build it, its reference law.
type Case = (&'static str, usize, Box<dyn Fn() -> Form<f64>>, Box<Law>);

/// The physics under test.
fn cases(d: usize) -> Vec<Case> {
    vec![
        (
            "mass",
            1,
            Box::new(|| {
                Form::Mass(Mass {
                    ncomp: 1,
                    rho: field_kappa(),
                })
            }),
            mass_law(),
        ),
        (
            "diffusion",
            1,
            Box::new(|| {
                Form::Diffusion(Diffusion {
                    ncomp: 1,
                    kappa: field_kappa(),
                    alpha: 0.0,
                })
            }),
            diffusion_law(0.0),
        ),
        (
            "screened diffusion, 2 components",
            2,
            Box::new(|| {
                Form::Diffusion(Diffusion {
                    ncomp: 2,
                    kappa: field_kappa(),
                    alpha: 0.7,
                })
            }),
            diffusion_law(0.7),
        ),
        (
            "elastic",
            d,
            Box::new(move || Form::Elastic(elastic(d))),
            elastic_law(d),
        ),
    ]
}

#[test]
fn physics_match_the_tabulated_reference() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        let m = mesh(ct, if d == 2 { 3 } else { 2 }, 5);
        let orders: &[usize] = if d == 2 {
            &[1, 2, 4, 7, 10]
        } else {
            &[1, 3, 5]
        };
        for &p in orders {
            for (name, nc, form, law) in cases(d) {
                let space = H1Space::new(&m, p, nc).unwrap();
                let x = random(space.num_dofs(), p as u64 + 7);
                for (quad, q, gll) in [
                    (Quadrature::Gauss(p + 2), p + 2, false),
                    (Quadrature::Collocated, p + 1, true),
                ] {
                    let op = TensorOperator::<f64>::with_physics(
                        &m,
                        &space,
                        form(),
                        &PhysicsOptions::new(quad),
                    )
                    .unwrap();
                    let got = apply(&op, &x);
                    let want = reference(&m, &space, q, gll, law.as_ref(), &x);
                    let err = rel_diff(&got, &want);
                    assert!(err < 1e-12, "{ct} p={p} {name} {quad:?}: {err:e}");
                }
            }
        }
    }
}

#[test]
fn single_precision_agrees_and_variants_agree() {
    use ferrofem_operator::tensor::{Accumulation, FactorLayout, SimdLevel};
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        let m = mesh(ct, 3, 9);
        let space = H1Space::new(&m, 4, d).unwrap();
        let x = random(space.num_dofs(), 3);
        let opts = PhysicsOptions::new(Quadrature::Collocated);
        let a64 = TensorOperator::<f64>::with_physics(&m, &space, elastic(d), &opts).unwrap();
        let want = apply(&a64, &x);
        let a32 = TensorOperator::<f32>::with_physics(&m, &space, elastic(d), &opts).unwrap();
        let err = rel_diff(&apply(&a32, &x), &want);
        assert!(err < 2e-5, "{ct} f32: {err:e}");
        for layout in [FactorLayout::ElementMajor, FactorLayout::Interleaved] {
            for acc in [Accumulation::ByNode, Accumulation::Colored] {
                for simd in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                    let o = PhysicsOptions {
                        factor_layout: layout,
                        accumulation: acc,
                        simd: Some(simd),
                        block_len: Some(8),
                        ..opts
                    };
                    let a =
                        TensorOperator::<f64>::with_physics(&m, &space, elastic(d), &o).unwrap();
                    let err = rel_diff(&apply(&a, &x), &want);
                    assert!(err < 1e-13, "{ct} {layout:?} {acc:?} {simd:?}: {err:e}");
                }
            }
        }
    }
}

/// A physics under test of either precision: name, components, how to build it.
type NamedBuilt = (&'static str, usize, Box<dyn Fn() -> Built>);

/// A built-in physics, for operators of either precision.
enum Built {
    Diffusion(Diffusion),
    Elastic(Elastic),
}

impl Built {
    fn operator<T: Real>(self, m: &Mesh, s: &H1Space, o: &PhysicsOptions) -> TensorOperator<T> {
        match self {
            Built::Diffusion(p) => TensorOperator::with_physics(m, s, p, o),
            Built::Elastic(p) => TensorOperator::with_physics(m, s, p, o),
        }
        .unwrap()
    }
}

/// Affine elements with coefficients constant on each keep one value per element and datum
/// (the compact factors), and apply as the operator with data at every point does; curved
/// (perturbed) elements or a coefficient varying inside an element keep every point's data.
#[test]
fn affine_elements_keep_one_value_per_element() {
    use ferrofem_operator::tensor::{FactorLayout, SimdLevel};
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        let n = if d == 2 { 5 } else { 3 };
        let affine = generate_box(&BoxSpec::unit(ct, &vec![n; d])).unwrap();
        let cells = affine.num_cells();
        let per_elem: Arc<[f64]> = (0..cells).map(|e| 1.0 + (e % 3) as f64).collect();
        let forms: Vec<NamedBuilt> = vec![
            (
                "constant diffusion",
                1,
                Box::new(|| {
                    Built::Diffusion(Diffusion {
                        ncomp: 1,
                        kappa: Coefficient::Constant(2.5),
                        alpha: 0.3,
                    })
                }),
            ),
            (
                "elastic, one material per element",
                d,
                Box::new(move || {
                    Built::Elastic(Elastic {
                        dim: d,
                        lambda: Coefficient::PerElement(per_elem.clone()),
                        mu: Coefficient::Constant(0.8),
                    })
                }),
            ),
        ];
        for p in [2, 4] {
            for (name, nc, form) in &forms {
                let space = H1Space::new(&affine, p, *nc).unwrap();
                let x = random(space.num_dofs(), p as u64);
                let opts = PhysicsOptions::new(Quadrature::Collocated);
                let compact = form().operator::<f64>(&affine, &space, &opts);
                assert!(compact.geometry().compact.is_some(), "{ct} p={p} {name}");
                let full_opts = PhysicsOptions {
                    factor_layout: FactorLayout::ElementMajor,
                    ..opts
                };
                let full = form().operator::<f64>(&affine, &space, &full_opts);
                assert!(full.geometry().compact.is_none());
                let want = apply(&full, &x);
                let err = rel_diff(&apply(&compact, &x), &want);
                assert!(err < 1e-13, "{ct} p={p} {name}: {err:e}");
                for simd in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                    let o = PhysicsOptions {
                        simd: Some(simd),
                        ..opts
                    };
                    let a32 = form().operator::<f32>(&affine, &space, &o);
                    assert!(a32.geometry().compact.is_some());
                    let err = rel_diff(&apply(&a32, &x), &want);
                    assert!(err < 5e-6, "{ct} p={p} {name} f32 {simd:?}: {err:e}");
                }
            }
        }
        // no compact form where the data vary inside an element
        let space = H1Space::new(&affine, 3, 1).unwrap();
        let opts = PhysicsOptions::new(Quadrature::Collocated);
        let varying = Diffusion {
            ncomp: 1,
            kappa: field_kappa(),
            alpha: 0.0,
        };
        let a = TensorOperator::<f64>::with_physics(&affine, &space, varying, &opts).unwrap();
        assert!(a.geometry().compact.is_none(), "{ct}: varying coefficient");
        let curved = mesh(ct, n, 3);
        let space = H1Space::new(&curved, 3, 1).unwrap();
        let a = TensorOperator::<f64>::with_physics(&curved, &space, Mass::unit(1), &opts).unwrap();
        assert!(a.geometry().compact.is_none(), "{ct}: perturbed cells");
    }
}

/// Elasticity written as a physics of one's own (straight loops, one point at a time).
struct OwnElastic {
    dim: usize,
}

impl TensorPhysics<f64> for OwnElastic {
    fn name(&self) -> &str {
        "own elastic"
    }
    fn ncomp(&self) -> usize {
        self.dim
    }
    fn uses_value(&self) -> bool {
        false
    }
    fn uses_gradient(&self) -> bool {
        true
    }
    fn qdata_len(&self, dim: usize) -> usize {
        dim * dim + 2
    }
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]) {
        let d = at.dim;
        let a = at.inverse();
        for r in 0..d {
            for c in 0..d {
                out[r * d + c] = a[r][c];
            }
        }
        let (l, m) = lame(&at.x);
        out[d * d] = l * at.wdetj();
        out[d * d + 1] = m * at.wdetj();
    }
    fn apply(&self, b: &PointBatch<'_, f64>, _v: &mut [Lane<f64>], g: &mut [Lane<f64>]) {
        let (d, nq) = (b.dim, b.num_points);
        for i in 0..nq {
            for l in 0..ferrofem_operator::tensor::LANES {
                let a = |r: usize, c: usize| b.qdata[(r * d + c) * nq + i][l];
                let (wl, wm) = (b.qdata[d * d * nq + i][l], b.qdata[(d * d + 1) * nq + i][l]);
                let mut h = [[0.0; 3]; 3];
                for c in 0..d {
                    for k in 0..d {
                        h[c][k] = (0..d).map(|r| g[(c * d + r) * nq + i][l] * a(r, k)).sum();
                    }
                }
                let tr: f64 = (0..d).map(|c| h[c][c]).sum();
                for c in 0..d {
                    for r in 0..d {
                        let s = |k: usize| {
                            wm * (h[c][k] + h[k][c]) + if c == k { wl * tr } else { 0.0 }
                        };
                        g[(c * d + r) * nq + i][l] = (0..d).map(|k| a(r, k) * s(k)).sum();
                    }
                }
            }
        }
    }
    fn flops_per_point(&self, dim: usize) -> f64 {
        (4 * dim * dim * dim) as f64
    }
}

#[test]
fn a_physics_of_ones_own_equals_the_built_in_one() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        let m = mesh(ct, 3, 2);
        for p in [2, 5] {
            let space = H1Space::new(&m, p, d).unwrap();
            let x = random(space.num_dofs(), 1);
            let opts = PhysicsOptions::new(Quadrature::Collocated);
            let own: Box<dyn TensorPhysics<f64>> = Box::new(OwnElastic { dim: d });
            let a = TensorOperator::<f64>::with_physics(&m, &space, own, &opts).unwrap();
            let b = TensorOperator::<f64>::with_physics(&m, &space, elastic(d), &opts).unwrap();
            let err = rel_diff(&apply(&a, &x), &apply(&b, &x));
            assert!(err < 1e-13, "{ct} p={p}: {err:e}");
            assert_eq!(a.physics().name(), "own elastic");
        }
    }
}

#[test]
fn the_bake_off_problems_are_instances_of_the_physics_path() {
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let m = mesh(ct, 3, 4);
        let space = H1Space::new(&m, 3, 1).unwrap();
        let x = random(space.num_dofs(), 5);
        for (kind, form, quad) in [
            (
                TensorKind::Mass,
                Form::Mass(Mass::unit(1)),
                Quadrature::Gauss(5),
            ),
            (
                TensorKind::Diffusion { alpha: 0.5 },
                Form::Diffusion(Diffusion::unit(1, 0.5)),
                Quadrature::Gauss(5),
            ),
            (
                TensorKind::CollocatedDiffusion { alpha: 0.0 },
                Form::Diffusion(Diffusion::unit(1, 0.0)),
                Quadrature::Collocated,
            ),
        ] {
            let bp = TensorOperator::<f64>::new(&m, &space, &TensorOptions::new(kind)).unwrap();
            let ph =
                TensorOperator::<f64>::with_physics(&m, &space, form, &PhysicsOptions::new(quad))
                    .unwrap();
            assert_eq!(apply(&bp, &x), apply(&ph, &x), "{ct} {kind:?}");
            assert_eq!(bp.kind(), Some(kind));
            assert_eq!(ph.kind(), None);
            assert_eq!(bp.model().bytes, ph.model().bytes);
            assert!((bp.model().flops - ph.model().flops).abs() < 1e-9 * bp.model().flops);
        }
    }
}

#[test]
fn bad_physics_set_ups_are_errors() {
    let m = mesh(CellType::Quadrilateral, 3, 1);
    let scalar = H1Space::new(&m, 2, 1).unwrap();
    let vector = H1Space::new(&m, 2, 2).unwrap();
    let colloc = PhysicsOptions::new(Quadrature::Collocated);
    // components differ
    let err = TensorOperator::<f64>::with_physics(&m, &scalar, elastic(2), &colloc);
    assert!(matches!(err, Err(TensorError::Unsupported(_))));
    // coefficients cannot be recomputed on the fly
    let otf = PhysicsOptions {
        geometry: GeometrySource::OnTheFly,
        ..colloc
    };
    let err = TensorOperator::<f64>::with_physics(&m, &vector, elastic(2), &otf);
    assert!(matches!(err, Err(TensorError::Unsupported(_))));
    // a per-element coefficient that misses elements, a NaN field
    let short = Mass {
        ncomp: 1,
        rho: Coefficient::PerElement(Arc::from(vec![1.0; 4])),
    };
    let err = TensorOperator::<f64>::with_physics(&m, &scalar, short, &colloc);
    assert!(
        matches!(err, Err(TensorError::QuadratureData { elem: 4, .. })),
        "{err:?}"
    );
    let nan = Diffusion {
        ncomp: 1,
        kappa: Coefficient::field(|p: &PointGeometry| if p.x[0] > 0.5 { f64::NAN } else { 1.0 }),
        alpha: 0.0,
    };
    let err = TensorOperator::<f64>::with_physics(&m, &scalar, nan, &colloc);
    assert!(
        matches!(err, Err(TensorError::QuadratureData { .. })),
        "{err:?}"
    );
    // a collocated rule needs p + 1 points
    let opts = TensorOptions {
        q_points: Some(5),
        ..TensorOptions::new(TensorKind::CollocatedDiffusion { alpha: 0.0 })
    };
    let err = TensorOperator::<f64>::new(&m, &scalar, &opts);
    assert!(matches!(err, Err(TensorError::CollocatedPoints { .. })));
    // per-element coefficients are read per element
    let per = Mass {
        ncomp: 1,
        rho: Coefficient::PerElement(Arc::from(
            (0..9).map(|e| 1.0 + e as f64).collect::<Vec<_>>(),
        )),
    };
    let a = TensorOperator::<f64>::with_physics(&m, &scalar, per, &colloc).unwrap();
    let mut lumped = vec![0.0; scalar.num_dofs()];
    a.try_apply(&vec![1.0; scalar.num_dofs()], &mut lumped)
        .unwrap();
    let total: f64 = lumped.iter().sum();
    // Σ_e ρ_e |e| with cells of the perturbed unit square: between min and max ρ
    assert!(total > 1.0 && total < 9.0, "{total}");
    assert!(lumped.iter().all(|&v| v > 0.0));
}

/// The scalar forms of [`lane_numbered_spaces_apply_the_same_operator`].
fn lane_form<T: Real>(name: &str) -> Form<T> {
    match name {
        "BP1" => Mass::unit(1).into(),
        "BP3" => Diffusion::unit(1, 0.5).into(),
        _ => Diffusion {
            ncomp: 1,
            kappa: field_kappa(),
            alpha: 0.0,
        }
        .into(),
    }
}

/// Numbering the nodes for the kernels' batches (`lane_numbering`) turns every node of a
/// box's batches into a run of consecutive nodes moved by vector loads and stores, and
/// changes nothing but the order of the values: the operator on the renumbered space is the
/// operator on the original one, for every shape of kernel, accumulation and instruction set.
#[test]
fn lane_numbered_spaces_apply_the_same_operator() {
    use ferrofem_operator::tensor::{lane_numbering, Accumulation, SimdLevel};
    for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
        let d = ct.dim();
        // 16 elements along x: whole batches per row
        let mut spec = BoxSpec::unit(ct, &vec![if d == 2 { 3 } else { 2 }; d]);
        spec.n[0] = 16;
        let affine = generate_box(&spec).unwrap();
        spec.perturb = 0.2;
        spec.seed = 7;
        let curved = generate_box(&spec).unwrap();
        for (m, what) in [(&affine, "affine"), (&curved, "perturbed")] {
            for p in [1, 2, 4] {
                let space = H1Space::new(m, p, 1).unwrap();
                let new_of = lane_numbering(space.restriction());
                let lane = space.renumbered(&new_of);
                let x = random(space.num_dofs(), p as u64 + 3);
                let mut x_lane = vec![0.0; x.len()];
                for (old, &new) in new_of.iter().enumerate() {
                    x_lane[new as usize] = x[old];
                }
                let back =
                    |y: Vec<f64>| -> Vec<f64> { new_of.iter().map(|&n| y[n as usize]).collect() };
                for (name, quad) in [
                    ("BP1", Quadrature::Gauss(p + 2)),
                    ("BP3", Quadrature::Gauss(p + 2)),
                    ("variable diffusion", Quadrature::Collocated),
                ] {
                    let opts = PhysicsOptions::new(quad);
                    let reference =
                        TensorOperator::with_physics(m, &space, lane_form::<f64>(name), &opts);
                    let want = apply(&reference.unwrap(), &x);
                    for acc in [Accumulation::Colored, Accumulation::ByNode] {
                        let o = PhysicsOptions {
                            accumulation: acc,
                            ..opts
                        };
                        let op = TensorOperator::with_physics(m, &lane, lane_form::<f64>(name), &o)
                            .unwrap();
                        assert_eq!(op.lane_run_fraction(), 1.0, "{ct} {what} p={p} {name}");
                        let err = rel_diff(&back(apply(&op, &x_lane)), &want);
                        assert!(err < 1e-13, "{ct} {what} p={p} {name} {acc:?}: {err:e}");
                    }
                    for simd in [SimdLevel::Baseline, SimdLevel::Avx2Fma, SimdLevel::Avx512] {
                        let o = PhysicsOptions {
                            simd: Some(simd),
                            ..opts
                        };
                        let op = TensorOperator::with_physics(m, &lane, lane_form::<f32>(name), &o)
                            .unwrap();
                        let err = rel_diff(&back(apply(&op, &x_lane)), &want);
                        assert!(err < 5e-6, "{ct} {what} p={p} {name} f32 {simd:?}: {err:e}");
                    }
                }
            }
        }
    }
}
