//! Geometry of mesh cells at quadrature points: Jacobians of the coordinate map, their
//! determinants and inverses, physical point positions, and the symmetric metric factors
//! `G = w·det(J)·J⁻¹J⁻ᵀ` that diffusion-type operators contract reference gradients with.
//!
//! The coordinate map of a cell is the order-1 Lagrange element on its cell type (P1 on
//! triangles and tetrahedra, affine; Q1 on quadrilaterals and hexahedra, multilinear).
//! Its nodes are the reference vertices in the mesh's own vertex order, so a cell's
//! vertex coordinates are the map's coefficients without any permutation.
//!
//! [`PointLocator`] inverts the coordinate maps: it finds the cell containing a physical
//! point and the point's reference coordinates there (probes, point sources, receivers).
//!
//! Conventions: `J[i][k] = ∂x_i/∂ξ_k` (row: physical direction, column: reference
//! direction), `J⁻¹[k][i] = ∂ξ_k/∂x_i`. Everything is `f64`; kernels that run in `f32`
//! convert the finished factors.

mod cell_map;
mod error;
mod jacobian;
mod locate;
mod quad_geometry;
mod source;
#[cfg(test)]
mod test_meshes;

pub use cell_map::{jacobian, map_point, CellMap};
pub use error::GeometryError;
pub use jacobian::{adjugate, Jacobian, DEGENERACY_TOLERANCE};
pub use locate::{Located, PointLocator, LOCATE_TOLERANCE, SCANNED_QUERIES};
pub use quad_geometry::{metric_len, QuadGeometry};
pub use source::GeometrySource;
