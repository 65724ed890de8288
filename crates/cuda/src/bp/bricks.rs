//! Bricks, the lattice kernel's unit of work: consecutive groups of hexahedra that tile a
//! `bx × by × bz` brick, with the space's nodes numbered so that a GPU thread block can own
//! a brick, sum the faces inside it in shared memory, and read offsets only for the brick's
//! boundary. Here the mesh's cells are sorted into bricks ([`sort_grid`], [`sort_blocks`])
//! and a space on the sorted mesh is numbered per brick ([`brick_numbering`]), checked node
//! by node; [`super::BpPlan::sort_cells`] and [`super::BpPlan::number`] call them for a
//! lattice plan.

use ferrofem_base::CellType;
use ferrofem_mesh::Mesh;
use ferrofem_space::{ElemRestriction, H1Space};

/// The most elements a brick takes along one axis: the lattice kernel walks long bricks
/// along z in steps (columns).
pub(crate) const MAX_BRICK_ELEMS: usize = 32;

/// Why cells or a space do not fit the bricks asked for.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BrickError {
    /// The cells cannot be sorted into bricks (grid, block and brick sizes disagree).
    #[error("cannot sort {cells} cells into bricks: {reason}")]
    Cells {
        /// Cells of the mesh.
        cells: usize,
        /// What does not fit.
        reason: String,
    },
    /// The space's elements do not form the bricks asked for.
    #[error("cannot number the space in bricks: {reason}")]
    Space {
        /// What does not fit.
        reason: String,
    },
}

/// The order of a brick's boundary positions (its *slots*), which is also the order in
/// which the owner brick numbers the boundary nodes it is the first to touch.
///
/// A GPU kernel whose threads own the brick's `(i, j)` node columns and step through the
/// `k` levels together reads and adds one level of boundary nodes per warp instruction;
/// how many 32-byte sectors that instruction touches depends on how the columns' nodes lie
/// in the numbering. [`SlotOrder::Ring`] lays each level out so that consecutive columns
/// meet consecutive nodes of each owner.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SlotOrder {
    /// Lexicographic among the boundary positions, `i` fastest, then `j`, then `k`.
    #[default]
    Lexicographic,
    /// Level by level (`k` slowest), the columns in [`BrickLayout::columns`]' ring order:
    /// the four sides of the `(i, j)` rectangle first, walked so that the nodes a brick
    /// shares with a lower neighbour come in that neighbour's own numbering order, then
    /// (on the two `k` faces only) the inner columns, lexicographic.
    Ring,
}

/// The layout of a space numbered per brick ([`super::BpPlan::number`] for a lattice plan).
///
/// Brick nodes are addressed by their position `(i, j, k)` in the brick's
/// `(bx p + 1) × (by p + 1) × (bz p + 1)` node grid; element `le` of a brick
/// (`le = ex + bx (ey + by ez)`) holds positions `(ex p .. ex p + p, …)`. Nodes on the
/// brick's boundary are the *skeleton* and come first in the numbering (by owner brick, in
/// the owner's slot order, [`SlotOrder`]); each brick's interior nodes follow, contiguous
/// per brick in lexicographic order, so that interior node `s` of brick `g` is
/// `skeleton_nodes + g · interior_per_brick + s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BrickLayout {
    /// Elements per brick along x, y and z.
    pub shape: [usize; 3],
    /// Polynomial order.
    pub order: usize,
    /// Nodes on brick boundaries (numbered first).
    pub skeleton_nodes: usize,
    /// The order of the boundary slots.
    pub slots: SlotOrder,
}

impl BrickLayout {
    /// Elements per brick.
    pub fn elems(&self) -> usize {
        self.shape.iter().product()
    }

    /// Nodes per axis of a brick.
    pub fn dims(&self) -> [usize; 3] {
        self.shape.map(|s| s * self.order + 1)
    }

    /// Whether brick position `(i, j, k)` lies on the brick's boundary.
    pub fn on_boundary(&self, pos: [usize; 3]) -> bool {
        let d = self.dims();
        (0..3).any(|a| pos[a] == 0 || pos[a] + 1 == d[a])
    }

