//! Cell colouring for race-free parallel scatter-add: cells of one colour share no vertex,
//! hence no degree of freedom of any polynomial order, so a colour can be assembled or
//! applied by many threads at once without atomics.

use crate::Mesh;

/// A colouring of the cells of a mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Coloring {
    /// The colour of every cell.
    pub colors: Vec<u32>,
    /// Number of colours.
    pub num_colors: usize,
    /// Start of each colour in `cells` (`num_colors + 1` entries).
    pub offsets: Vec<u32>,
    /// Cells grouped by colour, increasing within each colour.
    pub cells: Vec<u32>,
}

impl Coloring {
    /// The cells of colour `k`.
    pub fn color(&self, k: usize) -> &[u32] {
        &self.cells[self.offsets[k] as usize..self.offsets[k + 1] as usize]
    }

    /// Number of cells of each colour.
    pub fn sizes(&self) -> Vec<usize> {
        self.offsets
            .windows(2)
            .map(|w| (w[1] - w[0]) as usize)
            .collect()
    }

    /// Largest colour size over smallest (1 for a perfectly balanced colouring and for
    /// no colours at all, infinite when a colour is empty).
    pub fn imbalance(&self) -> f64 {
        let sizes = self.sizes();
        if sizes.is_empty() {
            return 1.0;
        }
        let max = sizes.iter().copied().max().unwrap_or(0);
        let min = sizes.iter().copied().min().unwrap_or(0);
        max as f64 / min as f64
    }

    /// Checks that this is a valid colouring of `mesh`: one colour per cell, below
    /// `num_colors`, the grouped lists consistent with `colors`, and no two cells of one
    /// colour sharing a vertex. Linear in the mesh size.
    pub fn verify(&self, mesh: &Mesh) -> bool {
        let n = mesh.num_cells();
        if self.colors.len() != n
            || self.cells.len() != n
            || self.offsets.len() != self.num_colors + 1
            || self.offsets.first() != Some(&0)
            || self.offsets.last().map(|&o| o as usize) != Some(n)
            || self.offsets.windows(2).any(|w| w[0] > w[1])
            || self.colors.iter().any(|&c| c as usize >= self.num_colors)
        {
            return false;
        }
        let mut seen = vec![false; n];
        for k in 0..self.num_colors {
            for &c in self.color(k) {
                let c = c as usize;
                if c >= n || seen[c] || self.colors[c] as usize != k {
                    return false;
                }
                seen[c] = true;
            }
        }
        // no vertex may touch two cells of one colour
        let (off, adj) = mesh.vertex_to_cells();
        let mut stamp = vec![u32::MAX; self.num_colors];
        for v in 0..mesh.num_vertices() {
            for &c in &adj[off[v] as usize..off[v + 1] as usize] {
                let k = self.colors[c as usize] as usize;
                if stamp[k] == v as u32 {
                    return false;
                }
                stamp[k] = v as u32;
            }
        }
        true
    }
}

/// Colour bookkeeping shared by the greedy pass and the rebalancing passes.
struct Colorer<'m> {
    mesh: &'m Mesh,
    /// Vertex-to-cell adjacency (CSR).
    off: Vec<u32>,
    adj: Vec<u32>,
    colors: Vec<u32>,
    sizes: Vec<u32>,
    /// `forbidden[k] == visit` marks colour `k` as used around the cell being visited.
    forbidden: Vec<u64>,
    visit: u64,
}

