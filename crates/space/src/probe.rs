//! Point evaluation of finite-element fields ("probes"): the value and the physical
//! gradient of an L-vector at a reference point of one cell. Finding the cell and
//! reference point of a physical point is [`ferrofem_geometry::PointLocator`]'s job.

use crate::{H1Space, SpaceError};
use ferrofem_geometry::{CellMap, GeometryError};
use ferrofem_mesh::Mesh;

impl H1Space {
    /// Values of the L-vector `u` (`u[node * ncomp + c]`) at reference point `xi` (`dim`
    /// coordinates) of `cell`: `out[c]` for `c < ncomp`. The basis is evaluated at `xi`
    /// wherever it lies, so a point slightly outside the reference cell (as
    /// [`PointLocator::locate`](ferrofem_geometry::PointLocator::locate) may return on a
    /// face) is extrapolated smoothly.
    ///
    /// Errors: [`SpaceError::CellOutOfRange`] for a cell beyond the space's mesh, and
    /// [`SpaceError::Length`] when `xi`, `u` or `out` do not have `dim`, `num_dofs` and
    /// `ncomp` entries.
    pub fn eval_at(
        &self,
        cell: usize,
        xi: &[f64],
        u: &[f64],
        out: &mut [f64],
    ) -> Result<(), SpaceError> {
        self.check_probe(cell, xi, u, out.len(), self.ncomp(), "values")?;
        let nb = self.element().num_nodes();
        let d = self.dim();
        let mut values = vec![0.0; nb];
        let mut grads = vec![0.0; nb * d];
        self.element().eval(xi, &mut values, &mut grads);
        let nc = self.ncomp();
        out.fill(0.0);
        for (&phi, &n) in values.iter().zip(self.restriction().elem(cell)) {
            let un = &u[n as usize * nc..(n as usize + 1) * nc];
            for c in 0..nc {
                out[c] += phi * un[c];
            }
        }
        Ok(())
    }

    /// Gradient in physical coordinates of the L-vector `u` at reference point `xi` of
    /// `cell`: `out[c * dim + k] = ∂u_c/∂x_k` (`ncomp · dim` entries). The reference
    /// gradient is mapped with the inverse Jacobian of the cell's coordinate map at `xi`
    /// (from `mesh`, which must be the mesh the space was built on).
    ///
    /// Errors: those of [`H1Space::eval_at`], [`SpaceError::MeshMismatch`] for another
    /// mesh, and [`SpaceError::Geometry`] when the map is inverted or degenerate at `xi`
    /// (see [`ferrofem_geometry::DEGENERACY_TOLERANCE`]).
    pub fn eval_grad_at(
        &self,
        mesh: &Mesh,
        cell: usize,
        xi: &[f64],
        u: &[f64],
        out: &mut [f64],
    ) -> Result<(), SpaceError> {
        let d = self.dim();
        let nc = self.ncomp();
        self.check_probe(cell, xi, u, out.len(), nc * d, "gradients")?;
        self.check_mesh(mesh)?;
        let jac = CellMap::new(mesh)?.jacobian(cell, xi)?;
        if jac.is_inverted_or_degenerate() {
            return Err(GeometryError::InvertedOrDegenerate {
                cell,
                point: 0,
                det: jac.det,
            }
            .into());
        }
        let inv = jac.inverse();
        let nb = self.element().num_nodes();
        let mut values = vec![0.0; nb];
        let mut grads = vec![0.0; nb * d];
        self.element().eval(xi, &mut values, &mut grads);
        // reference gradient per component, then ∂u/∂x_k = Σ_j ∂u/∂ξ_j ∂ξ_j/∂x_k
        let mut gref = [0.0; 3];
        for c in 0..nc {
            gref.fill(0.0);
            for (b, &n) in self.restriction().elem(cell).iter().enumerate() {
                let un = u[n as usize * nc + c];
                for j in 0..d {
                    gref[j] += grads[b * d + j] * un;
                }
            }
            for k in 0..d {
                out[c * d + k] = (0..d).map(|j| gref[j] * inv[j][k]).sum();
            }
        }
        Ok(())
    }

    /// The argument checks shared by the probes.
    fn check_probe(
        &self,
        cell: usize,
        xi: &[f64],
        u: &[f64],
        out_len: usize,
        out_expected: usize,
        out_what: &'static str,
    ) -> Result<(), SpaceError> {
        let num_cells = self.num_cells();
        if cell >= num_cells {
            return Err(SpaceError::CellOutOfRange { cell, num_cells });
        }
        for (what, len, expected) in [
            ("reference point coordinates", xi.len(), self.dim()),
            ("L-vector entries", u.len(), self.num_dofs()),
            (out_what, out_len, out_expected),
        ] {
            if len != expected {
                return Err(SpaceError::Length {
                    what,
                    len,
                    expected,
                });
            }
        }
        Ok(())
    }
}
