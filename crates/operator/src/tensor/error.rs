//! Errors of the sum-factorised tensor-product operators.

use ferrofem_base::CellType;

/// What can go wrong building or applying a [`TensorOperator`](super::TensorOperator).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TensorError {
    /// Sum factorisation needs a tensor-product cell (quadrilateral or hexahedron).
    #[error("tensor-product operators need quadrilaterals or hexahedra, the mesh has {0} cells")]
    NotTensorCell(CellType),
    /// The space was not built on this mesh (cell counts or cell types differ).
    #[error(
        "space does not fit the mesh: space has {space_cells} {space_type} cells, mesh has {mesh_cells} {mesh_type} cells"
    )]
    MeshMismatch {
        /// Cells of the space.
        space_cells: usize,
        /// Cell type of the space.
        space_type: CellType,
        /// Cells of the mesh.
        mesh_cells: usize,
        /// Cell type of the mesh.
        mesh_type: CellType,
    },
    /// A number of quadrature points per direction outside the supported range.
    #[error("{q} quadrature points per direction requested; supported: {min}..={max}")]
    QuadraturePoints {
        /// Requested points per direction.
        q: usize,
        /// Smallest supported.
        min: usize,
        /// Largest supported.
        max: usize,
    },
    /// The collocated (GLL) diffusion operator integrates on the `p + 1` nodes only.
    #[error("collocated diffusion uses the {nodes} GLL nodes per direction as quadrature points, {q} requested")]
    CollocatedPoints {
        /// Nodes per direction (`p + 1`).
        nodes: usize,
        /// Requested points per direction.
        q: usize,
    },
    /// A coefficient that is not a finite number.
    #[error("the coefficient alpha must be finite, got {0}")]
    Alpha(f64),
    /// An element whose trilinear map is inverted or degenerate at a quadrature point.
    #[error(
        "element {elem} is inverted or degenerate: det J = {det:e} at quadrature point {point}"
    )]
    InvertedElement {
        /// Element index.
        elem: usize,
        /// Quadrature point (lexicographic).
        point: usize,
        /// The determinant found.
        det: f64,
    },
    /// A physics' quadrature datum that is not finite (a coefficient that is NaN or
    /// infinite there, or missing for the element).
    #[error("quadrature datum {datum} of element {elem} at point {point} is {value}: a coefficient is not finite or missing there")]
    QuadratureData {
        /// Element index.
        elem: usize,
        /// Quadrature point (lexicographic).
        point: usize,
        /// Which datum of the physics.
        datum: usize,
        /// The value found.
        value: f64,
    },
    /// The physics cannot run with the requested quadrature or geometry.
    #[error("{0}")]
    Unsupported(String),
    /// A vector whose length does not match the operator.
    #[error("{what} has length {got}, the operator needs {expected}")]
    VectorLength {
        /// Which argument.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length required.
        expected: usize,
    },
    /// The element or a quadrature rule could not be built.
    #[error(transparent)]
    Element(#[from] ferrofem_fe::FeError),
}
