//! Cross-checks of every physics: Jacobian blocks against finite differences of the
//! residual terms, symmetry and linearity claims, manufactured forcings against finite
//! differences of the exact solutions, f32 against f64, and the CUDA C half against the
//! Rust half (compiled with g++ on the CPU, and with NVRTC when it is available).

use ferrofem_base::Real;
use ferrofem_expr::{Expr, Symbols};
use ferrofem_physics::{
    varcoef_kappa, varcoef_kappa_cuda, Coef, Elasticity, Manufactured, Mass, Material, ModelKind,
    ModelPhysics, Moduli, NonlinearDiffusion, Physics, Point, Poisson, PoissonVarCoef, Region,
    ScreenedPoisson,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// One physics in both precisions, with the manufactured solution its forcing comes from.
struct Case {
    label: String,
    p64: Box<dyn Physics<f64>>,
    p32: Box<dyn Physics<f32>>,
    mms: Option<Manufactured>,
}

fn case<P>(label: &str, p: P, mms: Option<Manufactured>) -> Case
where
    P: Physics<f64> + Physics<f32> + Clone + 'static,
{
    Case {
        label: label.to_string(),
        p64: Box::new(p.clone()),
        p32: Box::new(p),
        mms,
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for d in [2, 3] {
        let m = Manufactured::poisson(d, 2.5).unwrap();
        v.push(case(
            &format!("poisson-mms-{d}"),
            Poisson::new(d, 2.5, Some(m)).unwrap(),
            Some(m),
        ));
        v.push(case(
            &format!("poisson-{d}"),
            Poisson::new(d, 1.0, None).unwrap(),
            None,
        ));
        let m = Manufactured::poisson_varcoef(d).unwrap();
        v.push(case(
            &format!("varcoef-mms-{d}"),
            PoissonVarCoef::manufactured(d).unwrap(),
            Some(m),
        ));
        v.push(case(
            &format!("varcoef-{d}"),
            PoissonVarCoef::new(d, None).unwrap(),
            None,
        ));
        let m = Manufactured::elasticity(d, 1.7, 0.8).unwrap();
        v.push(case(
            &format!("elasticity-mms-{d}"),
            Elasticity::manufactured(d, 1.7, 0.8).unwrap(),
            Some(m),
        ));
        v.push(case(
            &format!("elasticity-{d}"),
            Elasticity::new(d, 0.3, 1.1, None).unwrap(),
            None,
        ));
        v.push(case(&format!("mass-{d}"), Mass::new(d, 1).unwrap(), None));
        v.push(case(
            &format!("mass-vec-{d}"),
            Mass::new(d, d).unwrap(),
            None,
        ));
        let m = Manufactured::screened_poisson(d, 3.0).unwrap();
        v.push(case(
            &format!("screened-mms-{d}"),
            ScreenedPoisson::manufactured(d, 3.0).unwrap(),
            Some(m),
        ));
        v.push(case(
            &format!("screened-{d}"),
            ScreenedPoisson::new(d, 0.25, None).unwrap(),
            None,
        ));
        let m = Manufactured::nonlinear(d).unwrap();
        v.push(case(
            &format!("nonlinear-mms-{d}"),
            NonlinearDiffusion::manufactured(d).unwrap(),
            Some(m),
        ));
        v.push(case(
            &format!("nonlinear-{d}"),
            NonlinearDiffusion::new(d, None).unwrap(),
            None,
        ));
        v.extend(model_cases(d));
    }
    v
}

/// A coefficient of `x, y[, z]` (and `u` where `with_u`) from its text.
fn coef(text: &str, d: usize, with_u: bool) -> Coef {
    let mut s = Symbols::new();
    for name in ["x", "y", "z"].iter().take(d) {
        s = s.variable(name).unwrap();
    }
    if with_u {
        s = s.variable("u").unwrap();
    }
    Coef::of(Expr::parse(text, &s).unwrap())
}

/// Configured physics (problem files): two regions with expression and constant
/// coefficients, sources, reaction, plane stress, and a conductivity that depends on `u`.
fn model_cases(d: usize) -> Vec<Case> {
    let region = |name: &str, material: Material, source: Vec<Coef>| Region {
        name: name.into(),
        material,
        source,
    };
    let diffusion = ModelPhysics::new(
        d,
        ModelKind::Diffusion,
        vec![
            region(
                "a",
                Material::Diffusion {
                    kappa: coef("1 + x*y + 0.5*sin(3*x)", d, false),
                    reaction: Coef::Const(0.0),
                },
                vec![coef("exp(-x) * cos(y)", d, false)],
            ),
            region(
                "b",
                Material::Diffusion {
                    kappa: Coef::Const(3.5),
                    reaction: coef("0.25 + x^2", d, false),
                },
                vec![Coef::Const(2.0)],
            ),
        ],
    )
    .unwrap();
    let elastic = |plane_stress: bool| {
        ModelPhysics::new(
            d,
            ModelKind::Elasticity { plane_stress },
            vec![
                region(
                    "soft",
                    Material::Elasticity(Moduli::Young {
                        young: coef("2 + x - 0.5*y", d, false),
                        poisson: Coef::Const(0.3),
                    }),
                    (0..d)
                        .map(|c| coef(&format!("{c} + x*y"), d, false))
                        .collect(),
                ),
                region(
                    "hard",
                    Material::Elasticity(Moduli::Lame {
                        lambda: Coef::Const(1.2),
                        mu: coef("0.8 + 0.1*x", d, false),
                    }),
                    Vec::new(),
                ),
            ],
        )
        .unwrap()
    };
    let nonlinear = ModelPhysics::new(
        d,
        ModelKind::NonlinearDiffusion,
        vec![region(
            "only",
            Material::Diffusion {
                kappa: coef("1 + u^2 + 0.5*x*exp(u/2)", d, true),
                reaction: Coef::Const(0.0),
            },
            vec![coef("1 + y", d, false)],
        )],
    )
    .unwrap();
    let mut v = vec![
        case(&format!("model-diffusion-{d}"), diffusion.clone(), None),
        case(
            &format!("model-diffusion-operator-{d}"),
            diffusion.without_source(),
            None,
        ),
        case(&format!("model-elastic-{d}"), elastic(false), None),
        case(&format!("model-nonlinear-{d}"), nonlinear, None),
    ];
    if d == 2 {
        v.push(case(
            &format!("model-elastic-plane-stress-{d}"),
            elastic(true),
            None,
        ));
    }
    v
}

/// A small deterministic generator (xorshift64*), so failures are reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (r >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

/// Owned point data in f64.
#[derive(Clone, Debug)]
struct Sample {
    x: Vec<f64>,
    u: Vec<f64>,
    du: Vec<f64>,
    a: Vec<f64>,
    da: Vec<f64>,
}

impl Sample {
    fn random(p: &dyn Physics<f64>, rng: &mut Rng) -> Sample {
        let (d, nc, na) = (p.dim(), p.ncomp(), p.naux());
        let mut v = |n: usize, lo: f64, hi: f64| (0..n).map(|_| rng.uniform(lo, hi)).collect();
        Sample {
            x: v(d, 0.0, 1.0),
            u: v(nc, -1.0, 1.0),
            du: v(nc * d, -1.0, 1.0),
            // Auxiliary fields are coefficients: keep them positive like κ.
            a: v(na, 0.5, 1.5),
            da: v(na * d, -1.0, 1.0),
        }
    }

    /// The values rounded to f32 (and back), so both precisions see the same inputs.
    fn rounded_to_f32(&self) -> Sample {
        let r = |v: &Vec<f64>| v.iter().map(|&t| t as f32 as f64).collect();
        Sample {
            x: r(&self.x),
            u: r(&self.u),
            du: r(&self.du),
            a: r(&self.a),
            da: r(&self.da),
        }
    }
}

/// All six outputs; `None` for terms the physics declares absent.
#[derive(Clone, Debug)]
struct Outputs {
    blocks: [Option<Vec<f64>>; 6],
}

const BLOCK_NAMES: [&str; 6] = ["f0", "f1", "g0", "g1", "g2", "g3"];

fn sizes(d: usize, nc: usize) -> [usize; 6] {
    [
        nc,
        nc * d,
        nc * nc,
        nc * nc * d,
        nc * nc * d,
        nc * nc * d * d,
    ]
}

fn present<T: Real>(p: &dyn Physics<T>) -> [bool; 6] {
    let (t, j) = (p.terms(), p.jacobian_terms());
    [t.f0, t.f1, j.g0, j.g1, j.g2, j.g3]
}

fn eval<T: Real>(p: &dyn Physics<T>, s: &Sample) -> Outputs {
    let c = |v: &Vec<f64>| v.iter().map(|&t| T::of(t)).collect::<Vec<T>>();
    let (x, u, du, a, da) = (c(&s.x), c(&s.u), c(&s.du), c(&s.a), c(&s.da));
    let pt = Point {
        x: &x,
        u: &u,
        du: &du,
        a: &a,
        da: &da,
    };
    let on = present(p);
    let sz = sizes(p.dim(), p.ncomp());
    let mut blocks: [Option<Vec<f64>>; 6] = Default::default();
    for b in 0..6 {
        if !on[b] {
            continue;
        }
        let mut out = vec![T::of(f64::NAN); sz[b]];
        match b {
            0 => p.f0(&pt, &mut out),
            1 => p.f1(&pt, &mut out),
            2 => p.g0(&pt, &mut out),
            3 => p.g1(&pt, &mut out),
            4 => p.g2(&pt, &mut out),
            _ => p.g3(&pt, &mut out),
        }
        let out: Vec<f64> = out.iter().map(|v| v.as_f64()).collect();
        assert!(
            out.iter().all(|v| v.is_finite()),
            "{}: {} not fully written: {out:?}",
            p.name(),
            BLOCK_NAMES[b]
        );
        blocks[b] = Some(out);
    }
    Outputs { blocks }
}

/// f0 and f1 as dense vectors (zeros for absent terms).
fn residual(p: &dyn Physics<f64>, s: &Sample) -> (Vec<f64>, Vec<f64>) {
    let o = eval(p, s);
    let sz = sizes(p.dim(), p.ncomp());
    let f0 = o.blocks[0].clone().unwrap_or_else(|| vec![0.0; sz[0]]);
    let f1 = o.blocks[1].clone().unwrap_or_else(|| vec![0.0; sz[1]]);
    (f0, f1)
}

fn max_abs(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |m, x| m.max(x.abs()))
}

/// Finite-difference Jacobian blocks `[g0, g1, g2, g3]` by central differences.
fn fd_jacobian(p: &dyn Physics<f64>, s: &Sample, h: f64) -> [Vec<f64>; 4] {
    let (d, nc) = (p.dim(), p.ncomp());
    let sz = sizes(d, nc);
    let mut g = [
        vec![0.0; sz[2]],
        vec![0.0; sz[3]],
        vec![0.0; sz[4]],
        vec![0.0; sz[5]],
    ];
    for cj in 0..nc {
        let (mut sp, mut sm) = (s.clone(), s.clone());
        sp.u[cj] += h;
        sm.u[cj] -= h;
        let ((f0p, f1p), (f0m, f1m)) = (residual(p, &sp), residual(p, &sm));
        for ci in 0..nc {
            g[0][ci * nc + cj] = (f0p[ci] - f0m[ci]) / (2.0 * h);
            for k in 0..d {
                g[2][(ci * nc + cj) * d + k] = (f1p[ci * d + k] - f1m[ci * d + k]) / (2.0 * h);
            }
        }
        for l in 0..d {
            let (mut sp, mut sm) = (s.clone(), s.clone());
            sp.du[cj * d + l] += h;
            sm.du[cj * d + l] -= h;
            let ((f0p, f1p), (f0m, f1m)) = (residual(p, &sp), residual(p, &sm));
            for ci in 0..nc {
                g[1][(ci * nc + cj) * d + l] = (f0p[ci] - f0m[ci]) / (2.0 * h);
                for k in 0..d {
                    g[3][((ci * nc + cj) * d + k) * d + l] =
                        (f1p[ci * d + k] - f1m[ci * d + k]) / (2.0 * h);
                }
            }
        }
    }
    g
}

#[test]
fn jacobian_blocks_match_finite_differences() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for c in cases() {
        let p = c.p64.as_ref();
        for _ in 0..20 {
            let s = Sample::random(p, &mut rng);
            let o = eval(p, &s);
            let fd = fd_jacobian(p, &s, 1e-6);
            for b in 0..4 {
                match &o.blocks[b + 2] {
                    Some(g) => {
                        let scale = 1.0 + max_abs(g);
                        for (i, (gv, fv)) in g.iter().zip(&fd[b]).enumerate() {
                            assert!(
                                (gv - fv).abs() <= 1e-7 * scale,
                                "{}: {}[{i}] = {gv}, finite difference {fv}",
                                c.label,
                                BLOCK_NAMES[b + 2]
                            );
                        }
                    }
                    None => assert!(
                        max_abs(&fd[b]) <= 1e-9,
                        "{}: {} declared absent but the residual depends on it: {:?}",
                        c.label,
                        BLOCK_NAMES[b + 2],
                        fd[b]
                    ),
                }
            }
        }
    }
}

