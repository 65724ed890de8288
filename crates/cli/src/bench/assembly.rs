//! `ferrofem bench assembly`: global CSR assembly of a stiffness matrix with each strategy
//! of Cecka, Lew & Darve (2011) as implemented by [`AssemblyPlan`]: serial, element
//! colouring, by row and by nonzero. The plan (sparsity pattern and element → nonzero map)
//! is built once and timed separately; each strategy then reassembles into the same matrix
//! (median after warm-up; the first call, which builds the strategy's lazily created
//! colouring, batches or reduction lists, is reported apart). A compute-only pass (every
//! element matrix computed, nothing summed) gives the floor the strategies add to.
//!
//! **Byte model** (the same yardstick for every strategy; per assembly, `n` rows of an
//! element matrix, `s` bytes per scalar):
//!
//! - element matrices written once and read once: `2 s n²` per cell (the buffered
//!   strategies do exactly this; serial and coloured keep them in cache, so their figure is
//!   an effective bandwidth);
//! - the element → nonzero map read: `4 n²` per cell;
//! - the geometry the element matrices are computed from: `s (d² + 1)` per cell on
//!   simplices (affine), `s (d² + 1) N_q` per cell on quadrilaterals and hexahedra;
//! - the CSR values written once: `s · nnz`.
//!
//! Not counted: zeroing the values first, the CSR structure (unchanged), the node →
//! element transpose or reduction lists, and tabulations.

use super::median;
use crate::error::CliError;
use crate::problem_args::ranges;
use clap::{Args, ValueEnum};
use ferrofem_assembly::{AssemblyPlan, DofMap, Strategy};
use ferrofem_base::memory::Bytes;
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_driver::{select, Backend, BackendArg, Precision};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::measure_copy_bandwidth;
use ferrofem_operator::{ElementMatrices, FormOperator, FormOptions, Quadrature};
use ferrofem_physics::{Elasticity, Physics, Poisson};
use ferrofem_space::H1Space;
use rayon::prelude::*;
use serde::Serialize;
use std::time::Instant;

/// The matrix to assemble.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AssemblyProblem {
    /// The Laplacian (scalar).
    Poisson,
    /// Linear elasticity with λ = μ = 1 (`dim` components).
    Elasticity,
}

/// Strategies to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// Every strategy.
    All,
    /// One thread, element by element.
    Serial,
    /// Element colouring.
    Colored,
    /// Buffered batches, parallel over rows.
    ByRow,
    /// Buffered, parallel over nonzeros.
    ByNonzero,
    /// GPU: elements add their matrices into CSR with atomics.
    Atomic,
    /// GPU: one launch per colour of elements, no atomics (the paper's ElemColor).
    ElemColor,
    /// GPU: element matrices in global memory, one thread per nonzero gathers (GlobalNZ).
    GlobalNz,
    /// GPU: compact row sets, their elements' matrices in shared memory (SharedNZ).
    SharedNz,
    /// GPU: compact element sets summed per nonzero in shared memory, one global update
    /// per nonzero and set.
    BlockSums,
    /// GPU: one thread per row recomputes the element rows it sums (LocalNZ by row).
    LocalRow,
}

