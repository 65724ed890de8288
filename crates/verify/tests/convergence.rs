//! Convergence of ferrofem's discretisations against manufactured solutions on perturbed
//! meshes, and consistency checks between its operators.
//!
//! Every study solves `−∇·f1(u, ∇u) = f` with `u = u*` on the whole boundary of the unit
//! box meshed with randomly perturbed cells ([`PERTURB`] grid spacings: simplices off the
//! structured split, quadrilaterals and hexahedra with genuinely bilinear/trilinear maps),
//! and asserts the `L²` rate `p + 1` and the `H¹` rate `p` between the two finest levels
//! within [`RATE_TOL`]. The tables of errors and rates are written to stderr uncaptured, so
//! the CI log documents them.

use ferrofem_assembly::{AssemblyPlan, Strategy};
use ferrofem_base::{CellType, Real};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{AuxField, FormOperator, FormOptions};
use ferrofem_physics::{
    varcoef_kappa, Elasticity, Manufactured, NonlinearDiffusion, Physics, Poisson, PoissonVarCoef,
};
use ferrofem_solver::NewtonOptions;
use ferrofem_space::H1Space;
use ferrofem_verify::{
    exact_errors, jacobian_mismatch, norm, perturbed_box, random_vector, rel_diff, solve_linear,
    solve_linear_matrix_free, solve_newton, solve_poisson_matrix_free, BoundaryData, Level, Study,
    VerifyError, PERTURB,
};
use std::io::Write;

/// Allowed distance of an observed rate from the theoretical one.
const RATE_TOL: f64 = 0.1;
/// Seed of the mesh perturbation.
const SEED: u64 = 7;
/// Problems with more dofs than this are solved matrix-free by Jacobi-PCG (Poisson on
/// quadrilaterals and hexahedra with the sum-factorised operator, elasticity with the
/// form's Jacobian action) instead of by the direct solver.
const MATRIX_FREE_DOFS: usize = 60_000;
/// Relative residual of those CG solves: far below the discretisation errors measured.
const CG_RTOL: f64 = 1e-13;
/// Lamé parameters of the elasticity studies.
const LAMBDA: f64 = 1.5;
const MU: f64 = 1.0;

/// Writes to stderr past the test harness's capture, in one piece.
fn log(s: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(s.as_bytes());
    let _ = e.flush();
}

/// A nodal coefficient field of order `order` interpolating [`varcoef_kappa`].
struct Coefficient {
    space: H1Space,
    values: Vec<f64>,
}

impl Coefficient {
    fn new(mesh: &Mesh, order: usize) -> Result<Coefficient, VerifyError> {
        let space = H1Space::new(mesh, order, 1)?;
        let values = space.interpolate(|x, out| out[0] = varcoef_kappa(x));
        Ok(Coefficient { space, values })
    }
    fn options(&self) -> FormOptions<'_> {
        FormOptions {
            aux: AuxField::Nodal {
                space: &self.space,
                values: &self.values,
            },
            ..FormOptions::default()
        }
    }
}

/// Which manufactured problem a study solves.
#[derive(Clone, Copy, Debug)]
enum Problem {
    Poisson,
    /// With the coefficient interpolated into the Lagrange space of this order.
    VarCoef(usize),
    Elasticity,
    Nonlinear,
}

impl Problem {
    fn manufactured(self, dim: usize) -> Manufactured {
        let m = match self {
            Problem::Poisson => Manufactured::poisson(dim, 1.0),
            Problem::VarCoef(_) => Manufactured::poisson_varcoef(dim),
            Problem::Elasticity => Manufactured::elasticity(dim, LAMBDA, MU),
            Problem::Nonlinear => Manufactured::nonlinear(dim),
        };
        m.expect("manufactured solutions exist in 2-D and 3-D")
    }
    fn name(self) -> String {
        match self {
            Problem::Poisson => "poisson".into(),
            Problem::VarCoef(k) => format!("poisson-varcoef (P{k} coefficient)"),
            Problem::Elasticity => "elasticity".into(),
            Problem::Nonlinear => "nonlinear-diffusion (Newton)".into(),
        }
    }
}

