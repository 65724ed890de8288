//! `ferrofem bench bp1|bp3|bp3.5`: the CEED bake-off operators on perturbed hexahedral
//! meshes, per order: DoFs, time per apply (median after warm-up), GDOF/s, bytes by the
//! model, GB/s, and the fraction of the copy bandwidth measured in the same process.
//! `--solve` adds a Jacobi-PCG solve of the screened Poisson problem. `--mesh` runs them on
//! a hexahedral Gmsh mesh, refined uniformly to the DoF target, instead of the generated box.

use super::median;
use crate::backend::{select, Backend, BackendArg};
use crate::error::CliError;
use crate::mesh_source::Reorder;
use crate::problem_args::ranges;
use clap::{Args, ValueEnum};
use ferrofem_base::random::random_vector;
use ferrofem_mesh::{generate_box, read_gmsh, BoxSpec, CellType, Mesh};
use ferrofem_operator::tensor::{
    measure_copy_bandwidth, GeometryMode, Model, TensorKind, TensorOperator, TensorOptions,
};
use ferrofem_solver::{pcg, CpuSpace, SolveOptions};
use ferrofem_space::{H1Space, SlotOrder};
use serde::Serialize;
use std::time::Instant;

/// Which bake-off problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BpName {
    /// BP1: mass matrix, Gauss quadrature with p + 2 points.
    Bp1,
    /// BP3: diffusion (`--alpha` adds a mass term), Gauss quadrature with p + 2 points.
    Bp3,
    /// BP3.5 (CEED BP5): diffusion collocated at the GLL nodes.
    #[value(name = "bp3.5", alias = "bp5", alias = "bp35")]
    Bp35,
}

/// Geometry variants to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GeoArg {
    /// Factors stored at quadrature points.
    Stored,
    /// Computed from the element vertices in the kernel.
    Otf,
    /// Both.
    All,
}

/// Scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Precision {
    /// Double precision.
    F64,
    /// Single precision.
    F32,
}

/// GPU kernel design.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// v2: pencil contractions, constant matrices, bulk-copied geometry.
    Pencil,
    /// v1: the paper's 2-D slice kernel.
    Slice2d,
    /// v5: the pencil kernel made persistent (one wave of blocks) and pipelined: the next
    /// element's gather and geometry are in flight while the current one is computed.
    Persistent,
    /// v6 (BP1): gather and scatter through registers, x-pencils weighted in registers.
    Registers,
    /// v26 (BP1, stored weights, with `--bricks`): a block owns a brick of elements and
    /// contracts whole lines of its node lattice, gathering shared nodes once and summing
    /// them in registers.
    Lattice,
}

/// The order of the bricks of a brick-sorted box.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BrickOrder {
    /// Along the Morton (Z-order) curve of the brick coordinates.
    Morton,
    /// x fastest, then y, then z.
    Lexicographic,
}

/// Prefetch of directly loaded stored geometry (`ferrofem_cuda::bp::GeoPrefetch`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PrefetchArg {
    /// None: loaded where used.
    None,
    /// Into L1 at kernel start.
    L1,
    /// Into L2 at kernel start.
    L2,
    /// Register columns only: the weights into registers before the gather.
    Registers,
    /// Lattice kernel only: the brick's weights bulk-copied into shared memory at the
    /// block's start (v41).
    Shared,
}

/// Who zeroes the skeleton of the output (`ferrofem_cuda::bp::SkeletonZeroing`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ZeroingArg {
    /// A fill of the skeleton range before each launch (reverse order, v2 kernels).
    Host,
    /// The same fill by a memset in address order (for comparison).
    Memset,
    /// The kernel: each block zeroes the skeleton nodes it owns (v8).
    Owner,
    /// The kernel: each block zeroes the skeleton owned by a group one wave ahead (v12).
    Lookahead,
    /// As `lookahead`, the flag raised just before the block's own wait.
    LookaheadLate,
    /// Launches in chunks, each zeroing the next one's skeleton, overlapped by
    /// programmatic dependent launch (v16).
    Pipelined,
    /// The fill before the launch, the apply started early by programmatic dependent
    /// launch and waiting for the fill only before its scatter (v32).
    Overlapped,
}

/// Lattice kernel (v33): the brick boundary's offsets and sums in the scatter
/// (`ferrofem_cuda::bp::LatticeBoundary`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BoundaryArg {
    /// Offsets read again from global memory, sums added from the columns' threads.
    Global,
    /// Offsets kept in shared memory from the gather.
    Shared,
    /// And the sums staged in shared memory, added in slot order.
    Staged,
}

/// Lattice kernel (v35): the order of the brick boundary's slots, and so of its numbering
/// (`ferrofem_space::SlotOrder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SlotArg {
    /// Lexicographic among the boundary positions.
    Lexicographic,
    /// The ring of each level's columns first, each owner's nodes under consecutive lanes.
    Ring,
}

impl SlotArg {
    fn order(self) -> SlotOrder {
        match self {
            SlotArg::Lexicographic => SlotOrder::Lexicographic,
            SlotArg::Ring => SlotOrder::Ring,
        }
    }
}

/// How the v2 kernels read stored geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GeoLoad {
    /// Bulk-copied into shared memory at kernel start.
    Shared,
    /// Read from global memory where used.
    Direct,
    /// Measure both.
    Both,
    /// The measured best for the operator and order (`BpConfig::tuned`: with `--kernel
    /// pencil` this may pick the persistent v5 kernel, the register-column v6 kernel for
    /// BP1, direct geometry loads and a register cap).
    Tuned,
}

/// Dof numbering of the benchmark space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Numbering {
    /// First-touch order of the cells.
    Natural,
    /// Skeleton nodes first, element interiors contiguous per element.
    InteriorLast,
}

