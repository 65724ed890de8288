//! Integration tests of the solver room: CG/PCG, GMRES, direct sparse solves and Newton.

use std::sync::atomic::{AtomicUsize, Ordering};

use ferrofem_base::random::Lcg;
use ferrofem_base::{CsrMatrix, LinearOperator, Real};
use ferrofem_solver::{
    cg, gmres, newton, newton_in, pcg, solve_direct, CpuSpace, DirectFactorization, DirectKind,
    GmresOptions, KrylovSpace, LinearInfo, NewtonOptions, NonlinearProblem, NonlinearSpace,
    SolveOptions, SolverError, StopReason,
};

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Builds a CSR matrix from (row, col, value) triplets given row by row with sorted columns.
fn csr_from_rows(n: usize, rows: Vec<Vec<(usize, f64)>>) -> CsrMatrix<f64> {
    let mut row_ptr = vec![0];
    let mut cols = Vec::new();
    let mut vals = Vec::new();
    for row in rows {
        for (c, v) in row {
            cols.push(c as u32);
            vals.push(v);
        }
        row_ptr.push(cols.len());
    }
    CsrMatrix::new(n, n, row_ptr, cols, vals).unwrap()
}

/// The 5-point Laplacian (stencil 4, −1) on an `m × m` grid of interior points.
fn laplacian_2d(m: usize) -> CsrMatrix<f64> {
    convection_diffusion_2d(m, 0.0)
}

/// `−Δu + c ∂u/∂x` on an `m × m` grid, first-order upwind convection (nonsymmetric for
/// `c > 0`), scaled by `h²`.
fn convection_diffusion_2d(m: usize, c: f64) -> CsrMatrix<f64> {
    let h = 1.0 / (m + 1) as f64;
    let idx = |i: usize, j: usize| i + m * j;
    let rows = (0..m * m)
        .map(|k| {
            let (i, j) = (k % m, k / m);
            let mut row = Vec::new();
            if j > 0 {
                row.push((idx(i, j - 1), -1.0));
            }
            if i > 0 {
                row.push((idx(i - 1, j), -1.0 - c * h));
            }
            row.push((k, 4.0 + c * h));
            if i + 1 < m {
                row.push((idx(i + 1, j), -1.0));
            }
            if j + 1 < m {
                row.push((idx(i, j + 1), -1.0));
            }
            row
        })
        .collect();
    csr_from_rows(m * m, rows)
}

/// Extreme eigenvalues of [`laplacian_2d`].
fn laplacian_extreme_eigenvalues(m: usize) -> (f64, f64) {
    let t = std::f64::consts::PI / (m + 1) as f64;
    (4.0 - 4.0 * t.cos(), 4.0 + 4.0 * t.cos())
}

/// A deterministic pseudo-random vector with entries in [lo, hi).
fn pseudo_random(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut g = Lcg::new(
        seed.wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407),
    );
    (0..n).map(|_| lo + (hi - lo) * g.next_f64()).collect()
}

fn matvec(a: &CsrMatrix<f64>, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; a.nrows()];
    a.matvec(x, &mut y);
    y
}

fn dist(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y) * (x - y))
        .sum::<f64>()
        .sqrt()
}

