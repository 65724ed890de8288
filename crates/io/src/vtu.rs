//! VTK XML UnstructuredGrid (`.vtu`) output for ParaView and VisIt.
//!
//! [`VtuFile`] is a builder that borrows the caller's arrays (nothing is copied) and
//! streams them to disk through a `BufWriter`: points (padded to three coordinates),
//! one or more blocks of cells, and any number of point and cell data arrays.
//! [`write_mesh_vtu`] writes a [`Mesh`] with its cell tags in one call.
//!
//! Cells given by ferrofem [`CellType`] are converted from ferrofem's lexicographic
//! quadrilateral/hexahedron vertex order to VTK's counter-clockwise order
//! (see [`vtk_node_order`]); cells given by a raw VTK type code through
//! [`VtuFile::vtk_cells`] are written exactly as given, which is how higher-order
//! (Lagrange) or subdivided output is layered on top of this builder.
//!
//! File layout: `version="1.0"`, `byte_order="LittleEndian"`, `header_type="UInt64"`.
//! In [`Encoding::Binary`] every `DataArray` is inline base64 of the 8-byte
//! little-endian byte count followed by the raw little-endian values; in
//! [`Encoding::Ascii`] values are written as text with the fewest digits that read back
//! exactly. Coordinates and `f64` fields are `Float64`, `i32` fields `Int32`,
//! connectivity and offsets `Int64`, cell types `UInt8`.
//!
//! Note for higher-order cells: VTK ≥ 9 reads `VTK_LAGRANGE_HEXAHEDRON` nodes of files
//! with a version below 2.2 (as this one) in the legacy edge order, which swaps the
//! node blocks of two edges relative to the current VTK documentation.

use crate::number::push_shortest;
use crate::xml::escape_attr;
use crate::IoError;
use base64::engine::general_purpose::STANDARD;
use base64::write::EncoderWriter;
use ferrofem_base::CellType;
use ferrofem_mesh::Mesh;
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// VTK cell type code of a single point.
pub const VTK_VERTEX: u8 = 1;
/// VTK cell type code of a 2-node line segment.
pub const VTK_LINE: u8 = 3;
/// VTK cell type code of a 3-node triangle.
pub const VTK_TRIANGLE: u8 = 5;
/// VTK cell type code of a 4-node quadrilateral (counter-clockwise vertices).
pub const VTK_QUAD: u8 = 9;
/// VTK cell type code of a 4-node tetrahedron.
pub const VTK_TETRA: u8 = 10;
/// VTK cell type code of an 8-node hexahedron (bottom face counter-clockwise, then top).
pub const VTK_HEXAHEDRON: u8 = 12;
/// VTK cell type code of an arbitrary-order Lagrange triangle.
pub const VTK_LAGRANGE_TRIANGLE: u8 = 69;
/// VTK cell type code of an arbitrary-order Lagrange quadrilateral.
pub const VTK_LAGRANGE_QUADRILATERAL: u8 = 70;
/// VTK cell type code of an arbitrary-order Lagrange tetrahedron.
pub const VTK_LAGRANGE_TETRAHEDRON: u8 = 71;
/// VTK cell type code of an arbitrary-order Lagrange hexahedron.
pub const VTK_LAGRANGE_HEXAHEDRON: u8 = 72;

/// How `DataArray` contents are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// Inline base64 of raw little-endian values: compact and fast (the default choice).
    Binary,
    /// Human-readable text; exact (shortest round-trip digits) but larger and slower.
    Ascii,
}

/// The VTK cell type code of a ferrofem cell type.
pub const fn vtk_cell_type(ct: CellType) -> u8 {
    match ct {
        CellType::Triangle => VTK_TRIANGLE,
        CellType::Quadrilateral => VTK_QUAD,
        CellType::Tetrahedron => VTK_TETRA,
        CellType::Hexahedron => VTK_HEXAHEDRON,
    }
}

const IDENTITY_3: [usize; 3] = [0, 1, 2];
const IDENTITY_4: [usize; 4] = [0, 1, 2, 3];
const QUAD_TO_VTK: [usize; 4] = [0, 1, 3, 2];
const HEX_TO_VTK: [usize; 8] = [0, 1, 3, 2, 4, 5, 7, 6];

/// The vertex permutation from ferrofem to VTK: VTK's `k`-th vertex of a cell is
/// ferrofem's local vertex `order[k]`.
///
/// Simplices keep their order; quadrilaterals and hexahedra go from lexicographic
/// (`i + 2j + 4k`) to counter-clockwise faces (`[0,1,3,2]`, `[0,1,3,2,4,5,7,6]`).
pub fn vtk_node_order(ct: CellType) -> &'static [usize] {
    match ct {
        CellType::Triangle => &IDENTITY_3,
        CellType::Quadrilateral => &QUAD_TO_VTK,
        CellType::Tetrahedron => &IDENTITY_4,
        CellType::Hexahedron => &HEX_TO_VTK,
    }
}

