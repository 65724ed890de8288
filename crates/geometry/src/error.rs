//! Errors of geometry evaluation.

use ferrofem_base::CellType;
use ferrofem_fe::FeError;

/// Everything that can go wrong evaluating cell geometry.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GeometryError {
    /// The Jacobian determinant at a point is not positive (an inverted cell), or is
    /// positive but negligible relative to the cell's edge lengths (a degenerate cell; see
    /// [`crate::DEGENERACY_TOLERANCE`]).
    #[error("cell {cell} is inverted or degenerate: det J = {det:e} at quadrature point {point}")]
    InvertedOrDegenerate {
        /// Index of the offending cell in the mesh.
        cell: usize,
        /// Index of the quadrature point (or 0 for a single-point query).
        point: usize,
        /// The determinant found there.
        det: f64,
    },
    /// A cell index beyond the mesh.
    #[error("cell {cell} is out of range (the mesh has {num_cells} cells)")]
    CellOutOfRange {
        /// Requested cell.
        cell: usize,
        /// Number of cells in the mesh.
        num_cells: usize,
    },
    /// A reference point whose length is not the cell dimension.
    #[error("reference point has {len} coordinates, the cell dimension is {dim}")]
    PointDimension {
        /// Coordinates given.
        len: usize,
        /// Cell dimension.
        dim: usize,
    },
    /// A quadrature rule for a different reference cell than the mesh's.
    #[error("quadrature rule is for {rule} cells, the mesh has {mesh} cells")]
    CellTypeMismatch {
        /// Cell type of the mesh.
        mesh: CellType,
        /// Cell type of the rule.
        rule: CellType,
    },
    /// A quadrature rule whose point and weight arrays disagree.
    #[error(
        "quadrature rule has {points} point coordinates and {weights} weights in dimension {dim}"
    )]
    RuleLength {
        /// Length of the point array.
        points: usize,
        /// Length of the weight array.
        weights: usize,
        /// Reference dimension.
        dim: usize,
    },
    /// The coordinate element could not be built or tabulated.
    #[error(transparent)]
    Element(#[from] FeError),
}