fn norm2(a: &[f64]) -> f64 {
    a.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `S A S` for a diagonal scaling `s`.
fn scale_symmetric(a: &CsrMatrix<f64>, s: &[f64]) -> CsrMatrix<f64> {
    let mut out = a.clone();
    for r in 0..a.nrows() {
        let range = a.row_ptr()[r]..a.row_ptr()[r + 1];
        for k in range {
            let c = a.col_idx()[k] as usize;
            out.values_mut()[k] *= s[r] * s[c];
        }
    }
    out
}

fn opts(rtol: f64) -> SolveOptions {
    SolveOptions {
        rtol,
        ..SolveOptions::default()
    }
}

// ---------------------------------------------------------------------------------------
// CG / PCG
// ---------------------------------------------------------------------------------------

#[test]
fn cg_laplacian_converges_to_known_solution_within_theoretical_bound() {
    let m = 32;
    let a = laplacian_2d(m);
    let u = pseudo_random(m * m, 1, -1.0, 1.0);
    let b = matvec(&a, &u);
    let space = CpuSpace::new(&a).unwrap();
    let mut x = vec![0.0; m * m];
    let rtol = 1e-10;
    let stats = cg(&space, &b, &mut x, &opts(rtol)).unwrap();
    assert!(stats.converged);
    assert_eq!(stats.reason, StopReason::RelativeTolerance);

    // The true residual agrees with the recurrence and meets the tolerance.
    let r_true = dist(&matvec(&a, &x), &b);
    assert!(r_true <= 2.0 * rtol * norm2(&b), "true residual {r_true}");
    // Error bound: ‖x − u‖/‖u‖ <= κ · ‖r‖/‖b‖.
    let (lmin, lmax) = laplacian_extreme_eigenvalues(m);
    let kappa = lmax / lmin;
    assert!(dist(&x, &u) / norm2(&u) <= kappa * 2.0 * rtol);

    // Classical bound: ‖r_k‖/‖r_0‖ <= 2√κ ((√κ−1)/(√κ+1))^k.
    let sk = kappa.sqrt();
    let bound = ((2.0 * sk / rtol).ln() / ((sk + 1.0) / (sk - 1.0)).ln()).ceil() as usize;
    assert!(
        stats.iterations <= bound,
        "{} iterations exceed the bound {bound}",
        stats.iterations
    );
    // And a random right-hand side excites the whole spectrum: far more than a few steps.
    assert!(stats.iterations > bound / 4);
}

#[test]
fn cg_iterations_grow_linearly_with_grid_resolution() {
    // Iterations ∝ √κ ∝ 1/h for the Laplacian: doubling m should about double them.
    let iterations = |m: usize| {
        let a = laplacian_2d(m);
        let b = pseudo_random(m * m, 7, -1.0, 1.0);
        let mut x = vec![0.0; m * m];
        cg(&CpuSpace::new(&a).unwrap(), &b, &mut x, &opts(1e-8))
            .unwrap()
            .iterations as f64
    };
    let (i16, i32, i64) = (iterations(16), iterations(32), iterations(64));
    for ratio in [i32 / i16, i64 / i32] {
        assert!(
            (1.5..=2.5).contains(&ratio),
            "ratio {ratio}: {i16} {i32} {i64}"
        );
    }
}

#[test]
fn pcg_jacobi_beats_cg_on_badly_scaled_systems() {
    // (a) A diagonal matrix with entries spread over six decades: Jacobi is exact.
    let n = 200;
    let d: Vec<f64> = (0..n)
        .map(|i| 10f64.powf(6.0 * i as f64 / n as f64))
        .collect();
    let diag = csr_from_rows(n, (0..n).map(|i| vec![(i, d[i])]).collect());
    let u = pseudo_random(n, 3, -1.0, 1.0);
    let b = matvec(&diag, &u);
    let mut x_cg = vec![0.0; n];
    let cg_stats = cg(&CpuSpace::new(&diag).unwrap(), &b, &mut x_cg, &opts(1e-10)).unwrap();
    let mut x_pcg = vec![0.0; n];
    let pcg_space = CpuSpace::with_operator_jacobi(&diag).unwrap();
    assert!(pcg_space.is_preconditioned());
    let pcg_stats = pcg(&pcg_space, &b, &mut x_pcg, &opts(1e-10)).unwrap();
    assert_eq!(pcg_stats.iterations, 1);
    assert!(cg_stats.iterations > 30, "cg took {}", cg_stats.iterations);
    assert!(dist(&x_pcg, &u) <= 1e-12 * norm2(&u));

    // (b) A Laplacian with random symmetric row/column scaling over two decades.
    let m = 16;
    let s: Vec<f64> = pseudo_random(m * m, 5, 0.0, 2.0)
        .into_iter()
        .map(|e| 10f64.powf(e))
        .collect();
    let a = scale_symmetric(&laplacian_2d(m), &s);
    let u = pseudo_random(m * m, 9, -1.0, 1.0);
    let b = matvec(&a, &u);
    let mut x_cg = vec![0.0; m * m];
    let cg_stats = cg(&CpuSpace::new(&a).unwrap(), &b, &mut x_cg, &opts(1e-10)).unwrap();
    // The diagonal may also come from the caller (here computed by hand: 4 s_i²).
    let diagonal: Vec<f64> = s.iter().map(|si| 4.0 * si * si).collect();
    let mut x_pcg = vec![0.0; m * m];
    let pcg_stats = pcg(
        &CpuSpace::with_jacobi(&a, &diagonal).unwrap(),
        &b,
        &mut x_pcg,
        &opts(1e-10),
    )
    .unwrap();
    assert!(
        3 * pcg_stats.iterations < cg_stats.iterations,
        "pcg {} vs cg {}",
        pcg_stats.iterations,
        cg_stats.iterations
    );
    assert!(dist(&x_pcg, &x_cg) <= 1e-6 * norm2(&x_cg));
    // With the identity preconditioner, PCG is CG.
    let mut x_id = vec![0.0; m * m];
    let id_stats = pcg(&CpuSpace::new(&a).unwrap(), &b, &mut x_id, &opts(1e-10)).unwrap();
    assert_eq!(id_stats.iterations, cg_stats.iterations);
}

#[test]
fn residual_history_and_energy_error_decrease() {
    let m = 24;
    let a = laplacian_2d(m);
    let u = pseudo_random(m * m, 11, -1.0, 1.0);
    let b = matvec(&a, &u);
    let space = CpuSpace::new(&a).unwrap();
    let o = SolveOptions {
        rtol: 1e-9,
        record_history: true,
        ..SolveOptions::default()
    };
    let mut x = vec![0.0; m * m];
    let stats = cg(&space, &b, &mut x, &o).unwrap();
    let h = &stats.history;
    assert_eq!(h.len(), stats.iterations + 1);
    assert_eq!(h[0], stats.initial_residual);
    assert_eq!(*h.last().unwrap(), stats.final_residual);
    assert!(stats.final_residual <= stats.target);
    assert!((stats.relative_residual() - stats.final_residual / norm2(&b)).abs() < 1e-15);
    // The 2-norm of the CG residual need not fall every step, but it falls over every
    // block of ten iterations.
    for k in (10..h.len()).step_by(10) {
        let block_max = h[k - 10..k].iter().cloned().fold(0.0, f64::max);
        assert!(
            h[k] < block_max,
            "no decrease over iterations {}..{k}",
            k - 10
        );
    }
    // What CG does minimise — the energy norm of the error — falls strictly every step.
    let energy_error = |x: &[f64]| {
        let e: Vec<f64> = x.iter().zip(&u).map(|(xi, ui)| xi - ui).collect();
        e.iter()
            .zip(matvec(&a, &e))
            .map(|(p, q)| p * q)
            .sum::<f64>()
    };
    let mut previous = energy_error(&vec![0.0; m * m]);
    for k in 1..=20 {
        let mut xk = vec![0.0; m * m];
        let o = SolveOptions { max_iter: k, ..o };
        match cg(&space, &b, &mut xk, &o) {
            Err(SolverError::NotConverged(s)) => assert_eq!(s.iterations, k),
            other => panic!("expected NotConverged, got {other:?}"),
        }
        let e = energy_error(&xk);
        assert!(e < previous, "energy error rose at iteration {k}");
        previous = e;
    }
    // Without record_history the history stays empty.
    let mut x = vec![0.0; m * m];
    assert!(cg(&space, &b, &mut x, &opts(1e-6))
        .unwrap()
        .history
        .is_empty());
}

/// Wraps an operator and writes NaN into its output from the `poison_at`-th application on.
struct PoisonedOperator<'a> {
    inner: &'a CsrMatrix<f64>,
    calls: AtomicUsize,
    poison_at: usize,
}

impl LinearOperator<f64> for PoisonedOperator<'_> {
    fn nrows(&self) -> usize {
        self.inner.nrows()
    }
    fn ncols(&self) -> usize {
        self.inner.ncols()
    }
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        self.inner.matvec(x, y);
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 >= self.poison_at {
            y[y.len() / 2] = f64::NAN;
        }
    }
}

#[test]
fn nan_in_operator_output_is_reported_with_its_iteration() {
    let a = laplacian_2d(10);
    let op = PoisonedOperator {
        inner: &a,
        calls: AtomicUsize::new(0),
        poison_at: 5,
    };
    let b = pseudo_random(100, 2, -1.0, 1.0);
    let mut x = vec![0.0; 100];
    // Application 1 is the initial residual; application k + 1 belongs to iteration k.
    let err = pcg(&CpuSpace::new(&op).unwrap(), &b, &mut x, &opts(1e-12)).unwrap_err();
    match err {
        SolverError::NonFinite {
            quantity,
            iteration,
        } => {
            assert_eq!(iteration, 4);
            assert_eq!(quantity, "pᵀAp");
        }
        other => panic!("unexpected {other:?}"),
    }
    // Poisoned from the start: reported at iteration 0 (the initial residual).
    let op0 = PoisonedOperator {
        inner: &a,
        calls: AtomicUsize::new(0),
        poison_at: 1,
    };
    let err = cg(&CpuSpace::new(&op0).unwrap(), &b, &mut x, &opts(1e-12)).unwrap_err();
    assert!(matches!(err, SolverError::NonFinite { iteration: 0, .. }));
    assert!(err.to_string().contains("iteration 0"), "{err}");
    // A NaN right-hand side is caught before any iteration.
    let mut bad = b.clone();
    bad[3] = f64::INFINITY;
    assert!(matches!(
        cg(&CpuSpace::new(&a).unwrap(), &bad, &mut x, &opts(1e-12)),
        Err(SolverError::NonFinite { iteration: 0, .. })
    ));
}

