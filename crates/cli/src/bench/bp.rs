//! `ferrofem bench bp1|bp3|bp3.5`: the CEED bake-off operators on perturbed hexahedral
//! meshes, per order: DoFs, time per apply (median after warm-up), GDOF/s, bytes by the
//! model, GB/s, and the fraction of the copy bandwidth measured in the same process.
//! `--solve` adds a Jacobi-PCG solve of the screened Poisson problem. `--mesh` runs them on
//! a hexahedral Gmsh mesh, refined uniformly to the DoF target, instead of the generated box.
//!
//! On the GPU each order runs the kernel the tuned table chooses for the device
//! (`--kernel auto`), or the named strategies; the record names the plan that ran.

use super::median;
use crate::error::CliError;
use crate::problem_args::ranges;
use clap::{Args, ValueEnum};
use ferrofem_base::random::random_vector;
use ferrofem_driver::{select, Backend, BackendArg, Precision};
use ferrofem_geometry::GeometrySource;
use ferrofem_mesh::{generate_box, read_gmsh, BoxSpec, CellType, Mesh};
use ferrofem_operator::tensor::{
    lane_numbering, measure_copy_bandwidth, FactorLayout, Model, TensorKind, TensorOperator,
    TensorOptions,
};
use ferrofem_solver::{pcg, CpuSpace, SolveOptions};
use ferrofem_space::H1Space;
use serde::Serialize;
use std::time::Instant;

#[cfg(feature = "mpi")]
mod ranks;

/// Perturbation of the generated box's interior vertices (fraction of the cell size): the
/// cells are general trilinear hexahedra, as in the bake-off.
const PERTURB: f64 = 0.2;
/// Untimed applications before the timed ones.
const WARMUP: usize = 3;

/// Which bake-off problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BpName {
    /// BP1: mass matrix, Gauss quadrature with p + 2 points.
    Bp1,
    /// BP3: diffusion, Gauss quadrature with p + 2 points.
    Bp3,
    /// BP3.5 (CEED BP5): diffusion collocated at the GLL nodes.
    #[value(name = "bp3.5", alias = "bp5", alias = "bp35")]
    Bp35,
}

impl BpName {
    fn kind(self) -> TensorKind {
        match self {
            BpName::Bp1 => TensorKind::Mass,
            BpName::Bp3 => TensorKind::Diffusion { alpha: 0.0 },
            BpName::Bp35 => TensorKind::CollocatedDiffusion { alpha: 0.0 },
        }
    }

    fn label(self) -> &'static str {
        match self {
            BpName::Bp1 => "bp1",
            BpName::Bp3 => "bp3",
            BpName::Bp35 => "bp3.5",
        }
    }
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

/// GPU kernel strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KernelArg {
    /// The tuned choice for the device, operator, geometry and order: the lattice kernel
    /// where it is the fastest and the mesh sorts into its bricks, else the pencil kernel.
    Auto,
    /// The paper's kernel: 2-D slices of an element in shared memory.
    Slice2d,
    /// Pencil contractions with compile-time matrices, tuned per order.
    Pencil,
    /// BP1 with stored weights: a block contracts whole lines of a brick of elements;
    /// orders without a tuned lattice plan are skipped.
    Lattice,
}

