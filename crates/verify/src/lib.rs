//! ferrofem-verify: the pieces of ferrofem's verification suite (`tests/convergence.rs`).
//!
//! The suite solves the manufactured problems of [`ferrofem_physics::Manufactured`] with
//! Dirichlet data `g = u*` on the whole boundary of randomly perturbed box meshes, measures
//! `‖u_h − u*‖_{L²}` and `|u_h − u*|_{H¹}` under refinement, and checks the observed rates
//! against the theory (`p + 1` and `p` for Lagrange elements of order `p`). It also checks
//! the operators against each other: the matrix-free Jacobian against the assembled matrix,
//! the residual at the discrete solution of the assembled system, symmetry, `f32` against
//! `f64`, and Newton's quadratic convergence.
//!
//! Everything here is the glue those checks share: mesh generation, Dirichlet data from the
//! exact solution, a direct solve of the eliminated system, a Newton problem with
//! eliminated Dirichlet dofs, error levels and rate tables.

use ferrofem_assembly::{AssemblyError, AssemblyPlan, DofMap, Strategy};
use ferrofem_base::{CellType, CsrMatrix, LinearOperator, Real};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh, MeshError};
use ferrofem_operator::tensor::{TensorError, TensorKind, TensorOperator, TensorOptions};
use ferrofem_operator::{
    add_boundary_values, errors, lift_residual, ConstrainedOperator, ElementMatrices, Errors,
    FormError, FormOperator,
};
use ferrofem_physics::{Manufactured, Physics, PhysicsError};
use ferrofem_solver::{
    newton, pcg, solve_direct, CpuSpace, DirectKind, LinearInfo, NewtonOptions, NewtonStats,
    NonlinearProblem, SolveOptions, SolveStats, SolverError,
};
use ferrofem_space::{H1Space, SpaceError};
use std::fmt::Write as _;

/// The perturbation of interior vertices used by the suite (fraction of the grid spacing):
/// large enough that quadrilaterals and hexahedra are far from parallelograms (their maps
/// are genuinely multilinear) and simplices far from the structured split, small enough
/// that no cell needs repair.
pub const PERTURB: f64 = 0.18;

