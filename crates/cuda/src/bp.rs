//! The CEED bake-off operators (BP1 mass, BP3 screened diffusion with Gauss quadrature,
//! BP3.5 diffusion collocated at GLL nodes) on hexahedral meshes, applied on the GPU as the
//! whole operator a user calls: L-vector in, gather, element kernel, scatter-add, L-vector
//! out. Kernels: `kernels/bp.cu`.

use crate::compile::KernelSpec;
use crate::{sources, DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use ferrofem_base::CellType;
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, Lagrange1D};
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::model::{self, IndexTraffic, Model, ModelSpec, VectorTraffic};
use ferrofem_operator::tensor::{GeometryMode, TensorKind};
use ferrofem_space::{H1Space, SlotOrder};
use std::sync::Arc;

fn op_code(kind: TensorKind) -> u32 {
    match kind {
        TensorKind::Mass => 1,
        TensorKind::Diffusion { .. } => 3,
        TensorKind::CollocatedDiffusion { .. } => 5,
    }
}

/// Short name of a bake-off operator for kernel cache files (`bp1`, `bp3`, `bp35`).
fn short_name(kind: TensorKind) -> &'static str {
    match kind {
        TensorKind::Mass => "bp1",
        TensorKind::Diffusion { .. } => "bp3",
        TensorKind::CollocatedDiffusion { .. } => "bp35",
    }
}

/// Where geometric factors come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeoMode {
    /// Precomputed at every quadrature point and read from memory.
    Stored,
    /// Computed in the kernel from the element's 8 vertices (24 numbers per element).
    OnTheFly,
}

/// What the v2 kernels with direct stored-geometry loads do about the factors' latency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GeoPrefetch {
    /// Load them where the pointwise phase uses them.
    #[default]
    None,
    /// Prefetch the element's lines into L1 at kernel start.
    L1,
    /// Prefetch the element's lines into L2 at kernel start.
    L2,
    /// Register columns (BP1 v6) only: load the thread's weights into registers at kernel
    /// start, before the gather.
    Registers,
    /// Lattice kernel (v41) only: copy the brick's weights into shared memory with one bulk
    /// copy at the block's start, so that they cross L2 once and the pointwise phase reads
    /// them on chip.
    Shared,
}

impl GeoPrefetch {
    fn code(self) -> u32 {
        match self {
            GeoPrefetch::None => 0,
            GeoPrefetch::L1 => 1,
            GeoPrefetch::L2 => 2,
            GeoPrefetch::Registers => 3,
            GeoPrefetch::Shared => 4,
        }
    }

    /// What a lattice block that walks a column of bricks (v31) takes instead: the copy into
    /// shared memory is for single bricks, so a column prefetches into L2.
    pub fn for_columns(self) -> GeoPrefetch {
        match self {
            GeoPrefetch::Shared => GeoPrefetch::L2,
            other => other,
        }
    }

    /// Short name in kernel and record labels (empty for `None`).
    pub fn tag(self) -> &'static str {
        match self {
            GeoPrefetch::None => "",
            GeoPrefetch::L1 => "pfl1",
            GeoPrefetch::L2 => "pfl2",
            GeoPrefetch::Registers => "pfreg",
            GeoPrefetch::Shared => "pfsm",
        }
    }
}

/// Who zeroes the skeleton part of the output before the elements accumulate into it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SkeletonZeroing {
    /// A fill of the skeleton range before the launch, in reverse order (v2 kernels), so
    /// that the lines the first element groups accumulate into are written last and are
    /// still in L2; the rest of the zeros go to DRAM and the atomics read them back.
    #[default]
    Host,
    /// The same fill by a memset, in address order (the v2 kernels' fill before the
    /// seventh session; kept for comparison).
    Memset,
    /// v8: each thread block zeroes the skeleton nodes its elements own (the nodes whose
    /// lowest-numbered element is theirs, one range under [`H1Space::interior_last`]) and
    /// raises a flag; before accumulating, a block waits for the flags of the (earlier)
    /// blocks owning the rest of its skeleton. The zeros can meet the atomics in L2: no
    /// fill, no read-back.
    Owner,
    /// v12: each thread block zeroes the skeleton owned by the element group
    /// [`BpConfig::zero_ahead`] ahead of its own (the first ones are zeroed before the
    /// launch), so the zeros wait in L2 for the atomics and the flag is raised long after
    /// the stores; published after the block's first contraction phases.
    Lookahead,
    /// [`SkeletonZeroing::Lookahead`] with the flag published just before the block's
    /// own wait, as late as possible (for comparison).
    LookaheadLate,
    /// v16: the element groups run as [`BpConfig::pipeline_chunks`] launches in order;
    /// each zeroes the skeleton the next one owns, and the next one, started early by
    /// programmatic dependent launch, waits for it only before its scatter. The zeros
    /// meet the atomics in L2 without flags between blocks.
    Pipelined,
    /// v32: the fill before the launch, and the apply started early by programmatic
    /// dependent launch (sm_90): its blocks gather and contract while the fill runs and
    /// wait for it only before their scatter (lattice and non-persistent interior-last v2
    /// kernels).
    Overlapped,
}

impl SkeletonZeroing {
    fn code(self) -> u32 {
        match self {
            SkeletonZeroing::Host | SkeletonZeroing::Memset => 0,
            SkeletonZeroing::Owner => 1,
            SkeletonZeroing::Lookahead | SkeletonZeroing::LookaheadLate => 2,
            SkeletonZeroing::Pipelined => 3,
            SkeletonZeroing::Overlapped => 4,
        }
    }

    /// Whether the kernel's blocks zero (part of) the skeleton.
    pub fn in_kernel(self) -> bool {
        matches!(self.code(), 1..=3)
    }

    /// The tag in kernel names: only where the kernel differs (the two fills before the
    /// launch run the same kernel, which is then compiled once).
    fn kernel_tag(self) -> &'static str {
        if self.code() == 0 {
            ""
        } else {
            self.tag()
        }
    }

    /// Short name in record labels (empty for the default, `Host`).
    pub fn tag(self) -> &'static str {
        match self {
            SkeletonZeroing::Host => "",
            SkeletonZeroing::Memset => "ms",
            SkeletonZeroing::Owner => "oz",
            SkeletonZeroing::Lookahead => "la",
            SkeletonZeroing::LookaheadLate => "lal",
            SkeletonZeroing::Pipelined => "pl",
            SkeletonZeroing::Overlapped => "ov",
        }
    }
}

/// Lattice kernel (v33): where the scatter takes the brick boundary's offsets from, and how
/// it adds the boundary's sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LatticeBoundary {
    /// The scatter reads the offsets from global memory again (as the gather did) and adds
    /// each boundary node's sum atomically from the thread that owns its column.
    #[default]
    Global,
    /// The gather keeps the offsets it reads in shared memory for the scatter: the
    /// boundary's offsets cross L2 once per apply, not twice.
    SharedOffsets,
    /// As [`LatticeBoundary::SharedOffsets`], and the boundary's sums are staged in shared
    /// memory and added in slot order after one more barrier, consecutive lanes on
    /// consecutive slots, so that a warp's atomics fall in fewer L2 sectors (single-step
    /// blocks only).
    Staged,
}

impl LatticeBoundary {
    fn code(self) -> u32 {
        self as u32
    }

    /// The tag in kernel names and bench labels (empty for the default, `Global`).
    pub fn tag(self) -> &'static str {
        match self {
            LatticeBoundary::Global => "",
            LatticeBoundary::SharedOffsets => "so",
            LatticeBoundary::Staged => "st",
        }
    }
}

/// Values each block of the skeleton fill (`bp_zero_skeleton`) zeroes: one contiguous chunk.
const ZERO_CHUNK: u32 = 2048;

/// `sep` and `tag`, or nothing for an empty tag: the optional parts of labels.
pub fn label_part(sep: char, tag: &str) -> String {
    if tag.is_empty() {
        String::new()
    } else {
        format!("{sep}{tag}")
    }
}

/// Kernel design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// v1: the paper's 2-D slice kernel (matrices and data through shared memory).
    Slice2D,
    /// v2: pencil contractions with compile-time matrices and bulk-copied geometry.
    Pencil,
    /// v26, BP1 with stored weights: a block owns a brick of elements ([`BpConfig::bricks`],
    /// on a space numbered by [`H1Space::bricked`]) and contracts whole lines of the brick's
    /// node lattice, so the nodes its elements share are gathered once and summed in
    /// registers before one store or atomic add.
    Lattice,
}

/// Options of a GPU bake-off operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BpConfig {
    /// Which operator (with its mass coefficient `α`), as on the CPU.
    pub kind: TensorKind,
    /// Geometry variant.
    pub geo: GeoMode,
    /// Quadrature points per direction (`None`: `p + 2` Gauss for BP1/BP3; BP3.5 always
    /// uses the `p + 1` GLL nodes).
    pub q1d: Option<usize>,
    /// Elements per thread block (`None`: chosen from the shape).
    pub elems_per_block: Option<usize>,
    /// Kernel design.
    pub variant: Variant,
    /// v2 only: the space is numbered interior-last ([`H1Space::interior_last`]); interior
    /// indices are computed, only skeleton offsets are read and only the skeleton part of
    /// the output is zeroed.
    pub interior_last: bool,
    /// v2 only: minimum resident blocks per multiprocessor asked of the compiler (caps
    /// registers per thread); `None`: 1.
    pub min_blocks: Option<u32>,
    /// v2 with stored geometry: read the factors directly from global memory in the
    /// pointwise phase instead of staging them in shared memory with bulk copies.
    pub direct_geometry: bool,
    /// v2 only (v5): a persistent kernel, one wave of blocks looping over the elements,
    /// that gathers the next element's input (asynchronous copies) and fetches its
    /// geometry (bulk copies) while computing the current one.
    pub persistent: bool,
    /// v2 BP1 only (v6): the gather and scatter go through registers (owner threads load
    /// and store whole z-columns, contracting along z there) and the x-pencils meet the
    /// weights in registers: four shared-memory round trips per element instead of six.
    pub register_columns: bool,
    /// v2 only (v7): 1-D contractions in even-odd form (the paper's symmetric-matrix
    /// trick: Gauss and GLL points are symmetric about 0, so half the multiply-adds
    /// suffice); `false` runs the plain products, kept for comparison.
    pub even_odd: bool,
    /// v2 with direct stored-geometry loads: prefetch of the factors at kernel start.
    pub geo_prefetch: GeoPrefetch,
    /// v2 with direct stored-geometry loads: load the factors with the evict-first
    /// (streaming) cache policy, so that L2 keeps the vectors and the skeleton's zeros
    /// rather than factors that are read once.
    pub evict_first_geometry: bool,
    /// v2, non-persistent (v14): the scatter reloads the skeleton offsets instead of
    /// keeping the gather's indices in registers through the element, so that tighter
    /// register caps stay free of spills.
    pub late_indices: bool,
    /// v2, interior-last, non-persistent: who zeroes the skeleton.
    pub skeleton_zeroing: SkeletonZeroing,
    /// v2, non-persistent: element groups a thread block runs one after another (1: one
    /// group per block). With [`SkeletonZeroing::Owner`] the block is the owner unit, so
    /// more groups per block spread the cost of its flags.
    pub groups_in_sequence: usize,
    /// With [`SkeletonZeroing::Lookahead`]: how far ahead a block zeroes, in percent of
    /// the element groups resident on the device at once (0: 100, one wave ahead).
    pub zero_ahead: u32,
    /// With [`SkeletonZeroing::Pipelined`]: launches per application (0: as many as make
    /// each launch's model traffic about a third of the device's L2).
    pub pipeline_chunks: u32,
    /// v2 BP1 register-column kernel with stored geometry (v20): the weights stored x
    /// slowest, so that the threads owning x-pencils read them coalesced (the setup and
    /// diagonal kernels use the same layout).
    pub pencil_weights: bool,
    /// v2 BP1 register-column kernel (v20) and non-persistent v2 BP3 kernel (v20c), f64:
    /// shared-memory pitches chosen per order by a bank model for the fewest bank
    /// conflicts (fewer, not none; at up to 38 % more shared memory per element); ignored
    /// in f32 and at orders without a choice.
    pub conflict_free_pitches: bool,
    /// v2, non-persistent, fill before the launch (v19): a block owns a brick of
    /// `[bx, by, bz]` elements of a space numbered by [`H1Space::bricked`] with that shape;
    /// it gathers the brick's nodes once into shared memory and sums the faces inside the
    /// brick there, so only the brick's boundary is read through offsets and added
    /// atomically (`None`: one element per owner, as before).
    pub bricks: Option<[usize; 3]>,
    /// Interior-last kernels (v25): each skeleton node's slot in its element's offsets
    /// computed from its local coordinates instead of read from a constant table, whose
    /// lane-varying reads the indexed constant cache serves one address at a time.
    pub slot_arithmetic: bool,
    /// Lattice kernel (v29): the loops over a line's elements kept as loops rather than
    /// unrolled, so that one element's values are live at a time and tighter register caps
    /// (`min_blocks`) stay free of spills.
    pub rolled_element_loops: bool,
    /// Lattice kernel (v51), where `rolled_element_loops` is false: the phases whose loops
    /// over a line's elements stay rolled (bit k − 1 for phase k of 1..=5), so that a phase
    /// whose unrolled form spills under the register cap can be rolled while the others
    /// keep their unrolled loads in flight. 0: every phase unrolled.
    pub rolled_phases: u8,
    /// Lattice kernel (v31): the block walks its brick in this many steps along z, each a
    /// brick of `[bx, by, bz / steps]` elements, and carries the lattice plane two steps
    /// share from one to the next. The space's numbering, its offsets and atomics are the
    /// whole brick's (fewer boundary nodes per element), the registers and shared memory
    /// one step's. 1: the brick in one step.
    pub lattice_steps: usize,
    /// Lattice kernel (v33): the brick boundary's offsets and sums in the scatter.
    pub lattice_boundary: LatticeBoundary,
    /// Lattice kernel (v34): each thread takes one element of a lattice line instead of
    /// the whole line (the node two elements share passed between neighbouring lanes), so
    /// that blocks have more threads with shorter dependency chains (single-step blocks
    /// whose extents divide a warp).
    pub split_lines: bool,
    /// Lattice kernel (v35): the slot order of the space's brick boundary
    /// ([`H1Space::bricked_in`]), which the kernel's index arithmetic follows and the
    /// space must have. [`SlotOrder::Ring`] gives the threads of the gather and the
    /// scatter their columns in ring order, so that a warp's loads and atomic adds of the
    /// boundary fall in fewer L2 sectors.
    pub lattice_slots: SlotOrder,
    /// v37: the restriction's offsets in compressible memory (generic data compression,
    /// [`DeviceVec::zeros_compressible`]), so that runs of consecutive indices cost less
    /// DRAM traffic; plain memory where the device cannot compress.
    pub compressible_indices: bool,
    /// v37: vectors made by [`GpuBp::output_vector`] (an apply's output, a Krylov
    /// method's vectors) in compressible memory, so that the skeleton's zeros between the
    /// fill and the atomics cost less DRAM traffic; plain memory where the device cannot
    /// compress.
    pub compressible_output: bool,
    /// Lattice kernel (v42): each block asks L2 for the boundary offsets and interior nodes
    /// of the brick this many bricks ahead (0: none), so that they are on chip when that
    /// brick's block starts its gather; about the number of resident blocks.
    pub gather_lookahead: u32,
    /// Lattice kernel (v48): the block's two lattice arrays as one, the y contractions
    /// rewriting their lines in place, so that a block needs about half the shared memory
    /// and more blocks fit on a multiprocessor where shared memory bounds them (whole
    /// lines, not with the staged boundary).
    pub one_lattice_array: bool,
}

/// The tag of a slot order in kernel names and bench labels (empty for the default).
pub fn slot_order_tag(slots: SlotOrder) -> &'static str {
    match slots {
        SlotOrder::Lexicographic => "",
        SlotOrder::Ring => "ring",
    }
}

impl BpConfig {
    /// The fastest configuration measured on an H200 for `kind`, geometry `geo` and order
    /// `p` (notes/gpu-bp.md, v4, v5, the third session's v6 and occupancy scans, and the
    /// fourth session's scans of the even-odd kernels; on the fly, the sixth session's v14
    /// and v15 scans; the seventh session's v16, v17 and final8 runs of the three-region
    /// kernels):
    /// kernels on an interior-last space; v2 with bulk-copied stored geometry unless the
    /// measurements chose the persistent v5 kernel, the register-column v6 kernel (BP1), or
    /// direct geometry loads with registers capped for occupancy (`min_blocks`).
    pub fn tuned(kind: TensorKind, geo: GeoMode, p: usize) -> BpConfig {
        let mut c = BpConfig::new(kind);
        c.geo = geo;
        c.interior_last = true;
        let stored = geo == GeoMode::Stored;
        // direct geometry loads, registers capped to fit `min_blocks` blocks per SM
        let direct = |c: &mut BpConfig, min_blocks: u32| {
            c.direct_geometry = true;
            c.min_blocks = Some(min_blocks);
        };
        match kind {
            // the even-odd kernels (v7) take tighter caps than the plain ones did
            // v20 (eleventh session, `gpu-check.sh v28`): weights in pencil order and
            // conflict-free pitches at p = 3..7 (+1 to +8 %), the pitches alone at p = 8
            // (the pencil order lost 1-2 % there)
            TensorKind::Mass if stored => match p {
                2 => c.register_columns = true,
                // p = 6: the bulk-copied geometry beats direct loads (65.4 against 62.7)
                6 => {
                    c.register_columns = true;
                    c.min_blocks = Some(8);
                    c.pencil_weights = true;
                    c.conflict_free_pitches = true;
                }
                // p = 5: three elements per block at the cap 8 (twelfth session's v35:
                // 62.06 against 60.66 for two at 12)
                5 => {
                    c.register_columns = true;
                    direct(&mut c, 8);
                    c.elems_per_block = Some(3);
                    c.pencil_weights = true;
                    c.conflict_free_pitches = true;
                }
                3..=8 => {
                    c.register_columns = true;
                    direct(&mut c, if p == 8 { 8 } else { 12 });
                    c.pencil_weights = p != 8;
                    c.conflict_free_pitches = true;
                    // v32 (fourteenth session, v47, v48): the fill overlapped, +0.5–0.8 %
                    // at p = 7, 8 (the one-element kernel's orders; BpConfig::tuned_on_bricks
                    // takes the lattice below)
                    if p >= 7 {
                        c.skeleton_zeroing = SkeletonZeroing::Overlapped;
                    }
                }
                _ => {}
            },
            // on the fly (sixth session's v14 scan): register columns, spill-free caps
            TensorKind::Mass => {
                c.register_columns = true;
                c.min_blocks = match p {
                    3..=6 | 8 => Some(8),
                    7 => Some(10),
                    _ => None,
                };
            }
            // with a mass term (screened), the caps one notch lower keep it from spilling
            TensorKind::Diffusion { alpha } if stored => {
                let screened = alpha != 0.0;
                match p {
                    2 => c.persistent = true,
                    3 | 7 => direct(&mut c, if screened && p == 7 { 6 } else { 8 }),
                    4 => direct(&mut c, 7),
                    // p = 5: three elements per block at the cap 6 with v20c's pitches
                    // (twelfth session's v34, v35: 22.60 and 22.72 against 21.52 for two
                    // at the cap 7); screened, two at the cap 5 (v36: 18.50 against 17.33
                    // for three at 5, 17.09 for two at 6)
                    5 if screened => direct(&mut c, 5),
                    5 => {
                        direct(&mut c, 6);
                        c.elems_per_block = Some(3);
                    }
                    6 => direct(&mut c, if screened { 5 } else { 6 }),
                    8 => direct(&mut c, if screened { 4 } else { 5 }),
                    _ => {}
                }
            }
            // p = 7: three elements per block with the pitches (twelfth session's v35:
            // 32.13 against 30.38 for one); not screened, whose 142 registers would leave
            // one such block per SM
            TensorKind::Diffusion { alpha } => match p {
                7 if alpha == 0.0 => c.elems_per_block = Some(3),
                5..=8 => c.elems_per_block = Some(1),
                _ => {}
            },
            TensorKind::CollocatedDiffusion { alpha } if stored => match p {
                1 => c.persistent = true,
                3 => direct(&mut c, 8),
                4 | 5 => direct(&mut c, 6),
                6 => direct(&mut c, 4),
                // one element per block; p = 8 and the screened p = 7 with registers capped
                7 if alpha == 0.0 => {
                    c.direct_geometry = true;
                    c.elems_per_block = Some(1);
                }
                7 | 8 => {
                    direct(&mut c, if p == 7 { 7 } else { 6 });
                    c.elems_per_block = Some(1);
                }
                _ => {}
            },
            TensorKind::CollocatedDiffusion { alpha } => match p {
                3 => {
                    c.persistent = true;
                    c.elems_per_block = Some(2);
                }
                // the screened p = 7 of the full BP: 134 registers uncapped, 128 (eight
                // blocks per SM, no spill) with the cap (seventh session's final8: 59.9
                // against 54.1 GDOF/s, PCG 19.6 against 19.0 GDOF·it/s)
                7 if alpha != 0.0 => {
                    c.elems_per_block = Some(1);
                    c.min_blocks = Some(8);
                }
                6 | 7 => c.elems_per_block = Some(1),
                // the cap 5 spills the screened kernel (44 bytes) since v10: uncapped there
                // (142 registers, not measured on the device)
                8 => {
                    c.elems_per_block = Some(1);
                    c.min_blocks = if alpha != 0.0 { None } else { Some(5) };
                }
                _ => {}
            },
        }
        // v20c's pitches for BP3 at every order, stored and on the fly, since v21 needs no
        // barrier for them (twelfth session, `gpu-check.sh v34`, `v35`: stored +1 to +6 %
        // at p = 3, 5, 7, 8, a tie at p = 4 and 6; on the fly +0 to +5 %)
        if matches!(kind, TensorKind::Diffusion { .. }) && (3..=8).contains(&p) {
            c.conflict_free_pitches = true;
        }
        // v25 (twelfth session, `gpu-check.sh v39`): skeleton slots from the constant table
        // where that measured faster than the arithmetic (BP1 stored p = 3, 6: -1.4 and
        // -7.9 %; BP3 stored p = 3, 7: -2.1 and -5.0 %; BP3.5 stored p = 5, 7: -0.6 and
        // -1.1 %), the arithmetic elsewhere (BP1 stored p = 4, 5, 7, 8 +3 to +6 %, BP1 and
        // BP3.5 on the fly +3 to +12 %, BP3 stored p = 4, 5, 6, 8 +1 to +2 %)
        // (and the screened BP3.5 p = 7 on the fly, not measured with either: under its
        // cap of 128 registers the arithmetic spills 16 bytes)
        let table = match kind {
            TensorKind::Mass => stored && matches!(p, 3 | 6),
            TensorKind::Diffusion { .. } => stored && matches!(p, 3 | 7),
            TensorKind::CollocatedDiffusion { alpha } => {
                (stored && matches!(p, 5 | 7)) || (!stored && p == 7 && alpha != 0.0)
            }
        };
        c.slot_arithmetic = !table;
        c
    }

