//! What a GPU bake-off operator computes ([`BpOperator`]) and how its kernel computes it
//! ([`BpPlan`]): a plan can describe only kernels that exist, and
//! [`BpPlan::check`] refuses the few combinations a plan's fields can still spell that its
//! kernel cannot run.

use crate::GpuError;
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// The operator a GPU bake-off kernel applies: which one, where its geometry comes from,
/// and its quadrature.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BpOperator {
    /// Which operator (with its mass coefficient `α`), as on the CPU.
    pub kind: TensorKind,
    /// Where the geometric factors come from: stored factors, `[elem][factor][point]`, or
    /// the element's 8 vertices (24 numbers per element).
    pub geo: GeometrySource,
    /// Gauss points per direction (`None`: `p + 2`); BP3.5 always uses the `p + 1` GLL
    /// nodes.
    pub q1d: Option<usize>,
}

impl BpOperator {
    /// `kind` with geometry `geo` and the default quadrature.
    pub fn new(kind: TensorKind, geo: GeometrySource) -> BpOperator {
        BpOperator {
            kind,
            geo,
            q1d: None,
        }
    }

    /// Quadrature points per direction at order `p`.
    pub fn points(&self, p: usize) -> usize {
        if self.kind.is_collocated() {
            p + 1
        } else {
            self.q1d.unwrap_or(p + 2)
        }
    }

    /// Whether the operator runs the `p + 2` Gauss points that the tuned register caps and
    /// shared-memory pitches were measured and modelled for.
    pub fn default_rule(&self, p: usize) -> bool {
        self.q1d.is_none_or(|q| q == p + 2)
    }
}

/// How a GPU bake-off kernel computes its operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BpPlan {
    /// The paper's kernel (Świrydowicz et al. 2019): 2-D slices of an element in shared
    /// memory, the 1-D matrices read from shared memory; on the space's plain numbering.
    Slice2d,
    /// Pencil contractions with compile-time matrices, on a space numbered interior-last.
    Pencil(PencilPlan),
    /// BP1 with stored weights on bricks of elements, each block contracting whole lines
    /// of its brick's node lattice; on a mesh sorted into bricks and a space numbered per
    /// brick in ring slot order.
    Lattice(LatticePlan),
}

/// The pencil kernel's choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct PencilPlan {
    /// Elements per thread block (`None`: chosen from the block's threads and shared
    /// memory).
    pub elems_per_block: Option<usize>,
    /// Blocks per multiprocessor asked of the compiler (caps the registers per thread);
    /// `None`: 1. Applies to the `p + 2`-point rule only (see [`BpOperator::default_rule`]).
    pub min_blocks: Option<u32>,
    /// Stored geometry read directly from global memory in the pointwise phase, not
    /// staged in shared memory by bulk copies.
    pub direct_geometry: bool,
    /// One wave of blocks looping over the elements, the next element's gather and
    /// geometry in flight while the current one is computed.
    pub persistent: bool,
    /// BP1: the gather and scatter through registers (owner threads load and store whole
    /// z-columns and contract along z there): four shared-memory round trips per element
    /// instead of six.
    pub register_columns: bool,
    /// With register columns and stored weights: the weights stored x slowest, so that the
    /// threads owning x-pencils read them coalesced.
    pub pencil_weights: bool,
    /// f64, the `p + 2`-point rule, register columns or BP3: shared-memory pitches chosen
    /// per order by a bank model for the fewest conflicts.
    pub bank_pitches: bool,
    /// The skeleton nodes' slots in the element's offsets read from a constant table
    /// rather than computed from their local coordinates.
    pub slot_table: bool,
    /// The skeleton fill before the apply overlapped with it (programmatic dependent
    /// launch, sm_90): the kernel waits for the fill only before its scatter.
    pub overlapped_fill: bool,
}