/// Anything a verification step can fail with (each wraps the error of the library call
/// that failed).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// Mesh generation.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// A function space.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// A physics or manufactured solution.
    #[error(transparent)]
    Physics(#[from] PhysicsError),
    /// A form operator, boundary term or error norm.
    #[error(transparent)]
    Form(#[from] FormError),
    /// Assembly.
    #[error(transparent)]
    Assembly(#[from] AssemblyError),
    /// A linear or nonlinear solve.
    #[error(transparent)]
    Solver(#[from] SolverError),
    /// A sum-factorised tensor-product operator.
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

/// The unit box `[0,1]^d` with `n` grid cells per axis (split into simplices for triangles
/// and tetrahedra), interior vertices displaced by up to `perturb` grid spacings with the
/// random stream `seed`.
pub fn perturbed_box(ct: CellType, n: usize, perturb: f64, seed: u64) -> Result<Mesh, VerifyError> {
    let mut spec = BoxSpec::unit(ct, &vec![n; ct.dim()]);
    spec.perturb = perturb;
    spec.seed = seed;
    Ok(generate_box(&spec)?)
}

/// Dirichlet conditions on every boundary dof of a space.
#[derive(Clone, Debug)]
pub struct BoundaryData {
    /// The constrained dofs, sorted.
    pub dofs: Vec<u32>,
    /// A full L-vector holding the prescribed values at the constrained dofs (and the
    /// interpolant of the same function elsewhere, which nothing reads).
    pub values: Vec<f64>,
    /// The split into free and constrained dofs.
    pub map: DofMap,
}

impl BoundaryData {
    /// `u = g` on the whole boundary, `g(x, out)` writing `ncomp` values (interpolated at
    /// the boundary nodes).
    pub fn new<G>(mesh: &Mesh, space: &H1Space, g: G) -> Result<BoundaryData, VerifyError>
    where
        G: Fn(&[f64], &mut [f64]) + Sync,
    {
        let nodes = space.boundary_nodes(mesh)?;
        let dofs = space.node_dofs(&nodes, None);
        let values = space.interpolate(g);
        let map = DofMap::new(space.num_dofs(), &dofs)?;
        Ok(BoundaryData { dofs, values, map })
    }

    /// `u = u*` on the boundary for the manufactured solution `m`.
    pub fn exact(
        mesh: &Mesh,
        space: &H1Space,
        m: &Manufactured,
    ) -> Result<BoundaryData, VerifyError> {
        BoundaryData::new(mesh, space, |x, out| m.exact(x, out))
    }

    /// The prescribed values as a full vector in precision `T`.
    pub fn values_as<T: Real>(&self) -> Vec<T> {
        self.values.iter().map(|&v| T::of(v)).collect()
    }

    /// The free entries of a full vector, in reduced order.
    pub fn free_part<T: Copy>(&self, full: &[T]) -> Result<Vec<T>, VerifyError> {
        Ok(self.map.restrict(full)?)
    }

    /// `full` with its free entries replaced by `reduced` (reduced order).
    pub fn set_free<T: Copy>(&self, full: &mut [T], reduced: &[T]) {
        for (&d, &v) in self.map.free().iter().zip(reduced) {
            full[d as usize] = v;
        }
    }
}

/// Solves the linear problem of `op` with the Dirichlet dofs of `bc` eliminated: assembles
/// `A_ff` (by-row strategy), lifts the boundary values into the right-hand side with one
/// residual evaluation (`b_f = −r(g̃)_f`, [`lift_residual`]), solves with the sparse direct
/// solver (Cholesky for symmetric matrices, else LU) and returns the full solution.
///
/// Only for physics whose residual is affine in `u`.
pub fn solve_linear<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    bc: &BoundaryData,
) -> Result<Vec<T>, VerifyError> {
    let plan = AssemblyPlan::new(op.restriction(), Some(&bc.map))?;
    let a = plan.assemble_matrix(op, None, Strategy::default())?;
    let mut u = bc.values_as::<T>();
    let b_full = lift_residual(op, &bc.dofs, &u)?;
    let b = bc.free_part(&b_full)?;
    let x = solve_direct(&a, &b, DirectKind::Auto)?;
    bc.set_free(&mut u, &x);
    Ok(u)
}

/// Solves the constant-coefficient Poisson problem `−Δu = f` (`κ = 1`) of `op` on a
/// quadrilateral or hexahedral mesh matrix-free: Jacobi-preconditioned CG on the
/// sum-factorised [`TensorOperator`] (BP3 kernel with `α = 0`) built with the same Gauss
/// rule as `op` (`points_per_dir` points per direction, `p + 1` for the default rule), with
/// the Dirichlet rows replaced by the identity ([`ConstrainedOperator`]) and the right-hand
/// side lifted with one residual evaluation of `op` ([`lift_residual`]). For problems too
/// large for the direct solver; the solution equals the assembled one up to the CG
/// tolerance because both operators integrate the same form with the same rule.
pub fn solve_poisson_matrix_free<P: Physics<f64>>(
    mesh: &Mesh,
    space: &H1Space,
    op: &FormOperator<f64, P>,
    bc: &BoundaryData,
    points_per_dir: usize,
    rtol: f64,
) -> Result<(Vec<f64>, SolveStats), VerifyError> {
    let mut opts = TensorOptions::new(TensorKind::Diffusion { alpha: 0.0 });
    opts.q_points = Some(points_per_dir);
    let tensor = TensorOperator::<f64>::new(mesh, space, &opts)?;
    let constrained = ConstrainedOperator::new(&tensor, &bc.dofs)?;
    let b = lift_residual(op, &bc.dofs, &bc.values)?;
    let krylov = CpuSpace::with_operator_jacobi(&constrained)?;
    correction_solve(&krylov, b, bc, rtol)
}

/// Solves the linear, symmetric positive definite problem of `op` matrix-free:
/// Jacobi-preconditioned CG on the form's own Jacobian action ([`FormOperator::linearize`],
/// its diagonal from the element matrices) with the Dirichlet rows replaced by the identity
/// and the right-hand side lifted with one residual evaluation. For problems whose
/// assembled matrix would not fit comfortably in memory (3-D vector problems at order 2).
pub fn solve_linear_matrix_free<P: Physics<f64>>(
    op: &FormOperator<f64, P>,
    bc: &BoundaryData,
    rtol: f64,
) -> Result<(Vec<f64>, SolveStats), VerifyError> {
    let jacobian = op.linearize(&[]);
    let constrained = ConstrainedOperator::new(&jacobian, &bc.dofs)?;
    let b = lift_residual(op, &bc.dofs, &bc.values)?;
    let krylov = CpuSpace::with_operator_jacobi(&constrained)?;
    correction_solve(&krylov, b, bc, rtol)
}

/// Solves for the correction `w = u − g̃` of the lifted right-hand side `b` (zero on the
/// constrained rows) by Jacobi-PCG from `w = 0` (never the interpolant of a known
/// solution, which would hide an inaccurate solve), and returns `u = g̃ + w`.
fn correction_solve<A: LinearOperator<f64>>(
    krylov: &CpuSpace<f64, A>,
    b: Vec<f64>,
    bc: &BoundaryData,
    rtol: f64,
) -> Result<(Vec<f64>, SolveStats), VerifyError> {
    let mut u = vec![0.0; b.len()];
    let stats = pcg(krylov, &b, &mut u, &cg_options(rtol))?;
    add_boundary_values(&mut u, &bc.dofs, &bc.values)?;
    Ok((u, stats))
}

fn cg_options(rtol: f64) -> SolveOptions {
    SolveOptions {
        rtol,
        max_iter: 100_000,
        ..SolveOptions::default()
    }
}

/// `F(u) = 0` for a form with eliminated Dirichlet dofs: `F_f = r(u)_f` on the free dofs,
/// `F_c = u_c − g_c` on the constrained ones. The Jacobian solve assembles `J_ff(u)` on the
/// free dofs with a reused [`AssemblyPlan`] and factorises it with sparse LU.
///
/// The correction on the constrained dofs is `δ_c = F_c`; the coupling `J_fc δ_c` is not
/// subtracted, so the iteration is Newton's method exactly when the iterates satisfy the
/// boundary conditions, which [`solve_newton`] ensures by starting from such a vector.
pub struct DirichletNewton<'a, P: Physics<f64>> {
    op: &'a FormOperator<f64, P>,
    bc: &'a BoundaryData,
    plan: AssemblyPlan,
}

impl<'a, P: Physics<f64>> DirichletNewton<'a, P> {
    /// The problem of `op` with the boundary conditions `bc`.
    pub fn new(
        op: &'a FormOperator<f64, P>,
        bc: &'a BoundaryData,
    ) -> Result<DirichletNewton<'a, P>, VerifyError> {
        let plan = AssemblyPlan::new(op.restriction(), Some(&bc.map))?;
        Ok(DirichletNewton { op, bc, plan })
    }
}

impl<P: Physics<f64>> NonlinearProblem<f64> for DirichletNewton<'_, P> {
    fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
        self.op.residual(u, r);
        for &d in &self.bc.dofs {
            let d = d as usize;
            r[d] = u[d] - self.bc.values[d];
        }
        Ok(())
    }

    fn solve_jacobian(
        &self,
        u: &[f64],
        r: &[f64],
        du: &mut [f64],
    ) -> Result<LinearInfo, SolverError> {
        let a = self
            .plan
            .assemble_matrix(self.op, Some(u), Strategy::default())
            .map_err(SolverError::backend)?;
        let rf = self.bc.map.restrict(r).map_err(SolverError::backend)?;
        let x = solve_direct(&a, &rf, DirectKind::Lu)?;
        du.copy_from_slice(r);
        self.bc.set_free(du, &x);
        Ok(LinearInfo::default())
    }
}

