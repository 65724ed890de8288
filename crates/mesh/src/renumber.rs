//! Locality-improving renumbering: reverse Cuthill–McKee for vertices (small bandwidth,
//! so a cell's vertices sit close together in memory) and Morton (Z-order) sorting for
//! cells (neighbouring cells processed close together in time).

use crate::{Mesh, TaggedFacets};

/// Vertex adjacency through cells (two vertices are neighbours when some cell holds
/// both), in compressed-row form.
fn vertex_graph(mesh: &Mesh) -> (Vec<usize>, Vec<u32>) {
    let nv = mesh.num_vertices();
    let (off, adj) = mesh.vertex_to_cells();
    let mut offsets = Vec::with_capacity(nv + 1);
    let mut neighbours = Vec::new();
    let mut mark = vec![u32::MAX; nv];
    offsets.push(0);
    for v in 0..nv {
        mark[v] = v as u32;
        for &c in &adj[off[v] as usize..off[v + 1] as usize] {
            for &w in mesh.cell(c as usize) {
                if mark[w as usize] != v as u32 {
                    mark[w as usize] = v as u32;
                    neighbours.push(w);
                }
            }
        }
        offsets.push(neighbours.len());
    }
    (offsets, neighbours)
}

/// Breadth-first search state reused across searches.
struct Bfs<'g> {
    offsets: &'g [usize],
    adj: &'g [u32],
    /// Search id that last reached each vertex.
    seen: Vec<u32>,
    level: Vec<u32>,
    id: u32,
}

impl<'g> Bfs<'g> {
    fn degree(&self, v: usize) -> usize {
        self.offsets[v + 1] - self.offsets[v]
    }

    fn neighbours(&self, v: usize) -> &'g [u32] {
        &self.adj[self.offsets[v]..self.offsets[v + 1]]
    }

    /// Level structure rooted at `root`: its height (eccentricity of `root`) and the
    /// vertices of the last level.
    fn levels(&mut self, root: usize) -> (u32, Vec<usize>) {
        self.id += 1;
        let id = self.id;
        let mut queue = vec![root];
        self.seen[root] = id;
        self.level[root] = 0;
        let mut head = 0;
        while head < queue.len() {
            let v = queue[head];
            head += 1;
            for &w in self.neighbours(v) {
                let w = w as usize;
                if self.seen[w] != id {
                    self.seen[w] = id;
                    self.level[w] = self.level[v] + 1;
                    queue.push(w);
                }
            }
        }
        let height = queue.last().map_or(0, |&v| self.level[v]);
        let last = queue
            .iter()
            .copied()
            .filter(|&v| self.level[v] == height)
            .collect();
        (height, last)
    }

    /// George–Liu pseudo-peripheral vertex of the component of `start`.
    fn pseudo_peripheral(&mut self, start: usize) -> usize {
        let mut r = start;
        let (mut height, mut last) = self.levels(r);
        loop {
            let Some(x) = last.iter().copied().min_by_key(|&v| (self.degree(v), v)) else {
                return r;
            };
            let (hx, lx) = self.levels(x);
            if hx > height {
                r = x;
                height = hx;
                last = lx;
            } else {
                return x;
            }
        }
    }
}

/// Applies a vertex permutation (`new_of_old`) to every vertex index in the mesh.
fn permute_vertices(mesh: &mut Mesh, new_of_old: &[u32]) {
    let d = mesh.dim();
    let mut coords = vec![0.0; mesh.coords().len()];
    for (old, x) in mesh.coords().chunks_exact(d).enumerate() {
        let new = new_of_old[old] as usize;
        coords[new * d..(new + 1) * d].copy_from_slice(x);
    }
    let cells = mesh
        .cells()
        .iter()
        .map(|&v| new_of_old[v as usize])
        .collect();
    let f = mesh.facets();
    let facets = TaggedFacets {
        vertices_per_facet: f.vertices_per_facet,
        vertices: f.vertices.iter().map(|&v| new_of_old[v as usize]).collect(),
        tags: f.tags.clone(),
    };
    let tags = mesh.cell_tags().to_vec();
    mesh.replace_parts(coords, cells, tags, facets);
}