/// The lattice kernel's choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LatticePlan {
    /// Elements per brick along x, y and z: one brick per thread block.
    pub brick: [usize; 3],
    /// Blocks per multiprocessor asked of the compiler (caps the registers per thread);
    /// `None`: 1.
    pub min_blocks: Option<u32>,
    /// The contraction phases (bit `k − 1` for phase `k` of 1..=5) whose loops over a
    /// line's elements stay rolled, so that a phase that would spill under the register
    /// cap runs one element's values at a time.
    pub rolled_phases: u8,
    /// The brick's weights copied into shared memory with one bulk copy at the block's
    /// start.
    pub weights_in_shared: bool,
    /// The boundary offsets and interior nodes of the brick this many bricks ahead asked
    /// of L2 at the block's start (0: none); about one wave of resident blocks.
    pub lookahead: u32,
}

/// How the space must be numbered for a plan's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Numbering {
    /// The space's own numbering (full element offsets).
    Plain,
    /// Interior-last ([`ferrofem_space::H1Space::interior_last`]).
    InteriorLast,
    /// Per brick of this shape in ring slot order, on a mesh whose cells are sorted into
    /// such bricks ([`BpPlan::sort_cells`], [`BpPlan::number`]).
    Bricks([usize; 3]),
}

impl PencilPlan {
    /// The plain pencil kernel (bulk-copied geometry, default block, no register cap).
    pub const fn new() -> PencilPlan {
        PencilPlan {
            elems_per_block: None,
            min_blocks: None,
            direct_geometry: false,
            persistent: false,
            register_columns: false,
            pencil_weights: false,
            bank_pitches: false,
            slot_table: false,
            overlapped_fill: false,
        }
    }
    /// With [`PencilPlan::persistent`].
    pub const fn persistent(self) -> PencilPlan {
        PencilPlan {
            persistent: true,
            ..self
        }
    }
    /// With [`PencilPlan::register_columns`].
    pub const fn columns(self) -> PencilPlan {
        PencilPlan {
            register_columns: true,
            ..self
        }
    }
    /// With [`PencilPlan::direct_geometry`].
    pub const fn direct(self) -> PencilPlan {
        PencilPlan {
            direct_geometry: true,
            ..self
        }
    }
    /// With `min_blocks` blocks per multiprocessor ([`PencilPlan::min_blocks`]).
    pub const fn cap(self, min_blocks: u32) -> PencilPlan {
        PencilPlan {
            min_blocks: Some(min_blocks),
            ..self
        }
    }
    /// With `epb` elements per block.
    pub const fn elems(self, epb: usize) -> PencilPlan {
        PencilPlan {
            elems_per_block: Some(epb),
            ..self
        }
    }
    /// With [`PencilPlan::pencil_weights`].
    pub const fn pencil_weights(self) -> PencilPlan {
        PencilPlan {
            pencil_weights: true,
            ..self
        }
    }
    /// With [`PencilPlan::bank_pitches`].
    pub const fn bank_pitches(self) -> PencilPlan {
        PencilPlan {
            bank_pitches: true,
            ..self
        }
    }
    /// With [`PencilPlan::slot_table`].
    pub const fn slot_table(self) -> PencilPlan {
        PencilPlan {
            slot_table: true,
            ..self
        }
    }
    /// With [`PencilPlan::overlapped_fill`].
    pub const fn overlapped_fill(self) -> PencilPlan {
        PencilPlan {
            overlapped_fill: true,
            ..self
        }
    }
}