/// Options of `ferrofem bench bp*`.
#[derive(Args, Debug, Clone)]
pub struct BpArgs {
    /// Polynomial orders: a range `1..8` or a list `3,5,7`, each 1 to 15.
    #[arg(long, default_value = "1..8", value_parser = parse_orders)]
    order: Orders,
    /// Target number of global DoFs (the box is sized to come close), 1 to 1e12.
    #[arg(long, default_value_t = 4e7, allow_negative_numbers = true, value_parser = ranges::float_in(1.0, 1e12))]
    dofs: f64,
    /// A hexahedral Gmsh mesh (MSH 2.2 or 4.1) instead of the generated box, refined
    /// uniformly (`--refine`).
    #[arg(long, value_name = "FILE.msh")]
    mesh: Option<std::path::PathBuf>,
    /// With `--mesh`: uniform refinement levels (each splits a cell into 8), or `auto`: the
    /// level whose DoF count at each order comes closest to `--dofs`.
    #[arg(long, default_value = "auto", value_parser = parse_refine)]
    refine: RefineArg,
    /// Geometry variant(s).
    #[arg(long, value_enum, default_value_t = GeoArg::All)]
    geo: GeoArg,
    /// Scalar type.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Where to run.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Timed applications (median reported), 1 to 1e6.
    #[arg(long, default_value_t = 20, value_parser = ranges::usize_in(1, ranges::MAX_REPS))]
    reps: usize,
    /// GPU kernel strategies, comma-separated to compare several on one mesh.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
    kernel: Vec<KernelArg>,
    /// Also solve the screened Poisson problem (alpha = 1) with Jacobi-PCG to this
    /// relative residual, in (0, 1).
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
    /// The kernel plan that ran (GPU), or `cpu`.
    kernel: String,
    solve_iterations: Option<usize>,
    solve_s: Option<f64>,
    solve_rel_residual: Option<f64>,
    solve_dof_iters_per_s: Option<f64>,
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
    geos: &[GeometrySource],
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
    let geometry = if geos.contains(&GeometrySource::Stored) {
        cells
            * q.powi(3)
            * ferrofem_operator::tensor::model::factors_per_point(name.kind(), 3) as f64
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

/// Elements per direction so that (p n + 1)^3 is close to `dofs`.
fn elems_per_dir(p: usize, dofs: f64) -> usize {
    (((dofs.cbrt() - 1.0) / p as f64).round() as usize).max(1)
}

/// The mesh of one order and its naturally numbered space, which every variant of the
/// order runs on (each numbers it as its kernel reads it).
struct Case {
    mesh: Mesh,
    natural: H1Space,
    /// Seconds to make the mesh and the space.
    prep_s: f64,
    /// What the record calls the mesh.
    origin: String,
}

/// The `--mesh` file, checked to be hexahedra, once for every order ([`make_mesh`] refines
/// it per order); `None` for the generated box.
fn file_mesh(a: &BpArgs) -> Result<Option<Mesh>, CliError> {
    let Some(path) = &a.mesh else {
        return Ok(None);
    };
    let mesh = read_gmsh(path)?;
    if mesh.cell_type() != CellType::Hexahedron {
        return Err(CliError::Usage(format!(
            "--mesh {}: the bake-off operators need hexahedra, the file has {}",
            path.display(),
            mesh.cell_type()
        )));
    }
    Ok(Some(mesh))
}

/// How a mesh's cells are arranged: the generated box's grid, or the blocks of children
/// of a file mesh refined `levels` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cells {
    Grid([usize; 3]),
    Blocks(usize),
}

/// The cells of order `p`'s mesh: the generated box (each side a multiple of `brick`, the
/// lattice kernel's brick where one runs), or `coarse` (the `--mesh` file) refined.
fn cells_of(a: &BpArgs, p: usize, brick: Option<[usize; 3]>, coarse: Option<&Mesh>) -> Cells {
    match coarse {
        Some(m) => Cells::Blocks(1 << levels_of(a, m, p)),
        None => {
            let n = elems_per_dir(p, a.dofs);
            Cells::Grid(brick.unwrap_or([1; 3]).map(|b| n.div_ceil(b) * b))
        }
    }
}

/// Makes the mesh of `cells` (generated, or `coarse` refined) and what the record calls it.
fn make_mesh(a: &BpArgs, cells: Cells, coarse: Option<&Mesh>) -> Result<(Mesh, String), CliError> {
    match (cells, coarse, &a.mesh) {
        (Cells::Blocks(m), Some(mesh), Some(path)) => {
            let levels = m.trailing_zeros() as usize;
            Ok((
                mesh.refined(levels)?,
                format!("{} refined {levels}", path.display()),
            ))
        }
        (Cells::Grid(g), _, _) => {
            let spec = BoxSpec::parse(&format!(
                "hex:{}x{}x{},perturb={PERTURB},seed=1",
                g[0], g[1], g[2]
            ))?;
            Ok((generate_box(&spec)?, format!("box {spec}")))
        }
        _ => Err(CliError::Usage(
            "refined blocks without a --mesh file".into(),
        )),
    }
}

/// The geometry modes `--geo` runs.
fn geometries(g: GeoArg) -> Vec<GeometrySource> {
    match g {
        GeoArg::Stored => vec![GeometrySource::Stored],
        GeoArg::Otf => vec![GeometrySource::OnTheFly],
        GeoArg::All => vec![GeometrySource::Stored, GeometrySource::OnTheFly],
    }
}

/// Runs `ferrofem bench bp*`.
pub fn run(name: BpName, a: BpArgs) -> Result<(), CliError> {
    if ferrofem_dist::launched_in_parallel() {
        return run_on_ranks(name, &a);
    }
    let backend = select(a.backend)?;
    if let Backend::Cpu {
        fallback_reason: Some(r),
    } = &backend
    {
        eprintln!("note: {r}; running on the CPU");
    }
    if matches!(backend, Backend::Cpu { .. }) && a.kernel != [KernelArg::Auto] {
        eprintln!("note: --kernel chooses among GPU kernels; the CPU has one");
    }
    let geos = geometries(a.geo);
    // read once, before the table starts (a mesh the operators cannot take is refused)
    let coarse = file_mesh(&a)?;
    // every order's memory, before the table starts
    for &p in &a.order.0 {
        check_memory(name, p, &a, &geos, coarse.as_ref())?;
    }
    let copy_gbs = copy_bandwidth(&backend)?;
    if !a.json {
        println!(
            "{} on {} ({}), copy bandwidth {copy_gbs:.1} GB/s measured in this process",
            name.label().to_uppercase(),
            backend.name(),
            a.precision.name(),
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
    for &p in &a.order.0 {
        let records = match &backend {
            Backend::Cpu { .. } => {
                let cells = cells_of(&a, p, None, coarse.as_ref());
                let case = make_case(&a, p, cells, None, coarse.as_ref())?;
                // numbered for the kernels' batches, as the GPU kernels get theirs
                let space = case
                    .natural
                    .renumbered(&lane_numbering(case.natural.restriction()));
                let mut out = Vec::new();
                for &geo in &geos {
                    out.push(match a.precision {
                        Precision::F64 => run_cpu::<f64>(&case, &space, name, geo, copy_gbs, &a)?,
                        Precision::F32 => run_cpu::<f32>(&case, &space, name, geo, copy_gbs, &a)?,
                    });
                }
                out
            }
            #[cfg(feature = "cuda")]
            Backend::Cuda(dev) => {
                gpu::run_order(dev, name, p, &geos, coarse.as_ref(), copy_gbs, &a)?
            }
        };
        for mut rec in records {
            rec.bench = name.label().into();
            rec.backend = backend.name();
            emit(&rec, &a)?;
        }
    }
    Ok(())
}

/// The solve over the ranks of an MPI job (`mpirun -np N ferrofem bench bp* --solve TOL`).
#[cfg(feature = "mpi")]
fn run_on_ranks(name: BpName, a: &BpArgs) -> Result<(), CliError> {
    ranks::run(name, a)
}

/// Without MPI a launch on several ranks would run the whole bench once per rank.
#[cfg(not(feature = "mpi"))]
fn run_on_ranks(_: BpName, _: &BpArgs) -> Result<(), CliError> {
    Err(crate::ranks::without_mpi())
}

/// Sorts a mesh's cells for a kernel, given how they are arranged.
type SortCells<'a> = &'a dyn Fn(&mut Mesh, Cells) -> Result<(), CliError>;

/// Makes order `p`'s mesh of `cells`, sorted by `sort` (the GPU's lattice kernel sorts it
/// into its bricks), and its natural space.
fn make_case(
    a: &BpArgs,
    p: usize,
    cells: Cells,
    sort: Option<SortCells<'_>>,
    coarse: Option<&Mesh>,
) -> Result<Case, CliError> {
    let t = Instant::now();
    let (mut mesh, origin) = make_mesh(a, cells, coarse)?;
    if let Some(sort) = sort {
        sort(&mut mesh, cells)?;
    }
    let natural = H1Space::new(&mesh, p, 1)?;
    Ok(Case {
        mesh,
        natural,
        prep_s: t.elapsed().as_secs_f64(),
        origin,
    })
}

fn emit(r: &BpRecord, a: &BpArgs) -> Result<(), CliError> {
    if super::record_and_print_json(r, a.record.as_deref(), a.json)? {
        return Ok(());
    }
    let mut notes = r.kernel.clone();
    if a.mesh.is_some() {
        notes += &format!("; {}", r.mesh);
    }
    if r.kernels_compiled + r.kernels_from_disk > 0 {
        notes += &format!(
            "; compiled {} / cached {} ({:.2} s)",
            r.kernels_compiled, r.kernels_from_disk, r.compile_s
        );
    }
    notes += &format!("; first apply {:.2} ms", r.first_apply_s * 1e3);
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
        Backend::Cuda(dev) => Ok(ferrofem_cuda::blas::copy_bandwidth(dev, 1 << 30, 20)? / 1e9),
    }
}

/// The record of `times` (seconds per apply) for order `space.order()` on `case`.
fn record(
    geo: GeometrySource,
    case: &Case,
    space: &H1Space,
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
        geometry: geo.tag().into(),
        order: space.order(),
        q,
        elements: case.mesh.num_cells(),
        dofs: space.num_dofs(),
        setup_s: case.prep_s,
        kernels_compiled: 0,
        kernels_from_disk: 0,
        compile_s: 0.0,
        first_apply_s: 0.0,
        apply_s: t,
        gdofs_per_s: space.num_dofs() as f64 / t / 1e9,
        model_bytes: model.bytes,
        model_flops: model.flops,
        gbytes_per_s: model.gbytes_per_s(t),
        gflops_per_s: model.gflops_per_s(t),
        copy_gbytes_per_s: copy_gbs,
        roofline_fraction: model.roofline_fraction(t, copy_gbs),
        elems_per_block: 0,
        registers: -1,
        kernel: "cpu".into(),
        solve_iterations: None,
        solve_s: None,
        solve_rel_residual: None,
        solve_dof_iters_per_s: None,
        mesh: case.origin.clone(),
    }
}

/// The screened Poisson operator a `--solve` uses: α = 1, so that the problem is definite
/// without boundary conditions.
fn screened(kind: TensorKind) -> TensorKind {
    match kind {
        TensorKind::Mass | TensorKind::Diffusion { .. } => TensorKind::Diffusion { alpha: 1.0 },
        TensorKind::CollocatedDiffusion { .. } => TensorKind::CollocatedDiffusion { alpha: 1.0 },
    }
}

/// What a `--solve` measured.
struct SolveFigures {
    iterations: usize,
    seconds: f64,
    rel_residual: f64,
}

impl SolveFigures {
    fn into_record(self, rec: &mut BpRecord) {
        rec.solve_iterations = Some(self.iterations);
        rec.solve_s = Some(self.seconds);
        rec.solve_rel_residual = Some(self.rel_residual);
        rec.solve_dof_iters_per_s =
            Some(rec.dofs as f64 * self.iterations as f64 / self.seconds.max(1e-12));
    }
}

/// PCG options of a `--solve` to `rtol`.
fn solve_options(rtol: f64) -> SolveOptions {
    SolveOptions {
        rtol,
        max_iter: 100_000,
        ..Default::default()
    }
}

fn run_cpu<T: ferrofem_base::Real>(
    case: &Case,
    space: &H1Space,
    name: BpName,
    geo: GeometrySource,
    copy_gbs: f64,
    a: &BpArgs,
) -> Result<BpRecord, CliError> {
    let operator = |kind| {
        let mut opts = TensorOptions::new(kind);
        opts.geometry = geo;
        // the CPU's fastest layout of stored factors is the interleaved one
        opts.factor_layout = FactorLayout::Interleaved;
        TensorOperator::<T>::new(&case.mesh, space, &opts)
    };
    let t0 = Instant::now();
    let op = operator(name.kind())?;
    let setup = t0.elapsed().as_secs_f64();
    let x: Vec<T> = random_vector(space.num_dofs(), 7)
        .into_iter()
        .map(T::of)
        .collect();
    let mut y = vec![T::zero(); x.len()];
    let t1 = Instant::now();
    op.try_apply(&x, &mut y)?;
    let first = t1.elapsed().as_secs_f64();
    for _ in 0..WARMUP {
        op.try_apply(&x, &mut y)?;
    }
    let mut times = Vec::with_capacity(a.reps);
    for _ in 0..a.reps {
        let t = Instant::now();
        op.try_apply(&x, &mut y)?;
        times.push(t.elapsed().as_secs_f64());
    }
    let mut model_spec = op.model_spec();
    model_spec.geometry = geo;
    let model = ferrofem_operator::tensor::model::model(&model_spec);
    let mut rec = record(
        geo,
        case,
        space,
        model_spec.q,
        model,
        &times,
        copy_gbs,
        T::NAME,
    );
    rec.setup_s += setup;
    rec.first_apply_s = first;
    if let Some(tol) = a.solve {
        let skind = screened(name.kind());
        let own = if skind == name.kind() {
            None
        } else {
            Some(operator(skind)?)
        };
        let sop = own.as_ref().unwrap_or(&op);
        // a bake-off operator always has its diagonal
        let diag = sop.diagonal().unwrap_or_default();
        let pc = CpuSpace::with_jacobi(sop, &diag)?;
        let xt: Vec<T> = random_vector(x.len(), 11).into_iter().map(T::of).collect();
        let mut b = vec![T::zero(); x.len()];
        sop.try_apply(&xt, &mut b)?;
        let mut xs = vec![T::zero(); x.len()];
        let t = Instant::now();
        let st = pcg(&pc, &b, &mut xs, &solve_options(tol))?;
        SolveFigures {
            iterations: st.iterations,
            seconds: t.elapsed().as_secs_f64(),
            rel_residual: st.relative_residual(),
        }
        .into_record(&mut rec);
    }
    Ok(rec)
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use ferrofem_cuda::blas::GpuBlas;
    use ferrofem_cuda::bp::{
        BpOperator, BpPlan, CellArrangement, DeviceClass, GpuBp, KernelSpace, Numbering,
    };
    use ferrofem_cuda::krylov::GpuKrylov;
    use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal, GpuTimer};
    use std::sync::Arc;