    /// The geometry variant measured fastest for `kind` at order `p` (H200, f64, ~4e7
    /// DoFs, against the stored defaults of the same build): on the fly for BP3.5 at
    /// p = 3..8 (sixth session, v14 and v15; the seventh's v16 kept it) and p = 1 (eighth
    /// session's v19: 6.1 against 4.8 GDOF/s), and for BP3 at p = 3, 5, 6, 7, 8 (v16: the
    /// metric by the column's adjugate polynomials took p = 7 and 8 past the stored
    /// kernels) and p = 2 (v19: 7.9 against 7.5); stored factors otherwise (BP1 at every
    /// order: its on-the-fly kernel issues more instructions than the stored one waits on
    /// bytes; BP3 at p = 1 (2.0 against 1.8) and p = 4 (a tie); BP3.5 at p = 2 (14.7
    /// against 14.0)). The screened kinds (`alpha != 0`) follow their unscreened ones; of
    /// them only the screened BP3.5 at p = 7 was compared (on the fly faster, the full-BP
    /// solve).
    pub fn fastest_geometry(kind: TensorKind, p: usize) -> GeoMode {
        let otf = match kind {
            TensorKind::Mass => false,
            TensorKind::Diffusion { .. } => matches!(p, 2 | 3 | 5..=8),
            TensorKind::CollocatedDiffusion { .. } => matches!(p, 1 | 3..=8),
        };
        if otf {
            GeoMode::OnTheFly
        } else {
            GeoMode::Stored
        }
    }

    /// [`BpConfig::tuned`] with the [`BpConfig::fastest_geometry`] for `kind` and `p`: what
    /// the solvers use when nothing else is asked.
    pub fn fastest(kind: TensorKind, p: usize) -> BpConfig {
        BpConfig::tuned(kind, BpConfig::fastest_geometry(kind, p), p)
    }

    /// This configuration at order `p` with a block per brick of `shape` elements (v19):
    /// the kernel of `self` (geometry, register columns), non-persistent, on a space
    /// numbered by [`H1Space::bricked`], with the fill before the launch; a register cap
    /// (`min_blocks`) is scaled to the larger block, so that registers per thread stay
    /// about where they were.
    pub fn with_bricks(self, shape: [usize; 3], p: usize) -> BpConfig {
        let t1d = if self.kind.is_collocated() {
            p + 1
        } else {
            self.q1d.unwrap_or(p + 2).max(p + 1)
        };
        let warps = |e: usize| (t1d * t1d * e).div_ceil(32);
        let epb = self.elems_per_block.unwrap_or(1);
        let brick: usize = shape.iter().product();
        BpConfig {
            bricks: Some(shape),
            min_blocks: self
                .min_blocks
                .map(|m| ((m as usize * warps(epb)) / warps(brick)).max(1) as u32),
            interior_last: false,
            persistent: false,
            late_indices: false,
            elems_per_block: None,
            skeleton_zeroing: SkeletonZeroing::Host,
            groups_in_sequence: 1,
            ..self
        }
    }

    /// BP1 on the lattice kernel (v26) with a block per brick of `shape` elements, stored
    /// weights, on a space numbered by [`H1Space::bricked`] with that shape.
    pub fn lattice(shape: [usize; 3]) -> BpConfig {
        BpConfig {
            variant: Variant::Lattice,
            bricks: Some(shape),
            ..BpConfig::new(TensorKind::Mass)
        }
    }

    /// The fastest configuration measured on an H200 where the mesh is a structured box
    /// whose cells can be sorted into bricks (`Mesh::sort_cells_in_bricks`, then
    /// [`H1Space::bricked_in`] with the returned `bricks` and `lattice_slots`), if it beats
    /// [`BpConfig::tuned`] there: BP1 with stored weights at p = 3..8 on the lattice kernel
    /// (v26–v39; notes/gpu-bp.md). `None` where the one-element kernels are faster.
    pub fn tuned_on_bricks(kind: TensorKind, geo: GeoMode, p: usize) -> Option<BpConfig> {
        if kind != TensorKind::Mass || geo != GeoMode::Stored {
            return None;
        }
        // (shape, register cap, rolled element loops): v42, v43; p = 4 from v33's scan
        // (fifteenth session, v50, v51: 2x2x1 at cap 12 69.6–69.7 GDOF/s with the offsets
        // in shared memory, as fast as 4x4x2 staged, 69.2–69.8, and 4x4x2's old default
        // with the shared offsets, 67.6–68.0)
        // (shape, register cap, every element loop rolled, else the rolled phases' mask)
        let (shape, min_blocks, rolled, rolled_phases) = match p {
            3 => ([4, 4, 2], Some(4), false, 0),
            4 => ([2, 2, 1], Some(12), false, 0),
            // v51 (v72, final23): every phase unrolled but 3 against all rolled, +0.8 % and
            // +1.1 % in two calls (55 registers either way, no spill)
            5 => ([2, 2, 1], None, false, 0b00100),
            6 => ([2, 2, 1], Some(6), false, 0),
            // v39 (v56): with its weights prefetched into L2 the lattice passes the
            // one-element kernel at p = 7 (86.3 against 85.4 GDOF/s); not at p = 8 (75.3
            // against 89.0)
            // v48 (v69): with one lattice array the cap 4 (64 registers, no spill) gets its
            // fourth block per SM, 90–91 → 97.9–98.1 GDOF/s
            // v51 (v72): phases 3 or 2-3 rolled cost 2-3.5 % here (no spill to remove)
            7 => ([2, 2, 1], Some(4), false, 0),
            // v48 (v69): with one lattice array three blocks of 320 threads fit at the cap 3
            // (64 registers, 48 bytes spilled in phase 3): 95.9 GDOF/s against the
            // one-element kernel's 89.2–89.5 and the spill-free cap 2's 88.3–88.7
            // v51 (v72): phases 2 and 3 rolled, the rest unrolled: 4 bytes spilled, not 48,
            // whose stores went to L2 (ncu38: L2 write sectors 15.1 → 9.4 M, kernel 432 →
            // 412 µs): 95.9–96.1 → 100.2–101.3 GDOF/s
            8 => ([2, 2, 1], Some(3), false, 0b00110),
            _ => return None,
        };
        Some(BpConfig {
            min_blocks,
            conflict_free_pitches: true,
            rolled_element_loops: rolled,
            rolled_phases,
            // v32 (v47, v48): the fill overlapped with the apply, +0.6–1.0 %
            skeleton_zeroing: SkeletonZeroing::Overlapped,
            // v33 (v49, v50): the boundary's offsets kept in shared memory from the gather
            // to the scatter, +3 % (p = 3) to +6 % (p = 5, 6)
            lattice_boundary: LatticeBoundary::SharedOffsets,
            // v35 (v52): the brick boundary in ring slot order, +0.3 % (p = 3) to +1.7 %
            // (p = 5); L2 sectors −5 % at p = 6, the time only −0.8 %: DRAM-bound there
            lattice_slots: SlotOrder::Ring,
            // v39 (v56, v58): the brick's weights prefetched into L2 at the block's start,
            // +6 % at p = 7 in every run; at p = 6 85–92 GDOF/s by the order of the runs
            // (the first on a fresh mesh slow) against a steady 90 without; −0.1 to −2.5 % at
            // p = 3..5
            // v41 (v59): copied into shared memory instead, p = 6 +2.7 % (88.5–88.7 %), p = 7
            // +1.3 % over the L2 prefetch; −8 to −22 % at p = 3..5
            geo_prefetch: if p >= 6 {
                GeoPrefetch::Shared
            } else {
                GeoPrefetch::None
            },
            // v42 (v60, v61): the gather's data asked of L2 one wave of resident blocks ahead
            // (an H200's 132 multiprocessors × blocks per SM), +1.5 % at p = 3 and p = 7 in
            // every run; ±0.5 % at p = 4, 5, −5 % at p = 6
            gather_lookahead: match p {
                3 => 528,
                7 => 396,
                _ => 0,
            },
            // v48 (v69): one lattice array, the y contractions in place: p = 6 +6 %, p = 7 +8 %
            // (with the cap 4), p = 3 +2.5 %, p = 4 +1.3 %, p = 5 +0.2 % (one more block per SM
            // where shared memory bound them, more L1 where it did not)
            one_lattice_array: true,
            ..BpConfig::lattice(shape)
        })
    }

    /// Defaults for `kind`: stored geometry, default quadrature.
    pub fn new(kind: TensorKind) -> BpConfig {
        BpConfig {
            kind,
            geo: GeoMode::Stored,
            q1d: None,
            elems_per_block: None,
            variant: Variant::Pencil,
            interior_last: false,
            min_blocks: None,
            direct_geometry: false,
            persistent: false,
            register_columns: false,
            even_odd: true,
            geo_prefetch: GeoPrefetch::None,
            evict_first_geometry: false,
            late_indices: false,
            skeleton_zeroing: SkeletonZeroing::Host,
            groups_in_sequence: 1,
            zero_ahead: 0,
            pipeline_chunks: 0,
            pencil_weights: false,
            conflict_free_pitches: false,
            bricks: None,
            slot_arithmetic: true,
            rolled_element_loops: false,
            rolled_phases: 0,
            lattice_steps: 1,
            lattice_boundary: LatticeBoundary::Global,
            split_lines: false,
            lattice_slots: SlotOrder::Lexicographic,
            // v37 (v54): +1.5 % (BP3 p = 3: −0.3 %) to +3.3 % (BP1 p = 4) with both
            compressible_indices: true,
            compressible_output: true,
            gather_lookahead: 0,
            one_lattice_array: false,
        }
    }

    /// The brick one step of the lattice kernel works on (v31): `bricks` with its z extent
    /// divided by `lattice_steps`.
    pub fn lattice_step_brick(&self) -> Option<[usize; 3]> {
        self.bricks
            .map(|b| [b[0], b[1], b[2] / self.lattice_steps.max(1)])
    }
}

/// A bake-off operator on the GPU for one mesh and space.
pub struct GpuBp<T: GpuReal> {
    dev: Arc<GpuDevice>,
    cfg: BpConfig,
    order: usize,
    q1d: usize,
    nelem: usize,
    ndofs: usize,
    nskel: usize,
    epb: usize,
    dyn_smem: usize,
    block: [u32; 3],
    grid: u32,
    offsets: DeviceVec<u32>,
    geo: DeviceVec<T>,
    mats: DeviceVec<T>,
    alpha: T,
    dirichlet: Option<DeviceVec<u32>>,
    spec: KernelSpec,
    func: CudaFunction,
    ident: CudaFunction,
    /// The reverse-order skeleton fill (v2 kernels' module), where the host zeroes it.
    zero_fill: Option<CudaFunction>,
    owners: Option<OwnerState>,
    pipeline: Option<Pipeline>,
    /// With bricks: each boundary slot's brick position (packed `i | j << 8 | k << 16`).
    skpos: Option<DeviceVec<u32>>,
    /// With bricks: the space's brick layout (the diagonal kernel rebuilds the full
    /// restriction from it and the brick offsets when asked).
    brick_layout: Option<ferrofem_space::BrickLayout>,
}

/// The restriction's offsets on the device, in compressible memory when asked and the
/// device can compress (plain memory otherwise).
fn upload_indices(
    dev: &Arc<GpuDevice>,
    host: &[u32],
    compressible: bool,
) -> Result<DeviceVec<u32>, GpuError> {
    const WHAT: &str = "restriction offsets";
    if !compressible {
        return DeviceVec::from_host(dev, host, WHAT);
    }
    let mut v = DeviceVec::<u32>::zeros_preferably_compressible(dev, host.len(), WHAT, true)?;
    v.upload(host)?;
    Ok(v)
}

/// The layout of a brick of `shape` elements of order `p` (slots and positions only).
pub fn brick_layout(shape: [usize; 3], p: usize) -> ferrofem_space::BrickLayout {
    ferrofem_space::BrickLayout {
        shape,
        order: p,
        skeleton_nodes: 0,
        slots: ferrofem_space::SlotOrder::Lexicographic,
    }
}

/// One launch of `bp_apply` through [`GpuBp::launch_applies`].
struct ApplyLaunch {
    /// Blocks in the launch.
    grid: u32,
    /// The pipelined kernel's (ORD 3) first group and the skeleton range it zeroes for the
    /// next launch (`gbase, zbeg, zend`); `None` for a kernel without them.
    chunk: Option<[u32; 3]>,
    /// Programmatic dependent launch after the previous launch in the stream (sm_90).
    pdl: bool,
}

/// The launches of [`SkeletonZeroing::Pipelined`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pipeline {
    /// The skeleton prefix owned by the first launch's groups, zeroed before it.
    pub prefill: u32,
    /// Per launch: its first element group, its number of groups, and the skeleton range
    /// it zeroes for the next launch.
    pub chunks: Vec<PipelineChunk>,
}

/// One launch of a [`Pipeline`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineChunk {
    /// First element group.
    pub gbase: u32,
    /// Element groups (thread blocks).
    pub groups: u32,
    /// The skeleton range `zbeg..zend` owned by the next launch, zeroed by this one.
    pub zbeg: u32,
    /// End of that range.
    pub zend: u32,
}

impl Pipeline {
    /// `chunks` launches of nearly equal numbers of groups over the owned ranges `own`
    /// (`own[g]..own[g + 1]`: the skeleton whose lowest-numbered group is `g`).
    pub fn new(own: &[u32], chunks: usize) -> Pipeline {
        let ngroups = own.len().saturating_sub(1);
        let c = chunks.clamp(1, ngroups.max(1));
        let bound: Vec<usize> = (0..=c).map(|k| k * ngroups / c).collect();
        let chunks = (0..c)
            .map(|k| {
                let (zbeg, zend) = if k + 1 < c {
                    (own[bound[k + 1]], own[bound[k + 2]])
                } else {
                    (0, 0)
                };
                PipelineChunk {
                    gbase: bound[k] as u32,
                    groups: (bound[k + 1] - bound[k]) as u32,
                    zbeg,
                    zend,
                }
            })
            .filter(|ch| ch.groups > 0)
            .collect();
        Pipeline {
            prefill: own.get(bound[1]).copied().unwrap_or(0),
            chunks,
        }
    }
}

/// Device state of the in-kernel skeleton zeroing ([`SkeletonZeroing::Owner`]).
struct OwnerState {
    /// Per thread block (the owner unit: `groups_in_sequence` element groups): the epoch
    /// of the last launch in which it zeroed its range.
    flags: DeviceVec<u32>,
    own: DeviceVec<u32>,
    pstart: DeviceVec<u32>,
    preds: DeviceVec<u32>,
    /// Alternates 1, 2 between launches (every flag is raised in every launch).
    epoch: std::sync::atomic::AtomicU32,
    /// Lookahead zeroing: how many groups ahead a block zeroes, and the skeleton prefix
    /// (owned by the first `ahead` groups) zeroed before the launch.
    ahead: u32,
    prefill: u32,
}

/// Who zeroes which skeleton nodes, and whom each element group waits for, in the
/// in-kernel skeleton zeroing ([`SkeletonZeroing::Owner`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnerSchedule {
    /// `own[g]..own[g + 1]`: the skeleton nodes whose lowest-numbered group is `g`.
    pub own: Vec<u32>,
    /// `preds[pstart[g]..pstart[g + 1]]`: the other groups owning nodes of group `g`.
    pub pstart: Vec<u32>,
    /// The owner lists, ascending per group.
    pub preds: Vec<u32>,
}

/// How many blocks of the v2 apply kernel `func` (order `p`, `q` points, `epb` elements
/// per block, `dyn_smem` bytes of dynamic shared memory) one multiprocessor holds at once.
fn resident_blocks_per_sm(
    func: &CudaFunction,
    p: usize,
    q: usize,
    epb: usize,
    dyn_smem: usize,
) -> Result<usize, GpuError> {
    let t1d = (p + 1).max(q) as u32;
    let per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(t1d * t1d * epb as u32, dyn_smem, None)
        .map_err(|e| GpuError::driver("occupancy query", e))?;
    Ok(per_sm as usize)
}

