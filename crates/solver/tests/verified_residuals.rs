//! What the Krylov solvers report is what the returned iterate satisfies: the final
//! residual is recomputed from it, a tolerance below the rounding level of the precision
//! ends in a typed error that carries the true residual, and the stopping tests of the
//! Krylov methods and of Newton do not move when the whole system is scaled.

use ferrofem_base::{CsrMatrix, Real};
use ferrofem_solver::{
    cg, gmres, newton, pcg, solve_direct, CpuSpace, DirectKind, GmresOptions, KrylovSpace,
    LinearInfo, NewtonOptions, NonlinearProblem, SolveOptions, SolveStats, SolverError, StopReason,
};

/// The 5-point Laplacian on an `m × m` grid, times `scale`, with a diagonal variation that
/// makes Jacobi differ from the identity.
fn laplacian(m: usize, scale: f64) -> CsrMatrix<f64> {
    let n = m * m;
    let idx = |i: usize, j: usize| i + m * j;
    let mut row_ptr = vec![0];
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    for k in 0..n {
        let (i, j) = (k % m, k / m);
        let mut push = |c: usize, v: f64| {
            cols.push(c as u32);
            vals.push(scale * v);
        };
        if j > 0 {
            push(idx(i, j - 1), -1.0);
        }
        if i > 0 {
            push(idx(i - 1, j), -1.0);
        }
        push(k, 4.0 + (k % 7) as f64 * 0.25);
        if i + 1 < m {
            push(idx(i + 1, j), -1.0);
        }
        if j + 1 < m {
            push(idx(i, j + 1), -1.0);
        }
        row_ptr.push(cols.len());
    }
    CsrMatrix::new(n, n, row_ptr, cols, vals).unwrap()
}

fn rhs(n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|i| scale * (1.0 + ((i * 7919) % 113) as f64 / 113.0))
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Method {
    Cg,
    Pcg,
    Gmres,
}

const METHODS: [Method; 3] = [Method::Cg, Method::Pcg, Method::Gmres];

fn run<T: Real>(
    a: &CsrMatrix<T>,
    b: &[T],
    method: Method,
    opts: &SolveOptions,
) -> (Vec<T>, Result<SolveStats, SolverError>) {
    let space = CpuSpace::with_operator_jacobi(a).unwrap();
    let b = b.to_vec();
    let mut x = space.zeros().unwrap();
    let result = match method {
        Method::Cg => cg(&space, &b, &mut x, opts),
        Method::Pcg => pcg(&space, &b, &mut x, opts),
        Method::Gmres => gmres(&space, &b, &mut x, opts, &GmresOptions::default()),
    };
    (x, result)
}

/// `‖b − A x‖₂` computed here, in the precision of the system.
fn true_residual<T: Real>(a: &CsrMatrix<T>, b: &[T], x: &[T]) -> f64 {
    let mut ax = vec![T::zero(); b.len()];
    a.matvec(x, &mut ax);
    b.iter()
        .zip(&ax)
        .map(|(&bi, &yi)| (bi - yi).as_f64().powi(2))
        .sum::<f64>()
        .sqrt()
}

fn check_reported_is_true<T: Real>(rtol: f64) {
    let a64 = laplacian(24, 1.0);
    let a: CsrMatrix<T> = a64.convert();
    let b: Vec<T> = rhs(a.nrows(), 1.0).iter().map(|&v| T::of(v)).collect();
    for method in METHODS {
        let opts = SolveOptions {
            rtol,
            ..SolveOptions::default()
        };
        let (x, result) = run(&a, &b, method, &opts);
        let stats = result.unwrap_or_else(|e| panic!("{} {method:?}: {e}", T::NAME));
        let t = true_residual(&a, &b, &x);
        assert!(
            (stats.final_residual - t).abs() <= 1e-6 * t,
            "{} {method:?}: reported {:e}, recomputed {t:e}",
            T::NAME,
            stats.final_residual
        );
        assert!(
            stats.final_residual <= stats.target,
            "{method:?}: {stats:?}"
        );
        assert!(stats.converged);
    }
}

#[test]
fn the_reported_final_residual_is_the_recomputed_one() {
    check_reported_is_true::<f64>(1e-10);
    check_reported_is_true::<f32>(1e-5);
}

#[test]
fn a_tolerance_below_the_rounding_level_ends_in_accuracy_limit_with_the_true_residual() {
    let a: CsrMatrix<f32> = laplacian(24, 1.0).convert();
    let b: Vec<f32> = rhs(a.nrows(), 1.0).iter().map(|&v| v as f32).collect();
    let opts = SolveOptions {
        rtol: 1e-14,
        ..SolveOptions::default()
    };
    for method in METHODS {
        let (x, result) = run(&a, &b, method, &opts);
        let stats = match result {
            Err(SolverError::AccuracyLimit(stats)) => stats,
            other => panic!("{method:?}: expected AccuracyLimit, got {other:?}"),
        };
        assert_eq!(stats.reason, StopReason::AccuracyLimit);
        assert!(!stats.converged);
        // the true residual of the iterate left in x, not the recurrence's
        let t = true_residual(&a, &b, &x);
        assert!(
            (stats.final_residual - t).abs() <= 1e-6 * t,
            "{method:?}: reported {:e}, recomputed {t:e}",
            stats.final_residual
        );
        assert!(stats.final_residual > stats.target, "{method:?}: {stats:?}");
        // f32 reaches about 1e-7 relative here, far above the 1e-14 asked for, and the
        // iterate is still a good one (it is what the precision can give)
        assert!(
            stats.relative_residual() < 1e-5,
            "{method:?}: {}",
            stats.relative_residual()
        );
        let message = SolverError::AccuracyLimit(stats).to_string();
        assert!(message.contains("rounding level"), "{message}");
    }
}

