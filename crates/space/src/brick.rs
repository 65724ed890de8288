//! Brick numbering of a hexahedral space: consecutive groups of elements that tile a
//! `bx × by × bz` brick, numbered so that a GPU thread block can own a brick, sum the faces
//! inside it in shared memory, and read offsets only for the brick's boundary.

use crate::space::H1Space;
use crate::{ElemRestriction, SpaceError};
use ferrofem_base::CellType;

/// The most elements a brick takes along one axis ([`H1Space::bricked`]): GPU kernels that
/// walk a brick in steps (the lattice kernel's columns) use long ones along z.
pub const MAX_BRICK_ELEMS: usize = 32;

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

/// The layout of a space numbered by [`H1Space::bricked`].
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

    /// Every element's offsets (lexicographic local nodes, `[elem][n^3]`) of a space
    /// numbered in this layout, from its brick-boundary offsets `[brick][slot]` (as
    /// [`crate::H1Space::brick_skeleton_offsets`] gives them): interior nodes are computed.
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

/// Renumbers `space` per brick (see [`H1Space::bricked`]); returns the layout and
/// `new_of[old]`.
pub(crate) fn brick_numbering(
    space: &H1Space,
    shape: [usize; 3],
    slots: SlotOrder,
) -> Result<(BrickLayout, Vec<u32>), SpaceError> {
    let fail = |reason: String| SpaceError::NotBricks { reason };
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

/// The brick-skeleton offsets `[brick][slot]` of a bricked space (slots as
/// [`BrickLayout::skeleton_positions`]).
pub(crate) fn brick_skeleton_offsets(r: &ElemRestriction, layout: &BrickLayout) -> Vec<u32> {
    let slots = layout.skeleton_positions();
    let epb = layout.elems();
    let ngroups = r.num_elem() / epb;
    let mut off = Vec::with_capacity(ngroups * slots.len());
    for g in 0..ngroups {
        for &pos in &slots {
            let (le, l) = layout.holder(pos);
            off.push(r.elem(g * epb + le)[l]);
        }
    }
    off
}