#[test]
fn indefinite_matrices_are_reported_as_not_positive_definite() {
    // Negative definite: the very first curvature is negative.
    let mut neg = laplacian_2d(8);
    neg.values_mut().iter_mut().for_each(|v| *v = -*v);
    let b = pseudo_random(64, 4, 0.5, 1.0);
    let mut x = vec![0.0; 64];
    let err = cg(&CpuSpace::new(&neg).unwrap(), &b, &mut x, &opts(1e-10)).unwrap_err();
    assert!(
        matches!(err, SolverError::NotPositiveDefinite { iteration: 1, curvature } if curvature < 0.0)
    );
    assert!(err.to_string().contains("not positive definite"), "{err}");

    // Indefinite diag(1, −1): b = (1, 2) gives pᵀAp = 1 − 4 < 0 at once.
    let ind = csr_from_rows(2, vec![vec![(0, 1.0)], vec![(1, -1.0)]]);
    let err = cg(
        &CpuSpace::new(&ind).unwrap(),
        &vec![1.0, 2.0],
        &mut vec![0.0; 2],
        &opts(1e-10),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        SolverError::NotPositiveDefinite { iteration: 1, .. }
    ));

    // A shifted Laplacian with a few negative eigenvalues breaks down later.
    let m = 12;
    let (lmin, _) = laplacian_extreme_eigenvalues(m);
    let mut shifted = laplacian_2d(m);
    for r in 0..m * m {
        let k = shifted.position(r, r as u32).unwrap();
        shifted.values_mut()[k] -= 4.0 * lmin;
    }
    let b = pseudo_random(m * m, 8, -1.0, 1.0);
    let mut x = vec![0.0; m * m];
    match cg(&CpuSpace::new(&shifted).unwrap(), &b, &mut x, &opts(1e-12)) {
        Err(SolverError::NotPositiveDefinite { iteration, .. }) => assert!(iteration >= 1),
        other => panic!("expected NotPositiveDefinite, got {other:?}"),
    }

    // A Jacobi diagonal with a negative entry is refused up front.
    assert!(matches!(
        CpuSpace::with_operator_jacobi(&neg),
        Err(SolverError::InvalidPreconditioner { index: 0, .. })
    ));
}