    /// The brick's `(i, j)` node columns in the order of [`BrickLayout::slots`]: for
    /// [`SlotOrder::Lexicographic`] `i` fastest; for [`SlotOrder::Ring`] the ring of the
    /// `(i, j)` rectangle first — the side `i = nx − 1` upwards (`j = 1 .. ny − 1`), the
    /// side `j = ny − 1` leftwards (`i = nx − 2 .. 1`), the side `i = 0` upwards
    /// (`j = 1 .. ny − 1`), the side `j = 0` leftwards (`i = nx − 1 .. 1`), then `(0, 0)` —
    /// and then the inner columns, `i` fastest. With bricks ordered so that each brick comes
    /// after its lower neighbours (lexicographic or Morton), a brick owns its first two
    /// sides, and its third and fourth sides are its lower neighbours' first two, in the
    /// same order.
    pub fn columns(&self) -> Vec<[usize; 2]> {
        let [nx, ny, _] = self.dims();
        match self.slots {
            SlotOrder::Lexicographic => {
                (0..ny).flat_map(|j| (0..nx).map(move |i| [i, j])).collect()
            }
            SlotOrder::Ring => {
                let mut c: Vec<[usize; 2]> = (1..ny).map(|j| [nx - 1, j]).collect();
                c.extend((1..nx - 1).rev().map(|i| [i, ny - 1]));
                c.extend((1..ny).map(|j| [0, j]));
                c.extend((1..nx).rev().map(|i| [i, 0]));
                c.push([0, 0]);
                c.extend((1..ny.saturating_sub(1)).flat_map(|j| (1..nx - 1).map(move |i| [i, j])));
                c
            }
        }
    }

    /// The boundary positions in slot order ([`BrickLayout::slots`]): level by level
    /// (`k` slowest), the boundary nodes of each level in [`BrickLayout::columns`] order.
    /// Slot `s` of brick `g` is what the kernel's skeleton offsets `[g][s]` point at.
    pub fn skeleton_positions(&self) -> Vec<[usize; 3]> {
        let d = self.dims();
        let columns = self.columns();
        let mut v = Vec::new();
        for k in 0..d[2] {
            for &[i, j] in &columns {
                if self.on_boundary([i, j, k]) {
                    v.push([i, j, k]);
                }
            }
        }
        v
    }

    /// Interior nodes per brick.
    pub fn interior_per_brick(&self) -> usize {
        self.dims().iter().map(|&n| n.saturating_sub(2)).product()
    }

    /// The index of interior position `pos` among the brick's interior nodes.
    pub fn interior_index(&self, pos: [usize; 3]) -> usize {
        let d = self.dims();
        ((pos[2] - 1) * (d[1] - 2) + (pos[1] - 1)) * (d[0] - 2) + (pos[0] - 1)
    }

    /// Where element `le` of a brick sits in it (in elements).
    pub fn element_of(&self, le: usize) -> [usize; 3] {
        let s = self.shape;
        [le % s[0], (le / s[0]) % s[1], le / (s[0] * s[1])]
    }

    /// The offsets of each brick's boundary nodes, `[brick][slot]` in
    /// [`BrickLayout::skeleton_positions`] order, of `restriction`, a space numbered in
    /// this layout: the compact restriction the lattice kernel reads (the interior nodes'
    /// numbers it computes).
    pub fn skeleton_offsets(&self, restriction: &ElemRestriction) -> Vec<u32> {
        let slots = self.skeleton_positions();
        let epb = self.elems();
        let ngroups = restriction.num_elem() / epb;
        let mut off = Vec::with_capacity(ngroups * slots.len());
        for g in 0..ngroups {
            for &pos in &slots {
                let (le, l) = self.holder(pos);
                off.push(restriction.elem(g * epb + le)[l]);
            }
        }
        off
    }

    /// Every element's offsets (lexicographic local nodes, `[elem][n^3]`) of a space
    /// numbered in this layout, from its brick-boundary offsets `[brick][slot]` (as
    /// [`BrickLayout::skeleton_offsets`] gives them): interior nodes are computed.
    /// Lets a holder of the compact offsets rebuild the full restriction when it needs it,
    /// rather than keep both.
    pub fn element_offsets(&self, brick_offsets: &[u32]) -> Vec<u32> {
        let slots = self.skeleton_positions();
        let d = self.dims();
        let mut slot_of = vec![u32::MAX; d[0] * d[1] * d[2]];
        for (s, q) in slots.iter().enumerate() {
            slot_of[(q[2] * d[1] + q[1]) * d[0] + q[0]] = s as u32;
        }
        let (p, n, epb) = (self.order, self.order + 1, self.elems());
        let ngroups = brick_offsets.len() / slots.len().max(1);
        let nib = self.interior_per_brick();
        let mut off = Vec::with_capacity(ngroups * epb * n * n * n);
        for g in 0..ngroups {
            for le in 0..epb {
                let at = self.element_of(le);
                for k in 0..n {
                    for j in 0..n {
                        for i in 0..n {
                            let pos = [at[0] * p + i, at[1] * p + j, at[2] * p + k];
                            let s = slot_of[(pos[2] * d[1] + pos[1]) * d[0] + pos[0]];
                            off.push(if s != u32::MAX {
                                brick_offsets[g * slots.len() + s as usize]
                            } else {
                                (self.skeleton_nodes + g * nib + self.interior_index(pos)) as u32
                            });
                        }
                    }
                }
            }
        }
        off
    }

