//! `ferrofem bench residual`: residual evaluation of a pointwise form on a perturbed simplex
//! box (the setting of Knepley, Rupp & Terrel 2016): time per evaluation (median after
//! warm-up), cells/s, GF/s by the paper's flop count (eq. 3.5), GB/s by its byte model
//! (eq. 3.4, for the element kernel with element vectors in and out, and for the assembled
//! global residual; see [`ferrofem_operator::ResidualModel`]), and each as a fraction of the
//! copy bandwidth measured in the same process.
//!
//! The physics carry no forcing (the residual is `Σ_e Eᵀ Dᵀ W f1(∇u)`, as in the paper's
//! benchmark). The quadrature rule is by default the one that integrates the stiffness
//! exactly on affine cells (degree `2(p − 1)`, plus 1 for a P1 coefficient): one point for
//! P1, as in the paper.

use super::median;
use crate::error::CliError;
use crate::problem_args::ranges;
use clap::{Args, ValueEnum};
use ferrofem_base::random::random_vector;
use ferrofem_base::{CellType, Real};
use ferrofem_driver::{select, Backend, BackendArg, Precision};
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_operator::tensor::measure_copy_bandwidth;
use ferrofem_operator::{
    Accumulation, AuxField, AuxLayout, FormOperator, FormOptions, Quadrature, ResidualModel,
    ResidualShape,
};
use ferrofem_physics::{varcoef_kappa, Elasticity, Physics, Poisson, PoissonVarCoef};
use ferrofem_space::H1Space;
use serde::Serialize;
use std::time::Instant;

/// The physics whose residual is timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ResidualPhysics {
    /// `f1 = ∇u` (constant coefficient 1).
    Poisson,
    /// `f1 = a₀ ∇u` with the coefficient as an auxiliary field (`--coef`).
    PoissonVarcoef,
    /// Linear elasticity, `f1 = σ(u)` with λ = μ = 1 (`dim` components).
    Elasticity,
}

impl ResidualPhysics {
    fn name(self) -> &'static str {
        match self {
            ResidualPhysics::Poisson => "poisson",
            ResidualPhysics::PoissonVarcoef => "poisson-varcoef",
            ResidualPhysics::Elasticity => "elasticity",
        }
    }
}

/// How the coefficient of `poisson-varcoef` is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CoefArg {
    /// Nodal values of the P1 space, interpolated with their gradient (the paper's
    /// "same space as u" case, for P1).
    P1,
    /// One value per cell.
    P0,
}

/// Accumulation strategies to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AccumulationArg {
    /// Element vectors to a buffer, then a gather by node (the default).
    ElementVectors,
    /// One L-vector per thread, then a parallel reduction.
    PerThread,
    /// Colour classes in sequence, writing directly.
    Coloring,
    /// All three.
    All,
}

/// Where the GPU kernels take the cell geometry from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GeometryArg {
    /// `J⁻¹` and `det J` stored per cell (`d² + 1` scalars).
    Stored,
    /// Computed in the kernel from the vertex coordinates (fewer bytes).
    Vertices,
    /// Both.
    Both,
}

