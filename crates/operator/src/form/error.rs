//! Errors of building and using pointwise-form operators, boundary terms and error norms.

use ferrofem_base::CellType;

/// Everything that can go wrong setting up a [`FormOperator`](crate::FormOperator), a
/// boundary term or an error norm. Vector-length mistakes in the hot methods (`residual`,
/// `jacobian_apply`) are programming errors and panic instead (documented there).
#[derive(Debug, thiserror::Error)]
pub enum FormError {
    /// The space could not be built or queried.
    #[error(transparent)]
    Space(#[from] ferrofem_space::SpaceError),
    /// Cell geometry could not be evaluated (e.g. an inverted cell).
    #[error(transparent)]
    Geometry(#[from] ferrofem_geometry::GeometryError),
    /// An element or quadrature rule could not be built.
    #[error(transparent)]
    Fe(#[from] ferrofem_fe::FeError),
    /// A mesh query failed.
    #[error(transparent)]
    Mesh(#[from] ferrofem_mesh::MeshError),
    /// The physics is written for another spatial dimension than the mesh.
    #[error("physics '{name}' is {physics}-dimensional, the mesh is {mesh}-dimensional")]
    DimensionMismatch {
        /// Name of the physics.
        name: String,
        /// Dimension of the physics.
        physics: usize,
        /// Dimension of the mesh.
        mesh: usize,
    },
    /// The physics has another number of components than the space.
    #[error("physics '{name}' has {physics} components, the space has {space}")]
    ComponentMismatch {
        /// Name of the physics.
        name: String,
        /// Components of the physics.
        physics: usize,
        /// Components of the space.
        space: usize,
    },
    /// More solution components than the kernels support.
    #[error("{ncomp} solution components are not supported (at most {max})")]
    UnsupportedComponents {
        /// Requested components.
        ncomp: usize,
        /// Largest supported.
        max: usize,
    },
    /// The space (or an auxiliary space) was built on another mesh.
    #[error("{what} has {got} {cell_type} cells, the mesh has {expected} {mesh_type} cells")]
    MeshMismatch {
        /// Which object disagrees with the mesh.
        what: &'static str,
        /// Its cell count.
        got: usize,
        /// Its cell type.
        cell_type: CellType,
        /// The mesh's cell count.
        expected: usize,
        /// The mesh's cell type.
        mesh_type: CellType,
    },
    /// The auxiliary field has another number of components than the physics reads.
    #[error("physics '{name}' reads {expected} auxiliary fields, {got} were given")]
    AuxCount {
        /// Name of the physics.
        name: String,
        /// What the physics reads.
        expected: usize,
        /// What was given.
        got: usize,
    },
    /// More auxiliary components than the kernels support.
    #[error("{naux} auxiliary fields are not supported (at most {max})")]
    TooManyAux {
        /// Requested auxiliary components.
        naux: usize,
        /// Largest supported.
        max: usize,
    },
    /// A vector handed in has the wrong length.
    #[error("{what} has length {got}, expected {expected}")]
    VectorLength {
        /// Which vector.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The expected length.
        expected: usize,
    },
    /// A quadrature rule for another reference cell than the mesh's.
    #[error("quadrature rule is for {rule} cells, the mesh has {mesh} cells")]
    RuleCellType {
        /// Cell type of the rule.
        rule: CellType,
        /// Cell type of the mesh.
        mesh: CellType,
    },
    /// A boundary facet `(cell, local facet)` that does not exist.
    #[error("facet ({cell}, {facet}) does not exist: the mesh has {num_cells} cells of {num_facets} facets")]
    FacetOutOfRange {
        /// Cell index given.
        cell: u32,
        /// Local facet index given.
        facet: u8,
        /// Cells in the mesh.
        num_cells: usize,
        /// Facets per cell.
        num_facets: usize,
    },
    /// A constrained dof beyond the operator's size.
    #[error("constrained dof {dof} is out of range (the operator has {n} rows)")]
    DofOutOfRange {
        /// The dof given.
        dof: u32,
        /// Number of rows.
        n: usize,
    },
    /// A linear operator that is not square.
    #[error("operator is {nrows} × {ncols}, a square operator is needed")]
    NotSquare {
        /// Rows.
        nrows: usize,
        /// Columns.
        ncols: usize,
    },
}