#[test]
fn symmetry_claims_hold() {
    let mut rng = Rng(17);
    for c in cases() {
        let p = c.p64.as_ref();
        let (d, nc) = (p.dim(), p.ncomp());
        let sz = sizes(d, nc);
        let s = Sample::random(p, &mut rng);
        let o = eval(p, &s);
        let get = |b: usize| o.blocks[b].clone().unwrap_or_else(|| vec![0.0; sz[b]]);
        let (g0, g1, g2, g3) = (get(2), get(3), get(4), get(5));
        // The bilinear form ∫ ψ_i g0 φ_j + ψ_i g1 ∂φ_j + ∂ψ_i g2 φ_j + ∂ψ_i g3 ∂φ_j is
        // symmetric iff g0 = g0ᵀ, g1 = g2 (components swapped) and g3[i,j,k,l] = g3[j,i,l,k].
        let mut asym = 0.0f64;
        for ci in 0..nc {
            for cj in 0..nc {
                asym = asym.max((g0[ci * nc + cj] - g0[cj * nc + ci]).abs());
                for k in 0..d {
                    asym =
                        asym.max((g1[(ci * nc + cj) * d + k] - g2[(cj * nc + ci) * d + k]).abs());
                    for l in 0..d {
                        let a = g3[((ci * nc + cj) * d + k) * d + l];
                        let b = g3[((cj * nc + ci) * d + l) * d + k];
                        asym = asym.max((a - b).abs());
                    }
                }
            }
        }
        if p.is_symmetric() {
            assert_eq!(asym, 0.0, "{}: claims symmetry but is not", c.label);
        } else {
            assert!(
                asym > 1e-3,
                "{}: claims asymmetry but is symmetric here",
                c.label
            );
        }
    }
}

