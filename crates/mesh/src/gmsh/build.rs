//! Turns what was read into a [`Mesh`]: picks the cells (elements of the highest
//! dimension), their physical tags, the tagged facets one dimension below, drops nodes no
//! cell uses and converts Gmsh's counter-clockwise quadrangle/hexahedron vertex order to
//! ferrofem's lexicographic one.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::file::{RawFile, Version};
use super::reader::Reader;
use super::tables::PhysSource;
use super::types::{describe, SUPPORTED_CELLS};
use crate::{CellType, Mesh, MeshError, TaggedFacets};

/// Gmsh quadrangle (counter-clockwise) -> lexicographic: `lex[i] = gmsh[QUAD[i]]`.
const QUAD: [usize; 4] = [0, 1, 3, 2];
/// Gmsh hexahedron (bottom face counter-clockwise, then top) -> lexicographic.
const HEX: [usize; 8] = [0, 1, 3, 2, 4, 5, 7, 6];
/// Tagged facet records allowed per byte of input (see [`tagged_facets`]): a facet
/// element takes at least 6 bytes of an ASCII file and 12 of a binary one, so real files
/// hold far fewer records, even with an entity in several physical groups.
const BYTES_PER_FACET_RECORD: usize = 2;
/// Tagged facet records allowed in any file, however small.
const MIN_FACET_RECORDS: usize = 1 << 14;
/// Tetrahedra and triangles keep their order.
const SIMPLEX: [usize; 4] = [0, 1, 2, 3];

/// The ferrofem cell type of a linear Gmsh element type.
fn cell_type_of(gmsh_type: u32) -> Option<CellType> {
    match gmsh_type {
        2 => Some(CellType::Triangle),
        3 => Some(CellType::Quadrilateral),
        4 => Some(CellType::Tetrahedron),
        5 => Some(CellType::Hexahedron),
        _ => None,
    }
}

/// Gmsh vertex position of each lexicographic (ferrofem) vertex.
fn permutation(ct: CellType) -> &'static [usize] {
    match ct {
        CellType::Triangle => &SIMPLEX[..3],
        CellType::Tetrahedron => &SIMPLEX,
        CellType::Quadrilateral => &QUAD,
        CellType::Hexahedron => &HEX,
    }
}

/// Sorted node indices padded with `u32::MAX`: identifies an element regardless of how its
/// vertices are listed.
fn node_set_key(nodes: &[u32]) -> [u32; 8] {
    let mut k = [u32::MAX; 8];
    k[..nodes.len()].copy_from_slice(nodes);
    k.sort_unstable();
    k
}

/// Physical tags of the element groups that hold elements of dimension `top` or
/// `top - 1` (the others are not looked up, so odd point entities do no harm).
fn resolve_groups(raw: &RawFile, r: &Reader, top: u8) -> Result<Vec<Vec<i32>>, MeshError> {
    let els = &raw.elements;
    let mut needed = vec![false; els.groups.len()];
    for (t, &g) in els.types.iter().zip(&els.group) {
        if t.dim + 1 >= top {
            needed[g as usize] = true;
        }
    }
    let partitioned = raw.skipped.iter().any(|s| s == "PartitionedEntities");
    els.groups
        .iter()
        .zip(needed)
        .map(|(g, needed)| match *g {
            _ if !needed => Ok(Vec::new()),
            PhysSource::Tag(0) => Ok(Vec::new()),
            PhysSource::Tag(t) => Ok(vec![t]),
            PhysSource::Entity { dim, tag, at } => match &raw.entities {
                None => Ok(Vec::new()),
                Some(ents) => ents.get(&(dim, tag)).cloned().ok_or_else(|| {
                    let hint = if partitioned {
                        " (partitioned meshes are not supported: save the mesh unpartitioned)"
                    } else {
                        ""
                    };
                    r.error(
                        at,
                        format!(
                            "element block refers to the entity of dimension {dim} with tag \
                             {tag}, which $Entities does not list{hint}"
                        ),
                    )
                }),
            },
        })
        .collect()
}

/// Which Gmsh element and node each cell and vertex of a built mesh comes from.
pub(crate) struct Origin {
    /// Index into the element table per cell.
    cell_elements: Vec<usize>,
    /// Index into the node table per vertex.
    vertex_nodes: Vec<u32>,
}