/// Options of `ferrofem bench bp*`.
#[derive(Args, Debug, Clone)]
pub struct BpArgs {
    /// Polynomial orders: a range `1..8` or a list `3,5,7`, each 1 to 15.
    #[arg(long, default_value = "1..8", value_parser = parse_orders)]
    order: Orders,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Target number of global DoFs (the box is sized to come close), 1 to 1e12.
    #[arg(long, default_value_t = 4e7, allow_negative_numbers = true, value_parser = ranges::float_in(1.0, 1e12))]
    dofs: f64,
    /// Scalar type.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Geometry variant(s).
    #[arg(long, value_enum, default_value_t = GeoArg::All)]
    geo: GeoArg,
    /// Mass coefficient of BP3 / BP3.5 (screened Poisson), finite and >= 0; 0 is pure
    /// diffusion.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = ranges::non_negative)]
    alpha: f64,
    /// Perturbation of interior vertices (fraction of the cell size), 0 to 0.35: trilinear
    /// cells. The generated box's only: a `--mesh` keeps its own vertices.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true, value_parser = ranges::perturb)]
    perturb: f64,
    /// A hexahedral Gmsh mesh (MSH 2.2 or 4.1) instead of the generated box, refined
    /// uniformly (`--refine`); `--reorder` then orders its cells before refinement, and the
    /// lattice kernel's bricks are each cell's children (the refinement must give a block of
    /// children that the brick shape divides, else the one-element kernels run).
    #[arg(long, value_name = "FILE.msh")]
    mesh: Option<std::path::PathBuf>,
    /// With `--mesh`: uniform refinement levels (each splits a cell into 8), or `auto`: the
    /// level whose DoF count at each order comes closest to `--dofs`.
    #[arg(long, default_value = "auto", value_parser = parse_refine)]
    refine: RefineArg,
    /// Order of the generated box's cells (and so of the dofs numbered from them): the
    /// generator's lexicographic order (`none`), or sorted along a Morton curve (`morton`;
    /// `rcm` also renumbers the vertices), which brings each element's neighbours in all
    /// three directions close in time, so their shared nodes are still in L2.
    #[arg(long, value_enum, default_value_t = Reorder::None)]
    reorder: Reorder,
    /// Timed applications (median reported), 1 to 1e6.
    #[arg(long, default_value_t = 20, value_parser = ranges::usize_in(1, ranges::MAX_REPS))]
    reps: usize,
    /// Untimed applications first, 0 to 1e6.
    #[arg(long, default_value_t = 3, value_parser = ranges::usize_in(0, ranges::MAX_REPS))]
    warmup: usize,
    /// Elements per thread block on the GPU, 1 to 1024 (default: the tuned choice, else
    /// chosen from the shape), comma-separated to measure several on one mesh.
    #[arg(long, value_delimiter = ',', value_parser = ranges::usize_in(1, 1024))]
    elems_per_block: Vec<usize>,
    /// GPU kernel design(s), comma-separated: `pencil` (v2), `persistent` (v5), `slice2d`
    /// (v1, the paper's), `registers` (v6) or `lattice` (v26). Default: the tuned kernel of
    /// each order (the v2 family, or for BP1 with stored weights at p = 3..8 the lattice
    /// kernel on a brick-sorted box).
    #[arg(long, value_enum, value_delimiter = ',')]
    kernel: Vec<KernelArg>,
    /// Lattice kernel (v29): the loops over a line's elements kept rolled in every phase
    /// (`true`: fewer registers) or not (`false`: unrolled but in the phases that
    /// `--rolled-phases` names, by default the tuned ones); comma-separated to measure both
    /// (default: the tuned choice).
    #[arg(long, value_delimiter = ',')]
    rolled: Vec<bool>,
    /// Lattice kernel (v51), where `--rolled` is false: the phases (1..5: gather and z,
    /// y, x with the weights, transposed y, transposed z and scatter) whose loops over a
    /// line's elements stay rolled, as digits (`3`, `23`) or `none`; comma-separated to
    /// measure several (default: the tuned choice). The label's `+rpDIGITS` shows where it
    /// applied.
    #[arg(long, value_delimiter = ',', value_parser = parse_rolled_phases)]
    rolled_phases: Vec<u8>,
    /// Lattice kernel (v31): a block walks a column of this many bricks (`--bricks`) along
    /// z, carrying the lattice plane two steps share, so that the numbering, the offsets
    /// and the atomics are the column's; comma-separated to measure several (default 1:
    /// one brick per block), each 1 to 32.
    #[arg(long, value_delimiter = ',', value_parser = ranges::usize_in(1, 32))]
    lattice_steps: Vec<usize>,
    /// Lattice kernel (v33): where the scatter takes the brick boundary's offsets from
    /// (`global`, `shared`) and whether it stages the boundary's sums (`staged`);
    /// comma-separated to measure several (default: the tuned choice). Orders that run
    /// another kernel ignore it; the label's `+so` / `+st` shows where it applied.
    #[arg(long, value_enum, value_delimiter = ',')]
    lattice_boundary: Vec<BoundaryArg>,
    /// Lattice kernel (v34): each thread takes one element of a line rather than the line
    /// (`true`), or the whole line (`false`); comma-separated to measure both (default: the
    /// tuned choice). Orders that run another kernel ignore it; the label's `+sl` shows
    /// where it applied.
    #[arg(long, value_delimiter = ',')]
    split_lines: Vec<bool>,
    /// Lattice kernel (v48): the block's two lattice arrays as one (`true`: the y
    /// contractions in place, about half the shared memory, so more blocks per
    /// multiprocessor where shared memory binds), or two (`false`); comma-separated to
    /// measure both (default: the tuned choice). Orders that run another kernel ignore it;
    /// the label's `+1a` shows where it applied.
    #[arg(long, value_delimiter = ',')]
    one_lattice_array: Vec<bool>,
    /// Lattice kernel (v35): the order of the brick boundary's slots, by which the box is
    /// numbered and the kernel's threads take their columns (`lexicographic`, `ring`);
    /// comma-separated to measure both (default: the tuned choice). Orders that run another
    /// kernel ignore it; the label's `+ring` shows where it applied.
    #[arg(long, value_enum, value_delimiter = ',')]
    slot_order: Vec<SlotArg>,
    /// With bricks (`--bricks`, or the lattice kernel by default): the order of the bricks
    /// in the sorted box, along the Morton curve of their coordinates (default) or
    /// lexicographic.
    #[arg(long, value_enum, default_value_t = BrickOrder::Morton)]
    brick_order: BrickOrder,
    /// Dof numbering: `interior-last` (element-interior nodes after the skeleton; the v2
    /// kernels then compute interior indices) or `natural` (first-touch order).
    #[arg(long, value_enum, default_value_t = Numbering::InteriorLast)]
    numbering: Numbering,
    /// v2: minimum resident blocks per multiprocessor asked of the compiler (caps
    /// registers; 0: no cap, overriding the tuned one), 0 to 32 (the most blocks a
    /// multiprocessor holds), comma-separated to measure several on one mesh.
    #[arg(long, value_delimiter = ',', value_parser = ranges::u32_in(0, 32))]
    min_blocks: Vec<u32>,
    /// v2, stored geometry: stage it in shared memory with bulk copies (`shared`), read it
    /// from global memory in the pointwise phase (`direct`), measure both, or use the
    /// measured best per operator and order (`tuned`, with the tuned block shape unless
    /// `--elems-per-block` is given).
    #[arg(long, value_enum, default_value_t = GeoLoad::Tuned)]
    geo_load: GeoLoad,
    /// v2: plain 1-D matrix products instead of the even-odd form (for comparison; the
    /// tuned register caps are the even-odd kernels', so give `--min-blocks` to choose one).
    #[arg(long)]
    plain_contractions: bool,
    /// v2 with direct geometry loads: prefetch the factors at kernel start (`l1`, `l2`) or,
    /// with register columns, load the weights into registers (`registers`); the lattice
    /// kernel: the brick's weights into L2 at the block's start (`l2`, v39) or bulk-copied
    /// into shared memory (`shared`, v41); comma-separated to measure several (e.g.
    /// `none,l2,shared`). Where a choice does not apply, the same kernel runs without it
    /// (the record's label names the kernel that ran).
    #[arg(long, value_enum, value_delimiter = ',')]
    geo_prefetch: Vec<PrefetchArg>,
    /// v2 with direct stored-geometry loads, and the lattice kernel (v40): the factors
    /// loaded with the evict-first cache policy, comma-separated to measure both on one mesh
    /// (`false,true`; default false).
    #[arg(long, value_delimiter = ',')]
    evict_first: Vec<bool>,
    /// The lattice kernel (v42): each block asks L2 for the gather's offsets and interior
    /// nodes of the brick this many bricks ahead (0: none; default: the tuned choice), 0
    /// to 1e6, comma-separated to measure several (e.g. `0,396,792`).
    #[arg(long, value_delimiter = ',', value_parser = ranges::u32_in(0, 1_000_000))]
    gather_lookahead: Vec<u32>,
    /// v2, non-persistent: the scatter reloads the skeleton offsets instead of keeping the
    /// gather's indices in registers, comma-separated to measure both (`false,true`).
    #[arg(long, value_delimiter = ',')]
    late_indices: Vec<bool>,
    /// v2 on an interior-last space: who zeroes the output's skeleton before the elements
    /// accumulate into it, comma-separated to measure several on one mesh (default: the
    /// tuned choice, else `host`).
    #[arg(long, value_enum, value_delimiter = ',')]
    skeleton_zeroing: Vec<ZeroingArg>,
    /// v2, non-persistent: element groups each thread block runs one after another,
    /// 1 to 1024, comma-separated to measure several on one mesh (default: the tuned
    /// choice, else 1).
    #[arg(long, value_delimiter = ',', value_parser = ranges::usize_in(1, 1024))]
    groups_in_sequence: Vec<usize>,
    /// With `--skeleton-zeroing lookahead`: how far ahead a block zeroes, in percent of
    /// the element groups resident at once, 1 to 1000, comma-separated to measure several
    /// (default 100).
    #[arg(long, value_delimiter = ',', value_parser = ranges::u32_in(1, 1000))]
    zero_ahead: Vec<u32>,
    /// With `--skeleton-zeroing pipelined`: launches per application, 0 to 4096,
    /// comma-separated to measure several (default 0: each launch about a third of L2 in
    /// model bytes).
    #[arg(long, value_delimiter = ',', value_parser = ranges::u32_in(0, 4096))]
    pipeline_chunks: Vec<u32>,
    /// GPU, BP1's register-column kernel with stored geometry (v20): the weights stored x
    /// slowest so that the x-pencil owners read them coalesced, comma-separated to measure
    /// both (`false,true`; default: the tuned choice).
    #[arg(long, value_delimiter = ',')]
    pencil_weights: Vec<bool>,
    /// GPU, f64, BP1's register-column kernel (v20) and the non-persistent BP3 kernel (v20c):
    /// shared-memory pitches chosen by a bank model for fewer bank conflicts,
    /// comma-separated to measure both (`false,true`; default: the tuned choice).
    #[arg(long, value_delimiter = ',')]
    conflict_free: Vec<bool>,
    /// GPU, interior-last kernels (v25): skeleton slots computed from the local node
    /// coordinates (`true`) or read from a constant table (`false`); comma-separated to
    /// measure both (default: the tuned choice).
    #[arg(long, value_delimiter = ',')]
    slot_arithmetic: Vec<bool>,
    /// GPU: the output vector in compressible memory (generic data compression), so that
    /// the skeleton's zeros cost less DRAM traffic; comma-separated to measure both
    /// (`false,true`; default: the tuned choice, true since v37).
    #[arg(long, value_delimiter = ',')]
    compressible_output: Vec<bool>,
    /// GPU (v37): the restriction's offsets in compressible memory; comma-separated to
    /// measure both (`false,true`; default: the tuned choice, true).
    #[arg(long, value_delimiter = ',')]
    compressible_indices: Vec<bool>,
    /// GPU, v2 kernels: a thread block per brick of `AxBxC` elements (v19: the faces
    /// inside a brick summed in shared memory, only brick boundaries added atomically), or
    /// `none`; comma-separated to measure several on one mesh (e.g. `none,2x2x1,2x2x2`).
    /// The box then has a multiple of the largest brick per axis, its cells sorted into
    /// bricks of that largest shape (the smaller shapes must be its leading parts:
    /// `2x1x1`, `2x2x1` within `2x2x2`), for every variant measured.
    #[arg(long, value_delimiter = ',', value_parser = parse_brick)]
    bricks: Vec<Option<[usize; 3]>>,
    /// Also solve the screened Poisson problem (alpha = 1 unless given) with Jacobi-PCG
    /// to this relative residual, in (0, 1).
    #[arg(long, allow_negative_numbers = true, value_parser = ranges::rtol)]
    solve: Option<f64>,
    /// Print JSON records (one per line) instead of the table.
    #[arg(long)]
    json: bool,
    /// Append JSON records to this file as well.
    #[arg(long, value_name = "FILE.jsonl")]
    record: Option<std::path::PathBuf>,
}