impl Colorer<'_> {
    /// Marks the colours of all coloured cells sharing a vertex with `c` (including `c`
    /// itself) as forbidden for this visit.
    fn mark_neighbours(&mut self, c: usize) {
        self.visit += 1;
        for &v in self.mesh.cell(c) {
            let v = v as usize;
            for &o in &self.adj[self.off[v] as usize..self.off[v + 1] as usize] {
                let k = self.colors[o as usize];
                if k != u32::MAX {
                    self.forbidden[k as usize] = self.visit;
                }
            }
        }
    }

    /// The least used colour that is not forbidden in the current visit.
    fn least_used_admissible(&self) -> Option<usize> {
        (0..self.sizes.len())
            .filter(|&k| self.forbidden[k] != self.visit)
            .min_by_key(|&k| (self.sizes[k], k))
    }

    fn recolor(&mut self, c: usize, k: usize) {
        let old = self.colors[c];
        if old != u32::MAX {
            self.sizes[old as usize] -= 1;
        }
        self.colors[c] = k as u32;
        self.sizes[k] += 1;
    }

    /// Greedy pass in cell order.
    fn greedy(&mut self) {
        for c in 0..self.mesh.num_cells() {
            self.mark_neighbours(c);
            let k = self.least_used_admissible().unwrap_or_else(|| {
                self.sizes.push(0);
                self.forbidden.push(0);
                self.sizes.len() - 1
            });
            self.recolor(c, k);
        }
    }

    /// Tries to empty the smallest colour by moving each of its cells to an admissible
    /// other colour; drops the colour (renumbering the last one into its place) when that
    /// succeeds. Returns whether a colour was removed.
    fn eliminate_smallest(&mut self) -> bool {
        let Some(small) = (0..self.sizes.len()).min_by_key(|&k| (self.sizes[k], k)) else {
            return false;
        };
        let members: Vec<usize> = (0..self.colors.len())
            .filter(|&c| self.colors[c] as usize == small)
            .collect();
        let mut undo = Vec::new();
        for &c in &members {
            self.mark_neighbours(c);
            match self.least_used_admissible() {
                Some(k) => {
                    undo.push(c);
                    self.recolor(c, k);
                }
                None => {
                    // give up: restore the moved cells (they stay valid in `small`, which
                    // no neighbour besides them had)
                    for &u in &undo {
                        self.recolor(u, small);
                    }
                    return false;
                }
            }
        }
        let last = self.sizes.len() - 1;
        if small != last {
            for k in self.colors.iter_mut() {
                if *k as usize == last {
                    *k = small as u32;
                }
            }
            self.sizes[small] = self.sizes[last];
        }
        self.sizes.pop();
        self.forbidden.pop();
        true
    }

    /// Moves cells out of colours above the mean size into admissible smaller colours.
    /// Returns how many cells moved.
    fn rebalance_pass(&mut self) -> usize {
        let n = self.mesh.num_cells();
        let target = n.div_ceil(self.sizes.len().max(1)) as u32;
        let mut moved = 0;
        for c in 0..n {
            let k = self.colors[c] as usize;
            if self.sizes[k] <= target {
                continue;
            }
            self.mark_neighbours(c);
            if let Some(j) = self.least_used_admissible() {
                if self.sizes[j] < target && self.sizes[j] + 1 < self.sizes[k] {
                    self.recolor(c, j);
                    moved += 1;
                }
            }
        }
        moved
    }
}

