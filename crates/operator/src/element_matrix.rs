//! The element-matrix interface between operators and assembly.

use ferrofem_base::Real;
use ferrofem_space::ElemRestriction;

/// Something that produces one dense matrix per element (a linearised weak form), in the
/// E-vector dof order of its restriction: local dof `c * elem_size + i` for component `c`
/// of local node `i`. Assembly (`ferrofem-assembly`) turns these into CSR matrices.
pub trait ElementMatrices<T: Real>: Sync {
    /// The restriction that maps element dofs to global dofs.
    fn restriction(&self) -> &ElemRestriction;

    /// Rows (= columns) of each element matrix: `ncomp * elem_size`.
    fn element_matrix_size(&self) -> usize {
        let r = self.restriction();
        r.ncomp() * r.elem_size()
    }

    /// Writes the matrix of element `e`, row-major (`out[i * n + j]`, `n =
    /// element_matrix_size()`), linearised about the element values `u_e` (E-vector
    /// layout) for nonlinear forms; linear forms ignore `u_e`.
    fn element_matrix(&self, e: usize, u_e: Option<&[T]>, out: &mut [T]);

    /// True when every element matrix is symmetric.
    fn is_symmetric(&self) -> bool;
}