    /// An element of the brick holding position `pos`, and the position's local node in
    /// it (lexicographic, `(k n + j) n + i` with `n = p + 1`).
    pub fn holder(&self, pos: [usize; 3]) -> (usize, usize) {
        let p = self.order;
        let n = p + 1;
        let mut e = [0; 3];
        let mut l = [0; 3];
        for a in 0..3 {
            e[a] = (pos[a] / p).min(self.shape[a] - 1);
            l[a] = pos[a] - e[a] * p;
        }
        (
            e[0] + self.shape[0] * (e[1] + self.shape[1] * e[2]),
            (l[2] * n + l[1]) * n + l[0],
        )
    }
}

/// The numbering of `space` per brick of `shape` elements: consecutive groups of that many
/// elements must tile such a brick (element `ex + bx (ey + by ez)` of a group at
/// `(ex, ey, ez)`, as [`sort_grid`] and [`sort_blocks`] order the cells), which is checked
/// node by node. Nodes on brick boundaries come first, numbered by owner brick in slot
/// order ([`BrickLayout::skeleton_positions`]); each brick's interior nodes (including the
/// faces between its elements) follow, contiguous per brick. Returns the layout and
/// `new_of[old]`, the renumbering ([`H1Space::renumbered`] applies it).
pub(crate) fn brick_numbering(
    space: &H1Space,
    shape: [usize; 3],
    slots: SlotOrder,
) -> Result<(BrickLayout, Vec<u32>), BrickError> {
    let fail = |reason: String| BrickError::Space { reason };
    if space.cell_type() != CellType::Hexahedron {
        return Err(fail(format!(
            "bricks need hexahedra, the space is on {}",
            space.cell_type()
        )));
    }
    if shape.iter().any(|&s| s == 0 || s > MAX_BRICK_ELEMS) {
        return Err(fail(format!(
            "brick shape {shape:?}: each axis takes 1 to {MAX_BRICK_ELEMS} elements"
        )));
    }
    let p = space.order();
    let n = p + 1;
    let r = space.restriction();
    let nelem = r.num_elem();
    let mut layout = BrickLayout {
        shape,
        order: p,
        skeleton_nodes: 0,
        slots,
    };
    let epb = layout.elems();
    if nelem % epb != 0 {
        return Err(fail(format!(
            "{nelem} elements are not whole bricks of {epb}"
        )));
    }
    let ngroups = nelem / epb;
    let d = layout.dims();
    let nbn = d[0] * d[1] * d[2];
    let nn = r.num_nodes();
    let linear = |pos: [usize; 3]| (pos[2] * d[1] + pos[1]) * d[0] + pos[0];
    // the first brick touching each node, and whether a second one does
    let mut first = vec![u32::MAX; nn];
    let mut shared = vec![false; nn];
    // per node: the (brick, position) it was last seen at, to find a node twice in a brick
    let mut seen_at = vec![(u32::MAX, 0u32); nn];
    let mut pos_dof = vec![u32::MAX; nbn];
    for g in 0..ngroups {
        pos_dof.fill(u32::MAX);
        for le in 0..epb {
            let e = g * epb + le;
            let en = r.elem(e);
            let at = layout.element_of(le);
            for k in 0..n {
                for j in 0..n {
                    for i in 0..n {
                        let pos = [at[0] * p + i, at[1] * p + j, at[2] * p + k];
                        let lp = linear(pos);
                        let dof = en[(k * n + j) * n + i];
                        if pos_dof[lp] == u32::MAX {
                            pos_dof[lp] = dof;
                        } else if pos_dof[lp] != dof {
                            return Err(fail(format!(
                                "elements {}..{} do not form a {}x{}x{} brick: element {e} \
                                 does not share node {pos:?} with its neighbour (sort the \
                                 cells into bricks first)",
                                g * epb,
                                (g + 1) * epb,
                                shape[0],
                                shape[1],
                                shape[2]
                            )));
                        }
                        let dof = dof as usize;
                        let s = &mut seen_at[dof];
                        if s.0 == g as u32 && s.1 != lp as u32 {
                            return Err(fail(format!(
                                "node {dof} appears twice in brick {g} (a periodic or \
                                 collapsed mesh cannot be bricked)"
                            )));
                        }
                        *s = (g as u32, lp as u32);
                        if first[dof] == u32::MAX {
                            first[dof] = g as u32;
                        } else if first[dof] != g as u32 {
                            shared[dof] = true;
                        }
                    }
                }
            }
        }
    }
    let nib = layout.interior_per_brick();
    let slots = layout.skeleton_positions();
    let interior_positions: Vec<[usize; 3]> = (0..nbn)
        .map(|lp| [lp % d[0], (lp / d[0]) % d[1], lp / (d[0] * d[1])])
        .filter(|&pos| !layout.on_boundary(pos))
        .collect();
    // interior positions: touched by their brick only
    let mut is_interior = vec![false; nn];
    for g in 0..ngroups {
        for &pos in &interior_positions {
            let (le, l) = layout.holder(pos);
            let dof = r.elem(g * epb + le)[l] as usize;
            if shared[dof] {
                return Err(fail(format!(
                    "node {dof} inside brick {g} at {pos:?} is touched by another brick"
                )));
            }
            is_interior[dof] = true;
        }
    }
    let nskel = nn - ngroups * nib;
    let mut new_of = vec![u32::MAX; nn];
    let mut next = 0u32;
    for g in 0..ngroups {
        for &pos in &slots {
            let (le, l) = layout.holder(pos);
            let dof = r.elem(g * epb + le)[l] as usize;
            if new_of[dof] == u32::MAX {
                new_of[dof] = next;
                next += 1;
            }
        }
    }
    // (nodes no element touches stay numbered, after the owned ones)
    for dof in 0..nn {
        if !is_interior[dof] && new_of[dof] == u32::MAX {
            new_of[dof] = next;
            next += 1;
        }
    }
    debug_assert_eq!(next as usize, nskel);
    for g in 0..ngroups {
        for &pos in &interior_positions {
            let (le, l) = layout.holder(pos);
            let dof = r.elem(g * epb + le)[l] as usize;
            new_of[dof] = (nskel + g * nib + layout.interior_index(pos)) as u32;
        }
    }
    layout.skeleton_nodes = nskel;
    Ok((layout, new_of))
}