impl Origin {
    /// Wraps an error found in the mesh built from this file into
    /// [`MeshError::InFile`]: the file, where the first cell the error names is written,
    /// and the Gmsh element and node tags of the cells and vertices it names. Errors that
    /// already name the file are returned as they are.
    pub(crate) fn in_file(&self, raw: &RawFile, r: &Reader, err: MeshError) -> MeshError {
        if matches!(
            err,
            MeshError::Gmsh { .. } | MeshError::Unsupported { .. } | MeshError::Io { .. }
        ) {
            return err;
        }
        let elements: Vec<(usize, usize)> = err
            .cells()
            .into_iter()
            .filter_map(|c| self.cell_elements.get(c).map(|&e| (c, e)))
            .collect();
        let nodes = err
            .vertices()
            .into_iter()
            .filter_map(|v| {
                self.vertex_nodes
                    .get(v as usize)
                    .map(|&n| (v, raw.nodes.tags[n as usize]))
            })
            .collect();
        r.in_file(
            elements.first().map(|&(_, e)| raw.elements.at[e]),
            elements
                .iter()
                .map(|&(c, e)| (c, raw.elements.tags[e]))
                .collect(),
            nodes,
            err,
        )
    }
}

/// Builds the mesh, and records which element and node each cell and vertex comes from.
/// Errors in the mesh itself come back from [`Mesh::new`] wrapped by [`Origin::in_file`].
pub(crate) fn build(raw: &RawFile, r: &Reader) -> Result<(Mesh, Origin), MeshError> {
    let els = &raw.elements;
    let dedupe = raw.version == Version::V2; // MSH 2 repeats elements once per physical group
    let top = els.types.iter().map(|t| t.dim).max().unwrap_or(0);
    if top < 2 {
        return Err(
            r.unsupported("the file holds no 2-D or 3-D elements, so there are no cells to read")
        );
    }
    let groups = resolve_groups(raw, r, top)?;
    let top_types: BTreeSet<u32> = els
        .types
        .iter()
        .filter(|t| t.dim == top)
        .map(|t| t.number)
        .collect();
    if top_types.len() > 1 {
        let list: Vec<String> = top_types.iter().map(|&n| describe(n)).collect();
        return Err(r.unsupported(format!(
            "the {top}-D elements mix Gmsh element {}; a ferrofem mesh holds one cell type of \
             {SUPPORTED_CELLS}",
            list.join(" and ")
        )));
    }
    if let Some(&bad) = top_types.iter().find(|&&n| cell_type_of(n).is_none()) {
        return Err(r.unsupported(format!(
            "cells of Gmsh element {} are not supported: ferrofem reads meshes of {SUPPORTED_CELLS}",
            describe(bad)
        )));
    }
    let gmsh_cell = *top_types.iter().next().expect("top dimension has elements");
    let cell_type = cell_type_of(gmsh_cell).expect("checked above");
    let perm = permutation(cell_type);

    // Cells, in file order, each once.
    let mut cells_el: Vec<usize> = Vec::new();
    let mut seen: HashSet<[u32; 8]> = HashSet::new();
    for e in 0..els.len() {
        if els.types[e].dim != top {
            continue;
        }
        let nodes = els.nodes_of(e);
        if let Some((_, &repeated)) = nodes
            .iter()
            .enumerate()
            .find(|&(k, n)| nodes[..k].contains(n))
        {
            return Err(r.error(
                els.at[e],
                format!(
                    "element {} repeats node {}",
                    els.tags[e], raw.nodes.tags[repeated as usize]
                ),
            ));
        }
        if dedupe && !seen.insert(node_set_key(nodes)) {
            continue;
        }
        cells_el.push(e);
    }
    drop(seen);

    // Vertices: the nodes cells use, in node-tag order.
    let num_nodes = raw.nodes.len();
    let mut vertex_of = vec![u32::MAX; num_nodes];
    let mut used: Vec<u32> = Vec::new();
    for &e in &cells_el {
        for &n in els.nodes_of(e) {
            if vertex_of[n as usize] == u32::MAX {
                vertex_of[n as usize] = 0;
                used.push(n);
            }
        }
    }
    used.sort_unstable_by_key(|&n| raw.nodes.tags[n as usize]);
    if used.len() > u32::MAX as usize {
        return Err(MeshError::TooLarge {
            what: "vertices",
            count: used.len(),
        });
    }
    for (v, &n) in used.iter().enumerate() {
        vertex_of[n as usize] = v as u32;
    }
    let dim = cell_type.dim();
    let mut coords = Vec::with_capacity(used.len() * dim);
    if dim == 2 {
        check_planar(raw, r, &used)?;
    }
    for &n in &used {
        coords.extend_from_slice(&raw.nodes.coords[n as usize][..dim]);
    }

    // Connectivity and cell tags.
    let mut cells = Vec::with_capacity(cells_el.len() * perm.len());
    let mut cell_tags = Vec::with_capacity(cells_el.len());
    for &e in &cells_el {
        let nodes = els.nodes_of(e);
        cells.extend(perm.iter().map(|&k| vertex_of[nodes[k] as usize]));
        cell_tags.push(groups[els.group[e] as usize].first().copied().unwrap_or(0));
    }

    let facets = tagged_facets(raw, r, &groups, cell_type, top, &vertex_of)?;
    drop(vertex_of);
    let origin = Origin {
        cell_elements: cells_el,
        vertex_nodes: used,
    };
    let mesh = Mesh::new(cell_type, coords, cells)
        .and_then(|m| m.with_cell_tags(cell_tags).with_facets(facets))
        .map_err(|e| origin.in_file(raw, r, e))?
        .with_names(raw.names.clone());
    Ok((mesh, origin))
}