/// Solves the nonlinear problem of `op` with Dirichlet data `bc` by Newton's method from
/// `u0` (its constrained entries are replaced by the boundary values first). Returns the
/// solution and Newton's statistics.
pub fn solve_newton<P: Physics<f64>>(
    op: &FormOperator<f64, P>,
    bc: &BoundaryData,
    u0: &[f64],
    opts: &NewtonOptions,
) -> Result<(Vec<f64>, NewtonStats), VerifyError> {
    let problem = DirichletNewton::new(op, bc)?;
    let mut u = u0.to_vec();
    for &d in &bc.dofs {
        u[d as usize] = bc.values[d as usize];
    }
    let stats = newton(&problem, &mut u, opts)?;
    Ok((u, stats))
}

/// The errors of `u` (an L-vector of `space`) against the manufactured solution `m`.
pub fn exact_errors(
    mesh: &Mesh,
    space: &H1Space,
    u: &[f64],
    m: &Manufactured,
) -> Result<Errors, VerifyError> {
    Ok(errors(
        mesh,
        space,
        u,
        |x, out| m.exact(x, out),
        |x, out| m.exact_grad(x, out),
        None,
    )?)
}

/// Reproducible test vectors in `[-0.5, 0.5)` (the generator every crate shares).
pub use ferrofem_base::random::random_vector;

/// Euclidean norm.
pub fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `‖a − b‖ / ‖b‖` (the absolute difference when `b = 0`).
pub fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt();
    let s = norm(b);
    if s > 0.0 {
        d / s
    } else {
        d
    }
}

/// The relative difference between the matrix-free Jacobian action `J(u) v` and the
/// assembled Jacobian (all dofs, no elimination) times `v`, for a random `v`; also returns
/// the assembled matrix. `u` is the linearisation state (ignored by linear physics).
pub fn jacobian_mismatch<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    u: &[T],
    seed: u64,
) -> Result<(f64, CsrMatrix<T>), VerifyError> {
    let plan = AssemblyPlan::new(op.restriction(), None)?;
    let state = if op.physics().is_linear() {
        None
    } else {
        Some(u)
    };
    let a = plan.assemble_matrix(op, state, Strategy::default())?;
    let v: Vec<T> = random_vector(op.num_dofs(), seed)
        .into_iter()
        .map(T::of)
        .collect();
    let mut av = vec![T::zero(); v.len()];
    a.matvec(&v, &mut av);
    let mut jv = vec![T::zero(); v.len()];
    op.jacobian_apply(u, &v, &mut jv);
    let to64 = |x: &[T]| x.iter().map(|v| v.as_f64()).collect::<Vec<f64>>();
    Ok((rel_diff(&to64(&jv), &to64(&av)), a))
}

