//! The mesh container.

use crate::MeshError;
use ferrofem_base::CellType;
use rayon::prelude::*;

/// A name given to a physical group (Gmsh) or a generated boundary/domain tag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PhysicalName {
    /// Topological dimension of the entities carrying the tag (facets: `dim - 1`).
    pub dim: usize,
    /// The integer tag.
    pub tag: i32,
    /// The name.
    pub name: String,
}

/// Tagged facets (edges in 2-D, faces in 3-D), typically pieces of the boundary named by a
/// physical group. A facet carrying several tags appears once per tag.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaggedFacets {
    /// Vertices per facet (2 for segments, 3 for triangles, 4 for quadrilaterals).
    pub vertices_per_facet: usize,
    /// Facet vertices, `vertices_per_facet` per facet, in the order the source gave them
    /// (quadrilateral facets lexicographic, like the hexahedron faces).
    pub vertices: Vec<u32>,
    /// One tag per facet.
    pub tags: Vec<i32>,
}

impl TaggedFacets {
    /// Number of facets.
    pub fn len(&self) -> usize {
        self.tags.len()
    }
    /// True when there are no tagged facets.
    pub fn is_empty(&self) -> bool {
        self.tags.is_empty()
    }
    /// Vertices of facet `i`.
    pub fn facet(&self, i: usize) -> &[u32] {
        &self.vertices[i * self.vertices_per_facet..(i + 1) * self.vertices_per_facet]
    }
}

/// An unstructured mesh of one cell type with straight-sided cells.
///
/// Cells refer to vertices by 32-bit indices (what GPU kernels read); construction checks
/// that every index is in range and every coordinate finite. Cells may carry an integer
/// tag (a physical group; 0 means none), and facets of the boundary (or interior
/// interfaces) may be tagged for boundary conditions.
#[derive(Clone, Debug)]
pub struct Mesh {
    cell_type: CellType,
    coords: Vec<f64>,
    cells: Vec<u32>,
    cell_tags: Vec<i32>,
    facets: TaggedFacets,
    names: Vec<PhysicalName>,
}

impl Mesh {
    /// Builds a mesh from vertex coordinates (`dim` per vertex, `dim = cell_type.dim()`) and
    /// cell connectivity (`cell_type.num_vertices()` per cell), checking indices and
    /// coordinates. Orientation and quality are checked separately (`validate`).
    pub fn new(cell_type: CellType, coords: Vec<f64>, cells: Vec<u32>) -> Result<Mesh, MeshError> {
        let dim = cell_type.dim();
        let nv = cell_type.num_vertices();
        if coords.len() % dim != 0 {
            return Err(MeshError::CoordinateLength {
                len: coords.len(),
                dim,
            });
        }
        if cells.len() % nv != 0 {
            return Err(MeshError::ConnectivityLength {
                len: cells.len(),
                per_cell: nv,
                cell_type,
            });
        }
        let num_vertices = coords.len() / dim;
        if num_vertices > u32::MAX as usize {
            return Err(MeshError::TooLarge {
                what: "vertices",
                count: num_vertices,
            });
        }
        // (the first offending vertex or cell is reported, as a sequential scan would)
        if let Some(v) = coords
            .par_chunks_exact(dim)
            .position_first(|x| x.iter().any(|c| !c.is_finite()))
        {
            return Err(MeshError::NonFiniteCoordinate { vertex: v });
        }
        let bad_cell = cells
            .par_chunks_exact(nv)
            .enumerate()
            .find_map_first(|(c, cell)| {
                cell.iter().enumerate().find_map(|(k, &v)| {
                    if v as usize >= num_vertices {
                        Some(MeshError::VertexOutOfRange {
                            cell: c,
                            vertex: v as u64,
                            num_vertices,
                        })
                    } else if cell[..k].contains(&v) {
                        Some(MeshError::RepeatedVertex { cell: c, vertex: v })
                    } else {
                        None
                    }
                })
            });
        if let Some(e) = bad_cell {
            return Err(e);
        }
        if cells.len() > u32::MAX as usize {
            // cell indices and CSR offsets into the connectivity are 32-bit
            return Err(MeshError::TooLarge {
                what: "connectivity entries",
                count: cells.len(),
            });
        }
        let ncells = cells.len() / nv;
        Ok(Mesh {
            cell_type,
            coords,
            cells,
            cell_tags: vec![0; ncells],
            facets: TaggedFacets {
                vertices_per_facet: facet_vertex_count(cell_type),
                ..Default::default()
            },
            names: Vec::new(),
        })
    }

    /// Sets one tag per cell.
    ///
    /// # Panics
    /// If `tags.len()` differs from the number of cells (a programming error, not input).
    pub fn with_cell_tags(mut self, tags: Vec<i32>) -> Mesh {
        assert_eq!(tags.len(), self.num_cells(), "one tag per cell");
        self.cell_tags = tags;
        self
    }