#[test]
fn iteration_limit_is_reported_with_the_statistics() {
    let m = 20;
    let a = laplacian_2d(m);
    let b = pseudo_random(m * m, 6, -1.0, 1.0);
    let mut x = vec![0.0; m * m];
    let o = SolveOptions {
        rtol: 1e-12,
        max_iter: 5,
        record_history: true,
        ..SolveOptions::default()
    };
    let err = cg(&CpuSpace::new(&a).unwrap(), &b, &mut x, &o).unwrap_err();
    let msg = err.to_string();
    match err {
        SolverError::NotConverged(stats) => {
            assert_eq!(stats.iterations, 5);
            assert!(!stats.converged);
            assert_eq!(stats.reason, StopReason::MaxIterations);
            assert_eq!(stats.history.len(), 6);
            assert!(stats.final_residual < stats.initial_residual);
            assert!(
                msg.starts_with("did not converge after 5 iterations, residual"),
                "{msg}"
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    // The iterate reached is kept: its residual is the one reported.
    assert!(norm2(&x) > 0.0);
}

#[test]
fn residual_growth_is_reported_as_divergence() {
    // A = I + M K with K skew: pᵀAp = ‖p‖² > 0, yet the first CG step multiplies the
    // residual by about M. (CG is meant for SPD operators; this checks the guard.)
    let big = 1e9;
    let a = csr_from_rows(2, vec![vec![(0, 1.0), (1, big)], vec![(0, -big), (1, 1.0)]]);
    let mut x = vec![0.0; 2];
    let err = cg(
        &CpuSpace::new(&a).unwrap(),
        &vec![1.0, 1.0],
        &mut x,
        &opts(1e-10),
    )
    .unwrap_err();
    assert!(
        matches!(err, SolverError::Diverged { iteration: 1, residual, initial, .. } if residual > 1e8 * initial),
        "{err:?}"
    );
}

#[test]
fn zero_rhs_and_bad_options_and_sizes() {
    let a = laplacian_2d(4);
    let space = CpuSpace::new(&a).unwrap();
    let mut x = vec![1.0; 16];
    let stats = cg(&space, &vec![0.0; 16], &mut x, &opts(1e-8)).unwrap();
    assert_eq!(stats.reason, StopReason::ZeroRhs);
    assert!(x.iter().all(|&v| v == 0.0));
    assert!(matches!(
        cg(&space, &vec![1.0; 16], &mut x, &opts(-1.0)),
        Err(SolverError::InvalidOptions(_))
    ));
    assert!(matches!(
        cg(&space, &vec![1.0; 15], &mut x, &opts(1e-8)),
        Err(SolverError::DimensionMismatch { .. })
    ));
    let rect = CsrMatrix::<f64>::new(1, 2, vec![0, 1], vec![0], vec![1.0]).unwrap();
    assert!(matches!(
        CpuSpace::new(&rect),
        Err(SolverError::NotSquare { nrows: 1, ncols: 2 })
    ));
    // atol stops a solve that rtol alone would not.
    let b = pseudo_random(16, 1, -1.0, 1.0);
    let o = SolveOptions {
        rtol: 0.0,
        atol: 1e-3 * norm2(&b),
        ..SolveOptions::default()
    };
    let mut x = vec![0.0; 16];
    let stats = cg(&space, &b, &mut x, &o).unwrap();
    assert_eq!(stats.reason, StopReason::AbsoluteTolerance);
    assert!(stats.final_residual <= o.atol);
}

#[test]
fn f32_solve_is_close_to_f64() {
    let m = 16;
    let a = laplacian_2d(m);
    let u = pseudo_random(m * m, 12, -1.0, 1.0);
    let b = matvec(&a, &u);
    let mut x64 = vec![0.0; m * m];
    cg(&CpuSpace::new(&a).unwrap(), &b, &mut x64, &opts(1e-10)).unwrap();

    let a32: CsrMatrix<f32> = a.convert();
    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let mut x32 = vec![0.0f32; m * m];
    let space32 = CpuSpace::with_operator_jacobi(&a32).unwrap();
    let stats = pcg(&space32, &b32, &mut x32, &opts(1e-5)).unwrap();
    assert!(stats.converged);
    let x32_as_64: Vec<f64> = x32.iter().map(|&v| v.as_f64()).collect();
    let rel = dist(&x32_as_64, &x64) / norm2(&x64);
    // κ ≈ 116 for m = 16: the error is at most about κ · 1e-5 and in practice far less
    // (an f32 bug would show as an O(1) difference).
    assert!(rel < 3e-4, "f32 vs f64 relative difference {rel}");
}

// ---------------------------------------------------------------------------------------
// Direct solves
// ---------------------------------------------------------------------------------------

#[test]
fn direct_cholesky_and_lu_match_cg() {
    let m = 20;
    let a = laplacian_2d(m);
    let u = pseudo_random(m * m, 13, -1.0, 1.0);
    let b = matvec(&a, &u);
    let mut x_cg = vec![0.0; m * m];
    cg(&CpuSpace::new(&a).unwrap(), &b, &mut x_cg, &opts(1e-13)).unwrap();
    for kind in [DirectKind::Cholesky, DirectKind::Lu, DirectKind::Auto] {
        let x = solve_direct(&a, &b, kind).unwrap();
        assert!(dist(&x, &u) <= 1e-12 * norm2(&u), "{kind:?}");
        assert!(dist(&x, &x_cg) <= 1e-10 * norm2(&u), "{kind:?}");
    }
    let f = DirectFactorization::new(&a, DirectKind::Auto).unwrap();
    assert_eq!(f.kind(), DirectKind::Cholesky);
    assert_eq!(f.dim(), m * m);
    // One factorisation, several right-hand sides.
    for seed in 20..23 {
        let v = pseudo_random(m * m, seed, -1.0, 1.0);
        let x = f.solve(&matvec(&a, &v)).unwrap();
        assert!(dist(&x, &v) <= 1e-12 * norm2(&v));
    }
    // f32 input is solved in f64 and rounded back.
    let a32: CsrMatrix<f32> = a.convert();
    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let x32 = solve_direct(&a32, &b32, DirectKind::Auto).unwrap();
    let x32_as_64: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
    assert!(dist(&x32_as_64, &u) <= 1e-4 * norm2(&u));
}

#[test]
fn lu_solves_a_nonsymmetric_system() {
    let m = 16;
    let a = convection_diffusion_2d(m, 40.0);
    assert!(a.asymmetry() > 0.1);
    let u = pseudo_random(m * m, 14, -1.0, 1.0);
    let b = matvec(&a, &u);
    for kind in [DirectKind::Lu, DirectKind::Auto] {
        let x = solve_direct(&a, &b, kind).unwrap();
        assert!(dist(&x, &u) <= 1e-11 * norm2(&u), "{kind:?}");
    }
    assert_eq!(
        DirectFactorization::new(&a, DirectKind::Auto)
            .unwrap()
            .kind(),
        DirectKind::Lu
    );
    assert!(matches!(
        solve_direct(&a, &b, DirectKind::Cholesky),
        Err(SolverError::NotSymmetric { .. })
    ));
}

#[test]
fn auto_falls_back_to_lu_for_symmetric_indefinite_matrices() {
    let m = 12;
    let (lmin, _) = laplacian_extreme_eigenvalues(m);
    let mut a = laplacian_2d(m);
    for r in 0..m * m {
        let k = a.position(r, r as u32).unwrap();
        a.values_mut()[k] -= 3.3 * lmin;
    }
    let u = pseudo_random(m * m, 15, -1.0, 1.0);
    let b = matvec(&a, &u);
    let err = solve_direct(&a, &b, DirectKind::Cholesky).unwrap_err();
    assert!(
        matches!(err, SolverError::CholeskyNotPositiveDefinite { .. }),
        "{err:?}"
    );
    let f = DirectFactorization::new(&a, DirectKind::Auto).unwrap();
    assert_eq!(f.kind(), DirectKind::Lu);
    let x = f.solve(&b).unwrap();
    assert!(dist(&x, &u) <= 1e-10 * norm2(&u));
}

#[test]
fn singular_matrices_give_errors_not_panics() {
    // Numerically singular: rank one, all entries stored.
    let rank1 = csr_from_rows(2, vec![vec![(0, 1.0), (1, 2.0)], vec![(0, 2.0), (1, 4.0)]]);
    for kind in [DirectKind::Lu, DirectKind::Auto, DirectKind::Cholesky] {
        let err = solve_direct(&rank1, &[1.0, 0.0], kind).unwrap_err();
        assert!(
            matches!(
                err,
                SolverError::Singular(_) | SolverError::CholeskyNotPositiveDefinite { .. }
            ),
            "{kind:?}: {err:?}"
        );
    }
    // Structurally singular: an empty row.
    let empty_row = csr_from_rows(
        3,
        vec![vec![(0, 2.0), (1, 1.0)], vec![], vec![(1, 1.0), (2, 3.0)]],
    );
    for kind in [DirectKind::Lu, DirectKind::Auto] {
        let err = solve_direct(&empty_row, &[1.0, 1.0, 1.0], kind).unwrap_err();
        assert!(matches!(err, SolverError::Singular(_)), "{kind:?}: {err:?}");
        assert!(err.to_string().starts_with("matrix is singular"));
    }
    // The 1-D Laplacian with Neumann ends (constant null space) and an inconsistent rhs.
    let n = 30;
    let rows = (0..n)
        .map(|i| {
            let mut row = Vec::new();
            if i > 0 {
                row.push((i - 1, -1.0));
            }
            row.push((i, if i == 0 || i == n - 1 { 1.0 } else { 2.0 }));
            if i + 1 < n {
                row.push((i + 1, -1.0));
            }
            row
        })
        .collect();
    let neumann = csr_from_rows(n, rows);
    let b = vec![1.0; n];
    assert!(solve_direct(&neumann, &b, DirectKind::Lu).is_err());
    // Bad inputs.
    assert!(matches!(
        solve_direct(&rank1, &[1.0], DirectKind::Lu),
        Err(SolverError::DimensionMismatch { .. })
    ));
    let mut nan = laplacian_2d(3);
    nan.values_mut()[4] = f64::NAN;
    assert!(matches!(
        solve_direct(&nan, &[1.0; 9], DirectKind::Auto),
        Err(SolverError::NonFiniteInput {
            what: "matrix",
            index: 4
        })
    ));
}

// ---------------------------------------------------------------------------------------
// GMRES
// ---------------------------------------------------------------------------------------

fn gm(restart: usize, preconditioned: bool) -> GmresOptions {
    GmresOptions {
        restart,
        preconditioned,
        reorthogonalize: false,
    }
}

#[test]
fn gmres_solves_nonsymmetric_systems_like_lu() {
    let m = 24;
    for c in [40.0, 400.0] {
        let a = convection_diffusion_2d(m, c);
        assert!(a.asymmetry() > 0.05);
        let b = pseudo_random(m * m, 21, -1.0, 1.0);
        let x_lu = solve_direct(&a, &b, DirectKind::Lu).unwrap();
        let space = CpuSpace::new(&a).unwrap();
        let o = SolveOptions {
            rtol: 1e-12,
            record_history: true,
            ..SolveOptions::default()
        };
        let mut x = vec![0.0; m * m];
        let stats = gmres(&space, &b, &mut x, &o, &gm(40, false)).unwrap();
        assert!(stats.converged && stats.reason == StopReason::RelativeTolerance);
        // the reported residual is the true one, and it meets the target
        let r_true = dist(&matvec(&a, &x), &b);
        assert!((r_true - stats.final_residual).abs() <= 1e-3 * r_true + 1e-300);
        assert!(r_true <= stats.target, "{r_true} > {}", stats.target);
        assert!(
            dist(&x, &x_lu) <= 1e-9 * norm2(&x_lu),
            "c = {c}: GMRES and LU differ by {}",
            dist(&x, &x_lu) / norm2(&x_lu)
        );
        // GMRES minimises the residual over a growing space: it never rises within a
        // cycle, and a restart starts from the residual the cycle reached
        let h = &stats.history;
        assert_eq!(h.len(), stats.iterations + 1);
        assert!(
            h.windows(2).all(|w| w[1] <= w[0] * (1.0 + 1e-10)),
            "residual rose: {h:?}"
        );
        // far fewer iterations than unknowns
        assert!(
            stats.iterations < m * m / 4,
            "{} iterations",
            stats.iterations
        );
    }
}

#[test]
fn gmres_restart_length_trades_memory_for_iterations() {
    let m = 20;
    let a = convection_diffusion_2d(m, 100.0);
    let u = pseudo_random(m * m, 22, -1.0, 1.0);
    let b = matvec(&a, &u);
    let space = CpuSpace::new(&a).unwrap();
    let o = SolveOptions {
        rtol: 1e-10,
        record_history: true,
        ..SolveOptions::default()
    };
    let run = |restart: usize| {
        let mut x = vec![0.0; m * m];
        let s = gmres(&space, &b, &mut x, &o, &gm(restart, false)).unwrap();
        assert!(dist(&x, &u) <= 1e-7 * norm2(&u), "GMRES({restart})");
        s
    };
    let (s5, s20, s_full) = (run(5), run(20), run(m * m));
    // every restarted iterate lies in the same Krylov space x₀ + K_k(A, r₀) over which full
    // GMRES minimises the residual: full GMRES never needs more steps. (Between two
    // restart lengths there is no such order.)
    assert!(
        s_full.iterations <= s5.iterations.min(s20.iterations),
        "GMRES(5) {} GMRES(20) {} full {}",
        s5.iterations,
        s20.iterations,
        s_full.iterations
    );
    assert_eq!(s_full.history.len(), s_full.iterations + 1);
    // restarts: at every cycle end the history holds the true residual of the iterate,
    // which has fallen over the cycle
    for k in (5..s5.iterations).step_by(5) {
        assert!(s5.history[k] < s5.history[k - 5], "cycle ending at {k}");
    }

    // The cyclic shift: the residual of b = e₀ lies outside every Krylov space of dimension
    // below n, so GMRES(m < n) cannot reduce it at all, while full GMRES solves in n steps.
    let n = 12;
    let shift = csr_from_rows(n, (0..n).map(|i| vec![((i + n - 1) % n, 1.0)]).collect());
    let mut e0 = vec![0.0; n];
    e0[0] = 1.0;
    let shift_space = CpuSpace::new(&shift).unwrap();
    let mut x = vec![0.0; n];
    let err = gmres(&shift_space, &e0, &mut x, &opts(1e-10), &gm(4, false)).unwrap_err();
    assert!(
        matches!(err, SolverError::Stagnated { iteration: 4, restart: 4, residual } if (residual - 1.0).abs() < 1e-12),
        "{err:?}"
    );
    assert!(err.to_string().contains("GMRES(4) stagnated"), "{err}");
    let mut x = vec![0.0; n];
    let s = gmres(&shift_space, &e0, &mut x, &opts(1e-10), &gm(n, false)).unwrap();
    assert_eq!(s.iterations, n);
    assert!(dist(&matvec(&shift, &x), &e0) < 1e-12);
    // a restart longer than the dimension is capped (and solves just the same)
    let mut x = vec![0.0; n];
    let s = gmres(&shift_space, &e0, &mut x, &opts(1e-10), &gm(10 * n, false)).unwrap();
    assert_eq!(s.iterations, n);
}

#[test]
fn right_jacobi_preconditioning_cuts_gmres_iterations() {
    // A convection–diffusion matrix with rows and columns scaled over two decades.
    let m = 16;
    let s: Vec<f64> = pseudo_random(m * m, 23, 0.0, 2.0)
        .into_iter()
        .map(|e| 10f64.powf(e))
        .collect();
    let a = scale_symmetric(&convection_diffusion_2d(m, 60.0), &s);
    let u = pseudo_random(m * m, 24, -1.0, 1.0);
    let b = matvec(&a, &u);
    let o = opts(1e-10);
    let plain = CpuSpace::new(&a).unwrap();
    let jacobi = CpuSpace::with_operator_jacobi(&a).unwrap();
    let mut x_plain = vec![0.0; m * m];
    let s_plain = gmres(&plain, &b, &mut x_plain, &o, &gm(30, true)).unwrap();
    let mut x_pre = vec![0.0; m * m];
    let s_pre = gmres(&jacobi, &b, &mut x_pre, &o, &gm(30, true)).unwrap();
    assert!(
        3 * s_pre.iterations < s_plain.iterations,
        "Jacobi {} vs none {}",
        s_pre.iterations,
        s_plain.iterations
    );
    // right preconditioning: the stopping test is still on the unpreconditioned residual
    assert!(dist(&matvec(&a, &x_pre), &b) <= 1e-10 * norm2(&b));
    assert!(dist(&x_pre, &u) <= 1e-6 * norm2(&u));
    // `preconditioned: false` ignores the space's preconditioner
    let mut x = vec![0.0; m * m];
    let s_off = gmres(&jacobi, &b, &mut x, &o, &gm(30, false)).unwrap();
    let mut x = vec![0.0; m * m];
    let s_none = gmres(&plain, &b, &mut x, &o, &gm(30, false)).unwrap();
    assert_eq!(s_off.history, s_none.history);
}

#[test]
fn gmres_agrees_with_cg_on_spd_systems() {
    let m = 24;
    let a = laplacian_2d(m);
    let u = pseudo_random(m * m, 25, -1.0, 1.0);
    let b = matvec(&a, &u);
    let space = CpuSpace::new(&a).unwrap();
    let o = opts(1e-10);
    let mut x_cg = vec![0.0; m * m];
    let s_cg = cg(&space, &b, &mut x_cg, &o).unwrap();
    for reorthogonalize in [false, true] {
        let mut x = vec![0.0; m * m];
        let g = GmresOptions {
            restart: 200,
            preconditioned: false,
            reorthogonalize,
        };
        let s = gmres(&space, &b, &mut x, &o, &g).unwrap();
        // same Krylov spaces; GMRES minimises the residual over them, CG the energy error:
        // the GMRES residual is never larger, so it needs at most as many steps
        assert!(
            s.iterations <= s_cg.iterations && s.iterations + 5 >= s_cg.iterations,
            "GMRES {} vs CG {}",
            s.iterations,
            s_cg.iterations
        );
        assert!(dist(&x, &x_cg) <= 1e-8 * norm2(&x_cg));
    }
}

#[test]
fn gmres_failures_are_typed_errors() {
    let a = laplacian_2d(10);
    let b = pseudo_random(100, 26, -1.0, 1.0);
    let space = CpuSpace::new(&a).unwrap();
    // zero right-hand side: x = 0 at once
    let mut x = vec![1.0; 100];
    let s = gmres(&space, &vec![0.0; 100], &mut x, &opts(1e-8), &gm(10, false)).unwrap();
    assert_eq!(s.reason, StopReason::ZeroRhs);
    assert!(x.iter().all(|&v| v == 0.0));
    // options
    assert!(matches!(
        gmres(&space, &b, &mut x, &opts(1e-8), &gm(0, false)),
        Err(SolverError::InvalidOptions(_))
    ));
    assert!(matches!(
        gmres(&space, &b, &mut x, &opts(-1.0), &gm(10, false)),
        Err(SolverError::InvalidOptions(_))
    ));
    // NaN from the operator: application 1 is the initial residual, k + 1 iteration k
    let op = PoisonedOperator {
        inner: &a,
        calls: AtomicUsize::new(0),
        poison_at: 4,
    };
    let mut x = vec![0.0; 100];
    let err = gmres(
        &CpuSpace::new(&op).unwrap(),
        &b,
        &mut x,
        &opts(1e-12),
        &gm(10, false),
    )
    .unwrap_err();
    assert!(
        matches!(err, SolverError::NonFinite { iteration: 3, .. }),
        "{err:?}"
    );
    // a singular operator whose range misses b: the Hessenberg problem is singular
    let sing = csr_from_rows(2, vec![vec![(0, 1.0)], vec![(1, 0.0)]]);
    let mut x = vec![0.0; 2];
    let err = gmres(
        &CpuSpace::new(&sing).unwrap(),
        &vec![0.0, 1.0],
        &mut x,
        &opts(1e-10),
        &gm(5, false),
    )
    .unwrap_err();
    assert!(
        matches!(err, SolverError::Breakdown { iteration: 1, .. }),
        "{err:?}"
    );
    // the iteration limit, with the statistics and the iterate reached
    let o = SolveOptions {
        rtol: 1e-12,
        max_iter: 7,
        record_history: true,
        ..SolveOptions::default()
    };
    let mut x = vec![0.0; 100];
    match gmres(&space, &b, &mut x, &o, &gm(5, false)) {
        Err(SolverError::NotConverged(s)) => {
            assert_eq!(s.iterations, 7);
            assert_eq!(s.history.len(), 8);
            assert_eq!(s.reason, StopReason::MaxIterations);
            // the last cycle was cut short, and its iterate's true residual is reported
            let r_true = dist(&matvec(&a, &x), &b);
            assert!((s.final_residual - r_true).abs() <= 1e-10 * r_true);
            assert!(s.final_residual < s.initial_residual);
        }
        other => panic!("expected NotConverged, got {other:?}"),
    }
}

#[test]
fn gmres_f32_is_close_to_f64() {
    let m = 12;
    let a = convection_diffusion_2d(m, 30.0);
    let u = pseudo_random(m * m, 27, -1.0, 1.0);
    let b = matvec(&a, &u);
    let a32 = a.convert::<f32>();
    let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
    let mut x32 = vec![0.0f32; m * m];
    let s = gmres(
        &CpuSpace::with_operator_jacobi(&a32).unwrap(),
        &b32,
        &mut x32,
        &opts(1e-5),
        &gm(30, true),
    )
    .unwrap();
    assert!(s.converged);
    let x: Vec<f64> = x32.iter().map(|&v| v as f64).collect();
    assert!(dist(&x, &u) <= 1e-3 * norm2(&u));
}

// ---------------------------------------------------------------------------------------
// Newton
// ---------------------------------------------------------------------------------------

/// `−((1 + u²) u')' = f` on (0, 1), `u(0) = u(1) = 0`, by centred differences on `n`
/// interior points, with the face coefficient evaluated at the face average of `u`.
struct NonlinearDiffusion {
    n: usize,
    f: Vec<f64>,
}

impl NonlinearDiffusion {
    fn h2(&self) -> f64 {
        let h = 1.0 / (self.n + 1) as f64;
        h * h
    }
    /// `u` with the boundary zeros: `u_ext[i + 1] = u[i]`.
    fn extended(&self, u: &[f64]) -> Vec<f64> {
        let mut e = vec![0.0; self.n + 2];
        e[1..=self.n].copy_from_slice(u);
        e
    }
    /// The discrete operator `A(u) u` (the residual without `f`).
    fn operator(&self, u: &[f64]) -> Vec<f64> {
        let e = self.extended(u);
        let k = |a: f64, b: f64| 1.0 + (0.5 * (a + b)).powi(2);
        (1..=self.n)
            .map(|i| {
                let flux_right = k(e[i], e[i + 1]) * (e[i + 1] - e[i]);
                let flux_left = k(e[i - 1], e[i]) * (e[i] - e[i - 1]);
                -(flux_right - flux_left) / self.h2()
            })
            .collect()
    }
    /// The tridiagonal Jacobian, derived by hand.
    fn jacobian(&self, u: &[f64]) -> CsrMatrix<f64> {
        let e = self.extended(u);
        let h2 = self.h2();
        let rows = (1..=self.n)
            .map(|i| {
                let (mp, mm) = (0.5 * (e[i] + e[i + 1]), 0.5 * (e[i - 1] + e[i]));
                let (kp, km) = (1.0 + mp * mp, 1.0 + mm * mm);
                let (dp, dm) = (e[i + 1] - e[i], e[i] - e[i - 1]);
                let mut row = Vec::new();
                if i > 1 {
                    row.push((i - 2, (-km + mm * dm) / h2));
                }
                row.push((i - 1, (kp - mp * dp + km + mm * dm) / h2));
                if i < self.n {
                    row.push((i, (-kp - mp * dp) / h2));
                }
                row
            })
            .collect();
        csr_from_rows(self.n, rows)
    }
}

impl NonlinearProblem<f64> for NonlinearDiffusion {
    fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
        for ((ri, ai), fi) in r.iter_mut().zip(self.operator(u)).zip(&self.f) {
            *ri = ai - fi;
        }
        Ok(())
    }
    fn solve_jacobian(
        &self,
        u: &[f64],
        r: &[f64],
        du: &mut [f64],
    ) -> Result<LinearInfo, SolverError> {
        du.copy_from_slice(&solve_direct(&self.jacobian(u), r, DirectKind::Auto)?);
        Ok(LinearInfo::default())
    }
}

#[test]
fn newton_converges_quadratically_on_nonlinear_diffusion() {
    let n = 60;
    let x = |i: usize| (i + 1) as f64 / (n + 1) as f64;
    let exact: Vec<f64> = (0..n)
        .map(|i| 2.0 * (std::f64::consts::PI * x(i)).sin())
        .collect();
    let mut problem = NonlinearDiffusion { n, f: vec![0.0; n] };
    problem.f = problem.operator(&exact); // the discrete solution is `exact`

    // The hand-derived Jacobian agrees with central differences of the residual.
    let probe = pseudo_random(n, 16, -1.0, 1.0);
    let jac = problem.jacobian(&probe);
    let eps = 1e-6;
    for j in [0, n / 2, n - 1] {
        let (mut up, mut um) = (probe.clone(), probe.clone());
        up[j] += eps;
        um[j] -= eps;
        let (fp, fm) = (problem.operator(&up), problem.operator(&um));
        for i in 0..n {
            let fd = (fp[i] - fm[i]) / (2.0 * eps);
            assert!(
                (fd - jac.get(i, j)).abs() <= 1e-5 * (1.0 + fd.abs()),
                "J[{i},{j}]"
            );
        }
    }

    let mut u = vec![0.0; n];
    let o = NewtonOptions {
        rtol: 1e-13,
        ..NewtonOptions::default()
    };
    let stats = newton(&problem, &mut u, &o).unwrap();
    assert!(stats.converged);
    assert!(dist(&u, &exact) <= 1e-9 * norm2(&exact));
    assert_eq!(stats.linear_iterations, 0);
    let h = &stats.residual_history;
    assert_eq!(h.len(), stats.iterations + 1);
    assert!(stats.iterations <= 10, "{h:?}");
    // The early steps from u = 0 are damped by the line search, so ‖F‖ falls monotonically,
    // and the last steps are full Newton steps.
    assert!(h.windows(2).all(|w| w[1] < w[0]), "{h:?}");
    let lambdas = &stats.step_lengths;
    assert!(
        lambdas[lambdas.len() - 3..].iter().all(|&l| l == 1.0),
        "{lambdas:?}"
    );
    // Quadratic convergence: in the full-step regime, above the rounding floor, one
    // constant C bounds r_{k+1} <= C r_k², and the reduction factor r_{k+1}/r_k collapses.
    let floor = 1e-10 * h[0];
    let tail: Vec<(f64, f64)> = (0..stats.iterations)
        .filter(|&k| lambdas[k] == 1.0 && h[k] < 0.1 * h[0] && h[k + 1] > floor)
        .map(|k| (h[k], h[k + 1]))
        .collect();
    assert!(
        tail.len() >= 2,
        "too few steps in the asymptotic regime: {h:?}"
    );
    let constants: Vec<f64> = tail.iter().map(|&(a, b)| b / (a * a)).collect();
    let (cmin, cmax) = constants
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), &c| (lo.min(c), hi.max(c)));
    assert!(
        cmax <= 10.0 * cmin,
        "r_(k+1)/r_k^2 not bounded: {constants:?} from {h:?}"
    );
    let last = tail.last().unwrap();
    assert!(last.1 / last.0 < 1e-3, "not superlinear: {h:?}");
}