/// Options of `ferrofem bench residual`.
#[derive(Args, Debug, Clone)]
pub struct ResidualArgs {
    /// Spatial dimension: 2 (triangles) or 3 (tetrahedra).
    #[arg(long, default_value_t = 3, value_parser = ranges::usize_in(2, 3))]
    dim: usize,
    /// The physics.
    #[arg(long, value_enum, default_value_t = ResidualPhysics::Poisson)]
    physics: ResidualPhysics,
    /// Polynomial order of the solution space: 1 to 6 on triangles, 1 to 4 on tetrahedra.
    #[arg(long, default_value_t = 1, value_parser = ranges::usize_in(1, MAX_SIMPLEX_ORDER))]
    order: usize,
    /// Scalar type.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    precision: Precision,
    /// Approximate number of cells (the box is sized to come close): 1 to 1e12.
    #[arg(long, default_value_t = 1e6, allow_negative_numbers = true, value_parser = ranges::float_in(1.0, 1e12))]
    cells: f64,
    /// Where to run: the CPU form operator, or the GPU kernels (every strategy and output).
    #[arg(long, value_enum, default_value_t = BackendArg::Cpu)]
    backend: BackendArg,
    /// Storage of the `poisson-varcoef` coefficient.
    #[arg(long, value_enum, default_value_t = CoefArg::P1)]
    coef: CoefArg,
    /// Quadrature degree, 0 to 400 (default: exact for the stiffness on affine cells).
    #[arg(long, value_parser = ranges::usize_in(0, ranges::MAX_QDEGREE))]
    qdegree: Option<usize>,
    /// Accumulation strategy (or all).
    #[arg(long, value_enum, default_value_t = AccumulationArg::ElementVectors)]
    accumulation: AccumulationArg,
    /// GPU: cell geometry stored per cell, computed from the vertices, or both.
    #[arg(long, value_enum, default_value_t = GeometryArg::Stored)]
    geometry: GeometryArg,
    /// Perturbation of interior vertices (fraction of the grid spacing), 0 to 0.35.
    #[arg(long, default_value_t = 0.2, allow_negative_numbers = true, value_parser = ranges::perturb)]
    perturb: f64,
    /// Timed evaluations (median reported), 1 to 1e6.
    #[arg(long, default_value_t = 20, value_parser = ranges::usize_in(1, ranges::MAX_REPS))]
    reps: usize,
    /// Untimed evaluations first, 0 to 1e6.
    #[arg(long, default_value_t = 3, value_parser = ranges::usize_in(0, ranges::MAX_REPS))]
    warmup: usize,
    /// Print JSON records (one per line) instead of the table.
    #[arg(long)]
    json: bool,
    /// Append JSON records to this file as well.
    #[arg(long, value_name = "FILE.jsonl")]
    record: Option<std::path::PathBuf>,
}

/// One measured configuration.
#[derive(Serialize, Clone, Debug)]
pub struct ResidualRecord {
    bench: &'static str,
    backend: String,
    precision: String,
    physics: String,
    coef: Option<String>,
    cell_type: String,
    dim: usize,
    order: usize,
    q: usize,
    cells: usize,
    dofs: usize,
    accumulation: String,
    geometry: &'static str,
    setup_s: f64,
    residual_s: f64,
    cells_per_s: f64,
    gdofs_per_s: f64,
    model_flops: f64,
    model_bytes_element_vectors: f64,
    model_bytes_global: f64,
    gflops_per_s: f64,
    gbytes_per_s_element_vectors: f64,
    gbytes_per_s_global: f64,
    copy_gbytes_per_s: f64,
    roofline_fraction_element_vectors: f64,
    roofline_fraction_global: f64,
}

/// The mesh, space and coefficient of one benchmark run.
struct Setup {
    mesh: Mesh,
    space: H1Space,
    /// Coefficient space and values (P1), or cell values (P0), for `poisson-varcoef`.
    coef_space: Option<H1Space>,
    coef_values: Vec<f64>,
    qdegree: usize,
    prep_s: f64,
}

impl Setup {
    fn options(&self, a: &ResidualArgs) -> FormOptions<'_> {
        let aux = match (a.physics, &self.coef_space) {
            (ResidualPhysics::PoissonVarcoef, Some(space)) => AuxField::Nodal {
                space,
                values: &self.coef_values,
            },
            (ResidualPhysics::PoissonVarcoef, None) => AuxField::Cellwise {
                ncomp: 1,
                values: &self.coef_values,
            },
            _ => AuxField::None,
        };
        FormOptions {
            quadrature: Quadrature::Degree(self.qdegree),
            aux,
            ..FormOptions::default()
        }
    }

    fn aux_layout(&self, a: &ResidualArgs) -> (usize, AuxLayout, usize) {
        match (a.physics, &self.coef_space) {
            (ResidualPhysics::PoissonVarcoef, Some(s)) => (
                1,
                AuxLayout::Nodal {
                    nodes_per_cell: s.element().num_nodes(),
                },
                s.num_nodes(),
            ),
            (ResidualPhysics::PoissonVarcoef, None) => (1, AuxLayout::Cellwise, 0),
            _ => (0, AuxLayout::None, 0),
        }
    }
}