impl Mesh {
    /// Colours the cells so that no two cells of one colour share a vertex.
    ///
    /// Greedy in cell order, each cell taking the least used of the existing colours that
    /// no neighbour already has (a new colour only when none is admissible); then the
    /// smallest colour is dissolved into the others where every one of its cells has an
    /// admissible alternative, and a few passes move cells from colours above the mean
    /// size to admissible smaller ones, so the classes end up nearly equal. Each pass is
    /// linear in the mesh size times the number of colours.
    pub fn color_cells(&self) -> Coloring {
        const REBALANCE_PASSES: usize = 4;
        let n = self.num_cells();
        let (off, adj) = self.vertex_to_cells();
        let mut col = Colorer {
            mesh: self,
            off,
            adj,
            colors: vec![u32::MAX; n],
            sizes: Vec::new(),
            forbidden: Vec::new(),
            visit: 0,
        };
        col.greedy();
        while col.eliminate_smallest() {}
        for _ in 0..REBALANCE_PASSES {
            if col.rebalance_pass() == 0 {
                break;
            }
        }
        // group cells by colour (counting sort keeps them increasing)
        let num_colors = col.sizes.len();
        let mut offsets = vec![0u32; num_colors + 1];
        for k in 0..num_colors {
            offsets[k + 1] = offsets[k] + col.sizes[k];
        }
        let mut next = offsets.clone();
        let mut cells = vec![0u32; n];
        for (c, &k) in col.colors.iter().enumerate() {
            cells[next[k as usize] as usize] = c as u32;
            next[k as usize] += 1;
        }
        Coloring {
            colors: col.colors,
            num_colors,
            offsets,
            cells,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{generate_box, BoxSpec, CellType};

    fn colored(spec: &str) -> (Mesh, Coloring) {
        let m = generate_box(&BoxSpec::parse(spec).unwrap()).unwrap();
        let col = m.color_cells();
        assert!(col.verify(&m), "{spec}: invalid colouring");
        (m, col)
    }

    #[test]
    fn structured_colourings_are_valid_small_and_balanced() {
        // (spec, lower bound on colours = cells around an interior vertex, upper bound)
        for (spec, at_least, at_most, max_imbalance) in [
            ("quad:64x64", 4, 4, 1.1),
            ("hex:24x24x24", 8, 8, 1.1),
            ("tri:64x64", 6, 8, 1.2),
            ("tet:16x16x16", 24, 32, 1.5),
            ("hex:16x16x16,perturb=0.3,seed=2", 8, 8, 1.1),
        ] {
            let (_, col) = colored(spec);
            let imbalance = col.imbalance();
            eprintln!(
                "{spec}: {} colours, sizes {:?}, max/min {imbalance:.3}",
                col.num_colors,
                col.sizes()
            );
            assert!(
                col.num_colors >= at_least && col.num_colors <= at_most,
                "{spec}"
            );
            assert!(imbalance <= max_imbalance, "{spec}: imbalance {imbalance}");
        }
    }

    #[test]
    fn shuffled_cell_order_still_balances() {
        use rand_core::{Rng, SeedableRng};
        for spec in [
            "tet:10x10x10,perturb=0.2,seed=1",
            "hex:12x12x12",
            "tri:50x50",
        ] {
            let grid = generate_box(&BoxSpec::parse(spec).unwrap()).unwrap();
            let n = grid.num_cells();
            let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
            let mut order: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                order.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let cells: Vec<u32> = order
                .iter()
                .flat_map(|&c| grid.cell(c).iter().copied())
                .collect();
            let m = Mesh::new(grid.cell_type(), grid.coords().to_vec(), cells).unwrap();
            let col = m.color_cells();
            assert!(col.verify(&m));
            let imbalance = col.imbalance();
            eprintln!(
                "{spec} shuffled: {} colours, max/min {imbalance:.3}",
                col.num_colors
            );
            assert!(imbalance <= 1.5, "{spec}: {imbalance}");
        }
    }

    #[test]
    fn verify_rejects_broken_colourings() {
        let (m, col) = colored("quad:4x4");
        // two neighbours given the same colour
        let mut bad = col.clone();
        let (a, b) = (0usize, 1usize); // cells 0 and 1 share an edge
        let k = bad.colors[a];
        let old = bad.colors[b];
        bad.colors[b] = k;
        assert!(!bad.verify(&m));
        // also regroup so that only the vertex conflict remains
        let mut regrouped = bad.clone();
        let mut lists: Vec<Vec<u32>> = vec![Vec::new(); regrouped.num_colors];
        for (c, &k) in regrouped.colors.iter().enumerate() {
            lists[k as usize].push(c as u32);
        }
        regrouped.offsets = std::iter::once(0)
            .chain(lists.iter().scan(0u32, |s, l| {
                *s += l.len() as u32;
                Some(*s)
            }))
            .collect();
        regrouped.cells = lists.concat();
        assert!(!regrouped.verify(&m));
        assert_ne!(old, k);
        // a colour index out of range
        let mut out_of_range = col.clone();
        out_of_range.colors[3] = col.num_colors as u32;
        assert!(!out_of_range.verify(&m));
        // every cell in its own colour is valid (if wasteful)
        let n = m.num_cells();
        let trivial = Coloring {
            colors: (0..n as u32).collect(),
            num_colors: n,
            offsets: (0..=n as u32).collect(),
            cells: (0..n as u32).collect(),
        };
        assert!(trivial.verify(&m));
    }

    #[test]
    fn disconnected_and_empty_meshes() {
        // two separate triangles can share a colour
        let m = Mesh::new(
            CellType::Triangle,
            vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 5.0, 0.0, 6.0, 0.0, 5.0, 1.0],
            vec![0, 1, 2, 3, 4, 5],
        )
        .unwrap();
        let col = m.color_cells();
        assert!(col.verify(&m));
        assert_eq!(col.num_colors, 1);
        let empty = Mesh::new(CellType::Hexahedron, Vec::new(), Vec::new()).unwrap();
        let col = empty.color_cells();
        assert_eq!(col.num_colors, 0);
        assert_eq!(col.imbalance(), 1.0);
        assert!(col.verify(&empty));
    }
}