/// The 1-D nonlinear diffusion with GMRES Jacobian solves, through [`NonlinearSpace`].
struct NewtonGmres<'a>(&'a NonlinearDiffusion);

impl NonlinearSpace<f64> for NewtonGmres<'_> {
    type Vector = Vec<f64>;
    fn zeros(&self) -> Result<Vec<f64>, SolverError> {
        Ok(vec![0.0; self.0.n])
    }
    fn norm(&self, v: &Vec<f64>) -> Result<f64, SolverError> {
        Ok(norm2(v))
    }
    fn copy(&self, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<(), SolverError> {
        y.copy_from_slice(x);
        Ok(())
    }
    fn axpy(&self, alpha: f64, x: &Vec<f64>, y: &mut Vec<f64>) -> Result<(), SolverError> {
        y.iter_mut().zip(x).for_each(|(yi, xi)| *yi += alpha * xi);
        Ok(())
    }
    fn residual(&self, u: &Vec<f64>, r: &mut Vec<f64>) -> Result<(), SolverError> {
        self.0.residual(u, r)
    }
    fn solve_jacobian(
        &self,
        u: &Vec<f64>,
        r: &Vec<f64>,
        du: &mut Vec<f64>,
    ) -> Result<LinearInfo, SolverError> {
        let jac = self.0.jacobian(u);
        let space = CpuSpace::with_operator_jacobi(&jac)?;
        assert_eq!(space.dim(), r.len());
        let stats = gmres(&space, r, du, &opts(1e-12), &GmresOptions::default())?;
        Ok(LinearInfo {
            iterations: stats.iterations,
        })
    }
}

