//! Restarted GMRES(m) with right preconditioning, written once against [`KrylovSpace`], so
//! that the same code runs on host vectors and on device buffers.
//!
//! **Method.** Each restart cycle builds an orthonormal basis `v₀ … v_j` of the Krylov
//! space of `A M⁻¹` from `r₀ = b − A x₀` by Arnoldi with modified Gram–Schmidt, and
//! minimises `‖β e₁ − H̄ y‖` over `y`, where `H̄` is the `(j+1) × j` Hessenberg matrix. The
//! small least-squares problem lives on the host in `f64` and is kept in triangular form by
//! Givens rotations as the basis grows, which also gives the residual norm of every step
//! for free. At the end of a cycle `x ← x + M⁻¹ (V y)`: the preconditioned basis is never
//! stored (one extra preconditioner application per cycle instead of `m` vectors).
//!
//! **Right preconditioning** keeps the minimised quantity the *unpreconditioned* residual
//! `‖b − A x‖₂`, so the stopping test is the same as CG's and PCG's
//! (`‖b − A x‖₂ <= max(rtol · ‖b‖₂, atol)`) and runs with and without a preconditioner
//! compare. Within a cycle the test uses the least-squares residual; at the end of every
//! cycle (and before reporting convergence) the true residual `b − A x` is recomputed, and
//! a cycle whose estimate met the target but whose true residual does not is followed by
//! another cycle. When two cycles in a row end with their own residual well below the
//! true one and fail to halve the true residual, it sits at the rounding floor of the
//! precision and the solve stops with [`SolverError::AccuracyLimit`]. [`SolveStats::final_residual`] is always the recomputed
//! residual of the returned iterate.
//!
//! **Orthogonalisation.** Modified Gram–Schmidt, one pass by default: MGS-GMRES is
//! backward stable (the basis loses orthogonality only once the residual has reached the
//! level of rounding relative to `‖A‖‖x‖`), so a second pass does not change the
//! iterations in practice, while it doubles the dot products and vector updates of the
//! orthogonalisation, which on a device are the bandwidth-bound part of every iteration
//! (and each dot is a device-to-host round trip). [`GmresOptions::reorthogonalize`] turns
//! the second pass on for the cases where it matters (f32 vectors with tight tolerances,
//! very ill-conditioned operators).
//!
//! **Counting.** An iteration is one Arnoldi step: one application of `A` and one of
//! `M⁻¹`. The residual recomputed at each restart is one more application of `A` that is
//! not counted as an iteration (as CG's set-up residual is not).
//!
//! **Failures** are typed errors: NaN/Inf in the residual or in a Hessenberg entry
//! ([`SolverError::NonFinite`]), a singular least-squares problem
//! ([`SolverError::Breakdown`]), a restart cycle that does not reduce the residual at all
//! ([`SolverError::Stagnated`]), growth of the true residual beyond `divergence_factor` ×
//! the initial one ([`SolverError::Diverged`], possible only through rounding), and the
//! iteration limit ([`SolverError::NotConverged`], with the statistics; the last iterate is
//! left in `x`). When `b = 0` the solve returns `x = 0` at once.

use ferrofem_base::Real;

use crate::krylov::{begin_solve, finite, stop_reason};
use crate::{KrylovSpace, SolveOptions, SolveStats, SolverError, StopReason};

/// The GMRES-specific settings (the tolerances and limits are [`SolveOptions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GmresOptions {
    /// Basis vectors per restart cycle, `m` (the solve keeps `m + 1` of them, plus three
    /// work vectors). Capped at the dimension of the space.
    pub restart: usize,
    /// Right-precondition with the space's preconditioner ([`KrylovSpace::precondition`]);
    /// otherwise it is not called at all.
    pub preconditioned: bool,
    /// A second modified Gram–Schmidt pass against the basis in every iteration (see the
    /// module documentation for why it is off by default).
    pub reorthogonalize: bool,
}

impl Default for GmresOptions {
    /// GMRES(30), right-preconditioned with the space's preconditioner, one MGS pass.
    fn default() -> Self {
        GmresOptions {
            restart: 30,
            preconditioned: true,
            reorthogonalize: false,
        }
    }
}