/// The values of a data array, borrowed from the caller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldData<'a> {
    /// Floating-point values, written as `Float64`.
    F64(&'a [f64]),
    /// Integer values (tags, colours, ranks), written as `Int32`.
    I32(&'a [i32]),
}

impl FieldData<'_> {
    /// Number of scalar values.
    pub fn len(&self) -> usize {
        match self {
            FieldData::F64(v) => v.len(),
            FieldData::I32(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named point or cell data array: `components` values per point (or cell),
/// interleaved (`[x0, y0, x1, y1, ...]`).
///
/// Two-component arrays are padded to three on output so that ParaView treats them as
/// vectors (glyphs, stream lines) in 2-D.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field<'a> {
    /// Name shown in ParaView.
    pub name: &'a str,
    /// Values per point or cell (1 scalar, 2 or 3 vector, 9 tensor, ...).
    pub components: usize,
    /// The values.
    pub data: FieldData<'a>,
}

impl<'a> Field<'a> {
    /// A floating-point field.
    pub fn f64(name: &'a str, components: usize, values: &'a [f64]) -> Field<'a> {
        Field {
            name,
            components,
            data: FieldData::F64(values),
        }
    }

    /// An integer field.
    pub fn i32(name: &'a str, components: usize, values: &'a [i32]) -> Field<'a> {
        Field {
            name,
            components,
            data: FieldData::I32(values),
        }
    }

    /// Components as written to the file (2 becomes 3).
    fn written_components(&self) -> usize {
        if self.components == 2 {
            3
        } else {
            self.components
        }
    }
}

/// A block of cells of one type.
#[derive(Clone, Copy, Debug)]
struct CellBlock<'a> {
    vtk_type: u8,
    nodes_per_cell: usize,
    connectivity: &'a [u32],
    /// Permutation to VTK order (`None`: already in VTK order).
    order: Option<&'static [usize]>,
}

impl CellBlock<'_> {
    fn num_cells(&self) -> usize {
        self.connectivity
            .len()
            .checked_div(self.nodes_per_cell)
            .unwrap_or(0)
    }

    /// The block's connectivity in VTK order.
    fn vtk_connectivity(&self) -> impl Iterator<Item = i64> + '_ {
        let n = self.nodes_per_cell.max(1);
        let order = self.order;
        self.connectivity.chunks_exact(n).flat_map(move |c| {
            (0..n).map(move |k| {
                let local = match order {
                    Some(p) => p[k],
                    None => k,
                };
                i64::from(c[local])
            })
        })
    }
}

/// Builder for one `.vtu` file: an unstructured grid with point and cell data.
///
/// All arrays are borrowed; consistency (lengths, indices, names) is checked when the
/// file is written, which returns [`IoError::InvalidInput`] before anything is written.
///
/// ```no_run
/// use ferrofem_io::{Encoding, VtuFile};
/// use ferrofem_base::CellType;
/// let points = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0];
/// let quads = [0, 1, 2, 3]; // lexicographic, as in ferrofem
/// let u = [0.0, 1.0, 2.0, 3.0];
/// VtuFile::new(&points, 2)
///     .cells(CellType::Quadrilateral, &quads)
///     .point_data("u", 1, &u)
///     .write("out.vtu", Encoding::Binary)?;
/// # Ok::<(), ferrofem_io::IoError>(())
/// ```
#[derive(Clone, Debug)]
pub struct VtuFile<'a> {
    points: &'a [f64],
    dim: usize,
    blocks: Vec<CellBlock<'a>>,
    point_data: Vec<Field<'a>>,
    cell_data: Vec<Field<'a>>,
}

impl<'a> VtuFile<'a> {
    /// Starts a file with point coordinates, `dim` (1, 2 or 3) per point; missing
    /// coordinates are written as zero.
    pub fn new(points: &'a [f64], dim: usize) -> VtuFile<'a> {
        VtuFile {
            points,
            dim,
            blocks: Vec::new(),
            point_data: Vec::new(),
            cell_data: Vec::new(),
        }
    }

    /// Adds cells of a ferrofem cell type with connectivity in ferrofem vertex order
    /// (`cell_type.num_vertices()` point indices per cell); converted to VTK order.
    pub fn cells(mut self, cell_type: CellType, connectivity: &'a [u32]) -> VtuFile<'a> {
        self.blocks.push(CellBlock {
            vtk_type: vtk_cell_type(cell_type),
            nodes_per_cell: cell_type.num_vertices(),
            connectivity,
            order: Some(vtk_node_order(cell_type)),
        });
        self
    }

    /// Adds cells of any VTK type (`VTK_*` constants) with `nodes_per_cell` point indices
    /// per cell, already in VTK's node order; written unchanged. Used for higher-order
    /// (Lagrange) cells and for lines or vertices.
    pub fn vtk_cells(
        mut self,
        vtk_type: u8,
        nodes_per_cell: usize,
        connectivity: &'a [u32],
    ) -> VtuFile<'a> {
        self.blocks.push(CellBlock {
            vtk_type,
            nodes_per_cell,
            connectivity,
            order: None,
        });
        self
    }

    /// Adds a floating-point point data array with `components` values per point.
    pub fn point_data(self, name: &'a str, components: usize, values: &'a [f64]) -> VtuFile<'a> {
        self.point_field(Field::f64(name, components, values))
    }