/// Sorts the cells of a structured `grid[0] × grid[1] × grid[2]` grid, given in
/// lexicographic order (x fastest, as `ferrofem_mesh::generate_box` makes them), into
/// bricks of `brick[0] × brick[1] × brick[2]` cells, each brick's cells consecutive and
/// lexicographic within it. The bricks come in lexicographic order, or with `morton` along
/// the Morton (Z-order) curve of their brick coordinates, so that bricks sharing faces,
/// edges and corners are also close in time (the kernel that adds the nodes on brick
/// boundaries then finds them still in cache more often). Cell tags move with their
/// cells. Returns the new order: new cell `i` is old cell `perm[i]`.
pub(crate) fn sort_grid(
    mesh: &mut Mesh,
    grid: [usize; 3],
    brick: [usize; 3],
    morton: bool,
) -> Result<Vec<u32>, BrickError> {
    let cells = mesh.num_cells();
    if grid.iter().product::<usize>() != cells {
        return Err(BrickError::Cells {
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
    mesh.reorder_cells(&perm);
    Ok(perm)
}

/// Sorts the cells of every consecutive group of `block[0] × block[1] × block[2]` cells,
/// each group a structured block given lexicographically (as `Mesh::refined` leaves each
/// parent's children), into bricks of `brick[0] × brick[1] × brick[2]` cells, the bricks
/// of a block lexicographic; the groups keep their order. So a refined file mesh serves
/// the lattice kernel like a generated box. Returns the new order: new cell `i` is old
/// cell `perm[i]`.
pub(crate) fn sort_blocks(
    mesh: &mut Mesh,
    block: [usize; 3],
    brick: [usize; 3],
) -> Result<Vec<u32>, BrickError> {
    let cells = mesh.num_cells();
    let per: usize = block.iter().product();
    if per == 0 || cells % per != 0 {
        return Err(BrickError::Cells {
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
    mesh.reorder_cells(&perm);
    Ok(perm)
}

/// The order that sorts a structured `grid` of cells, lexicographic, into bricks of
/// `brick` cells (see [`sort_grid`]): new cell `i` of the grid is old cell `perm[i]`.
/// `cells` (the mesh's) only names the mesh in errors.
fn brick_permutation(
    cells: usize,
    grid: [usize; 3],
    brick: [usize; 3],
    morton: bool,
) -> Result<Vec<u32>, BrickError> {
    if let Some(a) = (0..3).find(|&a| brick[a] == 0 || grid[a] % brick[a] != 0) {
        return Err(BrickError::Cells {
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
        bricks.sort_by_key(|&b| morton_code(b));
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

/// The Morton (Z-order) code of brick coordinates `b`: their low 21 bits interleaved, bit
/// `i` of axis `a` at bit `3 i + a`.
fn morton_code(b: [usize; 3]) -> u64 {
    (0..21)
        .flat_map(|i| (0..3).map(move |a| (a, i)))
        .fold(0, |code, (a, i)| {
            code | ((b[a] as u64 >> i) & 1) << (3 * i + a)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bp::layout::CellArrangement;
    use crate::bp::plan::{BpPlan, LatticePlan};
    use ferrofem_mesh::{generate_box, read_gmsh, BoxSpec};

    fn boxmesh(spec: &str) -> Mesh {
        generate_box(&BoxSpec::parse(spec).unwrap()).unwrap()
    }

    fn gmsh(name: &str) -> Mesh {
        let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/data/gmsh")
            .join(format!("{name}_v41_binary.msh"));
        read_gmsh(&path).unwrap()
    }

    /// `s` numbered per brick of `shape` with `slots`: the renumbered space, its layout
    /// and the renumbering.
    fn bricked(
        s: &H1Space,
        shape: [usize; 3],
        slots: SlotOrder,
    ) -> Result<(H1Space, BrickLayout, Vec<u32>), BrickError> {
        brick_numbering(s, shape, slots).map(|(l, new_of)| (s.renumbered(&new_of), l, new_of))
    }

    /// `t` is `s` renumbered by `new_of`: every element slot holds the renumbered node, at
    /// the same place.
    fn assert_renumbered(s: &H1Space, t: &H1Space, new_of: &[u32]) {
        for (o, &nw) in s
            .restriction()
            .offsets()
            .iter()
            .zip(t.restriction().offsets())
        {
            assert_eq!(new_of[*o as usize], nw);
            assert_eq!(s.node_coord(*o as usize), t.node_coord(nw as usize));
        }
    }

    #[test]
    fn cells_sorted_into_bricks_are_consecutive_bricks() {
        let grid = [4, 2, 6];
        let mut m = generate_box(&BoxSpec::unit(CellType::Hexahedron, &grid)).unwrap();
        let before = m.clone();
        let perm = sort_grid(&mut m, grid, [2, 2, 2], false).unwrap();
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
        assert!(matches!(
            sort_grid(&mut m.clone(), grid, [2, 2, 4], false),
            Err(BrickError::Cells { .. })
        ));
        assert!(matches!(
            sort_grid(&mut m.clone(), [4, 2, 5], [1, 1, 1], false),
            Err(BrickError::Cells { .. })
        ));
    }

    /// Bricks along the Morton curve: the same bricks as the lexicographic sort, each
    /// consecutive and lexicographic inside, in the order of their interleaved coordinates.
    #[test]
    fn bricks_in_morton_order_are_the_same_bricks_reordered() {
        let grid = [8, 4, 4];
        let brick = [2, 2, 2];
        let base = generate_box(&BoxSpec::unit(CellType::Hexahedron, &grid)).unwrap();
        let lex = sort_grid(&mut base.clone(), grid, brick, false).unwrap();
        let mut m = base.clone();
        let morton = sort_grid(&mut m, grid, brick, true).unwrap();
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
    fn morton_codes_interleave_bits() {
        assert_eq!(morton_code([0b1011, 0, 0]), 0b1_000_001_001);
        assert_eq!(morton_code([1, 1, 1]), 0b111);
        assert_eq!(morton_code([0, 0, 1 << 20]), 1 << 62);
        assert_eq!(morton_code([(1 << 21) - 1; 3]), (1 << 63) - 1);
    }

    #[test]
    fn refined_children_sort_into_bricks_per_parent() {
        let coarse = boxmesh("hex:2x1x1");
        let mut fine = coarse.refined(1).expect("refines");
        let before: Vec<Vec<u32>> = (0..fine.num_cells())
            .map(|c| fine.cell(c).to_vec())
            .collect();
        let perm = sort_blocks(&mut fine, [2, 2, 2], [2, 1, 1]).expect("bricks tile the blocks");
        // lexicographic 2x2x2 children, bricks of 2x1x1 in lexicographic order: the same order
        assert_eq!(perm, (0..16).collect::<Vec<u32>>());
        let perm = sort_blocks(&mut fine, [2, 2, 2], [1, 2, 2]).expect("bricks tile the blocks");
        assert_eq!(&perm[..8], &[0, 2, 4, 6, 1, 3, 5, 7]);
        assert_eq!(&perm[8..], &[8, 10, 12, 14, 9, 11, 13, 15]);
        for (new, &old) in perm.iter().enumerate() {
            assert_eq!(fine.cell(new), &before[old as usize][..]);
        }
        assert!(matches!(
            sort_blocks(&mut fine, [2, 2, 2], [4, 1, 1]),
            Err(BrickError::Cells { .. })
        ));
        assert!(matches!(
            sort_blocks(&mut fine, [3, 1, 1], [1, 1, 1]),
            Err(BrickError::Cells { .. })
        ));
    }

    #[test]
    fn brick_numbering_is_a_consistent_permutation_with_computed_interiors() {
        // (and columns longer than 8 elements along z, as the lattice kernel walks in steps)
        let cases = [
            (
                [4, 2, 6],
                vec![[1, 1, 1], [2, 1, 1], [2, 2, 1], [1, 2, 2], [2, 2, 2]],
            ),
            ([2, 2, 12], vec![[2, 2, 12], [1, 2, 12]]),
        ];
        for (grid, shapes) in cases {
            let base = boxmesh(&format!(
                "hex:{}x{}x{},perturb=0.2,seed=4",
                grid[0], grid[1], grid[2]
            ));
            for shape in shapes {
                let mut mesh = base.clone();
                sort_grid(&mut mesh, grid, shape, false).unwrap();
                for (p, slot_order) in (1..=4)
                    .flat_map(|p| [SlotOrder::Lexicographic, SlotOrder::Ring].map(move |o| (p, o)))
                {
                    let s = H1Space::new(&mesh, p, 1).unwrap();
                    let (t, l, new_of) = bricked(&s, shape, slot_order).unwrap();
                    assert_eq!((l.shape, l.order, l.slots), (shape, p, slot_order));
                    let mut seen = vec![false; new_of.len()];
                    new_of.iter().for_each(|&n| seen[n as usize] = true);
                    assert!(
                        seen.iter().all(|&b| b),
                        "{shape:?} p={p}: not a permutation"
                    );
                    assert_renumbered(&s, &t, &new_of);
                    // every element node sits where the layout says: interiors computed,
                    // boundary nodes below the skeleton count and equal to the skeleton
                    // offsets
                    let (epb, nib, nskel) = (l.elems(), l.interior_per_brick(), l.skeleton_nodes);
                    let ngroups = mesh.num_cells() / epb;
                    assert_eq!(nskel + ngroups * nib, t.num_nodes());
                    let slots = l.skeleton_positions();
                    let off = l.skeleton_offsets(t.restriction());
                    assert_eq!(off.len(), ngroups * slots.len());
                    // and the full restriction rebuilt from them
                    assert_eq!(l.element_offsets(&off), t.restriction().offsets());
                    let n = p + 1;
                    for g in 0..ngroups {
                        for le in 0..epb {
                            let at = l.element_of(le);
                            let en = t.restriction().elem(g * epb + le);
                            for k in 0..n {
                                for j in 0..n {
                                    for i in 0..n {
                                        let pos = [at[0] * p + i, at[1] * p + j, at[2] * p + k];
                                        let dof = en[(k * n + j) * n + i] as usize;
                                        if l.on_boundary(pos) {
                                            let sl = slots.iter().position(|&q| q == pos).unwrap();
                                            assert_eq!(off[g * slots.len() + sl] as usize, dof);
                                            assert!(dof < nskel);
                                        } else {
                                            assert_eq!(
                                                dof,
                                                nskel + g * nib + l.interior_index(pos)
                                            );
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn ring_slots_put_each_owners_boundary_run_under_consecutive_columns() {
        // A brick inside a Morton-ordered box numbered in ring slot order: at every level,
        // the columns of each of its sides meet consecutive numbers of the side's owner,
        // which is what lets a warp's loads and atomic adds of the brick boundary fall in
        // few sectors.
        let grid = [8, 8, 4];
        for (shape, p) in [([2, 2, 1], 3), ([4, 4, 2], 2), ([2, 1, 1], 2)] {
            let mut mesh = boxmesh("hex:8x8x4,perturb=0.1,seed=3");
            sort_grid(&mut mesh, grid, shape, true).unwrap();
            let s = H1Space::new(&mesh, p, 1).unwrap();
            let (t, l, _) = bricked(&s, shape, SlotOrder::Ring).unwrap();
            let [nx, ny, nz] = l.dims();
            let cols = l.columns();
            // a permutation of the columns, the ring first
            let mut seen = vec![false; nx * ny];
            cols.iter().for_each(|c| seen[c[1] * nx + c[0]] = true);
            assert!(seen.iter().all(|&b| b) && cols.len() == nx * ny);
            let nring = 2 * (nx + ny) - 4;
            assert!(cols[..nring].iter().all(|c| l.on_boundary([c[0], c[1], 1])));
            assert!(cols[nring..]
                .iter()
                .all(|c| !l.on_boundary([c[0], c[1], 1])));
            // the brick at (1, 1, 1) in bricks: all its neighbours exist
            let nb = [grid[0] / shape[0], grid[1] / shape[1], grid[2] / shape[2]];
            let epb = l.elems();
            let first_cell = (0..mesh.num_cells())
                .step_by(epb)
                .find(|&c| {
                    let x = mesh.cell(c)[0] as usize;
                    let v = mesh.coords()[x * 3..x * 3 + 3].to_vec();
                    let h = [1.0 / nb[0] as f64, 1.0 / nb[1] as f64, 1.0 / nb[2] as f64];
                    (0..3).all(|a| ((v[a] / h[a]) - 1.0).abs() < 0.3)
                })
                .expect("the brick at (1, 1, 1)");
            let g = first_cell / epb;
            let off = l.skeleton_offsets(t.restriction());
            let slots = l.skeleton_positions();
            let dof = |pos: [usize; 3]| {
                off[g * slots.len() + slots.iter().position(|&q| q == pos).unwrap()] as i64
            };
            // the sides in ring order: x = nx - 1 and y = ny - 1 (own, one run), x = 0, y = 0
            let sides = [
                (0, (ny - 1) + (nx - 2)),
                (ny - 1 + nx - 2, ny - 1),
                (2 * (ny - 1) + nx - 2, nx - 1),
            ];
            for k in 1..nz - 1 {
                for &(start, len) in &sides {
                    let run: Vec<i64> = cols[start..start + len]
                        .iter()
                        .map(|c| dof([c[0], c[1], k]))
                        .collect();
                    assert!(
                        run.windows(2).all(|w| w[1] == w[0] + 1),
                        "{shape:?} p={p} level {k}: side at rank {start} is not one run: {run:?}"
                    );
                }
            }
            // and on the bottom face, the own sides and the inner columns are the lower
            // brick's one run
            let run: Vec<i64> = cols[..ny - 1 + nx - 2]
                .iter()
                .chain(&cols[nring..])
                .map(|c| dof([c[0], c[1], 0]))
                .collect();
            assert!(
                run.windows(2).all(|w| w[1] == w[0] + 1),
                "{shape:?} p={p}: bottom face not one run"
            );
        }
    }

    #[test]
    fn brick_numbering_refuses_elements_that_are_not_bricks() {
        // the generator's lexicographic order: consecutive pairs are x-neighbours, but
        // groups of four are a row, not a 2x2 brick
        let lex = SlotOrder::Lexicographic;
        let mesh = boxmesh("hex:4x2x2");
        let s = H1Space::new(&mesh, 2, 1).unwrap();
        assert!(bricked(&s, [2, 1, 1], lex).is_ok());
        let e = bricked(&s, [2, 2, 1], lex).unwrap_err().to_string();
        assert!(e.contains("do not form"), "{e}");
        // not whole bricks, and shapes out of range
        let odd = H1Space::new(&boxmesh("hex:3x2x2"), 2, 1).unwrap();
        assert!(bricked(&odd, [2, 1, 1], lex).is_err());
        assert!(bricked(&s, [0, 1, 1], lex).is_err());
        let e = bricked(&s, [1, 1, MAX_BRICK_ELEMS + 1], lex)
            .unwrap_err()
            .to_string();
        assert!(e.contains("1 to 32"), "{e}");
        // not hexahedra
        let tets = H1Space::new(&boxmesh("tet:2x2x2"), 1, 1).unwrap();
        assert!(matches!(
            bricked(&tets, [2, 1, 1], lex),
            Err(BrickError::Space { .. })
        ));
    }

    /// A file mesh whose cells share no axes (Gmsh's all-hexahedra subdivision of a plate
    /// with a hole) is not bricks, but refined uniformly and its children sorted per parent
    /// it is: the brick numbering's own checks pass, for every shape that divides the
    /// children's block, and the renumbered restriction holds the same nodes at the same
    /// places.
    #[test]
    fn a_refined_file_mesh_numbers_per_brick() {
        let coarse = gmsh("plate_hole_hex");
        let s = H1Space::new(&coarse, 2, 1).unwrap();
        assert!(
            bricked(&s, [2, 1, 1], SlotOrder::Lexicographic).is_err(),
            "unrefined cells are not bricks"
        );
        let fine = coarse.refined(1).unwrap();
        for shape in [[2, 2, 1], [2, 2, 2], [1, 2, 2], [2, 1, 1]] {
            let mut mesh = fine.clone();
            sort_blocks(&mut mesh, [2, 2, 2], shape).unwrap();
            for p in [1, 3] {
                let s = H1Space::new(&mesh, p, 1).unwrap();
                for slots in [SlotOrder::Lexicographic, SlotOrder::Ring] {
                    let (t, _, new_of) = bricked(&s, shape, slots).unwrap();
                    assert_eq!(t.num_dofs(), s.num_dofs());
                    assert_renumbered(&s, &t, &new_of);
                }
            }
        }
    }

    /// A lattice plan sorts a grid or refined blocks into its bricks and numbers the space
    /// per brick in ring slot order, the layout carried with the space; cells with no known
    /// structure, or a space on unsorted cells, are refused.
    #[test]
    fn a_lattice_plan_sorts_and_numbers_its_bricks() {
        let brick = [2, 2, 1];
        let plan = BpPlan::Lattice(LatticePlan {
            brick,
            min_blocks: None,
            rolled_phases: 0,
            weights_in_shared: false,
            lookahead: 0,
        });
        let grid = [4, 4, 2];
        assert!(plan.runs_on(CellArrangement::Grid(grid)));
        assert!(plan.runs_on(CellArrangement::Blocks(2)));
        assert!(!plan.runs_on(CellArrangement::Grid([3, 4, 2])));
        assert!(!plan.runs_on(CellArrangement::Unstructured));
        assert!(BpPlan::Slice2d.runs_on(CellArrangement::Unstructured));
        let base = boxmesh("hex:4x4x2,perturb=0.1,seed=2");
        let natural = H1Space::new(&base, 3, 1).unwrap();
        assert!(
            plan.number(&natural).is_err(),
            "unsorted cells are not bricks"
        );
        let mut mesh = base.clone();
        assert!(plan
            .sort_cells(&mut mesh.clone(), CellArrangement::Unstructured)
            .is_err());
        plan.sort_cells(&mut mesh, CellArrangement::Grid(grid))
            .unwrap();
        let mut want = base.clone();
        sort_grid(&mut want, grid, brick, true).unwrap();
        assert_eq!(mesh.cells(), want.cells());
        let natural = H1Space::new(&mesh, 3, 1).unwrap();
        let k = plan.number(&natural).unwrap();
        let l = k.bricks().expect("a lattice plan's space has bricks");
        assert_eq!((l.shape, l.order, l.slots), (brick, 3, SlotOrder::Ring));
        let (_, new_of) = brick_numbering(&natural, brick, SlotOrder::Ring).unwrap();
        assert_renumbered(&natural, k.space(), &new_of);
        assert_eq!(
            l.element_offsets(&l.skeleton_offsets(k.space().restriction())),
            k.space().restriction().offsets()
        );
        // other plans leave the cells and number without bricks
        let mut same = mesh.clone();
        BpPlan::Slice2d
            .sort_cells(&mut same, CellArrangement::Unstructured)
            .unwrap();
        assert_eq!(same.cells(), mesh.cells());
        assert!(BpPlan::Slice2d.number(&natural).unwrap().bricks().is_none());
    }
}