/// One measured configuration.
#[derive(Serialize, Clone, Debug)]
pub struct BpRecord {
    bench: String,
    backend: String,
    precision: String,
    geometry: String,
    order: usize,
    q: usize,
    elements: usize,
    dofs: usize,
    setup_s: f64,
    kernels_compiled: usize,
    kernels_from_disk: usize,
    compile_s: f64,
    first_apply_s: f64,
    apply_s: f64,
    gdofs_per_s: f64,
    model_bytes: f64,
    model_flops: f64,
    gbytes_per_s: f64,
    gflops_per_s: f64,
    copy_gbytes_per_s: f64,
    roofline_fraction: f64,
    elems_per_block: usize,
    registers: i32,
    kernel: String,
    solve_iterations: Option<usize>,
    solve_s: Option<f64>,
    solve_rel_residual: Option<f64>,
    solve_dof_iters_per_s: Option<f64>,
    /// The cells' order (`--reorder`).
    reorder: String,
    /// The mesh: the generated box's specification, or the file and its refinement.
    mesh: String,
}

/// `--refine`: chosen by the DoF target, or a number of levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RefineArg {
    Auto,
    Levels(usize),
}

/// `auto` or a number of uniform refinement levels.
fn parse_refine(s: &str) -> Result<RefineArg, String> {
    if s == "auto" {
        return Ok(RefineArg::Auto);
    }
    s.parse::<usize>()
        .ok()
        .filter(|&l| l <= 10)
        .map(RefineArg::Levels)
        .ok_or_else(|| format!("'{s}': give auto or a number of levels, 0 to 10"))
}

/// The refinement levels of `--mesh` at order `p`: `--refine`, or those that bring the
/// DoFs closest to `--dofs`.
fn levels_of(a: &BpArgs, coarse: &Mesh, p: usize) -> usize {
    match a.refine {
        RefineArg::Levels(l) => l,
        RefineArg::Auto => refine_levels(coarse.num_cells(), p, a.dofs),
    }
}

/// Refuses order `p` when a lower bound of what its run holds at once does not fit in the
/// available memory, before the mesh is made: the hexahedral mesh (36 bytes per cell for
/// the connectivity and tag, 24 per vertex, about a vertex per cell), the element → node
/// offsets (`4 (p + 1)³` per cell), the stored geometric factors when a stored variant
/// runs (`q³` points per cell, `q = p + 2`, `p + 1` for BP3.5), and the input and output
/// vectors with the random input made in `f64`.
fn check_memory(
    name: BpName,
    p: usize,
    a: &BpArgs,
    geos: &[GeometryMode],
    coarse: Option<&Mesh>,
) -> Result<(), CliError> {
    let cells = match coarse {
        Some(m) => (m.num_cells() as f64) * 8f64.powi(levels_of(a, m, p).min(64) as i32),
        None => (elems_per_dir(p, a.dofs) as f64).powi(3),
    };
    let pf = p as f64;
    let dofs = (cells.cbrt() * pf + 1.0).powi(3);
    let scalar = match a.precision {
        Precision::F64 => 8.0,
        Precision::F32 => 4.0,
    };
    let q = if name == BpName::Bp35 {
        pf + 1.0
    } else {
        pf + 2.0
    };
    let kind = kind_of(name, a.alpha);
    let geometry = if geos.contains(&GeometryMode::Stored) {
        cells
            * q.powi(3)
            * ferrofem_operator::tensor::model::factors_per_point(kind, 3) as f64
            * scalar
    } else {
        0.0
    };
    let bytes =
        60.0 * cells + 4.0 * (pf + 1.0).powi(3) * cells + geometry + dofs * (2.0 * scalar + 8.0);
    ferrofem_base::check_fits(
        &format!("order {p} on {cells:.3e} hexahedra ({dofs:.3e} DoFs)"),
        bytes.min(u64::MAX as f64) as u64,
    )
    .map_err(|e| {
        e.with_remedy("give a smaller --dofs (or fewer --refine levels)")
            .into()
    })
}

/// Uniform refinement levels that bring `cells` hexahedra at order `p` closest to `dofs`
/// (on a logarithmic scale: each level multiplies the DoFs by about 8).
fn refine_levels(cells: usize, p: usize, dofs: f64) -> usize {
    let at = |l: usize| (cells as f64 * 8f64.powi(l as i32) * (p as f64).powi(3)).max(1.0);
    (0..=10)
        .min_by(|&a, &b| {
            (at(a) / dofs)
                .ln()
                .abs()
                .total_cmp(&(at(b) / dofs).ln().abs())
        })
        .unwrap_or(0)
}

/// `none` or `AxBxC` (elements per brick along x, y, z, each 1 to 8; along z to 32, for
/// the lattice kernel's bricks walked in steps).
fn parse_brick(s: &str) -> Result<Option<[usize; 3]>, String> {
    if s == "none" {
        return Ok(None);
    }
    let d: Vec<usize> = s
        .split('x')
        .map(|t| t.trim().parse::<usize>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("'{s}': give none or AxBxC, e.g. 2x2x1"))?;
    match d[..] {
        [a, b, c] if [a, b].iter().all(|&e| (1..=8).contains(&e)) && (1..=32).contains(&c) => {
            Ok(Some([a, b, c]))
        }
        _ => Err(format!(
            "'{s}': give none or AxBxC with 1 to 8 elements along x and y, 1 to 32 along z"
        )),
    }
}

/// The polynomial orders of `--order`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Orders(Vec<usize>);

/// `--order`: a range `a..b` (or `a..=b`, both included) or a list `3,5,7` of orders in
/// 1..=15.
fn parse_orders(s: &str) -> Result<Orders, String> {
    let bad = || format!("'{s}': give a range like 1..8 or a list like 3,5,7 of orders in 1..=15");
    let v: Vec<usize> = if let Some((a, b)) = s.split_once("..") {
        let a: usize = a.trim().parse().map_err(|_| bad())?;
        let b: usize = b
            .trim_start_matches('=')
            .trim()
            .parse()
            .map_err(|_| bad())?;
        (a..=b).collect()
    } else {
        s.split(',')
            .map(|t| t.trim().parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?
    };
    if v.is_empty() || v.iter().any(|&p| p == 0 || p as u64 > ranges::MAX_ORDER) {
        return Err(format!(
            "'{s}': orders must be in 1..=15 (and a range not empty)"
        ));
    }
    Ok(Orders(v))
}

fn kind_of(name: BpName, alpha: f64) -> TensorKind {
    match name {
        BpName::Bp1 => TensorKind::Mass,
        BpName::Bp3 => TensorKind::Diffusion { alpha },
        BpName::Bp35 => TensorKind::CollocatedDiffusion { alpha },
    }
}

/// Elements per direction so that (p n + 1)^3 is close to `dofs`.
fn elems_per_dir(p: usize, dofs: f64) -> usize {
    (((dofs.cbrt() - 1.0) / p as f64).round() as usize).max(1)
}

struct Problem {
    mesh: Mesh,
    space: H1Space,
    /// The same space numbered per brick, for each brick shape and slot order asked for.
    bricked: Vec<([usize; 3], SlotOrder, H1Space)>,
    /// The brick shape the defaults' lattice kernel runs on, where [`default_bricks`]
    /// chose one (the box is then sorted into it).
    auto_bricks: Option<[usize; 3]>,
    prep_s: f64,
    reorder: String,
    /// What the record calls the mesh.
    origin: String,
}

impl Problem {
    /// The space a variant with `bricks` and brick boundary `slots` runs on (the brick
    /// kernels take the slots of any bricked space: `slots` is the lattice kernel's).
    fn space_for(&self, bricks: Option<[usize; 3]>, slots: Option<SlotOrder>) -> &H1Space {
        bricks
            .and_then(|b| {
                self.bricked
                    .iter()
                    .find(|(s, o, _)| *s == b && slots.is_none_or(|so| so == *o))
            })
            .map_or(&self.space, |(_, _, s)| s)
    }
}

/// The brick shape and slot order of the tuned kernel at order `p` where the GPU benchmark
/// of `name` runs its defaults on stored geometry and that kernel needs a brick-sorted box
/// (`BpConfig::tuned_on_bricks`); `None` otherwise.
fn default_bricks(
    name: BpName,
    a: &BpArgs,
    gpu: bool,
    geos: &[GeometryMode],
    p: usize,
) -> Option<([usize; 3], SlotOrder)> {
    let defaults = gpu
        && name == BpName::Bp1
        && a.kernel.is_empty()
        && a.bricks.is_empty()
        && a.geo_load == GeoLoad::Tuned
        && (a.reorder == Reorder::None || a.mesh.is_some())
        && geos.contains(&GeometryMode::Stored);
    if !defaults {
        return None;
    }
    #[cfg(feature = "cuda")]
    {
        use ferrofem_cuda::bp::{BpConfig, GeoMode};
        BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p)
            .and_then(|c| c.bricks.map(|b| (b, c.lattice_slots)))
    }
    #[cfg(not(feature = "cuda"))]
    {
        let _ = p;
        None
    }
}

