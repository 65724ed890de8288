//! `$Nodes` and `$Elements` of MSH 2.2, ASCII and binary.
//!
//! ASCII: one node per line (`tag x y z`), one element per line
//! (`tag type ntags tag... node...`). Binary: the counts stay text lines; nodes are
//! `int tag, double x y z`; elements come in runs headed by `int type, int count,
//! int ntags`, each element `int tag, int tags[ntags], int nodes[...]`.

use super::reader::Reader;
use super::tables::{capped, ElementTable, NodeTable};
use super::types::{element_type, ElementType, KNOWN_TYPES};
use crate::MeshError;

/// Reads the body of `$Nodes` (after its header line) through `$EndNodes`.
pub(crate) fn read_nodes(r: &mut Reader) -> Result<NodeTable, MeshError> {
    let line = r.data_line(|| "the number of nodes".into())?;
    let mut f = r.fields(line);
    let n = f.u64("the number of nodes")?;
    f.finish("the number of nodes")?;
    let binary = r.is_binary();
    let mut nodes = NodeTable::with_capacity(capped(n, r.remaining(), if binary { 28 } else { 8 }));
    for i in 0..n {
        if binary {
            let at = r.pos();
            let tag = r.u32_nonneg("node tag")? as u64;
            let x_at = r.pos();
            let x = [
                r.f64("x coordinate")?,
                r.f64("y coordinate")?,
                r.f64("z coordinate")?,
            ];
            nodes.push(r, at, x_at, tag, x)?;
        } else {
            let line = r.data_line(|| format!("node {} of {n}", i + 1))?;
            let mut f = r.fields(line);
            let tag = f.u64("a node tag")?;
            let x = [
                f.f64("x coordinate")?,
                f.f64("y coordinate")?,
                f.f64("z coordinate")?,
            ];
            f.finish("the coordinates of a node")?;
            nodes.push(r, line.start, line.start, tag, x)?;
        }
    }
    r.expect_end("Nodes")?;
    Ok(nodes)
}

/// The element type with number `number`, or an error at `at` naming it.
fn known_type(r: &Reader, at: usize, number: u32) -> Result<&'static ElementType, MeshError> {
    element_type(number).ok_or_else(|| {
        r.error(
            at,
            format!("unknown Gmsh element type {number} (this reader knows types {KNOWN_TYPES})"),
        )
    })
}

/// Reads the body of `$Elements` (after its header line) through `$EndElements`.
pub(crate) fn read_elements(r: &mut Reader, nodes: &NodeTable) -> Result<ElementTable, MeshError> {
    let line = r.data_line(|| "the number of elements".into())?;
    let mut f = r.fields(line);
    let n = f.u64("the number of elements")?;
    f.finish("the number of elements")?;
    let mut elems = ElementTable::with_capacity(capped(
        n,
        r.remaining(),
        if r.is_binary() { 16 } else { 12 },
    ));
    if r.is_binary() {
        read_binary_elements(r, nodes, n, &mut elems)?;
    } else {
        for i in 0..n {
            let line = r.data_line(|| format!("element {} of {n}", i + 1))?;
            let mut f = r.fields(line);
            let tag = f.u64("an element tag")?;
            let number = f.u32("an element type")?;
            let ty = known_type(r, line.start, number)?;
            let ntags = f.usize("the number of element tags")?;
            let left = f.count_left();
            if left != ntags.saturating_add(ty.nodes) {
                return Err(f.error(format!(
                    "element {tag} of Gmsh type {number} ({}) with {ntags} tags needs {} more \
                     values on its line, found {left}",
                    ty.name,
                    ntags.saturating_add(ty.nodes)
                )));
            }
            let mut physical = 0;
            for k in 0..ntags {
                let t = f.i32("an element tag")?;
                if k == 0 {
                    physical = t;
                }
            }
            let group = elems.group_for_tag(physical);
            let stored = elems.begin(ty, tag, group, line.start);
            for _ in 0..ty.nodes {
                let node = f.u64("a node tag")?;
                let index = nodes.resolve(r, line.start, node, tag)?;
                if stored {
                    elems.push_node(index);
                }
            }
            if stored {
                elems.end();
            }
            f.finish("the nodes of an element")?;
        }
    }
    r.expect_end("Elements")?;
    Ok(elems)
}

/// The binary element runs of an MSH 2.2 file.
fn read_binary_elements(
    r: &mut Reader,
    nodes: &NodeTable,
    n: u64,
    elems: &mut ElementTable,
) -> Result<(), MeshError> {
    let mut read = 0u64;
    while read < n {
        let at = r.pos();
        let number = r.u32_nonneg("element type")?;
        let ty = known_type(r, at, number)?;
        let count = r.u32_nonneg("element count")? as u64;
        let ntags = r.u32_nonneg("number of element tags")?;
        if count == 0 || count > n - read {
            return Err(r.error(
                at,
                format!(
                    "element header announces {count} elements of {}, but {} of the {n} \
                     announced elements remain",
                    super::types::describe(number),
                    n - read
                ),
            ));
        }
        for _ in 0..count {
            let at = r.pos();
            let tag = r.u32_nonneg("element tag")? as u64;
            let mut physical = 0;
            for k in 0..ntags {
                let t = r.i32("element tag")?;
                if k == 0 {
                    physical = t;
                }
            }
            let group = elems.group_for_tag(physical);
            let stored = elems.begin(ty, tag, group, at);
            for _ in 0..ty.nodes {
                let node_at = r.pos();
                let node = r.u32_nonneg("node tag")? as u64;
                let index = nodes.resolve(r, node_at, node, tag)?;
                if stored {
                    elems.push_node(index);
                }
            }
            if stored {
                elems.end();
            }
        }
        read += count;
    }
    Ok(())
}
