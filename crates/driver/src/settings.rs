//! How to solve, independently of the problem: the precision, the linear solver and its
//! tolerances. Both backends and the linear-system export read these.

use crate::backend::Backend;
use clap::ValueEnum;
use serde::Serialize;

/// Floating-point precision of the operator, vectors and solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Double precision (the default for solves).
    F64,
    /// Single precision (the direct factorisation itself runs in f64).
    F32,
}

impl Precision {
    /// `"f64"` or `"f32"`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}

/// The linear solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SolverKind {
    /// Conjugate gradients, matrix-free.
    Cg,
    /// Jacobi-preconditioned conjugate gradients, matrix-free.
    Pcg,
    /// Assembled sparse matrix, factored by faer (Cholesky or LU).
    Direct,
    /// Restarted GMRES(30), matrix-free, right-preconditioned by Jacobi: for nonsymmetric
    /// systems (the nonlinear problem's Newton steps, and on the GPU its only solver).
    Gmres,
}

impl SolverKind {
    /// `"cg"`, `"pcg"`, `"direct"` or `"gmres"`.
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Cg => "cg",
            SolverKind::Pcg => "pcg",
            SolverKind::Direct => "direct",
            SolverKind::Gmres => "gmres",
        }
    }
}

/// What the Krylov solvers apply: the operator's action computed from the mesh at every
/// product, or a sparse matrix assembled once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OperatorKind {
    /// Matrix-free: the residual or bake-off kernels at every product.
    #[default]
    MatrixFree,
    /// The reduced matrix (Dirichlet dofs eliminated) assembled once, then sparse
    /// matrix-vector products (on the GPU: assembled on the device).
    Assembled,
}

impl OperatorKind {
    /// `"matrix-free"` or `"assembled"`.
    pub fn name(self) -> &'static str {
        match self {
            OperatorKind::MatrixFree => "matrix-free",
            OperatorKind::Assembled => "assembled",
        }
    }
}

/// The preconditioner of PCG and GMRES.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Preconditioner {
    /// The inverse diagonal.
    #[default]
    Jacobi,
    /// A degree-3 Chebyshev polynomial in the Jacobi-preconditioned operator, its
    /// interval from a power-iteration estimate of the largest eigenvalue: fewer
    /// iterations (and reductions) for two more operator applications each.
    Chebyshev,
}

/// How to solve (independent of the problem and of where it runs).
#[derive(Clone, Debug)]
pub struct SolveSettings {
    /// The linear solver; `None` picks [`SolveSettings::solver_for`]'s default.
    pub solver: Option<SolverKind>,
    /// Precision of operator and vectors.
    pub precision: Precision,
    /// Relative tolerance of the Krylov solve or of Newton (`None`: 1e-10 in f64, 1e-5
    /// in f32).
    pub rtol: Option<f64>,
    /// Iteration limit of the Krylov solve.
    pub max_iter: usize,
    /// What the Krylov solvers apply (the direct solver always assembles).
    pub operator: OperatorKind,
    /// The preconditioner of PCG and GMRES.
    pub preconditioner: Preconditioner,
}

impl Default for SolveSettings {
    /// Default solver, f64, default tolerance, 10 000 iterations, matrix-free, Jacobi.
    fn default() -> Self {
        SolveSettings {
            solver: None,
            precision: Precision::F64,
            rtol: None,
            max_iter: 10_000,
            operator: OperatorKind::MatrixFree,
            preconditioner: Preconditioner::Jacobi,
        }
    }
}

impl SolveSettings {
    /// The solver to use on `backend`: the one asked for, else, for a problem whose
    /// Jacobian is not symmetric (the nonlinear ones), `direct` on the CPU and `gmres` on a
    /// GPU, and `pcg` for the others.
    pub fn solver_for(&self, symmetric: bool, backend: &Backend) -> SolverKind {
        self.solver.unwrap_or(match symmetric {
            false if backend.is_gpu() => SolverKind::Gmres,
            false => SolverKind::Direct,
            true => SolverKind::Pcg,
        })
    }

    /// The relative tolerance in effect.
    pub fn rtol(&self) -> f64 {
        self.rtol.unwrap_or(match self.precision {
            Precision::F64 => 1e-10,
            Precision::F32 => 1e-5,
        })
    }
}