#[test]
fn newton_gmres_through_a_nonlinear_space_matches_newton_direct() {
    let n = 60;
    let x = |i: usize| (i + 1) as f64 / (n + 1) as f64;
    let exact: Vec<f64> = (0..n)
        .map(|i| 2.0 * (std::f64::consts::PI * x(i)).sin() + x(i))
        .collect();
    let mut problem = NonlinearDiffusion { n, f: vec![0.0; n] };
    problem.f = problem.operator(&exact);
    assert!(problem.jacobian(&exact).asymmetry() > 1e-3);
    let o = NewtonOptions {
        rtol: 1e-12,
        ..NewtonOptions::default()
    };
    let mut u_direct = vec![0.0; n];
    let direct = newton(&problem, &mut u_direct, &o).unwrap();
    assert_eq!(direct.step_linear_iterations, vec![0; direct.iterations]);
    let mut u = vec![0.0; n];
    let stats = newton_in(&NewtonGmres(&problem), &mut u, &o).unwrap();
    assert!(stats.converged);
    assert!(dist(&u, &u_direct) <= 1e-10 * norm2(&u_direct));
    assert!(dist(&u, &exact) <= 1e-9 * norm2(&exact));
    // the same Newton iteration (solves accurate to 1e-12), with the Krylov work per step
    assert_eq!(stats.iterations, direct.iterations);
    assert!(stats
        .step_lengths
        .iter()
        .zip(&direct.step_lengths)
        .all(|(a, b)| (a - b).abs() <= 1e-6 * b));
    assert_eq!(stats.step_linear_iterations.len(), stats.iterations);
    assert!(stats.step_linear_iterations.iter().all(|&k| k > 0));
    assert_eq!(
        stats.step_linear_iterations.iter().sum::<usize>(),
        stats.linear_iterations
    );
}