/// The compact skeleton offsets `[elem][nsk]` of an interior-last space (the element's
/// boundary nodes in the order of [`skeleton_table`]), and `nsk`.
fn skeleton_offsets(space: &H1Space) -> (Vec<u32>, usize) {
    let (table, nsk) = skeleton_table(space.order() + 1);
    let r = space.restriction();
    let mut off = vec![0u32; r.num_elem() * nsk];
    for e in 0..r.num_elem() {
        let en = r.elem(e);
        for (l, &slot) in table.iter().enumerate() {
            if slot != u16::MAX {
                off[e * nsk + slot as usize] = en[l];
            }
        }
    }
    (off, nsk)
}

/// The owner schedule from compact skeleton offsets `[elem][nsk]` into `0..nskel`, with
/// groups of `epb` consecutive elements. Fails unless the skeleton is numbered by owner
/// (as [`H1Space::interior_last`] numbers it).
pub fn owner_schedule(
    offsets: &[u32],
    nsk: usize,
    nskel: usize,
    epb: usize,
) -> Result<OwnerSchedule, GpuError> {
    if epb == 0 || nsk == 0 || offsets.len() % nsk != 0 {
        return Err(GpuError::Unsupported(format!(
            "an owner schedule needs whole rows of nsk > 0 offsets and groups of epb > 0 \
             elements (got {} offsets, nsk = {nsk}, epb = {epb})",
            offsets.len()
        )));
    }
    let nelem = offsets.len() / nsk;
    let ngroups = nelem.div_ceil(epb);
    let mut owner = vec![u32::MAX; nskel];
    for (e, row) in offsets.chunks(nsk).enumerate() {
        let g = (e / epb) as u32;
        for &n in row {
            let Some(o) = owner.get_mut(n as usize) else {
                return Err(GpuError::Unsupported(format!(
                    "skeleton offset {n} is outside the {nskel} skeleton nodes"
                )));
            };
            if *o == u32::MAX {
                *o = g;
            }
        }
    }
    if owner.contains(&u32::MAX) || owner.windows(2).any(|w| w[0] > w[1]) {
        return Err(GpuError::Unsupported(
            "zeroing the skeleton in the kernel needs the skeleton numbered by owner (H1Space::interior_last)".into(),
        ));
    }
    let mut own = vec![0u32; ngroups + 1];
    let mut n = 0usize;
    for (g, o) in own.iter_mut().enumerate() {
        while n < nskel && (owner[n] as usize) < g {
            n += 1;
        }
        *o = n as u32;
    }
    let mut pstart = Vec::with_capacity(ngroups + 1);
    let mut preds = Vec::new();
    pstart.push(0u32);
    for g in 0..ngroups {
        let lo = preds.len();
        let rows = &offsets[g * epb * nsk..((g + 1) * epb).min(nelem) * nsk];
        for &n in rows {
            let o = owner[n as usize];
            if o as usize != g && !preds[lo..].contains(&o) {
                preds.push(o);
            }
        }
        preds[lo..].sort_unstable();
        pstart.push(preds.len() as u32);
    }
    Ok(OwnerSchedule { own, pstart, preds })
}

fn pad(k: usize) -> usize {
    if k % 2 == 0 {
        k + 1
    } else {
        k
    }
}

/// Whether the operator's stored BP1 weights are laid out x slowest (v20, `WXSLOW`): the
/// apply, setup and diagonal kernels must agree on it.
fn pencil_weights(cfg: &BpConfig) -> bool {
    cfg.pencil_weights
        && cfg.register_columns
        && cfg.geo == GeoMode::Stored
        && cfg.variant == Variant::Pencil
}

/// Whether `cfg` runs the p + 2 Gauss points the pitch tables were modelled for: with
/// another rule (a solve's own quadrature) the kernels keep the default layout, since
/// the tables' pitches may be smaller than the arrays (more points) and are unmodelled.
fn modelled_rule(cfg: &BpConfig, p: usize) -> bool {
    cfg.q1d.is_none_or(|q| q == p + 2)
}

/// The register-column kernel's shared pitches in reals, `[ZPR, ZPP, YPR, YPP]` (rows and
/// planes of its regions sZ and sY), where v20's layout applies: chosen per order by a
/// bank model of the kernel's eight shared accesses with 8-byte reals, half-warps served
/// apart, and the default block shape (`notes/bank-model.py`, which reproduces Nsight
/// Compute's counts; `notes/gpu-bp.md` v20, v20b): the fewest wavefronts, then the
/// smallest regions.
fn zfirst_pitches(cfg: &BpConfig, p: usize, real: usize) -> Option<[usize; 4]> {
    if !(cfg.conflict_free_pitches && cfg.register_columns && real == 8 && modelled_rule(cfg, p)) {
        return None;
    }
    match p {
        3 => Some([4, 20, 7, 42]),
        4 => Some([6, 38, 6, 43]),
        5 => Some([6, 38, 7, 54]),
        6 => Some([7, 55, 7, 56]),
        7 => Some([8, 72, 10, 105]),
        8 => Some([9, 89, 9, 90]),
        _ => None,
    }
}

/// The BP3 kernel's shared pitches in reals, `[BPR, BPP, UPR, UPP, RPR, RPP, SPR, SPP]`
/// (rows and planes of its arrays sB, sU and sC, sR, sS), where v20c's layout applies
/// (`conflict_free_pitches`, f64): chosen per order by the half-warp bank model of the
/// kernel's shared accesses with the default block shape (`notes/bank-model-bp3.py`,
/// `notes/gpu-bp.md` v20c), the fewest wavefronts, then the smallest regions.
fn bp3_pitches(cfg: &BpConfig, p: usize, real: usize) -> Option<[usize; 8]> {
    let bp3 = matches!(cfg.kind, TensorKind::Diffusion { .. });
    if !(cfg.conflict_free_pitches
        && bp3
        && cfg.variant == Variant::Pencil
        && real == 8
        && modelled_rule(cfg, p))
    {
        return None;
    }
    match p {
        3 => Some([7, 38, 5, 39, 5, 25, 5, 37]),
        4 => Some([9, 54, 9, 54, 9, 58, 6, 38]),
        5 => Some([7, 42, 7, 61, 7, 49, 7, 55]),
        6 => Some([9, 72, 9, 72, 9, 72, 8, 72]),
        7 => Some([10, 89, 9, 89, 9, 81, 9, 89]),
        8 => Some([11, 110, 10, 106, 10, 101, 10, 106]),
        _ => None,
    }
}

/// Elements per block and dynamic shared memory (bytes) of a configuration, mirroring the
/// kernels' layouts (v1: static shared arrays; v2: `GALL + EPB * WORK` reals).
fn choose_block(
    cfg: BpConfig,
    op: u32,
    n: usize,
    q: usize,
    gstride: usize,
    real: usize,
) -> Result<(usize, usize), GpuError> {
    let t1d = n.max(q);
    let otf = cfg.geo == GeoMode::OnTheFly;
    // (static bytes per element, dynamic bytes per element)
    let (stat, dynamic) = match cfg.variant {
        Variant::Slice2D => {
            let words = match op {
                5 => 3 * n * n * pad(n),
                1 => n * q * pad(q) + n * n * pad(q),
                _ => n * q * pad(q) + n * n * pad(q) + 3 * q * q * pad(q),
            };
            (words * real, 0)
        }
        Variant::Pencil | Variant::Lattice => {
            // mirrors WORK / GALL in kernels/bp_pencil.cu (the lattice kernel is sized by
            // lattice_block instead)
            let reg = match op {
                1 if cfg.register_columns => match zfirst_pitches(&cfg, n - 1, real) {
                    Some([_, zpp, _, ypp]) => q * zpp.max(ypp),
                    None => q * q * pad(n),
                },
                1 => n * q * pad(q),
                _ => match bp3_pitches(&cfg, n - 1, real) {
                    Some([_, bpp, _, upp, _, rpp, _, spp]) => (q * q * pad(q))
                        .max(n * bpp)
                        .max(q * upp)
                        .max(q * rpp)
                        .max(q * spp),
                    None => q * q * pad(q),
                },
            };
            let tma = !otf && !cfg.direct_geometry;
            // BP1: two regions; BP3 / BP3.5: three (transposed phase in place, v10)
            let nreg = if op == 1 { 2 } else { 3 };
            let stage = if cfg.persistent { n * n * pad(n) } else { 0 };
            let work = nreg * reg + stage + if otf { 24 } else { 0 };
            let geo = if tma { gstride } else { 0 };
            (0, (work + geo) * real)
        }
    };
    let per_elem = stat + dynamic;
    // v1: static shared memory is limited to 48 KB; v2 opts in to up to ~200 KB but aims
    // for >= 2 blocks per multiprocessor.
    let budget = if cfg.variant == Variant::Slice2D {
        40_000
    } else {
        100_000
    };
    if let (Some(b), Variant::Pencil) = (cfg.bricks, cfg.variant) {
        // one brick per block; its nodes are gathered over the work regions (BSIZE)
        let epb: usize = b.iter().product();
        let dims = b.map(|e| e * (n - 1) + 1);
        let bsize = dims[2] * dims[1] * (dims[0] | 1) * real;
        let geo = if !otf && !cfg.direct_geometry {
            gstride * real
        } else {
            0
        };
        let dynamic_bytes = epb * geo + (epb * (dynamic - geo)).max(bsize);
        if dynamic_bytes > 220_000 || t1d * t1d * epb > 1024 {
            return Err(GpuError::Unsupported(format!(
                "a brick of {epb} elements of order {} needs {dynamic_bytes} bytes of shared memory / {} threads",
                n - 1,
                t1d * t1d * epb
            )));
        }
        return Ok((epb, dynamic_bytes));
    }
    let epb = cfg.elems_per_block.unwrap_or_else(|| {
        let by_threads = (128 / (t1d * t1d)).max(1);
        let by_smem = (budget / per_elem.max(1)).max(1);
        by_threads.min(by_smem)
    });
    let limit = if cfg.variant == Variant::Slice2D {
        48_000
    } else {
        220_000
    };
    if epb == 0 || per_elem * epb > limit || t1d * t1d * epb > 1024 {
        return Err(GpuError::Unsupported(format!(
            "{epb} elements per block of order {} need {} bytes of shared memory / {} threads",
            n - 1,
            per_elem * epb,
            t1d * t1d * epb
        )));
    }
    Ok((epb, dynamic * epb))
}

/// The 1-D matrices of `kind`, row-major: BP1 `B` (q x n); BP3 `B` then the Gauss
/// collocated derivative (q x q); BP3.5 the GLL derivative (n x n).
fn mats_host(kind: TensorKind, basis: &Lagrange1D, pts: &[f64]) -> Vec<f64> {
    match kind {
        TensorKind::Mass => basis.interpolation_matrix(pts),
        TensorKind::Diffusion { .. } => {
            let mut m = basis.interpolation_matrix(pts);
            m.extend(Lagrange1D::new(pts).derivative_matrix(pts));
            m
        }
        TensorKind::CollocatedDiffusion { .. } => basis.derivative_matrix(pts),
    }
}

/// C source defining the v2 kernels' `__constant__` matrices, points and weights.
fn constant_matrices(
    kind: TensorKind,
    mats: &[f64],
    pts: &[f64],
    wts: &[f64],
    skeleton_table: Option<&[u16]>,
) -> Result<String, GpuError> {
    let q = pts.len();
    let mut s = String::from("// constant matrices generated by ferrofem (fe crate tabulations)\n");
    // (name, matrix, rows, columns) of the interpolation (sign 1) and derivative (-1) pair
    let pair = |s: &mut String, name: &str, m: &[f64], rows: usize, cols: usize, sign: f64| {
        *s += &constant_matrix(&format!("{name}f"), m, rows, cols, sign)?;
        *s += &constant_matrix(
            &format!("{name}t"),
            &transpose(m, rows, cols),
            cols,
            rows,
            sign,
        )?;
        Ok::<(), GpuError>(())
    };
    match kind {
        TensorKind::Mass => pair(&mut s, "cB", mats, q, mats.len() / q, 1.0)?,
        TensorKind::Diffusion { .. } => {
            let nb = mats.len() - q * q;
            pair(&mut s, "cB", &mats[..nb], q, nb / q, 1.0)?;
            pair(&mut s, "cD", &mats[nb..], q, q, -1.0)?;
        }
        TensorKind::CollocatedDiffusion { .. } => pair(&mut s, "cD", mats, q, q, -1.0)?,
    }
    s += &real_array("cX", pts);
    s += &real_array("cW", wts);
    if let Some(t) = skeleton_table {
        s += &c_array("unsigned short", "cSK", t, |x| x.to_string());
    }
    Ok(s)
}

/// `__constant__ ty name[len] = {...};` with the elements as `fmt` writes them.
fn c_array<V>(ty: &str, name: &str, v: &[V], fmt: impl Fn(&V) -> String) -> String {
    let body: Vec<String> = v.iter().map(fmt).collect();
    format!(
        "__constant__ {ty} {name}[{}] = {{{}}};\n",
        v.len(),
        body.join(", ")
    )
}

/// A `__constant__` array of reals, each written in its shortest round-trip form.
fn real_array(name: &str, v: &[f64]) -> String {
    c_array("real", name, v, |x| format!("{x:e}"))
}

/// The `cols x rows` transpose of a row-major `rows x cols` matrix.
fn transpose(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

/// A 1-D matrix in the even-odd form of the kernels' `contract`: the halves
/// `(m[o][i] ± m[o][cols-1-i]) / 2` of its first `(rows + 1) / 2` rows (`i < cols / 2`,
/// row-major) and its middle column (zeros when `cols` is even).
struct EvenOdd {
    even: Vec<f64>,
    odd: Vec<f64>,
    middle: Vec<f64>,
}

/// The even-odd parts of `m` (`rows x cols`, row-major). The form relies on the reflection
/// symmetry `m[rows-1-o][cols-1-i] = sign * m[o][i]` of matrices tabulated at points
/// symmetric about 0; a matrix without it is refused rather than contracted wrongly.
fn even_odd(
    name: &str,
    m: &[f64],
    rows: usize,
    cols: usize,
    sign: f64,
) -> Result<EvenOdd, GpuError> {
    let at = |o: usize, i: usize| m[o * cols + i];
    let scale = m.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    for o in 0..rows {
        for i in 0..cols {
            if (at(rows - 1 - o, cols - 1 - i) - sign * at(o, i)).abs() > 1e-10 * scale {
                return Err(GpuError::Unsupported(format!(
                    "the 1-D matrix {name} is not reflection-symmetric (points not symmetric about 0)"
                )));
            }
        }
    }
    let (ho, hi) = (rows.div_ceil(2), cols / 2);
    let mut e = EvenOdd {
        even: Vec::with_capacity(ho * hi),
        odd: Vec::with_capacity(ho * hi),
        middle: Vec::with_capacity(ho),
    };
    for o in 0..ho {
        for i in 0..hi {
            e.even.push(0.5 * (at(o, i) + at(o, cols - 1 - i)));
            e.odd.push(0.5 * (at(o, i) - at(o, cols - 1 - i)));
        }
        e.middle.push(if cols % 2 == 1 { at(o, hi) } else { 0.0 });
    }
    Ok(e)
}

/// The `__constant__` arrays of one 1-D matrix for the kernels' `contract`: `name` (full,
/// row-major) and its even-odd parts `name_p`, `name_m`, `name_c`.
fn constant_matrix(
    name: &str,
    m: &[f64],
    rows: usize,
    cols: usize,
    sign: f64,
) -> Result<String, GpuError> {
    let e = even_odd(name, m, rows, cols, sign)?;
    Ok(real_array(name, m)
        + &real_array(&format!("{name}_p"), &e.even)
        + &real_array(&format!("{name}_m"), &e.odd)
        + &real_array(&format!("{name}_c"), &e.middle))
}

/// For `n` nodes per direction: the skeleton slot of every local node (lexicographic among
/// the skeleton nodes; `u16::MAX` for interior nodes), and the number of skeleton nodes.
pub fn skeleton_table(n: usize) -> (Vec<u16>, usize) {
    let mut t = vec![u16::MAX; n * n * n];
    let mut next = 0u16;
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let interior = [i, j, k].iter().all(|&c| c > 0 && c + 1 < n);
                if !interior {
                    t[(k * n + j) * n + i] = next;
                    next += 1;
                }
            }
        }
    }
    (t, next as usize)
}

/// A compiled-to-be kernel specialisation of a bake-off operator and its launch shape.
#[derive(Clone, Debug)]
pub struct BpKernel {
    /// The NVRTC specialisation.
    pub spec: KernelSpec,
    /// Quadrature points per direction.
    pub q: usize,
    /// Elements per thread block.
    pub epb: usize,
    /// Dynamic shared memory per block in bytes.
    pub dyn_smem: usize,
    /// Stored geometric factors per quadrature point.
    pub ngeo: usize,
    /// Reals between consecutive elements of stored geometry.
    pub gstride: usize,
    /// 1-D matrices uploaded for the v1 kernel (and points/weights for on the fly).
    pub mats: Vec<f64>,
    /// 1-D reference points and weights of the quadrature.
    pub points: (Vec<f64>, Vec<f64>),
    /// Threads per block along x, y and z.
    pub block: [u32; 3],
}

/// The brick shapes the lattice kernel (v26) is measured and tested with at order `p`,
/// first the one [`BpConfig::tuned_on_bricks`] takes where it takes the lattice.
pub fn lattice_shapes(p: usize) -> Vec<[usize; 3]> {
    match p {
        1 | 2 => vec![[4, 4, 4], [4, 4, 2]],
        3 => vec![[4, 4, 2], [4, 4, 4], [2, 2, 2], [4, 2, 2]],
        4 => vec![[4, 4, 2], [2, 2, 2], [4, 2, 2], [2, 2, 1]],
        5 | 6 => vec![[2, 2, 1], [2, 2, 2], [4, 2, 2]],
        7 => vec![[2, 2, 1], [2, 2, 2], [4, 2, 1]],
        // (2x2x2 at p = 8: 46 GDOF/s in v51, and it spills uncapped)
        _ => vec![[2, 2, 1]],
    }
}

/// The columns the lattice kernel (v31) is measured and tested with at order `p`: the
/// brick of its first shape ([`lattice_shapes`]) walked in each of these numbers of steps
/// along z, as `(column brick, steps)`.
pub fn lattice_columns(p: usize) -> Vec<([usize; 3], usize)> {
    let b = lattice_shapes(p)[0];
    let steps: &[usize] = if b[2] > 1 { &[2, 4, 8] } else { &[4, 8, 16] };
    steps.iter().map(|&s| ([b[0], b[1], b[2] * s], s)).collect()
}

/// The lattice kernel's (v26) shape for a brick of `b` elements of order `p` with `q`
/// points.
struct LatticeBlock {
    /// Threads per block: one per line of the largest phase, in whole warps.
    threads: usize,
    /// Dynamic shared memory in bytes (the two lattice arrays of bp_lattice.cu).
    bytes: usize,
    /// Plane pitches of sZ and sY in reals.
    pitches: [usize; 2],
}

/// The most shared memory one block can opt in to on sm_90 (227 KiB), static included.
const SM90_SHARED_PER_BLOCK: usize = 227 * 1024;

