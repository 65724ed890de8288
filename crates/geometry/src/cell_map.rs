//! Point-wise evaluation of a cell's coordinate map and its Jacobian.

use crate::{GeometryError, Jacobian};
use ferrofem_fe::LagrangeElement;
use ferrofem_mesh::Mesh;

/// Most vertices of any cell type (the hexahedron's 8).
pub(crate) const MAX_VERTICES: usize = 8;

/// The coordinate maps of a mesh's cells, for queries at arbitrary reference points
/// (probes, point location, checks). For whole-mesh evaluation at quadrature points use
/// [`QuadGeometry`](crate::QuadGeometry), which tabulates the map once.
#[derive(Clone, Debug)]
pub struct CellMap<'m> {
    mesh: &'m Mesh,
    element: LagrangeElement,
}

impl<'m> CellMap<'m> {
    /// The coordinate maps of `mesh`'s cells: the order-1 Lagrange element on its cell type.
    pub fn new(mesh: &'m Mesh) -> Result<CellMap<'m>, GeometryError> {
        Ok(CellMap {
            mesh,
            element: LagrangeElement::new(mesh.cell_type(), 1)?,
        })
    }

    /// The mesh.
    pub fn mesh(&self) -> &'m Mesh {
        self.mesh
    }

    /// The coordinate element (P1 or Q1; its nodes are the cell's vertices in mesh order).
    pub fn element(&self) -> &LagrangeElement {
        &self.element
    }

    /// Shape values and reference gradients at `xi` after checking `cell` and `xi`.
    fn shape(
        &self,
        cell: usize,
        xi: &[f64],
    ) -> Result<([f64; MAX_VERTICES], [f64; 3 * MAX_VERTICES]), GeometryError> {
        let num_cells = self.mesh.num_cells();
        if cell >= num_cells {
            return Err(GeometryError::CellOutOfRange { cell, num_cells });
        }
        let d = self.mesh.dim();
        if xi.len() != d {
            return Err(GeometryError::PointDimension {
                len: xi.len(),
                dim: d,
            });
        }
        let nv = self.element.num_nodes();
        let mut values = [0.0; MAX_VERTICES];
        let mut grads = [0.0; 3 * MAX_VERTICES];
        self.element
            .eval(xi, &mut values[..nv], &mut grads[..nv * d]);
        Ok((values, grads))
    }

    /// The Jacobian of `cell`'s map at reference point `xi` (`dim` coordinates). The
    /// determinant is returned as found, whatever its sign.
    pub fn jacobian(&self, cell: usize, xi: &[f64]) -> Result<Jacobian, GeometryError> {
        let (_, grads) = self.shape(cell, xi)?;
        let d = self.mesh.dim();
        let mut j = [[0.0; 3]; 3];
        for (b, &v) in self.mesh.cell(cell).iter().enumerate() {
            let x = self.mesh.vertex(v as usize);
            for i in 0..d {
                for k in 0..d {
                    j[i][k] += x[i] * grads[b * d + k];
                }
            }
        }
        Ok(Jacobian::from_matrix(d, j))
    }

    /// The physical position of reference point `xi` in `cell` (first `dim` entries).
    pub fn map_point(&self, cell: usize, xi: &[f64]) -> Result<[f64; 3], GeometryError> {
        let (values, _) = self.shape(cell, xi)?;
        let d = self.mesh.dim();
        let mut out = [0.0; 3];
        for (b, &v) in self.mesh.cell(cell).iter().enumerate() {
            let x = self.mesh.vertex(v as usize);
            for i in 0..d {
                out[i] += values[b] * x[i];
            }
        }
        Ok(out)
    }
}

/// The Jacobian of `cell`'s coordinate map at reference point `xi`; see
/// [`CellMap::jacobian`] (which avoids rebuilding the coordinate element per query).
pub fn jacobian(mesh: &Mesh, cell: usize, xi: &[f64]) -> Result<Jacobian, GeometryError> {
    CellMap::new(mesh)?.jacobian(cell, xi)
}