/// Solves `problem` with elements of order `p` on the perturbed `n^d` box and measures the
/// errors.
fn solve_level(problem: Problem, ct: CellType, p: usize, n: usize) -> Result<Level, VerifyError> {
    let d = ct.dim();
    let m = problem.manufactured(d);
    let mesh = perturbed_box(ct, n, PERTURB, SEED)?;
    let space = H1Space::new(&mesh, p, m.ncomp())?;
    let bc = BoundaryData::exact(&mesh, &space, &m)?;
    let u = match problem {
        Problem::Poisson => {
            let op = FormOperator::<f64, _>::new(&mesh, &space, Poisson::manufactured(d, 1.0)?)?;
            if ct.is_tensor() && space.num_dofs() > MATRIX_FREE_DOFS {
                solve_poisson_matrix_free(&mesh, &space, &op, &bc, p + 1, CG_RTOL)?.0
            } else {
                solve_linear(&op, &bc)?
            }
        }
        Problem::VarCoef(k) => {
            let coef = Coefficient::new(&mesh, k)?;
            let op = FormOperator::<f64, _>::with_options(
                &mesh,
                &space,
                PoissonVarCoef::manufactured(d)?,
                coef.options(),
            )?;
            solve_linear(&op, &bc)?
        }
        Problem::Elasticity => {
            let op = FormOperator::<f64, _>::new(
                &mesh,
                &space,
                Elasticity::manufactured(d, LAMBDA, MU)?,
            )?;
            if space.num_dofs() > MATRIX_FREE_DOFS {
                solve_linear_matrix_free(&op, &bc, CG_RTOL)?.0
            } else {
                solve_linear(&op, &bc)?
            }
        }
        Problem::Nonlinear => {
            let op =
                FormOperator::<f64, _>::new(&mesh, &space, NonlinearDiffusion::manufactured(d)?)?;
            let u0 = vec![0.0; space.num_dofs()];
            let opts = NewtonOptions {
                rtol: 1e-12,
                ..NewtonOptions::default()
            };
            solve_newton(&op, &bc, &u0, &opts)?.0
        }
    };
    Ok(Level {
        n,
        dofs: space.num_dofs(),
        errors: exact_errors(&mesh, &space, &u, &m)?,
    })
}