/// The `--mesh` file, checked to be hexahedra and ordered by `--reorder`, once for every
/// order ([`problem`] refines it per order); `None` for the generated box.
fn file_mesh(a: &BpArgs) -> Result<Option<Mesh>, CliError> {
    let Some(path) = &a.mesh else {
        return Ok(None);
    };
    let mut mesh = read_gmsh(path)?;
    if mesh.cell_type() != CellType::Hexahedron {
        return Err(CliError::Usage(format!(
            "--mesh {}: the bake-off operators need hexahedra, the file has {}",
            path.display(),
            mesh.cell_type()
        )));
    }
    a.reorder.apply(&mut mesh);
    Ok(Some(mesh))
}

/// The mesh and spaces of order `p`: the generated box, or `coarse` (the `--mesh` file, from
/// [`file_mesh`]) refined.
fn problem(
    p: usize,
    a: &BpArgs,
    auto: Option<([usize; 3], SlotOrder)>,
    coarse: Option<&Mesh>,
) -> Result<Problem, CliError> {
    let t = Instant::now();
    let n = elems_per_dir(p, a.dofs);
    // (each brick also as the columns the lattice kernel walks in steps, v31)
    let steps: &[usize] = if a.lattice_steps.is_empty() {
        &[1]
    } else {
        &a.lattice_steps
    };
    let shapes: Vec<[usize; 3]> = a
        .bricks
        .iter()
        .flatten()
        .flat_map(|b| steps.iter().map(move |&s| [b[0], b[1], b[2] * s]))
        .chain(auto.map(|a| a.0))
        .collect();
    // the slot orders to number the bricks in: those asked for, else the tuned kernel's
    // (the defaults), else lexicographic (the brick kernels', and the lattice kernel's
    // when asked for without one)
    let orders: Vec<SlotOrder> = if !a.slot_order.is_empty() {
        a.slot_order.iter().map(|o| o.order()).collect()
    } else {
        vec![auto.map_or(SlotOrder::Lexicographic, |a| a.1)]
    };
    // the largest brick per axis: the box takes a multiple of it, its cells sorted into it
    let big = shapes.iter().fold([1; 3], |m, s| {
        [m[0].max(s[0]), m[1].max(s[1]), m[2].max(s[2])]
    });
    let (mesh, origin, auto) = if let (Some(path), Some(mesh)) = (&a.mesh, coarse) {
        let levels = levels_of(a, mesh, p);
        let mut mesh = mesh.refined(levels)?;
        let m = 1usize << levels;
        let mut auto = auto;
        if !shapes.is_empty() {
            if big.iter().any(|&b| m % b != 0) {
                if a.bricks.iter().flatten().next().is_some() {
                    return Err(CliError::Usage(format!(
                        "--bricks {}x{}x{}: {} refined {levels} times gives each cell a block \
                         of {m}x{m}x{m} children, which the bricks must divide (give --refine)",
                        big[0],
                        big[1],
                        big[2],
                        path.display()
                    )));
                }
                eprintln!(
                    "note: p = {p}: the lattice kernel's {}x{}x{} bricks do not divide the \
                     {m}x{m}x{m} children of a cell refined {levels} times; the one-element \
                     kernels run",
                    big[0], big[1], big[2]
                );
                auto = None;
            } else {
                mesh.sort_cells_in_bricks_by_block([m; 3], big)?;
            }
        }
        let origin = format!("{} refined {levels}", path.display());
        (mesh, origin, auto)
    } else {
        let grid = big.map(|b| n.div_ceil(b) * b);
        let spec = BoxSpec::parse(&format!(
            "hex:{}x{}x{},perturb={},seed=1",
            grid[0], grid[1], grid[2], a.perturb
        ))?;
        let mut mesh = generate_box(&spec)?;
        if !shapes.is_empty() {
            if a.reorder != Reorder::None {
                return Err(CliError::Usage(
                    "--bricks sorts the cells into bricks: give no --reorder with it".into(),
                ));
            }
            mesh.sort_cells_in_bricks_ordered(grid, big, a.brick_order == BrickOrder::Morton)?;
        }
        a.reorder.apply(&mut mesh);
        (mesh, format!("box {spec}"), auto)
    };
    let shapes: Vec<[usize; 3]> = if auto.is_none() && a.bricks.iter().flatten().next().is_none() {
        Vec::new()
    } else {
        shapes
    };
    let natural = H1Space::new(&mesh, p, 1)?;
    let mut bricked = Vec::new();
    for &s in &shapes {
        for &o in &orders {
            if !bricked.iter().any(|(b, bo, _)| *b == s && *bo == o) {
                bricked.push((s, o, natural.bricked_in(s, o)?.0));
            }
        }
    }
    let space = if a.numbering == Numbering::InteriorLast {
        natural.interior_last()
    } else {
        natural
    };
    Ok(Problem {
        mesh,
        space,
        bricked,
        auto_bricks: auto.map(|a| a.0),
        prep_s: t.elapsed().as_secs_f64(),
        reorder: format!("{:?}", a.reorder).to_lowercase(),
        origin,
    })
}

/// The operator of a benchmark's full-BP solve (`--solve`): the benchmarked kernel with
/// the screened kind, or, where that kernel is a mass kernel only (the lattice kernel, the
/// register columns), the screened kind's own tuned kernel on the benchmark's usual
/// numbering (interior-last if `interior_last`); the flag says which (`true`: its own
/// kernel, to run on that numbering).
#[cfg(feature = "cuda")]
fn solve_config(
    cfg: ferrofem_cuda::bp::BpConfig,
    skind: TensorKind,
    p: usize,
    interior_last: bool,
) -> (ferrofem_cuda::bp::BpConfig, bool) {
    use ferrofem_cuda::bp::{BpConfig, Variant};
    if cfg.variant == Variant::Lattice || cfg.register_columns {
        let mut s = BpConfig::tuned(skind, cfg.geo, p);
        s.interior_last = interior_last;
        (s, true)
    } else {
        (BpConfig { kind: skind, ..cfg }, false)
    }
}

/// Runs `ferrofem bench bp*`.
pub fn run(name: BpName, a: BpArgs) -> Result<(), CliError> {
    let orders = a.order.0.clone();
    let backend = select(a.backend)?;
    if let Backend::Cpu {
        fallback_reason: Some(r),
    } = &backend
    {
        eprintln!("note: {r}; running on the CPU");
    }
    let mut a = a;
    if a.kernel.contains(&KernelArg::Lattice) && !a.bricks.iter().any(Option::is_some) {
        return Err(CliError::Usage(
            "--kernel lattice runs a block per brick: give --bricks AxBxC".into(),
        ));
    }
    if !a.lattice_steps.is_empty() && !a.kernel.contains(&KernelArg::Lattice) {
        return Err(CliError::Usage(
            "--lattice-steps (1 or more) walks the lattice kernel's bricks in columns: give --kernel lattice --bricks AxBxC".into(),
        ));
    }
    if matches!(backend, Backend::Cpu { .. }) && !a.bricks.is_empty() {
        // (no bricked spaces or brick-sorted box for a kernel that does not use them)
        eprintln!("note: --bricks chooses GPU kernels; the CPU runs without it");
        a.bricks.clear();
    }
    let geos: Vec<GeometryMode> = match a.geo {
        GeoArg::Stored => vec![GeometryMode::Stored],
        GeoArg::Otf => vec![GeometryMode::OnTheFly],
        GeoArg::All => vec![GeometryMode::Stored, GeometryMode::OnTheFly],
    };
    // read once, before the table starts (a mesh the operators cannot take is refused)
    let coarse = file_mesh(&a)?;
    // every order's memory, before the table starts
    for &p in &orders {
        check_memory(name, p, &a, &geos, coarse.as_ref())?;
    }
    let copy_gbs = copy_bandwidth(&backend)?;
    if !a.json {
        println!(
            "{} on {} ({}), copy bandwidth {:.1} GB/s measured in this process",
            match name {
                BpName::Bp1 => "BP1",
                BpName::Bp3 => "BP3",
                BpName::Bp35 => "BP3.5",
            },
            backend.name(),
            match a.precision {
                Precision::F64 => "f64",
                Precision::F32 => "f32",
            },
            copy_gbs
        );
        println!(
            "{:>2} {:>8} {:>10} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>6}  notes",
            "p",
            "geometry",
            "elements",
            "DoFs",
            "setup s",
            "apply ms",
            "GDOF/s",
            "model MB",
            "GB/s",
            "roof",
        );
    }
    let mut records = Vec::new();
    for &p in &orders {
        let auto = default_bricks(name, &a, !matches!(backend, Backend::Cpu { .. }), &geos, p);
        let prob = problem(p, &a, auto, coarse.as_ref())?;
        let variants: Vec<(GeometryMode, bool)> = geos
            .iter()
            .flat_map(|&g| {
                let loads: Vec<bool> = match (g, a.geo_load) {
                    (GeometryMode::Stored, GeoLoad::Both) => vec![false, true],
                    (GeometryMode::Stored, GeoLoad::Direct) => vec![true],
                    _ => vec![false],
                };
                loads.into_iter().map(move |d| (g, d))
            })
            .collect();
        let cpu = matches!(backend, Backend::Cpu { .. });
        for (&(geo, direct), a) in variants
            .iter()
            .flat_map(|v| one_per_choice(&a, cpu).into_iter().map(move |a| (v, a)))
        {
            let mut a = a;
            if a.geo_load == GeoLoad::Both {
                a.geo_load = if direct {
                    GeoLoad::Direct
                } else {
                    GeoLoad::Shared
                };
            }
            if !cpu
                && a.kernel.first() == Some(&KernelArg::Lattice)
                && a.bricks.first().copied().flatten().is_none()
            {
                // (the lattice kernel exists on bricks only; the other kernels ran `none`)
                continue;
            }
            let a = &a;
            let kind = kind_of(name, a.alpha);
            let rec = match (&backend, a.precision) {
                (Backend::Cpu { .. }, Precision::F64) => {
                    run_cpu::<f64>(&prob, kind, geo, copy_gbs, a)?
                }
                (Backend::Cpu { .. }, Precision::F32) => {
                    run_cpu::<f32>(&prob, kind, geo, copy_gbs, a)?
                }
                #[cfg(feature = "cuda")]
                (Backend::Cuda(dev), Precision::F64) => {
                    gpu::run::<f64>(dev, &prob, kind, geo, copy_gbs, a)?
                }
                #[cfg(feature = "cuda")]
                (Backend::Cuda(dev), Precision::F32) => {
                    gpu::run::<f32>(dev, &prob, kind, geo, copy_gbs, a)?
                }
            };
            let mut rec = rec;
            rec.bench = format!("{name:?}").to_lowercase().replace("bp35", "bp3.5");
            rec.backend = backend.name();
            emit(&rec, a)?;
            records.push(rec);
        }
    }
    Ok(())
}

