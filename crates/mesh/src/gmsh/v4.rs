//! `$Entities`, `$Nodes` and `$Elements` of MSH 4.1, ASCII and binary.
//!
//! Nodes and elements come in blocks, one per geometric entity. A node block is a header
//! `entityDim entityTag parametric count`, then `count` node tags, then `count` coordinate
//! rows (`x y z`, plus `entityDim` parametric coordinates when `parametric` is 1). An
//! element block is `entityDim entityTag type count`, then `count` rows `tag node...`.
//! Elements carry no physical tags themselves: those are listed per entity in
//! `$Entities`. In binary files counts and tags are `size_t`, dimensions and entity tags
//! `int`, coordinates `double`.

use std::collections::HashMap;

use super::reader::Reader;
use super::tables::{capped, ElementTable, NodeTable};
use super::types::{element_type, KNOWN_TYPES};
use crate::MeshError;

/// Physical tags of each geometric entity, keyed by `(dim, tag)`.
pub(crate) type Entities = HashMap<(u8, i32), Vec<i32>>;

/// A dimension field: 0 to 3.
fn check_dim(r: &Reader, at: usize, d: i64) -> Result<u8, MeshError> {
    u8::try_from(d)
        .ok()
        .filter(|&d| d <= 3)
        .ok_or_else(|| r.error(at, format!("bad entity dimension {d} (must be 0 to 3)")))
}

/// Reads the body of `$Entities` through `$EndEntities`.
pub(crate) fn read_entities(r: &mut Reader) -> Result<Entities, MeshError> {
    let mut counts = [0u64; 4];
    if r.is_binary() {
        for c in &mut counts {
            *c = r.size_t("number of entities")?;
        }
    } else {
        let line = r.data_line(|| "the numbers of points, curves, surfaces and volumes".into())?;
        let mut f = r.fields(line);
        for c in &mut counts {
            *c = f.u64("the number of entities of a dimension")?;
        }
        f.finish("the numbers of entities")?;
    }
    let mut entities = Entities::new();
    for (dim, &count) in counts.iter().enumerate() {
        let nbox = if dim == 0 { 3 } else { 6 };
        for i in 0..count {
            let at = r.pos();
            let (tag, physical) = if r.is_binary() {
                let tag = r.i32("entity tag")?;
                for _ in 0..nbox {
                    r.f64("entity bounding box")?;
                }
                let np = r.size_t("number of physical tags")?;
                let mut physical = Vec::with_capacity(capped(np, r.remaining(), 4));
                for _ in 0..np {
                    physical.push(r.i32("physical tag")?);
                }
                if dim > 0 {
                    let nb = r.size_t("number of bounding entities")?;
                    for _ in 0..nb {
                        r.i32("bounding entity tag")?;
                    }
                }
                (tag, physical)
            } else {
                let line =
                    r.data_line(|| format!("entity {} of {count} of dimension {dim}", i + 1))?;
                let mut f = r.fields(line);
                let tag = f.i32("an entity tag")?;
                for _ in 0..nbox {
                    f.f64("an entity bounding-box coordinate")?;
                }
                let np = f.usize("the number of physical tags")?;
                if np > f.count_left() {
                    return Err(f.error(format!(
                        "entity announces {np} physical tags, but its line holds only {} more values",
                        f.count_left()
                    )));
                }
                let mut physical = Vec::with_capacity(np);
                for _ in 0..np {
                    physical.push(f.i32("a physical tag")?);
                }
                if dim > 0 {
                    let nb = f.usize("the number of bounding entities")?;
                    if nb != f.count_left() {
                        return Err(f.error(format!(
                            "entity announces {nb} bounding entities, but its line holds {} more values",
                            f.count_left()
                        )));
                    }
                    for _ in 0..nb {
                        f.i32("a bounding entity tag")?;
                    }
                }
                f.finish("an entity")?;
                (tag, physical)
            };
            if entities.insert((dim as u8, tag), physical).is_some() {
                return Err(r.error(
                    at,
                    format!("entity of dimension {dim} with tag {tag} is listed twice"),
                ));
            }
        }
    }
    r.expect_end("Entities")?;
    Ok(entities)
}