/// Runs a refinement study over `ns` grid sizes, logs its table and checks its final rates.
fn study(problem: Problem, ct: CellType, p: usize, ns: &[usize]) -> Result<Study, String> {
    let t = std::time::Instant::now();
    let levels = ns
        .iter()
        .map(|&n| solve_level(problem, ct, p, n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{} {ct} p={p}: {e}", problem.name()))?;
    let s = Study {
        title: format!(
            "{} on perturbed {ct} mesh, order {p} [{:.1} s]",
            problem.name(),
            t.elapsed().as_secs_f64()
        ),
        levels,
        expected_l2: (p + 1) as f64,
        expected_h1: p as f64,
    };
    log(&s.table());
    Ok(s)
}

/// Runs several studies and fails with all rate violations at once.
fn run_studies(cases: &[(Problem, CellType, usize, &[usize])]) {
    let mut failures = Vec::new();
    for &(problem, ct, p, ns) in cases {
        match study(problem, ct, p, ns).and_then(|s| s.check(RATE_TOL)) {
            Ok(()) => {}
            Err(e) => failures.push(e),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn poisson_on_triangles_converges_optimally_p1_to_p3() {
    use CellType::Triangle as T;
    run_studies(&[
        (Problem::Poisson, T, 1, &[16, 32, 64]),
        (Problem::Poisson, T, 2, &[8, 16, 32]),
        (Problem::Poisson, T, 3, &[4, 8, 16]),
    ]);
}

#[test]
fn poisson_on_tetrahedra_converges_optimally_p1_p2() {
    use CellType::Tetrahedron as T;
    run_studies(&[
        (Problem::Poisson, T, 1, &[8, 16, 32]),
        (Problem::Poisson, T, 2, &[4, 8, 16]),
    ]);
}

#[test]
fn poisson_on_quadrilaterals_converges_optimally_q1_to_q4() {
    use CellType::Quadrilateral as Q;
    run_studies(&[
        (Problem::Poisson, Q, 1, &[16, 32, 64]),
        (Problem::Poisson, Q, 2, &[8, 16, 32]),
        (Problem::Poisson, Q, 3, &[4, 8, 16]),
        (Problem::Poisson, Q, 4, &[4, 8, 16]),
    ]);
}

/// The finest Q3/Q4 levels (up to 274 625 dofs) are solved matrix-free. At high order the
/// observed rates approach `p + 1` and `p` from below (Q4: 4.94 and 3.94 between 8³ and 16³,
/// and the same for other perturbation seeds within ±0.03): the interpolation error of the
/// exact solution shows the same rates, so this is approximation on the perturbed meshes,
/// not the solver — the cells next to the (unperturbed) boundary are less distorted and
/// their share shrinks only like `1/n` under refinement.
#[test]
fn poisson_on_hexahedra_converges_optimally_q1_to_q4() {
    use CellType::Hexahedron as H;
    run_studies(&[
        (Problem::Poisson, H, 1, &[8, 16, 32]),
        (Problem::Poisson, H, 2, &[4, 8, 16]),
        (Problem::Poisson, H, 3, &[4, 8, 16]),
        (Problem::Poisson, H, 4, &[4, 8, 16]),
    ]);
}

#[test]
fn elasticity_2d_converges_optimally() {
    run_studies(&[
        (Problem::Elasticity, CellType::Triangle, 1, &[16, 32, 64]),
        (Problem::Elasticity, CellType::Triangle, 2, &[8, 16, 32]),
        (
            Problem::Elasticity,
            CellType::Quadrilateral,
            1,
            &[16, 32, 64],
        ),
        (
            Problem::Elasticity,
            CellType::Quadrilateral,
            2,
            &[8, 16, 32],
        ),
    ]);
}

#[test]
fn elasticity_3d_converges_optimally() {
    run_studies(&[
        (Problem::Elasticity, CellType::Tetrahedron, 1, &[4, 8, 16]),
        (Problem::Elasticity, CellType::Tetrahedron, 2, &[4, 8, 12]),
        (Problem::Elasticity, CellType::Hexahedron, 1, &[4, 8, 16]),
        (Problem::Elasticity, CellType::Hexahedron, 2, &[4, 8, 16]),
    ]);
}

#[test]
fn poisson_varcoef_with_p1_coefficient_converges_optimally() {
    run_studies(&[
        (Problem::VarCoef(1), CellType::Triangle, 1, &[16, 32, 64]),
        (
            Problem::VarCoef(1),
            CellType::Quadrilateral,
            1,
            &[16, 32, 64],
        ),
        (Problem::VarCoef(1), CellType::Tetrahedron, 1, &[4, 8, 16]),
    ]);
}

#[test]
fn nonlinear_diffusion_converges_optimally() {
    run_studies(&[
        (Problem::Nonlinear, CellType::Triangle, 2, &[8, 16, 32]),
        (Problem::Nonlinear, CellType::Hexahedron, 1, &[4, 8, 16]),
    ]);
}

/// Newton on the nonlinear problem converges quadratically: in the steps where the
/// residual is well above round-off, `r_{k+1} / r_k²` stays bounded while `r_k` falls by
/// orders of magnitude (linear convergence would make it grow like `1 / r_k`), and the
/// observed order `log(r_{k+1}/r_k) / log(r_k/r_{k-1})` approaches 2.
#[test]
fn newton_converges_quadratically() {
    for (ct, p, n) in [(CellType::Triangle, 2, 16), (CellType::Tetrahedron, 1, 8)] {
        let d = ct.dim();
        let m = Manufactured::nonlinear(d).unwrap();
        let mesh = perturbed_box(ct, n, PERTURB, SEED).unwrap();
        let space = H1Space::new(&mesh, p, 1).unwrap();
        let bc = BoundaryData::exact(&mesh, &space, &m).unwrap();
        let op = FormOperator::<f64, _>::new(
            &mesh,
            &space,
            NonlinearDiffusion::manufactured(d).unwrap(),
        )
        .unwrap();
        let u0 = vec![0.0; space.num_dofs()];
        let opts = NewtonOptions {
            rtol: 1e-14,
            atol: 1e-13,
            max_iter: 30,
            ..NewtonOptions::default()
        };
        let (_, stats) = solve_newton(&op, &bc, &u0, &opts).unwrap();
        let r = &stats.residual_history;
        let mut s = format!(
            "Newton, nonlinear diffusion, {ct} p={p} n={n}: {} iterations\n  k     |F(u_k)|  r_k+1/r_k^2  order  step\n",
            stats.iterations
        );
        for k in 0..r.len() {
            let ratio = r
                .get(k + 1)
                .map_or("-".to_string(), |&b| format!("{:.3e}", b / (r[k] * r[k])));
            let order = if k >= 1 && k + 1 < r.len() {
                format!("{:.2}", (r[k + 1] / r[k]).ln() / (r[k] / r[k - 1]).ln())
            } else {
                "-".into()
            };
            let step = stats
                .step_lengths
                .get(k)
                .map_or("-".to_string(), |l| format!("{l:.3}"));
            s += &format!("{k:>3} {:>12.4e} {ratio:>12} {order:>6}  {step}\n", r[k]);
        }
        log(&s);
        assert!(stats.converged, "{s}");
        // the asymptotic steps: full steps whose result is still above round-off
        let floor = 1e-10 * r[0];
        let asym: Vec<usize> = (1..r.len() - 1)
            .filter(|&k| stats.step_lengths[k] == 1.0 && r[k + 1] > floor && r[k] < 0.1 * r[0])
            .collect();
        assert!(!asym.is_empty(), "no asymptotic Newton step\n{s}");
        for &k in &asym {
            let ratio = r[k + 1] / (r[k] * r[k]);
            let order = (r[k + 1] / r[k]).ln() / (r[k] / r[k - 1]).ln();
            assert!(order > 1.7, "step {k}: order {order}\n{s}");
            // bounded: r_{k+1} / r_k^2 no larger than that of the first full step
            assert!(
                ratio.is_finite() && ratio < 10.0 / r[0],
                "step {k}: ratio {ratio}\n{s}"
            );
        }
    }
}

/// One discretisation of each physics for the consistency checks.
struct Setup {
    name: String,
    mesh: Mesh,
    space: H1Space,
    coef: Option<Coefficient>,
    m: Manufactured,
}

impl Setup {
    fn new(problem: Problem, ct: CellType, p: usize, n: usize) -> Setup {
        let m = problem.manufactured(ct.dim());
        let mesh = perturbed_box(ct, n, PERTURB, SEED).unwrap();
        let space = H1Space::new(&mesh, p, m.ncomp()).unwrap();
        let coef = match problem {
            Problem::VarCoef(k) => Some(Coefficient::new(&mesh, k).unwrap()),
            _ => None,
        };
        Setup {
            name: format!("{} {ct} p={p} n={n}", problem.name()),
            mesh,
            space,
            coef,
            m,
        }
    }
    fn options(&self) -> FormOptions<'_> {
        self.coef
            .as_ref()
            .map_or_else(FormOptions::default, |c| c.options())
    }
    /// The operator of this setup's physics in precision `T`, handed to `f`.
    fn with_operator<T: Real, R>(&self, f: impl OpFn<T, R>) -> R {
        let d = self.mesh.dim();
        match self.m {
            Manufactured::Poisson { kappa, .. } => f.call(
                FormOperator::with_options(
                    &self.mesh,
                    &self.space,
                    Poisson::manufactured(d, kappa).unwrap(),
                    self.options(),
                )
                .unwrap(),
            ),
            Manufactured::PoissonVarCoef { .. } => f.call(
                FormOperator::with_options(
                    &self.mesh,
                    &self.space,
                    PoissonVarCoef::manufactured(d).unwrap(),
                    self.options(),
                )
                .unwrap(),
            ),
            Manufactured::Elasticity { lambda, mu, .. } => f.call(
                FormOperator::with_options(
                    &self.mesh,
                    &self.space,
                    Elasticity::manufactured(d, lambda, mu).unwrap(),
                    self.options(),
                )
                .unwrap(),
            ),
            Manufactured::Nonlinear { .. } => f.call(
                FormOperator::with_options(
                    &self.mesh,
                    &self.space,
                    NonlinearDiffusion::manufactured(d).unwrap(),
                    self.options(),
                )
                .unwrap(),
            ),
            Manufactured::ScreenedPoisson { .. } => unreachable!("not used by the suite"),
        }
    }
}

/// A computation generic over the physics of a [`Setup`].
trait OpFn<T: Real, R> {
    fn call<P: Physics<T>>(self, op: FormOperator<T, P>) -> R;
}

fn setups() -> Vec<Setup> {
    vec![
        Setup::new(Problem::Poisson, CellType::Triangle, 2, 6),
        Setup::new(Problem::Poisson, CellType::Hexahedron, 2, 3),
        Setup::new(Problem::VarCoef(1), CellType::Tetrahedron, 2, 3),
        Setup::new(Problem::VarCoef(1), CellType::Quadrilateral, 3, 5),
        Setup::new(Problem::Elasticity, CellType::Quadrilateral, 2, 5),
        Setup::new(Problem::Elasticity, CellType::Tetrahedron, 2, 3),
        Setup::new(Problem::Nonlinear, CellType::Triangle, 3, 5),
        Setup::new(Problem::Nonlinear, CellType::Hexahedron, 2, 3),
    ]
}

/// The matrix-free Jacobian action equals the assembled matrix times a random vector, for
/// every physics (nonlinear ones linearised about a nonzero state); the assembled matrix is
/// symmetric exactly when the physics says so.
#[test]
fn matrix_free_jacobian_equals_assembled_matrix_and_symmetry() {
    struct Check<'a>(&'a Setup);
    impl OpFn<f64, (f64, f64, bool)> for Check<'_> {
        fn call<P: Physics<f64>>(self, op: FormOperator<f64, P>) -> (f64, f64, bool) {
            let u = self.0.space.interpolate(|x, out| self.0.m.exact(x, out));
            let (mismatch, a) = jacobian_mismatch(&op, &u, 11).unwrap();
            (mismatch, a.asymmetry(), op.physics().is_symmetric())
        }
    }
    let mut s = String::from("matrix-free Jacobian vs assembled matrix (f64)\n");
    for setup in setups() {
        let (mismatch, asym, symmetric) = setup.with_operator(Check(&setup));
        s += &format!(
            "  {:<60} |Jv - Av|/|Av| {mismatch:.2e}  asymmetry {asym:.2e}\n",
            setup.name
        );
        assert!(mismatch <= 1e-12, "{}: {mismatch}", setup.name);
        if symmetric {
            assert!(asym <= 1e-13, "{}: asymmetry {asym}", setup.name);
        } else {
            assert!(
                asym > 1e-3,
                "{}: nonsymmetric physics gave asymmetry {asym}",
                setup.name
            );
        }
    }
    log(&s);
}

/// Solving the assembled, eliminated system with the direct solver gives a vector at which
/// the matrix-free residual of the full Dirichlet problem vanishes at the free dofs.
#[test]
fn residual_vanishes_at_the_discrete_solution() {
    struct Check<'a>(&'a Setup);
    impl OpFn<f64, f64> for Check<'_> {
        fn call<P: Physics<f64>>(self, op: FormOperator<f64, P>) -> f64 {
            let st = self.0;
            let bc = BoundaryData::exact(&st.mesh, &st.space, &st.m).unwrap();
            let u = if op.physics().is_linear() {
                solve_linear(&op, &bc).unwrap()
            } else {
                let opts = NewtonOptions {
                    rtol: 1e-13,
                    ..NewtonOptions::default()
                };
                solve_newton(&op, &bc, &vec![0.0; op.num_dofs()], &opts)
                    .unwrap()
                    .0
            };
            let mut r = vec![0.0; u.len()];
            op.residual(&u, &mut r);
            // scale: the residual at the boundary data alone (the size of the load)
            let mut r0 = vec![0.0; u.len()];
            op.residual(&bc.values, &mut r0);
            norm(&bc.free_part(&r).unwrap()) / norm(&bc.free_part(&r0).unwrap())
        }
    }
    let mut s =
        String::from("residual of the full Dirichlet system at the direct solution (free dofs)\n");
    for setup in setups() {
        let rel = setup.with_operator(Check(&setup));
        s += &format!("  {:<60} |r_f(u_h)| / |r_f(g)| {rel:.2e}\n", setup.name);
        assert!(rel < 1e-10, "{}: {rel}", setup.name);
    }
    log(&s);
}