/// One set of options per combination of the comma-separated GPU choices (kernel,
/// skeleton zeroing, groups in sequence, register cap, elements per block), each holding a
/// single value, so that one mesh serves them all. The CPU has one kernel: its options
/// carry none of these choices.
fn one_per_choice(a: &BpArgs, cpu: bool) -> Vec<BpArgs> {
    fn split<T: Copy>(
        all: Vec<BpArgs>,
        values: &[T],
        set: impl Fn(&mut BpArgs, Vec<T>),
    ) -> Vec<BpArgs> {
        let set = &set;
        all.into_iter()
            .flat_map(|b| {
                let mut each: Vec<Vec<T>> = values.iter().map(|&v| vec![v]).collect();
                if each.is_empty() {
                    each.push(Vec::new());
                }
                each.into_iter().map(move |v| {
                    let mut c = b.clone();
                    set(&mut c, v);
                    c
                })
            })
            .collect()
    }
    let mut base = a.clone();
    if cpu {
        base.kernel = vec![KernelArg::Pencil];
        base.skeleton_zeroing.clear();
        base.groups_in_sequence.clear();
        base.zero_ahead.clear();
        base.pipeline_chunks.clear();
        base.compressible_output.clear();
        base.compressible_indices.clear();
        base.geo_prefetch.clear();
        base.evict_first.clear();
        base.gather_lookahead.clear();
        base.late_indices.clear();
        base.pencil_weights.clear();
        base.conflict_free.clear();
        base.slot_arithmetic.clear();
        base.min_blocks.clear();
        base.elems_per_block.clear();
        base.bricks.clear();
        base.rolled.clear();
        base.rolled_phases.clear();
        base.lattice_steps.clear();
        base.lattice_boundary.clear();
        base.split_lines.clear();
        base.one_lattice_array.clear();
        base.slot_order.clear();
        return vec![base];
    }
    let all = split(vec![base], &a.kernel, |c, v| c.kernel = v);
    let all = split(all, &a.skeleton_zeroing, |c, v| c.skeleton_zeroing = v);
    let all = split(all, &a.groups_in_sequence, |c, v| c.groups_in_sequence = v);
    let all = split(all, &a.zero_ahead, |c, v| c.zero_ahead = v);
    let all = split(all, &a.pipeline_chunks, |c, v| c.pipeline_chunks = v);
    let all = split(all, &a.compressible_output, |c, v| {
        c.compressible_output = v
    });
    let all = split(all, &a.compressible_indices, |c, v| {
        c.compressible_indices = v
    });
    let all = split(all, &a.geo_prefetch, |c, v| c.geo_prefetch = v);
    let all = split(all, &a.evict_first, |c, v| c.evict_first = v);
    let all = split(all, &a.gather_lookahead, |c, v| c.gather_lookahead = v);
    let all = split(all, &a.late_indices, |c, v| c.late_indices = v);
    let all = split(all, &a.pencil_weights, |c, v| c.pencil_weights = v);
    let all = split(all, &a.conflict_free, |c, v| c.conflict_free = v);
    let all = split(all, &a.slot_arithmetic, |c, v| c.slot_arithmetic = v);
    let all = split(all, &a.min_blocks, |c, v| c.min_blocks = v);
    let all = split(all, &a.bricks, |c, v| c.bricks = v);
    let all = split(all, &a.rolled, |c, v| c.rolled = v);
    let all = split(all, &a.rolled_phases, |c, v| c.rolled_phases = v);
    let all = split(all, &a.lattice_steps, |c, v| c.lattice_steps = v);
    let all = split(all, &a.lattice_boundary, |c, v| c.lattice_boundary = v);
    let all = split(all, &a.split_lines, |c, v| c.split_lines = v);
    let all = split(all, &a.one_lattice_array, |c, v| c.one_lattice_array = v);
    let all = split(all, &a.slot_order, |c, v| c.slot_order = v);
    split(all, &a.elems_per_block, |c, v| c.elems_per_block = v)
}

/// `--rolled-phases`: lattice phase digits (`23`) or `none`, as the phase mask
/// `BpConfig::rolled_phases` takes (bit k − 1 for phase k). Parsed here because the CLI
/// parses its arguments without the `cuda` feature too.
fn parse_rolled_phases(s: &str) -> Result<u8, String> {
    let bad = || format!("`{s}`: digits of the lattice phases 1..5 (e.g. `3`, `23`) or `none`");
    if s == "none" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(bad());
    }
    s.chars().try_fold(0u8, |m, c| match c {
        '1'..='5' => Ok(m | 1 << (c as u8 - b'1')),
        _ => Err(bad()),
    })
}