/// The four numbers heading `$Nodes` and `$Elements`: blocks, items, min tag, max tag.
fn section_header(r: &mut Reader, what: &str) -> Result<(usize, [u64; 4]), MeshError> {
    let at = r.pos();
    let mut h = [0u64; 4];
    if r.is_binary() {
        for v in &mut h {
            *v = r.size_t(what)?;
        }
        Ok((at, h))
    } else {
        let line = r.data_line(|| format!("the {what} header"))?;
        let mut f = r.fields(line);
        for v in &mut h {
            *v = f.u64(what)?;
        }
        f.finish(what)?;
        Ok((line.start, h))
    }
}

/// Reads the body of `$Nodes` through `$EndNodes`.
pub(crate) fn read_nodes(r: &mut Reader) -> Result<NodeTable, MeshError> {
    let (header_at, [nblocks, total, _, _]) = section_header(r, "$Nodes header")?;
    let binary = r.is_binary();
    let mut nodes =
        NodeTable::with_capacity(capped(total, r.remaining(), if binary { 32 } else { 8 }));
    let mut tags: Vec<(u64, usize)> = Vec::new();
    let mut seen = 0u64;
    for b in 0..nblocks {
        // Block header.
        let at = r.pos();
        let (dim, parametric, count, block_at) = if binary {
            let d = r.i32("entity dimension")?;
            let dim = check_dim(r, at, d as i64)?;
            r.i32("entity tag")?;
            let p = r.i32("parametric flag")?;
            let count = r.size_t("number of nodes in block")?;
            (dim, p, count, at)
        } else {
            let line = r.data_line(|| format!("node block {} of {nblocks}", b + 1))?;
            let mut f = r.fields(line);
            let d = f.i32("the entity dimension")?;
            let dim = check_dim(r, line.start, d as i64)?;
            f.i32("the entity tag")?;
            let p = f.i32("the parametric flag")?;
            let count = f.u64("the number of nodes in the block")?;
            f.finish("a node block header")?;
            (dim, p, count, line.start)
        };
        if !(0..=1).contains(&parametric) {
            return Err(r.error(
                block_at,
                format!("bad parametric flag {parametric} (must be 0 or 1)"),
            ));
        }
        seen = seen.saturating_add(count);
        if seen > total {
            return Err(r.error(
                block_at,
                format!(
                    "node blocks hold more nodes than the {total} announced in the $Nodes header"
                ),
            ));
        }
        let params = if parametric == 1 { dim as usize } else { 0 };
        // Node tags.
        tags.clear();
        tags.reserve(capped(count, r.remaining(), if binary { 8 } else { 2 }));
        for k in 0..count {
            if binary {
                let at = r.pos();
                tags.push((r.size_t("node tag")?, at));
            } else {
                let line = r.data_line(|| format!("node tag {} of {count} in a block", k + 1))?;
                let mut f = r.fields(line);
                let n = f.count_left();
                if n != 1 {
                    return Err(f.error(format!(
                        "expected one node tag on the line, found {n} values (the block header \
                         announces {count} nodes)"
                    )));
                }
                tags.push((f.u64("a node tag")?, line.start));
            }
        }
        // Coordinates.
        for &(tag, tag_at) in &tags {
            let mut x = [0.0; 3];
            if binary {
                let at = r.pos();
                for c in &mut x {
                    *c = r.f64("coordinate")?;
                }
                for _ in 0..params {
                    r.f64("parametric coordinate")?;
                }
                nodes.push(r, tag_at, at, tag, x)?;
            } else {
                let line = r.data_line(|| format!("the coordinates of node {tag}"))?;
                let mut f = r.fields(line);
                let n = f.count_left();
                if n != 3 + params {
                    return Err(f.error(format!(
                        "expected {} coordinates of node {tag} on the line, found {n} values",
                        3 + params
                    )));
                }
                for c in &mut x {
                    *c = f.f64("a coordinate")?;
                }
                nodes.push(r, tag_at, line.start, tag, x)?;
            }
        }
    }
    if seen != total {
        return Err(r.error(
            header_at,
            format!("the $Nodes header announces {total} nodes, but its blocks hold {seen}"),
        ));
    }
    r.expect_end("Nodes")?;
    Ok(nodes)
}