/// Relative agreement expected of `f32` with `f64` (DESIGN.md: f32 ≲ 1e-5; about 80 ε_f32).
const F32_TOL: f64 = 1e-5;

/// `f32` residuals and solutions agree with `f64` to single-precision accuracy (the
/// solution on meshes small enough that the condition number times `ε_f32` stays below the
/// tolerance), and the `f32` solution has the same discretisation error.
#[test]
fn f32_agrees_with_f64() {
    struct Residual<'a>(&'a [f64]);
    impl<T: Real> OpFn<T, Vec<f64>> for Residual<'_> {
        fn call<P: Physics<T>>(self, op: FormOperator<T, P>) -> Vec<f64> {
            let u: Vec<T> = self.0.iter().map(|&v| T::of(v)).collect();
            let mut r = vec![T::zero(); u.len()];
            op.residual(&u, &mut r);
            r.iter().map(|v| v.as_f64()).collect()
        }
    }
    struct Solve<'a>(&'a Setup);
    impl<T: Real> OpFn<T, Vec<f64>> for Solve<'_> {
        fn call<P: Physics<T>>(self, op: FormOperator<T, P>) -> Vec<f64> {
            let bc = BoundaryData::exact(&self.0.mesh, &self.0.space, &self.0.m).unwrap();
            solve_linear(&op, &bc)
                .unwrap()
                .iter()
                .map(|v| v.as_f64())
                .collect()
        }
    }
    let mut s = String::from("f32 against f64\n");
    for setup in setups() {
        // a state with both smooth and rough parts
        let exact = setup.space.interpolate(|x, out| setup.m.exact(x, out));
        let u: Vec<f64> = exact
            .iter()
            .zip(random_vector(exact.len(), 5))
            .map(|(a, b)| a + 0.1 * b)
            .collect();
        let r64 = setup.with_operator::<f64, _>(Residual(&u));
        let r32 = setup.with_operator::<f32, _>(Residual(&u));
        let dr = rel_diff(&r32, &r64);
        s += &format!("  {:<60} residual {dr:.2e}", setup.name);
        assert!(dr < F32_TOL, "{}: residual f32 vs f64 {dr}", setup.name);
        if !matches!(setup.m, Manufactured::Nonlinear { .. }) {
            let u64 = setup.with_operator::<f64, _>(Solve(&setup));
            let u32 = setup.with_operator::<f32, _>(Solve(&setup));
            let du = rel_diff(&u32, &u64);
            let e64 = exact_errors(&setup.mesh, &setup.space, &u64, &setup.m).unwrap();
            let e32 = exact_errors(&setup.mesh, &setup.space, &u32, &setup.m).unwrap();
            s += &format!(
                "  solution {du:.2e}  L2 error f64 {:.3e} f32 {:.3e}",
                e64.l2, e32.l2
            );
            assert!(du < F32_TOL, "{}: solution f32 vs f64 {du}", setup.name);
            assert!(
                (e32.l2 - e64.l2).abs() <= 0.01 * e64.l2,
                "{}: {e32:?} vs {e64:?}",
                setup.name
            );
        }
        s += "\n";
    }
    log(&s);
}

