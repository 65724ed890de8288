//! The CPU beside the GPU in `ferrofem bench assembly --backend cuda --cpu-reference`: the
//! same matrix (same mesh, space, quadrature rule and Dirichlet elimination, the GPU's
//! plan) assembled on the host, element by element on one core and by rows on all of its
//! cores, each timed like the GPU strategies; then the best GPU strategy's speed-up over
//! both (the paper's comparison, 30–65× one core). The CPU's matrix is checked against
//! the GPU's, so that a speed-up is never that of a different matrix.

use super::assembly::{emit, time_reps, usage, AssemblyArgs, AssemblyProblem, AssemblyRecord};
use crate::error::CliError;
use ferrofem_assembly::{AssemblyPlan, Strategy};
use ferrofem_base::{CsrMatrix, Real};
use ferrofem_mesh::Mesh;
use ferrofem_operator::{FormOperator, FormOptions, Quadrature};
use ferrofem_physics::{Elasticity, Physics, Poisson};
use ferrofem_space::H1Space;

/// What the CPU assembles: the GPU run's mesh, space, rule degree and plan.
pub(super) struct CpuReference<'a> {
    pub mesh: &'a Mesh,
    pub space: &'a H1Space,
    pub qdegree: usize,
    pub plan: &'a AssemblyPlan,
}

impl CpuReference<'_> {
    /// Times the CPU assembly on one core and on all cores, emits both records (times
    /// only: the CPU's byte model is not the GPU's) and prints the speed-up of the GPU's
    /// `gpu_s` seconds (strategy `gpu_name`) over each. Returns the CPU's matrix values (in
    /// the plan's pattern), for the caller to check against the GPU's.
    pub fn compare<T: Real>(
        &self,
        a: &AssemblyArgs,
        base: &AssemblyRecord,
        gpu_name: &str,
        gpu_s: f64,
    ) -> Result<Vec<T>, CliError> {
        let d = self.mesh.dim();
        let CpuTimes {
            one,
            all,
            threads,
            values,
        } = match a.problem {
            AssemblyProblem::Poisson => {
                self.time::<T, _>(a, Poisson::new(d, 1.0, None).map_err(usage)?)?
            }
            AssemblyProblem::Elasticity => {
                self.time::<T, _>(a, Elasticity::new(d, 1.0, 1.0, None).map_err(usage)?)?
            }
        };
        for (strategy, cores, (first, s)) in
            [(Strategy::Serial, 1, one), (Strategy::ByRow, threads, all)]
        {
            emit(
                AssemblyRecord {
                    backend: format!("cpu ({cores} threads)"),
                    precision: T::NAME.into(),
                    strategy: format!("cpu {} x{cores}", strategy.name()),
                    first_s: first,
                    assembly_s: s,
                    melements_per_s: base.cells as f64 / s / 1e6,
                    model_bytes: 0.0,
                    ..base.clone()
                },
                a,
            )?;
        }
        if !a.json {
            println!(
                "GPU {gpu_name} {:.3} ms: {:.0}x one CPU core, {:.1}x all {threads} cores",
                gpu_s * 1e3,
                one.1 / gpu_s,
                all.1 / gpu_s
            );
        }
        Ok(values)
    }

    /// The CPU's times and matrix.
    fn time<T: Real, P: Physics<T>>(
        &self,
        a: &AssemblyArgs,
        physics: P,
    ) -> Result<CpuTimes<T>, CliError> {
        let options = FormOptions {
            quadrature: Quadrature::Degree(self.qdegree),
            ..FormOptions::default()
        };
        let op = FormOperator::<T, P>::with_options(self.mesh, self.space, physics, options)
            .map_err(usage)?;
        let mut matrix: CsrMatrix<T> = self.plan.pattern().zeros();
        let mut run = |strategy: Strategy| {
            time_reps(a, || {
                self.plan
                    .assemble_matrix_into(&op, None, strategy, &mut matrix)
                    .map_err(usage)
            })
        };
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .map_err(usage)?
            .install(|| run(Strategy::Serial))?;
        let all = run(Strategy::ByRow)?;
        Ok(CpuTimes {
            one,
            all,
            threads: rayon::current_num_threads(),
            values: matrix.values().to_vec(),
        })
    }
}

/// (first, median) seconds serially on one thread and by rows on all of rayon's threads,
/// their count, and the assembled values.
struct CpuTimes<T> {
    one: (f64, f64),
    all: (f64, f64),
    threads: usize,
    values: Vec<T>,
}