/// The lattice kernel's block for bricks `b` at order `p`, `q` points, `real` bytes per
/// value; `conflict_free` (v27) pads the plane pitches to NX modulo the reals that one
/// shared-memory wavefront serves per bank sweep (16 in f64, 32 in f32), so that the lanes
/// of the (x, zq) phases fall in consecutive banks; `one_array` (v48): sZ and sY are one
/// array, with one plane pitch that holds either plane.
fn lattice_block(
    b: [usize; 3],
    p: usize,
    q: usize,
    real: usize,
    conflict_free: bool,
    split: bool,
    one_array: bool,
) -> Result<LatticeBlock, GpuError> {
    let nd = b.map(|e| e * p + 1);
    let lp = nd[0] | 1;
    let (yq, zq) = (b[1] * q, b[2] * q);
    let m = if real == 8 { 16 } else { 32 };
    let pitch = |min: usize| {
        if conflict_free {
            (min..min + m).find(|&v| v % m == nd[0] % m).unwrap_or(min)
        } else {
            min
        }
    };
    let (pitches, words) = if one_array {
        let pp = pitch(nd[1].max(yq) * lp);
        ([pp, pp], zq * pp)
    } else {
        let pitches = [pitch(nd[1] * lp), pitch(yq * lp)];
        (pitches, zq * (pitches[0] + pitches[1]))
    };
    // one thread per line of the largest phase, or (split) per element of a line
    let per_line = |e: usize| if split { e } else { 1 };
    let threads = (nd[0] * nd[1] * per_line(b[2]))
        .max(nd[0] * zq * per_line(b[1]))
        .max(yq * zq * per_line(b[0]))
        .next_multiple_of(32)
        .min(1024);
    if words * real > 220_000 {
        return Err(GpuError::Unsupported(format!(
            "a lattice brick of {b:?} elements of order {p} needs {} bytes of shared memory",
            words * real
        )));
    }
    Ok(LatticeBlock {
        threads,
        bytes: words * real,
        pitches,
    })
}

/// The lattice phases of a rolled-phase mask as their digits, in order (`0b110`: "23"), as
/// kernel names, bench labels and `--rolled-phases` write them.
pub fn rolled_phase_digits(mask: u8) -> String {
    (1..=5)
        .filter(|k| mask & (1 << (k - 1)) != 0)
        .map(|k: u8| char::from(b'0' + k))
        .collect()
}

/// The kernel specialisation for `cfg` at order `p` in precision `T`, without a device
/// (CI compiles every specialisation the tests and benchmarks use from this).
pub fn bp_kernel<T: GpuReal>(cfg: BpConfig, p: usize) -> Result<BpKernel, GpuError> {
    if p == 0 || p > 15 {
        return Err(GpuError::Unsupported(format!(
            "bake-off order {p} is outside 1..=15"
        )));
    }
    let n = p + 1;
    let q = match cfg.kind {
        TensorKind::CollocatedDiffusion { .. } => n,
        _ => cfg.q1d.unwrap_or(p + 2),
    };
    if q < n {
        return Err(GpuError::Unsupported(format!(
            "{} needs at least p + 1 = {n} quadrature points, got {q}",
            cfg.kind.name()
        )));
    }
    if (cfg.interior_last || cfg.direct_geometry || cfg.persistent)
        && cfg.variant != Variant::Pencil
    {
        return Err(GpuError::Unsupported(
            "interior-last numbering, direct geometry loads and the persistent kernel exist in the v2 (pencil) kernels only".into(),
        ));
    }
    if cfg.register_columns
        && (cfg.kind != TensorKind::Mass || cfg.persistent || cfg.variant != Variant::Pencil)
    {
        return Err(GpuError::Unsupported(
            "register columns (v6) exist for the non-persistent v2 BP1 kernel only".into(),
        ));
    }
    if cfg.geo_prefetch != GeoPrefetch::None
        && !(cfg.direct_geometry && cfg.geo == GeoMode::Stored && cfg.variant == Variant::Pencil)
        && !(matches!(cfg.geo_prefetch, GeoPrefetch::L2 | GeoPrefetch::Shared)
            && cfg.variant == Variant::Lattice)
    {
        return Err(GpuError::Unsupported(
            "a geometry prefetch needs the v2 kernel with direct stored-geometry loads (or, into L2 or shared memory, the lattice kernel)".into(),
        ));
    }
    if cfg.gather_lookahead > 0 && cfg.variant != Variant::Lattice {
        return Err(GpuError::Unsupported(
            "the gather's lookahead (v42) exists for the lattice kernel only".into(),
        ));
    }
    if cfg.geo_prefetch == GeoPrefetch::Shared && cfg.variant != Variant::Lattice {
        return Err(GpuError::Unsupported(
            "weights copied into shared memory (v41) exist for the lattice kernel only".into(),
        ));
    }
    if cfg.skeleton_zeroing.in_kernel()
        && !(cfg.interior_last && cfg.variant == Variant::Pencil && !cfg.persistent)
        && !(cfg.variant == Variant::Lattice && cfg.skeleton_zeroing == SkeletonZeroing::Owner)
    {
        return Err(GpuError::Unsupported(
            "zeroing the skeleton in the kernel needs the non-persistent v2 kernel on an interior-last space (or, by owner brick only, the lattice kernel)".into(),
        ));
    }
    if cfg.skeleton_zeroing == SkeletonZeroing::Overlapped
        && !(cfg.variant == Variant::Lattice
            || cfg.variant == Variant::Pencil && !cfg.persistent && cfg.interior_last)
    {
        return Err(GpuError::Unsupported(
            "the overlapped fill (v32) exists for the lattice kernel and the non-persistent v2 kernel on an interior-last space".into(),
        ));
    }
    if matches!(cfg.skeleton_zeroing.code(), 2 | 3) && cfg.groups_in_sequence != 1 {
        return Err(GpuError::Unsupported(
            "lookahead and pipelined skeleton zeroing run one element group per block".into(),
        ));
    }
    if cfg.groups_in_sequence == 0
        || (cfg.groups_in_sequence > 1 && (cfg.persistent || cfg.variant != Variant::Pencil))
    {
        return Err(GpuError::Unsupported(
            "element groups in sequence (>= 1) exist for the non-persistent v2 kernel only".into(),
        ));
    }
    if cfg.evict_first_geometry
        && !(cfg.direct_geometry && cfg.geo == GeoMode::Stored && cfg.variant == Variant::Pencil)
        && cfg.variant != Variant::Lattice
    {
        return Err(GpuError::Unsupported(
            "evict-first geometry loads need the v2 kernel with direct stored-geometry loads, or the lattice kernel"
                .into(),
        ));
    }
    if cfg.late_indices && (cfg.persistent || cfg.variant != Variant::Pencil) {
        return Err(GpuError::Unsupported(
            "late scatter indices exist for the non-persistent v2 kernel only".into(),
        ));
    }
    if cfg.geo_prefetch == GeoPrefetch::Registers && !cfg.register_columns {
        return Err(GpuError::Unsupported(
            "weights prefetched into registers exist for the register-column (v6) BP1 kernel only"
                .into(),
        ));
    }
    if cfg.pencil_weights && !(cfg.register_columns && cfg.variant == Variant::Pencil) {
        return Err(GpuError::Unsupported(
            "pencil-ordered weights (v20) exist for the register-column (v6) BP1 kernel only"
                .into(),
        ));
    }
    if cfg.conflict_free_pitches
        && cfg.variant != Variant::Lattice
        && !(cfg.variant == Variant::Pencil
            && !cfg.persistent
            && (cfg.register_columns || matches!(cfg.kind, TensorKind::Diffusion { .. })))
    {
        return Err(GpuError::Unsupported(
            "the modelled shared pitches (v20, v20c) exist for the register-column (v6) BP1 kernel and the non-persistent v2 BP3 kernel only".into(),
        ));
    }
    if cfg.lattice_steps != 1
        && !(cfg.variant == Variant::Lattice
            && cfg.lattice_steps > 1
            && cfg.bricks.is_some_and(|b| b[2] % cfg.lattice_steps == 0)
            && cfg.skeleton_zeroing != SkeletonZeroing::Owner)
    {
        return Err(GpuError::Unsupported(format!(
            "{} lattice steps: the lattice kernel walks its brick in steps that divide its z extent ({:?}), with the fill before the launch",
            cfg.lattice_steps, cfg.bricks
        )));
    }
    if cfg.lattice_boundary != LatticeBoundary::Global
        && (cfg.variant != Variant::Lattice
            || cfg.lattice_boundary == LatticeBoundary::Staged && cfg.lattice_steps > 1)
    {
        return Err(GpuError::Unsupported(format!(
            "the lattice boundary {:?} (v33) exists for the lattice kernel only, staged for single-step blocks",
            cfg.lattice_boundary
        )));
    }
    if cfg.split_lines
        && (cfg.variant != Variant::Lattice
            || cfg.lattice_steps > 1
            || cfg.bricks.is_some_and(|b| b.iter().any(|&e| 32 % e != 0)))
    {
        return Err(GpuError::Unsupported(format!(
            "split lines (v34) exist for the lattice kernel in single steps, on bricks whose extents divide 32 ({:?})",
            cfg.bricks
        )));
    }
    if cfg.one_lattice_array
        && (cfg.variant != Variant::Lattice
            || cfg.split_lines
            || cfg.lattice_boundary == LatticeBoundary::Staged)
    {
        return Err(GpuError::Unsupported(
            "one lattice array (v48) exists for the lattice kernel on whole lines, without the staged boundary".into(),
        ));
    }
    if cfg.lattice_slots != SlotOrder::Lexicographic && cfg.variant != Variant::Lattice {
        return Err(GpuError::Unsupported(format!(
            "the slot order {:?} (v35) is the lattice kernel's; the brick kernels take any bricked space's slots from it",
            cfg.lattice_slots
        )));
    }
    if (cfg.rolled_element_loops || cfg.rolled_phases != 0) && cfg.variant != Variant::Lattice {
        return Err(GpuError::Unsupported(
            "rolled element loops (v29, v51) exist for the lattice kernel only".into(),
        ));
    }
    if cfg.rolled_phases > 31 {
        return Err(GpuError::Unsupported(format!(
            "rolled phases {:#b}: the lattice kernel has phases 1..=5 (bits 0..=4)",
            cfg.rolled_phases
        )));
    }
    if cfg.variant == Variant::Lattice
        && (cfg.kind != TensorKind::Mass
            || cfg.geo != GeoMode::Stored
            || cfg.bricks.is_none()
            || cfg.q1d.is_some_and(|q| q != p + 2))
    {
        return Err(GpuError::Unsupported(
            "the lattice kernel (v26) is BP1 with stored weights and the default p + 2-point rule, on a space numbered per brick (bricks set)".into(),
        ));
    }
    if let Some(b) = cfg.bricks {
        if cfg.variant == Variant::Slice2D
            || cfg.persistent
            || cfg.interior_last
            || cfg.late_indices
            || cfg.groups_in_sequence != 1
            || !(matches!(
                cfg.skeleton_zeroing,
                SkeletonZeroing::Host | SkeletonZeroing::Memset
            ) || cfg.variant == Variant::Lattice
                && matches!(
                    cfg.skeleton_zeroing,
                    SkeletonZeroing::Owner | SkeletonZeroing::Overlapped
                ))
        {
            return Err(GpuError::Unsupported(
                "bricks exist for the non-persistent v2 kernel (v19) and the lattice kernel (v26), one brick per block, with the fill before the launch (the lattice kernel also with owner zeroing or the overlapped fill), on a space numbered per brick (not interior-last)".into(),
            ));
        }
        // (a lattice brick walked in steps may be longer along z: one step is in a block)
        let zmax = if cfg.variant == Variant::Lattice {
            8 * cfg.lattice_steps.max(1)
        } else {
            8
        };
        if b[..2].iter().any(|&e| e == 0 || e > 8)
            || b[2] == 0
            || b[2] > zmax.min(ferrofem_space::MAX_BRICK_ELEMS)
            || b.iter().any(|&e| e * p + 1 > 255)
        {
            return Err(GpuError::Unsupported(format!(
                "brick shape {b:?}: 1 to 8 elements per axis (to {} along z for a lattice brick in steps), at most 255 nodes",
                zmax.min(ferrofem_space::MAX_BRICK_ELEMS)
            )));
        }
        let epb: usize = b.iter().product();
        if cfg.elems_per_block.is_some_and(|e| e != epb) {
            return Err(GpuError::Unsupported(format!(
                "a block runs one brick of {epb} elements, not {:?}",
                cfg.elems_per_block
            )));
        }
    }
    let q3 = q * q * q;
    let gll = gauss_lobatto_legendre(n).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let basis = Lagrange1D::new(&gll.points);
    let (pts, wts) = if cfg.kind.is_collocated() {
        (gll.points.clone(), gll.weights.clone())
    } else {
        let g = gauss_legendre(q).map_err(|e| GpuError::Unsupported(e.to_string()))?;
        (g.points, g.weights)
    };
    let mut mats: Vec<f64> = mats_host(cfg.kind, &basis, &pts);
    if cfg.geo == GeoMode::OnTheFly {
        mats.extend_from_slice(&pts);
        mats.extend_from_slice(&wts);
    }
    let mass = cfg.kind != TensorKind::Mass && cfg.kind.has_mass();
    let ngeo = match cfg.kind {
        TensorKind::Mass => 1,
        _ => 6 + mass as usize,
    };
    let op = op_code(cfg.kind);
    // reals per element of stored geometry: padded to 16 bytes for bulk copies (v2)
    let gstride = match cfg.variant {
        Variant::Slice2D => ngeo * q3,
        Variant::Pencil | Variant::Lattice => (ngeo * q3).next_multiple_of(16 / T::BYTES),
    };
    let mut lattice_pitches = None;
    let (epb, dyn_smem, block) = match (cfg.variant, cfg.bricks) {
        (Variant::Lattice, Some(b)) => {
            let step = cfg.lattice_step_brick().unwrap_or(b);
            let l = lattice_block(
                step,
                p,
                q,
                T::BYTES,
                cfg.conflict_free_pitches,
                cfg.split_lines,
                cfg.one_lattice_array,
            )?;
            lattice_pitches = Some(l.pitches);
            // v31: the carried plane's two arrays (sCx, sCy) after the lattice
            let carries = if cfg.lattice_steps > 1 {
                2 * (step[0] * p + 1) * (step[1] * p + 1) * T::BYTES
            } else {
                0
            };
            // v33: the boundary's offsets by slot after them; the staged sums reuse sY
            let nskb = brick_layout(b, p).skeleton_positions().len();
            let offsets = if cfg.lattice_boundary == LatticeBoundary::Global {
                0
            } else {
                (4 * nskb).next_multiple_of(16)
            };
            if cfg.lattice_boundary == LatticeBoundary::Staged && nskb > step[2] * q * l.pitches[1]
            {
                return Err(GpuError::Unsupported(format!(
                    "the staged boundary of a {b:?} brick ({nskb} slots) does not fit in its lattice's second array"
                )));
            }
            // v41: the brick's weights after them, 16-byte aligned (one bulk copy)
            let weights = if cfg.geo_prefetch == GeoPrefetch::Shared {
                let bytes = b.iter().product::<usize>() * q * q * q * T::BYTES;
                // (the block's size limit below keeps the copy under the mbarrier's 1 MiB)
                if cfg.lattice_steps > 1 || bytes % 16 != 0 {
                    return Err(GpuError::Unsupported(format!(
                        "weights copied into shared memory need a single-step lattice block whose weights are a multiple of 16 bytes; a {b:?} brick of order {p} with {} steps has {bytes}",
                        cfg.lattice_steps
                    )));
                }
                bytes + 16
            } else {
                0
            };
            let bytes = l.bytes + carries + offsets + weights;
            // (sm_90's most per block: 227 KiB, the static mbarrier included)
            if bytes + 16 > SM90_SHARED_PER_BLOCK {
                return Err(GpuError::Unsupported(format!(
                    "a lattice block of {b:?} elements of order {p} needs {bytes} bytes of shared memory{}, more than a block can have",
                    if weights > 0 { " with its weights" } else { "" }
                )));
            }
            (b.iter().product(), bytes, [l.threads as u32, 1, 1])
        }
        _ => {
            let (epb, bytes) = choose_block(cfg, op, n, q, gstride, T::BYTES)?;
            let t1d = n.max(q) as u32;
            (epb, bytes, [t1d, t1d, epb as u32])
        }
    };
    let (source, tag) = match cfg.variant {
        Variant::Slice2D => (
            format!(
                "{}\n{}\n{}",
                sources::PRELUDE,
                sources::BP_COMMON,
                sources::BP
            ),
            "v1",
        ),
        Variant::Pencil => (
            format!(
                "{}\n{}\n{}\n{}\n{}\n{}",
                sources::PRELUDE,
                constant_matrices(
                    cfg.kind,
                    &mats_host(cfg.kind, &basis, &pts),
                    &pts,
                    &wts,
                    cfg.interior_last.then(|| skeleton_table(n).0).as_deref(),
                )?,
                sources::BP_COMMON,
                sources::BP_CONTRACT,
                sources::BP_FILL,
                sources::BP_PENCIL
            ),
            if cfg.persistent {
                "v5"
            } else if cfg.register_columns {
                "v6"
            } else {
                "v2"
            },
        ),
        Variant::Lattice => (
            [
                sources::PRELUDE,
                &constant_matrices(
                    cfg.kind,
                    &mats_host(cfg.kind, &basis, &pts),
                    &pts,
                    &wts,
                    None,
                )?,
                sources::BP_COMMON,
                sources::BP_CONTRACT,
                sources::BP_FILL,
                sources::BP_LATTICE,
            ]
            .join("\n"),
            "v26",
        ),
    };
    let pitches = zfirst_pitches(&cfg, p, T::BYTES);
    let bp3p = bp3_pitches(&cfg, p, T::BYTES);
    let spec = KernelSpec::new(
        format!(
            "{}_{}_p{p}_q{q}_{}{}{}{}{}{}_e{epb}{}{}_{tag}{}",
            short_name(cfg.kind),
            T::NAME,
            if cfg.geo == GeoMode::Stored {
                "stored"
            } else {
                "otf"
            },
            if cfg.direct_geometry { "-direct" } else { "" },
            label_part('-', cfg.geo_prefetch.tag()),
            if cfg.evict_first_geometry { "-cs" } else { "" },
            if cfg.late_indices { "-li" } else { "" },
            label_part('-', cfg.skeleton_zeroing.kernel_tag()),
            if cfg.groups_in_sequence > 1 {
                format!("c{}", cfg.groups_in_sequence)
            } else {
                String::new()
            },
            cfg.bricks
                .map_or(String::new(), |b| format!("_b{}x{}x{}", b[0], b[1], b[2])),
            if cfg.even_odd && cfg.variant != Variant::Slice2D {
                "_eo"
            } else {
                ""
            }
        ) + if pencil_weights(&cfg) { "_pw" } else { "" }
            + if pitches.is_some()
                || bp3p.is_some()
                || cfg.variant == Variant::Lattice && cfg.conflict_free_pitches
            {
                "_cf"
            } else {
                ""
            }
            + &if cfg.rolled_element_loops {
                "_rl".to_string()
            } else if cfg.rolled_phases != 0 {
                format!("_rp{}", rolled_phase_digits(cfg.rolled_phases))
            } else {
                String::new()
            }
            + &if cfg.lattice_steps > 1 {
                format!("_s{}", cfg.lattice_steps)
            } else {
                String::new()
            }
            + &label_part('_', cfg.lattice_boundary.tag())
            + if cfg.split_lines { "_sl" } else { "" }
            + if cfg.one_lattice_array { "_1a" } else { "" }
            + &label_part('_', slot_order_tag(cfg.lattice_slots))
            + &if cfg.gather_lookahead > 0 {
                format!("_ga{}", cfg.gather_lookahead)
            } else {
                String::new()
            }
            + if cfg.interior_last && !cfg.slot_arithmetic {
                "_tbl"
            } else {
                ""
            },
        source,
    )
    .define("REAL", T::CTYPE)
    .define("OP", op)
    .define("N", n)
    .define("Q", q)
    .define("EPB", epb)
    .define("GEO", (cfg.geo == GeoMode::OnTheFly) as u32)
    .define("MASS", mass as u32)
    .define("NGEO", ngeo)
    .define("GSTRIDE", gstride)
    .define(
        "INTLAST",
        (cfg.interior_last && cfg.variant == Variant::Pencil) as u32,
    )
    .define("MINB", {
        // bricks: a cap tuned for one element per block, kept within what a
        // multiprocessor can hold of these larger blocks (64 warps)
        let warps = (n.max(q).pow(2) * epb).div_ceil(32);
        let m = cfg.min_blocks.unwrap_or(1);
        if cfg.variant == Variant::Lattice {
            m.min((2048 / block[0]).max(1))
        } else if cfg.bricks.is_some() {
            m.min((64 / warps).max(1) as u32)
        } else {
            m
        }
    })
    .define("GEOLOAD", cfg.direct_geometry as u32)
    .define("PIPE", cfg.persistent as u32)
    .define("ZFIRST", cfg.register_columns as u32)
    .define("EO", cfg.even_odd as u32)
    .define("GEOPF", cfg.geo_prefetch.code())
    .define("GEOCS", cfg.evict_first_geometry as u32)
    .define("LATEIDX", cfg.late_indices as u32)
    .define("ORD", cfg.skeleton_zeroing.code())
    .define(
        "LALATE",
        (cfg.skeleton_zeroing == SkeletonZeroing::LookaheadLate) as u32,
    )
    .define("CHUNK", cfg.groups_in_sequence)
    .define("ZCHUNK", ZERO_CHUNK)
    .define("WXSLOW", pencil_weights(&cfg) as u32)
    .define("SKARITH", cfg.slot_arithmetic as u32);
    let spec = match bp3p {
        Some([bpr, bpp, upr, upp, rpr, rpp, spr, spp]) => spec
            .define("BPR", bpr)
            .define("BPP", bpp)
            .define("UPR", upr)
            .define("UPP", upp)
            .define("RPR", rpr)
            .define("RPP", rpp)
            .define("SPR", spr)
            .define("SPP", spp),
        None => spec,
    };
    let spec = match pitches {
        Some([zpr, zpp, ypr, ypp]) => spec
            .define("ZPR", zpr)
            .define("ZPP", zpp)
            .define("YPR", ypr)
            .define("YPP", ypp),
        None => spec,
    };
    let spec = match cfg.bricks {
        Some(b) if cfg.variant == Variant::Lattice => spec
            .define("LATTICE", 1)
            .define("PZ", lattice_pitches.map_or(0, |l| l[0]))
            .define("PY", lattice_pitches.map_or(0, |l| l[1]))
            .define(
                "ROLLMASK",
                if cfg.rolled_element_loops {
                    31
                } else {
                    cfg.rolled_phases
                },
            )
            .define("THREADS", block[0])
            .define("BX", b[0])
            .define("BY", b[1])
            .define("BZ", b[2] / cfg.lattice_steps.max(1))
            .define("STEPS", cfg.lattice_steps.max(1))
            .define("LBND", cfg.lattice_boundary.code())
            .define("SPLIT", cfg.split_lines as u32)
            .define("ONEARR", cfg.one_lattice_array as u32)
            .define("RING", (cfg.lattice_slots == SlotOrder::Ring) as u32)
            .define("LOOKAHEAD", cfg.gather_lookahead)
            .define("NSKB", brick_layout(b, p).skeleton_positions().len()),
        Some(b) => spec
            .define("BRICK", 1)
            .define("BX", b[0])
            .define("BY", b[1])
            .define("BZ", b[2])
            .define("NSKB", brick_layout(b, p).skeleton_positions().len()),
        None => spec,
    };
    Ok(BpKernel {
        spec,
        q,
        epb,
        dyn_smem,
        ngeo,
        gstride,
        mats,
        points: (pts, wts),
        block,
    })
}

