//! Tests of the pointwise-form operator, its boundary helpers and the error norms, with
//! small physics written here (Laplacian, mass, elasticity, a non-symmetric
//! advection–diffusion–reaction form, nonlinear forms and variable coefficients).

use ferrofem_base::{CellType, LinearOperator, Real};
use ferrofem_fe::QuadratureRule;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::{
    add_boundary_values, errors, lift_residual, lift_rhs, neumann_rhs, Accumulation, AuxField,
    ConstrainedOperator, ElementMatrices, FormError, FormOperator, FormOptions, Quadrature,
};
use ferrofem_physics::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_space::H1Space;
use std::collections::HashMap;
use std::f64::consts::PI;

// ---------------------------------------------------------------------------------------
// test physics

fn cuda_stub<T: Real, P: Physics<T>>(p: &P) -> CudaPhysics {
    CudaPhysics {
        name: p.name().to_string(),
        source: String::new(),
        dim: p.dim(),
        ncomp: p.ncomp(),
        naux: p.naux(),
        reads_x: false,
        linear: p.is_linear(),
        terms: p.terms(),
        jacobian: p.jacobian_terms(),
    }
}

fn t<T: Real>(x: f64) -> T {
    T::of(x)
}

/// `-Δu = s`: `f0 = -s(x)`, `f1 = ∇u`; `s = 2π² Π sin(π x_k)` or a polynomial.
#[derive(Clone)]
struct Laplace {
    dim: usize,
    source: Source,
}

#[derive(Clone, Copy, PartialEq)]
enum Source {
    None,
    /// `s = 1 + x_0 + 2 x_1` (degree 1, so its P1 interpolant is exact)
    Linear,
    /// the source of `u = Π sin(π x_k)`: `d π² u`
    Sine,
}

fn source_value(s: Source, x: &[f64]) -> f64 {
    match s {
        Source::None => 0.0,
        Source::Linear => 1.0 + x[0] + 2.0 * x[1],
        Source::Sine => {
            x.len() as f64 * PI * PI * x.iter().map(|&c| (PI * c).sin()).product::<f64>()
        }
    }
}

