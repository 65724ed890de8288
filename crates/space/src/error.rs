//! Errors of space construction and queries.

/// What can go wrong building a space or asking it for dofs.
#[derive(Debug, thiserror::Error)]
pub enum SpaceError {
    /// The element could not be built (unsupported order on this cell type).
    #[error(transparent)]
    Element(#[from] ferrofem_fe::FeError),
    /// A mesh query failed (e.g. a tagged facet that is not a facet of any cell).
    #[error(transparent)]
    Mesh(#[from] ferrofem_mesh::MeshError),
    /// The coordinate map of a cell could not be evaluated (a probe's Jacobian), or is
    /// inverted or degenerate there.
    #[error(transparent)]
    Geometry(#[from] ferrofem_geometry::GeometryError),
    /// A cell index beyond the space's mesh.
    #[error("cell {cell} is out of range (the space has {num_cells} cells)")]
    CellOutOfRange {
        /// Requested cell.
        cell: usize,
        /// Number of cells of the space.
        num_cells: usize,
    },
    /// A facet, as (cell, local facet), outside the space's mesh.
    #[error(
        "facet {facet} of cell {cell} is out of range ({cells} cells of {facets_per_cell} facets)"
    )]
    FacetOutOfRange {
        /// The cell given.
        cell: u32,
        /// The local facet given.
        facet: u8,
        /// Cells of the space.
        cells: usize,
        /// Facets per cell.
        facets_per_cell: usize,
    },
    /// An argument slice of the wrong length.
    #[error("{len} {what} given, expected {expected}")]
    Length {
        /// What the slice holds.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length required.
        expected: usize,
    },
    /// A boundary tag that no facet of the mesh carries.
    #[error("no facet carries tag {tag}; tags present: {present:?}")]
    UnknownTag {
        /// The requested tag.
        tag: i32,
        /// Tags that do exist.
        present: Vec<i32>,
    },
    /// A space was used with a mesh it was not built on.
    #[error("space was built on a mesh with {expected_cells} cells, this one has {got_cells}")]
    MeshMismatch {
        /// Cells of the mesh the space was built on.
        expected_cells: usize,
        /// Cells of the mesh given.
        got_cells: usize,
    },
    /// Zero components requested.
    #[error("a space needs at least one component")]
    NoComponents,
    /// More dofs than 32-bit indices can address.
    #[error("space too large: {count} nodes exceed the 32-bit index range")]
    TooLarge {
        /// Number of nodes.
        count: usize,
    },
}