    impl From<Cells> for CellArrangement {
        fn from(c: Cells) -> CellArrangement {
            match c {
                Cells::Grid(g) => CellArrangement::Grid(g),
                Cells::Blocks(m) => CellArrangement::Blocks(m),
            }
        }
    }

    /// The plans of order `p` for `op`: one per `--kernel` strategy, `auto` resolved to the
    /// lattice plan where the table has one and `cells` (the mesh the order will run on,
    /// given the lattice brick) take it, else the tuned pencil plan. A strategy without a
    /// plan here (the lattice kernel for other operators and orders) is left out with a
    /// note; a lattice plan asked for on a mesh that does not sort into its bricks is an
    /// error.
    pub(super) fn plans(
        class: &DeviceClass,
        op: &BpOperator,
        p: usize,
        kernels: &[KernelArg],
        cells: impl Fn(Option<[usize; 3]>) -> Cells,
    ) -> Result<Vec<BpPlan>, CliError> {
        let mut out = Vec::new();
        for &k in kernels {
            let plan = match k {
                KernelArg::Slice2d => Some(BpPlan::Slice2d),
                KernelArg::Pencil => Some(BpPlan::tuned(class, op, p)),
                KernelArg::Auto => Some(
                    BpPlan::tuned_on_bricks(class, op, p)
                        .filter(|l| fits(l, &cells))
                        .unwrap_or_else(|| BpPlan::tuned(class, op, p)),
                ),
                KernelArg::Lattice => match BpPlan::tuned_on_bricks(class, op, p) {
                    Some(l) if fits(&l, &cells) => Some(l),
                    Some(l) => {
                        return Err(CliError::Usage(format!(
                            "--kernel lattice at p = {p}: the mesh's cells ({:?}) do not sort into the {}'s bricks (give --refine)",
                            cells(brick(&l)),
                            l.describe()
                        )))
                    }
                    None => {
                        eprintln!(
                            "note: p = {p}, {} geometry: no lattice kernel for this operator (BP1 with stored weights at the orders the table holds)",
                            op.geo.tag()
                        );
                        None
                    }
                },
            };
            if let Some(plan) = plan.filter(|pl| !out.contains(pl)) {
                out.push(plan);
            }
        }
        Ok(out)
    }

