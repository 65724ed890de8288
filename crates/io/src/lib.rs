//! File output and exchange formats of ferrofem: VTK XML unstructured grids (`.vtu`)
//! and time-series collections (`.pvd`) for ParaView, Matrix Market (`.mtx`) for
//! matrices and vectors, CSV for tables, seismograms as CSV, Seismic Unix (`.su`) or
//! SEG-Y revision 2.0 traces, JSON for benchmark records, and PNG figures: wiggle trace
//! gathers of seismograms ([`write_trace_gather_png`]) and wavefield snapshots
//! ([`write_field_png`]), drawn with an embedded font so that they need no system fonts.
//!
//! Fields of high-order Lagrange spaces are written by [`write_space_vtu`] on linear
//! sub-cells over each cell's node lattice.
//!
//! Every function returns [`IoError`], which names the file and, for text that could not
//! be read, the 1-based line. Writers check the consistency of what they are given
//! before creating a file and stream through buffered writers, so output scales
//! linearly with the data.

#![warn(missing_docs)]

mod csv;
mod error;
mod json;
mod matrix_market;
mod number;
mod plot;
mod pvd;
mod pvtu;
mod seismogram;
mod space_vtu;
mod vtu;
mod xml;

pub use csv::{CsvValue, CsvWriter};
pub use error::IoError;
pub use json::{append_json_line, read_json_lines, write_json};
pub use matrix_market::{
    read_matrix, read_matrix_from, read_vector, read_vector_from, write_csr, write_vector,
    CooMatrix, Symmetry,
};
pub use plot::{
    write_field_png, write_trace_gather_png, FieldPlot, GatherPlot, Normalise, Raster, TraceOffset,
};
pub use pvd::write_pvd;
pub use pvtu::write_space_pvtu;
pub use seismogram::{write_segy, write_seismograms_csv, write_su, Seismograms, Station};
pub use space_vtu::{write_space_vtu, write_space_vtu_piece};
pub use vtu::{
    vtk_cell_type, vtk_node_order, write_mesh_vtu, Encoding, Field, FieldData, VtuFile,
    VTK_HEXAHEDRON, VTK_LAGRANGE_HEXAHEDRON, VTK_LAGRANGE_QUADRILATERAL, VTK_LAGRANGE_TETRAHEDRON,
    VTK_LAGRANGE_TRIANGLE, VTK_LINE, VTK_QUAD, VTK_TETRA, VTK_TRIANGLE, VTK_VERTEX,
};