#[test]
fn linearity_claims_hold() {
    let mut rng = Rng(4242);
    for c in cases() {
        let p = c.p64.as_ref();
        let (d, nc) = (p.dim(), p.ncomp());
        let s = Sample::random(p, &mut rng);
        let mut t = Sample::random(p, &mut rng);
        t.x = s.x.clone();
        t.a = s.a.clone();
        t.da = s.da.clone();
        let (os, ot) = (eval(p, &s), eval(p, &t));
        let jac_changes = (2..6).any(|b| match (&os.blocks[b], &ot.blocks[b]) {
            (Some(x), Some(y)) => x.iter().zip(y).any(|(a, b)| (a - b).abs() > 1e-12),
            _ => false,
        });
        if !p.is_linear() {
            assert!(
                jac_changes,
                "{}: claims nonlinearity, Jacobian constant",
                c.label
            );
            continue;
        }
        assert!(
            !jac_changes,
            "{}: claims linearity, Jacobian depends on u",
            c.label
        );
        // Affine: residual(t) − residual(s) = J (t − s) exactly (up to rounding).
        let sz = sizes(d, nc);
        let g = |b: usize| os.blocks[b].clone().unwrap_or_else(|| vec![0.0; sz[b]]);
        let (g0, g1, g2, g3) = (g(2), g(3), g(4), g(5));
        let (f0s, f1s) = residual(p, &s);
        let (f0t, f1t) = residual(p, &t);
        let du: Vec<f64> = t.du.iter().zip(&s.du).map(|(a, b)| a - b).collect();
        let uu: Vec<f64> = t.u.iter().zip(&s.u).map(|(a, b)| a - b).collect();
        for ci in 0..nc {
            let mut lin0 = 0.0;
            for cj in 0..nc {
                lin0 += g0[ci * nc + cj] * uu[cj];
                for l in 0..d {
                    lin0 += g1[(ci * nc + cj) * d + l] * du[cj * d + l];
                }
            }
            assert!(
                (f0t[ci] - f0s[ci] - lin0).abs() < 1e-12,
                "{}: f0 not affine",
                c.label
            );
            for k in 0..d {
                let mut lin1 = 0.0;
                for cj in 0..nc {
                    lin1 += g2[(ci * nc + cj) * d + k] * uu[cj];
                    for l in 0..d {
                        lin1 += g3[((ci * nc + cj) * d + k) * d + l] * du[cj * d + l];
                    }
                }
                let diff = f1t[ci * d + k] - f1s[ci * d + k] - lin1;
                assert!(diff.abs() < 1e-12, "{}: f1 not affine ({diff})", c.label);
            }
        }
    }
}

