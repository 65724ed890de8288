//! `mpirun -np N ferrofem bench bp1|bp3|bp3.5 --solve TOL`: the bake-off operator's
//! Jacobi-PCG solve of the screened problem over N ranks, each on its part of the generated
//! box (rank 0 makes and partitions it), on the CPU or one GPU per rank. Per order: the
//! distributed apply (the part's cells, then the sums at the shared nodes) with its roofline
//! fraction (the ranks' model bytes over the ranks' copy bandwidth), and the solve: its
//! iterations, time, relative residual and its error against the known solution.
//!
//! The exact solution is a function of each node's position (the same on every holder), so
//! runs on any number of ranks solve the same problem.

use super::{
    copy_bandwidth, elems_per_dir, geometries, screened, solve_options, BpArgs, BpName, PERTURB,
};
use crate::error::CliError;
use ferrofem_base::Real;
use ferrofem_dist::{scatter_parts, Communicator, MpiComm, NodeInterface, WavePartition};
use ferrofem_driver::backend::select_for_rank;
use ferrofem_driver::{Backend, Precision};
use ferrofem_geometry::GeometrySource;
use ferrofem_mesh::{generate_box, BoxSpec};
use ferrofem_operator::tensor::{FactorLayout, Model, TensorOperator, TensorOptions};
use ferrofem_solver::pcg;
use ferrofem_space::H1Space;
use ferrofem_wave::{NodeExchange, WavePart};
use serde::Serialize;
use std::sync::Arc;
use std::time::Instant;

/// Timed distributed applications (median reported) after as many untimed ones.
const APPLIES: usize = 10;

/// One order's distributed run.
#[derive(Serialize, Debug)]
struct RanksRecord {
    bench: String,
    backend: String,
    precision: String,
    geometry: String,
    ranks: usize,
    /// How the GPUs' halo travels (`NCCL`, `host`), or `mpi` on the CPU.
    transport: String,
    order: usize,
    elements: usize,
    dofs: usize,
    mesh: String,
    /// The mesh, its partition, the space and the operator (slowest rank).
    setup_s: f64,
    /// The distributed apply: the part's cells and the shared sums, slowest rank.
    apply_s: f64,
    gdofs_per_s: f64,
    /// The ranks' model bytes over the apply time and their summed copy bandwidth.
    roofline_fraction: f64,
    copy_gbytes_per_s: f64,
    solve_iterations: usize,
    solve_s: f64,
    solve_s_per_iteration: f64,
    solve_rel_residual: f64,
    /// `‖x − x*‖ / ‖x*‖` over the whole mesh.
    solve_error: f64,
    solve_dof_iters_per_s: f64,
}

