//! The one error type of the solver room.
//!
//! Every failure a solve can meet is a variant with the numbers a user needs to understand
//! it (the iteration, the offending value), so that the CLI can print it as it stands.
//! Backends (the GPU) report their own failures through [`SolverError::Backend`].

use crate::krylov::SolveStats;
use crate::newton::NewtonStats;

/// Why a linear or nonlinear solve failed.
#[derive(Debug, thiserror::Error)]
pub enum SolverError {
    /// A vector or matrix has the wrong size for the operator it is used with.
    #[error("{what}: expected length {expected}, got {found}")]
    DimensionMismatch {
        /// Which vector or matrix.
        what: &'static str,
        /// The length the operator needs.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// A solver was given a rectangular operator or matrix.
    #[error("operator is not square ({nrows} x {ncols})")]
    NotSquare {
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
    },
    /// Tolerances or limits that make no sense (negative, NaN, ...).
    #[error("invalid solver options: {0}")]
    InvalidOptions(String),
    /// A Jacobi diagonal entry is zero, negative or not finite.
    #[error(
        "Jacobi preconditioner: diagonal entry {index} is {value:e}; it must be positive and finite"
    )]
    InvalidPreconditioner {
        /// Row of the offending entry.
        index: usize,
        /// Its value.
        value: f64,
    },
    /// Jacobi preconditioning was requested from an operator that cannot give its diagonal.
    #[error("the operator cannot provide its diagonal for Jacobi preconditioning")]
    NoDiagonal,
    /// A NaN or infinity appeared; `iteration` 0 is the set-up (initial residual).
    #[error("NaN or Inf in {quantity} at iteration {iteration}")]
    NonFinite {
        /// The quantity that became non-finite (for example `"pᵀAp"`).
        quantity: &'static str,
        /// The iteration (1 is the first; 0 is before the first).
        iteration: usize,
    },
    /// CG met a direction of non-positive curvature: the operator is not SPD.
    #[error("operator not positive definite: pᵀAp = {curvature:e} at iteration {iteration}")]
    NotPositiveDefinite {
        /// The iteration (1 is the first).
        iteration: usize,
        /// The value of `pᵀAp`.
        curvature: f64,
    },
    /// PCG met `rᵀM⁻¹r <= 0`: the preconditioner is not SPD.
    #[error("preconditioner not positive definite: rᵀM⁻¹r = {value:e} at iteration {iteration}")]
    PreconditionerNotPositiveDefinite {
        /// The iteration (0 is the set-up).
        iteration: usize,
        /// The value of `rᵀM⁻¹r`.
        value: f64,
    },
    /// The residual grew by more than the divergence factor over the initial residual.
    #[error(
        "diverged at iteration {iteration}: residual {residual:e} exceeds {factor:e} x the initial residual {initial:e}"
    )]
    Diverged {
        /// The iteration (1 is the first).
        iteration: usize,
        /// The residual norm reached.
        residual: f64,
        /// The initial residual norm.
        initial: f64,
        /// The allowed growth factor.
        factor: f64,
    },
    /// GMRES met a singular least-squares problem: the new Arnoldi vector vanished and the
    /// rotated Hessenberg diagonal is zero, so the preconditioned operator is singular on
    /// the Krylov space and no iterate in it reduces the residual further.
    #[error(
        "GMRES breakdown at iteration {iteration}: the operator (or preconditioner) is singular on the Krylov space, residual {residual:e}"
    )]
    Breakdown {
        /// The iteration (1 is the first).
        iteration: usize,
        /// The residual norm when it happened.
        residual: f64,
    },
    /// A whole GMRES(m) restart cycle left the residual where it was (restarted GMRES can
    /// stall on nonnormal operators whose behaviour needs more than `m` basis vectors).
    #[error(
        "GMRES({restart}) stagnated: the restart cycle ending at iteration {iteration} did not reduce the residual {residual:e}; use a longer restart or a preconditioner"
    )]
    Stagnated {
        /// The last iteration of the cycle.
        iteration: usize,
        /// The residual norm that was not reduced.
        residual: f64,
        /// The restart length.
        restart: usize,
    },
    /// The Krylov solver reached its iteration limit; the statistics are kept so that the
    /// caller can still print or inspect them (the iterate is left in the solution vector).
    #[error(
        "did not converge after {} iterations, residual {:e} (relative {:e}, target {:e})",
        .0.iterations, .0.final_residual, .0.relative_residual(), .0.target
    )]
    NotConverged(Box<SolveStats>),
    /// The method's own residual (CG's recurrence, GMRES's least-squares estimate) fell
    /// below the target or well below the true residual `‖b − A x‖` of the iterate, which
    /// stayed above the target, and a restart from the true residual did not reduce it:
    /// the tolerance is below what the arithmetic can resolve for this system. The
    /// statistics (with the true residual reached) are kept and the iterate is left in the
    /// solution vector.
    #[error(
        "tolerance below the rounding level: after {} iterations the true residual is {:e} (relative {:e}) against the target {:e}, and a restart from it did not reduce it; raise the tolerance or use higher precision",
        .0.iterations, .0.final_residual, .0.relative_residual(), .0.target
    )]
    AccuracyLimit(Box<SolveStats>),
    /// An input of a direct solve (matrix entry or right-hand side) is NaN or infinite.
    #[error("NaN or Inf in {what} at entry {index}")]
    NonFiniteInput {
        /// `"matrix"` or `"right-hand side"`.
        what: &'static str,
        /// Position in the value array.
        index: usize,
    },
    /// Cholesky was asked for a matrix that is not symmetric.
    #[error(
        "matrix is not symmetric (relative asymmetry {asymmetry:e}); Cholesky needs a symmetric matrix"
    )]
    NotSymmetric {
        /// `max |A_ij - A_ji| / max |A_ij|`.
        asymmetry: f64,
    },
    /// The sparse Cholesky factorisation met a non-positive pivot.
    #[error("Cholesky factorisation failed: matrix not positive definite (pivot {pivot})")]
    CholeskyNotPositiveDefinite {
        /// The column at which the factorisation stopped.
        pivot: usize,
    },
    /// The matrix is singular (structurally or numerically) or so badly conditioned that
    /// the direct solution is meaningless.
    #[error("matrix is singular: {0}")]
    Singular(String),
    /// A factorisation (or another step) would not fit in the available memory, refused
    /// before allocating with the estimate; or an allocation failed.
    #[error(transparent)]
    Memory(#[from] ferrofem_base::MemoryError),
    /// The factorisation library failed for a non-numerical reason.
    #[error("sparse factorisation failed: {0}")]
    Factorization(String),
    /// Newton's backtracking line search could not reduce the residual.
    #[error(
        "Newton line search failed at iteration {iteration}: no step length >= {min_step:e} reduces the residual {residual:e}"
    )]
    LineSearchFailed {
        /// The Newton iteration (1 is the first).
        iteration: usize,
        /// The residual norm that could not be reduced.
        residual: f64,
        /// The smallest step length tried.
        min_step: f64,
    },
    /// Newton reached its iteration limit; the statistics are kept for the caller.
    #[error(
        "Newton did not converge after {} iterations, residual {:e}",
        .0.iterations, .0.final_residual()
    )]
    NewtonNotConverged(Box<NewtonStats>),
    /// A failure inside a vector backend (GPU out of memory, failed launch, ...) or inside a
    /// user-supplied problem, passed through with its own message.
    #[error("backend error: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
}

impl SolverError {
    /// Wraps a backend's own error (or message) as [`SolverError::Backend`].
    pub fn backend(err: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        SolverError::Backend(err.into())
    }
}
