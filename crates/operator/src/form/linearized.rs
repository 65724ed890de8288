//! The Jacobian of a form at a fixed state, as a linear operator for the solvers.

use super::FormOperator;
use ferrofem_base::{LinearOperator, Real};
use ferrofem_physics::Physics;

/// The Jacobian `J(u)` of a [`FormOperator`] at a state `u`, applied matrix-free
/// ([`FormOperator::jacobian_apply`]) with its diagonal available for Jacobi
/// preconditioning. For linear physics this is the operator itself, whatever `u`.
pub struct Linearized<'a, T: Real, P: Physics<T>> {
    op: &'a FormOperator<T, P>,
    u: Vec<T>,
}

impl<'a, T: Real, P: Physics<T>> Linearized<'a, T, P> {
    /// The Jacobian of `op` at `u` (copied; for linear physics `u` may be empty).
    pub fn new(op: &'a FormOperator<T, P>, u: &[T]) -> Linearized<'a, T, P> {
        Linearized { op, u: u.to_vec() }
    }
    /// The operator.
    pub fn operator(&self) -> &FormOperator<T, P> {
        self.op
    }
    /// The state the Jacobian is taken at.
    pub fn state(&self) -> &[T] {
        &self.u
    }
}

impl<T: Real, P: Physics<T>> LinearOperator<T> for Linearized<'_, T, P> {
    fn nrows(&self) -> usize {
        self.op.num_dofs()
    }
    fn ncols(&self) -> usize {
        self.op.num_dofs()
    }
    fn apply(&self, x: &[T], y: &mut [T]) {
        self.op.jacobian_apply(&self.u, x, y);
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        Some(self.op.diagonal(&self.u))
    }
}