/// The largest order of the simplices the benchmark runs on (triangles; tetrahedra take
/// up to 4, which their element checks).
const MAX_SIMPLEX_ORDER: u64 = ferrofem_fe::LagrangeElement::max_order(CellType::Triangle) as u64;

/// The cell type of `--dim` and the box's cells per axis, `n`, that bring the cell count
/// closest to `--cells` (triangles: `2 n²` cells; tetrahedra: `6 n³`).
fn grid(a: &ResidualArgs) -> Result<(CellType, usize), CliError> {
    let ct = match a.dim {
        2 => CellType::Triangle,
        3 => CellType::Tetrahedron,
        d => {
            return Err(CliError::Usage(format!(
                "--dim {d}: the residual benchmark runs on triangles (2) or tetrahedra (3)"
            )))
        }
    };
    let n = if a.dim == 2 {
        (a.cells / 2.0).sqrt()
    } else {
        (a.cells / 6.0).cbrt()
    };
    Ok((ct, (n.round() as usize).max(1)))
}

/// The quadrature degree: `--qdegree`, or exact for the stiffness on affine cells
/// (`2(p − 1)`, plus 1 for a P1 coefficient).
fn qdegree(a: &ResidualArgs) -> usize {
    let varcoef = a.physics == ResidualPhysics::PoissonVarcoef;
    let coef_order = usize::from(varcoef && a.coef == CoefArg::P1);
    a.qdegree.unwrap_or(2 * (a.order - 1) + coef_order)
}

/// Refuses a CPU run whose form operator (geometry at every quadrature point of every
/// cell, tabulation, element vectors) and vectors would not fit in the available memory,
/// before the mesh is made.
fn check_memory<T: Real>(a: &ResidualArgs) -> Result<(), CliError> {
    let (ct, n) = grid(a)?;
    let d = a.dim as u64;
    let cells = (n as u64).saturating_pow(d as u32) * if d == 2 { 2 } else { 6 };
    let p = a.order as u64;
    // nodes of the order-p simplex: binomial(p + d, d)
    let nodes = (1..=d).fold(1u64, |acc, k| acc * (p + k) / k);
    let ncomp = if a.physics == ResidualPhysics::Elasticity {
        d
    } else {
        1
    };
    let nq = super::rule_points_bound(ct, qdegree(a));
    let operator = super::form_operator_bytes(cells, nq, d, true, nodes, ncomp, T::BYTES as u64);
    // the solution and residual vectors, at most one dof per element node
    let vectors = 2 * cells
        .saturating_mul(nodes * ncomp)
        .saturating_mul(T::BYTES as u64);
    ferrofem_base::check_fits(
        &format!("the residual operator on {cells} cells with up to {nq} quadrature points each"),
        operator.saturating_add(vectors),
    )
    .map_err(|e| {
        e.with_remedy("give a lower --qdegree or fewer --cells")
            .into()
    })
}

fn setup(a: &ResidualArgs) -> Result<Setup, CliError> {
    let t = Instant::now();
    let (ct, n) = grid(a)?;
    let mut spec = BoxSpec::unit(ct, &vec![n; a.dim]);
    spec.perturb = a.perturb;
    spec.seed = 1;
    let mesh = generate_box(&spec)?;
    let ncomp = match a.physics {
        ResidualPhysics::Elasticity => a.dim,
        _ => 1,
    };
    let space = H1Space::new(&mesh, a.order, ncomp)?;
    let varcoef = a.physics == ResidualPhysics::PoissonVarcoef;
    let (coef_space, coef_values) = match (varcoef, a.coef) {
        (true, CoefArg::P1) => {
            let s = H1Space::new(&mesh, 1, 1)?;
            let v = s.interpolate(|x, out| out[0] = varcoef_kappa(x));
            (Some(s), v)
        }
        (true, CoefArg::P0) => {
            let d = a.dim;
            let nv = ct.num_vertices();
            let v = (0..mesh.num_cells())
                .map(|c| {
                    let mut x = [0.0; 3];
                    for &vid in mesh.cell(c) {
                        for (k, xk) in x.iter_mut().enumerate().take(d) {
                            *xk += mesh.vertex(vid as usize)[k] / nv as f64;
                        }
                    }
                    varcoef_kappa(&x[..d])
                })
                .collect();
            (None, v)
        }
        (false, _) => (None, Vec::new()),
    };
    Ok(Setup {
        mesh,
        space,
        coef_space,
        coef_values,
        qdegree: qdegree(a),
        prep_s: t.elapsed().as_secs_f64(),
    })
}