/// Spreads the low 32 bits of `x` to the even bit positions of a `u64`.
fn spread2(x: u64) -> u64 {
    let mut x = x & 0xffff_ffff;
    x = (x | (x << 16)) & 0x0000_ffff_0000_ffff;
    x = (x | (x << 8)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x << 4)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Spreads the low 21 bits of `x` to every third bit position of a `u64`.
fn spread3(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    (x | (x << 2)) & 0x1249_2492_4924_9249
}

impl Mesh {
    /// Renumbers the vertices by reverse Cuthill–McKee on the graph of vertices sharing a
    /// cell, to make [`Mesh::vertex_bandwidth`] small. Each connected component (isolated
    /// vertices included) is searched from a George–Liu pseudo-peripheral vertex, visiting
    /// neighbours by increasing degree; the whole order is then reversed. Coordinates,
    /// connectivity and tagged facets are permuted consistently. Returns the permutation,
    /// old index → new index.
    pub fn renumber_vertices_rcm(&mut self) -> Vec<u32> {
        let nv = self.num_vertices();
        let (offsets, adj) = vertex_graph(self);
        let mut bfs = Bfs {
            offsets: &offsets,
            adj: &adj,
            seen: vec![0; nv],
            level: vec![0; nv],
            id: 0,
        };
        let mut numbered = vec![false; nv];
        let mut order: Vec<usize> = Vec::with_capacity(nv);
        let mut scratch: Vec<usize> = Vec::new();
        for seed in 0..nv {
            if numbered[seed] {
                continue;
            }
            let start = bfs.pseudo_peripheral(seed);
            let mut head = order.len();
            order.push(start);
            numbered[start] = true;
            while head < order.len() {
                let v = order[head];
                head += 1;
                scratch.clear();
                scratch.extend(
                    bfs.neighbours(v)
                        .iter()
                        .map(|&w| w as usize)
                        .filter(|&w| !numbered[w]),
                );
                scratch.sort_unstable_by_key(|&w| (bfs.degree(w), w));
                for &w in &scratch {
                    numbered[w] = true;
                    order.push(w);
                }
            }
        }
        let mut new_of_old = vec![0u32; nv];
        for (i, &old) in order.iter().rev().enumerate() {
            new_of_old[old] = i as u32;
        }
        permute_vertices(self, &new_of_old);
        new_of_old
    }

    /// Sorts the cells along the Morton (Z-order) curve of their centroids, normalised to
    /// the bounding box (32 bits per axis in 2-D, 21 in 3-D). Cell tags move with their
    /// cells; ties keep the old order. Returns the new order: new cell `i` is old cell
    /// `perm[i]`.
    pub fn sort_cells_morton(&mut self) -> Vec<u32> {
        let d = self.dim();
        let nvc = self.cell_type().num_vertices();
        let (lo, hi) = self.bounding_box();
        let bits = if d == 2 { 32 } else { 21 };
        let top = ((1u64 << bits) - 1) as f64;
        let codes: Vec<u64> = (0..self.num_cells())
            .map(|c| {
                let mut code = 0u64;
                for a in 0..d {
                    let centroid = self
                        .cell(c)
                        .iter()
                        .map(|&v| self.vertex(v as usize)[a])
                        .sum::<f64>()
                        / nvc as f64;
                    let extent = hi[a] - lo[a];
                    let t = if extent > 0.0 {
                        ((centroid - lo[a]) / extent).clamp(0.0, 1.0)
                    } else {
                        0.0
                    };
                    let q = (t * top) as u64;
                    code |= if d == 2 { spread2(q) } else { spread3(q) } << a;
                }
                code
            })
            .collect();
        let mut perm: Vec<u32> = (0..self.num_cells() as u32).collect();
        perm.sort_unstable_by_key(|&c| (codes[c as usize], c));
        self.reorder_cells(&perm);
        perm
    }

    /// Puts old cell `perm[i]` (with its tag) at position `i`: the cell order alone
    /// changes, vertices and tagged facets stay as they are. Lets a caller apply an order
    /// of its own, such as a GPU kernel's tiling of the cells.
    ///
    /// # Panics
    /// If `perm` is not a permutation of the cells.
    pub fn reorder_cells(&mut self, perm: &[u32]) {
        let n = self.num_cells();
        let mut seen = vec![false; n];
        assert!(
            perm.len() == n
                && perm
                    .iter()
                    .all(|&c| (c as usize) < n && !std::mem::replace(&mut seen[c as usize], true)),
            "a cell order must be a permutation of the {n} cells"
        );
        let mut cells = Vec::with_capacity(self.cells().len());
        let mut tags = Vec::with_capacity(self.num_cells());
        for &old in perm {
            cells.extend_from_slice(self.cell(old as usize));
            tags.push(self.cell_tags()[old as usize]);
        }
        let coords = self.coords().to_vec();
        let facets = self.facets().clone();
        self.replace_parts(coords, cells, tags, facets);
    }

    /// Largest spread of vertex indices within one cell (max minus min index), the
    /// bandwidth of any matrix coupling the vertices of a cell.
    pub fn vertex_bandwidth(&self) -> usize {
        self.cells()
            .chunks_exact(self.cell_type().num_vertices())
            .map(|cell| {
                let max = cell.iter().copied().max().unwrap_or(0);
                let min = cell.iter().copied().min().unwrap_or(0);
                (max - min) as usize
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate_box, BoxSpec, CellType};
    use rand_core::{Rng, SeedableRng};
    use rand_pcg::Pcg64;

    /// A uniformly random permutation (Fisher–Yates).
    fn shuffle(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = Pcg64::seed_from_u64(seed);
        let mut p: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            p.swap(i, j);
        }
        p
    }

    /// Geometry that renumbering must not change.
    fn fingerprint(m: &Mesh) -> (f64, usize, Vec<i32>, Vec<Vec<[u64; 3]>>) {
        // cells as sorted lists of vertex coordinates (bit patterns), sorted
        let mut cells: Vec<Vec<[u64; 3]>> = (0..m.num_cells())
            .map(|c| {
                let mut pts: Vec<[u64; 3]> = m
                    .cell(c)
                    .iter()
                    .map(|&v| {
                        let x = m.vertex(v as usize);
                        std::array::from_fn(|a| x.get(a).map_or(0, |y| y.to_bits()))
                    })
                    .collect();
                pts.sort_unstable();
                pts
            })
            .collect();
        cells.sort_unstable();
        let mut tagged: Vec<i32> = m
            .locate_tagged_facets()
            .unwrap()
            .iter()
            .map(|t| t.2)
            .collect();
        tagged.sort_unstable();
        (m.total_measure(), m.boundary_facets().len(), tagged, cells)
    }

    #[test]
    fn rcm_recovers_a_small_bandwidth_from_a_shuffle() {
        for (ct, n) in [
            (CellType::Quadrilateral, vec![30, 20]),
            (CellType::Triangle, vec![25, 25]),
            (CellType::Hexahedron, vec![10, 8, 12]),
            (CellType::Tetrahedron, vec![8, 8, 8]),
        ] {
            let grid = generate_box(&BoxSpec::unit(ct, &n)).unwrap();
            let natural = grid.vertex_bandwidth();
            let mut m = grid.clone();
            let p = shuffle(m.num_vertices(), 42);
            permute_vertices(&mut m, &p);
            let shuffled = m.vertex_bandwidth();
            let before = fingerprint(&m);
            let new_of_old = m.renumber_vertices_rcm();
            let after_rcm = m.vertex_bandwidth();
            eprintln!("{ct} {n:?}: natural {natural}, shuffled {shuffled}, rcm {after_rcm}");
            assert!(shuffled > 4 * natural);
            // RCM comes close to the lexicographic numbering. On 3-D grids its level sets
            // from a corner are max-norm shells, up to about twice a grid plane, so it
            // lands near 2x there; in 2-D it is within a few percent.
            let factor = if ct.dim() == 2 { 1.5 } else { 2.5 };
            assert!(
                after_rcm as f64 <= factor * natural as f64,
                "{ct}: {after_rcm} vs {natural}"
            );
            assert!(after_rcm * 4 < shuffled);
            // a permutation
            let mut sorted = new_of_old.clone();
            sorted.sort_unstable();
            assert!(sorted.iter().enumerate().all(|(i, &v)| v as usize == i));
            // geometry, boundary and tags unchanged
            let after = fingerprint(&m);
            assert_eq!(before.0, after.0);
            assert_eq!(
                (&before.1, &before.2, &before.3),
                (&after.1, &after.2, &after.3)
            );
            m.validate().unwrap();
        }
    }

    #[test]
    fn rcm_handles_disconnected_meshes_and_isolated_vertices() {
        // two separate quads and an unused vertex in between
        let coords = vec![
            10.0, 0.0, 11.0, 0.0, 10.0, 1.0, 11.0, 1.0, // quad B (vertices 0..4)
            5.0, 5.0, // isolated vertex 4
            0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, // quad A (vertices 5..9)
        ];
        let mut m = Mesh::new(
            CellType::Quadrilateral,
            coords,
            vec![5, 6, 7, 8, 0, 1, 2, 3],
        )
        .unwrap();
        let p = m.renumber_vertices_rcm();
        assert_eq!(p.len(), 9);
        // each quad occupies a contiguous block of 4 indices
        assert_eq!(m.vertex_bandwidth(), 3);
        assert_eq!(m.vertex(p[4] as usize), &[5.0, 5.0]);
        m.validate().unwrap();
        assert_eq!(m.total_measure(), 2.0);
    }

    #[test]
    fn morton_sort_groups_aligned_blocks_and_keeps_tags() {
        // 16 x 16 quads, cells shuffled, one tagged differently per cell
        let grid = generate_box(&BoxSpec::unit(CellType::Quadrilateral, &[16, 16])).unwrap();
        let n = grid.num_cells();
        let order = shuffle(n, 7);
        let mut cells = Vec::new();
        for &c in &order {
            cells.extend_from_slice(grid.cell(c as usize));
        }
        let tags: Vec<i32> = order.iter().map(|&c| c as i32 + 100).collect();
        let mut m = Mesh::new(CellType::Quadrilateral, grid.coords().to_vec(), cells)
            .unwrap()
            .with_cell_tags(tags)
            .with_facets(grid.facets().clone())
            .unwrap();
        let before_cells: Vec<Vec<u32>> = (0..n).map(|c| m.cell(c).to_vec()).collect();
        let before_tags = m.cell_tags().to_vec();
        let before = fingerprint(&m);
        let perm = m.sort_cells_morton();
        // new cell i is old cell perm[i], with its tag
        for (i, &old) in perm.iter().enumerate() {
            assert_eq!(m.cell(i), &before_cells[old as usize][..]);
            assert_eq!(m.cell_tags()[i], before_tags[old as usize]);
        }
        // Z-order: every run of 4^k consecutive cells fills an aligned 2^k x 2^k block
        let h = 1.0 / 16.0;
        for k in 1..=3u32 {
            let side = 1usize << k;
            for run in (0..n).collect::<Vec<_>>().chunks(side * side) {
                let blocks: std::collections::HashSet<(usize, usize)> = run
                    .iter()
                    .map(|&c| {
                        let x = m.vertex(m.cell(c)[0] as usize);
                        let (i, j) = ((x[0] / h).round() as usize, (x[1] / h).round() as usize);
                        (i / side, j / side)
                    })
                    .collect();
                assert_eq!(
                    blocks.len(),
                    1,
                    "run of {} cells spans several blocks",
                    side * side
                );
            }
        }
        assert_eq!(before, fingerprint(&m));
        assert!(m.color_cells().verify(&m));
    }

    /// A caller's own cell order moves each cell with its tag and leaves the geometry.
    #[test]
    fn cells_reorder_with_their_tags() {
        let base = generate_box(&BoxSpec::unit(CellType::Hexahedron, &[3, 2, 2])).unwrap();
        let n = base.num_cells();
        let base = base.with_cell_tags((0..n as i32).map(|c| 10 + c).collect());
        let perm = shuffle(n, 5);
        let mut m = base.clone();
        m.reorder_cells(&perm);
        for (new, &old) in perm.iter().enumerate() {
            assert_eq!(m.cell(new), base.cell(old as usize));
            assert_eq!(m.cell_tags()[new], base.cell_tags()[old as usize]);
        }
        assert_eq!(fingerprint(&m), fingerprint(&base));
    }

    #[test]
    #[should_panic(expected = "permutation")]
    fn a_cell_order_that_repeats_a_cell_is_refused() {
        let mut m = generate_box(&BoxSpec::unit(CellType::Hexahedron, &[2, 2, 1])).unwrap();
        m.reorder_cells(&[0, 1, 1, 3]);
    }

    #[test]
    fn morton_codes_interleave_bits() {
        assert_eq!(spread2(0b1011), 0b100_0101);
        assert_eq!(spread3(0b1011), 0b1_000_001_001);
        // the top input bits survive
        assert_eq!(spread2(1 << 31), 1 << 62);
        assert_eq!(spread3(1 << 20), 1 << 60);
        assert_eq!(spread3((1 << 21) - 1).count_ones(), 21);
        assert_eq!(spread2(u32::MAX as u64).count_ones(), 32);
    }
}
