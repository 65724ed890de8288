//! Krylov solves over distributed vectors: the solvers of `ferrofem_solver`, unchanged,
//! on a [`KrylovSpace`] whose operator sums across the interfaces and whose dot products
//! count each node once.

use crate::{Communicator, DistError, NodeInterface, Payload};
use ferrofem_base::{LinearOperator, Real};
use ferrofem_operator::ConstrainedOperator;
use ferrofem_solver::{KrylovSpace, SolverError};

fn backend(e: DistError) -> SolverError {
    SolverError::Backend(Box::new(e))
}

fn check_len(what: &'static str, expected: usize, found: usize) -> Result<(), SolverError> {
    if expected == found {
        Ok(())
    } else {
        Err(SolverError::DimensionMismatch {
            what,
            expected,
            found,
        })
    }
}

/// A distributed linear system `[A_ff 0; 0 I] w = b` with Dirichlet rows, as a
/// [`KrylovSpace`]: `A` is the rank's operator on its own cells (a partial sum at shared
/// nodes), applied and then summed across the interfaces; vectors are consistent (see
/// [`NodeInterface`]); the Jacobi preconditioner, when set, uses the summed diagonal.
///
/// A Dirichlet dof is constrained on every rank that holds it, also where only another
/// rank's cells touch the boundary there.
pub struct DistSpace<'a, T, A, C> {
    /// The local operator with the identity on the constrained rows (before the sum).
    op: ConstrainedOperator<T, A>,
    comm: &'a C,
    interface: &'a NodeInterface,
    ncomp: usize,
    inv_diag: Option<Vec<T>>,
}

impl<'a, T: Real + Payload, A: LinearOperator<T>, C: Communicator> DistSpace<'a, T, A, C> {
    /// The space of the local operator `op` (on `ncomp` components per node of the
    /// interface's space) with the local dofs `dirichlet` constrained (each rank passes
    /// those of its own boundary facets; the union over the holders is constrained).
    /// Collective over the neighbours.
    pub fn new(
        comm: &'a C,
        interface: &'a NodeInterface,
        op: A,
        ncomp: usize,
        dirichlet: &[u32],
    ) -> Result<Self, SolverError> {
        let (nrows, ncols) = (op.nrows(), op.ncols());
        if nrows != ncols {
            return Err(SolverError::NotSquare { nrows, ncols });
        }
        check_len("local operator rows", interface.num_nodes() * ncomp, nrows)?;
        let mut mask = vec![T::zero(); nrows];
        for &d in dirichlet {
            if d as usize >= nrows {
                return Err(backend(DistError::DofOutOfRange { dof: d, len: nrows }));
            }
            mask[d as usize] = T::one();
        }
        interface
            .sum_shared(comm, &mut mask, ncomp)
            .map_err(backend)?;
        let constrained: Vec<u32> = (0..nrows as u32)
            .filter(|&d| mask[d as usize] != T::zero())
            .collect();
        let op = ConstrainedOperator::new(op, &constrained)
            .map_err(|e| SolverError::Backend(Box::new(e)))?;
        Ok(DistSpace {
            op,
            comm,
            interface,
            ncomp,
            inv_diag: None,
        })
    }

    /// Sets the Jacobi preconditioner from the local operator's diagonal, summed across
    /// the interfaces (one on constrained rows). Fails where the operator has no diagonal
    /// or a summed entry is not positive and finite.
    pub fn with_jacobi(mut self) -> Result<Self, SolverError> {
        let mut diag = self.op.inner().diagonal().ok_or(SolverError::NoDiagonal)?;
        check_len("diagonal", self.op.nrows(), diag.len())?;
        self.interface
            .sum_shared(self.comm, &mut diag, self.ncomp)
            .map_err(backend)?;
        for &c in self.op.constrained_dofs() {
            diag[c as usize] = T::one();
        }
        self.inv_diag = Some(ferrofem_solver::cpu::jacobi_inverse(&diag)?);
        Ok(self)
    }