fn strategies(a: AccumulationArg) -> Vec<Accumulation> {
    match a {
        AccumulationArg::ElementVectors => vec![Accumulation::ElementVectors],
        AccumulationArg::PerThread => vec![Accumulation::PerThread],
        AccumulationArg::Coloring => vec![Accumulation::Coloring],
        AccumulationArg::All => Accumulation::ALL.to_vec(),
    }
}

/// Runs `ferrofem bench residual`.
pub fn run(a: ResidualArgs) -> Result<(), CliError> {
    let backend = select(a.backend)?;
    if let Backend::Cpu {
        fallback_reason: Some(r),
    } = &backend
    {
        eprintln!("note: {r}; running on the CPU");
    }
    #[cfg(feature = "cuda")]
    if let Backend::Cuda(dev) = &backend {
        let st = setup(&a)?;
        return gpu::run(dev, &st, &a);
    }
    match a.precision {
        Precision::F64 => check_memory::<f64>(&a)?,
        Precision::F32 => check_memory::<f32>(&a)?,
    }
    let copy_gbs = measure_copy_bandwidth(1 << 29, 0);
    let st = setup(&a)?;
    let precision = match a.precision {
        Precision::F64 => "f64",
        Precision::F32 => "f32",
    };
    if !a.json {
        println!(
            "residual of {} (P{}{}) on {} cells ({}, perturbed), cpu ({} threads, {precision}), copy bandwidth {copy_gbs:.1} GB/s measured in this process",
            a.physics.name(),
            a.order,
            match (a.physics, a.coef) {
                (ResidualPhysics::PoissonVarcoef, CoefArg::P1) => ", P1 coefficient",
                (ResidualPhysics::PoissonVarcoef, CoefArg::P0) => ", P0 coefficient",
                _ => "",
            },
            st.mesh.num_cells(),
            st.mesh.cell_type(),
            rayon::current_num_threads(),
        );
        println!(
            "{:>16} {:>9} {:>9} {:>3} {:>9} {:>9} {:>7} {:>8} {:>5} {:>8} {:>5}",
            "accumulation",
            "cells",
            "dofs",
            "q",
            "ms",
            "Mcell/s",
            "GF/s",
            "GB/s el",
            "roof",
            "GB/s gl",
            "roof"
        );
    }
    for acc in strategies(a.accumulation) {
        let rec = match a.precision {
            Precision::F64 => dispatch::<f64>(&st, &a, acc, copy_gbs)?,
            Precision::F32 => dispatch::<f32>(&st, &a, acc, copy_gbs)?,
        };
        emit(&rec, &a)?;
    }
    Ok(())
}

fn dispatch<T: Real>(
    st: &Setup,
    a: &ResidualArgs,
    acc: Accumulation,
    copy_gbs: f64,
) -> Result<ResidualRecord, CliError> {
    let d = a.dim;
    let e = |e: ferrofem_physics::PhysicsError| CliError::Usage(e.to_string());
    match a.physics {
        ResidualPhysics::Poisson => {
            measure::<T, _>(st, a, acc, copy_gbs, Poisson::new(d, 1.0, None).map_err(e)?)
        }
        ResidualPhysics::PoissonVarcoef => measure::<T, _>(
            st,
            a,
            acc,
            copy_gbs,
            PoissonVarCoef::new(d, None).map_err(e)?,
        ),
        ResidualPhysics::Elasticity => measure::<T, _>(
            st,
            a,
            acc,
            copy_gbs,
            Elasticity::new(d, 1.0, 1.0, None).map_err(e)?,
        ),
    }
}

