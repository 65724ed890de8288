//! `ferrofem bench assembly --backend cuda`: global CSR assembly on the GPU with each
//! strategy of [`GpuAssembly`] (atomic, ElemColor, GlobalNZ, SharedNZ, local rows), into the pattern of a host
//! [`AssemblyPlan`] built once (timed apart, like the upload of each strategy's maps).
//! Each strategy reassembles into its device values (median of CUDA-event-timed
//! assemblies after warm-up, the element checks included); by nonzero also reports its
//! element kernel and its gather alone. Every strategy's matrix is compared with the first
//! one's, so that a figure is never that of a wrong matrix.
//!
//! The byte model is each strategy's own ([`GpuAssembly::model_bytes`]): element
//! connectivity and coordinates in, its index maps, and the CSR values (zeroed and updated
//! for the scatter strategies, written once by the gather); the roofline is the copy
//! bandwidth measured on the device in the same process. With `--cpu-reference` the same
//! assembly is timed on the host's CPU beside it (`assembly_cpu_reference`).

use super::assembly::{
    emit, print_header, usage, AssemblyArgs, AssemblyProblem, AssemblyRecord, StrategyArg,
};
use super::assembly_cpu_reference::CpuReference;
use crate::error::CliError;
use ferrofem_assembly::{AssemblyPlan, DofMap};
use ferrofem_cuda::assembly::{GpuAssembly, GpuStrategy};
use ferrofem_cuda::residual::Aux;
use ferrofem_cuda::{GpuDevice, GpuError, GpuReal};
use ferrofem_driver::Precision;
use ferrofem_fe::QuadratureRule;
use ferrofem_mesh::{generate_box, BoxSpec, Mesh};
use ferrofem_physics::{CudaPhysics, Elasticity, Physics, Poisson};
use ferrofem_space::H1Space;
use std::sync::Arc;
use std::time::Instant;

fn strategies(s: StrategyArg) -> Result<Vec<GpuStrategy>, CliError> {
    Ok(match s {
        StrategyArg::All => GpuStrategy::ALL.to_vec(),
        StrategyArg::Atomic => vec![GpuStrategy::Atomic],
        StrategyArg::ElemColor => vec![GpuStrategy::ElemColor],
        StrategyArg::GlobalNz => vec![GpuStrategy::GlobalNz],
        StrategyArg::SharedNz => vec![GpuStrategy::SharedNz],
        StrategyArg::BlockSums => vec![GpuStrategy::BlockSums],
        StrategyArg::LocalRow => vec![GpuStrategy::LocalRow],
        other => {
            return Err(usage(format!(
                "--strategy {other:?} is a CPU strategy: give atomic, elem-color, global-nz, shared-nz, block-sums or local-row with --backend cuda"
            )))
        }
    })
}

/// Runs the GPU assembly benchmark on `dev`.
pub fn run(dev: &Arc<GpuDevice>, a: &AssemblyArgs) -> Result<(), CliError> {
    let strategies = strategies(a.strategy)?;
    let spec = BoxSpec::parse(&a.box_spec)?;
    let t = Instant::now();
    let mesh = generate_box(&spec)?;
    let ct = mesh.cell_type();
    let d = mesh.dim();
    let physics: CudaPhysics = match a.problem {
        AssemblyProblem::Poisson => {
            Physics::<f64>::cuda(&Poisson::new(d, 1.0, None).map_err(usage)?)
        }
        AssemblyProblem::Elasticity => {
            Physics::<f64>::cuda(&Elasticity::new(d, 1.0, 1.0, None).map_err(usage)?)
        }
    };
    let space = H1Space::new(&mesh, a.order, physics.ncomp)?;
    let prep_s = t.elapsed().as_secs_f64();
    // exact for the stiffness of affine simplices; the CPU form operator's default (p + 1
    // Gauss points per direction) on quadrilaterals and hexahedra
    let qdegree = a.qdegree.unwrap_or(if ct.is_simplex() {
        2 * (a.order - 1)
    } else {
        2 * a.order
    });
    let rule = QuadratureRule::for_degree(ct, qdegree).map_err(usage)?;
    let map = if a.dirichlet {
        let nodes = space.boundary_nodes(&mesh)?;
        Some(DofMap::new(space.num_dofs(), &space.node_dofs(&nodes, None)).map_err(usage)?)
    } else {
        None
    };
    let scalar_bytes = match a.precision {
        Precision::F64 => 8,
        Precision::F32 => 4,
    };
    AssemblyPlan::estimate(space.restriction(), map.as_ref())
        .map_err(usage)?
        .check(scalar_bytes)
        .map_err(usage)?;
    let t = Instant::now();
    let plan = AssemblyPlan::new(space.restriction(), map.as_ref()).map_err(usage)?;
    let plan_s = t.elapsed().as_secs_f64();
    let copy_gbs = ferrofem_cuda::blas::copy_bandwidth(dev, 1 << 30, 20)? / 1e9;
    let n = plan.element_matrix_size();
    let base = AssemblyRecord {
        bench: "assembly",
        backend: format!("cuda ({})", dev.name()),
        precision: String::new(),
        mesh: a.box_spec.clone(),
        cell_type: ct.to_string(),
        problem: format!("{:?}", a.problem).to_lowercase(),
        order: a.order,
        q: rule.len(),
        cells: mesh.num_cells(),
        rows: plan.nrows(),
        nnz: plan.pattern().nnz(),
        element_matrix_size: n,
        dirichlet: a.dirichlet,
        strategy: String::new(),
        plan_s,
        first_s: 0.0,
        assembly_s: 0.0,
        melements_per_s: 0.0,
        model_bytes: 0.0,
        gbytes_per_s: 0.0,
        copy_gbytes_per_s: copy_gbs,
        roofline_fraction: 0.0,
        element_s: None,
        accumulate_s: None,
    };
    if !a.json {
        println!(
            "assembly of {} (order {}, element matrices {n}x{n}, q = {}) on {} ({} cells), {}, {}, copy bandwidth {copy_gbs:.1} GB/s measured in this process",
            match a.problem {
                AssemblyProblem::Poisson => "the Laplacian",
                AssemblyProblem::Elasticity => "elasticity",
            },
            a.order,
            rule.len(),
            a.box_spec,
            mesh.num_cells(),
            base.backend,
            match a.precision {
                Precision::F64 => "f64",
                Precision::F32 => "f32",
            },
        );
        println!(
            "rows {}{}, nnz {}, mesh + space {prep_s:.3} s, plan {plan_s:.3} s",
            plan.nrows(),
            if a.dirichlet {
                " (boundary eliminated)"
            } else {
                ""
            },
            base.nnz,
        );
        print_header();
    }
    let setup = Setup {
        dev,
        mesh: &mesh,
        qdegree,
        space: &space,
        plan: &plan,
        physics: &physics,
        rule: &rule,
        args: a,
    };
    match a.precision {
        Precision::F64 => setup.run::<f64>(&strategies, base),
        Precision::F32 => setup.run::<f32>(&strategies, base),
    }
}