#[test]
fn the_stopping_test_is_invariant_to_scaling_the_system() {
    // A x = b and (s A) x = s b are the same problem: same iterations, same relative
    // residual, for scales far from 1 in both directions.
    let n = 20 * 20;
    for method in METHODS {
        let (_, reference) = run(&laplacian(20, 1.0), &rhs(n, 1.0), method, &opts(1e-9));
        let reference = reference.unwrap();
        for scale in [1e-12, 1e-6, 1e6, 1e12] {
            let a = laplacian(20, scale);
            let b = rhs(n, scale);
            let (_, stats) = run(&a, &b, method, &opts(1e-9));
            let stats = stats.unwrap();
            assert_eq!(
                stats.iterations, reference.iterations,
                "{method:?} scale {scale:e}"
            );
            let (r, r0) = (stats.relative_residual(), reference.relative_residual());
            assert!(
                (r - r0).abs() <= 1e-6 * r0,
                "{method:?} scale {scale:e}: {r:e} vs {r0:e}"
            );
        }
    }
}

fn opts(rtol: f64) -> SolveOptions {
    SolveOptions {
        rtol,
        ..SolveOptions::default()
    }
}

#[test]
fn tolerances_out_of_range_are_refused() {
    let a = laplacian(4, 1.0);
    let b = rhs(16, 1.0);
    for (rtol, atol) in [
        (2.0, 0.0),
        (1.0, 0.0),
        (-1e-3, 0.0),
        (f64::NAN, 0.0),
        (0.0, 0.0),
    ] {
        let o = SolveOptions {
            rtol,
            atol,
            ..SolveOptions::default()
        };
        for method in METHODS {
            let (_, result) = run(&a, &b, method, &o);
            assert!(
                matches!(result, Err(SolverError::InvalidOptions(_))),
                "{method:?} rtol {rtol} atol {atol}: {result:?}"
            );
        }
    }
}

/// `F(u) = s (A u + u³ − b)` with the 1-D Laplacian `A` (stencil −1, 2, −1): a nonlinear
/// system whose scale `s` must not change Newton's iterations.
struct ScaledCubic {
    scale: f64,
    b: Vec<f64>,
}

impl ScaledCubic {
    fn n(&self) -> usize {
        self.b.len()
    }
    fn laplacian_times(&self, u: &[f64], i: usize) -> f64 {
        let left = if i > 0 { u[i - 1] } else { 0.0 };
        let right = if i + 1 < self.n() { u[i + 1] } else { 0.0 };
        2.0 * u[i] - left - right
    }
}

impl NonlinearProblem<f64> for ScaledCubic {
    fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
        for i in 0..self.n() {
            r[i] = self.scale * (self.laplacian_times(u, i) + u[i].powi(3) - self.b[i]);
        }
        Ok(())
    }
    fn solve_jacobian(
        &self,
        u: &[f64],
        r: &[f64],
        du: &mut [f64],
    ) -> Result<LinearInfo, SolverError> {
        let n = self.n();
        let mut row_ptr = vec![0];
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        for i in 0..n {
            if i > 0 {
                cols.push(i as u32 - 1);
                vals.push(-self.scale);
            }
            cols.push(i as u32);
            vals.push(self.scale * (2.0 + 3.0 * u[i] * u[i]));
            if i + 1 < n {
                cols.push(i as u32 + 1);
                vals.push(-self.scale);
            }
            row_ptr.push(cols.len());
        }
        let j = CsrMatrix::new(n, n, row_ptr, cols, vals).unwrap();
        du.copy_from_slice(&solve_direct(&j, r, DirectKind::Lu)?);
        Ok(LinearInfo::default())
    }
}

#[test]
fn newtons_test_is_invariant_to_scaling_the_residual() {
    let b: Vec<f64> = (0..40).map(|i| 5.0 + (i % 5) as f64).collect();
    let solve = |scale: f64| {
        let problem = ScaledCubic {
            scale,
            b: b.clone(),
        };
        let mut u = vec![0.0; b.len()];
        let stats = newton(&problem, &mut u, &NewtonOptions::default()).unwrap();
        (u, stats)
    };
    let (u_ref, reference) = solve(1.0);
    for scale in [1e-12, 1e-6, 1e6, 1e12] {
        let (u, stats) = solve(scale);
        assert_eq!(stats.iterations, reference.iterations, "scale {scale:e}");
        let (f, f0) = (
            stats.final_residual() / stats.residual_history[0],
            reference.final_residual() / reference.residual_history[0],
        );
        assert!(f <= 1e-10 && f0 <= 1e-10, "scale {scale:e}: {f:e}, {f0:e}");
        let diff = u
            .iter()
            .zip(&u_ref)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(diff < 1e-9, "scale {scale:e}: solutions differ by {diff:e}");
    }
}