fn measure<T: Real, P: Physics<T>>(
    st: &Setup,
    a: &ResidualArgs,
    acc: Accumulation,
    copy_gbs: f64,
    physics: P,
) -> Result<ResidualRecord, CliError> {
    let t0 = Instant::now();
    let mut op = FormOperator::<T, P>::with_options(&st.mesh, &st.space, physics, st.options(a))
        .map_err(|e| CliError::Usage(e.to_string()))?;
    op.set_accumulation(&st.mesh, acc);
    let setup_s = t0.elapsed().as_secs_f64() + st.prep_s;
    let u: Vec<T> = random_vector(op.num_dofs(), 7)
        .into_iter()
        .map(T::of)
        .collect();
    let mut r = vec![T::zero(); u.len()];
    for _ in 0..a.warmup {
        op.residual(&u, &mut r);
    }
    let times: Vec<f64> = (0..a.reps)
        .map(|_| {
            let t = Instant::now();
            op.residual(&u, &mut r);
            t.elapsed().as_secs_f64()
        })
        .collect();
    std::hint::black_box(&r);
    let t = median(&times);
    let (naux, aux, aux_nodes) = st.aux_layout(a);
    let shape = ResidualShape::new(
        a.dim,
        op.ncomp(),
        st.space.element().num_nodes(),
        op.rule().len(),
        naux,
        aux,
        T::BYTES,
    );
    let cells = st.mesh.num_cells();
    let model = ResidualModel::new(&shape, cells, op.num_dofs(), aux_nodes);
    let (me, mg) = (model.element_vectors(), model.global());
    Ok(ResidualRecord {
        bench: "residual",
        backend: format!("cpu ({} threads)", rayon::current_num_threads()),
        precision: T::NAME.into(),
        physics: a.physics.name().into(),
        coef: (a.physics == ResidualPhysics::PoissonVarcoef).then(|| {
            match a.coef {
                CoefArg::P1 => "p1",
                CoefArg::P0 => "p0",
            }
            .to_string()
        }),
        cell_type: st.mesh.cell_type().to_string(),
        dim: a.dim,
        order: a.order,
        q: shape.nq,
        cells,
        dofs: op.num_dofs(),
        accumulation: op.accumulation().name().into(),
        geometry: "stored",
        setup_s,
        residual_s: t,
        cells_per_s: cells as f64 / t,
        gdofs_per_s: op.num_dofs() as f64 / t / 1e9,
        model_flops: model.flops,
        model_bytes_element_vectors: model.bytes_element_vectors,
        model_bytes_global: model.bytes_global,
        gflops_per_s: me.gflops_per_s(t),
        gbytes_per_s_element_vectors: me.gbytes_per_s(t),
        gbytes_per_s_global: mg.gbytes_per_s(t),
        copy_gbytes_per_s: copy_gbs,
        roofline_fraction_element_vectors: me.roofline_fraction(t, copy_gbs),
        roofline_fraction_global: mg.roofline_fraction(t, copy_gbs),
    })
}

fn emit(r: &ResidualRecord, a: &ResidualArgs) -> Result<(), CliError> {
    if super::record_and_print_json(r, a.record.as_deref(), a.json)? {
        return Ok(());
    }
    println!(
        "{:>16} {:>9} {:>9} {:>3} {:>9.3} {:>9.2} {:>7.2} {:>8.2} {:>4.0}% {:>8.2} {:>4.0}%",
        r.accumulation,
        r.cells,
        r.dofs,
        r.q,
        r.residual_s * 1e3,
        r.cells_per_s / 1e6,
        r.gflops_per_s,
        r.gbytes_per_s_element_vectors,
        100.0 * r.roofline_fraction_element_vectors,
        r.gbytes_per_s_global,
        100.0 * r.roofline_fraction_global,
    );
    Ok(())
}