/// Options of `ferrofem bench assembly`.
#[derive(Args, Debug, Clone)]
pub struct AssemblyArgs {
    /// The mesh, e.g. `tet:32x32x32,perturb=0.2` or `hex:24x24x24,perturb=0.2`.
    #[arg(
        long = "box",
        value_name = "SPEC",
        default_value = "tet:32x32x32,perturb=0.2,seed=1"
    )]
    pub(super) box_spec: String,
    /// The matrix.
    #[arg(long, value_enum, default_value_t = AssemblyProblem::Poisson)]
    pub(super) problem: AssemblyProblem,
    /// Polynomial order: 1 to 15 on quadrilaterals and hexahedra, 1 to 6 on triangles, 1 to
    /// 4 on tetrahedra.
    #[arg(long, default_value_t = 1, value_parser = ranges::usize_in(1, ranges::MAX_ORDER))]
    pub(super) order: usize,
    /// Strategy (or all of the backend's): serial, colored, by-row, by-nonzero on the CPU;
    /// atomic, elem-color, global-nz, shared-nz, block-sums, local-row on the GPU.
    #[arg(long, value_enum, default_value_t = StrategyArg::All)]
    pub(super) strategy: StrategyArg,
    /// Where to assemble: the CPU, or the GPU (auto: the GPU when one is usable).
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// Scalar type.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub(super) precision: Precision,
    /// Eliminate the boundary dofs (assemble the reduced matrix on the free dofs).
    #[arg(long)]
    pub(super) dirichlet: bool,
    /// Quadrature degree, 0 to 400 (default: exact for the stiffness on affine simplices,
    /// `2(p − 1)`; `p + 1` Gauss points per direction on quadrilaterals and hexahedra).
    #[arg(long, value_parser = ranges::usize_in(0, ranges::MAX_QDEGREE))]
    pub(super) qdegree: Option<usize>,
    /// Timed assemblies per strategy (median reported), 1 to 1e6.
    #[arg(long, default_value_t = 10, value_parser = ranges::usize_in(1, ranges::MAX_REPS))]
    pub(super) reps: usize,
    /// Untimed assemblies first (after the first call, reported apart), 0 to 1e6.
    #[arg(long, default_value_t = 1, value_parser = ranges::usize_in(0, ranges::MAX_REPS))]
    pub(super) warmup: usize,
    /// With the GPU: also time the same assembly on this machine's CPU, element by element
    /// on one core and by rows on all cores, and print the GPU's speed-up over both.
    #[arg(long)]
    pub(super) cpu_reference: bool,
    /// Print JSON records (one per line) instead of the table.
    #[arg(long)]
    pub(super) json: bool,
    /// Append JSON records to this file as well.
    #[arg(long, value_name = "FILE.jsonl")]
    pub(super) record: Option<std::path::PathBuf>,
}

/// One measured strategy.
#[derive(Serialize, Clone, Debug)]
pub struct AssemblyRecord {
    pub(super) bench: &'static str,
    pub(super) backend: String,
    pub(super) precision: String,
    pub(super) mesh: String,
    pub(super) cell_type: String,
    pub(super) problem: String,
    pub(super) order: usize,
    pub(super) q: usize,
    pub(super) cells: usize,
    pub(super) rows: usize,
    pub(super) nnz: usize,
    pub(super) element_matrix_size: usize,
    pub(super) dirichlet: bool,
    pub(super) strategy: String,
    pub(super) plan_s: f64,
    pub(super) first_s: f64,
    pub(super) assembly_s: f64,
    pub(super) melements_per_s: f64,
    pub(super) model_bytes: f64,
    pub(super) gbytes_per_s: f64,
    pub(super) copy_gbytes_per_s: f64,
    pub(super) roofline_fraction: f64,
    /// GPU by nonzero: the element kernel alone and the gather alone, seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) element_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) accumulate_s: Option<f64>,
}

pub(super) fn usage(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(e.to_string())
}

