//! Parallel VTU (`.pvtu`) files: one dataset made of the pieces the ranks of a distributed
//! run wrote with [`crate::write_space_vtu_piece`], so that ParaView opens them together
//! (a `.pvd` series may list `.pvtu` files like `.vtu` ones).

use crate::xml::escape_attr;
use crate::IoError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

/// Writes a `.pvtu` over the piece files `pieces` (names relative to the `.pvtu`'s
/// folder, as ParaView resolves them), which carry the point fields `point_fields`
/// (`(name, components)`, `Float64`) and the `Int32` cell arrays `cell_id` and `cell_tag`
/// of [`crate::write_space_vtu_piece`].
pub fn write_space_pvtu<S: AsRef<str>>(
    path: impl AsRef<Path>,
    pieces: &[S],
    point_fields: &[(&str, usize)],
) -> Result<(), IoError> {
    let path = path.as_ref();
    if pieces.is_empty() {
        return Err(IoError::invalid(path, "a parallel file needs a piece"));
    }
    for name in pieces.iter().map(AsRef::as_ref) {
        if name.is_empty() || name.chars().any(char::is_control) {
            return Err(IoError::invalid(
                path,
                format!("piece name {name:?} is empty or has control characters"),
            ));
        }
    }
    for &(name, components) in point_fields {
        if name.is_empty() || name.chars().any(char::is_control) || components == 0 {
            return Err(IoError::invalid(
                path,
                format!("point field {name:?} with {components} components"),
            ));
        }
    }
    let file = File::create(path).map_err(|e| IoError::os(path, e))?;
    let mut w = BufWriter::new(file);
    let result = (|| {
        writeln!(w, r#"<?xml version="1.0"?>"#)?;
        writeln!(
            w,
            r#"<VTKFile type="PUnstructuredGrid" version="1.0" byte_order="LittleEndian" header_type="UInt64">"#
        )?;
        writeln!(w, r#"  <PUnstructuredGrid GhostLevel="0">"#)?;
        if !point_fields.is_empty() {
            writeln!(w, "    <PPointData>")?;
            for &(name, components) in point_fields {
                writeln!(
                    w,
                    r#"      <PDataArray type="Float64" Name="{}" NumberOfComponents="{components}"/>"#,
                    escape_attr(name)
                )?;
            }
            writeln!(w, "    </PPointData>")?;
        }
        writeln!(w, "    <PCellData>")?;
        for name in ["cell_id", "cell_tag"] {
            writeln!(
                w,
                r#"      <PDataArray type="Int32" Name="{name}" NumberOfComponents="1"/>"#
            )?;
        }
        writeln!(w, "    </PCellData>")?;
        writeln!(w, "    <PPoints>")?;
        writeln!(
            w,
            r#"      <PDataArray type="Float64" NumberOfComponents="3"/>"#
        )?;
        writeln!(w, "    </PPoints>")?;
        for piece in pieces {
            writeln!(
                w,
                r#"    <Piece Source="{}"/>"#,
                escape_attr(piece.as_ref())
            )?;
        }
        writeln!(w, "  </PUnstructuredGrid>")?;
        writeln!(w, "</VTKFile>")?;
        w.flush()
    })();
    result.map_err(|e| IoError::os(path, e))
}