/// The operators the tests and the CI compile check cover: BP1, BP3 and BP3.5, pure and
/// screened (α = 1.5).
pub const TESTED_KINDS: [TensorKind; 5] = [
    TensorKind::Mass,
    TensorKind::Diffusion { alpha: 0.0 },
    TensorKind::Diffusion { alpha: 1.5 },
    TensorKind::CollocatedDiffusion { alpha: 0.0 },
    TensorKind::CollocatedDiffusion { alpha: 1.5 },
];

/// `min_blocks`, or none with owner zeroing (tested configurations: its flags need
/// registers that the tightest lattice caps lack).
fn uncapped_for_owner(zeroing: SkeletonZeroing, min_blocks: Option<u32>) -> Option<u32> {
    min_blocks.filter(|_| zeroing != SkeletonZeroing::Owner)
}

/// Every configuration the GPU tests and `scripts/gpu-check.sh` benchmarks use, for the CI
/// compile check: `(config, order, is_f32)`.
pub fn tested_configurations() -> Vec<(BpConfig, usize, bool)> {
    let kinds = TESTED_KINDS;
    let base = |kind, geo, variant, interior_last, epb, min_blocks| BpConfig {
        kind,
        geo,
        q1d: None,
        elems_per_block: epb,
        variant,
        interior_last,
        min_blocks,
        direct_geometry: false,
        persistent: false,
        register_columns: false,
        even_odd: true,
        geo_prefetch: GeoPrefetch::None,
        evict_first_geometry: false,
        late_indices: false,
        skeleton_zeroing: SkeletonZeroing::Host,
        groups_in_sequence: 1,
        zero_ahead: 0,
        pipeline_chunks: 0,
        pencil_weights: false,
        conflict_free_pitches: false,
        bricks: None,
        slot_arithmetic: true,
        rolled_element_loops: false,
        rolled_phases: 0,
        lattice_steps: 1,
        lattice_boundary: LatticeBoundary::Global,
        split_lines: false,
        lattice_slots: SlotOrder::Lexicographic,
        compressible_indices: true,
        compressible_output: true,
        gather_lookahead: 0,
        one_lattice_array: false,
    };
    let mut v = Vec::new();
    for kind in kinds {
        for geo in [GeoMode::Stored, GeoMode::OnTheFly] {
            for p in 1..=8 {
                // v1, and v2 with both numberings, in both precisions
                for (variant, il) in [
                    (Variant::Slice2D, false),
                    (Variant::Pencil, false),
                    (Variant::Pencil, true),
                ] {
                    v.push((base(kind, geo, variant, il, None, None), p, false));
                    v.push((base(kind, geo, variant, il, None, None), p, true));
                }
                // v2 reading stored geometry directly
                if geo == GeoMode::Stored {
                    let mut c = base(kind, geo, Variant::Pencil, true, None, None);
                    c.direct_geometry = true;
                    v.push((c, p, false));
                    v.push((c, p, true));
                }
                // v5: persistent, pipelined (both numberings; direct geometry once)
                for il in [false, true] {
                    let mut c = base(kind, geo, Variant::Pencil, il, None, None);
                    c.persistent = true;
                    v.push((c, p, false));
                    v.push((c, p, true));
                }
                if geo == GeoMode::Stored {
                    let mut c = base(kind, geo, Variant::Pencil, true, None, None);
                    c.persistent = true;
                    c.direct_geometry = true;
                    v.push((c, p, false));
                }
                // v6 (BP1): register columns, both numberings, direct geometry once
                if kind == TensorKind::Mass {
                    for il in [false, true] {
                        let mut c = base(kind, geo, Variant::Pencil, il, None, None);
                        c.register_columns = true;
                        v.push((c, p, false));
                        v.push((c, p, true));
                    }
                    if geo == GeoMode::Stored {
                        let mut c = base(kind, geo, Variant::Pencil, true, None, None);
                        c.register_columns = true;
                        c.direct_geometry = true;
                        v.push((c, p, false));
                    }
                    if [3, 7].contains(&p) {
                        let mut c = base(kind, geo, Variant::Pencil, true, Some(2), None);
                        c.register_columns = true;
                        v.push((c, p, false));
                        // geometry prefetches (selectable for benchmarks)
                        if geo == GeoMode::Stored {
                            for pf in [GeoPrefetch::L1, GeoPrefetch::L2, GeoPrefetch::Registers] {
                                let mut c = base(kind, geo, Variant::Pencil, true, None, Some(8));
                                c.register_columns = true;
                                c.direct_geometry = true;
                                c.geo_prefetch = pf;
                                v.push((c, p, false));
                            }
                        }
                    }
                }
                // v8: the skeleton zeroed in the kernel by its owners (default block shape,
                // several elements per block at low orders, and one element per block)
                let mut c = base(kind, geo, Variant::Pencil, true, None, None);
                c.skeleton_zeroing = SkeletonZeroing::Owner;
                v.push((c, p, false));
                v.push((c, p, true));
                c.elems_per_block = Some(1);
                v.push((c, p, false));
                // several groups per block in sequence, with either zeroing
                for zeroing in [SkeletonZeroing::Host, SkeletonZeroing::Owner] {
                    let mut c = base(kind, geo, Variant::Pencil, true, None, None);
                    c.skeleton_zeroing = zeroing;
                    c.groups_in_sequence = 3;
                    v.push((c, p, false));
                }
                // the tuned defaults, as the benchmarks and solvers use them
                let t = BpConfig::tuned(kind, geo, p);
                v.push((t, p, false));
                v.push((t, p, true));
                // and with the other way to the skeleton slots (v25: arithmetic or table),
                // uncapped (under some tuned caps the other way spills)
                if t.interior_last {
                    let c = BpConfig {
                        slot_arithmetic: !t.slot_arithmetic,
                        min_blocks: None,
                        ..t
                    };
                    v.push((c, p, false));
                }
                // and with v20's pencil-ordered weights and conflict-free pitches, neither,
                // each alone and both, whichever the tuned kernel uses (f32: the pitches
                // do not apply), also in a brick
                if t.register_columns {
                    let stored = geo == GeoMode::Stored;
                    for (pw, cf) in [(false, false), (true, false), (false, true), (true, true)] {
                        let c = BpConfig {
                            pencil_weights: pw && stored,
                            conflict_free_pitches: cf,
                            ..t
                        };
                        if c != t {
                            v.push((c, p, false));
                        }
                    }
                    let both = BpConfig {
                        pencil_weights: stored,
                        conflict_free_pitches: true,
                        ..t
                    };
                    v.push((both, p, true));
                    v.push((both.with_bricks([2, 2, 1], p), p, false));
                }
                // and BP3 with the other layout than the tuned one (v20c's pitches or the
                // plain one; f32: the pitches do not apply), also on a natural numbering
                // and in a brick; the pitches uncapped where the tuned kernel does not
                // take them (under those caps some spill: p = 5 screened, p = 6)
                if matches!(kind, TensorKind::Diffusion { .. }) && !t.persistent {
                    let c = BpConfig {
                        conflict_free_pitches: !t.conflict_free_pitches,
                        min_blocks: if t.conflict_free_pitches {
                            t.min_blocks
                        } else {
                            None
                        },
                        ..t
                    };
                    v.push((c, p, false));
                    v.push((c, p, true));
                    v.push((c.with_bricks([2, 2, 1], p), p, false));
                    if geo == GeoMode::Stored {
                        let natural = BpConfig {
                            interior_last: false,
                            min_blocks: None,
                            skeleton_zeroing: SkeletonZeroing::Host,
                            ..c
                        };
                        v.push((natural, p, false));
                    }
                }
                // and with a block per brick (v19), in each brick shape the bench offers
                for (i, shape) in [[2, 1, 1], [2, 2, 1], [2, 2, 2]].into_iter().enumerate() {
                    let c = t.with_bricks(shape, p);
                    v.push((c, p, false));
                    if i == 1 {
                        v.push((c, p, true));
                    }
                }
                // and with the factors loaded evict-first, where they are loaded directly
                if t.direct_geometry && geo == GeoMode::Stored {
                    v.push((
                        BpConfig {
                            evict_first_geometry: true,
                            ..t
                        },
                        p,
                        false,
                    ));
                }
                // and with the scatter's indices reloaded, where the kernel is not persistent
                if !t.persistent {
                    v.push((
                        BpConfig {
                            late_indices: true,
                            ..t
                        },
                        p,
                        false,
                    ));
                }
                // and with the memset in address order instead of the reverse-order fill
                v.push((
                    BpConfig {
                        skeleton_zeroing: SkeletonZeroing::Memset,
                        ..t
                    },
                    p,
                    false,
                ));
                // and with the other ways of zeroing the skeleton, where they apply (not
                // the screened kernels: their tighter caps are tuned for the fill, and the
                // uncapped screened kernels with owner zeroing are checked above)
                if t.interior_last
                    && !t.persistent
                    && !(t.kind.has_mass() && kind != TensorKind::Mass)
                {
                    // (several groups in sequence uncapped: under the tuned caps the loop
                    // spills, e.g. BP3 p = 5, 7, 8 and BP3.5 p = 8; so does BP3 p = 7's
                    // owner zeroing since v21's layout, 4 bytes under the cap 8)
                    for zeroing in [
                        SkeletonZeroing::Host,
                        SkeletonZeroing::Owner,
                        SkeletonZeroing::Lookahead,
                        SkeletonZeroing::LookaheadLate,
                        SkeletonZeroing::Pipelined,
                        SkeletonZeroing::Overlapped,
                    ] {
                        for chunk in [1, 4] {
                            if zeroing.code() >= 2 && chunk > 1 {
                                continue;
                            }
                            let c = BpConfig {
                                skeleton_zeroing: zeroing,
                                groups_in_sequence: chunk,
                                min_blocks: if chunk > 1
                                    || (zeroing == SkeletonZeroing::Owner
                                        && matches!(kind, TensorKind::Diffusion { .. })
                                        && p == 7)
                                {
                                    None
                                } else {
                                    t.min_blocks
                                },
                                ..t
                            };
                            if c != t {
                                v.push((c, p, false));
                            }
                        }
                    }
                }
                // and with plain contractions (the even-odd form's comparison), uncapped:
                // the caps are tuned for the even-odd kernels and some spill in plain form
                let plain = BpConfig {
                    even_odd: false,
                    min_blocks: None,
                    ..t
                };
                v.push((plain, p, false));
                // and on a naturally numbered space, uncapped (a library caller with its own
                // numbering; `ferrofem solve --backend cuda` renumbers interior-last)
                if geo == GeoMode::Stored {
                    let natural = BpConfig {
                        interior_last: false,
                        min_blocks: None,
                        skeleton_zeroing: SkeletonZeroing::Host,
                        ..t
                    };
                    v.push((natural, p, false));
                }
                // v2 block-shape variants (tests at a few orders)
                if [1, 3, 7, 8].contains(&p) {
                    for epb in [1, 2] {
                        v.push((
                            base(kind, geo, Variant::Pencil, true, Some(epb), None),
                            p,
                            false,
                        ));
                        let mut c = base(kind, geo, Variant::Pencil, true, Some(epb), None);
                        c.persistent = true;
                        v.push((c, p, false));
                    }
                }
            }
        }
    }
    // v26: BP1 on the brick lattice, every shape the bench measures, f64, and the first
    // in f32; the tuned choice where there is one (its register cap), and with v27's
    // conflict-free pitches, in both precisions (each configuration once)
    let mut lattice = Vec::new();
    for p in 1..=8 {
        let v = &mut lattice;
        for (i, shape) in lattice_shapes(p).into_iter().enumerate() {
            v.push((BpConfig::lattice(shape), p, false));
            if i == 0 {
                v.push((BpConfig::lattice(shape), p, true));
            }
        }
        let t = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p)
            .unwrap_or_else(|| BpConfig::lattice(lattice_shapes(p)[0]));
        for f32 in [false, true] {
            v.push((t, p, f32));
            v.push((
                BpConfig {
                    conflict_free_pitches: !t.conflict_free_pitches,
                    ..t
                },
                p,
                f32,
            ));
        }
        // and zeroed in the kernel by the owner brick (v30), or after an overlapped fill
        // (v32), in both precisions
        for zeroing in [SkeletonZeroing::Owner, SkeletonZeroing::Overlapped] {
            for f32 in [false, true] {
                v.push((
                    BpConfig {
                        skeleton_zeroing: zeroing,
                        // (owner zeroing's flags need registers the tightest caps lack)
                        min_blocks: uncapped_for_owner(zeroing, t.min_blocks),
                        ..t
                    },
                    p,
                    f32,
                ));
            }
        }
        // and with the element loops the other way (v29), uncapped
        v.push((
            BpConfig {
                rolled_element_loops: !t.rolled_element_loops,
                min_blocks: None,
                ..t
            },
            p,
            false,
        ));
        // v31: the tuned step brick (or the first shape) walked in columns, f64, the
        // first also in f32 and rolled, uncapped and at the tuned cap
        for (i, (column, steps)) in lattice_columns(p).into_iter().enumerate() {
            // (the tuned cap where the columns' step is the tuned brick, else uncapped)
            let c = BpConfig {
                bricks: Some(column),
                lattice_steps: steps,
                // (a column's weights are not copied into shared memory)
                geo_prefetch: t.geo_prefetch.for_columns(),
                min_blocks: t
                    .min_blocks
                    .filter(|_| t.bricks == Some(lattice_shapes(p)[0])),
                ..t
            };
            v.push((c, p, false));
            v.push((
                BpConfig {
                    min_blocks: None,
                    ..c
                },
                p,
                false,
            ));
            if i == 0 {
                v.push((c, p, true));
                v.push((
                    BpConfig {
                        rolled_element_loops: !c.rolled_element_loops,
                        min_blocks: None,
                        ..c
                    },
                    p,
                    false,
                ));
                v.push((
                    BpConfig {
                        skeleton_zeroing: SkeletonZeroing::Overlapped,
                        ..c
                    },
                    p,
                    false,
                ));
                // v33: a column with the offsets kept in shared memory
                v.push((
                    BpConfig {
                        lattice_boundary: LatticeBoundary::SharedOffsets,
                        ..c
                    },
                    p,
                    false,
                ));
            }
        }
        // v33: the boundary's offsets in shared memory, and staged, in both precisions;
        // staged with each zeroing, and rolled the other way
        for boundary in [LatticeBoundary::SharedOffsets, LatticeBoundary::Staged] {
            for f32 in [false, true] {
                v.push((
                    BpConfig {
                        lattice_boundary: boundary,
                        ..t
                    },
                    p,
                    f32,
                ));
            }
        }
        for zeroing in [
            SkeletonZeroing::Host,
            SkeletonZeroing::Owner,
            SkeletonZeroing::Overlapped,
        ] {
            v.push((
                BpConfig {
                    lattice_boundary: LatticeBoundary::Staged,
                    skeleton_zeroing: zeroing,
                    min_blocks: uncapped_for_owner(zeroing, t.min_blocks),
                    ..t
                },
                p,
                false,
            ));
        }
        v.push((
            BpConfig {
                lattice_boundary: LatticeBoundary::Staged,
                rolled_element_loops: !t.rolled_element_loops,
                min_blocks: None,
                ..t
            },
            p,
            false,
        ));
        // v34: lines split across threads, on every shape, in both precisions on the
        // tuned one, with each boundary form and each zeroing, uncapped and at the caps
        // the bench scans
        for (i, shape) in lattice_shapes(p).into_iter().enumerate() {
            let c = BpConfig {
                split_lines: true,
                lattice_boundary: LatticeBoundary::SharedOffsets,
                ..BpConfig::lattice(shape)
            };
            v.push((c, p, false));
            if i == 0 {
                v.push((c, p, true));
            }
        }
        for c in every_boundary_and_zeroing(BpConfig {
            split_lines: true,
            ..t
        }) {
            v.push((c, p, false));
        }
        // (cap 4 spills at p = 8's 416-thread blocks)
        let caps: &[Option<u32>] = if p < 8 {
            &[None, Some(2), Some(3), Some(4)]
        } else {
            &[None, Some(2), Some(3)]
        };
        for &min_blocks in caps {
            v.push((
                BpConfig {
                    split_lines: true,
                    lattice_boundary: LatticeBoundary::SharedOffsets,
                    min_blocks,
                    ..t
                },
                p,
                false,
            ));
        }
        v.push((
            BpConfig {
                split_lines: true,
                lattice_boundary: LatticeBoundary::SharedOffsets,
                ..t
            },
            p,
            true,
        ));
        // v35: the boundary's slots in ring order on every shape (the offsets in shared
        // memory); and the tuned choice with the other slot order than its own (ring where
        // the tuned lattice is lexicographic, p = 1, 2, 7, 8; lexicographic, the earlier
        // defaults, at p = 3..6) in both precisions, uncapped, rolled the other way, with
        // each boundary form and each zeroing, split lines, and walked in a column
        for shape in lattice_shapes(p) {
            v.push((
                BpConfig {
                    lattice_boundary: LatticeBoundary::SharedOffsets,
                    lattice_slots: SlotOrder::Ring,
                    ..BpConfig::lattice(shape)
                },
                p,
                false,
            ));
        }
        let tr = BpConfig {
            lattice_slots: match t.lattice_slots {
                SlotOrder::Lexicographic => SlotOrder::Ring,
                SlotOrder::Ring => SlotOrder::Lexicographic,
            },
            ..t
        };
        v.push((tr, p, false));
        v.push((tr, p, true));
        v.push((
            BpConfig {
                min_blocks: None,
                ..tr
            },
            p,
            false,
        ));
        v.push((
            BpConfig {
                rolled_element_loops: !tr.rolled_element_loops,
                min_blocks: None,
                ..tr
            },
            p,
            false,
        ));
        for c in every_boundary_and_zeroing(tr) {
            v.push((c, p, false));
        }
        v.push((
            BpConfig {
                split_lines: true,
                lattice_boundary: LatticeBoundary::SharedOffsets,
                ..tr
            },
            p,
            false,
        ));
        if let Some(&(column, steps)) = lattice_columns(p).first() {
            // (v39: and with the column's weights prefetched into L2 at the block's start)
            for geo_prefetch in [GeoPrefetch::None, GeoPrefetch::L2] {
                v.push((
                    BpConfig {
                        bricks: Some(column),
                        lattice_steps: steps,
                        lattice_boundary: LatticeBoundary::SharedOffsets,
                        min_blocks: None,
                        geo_prefetch,
                        ..tr
                    },
                    p,
                    false,
                ));
            }
        }
        // v39: the brick's weights prefetched into L2 at the block's start, v40: loaded
        // evict-first, both precisions
        for f32 in [false, true] {
            for (geo_prefetch, evict_first_geometry) in
                [(GeoPrefetch::L2, false), (t.geo_prefetch, true)]
            {
                v.push((
                    BpConfig {
                        geo_prefetch,
                        evict_first_geometry,
                        // (v42's lookahead with the weights read from L2 spills 52 bytes at
                        // p = 7's cap of 80 registers; the defaults pair it with the copy
                        // into shared memory)
                        gather_lookahead: if geo_prefetch == GeoPrefetch::Shared {
                            t.gather_lookahead
                        } else {
                            0
                        },
                        ..t
                    },
                    p,
                    f32,
                ));
            }
        }
        // v41: the brick's weights bulk-copied into shared memory, both precisions, on the
        // tuned choice, split lines, each boundary form and zeroing, and every shape whose
        // weights make whole 16-byte granules
        for f32 in [false, true] {
            for split_lines in [false, true] {
                v.push((
                    BpConfig {
                        geo_prefetch: GeoPrefetch::Shared,
                        split_lines,
                        ..t
                    },
                    p,
                    f32,
                ));
            }
        }
        for c in every_boundary_and_zeroing(BpConfig {
            geo_prefetch: GeoPrefetch::Shared,
            ..t
        }) {
            v.push((c, p, false));
        }
        // v42: the gather's offsets and interior nodes asked of L2 one and many bricks ahead
        // (past the last brick: none), both precisions
        for (gather_lookahead, f32) in [(1, false), (1, true), (400, false)] {
            v.push((
                BpConfig {
                    gather_lookahead,
                    ..t
                },
                p,
                f32,
            ));
        }
        // the tuned lattice walked in the first column shape (v31), uncapped, its weights as
        // columns take them: the base of the v48 and v51 column variants below
        let first_column = lattice_columns(p).first().map(|&(column, steps)| BpConfig {
            bricks: Some(column),
            lattice_steps: steps,
            geo_prefetch: t.geo_prefetch.for_columns(),
            min_blocks: None,
            ..t
        });
        // v48: the other lattice array form than the tuned one (two arrays where the default
        // has one, p = 3..8; one at p = 1, 2), both precisions; uncapped, at p = 7's cap 4
        // (the fourth block one array makes room for; p = 8's cap 3 is the default's), and
        // rolled the other way; with each boundary form and zeroing, the other slot order, the
        // weights in shared memory and not; then one array on every shape, and walked in
        // columns
        let other = BpConfig {
            one_lattice_array: !t.one_lattice_array,
            ..t
        };
        for f32 in [false, true] {
            v.push((other, p, f32));
        }
        for min_blocks in [None, Some(4).filter(|_| p == 7)] {
            v.push((
                BpConfig {
                    min_blocks,
                    ..other
                },
                p,
                false,
            ));
        }
        v.push((
            BpConfig {
                rolled_element_loops: !other.rolled_element_loops,
                min_blocks: None,
                ..other
            },
            p,
            false,
        ));
        for c in every_boundary_and_zeroing(other) {
            v.push((c, p, false));
        }
        for c in [
            BpConfig {
                one_lattice_array: other.one_lattice_array,
                ..tr
            },
            BpConfig {
                geo_prefetch: GeoPrefetch::Shared,
                ..other
            },
            BpConfig {
                geo_prefetch: GeoPrefetch::None,
                gather_lookahead: 0,
                ..other
            },
        ] {
            v.push((c, p, false));
        }
        for shape in lattice_shapes(p) {
            for geo_prefetch in [GeoPrefetch::None, GeoPrefetch::Shared] {
                let c = BpConfig {
                    one_lattice_array: true,
                    geo_prefetch,
                    lattice_boundary: LatticeBoundary::SharedOffsets,
                    lattice_slots: SlotOrder::Ring,
                    ..BpConfig::lattice(shape)
                };
                // (where the weights fit beside the lattice)
                if bp_kernel::<f64>(c, p).is_ok() {
                    v.push((c, p, false));
                }
            }
        }
        if let Some(c) = first_column {
            v.push((
                BpConfig {
                    one_lattice_array: true,
                    ..c
                },
                p,
                false,
            ));
        }
        for shape in lattice_shapes(p) {
            let c = BpConfig {
                geo_prefetch: GeoPrefetch::Shared,
                lattice_boundary: LatticeBoundary::SharedOffsets,
                lattice_slots: SlotOrder::Ring,
                ..BpConfig::lattice(shape)
            };
            // (where the weights fit beside the lattice)
            if bp_kernel::<f64>(c, p).is_ok() {
                v.push((c, p, false));
            }
        }
        // v51: only some phases' element loops rolled (phase 3; phases 2 and 3; the global
        // phases 1 and 5), the others unrolled, at the tuned cap (not p = 6's: rolled phases
        // there spill 24 bytes at the cap 6) and uncapped, both precisions for phases 2 and
        // 3; and phase 3 rolled on a column walked in steps
        for (i, rolled_phases) in [0b00100u8, 0b00110, 0b10001].into_iter().enumerate() {
            let c = BpConfig {
                rolled_element_loops: false,
                rolled_phases,
                ..t
            };
            if p != 6 {
                v.push((c, p, false));
            }
            v.push((
                BpConfig {
                    min_blocks: None,
                    ..c
                },
                p,
                i == 1,
            ));
        }
        if let Some(c) = first_column {
            v.push((
                BpConfig {
                    rolled_element_loops: false,
                    rolled_phases: 0b00100,
                    ..c
                },
                p,
                false,
            ));
        }
    }
    for (c, p, f32) in lattice {
        // (the variants with split lines or the staged boundary derived from a default with
        // one lattice array, v48, take two: those forms rewrite other threads' nodes)
        let c = (
            BpConfig {
                one_lattice_array: c.one_lattice_array
                    && !c.split_lines
                    && c.lattice_boundary != LatticeBoundary::Staged,
                // (p = 7's cap 4 and p = 8's cap 3, the defaults', hold whole lines' weights in
                // shared memory only: read from L2 or global memory they spill 80-184 bytes, so
                // those variants run uncapped)
                min_blocks: c.min_blocks.filter(|&m| {
                    c.split_lines
                        || c.geo_prefetch == GeoPrefetch::Shared
                        || !(p == 7 && m >= 4 || p == 8 && m >= 3)
                }),
                ..c
            },
            p,
            f32,
        );
        if !v.contains(&c) {
            v.push(c);
        }
    }
    v
}

