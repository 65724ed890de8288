//! Reading Gmsh `.msh` files (MSH 2.2 and 4.1, ASCII or binary of either byte order).
//!
//! The cells of the resulting [`Mesh`] are the elements of the highest dimension in the
//! file; they must all be one linear type (Gmsh types 2 triangle, 3 quadrangle,
//! 4 tetrahedron, 5 hexahedron), anything else is [`MeshError::Unsupported`]. A cell's tag
//! is its first physical group (0 when it has none). Elements one dimension lower that
//! belong to physical groups become [`TaggedFacets`](crate::TaggedFacets), once per group;
//! lower-dimensional elements are ignored. `$PhysicalNames` become
//! [`PhysicalName`](crate::PhysicalName)s. Nodes that no cell uses are dropped and the
//! vertices numbered in increasing Gmsh node-tag order; cells and facets keep file order.
//! Quadrangles and hexahedra are converted from Gmsh's counter-clockwise vertex order to
//! ferrofem's lexicographic one (`[g0, g1, g3, g2]`, `[g0, g1, g3, g2, g4, g5, g7, g6]`).
//! 2-D meshes must lie in a plane `z = const`; `z` is dropped. Cells listed with mirrored
//! vertex order are reoriented ([`Mesh::orient_cells`]); degenerate, tangled and folded
//! cells are refused with [`MeshError::InFile`], naming the file, the line or byte of the
//! offending element and its Gmsh element (and node) tags.
//!
//! Every malformed input gives [`MeshError::Gmsh`] with the line (ASCII files) or byte
//! offset (binary files) where reading failed; text quoted from the file in a message is
//! escaped (control characters and invalid UTF-8 shown as escapes). Nothing the file says
//! can make the reader panic or allocate more than the input could describe: capacities
//! announced by counts are capped by what the remaining input can hold, and the
//! memory held while reading stays proportional to the file's size (a property test
//! checks it with a counting allocator).

mod build;
mod file;
mod reader;
mod tables;
mod types;
mod v2;
mod v4;

use std::path::Path;

use crate::{Mesh, MeshError};

/// How many elements of one Gmsh type a file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementTypeCount {
    /// The Gmsh element type number.
    pub gmsh_type: u32,
    /// Its name, e.g. "4-node tetrahedron".
    pub name: &'static str,
    /// Number of element records of this type (an MSH 2.2 element in several physical
    /// groups is written, and counted, once per group).
    pub count: usize,
}

/// A summary of a Gmsh file, for reports such as the command-line mesh summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GmshInfo {
    /// The MSH version as written in the file ("2.2" or "4.1").
    pub version: String,
    /// Whether the file is binary.
    pub binary: bool,
    /// Whether the binary data are big-endian (false for ASCII files).
    pub big_endian: bool,
    /// Number of nodes in `$Nodes` (before unused ones are dropped).
    pub num_nodes_in_file: usize,
    /// Number of element records in `$Elements`.
    pub num_elements_in_file: usize,
    /// Element records per Gmsh type, in increasing type number.
    pub element_type_counts: Vec<ElementTypeCount>,
    /// Sections that were present but not read (e.g. "NodeData", "Periodic"); control
    /// and other non-printable characters in their names are escaped (`\u{1b}`, `\xff`).
    pub skipped_sections: Vec<String>,
    /// Cells whose vertex order was mirrored to make them positively oriented.
    pub reoriented_cells: usize,
}

/// Reads a Gmsh mesh file: MSH 2.2 or 4.1, ASCII or binary of either byte order.
///
/// The cells are the elements of the highest dimension in the file; they must all be one
/// linear type (Gmsh types 2 triangle, 3 quadrangle, 4 tetrahedron, 5 hexahedron), anything
/// else (prisms, pyramids, second-order elements, a mix) is [`MeshError::Unsupported`]
/// naming the Gmsh type. A cell's tag is its first physical group (0 when it has none).
/// Elements one dimension lower that belong to physical groups become
/// [`TaggedFacets`](crate::TaggedFacets), once per group; lower-dimensional elements are
/// ignored. `$PhysicalNames` become [`PhysicalName`](crate::PhysicalName)s; other sections
/// than `$MeshFormat`, `$PhysicalNames`, `$Entities`, `$Nodes`, `$Elements` are skipped.
/// Nodes that no cell uses are dropped; vertices are numbered in increasing Gmsh node-tag
/// order, cells and facets keep file order. Quadrangles and hexahedra are converted from
/// Gmsh's counter-clockwise order to ferrofem's lexicographic one (`[g0, g1, g3, g2]`,
/// `[g0, g1, g3, g2, g4, g5, g7, g6]`). 2-D meshes must lie in a plane `z = const`, and
/// `z` is dropped. Cells listed with mirrored (negatively oriented) vertex order are
/// reoriented and counted in [`GmshInfo::reoriented_cells`]; the order may differ from
/// cell to cell, but cells must not overlap ([`Mesh::orient_cells`]).
///
/// A malformed file gives [`MeshError::Gmsh`] with the line (ASCII files) or byte offset
/// (binary files) where reading failed; a file that cannot be read gives
/// [`MeshError::Io`]. A degenerate, tangled or folded cell, or a facet shared by more than
/// two cells, gives [`MeshError::InFile`]: the file, the line or byte where the first cell
/// the error names is written, the Gmsh element and node tags of the cells and vertices
/// it names, and the error itself ([`MeshError::DegenerateCell`],
/// [`MeshError::TangledCell`], [`MeshError::FoldedCells`],
/// [`MeshError::NonManifoldFacet`]).
pub fn read_gmsh(path: impl AsRef<Path>) -> Result<Mesh, MeshError> {
    read_gmsh_with_info(path).map(|(m, _)| m)
}

/// Reads a Gmsh mesh held in memory, like [`read_gmsh`]; `name` stands for the file name
/// in errors.
pub fn read_gmsh_bytes(bytes: &[u8], name: &str) -> Result<Mesh, MeshError> {
    read_gmsh_bytes_with_info(bytes, name).map(|(m, _)| m)
}

/// Like [`read_gmsh`], also returning a summary of the file.
pub fn read_gmsh_with_info(path: impl AsRef<Path>) -> Result<(Mesh, GmshInfo), MeshError> {
    let path = path.as_ref();
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| MeshError::Io {
        path: name.clone(),
        source,
    })?;
    read_gmsh_bytes_with_info(&bytes, &name)
}

/// Like [`read_gmsh_bytes`], also returning a summary of the file.
pub fn read_gmsh_bytes_with_info(bytes: &[u8], name: &str) -> Result<(Mesh, GmshInfo), MeshError> {
    let mut r = reader::Reader::new(bytes, name);
    let raw = file::read_file(&mut r)?;
    let (mut mesh, origin) = build::build(&raw, &r)?;
    let reoriented_cells = mesh
        .orient_cells()
        .map_err(|e| origin.in_file(&raw, &r, e))?;
    drop(origin);
    let info = GmshInfo {
        version: raw.version_text.clone(),
        binary: r.is_binary(),
        big_endian: r.is_big_endian(),
        num_nodes_in_file: raw.nodes.len(),
        num_elements_in_file: raw.elements.records,
        element_type_counts: raw
            .elements
            .type_counts
            .iter()
            .map(|(&n, &count)| ElementTypeCount {
                gmsh_type: n,
                name: types::element_type(n).map_or("unknown", |t| t.name),
                count,
            })
            .collect(),
        skipped_sections: raw.skipped.clone(),
        reoriented_cells,
    };
    Ok((mesh, info))
}