    /// Adds an integer point data array with `components` values per point.
    pub fn point_data_i32(
        self,
        name: &'a str,
        components: usize,
        values: &'a [i32],
    ) -> VtuFile<'a> {
        self.point_field(Field::i32(name, components, values))
    }

    /// Adds a floating-point cell data array with `components` values per cell.
    pub fn cell_data(self, name: &'a str, components: usize, values: &'a [f64]) -> VtuFile<'a> {
        self.cell_field(Field::f64(name, components, values))
    }

    /// Adds an integer cell data array (tags, colours) with `components` values per cell.
    pub fn cell_data_i32(self, name: &'a str, components: usize, values: &'a [i32]) -> VtuFile<'a> {
        self.cell_field(Field::i32(name, components, values))
    }

    /// Adds a point data array.
    pub fn point_field(mut self, field: Field<'a>) -> VtuFile<'a> {
        self.point_data.push(field);
        self
    }

    /// Adds a cell data array (values ordered as the cells: block by block).
    pub fn cell_field(mut self, field: Field<'a>) -> VtuFile<'a> {
        self.cell_data.push(field);
        self
    }

    /// Number of points (0 when the coordinate array is inconsistent).
    pub fn num_points(&self) -> usize {
        self.points.len().checked_div(self.dim).unwrap_or(0)
    }

    /// Number of cells over all blocks.
    pub fn num_cells(&self) -> usize {
        self.blocks.iter().map(CellBlock::num_cells).sum()
    }

    /// Writes the file at `path` (created or truncated).
    pub fn write(&self, path: impl AsRef<Path>, encoding: Encoding) -> Result<(), IoError> {
        let path = path.as_ref();
        self.validate(path)?;
        let file = File::create(path).map_err(|e| IoError::os(path, e))?;
        let mut w = BufWriter::with_capacity(1 << 20, file);
        self.write_unchecked(&mut w, encoding)
            .and_then(|()| w.flush())
            .map_err(|e| IoError::os(path, e))
    }

    /// Writes the file to any byte sink (errors name the file `<writer>`).
    pub fn write_to<W: Write>(&self, w: &mut W, encoding: Encoding) -> Result<(), IoError> {
        let path = Path::new("<writer>");
        self.validate(path)?;
        self.write_unchecked(w, encoding)
            .map_err(|e| IoError::os(path, e))
    }

    /// Checks lengths, indices and names; `path` only labels the error.
    fn validate(&self, path: &Path) -> Result<(), IoError> {
        let bad = |m: String| Err(IoError::invalid(path, m));
        if !(1..=3).contains(&self.dim) {
            return bad(format!("point dimension {} is not 1, 2 or 3", self.dim));
        }
        if self.points.len() % self.dim != 0 {
            return bad(format!(
                "{} coordinates are not a whole number of {}-D points",
                self.points.len(),
                self.dim
            ));
        }
        let npoints = self.num_points();
        for (b, block) in self.blocks.iter().enumerate() {
            if block.nodes_per_cell == 0 {
                return bad(format!("cell block {b} has zero nodes per cell"));
            }
            if block.connectivity.len() % block.nodes_per_cell != 0 {
                return bad(format!(
                    "cell block {b}: {} indices are not a whole number of {}-node cells",
                    block.connectivity.len(),
                    block.nodes_per_cell
                ));
            }
            if let Some(pos) = block
                .connectivity
                .iter()
                .position(|&v| v as usize >= npoints)
            {
                return bad(format!(
                    "cell block {b}: cell {} refers to point {}, but there are {npoints} points",
                    pos / block.nodes_per_cell,
                    block.connectivity[pos]
                ));
            }
        }
        let ncells = self.num_cells();
        for (section, fields, count, what) in [
            ("point", &self.point_data, npoints, "points"),
            ("cell", &self.cell_data, ncells, "cells"),
        ] {
            let mut names = HashSet::new();
            for f in fields {
                if f.name.is_empty() || f.name.chars().any(char::is_control) {
                    return bad(format!(
                        "{section} data name {:?} is empty or has control characters",
                        f.name
                    ));
                }
                if !names.insert(f.name) {
                    return bad(format!("{section} data name '{}' is used twice", f.name));
                }
                if f.components == 0 {
                    return bad(format!("{section} data '{}' has zero components", f.name));
                }
                let expected = count.checked_mul(f.components);
                if expected != Some(f.data.len()) {
                    return bad(format!(
                        "{section} data '{}' has {} values, expected {} {what} x {} components",
                        f.name,
                        f.data.len(),
                        count,
                        f.components
                    ));
                }
            }
        }
        Ok(())
    }

    /// Streams the (validated) file to `w`.
    fn write_unchecked<W: Write>(&self, w: &mut W, enc: Encoding) -> io::Result<()> {
        let npoints = self.num_points();
        let ncells = self.num_cells();
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="UnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt64">"#
        )?;
        writeln!(w, "  <UnstructuredGrid>")?;
        writeln!(
            w,
            r#"    <Piece NumberOfPoints="{npoints}" NumberOfCells="{ncells}">"#
        )?;

        for (tag, fields, count) in [
            ("PointData", &self.point_data, npoints),
            ("CellData", &self.cell_data, ncells),
        ] {
            if fields.is_empty() {
                continue;
            }
            writeln!(w, "      <{tag}>")?;
            for f in fields {
                write_field(w, f, count, enc)?;
            }
            writeln!(w, "      </{tag}>")?;
        }

        writeln!(w, "      <Points>")?;
        let dim = self.dim;
        let coords = self
            .points
            .chunks_exact(dim)
            .flat_map(|p| (0..3).map(move |k| if k < dim { p[k] } else { 0.0 }));
        write_array(w, "", 3, npoints * 3, 3, coords, enc)?;
        writeln!(w, "      </Points>")?;

        writeln!(w, "      <Cells>")?;
        let nconn: usize = self.blocks.iter().map(|b| b.connectivity.len()).sum();
        let per_line = self.blocks.first().map_or(1, |b| b.nodes_per_cell);
        let conn = self.blocks.iter().flat_map(CellBlock::vtk_connectivity);
        write_array(w, "connectivity", 1, nconn, per_line, conn, enc)?;
        let mut end = 0i64;
        let offsets = self.blocks.iter().flat_map(|b| {
            let n = b.nodes_per_cell as i64;
            (0..b.num_cells()).map(move |_| n)
        });
        let offsets = offsets.map(|n| {
            end += n;
            end
        });
        write_array(w, "offsets", 1, ncells, 16, offsets, enc)?;
        let types = self
            .blocks
            .iter()
            .flat_map(|b| std::iter::repeat_n(b.vtk_type, b.num_cells()));
        write_array(w, "types", 1, ncells, 32, types, enc)?;
        writeln!(w, "      </Cells>")?;

        writeln!(w, "    </Piece>")?;
        writeln!(w, "  </UnstructuredGrid>")?;
        writeln!(w, "</VTKFile>")?;
        Ok(())
    }
}

