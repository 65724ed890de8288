//! `ferrofem assemble`'s export: the system of [`crate::linear_system`] assembled in the
//! requested precision and written as Matrix Market (matrix, right-hand side) with the dof
//! table as CSV.

use crate::linear_system::{assemble_system_of, BcMode, LinearSystem};
use crate::pipeline_error::PipelineError;
use crate::problem::{FormVisitor, Problem};
use crate::settings::Precision;
use crate::terms::{to_f64, to_real};
use ferrofem_assembly::CONSTRAINED;
use ferrofem_base::Real;
use ferrofem_io::{write_csr, write_vector, CsvValue, CsvWriter};
use ferrofem_mesh::Mesh;
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use std::path::Path;

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

/// Assembles the system of `problem` on `mesh` (see [`crate::linear_system`]) in the
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
    }?
    .finish(problem, bc)
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
