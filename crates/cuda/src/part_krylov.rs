//! The Krylov solvers on one rank's part of a distributed mesh, on its GPU: the same CG/PCG
//! code as everywhere (`ferrofem_solver`), on a [`KrylovSpace`] whose operator is applied on
//! the part's cells and summed at the shared nodes through the device halo, and whose dot
//! products count each dof on its owner alone and are summed over the ranks.
//!
//! Vectors are consistent: every holder of a shared dof has its whole value.

use crate::blas::GpuBlas;
use crate::halo::{DeviceHalo, HaloTransport};
use crate::krylov::{GpuKrylov, GpuLinearOperator};
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_solver::{KrylovSpace, SolverError};
use ferrofem_wave::NodeExchange;
use std::sync::{Arc, Mutex};

fn be(e: GpuError) -> SolverError {
    SolverError::backend(e)
}

/// A distributed linear system on one rank's GPU (see the module's documentation).
pub struct GpuPartKrylov<'a, T: GpuReal, A: GpuLinearOperator<T>> {
    /// The part's own space: the vector operations and the preconditioner.
    local: GpuKrylov<'a, T, A>,
    op: &'a A,
    blas: &'a GpuBlas<T>,
    exchange: Arc<dyn NodeExchange>,
    /// `None` where the part shares no node.
    halo: Mutex<Option<DeviceHalo<T>>>,
    transport: &'static str,
    /// The device dofs this rank holds and another owns.
    not_owned: DeviceVec<u32>,
}

impl<'a, T: GpuReal, A: GpuLinearOperator<T>> GpuPartKrylov<'a, T, A> {
    /// The system of `op` (the rank's operator on its own cells, a field of `ncomp`
    /// components whose device dofs of local node `n` of the exchange's space are
    /// `dof_of(n)·ncomp + c`), with the vector kernels `blas`. Collective: the ranks choose
    /// the halo's transport together.
    pub fn new(
        dev: &Arc<GpuDevice>,
        op: &'a A,
        blas: &'a GpuBlas<T>,
        exchange: &Arc<dyn NodeExchange>,
        num_nodes: usize,
        ncomp: usize,
        dof_of: impl Fn(u32) -> u32,
    ) -> Result<Self, GpuError> {
        if num_nodes * ncomp != op.dim() {
            return Err(GpuError::Size {
                what: "distributed operator",
                expected: num_nodes * ncomp,
                got: op.dim(),
            });
        }
        let transport = HaloTransport::choose(dev, &**exchange)?;
        let halo = DeviceHalo::new(dev, exchange, &transport, ncomp, |n| {
            Some(dof_of(n)).filter(|&d| (d as usize) < num_nodes)
        })?;
        let not_owned: Vec<u32> = (0..num_nodes as u32)
            .filter(|&n| !exchange.is_owned(n as usize))
            .flat_map(|n| {
                let first = dof_of(n) * ncomp as u32;
                first..first + ncomp as u32
            })
            .collect();
        Ok(GpuPartKrylov {
            local: GpuKrylov::new(op, blas),
            op,
            blas,
            exchange: exchange.clone(),
            halo: Mutex::new(halo),
            transport: transport.name(),
            not_owned: DeviceVec::from_host(dev, &not_owned, "dofs owned elsewhere")?,
        })
    }

    /// With the Jacobi preconditioner of the part's diagonal `diag` (on its own cells),
    /// summed at the shared nodes, one on the device dofs `ones` (constrained rows: the
    /// holders' ones would sum to their count), and inverted on the device.
    pub fn with_jacobi(mut self, mut diag: DeviceVec<T>, ones: &[u32]) -> Result<Self, GpuError> {
        self.sum_shared(&mut diag)?;
        if !ones.is_empty() {
            let idx = DeviceVec::from_host(self.blas.device(), ones, "constrained rows")?;
            self.blas.set_indices(&mut diag, &idx, T::one())?;
        }
        self.local = GpuKrylov::with_jacobi_device(self.op, self.blas, diag)
            .map_err(|e| GpuError::Unsupported(format!("rank {}: {e}", self.exchange.rank())))?;
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
        let elsewhere = self.blas.dot_at(a, b, &self.not_owned)?;
        self.exchange
            .sum(all - elsewhere)
            .map_err(|e| GpuError::Ranks(e.to_string()))
    }
}

impl<T: GpuReal, A: GpuLinearOperator<T>> KrylovSpace<T> for GpuPartKrylov<'_, T, A> {
    type Vector = DeviceVec<T>;

    fn dim(&self) -> usize {
        self.local.dim()
    }
    fn zeros(&self) -> Result<DeviceVec<T>, SolverError> {
        self.local.zeros()
    }
    /// Over the whole mesh (each dof on its owner), summed over the ranks.
    fn dot(&self, a: &DeviceVec<T>, b: &DeviceVec<T>) -> Result<f64, SolverError> {
        self.global_dot(a, b).map_err(be)
    }
    fn axpy(&self, alpha: T, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.local.axpy(alpha, x, y)
    }
    fn xpby(&self, x: &DeviceVec<T>, beta: T, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.local.xpby(x, beta, y)
    }
    fn copy(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.local.copy(x, y)
    }
    /// The part's operator, summed at the shared nodes.
    fn apply(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.local.apply(x, y)?;
        self.sum_shared(y).map_err(be)
    }
    fn precondition(&self, r: &DeviceVec<T>, z: &mut DeviceVec<T>) -> Result<(), SolverError> {
        self.local.precondition(r, z)
    }
}