/// `c` with each lattice boundary form and each skeleton zeroing the lattice kernel takes
/// (owner zeroing uncapped where its flags need the registers): the combinations the GPU
/// tests cover for a lattice variant.
fn every_boundary_and_zeroing(c: BpConfig) -> Vec<BpConfig> {
    let mut v = Vec::new();
    for boundary in [
        LatticeBoundary::Global,
        LatticeBoundary::SharedOffsets,
        LatticeBoundary::Staged,
    ] {
        for zeroing in [
            SkeletonZeroing::Host,
            SkeletonZeroing::Owner,
            SkeletonZeroing::Overlapped,
        ] {
            v.push(BpConfig {
                lattice_boundary: boundary,
                skeleton_zeroing: zeroing,
                min_blocks: uncapped_for_owner(zeroing, c.min_blocks),
                ..c
            });
        }
    }
    v
}

impl<T: GpuReal> GpuBp<T> {
    /// Builds the operator for `space` (scalar, on a hexahedral `mesh`), uploading the
    /// restriction, the geometry (or vertices) and the 1-D matrices, and compiling the
    /// kernel specialisation (or taking it from the cache).
    pub fn new(
        dev: &Arc<GpuDevice>,
        mesh: &Mesh,
        space: &H1Space,
        cfg: BpConfig,
    ) -> Result<GpuBp<T>, GpuError> {
        if mesh.cell_type() != CellType::Hexahedron || space.cell_type() != CellType::Hexahedron {
            return Err(GpuError::Unsupported(format!(
                "bake-off operators need hexahedra, got {}",
                mesh.cell_type()
            )));
        }
        if space.ncomp() != 1 {
            return Err(GpuError::Unsupported(
                "bake-off kernels are scalar (ncomp = 1)".into(),
            ));
        }
        let p = space.order();
        let k = bp_kernel::<T>(cfg, p)?;
        let (q, epb, dyn_smem, gstride, block) = (k.q, k.epb, k.dyn_smem, k.gstride, k.block);
        let (pts, wts) = (k.points.0.clone(), k.points.1.clone());
        let mats = k.mats.clone();
        let spec = k.spec;
        let nelem = mesh.num_cells();
        let q3 = q * q * q;
        // element vertices [elem][3][8]: the input of on-the-fly geometry, and of the device
        // kernel that computes stored factors (so 4e7-dof problems need no host geometry)
        let mut verts: Vec<T> = Vec::with_capacity(nelem * 24);
        for c in 0..nelem {
            let cell = mesh.cell(c);
            for d in 0..3 {
                for &v in cell {
                    verts.push(T::of(mesh.vertex(v as usize)[d]));
                }
            }
        }
        // restriction: full offsets, (interior-last) compact skeleton offsets, or (bricks)
        // the brick boundaries' offsets
        let mut skpos_host = None;
        let (offsets_host, nskel) = if let Some(b) = cfg.bricks {
            let layout = space
                .brick_layout()
                .filter(|l| l.shape == b)
                .ok_or_else(|| {
                    GpuError::Unsupported(format!(
                    "bricks {b:?} need a space numbered by H1Space::bricked({b:?}), this one is {}",
                    match space.brick_layout() {
                        Some(l) => format!("bricked {:?}", l.shape),
                        None => "not bricked".into(),
                    }
                ))
                })?;
            if cfg.variant == Variant::Lattice && layout.slots != cfg.lattice_slots {
                return Err(GpuError::Unsupported(format!(
                    "the lattice kernel for {:?} slots needs a space numbered by H1Space::bricked_in({b:?}, SlotOrder::{:?}); this one's slots are {:?}",
                    cfg.lattice_slots, cfg.lattice_slots, layout.slots
                )));
            }
            skpos_host = (cfg.variant == Variant::Pencil).then(|| {
                layout
                    .skeleton_positions()
                    .iter()
                    .map(|q| (q[0] | q[1] << 8 | q[2] << 16) as u32)
                    .collect::<Vec<u32>>()
            });
            let off = space.brick_skeleton_offsets().ok_or_else(|| {
                GpuError::Unsupported("the bricked space has no brick offsets".into())
            })?;
            (off, layout.skeleton_nodes)
        } else if cfg.interior_last {
            let Some(nskel) = space.skeleton_nodes() else {
                return Err(GpuError::Unsupported(
                    "interior_last is set but the space is not numbered interior-last (H1Space::interior_last)".into(),
                ));
            };
            (skeleton_offsets(space).0, nskel)
        } else {
            (space.restriction().offsets().to_vec(), space.num_dofs())
        };
        let func = dev.function(&spec, "bp_apply")?;
        // The opt-in covers static plus dynamic shared memory beyond 48 KiB; the kernel's
        // few static bytes (the geometry mbarrier) can tip a dynamic size just under it
        // over, so the limit is raised for any dynamic size (harmless below 48 KiB).
        if dyn_smem > 0 {
            func.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dyn_smem as i32,
            )
            .map_err(|e| GpuError::driver("raising the dynamic shared memory limit", e))?;
        }
        let owners = if !cfg.skeleton_zeroing.in_kernel() || cfg.skeleton_zeroing.code() == 3 {
            None
        } else {
            // (the lattice kernel's groups are bricks, one row of brick-boundary offsets each)
            let (nsk, rows) = match (cfg.variant, cfg.bricks) {
                (Variant::Lattice, Some(b)) => (brick_layout(b, p).skeleton_positions().len(), 1),
                _ => (skeleton_table(p + 1).1, epb * cfg.groups_in_sequence),
            };
            let OwnerSchedule { own, pstart, preds } =
                owner_schedule(&offsets_host, nsk, nskel, rows)?;
            let ngroups = own.len() - 1;
            // lookahead: one wave of resident groups ahead (scaled by `zero_ahead`)
            let ahead = if cfg.skeleton_zeroing.code() == 2 {
                let wave = resident_blocks_per_sm(&func, p, q, epb, dyn_smem)? * dev.sm_count();
                let pct = if cfg.zero_ahead == 0 {
                    100
                } else {
                    cfg.zero_ahead as usize
                };
                (wave * pct / 100).clamp(1, ngroups)
            } else {
                0
            };
            let prefill = own[ahead];
            Some(OwnerState {
                flags: DeviceVec::zeros(dev, ngroups, "owner flags")?,
                own: DeviceVec::from_host(dev, &own, "owned skeleton ranges")?,
                pstart: DeviceVec::from_host(dev, &pstart, "owner lists")?,
                // never empty: a zero-length device buffer cannot be passed
                preds: DeviceVec::from_host(
                    dev,
                    if preds.is_empty() {
                        &[0u32][..]
                    } else {
                        &preds
                    },
                    "owner lists",
                )?,
                epoch: std::sync::atomic::AtomicU32::new(0),
                ahead: ahead as u32,
                prefill,
            })
        };
        // pipelined zeroing: the ranges each element group owns (the launches are cut
        // once the model is known, below)
        let pipeline_own = if cfg.skeleton_zeroing.code() == 3 {
            let nsk = skeleton_table(p + 1).1;
            Some(owner_schedule(&offsets_host, nsk, nskel, epb)?.own)
        } else {
            None
        };
        let ident = dev.function(&spec, "bp_dirichlet_identity")?;
        let zero_fill = if cfg.variant != Variant::Slice2D
            && matches!(
                cfg.skeleton_zeroing,
                SkeletonZeroing::Host
                    | SkeletonZeroing::Lookahead
                    | SkeletonZeroing::LookaheadLate
                    | SkeletonZeroing::Pipelined
                    | SkeletonZeroing::Overlapped
            ) {
            Some(dev.function(&spec, "bp_zero_skeleton")?)
        } else {
            None
        };
        if cfg.bricks.is_some() && (nelem % epb != 0 || space.restriction().num_elem() != nelem) {
            return Err(GpuError::Unsupported(format!(
                "{nelem} cells are not whole bricks of {epb} elements of the space's {}",
                space.restriction().num_elem()
            )));
        }
        let groups = nelem.div_ceil(epb);
        let grid = if cfg.persistent {
            // one wave: as many blocks as can be resident at once
            let per_sm = resident_blocks_per_sm(&func, p, q, epb, dyn_smem)?;
            if per_sm == 0 {
                return Err(GpuError::Unsupported(format!(
                    "{} cannot be resident on this device (shared memory or registers)",
                    spec.name
                )));
            }
            groups.min(per_sm * dev.sm_count())
        } else {
            groups.div_ceil(cfg.groups_in_sequence)
        } as u32;
        let mats_t: Vec<T> = mats.iter().map(|&x| T::of(x)).collect();
        let verts = DeviceVec::from_host(dev, &verts, "element vertices")?;
        let geo = match cfg.geo {
            GeoMode::OnTheFly => verts,
            GeoMode::Stored => {
                let mut geo =
                    DeviceVec::<T>::zeros(dev, nelem * gstride, "stored geometric factors")?;
                let reft: Vec<T> = pts.iter().chain(&wts).map(|&x| T::of(x)).collect();
                let reft = DeviceVec::from_host(dev, &reft, "reference points")?;
                let setup = dev.function(&spec, "bp_setup_geometry")?;
                let ne = nelem as u32;
                let cfgl = LaunchConfig::for_num_elems((nelem * q3).min(1 << 30) as u32);
                let stream = dev.stream();
                let mut b = stream.launch_builder(&setup);
                b.arg(&ne)
                    .arg(verts.slice())
                    .arg(reft.slice())
                    .arg(geo.slice_mut());
                // SAFETY: matches bp_setup_geometry(nelem, xv, ref, geo).
                unsafe { b.launch(cfgl) }.map_err(|e| GpuError::Launch {
                    kernel: "bp_setup_geometry".into(),
                    source: e,
                })?;
                dev.synchronize()?;
                geo
            }
        };
        let mut op = GpuBp {
            dev: dev.clone(),
            cfg,
            order: p,
            q1d: q,
            nelem,
            ndofs: space.num_dofs(),
            epb,
            dyn_smem,
            block,
            grid,
            offsets: upload_indices(dev, &offsets_host, cfg.compressible_indices)?,
            nskel,
            geo,
            mats: DeviceVec::from_host(dev, &mats_t, "1-D matrices")?,
            alpha: T::of(if cfg.kind == TensorKind::Mass {
                0.0
            } else {
                cfg.kind.alpha()
            }),
            dirichlet: None,
            spec,
            func,
            ident,
            zero_fill,
            owners,
            pipeline: None,
            skpos: skpos_host
                .map(|v| DeviceVec::from_host(dev, &v, "brick slot positions"))
                .transpose()?,
            brick_layout: cfg.bricks.and(space.brick_layout()),
        };