/// What every strategy's run shares.
struct Setup<'a> {
    dev: &'a Arc<GpuDevice>,
    mesh: &'a Mesh,
    qdegree: usize,
    space: &'a H1Space,
    plan: &'a AssemblyPlan,
    physics: &'a CudaPhysics,
    rule: &'a QuadratureRule,
    args: &'a AssemblyArgs,
}

impl Setup<'_> {
    fn run<T: GpuReal>(
        &self,
        strategies: &[GpuStrategy],
        base: AssemblyRecord,
    ) -> Result<(), CliError> {
        let a = self.args;
        let mut reference: Option<Vec<T>> = None;
        let tol = if T::BYTES == 8 { 1e-10 } else { 1e-4 };
        let mut best: Option<(GpuStrategy, f64)> = None;
        for &strategy in strategies {
            let t = Instant::now();
            let mut asm = match GpuAssembly::<T>::new(
                self.dev,
                self.space,
                self.plan,
                self.physics,
                self.rule,
                Aux::None,
                strategy,
            ) {
                Ok(asm) => asm,
                // of several, one that does not fit (sums in shared memory at high order)
                // is reported and passed over
                Err(GpuError::Unsupported(why)) if strategies.len() > 1 => {
                    eprintln!("{}: not run ({why})", strategy.name());
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            asm.assemble(None)?;
            self.dev.synchronize()?;
            let first = t.elapsed().as_secs_f64();
            let time = asm.time(None, a.warmup, a.reps)?;
            let stages = asm.time_stages(None, a.warmup, a.reps)?;
            // the timed repetitions leave the matrix assembled; compare it with the first
            // strategy's
            asm.assemble(None)?;
            let values = asm.values().to_host()?;
            match &reference {
                None => reference = Some(values),
                Some(r) => check_values(r, &values, tol, || {
                    format!(
                        "strategy {} differs from {}",
                        strategy.name(),
                        strategies[0].name()
                    )
                })?,
            }
            if best.is_none_or(|(_, s)| time < s) {
                best = Some((strategy, time));
            }
            let bytes = asm.model_bytes();
            let gbs = bytes / time / 1e9;
            emit(
                AssemblyRecord {
                    precision: T::NAME.into(),
                    strategy: strategy.name().into(),
                    first_s: first,
                    assembly_s: time,
                    melements_per_s: base.cells as f64 / time / 1e6,
                    model_bytes: bytes,
                    gbytes_per_s: gbs,
                    roofline_fraction: gbs / base.copy_gbytes_per_s,
                    element_s: stages.map(|s| s.0),
                    accumulate_s: stages.map(|s| s.1),
                    ..base.clone()
                },
                a,
            )?;
        }
        if let (true, Some((strategy, time)), Some(values)) = (a.cpu_reference, best, &reference) {
            let cpu = CpuReference {
                mesh: self.mesh,
                space: self.space,
                qdegree: self.qdegree,
                plan: self.plan,
            };
            let cpu_values = cpu.compare::<T>(a, &base, strategy.name(), time)?;
            check_values(values, &cpu_values, tol, || {
                "the CPU's matrix differs from the GPU's".to_string()
            })?;
        }
        Ok(())
    }
}

/// Checks `got` against `want` entry by entry (relative to the largest entry of `want`,
/// a NaN difference failing), naming the pair with `what` when it fails.
fn check_values<T: GpuReal>(
    want: &[T],
    got: &[T],
    tol: f64,
    what: impl FnOnce() -> String,
) -> Result<(), CliError> {
    let scale = want.iter().fold(0.0f64, |m, v| m.max(v.as_f64().abs()));
    let worst = want
        .iter()
        .zip(got)
        .map(|(x, y)| (x.as_f64() - y.as_f64()).abs())
        // a NaN difference is kept (f64::max would drop it)
        .fold(0.0f64, |m, d| if d.is_nan() || d > m { d } else { m });
    if want.len() != got.len() || worst.is_nan() || worst > tol * scale {
        return Err(CliError::Check(format!(
            "{} by {worst:.3e} (scale {scale:.3e})",
            what()
        )));
    }
    Ok(())
}
