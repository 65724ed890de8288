//! Mesh topology: which cells share a facet, the boundary, where tagged facets sit, and
//! vertex-to-cell adjacency.
//!
//! Facets are identified by their sorted vertex sets. They are matched by bucketing every
//! cell facet under its smallest vertex (a counting sort) and sorting the few facets in
//! each bucket, which takes linear time overall and yields all facets in lexicographic
//! order of their sorted vertices, so a facet can be looked up by binary search.

use crate::{Mesh, MeshError};

/// One side of a facet: a cell and the facet's local index in it (in the order of
/// [`ferrofem_base::CellType::facets`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FacetSide {
    /// The cell.
    pub cell: u32,
    /// Local facet index within the cell.
    pub local: u8,
}

/// Every facet of a mesh with the one (boundary) or two (interior) cells it belongs to.
///
/// Facets are numbered in lexicographic order of their sorted vertex sets.
#[derive(Clone, Debug)]
pub struct FacetIncidence {
    per_facet: usize,
    /// Sorted vertices, `per_facet` per facet.
    keys: Vec<u32>,
    /// The side with the smaller cell index.
    first: Vec<FacetSide>,
    /// The other side, absent on the boundary.
    second: Vec<Option<FacetSide>>,
}

impl FacetIncidence {
    /// Number of distinct facets.
    pub fn num_facets(&self) -> usize {
        self.first.len()
    }

    /// Vertices per facet.
    pub fn vertices_per_facet(&self) -> usize {
        self.per_facet
    }

    /// The sorted vertices of facet `f`.
    pub fn vertices(&self, f: usize) -> &[u32] {
        &self.keys[f * self.per_facet..(f + 1) * self.per_facet]
    }

    /// The cells on the sides of facet `f`: the one with the smaller index first, the
    /// second absent for a boundary facet.
    pub fn sides(&self, f: usize) -> (FacetSide, Option<FacetSide>) {
        (self.first[f], self.second[f])
    }

    /// True when facet `f` belongs to exactly one cell.
    pub fn is_boundary(&self, f: usize) -> bool {
        self.second[f].is_none()
    }

    /// Number of boundary facets.
    pub fn num_boundary(&self) -> usize {
        self.second.iter().filter(|s| s.is_none()).count()
    }

    /// The facet with the given vertices (in any order), by binary search.
    pub fn find(&self, vertices: &[u32]) -> Option<usize> {
        if vertices.len() != self.per_facet {
            return None;
        }
        let key = sorted_key(vertices);
        let key = &key[..self.per_facet];
        let pos = partition_point(self.num_facets(), |i| self.vertices(i) < key);
        (pos < self.num_facets() && self.vertices(pos) == key).then_some(pos)
    }
}