/// Writes a mesh with a `cell_tag` (`Int32`) cell data array and the given fields.
///
/// Point fields have one tuple per mesh vertex, cell fields one per cell; 2-D meshes get
/// `z = 0`. A field named `cell_tag` clashes with the tags and is rejected.
pub fn write_mesh_vtu(
    path: impl AsRef<Path>,
    mesh: &Mesh,
    point_data: &[Field<'_>],
    cell_data: &[Field<'_>],
    encoding: Encoding,
) -> Result<(), IoError> {
    let mut file = VtuFile::new(mesh.coords(), mesh.dim())
        .cells(mesh.cell_type(), mesh.cells())
        .cell_data_i32("cell_tag", 1, mesh.cell_tags());
    for f in point_data {
        file = file.point_field(*f);
    }
    for f in cell_data {
        file = file.cell_field(*f);
    }
    file.write(path, encoding)
}

/// Writes one point or cell data array, padding 2-component tuples to 3.
fn write_field<W: Write>(w: &mut W, f: &Field<'_>, count: usize, enc: Encoding) -> io::Result<()> {
    let nc = f.components;
    let out = f.written_components();
    let name = f.name;
    match f.data {
        FieldData::F64(v) => {
            let values = v
                .chunks_exact(nc)
                .flat_map(|t| (0..out).map(move |k| if k < nc { t[k] } else { 0.0 }));
            write_array(w, name, out, count * out, out, values, enc)
        }
        FieldData::I32(v) => {
            let values = v
                .chunks_exact(nc)
                .flat_map(|t| (0..out).map(move |k| if k < nc { t[k] } else { 0 }));
            write_array(w, name, out, count * out, out, values, enc)
        }
    }
}

/// A scalar type that can sit in a VTK `DataArray`.
trait VtkScalar: Copy {
    /// The VTK type name.
    const TYPE: &'static str;
    /// Bytes per value.
    const SIZE: usize;
    /// Appends the little-endian bytes.
    fn push_le(self, out: &mut Vec<u8>);
    /// Appends the text form (exact).
    fn push_text(self, out: &mut String);
}

impl VtkScalar for f64 {
    const TYPE: &'static str = "Float64";
    const SIZE: usize = 8;
    fn push_le(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    fn push_text(self, out: &mut String) {
        push_shortest(out, self);
    }
}

macro_rules! int_scalar {
    ($t:ty, $name:literal) => {
        impl VtkScalar for $t {
            const TYPE: &'static str = $name;
            const SIZE: usize = std::mem::size_of::<$t>();
            fn push_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn push_text(self, out: &mut String) {
                use std::fmt::Write as _;
                // Writing into a String cannot fail.
                let _ = write!(out, "{self}");
            }
        }
    };
}
int_scalar!(i64, "Int64");
int_scalar!(i32, "Int32");
int_scalar!(u8, "UInt8");

/// Bytes staged before handing them to the base64 encoder or the writer.
const CHUNK: usize = 1 << 16;

/// Writes one `<DataArray>` element with `count` values (`name` empty: no `Name`
/// attribute), breaking ASCII lines every `per_line` values.
fn write_array<W: Write, T: VtkScalar>(
    w: &mut W,
    name: &str,
    components: usize,
    count: usize,
    per_line: usize,
    values: impl Iterator<Item = T>,
    enc: Encoding,
) -> io::Result<()> {
    write!(w, r#"        <DataArray type="{}""#, T::TYPE)?;
    if !name.is_empty() {
        write!(w, r#" Name="{}""#, escape_attr(name))?;
    }
    let format = match enc {
        Encoding::Binary => "binary",
        Encoding::Ascii => "ascii",
    };
    writeln!(
        w,
        r#" NumberOfComponents="{components}" format="{format}">"#
    )?;
    let mut written = 0usize;
    match enc {
        Encoding::Binary => {
            {
                let mut b64 = EncoderWriter::new(&mut *w, &STANDARD);
                b64.write_all(&((count * T::SIZE) as u64).to_le_bytes())?;
                let mut buf = Vec::with_capacity(CHUNK + 8);
                for v in values {
                    v.push_le(&mut buf);
                    written += 1;
                    if buf.len() >= CHUNK {
                        b64.write_all(&buf)?;
                        buf.clear();
                    }
                }
                b64.write_all(&buf)?;
                b64.finish()?;
            }
            writeln!(w)?;
        }
        Encoding::Ascii => {
            let per_line = per_line.max(1);
            let mut buf = String::with_capacity(CHUNK + 64);
            for v in values {
                if written % per_line == 0 {
                    buf.push_str("          ");
                } else {
                    buf.push(' ');
                }
                v.push_text(&mut buf);
                written += 1;
                if written % per_line == 0 {
                    buf.push('\n');
                }
                if buf.len() >= CHUNK {
                    w.write_all(buf.as_bytes())?;
                    buf.clear();
                }
            }
            if written % per_line != 0 {
                buf.push('\n');
            }
            w.write_all(buf.as_bytes())?;
        }
    }
    debug_assert_eq!(written, count, "DataArray '{name}' length");
    writeln!(w, "        </DataArray>")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::Engine as _;

    /// The values of a decoded array.
    #[derive(Clone, Debug, PartialEq)]
    pub(crate) enum Values {
        F(Vec<f64>),
        I(Vec<i64>),
    }

    impl Values {
        pub(crate) fn ints(&self) -> &[i64] {
            match self {
                Values::I(v) => v,
                Values::F(_) => panic!("expected integers"),
            }
        }
        pub(crate) fn floats(&self) -> &[f64] {
            match self {
                Values::F(v) => v,
                Values::I(_) => panic!("expected floats"),
            }
        }
    }

    /// One `DataArray` read back from a file we wrote.
    #[derive(Clone, Debug)]
    pub(crate) struct Array {
        pub section: String,
        pub name: String,
        pub ty: String,
        pub components: usize,
        pub values: Values,
    }

    /// What a test reader recovers from a `.vtu` file.
    #[derive(Debug)]
    pub(crate) struct Parsed {
        pub npoints: usize,
        pub ncells: usize,
        pub arrays: Vec<Array>,
    }

    impl Parsed {
        pub(crate) fn get(&self, section: &str, name: &str) -> &Array {
            self.arrays
                .iter()
                .find(|a| a.section == section && a.name == name)
                .unwrap_or_else(|| panic!("no {section}/{name}"))
        }
    }

    fn attr(tag: &str, key: &str) -> Option<String> {
        let pat = format!(" {key}=\"");
        let start = tag.find(&pat)? + pat.len();
        let len = tag[start..].find('"')?;
        Some(tag[start..start + len].to_string())
    }

    fn unescape(s: &str) -> String {
        s.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&")
    }

    fn decode(ty: &str, format: &str, text: &str) -> Values {
        let text = text.trim();
        if format == "ascii" {
            return if ty == "Float64" {
                Values::F(
                    text.split_whitespace()
                        .map(|t| t.parse().unwrap())
                        .collect(),
                )
            } else {
                Values::I(
                    text.split_whitespace()
                        .map(|t| t.parse().unwrap())
                        .collect(),
                )
            };
        }
        assert_eq!(format, "binary");
        assert!(!text.contains(char::is_whitespace), "base64 has no breaks");
        let bytes = STANDARD.decode(text).expect("valid base64");
        let len = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let data = &bytes[8..];
        assert_eq!(data.len(), len, "header byte count matches the data");
        match ty {
            "Float64" => Values::F(
                data.chunks_exact(8)
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            "Int64" => Values::I(
                data.chunks_exact(8)
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            "Int32" => Values::I(
                data.chunks_exact(4)
                    .map(|c| i64::from(i32::from_le_bytes(c.try_into().unwrap())))
                    .collect(),
            ),
            "UInt8" => Values::I(data.iter().map(|&b| i64::from(b)).collect()),
            t => panic!("unexpected type {t}"),
        }
    }

    /// Reads a file written by [`VtuFile`], checking that its tags nest properly (a
    /// well-formedness check sufficient for what the writer produces) and decoding every
    /// array.
    pub(crate) fn parse_vtu(text: &str) -> Parsed {
        let mut stack: Vec<String> = Vec::new();
        let mut arrays = Vec::new();
        let (mut npoints, mut ncells) = (None, None);
        let mut rest = text;
        assert!(rest.starts_with("<?xml version=\"1.0\"?>"));
        let mut first = true;
        while let Some(open) = rest.find('<') {
            let between = &rest[..open];
            assert!(
                !between.contains('>') && !between.contains('&'),
                "stray markup"
            );
            let close = rest[open..].find('>').expect("tag closes") + open;
            let tag = &rest[open + 1..close];
            rest = &rest[close + 1..];
            if first {
                first = false;
                continue; // the XML declaration
            }
            if let Some(name) = tag.strip_prefix('/') {
                assert_eq!(stack.pop().as_deref(), Some(name), "closing tag matches");
                continue;
            }
            let self_closing = tag.ends_with('/');
            let name = tag.split_whitespace().next().expect("tag name").to_string();
            assert_eq!(tag.matches('"').count() % 2, 0, "quoted attributes");
            if stack.is_empty() {
                assert_eq!(name, "VTKFile");
                assert_eq!(attr(tag, "type").as_deref(), Some("UnstructuredGrid"));
                assert_eq!(attr(tag, "header_type").as_deref(), Some("UInt64"));
                assert_eq!(attr(tag, "byte_order").as_deref(), Some("LittleEndian"));
            }
            if name == "Piece" {
                npoints = attr(tag, "NumberOfPoints").map(|s| s.parse().unwrap());
                ncells = attr(tag, "NumberOfCells").map(|s| s.parse().unwrap());
            }
            if name == "DataArray" {
                let end = rest.find('<').expect("data ends");
                let ty = attr(tag, "type").unwrap();
                let format = attr(tag, "format").unwrap();
                let values = decode(&ty, &format, &rest[..end]);
                arrays.push(Array {
                    section: stack.last().cloned().unwrap_or_default(),
                    name: attr(tag, "Name").map(|s| unescape(&s)).unwrap_or_default(),
                    components: attr(tag, "NumberOfComponents").map_or(1, |s| s.parse().unwrap()),
                    ty,
                    values,
                });
                rest = &rest[end..];
            }
            if !self_closing {
                stack.push(name);
            }
        }
        assert!(stack.is_empty(), "unclosed tags {stack:?}");
        assert!(rest.trim().is_empty());
        Parsed {
            npoints: npoints.expect("NumberOfPoints"),
            ncells: ncells.expect("NumberOfCells"),
            arrays,
        }
    }

    /// A small mesh of two (or, for tetrahedra, three) cells of each type, vertices in
    /// ferrofem order, with distinct cell tags.
    pub(crate) fn tiny_mesh(ct: CellType) -> Mesh {
        let (coords, cells): (Vec<f64>, Vec<u32>) = match ct {
            CellType::Triangle => (
                vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
                vec![0, 1, 3, 0, 3, 2],
            ),
            CellType::Quadrilateral => {
                // 3 x 2 lexicographic grid points, two unit squares side by side
                let mut x = Vec::new();
                for j in 0..2 {
                    for i in 0..3 {
                        x.extend([i as f64, j as f64 * 0.5]);
                    }
                }
                (x, vec![0, 1, 3, 4, 1, 2, 4, 5])
            }
            CellType::Tetrahedron => (
                vec![
                    0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0,
                ],
                vec![0, 1, 2, 3, 1, 2, 4, 3, 4, 1, 0, 3],
            ),
            CellType::Hexahedron => {
                let mut x = Vec::new();
                for k in 0..2 {
                    for j in 0..2 {
                        for i in 0..3 {
                            x.extend([i as f64, j as f64, 2.0 * k as f64]);
                        }
                    }
                }
                let hex = |o: u32| [o, o + 1, o + 3, o + 4, o + 6, o + 7, o + 9, o + 10];
                (x, [hex(0), hex(1)].concat())
            }
        };
        let m = Mesh::new(ct, coords, cells).expect("valid tiny mesh");
        let tags = (0..m.num_cells() as i32).map(|c| 10 + c).collect();
        m.with_cell_tags(tags)
    }

    fn write_string(file: &VtuFile<'_>, enc: Encoding) -> String {
        let mut out = Vec::new();
        file.write_to(&mut out, enc).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn each_cell_type_round_trips_in_both_encodings() {
        for ct in CellType::ALL {
            let mesh = tiny_mesh(ct);
            let dim = mesh.dim();
            let np = mesh.num_vertices();
            let nc = mesh.num_cells();
            // point data: a scalar with awkward values and a 2-vector (padded to 3)
            let u: Vec<f64> = (0..np).map(|i| (i as f64 + 0.1).sqrt() * 1e-7).collect();
            let v: Vec<f64> = (0..2 * np).map(|i| 1.0 / (i as f64 + 3.0)).collect();
            let rank: Vec<i32> = (0..nc as i32).map(|c| -c).collect();
            let pressure: Vec<f64> = (0..nc).map(|c| c as f64 * 1e300).collect();
            let point_fields = [Field::f64("u", 1, &u), Field::f64("velocity", 2, &v)];
            let cell_fields = [Field::i32("rank", 1, &rank), Field::f64("p", 1, &pressure)];
            for enc in [Encoding::Binary, Encoding::Ascii] {
                let path = std::env::temp_dir().join(format!(
                    "ferrofem-io-unit-{}-{ct}-{enc:?}.vtu",
                    std::process::id()
                ));
                write_mesh_vtu(&path, &mesh, &point_fields, &cell_fields, enc).expect("writes");
                let text = std::fs::read_to_string(&path).expect("reads");
                let _ = std::fs::remove_file(&path);
                let p = parse_vtu(&text);
                assert_eq!((p.npoints, p.ncells), (np, nc), "{ct} {enc:?}");

                let pts = p.get("Points", "");
                assert_eq!((pts.ty.as_str(), pts.components), ("Float64", 3));
                let pts = pts.values.floats();
                assert_eq!(pts.len(), 3 * np);
                for (i, x) in mesh.coords().chunks_exact(dim).enumerate() {
                    for k in 0..3 {
                        let want = if k < dim { x[k] } else { 0.0 };
                        assert_eq!(pts[3 * i + k].to_bits(), want.to_bits());
                    }
                }

                let conn = p.get("Cells", "connectivity");
                assert_eq!(conn.ty, "Int64");
                let order = vtk_node_order(ct);
                let nv = ct.num_vertices();
                for (c, cell) in mesh.cells().chunks_exact(nv).enumerate() {
                    for k in 0..nv {
                        let got = conn.values.ints()[c * nv + k];
                        assert_eq!(got, i64::from(cell[order[k]]), "{ct} cell {c} node {k}");
                    }
                }
                let offsets: Vec<i64> = (1..=nc as i64).map(|c| c * nv as i64).collect();
                assert_eq!(p.get("Cells", "offsets").values.ints(), &offsets[..]);
                let types = p.get("Cells", "types");
                assert_eq!(types.ty, "UInt8");
                assert!(types
                    .values
                    .ints()
                    .iter()
                    .all(|&t| t == i64::from(vtk_cell_type(ct))));

                let tags = p.get("CellData", "cell_tag");
                assert_eq!(tags.ty, "Int32");
                let want: Vec<i64> = mesh.cell_tags().iter().map(|&t| i64::from(t)).collect();
                assert_eq!(tags.values.ints(), &want[..]);
                let want: Vec<i64> = rank.iter().map(|&t| i64::from(t)).collect();
                assert_eq!(p.get("CellData", "rank").values.ints(), &want[..]);
                let got = p.get("CellData", "p").values.floats();
                assert!(got
                    .iter()
                    .zip(&pressure)
                    .all(|(a, b)| a.to_bits() == b.to_bits()));

                let got = p.get("PointData", "u").values.floats();
                assert!(got.iter().zip(&u).all(|(a, b)| a.to_bits() == b.to_bits()));
                assert_eq!(got.len(), np);
                let vel = p.get("PointData", "velocity");
                assert_eq!(vel.components, 3, "2-vectors are padded to 3");
                let got = vel.values.floats();
                assert_eq!(got.len(), 3 * np);
                for i in 0..np {
                    assert_eq!(got[3 * i].to_bits(), v[2 * i].to_bits());
                    assert_eq!(got[3 * i + 1].to_bits(), v[2 * i + 1].to_bits());
                    assert_eq!(got[3 * i + 2], 0.0);
                }
            }
        }
    }

    /// Coordinates (3-D, z = 0 in 2-D) of the VTK-ordered nodes of the first cell.
    fn first_cell_in_vtk_order(mesh: &Mesh) -> Vec<[f64; 3]> {
        let text = write_string(
            &VtuFile::new(mesh.coords(), mesh.dim()).cells(mesh.cell_type(), mesh.cells()),
            Encoding::Binary,
        );
        let p = parse_vtu(&text);
        let pts = p.get("Points", "").values.floats().to_vec();
        let conn = p.get("Cells", "connectivity").values.ints().to_vec();
        conn[..mesh.cell_type().num_vertices()]
            .iter()
            .map(|&v| {
                let v = v as usize;
                [pts[3 * v], pts[3 * v + 1], pts[3 * v + 2]]
            })
            .collect()
    }

    fn polygon_area_xy(p: &[[f64; 3]]) -> f64 {
        (0..p.len())
            .map(|i| {
                let (a, b) = (p[i], p[(i + 1) % p.len()]);
                a[0] * b[1] - b[0] * a[1]
            })
            .sum::<f64>()
            / 2.0
    }

    #[test]
    fn quads_and_hexes_become_counter_clockwise() {
        // a positively oriented lexicographic quad: VTK order must trace its boundary
        // counter-clockwise, enclosing the full area (a bow-tie would give zero).
        let quad = first_cell_in_vtk_order(&tiny_mesh(CellType::Quadrilateral));
        assert_eq!(polygon_area_xy(&quad), 0.5);
        // hexahedron: bottom face counter-clockwise seen from +z, top face directly above
        let hex = first_cell_in_vtk_order(&tiny_mesh(CellType::Hexahedron));
        assert_eq!(polygon_area_xy(&hex[..4]), 1.0);
        assert!(hex[..4].iter().all(|p| p[2] == 0.0));
        for k in 0..4 {
            assert_eq!(hex[k + 4], [hex[k][0], hex[k][1], 2.0]);
        }
    }

    #[test]
    fn mixed_and_raw_blocks_share_offsets_and_cell_data() {
        let pts = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0];
        let tri = [0, 1, 2];
        let lines = [1, 4, 3, 4];
        let data = [1.5, 2.5, 3.5];
        let file = VtuFile::new(&pts, 2)
            .cells(CellType::Triangle, &tri)
            .vtk_cells(VTK_LINE, 2, &lines)
            .cell_data("d", 1, &data);
        assert_eq!(file.num_cells(), 3);
        let p = parse_vtu(&write_string(&file, Encoding::Ascii));
        assert_eq!(p.ncells, 3);
        assert_eq!(
            p.get("Cells", "connectivity").values.ints(),
            &[0, 1, 2, 1, 4, 3, 4]
        );
        assert_eq!(p.get("Cells", "offsets").values.ints(), &[3, 5, 7]);
        assert_eq!(p.get("Cells", "types").values.ints(), &[5, 3, 3]);
        assert_eq!(p.get("CellData", "d").values.floats(), &data);
    }

    #[test]
    fn names_are_escaped_and_empty_grids_are_valid() {
        let u = [1.0];
        let file = VtuFile::new(&[0.5], 1).point_data("a<b & \"c\"", 1, &u);
        let p = parse_vtu(&write_string(&file, Encoding::Binary));
        assert_eq!(p.get("PointData", "a<b & \"c\"").values.floats(), &[1.0]);
        assert_eq!(p.get("Points", "").values.floats(), &[0.5, 0.0, 0.0]);
        for enc in [Encoding::Binary, Encoding::Ascii] {
            let p = parse_vtu(&write_string(&VtuFile::new(&[], 3), enc));
            assert_eq!((p.npoints, p.ncells), (0, 0));
            assert!(p.get("Cells", "types").values.ints().is_empty());
        }
    }

    #[test]
    fn inconsistent_input_is_rejected_before_writing() {
        let pts = [0.0, 0.0, 1.0, 0.0, 0.0, 1.0];
        let tri = [0, 1, 2];
        let bad_tri = [0, 1, 3];
        let one = [1.0];
        let three = [1.0, 2.0, 3.0];
        let cases: Vec<(VtuFile<'_>, &str)> = vec![
            (VtuFile::new(&pts, 4), "dimension"),
            (VtuFile::new(&pts[..5], 2), "whole number of 2-D points"),
            (
                VtuFile::new(&pts, 2).cells(CellType::Triangle, &bad_tri),
                "refers to point 3",
            ),
            (
                VtuFile::new(&pts, 2).vtk_cells(VTK_QUAD, 4, &tri),
                "whole number of 4-node cells",
            ),
            (
                VtuFile::new(&pts, 2).vtk_cells(VTK_VERTEX, 0, &[]),
                "zero nodes",
            ),
            (
                VtuFile::new(&pts, 2).point_data("u", 1, &one),
                "expected 3 points",
            ),
            (
                VtuFile::new(&pts, 2)
                    .cells(CellType::Triangle, &tri)
                    .cell_data("c", 1, &three),
                "expected 1 cells",
            ),
            (
                VtuFile::new(&pts, 2)
                    .point_data("u", 1, &three)
                    .point_data("u", 1, &three),
                "used twice",
            ),
            (VtuFile::new(&pts, 2).point_data("", 1, &three), "empty"),
            (
                VtuFile::new(&pts, 2).point_data("u", 0, &[]),
                "zero components",
            ),
        ];
        for (file, expected) in cases {
            let mut out = Vec::new();
            let err = file.write_to(&mut out, Encoding::Binary).unwrap_err();
            assert!(matches!(err, IoError::InvalidInput { .. }));
            assert!(err.to_string().contains(expected), "{err} vs {expected}");
            assert!(out.is_empty(), "nothing written on invalid input");
        }
        let mesh = tiny_mesh(CellType::Triangle);
        let tags = [0.0, 0.0];
        let dir = std::env::temp_dir().join("ferrofem-io-never-created.vtu");
        let err = write_mesh_vtu(
            &dir,
            &mesh,
            &[],
            &[Field::f64("cell_tag", 1, &tags)],
            Encoding::Binary,
        )
        .unwrap_err();
        assert!(err.to_string().contains("used twice"));
        assert!(!dir.exists());
    }

    #[test]
    fn unwritable_path_reports_os_error_with_path() {
        let path = std::env::temp_dir()
            .join("ferrofem-io-no-such-dir")
            .join("x.vtu");
        let err = VtuFile::new(&[], 2)
            .write(&path, Encoding::Binary)
            .unwrap_err();
        assert!(matches!(err, IoError::Os { .. }));
        assert!(err.to_string().contains("ferrofem-io-no-such-dir"));
    }
}