        if let Some(own) = pipeline_own {
            let chunks = if cfg.pipeline_chunks > 0 {
                cfg.pipeline_chunks as usize
            } else {
                // each launch's model traffic about a third of L2, so that the zeros it
                // writes are still there when the next launch's atomics come
                let target = dev.l2_bytes() as f64 / 3.0;
                (op.model().bytes / target).ceil() as usize
            };
            op.pipeline = Some(Pipeline::new(&own, chunks));
        }
        Ok(op)
    }

    /// Rows with these dofs become identity rows (Dirichlet conditions for CG): inputs at
    /// them are ignored by the element kernel only if they are zero, so callers keep the
    /// constrained entries of search directions at zero, and `apply` copies them through.
    pub fn set_dirichlet(&mut self, dofs: &[u32]) -> Result<(), GpuError> {
        self.dirichlet = if dofs.is_empty() {
            None
        } else {
            Some(DeviceVec::from_host(&self.dev, dofs, "Dirichlet dofs")?)
        };
        Ok(())
    }

    /// Number of global dofs.
    pub fn ndofs(&self) -> usize {
        self.ndofs
    }
    /// Number of elements.
    pub fn nelem(&self) -> usize {
        self.nelem
    }
    /// Polynomial order.
    pub fn order(&self) -> usize {
        self.order
    }
    /// Quadrature points per direction.
    pub fn q1d(&self) -> usize {
        self.q1d
    }
    /// Elements per thread block.
    pub fn elems_per_block(&self) -> usize {
        self.epb
    }
    /// The configuration.
    pub fn config(&self) -> BpConfig {
        self.cfg
    }
    /// The kernel specialisation.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }
    /// With lookahead skeleton zeroing: how many element groups ahead a block zeroes.
    pub fn zero_ahead_groups(&self) -> Option<u32> {
        self.owners
            .as_ref()
            .filter(|_| self.cfg.skeleton_zeroing.code() == 2)
            .map(|o| o.ahead)
    }

    /// With pipelined skeleton zeroing: the launches of one application.
    pub fn pipeline(&self) -> Option<&Pipeline> {
        self.pipeline.as_ref()
    }

    /// Thread blocks launched per application (one wave for the persistent kernel).
    pub fn grid(&self) -> u32 {
        self.grid
    }
    /// A zero vector of the operator's length for its output (or a Krylov method's
    /// vectors): in compressible memory with [`BpConfig::compressible_output`] where the
    /// device can compress, plain memory otherwise.
    pub fn output_vector(&self, what: &str) -> Result<DeviceVec<T>, GpuError> {
        DeviceVec::zeros_preferably_compressible(
            &self.dev,
            self.ndofs,
            what,
            self.cfg.compressible_output,
        )
    }

    /// Whether the restriction's offsets live in compressible memory
    /// ([`BpConfig::compressible_indices`] on a device that compresses).
    pub fn indices_compressible(&self) -> bool {
        self.offsets.is_compressible()
    }

    /// Registers per thread of the compiled kernel.
    pub fn registers(&self) -> i32 {
        self.func.num_regs().unwrap_or(-1)
    }

    /// The stored geometric factors `[elem][ngeo][q^3]` (or the vertices `[elem][3][8]` of
    /// the on-the-fly variant), copied to the host — for tests.
    pub fn geometry_to_host(&self) -> Result<Vec<T>, GpuError> {
        self.geo.to_host()
    }

    /// `v = A u` (v is overwritten).
    pub fn apply(&self, u: &DeviceVec<T>, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        if u.len() != self.ndofs || v.len() != self.ndofs {
            return Err(GpuError::Size {
                what: "bake-off operator vectors",
                expected: self.ndofs,
                got: u.len().min(v.len()),
            });
        }

        // interior nodes are stored, not accumulated: only the skeleton part needs zeroing,
        // and not here when the kernel's blocks zero what they own
        match (
            &self.owners,
            &self.pipeline,
            self.cfg.interior_last || self.cfg.bricks.is_some(),
        ) {
            (Some(o), _, _) => self.zero_prefix(v, o.prefill)?,
            (None, Some(pl), _) => self.zero_prefix(v, pl.prefill)?,
            (None, None, true) => self.zero_prefix(v, self.nskel as u32)?,
            (None, None, false) => v.fill_zero()?,
        }
        let cfg = LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (self.block[0], self.block[1], self.block[2]),
            shared_mem_bytes: self.dyn_smem as u32,
        };
        let nelem = self.nelem as u32;
        let stream = self.dev.stream();
        if let Some(pl) = &self.pipeline {
            self.launch_pipeline(pl, cfg, u, v)?;
            return self.dirichlet_identity(u, v);
        }
        if self.cfg.skeleton_zeroing == SkeletonZeroing::Overlapped
            && self.dev.compute_capability().0 >= 9
        {
            self.launch_overlapped(cfg, u, v)?;
            return self.dirichlet_identity(u, v);
        }
        let mut b = stream.launch_builder(&self.func);
        let nskel = self.nskel as u32;
        b.arg(&nelem)
            .arg(&nskel)
            .arg(self.offsets.slice())
            .arg(self.geo.slice())
            .arg(self.mats.slice())
            .arg(u.slice())
            .arg(v.slice_mut())
            .arg(&self.alpha);
        if let Some(sk) = &self.skpos {
            b.arg(sk.slice());
        }
        let epoch;
        if let Some(o) = &self.owners {
            use std::sync::atomic::Ordering;
            epoch = o.epoch.fetch_add(1, Ordering::Relaxed) % 2 + 1;
            b.arg(o.flags.slice())
                .arg(o.own.slice())
                .arg(o.pstart.slice())
                .arg(o.preds.slice())
                .arg(&epoch);
            if self.cfg.skeleton_zeroing.code() == 2 {
                b.arg(&o.ahead);
            }
        }
        // SAFETY: argument list matches bp_apply's signature (with the ORD parameters when
        // the kernel zeroes the skeleton); buffers are sized by `new`.
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
            kernel: self.spec.name.clone(),
            source: e,
        })?;
        self.dirichlet_identity(u, v)
    }

    /// The launch of [`SkeletonZeroing::Overlapped`] (sm_90): programmatic dependent launch
    /// after the skeleton fill, which lets its blocks start as soon as the fill's have (the
    /// fill triggers at its start). The fill itself was stream-ordered, so it began only
    /// once all earlier work was complete and the input is final; the kernel waits for the
    /// fill's zeros only before its scatter.
    fn launch_overlapped(
        &self,
        cfg: LaunchConfig,
        u: &DeviceVec<T>,
        v: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        let one = ApplyLaunch {
            grid: cfg.grid_dim.0,
            chunk: None,
            pdl: true,
        };
        self.launch_applies(cfg, u, v, &[one])
    }

    /// The launches of [`SkeletonZeroing::Pipelined`], each with programmatic dependent
    /// launch: a launch waits for its predecessor only before its scatter, and reads its
    /// input before. The first launch's predecessor is the (stream-ordered) skeleton fill,
    /// which began only once all earlier work was complete, so its input is final; without
    /// that fill (nothing to prefill) the first launch is stream-ordered itself.
    fn launch_pipeline(
        &self,
        pl: &Pipeline,
        cfg: LaunchConfig,
        u: &DeviceVec<T>,
        v: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        let prefilled = pl.prefill > 0 && self.zero_fill.is_some();
        let launches: Vec<ApplyLaunch> = pl
            .chunks
            .iter()
            .enumerate()
            .map(|(k, ch)| ApplyLaunch {
                grid: ch.groups,
                chunk: Some([ch.gbase, ch.zbeg, ch.zend]),
                pdl: k > 0 || prefilled,
            })
            .collect();
        self.launch_applies(cfg, u, v, &launches)
    }

    /// `bp_apply` launched in order on the operator's stream through `cuLaunchKernelEx`,
    /// for the launch attribute that cudarc's launch builder does not set: programmatic
    /// dependent launch (sm_90 only; elsewhere the launches are stream-ordered and the
    /// kernels' waits no-ops).
    fn launch_applies(
        &self,
        cfg: LaunchConfig,
        u: &DeviceVec<T>,
        v: &mut DeviceVec<T>,
        launches: &[ApplyLaunch],
    ) -> Result<(), GpuError> {
        use cudarc::driver::sys;
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let stream = self.dev.stream();
        self.dev
            .context()
            .bind_to_thread()
            .map_err(|e| GpuError::driver("binding the context", e))?;
        let sm90 = self.dev.compute_capability().0 >= 9;
        let (nelem, nskel) = (self.nelem as u32, self.nskel as u32);
        let (offsets, _s0) = self.offsets.slice().device_ptr(stream);
        let (geo, _s1) = self.geo.slice().device_ptr(stream);
        let (mats, _s2) = self.mats.slice().device_ptr(stream);
        let (up, _s3) = u.slice().device_ptr(stream);
        let (vp, _s4) = v.slice_mut().device_ptr_mut(stream);
        let alpha = self.alpha;
        for l in launches {
            let mut args: Vec<*mut std::ffi::c_void> = vec![
                &nelem as *const u32 as *mut _,
                &nskel as *const u32 as *mut _,
                &offsets as *const sys::CUdeviceptr as *mut _,
                &geo as *const sys::CUdeviceptr as *mut _,
                &mats as *const sys::CUdeviceptr as *mut _,
                &up as *const sys::CUdeviceptr as *mut _,
                &vp as *const sys::CUdeviceptr as *mut _,
                &alpha as *const T as *mut _,
            ];
            if let Some(c) = &l.chunk {
                args.extend(c.iter().map(|x| x as *const u32 as *mut std::ffi::c_void));
            }
            // SAFETY: an all-zero launch attribute is valid; the id and value set below.
            let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
            attr.id =
                sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
            attr.value.programmaticStreamSerializationAllowed = 1;
            let pdl = sm90 && l.pdl;
            let config = sys::CUlaunchConfig {
                gridDimX: l.grid,
                gridDimY: 1,
                gridDimZ: 1,
                blockDimX: cfg.block_dim.0,
                blockDimY: cfg.block_dim.1,
                blockDimZ: cfg.block_dim.2,
                sharedMemBytes: cfg.shared_mem_bytes,
                hStream: stream.cu_stream(),
                attrs: if pdl { &mut attr } else { std::ptr::null_mut() },
                numAttrs: pdl as u32,
            };
            // SAFETY: the arguments match bp_apply's signature: ORD 3's chunk arguments
            // where a launch has them (the pipelined kernel), none otherwise (ORD 4); the
            // device pointers and values outlive the call, which copies them; each launch
            // covers element groups of the buffers sized by `new` (the pipeline's chunks,
            // or the whole grid).
            unsafe {
                sys::cuLaunchKernelEx(
                    &config,
                    self.func.cu_function(),
                    args.as_mut_ptr(),
                    std::ptr::null_mut(),
                )
            }
            .result()
            .map_err(|e| GpuError::Launch {
                kernel: self.spec.name.clone(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// Copies the Dirichlet rows through (identity rows) after the element kernel.
    fn dirichlet_identity(&self, u: &DeviceVec<T>, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        let stream = self.dev.stream();
        if let Some(d) = &self.dirichlet {
            let m = d.len() as u32;
            let cfg = LaunchConfig::for_num_elems(m);
            let mut b = stream.launch_builder(&self.ident);
            b.arg(d.slice()).arg(u.slice()).arg(v.slice_mut()).arg(&m);
            // SAFETY: matches bp_dirichlet_identity.
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: "bp_dirichlet_identity".into(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// Zeroes the first `n` values of `v` (the skeleton, or with lookahead zeroing the part
    /// owned by the first groups) before an apply accumulates into it: the v2 kernels'
    /// reverse-order fill (the lines the apply touches first are written last and are
    /// still in L2), else a memset.
    fn zero_prefix(&self, v: &mut DeviceVec<T>, n: u32) -> Result<(), GpuError> {
        if n == 0 {
            return Ok(());
        }
        let Some(f) = &self.zero_fill else {
            return v.fill_zero_prefix(n as usize);
        };
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(ZERO_CHUNK), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let stream = self.dev.stream();
        let mut b = stream.launch_builder(f);
        b.arg(v.slice_mut()).arg(&n);
        // SAFETY: matches bp_zero_skeleton; v holds at least nskel values (checked by apply).
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
            kernel: "bp_zero_skeleton".into(),
            source: e,
        })?;
        Ok(())
    }

    /// The bytes/flops model of one application (the operator crate's model, shared with
    /// the CPU benchmark): L-vectors in and out once, 4-byte offsets, stored factors or
    /// vertex data.
    pub fn model_spec(&self) -> ModelSpec {
        ModelSpec {
            kind: self.cfg.kind,
            dim: 3,
            order: self.order,
            q: self.q1d,
            ncomp: 1,
            num_elem: self.nelem,
            num_nodes: self.ndofs,
            scalar_bytes: T::BYTES,
            geometry: match self.cfg.geo {
                GeoMode::Stored => GeometryMode::Stored,
                GeoMode::OnTheFly => GeometryMode::OnTheFly,
            },
            indices: if let Some(b) = self.cfg.bricks {
                IndexTraffic::Bricks(b)
            } else if self.cfg.interior_last {
                IndexTraffic::Skeleton
            } else {
                IndexTraffic::Offsets
            },
            vectors: VectorTraffic::LVector,
            output_read: false,
        }
    }

    /// Bytes and flops of one application by [`GpuBp::model_spec`].
    pub fn model(&self) -> Model {
        model::model(&self.model_spec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The modelled pitches apply only to the rule they were modelled for (p + 2 points):
    /// a solve's own rule with more points would otherwise get pitches smaller than its
    /// arrays (the kernel refuses to compile them).
    #[test]
    fn pitch_tables_apply_only_to_the_modelled_rule() {
        for p in 3..=8 {
            let mut c = BpConfig::tuned(TensorKind::Diffusion { alpha: 0.0 }, GeoMode::Stored, p);
            assert!(c.conflict_free_pitches);
            assert!(bp3_pitches(&c, p, 8).is_some());
            c.q1d = Some(p + 2);
            assert!(bp3_pitches(&c, p, 8).is_some());
            c.q1d = Some(p + 3);
            assert!(bp3_pitches(&c, p, 8).is_none());
            let mut m = BpConfig::tuned(TensorKind::Mass, GeoMode::Stored, p);
            assert!(zfirst_pitches(&m, p, 8).is_some());
            m.q1d = Some(p + 1);
            assert!(zfirst_pitches(&m, p, 8).is_none());
        }
    }

    /// The kernels' closed form of a skeleton slot (`skeleton_slot` in bp_common.cuh under
    /// SKARITH, written out here the same way) gives [`skeleton_table`]'s slots at every
    /// order the kernels take; the GPU tests check the kernels' text against the CPU twin.
    #[test]
    fn skeleton_slot_closed_form_matches_the_table() {
        for n in 2..=16usize {
            let (t, nsk) = skeleton_table(n);
            let m = n as i64 - 2;
            let below = |c: i64| if c < 1 { 0 } else { (c - 1).min(m) };
            let mut seen = 0;
            for k in 0..n as i64 {
                for j in 0..n as i64 {
                    for i in 0..n as i64 {
                        let lex = (k * n as i64 + j) * n as i64 + i;
                        let inner = |c: i64| c > 0 && c < n as i64 - 1;
                        if inner(i) && inner(j) && inner(k) {
                            assert_eq!(t[lex as usize], u16::MAX);
                            continue;
                        }
                        let before = below(k) * m * m
                            + if inner(k) {
                                below(j) * m + if inner(j) { below(i) } else { 0 }
                            } else {
                                0
                            };
                        assert_eq!(t[lex as usize] as i64, lex - before, "n={n} ({i},{j},{k})");
                        seen += 1;
                    }
                }
            }
            assert_eq!(seen, nsk);
        }
    }

    /// v31: a lattice brick walked in steps specialises the kernel for one step (its BZ,
    /// its shared memory plus the carried plane) and the column's boundary slots; steps
    /// that do not divide the column, steps on other kernels and owner zeroing with steps
    /// are refused with a typed error.
    #[test]
    fn lattice_columns_specialise_one_step_and_refuse_what_they_cannot_walk() {
        for p in 1..=8 {
            let one = BpConfig::lattice(lattice_shapes(p)[0]);
            let k1 = bp_kernel::<f64>(one, p).unwrap();
            for (column, steps) in lattice_columns(p) {
                let c = BpConfig {
                    bricks: Some(column),
                    lattice_steps: steps,
                    ..one
                };
                assert_eq!(c.lattice_step_brick(), one.bricks);
                let k = bp_kernel::<f64>(c, p).unwrap();
                assert_eq!(k.epb, one.bricks.unwrap().iter().product::<usize>() * steps);
                assert_eq!(k.spec.value("BZ"), k1.spec.value("BZ"));
                assert_eq!(k.spec.value("STEPS"), Some(steps.to_string().as_str()));
                assert_eq!(
                    k.spec.value("NSKB"),
                    Some(
                        brick_layout(column, p)
                            .skeleton_positions()
                            .len()
                            .to_string()
                            .as_str()
                    )
                );
                assert_eq!(k.spec.value("THREADS"), k1.spec.value("THREADS"));
                let nxy = (column[0] * p + 1) * (column[1] * p + 1);
                assert_eq!(k.dyn_smem, k1.dyn_smem + 2 * nxy * 8);
                assert!(k.spec.name.contains(&format!("_s{steps}")));
                // steps that do not divide the column, or owner zeroing with steps
                let bad = [
                    BpConfig {
                        lattice_steps: steps + 1,
                        ..c
                    },
                    BpConfig {
                        skeleton_zeroing: SkeletonZeroing::Owner,
                        ..c
                    },
                    BpConfig {
                        lattice_steps: 0,
                        ..c
                    },
                ];
                for b in bad {
                    assert!(
                        matches!(bp_kernel::<f64>(b, p), Err(GpuError::Unsupported(_))),
                        "p={p} {:?} steps {}",
                        b.bricks,
                        b.lattice_steps
                    );
                }
            }
            // steps on the one-element kernels
            let mut v2 = BpConfig::tuned(TensorKind::Mass, GeoMode::Stored, p);
            v2.lattice_steps = 2;
            assert!(matches!(
                bp_kernel::<f64>(v2, p),
                Err(GpuError::Unsupported(_))
            ));
        }
    }

    #[test]
    fn ring_slots_are_the_lattice_kernels_and_change_only_its_index_arithmetic() {
        for p in 1..=8 {
            for shape in lattice_shapes(p) {
                let lex = BpConfig::lattice(shape);
                let ring = BpConfig {
                    lattice_slots: SlotOrder::Ring,
                    ..lex
                };
                let (kl, kr) = (
                    bp_kernel::<f64>(lex, p).unwrap(),
                    bp_kernel::<f64>(ring, p).unwrap(),
                );
                assert_eq!(kl.spec.value("RING"), Some("0"));
                assert_eq!(kr.spec.value("RING"), Some("1"));
                assert_eq!(kr.spec.name, format!("{}_ring", kl.spec.name));
                // the same block, shared memory and slot count
                assert_eq!((kr.block, kr.dyn_smem), (kl.block, kl.dyn_smem));
                assert_eq!(kr.spec.value("NSKB"), kl.spec.value("NSKB"));
            }
        }
        // the one-element and brick kernels refuse it (they take no slot order of their own)
        for c in [
            BpConfig::new(TensorKind::Mass),
            BpConfig::new(TensorKind::Mass).with_bricks([2, 2, 1], 4),
        ] {
            let r = BpConfig {
                lattice_slots: SlotOrder::Ring,
                ..c
            };
            assert!(matches!(
                bp_kernel::<f64>(r, 4),
                Err(GpuError::Unsupported(_))
            ));
        }
    }

    #[test]
    fn every_tested_configuration_specialises() {
        // (what the GPU tests and the CI compile check take; a forced block shape may be
        // refused for its shared memory)
        for (cfg, p, f32) in tested_configurations() {
            let k = if f32 {
                bp_kernel::<f32>(cfg, p).map(|_| ())
            } else {
                bp_kernel::<f64>(cfg, p).map(|_| ())
            };
            if let Err(e) = k {
                assert!(
                    cfg.elems_per_block.is_some() && matches!(e, GpuError::Unsupported(_)),
                    "p={p} f32={f32} {cfg:?}: {e}"
                );
            }
        }
    }

    #[test]
    fn lattice_weights_in_shared_memory_add_the_brick_weights_and_refuse_what_cannot_be_copied() {
        for p in 1..=8 {
            let q = p + 2;
            let t = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p)
                .unwrap_or(BpConfig::lattice(lattice_shapes(p)[0]));
            let sm = BpConfig {
                geo_prefetch: GeoPrefetch::Shared,
                ..t
            };
            let k0 = bp_kernel::<f64>(
                BpConfig {
                    geo_prefetch: GeoPrefetch::None,
                    ..t
                },
                p,
            )
            .unwrap();
            let epb: usize = t.bricks.unwrap().iter().product();
            for (k, bytes) in [
                (bp_kernel::<f64>(sm, p).unwrap(), 8),
                (bp_kernel::<f32>(sm, p).unwrap(), 4),
            ] {
                assert_eq!(k.spec.value("GEOPF"), Some("4"));
                assert!(k.spec.name.contains("-pfsm"), "{}", k.spec.name);
                if bytes == 8 {
                    // the brick's weights and the alignment's slack after the other arrays
                    assert_eq!(k.dyn_smem, k0.dyn_smem + epb * q * q * q * 8 + 16);
                }
            }
            // walked in columns: refused
            let (column, steps) = lattice_columns(p)[0];
            let col = BpConfig {
                bricks: Some(column),
                lattice_steps: steps,
                ..sm
            };
            assert!(matches!(
                bp_kernel::<f64>(col, p),
                Err(GpuError::Unsupported(_))
            ));
            // the one-element kernels: refused
            let pencil = BpConfig {
                geo_prefetch: GeoPrefetch::Shared,
                direct_geometry: true,
                ..BpConfig::new(TensorKind::Mass)
            };
            assert!(matches!(
                bp_kernel::<f64>(pencil, p),
                Err(GpuError::Unsupported(_))
            ));
        }
        // a brick whose weights are not whole 16-byte granules (one element, Q^3 odd), and
        // one whose weights do not fit beside its lattice: refused, not miscompiled
        for (shape, p) in [([1, 1, 1], 7), ([4, 2, 2], 8)] {
            let c = BpConfig {
                geo_prefetch: GeoPrefetch::Shared,
                ..BpConfig::lattice(shape)
            };
            assert!(bp_kernel::<f64>(
                BpConfig {
                    geo_prefetch: GeoPrefetch::None,
                    ..c
                },
                p
            )
            .is_ok());
            assert!(
                matches!(bp_kernel::<f64>(c, p), Err(GpuError::Unsupported(_))),
                "{shape:?} p = {p}: {:?}",
                bp_kernel::<f64>(c, p).map(|k| k.dyn_smem)
            );
        }
    }

    #[test]
    fn rolled_phases_reach_the_kernel_as_a_mask_and_are_refused_elsewhere() {
        assert_eq!(rolled_phase_digits(0b00110), "23");
        assert_eq!(rolled_phase_digits(0b10001), "15");
        assert_eq!(rolled_phase_digits(0), "");
        let t = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, 8).unwrap();
        let unrolled = BpConfig {
            rolled_element_loops: false,
            rolled_phases: 0,
            ..t
        };
        let k = bp_kernel::<f64>(unrolled, 8).unwrap();
        assert_eq!(k.spec.value("ROLLMASK"), Some("0"));
        assert!(!k.spec.name.contains("_rp"), "{}", k.spec.name);
        let some = BpConfig {
            rolled_phases: 0b00110,
            ..unrolled
        };
        let k = bp_kernel::<f64>(some, 8).unwrap();
        assert_eq!(k.spec.value("ROLLMASK"), Some("6"));
        assert!(k.spec.name.contains("_rp23"), "{}", k.spec.name);
        // every phase rolled says so whatever the mask
        let all = BpConfig {
            rolled_element_loops: true,
            ..some
        };
        let k = bp_kernel::<f64>(all, 8).unwrap();
        assert_eq!(k.spec.value("ROLLMASK"), Some("31"));
        assert!(k.spec.name.contains("_rl") && !k.spec.name.contains("_rp"));
        // a sixth phase, and rolled phases outside the lattice kernel, are refused
        assert!(matches!(
            bp_kernel::<f64>(
                BpConfig {
                    rolled_phases: 32,
                    ..unrolled
                },
                8
            ),
            Err(GpuError::Unsupported(_))
        ));
        let pencil = BpConfig {
            rolled_phases: 0b100,
            ..BpConfig::new(TensorKind::Mass)
        };
        assert!(matches!(
            bp_kernel::<f64>(pencil, 8),
            Err(GpuError::Unsupported(_))
        ));
    }

    #[test]
    fn one_lattice_array_keeps_one_plane_pitch_and_refuses_split_or_staged_lines() {
        for p in 1..=8 {
            let q = p + 2;
            for shape in lattice_shapes(p) {
                for cf in [false, true] {
                    let two = BpConfig {
                        conflict_free_pitches: cf,
                        ..BpConfig::lattice(shape)
                    };
                    let one = BpConfig {
                        one_lattice_array: true,
                        ..two
                    };
                    let (k2, k1) = (
                        bp_kernel::<f64>(two, p).unwrap(),
                        bp_kernel::<f64>(one, p).unwrap(),
                    );
                    assert_eq!(k1.spec.value("ONEARR"), Some("1"));
                    assert_eq!(k2.spec.value("ONEARR"), Some("0"));
                    assert!(k1.spec.name.contains("_1a"), "{}", k1.spec.name);
                    // one pitch, the second array's, whose planes hold either array's plane
                    let (pz, py) = (k1.spec.value("PZ"), k1.spec.value("PY"));
                    assert_eq!(pz, py);
                    assert_eq!(py, k2.spec.value("PY"));
                    let pitch: usize = py.unwrap().parse().unwrap();
                    let nx = shape[0] * p + 1;
                    let lp = nx | 1;
                    assert!(pitch >= (shape[1] * p + 1) * lp && pitch >= shape[1] * q * lp);
                    if cf {
                        // (conflict-free: ≡ NX modulo the 16 doubles of a bank sweep)
                        assert_eq!(pitch % 16, nx % 16);
                    }
                    // the first array's bytes saved, nothing else changed
                    let pz2: usize = k2.spec.value("PZ").unwrap().parse().unwrap();
                    assert_eq!(k1.dyn_smem + shape[2] * q * pz2 * 8, k2.dyn_smem);
                    assert_eq!((k1.block, k1.epb), (k2.block, k2.epb));
                }
            }
            // p = 6, 7 with the weights in shared memory: the block's bytes fall below what
            // one more block per multiprocessor (228 KiB, 1 KiB reserved per block) needs
            if p == 6 || p == 7 {
                let one = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p).unwrap();
                assert!(one.one_lattice_array);
                let t = BpConfig {
                    one_lattice_array: false,
                    ..one
                };
                let fit = |b: usize| 228 * 1024 / (b + 1024 + 16);
                let (n2, n1) = (
                    fit(bp_kernel::<f64>(t, p).unwrap().dyn_smem),
                    fit(bp_kernel::<f64>(one, p).unwrap().dyn_smem),
                );
                assert_eq!((n2 + 1, p), (n1, p));
            }
            // split lines and the staged boundary rewrite other threads' nodes: refused
            let one = BpConfig {
                one_lattice_array: true,
                ..BpConfig::lattice(lattice_shapes(p)[0])
            };
            for bad in [
                BpConfig {
                    split_lines: true,
                    ..one
                },
                BpConfig {
                    lattice_boundary: LatticeBoundary::Staged,
                    ..one
                },
                BpConfig {
                    one_lattice_array: true,
                    ..BpConfig::tuned(TensorKind::Mass, GeoMode::Stored, p)
                },
            ] {
                assert!(matches!(
                    bp_kernel::<f64>(bad, p),
                    Err(GpuError::Unsupported(_))
                ));
            }
        }
    }

    #[test]
    fn lattice_boundary_in_shared_memory_adds_the_offsets_and_refuses_what_it_cannot_stage() {
        for p in 1..=8 {
            for shape in lattice_shapes(p) {
                let g = BpConfig::lattice(shape);
                let kg = bp_kernel::<f64>(g, p).unwrap();
                assert_eq!(kg.spec.value("LBND"), Some("0"));
                let nskb = brick_layout(shape, p).skeleton_positions().len();
                for (b, code, tag) in [
                    (LatticeBoundary::SharedOffsets, "1", "_so"),
                    (LatticeBoundary::Staged, "2", "_st"),
                ] {
                    let c = BpConfig {
                        lattice_boundary: b,
                        ..g
                    };
                    let k = bp_kernel::<f64>(c, p).unwrap();
                    assert_eq!(k.spec.value("LBND"), Some(code));
                    // the offsets by slot, 16-byte aligned, after the lattice arrays
                    assert_eq!(k.dyn_smem, kg.dyn_smem + (4 * nskb).next_multiple_of(16));
                    assert!(k.spec.name.contains(tag), "{}", k.spec.name);
                    assert_eq!(k.spec.value("THREADS"), kg.spec.value("THREADS"));
                }
            }
            // staged with columns, and either on the one-element kernels: refused
            let (column, steps) = lattice_columns(p)[0];
            let col = BpConfig {
                bricks: Some(column),
                lattice_steps: steps,
                ..BpConfig::lattice(lattice_shapes(p)[0])
            };
            assert!(bp_kernel::<f64>(
                BpConfig {
                    lattice_boundary: LatticeBoundary::SharedOffsets,
                    ..col
                },
                p
            )
            .is_ok());
            // split lines: more threads, the same shared memory; refused with columns
            let one = BpConfig::lattice(lattice_shapes(p)[0]);
            let k1 = bp_kernel::<f64>(one, p).unwrap();
            let ks = bp_kernel::<f64>(
                BpConfig {
                    split_lines: true,
                    ..one
                },
                p,
            )
            .unwrap();
            assert_eq!(ks.spec.value("SPLIT"), Some("1"));
            assert_eq!(ks.dyn_smem, k1.dyn_smem);
            assert!(ks.block[0] >= k1.block[0] && ks.block[0] % 32 == 0);
            assert!(matches!(
                bp_kernel::<f64>(
                    BpConfig {
                        split_lines: true,
                        ..col
                    },
                    p
                ),
                Err(GpuError::Unsupported(_))
            ));
            let mut v2 = BpConfig::tuned(TensorKind::Mass, GeoMode::Stored, p);
            v2.lattice_boundary = LatticeBoundary::SharedOffsets;
            for bad in [
                BpConfig {
                    lattice_boundary: LatticeBoundary::Staged,
                    ..col
                },
                v2,
            ] {
                assert!(
                    matches!(bp_kernel::<f64>(bad, p), Err(GpuError::Unsupported(_))),
                    "p={p} {bad:?}"
                );
            }
        }
    }

    #[test]
    fn owner_schedule_partitions_the_skeleton_and_lists_every_other_owner() {
        use ferrofem_mesh::{generate_box, BoxSpec};
        let m = generate_box(&BoxSpec::parse("hex:4x3x5,perturb=0.1,seed=2").unwrap()).unwrap();
        for p in [1, 2, 4] {
            let space = H1Space::new(&m, p, 1).unwrap().interior_last();
            let nskel = space.skeleton_nodes().unwrap();
            let (off, nsk) = skeleton_offsets(&space);
            let nelem = m.num_cells();
            for epb in [1, 2, 5] {
                let OwnerSchedule { own, pstart, preds } =
                    owner_schedule(&off, nsk, nskel, epb).unwrap();
                let ngroups = nelem.div_ceil(epb);
                assert_eq!(own.len(), ngroups + 1);
                assert_eq!((own[0], own[ngroups]), (0, nskel as u32));
                let group_of = |n: u32| own.partition_point(|&o| o <= n) - 1;
                for g in 0..ngroups {
                    let list = &preds[pstart[g] as usize..pstart[g + 1] as usize];
                    assert!(
                        list.windows(2).all(|w| w[0] < w[1])
                            && list.iter().all(|&o| (o as usize) < g)
                    );
                    let rows = &off[g * epb * nsk..((g + 1) * epb).min(nelem) * nsk];
                    // every node is owned by the group itself or by a listed predecessor,
                    // its owner is the lowest group touching it, and no listed group is idle
                    let mut used = vec![false; list.len()];
                    for &n in rows {
                        let o = group_of(n);
                        assert!(o <= g);
                        if o != g {
                            let k = list.binary_search(&(o as u32)).expect("owner listed");
                            used[k] = true;
                        }
                    }
                    assert!(used.iter().all(|&u| u), "p={p} epb={epb} g={g}");
                }
                // structured box, one element per block: at most the 7 lower neighbours
                if epb == 1 {
                    assert!(pstart.windows(2).all(|w| w[1] - w[0] <= 7));
                }
            }
        }
        // a skeleton that is not numbered by owner is refused
        let space = H1Space::new(&m, 2, 1).unwrap().interior_last();
        let (mut off, nsk) = skeleton_offsets(&space);
        let nskel = space.skeleton_nodes().unwrap();
        let last = off.len() - 1;
        off.swap(0, last);
        assert!(matches!(
            owner_schedule(&off, nsk, nskel, 1),
            Err(GpuError::Unsupported(_))
        ));
        // and so are empty groups or ragged rows, with an error rather than a panic
        let (off, nsk) = skeleton_offsets(&space);
        assert!(matches!(
            owner_schedule(&off, nsk, nskel, 0),
            Err(GpuError::Unsupported(_))
        ));
        assert!(matches!(
            owner_schedule(&off[1..], nsk, nskel, 1),
            Err(GpuError::Unsupported(_))
        ));
    }

    #[test]
    fn pipeline_launches_zero_each_next_launchs_skeleton_and_nothing_they_touch() {
        use ferrofem_mesh::{generate_box, BoxSpec};
        let m = generate_box(&BoxSpec::parse("hex:5x4x3,perturb=0.1,seed=4").unwrap()).unwrap();
        let space = H1Space::new(&m, 3, 1).unwrap().interior_last();
        let nskel = space.skeleton_nodes().unwrap();
        let (off, nsk) = skeleton_offsets(&space);
        for epb in [1, 3] {
            let own = owner_schedule(&off, nsk, nskel, epb).unwrap().own;
            let ngroups = own.len() - 1;
            for chunks in [1, 2, 7, ngroups, ngroups + 5] {
                let pl = Pipeline::new(&own, chunks);
                assert_eq!(pl.chunks.len(), chunks.min(ngroups));
                // the prefill and the launches' ranges zero the skeleton once, in order
                let mut next = pl.prefill;
                let mut group = 0;
                for (k, ch) in pl.chunks.iter().enumerate() {
                    assert_eq!(ch.gbase, group);
                    group += ch.groups;
                    if k + 1 < pl.chunks.len() {
                        assert_eq!(ch.zbeg, next);
                        next = ch.zend;
                        // no element of this launch or an earlier one touches the range
                        let elems = &off[..((group as usize) * epb).min(m.num_cells()) * nsk];
                        assert!(elems.iter().all(|&n| n < ch.zbeg || n >= ch.zend));
                    } else {
                        assert_eq!((ch.zbeg, ch.zend), (0, 0));
                    }
                }
                assert_eq!((next, group as usize), (nskel as u32, ngroups));
            }
        }
    }

    /// The kernels' even-odd `contract` (kernels/bp_pencil.cu), step for step on the host.
    fn contract_even_odd(e: &EvenOdd, rows: usize, cols: usize, sign: f64, x: &[f64]) -> Vec<f64> {
        let (hi, ho) = (cols / 2, rows / 2);
        let ev: Vec<f64> = (0..hi).map(|i| x[i] + x[cols - 1 - i]).collect();
        let od: Vec<f64> = (0..hi).map(|i| x[i] - x[cols - 1 - i]).collect();
        let mut y = vec![0.0; rows];
        for o in 0..ho {
            let mut a: f64 = (0..hi).map(|i| e.even[o * hi + i] * ev[i]).sum();
            let d: f64 = (0..hi).map(|i| e.odd[o * hi + i] * od[i]).sum();
            if cols % 2 == 1 {
                a += e.middle[o] * x[hi];
            }
            y[o] = a + d;
            y[rows - 1 - o] = if sign > 0.0 { a - d } else { d - a };
        }
        if rows % 2 == 1 {
            y[ho] = if sign > 0.0 {
                (0..hi).map(|i| e.even[ho * hi + i] * ev[i]).sum::<f64>()
                    + if cols % 2 == 1 {
                        e.middle[ho] * x[hi]
                    } else {
                        0.0
                    }
            } else {
                (0..hi).map(|i| e.odd[ho * hi + i] * od[i]).sum()
            };
        }
        y
    }

    /// Every matrix the kernels contract with, at every order they are built for, gives the
    /// plain product in even-odd form (interpolation GLL -> Gauss with q = p + 1 .. p + 3,
    /// the Gauss and GLL derivatives, and their transposes).
    #[test]
    fn even_odd_form_reproduces_the_plain_products() {
        for p in 1..=10 {
            let n = p + 1;
            let gll = gauss_lobatto_legendre(n).unwrap();
            let basis = Lagrange1D::new(&gll.points);
            let mut cases: Vec<(Vec<f64>, usize, usize, f64)> = Vec::new();
            for q in n..=n + 2 {
                let g = gauss_legendre(q).unwrap();
                let b = basis.interpolation_matrix(&g.points);
                cases.push((transpose(&b, q, n), n, q, 1.0));
                cases.push((b, q, n, 1.0));
                let d = Lagrange1D::new(&g.points).derivative_matrix(&g.points);
                cases.push((transpose(&d, q, q), q, q, -1.0));
                cases.push((d, q, q, -1.0));
            }
            let d = basis.derivative_matrix(&gll.points);
            cases.push((transpose(&d, n, n), n, n, -1.0));
            cases.push((d, n, n, -1.0));
            for (m, rows, cols, sign) in cases {
                let e = even_odd("m", &m, rows, cols, sign).unwrap();
                let x: Vec<f64> = (0..cols).map(|i| ((i * 7 + 3) % 11) as f64 - 4.5).collect();
                let y = contract_even_odd(&e, rows, cols, sign, &x);
                for (o, yo) in y.iter().enumerate() {
                    let plain: f64 = (0..cols).map(|i| m[o * cols + i] * x[i]).sum();
                    let scale: f64 = (0..cols).map(|i| (m[o * cols + i] * x[i]).abs()).sum();
                    assert!(
                        (yo - plain).abs() <= 1e-13 * scale.max(1.0),
                        "p {p}, {rows}x{cols}, row {o}: {yo} vs {plain}"
                    );
                }
            }
        }
    }

    /// A matrix without the reflection symmetry is refused, not contracted wrongly.
    #[test]
    fn even_odd_refuses_an_asymmetric_matrix() {
        let m = [1.0, 2.0, 3.0, 4.0];
        assert!(even_odd("m", &m, 2, 2, 1.0).is_err());
        assert!(even_odd("m", &[1.0, 2.0, 2.0, 1.0], 2, 2, 1.0).is_ok());
        assert!(even_odd("m", &[-1.0, 1.0, -1.0, 1.0], 2, 2, -1.0).is_ok());
    }
}

mod diag;