/// One level of a refinement study.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    /// Grid cells per axis (`h = 1/n`).
    pub n: usize,
    /// Dofs of the space (all components).
    pub dofs: usize,
    /// Errors of the discrete solution.
    pub errors: Errors,
}

/// Observed `(L², H¹)` convergence rates between a coarse and a fine level,
/// `log(e_c / e_f) / log(h_c / h_f)`.
pub fn rates(coarse: &Level, fine: &Level) -> (f64, f64) {
    let r = (fine.n as f64 / coarse.n as f64).ln();
    (
        (coarse.errors.l2 / fine.errors.l2).ln() / r,
        (coarse.errors.h1_semi / fine.errors.h1_semi).ln() / r,
    )
}

/// A refinement study: the levels of one discretisation and the rates theory expects.
#[derive(Clone, Debug)]
pub struct Study {
    /// What was solved (problem, cell type, order).
    pub title: String,
    /// Levels from coarse to fine.
    pub levels: Vec<Level>,
    /// Expected `L²` rate (`p + 1`).
    pub expected_l2: f64,
    /// Expected `H¹` rate (`p`).
    pub expected_h1: f64,
}

impl Study {
    /// Rates between the two finest levels (`None` with fewer than two levels).
    pub fn final_rates(&self) -> Option<(f64, f64)> {
        match self.levels.as_slice() {
            [.., a, b] => Some(rates(a, b)),
            _ => None,
        }
    }

    /// `Ok` when both final rates are within `tol` of the expected ones (an error message
    /// with the table otherwise).
    pub fn check(&self, tol: f64) -> Result<(), String> {
        let Some((l2, h1)) = self.final_rates() else {
            return Err(format!("{}: fewer than two levels", self.title));
        };
        if (l2 - self.expected_l2).abs() <= tol && (h1 - self.expected_h1).abs() <= tol {
            Ok(())
        } else {
            Err(format!(
                "{}: final rates L2 {l2:.3} (expected {}), H1 {h1:.3} (expected {}), tolerance {tol}\n{}",
                self.title,
                self.expected_l2,
                self.expected_h1,
                self.table()
            ))
        }
    }

    /// The errors and rates as a small text table.
    pub fn table(&self) -> String {
        let mut s = format!(
            "{} (expected rates L2 {}, H1 {})\n{:>5} {:>9} {:>12} {:>7} {:>12} {:>7}\n",
            self.title,
            self.expected_l2,
            self.expected_h1,
            "n",
            "dofs",
            "L2 error",
            "rate",
            "H1 error",
            "rate"
        );
        for (i, l) in self.levels.iter().enumerate() {
            let (r2, r1) = if i > 0 {
                let (a, b) = rates(&self.levels[i - 1], l);
                (format!("{a:.3}"), format!("{b:.3}"))
            } else {
                ("-".into(), "-".into())
            };
            let _ = writeln!(
                s,
                "{:>5} {:>9} {:>12.4e} {:>7} {:>12.4e} {:>7}",
                l.n, l.dofs, l.errors.l2, r2, l.errors.h1_semi, r1
            );
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(n: usize, l2: f64, h1: f64) -> Level {
        Level {
            n,
            dofs: 0,
            errors: Errors {
                l2,
                h1_semi: h1,
                l2_rel: l2,
                h1_rel: h1,
            },
        }
    }

    #[test]
    fn rates_follow_the_mesh_ratio() {
        // errors of exact order 3 and 2 under h -> h/2 and h -> 2h/3
        let (a, b) = rates(&level(4, 1.0, 1.0), &level(8, 1.0 / 8.0, 0.25));
        assert!((a - 3.0).abs() < 1e-12 && (b - 2.0).abs() < 1e-12);
        let (a, _) = rates(
            &level(8, 1.0, 1.0),
            &level(12, (8.0f64 / 12.0).powi(3), 1.0),
        );
        assert!((a - 3.0).abs() < 1e-12);
    }

    #[test]
    fn study_check_accepts_and_rejects() {
        let s = Study {
            title: "t".into(),
            levels: vec![level(4, 1.0, 1.0), level(8, 0.25, 0.5)],
            expected_l2: 2.0,
            expected_h1: 1.0,
        };
        assert!(s.check(0.1).is_ok());
        let wrong = Study {
            expected_l2: 3.0,
            ..s.clone()
        };
        let msg = wrong.check(0.1).unwrap_err();
        assert!(msg.contains("expected 3"), "{msg}");
        assert!(s.table().lines().count() == 4);
    }
}