impl GmresOptions {
    /// Checks that the restart length is at least 1.
    pub fn validate(&self) -> Result<(), SolverError> {
        if self.restart == 0 {
            return Err(SolverError::InvalidOptions(
                "GMRES restart length must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// The Hessenberg least-squares problem of one cycle, in `f64` on the host: the columns of
/// `H̄` reduced to upper-triangular form by the Givens rotations `(c_i, s_i)`, and the
/// rotated right-hand side `g` (initially `β e₁`), whose last entry is the residual.
struct LeastSquares {
    /// Leading dimension `m + 1`; column `j` holds rows `0..=j+1`.
    ld: usize,
    h: Vec<f64>,
    cs: Vec<f64>,
    sn: Vec<f64>,
    g: Vec<f64>,
}

impl LeastSquares {
    fn new(m: usize) -> LeastSquares {
        LeastSquares {
            ld: m + 1,
            h: vec![0.0; (m + 1) * m],
            cs: vec![0.0; m],
            sn: vec![0.0; m],
            g: vec![0.0; m + 1],
        }
    }

    fn reset(&mut self, beta: f64) {
        self.g.iter_mut().for_each(|v| *v = 0.0);
        self.g[0] = beta;
    }

    fn at(&mut self, i: usize, j: usize) -> &mut f64 {
        &mut self.h[i + j * self.ld]
    }

    /// Rotates the new column `j` (already holding `h_{0..=j+1, j}`) by the previous
    /// rotations and a new one that zeroes `h_{j+1, j}`. Returns the new residual norm
    /// `|g_{j+1}|`, or `None` when the rotated diagonal is zero (a singular problem).
    fn add_column(&mut self, j: usize) -> Option<f64> {
        for i in 0..j {
            let (c, s) = (self.cs[i], self.sn[i]);
            let (a, b) = (*self.at(i, j), *self.at(i + 1, j));
            *self.at(i, j) = c * a + s * b;
            *self.at(i + 1, j) = -s * a + c * b;
        }
        let (a, b) = (*self.at(j, j), *self.at(j + 1, j));
        let r = a.hypot(b);
        if r.is_nan() || r <= 0.0 {
            return None;
        }
        let (c, s) = (a / r, b / r);
        self.cs[j] = c;
        self.sn[j] = s;
        *self.at(j, j) = r;
        *self.at(j + 1, j) = 0.0;
        self.g[j + 1] = -s * self.g[j];
        self.g[j] *= c;
        Some(self.g[j + 1].abs())
    }

    /// The coefficients `y` of the first `k` basis vectors: `R y = g` by back substitution.
    fn solve(&mut self, k: usize) -> Vec<f64> {
        let mut y = vec![0.0; k];
        for i in (0..k).rev() {
            let mut s = self.g[i];
            for (l, yl) in y.iter().enumerate().skip(i + 1) {
                s -= self.h[i + l * self.ld] * yl;
            }
            y[i] = s / self.h[i + i * self.ld];
        }
        y
    }
}

/// Solves `A x = b` by restarted, right-preconditioned GMRES(m), starting from the `x`
/// given.
///
/// `A` may be any nonsingular operator (symmetric or not); with
/// [`GmresOptions::preconditioned`] the space's preconditioner `M⁻¹` is applied on the
/// right and must be nonsingular. See the module documentation for the stopping test,
/// the counting of iterations and the errors.
pub fn gmres<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &mut S::Vector,
    opts: &SolveOptions,
    gopts: &GmresOptions,
) -> Result<SolveStats, SolverError> {
    opts.validate()?;
    gopts.validate()?;
    let (mut stats, finished) = begin_solve(space, b, x, opts)?;
    if finished {
        return Ok(stats);
    }
    let rhs_norm = stats.rhs_norm;
    let zero = space.zeros()?;
    let stop_reason = |rnorm: f64| stop_reason(opts, rhs_norm, rnorm);

    let m = gopts.restart.min(space.dim().max(1));
    // The basis grows on demand (a solve that converges in a few steps allocates a few).
    let mut basis: Vec<S::Vector> = vec![space.zeros()?];
    let mut z = if gopts.preconditioned {
        Some(space.zeros()?)
    } else {
        None
    };
    let mut sum = if gopts.preconditioned {
        Some(space.zeros()?)
    } else {
        None
    };
    let mut ls = LeastSquares::new(m);

    // r₀ = b − A x₀ in v₀.
    let mut beta = true_residual(space, b, x, &mut basis[0], 0)?;
    stats.initial_residual = beta;
    stats.final_residual = beta;
    stats.recursive_residual = beta;
    // the true residual after the last cycle whose estimate met the target but whose true
    // residual did not, to tell progress from the rounding floor
    let mut floor_at: Option<f64> = None;
    if opts.record_history {
        stats.history.push(beta);
    }
    let mut k = 0usize;
    loop {
        if let Some(reason) = stop_reason(beta) {
            stats.converged = true;
            stats.reason = reason;
            return Ok(stats);
        }
        if beta > opts.divergence_factor * stats.initial_residual {
            return Err(SolverError::Diverged {
                iteration: k,
                residual: beta,
                initial: stats.initial_residual,
                factor: opts.divergence_factor,
            });
        }
        if k >= opts.max_iter {
            return Err(SolverError::NotConverged(Box::new(stats)));
        }

        // One cycle: Arnoldi from v₀ = r / β.
        space.xpby(&zero, T::of(1.0 / beta), &mut basis[0])?;
        ls.reset(beta);
        let mut steps = 0;
        let mut estimate = beta;
        for j in 0..m {
            if k >= opts.max_iter {
                break;
            }
            k += 1;
            if basis.len() <= j + 1 {
                basis.push(space.zeros()?);
            }
            let (head, tail) = basis.split_at_mut(j + 1);
            let w = &mut tail[0];
            match &mut z {
                Some(z) => {
                    space.precondition(&head[j], z)?;
                    space.apply(z, w)?;
                }
                None => space.apply(&head[j], w)?,
            }
            // Modified Gram–Schmidt (optionally twice); ‖w‖² before = Σ h_ij² + h_{j+1,j}².
            let passes = if gopts.reorthogonalize { 2 } else { 1 };
            for _ in 0..passes {
                for (i, vi) in head.iter().enumerate() {
                    let hij = finite(space.dot(vi, w)?, "Arnoldi coefficient", k)?;
                    space.axpy(T::of(-hij), vi, w)?;
                    *ls.at(i, j) += hij;
                }
            }
            let hn = finite(space.norm(w)?, "Arnoldi vector norm", k)?;
            let projected: f64 = (0..=j).map(|i| ls.h[i + j * ls.ld].powi(2)).sum();
            let w_norm = (projected + hn * hn).sqrt();
            *ls.at(j + 1, j) = hn;
            let residual = match ls.add_column(j) {
                Some(r) => r,
                None => {
                    return Err(SolverError::Breakdown {
                        iteration: k,
                        residual: estimate,
                    })
                }
            };
            estimate = residual;
            steps = j + 1;
            stats.iterations = k;
            stats.final_residual = estimate;
            stats.recursive_residual = estimate;
            if opts.record_history {
                stats.history.push(estimate);
            }
            // Happy breakdown: A M⁻¹ v_j lies in the basis, the solution is in the space.
            let invariant = hn <= 8.0 * T::EPS * w_norm;
            if !invariant {
                space.xpby(&zero, T::of(1.0 / hn), w)?;
            }
            if invariant || stop_reason(estimate).is_some() {
                break;
            }
        }

        // x ← x + M⁻¹ V y.
        let y = ls.solve(steps);
        for &yi in &y {
            finite(yi, "least-squares solution", k)?;
        }
        match (&mut z, &mut sum) {
            (Some(z), Some(sum)) => {
                space.copy(&zero, sum)?;
                for (vi, &yi) in basis.iter().zip(&y) {
                    space.axpy(T::of(yi), vi, sum)?;
                }
                space.precondition(sum, z)?;
                space.axpy(T::one(), z, x)?;
            }
            _ => {
                for (vi, &yi) in basis.iter().zip(&y) {
                    space.axpy(T::of(yi), vi, x)?;
                }
            }
        }
        // Clear the Hessenberg columns used, for the next cycle.
        ls.h.iter_mut().for_each(|v| *v = 0.0);

        let previous = beta;
        beta = true_residual(space, b, x, &mut basis[0], k)?;
        stats.final_residual = beta;
        if opts.record_history {
            if let Some(last) = stats.history.last_mut() {
                *last = beta;
            }
        }
        // A cycle whose own residual fell well below the true one was misled by rounding:
        // two such cycles in a row that do not halve the true residual show the floor of
        // the precision. A cycle that did not even believe in progress has stagnated.
        let misled = stop_reason(beta).is_none() && estimate < 0.5 * beta;
        if misled {
            if floor_at.is_some_and(|before| beta > 0.5 * before) {
                stats.reason = StopReason::AccuracyLimit;
                return Err(SolverError::AccuracyLimit(Box::new(stats)));
            }
            floor_at = Some(beta);
        } else if stop_reason(beta).is_none()
            && k < opts.max_iter
            && beta >= previous * (1.0 - T::EPS)
        {
            return Err(SolverError::Stagnated {
                iteration: k,
                residual: beta,
                restart: m,
            });
        }
    }
}

/// `r ← b − A x`; returns `‖r‖₂` (an error when it is not finite).
fn true_residual<T: Real, S: KrylovSpace<T>>(
    space: &S,
    b: &S::Vector,
    x: &S::Vector,
    r: &mut S::Vector,
    iteration: usize,
) -> Result<f64, SolverError> {
    space.apply(x, r)?;
    space.xpby(b, -T::one(), r)?;
    let quantity = if iteration == 0 {
        "initial residual"
    } else {
        "residual"
    };
    finite(space.norm(r)?, quantity, iteration)
}