/// The exact solution at a node: a value in [−1, 1) from its position (rounded to 1e-9,
/// so that every holder of a shared node finds the same one).
fn exact_at(x: &[f64]) -> f64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15;
    for &c in x {
        h ^= ((c * 1e9).round() as i64) as u64;
        h = h.wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h ^= h >> 31;
    }
    (h >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

/// What one rank measured.
struct Measured {
    /// Seconds to build the operator (and the GPU's distributed space).
    operator_s: f64,
    /// Dofs this rank owns.
    owned_dofs: usize,
    apply_times: Vec<f64>,
    model: Model,
    transport: &'static str,
    iterations: usize,
    solve_s: f64,
    rel_residual: f64,
    /// Owned dofs' `Σ (x − x*)²` and `Σ x*²`.
    error_sq: f64,
    exact_sq: f64,
}

/// Runs the bench on the ranks of this MPI job.
pub(super) fn run(name: BpName, a: &BpArgs) -> Result<(), CliError> {
    let Some(tol) = a.solve else {
        return Err(CliError::Usage(
            "on several ranks the bake-off bench measures the solve: give --solve TOL".into(),
        ));
    };
    if a.mesh.is_some() {
        return Err(CliError::Usage(
            "on several ranks the bake-off bench runs on the generated box (no --mesh)".into(),
        ));
    }
    let comm = Arc::new(MpiComm::init().map_err(ferrofem_driver::PipelineError::from)?);
    crate::ranks::run_or_abort(&comm, || -> Result<(), CliError> {
        let backend = select_for_rank(a.backend, comm.node_rank())?;
        let copy_gbs = comm.sum(copy_bandwidth(&backend)?)?;
        for &p in &a.order.0 {
            for geo in geometries(a.geo) {
                let rec = run_order(&comm, &backend, name, p, geo, tol, copy_gbs, a)?;
                if comm.rank() == 0 {
                    emit(&rec, a)?;
                }
            }
        }
        Ok(())
    });
    Ok(())
}

fn emit(r: &RanksRecord, a: &BpArgs) -> Result<(), CliError> {
    if super::super::record_and_print_json(r, a.record.as_deref(), a.json)? {
        return Ok(());
    }
    println!(
        "{} p={} {} on {} ranks ({}, {}, halo {}): {} elements, {} DoFs; apply {:.3} ms, {:.2} \
         GDOF/s, {:.1} % of the ranks' copy roofline ({:.0} GB/s); PCG {} iterations in {:.3} s \
         ({:.3} ms each, {:.3e} DoF·iter/s), residual {:.1e}, error {:.1e}",
        r.bench.to_uppercase(),
        r.order,
        r.geometry,
        r.ranks,
        r.backend,
        r.precision,
        r.transport,
        r.elements,
        r.dofs,
        r.apply_s * 1e3,
        r.gdofs_per_s,
        100.0 * r.roofline_fraction,
        r.copy_gbytes_per_s,
        r.solve_iterations,
        r.solve_s,
        r.solve_s_per_iteration * 1e3,
        r.solve_dof_iters_per_s,
        r.solve_rel_residual,
        r.solve_error
    );
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn run_order(
    comm: &Arc<MpiComm>,
    backend: &Backend,
    name: BpName,
    p: usize,
    geo: GeometrySource,
    tol: f64,
    copy_gbs: f64,
    a: &BpArgs,
) -> Result<RanksRecord, CliError> {
    let t0 = Instant::now();
    let n = elems_per_dir(p, a.dofs);
    let spec = BoxSpec::parse(&format!("hex:{n}x{n}x{n},perturb={PERTURB},seed=1"))?;
    let part = if comm.rank() == 0 {
        scatter_parts(&**comm, Some(&generate_box(&spec)?))?
    } else {
        scatter_parts(&**comm, None)?
    };
    let part = Arc::new(part);
    let natural = H1Space::new(&part.mesh, p, 1)?;
    let exact: Vec<f64> = (0..natural.num_nodes())
        .map(|n| exact_at(natural.node_coord(n)))
        .collect();
    let kind = screened(name.kind());
    let prep_s = t0.elapsed().as_secs_f64();
    let measured = match backend {
        Backend::Cpu { .. } => {
            let interface = NodeInterface::new(&**comm, &part, &natural)?;
            let cpu = CpuInputs {
                comm,
                mesh: &part.mesh,
                natural: &natural,
                interface: &interface,
                kind,
                geo,
                exact: &exact,
                tol,
            };
            match a.precision {
                Precision::F64 => on_cpu::<f64>(&cpu)?,
                Precision::F32 => on_cpu::<f32>(&cpu)?,
            }
        }
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => {
            let exchange: Arc<dyn NodeExchange> =
                Arc::from(WavePartition::new(comm.clone(), part.clone())?.connect(&natural)?);
            let gpu = gpu::Inputs {
                dev,
                mesh: &part.mesh,
                natural: &natural,
                exchange: &exchange,
                kind,
                geo,
                exact: &exact,
                tol,
            };
            match a.precision {
                Precision::F64 => gpu::solve::<f64>(&gpu)?,
                Precision::F32 => gpu::solve::<f32>(&gpu)?,
            }
        }
    };
    let setup_s = comm.gather_all(prep_s + measured.operator_s)?;
    let apply_s = comm
        .gather_all(super::median(&measured.apply_times))?
        .into_iter()
        .fold(0.0, f64::max);
    let solve_s = comm
        .gather_all(measured.solve_s)?
        .into_iter()
        .fold(0.0, f64::max);
    let dofs = comm.sum(measured.owned_dofs as f64)? as usize;
    let elements = comm.sum(part.mesh.num_cells() as f64)? as usize;
    let model_bytes = comm.sum(measured.model.bytes)?;
    let error = (comm.sum(measured.error_sq)? / comm.sum(measured.exact_sq)?.max(1e-300)).sqrt();
    let iterations = measured.iterations;
    Ok(RanksRecord {
        bench: name.label().into(),
        backend: backend.name(),
        precision: a.precision.name().into(),
        geometry: geo.tag().into(),
        ranks: comm.size(),
        transport: measured.transport.into(),
        order: p,
        elements,
        dofs,
        mesh: format!("box {spec}"),
        setup_s: setup_s.into_iter().fold(0.0, f64::max),
        apply_s,
        gdofs_per_s: dofs as f64 / apply_s / 1e9,
        roofline_fraction: model_bytes / apply_s / (copy_gbs * 1e9),
        copy_gbytes_per_s: copy_gbs,
        solve_iterations: iterations,
        solve_s,
        solve_s_per_iteration: solve_s / iterations.max(1) as f64,
        solve_rel_residual: measured.rel_residual,
        solve_error: error,
        solve_dof_iters_per_s: dofs as f64 * iterations as f64 / solve_s.max(1e-12),
    })
}

/// The owned dofs' `Σ (x − x*)²` and `Σ x*²` (`x` and `exact` per node of the natural
/// numbering).
fn error_sums(is_owned: impl Fn(usize) -> bool, x: &[f64], exact: &[f64]) -> (f64, f64) {
    (0..x.len())
        .filter(|&n| is_owned(n))
        .fold((0.0, 0.0), |(e, s), n| {
            (e + (x[n] - exact[n]).powi(2), s + exact[n].powi(2))
        })
}

/// What a rank's CPU solve starts from.
struct CpuInputs<'a> {
    comm: &'a Arc<MpiComm>,
    mesh: &'a ferrofem_mesh::Mesh,
    natural: &'a H1Space,
    interface: &'a NodeInterface,
    kind: ferrofem_operator::tensor::TensorKind,
    geo: GeometrySource,
    exact: &'a [f64],
    tol: f64,
}

/// The part's sum-factorised operator, its output summed across the interfaces by MPI.
fn on_cpu<T: Real + ferrofem_dist::Payload>(i: &CpuInputs<'_>) -> Result<Measured, CliError> {
    let (comm, interface, exact) = (i.comm, i.interface, i.exact);
    let t0 = Instant::now();
    let mut opts = TensorOptions::new(i.kind);
    opts.geometry = i.geo;
    opts.factor_layout = FactorLayout::Interleaved;
    let op = TensorOperator::<T>::new(i.mesh, i.natural, &opts)?;
    let operator_s = t0.elapsed().as_secs_f64();
    let model = ferrofem_operator::tensor::model::model(&op.model_spec());
    let xt: Vec<T> = exact.iter().map(|&v| T::of(v)).collect();
    let mut b = vec![T::zero(); xt.len()];
    let mut apply_times = Vec::with_capacity(APPLIES);
    for i in 0..2 * APPLIES {
        comm.sum(0.0)?;
        let t = Instant::now();
        op.try_apply(&xt, &mut b)?;
        interface.sum_shared(&**comm, &mut b, 1)?;
        if i >= APPLIES {
            apply_times.push(t.elapsed().as_secs_f64());
        }
    }
    let space = ferrofem_dist::DistSpace::new(&**comm, interface, &op, 1, &[])?.with_jacobi()?;
    let mut x = vec![T::zero(); xt.len()];
    comm.sum(0.0)?;
    let t = Instant::now();
    let st = pcg(&space, &b, &mut x, &solve_options(i.tol))?;
    let solve_s = t.elapsed().as_secs_f64();
    let x: Vec<f64> = x.iter().map(|v| v.as_f64()).collect();
    let (error_sq, exact_sq) = error_sums(|n| interface.is_owned(n), &x, exact);
    Ok(Measured {
        operator_s,
        owned_dofs: interface.num_owned(),
        apply_times,
        model,
        transport: "mpi",
        iterations: st.iterations,
        solve_s,
        rel_residual: st.relative_residual(),
        error_sq,
        exact_sq,
    })
}

#[cfg(feature = "cuda")]
mod gpu {
    use super::*;
    use ferrofem_cuda::blas::GpuBlas;
    use ferrofem_cuda::bp::{BpOperator, BpPlan, DeviceClass, GpuBp};
    use ferrofem_cuda::part_krylov::GpuPartKrylov;
    use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};

    /// What a rank's GPU solve starts from.
    pub(super) struct Inputs<'a> {
        pub(super) dev: &'a Arc<GpuDevice>,
        pub(super) mesh: &'a ferrofem_mesh::Mesh,
        pub(super) natural: &'a H1Space,
        pub(super) exchange: &'a Arc<dyn NodeExchange>,
        pub(super) kind: ferrofem_operator::tensor::TensorKind,
        pub(super) geo: GeometrySource,
        pub(super) exact: &'a [f64],
        pub(super) tol: f64,
    }

    /// The operator on the part in the tuned kernel's numbering, applied and solved with
    /// the halo summed on the device.
    pub(super) fn solve<T: GpuReal>(i: &Inputs<'_>) -> Result<Measured, CliError> {
        let dev = i.dev;
        let t0 = Instant::now();
        let class = DeviceClass::of(dev);
        let bop = BpOperator::new(i.kind, i.geo);
        let plan = BpPlan::tuned(&class, &bop, i.natural.order());
        let numbered = plan.number(i.natural)?;
        let op = GpuBp::<T>::new(dev, i.mesh, &numbered, bop, plan)?;
        let n = i.natural.num_nodes();
        let new_of: Vec<u32> = match numbered.new_of() {
            Some(m) => m.to_vec(),
            None => (0..n as u32).collect(),
        };
        let blas = GpuBlas::<T>::new(dev)?;
        let krylov = GpuPartKrylov::new(dev, &op, &blas, i.exchange, n, 1, |node| {
            new_of[node as usize]
        })?
        .with_jacobi(op.diagonal()?, &[])?;
        dev.synchronize()?;
        let operator_s = t0.elapsed().as_secs_f64();
        let mut xt = vec![T::zero(); n];
        for (node, &d) in new_of.iter().enumerate() {
            xt[d as usize] = T::of(i.exact[node]);
        }
        let xt = DeviceVec::from_host(dev, &xt, "exact solution")?;
        let mut b = op.output_vector("right-hand side")?;
        let mut apply_times = Vec::with_capacity(APPLIES);
        for k in 0..2 * APPLIES {
            i.exchange.sum(0.0)?;
            let t = Instant::now();
            op.apply(&xt, &mut b)?;
            krylov.sum_shared(&mut b)?;
            dev.synchronize()?;
            if k >= APPLIES {
                apply_times.push(t.elapsed().as_secs_f64());
            }
        }
        let mut x = DeviceVec::<T>::zeros(dev, n, "solution")?;
        dev.synchronize()?;
        i.exchange.sum(0.0)?;
        let t = Instant::now();
        let st = pcg(&krylov, &b, &mut x, &solve_options(i.tol))?;
        dev.synchronize()?;
        let solve_s = t.elapsed().as_secs_f64();
        let x = x.to_host()?;
        let mut natural_x = vec![0.0; n];
        for (node, &d) in new_of.iter().enumerate() {
            natural_x[node] = x[d as usize].as_f64();
        }
        let (error_sq, exact_sq) = error_sums(|n| i.exchange.is_owned(n), &natural_x, i.exact);
        Ok(Measured {
            operator_s,
            owned_dofs: (0..n).filter(|&node| i.exchange.is_owned(node)).count(),
            apply_times,
            model: op.model(),
            transport: krylov.transport(),
            iterations: st.iterations,
            solve_s,
            rel_residual: st.relative_residual(),
            error_sq,
            exact_sq,
        })
    }
}
