//! The Krylov solvers on one rank's part of a distributed mesh, on its GPU: the same CG/PCG
//! code as everywhere (`ferrofem_solver`), on a [`KrylovSpace`] whose operator is applied on
//! the part's cells and summed at the shared nodes through the device halo, and whose dot
//! products count each dof on its owner alone and are summed over the ranks.
//!
//! Vectors are consistent: every holder of a shared dof has its whole value.

use crate::blas::GpuBlas;
use crate::halo::{dot_at, DeviceHalo, HaloKernels, HaloTransport};
use crate::krylov::GpuLinearOperator;
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_solver::{KrylovSpace, SolverError};
use ferrofem_wave::NodeExchange;
use std::sync::{Arc, Mutex};

/// Blocks of the dot products over the dofs held but not owned.
const NOT_OWNED_BLOCKS: usize = 64;

fn be(e: GpuError) -> SolverError {
    SolverError::backend(e)
}

/// A distributed linear system on one rank's GPU (see the module's documentation).
pub struct GpuPartKrylov<'a, T: GpuReal, A: GpuLinearOperator<T>> {
    op: &'a A,
    blas: &'a GpuBlas<T>,
    exchange: Arc<dyn NodeExchange>,
    /// `None` where the part shares no node.
    halo: Mutex<Option<DeviceHalo<T>>>,
    transport: &'static str,
    /// The device dofs this rank holds and another owns.
    not_owned: DeviceVec<u32>,
    kernels: HaloKernels,
    partial: Mutex<DeviceVec<f64>>,
    inv_diag: Option<DeviceVec<T>>,
}

impl<'a, T: GpuReal, A: GpuLinearOperator<T>> GpuPartKrylov<'a, T, A> {
    /// The system of `op` (the rank's operator on its own cells, a scalar field whose
    /// device dof of local node `n` of the exchange's space is `dof_of(n)`), with the
    /// vector kernels `blas`. Collective: the ranks choose the halo's transport together.
    pub fn new(
        dev: &Arc<GpuDevice>,
        op: &'a A,
        blas: &'a GpuBlas<T>,
        exchange: &Arc<dyn NodeExchange>,
        num_nodes: usize,
        dof_of: impl Fn(u32) -> u32,
    ) -> Result<Self, GpuError> {
        if num_nodes != op.dim() {
            return Err(GpuError::Size {
                what: "distributed operator",
                expected: num_nodes,
                got: op.dim(),
            });
        }
        let transport = HaloTransport::choose(dev, &**exchange)?;
        let halo = DeviceHalo::new(dev, exchange, &transport, 1, |n| {
            Some(dof_of(n)).filter(|&d| (d as usize) < num_nodes)
        })?;
        let not_owned: Vec<u32> = (0..num_nodes as u32)
            .filter(|&n| !exchange.is_owned(n as usize))
            .map(&dof_of)
            .collect();
        Ok(GpuPartKrylov {
            op,
            blas,
            exchange: exchange.clone(),
            halo: Mutex::new(halo),
            transport: transport.name(),
            not_owned: DeviceVec::from_host(dev, &not_owned, "dofs owned elsewhere")?,
            kernels: HaloKernels::new::<T>(dev)?,
            partial: Mutex::new(DeviceVec::zeros(dev, NOT_OWNED_BLOCKS, "dot partial sums")?),
            inv_diag: None,
        })
    }

    /// With the Jacobi preconditioner of the part's diagonal `diag` (on its own cells),
    /// summed at the shared nodes and inverted on the device.
    pub fn with_jacobi(mut self, mut diag: DeviceVec<T>) -> Result<Self, GpuError> {
        self.sum_shared(&mut diag)?;
        if let Some(i) = self.blas.reciprocal(&mut diag)? {
            return Err(GpuError::Unsupported(format!(
                "the summed diagonal is zero or not finite at dof {i} of rank {}",
                self.exchange.rank()
            )));
        }
        self.inv_diag = Some(diag);
        Ok(self)
    }

    /// How the halo travels: `"NCCL"` or `"host"`.
    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// `v` summed at the shared nodes over their holders.
    pub fn sum_shared(&self, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        let mut halo = self.halo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(h) = halo.as_mut() {
            h.sum(self.blas.device().stream(), v.slice_mut())?;
        }
        Ok(())
    }

    /// The dot product of two consistent vectors over the whole mesh. Collective.
    pub fn global_dot(&self, a: &DeviceVec<T>, b: &DeviceVec<T>) -> Result<f64, GpuError> {
        let all = self.blas.dot(a, b)?;
        let mut partial = self.partial.lock().unwrap_or_else(|e| e.into_inner());
        let elsewhere = dot_at(
            &self.kernels,
            self.blas.device().stream(),
            a.slice(),
            b.slice(),
            &self.not_owned,
            &mut partial,
        )?;
        self.exchange
            .sum(all - elsewhere)
            .map_err(|e| GpuError::Ranks(e.to_string()))
    }
}

impl<T: GpuReal, A: GpuLinearOperator<T>> KrylovSpace<T> for GpuPartKrylov<'_, T, A> {
    type Vector = DeviceVec<T>;

    fn dim(&self) -> usize {
        self.op.dim()
    }
    fn zeros(&self) -> Result<DeviceVec<T>, SolverError> {
        self.op
            .output_vector(self.blas.device(), "Krylov vector")
            .map_err(be)
    }
    fn dot(&self, a: &DeviceVec<T>, b: &DeviceVec<T>) -> Result<f64, SolverError> {
        self.global_dot(a, b).map_err(be)
    }
    fn axpy(&self, alpha: T, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.blas.axpy(alpha, x, y).map_err(be)
    }
    fn xpby(&self, x: &DeviceVec<T>, beta: T, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.blas.xpby(x, beta, y).map_err(be)
    }
    fn copy(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        y.copy_from(x).map_err(be)
    }
    fn apply(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.op.apply_device(x, y).map_err(be)?;
        self.sum_shared(y).map_err(be)
    }
    fn precondition(&self, r: &DeviceVec<T>, z: &mut DeviceVec<T>) -> Result<(), SolverError> {
        match &self.inv_diag {
            None => z.copy_from(r).map_err(be),
            Some(d) => self.blas.pointwise_mult(d, r, z).map_err(be),
        }
    }
}