/// `F_i(u) = atan(u_i − c_i)`: Newton's full step overshoots and diverges when started more
/// than about 1.39 from the root.
struct Arctan {
    c: Vec<f64>,
}

impl NonlinearProblem<f64> for Arctan {
    fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
        for ((ri, ui), ci) in r.iter_mut().zip(u).zip(&self.c) {
            *ri = (ui - ci).atan();
        }
        Ok(())
    }
    fn solve_jacobian(
        &self,
        u: &[f64],
        r: &[f64],
        du: &mut [f64],
    ) -> Result<LinearInfo, SolverError> {
        for i in 0..u.len() {
            let d = u[i] - self.c[i];
            du[i] = r[i] * (1.0 + d * d);
        }
        Ok(LinearInfo::default())
    }
}

#[test]
fn line_search_rescues_a_diverging_newton_iteration() {
    let problem = Arctan {
        c: vec![0.5, -1.0, 2.0],
    };
    let start = vec![3.5, -3.5, 5.0];
    let full = NewtonOptions {
        line_search: false,
        ..NewtonOptions::default()
    };
    let mut u = start.clone();
    let err = newton(&problem, &mut u, &full).unwrap_err();
    assert!(
        matches!(
            err,
            SolverError::NonFinite { .. }
                | SolverError::Diverged { .. }
                | SolverError::NewtonNotConverged(_)
        ),
        "{err:?}"
    );

    let mut u = start.clone();
    let stats = newton(&problem, &mut u, &NewtonOptions::default()).unwrap();
    assert!(stats.converged);
    assert!(dist(&u, &problem.c) < 1e-9);
    // The line search had to shorten the first step, and ‖F‖ fell monotonically.
    assert!(stats.step_lengths[0] < 1.0);
    assert!(stats.residual_history.windows(2).all(|w| w[1] < w[0]));
}