fn emit(r: &BpRecord, a: &BpArgs) -> Result<(), CliError> {
    if let Some(path) = &a.record {
        ferrofem_io::append_json_line(path, r)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    let mut notes = String::new();
    if a.mesh.is_some() {
        notes += &format!("{}; ", r.mesh);
    }
    if r.kernels_compiled + r.kernels_from_disk > 0 {
        notes += &format!(
            "compiled {} / cached {} ({:.2} s); ",
            r.kernels_compiled, r.kernels_from_disk, r.compile_s
        );
    }
    notes += &format!("first apply {:.2} ms", r.first_apply_s * 1e3);
    if r.registers > 0 {
        notes += &format!("; {} regs, {} el/block", r.registers, r.elems_per_block);
    }
    if let (Some(it), Some(s), Some(res), Some(rate)) = (
        r.solve_iterations,
        r.solve_s,
        r.solve_rel_residual,
        r.solve_dof_iters_per_s,
    ) {
        notes += &format!(
            "; PCG {it} it in {s:.2} s to {res:.1e}, {:.2} GDOF·it/s",
            rate / 1e9
        );
    }
    println!(
        "{:>2} {:>8} {:>10} {:>9.3e} {:>10.2} {:>10.4} {:>9.2} {:>9.1} {:>9.1} {:>5.0}%  {}",
        r.order,
        r.geometry,
        r.elements,
        r.dofs as f64,
        r.setup_s,
        r.apply_s * 1e3,
        r.gdofs_per_s,
        r.model_bytes / 1e6,
        r.gbytes_per_s,
        100.0 * r.roofline_fraction,
        notes
    );
    Ok(())
}

fn copy_bandwidth(b: &Backend) -> Result<f64, CliError> {
    match b {
        Backend::Cpu { .. } => Ok(measure_copy_bandwidth(1 << 29, 0)),
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => Ok(ferrofem_cuda::blas::copy_bandwidth(dev, 1 << 30, 20)
            .map_err(|e| CliError::Usage(e.to_string()))?
            / 1e9),
    }
}

fn record(
    geo: GeometryMode,
    prob: &Problem,
    q: usize,
    model: Model,
    times: &[f64],
    copy_gbs: f64,
    precision: &str,
) -> BpRecord {
    let t = median(times);
    BpRecord {
        bench: String::new(),
        backend: String::new(),
        precision: precision.into(),
        geometry: match geo {
            GeometryMode::OnTheFly => "otf".into(),
            GeometryMode::Stored => "stored".into(),
            GeometryMode::Interleaved => "interleaved".into(),
        },
        order: prob.space.order(),
        q,
        elements: prob.mesh.num_cells(),
        dofs: prob.space.num_dofs(),
        setup_s: prob.prep_s,
        kernels_compiled: 0,
        kernels_from_disk: 0,
        compile_s: 0.0,
        first_apply_s: 0.0,
        apply_s: t,
        gdofs_per_s: prob.space.num_dofs() as f64 / t / 1e9,
        model_bytes: model.bytes,
        model_flops: model.flops,
        gbytes_per_s: model.gbytes_per_s(t),
        gflops_per_s: model.gflops_per_s(t),
        copy_gbytes_per_s: copy_gbs,
        roofline_fraction: model.roofline_fraction(t, copy_gbs),
        elems_per_block: 0,
        registers: -1,
        kernel: String::new(),
        solve_iterations: None,
        solve_s: None,
        solve_rel_residual: None,
        solve_dof_iters_per_s: None,
        reorder: prob.reorder.clone(),
        mesh: prob.origin.clone(),
    }
}

fn run_cpu<T: ferrofem_base::Real>(
    prob: &Problem,
    kind: TensorKind,
    geo: GeometryMode,
    copy_gbs: f64,
    a: &BpArgs,
) -> Result<BpRecord, CliError> {
    // the CPU's fastest layout of stored factors is the interleaved one
    let cpu_geo = if geo == GeometryMode::Stored {
        GeometryMode::Interleaved
    } else {
        geo
    };
    let t0 = Instant::now();
    let mut opts = TensorOptions::new(kind);
    opts.geometry = cpu_geo;
    let op = TensorOperator::<T>::new(&prob.mesh, &prob.space, &opts)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let setup = t0.elapsed().as_secs_f64();
    let x: Vec<T> = random_vector(prob.space.num_dofs(), 7)
        .into_iter()
        .map(T::of)
        .collect();
    let mut y = vec![T::zero(); x.len()];
    let t1 = Instant::now();
    op.try_apply(&x, &mut y)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let first = t1.elapsed().as_secs_f64();
    for _ in 0..a.warmup {
        op.try_apply(&x, &mut y)
            .map_err(|e| CliError::Usage(e.to_string()))?;
    }
    let mut times = Vec::with_capacity(a.reps);
    for _ in 0..a.reps {
        let t = Instant::now();
        op.try_apply(&x, &mut y)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        times.push(t.elapsed().as_secs_f64());
    }
    let mut model_spec = op.model_spec();
    model_spec.geometry = geo;
    let model = ferrofem_operator::tensor::model::model(&model_spec);
    let mut rec = record(geo, prob, model_spec.q, model, &times, copy_gbs, T::NAME);
    rec.setup_s += setup;
    rec.first_apply_s = first;
    if let Some(tol) = a.solve {
        let solve_kind = screened(kind, a.alpha);
        let sop = if solve_kind == kind {
            None
        } else {
            Some(
                TensorOperator::<T>::new(&prob.mesh, &prob.space, &{
                    let mut o = TensorOptions::new(solve_kind);
                    o.geometry = cpu_geo;
                    o
                })
                .map_err(|e| CliError::Usage(e.to_string()))?,
            )
        };
        let sop = sop.as_ref().unwrap_or(&op);
        let diag = sop.diagonal();
        let space =
            CpuSpace::with_jacobi(sop, &diag).map_err(|e| CliError::Usage(e.to_string()))?;
        let xt: Vec<T> = random_vector(x.len(), 11).into_iter().map(T::of).collect();
        let mut b = vec![T::zero(); x.len()];
        sop.try_apply(&xt, &mut b)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        let mut xs = vec![T::zero(); x.len()];
        let opts = SolveOptions {
            rtol: tol,
            max_iter: 100_000,
            ..Default::default()
        };
        let t = Instant::now();
        let st = pcg(&space, &b, &mut xs, &opts).map_err(|e| CliError::Usage(e.to_string()))?;
        let s = t.elapsed().as_secs_f64();
        rec.solve_iterations = Some(st.iterations);
        rec.solve_s = Some(s);
        rec.solve_rel_residual = Some(st.relative_residual());
        rec.solve_dof_iters_per_s = Some(x.len() as f64 * st.iterations as f64 / s);
    }
    Ok(rec)
}

/// The screened Poisson operator a `--solve` uses: BP1 and pure diffusion get α = 1 so the
/// problem is definite without boundary conditions.
fn screened(kind: TensorKind, alpha: f64) -> TensorKind {
    let a = if alpha == 0.0 { 1.0 } else { alpha };
    match kind {
        TensorKind::Mass | TensorKind::Diffusion { .. } => TensorKind::Diffusion { alpha: a },
        TensorKind::CollocatedDiffusion { .. } => TensorKind::CollocatedDiffusion { alpha: a },
    }
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use ferrofem_cuda::blas::GpuBlas;
    use ferrofem_cuda::bp::{
        label_part, slot_order_tag, BpConfig, GeoMode, GeoPrefetch, GpuBp, LatticeBoundary,
        SkeletonZeroing,
    };
    use ferrofem_cuda::krylov::GpuKrylov;
    use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal, GpuTimer};
    use std::sync::Arc;

    fn ge(e: ferrofem_cuda::GpuError) -> CliError {
        CliError::Usage(e.to_string())
    }

    pub fn run<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        prob: &Problem,
        kind: TensorKind,
        geo: GeometryMode,
        copy_gbs: f64,
        a: &BpArgs,
    ) -> Result<BpRecord, CliError> {
        let before = dev.compile_stats();
        let t0 = Instant::now();
        let kernel = a.kernel.first().copied().unwrap_or(KernelArg::Pencil);
        let cfg = BpConfig {
            kind,
            geo: if geo == GeometryMode::OnTheFly {
                GeoMode::OnTheFly
            } else {
                GeoMode::Stored
            },
            q1d: None,
            elems_per_block: a.elems_per_block.first().copied(),
            variant: match kernel {
                KernelArg::Pencil | KernelArg::Persistent | KernelArg::Registers => {
                    ferrofem_cuda::bp::Variant::Pencil
                }
                KernelArg::Slice2d => ferrofem_cuda::bp::Variant::Slice2D,
                KernelArg::Lattice => ferrofem_cuda::bp::Variant::Lattice,
            },
            interior_last: !matches!(kernel, KernelArg::Slice2d | KernelArg::Lattice)
                && prob.space.skeleton_nodes().is_some(),
            min_blocks: a.min_blocks.first().copied().filter(|&m| m > 0),
            direct_geometry: a.geo_load == GeoLoad::Direct
                && geo == GeometryMode::Stored
                && kernel != KernelArg::Lattice,
            persistent: kernel == KernelArg::Persistent,
            register_columns: kernel == KernelArg::Registers,
            even_odd: !a.plain_contractions,
            geo_prefetch: GeoPrefetch::None,
            evict_first_geometry: false,
            late_indices: false,
            skeleton_zeroing: SkeletonZeroing::Host,
            groups_in_sequence: 1,
            zero_ahead: a.zero_ahead.first().copied().unwrap_or(0),
            pipeline_chunks: a.pipeline_chunks.first().copied().unwrap_or(0),
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
        let mut cfg = cfg;
        if a.geo_load == GeoLoad::Tuned && kernel == KernelArg::Pencil && cfg.interior_last {
            let t = BpConfig::tuned(kind, cfg.geo, prob.space.order());
            cfg.direct_geometry = t.direct_geometry;
            cfg.persistent = t.persistent;
            cfg.register_columns = t.register_columns;
            cfg.min_blocks = match a.min_blocks.first() {
                Some(&m) => Some(m).filter(|&m| m > 0),
                None => t.min_blocks,
            };
            cfg.elems_per_block = cfg.elems_per_block.or(t.elems_per_block);
            cfg.geo_prefetch = t.geo_prefetch;
            cfg.skeleton_zeroing = t.skeleton_zeroing;
            cfg.groups_in_sequence = t.groups_in_sequence;
            cfg.pencil_weights = t.pencil_weights;
            cfg.conflict_free_pitches = t.conflict_free_pitches;
            cfg.slot_arithmetic = t.slot_arithmetic;
            cfg.compressible_indices = t.compressible_indices;
        }
        if let Some(&c) = a.groups_in_sequence.first() {
            cfg.groups_in_sequence = c;
        }
        let zeroing = a.skeleton_zeroing.first().map(|&z| match z {
            ZeroingArg::Host => SkeletonZeroing::Host,
            ZeroingArg::Memset => SkeletonZeroing::Memset,
            ZeroingArg::Owner => SkeletonZeroing::Owner,
            ZeroingArg::Lookahead => SkeletonZeroing::Lookahead,
            ZeroingArg::LookaheadLate => SkeletonZeroing::LookaheadLate,
            ZeroingArg::Pipelined => SkeletonZeroing::Pipelined,
            ZeroingArg::Overlapped => SkeletonZeroing::Overlapped,
        });
        if let Some(z) = zeroing {
            cfg.skeleton_zeroing = z;
        }
        if let Some(&ef) = a.evict_first.first() {
            // only where the factors are loaded directly (elsewhere the same kernel runs)
            cfg.evict_first_geometry =
                ef && cfg.direct_geometry && cfg.geo == ferrofem_cuda::bp::GeoMode::Stored;
        }
        if let Some(&li) = a.late_indices.first() {
            cfg.late_indices = li && !cfg.persistent;
        }
        // v20: only where the register-column kernel runs (elsewhere the same kernel runs)
        if let Some(&pw) = a.pencil_weights.first() {
            cfg.pencil_weights = pw && cfg.register_columns && cfg.geo == GeoMode::Stored;
        }
        if let Some(&sa) = a.slot_arithmetic.first() {
            cfg.slot_arithmetic = sa;
        }
        if let Some(&cf) = a.conflict_free.first() {
            cfg.conflict_free_pitches = cf
                && (cfg.register_columns
                    || kernel == KernelArg::Lattice
                    || matches!(kind, TensorKind::Diffusion { .. })
                        && kernel != KernelArg::Slice2d
                        && !cfg.persistent);
        }
        if let Some(&pf) = a.geo_prefetch.first() {
            cfg.geo_prefetch = match pf {
                PrefetchArg::None => GeoPrefetch::None,
                PrefetchArg::L1 => GeoPrefetch::L1,
                PrefetchArg::L2 => GeoPrefetch::L2,
                PrefetchArg::Registers => GeoPrefetch::Registers,
                // (the lattice kernel's only; elsewhere the same kernel runs without, and
                // the record's label says so)
                PrefetchArg::Shared => GeoPrefetch::None,
            };
        }
        // the defaults on a brick-sorted box (the problem sorted it, `default_bricks`): the
        // lattice kernel where it is the fastest (BpConfig::tuned_on_bricks)
        let auto = BpConfig::tuned_on_bricks(kind, cfg.geo, prob.space.order())
            .filter(|c| prob.auto_bricks.is_some() && c.bricks == prob.auto_bricks);
        if let Some(t) = auto {
            cfg = BpConfig {
                min_blocks: match a.min_blocks.first() {
                    Some(&m) => Some(m).filter(|&m| m > 0),
                    None => t.min_blocks,
                },
                even_odd: cfg.even_odd,
                ..t
            };
            if let Some(&cf) = a.conflict_free.first() {
                cfg.conflict_free_pitches = cf;
            }
        }
        let bricks = a
            .bricks
            .first()
            .copied()
            .flatten()
            .or(auto.and_then(|c| c.bricks));
        if let (Some(b), None) = (bricks, auto) {
            // the kernel chosen so far, one brick per block; an explicit cap is the brick
            // kernel's own
            cfg = cfg.with_bricks(b, prob.space.order());
            if let Some(&m) = a.min_blocks.first() {
                cfg.min_blocks = Some(m).filter(|&m| m > 0);
            }
        }
        if let (Some(z), ferrofem_cuda::bp::Variant::Lattice) = (zeroing, cfg.variant) {
            // (a block per brick resets the zeroing; the lattice kernel refuses any but
            // the fills before the launch and owner zeroing)
            cfg.skeleton_zeroing = z;
        }
        if let Some(&r) = a.rolled.first() {
            cfg.rolled_element_loops = r && cfg.variant == ferrofem_cuda::bp::Variant::Lattice;
        }
        if cfg.variant != ferrofem_cuda::bp::Variant::Lattice {
            cfg.rolled_phases = 0;
        } else if let Some(&m) = a.rolled_phases.first() {
            cfg.rolled_phases = m;
        }
        if let (Some(&b), ferrofem_cuda::bp::Variant::Lattice) =
            (a.lattice_boundary.first(), cfg.variant)
        {
            cfg.lattice_boundary = match b {
                BoundaryArg::Global => LatticeBoundary::Global,
                BoundaryArg::Shared => LatticeBoundary::SharedOffsets,
                BoundaryArg::Staged => LatticeBoundary::Staged,
            };
        }
        if let (Some(&sl), ferrofem_cuda::bp::Variant::Lattice) =
            (a.split_lines.first(), cfg.variant)
        {
            cfg.split_lines = sl;
        }
        if let (Some(&oa), ferrofem_cuda::bp::Variant::Lattice) =
            (a.one_lattice_array.first(), cfg.variant)
        {
            cfg.one_lattice_array = oa;
        } else if cfg.split_lines || cfg.lattice_boundary == LatticeBoundary::Staged {
            // (split lines and the staged boundary asked for on a default with one lattice
            // array, v48, take two; asked for together with one, the kernel refuses)
            cfg.one_lattice_array = false;
        }
        if let (Some(&so), ferrofem_cuda::bp::Variant::Lattice) =
            (a.slot_order.first(), cfg.variant)
        {
            cfg.lattice_slots = so.order();
        }
        if let Some(&ci) = a.compressible_indices.first() {
            cfg.compressible_indices = ci;
        }
        if let Some(&co) = a.compressible_output.first() {
            cfg.compressible_output = co;
        }
        if let (Some(&ef), ferrofem_cuda::bp::Variant::Lattice) =
            (a.evict_first.first(), cfg.variant)
        {
            // v40: the lattice kernel's weights loaded evict-first
            cfg.evict_first_geometry = ef;
        }
        if let (Some(&la), ferrofem_cuda::bp::Variant::Lattice) =
            (a.gather_lookahead.first(), cfg.variant)
        {
            // v42: the gather's data asked of L2 this many bricks ahead
            cfg.gather_lookahead = la;
        }
        if let (Some(&pf), ferrofem_cuda::bp::Variant::Lattice) =
            (a.geo_prefetch.first(), cfg.variant)
        {
            // v39, v41: the lattice kernel prefetches into L2, copies into shared memory, or
            // neither (the label says which)
            cfg.geo_prefetch = match pf {
                PrefetchArg::L2 => GeoPrefetch::L2,
                PrefetchArg::Shared => GeoPrefetch::Shared,
                _ => GeoPrefetch::None,
            };
        }
        let mut bricks = bricks;
        if let (Some(&s), ferrofem_cuda::bp::Variant::Lattice) =
            (a.lattice_steps.first(), cfg.variant)
        {
            // v31: the block walks a column of `s` such bricks
            bricks = bricks.map(|b| [b[0], b[1], b[2] * s]);
            cfg.bricks = bricks;
            cfg.lattice_steps = s;
            if s > 1 {
                // (a column prefetches its weights into L2 instead; the label says so)
                cfg.geo_prefetch = cfg.geo_prefetch.for_columns();
            }
        }
        let space = prob.space_for(
            bricks,
            (cfg.variant == ferrofem_cuda::bp::Variant::Lattice).then_some(cfg.lattice_slots),
        );
        let op = GpuBp::<T>::new(dev, &prob.mesh, space, cfg).map_err(ge)?;
        dev.synchronize().map_err(ge)?;
        let setup = t0.elapsed().as_secs_f64();
        let after = dev.compile_stats();
        let x: Vec<T> = random_vector(prob.space.num_dofs(), 7)
            .into_iter()
            .map(T::of)
            .collect();
        let u = DeviceVec::from_host(dev, &x, "input").map_err(ge)?;
        let mut v = op.output_vector("output").map_err(ge)?;
        let timer = GpuTimer::new(dev);
        let first = timer.time(0, 1, || op.apply(&u, &mut v)).map_err(ge)?[0];
        let times = timer
            .time(a.warmup, a.reps, || op.apply(&u, &mut v))
            .map_err(ge)?;
        let model = op.model();
        let mut rec = record(geo, prob, op.q1d(), model, &times, copy_gbs, T::NAME);
        rec.setup_s += setup;
        rec.first_apply_s = first;
        rec.kernels_compiled = after.compiled - before.compiled;
        rec.kernels_from_disk = after.from_disk - before.from_disk;
        rec.compile_s = after.seconds - before.seconds;
        rec.elems_per_block = op.elems_per_block();
        rec.registers = op.registers();
        rec.kernel = format!(
            "{}-g{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}",
            if cfg.persistent {
                "persistent".to_string()
            } else if cfg.register_columns {
                "registers".to_string()
            } else if cfg.variant == ferrofem_cuda::bp::Variant::Lattice {
                "lattice".to_string()
            } else {
                format!("{kernel:?}").to_lowercase()
            },
            op.grid(),
            if cfg.interior_last { "+il" } else { "" },
            if cfg.direct_geometry { "+direct" } else { "" },
            cfg.min_blocks.map_or(String::new(), |m| format!("+mb{m}")),
            label_part('+', cfg.geo_prefetch.tag()),
            if cfg.evict_first_geometry { "+cs" } else { "" },
            if cfg.late_indices { "+li" } else { "" },
            if cfg.pencil_weights { "+pw" } else { "" },
            if cfg.slot_arithmetic || !cfg.interior_last {
                ""
            } else {
                "+cSK"
            },
            if cfg.conflict_free_pitches && T::BYTES == 8 {
                "+cf"
            } else {
                ""
            },
            if cfg.rolled_element_loops {
                "+rl".to_string()
            } else if cfg.rolled_phases != 0 {
                format!(
                    "+rp{}",
                    ferrofem_cuda::bp::rolled_phase_digits(cfg.rolled_phases)
                )
            } else {
                String::new()
            },
            if cfg.even_odd { "" } else { "+plain" },
            label_part('+', cfg.skeleton_zeroing.tag()),
            op.zero_ahead_groups()
                .or(op.pipeline().map(|pl| pl.chunks.len() as u32))
                .map_or(String::new(), |g| format!("{g}")),
            if cfg.groups_in_sequence > 1 {
                format!("+c{}", cfg.groups_in_sequence)
            } else {
                String::new()
            },
            if v.is_compressible() { "+cmp" } else { "" }
        ) + if op.indices_compressible() {
            "+cmpi"
        } else {
            ""
        } + &cfg
            .bricks
            .map_or(String::new(), |b| format!("+b{}x{}x{}", b[0], b[1], b[2]))
            + &if cfg.lattice_steps > 1 {
                format!("+s{}", cfg.lattice_steps)
            } else {
                String::new()
            }
            + &label_part('+', cfg.lattice_boundary.tag())
            + if cfg.split_lines { "+sl" } else { "" }
            + if cfg.one_lattice_array { "+1a" } else { "" }
            + &label_part('+', slot_order_tag(cfg.lattice_slots))
            + &if cfg.gather_lookahead > 0 {
                format!("+ga{}", cfg.gather_lookahead)
            } else {
                String::new()
            };
        if let Some(tol) = a.solve {
            let skind = screened(kind, a.alpha);
            let (scfg, own_kernel) = solve_config(
                cfg,
                skind,
                prob.space.order(),
                prob.space.skeleton_nodes().is_some(),
            );
            let space = if own_kernel { &prob.space } else { space };
            let sop = GpuBp::<T>::new(dev, &prob.mesh, space, scfg).map_err(ge)?;
            // Jacobi diagonal computed matrix-free on the device, inverted there
            let diag = sop.diagonal().map_err(ge)?;
            let blas = GpuBlas::<T>::new(dev).map_err(ge)?;
            let space = GpuKrylov::with_jacobi_device(&sop, &blas, diag).map_err(ge)?;
            let xt: Vec<T> = random_vector(x.len(), 11).into_iter().map(T::of).collect();
            let dxt = DeviceVec::from_host(dev, &xt, "exact solution").map_err(ge)?;
            let mut b = DeviceVec::<T>::zeros(dev, x.len(), "rhs").map_err(ge)?;
            sop.apply(&dxt, &mut b).map_err(ge)?;
            let mut xs = DeviceVec::<T>::zeros(dev, x.len(), "solution").map_err(ge)?;
            let opts = SolveOptions {
                rtol: tol,
                max_iter: 100_000,
                ..Default::default()
            };
            dev.synchronize().map_err(ge)?;
            let t = Instant::now();
            let st = pcg(&space, &b, &mut xs, &opts).map_err(|e| CliError::Usage(e.to_string()))?;
            dev.synchronize().map_err(ge)?;
            let s = t.elapsed().as_secs_f64();
            rec.solve_iterations = Some(st.iterations);
            rec.solve_s = Some(s);
            rec.solve_rel_residual = Some(st.relative_residual());
            rec.solve_dof_iters_per_s = Some(x.len() as f64 * st.iterations as f64 / s);
        }
        Ok(rec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: BpArgs,
    }

    fn args(extra: &[&str]) -> BpArgs {
        Cli::parse_from(std::iter::once("bench").chain(extra.iter().copied())).a
    }

    /// `--rolled-phases` takes phase digits or `none`, one mask per comma-separated item,
    /// and refuses anything else rather than ignoring it.
    #[test]
    fn rolled_phases_parse_as_masks() {
        assert_eq!(
            args(&["--rolled-phases", "none,3,23,15"]).rolled_phases,
            vec![0, 0b00100, 0b00110, 0b10001]
        );
        for bad in ["", "6", "0", "2x", "all"] {
            assert!(parse_rolled_phases(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            one_per_choice(&args(&["--rolled-phases", "3,23"]), false).len(),
            2
        );
    }

    /// A BP1 solve (`--solve`) gets a kernel that takes the screened kind at every order,
    /// from the tuned BP1 defaults (the lattice at p = 3..8, register columns elsewhere):
    /// the specialisation is accepted without a device.
    #[cfg(feature = "cuda")]
    #[test]
    fn bp1_solves_get_a_screened_kernel_at_every_order() {
        use ferrofem_cuda::bp::{bp_kernel, BpConfig, GeoMode};
        let skind = screened(TensorKind::Mass, 1.0);
        for p in 1..=8 {
            for geo in [GeoMode::Stored, GeoMode::OnTheFly] {
                let mut defaults = vec![BpConfig::tuned(TensorKind::Mass, geo, p)];
                defaults.extend(BpConfig::tuned_on_bricks(TensorKind::Mass, geo, p));
                for cfg in defaults {
                    let (s, _) = solve_config(cfg, skind, p, true);
                    assert_eq!(s.kind, skind);
                    if let Err(e) = bp_kernel::<f64>(s, p) {
                        panic!("p={p} {geo:?} {:?}: {e}", cfg.variant);
                    }
                }
            }
        }
    }

    /// The bench's defaults sort the box into bricks exactly where the tuned BP1 kernel on
    /// stored weights is the lattice kernel, and not when a kernel, bricks, a geometry load
    /// or a reordering is asked for, on the CPU, or for the other BPs.
    #[cfg(feature = "cuda")]
    #[test]
    fn default_bricks_follow_the_tuned_lattice_choice() {
        use ferrofem_cuda::bp::{BpConfig, GeoMode};
        let stored = [GeometryMode::Stored];
        let none = args(&[]);
        for p in 1..=8 {
            let want = BpConfig::tuned_on_bricks(TensorKind::Mass, GeoMode::Stored, p)
                .and_then(|c| c.bricks.map(|b| (b, c.lattice_slots)));
            assert_eq!(default_bricks(BpName::Bp1, &none, true, &stored, p), want);
            let both = [GeometryMode::Stored, GeometryMode::OnTheFly];
            assert_eq!(default_bricks(BpName::Bp1, &none, true, &both, p), want);
        }
        assert_eq!(
            default_bricks(BpName::Bp1, &none, true, &stored, 3).map(|d| d.0),
            Some([4, 4, 2])
        );
        assert_eq!(
            default_bricks(BpName::Bp1, &none, true, &stored, 8).map(|d| d.0),
            Some([2, 2, 1])
        );
        assert_eq!(default_bricks(BpName::Bp1, &none, true, &stored, 2), None);
        for other in [
            args(&["--kernel", "pencil"]),
            args(&["--kernel", "registers"]),
            args(&["--bricks", "none"]),
            args(&["--geo-load", "direct"]),
            args(&["--reorder", "morton"]),
        ] {
            assert_eq!(default_bricks(BpName::Bp1, &other, true, &stored, 3), None);
        }
        assert_eq!(default_bricks(BpName::Bp1, &none, false, &stored, 3), None);
        assert_eq!(
            default_bricks(BpName::Bp1, &none, true, &[GeometryMode::OnTheFly], 3),
            None
        );
        assert_eq!(default_bricks(BpName::Bp3, &none, true, &stored, 3), None);
        assert_eq!(default_bricks(BpName::Bp35, &none, true, &stored, 3), None);
    }

    fn plate() -> String {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/gmsh/plate_hole_hex_v41_binary.msh"
        )
        .to_string()
    }

    /// `--refine auto` takes the level whose DoFs come closest to the target on a log
    /// scale; a number is taken as given, within 0..=10.
    #[test]
    fn refinement_levels_follow_the_dof_target() {
        // 2912 cells: p = 7 wants ~1.2e5 cells (2 levels: 1.9e5), p = 3 ~1.5e6 (3 levels)
        assert_eq!(refine_levels(2912, 7, 4e7), 2);
        assert_eq!(refine_levels(2912, 3, 4e7), 3);
        assert_eq!(refine_levels(2912, 1, 1e3), 0);
        assert_eq!(refine_levels(1, 1, 1e30), 10);
        assert_eq!(parse_refine("auto"), Ok(RefineArg::Auto));
        assert_eq!(parse_refine("2"), Ok(RefineArg::Levels(2)));
        assert!(parse_refine("11").is_err() && parse_refine("x").is_err());
    }

    /// On a file mesh the lattice kernel's bricks are each cell's children: sorted and
    /// numbered per brick where the refinement's block takes the shape, dropped (the
    /// one-element kernels run) where it does not, refused where `--bricks` asked for it;
    /// a mesh of other cells is refused.
    #[test]
    fn a_file_mesh_is_refined_and_bricked_per_cell() {
        let ring = Some(([2, 2, 1], SlotOrder::Ring));
        let a = args(&["--mesh", &plate(), "--refine", "1"]);
        let coarse = file_mesh(&a).expect("plate").expect("a file mesh");
        assert_eq!(coarse.num_cells(), 2912);
        let prob = problem(2, &a, ring, Some(&coarse)).expect("refined plate");
        assert_eq!(prob.mesh.num_cells(), 2912 * 8);
        assert_eq!(prob.auto_bricks, Some([2, 2, 1]));
        assert_eq!(prob.bricked.len(), 1);
        assert!(prob.origin.ends_with("refined 1"));
        let prob = problem(2, &a, Some(([4, 4, 2], SlotOrder::Ring)), Some(&coarse))
            .expect("refined plate");
        assert_eq!((prob.auto_bricks, prob.bricked.len()), (None, 0));
        let a0 = args(&["--mesh", &plate(), "--refine", "0"]);
        let prob = problem(2, &a0, ring, Some(&coarse)).expect("plate");
        assert_eq!((prob.mesh.num_cells(), prob.auto_bricks), (2912, None));
        let asked = args(&["--mesh", &plate(), "--refine", "1", "--bricks", "4x4x2"]);
        let e = problem(2, &asked, None, Some(&coarse))
            .err()
            .expect("bricks refused");
        assert!(e.to_string().contains("divide"), "{e}");
        let tets = args(&[
            "--mesh",
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/data/gmsh/box_tet_v41_binary.msh"
            ),
        ]);
        let e = file_mesh(&tets).expect_err("tetrahedra refused");
        assert!(e.to_string().contains("hexahedra"), "{e}");
    }
}
