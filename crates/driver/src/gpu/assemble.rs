//! The assembled system of a problem on the GPU (`ferrofem assemble --backend cuda`): the
//! matrix by one of the device assembly strategies, Dirichlet dofs eliminated through the
//! plan's dof map, and the lifted right-hand side `−r(g)` at the free rows from the residual
//! at the boundary values less the natural-boundary load: on the device by the residual
//! kernel on simplices, from the CPU form operator on quadrilaterals and hexahedra (the
//! residual kernels are simplex-only). The same system as the CPU's
//! [`crate::assemble_problem`].

use super::linear::device_aux;
use crate::linear_system::{BcMode, LinearSystem};
use crate::pipeline_error::PipelineError;
use crate::problem::{FormVisitor, Problem};
use crate::settings::Precision;
use crate::terms::{full_residual, to_real};
use ferrofem_assembly::{AssemblyPlan, DofMap};
use ferrofem_base::Real;
use ferrofem_cuda::assembly::{GpuAssembly, GpuStrategy};
use ferrofem_cuda::blas::GpuBlas;
use ferrofem_cuda::residual::{GpuResidual, ResidualConfig};
use ferrofem_cuda::sparse::GpuCsr;
use ferrofem_cuda::{DeviceVec, GpuDevice, GpuReal};
use ferrofem_mesh::Mesh;
use ferrofem_operator::FormOperator;
use ferrofem_physics::Physics;
use std::sync::Arc;

/// Assembles `problem`'s system on `dev` with `strategy` (`None`: the measured table's,
/// [`GpuStrategy::auto`]) in `precision`, returned in f64 for export. Refuses (with
/// [`PipelineError::NoGpuPath`]) what the device assembly does not cover: Robin
/// conditions.
pub fn assemble_problem_gpu(
    dev: &Arc<GpuDevice>,
    mesh: &Mesh,
    problem: &Problem,
    bc: BcMode,
    precision: Precision,
    strategy: Option<GpuStrategy>,
) -> Result<LinearSystem<f64>, PipelineError> {
    if problem.robin::<f64>().is_some() {
        return Err(PipelineError::NoGpuPath(
            "Robin conditions are assembled on the CPU (--backend cpu)".into(),
        ));
    }
    let space = &problem.space;
    let strategy = strategy.unwrap_or_else(|| {
        GpuStrategy::auto(space.element().cell_type(), space.order(), space.ncomp())
    });
    let v = Visitor {
        dev,
        mesh,
        problem,
        bc,
        strategy,
    };
    // the physics (with its source) comes from the problem's form operator; identity rows
    // are made on the host from the eliminated system downloaded for export
    match precision {
        Precision::F64 => problem.visit_form::<f64, _>(mesh, v),
        Precision::F32 => problem.visit_form::<f32, _>(mesh, v),
    }?
    .finish(problem, bc)
}

struct Visitor<'a> {
    dev: &'a Arc<GpuDevice>,
    mesh: &'a Mesh,
    problem: &'a Problem,
    bc: BcMode,
    strategy: GpuStrategy,
}

impl<T: Real> FormVisitor<T> for Visitor<'_> {
    type Output = LinearSystem<f64>;
    fn visit<P: Physics<T>>(
        self,
        op: FormOperator<T, P>,
    ) -> Result<LinearSystem<f64>, PipelineError> {
        match T::NAME {
            "f32" => self.run::<f32, T, P>(&op),
            _ => self.run::<f64, T, P>(&op),
        }
    }
}

impl Visitor<'_> {
    fn run<G: GpuReal, T: Real, P: Physics<T>>(
        &self,
        op: &FormOperator<T, P>,
    ) -> Result<LinearSystem<f64>, PipelineError> {
        let (dev, problem) = (self.dev, self.problem);
        let space = &problem.space;
        let n = space.num_dofs();
        let cuda = op.physics().cuda();
        let mut store = None;
        let aux = device_aux(problem, &mut store)?;
        let map = match self.bc {
            BcMode::Dirichlet | BcMode::Identity => DofMap::new(n, &problem.dirichlet_dofs)?,
            BcMode::None => DofMap::unconstrained(n)?,
        };
        // the state the system is taken at, as on the CPU: the boundary values (zero for a
        // linear problem without conditions)
        let u0: Vec<G> = if self.bc == BcMode::None && problem.is_linear() {
            vec![G::zero(); n]
        } else {
            problem.boundary_values.iter().map(|&x| G::of(x)).collect()
        };
        let ud = DeviceVec::from_host(dev, &u0, "boundary values")?;
        let plan = AssemblyPlan::new(space.restriction(), Some(&map))?;
        let mut asm =
            GpuAssembly::<G>::new(dev, space, &plan, &cuda, op.rule(), aux, self.strategy)?;
        asm.assemble(Some(&ud))?;
        // r(u0) minus the natural-boundary load, then −r at the free rows
        let neumann = problem.neumann_load(self.mesh)?;
        let r = if self.mesh.cell_type().is_simplex() {
            let res = GpuResidual::<G>::new(
                dev,
                self.mesh,
                space,
                &cuda,
                op.rule(),
                aux,
                ResidualConfig::new().for_physics(&cuda),
                false,
            )?;
            let mut r = DeviceVec::<G>::zeros(dev, n, "residual")?;
            res.apply(&ud, &mut r)?;
            if neumann.iter().any(|&v| v != 0.0) {
                let nd: Vec<G> = neumann.iter().map(|&x| G::of(x)).collect();
                let nd = DeviceVec::from_host(dev, &nd, "natural-boundary load")?;
                GpuBlas::<G>::new(dev)?.axpy(-G::one(), &nd, &mut r)?;
            }
            r
        } else {
            let mut r = vec![T::zero(); n];
            let state: Vec<T> = u0.iter().map(|x| T::of(x.as_f64())).collect();
            full_residual(op, &to_real(&neumann), &state, &mut r);
            let rg: Vec<G> = r.iter().map(|x| G::of(x.as_f64())).collect();
            DeviceVec::from_host(dev, &rg, "residual")?
        };
        let p = plan.pattern();
        let csr = GpuCsr::<G>::new(dev, p.row_ptr(), p.col_idx())?;
        let free = DeviceVec::from_host(dev, map.free(), "free dofs")?;
        let mut b = DeviceVec::<G>::zeros(dev, map.free().len(), "right-hand side")?;
        csr.gather_negated(&free, &r, &mut b)?;
        let a = asm.to_csr()?;
        Ok(LinearSystem {
            matrix: a.convert(),
            rhs: b.to_host()?.iter().map(|x| x.as_f64()).collect(),
            dof_map: map,
            symmetric: problem.is_symmetric(),
        })
    }
}