/// Runs `ferrofem bench assembly`.
pub fn run(a: AssemblyArgs) -> Result<(), CliError> {
    let backend = select(a.backend)?;
    if let Backend::Cpu {
        fallback_reason: Some(r),
    } = &backend
    {
        eprintln!("note: {r}; running on the CPU");
    }
    #[cfg(feature = "cuda")]
    if let Backend::Cuda(dev) = &backend {
        return super::assembly_gpu::run(dev, &a);
    }
    if a.cpu_reference {
        eprintln!(
            "note: --cpu-reference compares the GPU with the CPU; on the CPU it adds nothing"
        );
    }
    let spec = BoxSpec::parse(&a.box_spec)?;
    let t = Instant::now();
    let mesh = generate_box(&spec)?;
    let ncomp = match a.problem {
        AssemblyProblem::Poisson => 1,
        AssemblyProblem::Elasticity => mesh.dim(),
    };
    let space = H1Space::new(&mesh, a.order, ncomp)?;
    let prep_s = t.elapsed().as_secs_f64();
    let copy_gbs = measure_copy_bandwidth(1 << 29, 0);
    let d = mesh.dim();
    match (a.problem, a.precision) {
        (AssemblyProblem::Poisson, Precision::F64) => bench::<f64, _>(
            &mesh,
            &space,
            Poisson::new(d, 1.0, None).map_err(usage)?,
            &a,
            copy_gbs,
            prep_s,
        ),
        (AssemblyProblem::Poisson, Precision::F32) => bench::<f32, _>(
            &mesh,
            &space,
            Poisson::new(d, 1.0, None).map_err(usage)?,
            &a,
            copy_gbs,
            prep_s,
        ),
        (AssemblyProblem::Elasticity, Precision::F64) => bench::<f64, _>(
            &mesh,
            &space,
            Elasticity::new(d, 1.0, 1.0, None).map_err(usage)?,
            &a,
            copy_gbs,
            prep_s,
        ),
        (AssemblyProblem::Elasticity, Precision::F32) => bench::<f32, _>(
            &mesh,
            &space,
            Elasticity::new(d, 1.0, 1.0, None).map_err(usage)?,
            &a,
            copy_gbs,
            prep_s,
        ),
    }
}

fn strategies(s: StrategyArg) -> Result<Vec<Strategy>, CliError> {
    Ok(match s {
        StrategyArg::All => Strategy::ALL.to_vec(),
        StrategyArg::Serial => vec![Strategy::Serial],
        StrategyArg::Colored => vec![Strategy::Colored],
        StrategyArg::ByRow => vec![Strategy::ByRow],
        StrategyArg::ByNonzero => vec![Strategy::ByNonzero],
        StrategyArg::Atomic
        | StrategyArg::ElemColor
        | StrategyArg::GlobalNz
        | StrategyArg::SharedNz
        | StrategyArg::BlockSums
        | StrategyArg::LocalRow => {
            return Err(usage(format!(
                "--strategy {s:?} is a GPU strategy: give --backend cuda"
            )))
        }
    })
}

/// Bytes of one assembly by the model of the module documentation.
fn model_bytes(
    cells: usize,
    n: usize,
    dim: usize,
    nq: usize,
    affine: bool,
    nnz: usize,
    s: usize,
) -> f64 {
    let (cells, n2, s) = (cells as f64, (n * n) as f64, s as f64);
    let geo_points = if affine { 1.0 } else { nq as f64 };
    cells * (2.0 * s * n2 + 4.0 * n2 + s * (dim * dim + 1) as f64 * geo_points) + s * nnz as f64
}

/// Refuses a run whose form operator, assembly plan, matrix and strategy buffers would
/// not fit in the available memory, before any of them is built: the form operator by
/// [`super::form_operator_bytes`] (Gauss points `(p + 1)^d` by default on tensor cells),
/// the plan and matrix by [`AssemblyPlan::estimate`], the by-nonzero strategy's buffer of
/// every element matrix (`(n² + n)` scalars per cell) and reduction lists (`4 nnz + 4 n²`
/// per cell) when it runs, and an element matrix per thread.
fn check_memory<T: Real>(
    mesh: &Mesh,
    space: &H1Space,
    quadrature: &Quadrature,
    map: Option<&DofMap>,
    a: &AssemblyArgs,
) -> Result<(), CliError> {
    let ct = mesh.cell_type();
    let d = mesh.dim() as u64;
    let nq = match quadrature {
        Quadrature::Degree(k) => super::rule_points_bound(ct, *k),
        _ => (a.order as u64 + 1).saturating_pow(d as u32),
    };
    let r = space.restriction();
    let cells = mesh.num_cells() as u64;
    let b = T::BYTES as u64;
    let operator = super::form_operator_bytes(
        cells,
        nq,
        d,
        ct.is_simplex(),
        r.elem_size() as u64,
        r.ncomp() as u64,
        b,
    );
    let plan = AssemblyPlan::estimate(r, map).map_err(usage)?;
    let n = (r.ncomp() * r.elem_size()) as u64;
    let n2 = n.saturating_mul(n);
    let by_nonzero = if matches!(a.strategy, StrategyArg::All | StrategyArg::ByNonzero) {
        Bytes::of(cells.saturating_mul(n2 + n), b)
            + Bytes::of(plan.nnz, 4)
            + Bytes::of(cells.saturating_mul(n2), 4)
    } else {
        Bytes(0)
    };
    let per_thread = Bytes::of(n2, b).times(rayon::current_num_threads() as u64);
    let needed = Bytes(operator)
        + Bytes(plan.plan_bytes)
        + Bytes(plan.matrix_bytes(T::BYTES))
        + by_nonzero
        + per_thread
        + Bytes::of(ferrofem_assembly::DEFAULT_BATCH_BYTES as u64, 1);
    ferrofem_base::check_fits(
        &format!(
            "assembling {}x{n} element matrices of {cells} cells ({} rows, about {} nonzeros)",
            n, plan.rows, plan.nnz
        ),
        needed.0,
    )
    .map_err(|e| {
        e.with_remedy(
            "give a lower --order, a smaller --box or one --strategy other than by-nonzero",
        )
        .into()
    })
}