impl<T: Real> Physics<T> for Laplace {
    fn name(&self) -> &str {
        "laplace"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: self.source != Source::None,
            f1: true,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: false,
            g1: false,
            g2: false,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        let x: Vec<f64> = p.x.iter().map(|v| v.as_f64()).collect();
        f0[0] = t(-source_value(self.source, &x));
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        f1.copy_from_slice(p.du);
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        let d = self.dim;
        for k in 0..d {
            for l in 0..d {
                g3[k * d + l] = if k == l { T::one() } else { T::zero() };
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// Mass: `f0 = u` for `ncomp` components.
struct Mass {
    dim: usize,
    ncomp: usize,
}

impl<T: Real> Physics<T> for Mass {
    fn name(&self) -> &str {
        "mass"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.ncomp
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: true,
            f1: false,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: false,
            g2: false,
            g3: false,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        f0.copy_from_slice(p.u);
    }
    fn f1(&self, _p: &Point<'_, T>, _f1: &mut [T]) {}
    fn g0(&self, _p: &Point<'_, T>, g0: &mut [T]) {
        let n = self.ncomp;
        for i in 0..n {
            for j in 0..n {
                g0[i * n + j] = if i == j { T::one() } else { T::zero() };
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// Linear elasticity: `f1 = λ tr(ε) I + 2 μ ε`, `ncomp = dim`.
struct Elastic {
    dim: usize,
    lambda: f64,
    mu: f64,
}

impl<T: Real> Physics<T> for Elastic {
    fn name(&self) -> &str {
        "elastic"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.dim
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: false,
            f1: true,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: false,
            g1: false,
            g2: false,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        true
    }
    fn f0(&self, _p: &Point<'_, T>, _f0: &mut [T]) {}
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let d = self.dim;
        let div: T = (0..d).map(|k| p.du[k * d + k]).sum();
        for c in 0..d {
            for k in 0..d {
                let mut v = t::<T>(self.mu) * (p.du[c * d + k] + p.du[k * d + c]);
                if c == k {
                    v += t::<T>(self.lambda) * div;
                }
                f1[c * d + k] = v;
            }
        }
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        let d = self.dim;
        let delta = |a: usize, b: usize| if a == b { 1.0 } else { 0.0 };
        for ci in 0..d {
            for cj in 0..d {
                for k in 0..d {
                    for l in 0..d {
                        let v = self.lambda * delta(ci, k) * delta(cj, l)
                            + self.mu * (delta(ci, cj) * delta(k, l) + delta(ci, l) * delta(cj, k));
                        g3[((ci * d + cj) * d + k) * d + l] = t(v);
                    }
                }
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// Non-symmetric linear form with all four blocks, `x`-dependent:
/// `f0 = b(x)·∇u + c(x) u`, `f1 = ∇u + β u`.
struct AdvDiff {
    dim: usize,
}

impl AdvDiff {
    fn b(x: &[f64], k: usize) -> f64 {
        1.0 + x[k] + 0.5 * k as f64
    }
    fn c(x: &[f64]) -> f64 {
        2.0 + x[0] * x[1]
    }
    const BETA: [f64; 3] = [0.3, -0.7, 0.2];
}

impl<T: Real> Physics<T> for AdvDiff {
    fn name(&self) -> &str {
        "adv-diff"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: true,
            g2: true,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        false
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        let x: Vec<f64> = p.x.iter().map(|v| v.as_f64()).collect();
        let mut v = t::<T>(Self::c(&x)) * p.u[0];
        for k in 0..self.dim {
            v += t::<T>(Self::b(&x, k)) * p.du[k];
        }
        f0[0] = v;
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        for k in 0..self.dim {
            f1[k] = p.du[k] + t::<T>(Self::BETA[k]) * p.u[0];
        }
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        let x: Vec<f64> = p.x.iter().map(|v| v.as_f64()).collect();
        g0[0] = t(Self::c(&x));
    }
    fn g1(&self, p: &Point<'_, T>, g1: &mut [T]) {
        let x: Vec<f64> = p.x.iter().map(|v| v.as_f64()).collect();
        for k in 0..self.dim {
            g1[k] = t(Self::b(&x, k));
        }
    }
    fn g2(&self, _p: &Point<'_, T>, g2: &mut [T]) {
        for k in 0..self.dim {
            g2[k] = t(Self::BETA[k]);
        }
    }
    fn g3(&self, _p: &Point<'_, T>, g3: &mut [T]) {
        let d = self.dim;
        for k in 0..d {
            for l in 0..d {
                g3[k * d + l] = if k == l { T::one() } else { T::zero() };
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// `f1 = (1 + u²) ∇u` (scalar, the brief's nonlinear diffusion) plus `f0 = u³ - 1`.
struct NonlinearDiffusion {
    dim: usize,
}

impl<T: Real> Physics<T> for NonlinearDiffusion {
    fn name(&self) -> &str {
        "nonlinear-diffusion"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: false,
            g2: true,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        false
    }
    fn is_symmetric(&self) -> bool {
        false
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        f0[0] = p.u[0] * p.u[0] * p.u[0] - T::one();
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let k = T::one() + p.u[0] * p.u[0];
        for (f, &g) in f1.iter_mut().zip(p.du) {
            *f = k * g;
        }
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        g0[0] = t::<T>(3.0) * p.u[0] * p.u[0];
    }
    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        for (g, &du) in g2.iter_mut().zip(p.du) {
            *g = t::<T>(2.0) * p.u[0] * du;
        }
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let d = self.dim;
        let k = T::one() + p.u[0] * p.u[0];
        for a in 0..d {
            for b in 0..d {
                g3[a * d + b] = if a == b { k } else { T::zero() };
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// A nonlinear vector form with every block present and state-dependent (`s = |u|²`):
/// `f0_c = u_c s + u_0 Σ_k ∂_k u_c`, `f1_{c,k} = (1 + s) ∂_k u_c + β_k u_c²`.
struct NonlinearVector {
    dim: usize,
    ncomp: usize,
}

impl NonlinearVector {
    const BETA: [f64; 3] = [0.5, -0.25, 0.75];
}

impl<T: Real> Physics<T> for NonlinearVector {
    fn name(&self) -> &str {
        "nonlinear-vector"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.ncomp
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: true,
            g2: true,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        false
    }
    fn is_symmetric(&self) -> bool {
        false
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        let s: T = p.u.iter().map(|&v| v * v).sum();
        for c in 0..nc {
            let div: T = (0..d).map(|k| p.du[c * d + k]).sum();
            f0[c] = p.u[c] * s + p.u[0] * div;
        }
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        let s: T = p.u.iter().map(|&v| v * v).sum();
        for c in 0..nc {
            for k in 0..d {
                f1[c * d + k] =
                    (T::one() + s) * p.du[c * d + k] + t::<T>(Self::BETA[k]) * p.u[c] * p.u[c];
            }
        }
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        let s: T = p.u.iter().map(|&v| v * v).sum();
        for ci in 0..nc {
            let div: T = (0..d).map(|k| p.du[ci * d + k]).sum();
            for cj in 0..nc {
                let mut v = t::<T>(2.0) * p.u[ci] * p.u[cj];
                if ci == cj {
                    v += s;
                }
                if cj == 0 {
                    v += div;
                }
                g0[ci * nc + cj] = v;
            }
        }
    }
    fn g1(&self, p: &Point<'_, T>, g1: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        for ci in 0..nc {
            for cj in 0..nc {
                for l in 0..d {
                    g1[(ci * nc + cj) * d + l] = if ci == cj { p.u[0] } else { T::zero() };
                }
            }
        }
    }
    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        for ci in 0..nc {
            for cj in 0..nc {
                for k in 0..d {
                    let mut v = t::<T>(2.0) * p.u[cj] * p.du[ci * d + k];
                    if ci == cj {
                        v += t::<T>(2.0 * Self::BETA[k]) * p.u[ci];
                    }
                    g2[(ci * nc + cj) * d + k] = v;
                }
            }
        }
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let (d, nc) = (self.dim, self.ncomp);
        let s: T = p.u.iter().map(|&v| v * v).sum();
        for ci in 0..nc {
            for cj in 0..nc {
                for k in 0..d {
                    for l in 0..d {
                        g3[((ci * nc + cj) * d + k) * d + l] = if ci == cj && k == l {
                            T::one() + s
                        } else {
                            T::zero()
                        };
                    }
                }
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

/// Variable-coefficient diffusion with a drift along the coefficient's gradient:
/// `f1 = a ∇u`, `f0 = ∇a·∇u + a u`. With `Coef::Aux` the coefficient comes from the
/// auxiliary field; with `Coef::Analytic` from `a(x) = 1 + x_0 + 2 x_1` directly.
struct Coefficient {
    dim: usize,
    aux: bool,
}

fn coef(x: &[f64]) -> (f64, [f64; 3]) {
    (1.0 + x[0] + 2.0 * x[1], [1.0, 2.0, 0.0])
}

impl Coefficient {
    fn a_da<T: Real>(&self, p: &Point<'_, T>) -> (T, [T; 3]) {
        if self.aux {
            let mut g = [T::zero(); 3];
            g[..self.dim].copy_from_slice(p.da);
            (p.a[0], g)
        } else {
            let x: Vec<f64> = p.x.iter().map(|v| v.as_f64()).collect();
            let (a, g) = coef(&x);
            (t(a), [t(g[0]), t(g[1]), t(g[2])])
        }
    }
}

impl<T: Real> Physics<T> for Coefficient {
    fn name(&self) -> &str {
        "coefficient"
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        1
    }
    fn naux(&self) -> usize {
        self.aux as usize
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms { f0: true, f1: true }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: true,
            g1: true,
            g2: false,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        true
    }
    fn is_symmetric(&self) -> bool {
        false
    }
    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        let (a, da) = self.a_da(p);
        let drift: T = (0..self.dim).map(|k| da[k] * p.du[k]).sum();
        f0[0] = drift + a * p.u[0];
    }
    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let (a, _) = self.a_da(p);
        for k in 0..self.dim {
            f1[k] = a * p.du[k];
        }
    }
    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        g0[0] = self.a_da(p).0;
    }
    fn g1(&self, p: &Point<'_, T>, g1: &mut [T]) {
        let (_, da) = self.a_da(p);
        g1.copy_from_slice(&da[..self.dim]);
    }
    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let (a, _) = self.a_da(p);
        let d = self.dim;
        for k in 0..d {
            for l in 0..d {
                g3[k * d + l] = if k == l { a } else { T::zero() };
            }
        }
    }
    fn cuda(&self) -> CudaPhysics {
        cuda_stub::<T, _>(self)
    }
}

// ---------------------------------------------------------------------------------------
// helpers

/// The tests' generator: `vec(n)` draws `n` numbers in `[-1, 1)`.
struct Lcg(ferrofem_base::random::Lcg);

impl Lcg {
    fn new(seed: u64) -> Lcg {
        Lcg(ferrofem_base::random::Lcg::new(
            seed ^ 0x2545_F491_4F6C_DD1D,
        ))
    }
    fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.0.symmetric()).collect()
    }
}

fn box_mesh(ct: CellType, n: usize, perturb: f64, seed: u64) -> Mesh {
    let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
    spec.max = [1.5, 1.0, 0.75][..ct.dim()].to_vec();
    spec.perturb = perturb;
    spec.seed = seed;
    generate_box(&spec).unwrap()
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).powi(2))
        .sum::<f64>()
        .sqrt();
    let den: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    num / den.max(f64::MIN_POSITIVE)
}

/// The global matrix assembled from the element matrices at `u` (a map, independent of
/// the operator's accumulation code).
fn assemble<P: Physics<f64>>(op: &FormOperator<f64, P>, u: &[f64]) -> HashMap<(usize, usize), f64> {
    let r = op.restriction();
    let (nb, nc) = (r.elem_size(), r.ncomp());
    let n = nb * nc;
    let mut a = HashMap::new();
    let mut ke = vec![0.0; n * n];
    let mut ue = vec![0.0; n];
    for e in 0..r.num_elem() {
        r.gather_elem(e, u, &mut ue);
        op.element_matrix(e, Some(&ue), &mut ke);
        let dof = |loc: usize| r.elem(e)[loc % nb] as usize * nc + loc / nb;
        for i in 0..n {
            for j in 0..n {
                *a.entry((dof(i), dof(j))).or_insert(0.0) += ke[i * n + j];
            }
        }
    }
    a
}

fn matvec(a: &HashMap<(usize, usize), f64>, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for (&(i, j), &v) in a {
        y[i] += v * x[j];
    }
    y
}

fn cells_per_side(ct: CellType, p: usize) -> usize {
    match (ct.dim(), p) {
        (2, _) => 3,
        (_, 1) => 3,
        _ => 2,
    }
}

/// Checks `jacobian_apply` against the assembled element matrices, and `diagonal` against
/// their diagonal, at a random state.
fn check_against_assembly<P: Physics<f64>>(mesh: &Mesh, space: &H1Space, physics: P, seed: u64) {
    let name = physics.name().to_string();
    let op = FormOperator::<f64, P>::new(mesh, space, physics).unwrap();
    let mut rng = Lcg::new(seed);
    let n = op.num_dofs();
    let u: Vec<f64> = rng.vec(n).iter().map(|v| 0.5 * v).collect();
    let v = rng.vec(n);
    let a = assemble(&op, &u);
    let want = matvec(&a, &v);
    let mut got = vec![0.0; n];
    op.jacobian_apply(&u, &v, &mut got);
    let ct = mesh.cell_type();
    let p = space.order();
    let err = rel_diff(&got, &want);
    assert!(err < 1e-12, "{name} {ct} p={p}: rel {err:e}");
    let diag: Vec<f64> = (0..n)
        .map(|i| a.get(&(i, i)).copied().unwrap_or(0.0))
        .collect();
    let err = rel_diff(&op.diagonal(&u), &diag);
    assert!(err < 1e-12, "{name} {ct} p={p}: diagonal rel {err:e}");
    if op.is_symmetric() {
        for (&(i, j), &v) in &a {
            let w = a[&(j, i)];
            assert!(
                (v - w).abs() <= 1e-12 * (1.0 + v.abs()),
                "{name}: asymmetric"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// tests

#[test]
fn jacobian_action_matches_assembled_element_matrices() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        for p in 1..=3 {
            let mesh = box_mesh(ct, cells_per_side(ct, p), 0.2, 7 + s as u64);
            let scalar = H1Space::new(&mesh, p, 1).unwrap();
            let vector = scalar.with_ncomp(d).unwrap();
            let seed = (10 * s + p) as u64;
            check_against_assembly(
                &mesh,
                &scalar,
                Laplace {
                    dim: d,
                    source: Source::Linear,
                },
                seed,
            );
            check_against_assembly(&mesh, &scalar, AdvDiff { dim: d }, seed);
            check_against_assembly(&mesh, &vector, Mass { dim: d, ncomp: d }, seed);
            check_against_assembly(
                &mesh,
                &vector,
                Elastic {
                    dim: d,
                    lambda: 1.7,
                    mu: 0.6,
                },
                seed,
            );
            check_against_assembly(&mesh, &scalar, NonlinearDiffusion { dim: d }, seed);
            check_against_assembly(&mesh, &vector, NonlinearVector { dim: d, ncomp: d }, seed);
        }
    }
}

#[test]
fn jacobian_matches_finite_differences_of_the_residual() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        for p in 1..=2 {
            let mesh = box_mesh(ct, 2, 0.2, 30 + s as u64);
            let scalar = H1Space::new(&mesh, p, 1).unwrap();
            let vector = scalar.with_ncomp(d).unwrap();
            fd_check(
                &mesh,
                &scalar,
                NonlinearDiffusion { dim: d },
                100 + s as u64,
            );
            fd_check(
                &mesh,
                &vector,
                NonlinearVector { dim: d, ncomp: d },
                200 + s as u64,
            );
            let two = scalar.with_ncomp(2).unwrap();
            fd_check(
                &mesh,
                &two,
                NonlinearVector { dim: d, ncomp: 2 },
                300 + s as u64,
            );
        }
    }
}

fn fd_check<P: Physics<f64>>(mesh: &Mesh, space: &H1Space, physics: P, seed: u64) {
    let name = physics.name().to_string();
    let op = FormOperator::<f64, P>::new(mesh, space, physics).unwrap();
    let n = op.num_dofs();
    let mut rng = Lcg::new(seed);
    let u = rng.vec(n);
    let v = rng.vec(n);
    let h = 1e-5;
    let shifted = |s: f64| -> Vec<f64> {
        let w: Vec<f64> = u.iter().zip(&v).map(|(a, b)| a + s * b).collect();
        let mut r = vec![0.0; n];
        op.residual(&w, &mut r);
        r
    };
    let (rp, rm) = (shifted(h), shifted(-h));
    let fd: Vec<f64> = rp
        .iter()
        .zip(&rm)
        .map(|(a, b)| (a - b) / (2.0 * h))
        .collect();
    let mut jv = vec![0.0; n];
    op.jacobian_apply(&u, &v, &mut jv);
    let err = rel_diff(&jv, &fd);
    assert!(err < 1e-7, "{name} {}: FD rel {err:e}", mesh.cell_type());
    // the state matters: the Jacobian at another state differs
    let mut jv0 = vec![0.0; n];
    op.jacobian_apply(&vec![0.0; n], &v, &mut jv0);
    assert!(rel_diff(&jv0, &jv) > 1e-3);
}

#[test]
fn linear_residual_is_stiffness_times_u_minus_the_forcing() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        for p in 1..=2 {
            let mesh = box_mesh(ct, 2, 0.2, 40 + s as u64);
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let lap = FormOperator::<f64, _>::new(
                &mesh,
                &space,
                Laplace {
                    dim: d,
                    source: Source::Linear,
                },
            )
            .unwrap();
            let mass =
                FormOperator::<f64, _>::new(&mesh, &space, Mass { dim: d, ncomp: 1 }).unwrap();
            let n = space.num_dofs();
            let u = Lcg::new(50 + s as u64).vec(n);
            let mut r = vec![0.0; n];
            lap.residual(&u, &mut r);
            // K u from the assembled stiffness; F = M s_I, s linear so its interpolant is exact
            let ku = matvec(&assemble(&lap, &u), &u);
            let s_i = space.interpolate(|x, o| o[0] = source_value(Source::Linear, x));
            let f = matvec(&assemble(&mass, &u), &s_i);
            let want: Vec<f64> = ku.iter().zip(&f).map(|(a, b)| a - b).collect();
            let err = rel_diff(&r, &want);
            assert!(err < 1e-12, "{ct} p={p}: {err:e}");
            // the Jacobian of a linear form is independent of the state (u may be empty)
            let v = Lcg::new(60).vec(n);
            let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
            lap.jacobian_apply(&[], &v, &mut a);
            lap.jacobian_apply(&u, &v, &mut b);
            assert_eq!(a, b);
            // and the residual is affine: r(u) - r(0) = J u
            let mut r0 = vec![0.0; n];
            lap.residual(&vec![0.0; n], &mut r0);
            lap.jacobian_apply(&[], &u, &mut a);
            let diff: Vec<f64> = r.iter().zip(&r0).map(|(x, y)| x - y).collect();
            assert!(rel_diff(&diff, &a) < 1e-12);
        }
    }
}

#[test]
fn accumulation_strategies_agree() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        let n = if d == 2 { 24 } else { 6 };
        let mesh = box_mesh(ct, n, 0.25, 70 + s as u64);
        let space = H1Space::new(&mesh, 2, d).unwrap();
        let mut op =
            FormOperator::<f64, _>::new(&mesh, &space, NonlinearVector { dim: d, ncomp: d })
                .unwrap();
        let nd = op.num_dofs();
        let mut rng = Lcg::new(80 + s as u64);
        let (u, v) = (rng.vec(nd), rng.vec(nd));
        let mut results = Vec::new();
        for acc in Accumulation::ALL {
            op.set_accumulation(&mesh, acc);
            assert_eq!(op.accumulation(), acc);
            let mut r = vec![0.0; nd];
            op.residual(&u, &mut r);
            let mut jv = vec![0.0; nd];
            op.jacobian_apply(&u, &v, &mut jv);
            let diag = op.diagonal(&u);
            // repeated calls (reused buffers) give identical results
            let mut r2 = vec![1.0; nd];
            op.residual(&u, &mut r2);
            assert_eq!(r, r2, "{ct} {}", acc.name());
            results.push((acc, r, jv, diag));
        }
        assert!(op.num_colors().unwrap() > 1);
        let (_, r0, j0, d0) = &results[0];
        for (acc, r, j, dg) in &results[1..] {
            for (what, a, b) in [
                ("residual", r, r0),
                ("jacobian", j, j0),
                ("diagonal", dg, d0),
            ] {
                let err = rel_diff(a, b);
                assert!(err < 1e-13, "{ct} {} {what}: {err:e}", acc.name());
            }
        }
    }
}

#[test]
fn f32_residual_is_close_to_f64() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        let mesh = box_mesh(ct, 3, 0.2, 90 + s as u64);
        let space = H1Space::new(&mesh, 2, d).unwrap();
        let phys = || NonlinearVector { dim: d, ncomp: d };
        let op64 = FormOperator::<f64, _>::new(&mesh, &space, phys()).unwrap();
        let op32 = FormOperator::<f32, _>::new(&mesh, &space, phys()).unwrap();
        let n = op64.num_dofs();
        let mut rng = Lcg::new(5);
        let u = rng.vec(n);
        let v = rng.vec(n);
        let u32v: Vec<f32> = u.iter().map(|&x| x as f32).collect();
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        let (mut r64, mut r32) = (vec![0.0; n], vec![0.0f32; n]);
        op64.residual(&u, &mut r64);
        op32.residual(&u32v, &mut r32);
        let r32: Vec<f64> = r32.iter().map(|&x| x as f64).collect();
        let err = rel_diff(&r32, &r64);
        assert!(err < 1e-5, "{ct}: residual f32 vs f64 {err:e}");
        let (mut j64, mut j32) = (vec![0.0; n], vec![0.0f32; n]);
        op64.jacobian_apply(&u, &v, &mut j64);
        op32.jacobian_apply(&u32v, &v32, &mut j32);
        let j32: Vec<f64> = j32.iter().map(|&x| x as f64).collect();
        let err = rel_diff(&j32, &j64);
        assert!(err < 1e-5, "{ct}: jacobian f32 vs f64 {err:e}");
        // and f32 is genuinely single precision (not silently computed in f64)
        assert!(err > 1e-12);
    }
}

#[test]
fn auxiliary_fields_match_the_analytic_coefficient() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        let mesh = box_mesh(ct, 3, 0.2, 110 + s as u64);
        let space = H1Space::new(&mesh, 2, 1).unwrap();
        let n = space.num_dofs();
        let mut rng = Lcg::new(120 + s as u64);
        let (u, v) = (rng.vec(n), rng.vec(n));
        let analytic =
            FormOperator::<f64, _>::new(&mesh, &space, Coefficient { dim: d, aux: false }).unwrap();
        // the coefficient is linear: its P1 interpolant (on simplices; Q1 on tensor cells)
        // is exact, and so are its gradients
        let p1 = H1Space::new(&mesh, 1, 1).unwrap();
        let a1 = p1.interpolate(|x, o| o[0] = coef(x).0);
        let options = FormOptions {
            aux: AuxField::Nodal {
                space: &p1,
                values: &a1,
            },
            ..Default::default()
        };
        let nodal = FormOperator::<f64, _>::with_options(
            &mesh,
            &space,
            Coefficient { dim: d, aux: true },
            options,
        )
        .unwrap();
        let (mut ra, mut rn) = (vec![0.0; n], vec![0.0; n]);
        analytic.residual(&u, &mut ra);
        nodal.residual(&u, &mut rn);
        assert!(rel_diff(&rn, &ra) < 1e-12, "{ct}");
        analytic.jacobian_apply(&[], &v, &mut ra);
        nodal.jacobian_apply(&[], &v, &mut rn);
        assert!(rel_diff(&rn, &ra) < 1e-12, "{ct}");
        check_against_assembly_with(&nodal, 130 + s as u64);

        // cellwise: a constant per cell with zero gradient, compared with the analytic
        // form on a single-value coefficient a = 2.5 (∇a = 0) by scaling
        let cells = vec![2.5; mesh.num_cells()];
        let cellwise = FormOperator::<f64, _>::with_options(
            &mesh,
            &space,
            Coefficient { dim: d, aux: true },
            FormOptions {
                aux: AuxField::Cellwise {
                    ncomp: 1,
                    values: &cells,
                },
                ..Default::default()
            },
        )
        .unwrap();
        // f = 2.5 (∇u·∇φ + u φ): 2.5 × (Laplace + Mass)
        let lap = FormOperator::<f64, _>::new(
            &mesh,
            &space,
            Laplace {
                dim: d,
                source: Source::None,
            },
        )
        .unwrap();
        let mass = FormOperator::<f64, _>::new(&mesh, &space, Mass { dim: d, ncomp: 1 }).unwrap();
        let (mut rl, mut rm, mut rc) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        lap.residual(&u, &mut rl);
        mass.residual(&u, &mut rm);
        cellwise.residual(&u, &mut rc);
        let want: Vec<f64> = rl.iter().zip(&rm).map(|(a, b)| 2.5 * (a + b)).collect();
        assert!(rel_diff(&rc, &want) < 1e-12, "{ct}");
    }
}

fn check_against_assembly_with<P: Physics<f64>>(op: &FormOperator<f64, P>, seed: u64) {
    let n = op.num_dofs();
    let v = Lcg::new(seed).vec(n);
    let a = assemble(op, &vec![0.0; n]);
    let mut got = vec![0.0; n];
    op.jacobian_apply(&[], &v, &mut got);
    assert!(rel_diff(&got, &matvec(&a, &v)) < 1e-12);
}

#[test]
fn linearized_and_constrained_operators() {
    let ct = CellType::Quadrilateral;
    let mesh = box_mesh(ct, 4, 0.2, 140);
    let space = H1Space::new(&mesh, 2, 1).unwrap();
    let op = FormOperator::<f64, _>::new(&mesh, &space, NonlinearDiffusion { dim: 2 }).unwrap();
    let n = op.num_dofs();
    let mut rng = Lcg::new(141);
    let (u, x) = (rng.vec(n), rng.vec(n));
    let lin = op.linearize(&u);
    assert_eq!((lin.nrows(), lin.ncols()), (n, n));
    let (mut y, mut z) = (vec![0.0; n], vec![0.0; n]);
    lin.apply(&x, &mut y);
    op.jacobian_apply(&u, &x, &mut z);
    assert_eq!(y, z);
    assert_eq!(lin.diagonal().unwrap(), op.diagonal(&u));

    let bnd = space.boundary_nodes(&mesh).unwrap();
    let dofs = space.node_dofs(&bnd, None);
    let con = ConstrainedOperator::new(&lin, &dofs).unwrap();
    con.apply(&x, &mut y);
    let mut xf = x.clone();
    for &d in &dofs {
        xf[d as usize] = 0.0;
    }
    lin.apply(&xf, &mut z);
    let mask = con.mask();
    for i in 0..n {
        let want = if mask[i] { x[i] } else { z[i] };
        assert_eq!(y[i], want);
    }
    let dg = con.diagonal().unwrap();
    let d0 = lin.diagonal().unwrap();
    for i in 0..n {
        assert_eq!(dg[i], if mask[i] { 1.0 } else { d0[i] });
    }
    assert!(matches!(
        ConstrainedOperator::new(&lin, &[n as u32]),
        Err(FormError::DofOutOfRange { .. })
    ));
}

#[test]
fn neumann_integrals_give_boundary_measure_and_divergence_theorem() {
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        let mesh = box_mesh(ct, 3, 0.25, 150 + s as u64);
        let lens = [1.5, 1.0, 0.75];
        let volume: f64 = lens[..d].iter().product();
        let perimeter: f64 = if d == 2 {
            2.0 * (lens[0] + lens[1])
        } else {
            2.0 * (lens[0] * lens[1] + lens[1] * lens[2] + lens[0] * lens[2])
        };
        let facets = mesh.boundary_facets();
        for p in 1..=2 {
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let ones = neumann_rhs(&mesh, &space, &facets, |_, _, o| o[0] = 1.0, p).unwrap();
            let total: f64 = ones.iter().sum();
            assert!(
                (total - perimeter).abs() < 1e-12 * perimeter,
                "{ct} p={p}: {total}"
            );
            // ∫ x·n = d |Ω|
            let xn = neumann_rhs(
                &mesh,
                &space,
                &facets,
                |x, n, o| o[0] = x.iter().zip(n).map(|(a, b)| a * b).sum(),
                p + 1,
            )
            .unwrap();
            let total: f64 = xn.iter().sum();
            assert!(
                (total - d as f64 * volume).abs() < 1e-12,
                "{ct} p={p}: {total}"
            );
            // the normals are unit and outward: ∫ n_k over the closed boundary vanishes,
            // ∫ n over the side x = max is its area
            let vec_space = space.with_ncomp(d).unwrap();
            let nn = neumann_rhs(
                &mesh,
                &vec_space,
                &facets,
                |_, n, o| o.copy_from_slice(n),
                p,
            )
            .unwrap();
            for k in 0..d {
                let sum: f64 = nn.iter().skip(k).step_by(d).sum();
                assert!(sum.abs() < 1e-12, "{ct}: ∫n_{k} = {sum}");
            }
        }
        // tagged facets: side xmax (tag 2) has measure Π_{k>0} len_k
        let located = mesh.locate_tagged_facets().unwrap();
        let xmax: Vec<(u32, u8)> = located
            .iter()
            .filter(|f| f.2 == 2)
            .map(|f| (f.0, f.1))
            .collect();
        let space = H1Space::new(&mesh, 1, 1).unwrap();
        let r = neumann_rhs(&mesh, &space, &xmax, |_, n, o| o[0] = n[0], 1).unwrap();
        let area: f64 = lens[1..d].iter().product();
        assert!((r.iter().sum::<f64>() - area).abs() < 1e-12, "{ct}");
        assert!(matches!(
            neumann_rhs(&mesh, &space, &[(0, 9)], |_, _, o| o[0] = 1.0, 1),
            Err(FormError::FacetOutOfRange { .. })
        ));
    }
}

#[test]
fn residual_of_a_linear_field_equals_its_boundary_flux() {
    // ∫ ∇u·∇φ_i = ∮ (∇u·n) φ_i for u linear (reproduced exactly by the mapped spaces),
    // and ∫ σ(u):∇φ_i = ∮ σn·φ_i for elasticity: an independent check of the operator's
    // geometry against the facet integration of `neumann_rhs`, on perturbed meshes
    for (s, ct) in CellType::ALL.into_iter().enumerate() {
        let d = ct.dim();
        let mesh = box_mesh(ct, 3, 0.25, 160 + s as u64);
        let facets = mesh.boundary_facets();
        let grad = [0.7, -1.3, 0.4];
        for p in 1..=3 {
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let u =
                space.interpolate(|x, o| o[0] = 0.5 + (0..d).map(|k| grad[k] * x[k]).sum::<f64>());
            let op = FormOperator::<f64, _>::new(
                &mesh,
                &space,
                Laplace {
                    dim: d,
                    source: Source::None,
                },
            )
            .unwrap();
            let mut r = vec![0.0; u.len()];
            op.residual(&u, &mut r);
            let flux = |_: &[f64], n: &[f64], o: &mut [f64]| {
                o[0] = (0..d).map(|k| grad[k] * n[k]).sum();
            };
            let want = neumann_rhs(&mesh, &space, &facets, flux, p + 2).unwrap();
            let err = rel_diff(&r, &want);
            assert!(err < 1e-12, "{ct} p={p}: Laplace {err:e}");

            // elasticity with u = A x: constant stress σ
            let a = [[0.3, -0.2, 0.5], [0.1, 0.4, -0.6], [-0.25, 0.15, 0.35]];
            let (lambda, mu) = (1.7, 0.6);
            let vs = space.with_ncomp(d).unwrap();
            let uv = vs.interpolate(|x, o| {
                for c in 0..d {
                    o[c] = (0..d).map(|k| a[c][k] * x[k]).sum();
                }
            });
            let el =
                FormOperator::<f64, _>::new(&mesh, &vs, Elastic { dim: d, lambda, mu }).unwrap();
            let mut r = vec![0.0; uv.len()];
            el.residual(&uv, &mut r);
            let div: f64 = (0..d).map(|k| a[k][k]).sum();
            let sigma = |c: usize, k: usize| {
                mu * (a[c][k] + a[k][c]) + if c == k { lambda * div } else { 0.0 }
            };
            let traction = |_: &[f64], n: &[f64], o: &mut [f64]| {
                for c in 0..d {
                    o[c] = (0..d).map(|k| sigma(c, k) * n[k]).sum();
                }
            };
            let want = neumann_rhs(&mesh, &vs, &facets, traction, p + 2).unwrap();
            let err = rel_diff(&r, &want);
            assert!(err < 1e-12, "{ct} p={p}: elasticity {err:e}");
        }
    }
}

/// Conjugate gradients on a symmetric positive definite operator.
fn cg<A: LinearOperator<f64>>(a: &A, b: &[f64], x: &mut [f64], tol: f64) -> usize {
    let n = b.len();
    let mut r = vec![0.0; n];
    a.apply(x, &mut r);
    for i in 0..n {
        r[i] = b[i] - r[i];
    }
    let mut p = r.clone();
    let mut ap = vec![0.0; n];
    let dot = |u: &[f64], v: &[f64]| u.iter().zip(v).map(|(a, b)| a * b).sum::<f64>();
    let mut rr = dot(&r, &r);
    let stop = tol * tol * dot(b, b);
    for it in 0..10 * n {
        if rr <= stop {
            return it;
        }
        a.apply(&p, &mut ap);
        let alpha = rr / dot(&p, &ap);
        for i in 0..n {
            x[i] += alpha * p[i];
            r[i] -= alpha * ap[i];
        }
        let rr_new = dot(&r, &r);
        let beta = rr_new / rr;
        rr = rr_new;
        for i in 0..n {
            p[i] = r[i] + beta * p[i];
        }
    }
    panic!("CG did not converge");
}

#[test]
fn poisson_solve_converges_at_rate_p_plus_one() {
    let exact = |x: &[f64], o: &mut [f64]| {
        o[0] = x.iter().map(|&c| (PI * c).sin()).product::<f64>() + x[0] * x[1];
    };
    let grad = |x: &[f64], o: &mut [f64]| {
        o[0] = PI * (PI * x[0]).cos() * (PI * x[1]).sin() + x[1];
        o[1] = PI * (PI * x[0]).sin() * (PI * x[1]).cos() + x[0];
    };
    for p in 1..=2 {
        let mut errs = Vec::new();
        for n in [8, 16] {
            let mut spec = BoxSpec::unit(CellType::Triangle, &[n, n]);
            spec.perturb = 0.15;
            spec.seed = 3;
            let mesh = generate_box(&spec).unwrap();
            let space = H1Space::new(&mesh, p, 1).unwrap();
            let op = FormOperator::<f64, _>::new(
                &mesh,
                &space,
                Laplace {
                    dim: 2,
                    source: Source::Sine,
                },
            )
            .unwrap();
            let bnd = space.boundary_nodes(&mesh).unwrap();
            let dofs = space.node_dofs(&bnd, None);
            let g = space.interpolate(exact);
            let b = lift_residual(&op, &dofs, &g).unwrap();
            // the generic lift agrees: F = -r(0)
            let nd = op.num_dofs();
            let mut f = vec![0.0; nd];
            op.residual(&vec![0.0; nd], &mut f);
            f.iter_mut().for_each(|v| *v = -*v);
            let lin = op.linearize(&[]);
            let b2 = lift_rhs(&lin, &dofs, &f, &g).unwrap();
            assert!(rel_diff(&b2, &b) < 1e-12);
            let a = ConstrainedOperator::new(lin, &dofs).unwrap();
            let mut u = vec![0.0; nd];
            cg(&a, &b, &mut u, 1e-12);
            // the correction vanishes on the constrained rows (their right-hand side is zero)
            assert!(dofs
                .iter()
                .all(|&d| u[d as usize] == 0.0 && b[d as usize] == 0.0));
            add_boundary_values(&mut u, &dofs, &g).unwrap();
            for &dof in &dofs {
                let (a, b) = (u[dof as usize], g[dof as usize]);
                assert!((a - b).abs() < 1e-10 * (1.0 + b.abs()), "{a} vs {b}");
            }
            errs.push(errors(&mesh, &space, &u, exact, grad, None).unwrap());
        }
        let rate = (errs[0].l2 / errs[1].l2).log2();
        let rate_h1 = (errs[0].h1_semi / errs[1].h1_semi).log2();
        assert!((rate - (p + 1) as f64).abs() < 0.3, "P{p}: L2 rate {rate}");
        assert!((rate_h1 - p as f64).abs() < 0.3, "P{p}: H1 rate {rate_h1}");
        assert!(errs[1].l2_rel < [2e-2, 1e-3][p - 1], "P{p}: {:?}", errs[1]);
        println!(
            "P{p}: L2 rate {rate:.3}, H1 rate {rate_h1:.3}, {:?}",
            errs[1]
        );
    }
}

#[test]
fn quadrature_choice_and_construction_errors() {
    let mesh = box_mesh(CellType::Triangle, 2, 0.0, 1);
    let space = H1Space::new(&mesh, 1, 1).unwrap();
    let lap = || Laplace {
        dim: 2,
        source: Source::None,
    };
    // P1 stiffness is exact with a one-point rule: same Jacobian as the default rule
    let one = FormOperator::<f64, _>::with_options(
        &mesh,
        &space,
        lap(),
        FormOptions {
            quadrature: Quadrature::Degree(0),
            ..Default::default()
        },
    )
    .unwrap();
    let def = FormOperator::<f64, _>::new(&mesh, &space, lap()).unwrap();
    assert_eq!(one.rule().len(), 1);
    assert_eq!(def.rule().degree, 2);
    let v = Lcg::new(1).vec(space.num_dofs());
    let (mut a, mut b) = (vec![0.0; v.len()], vec![0.0; v.len()]);
    one.jacobian_apply(&[], &v, &mut a);
    def.jacobian_apply(&[], &v, &mut b);
    assert!(rel_diff(&a, &b) < 1e-13);

    let err = |r: Result<FormOperator<f64, Laplace>, FormError>| r.err().unwrap();
    let wrong_rule = QuadratureRule::gauss(CellType::Quadrilateral, 2).unwrap();
    assert!(matches!(
        err(FormOperator::with_options(
            &mesh,
            &space,
            lap(),
            FormOptions {
                quadrature: Quadrature::Rule(wrong_rule),
                ..Default::default()
            }
        )),
        FormError::RuleCellType { .. }
    ));
    assert!(matches!(
        err(FormOperator::new(
            &mesh,
            &space,
            Laplace {
                dim: 3,
                source: Source::None
            }
        )),
        FormError::DimensionMismatch { .. }
    ));
    let vec_space = space.with_ncomp(2).unwrap();
    assert!(matches!(
        err(FormOperator::new(&mesh, &vec_space, lap())),
        FormError::ComponentMismatch { .. }
    ));
    let other = box_mesh(CellType::Triangle, 3, 0.0, 1);
    assert!(matches!(
        err(FormOperator::new(&other, &space, lap())),
        FormError::MeshMismatch { .. }
    ));
    let cells = vec![1.0; mesh.num_cells()];
    assert!(matches!(
        err(FormOperator::with_options(
            &mesh,
            &space,
            lap(),
            FormOptions {
                aux: AuxField::Cellwise {
                    ncomp: 1,
                    values: &cells
                },
                ..Default::default()
            }
        )),
        FormError::AuxCount { .. }
    ));
    let four = space.with_ncomp(4).unwrap();
    assert!(matches!(
        FormOperator::<f64, _>::new(&mesh, &four, Mass { dim: 2, ncomp: 4 })
            .err()
            .unwrap(),
        FormError::UnsupportedComponents { .. }
    ));
    assert!(matches!(
        FormOperator::<f64, _>::with_options(
            &mesh,
            &space,
            Coefficient { dim: 2, aux: true },
            FormOptions {
                aux: AuxField::Cellwise {
                    ncomp: 1,
                    values: &cells[1..]
                },
                ..Default::default()
            }
        )
        .err()
        .unwrap(),
        FormError::VectorLength { .. }
    ));
}

/// Timing of the three accumulation strategies (P1 tetrahedra, about 1M cells; Q2
/// hexahedra; `FF_TIMING_ONLY=<cell>` and `FF_TIMING_ACC=<strategy>` narrow it), run by hand:
/// `cargo test --release -p ferrofem-operator --test integration -- --ignored --nocapture form::`.
#[test]
#[ignore]
fn timing_accumulation_strategies() {
    fn time<F: FnMut()>(mut f: F) -> f64 {
        f();
        let mut ts: Vec<f64> = (0..5)
            .map(|_| {
                let t = std::time::Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect();
        ts.sort_by(f64::total_cmp);
        ts[0]
    }
    println!("threads: {}", rayon::current_num_threads());
    let only = std::env::var("FF_TIMING_ONLY").ok();
    for (ct, n, p) in [
        (CellType::Tetrahedron, 55, 1),
        (CellType::Hexahedron, 40, 2),
    ] {
        if only.as_deref().is_some_and(|o| o != ct.name()) {
            continue;
        }
        let t0 = std::time::Instant::now();
        let mesh = box_mesh(ct, n, 0.2, 1);
        let space = H1Space::new(&mesh, p, 1).unwrap();
        let d = ct.dim();
        println!(
            "{ct} P{p}: {} cells, {} dofs (mesh+space {:.2} s)",
            mesh.num_cells(),
            space.num_dofs(),
            t0.elapsed().as_secs_f64()
        );
        let t0 = std::time::Instant::now();
        let mut op = FormOperator::<f64, _>::new(
            &mesh,
            &space,
            Laplace {
                dim: d,
                source: Source::None,
            },
        )
        .unwrap();
        println!("  setup {:.2} s", t0.elapsed().as_secs_f64());
        let nd = op.num_dofs();
        let u = Lcg::new(1).vec(nd);
        let mut r = vec![0.0; nd];
        let mut reference: Option<Vec<f64>> = None;
        let accs: Vec<Accumulation> = match std::env::var("FF_TIMING_ACC").ok() {
            Some(a) => Accumulation::ALL
                .into_iter()
                .filter(|x| x.name() == a)
                .collect(),
            None => Accumulation::ALL.to_vec(),
        };
        for acc in accs {
            let t0 = std::time::Instant::now();
            op.set_accumulation(&mesh, acc);
            let setup = t0.elapsed().as_secs_f64();
            let tr = time(|| op.residual(&u, &mut r));
            let tj = time(|| op.jacobian_apply(&[], &u, &mut r));
            let td = time(|| {
                std::hint::black_box(op.diagonal(&[]));
            });
            println!(
                "  {:16} residual {:.4} s  jacobian {:.4} s  diagonal {:.4} s  (switch {setup:.2} s{})",
                acc.name(),
                tr,
                tj,
                td,
                op.num_colors().map(|c| format!(", {c} colours")).unwrap_or_default()
            );
            op.residual(&u, &mut r);
            if let Some(r0) = &reference {
                assert!(rel_diff(&r, r0) < 1e-13);
            } else {
                reference = Some(r.clone());
            }
        }
    }
}
