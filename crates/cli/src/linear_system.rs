//! The assembled linear system of a problem (the matrix and right-hand side that
//! `ferrofem solve --solver direct` factors and `ferrofem assemble` exports) and the
//! export of matrix, right-hand side and dof table.
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

use crate::pipeline_error::PipelineError;
use crate::problem::{FormVisitor, Problem};
use crate::solve::Precision;
use clap::ValueEnum;
use ferrofem_assembly::{AssemblyPlan, DofMap, Strategy, CONSTRAINED};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_io::{write_csr, write_vector, CsvValue, CsvWriter};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{lift_residual, ElementMatrices, FormOperator};
use ferrofem_physics::Physics;
use serde::Serialize;
use std::path::Path;

/// How Dirichlet conditions enter an exported system.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcMode {
    /// No boundary conditions: the full (singular for pure Neumann) matrix on all dofs.
    None,
    /// Dirichlet dofs eliminated: the reduced system on the free dofs.
    Dirichlet,
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

/// `R(u) = r(u) − N` into `out` (full L-vectors).
pub(crate) fn full_residual<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    neumann: &[T],
    u: &[T],
    out: &mut [T],
) {
    op.residual(u, out);
    for (o, &n) in out.iter_mut().zip(neumann) {
        *o -= n;
    }
}

/// The right-hand side of the matrix-free solve for the correction `w = u − g̃` (CPU and
/// GPU): the boundary values lifted into the free rows with one residual evaluation
/// (`−r(g̃)_f`, [`lift_residual`]) plus the natural-boundary load `neumann` there, and zero
/// on the constrained rows (so its norm is that of the free equations alone).
pub(crate) fn correction_rhs<T: Real, P: Physics<T>>(
    op: &FormOperator<T, P>,
    problem: &Problem,
    neumann: &[T],
) -> Result<Vec<T>, PipelineError> {
    let g: Vec<T> = to_real(&problem.boundary_values);
    let mut b = lift_residual(op, &problem.dirichlet_dofs, &g)?;
    let map = DofMap::new(problem.num_dofs(), &problem.dirichlet_dofs)?;
    for &d in map.free() {
        b[d as usize] += neumann[d as usize];
    }
    Ok(b)
}

/// Converts an f64 slice to `T`.
pub(crate) fn to_real<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

/// Converts a `T` slice to f64.
pub(crate) fn to_f64<T: Real>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.as_f64()).collect()
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
        BcMode::Dirichlet => DofMap::new(n, &problem.dirichlet_dofs)?,
        BcMode::None => DofMap::unconstrained(n)?,
    };
    let u0: Vec<T> = if bc == BcMode::None && problem.is_linear() {
        vec![T::zero(); n]
    } else {
        g
    };
    let mut r = vec![T::zero(); n];
    full_residual(op, neumann, &u0, &mut r);
    let rhs: Vec<T> = dof_map.free().iter().map(|&d| -r[d as usize]).collect();
    let plan = AssemblyPlan::new(op.restriction(), Some(&dof_map))?;
    let state = if problem.is_linear() {
        None
    } else {
        Some(&u0[..])
    };
    let matrix = plan.assemble_matrix(op, state, Strategy::default())?;
    Ok(LinearSystem {
        matrix,
        rhs,
        dof_map,
        symmetric: problem.is_symmetric(),
    })
}

struct AssembleVisitor<'a> {
    mesh: &'a Mesh,
    problem: &'a Problem,
    bc: BcMode,
}

impl<T: Real> FormVisitor<T> for AssembleVisitor<'_> {
    type Output = LinearSystem<f64>;
    fn visit<P: Physics<T>>(
        self,
        op: FormOperator<T, P>,
    ) -> Result<LinearSystem<f64>, PipelineError> {
        let neumann: Vec<T> = to_real(&self.problem.neumann_load(self.mesh)?);
        let s = assemble_system_of(&op, self.problem, &neumann, self.bc)?;
        Ok(LinearSystem {
            matrix: s.matrix.convert(),
            rhs: to_f64(&s.rhs),
            dof_map: s.dof_map,
            symmetric: s.symmetric,
        })
    }
}

/// Assembles the system of `problem` on `mesh` (see the module documentation) in the
/// given precision, returned in f64 for export.
pub fn assemble_problem(
    mesh: &Mesh,
    problem: &Problem,
    bc: BcMode,
    precision: Precision,
) -> Result<LinearSystem<f64>, PipelineError> {
    let v = AssembleVisitor { mesh, problem, bc };
    match precision {
        Precision::F64 => problem.visit_form::<f64, _>(mesh, v),
        Precision::F32 => problem.visit_form::<f32, _>(mesh, v),
    }
}

impl LinearSystem<f64> {
    /// Writes the matrix as Matrix Market (`symmetric` storage when the matrix is).
    pub fn write_matrix(&self, path: &Path) -> Result<(), PipelineError> {
        let m = &self.matrix;
        Ok(write_csr(
            path,
            m.nrows(),
            m.ncols(),
            m.row_ptr(),
            m.col_idx(),
            m.values(),
            self.symmetric,
        )?)
    }

    /// Writes the right-hand side as a Matrix Market array.
    pub fn write_rhs(&self, path: &Path) -> Result<(), PipelineError> {
        Ok(write_vector(path, &self.rhs)?)
    }

    /// Writes the dof table as CSV: `dof, node, component, x, y[, z]` and, when dofs were
    /// eliminated, `reduced` (the row of the dof in the reduced system, `-1` if
    /// constrained).
    pub fn write_dofs(&self, path: &Path, problem: &Problem) -> Result<(), PipelineError> {
        let space = &problem.space;
        let d = space.dim();
        let nc = space.ncomp();
        let reduced = !self.dof_map.is_unconstrained();
        let mut header = vec!["dof", "node", "component"];
        header.extend(["x", "y", "z"].iter().take(d));
        if reduced {
            header.push("reduced");
        }
        let mut w = CsvWriter::create(path, &header)?;
        let mut row: Vec<CsvValue<'_>> = Vec::with_capacity(header.len());
        let reduced_of = self.dof_map.reduced_of();
        for dof in 0..space.num_dofs() {
            let node = dof / nc;
            row.clear();
            row.push(CsvValue::Int(dof as i64));
            row.push(CsvValue::Int(node as i64));
            row.push(CsvValue::Int((dof % nc) as i64));
            row.extend(space.node_coord(node).iter().map(|&x| CsvValue::Num(x)));
            if reduced {
                let r = reduced_of[dof];
                row.push(CsvValue::Int(if r == CONSTRAINED { -1 } else { r as i64 }));
            }
            w.row_values(&row)?;
        }
        Ok(w.finish()?)
    }
}
