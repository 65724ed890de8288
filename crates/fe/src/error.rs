//! Errors of element and quadrature construction.

use ferrofem_base::CellType;

/// A request for an element or rule that ferrofem does not provide.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FeError {
    /// The polynomial order is outside the supported range for this cell type.
    #[error("order {order} is not supported on {cell_type} (supported: {min}..={max})")]
    UnsupportedOrder {
        /// The cell type.
        cell_type: CellType,
        /// Requested order.
        order: usize,
        /// Smallest supported order.
        min: usize,
        /// Largest supported order.
        max: usize,
    },
    /// A quadrature rule with too few points was requested.
    #[error("{rule} needs at least {min} points, got {n}")]
    TooFewPoints {
        /// Which rule.
        rule: &'static str,
        /// Requested points.
        n: usize,
        /// Minimum.
        min: usize,
    },
    /// Points passed for tabulation do not have the element's dimension.
    #[error("point array of length {len} is not a multiple of dimension {dim}")]
    PointDimension {
        /// Array length.
        len: usize,
        /// Expected dimension.
        dim: usize,
    },
}