/// Checks that the used nodes of a 2-D mesh lie in one plane `z = const`.
fn check_planar(raw: &RawFile, r: &Reader, used: &[u32]) -> Result<(), MeshError> {
    let Some(&first) = used.first() else {
        return Ok(());
    };
    let z0 = raw.nodes.coords[first as usize][2];
    let (mut lo, mut hi) = ([f64::INFINITY; 2], [f64::NEG_INFINITY; 2]);
    for &n in used {
        let x = raw.nodes.coords[n as usize];
        for k in 0..2 {
            lo[k] = lo[k].min(x[k]);
            hi[k] = hi[k].max(x[k]);
        }
    }
    let scale = (hi[0] - lo[0]).max(hi[1] - lo[1]).max(z0.abs());
    let tol = 1e-10 * scale;
    if let Some(&n) = used
        .iter()
        .find(|&&n| (raw.nodes.coords[n as usize][2] - z0).abs() > tol)
    {
        return Err(r.unsupported(format!(
            "2-D cells not in a z = const plane: node {} has z = {}, node {} has z = {}",
            raw.nodes.tags[first as usize],
            z0,
            raw.nodes.tags[n as usize],
            raw.nodes.coords[n as usize][2]
        )));
    }
    Ok(())
}

/// Elements one dimension below the cells that carry physical tags, once per tag.
fn tagged_facets(
    raw: &RawFile,
    r: &Reader,
    groups: &[Vec<i32>],
    cell_type: CellType,
    top: u8,
    vertex_of: &[u32],
) -> Result<TaggedFacets, MeshError> {
    let els = &raw.elements;
    let (gmsh_facet, perm): (u32, &[usize]) = match cell_type {
        CellType::Triangle | CellType::Quadrilateral => (1, &SIMPLEX[..2]),
        CellType::Tetrahedron => (2, &SIMPLEX[..3]),
        CellType::Hexahedron => (3, &QUAD),
    };
    // A facet element is recorded once per physical tag of its entity (MSH 4) or
    // element record (MSH 2). In MSH 4 one entity may list any number of physical
    // tags, so a small file could ask for (elements x tags) records: refuse more than
    // the input can justify (one record per `BYTES_PER_FACET_RECORD` bytes of file,
    // which real files stay far below), then reserve exactly.
    let records = (0..els.len())
        .filter(|&e| els.types[e].dim + 1 == top)
        .map(|e| groups[els.group[e] as usize].len())
        .fold(0usize, usize::saturating_add);
    let most = r.end() / BYTES_PER_FACET_RECORD + MIN_FACET_RECORDS;
    if records > most {
        return Err(r.unsupported(format!(
            "the physical groups of the {}-D elements make {records} tagged facets (a facet \
             once per group it belongs to), more than the {most} this reader accepts from a \
             file of {} bytes: is an entity listed in very many physical groups?",
            top - 1,
            r.end()
        )));
    }
    let mut facets = TaggedFacets {
        vertices_per_facet: perm.len(),
        vertices: Vec::with_capacity(records * perm.len()),
        tags: Vec::with_capacity(records),
    };
    let mut seen: HashMap<([u32; 8], i32), ()> = HashMap::new();
    let dedupe = raw.version == Version::V2;
    for e in 0..els.len() {
        if els.types[e].dim + 1 != top {
            continue;
        }
        let tags = &groups[els.group[e] as usize];
        if tags.is_empty() {
            continue;
        }
        if els.types[e].number != gmsh_facet {
            return Err(r.unsupported(format!(
                "physical group {} holds elements of Gmsh {}, which cannot be facets of {} cells",
                tags[0],
                describe(els.types[e].number),
                cell_type
            )));
        }
        let nodes = els.nodes_of(e);
        if let Some(&n) = nodes.iter().find(|&&n| vertex_of[n as usize] == u32::MAX) {
            return Err(r.error(
                els.at[e],
                format!(
                    "element {} of physical group {} uses node {}, which belongs to no cell",
                    els.tags[e], tags[0], raw.nodes.tags[n as usize]
                ),
            ));
        }
        for &t in tags {
            if dedupe && seen.insert((node_set_key(nodes), t), ()).is_some() {
                continue;
            }
            facets
                .vertices
                .extend(perm.iter().map(|&k| vertex_of[nodes[k] as usize]));
            facets.tags.push(t);
        }
    }
    Ok(facets)
}