/// Reads the body of `$Elements` through `$EndElements`.
pub(crate) fn read_elements(r: &mut Reader, nodes: &NodeTable) -> Result<ElementTable, MeshError> {
    let (header_at, [nblocks, total, _, _]) = section_header(r, "$Elements header")?;
    let binary = r.is_binary();
    let mut elems =
        ElementTable::with_capacity(capped(total, r.remaining(), if binary { 16 } else { 8 }));
    let mut seen = 0u64;
    for b in 0..nblocks {
        let at = r.pos();
        let (dim, entity, number, count, block_at) = if binary {
            let d = r.i32("entity dimension")?;
            let dim = check_dim(r, at, d as i64)?;
            let entity = r.i32("entity tag")?;
            let number = r.u32_nonneg("element type")?;
            let count = r.size_t("number of elements in block")?;
            (dim, entity, number, count, at)
        } else {
            let line = r.data_line(|| format!("element block {} of {nblocks}", b + 1))?;
            let mut f = r.fields(line);
            let d = f.i32("the entity dimension")?;
            let dim = check_dim(r, line.start, d as i64)?;
            let entity = f.i32("the entity tag")?;
            let number = f.u32("the element type")?;
            let count = f.u64("the number of elements in the block")?;
            f.finish("an element block header")?;
            (dim, entity, number, count, line.start)
        };
        let ty = element_type(number).ok_or_else(|| {
            r.error(
                block_at,
                format!(
                    "unknown Gmsh element type {number} (this reader knows types {KNOWN_TYPES})"
                ),
            )
        })?;
        if ty.dim != dim {
            return Err(r.error(
                block_at,
                format!(
                    "element type {number} ({}) has dimension {}, but the block belongs to an \
                     entity of dimension {dim}",
                    ty.name, ty.dim
                ),
            ));
        }
        seen = seen.saturating_add(count);
        if seen > total {
            return Err(r.error(
                block_at,
                format!("element blocks hold more elements than the {total} announced in the $Elements header"),
            ));
        }
        let group = elems.group_for_entity(dim, entity, block_at);
        for k in 0..count {
            if binary {
                let at = r.pos();
                let tag = r.size_t("element tag")?;
                let stored = elems.begin(ty, tag, group, at);
                for _ in 0..ty.nodes {
                    let node_at = r.pos();
                    let node = r.size_t("node tag")?;
                    let index = nodes.resolve(r, node_at, node, tag)?;
                    if stored {
                        elems.push_node(index);
                    }
                }
                if stored {
                    elems.end();
                }
            } else {
                let line = r.data_line(|| {
                    format!("element {} of {count} in a block of {}", k + 1, ty.name)
                })?;
                let mut f = r.fields(line);
                let n = f.count_left();
                if n != 1 + ty.nodes {
                    return Err(f.error(format!(
                        "the block has Gmsh element type {number} ({}), which needs a tag and {} \
                         nodes per line, but the line holds {n} values",
                        ty.name, ty.nodes
                    )));
                }
                let tag = f.u64("an element tag")?;
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
            }
        }
    }
    if seen != total {
        return Err(r.error(
            header_at,
            format!("the $Elements header announces {total} elements, but its blocks hold {seen}"),
        ));
    }
    r.expect_end("Elements")?;
    Ok(elems)
}