    fn brick(plan: &BpPlan) -> Option<[usize; 3]> {
        match plan.numbering() {
            Numbering::Bricks(b) => Some(b),
            _ => None,
        }
    }

    /// Whether the mesh made for `plan`'s brick sorts into it.
    fn fits(plan: &BpPlan, cells: &impl Fn(Option<[usize; 3]>) -> Cells) -> bool {
        plan.runs_on(cells(brick(plan)).into())
    }

    /// Runs every geometry and strategy of order `p` on one mesh (sorted into the lattice
    /// kernel's bricks where one runs).
    pub(super) fn run_order(
        dev: &Arc<GpuDevice>,
        name: BpName,
        p: usize,
        geos: &[GeometrySource],
        coarse: Option<&Mesh>,
        copy_gbs: f64,
        a: &BpArgs,
    ) -> Result<Vec<BpRecord>, CliError> {
        let class = DeviceClass::of(dev);
        let cells = |b| cells_of(a, p, b, coarse);
        let mut variants = Vec::new();
        for &g in geos {
            let op = BpOperator::new(name.kind(), g);
            for plan in plans(&class, &op, p, &a.kernel, cells)? {
                variants.push((g, op, plan));
            }
        }
        // the lattice plan (BP1 with stored weights: at most one per order) decides the
        // mesh: a box whose sides are whole bricks, sorted into them
        let lattice = variants.iter().map(|v| v.2).find(|pl| brick(pl).is_some());
        let sort = |mesh: &mut Mesh, c: Cells| -> Result<(), CliError> {
            match lattice {
                Some(l) => Ok(l.sort_cells(mesh, c.into())?),
                None => Ok(()),
            }
        };
        let case = make_case(
            a,
            p,
            cells(lattice.as_ref().and_then(brick)),
            Some(&sort),
            coarse,
        )?;
        let mut numbered: Vec<(Numbering, KernelSpace)> = Vec::new();
        let mut out = Vec::new();
        for (g, op, plan) in variants {
            let space = number(&mut numbered, &plan, &case.natural)?;
            let rec = match a.precision {
                Precision::F64 => run::<f64>(dev, &class, &case, space, g, op, plan, copy_gbs, a)?,
                Precision::F32 => run::<f32>(dev, &class, &case, space, g, op, plan, copy_gbs, a)?,
            };
            out.push(rec);
        }
        Ok(out)
    }