#[cfg(feature = "cuda")]
mod gpu {
    //! The GPU path: thread transposition (autotuned blocks per batch and batches per block,
    //! cached per device and problem class) and the two baselines, for element vectors and
    //! the global residual.
    use super::*;
    use ferrofem_cuda::residual::{
        case_physics, Aux, GpuResidual, Output, ResidualConfig, Strategy, AUTOTUNE_CANDIDATES,
    };
    use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
    use ferrofem_fe::QuadratureRule;
    use ferrofem_geometry::GeometrySource;
    use std::sync::Arc;

    fn ge(e: ferrofem_cuda::GpuError) -> CliError {
        CliError::Usage(e.to_string())
    }

    fn physics_name(a: &ResidualArgs) -> &'static str {
        match (a.physics, a.coef) {
            (ResidualPhysics::Poisson, _) => "poisson",
            (ResidualPhysics::PoissonVarcoef, CoefArg::P1) => "poisson-varcoef-p1",
            (ResidualPhysics::PoissonVarcoef, CoefArg::P0) => "poisson-varcoef-p0",
            (ResidualPhysics::Elasticity, _) => "elasticity",
        }
    }

    pub fn run(dev: &Arc<GpuDevice>, st: &Setup, a: &ResidualArgs) -> Result<(), CliError> {
        let copy_gbs = ferrofem_cuda::blas::copy_bandwidth(dev, 1 << 30, 20).map_err(ge)? / 1e9;
        if !a.json {
            println!(
                "residual of {} (P{}) on {} cells ({}), cuda ({}), {:?}, copy bandwidth {copy_gbs:.1} GB/s measured in this process",
                physics_name(a),
                a.order,
                st.mesh.num_cells(),
                st.mesh.cell_type(),
                dev.name(),
                a.precision
            );
            println!(
                "{:>38} {:>9} {:>9} {:>3} {:>9} {:>9} {:>7} {:>8} {:>5}",
                "kernel", "cells", "dofs", "q", "ms", "Mcell/s", "GF/s", "GB/s", "roof"
            );
        }
        match a.precision {
            Precision::F64 => run_t::<f64>(dev, st, a, copy_gbs),
            Precision::F32 => run_t::<f32>(dev, st, a, copy_gbs),
        }
    }

    fn run_t<T: GpuReal>(
        dev: &Arc<GpuDevice>,
        st: &Setup,
        a: &ResidualArgs,
        copy_gbs: f64,
    ) -> Result<(), CliError> {
        let name = physics_name(a);
        let (_, cuda, aux_kind) = case_physics(name, a.dim).map_err(ge)?;
        let ct = st.mesh.cell_type();
        let rule = QuadratureRule::for_degree(ct, st.qdegree)
            .map_err(|e| CliError::Usage(e.to_string()))?;
        // the GPU reads a nodal coefficient in the solution's scalar space (the paper's
        // "same space as u"): interpolate kappa there
        let scalar = st.space.with_ncomp(1)?;
        let nodal = scalar.interpolate(|x, out| out[0] = varcoef_kappa(x));
        let aux = match aux_kind {
            1 => Aux::Nodal(&nodal),
            2 => Aux::Cellwise(&st.coef_values),
            _ => Aux::None,
        };
        let nb = st.space.element().num_nodes();
        let (naux, layout, aux_nodes) = match aux_kind {
            1 => (
                1,
                AuxLayout::Nodal { nodes_per_cell: nb },
                scalar.num_nodes(),
            ),
            2 => (1, AuxLayout::Cellwise, 0),
            _ => (0, AuxLayout::None, 0),
        };
        let shape = ResidualShape::new(
            a.dim,
            st.space.ncomp(),
            nb,
            rule.len(),
            naux,
            layout,
            T::BYTES,
        );
        let cells = st.mesh.num_cells();
        let stored_model = ResidualModel::new(&shape, cells, st.space.num_dofs(), aux_nodes);
        let vertex_model = stored_model.with_vertex_geometry(&shape, cells, st.mesh.num_vertices());
        let evec = st.space.restriction().evec_len();
        let ndofs = st.space.num_dofs();
        let mk = |len: usize, seed| {
            DeviceVec::from_host(
                dev,
                &random_vector(len, seed)
                    .into_iter()
                    .map(T::of)
                    .collect::<Vec<T>>(),
                "bench vector",
            )
        };
        let (ue, ul) = (mk(evec, 7).map_err(ge)?, mk(ndofs, 7).map_err(ge)?);
        let (mut oe, mut ol) = (mk(evec, 9).map_err(ge)?, mk(ndofs, 9).map_err(ge)?);
        let time = |cfg: ResidualConfig,
                    reps: usize,
                    oe: &mut DeviceVec<T>,
                    ol: &mut DeviceVec<T>|
         -> Result<(f64, (usize, usize)), CliError> {
            let op = GpuResidual::<T>::new(dev, &st.mesh, &st.space, &cuda, &rule, aux, cfg, false)
                .map_err(ge)?;
            let t = if cfg.output == Output::ElementVectors {
                op.time(&ue, oe, a.warmup, reps)
            } else {
                op.time(&ul, ol, a.warmup, reps)
            }
            .map_err(ge)?;
            Ok((t, op.shape()))
        };
        let mut configs: Vec<(String, ResidualConfig)> = Vec::new();
        let geometries: &[GeometrySource] = match a.geometry {
            GeometryArg::Stored => &[GeometrySource::Stored],
            GeometryArg::Vertices => &[GeometrySource::OnTheFly],
            GeometryArg::Both => &[GeometrySource::Stored, GeometrySource::OnTheFly],
        };
        for &geometry in geometries {
            for output in [
                Output::ElementVectors,
                Output::GlobalAtomic,
                Output::GlobalColored,
            ] {
                // autotune the transposition kernel's batch shape for this class, cached; the
                // version tag in the key is raised whenever the kernel or its tuned parameters
                // change (its current form maps fluxes to the reference cell and tunes threads
                // per cell), so that a choice cached for an older kernel is not reused
                let key = format!(
                    "residual-v7|{}|{}|{}|d{}|p{}|q{}|{:?}|{:?}",
                    dev.name(),
                    T::NAME,
                    name,
                    a.dim,
                    a.order,
                    rule.len(),
                    output,
                    geometry
                );
                let best = match crate::autotune::lookup(&key) {
                    Some(v) if v.len() == 3 => (v[0], v[1], v[2]),
                    _ => {
                        let mut best = (f64::INFINITY, (4, 2, 0));
                        for (nbl, nbatch, tpc) in AUTOTUNE_CANDIDATES {
                            // one thread per cell is the default shape when there is one
                            // component
                            if tpc != 0 && tpc >= cuda.ncomp {
                                continue;
                            }
                            let cfg = ResidualConfig {
                                output,
                                geometry,
                                blocks_per_batch: nbl,
                                batches: nbatch,
                                threads_per_cell: tpc,
                                ..ResidualConfig::new()
                            };
                            if let Ok((t, (threads, nbc))) = time(cfg, 5, &mut oe, &mut ol) {
                                eprintln!(
                                "autotune {} {:?} {:?}: b{nbl} n{nbatch} t{tpc} ({threads} threads, {nbc} cells per batch): {:.3} ms",
                                name, output, geometry, t * 1e3
                            );
                                if t < best.0 {
                                    best = (t, (nbl, nbatch, tpc));
                                }
                            }
                        }
                        crate::autotune::store(&key, vec![best.1 .0, best.1 .1, best.1 .2]);
                        best.1
                    }
                };
                configs.push((
                    format!("transposition-{}", out_name(output)),
                    ResidualConfig {
                        output,
                        geometry,
                        blocks_per_batch: best.0,
                        batches: best.1,
                        threads_per_cell: best.2,
                        ..ResidualConfig::new()
                    },
                ));
                if output != Output::GlobalColored {
                    for strategy in [Strategy::ThreadPerCell, Strategy::ThreadPerBasis] {
                        configs.push((
                            format!(
                                "{}-{}",
                                if strategy == Strategy::ThreadPerCell {
                                    "per-cell"
                                } else {
                                    "per-basis"
                                },
                                out_name(output)
                            ),
                            ResidualConfig {
                                strategy,
                                output,
                                geometry,
                                ..ResidualConfig::new()
                            },
                        ));
                    }
                }
            }
        }
        for (label, cfg) in configs {
            let (t, (threads, nbc)) = time(cfg, a.reps, &mut oe, &mut ol)?;
            let model = if cfg.geometry == GeometrySource::OnTheFly {
                &vertex_model
            } else {
                &stored_model
            };
            let m = if cfg.output == Output::ElementVectors {
                model.element_vectors()
            } else {
                model.global()
            };
            let label = if cfg.strategy == Strategy::Transposition {
                format!(
                    "{label}(b{},n{},{}t,{}c)",
                    cfg.blocks_per_batch, cfg.batches, threads, nbc
                )
            } else {
                label
            };
            let rec = ResidualRecord {
                bench: "residual",
                backend: format!("cuda ({})", dev.name()),
                precision: T::NAME.into(),
                physics: a.physics.name().into(),
                coef: (a.physics == ResidualPhysics::PoissonVarcoef).then(|| match a.coef {
                    CoefArg::P1 => "p1".to_string(),
                    CoefArg::P0 => "p0".to_string(),
                }),
                cell_type: st.mesh.cell_type().to_string(),
                dim: a.dim,
                order: a.order,
                q: rule.len(),
                cells,
                dofs: ndofs,
                accumulation: label,
                geometry: if cfg.geometry == GeometrySource::OnTheFly {
                    "vertices"
                } else {
                    "stored"
                },
                setup_s: st.prep_s,
                residual_s: t,
                cells_per_s: cells as f64 / t,
                gdofs_per_s: ndofs as f64 / t / 1e9,
                model_flops: model.flops,
                model_bytes_element_vectors: model.bytes_element_vectors,
                model_bytes_global: model.bytes_global,
                gflops_per_s: m.gflops_per_s(t),
                gbytes_per_s_element_vectors: model.element_vectors().gbytes_per_s(t),
                gbytes_per_s_global: model.global().gbytes_per_s(t),
                copy_gbytes_per_s: copy_gbs,
                roofline_fraction_element_vectors: model
                    .element_vectors()
                    .roofline_fraction(t, copy_gbs),
                roofline_fraction_global: model.global().roofline_fraction(t, copy_gbs),
            };
            if let Some(path) = &a.record {
                ferrofem_io::append_json_line(path, &rec)?;
            }
            if a.json {
                println!("{}", serde_json::to_string(&rec)?);
            } else {
                let (gbs, frac) = if cfg.output == Output::ElementVectors {
                    (
                        rec.gbytes_per_s_element_vectors,
                        rec.roofline_fraction_element_vectors,
                    )
                } else {
                    (rec.gbytes_per_s_global, rec.roofline_fraction_global)
                };
                println!(
                    "{:>38} {:>9} {:>9} {:>3} {:>9.3} {:>9.1} {:>7.1} {:>8.1} {:>4.0}%",
                    if rec.geometry == "vertices" {
                        format!("{}+vtx", rec.accumulation)
                    } else {
                        rec.accumulation.clone()
                    },
                    rec.cells,
                    rec.dofs,
                    rec.q,
                    t * 1e3,
                    rec.cells_per_s / 1e6,
                    rec.gflops_per_s,
                    gbs,
                    100.0 * frac
                );
            }
        }
        Ok(())
    }

    fn out_name(o: Output) -> &'static str {
        match o {
            Output::ElementVectors => "element-vectors",
            Output::GlobalAtomic => "global-atomic",
            Output::GlobalColored => "global-colored",
        }
    }
}