/// The point data of the exact solution at `x` (with `a = κ(x)` where the physics has an
/// auxiliary coefficient).
fn exact_sample(m: &Manufactured, p: &dyn Physics<f64>, x: &[f64]) -> Sample {
    let (d, nc) = (m.dim(), m.ncomp());
    let mut u = vec![0.0; nc];
    let mut du = vec![0.0; nc * d];
    m.exact(x, &mut u);
    m.exact_grad(x, &mut du);
    let a = if p.naux() == 1 {
        vec![m.kappa(x).expect("varcoef has a coefficient")]
    } else {
        vec![]
    };
    Sample {
        x: x.to_vec(),
        u,
        du,
        a,
        da: vec![0.0; p.naux() * d],
    }
}

/// Fourth-order central difference of `f` along coordinate `k` at `x`.
fn d4(f: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], k: usize, h: f64) -> Vec<f64> {
    let at = |t: f64| {
        let mut y = x.to_vec();
        y[k] += t;
        f(&y)
    };
    let (p2, p1, m1, m2) = (at(2.0 * h), at(h), at(-h), at(-2.0 * h));
    (0..p1.len())
        .map(|i| (-p2[i] + 8.0 * p1[i] - 8.0 * m1[i] + m2[i]) / (12.0 * h))
        .collect()
}

