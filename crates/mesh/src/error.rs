//! Errors of mesh construction, import and validation.

use std::fmt;

/// Where in an input file a problem was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileLocation {
    /// 1-based line number of a text file.
    Line(usize),
    /// 0-based byte offset into a binary section or file.
    Byte(usize),
}

impl fmt::Display for FileLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileLocation::Line(l) => write!(f, "line {l}"),
            FileLocation::Byte(b) => write!(f, "byte {b}"),
        }
    }
}

/// Everything that can go wrong building, reading or checking a mesh.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The connectivity array is not a whole number of cells.
    #[error(
        "connectivity has {len} entries, not a multiple of {per_cell} vertices per {cell_type}"
    )]
    ConnectivityLength {
        /// Length of the given array.
        len: usize,
        /// Vertices per cell.
        per_cell: usize,
        /// The cell type.
        cell_type: ferrofem_base::CellType,
    },
    /// The coordinate array is not a whole number of points.
    #[error("coordinate array has {len} entries, not a multiple of dimension {dim}")]
    CoordinateLength {
        /// Length of the given array.
        len: usize,
        /// Spatial dimension.
        dim: usize,
    },
    /// A cell refers to a vertex that does not exist.
    #[error("cell {cell} refers to vertex {vertex}, but the mesh has {num_vertices} vertices")]
    VertexOutOfRange {
        /// Cell index.
        cell: usize,
        /// The offending vertex index.
        vertex: u64,
        /// Number of vertices.
        num_vertices: usize,
    },
    /// A cell names the same vertex twice.
    #[error("cell {cell} repeats vertex {vertex}")]
    RepeatedVertex {
        /// Cell index.
        cell: usize,
        /// The repeated vertex.
        vertex: u32,
    },
    /// A coordinate is NaN or infinite.
    #[error("vertex {vertex} has a non-finite coordinate")]
    NonFiniteCoordinate {
        /// Vertex index.
        vertex: usize,
    },
    /// A step (a refinement) would not fit in the available memory: refused before it
    /// allocates, with the estimate.
    #[error(transparent)]
    Memory(#[from] ferrofem_base::MemoryError),
    /// More vertices or cells than 32-bit indices can address.
    #[error("mesh too large: {what} = {count} exceeds the 32-bit index range")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// How many there were.
        count: usize,
    },
    /// A cell has (numerically) zero volume.
    #[error("cell {cell} is degenerate: Jacobian determinant {det:.3e} at a corner (cell size {scale:.3e})")]
    DegenerateCell {
        /// Cell index.
        cell: usize,
        /// The smallest corner Jacobian determinant found.
        det: f64,
        /// A length scale of the cell, to judge `det` against.
        scale: f64,
    },
    /// A cell is inverted (negative Jacobian determinant at some corner).
    #[error("cell {cell} is inverted: Jacobian determinant {det:.3e} at local vertex {corner}")]
    InvertedCell {
        /// Cell index.
        cell: usize,
        /// Local vertex (corner) where the determinant is negative.
        corner: usize,
        /// The determinant there.
        det: f64,
    },
    /// A cell whose corner Jacobian determinants have mixed signs (a self-intersecting,
    /// "tangled" cell): no reordering of its vertices makes it valid.
    #[error("cell {cell} is tangled: {negative} of its {corners} corner Jacobian determinants are negative, the others positive")]
    TangledCell {
        /// Cell index.
        cell: usize,
        /// How many corner determinants are negative.
        negative: usize,
        /// Number of corners.
        corners: usize,
    },
    /// Two cells that share a facet lie on the same side of it: the mesh folds over itself
    /// there, so the cells overlap. Reorienting cells cannot repair this (unlike a
    /// consistently mirrored vertex order), so the mesh is refused.
    #[error(
        "cell {cell} folds over cell {neighbor}: both lie on the same side of their shared \
         facet (vertices {facet:?}), so they overlap{}",
        more_folds(.folds)
    )]
    FoldedCells {
        /// The cell of the pair whose listed vertex order disagrees with that of most of
        /// the mesh's cells (when only one of the two does: the cell that was turned
        /// over), else the one with the larger index.
        cell: usize,
        /// The other cell on the facet.
        neighbor: usize,
        /// The shared facet's vertices (sorted).
        facet: Vec<u32>,
        /// How many interior facets of the mesh are folded in all (at least 1).
        folds: usize,
    },
    /// A facet is shared by more than two cells, so the mesh is not a manifold.
    #[error("facet with vertices {vertices:?} is shared by {count} cells (first: {cells:?}); a conforming mesh has at most two")]
    NonManifoldFacet {
        /// The facet's vertices (sorted).
        vertices: Vec<u32>,
        /// How many cells share it.
        count: usize,
        /// The first few of those cells.
        cells: Vec<u32>,
    },
    /// A tagged facet is not a facet of any cell.
    #[error("tagged facet {facet} (vertices {vertices:?}) is not a facet of any cell")]
    UnknownFacet {
        /// Index of the facet in the tagged-facet list.
        facet: usize,
        /// Its vertices, as given.
        vertices: Vec<u32>,
    },
    /// A structured-mesh specification could not be understood.
    #[error("invalid box specification '{spec}': {reason}")]
    BoxSpec {
        /// The specification as given.
        spec: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A Gmsh file could not be read.
    #[error("{path}: {location}: {message}")]
    Gmsh {
        /// File name (or `<memory>`).
        path: String,
        /// Line or byte where reading failed.
        location: FileLocation,
        /// What was wrong there.
        message: String,
    },
    /// The Gmsh file is readable but holds nothing ferrofem can use as a mesh.
    #[error("{path}: {message}")]
    Unsupported {
        /// File name (or `<memory>`).
        path: String,
        /// What is not supported.
        message: String,
    },
    /// A mesh read from a file failed a check of its cells (degenerate, tangled, folded,
    /// non-manifold, too large): the file, where the first cell the error names is written,
    /// and which Gmsh elements and nodes the error's cell and vertex indices stand for.
    #[error("{path}: {}{source}{}", at_location(.location), gmsh_names(.elements, .nodes))]
    InFile {
        /// File name (or `<memory>`).
        path: String,
        /// Line or byte of the file where the first cell named by `source` is written.
        location: Option<FileLocation>,
        /// `(cell index, Gmsh element tag)` for each cell `source` names.
        elements: Vec<(usize, u64)>,
        /// `(vertex index, Gmsh node tag)` for each vertex `source` names.
        nodes: Vec<(u32, u64)>,
        /// The error found in the mesh.
        source: Box<MeshError>,
    },
    /// An operating-system error while reading a file.
    #[error("{path}: {source}")]
    Io {
        /// File name.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// " (3 folded facets in all)" when there is more than one.
fn more_folds(folds: &usize) -> String {
    if *folds > 1 {
        format!(" ({folds} folded facets in all)")
    } else {
        String::new()
    }
}

/// "line 12: " or "" when unknown.
fn at_location(location: &Option<FileLocation>) -> String {
    location.map_or_else(String::new, |l| format!("{l}: "))
}

/// " (cell 3 is Gmsh element 17; vertices 4, 9 are Gmsh nodes 5, 12)", or "".
fn gmsh_names(elements: &[(usize, u64)], nodes: &[(u32, u64)]) -> String {
    fn list<T: fmt::Display>(items: impl Iterator<Item = T>) -> String {
        items.map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
    }
    let mut parts = Vec::new();
    if !elements.is_empty() {
        let (cells, are) = if elements.len() == 1 {
            ("cell", "is Gmsh element")
        } else {
            ("cells", "are Gmsh elements")
        };
        parts.push(format!(
            "{cells} {} {are} {}",
            list(elements.iter().map(|e| e.0)),
            list(elements.iter().map(|e| e.1))
        ));
    }
    if !nodes.is_empty() {
        let (vertices, are) = if nodes.len() == 1 {
            ("vertex", "is Gmsh node")
        } else {
            ("vertices", "are Gmsh nodes")
        };
        parts.push(format!(
            "{vertices} {} {are} {}",
            list(nodes.iter().map(|n| n.0)),
            list(nodes.iter().map(|n| n.1))
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

impl MeshError {
    /// The cells this error names (first the one it is mainly about).
    pub(crate) fn cells(&self) -> Vec<usize> {
        match self {
            MeshError::VertexOutOfRange { cell, .. }
            | MeshError::RepeatedVertex { cell, .. }
            | MeshError::DegenerateCell { cell, .. }
            | MeshError::InvertedCell { cell, .. }
            | MeshError::TangledCell { cell, .. } => vec![*cell],
            MeshError::FoldedCells { cell, neighbor, .. } => vec![*cell, *neighbor],
            MeshError::NonManifoldFacet { cells, .. } => {
                cells.iter().map(|&c| c as usize).collect()
            }
            _ => Vec::new(),
        }
    }

    /// The mesh vertices this error names.
    pub(crate) fn vertices(&self) -> Vec<u32> {
        match self {
            MeshError::RepeatedVertex { vertex, .. } => vec![*vertex],
            MeshError::FoldedCells { facet, .. } => facet.clone(),
            MeshError::NonManifoldFacet { vertices, .. } => vertices.clone(),
            _ => Vec::new(),
        }
    }
}