/// The by-row plan used by the solves assembles the same matrix as the serial reference
/// (guards the studies against a strategy bug masking as a discretisation error).
#[test]
fn assembly_strategies_agree_on_a_study_matrix() {
    let st = Setup::new(Problem::Elasticity, CellType::Hexahedron, 2, 3);
    let op = FormOperator::<f64, _>::new(
        &st.mesh,
        &st.space,
        Elasticity::manufactured(3, LAMBDA, MU).unwrap(),
    )
    .unwrap();
    let bc = BoundaryData::exact(&st.mesh, &st.space, &st.m).unwrap();
    let plan = AssemblyPlan::new(
        ferrofem_operator::ElementMatrices::restriction(&op),
        Some(&bc.map),
    )
    .unwrap();
    let reference = plan.assemble_matrix(&op, None, Strategy::Serial).unwrap();
    for strategy in Strategy::ALL {
        let a = plan.assemble_matrix(&op, None, strategy).unwrap();
        let d = rel_diff(a.values(), reference.values());
        assert!(d < 1e-14, "{}: {d}", strategy.name());
    }
}

/// The matrix-free PCG solves used for the largest levels give the direct solution of the
/// assembled system (so the finest levels of the studies solve the same discrete problem
/// as the others).
#[test]
fn matrix_free_solves_equal_direct_solves() {
    let mut s = String::from("matrix-free PCG against the direct solve\n");
    // Poisson on hexahedra, sum-factorised operator
    let st = Setup::new(Problem::Poisson, CellType::Hexahedron, 3, 3);
    let op =
        FormOperator::<f64, _>::new(&st.mesh, &st.space, Poisson::manufactured(3, 1.0).unwrap())
            .unwrap();
    let bc = BoundaryData::exact(&st.mesh, &st.space, &st.m).unwrap();
    let direct = solve_linear(&op, &bc).unwrap();
    let (mf, stats) = solve_poisson_matrix_free(&st.mesh, &st.space, &op, &bc, 4, 1e-13).unwrap();
    let d = rel_diff(&mf, &direct);
    s += &format!(
        "  {:<50} {} CG iterations, |u_mf - u_direct|/|u_direct| {d:.2e}\n",
        st.name, stats.iterations
    );
    assert!(d < 1e-10, "{}: {d}", st.name);
    // elasticity on hexahedra, the form's Jacobian action
    let st = Setup::new(Problem::Elasticity, CellType::Hexahedron, 2, 3);
    let op = FormOperator::<f64, _>::new(
        &st.mesh,
        &st.space,
        Elasticity::manufactured(3, LAMBDA, MU).unwrap(),
    )
    .unwrap();
    let bc = BoundaryData::exact(&st.mesh, &st.space, &st.m).unwrap();
    let direct = solve_linear(&op, &bc).unwrap();
    let (mf, stats) = solve_linear_matrix_free(&op, &bc, 1e-13).unwrap();
    let d = rel_diff(&mf, &direct);
    s += &format!(
        "  {:<50} {} CG iterations, |u_mf - u_direct|/|u_direct| {d:.2e}\n",
        st.name, stats.iterations
    );
    assert!(d < 1e-10, "{}: {d}", st.name);
    log(&s);
}
