//! The GPU's linear solve on an assembled matrix (`--operator assembled`): the reduced
//! matrix (Dirichlet dofs eliminated) assembled on the device with the strategy the
//! measured table picks ([`GpuStrategy::auto`]), then CG, Jacobi-PCG or Jacobi-GMRES with
//! device SpMV, the Jacobi diagonal read from the matrix on the device, every vector there.

use super::linear::{krylov, needs_jacobi, GpuRun};
use crate::krylov::{krylov_name, krylov_options};
use crate::pipeline_error::PipelineError;
use crate::problem::Problem;
use crate::settings::{SolveSettings, SolverKind};
use ferrofem_assembly::{AssemblyPlan, DofMap};
use ferrofem_cuda::assembly::{GpuAssembly, GpuStrategy};
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::residual::Aux;
use ferrofem_cuda::sparse::{CsrOperator, GpuCsr};
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
use ferrofem_fe::QuadratureRule;
use ferrofem_physics::CudaPhysics;
use ferrofem_space::H1Space;
use std::sync::Arc;
use std::time::Instant;

/// What the assembled solve is built from: the device, its vector kernels, the space, the
/// physics' CUDA half (without its source: the right-hand side comes from the CPU), the
/// quadrature and the auxiliary field.
pub(super) struct AssembledSolve<'a, G: GpuReal> {
    pub(super) dev: &'a Arc<GpuDevice>,
    pub(super) blas: &'a GpuBlas<G>,
    pub(super) space: &'a H1Space,
    pub(super) physics: &'a CudaPhysics,
    pub(super) rule: &'a QuadratureRule,
    pub(super) aux: Aux<'a>,
}

impl<G: GpuReal> AssembledSolve<'_, G> {
    /// Solves for the correction `w = u − g̃` with right-hand side `b` (full, zero on the
    /// constrained dofs); `t` started with the build.
    pub(super) fn run(
        self,
        problem: &Problem,
        settings: &SolveSettings,
        solver: SolverKind,
        b: &[f64],
        t: Instant,
        warnings: &mut Vec<String>,
    ) -> Result<GpuRun, PipelineError> {
        let space = self.space;
        let dev = self.dev;
        let map = DofMap::new(space.num_dofs(), &problem.dirichlet_dofs)?;
        let plan = AssemblyPlan::new(space.restriction(), Some(&map))?;
        let strategy = GpuStrategy::auto(space.element().cell_type(), space.order(), space.ncomp());
        let mut asm = GpuAssembly::<G>::new(
            dev,
            space,
            &plan,
            self.physics,
            self.rule,
            self.aux,
            strategy,
        )?;
        asm.assemble(None)?;
        let pattern = plan.pattern();
        let csr = GpuCsr::<G>::new(dev, pattern.row_ptr(), pattern.col_idx())?;
        let free = map.free();
        let bf: Vec<G> = free.iter().map(|&d| G::of(b[d as usize])).collect();
        let db = DeviceVec::from_host(dev, &bf, "right-hand side")?;
        let mut dx = DeviceVec::<G>::zeros(dev, free.len(), "solution")?;
        let op = CsrOperator {
            csr: &csr,
            values: asm.values(),
        };
        let diag = if needs_jacobi(solver) {
            let mut d = DeviceVec::<G>::zeros(dev, free.len(), "Jacobi diagonal")?;
            csr.diagonal(asm.values(), &mut d)?;
            Some(d)
        } else {
            None
        };
        let opts = krylov_options(settings);
        dev.synchronize()?;
        let build = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let stats = krylov(
            &op,
            self.blas,
            &[],
            G::one(),
            diag,
            (solver, settings.preconditioner),
            &db,
            &mut dx,
            &opts,
            warnings,
        )?;
        dev.synchronize()?;
        let solve_s = t.elapsed().as_secs_f64();
        let x = dx.to_host()?;
        let mut w = vec![0.0; space.num_dofs()];
        for (&d, v) in free.iter().zip(&x) {
            w[d as usize] = v.as_f64();
        }
        let method = format!(
            "GPU ({}): matrix assembled on the device ({} nonzeros, {}), {}, every vector on the device",
            dev.name(),
            pattern.nnz(),
            strategy.name(),
            krylov_name(
                solver,
                settings.preconditioner,
                Some("diagonal of the matrix")
            )
        );
        Ok((w, stats, method, build, solve_s))
    }
}