fn bench<T: Real, P: Physics<T>>(
    mesh: &Mesh,
    space: &H1Space,
    physics: P,
    a: &AssemblyArgs,
    copy_gbs: f64,
    prep_s: f64,
) -> Result<(), CliError> {
    let ct = mesh.cell_type();
    let quadrature = match (a.qdegree, ct.is_simplex()) {
        (Some(k), _) => Quadrature::Degree(k),
        (None, true) => Quadrature::Degree(2 * (a.order - 1)),
        (None, false) => Quadrature::Default,
    };
    let map = if a.dirichlet {
        let nodes = space.boundary_nodes(mesh)?;
        Some(DofMap::new(space.num_dofs(), &space.node_dofs(&nodes, None)).map_err(usage)?)
    } else {
        None
    };
    check_memory::<T>(mesh, space, &quadrature, map.as_ref(), a)?;
    let options = FormOptions {
        quadrature,
        ..FormOptions::default()
    };
    let op = FormOperator::<T, P>::with_options(mesh, space, physics, options).map_err(usage)?;
    let t = Instant::now();
    let plan = AssemblyPlan::new(op.restriction(), map.as_ref()).map_err(usage)?;
    let plan_s = t.elapsed().as_secs_f64();
    let mut matrix: CsrMatrix<T> = plan.pattern().zeros();
    let n = plan.element_matrix_size();
    let nq = op.rule().len();
    let cells = mesh.num_cells();
    let nnz = plan.pattern().nnz();
    let bytes = model_bytes(cells, n, mesh.dim(), nq, ct.is_simplex(), nnz, T::BYTES);
    if !a.json {
        println!(
            "assembly of {} (order {}, element matrices {}, q = {nq}) on {} ({cells} cells), cpu ({} threads, {}), copy bandwidth {copy_gbs:.1} GB/s measured in this process",
            match a.problem {
                AssemblyProblem::Poisson => "the Laplacian",
                AssemblyProblem::Elasticity => "elasticity",
            },
            a.order,
            format_args!("{n}x{n}"),
            a.box_spec,
            rayon::current_num_threads(),
            T::NAME,
        );
        println!(
            "rows {}{}, nnz {nnz}, mesh + space {prep_s:.3} s, plan {plan_s:.3} s, model {:.1} MB per assembly",
            plan.nrows(),
            if a.dirichlet { " (boundary eliminated)" } else { "" },
            bytes / 1e6,
        );
        print_header();
    }
    let base = AssemblyRecord {
        bench: "assembly",
        backend: format!("cpu ({} threads)", rayon::current_num_threads()),
        precision: T::NAME.into(),
        mesh: a.box_spec.clone(),
        cell_type: ct.to_string(),
        problem: format!("{:?}", a.problem).to_lowercase(),
        order: a.order,
        q: nq,
        cells,
        rows: plan.nrows(),
        nnz,
        element_matrix_size: n,
        dirichlet: a.dirichlet,
        strategy: String::new(),
        plan_s,
        first_s: 0.0,
        assembly_s: 0.0,
        melements_per_s: 0.0,
        model_bytes: bytes,
        gbytes_per_s: 0.0,
        copy_gbytes_per_s: copy_gbs,
        roofline_fraction: 0.0,
        element_s: None,
        accumulate_s: None,
    };
    // the compute floor: every element matrix computed into per-task scratch, none summed
    let floor = time_reps(a, || {
        (0..cells).into_par_iter().for_each_init(
            || vec![T::zero(); n * n],
            |ke, e| {
                op.element_matrix(e, None, ke);
                std::hint::black_box(&ke[0]);
            },
        );
        Ok(())
    })?;
    emit(
        AssemblyRecord {
            strategy: "element matrices only".into(),
            first_s: floor.0,
            assembly_s: floor.1,
            melements_per_s: cells as f64 / floor.1 / 1e6,
            // only the geometry in and nothing out: report the time, not a bandwidth
            model_bytes: 0.0,
            ..base.clone()
        },
        a,
    )?;
    for strategy in strategies(a.strategy)? {
        let (first, t) = time_reps(a, || {
            plan.assemble_matrix_into(&op, None, strategy, &mut matrix)
                .map_err(usage)
        })?;
        let gbs = bytes / t / 1e9;
        emit(
            AssemblyRecord {
                strategy: strategy.name().into(),
                first_s: first,
                assembly_s: t,
                melements_per_s: cells as f64 / t / 1e6,
                gbytes_per_s: gbs,
                roofline_fraction: gbs / copy_gbs,
                ..base.clone()
            },
            a,
        )?;
    }
    std::hint::black_box(matrix.values());
    Ok(())
}

