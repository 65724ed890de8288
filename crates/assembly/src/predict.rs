//! The size of a Lagrange system predicted from the mesh's counts alone, before the space
//! is built: for refusing a computation that cannot fit (a direct solve, an assembly) at
//! once, rather than after minutes of setting up a space of tens of millions of dofs.
//!
//! The nodes of an order-`p` Lagrange space are the vertices, `p − 1` per edge, the
//! interior nodes of each face and of each cell. The edges and faces are not counted (that
//! takes the mesh's topology) but estimated from the vertices `V` and cells `C` through
//! Euler's formula for a mesh whose interior facets join two cells: `E ≈ V + C` and
//! `F ≈ 2C` for tetrahedra, `E ≈ V + C` for triangles, `E ≈ 3V`, `F ≈ 3C` for hexahedra
//! and `E ≈ 2V` for quadrilaterals. The boundary's edges and faces are left out, so the
//! prediction is low by their share: a few per cent on small boxes, less on large ones.

use ferrofem_base::CellType;

/// The predicted size of the system of an order-`order` Lagrange space with `ncomp`
/// components on a mesh of `cells` cells of type `ct` and `vertices` vertices, boundary
/// conditions not eliminated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PredictedSystem {
    /// Unknowns: nodes times components.
    pub dofs: u64,
    /// A lower bound of the matrix's nonzeros: every row couples at least with the dofs of
    /// one element.
    pub nnz: u64,
}

/// The predicted size of a Lagrange system (see the module documentation).
pub fn predicted_lagrange_system(
    ct: CellType,
    cells: usize,
    vertices: usize,
    order: usize,
    ncomp: usize,
) -> PredictedSystem {
    let (c, v, p) = (cells as f64, vertices as f64, order as f64);
    let q = (p - 1.0).max(0.0);
    // interior nodes of a triangle and of a tetrahedron of order p
    let tri = (p - 1.0).max(0.0) * (p - 2.0).max(0.0) / 2.0;
    let tet = tri * (p - 3.0).max(0.0) / 3.0;
    let (nodes, per_element) = match ct {
        CellType::Triangle => (v + q * (v + c) + tri * c, (p + 1.0) * (p + 2.0) / 2.0),
        CellType::Quadrilateral => (v + q * 2.0 * v + q * q * c, (p + 1.0).powi(2)),
        CellType::Tetrahedron => (
            v + q * (v + c) + tri * 2.0 * c + tet * c,
            (p + 1.0) * (p + 2.0) * (p + 3.0) / 6.0,
        ),
        CellType::Hexahedron => (
            v + q * 3.0 * v + q * q * 3.0 * c + q * q * q * c,
            (p + 1.0).powi(3),
        ),
    };
    let dofs = nodes * ncomp as f64;
    let nnz = dofs * per_element * ncomp as f64;
    PredictedSystem {
        dofs: dofs.min(u64::MAX as f64) as u64,
        nnz: nnz.min(u64::MAX as f64) as u64,
    }
}