#[test]
fn exact_gradients_match_finite_differences() {
    let mut rng = Rng(99);
    for c in cases() {
        let Some(m) = c.mms else { continue };
        let (d, nc) = (m.dim(), m.ncomp());
        for _ in 0..20 {
            let x: Vec<f64> = (0..d).map(|_| rng.uniform(-0.2, 1.2)).collect();
            let mut g = vec![0.0; nc * d];
            m.exact_grad(&x, &mut g);
            let exact = |y: &[f64]| {
                let mut u = vec![0.0; nc];
                m.exact(y, &mut u);
                u
            };
            for k in 0..d {
                let fd = d4(&exact, &x, k, 1e-3);
                for cc in 0..nc {
                    let e = (fd[cc] - g[cc * d + k]).abs();
                    assert!(e < 1e-10, "{}: ∂u{cc}/∂x{k} off by {e}", c.label);
                }
            }
        }
    }
}

#[test]
fn manufactured_forcing_balances_the_divergence_of_the_flux() {
    // The strong form of ∫ φ f0 + ∇φ·f1 = 0 is f0 − ∇·f1 = 0; at the exact solution this
    // must hold pointwise with the physics' own f0 (which contains −f) and f1, the latter
    // differentiated numerically along x through u*(x), ∇u*(x) and κ(x).
    let mut rng = Rng(2024);
    for c in cases() {
        let Some(m) = c.mms else { continue };
        let p = c.p64.as_ref();
        let (d, nc) = (m.dim(), m.ncomp());
        let (mut worst, mut largest) = (0.0f64, 0.0f64);
        for _ in 0..30 {
            let x: Vec<f64> = (0..d).map(|_| rng.uniform(0.0, 1.0)).collect();
            let (f0, _) = residual(p, &exact_sample(&m, p, &x));
            let flux = |y: &[f64]| residual(p, &exact_sample(&m, p, y)).1;
            let mut div = vec![0.0; nc];
            for k in 0..d {
                let dk = d4(&flux, &x, k, 1e-3);
                for cc in 0..nc {
                    div[cc] += dk[cc * d + k];
                }
            }
            let mut f = vec![0.0; nc];
            m.forcing(&x, &mut f);
            for cc in 0..nc {
                let e = (f0[cc] - div[cc]).abs() / (1.0 + f[cc].abs());
                worst = worst.max(e);
            }
            largest = largest.max(max_abs(&f));
        }
        assert!(
            worst < 1e-9,
            "{}: strong residual at u* is {worst}",
            c.label
        );
        assert!(largest > 0.1, "{}: forcing is trivially small", c.label);
    }
}