impl BpPlan {
    /// The strategy's name, as `--kernel` takes it.
    pub fn name(&self) -> &'static str {
        match self {
            BpPlan::Slice2d => "slice2d",
            BpPlan::Pencil(_) => "pencil",
            BpPlan::Lattice(_) => "lattice",
        }
    }

    /// The numbering the plan's kernel reads the space in.
    pub fn numbering(&self) -> Numbering {
        match self {
            BpPlan::Slice2d => Numbering::Plain,
            BpPlan::Pencil(_) => Numbering::InteriorLast,
            BpPlan::Lattice(l) => Numbering::Bricks(l.brick),
        }
    }

    /// The plan's choices in a few words (bench and test labels).
    pub fn describe(&self) -> String {
        match self {
            BpPlan::Slice2d => "slice2d".into(),
            BpPlan::Pencil(c) => {
                let mut s = String::from("pencil");
                let flags = [
                    (c.persistent, "persistent"),
                    (c.register_columns, "columns"),
                    (c.direct_geometry, "direct"),
                    (c.pencil_weights, "pw"),
                    (c.bank_pitches, "banks"),
                    (c.slot_table, "slot-table"),
                    (c.overlapped_fill, "overlap"),
                ];
                for (on, name) in flags {
                    if on {
                        s += "+";
                        s += name;
                    }
                }
                if let Some(e) = c.elems_per_block {
                    s += &format!(" e{e}");
                }
                if let Some(m) = c.min_blocks {
                    s += &format!(" cap{m}");
                }
                s
            }
            BpPlan::Lattice(l) => {
                let [bx, by, bz] = l.brick;
                let mut s = format!("lattice {bx}x{by}x{bz}");
                if let Some(m) = l.min_blocks {
                    s += &format!(" cap{m}");
                }
                if l.rolled_phases != 0 {
                    s += &format!(" rolled{}", rolled_phase_digits(l.rolled_phases));
                }
                if l.weights_in_shared {
                    s += " w-shared";
                }
                if l.lookahead > 0 {
                    s += &format!(" ahead{}", l.lookahead);
                }
                s
            }
        }
    }

    /// Refuses a plan that its kernel cannot run for `op` at order `p`.
    pub fn check(&self, op: &BpOperator, p: usize) -> Result<(), GpuError> {
        let refuse = |why: String| Err(GpuError::Unsupported(why));
        match self {
            BpPlan::Slice2d => Ok(()),
            BpPlan::Pencil(c) => {
                let stored = op.geo == GeometrySource::Stored;
                if c.register_columns && (op.kind != TensorKind::Mass || c.persistent) {
                    return refuse(
                        "register columns exist for the non-persistent BP1 pencil kernel only"
                            .into(),
                    );
                }
                if c.pencil_weights && !(c.register_columns && stored) {
                    return refuse(
                        "pencil-ordered weights need register columns and stored weights".into(),
                    );
                }
                if c.direct_geometry && !stored {
                    return refuse("direct geometry loads need stored geometry".into());
                }
                if c.overlapped_fill && c.persistent {
                    return refuse(
                        "the overlapped skeleton fill is for the non-persistent kernel".into(),
                    );
                }
                if c.elems_per_block == Some(0) || c.min_blocks == Some(0) {
                    return refuse("elements per block and blocks per SM start at 1".into());
                }
                Ok(())
            }
            BpPlan::Lattice(l) => {
                if op.kind != TensorKind::Mass
                    || op.geo != GeometrySource::Stored
                    || !op.default_rule(p)
                {
                    return refuse(
                        "the lattice kernel is BP1 with stored weights and the default p + 2-point rule"
                            .into(),
                    );
                }
                if l.rolled_phases > 31 {
                    return refuse(format!(
                        "rolled phases {:#b}: the lattice kernel has phases 1..=5 (bits 0..=4)",
                        l.rolled_phases
                    ));
                }
                if l.min_blocks == Some(0) {
                    return refuse("blocks per SM start at 1".into());
                }
                let b = l.brick;
                if b.iter().any(|&e| e == 0 || e > 8) || b.iter().any(|&e| e * p + 1 > 255) {
                    return refuse(format!(
                        "brick shape {b:?}: 1 to 8 elements per axis, at most 255 nodes"
                    ));
                }
                Ok(())
            }
        }
    }
}

/// The lattice phases of a rolled-phase mask as their digits, in order (`0b110`: "23").
pub fn rolled_phase_digits(mask: u8) -> String {
    (1..=5)
        .filter(|k| mask & (1 << (k - 1)) != 0)
        .map(|k: u8| char::from(b'0' + k))
        .collect()
}