    /// `natural` numbered for `plan`, made once per numbering.
    fn number(
        made: &mut Vec<(Numbering, KernelSpace)>,
        plan: &BpPlan,
        natural: &H1Space,
    ) -> Result<KernelSpace, CliError> {
        let n = plan.numbering();
        if let Some((_, s)) = made.iter().find(|(m, _)| *m == n) {
            return Ok(s.clone());
        }
        let s = plan.number(natural)?;
        made.push((n, s.clone()));
        Ok(s)
    }

    #[allow(clippy::too_many_arguments)]
    fn run<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        class: &DeviceClass,
        case: &Case,
        numbered: KernelSpace,
        geo: GeometrySource,
        bop: BpOperator,
        plan: BpPlan,
        copy_gbs: f64,
        a: &BpArgs,
    ) -> Result<BpRecord, CliError> {
        let before = dev.compile_stats();
        let t0 = Instant::now();
        let op = GpuBp::<T>::new(dev, &case.mesh, &numbered, bop, plan)?;
        dev.synchronize()?;
        let setup = t0.elapsed().as_secs_f64();
        let after = dev.compile_stats();
        let space = numbered.space();
        let x: Vec<T> = random_vector(space.num_dofs(), 7)
            .into_iter()
            .map(T::of)
            .collect();
        let u = DeviceVec::from_host(dev, &x, "input")?;
        let mut v = op.output_vector("output")?;
        let timer = GpuTimer::new(dev);
        let first = timer.time(0, 1, || op.apply(&u, &mut v))?[0];
        let times = timer.time(WARMUP, a.reps, || op.apply(&u, &mut v))?;
        let mut rec = record(
            geo,
            case,
            space,
            op.q1d(),
            op.model(),
            &times,
            copy_gbs,
            T::NAME,
        );
        rec.setup_s += setup;
        rec.first_apply_s = first;
        rec.kernels_compiled = after.compiled - before.compiled;
        rec.kernels_from_disk = after.from_disk - before.from_disk;
        rec.compile_s = after.seconds - before.seconds;
        rec.elems_per_block = op.elems_per_block();
        rec.registers = op.registers();
        rec.kernel = format!("{} g{}", plan.describe(), op.grid());
        if let Some(tol) = a.solve {
            solve::<T>(dev, class, case, &numbered, &op, tol)?.into_record(&mut rec);
        }
        Ok(rec)
    }

    /// A Jacobi-PCG solve of the screened problem on the device: the slice kernel solves
    /// with itself, the other strategies with the screened operator's own tuned plan (the
    /// lattice and register-column kernels are mass kernels only).
    fn solve<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        class: &DeviceClass,
        case: &Case,
        numbered: &KernelSpace,
        bench_op: &GpuBp<T>,
        tol: f64,
    ) -> Result<SolveFigures, CliError> {
        let p = bench_op.order();
        let sop = BpOperator {
            kind: screened(bench_op.operator().kind),
            ..bench_op.operator()
        };
        let (plan, space) = match bench_op.plan() {
            BpPlan::Slice2d => (BpPlan::Slice2d, numbered.clone()),
            _ => {
                let plan = BpPlan::tuned(class, &sop, p);
                (plan, plan.number(&case.natural)?)
            }
        };
        let op = GpuBp::<T>::new(dev, &case.mesh, &space, sop, plan)?;
        // Jacobi diagonal computed matrix-free on the device, inverted there
        let diag = op.diagonal()?;
        let blas = GpuBlas::<T>::new(dev)?;
        let pc = GpuKrylov::with_jacobi_device(&op, &blas, diag)?;
        let n = op.ndofs();
        let xt: Vec<T> = random_vector(n, 11).into_iter().map(T::of).collect();
        let dxt = DeviceVec::from_host(dev, &xt, "exact solution")?;
        let mut b = DeviceVec::<T>::zeros(dev, n, "rhs")?;
        op.apply(&dxt, &mut b)?;
        let mut xs = DeviceVec::<T>::zeros(dev, n, "solution")?;
        dev.synchronize()?;
        let t = Instant::now();
        let st = pcg(&pc, &b, &mut xs, &solve_options(tol))?;
        dev.synchronize()?;
        Ok(SolveFigures {
            iterations: st.iterations,
            seconds: t.elapsed().as_secs_f64(),
            rel_residual: st.relative_residual(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        a: BpArgs,
    }

    fn args(extra: &[&str]) -> BpArgs {
        Cli::parse_from(std::iter::once("bench").chain(extra.iter().copied())).a
    }

    /// The user's bench keeps a small surface: at most 12 options.
    #[test]
    fn the_bench_has_at_most_twelve_options() {
        let cmd = Cli::command();
        let options: Vec<_> = cmd
            .get_arguments()
            .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
            .map(|a| a.get_id().to_string())
            .collect();
        assert!(options.len() <= 12, "{options:?}");
    }

    /// `--order` takes a range or a list within 1..=15 and refuses anything else.
    #[test]
    fn orders_parse_as_ranges_or_lists() {
        assert_eq!(parse_orders("2..4"), Ok(Orders(vec![2, 3, 4])));
        assert_eq!(parse_orders("3,5,7"), Ok(Orders(vec![3, 5, 7])));
        for bad in ["0..3", "4..2", "16", "x", ""] {
            assert!(parse_orders(bad).is_err(), "{bad:?}");
        }
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

    fn plate() -> String {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/data/gmsh/plate_hole_hex_v41_binary.msh"
        )
        .to_string()
    }

    /// A file mesh is refined per order into blocks of children; the generated box takes
    /// whole bricks per side; a mesh of other cells is refused.
    #[test]
    fn meshes_are_refined_files_or_boxes_of_whole_bricks() {
        let a = args(&["--mesh", &plate(), "--refine", "1"]);
        let coarse = file_mesh(&a).expect("plate").expect("a file mesh");
        assert_eq!(coarse.num_cells(), 2912);
        let cells = cells_of(&a, 2, None, Some(&coarse));
        assert_eq!(cells, Cells::Blocks(2));
        let (mesh, origin) = make_mesh(&a, cells, Some(&coarse)).expect("refined plate");
        assert_eq!(mesh.num_cells(), 2912 * 8);
        assert!(origin.ends_with("refined 1"), "{origin}");
        let boxed = args(&["--dofs", "1000"]);
        // p = 3, 1e3 DoFs: 3 cells per side, rounded up to whole 2x2x4 bricks
        assert_eq!(cells_of(&boxed, 3, None, None), Cells::Grid([3, 3, 3]));
        assert_eq!(
            cells_of(&boxed, 3, Some([2, 2, 4]), None),
            Cells::Grid([4, 4, 4])
        );
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

    /// `--kernel auto` runs the lattice kernel exactly where the tuned table has a lattice
    /// plan (BP1, stored weights) and the mesh sorts into its bricks, else the tuned pencil
    /// plan; `--kernel lattice` is skipped where no lattice plan exists and refused where
    /// the mesh cannot take its bricks.
    #[cfg(feature = "cuda")]
    #[test]
    fn auto_runs_the_lattice_kernel_where_it_is_tuned_and_fits() {
        use ferrofem_cuda::bp::{BpOperator, BpPlan, DeviceClass};
        let class = DeviceClass::H200;
        let grid = |b: Option<[usize; 3]>| Cells::Grid(b.unwrap_or([1; 3]).map(|e| 8 * e));
        let odd = |_: Option<[usize; 3]>| Cells::Blocks(1);
        for p in 1..=8 {
            for geo in [GeometrySource::Stored, GeometrySource::OnTheFly] {
                let op = BpOperator::new(TensorKind::Mass, geo);
                let want = BpPlan::tuned_on_bricks(&class, &op, p)
                    .unwrap_or_else(|| BpPlan::tuned(&class, &op, p));
                let got = gpu::plans(&class, &op, p, &[KernelArg::Auto], grid).unwrap();
                assert_eq!(got, vec![want], "p = {p} {geo:?}");
                let got = gpu::plans(&class, &op, p, &[KernelArg::Auto], odd).unwrap();
                assert_eq!(got, vec![BpPlan::tuned(&class, &op, p)], "p = {p} {geo:?}");
                let lattice = gpu::plans(&class, &op, p, &[KernelArg::Lattice], grid).unwrap();
                assert_eq!(lattice.len(), usize::from(want.name() == "lattice"));
            }
        }
        let op = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
        assert_eq!(
            gpu::plans(&class, &op, 3, &[KernelArg::Auto], grid).unwrap()[0].name(),
            "lattice"
        );
        assert!(gpu::plans(&class, &op, 3, &[KernelArg::Lattice], odd).is_err());
        let all = [KernelArg::Slice2d, KernelArg::Pencil, KernelArg::Auto];
        let names: Vec<_> = gpu::plans(&class, &op, 3, &all, grid)
            .unwrap()
            .iter()
            .map(|p| p.name())
            .collect();
        assert_eq!(names, ["slice2d", "pencil", "lattice"]);
    }
}