    /// The local dofs constrained here (sorted): the union over every holder.
    pub fn constrained_dofs(&self) -> &[u32] {
        self.op.constrained_dofs()
    }

    /// The right-hand side for the correction `w = u − g̃`: `b = f − A g̃` on free dofs,
    /// zero on constrained ones, with `f_partial` the rank's own contributions to the
    /// load (summed here across the interfaces) and `g` consistent Dirichlet values (only
    /// their constrained entries are read). The solution is `u = g̃ + w`.
    pub fn lift(&self, f_partial: &[T], g: &[T]) -> Result<Vec<T>, SolverError> {
        let n = self.op.nrows();
        check_len("load", n, f_partial.len())?;
        check_len("Dirichlet values", n, g.len())?;
        let mut g_tilde = vec![T::zero(); n];
        for &c in self.op.constrained_dofs() {
            g_tilde[c as usize] = g[c as usize];
        }
        let mut b = f_partial.to_vec();
        let mut ag = vec![T::zero(); n];
        self.op.inner().apply(&g_tilde, &mut ag);
        for (bi, &a) in b.iter_mut().zip(&ag) {
            *bi -= a;
        }
        self.interface
            .sum_shared(self.comm, &mut b, self.ncomp)
            .map_err(backend)?;
        for &c in self.op.constrained_dofs() {
            b[c as usize] = T::zero();
        }
        Ok(b)
    }

    /// `u = w + g̃`: the constrained entries of `w` set to `g`'s.
    pub fn add_boundary_values(&self, w: &mut [T], g: &[T]) -> Result<(), SolverError> {
        check_len("solution", self.op.nrows(), w.len())?;
        check_len("Dirichlet values", self.op.nrows(), g.len())?;
        for &c in self.op.constrained_dofs() {
            w[c as usize] = g[c as usize];
        }
        Ok(())
    }
}

impl<T: Real + Payload, A: LinearOperator<T>, C: Communicator> KrylovSpace<T>
    for DistSpace<'_, T, A, C>
{
    type Vector = Vec<T>;

    fn dim(&self) -> usize {
        self.op.nrows()
    }

    fn zeros(&self) -> Result<Vec<T>, SolverError> {
        Ok(vec![T::zero(); self.op.nrows()])
    }

    fn dot(&self, a: &Vec<T>, b: &Vec<T>) -> Result<f64, SolverError> {
        self.interface
            .dot(self.comm, a, b, self.ncomp)
            .map_err(backend)
    }

    fn axpy(&self, alpha: T, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.dim(), y.len())?;
        ferrofem_solver::cpu::axpy(alpha, x, y)
    }

    fn xpby(&self, x: &Vec<T>, beta: T, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.dim(), y.len())?;
        ferrofem_solver::cpu::xpby(x, beta, y)
    }

    fn copy(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("vector", self.dim(), x.len())?;
        check_len("vector", self.dim(), y.len())?;
        y.copy_from_slice(x);
        Ok(())
    }

    fn apply(&self, x: &Vec<T>, y: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("operator input", self.dim(), x.len())?;
        check_len("operator output", self.dim(), y.len())?;
        self.op.apply(x, y);
        self.interface
            .sum_shared(self.comm, y, self.ncomp)
            .map_err(backend)?;
        // (the sum added the holders' copies of the identity rows)
        for &c in self.op.constrained_dofs() {
            y[c as usize] = x[c as usize];
        }
        Ok(())
    }

    fn precondition(&self, r: &Vec<T>, z: &mut Vec<T>) -> Result<(), SolverError> {
        check_len("preconditioner input", self.dim(), r.len())?;
        check_len("preconditioner output", self.dim(), z.len())?;
        match &self.inv_diag {
            None => z.copy_from_slice(r),
            Some(inv) => {
                for ((zi, &ri), &di) in z.iter_mut().zip(r).zip(inv) {
                    *zi = ri * di;
                }
            }
        }
        Ok(())
    }
}