/// `−Δu + u³ = f` on the unit square (5-point stencil scaled by 1/h²), Jacobian solved by
/// Jacobi-PCG: an inexact Newton–Krylov method.
struct CubicReaction {
    m: usize,
    lap: CsrMatrix<f64>,
    f: Vec<f64>,
}

impl NonlinearProblem<f64> for CubicReaction {
    fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
        self.lap.matvec(u, r);
        for ((ri, ui), fi) in r.iter_mut().zip(u).zip(&self.f) {
            *ri += ui * ui * ui - fi;
        }
        Ok(())
    }
    fn solve_jacobian(
        &self,
        u: &[f64],
        r: &[f64],
        du: &mut [f64],
    ) -> Result<LinearInfo, SolverError> {
        let mut jac = self.lap.clone();
        for i in 0..self.m * self.m {
            let k = jac.position(i, i as u32).unwrap();
            jac.values_mut()[k] += 3.0 * u[i] * u[i];
        }
        let space = CpuSpace::with_operator_jacobi(&jac)?;
        let mut x = vec![0.0; r.len()];
        let stats = pcg(&space, &r.to_vec(), &mut x, &opts(1e-12))?;
        du.copy_from_slice(&x);
        Ok(LinearInfo {
            iterations: stats.iterations,
        })
    }
}

#[test]
fn newton_krylov_on_cubic_reaction_diffusion() {
    let m = 20;
    let h = 1.0 / (m + 1) as f64;
    let mut lap = laplacian_2d(m);
    lap.values_mut().iter_mut().for_each(|v| *v /= h * h);
    let exact: Vec<f64> = pseudo_random(m * m, 17, 0.0, 3.0);
    let mut f = vec![0.0; m * m];
    lap.matvec(&exact, &mut f);
    for (fi, ui) in f.iter_mut().zip(&exact) {
        *fi += ui * ui * ui;
    }
    let problem = CubicReaction { m, lap, f };
    let mut u = vec![0.0; m * m];
    let stats = newton(&problem, &mut u, &NewtonOptions::default()).unwrap();
    assert!(stats.converged);
    assert!(dist(&u, &exact) <= 1e-8 * norm2(&exact));
    assert!(stats.linear_iterations >= stats.iterations);

    // The iteration limit is reported with the statistics.
    let mut u = vec![0.0; m * m];
    let o = NewtonOptions {
        max_iter: 1,
        ..NewtonOptions::default()
    };
    match newton(&problem, &mut u, &o) {
        Err(SolverError::NewtonNotConverged(s)) => {
            assert_eq!(s.iterations, 1);
            assert!(!s.converged);
            assert_eq!(s.residual_history.len(), 2);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn newton_reports_nan_in_the_residual() {
    struct Sqrt;
    impl NonlinearProblem<f64> for Sqrt {
        fn residual(&self, u: &[f64], r: &mut [f64]) -> Result<(), SolverError> {
            r[0] = u[0].sqrt() - 1.0;
            Ok(())
        }
        fn solve_jacobian(
            &self,
            u: &[f64],
            r: &[f64],
            du: &mut [f64],
        ) -> Result<LinearInfo, SolverError> {
            du[0] = r[0] * 2.0 * u[0].sqrt();
            Ok(LinearInfo::default())
        }
    }
    let err = newton(&Sqrt, &mut [-1.0], &NewtonOptions::default()).unwrap_err();
    assert!(
        matches!(err, SolverError::NonFinite { iteration: 0, .. }),
        "{err:?}"
    );
    // From u = 9 the full step lands at u = −3 (NaN residual); the line search avoids it.
    let full = NewtonOptions {
        line_search: false,
        ..NewtonOptions::default()
    };
    let err = newton(&Sqrt, &mut [9.0], &full).unwrap_err();
    assert!(
        matches!(err, SolverError::NonFinite { iteration: 1, .. }),
        "{err:?}"
    );
    let mut u = [9.0];
    newton(&Sqrt, &mut u, &NewtonOptions::default()).unwrap();
    assert!((u[0] - 1.0).abs() < 1e-9);
}