#[test]
fn manufactured_flux_is_f1_dot_n() {
    let mut rng = Rng(31337);
    for c in cases() {
        let Some(m) = c.mms else { continue };
        let p = c.p64.as_ref();
        let (d, nc) = (m.dim(), m.ncomp());
        for _ in 0..20 {
            let x: Vec<f64> = (0..d).map(|_| rng.uniform(0.0, 1.0)).collect();
            let mut n: Vec<f64> = (0..d).map(|_| rng.uniform(-1.0, 1.0)).collect();
            let len = n.iter().map(|v| v * v).sum::<f64>().sqrt();
            n.iter_mut().for_each(|v| *v /= len);
            let (_, f1) = residual(p, &exact_sample(&m, p, &x));
            let mut flux = vec![0.0; nc];
            m.flux(&x, &n, &mut flux);
            for cc in 0..nc {
                let want: f64 = (0..d).map(|k| f1[cc * d + k] * n[k]).sum();
                assert!(
                    (flux[cc] - want).abs() < 1e-13 * (1.0 + want.abs()),
                    "{}: flux {} vs f1·n {want}",
                    c.label,
                    flux[cc]
                );
            }
        }
    }
}

#[test]
fn varcoef_coefficient_matches_manufactured_kappa() {
    let m = Manufactured::poisson_varcoef(3).unwrap();
    let x = [0.2, 0.7, 0.4];
    assert_eq!(m.kappa(&x), Some(varcoef_kappa(&x)));
    let want = 1.0 + 0.5 * (0.2f64 + 1.4 + 1.2).sin();
    assert!((varcoef_kappa(&x) - want).abs() < 1e-15);
    assert_eq!(Manufactured::nonlinear(2).unwrap().kappa(&x[..2]), None);
}