/// The physical position of reference point `xi` in `cell`; see [`CellMap::map_point`].
pub fn map_point(mesh: &Mesh, cell: usize, xi: &[f64]) -> Result<[f64; 3], GeometryError> {
    CellMap::new(mesh)?.map_point(cell, xi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_meshes::{perturbed_box, reference_point, rng};
    use ferrofem_base::CellType;

    fn meshes() -> Vec<Mesh> {
        CellType::ALL
            .iter()
            .enumerate()
            .map(|(s, &ct)| perturbed_box(ct, 3, [1.5, 0.7, 1.1], 0.12, 7 + s as u64))
            .collect()
    }

    #[test]
    fn inverse_times_jacobian_is_identity() {
        let mut rng = rng(1);
        for mesh in meshes() {
            let map = CellMap::new(&mesh).unwrap();
            let d = mesh.dim();
            for _ in 0..50 {
                let cell = (rng.next_f64() * mesh.num_cells() as f64) as usize;
                let xi = reference_point(mesh.cell_type(), &mut rng);
                let jac = map.jacobian(cell, &xi).unwrap();
                assert!(!jac.is_inverted_or_degenerate());
                let inv = jac.inverse();
                for a in 0..d {
                    for b in 0..d {
                        let left: f64 = (0..d).map(|i| inv[a][i] * jac.j[i][b]).sum();
                        let right: f64 = (0..d).map(|k| jac.j[a][k] * inv[k][b]).sum();
                        let id = if a == b { 1.0 } else { 0.0 };
                        assert!((left - id).abs() < 1e-12, "{}: {left}", mesh.cell_type());
                        assert!((right - id).abs() < 1e-12, "{}: {right}", mesh.cell_type());
                    }
                }
            }
        }
    }

    #[test]
    fn jacobian_matches_finite_differences_of_map_point() {
        let mut rng = rng(2);
        let h = 1e-6;
        for mesh in meshes() {
            let map = CellMap::new(&mesh).unwrap();
            let d = mesh.dim();
            for _ in 0..30 {
                let cell = (rng.next_f64() * mesh.num_cells() as f64) as usize;
                let xi = reference_point(mesh.cell_type(), &mut rng);
                let jac = map.jacobian(cell, &xi).unwrap();
                for k in 0..d {
                    let (mut xp, mut xm) = (xi.clone(), xi.clone());
                    xp[k] += h;
                    xm[k] -= h;
                    let (p, m) = (
                        map.map_point(cell, &xp).unwrap(),
                        map.map_point(cell, &xm).unwrap(),
                    );
                    for i in 0..d {
                        let fd = (p[i] - m[i]) / (2.0 * h);
                        assert!(
                            (fd - jac.j[i][k]).abs() < 1e-8,
                            "{} cell {cell}: dx{i}/dxi{k} fd {fd} vs {}",
                            mesh.cell_type(),
                            jac.j[i][k]
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn reference_vertices_map_to_the_cell_vertices() {
        for mesh in meshes() {
            let ct = mesh.cell_type();
            let map = CellMap::new(&mesh).unwrap();
            let d = mesh.dim();
            for cell in [0, mesh.num_cells() / 2, mesh.num_cells() - 1] {
                for (v, &gv) in mesh.cell(cell).iter().enumerate() {
                    let xi = ct.reference_vertex(v);
                    let x = map.map_point(cell, &xi[..d]).unwrap();
                    let want = mesh.vertex(gv as usize);
                    for i in 0..d {
                        assert!(
                            (x[i] - want[i]).abs() < 1e-14,
                            "{ct} cell {cell} vertex {v}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn affine_simplex_jacobian_is_constant() {
        let mut rng = rng(3);
        for mesh in meshes().into_iter().filter(|m| m.cell_type().is_simplex()) {
            let map = CellMap::new(&mesh).unwrap();
            for cell in 0..mesh.num_cells() {
                let j0 = map
                    .jacobian(cell, &reference_point(mesh.cell_type(), &mut rng))
                    .unwrap();
                let j1 = map
                    .jacobian(cell, &reference_point(mesh.cell_type(), &mut rng))
                    .unwrap();
                for i in 0..3 {
                    for k in 0..3 {
                        assert!((j0.j[i][k] - j1.j[i][k]).abs() < 1e-14);
                    }
                }
                assert!((j0.det - j1.det).abs() < 1e-14);
            }
        }
        // while a perturbed hexahedron's is not
        let hex = perturbed_box(CellType::Hexahedron, 3, [1.0; 3], 0.12, 5);
        let interior = (0..hex.num_cells()).find(|&c| {
            let a = jacobian(&hex, c, &[-0.5, -0.5, -0.5]).unwrap();
            let b = jacobian(&hex, c, &[0.5, 0.5, 0.5]).unwrap();
            (a.det - b.det).abs() > 1e-6
        });
        assert!(interior.is_some());
    }

    #[test]
    fn point_queries_reject_bad_input() {
        let mesh = perturbed_box(CellType::Quadrilateral, 2, [1.0; 3], 0.0, 0);
        assert_eq!(
            jacobian(&mesh, 4, &[0.0, 0.0]),
            Err(GeometryError::CellOutOfRange {
                cell: 4,
                num_cells: 4
            })
        );
        assert_eq!(
            map_point(&mesh, 0, &[0.0, 0.0, 0.0]),
            Err(GeometryError::PointDimension { len: 3, dim: 2 })
        );
    }
}