/// Times `f`: the first call alone, then the median of `reps` calls after `warmup` more.
pub(super) fn time_reps(
    a: &AssemblyArgs,
    mut f: impl FnMut() -> Result<(), CliError>,
) -> Result<(f64, f64), CliError> {
    let t = Instant::now();
    f()?;
    let first = t.elapsed().as_secs_f64();
    for _ in 0..a.warmup {
        f()?;
    }
    let mut times = Vec::with_capacity(a.reps);
    for _ in 0..a.reps {
        let t = Instant::now();
        f()?;
        times.push(t.elapsed().as_secs_f64());
    }
    Ok((first, median(&times)))
}

/// The column heads of [`emit`]'s table.
pub(super) fn print_header() {
    println!(
        "{:>22} {:>9} {:>10} {:>10} {:>10} {:>8} {:>5}",
        "strategy", "first s", "ms", "elem/s", "nnz/s", "GB/s", "roof"
    );
}

pub(super) fn emit(r: AssemblyRecord, a: &AssemblyArgs) -> Result<(), CliError> {
    if let Some(path) = &a.record {
        ferrofem_io::append_json_line(path, &r)?;
    }
    if a.json {
        println!("{}", serde_json::to_string(&r)?);
        return Ok(());
    }
    let (gbs, roof) = if r.model_bytes > 0.0 {
        (
            format!("{:.2}", r.gbytes_per_s),
            format!("{:.0}%", 100.0 * r.roofline_fraction),
        )
    } else {
        ("-".into(), "-".into())
    };
    let stages = match (r.element_s, r.accumulate_s) {
        (Some(e), Some(g)) => format!("  (elements {:.3} ms, gather {:.3} ms)", e * 1e3, g * 1e3),
        _ => String::new(),
    };
    println!(
        "{:>22} {:>9.3} {:>10.3} {:>10.3e} {:>10.3e} {:>8} {:>5}{stages}",
        r.strategy,
        r.first_s,
        r.assembly_s * 1e3,
        r.melements_per_s * 1e6,
        r.nnz as f64 / r.assembly_s,
        gbs,
        roof
    );
    Ok(())
}
