//! The wave simulation on one rank's part: `ferrofem_wave`'s [`WavePart`] and
//! [`NodeExchange`] over a [`Communicator`] and a [`NodeInterface`].

use crate::{Communicator, DistError, LocalPart, NodeInterface, SharedSumPlan};
use ferrofem_space::H1Space;
use ferrofem_wave::{NodeExchange, WaveError, WavePart};
use std::sync::Arc;

fn wave_error(e: DistError) -> WaveError {
    WaveError::Invalid(e.to_string())
}

/// A rank's part of a distributed mesh for [`ferrofem_wave::Simulation::on_part`].
pub struct WavePartition<C> {
    comm: Arc<C>,
    part: Arc<LocalPart>,
}

impl<C: Communicator + Send + Sync + 'static> WavePartition<C> {
    /// The part `part` on the ranks of `comm` (this rank's part).
    pub fn new(comm: Arc<C>, part: Arc<LocalPart>) -> Result<Self, DistError> {
        part.check_on(&*comm)?;
        Ok(WavePartition { comm, part })
    }
}

impl<C: Communicator + Send + Sync + 'static> WavePart for WavePartition<C> {
    fn boundary_facets(&self) -> &[(u32, u8)] {
        &self.part.boundary_facets
    }

    fn interface_cells(&self) -> usize {
        self.part.interface_cells
    }

    fn connect(&self, space: &H1Space) -> Result<Box<dyn NodeExchange>, WaveError> {
        let interface = NodeInterface::new(&*self.comm, &self.part, space).map_err(wave_error)?;
        Ok(Box::new(PartExchange {
            comm: self.comm.clone(),
            interface,
        }))
    }
}

/// The exchanges of one space of a part.
struct PartExchange<C> {
    comm: Arc<C>,
    interface: NodeInterface,
}

impl<C: Communicator + Send + Sync + 'static> NodeExchange for PartExchange<C> {
    fn rank(&self) -> usize {
        self.comm.rank()
    }
    fn size(&self) -> usize {
        self.comm.size()
    }
    fn neighbours(&self) -> &[usize] {
        self.interface.neighbours()
    }
    fn gather_u64(&self, x: u64) -> Result<Vec<u64>, WaveError> {
        self.comm.gather_all(x).map_err(wave_error)
    }
    fn sum_shared_f64(&self, v: &mut [f64], ncomp: usize) -> Result<(), WaveError> {
        self.interface
            .sum_shared(&*self.comm, v, ncomp)
            .map_err(wave_error)
    }
    fn sum_shared_f32(&self, v: &mut [f32], ncomp: usize) -> Result<(), WaveError> {
        self.interface
            .sum_shared(&*self.comm, v, ncomp)
            .map_err(wave_error)
    }
    fn sum(&self, x: f64) -> Result<f64, WaveError> {
        self.comm.sum(x).map_err(wave_error)
    }
    fn min(&self, x: f64) -> Result<f64, WaveError> {
        self.comm.min(x).map_err(wave_error)
    }
    fn first_rank_with(&self, flag: bool) -> Result<Option<usize>, WaveError> {
        self.comm.first_rank_with(flag).map_err(wave_error)
    }
    fn sum_all(&self, v: &mut [f64]) -> Result<(), WaveError> {
        self.comm.sum_all(v).map_err(wave_error)
    }
    fn is_owned(&self, n: usize) -> bool {
        self.interface.is_owned(n)
    }
    fn sum_plan(&self) -> &SharedSumPlan {
        self.interface.sum_plan()
    }
    fn exchange_packed_f64(
        &self,
        send: &[f64],
        recv: &mut [f64],
        ncomp: usize,
    ) -> Result<(), WaveError> {
        self.interface
            .exchange_packed(&*self.comm, send, recv, ncomp)
            .map_err(wave_error)
    }
    fn exchange_packed_f32(
        &self,
        send: &[f32],
        recv: &mut [f32],
        ncomp: usize,
    ) -> Result<(), WaveError> {
        self.interface
            .exchange_packed(&*self.comm, send, recv, ncomp)
            .map_err(wave_error)
    }
}