/// First index in `0..n` where `less` turns false (`less` must be monotone).
fn partition_point(n: usize, less: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if less(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Vertices sorted into a fixed-size key (unused slots stay `u32::MAX`).
fn sorted_key(vertices: &[u32]) -> [u32; 4] {
    let mut k = [u32::MAX; 4];
    k[..vertices.len()].copy_from_slice(vertices);
    k[..vertices.len()].sort_unstable();
    k
}

/// One cell facet before matching.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    /// The facet's sorted vertices, padded with `u32::MAX`.
    pub key: [u32; 4],
    /// The cell and its local facet.
    pub side: FacetSide,
}

/// All cell facets, sorted by key (then by cell), in linear time: a counting sort by the
/// smallest vertex, then a sort within each (small) bucket.
pub(crate) fn sorted_facet_entries(mesh: &Mesh) -> Vec<Entry> {
    let ct = mesh.cell_type();
    let local_facets = ct.facets();
    let nf = local_facets.len();
    let mut count = vec![0u32; mesh.num_vertices() + 1];
    let mut raw = Vec::with_capacity(mesh.num_cells() * nf);
    for c in 0..mesh.num_cells() {
        let cell = mesh.cell(c);
        for (l, lf) in local_facets.iter().enumerate() {
            let mut key = [u32::MAX; 4];
            for (k, &lv) in lf.iter().enumerate() {
                key[k] = cell[lv];
            }
            key[..lf.len()].sort_unstable();
            count[key[0] as usize + 1] += 1;
            raw.push(Entry {
                key,
                side: FacetSide {
                    cell: c as u32,
                    local: l as u8,
                },
            });
        }
    }
    for v in 0..mesh.num_vertices() {
        count[v + 1] += count[v];
    }
    let offsets = count.clone();
    let mut sorted = raw.clone();
    let mut next = count;
    for e in raw {
        let slot = &mut next[e.key[0] as usize];
        sorted[*slot as usize] = e;
        *slot += 1;
    }
    for w in offsets.windows(2) {
        sorted[w[0] as usize..w[1] as usize].sort_unstable();
    }
    sorted
}

impl Mesh {
    /// Matches the facets of all cells: every distinct facet with the one or two cells it
    /// belongs to. Fails with [`MeshError::NonManifoldFacet`] when a facet is shared by
    /// more than two cells.
    pub fn facet_incidence(&self) -> Result<FacetIncidence, MeshError> {
        let per = crate::mesh::facet_vertex_count(self.cell_type());
        let entries = sorted_facet_entries(self);
        let mut out = FacetIncidence {
            per_facet: per,
            keys: Vec::new(),
            first: Vec::new(),
            second: Vec::new(),
        };
        let mut i = 0;
        while i < entries.len() {
            let key = entries[i].key;
            let mut j = i + 1;
            while j < entries.len() && entries[j].key == key {
                j += 1;
            }
            if j - i > 2 {
                return Err(MeshError::NonManifoldFacet {
                    vertices: key[..per].to_vec(),
                    count: j - i,
                    cells: entries[i..j.min(i + 8)]
                        .iter()
                        .map(|e| e.side.cell)
                        .collect(),
                });
            }
            out.keys.extend_from_slice(&key[..per]);
            out.first.push(entries[i].side);
            out.second.push((j - i == 2).then(|| entries[i + 1].side));
            i = j;
        }
        Ok(out)
    }

    /// Facets that belong to exactly one cell, as `(cell, local facet)` pairs sorted by
    /// cell and local index. (A facet shared by more than two cells is not reported; use
    /// [`Mesh::facet_incidence`] to detect such non-manifold input.)
    pub fn boundary_facets(&self) -> Vec<(u32, u8)> {
        let entries = sorted_facet_entries(self);
        let mut out = Vec::new();
        let mut i = 0;
        while i < entries.len() {
            let mut j = i + 1;
            while j < entries.len() && entries[j].key == entries[i].key {
                j += 1;
            }
            if j - i == 1 {
                out.push((entries[i].side.cell, entries[i].side.local));
            }
            i = j;
        }
        out.sort_unstable();
        out
    }

    /// Finds every tagged facet (see [`Mesh::facets`]) among the cell facets, returning
    /// `(cell, local facet, tag)` per tagged facet, in the same order. A facet between two
    /// cells is reported on the cell with the smaller index. Fails with
    /// [`MeshError::UnknownFacet`], naming the facet's index, when a tagged facet is not a
    /// facet of any cell, and with [`MeshError::NonManifoldFacet`] for non-manifold meshes.
    pub fn locate_tagged_facets(&self) -> Result<Vec<(u32, u8, i32)>, MeshError> {
        let tagged = self.facets();
        if tagged.is_empty() {
            return Ok(Vec::new());
        }
        let incidence = self.facet_incidence()?;
        (0..tagged.len())
            .map(|i| {
                let vertices = tagged.facet(i);
                let f = incidence
                    .find(vertices)
                    .ok_or_else(|| MeshError::UnknownFacet {
                        facet: i,
                        vertices: vertices.to_vec(),
                    })?;
                let side = incidence.first[f];
                Ok((side.cell, side.local, tagged.tags[i]))
            })
            .collect()
    }

    /// Cells around each vertex in compressed-row form: the cells containing vertex `v`
    /// are `cells[offsets[v]..offsets[v + 1]]`, in increasing order.
    pub fn vertex_to_cells(&self) -> (Vec<u32>, Vec<u32>) {
        let nv = self.cell_type().num_vertices();
        let mut offsets = vec![0u32; self.num_vertices() + 1];
        for &v in self.cells() {
            offsets[v as usize + 1] += 1;
        }
        for v in 0..self.num_vertices() {
            offsets[v + 1] += offsets[v];
        }
        let mut next = offsets.clone();
        let mut cells = vec![0u32; self.cells().len()];
        for (i, &v) in self.cells().iter().enumerate() {
            let slot = &mut next[v as usize];
            cells[*slot as usize] = (i / nv) as u32;
            *slot += 1;
        }
        (offsets, cells)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate_box, BoxSpec, CellType, TaggedFacets};

    /// Closed-form number of boundary facets of a structured box mesh.
    fn boundary_count(ct: CellType, n: &[usize]) -> usize {
        let per_square = if ct == CellType::Tetrahedron { 2 } else { 1 };
        (0..n.len())
            .map(|axis| {
                2 * per_square
                    * (0..n.len())
                        .filter(|&a| a != axis)
                        .map(|a| n[a])
                        .product::<usize>()
            })
            .sum()
    }

    #[test]
    fn boundary_and_interior_facet_counts_match_closed_forms() {
        for (ct, n) in [
            (CellType::Triangle, vec![5, 3]),
            (CellType::Quadrilateral, vec![5, 3]),
            (CellType::Tetrahedron, vec![3, 4, 2]),
            (CellType::Hexahedron, vec![3, 4, 2]),
        ] {
            let m = generate_box(&BoxSpec::unit(ct, &n)).unwrap();
            let b = m.boundary_facets();
            assert_eq!(b.len(), boundary_count(ct, &n), "{ct}");
            let inc = m.facet_incidence().unwrap();
            assert_eq!(inc.num_boundary(), b.len());
            // each cell facet is counted once on the boundary or twice inside
            let total_cell_facets = m.num_cells() * ct.num_facets();
            assert_eq!(total_cell_facets, 2 * inc.num_facets() - inc.num_boundary());
            // boundary facets lie on the box boundary
            for &(c, l) in &b {
                let fv: Vec<u32> = ct.facets()[l as usize]
                    .iter()
                    .map(|&lv| m.cell(c as usize)[lv])
                    .collect();
                let on_side = (0..ct.dim()).any(|a| {
                    [0.0, 1.0]
                        .iter()
                        .any(|&s| fv.iter().all(|&v| m.vertex(v as usize)[a] == s))
                });
                assert!(
                    on_side,
                    "{ct}: boundary facet {fv:?} not on the box boundary"
                );
            }
            // incidence sides really contain the facet's vertices
            for f in 0..inc.num_facets() {
                let (s1, s2) = inc.sides(f);
                for s in std::iter::once(s1).chain(s2) {
                    let cell = m.cell(s.cell as usize);
                    let mut fv: Vec<u32> = ct.facets()[s.local as usize]
                        .iter()
                        .map(|&lv| cell[lv])
                        .collect();
                    fv.sort_unstable();
                    assert_eq!(fv, inc.vertices(f));
                }
                if let Some(s2) = s2 {
                    assert!(s1.cell < s2.cell);
                }
            }
        }
    }

    #[test]
    fn tagged_facets_are_located_on_their_cells() {
        for ct in CellType::ALL {
            let n: &[usize] = if ct.dim() == 2 { &[4, 3] } else { &[2, 3, 2] };
            let m = generate_box(&BoxSpec::unit(ct, n)).unwrap();
            let located = m.locate_tagged_facets().unwrap();
            assert_eq!(located.len(), m.facets().len());
            let boundary: std::collections::HashSet<(u32, u8)> =
                m.boundary_facets().into_iter().collect();
            // the generator tags each boundary facet exactly once
            assert_eq!(located.len(), boundary.len(), "{ct}");
            for (i, &(c, l, tag)) in located.iter().enumerate() {
                assert!(boundary.contains(&(c, l)));
                assert_eq!(tag, m.facets().tags[i]);
                let mut a: Vec<u32> = ct.facets()[l as usize]
                    .iter()
                    .map(|&lv| m.cell(c as usize)[lv])
                    .collect();
                let mut b = m.facets().facet(i).to_vec();
                a.sort_unstable();
                b.sort_unstable();
                assert_eq!(a, b);
            }
        }
    }

    #[test]
    fn unknown_tagged_facet_is_named() {
        let m = generate_box(&BoxSpec::unit(CellType::Quadrilateral, &[2, 2])).unwrap();
        // vertices 0 and 4 are diagonal corners of cell 0, not an edge
        let facets = TaggedFacets {
            vertices_per_facet: 2,
            vertices: vec![0, 1, 0, 4],
            tags: vec![7, 8],
        };
        let m = m.with_facets(facets).unwrap();
        match m.locate_tagged_facets() {
            Err(MeshError::UnknownFacet { facet: 1, vertices }) => assert_eq!(vertices, [0, 4]),
            other => panic!("expected unknown facet 1, got {other:?}"),
        }
    }

    #[test]
    fn non_manifold_facet_is_an_error() {
        // three triangles sharing the edge (0, 1)
        let m = Mesh::new(
            CellType::Triangle,
            vec![0.0, 0.0, 1.0, 0.0, 0.5, 1.0, 0.5, -1.0, 0.5, 2.0],
            vec![0, 1, 2, 1, 0, 3, 0, 1, 4],
        )
        .unwrap();
        match m.facet_incidence() {
            Err(MeshError::NonManifoldFacet {
                vertices,
                count,
                cells,
            }) => {
                assert_eq!((vertices, count, cells), (vec![0, 1], 3, vec![0, 1, 2]));
            }
            other => panic!("expected a non-manifold error, got {other:?}"),
        }
        // the boundary excludes the shared edge and keeps the other six
        assert_eq!(m.boundary_facets().len(), 6);
    }

    #[test]
    fn vertex_to_cells_inverts_the_connectivity() {
        let m = generate_box(&BoxSpec::unit(CellType::Tetrahedron, &[3, 2, 2])).unwrap();
        let (off, cells) = m.vertex_to_cells();
        assert_eq!(off.len(), m.num_vertices() + 1);
        assert_eq!(*off.last().unwrap() as usize, m.cells().len());
        let mut pairs_from_csr = Vec::new();
        for v in 0..m.num_vertices() {
            let row = &cells[off[v] as usize..off[v + 1] as usize];
            assert!(row.windows(2).all(|w| w[0] < w[1]));
            pairs_from_csr.extend(row.iter().map(|&c| (c, v as u32)));
        }
        let mut pairs_from_cells: Vec<(u32, u32)> = (0..m.num_cells())
            .flat_map(|c| m.cell(c).iter().map(move |&v| (c as u32, v)))
            .collect();
        pairs_from_csr.sort_unstable();
        pairs_from_cells.sort_unstable();
        assert_eq!(pairs_from_csr, pairs_from_cells);
        // an interior vertex of a Kuhn triangulation lies in 24 tetrahedra
        let interior = 1 + 4 * (1 + 3); // grid point (1, 1, 1) with 4 x 3 vertices per layer
        assert_eq!(off[interior + 1] - off[interior], 24);
    }
}
