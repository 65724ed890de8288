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

    /// Puts old cell `perm[i]` (with its tag) at position `i`.
    fn reorder_cells(&mut self, perm: &[u32]) {
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

    /// Sorts the cells of a structured `grid[0] × grid[1] × grid[2]` grid, given in
    /// lexicographic order (x fastest, as [`crate::generate_box`] makes them), into bricks
    /// of `brick[0] × brick[1] × brick[2]` cells: the bricks in lexicographic order, each
    /// brick's cells consecutive and lexicographic within it. A GPU kernel can then give a
    /// thread block one brick and sum the faces inside it in shared memory
    /// (`H1Space::bricked` numbers the dofs to match and checks that the bricks are real).
    /// Cell tags move with their cells. Returns the new order: new cell `i` is old cell
    /// `perm[i]`.
    pub fn sort_cells_in_bricks(
        &mut self,
        grid: [usize; 3],
        brick: [usize; 3],
    ) -> Result<Vec<u32>, crate::MeshError> {
        self.sort_cells_in_bricks_ordered(grid, brick, false)
    }

    /// As [`Mesh::sort_cells_in_bricks`], with the bricks along the Morton (Z-order) curve
    /// of their brick coordinates (`morton`) rather than lexicographic, so that bricks that
    /// share faces, edges and corners are also close in the order (a GPU kernel that adds
    /// the nodes on brick boundaries then finds them still in cache more often).
    pub fn sort_cells_in_bricks_ordered(
        &mut self,
        grid: [usize; 3],
        brick: [usize; 3],
        morton: bool,
    ) -> Result<Vec<u32>, crate::MeshError> {
        let cells = self.num_cells();
        if grid.iter().product::<usize>() != cells {
            return Err(crate::MeshError::Bricks {
                cells,
                reason: format!(
                    "a {}x{}x{} grid has {} cells",
                    grid[0],
                    grid[1],
                    grid[2],
                    grid.iter().product::<usize>()
                ),
            });
        }
        let perm = brick_permutation(cells, grid, brick, morton)?;
        self.reorder_cells(&perm);
        Ok(perm)
    }

    /// Sorts the cells of every consecutive group of `block[0] × block[1] × block[2]`
    /// cells, each group a structured block given lexicographically (as
    /// [`Mesh::refined`] leaves each parent's children), into bricks of `brick[0] ×
    /// brick[1] × brick[2]` cells, the bricks of a block lexicographic; the groups keep
    /// their order. So a refined file mesh serves the GPU's brick kernels like a
    /// generated box (`H1Space::bricked` checks that the bricks are real). Returns the new
    /// order: new cell `i` is old cell `perm[i]`.
    pub fn sort_cells_in_bricks_by_block(
        &mut self,
        block: [usize; 3],
        brick: [usize; 3],
    ) -> Result<Vec<u32>, crate::MeshError> {
        let cells = self.num_cells();
        let per: usize = block.iter().product();
        if per == 0 || cells % per != 0 {
            return Err(crate::MeshError::Bricks {
                cells,
                reason: format!(
                    "the cells are not whole blocks of {}x{}x{}",
                    block[0], block[1], block[2]
                ),
            });
        }
        let local = brick_permutation(cells, block, brick, false)?;
        let perm: Vec<u32> = (0..cells / per)
            .flat_map(|g| local.iter().map(move |&c| (g * per) as u32 + c))
            .collect();
        self.reorder_cells(&perm);
        Ok(perm)
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

/// The order that sorts a structured `grid` of cells, lexicographic, into bricks of
/// `brick` cells (see [`Mesh::sort_cells_in_bricks_ordered`]): new cell `i` of the grid is
/// old cell `perm[i]`. `cells` (the mesh's) only names the mesh in errors.
fn brick_permutation(
    cells: usize,
    grid: [usize; 3],
    brick: [usize; 3],
    morton: bool,
) -> Result<Vec<u32>, crate::MeshError> {
    if let Some(a) = (0..3).find(|&a| brick[a] == 0 || grid[a] % brick[a] != 0) {
        return Err(crate::MeshError::Bricks {
            cells,
            reason: format!(
                "bricks of {}x{}x{} cells do not tile a {}x{}x{} grid (axis {a})",
                brick[0], brick[1], brick[2], grid[0], grid[1], grid[2]
            ),
        });
    }
    let nb = [grid[0] / brick[0], grid[1] / brick[1], grid[2] / brick[2]];
    let mut bricks: Vec<[usize; 3]> = (0..nb[2])
        .flat_map(|bk| (0..nb[1]).flat_map(move |bj| (0..nb[0]).map(move |bi| [bi, bj, bk])))
        .collect();
    if morton {
        bricks.sort_by_key(|b| {
            spread3(b[0] as u64) | spread3(b[1] as u64) << 1 | spread3(b[2] as u64) << 2
        });
    }
    let mut perm = Vec::with_capacity(grid.iter().product());
    for [bi, bj, bk] in bricks {
        for k in 0..brick[2] {
            for j in 0..brick[1] {
                for i in 0..brick[0] {
                    let (x, y, z) = (bi * brick[0] + i, bj * brick[1] + j, bk * brick[2] + k);
                    perm.push(((z * grid[1] + y) * grid[0] + x) as u32);
                }
            }
        }
    }
    Ok(perm)
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

    /// Bricks along the Morton curve: the same bricks as the lexicographic sort, each
    /// consecutive and lexicographic inside, in the order of their interleaved coordinates.
    #[test]
    fn bricks_in_morton_order_are_the_same_bricks_reordered() {
        let grid = [8, 4, 4];
        let brick = [2, 2, 2];
        let base = generate_box(&BoxSpec::unit(CellType::Hexahedron, &grid)).unwrap();
        let lex = base.clone().sort_cells_in_bricks(grid, brick).unwrap();
        let mut m = base.clone();
        let morton = m.sort_cells_in_bricks_ordered(grid, brick, true).unwrap();
        let bricks_of =
            |perm: &[u32]| -> Vec<Vec<u32>> { perm.chunks(8).map(|c| c.to_vec()).collect() };
        let (lb, mb) = (bricks_of(&lex), bricks_of(&morton));
        // brick coordinates of each Morton-ordered brick, from its first cell
        let coords: Vec<[usize; 3]> = mb
            .iter()
            .map(|b| {
                let c = b[0] as usize;
                [(c % 8) / 2, (c / 8 % 4) / 2, c / 32 / 2]
            })
            .collect();
        let want: Vec<[usize; 3]> = vec![
            [0, 0, 0],
            [1, 0, 0],
            [0, 1, 0],
            [1, 1, 0],
            [0, 0, 1],
            [1, 0, 1],
            [0, 1, 1],
            [1, 1, 1],
            [2, 0, 0],
            [3, 0, 0],
            [2, 1, 0],
            [3, 1, 0],
            [2, 0, 1],
            [3, 0, 1],
            [2, 1, 1],
            [3, 1, 1],
        ];
        assert_eq!(coords, want);
        // every Morton brick is one of the lexicographic bricks, cells in the same order
        for b in &mb {
            assert!(lb.contains(b));
        }
        for (new, &old) in morton.iter().enumerate() {
            assert_eq!(m.cell(new), base.cell(old as usize));
        }
    }

    #[test]
    fn cells_sorted_into_bricks_are_consecutive_bricks() {
        let grid = [4, 2, 6];
        let mut m = generate_box(&BoxSpec::unit(CellType::Hexahedron, &grid)).unwrap();
        let before = m.clone();
        let perm = m.sort_cells_in_bricks(grid, [2, 2, 2]).unwrap();
        let mut seen = perm.clone();
        seen.sort_unstable();
        assert_eq!(seen, (0..48).collect::<Vec<u32>>());
        for (new, &old) in perm.iter().enumerate() {
            assert_eq!(m.cell(new), before.cell(old as usize));
        }
        // within each brick of 8, the x-, y- and z-neighbours share the expected vertices
        for g in 0..6 {
            let c = |i: usize, j: usize, k: usize| m.cell(g * 8 + i + 2 * j + 4 * k);
            for j in 0..2 {
                for k in 0..2 {
                    assert_eq!(c(1, j, k)[0], c(0, j, k)[1]);
                    assert_eq!(c(j, 1, k)[0], c(j, 0, k)[2]);
                    assert_eq!(c(j, k, 1)[0], c(j, k, 0)[4]);
                }
            }
        }
        // bricks that do not tile the grid, and a grid that is not the mesh's
        assert!(m.clone().sort_cells_in_bricks(grid, [2, 2, 4]).is_err());
        assert!(m
            .clone()
            .sort_cells_in_bricks([4, 2, 5], [1, 1, 1])
            .is_err());
    }
}
