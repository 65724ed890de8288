//! The outer structure of an MSH file: `$MeshFormat` (version, ASCII/binary, byte order),
//! then sections in any order; `$PhysicalNames`, `$Entities`, `$Nodes` and `$Elements` are
//! read, every other section is skipped to its `$End` line.

use super::reader::{escape, quote, Reader};
use super::tables::{capped, ElementTable, NodeTable};
use super::{v2, v4};
use crate::{MeshError, PhysicalName};

/// The two MSH layouts this reader understands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// MSH 2.2.
    V2,
    /// MSH 4.1.
    V4,
}

/// Everything read from the sections, before it becomes a [`crate::Mesh`].
pub(crate) struct RawFile {
    /// The version as written in the file.
    pub version_text: String,
    /// The layout.
    pub version: Version,
    /// `$PhysicalNames`.
    pub names: Vec<PhysicalName>,
    /// `$Entities` (MSH 4 only), if present.
    pub entities: Option<v4::Entities>,
    /// `$Nodes`.
    pub nodes: NodeTable,
    /// `$Elements`.
    pub elements: ElementTable,
    /// Names of the sections that were skipped (escaped for printing).
    pub skipped: Vec<String>,
}

/// Reads `$MeshFormat` and every section of the file.
pub(crate) fn read_file(r: &mut Reader) -> Result<RawFile, MeshError> {
    let version = read_mesh_format(r)?;
    let (version_text, version) = version;
    let mut names = Vec::new();
    let mut entities = None;
    let mut nodes: Option<NodeTable> = None;
    let mut elements: Option<ElementTable> = None;
    let mut skipped = Vec::new();
    while let Some(line) = r.next_line() {
        let head = line.trimmed();
        let Some(name) = head.strip_prefix(b"$") else {
            return Err(r.error(
                line.start,
                format!(
                    "expected the start of a section such as $Nodes, found {}",
                    quote(head)
                ),
            ));
        };
        let raw_name = name;
        // the name as it may be printed (escaped: it is text from the file)
        let name = escape(raw_name);
        if raw_name.starts_with(b"End") {
            return Err(r.error(
                line.start,
                format!("${name} without a matching section start"),
            ));
        }
        let again = || r.error(line.start, format!("second ${name} section"));
        match (raw_name, version) {
            (b"MeshFormat", _) => return Err(again()),
            (b"PhysicalNames", _) => names.extend(read_physical_names(r)?),
            (b"Entities", Version::V4) => {
                if entities.is_some() {
                    return Err(again());
                }
                entities = Some(v4::read_entities(r)?);
            }
            (b"Nodes", _) => {
                if nodes.is_some() {
                    return Err(again());
                }
                nodes = Some(match version {
                    Version::V2 => v2::read_nodes(r)?,
                    Version::V4 => v4::read_nodes(r)?,
                });
            }
            (b"Elements", _) => {
                if elements.is_some() {
                    return Err(again());
                }
                let Some(nodes) = &nodes else {
                    return Err(r.error(line.start, "$Elements comes before $Nodes"));
                };
                elements = Some(match version {
                    Version::V2 => v2::read_elements(r, nodes)?,
                    Version::V4 => v4::read_elements(r, nodes)?,
                });
            }
            _ => {
                r.skip_section(raw_name, line.start)?;
                skipped.push(name);
            }
        }
    }
    let missing = |what: &str| r.error(r.end(), format!("the file ends without a ${what} section"));
    let nodes = nodes.ok_or_else(|| missing("Nodes"))?;
    let elements = elements.ok_or_else(|| missing("Elements"))?;
    Ok(RawFile {
        version_text,
        version,
        names,
        entities,
        nodes,
        elements,
        skipped,
    })
}

/// Reads `$MeshFormat ... $EndMeshFormat`, switching the reader to binary mode if needed.
fn read_mesh_format(r: &mut Reader) -> Result<(String, Version), MeshError> {
    let Some(first) = r.next_line() else {
        return Err(r.error(0, "empty file: expected $MeshFormat"));
    };
    if first.trimmed() != b"$MeshFormat" {
        return Err(r.error(
            first.start,
            format!(
                "not a Gmsh mesh file: expected $MeshFormat, found {}",
                quote(first.trimmed())
            ),
        ));
    }
    let line = r.data_line(|| "the version, file type and data size".into())?;
    let mut f = r.fields(line);
    let version_text = {
        let t = line.trimmed();
        let end = t
            .iter()
            .position(|b| b.is_ascii_whitespace())
            .unwrap_or(t.len());
        escape(&t[..end])
    };
    let v = f.f64("the MSH version")?;
    let version = if (v - 2.2).abs() < 1e-9 {
        Version::V2
    } else if (v - 4.1).abs() < 1e-9 {
        Version::V4
    } else {
        return Err(f.error(format!(
            "MSH version {version_text} is not supported: this reader reads versions 2.2 and 4.1 \
             (ASCII or binary); re-export with Gmsh option Mesh.MshFileVersion = 4.1"
        )));
    };
    let file_type = f.u32("the file type (0 = ASCII, 1 = binary)")?;
    let data_size = f.u32("the data size")?;
    f.finish("the data size")?;
    if file_type > 1 {
        return Err(r.error(
            line.start,
            format!("bad file type {file_type} (must be 0 for ASCII or 1 for binary)"),
        ));
    }
    let size_t = match (version, data_size) {
        (Version::V2, 8) | (Version::V4, 8) => 8,
        (Version::V4, 4) => 4,
        _ => {
            return Err(r.error(
                line.start,
                format!(
                    "data size {data_size} is not supported (MSH 2.2 needs 8-byte doubles; \
                     MSH 4.1 a size_t of 4 or 8 bytes)"
                ),
            ))
        }
    };
    if file_type == 1 {
        let at = r.pos();
        let one = r.take(4, "the binary byte-order check")?;
        let big = if one == 1i32.to_le_bytes() {
            false
        } else if one == 1i32.to_be_bytes() {
            true
        } else {
            r.set_binary(false, size_t);
            return Err(r.error(
                at,
                format!("binary byte-order check: expected the integer 1, found bytes {one:02x?}"),
            ));
        };
        r.set_binary(big, size_t);
    }
    r.expect_end("MeshFormat")?;
    Ok((version_text, version))
}

/// Reads the body of `$PhysicalNames` (text even in binary files): lines `dim tag "name"`.
fn read_physical_names(r: &mut Reader) -> Result<Vec<PhysicalName>, MeshError> {
    let line = r.data_line(|| "the number of physical names".into())?;
    let mut f = r.fields(line);
    let n = f.u64("the number of physical names")?;
    f.finish("the number of physical names")?;
    let mut names = Vec::with_capacity(capped(n, r.remaining(), 8));
    for i in 0..n {
        let line = r.data_line(|| format!("physical name {} of {n}", i + 1))?;
        let mut f = r.fields(line);
        let dim = f.usize("the dimension of a physical group")?;
        if dim > 3 {
            return Err(f.error(format!(
                "bad physical group dimension {dim} (must be 0 to 3)"
            )));
        }
        let tag = f.i32("a physical tag")?;
        let rest = f.rest().trim_ascii();
        let name = rest
            .strip_prefix(b"\"")
            .and_then(|s| s.strip_suffix(b"\""))
            .ok_or_else(|| {
                f.error(format!(
                    "expected a physical name in double quotes, found {}",
                    quote(rest)
                ))
            })?;
        names.push(PhysicalName {
            dim,
            tag,
            name: String::from_utf8_lossy(name).into_owned(),
        });
    }
    r.expect_end("PhysicalNames")?;
    Ok(names)
}
