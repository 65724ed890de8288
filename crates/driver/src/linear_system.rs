//! The assembled linear system of a problem: the matrix and right-hand side that the CPU's
//! direct solve factors and that `ferrofem assemble` exports ([`crate::export`]).
//!
//! The system is the (Jacobian) matrix `J(u₀)` with right-hand side `−R(u₀)` of the full
//! residual `R(u) = r(u) − N` (`r` the form's residual, `N` the natural-boundary load), at:
//!
//! - `--bc dirichlet`: `u₀ = g̃` (exact solution on the constrained dofs, zero elsewhere),
//!   constrained dofs eliminated (Cecka et al. 2011, §3.3): `J_ff x = −R_f(g̃)`. For a
//!   linear problem `x` is the solution on the free dofs (`−R_f(g̃) = F_f + N_f − K_fc g`);
//!   for the nonlinear one it is the first Newton correction from `g̃`.
//! - `--bc none`: all dofs are unknowns; linear problems give `K u = F + N` (`u₀ = 0`), the
//!   nonlinear one `J(g̃) δ = −R(g̃)` (the Newton step from the same start).
//! - `--bc identity`: the eliminated system on every dof
//!   ([`ferrofem_assembly::with_identity_rows`]): the free rows as above (constrained
//!   columns on the right-hand side), an identity row at each constrained dof with its
//!   value on the right (`g` for a linear problem, 0 for the nonlinear one's correction).
//!   The matrix stays symmetric and the solution is the full vector.

use crate::pipeline_error::PipelineError;
use crate::problem::Problem;
use crate::terms::{add_robin, full_residual, to_real};
use clap::ValueEnum;
use ferrofem_assembly::{with_identity_rows, AssemblyPlan, DofMap, Strategy, CONSTRAINED};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_operator::{ElementMatrices, FormOperator};
use ferrofem_physics::Physics;
use serde::Serialize;

/// How Dirichlet conditions enter an exported system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcMode {
    /// No boundary conditions: the full (singular for pure Neumann) matrix on all dofs.
    None,
    /// Dirichlet dofs eliminated: the reduced system on the free dofs.
    Dirichlet,
    /// Dirichlet dofs as identity rows: the eliminated system on every dof, each
    /// constrained dof's row the identity and its right-hand side its value.
    Identity,
}

/// An assembled system on the unknowns of its dof map.
#[derive(Clone, Debug)]
pub struct LinearSystem<T> {
    /// `J_ff` (or the full `J` without elimination).
    pub matrix: CsrMatrix<T>,
    /// The right-hand side on the same unknowns.
    pub rhs: Vec<T>,
    /// Free/constrained split (no constrained dofs for [`BcMode::None`]).
    pub dof_map: DofMap,
    /// True when the matrix is symmetric (written as symmetric Matrix Market).
    pub symmetric: bool,
}

/// Assembles the system described in the module documentation for the operator `op` of
/// `problem`, with the natural-boundary load `neumann` (full L-vector in `T`).
pub(crate) fn assemble_system_of<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    problem: &Problem,
    neumann: &[T],
    bc: BcMode,
) -> Result<LinearSystem<T>, PipelineError> {
    let n = problem.num_dofs();
    let g: Vec<T> = to_real(&problem.boundary_values);
    let dof_map = match bc {
        // identity rows are made from the eliminated system (`LinearSystem::finish`)
        BcMode::Dirichlet | BcMode::Identity => DofMap::new(n, &problem.dirichlet_dofs)?,
        BcMode::None => DofMap::unconstrained(n)?,
    };
    let u0: Vec<T> = if bc == BcMode::None && problem.is_linear() {
        vec![T::zero(); n]
    } else {
        g
    };
    let mut r = vec![T::zero(); n];
    full_residual(op, neumann, &u0, &mut r);
    add_robin(problem, &u0, &mut r);
    let rhs: Vec<T> = dof_map.free().iter().map(|&d| -r[d as usize]).collect();
    let plan = AssemblyPlan::new(op.restriction(), Some(&dof_map))?;
    let state = if problem.is_linear() {
        None
    } else {
        Some(&u0[..])
    };
    let mut matrix = plan.assemble_matrix(op, state, Strategy::default())?;
    if let Some(robin) = problem.robin::<T>() {
        // the Robin term couples nodes of one cell's facet: its pattern lies in the
        // matrix's
        let reduced = dof_map.reduced_of();
        for (i, &ri) in reduced.iter().enumerate() {
            if ri == CONSTRAINED {
                continue;
            }
            let (cols, vals) = robin.row(i);
            for (&j, &v) in cols.iter().zip(vals) {
                let rj = reduced[j as usize];
                if rj == CONSTRAINED {
                    continue;
                }
                if let Some(k) = matrix.position(ri as usize, rj) {
                    matrix.values_mut()[k] += v;
                }
            }
        }
    }
    Ok(LinearSystem {
        matrix,
        rhs,
        dof_map,
        symmetric: problem.is_symmetric(),
    })
}

impl LinearSystem<f64> {
    /// For [`BcMode::Identity`]: this eliminated system of `problem` on every dof, each
    /// constrained dof's row the identity and its right-hand side the value its unknown
    /// takes (the boundary value for a linear problem, zero for the nonlinear problem's
    /// Newton correction); other modes are returned as they are.
    pub(crate) fn finish(self, problem: &Problem, bc: BcMode) -> Result<Self, PipelineError> {
        if bc != BcMode::Identity {
            return Ok(self);
        }
        let constrained = self.dof_map.constrained();
        let values: Vec<f64> = if problem.is_linear() {
            constrained
                .iter()
                .map(|&d| problem.boundary_values[d as usize])
                .collect()
        } else {
            vec![0.0; constrained.len()]
        };
        let (matrix, rhs) = with_identity_rows(&self.matrix, &self.rhs, &self.dof_map, &values)?;
        Ok(LinearSystem {
            matrix,
            rhs,
            dof_map: DofMap::unconstrained(self.dof_map.num_dofs())?,
            symmetric: self.symmetric,
        })
    }
}