    /// Sets the tagged facets, checking their vertex indices.
    pub fn with_facets(mut self, facets: TaggedFacets) -> Result<Mesh, MeshError> {
        let n = self.num_vertices();
        let per = facet_vertex_count(self.cell_type);
        if facets.vertices_per_facet != per || facets.vertices.len() != per * facets.tags.len() {
            return Err(MeshError::ConnectivityLength {
                len: facets.vertices.len(),
                per_cell: per,
                cell_type: self.cell_type,
            });
        }
        for (i, f) in facets.vertices.chunks_exact(per).enumerate() {
            if let Some(&v) = f.iter().find(|&&v| v as usize >= n) {
                return Err(MeshError::VertexOutOfRange {
                    cell: i,
                    vertex: v as u64,
                    num_vertices: n,
                });
            }
        }
        self.facets = facets;
        Ok(self)
    }

    /// Sets the names of physical groups.
    pub fn with_names(mut self, names: Vec<PhysicalName>) -> Mesh {
        self.names = names;
        self
    }

    /// The cell type.
    pub fn cell_type(&self) -> CellType {
        self.cell_type
    }
    /// Spatial (and topological) dimension.
    pub fn dim(&self) -> usize {
        self.cell_type.dim()
    }
    /// Number of cells.
    pub fn num_cells(&self) -> usize {
        self.cells.len() / self.cell_type.num_vertices()
    }
    /// Number of vertices.
    pub fn num_vertices(&self) -> usize {
        self.coords.len() / self.dim()
    }
    /// All coordinates, `dim` per vertex.
    pub fn coords(&self) -> &[f64] {
        &self.coords
    }
    /// Mutable coordinates (for perturbation and mapping; connectivity stays fixed).
    pub fn coords_mut(&mut self) -> &mut [f64] {
        &mut self.coords
    }
    /// Coordinates of vertex `v`.
    pub fn vertex(&self, v: usize) -> &[f64] {
        let d = self.dim();
        &self.coords[v * d..(v + 1) * d]
    }
    /// All connectivity, `num_vertices()` of the cell type per cell.
    pub fn cells(&self) -> &[u32] {
        &self.cells
    }
    /// Mutable connectivity, for reorienting cells in place.
    pub(crate) fn cells_mut(&mut self) -> &mut [u32] {
        &mut self.cells
    }
    /// Vertices of cell `c`.
    pub fn cell(&self, c: usize) -> &[u32] {
        let nv = self.cell_type.num_vertices();
        &self.cells[c * nv..(c + 1) * nv]
    }
    /// One tag per cell (0: untagged).
    pub fn cell_tags(&self) -> &[i32] {
        &self.cell_tags
    }
    /// Tagged facets.
    pub fn facets(&self) -> &TaggedFacets {
        &self.facets
    }
    /// Names of physical groups.
    pub fn physical_names(&self) -> &[PhysicalName] {
        &self.names
    }
    /// The tag a name refers to among groups of dimension `dim`, if any.
    pub fn tag_of(&self, dim: usize, name: &str) -> Option<i32> {
        self.names
            .iter()
            .find(|n| n.dim == dim && n.name == name)
            .map(|n| n.tag)
    }

    /// Replaces the connectivity and tags in one step, used by renumbering; the caller
    /// guarantees the same cell type and valid indices.
    pub(crate) fn replace_parts(
        &mut self,
        coords: Vec<f64>,
        cells: Vec<u32>,
        cell_tags: Vec<i32>,
        facets: TaggedFacets,
    ) {
        debug_assert_eq!(cells.len(), cell_tags.len() * self.cell_type.num_vertices());
        self.coords = coords;
        self.cells = cells;
        self.cell_tags = cell_tags;
        self.facets = facets;
    }

    /// Bounding box `(min, max)`, each of length `dim`.
    pub fn bounding_box(&self) -> (Vec<f64>, Vec<f64>) {
        let d = self.dim();
        let mut lo = vec![f64::INFINITY; d];
        let mut hi = vec![f64::NEG_INFINITY; d];
        for x in self.coords.chunks_exact(d) {
            for k in 0..d {
                lo[k] = lo[k].min(x[k]);
                hi[k] = hi[k].max(x[k]);
            }
        }
        (lo, hi)
    }
}

/// Vertices per facet of a cell type.
pub fn facet_vertex_count(ct: CellType) -> usize {
    match ct {
        CellType::Triangle | CellType::Quadrilateral => 2,
        CellType::Tetrahedron => 3,
        CellType::Hexahedron => 4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn construction_checks_input() {
        let coords = vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0];
        assert!(Mesh::new(CellType::Triangle, coords.clone(), vec![0, 1, 2]).is_ok());
        assert!(matches!(
            Mesh::new(CellType::Triangle, coords.clone(), vec![0, 1, 3]),
            Err(MeshError::VertexOutOfRange {
                cell: 0,
                vertex: 3,
                ..
            })
        ));
        assert!(matches!(
            Mesh::new(CellType::Triangle, coords.clone(), vec![0, 1]),
            Err(MeshError::ConnectivityLength { .. })
        ));
        assert!(matches!(
            Mesh::new(CellType::Triangle, coords.clone(), vec![0, 1, 1]),
            Err(MeshError::RepeatedVertex { cell: 0, vertex: 1 })
        ));
        let mut bad = coords;
        bad[3] = f64::NAN;
        assert!(matches!(
            Mesh::new(CellType::Triangle, bad, vec![0, 1, 2]),
            Err(MeshError::NonFiniteCoordinate { vertex: 1 })
        ));
    }
}