#[test]
fn f32_agrees_with_f64() {
    let mut rng = Rng(7);
    for c in cases() {
        for _ in 0..20 {
            let s = Sample::random(c.p64.as_ref(), &mut rng).rounded_to_f32();
            let (o64, o32) = (eval(c.p64.as_ref(), &s), eval(c.p32.as_ref(), &s));
            for b in 0..6 {
                match (&o64.blocks[b], &o32.blocks[b]) {
                    (Some(a), Some(z)) => {
                        let scale = 1.0 + max_abs(a);
                        for (x, y) in a.iter().zip(z) {
                            assert!(
                                (x - y).abs() <= 1e-6 * scale,
                                "{}: {} f64 {x} vs f32 {y}",
                                c.label,
                                BLOCK_NAMES[b]
                            );
                        }
                    }
                    (None, None) => {}
                    _ => panic!("{}: precisions disagree on which terms exist", c.label),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// CUDA C against Rust, on the CPU (g++) and through NVRTC.

const SENTINEL: f64 = 12345.0;

fn env_flag(name: &str) -> bool {
    std::env::var(name).is_ok_and(|v| v == "1")
}

/// The extra device functions a case's harness calls (exact solution, gradient, κ).
fn extra_source(c: &Case) -> String {
    let mut s = String::new();
    if let Some(m) = &c.mms {
        s.push_str(&m.exact_cuda());
        s.push_str(&m.exact_grad_cuda());
        if matches!(m, Manufactured::PoissonVarCoef { .. }) {
            s.push_str(&varcoef_kappa_cuda(m.dim()));
        }
    }
    s
}

/// A C++ program holding every case in its own namespace; `prog <case>` reads points from
/// stdin and prints every output of the CUDA C functions.
fn cpu_harness(cases: &[Case]) -> String {
    let mut s = String::from(
        "#include <cmath>\n#include <cstdio>\n#include <cstdlib>\nusing namespace std;\n\
         #define __device__\n#define __forceinline__\n#define __restrict__\n\
         typedef double real;\n\
         static void put(const char* n, const real* v, int len) {\n  printf(\"%s\", n);\n  \
         for (int i = 0; i < len; ++i) printf(\" %.17g\", v[i]);\n  printf(\"\\n\");\n}\n\
         static bool get(real* v, int len) {\n  for (int i = 0; i < len; ++i)\n    \
         if (scanf(\"%lf\", &v[i]) != 1) return false;\n  return true;\n}\n",
    );
    for (i, c) in cases.iter().enumerate() {
        let cp = c.p64.cuda();
        let (d, nc, na) = (cp.dim, cp.ncomp, cp.naux);
        let sz = sizes(d, nc);
        writeln!(s, "namespace case{i} {{\n{}{}", cp.source, extra_source(c)).unwrap();
        writeln!(
            s,
            "static int run() {{\n  int n = 0;\n  if (scanf(\"%d\", &n) != 1) return 1;"
        )
        .unwrap();
        writeln!(s, "  for (int p = 0; p < n; ++p) {{").unwrap();
        writeln!(
            s,
            "    real x[{d}], u[{nc}], du[{}], a[{}], da[{}];",
            nc * d,
            na.max(1),
            (na * d).max(1)
        )
        .unwrap();
        writeln!(
            s,
            "    if (!get(x, {d}) || !get(u, {nc}) || !get(du, {}) || !get(a, {na}) || !get(da, {})) return 2;",
            nc * d,
            na * d
        )
        .unwrap();
        for (b, name) in BLOCK_NAMES.iter().enumerate() {
            writeln!(
                s,
                "    {{ real o[{n}]; for (int i = 0; i < {n}; ++i) o[i] = (real){SENTINEL:e};\n      \
                 ff_{name}(x, u, du, a, da, o); put(\"{name}\", o, {n}); }}",
                n = sz[b]
            )
            .unwrap();
        }
        if let Some(m) = &c.mms {
            writeln!(
                s,
                "    {{ real o[{nc}]; ff_forcing(x, o); put(\"forcing\", o, {nc}); }}\n    \
                 {{ real o[{nc}]; ff_exact(x, o); put(\"exact\", o, {nc}); }}\n    \
                 {{ real o[{ng}]; ff_exact_grad(x, o); put(\"grad\", o, {ng}); }}",
                ng = nc * d
            )
            .unwrap();
            if matches!(m, Manufactured::PoissonVarCoef { .. }) {
                writeln!(s, "    {{ real k = ff_kappa(x); put(\"kappa\", &k, 1); }}").unwrap();
            }
        }
        writeln!(s, "  }}\n  return 0;\n}}\n}}").unwrap();
    }
    s.push_str("int main(int argc, char** argv) {\n  if (argc < 2) return 3;\n  switch (atoi(argv[1])) {\n");
    for i in 0..cases.len() {
        writeln!(s, "  case {i}: return case{i}::run();").unwrap();
    }
    s.push_str("  }\n  return 4;\n}\n");
    s
}

fn compare(label: &str, what: &str, got: &[f64], want: &[f64], rel: f64) {
    assert_eq!(got.len(), want.len(), "{label}: {what} length");
    let scale = max_abs(want).max(1e-300);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= rel * scale,
            "{label}: {what}[{i}]: CUDA C (g++) {g} vs Rust {w}"
        );
    }
}

#[test]
fn cuda_source_agrees_with_rust_on_the_cpu() {
    let gxx = Command::new("g++").arg("--version").output();
    if gxx.is_err() {
        assert!(
            !env_flag("FERROFEM_REQUIRE_GXX"),
            "g++ not found but FERROFEM_REQUIRE_GXX=1"
        );
        eprintln!("skipping cuda_source_agrees_with_rust_on_the_cpu: g++ not found");
        return;
    }
    let cases = cases();
    let dir = std::env::temp_dir().join(format!("ferrofem-physics-gxx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("harness.cpp");
    let exe = dir.join("harness");
    std::fs::write(&src, cpu_harness(&cases)).unwrap();
    let out = Command::new("g++")
        .args(["-O1", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "g++ failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rng = Rng(555);
    for (i, c) in cases.iter().enumerate() {
        let p = c.p64.as_ref();
        let samples: Vec<Sample> = (0..8).map(|_| Sample::random(p, &mut rng)).collect();
        let mut input = format!("{}\n", samples.len());
        for s in &samples {
            for v in [&s.x, &s.u, &s.du, &s.a, &s.da] {
                for t in v.iter() {
                    write!(input, "{t:.17e} ").unwrap();
                }
            }
            input.push('\n');
        }
        let mut child = Command::new(&exe)
            .arg(i.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}: harness exited with {:?}",
            c.label,
            out.status
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let mut lines = text.lines();
        let on = present(p);
        let (d, nc) = (p.dim(), p.ncomp());
        for s in &samples {
            let o = eval(p, s);
            let mut next = |name: &str| -> Vec<f64> {
                let line = lines
                    .next()
                    .unwrap_or_else(|| panic!("{}: output ends", c.label));
                let mut it = line.split_whitespace();
                assert_eq!(it.next(), Some(name), "{}: unexpected line {line}", c.label);
                it.map(|t| t.parse::<f64>().unwrap()).collect()
            };
            for b in 0..6 {
                let got = next(BLOCK_NAMES[b]);
                match &o.blocks[b] {
                    Some(want) => compare(&c.label, BLOCK_NAMES[b], &got, want, 1e-12),
                    None => assert!(
                        got.iter().all(|&v| v == SENTINEL) && !on[b],
                        "{}: absent {} wrote {got:?}",
                        c.label,
                        BLOCK_NAMES[b]
                    ),
                }
            }
            if let Some(m) = &c.mms {
                let (mut f, mut u, mut g) = (vec![0.0; nc], vec![0.0; nc], vec![0.0; nc * d]);
                m.forcing(&s.x, &mut f);
                m.exact(&s.x, &mut u);
                m.exact_grad(&s.x, &mut g);
                compare(&c.label, "forcing", &next("forcing"), &f, 1e-12);
                compare(&c.label, "exact", &next("exact"), &u, 1e-12);
                compare(&c.label, "grad", &next("grad"), &g, 1e-12);
                if matches!(m, Manufactured::PoissonVarCoef { .. }) {
                    compare(
                        &c.label,
                        "kappa",
                        &next("kappa"),
                        &[varcoef_kappa(&s.x)],
                        1e-12,
                    );
                }
            }
        }
        assert!(lines.next().is_none(), "{}: extra output", c.label);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn cuda_source_compiles_with_nvrtc() {
    use ferrofem_cuda::compile::{compile_uncached, nvrtc_available, KernelSpec, Target};
    use ferrofem_cuda::sources::with_prelude;
    if !nvrtc_available() {
        assert!(
            !env_flag("FERROFEM_REQUIRE_NVRTC"),
            "NVRTC not available but FERROFEM_REQUIRE_NVRTC=1"
        );
        eprintln!("skipping cuda_source_compiles_with_nvrtc: NVRTC not available");
        return;
    }
    for c in cases() {
        let cp = c.p64.cuda();
        let (d, nc) = (cp.dim, cp.ncomp);
        let sz = sizes(d, nc);
        let mut body = String::new();
        let mut off = 0;
        for (b, name) in BLOCK_NAMES.iter().enumerate() {
            writeln!(body, "  ff_{name}(x, u, du, a, da, out + {off});").unwrap();
            off += sz[b];
        }
        if let Some(m) = &c.mms {
            writeln!(body, "  ff_forcing(x, out + {off});").unwrap();
            off += nc;
            writeln!(body, "  ff_exact(x, out + {off});").unwrap();
            off += nc;
            writeln!(body, "  ff_exact_grad(x, out + {off});").unwrap();
            off += nc * d;
            if matches!(m, Manufactured::PoissonVarCoef { .. }) {
                writeln!(body, "  out[{off}] = ff_kappa(x);").unwrap();
            }
        }
        let src = format!(
            "{}{}extern \"C\" __global__ void ff_check(const real* x, const real* u, \
             const real* du, const real* a, const real* da, real* out) {{\n{body}}}\n",
            cp.source,
            extra_source(&c)
        );
        for real in ["double", "float"] {
            let spec = KernelSpec::new(format!("{}_{real}", cp.name), with_prelude(&src))
                .define("REAL", real);
            let r = compile_uncached(&spec, Target::Cubin(90));
            match r {
                Ok(k) => {
                    assert!(!k.image.is_empty(), "{}: empty cubin", c.label);
                    assert!(
                        !k.log.contains("warning"),
                        "{} ({real}): NVRTC warns:\n{}",
                        c.label,
                        k.log
                    );
                }
                Err(e) => panic!("{} ({real}): {e}\n{src}", c.label),
            }
        }
    }
}

#[test]
fn manufactured_physics_is_the_matching_physics_with_its_forcing() {
    let mut rng = Rng(8);
    for c in cases() {
        let Some(m) = c.mms else { continue };
        let p = m.physics::<f64>().unwrap();
        assert_eq!(p.name(), c.p64.name());
        assert_eq!(p.name(), m.name());
        assert_eq!((p.dim(), p.ncomp()), (m.dim(), m.ncomp()));
        assert!(p.terms().f0, "{}: the forcing must enter f0", c.label);
        assert_eq!(p.cuda(), c.p64.cuda());
        let s = Sample::random(p.as_ref(), &mut rng);
        let (a, b) = (eval(p.as_ref(), &s), eval(c.p64.as_ref(), &s));
        assert_eq!(a.blocks, b.blocks, "{}", c.label);
    }
    assert!(Manufactured::Poisson { dim: 4, kappa: 1.0 }
        .physics::<f32>()
        .is_err());
}
