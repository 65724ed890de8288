//! How a plan's kernel reads the mesh and the space: the cells sorted into the lattice
//! kernel's bricks, and the dofs numbered plain, interior-last or per brick
//! ([`BpPlan::numbering`]). Callers build the mesh and its natural space as usual and hand
//! them here; nothing outside the GPU backend needs to know about bricks or slot orders.

use super::bricks::{brick_numbering, sort_blocks, sort_grid};
pub use super::bricks::{BrickLayout, SlotOrder};
use super::plan::{BpPlan, Numbering};
use crate::GpuError;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;

/// How a hexahedral mesh's cells are arranged, which decides whether they can be sorted
/// into bricks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CellArrangement {
    /// A structured `n0 × n1 × n2` grid in lexicographic order, x fastest (as
    /// `ferrofem_mesh::generate_box` makes it).
    Grid([usize; 3]),
    /// Consecutive blocks of `m × m × m` cells, each block lexicographic (as
    /// `Mesh::refined` leaves each coarse cell's children after `log2 m` levels).
    Blocks(usize),
    /// No structure known.
    Unstructured,
}

impl CellArrangement {
    /// Whether cells so arranged can be sorted into bricks of `brick` cells.
    pub fn takes(self, brick: [usize; 3]) -> bool {
        match self {
            CellArrangement::Grid(g) => (0..3).all(|d| brick[d] > 0 && g[d] % brick[d] == 0),
            CellArrangement::Blocks(m) => brick.iter().all(|&b| b > 0 && m % b == 0),
            CellArrangement::Unstructured => false,
        }
    }
}

impl BpPlan {
    /// Whether the plan's kernel can run on a mesh whose cells are arranged as `cells`:
    /// the lattice kernel needs cells that sort into its bricks, the others any.
    pub fn runs_on(&self, cells: CellArrangement) -> bool {
        match self.numbering() {
            Numbering::Bricks(b) => cells.takes(b),
            Numbering::Plain | Numbering::InteriorLast => true,
        }
    }

    /// Sorts `mesh`'s cells as the plan's kernel walks them: for the lattice kernel into
    /// its bricks (on a grid the bricks follow the Morton curve of their coordinates, so
    /// that bricks sharing nodes are close in time; within a block of children they are
    /// lexicographic); the other kernels take the cells in any order and leave them.
    /// Other plans numbered on the sorted mesh run on it unchanged.
    pub fn sort_cells(&self, mesh: &mut Mesh, cells: CellArrangement) -> Result<(), GpuError> {
        let Numbering::Bricks(b) = self.numbering() else {
            return Ok(());
        };
        let sorted = match cells {
            _ if !cells.takes(b) => Err(format!(
                "cells arranged as {cells:?} do not sort into bricks of {b:?}"
            )),
            CellArrangement::Grid(g) => sort_grid(mesh, g, b, true)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            CellArrangement::Blocks(m) => sort_blocks(mesh, [m; 3], b)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            CellArrangement::Unstructured => Err("the cells have no known structure".into()),
        };
        sorted.map_err(|why| GpuError::Unsupported(format!("the {}: {why}", self.describe())))
    }

    /// `natural` (the space as `H1Space::new` numbers it on the mesh the kernel runs on,
    /// sorted by [`BpPlan::sort_cells`] where the plan needs it) numbered as the plan's
    /// kernel reads it. A lattice plan on cells that are not whole bricks is refused.
    pub fn number(&self, natural: &H1Space) -> Result<KernelSpace, GpuError> {
        match self.numbering() {
            Numbering::Plain => Ok(KernelSpace {
                space: natural.clone(),
                bricks: None,
                new_of: None,
            }),
            Numbering::InteriorLast => {
                let (space, new_of) = natural.interior_last_with_map();
                Ok(KernelSpace {
                    space,
                    bricks: None,
                    new_of: Some(new_of),
                })
            }
            Numbering::Bricks(b) => {
                let (layout, new_of) = brick_numbering(natural, b, SlotOrder::Ring)
                    .map_err(|e| GpuError::Unsupported(format!("the {}: {e}", self.describe())))?;
                Ok(KernelSpace {
                    space: natural.renumbered(&new_of),
                    bricks: Some(layout),
                    new_of: Some(new_of),
                })
            }
        }
    }
}

/// A space numbered as a plan's kernel reads it ([`BpPlan::number`]): the space itself
/// (for CPU twins, vectors and boundary conditions) and, for the lattice kernel, its
/// brick layout.
#[derive(Clone, Debug)]
pub struct KernelSpace {
    space: H1Space,
    bricks: Option<BrickLayout>,
    new_of: Option<Vec<u32>>,
}

impl KernelSpace {
    /// The numbered space.
    pub fn space(&self) -> &H1Space {
        &self.space
    }

    /// The brick layout of a space numbered per brick.
    pub fn bricks(&self) -> Option<BrickLayout> {
        self.bricks
    }

    /// The renumbering from the natural space: node `old` is node `new_of[old]` here
    /// (`None`: the same numbering), so that callers can carry vectors there and back.
    pub fn new_of(&self) -> Option<&[u32]> {
        self.new_of.as_deref()
    }
}
