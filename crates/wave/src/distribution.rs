//! A simulation on one part of a distributed mesh: what it needs from the other ranks.
//!
//! [`Simulation::on_part`](crate::Simulation::on_part) builds the simulation of a rank's
//! own cells. Its stiffness product, lumped mass, damping, held nodes and body-force
//! weights are partial sums at the nodes it shares with other ranks; [`NodeExchange`]
//! adds them across the interfaces so that every holder of a node steps it the same way.
//! A source or receiver belongs to the lowest rank that finds it in its cells; the
//! energy counts each node on its owner. The traits are implemented over MPI by
//! `ferrofem-dist`; this crate knows nothing of MPI.
//!
//! Every method marked collective must be called by every rank, in the same order. A rank
//! that fails between two collective calls leaves the others waiting: a distributed
//! program aborts the whole job on an error.

use crate::WaveError;
use ferrofem_base::Real;
use ferrofem_space::{H1Space, SharedSumPlan};
use std::any::Any;

/// The rank's part of a distributed mesh, as the wave simulation sees it.
pub trait WavePart: Send + Sync {
    /// The local mesh's facets on the boundary of the whole mesh, as (local cell, local
    /// facet); its other boundary facets are interfaces with other ranks.
    fn boundary_facets(&self) -> &[(u32, u8)];
    /// The local mesh's cells `0..interface_cells()` are those with a vertex that another
    /// rank holds: every node shared with another rank lies in them, so the other cells'
    /// work can run while the shared values are exchanged.
    fn interface_cells(&self) -> usize;
    /// The exchanges for `space`, a scalar space on the local mesh. Collective.
    fn connect(&self, space: &H1Space) -> Result<Box<dyn NodeExchange>, WaveError>;
}

/// The exchanges of one rank's scalar space with the other ranks.
pub trait NodeExchange: Send + Sync {
    /// This rank.
    fn rank(&self) -> usize;
    /// The number of ranks.
    fn size(&self) -> usize;
    /// The ranks this one shares nodes with, increasing: the order of the blocks of
    /// [`NodeExchange::sum_plan`]'s `offsets`.
    fn neighbours(&self) -> &[usize];
    /// One value from every rank, in rank order, on every rank. Collective.
    fn gather_u64(&self, x: u64) -> Result<Vec<u64>, WaveError>;
    /// Adds at every shared node the values of all its holders (`ncomp` per node), in an
    /// order that gives every holder the same bits. Collective over the neighbours.
    fn sum_shared_f64(&self, v: &mut [f64], ncomp: usize) -> Result<(), WaveError>;
    /// [`NodeExchange::sum_shared_f64`] in `f32`.
    fn sum_shared_f32(&self, v: &mut [f32], ncomp: usize) -> Result<(), WaveError>;
    /// The sum over the ranks of `x`, the same bits on every rank. Collective.
    fn sum(&self, x: f64) -> Result<f64, WaveError>;
    /// The minimum over the ranks of `x`. Collective.
    fn min(&self, x: f64) -> Result<f64, WaveError>;
    /// The lowest rank whose `flag` is true, if any. Collective.
    fn first_rank_with(&self, flag: bool) -> Result<Option<usize>, WaveError>;
    /// Element-wise sums of `v` over the ranks, on every rank. Collective.
    fn sum_all(&self, v: &mut [f64]) -> Result<(), WaveError>;
    /// Whether local node `n` is owned here (counted here in global sums).
    fn is_owned(&self, n: usize) -> bool;
    /// The shared-node sum as index lists: the nodes whose values go to each neighbour,
    /// and each shared node's terms in rank order (for a device that packs and combines
    /// the values itself, in the order of [`NodeExchange::sum_shared_f64`]).
    fn sum_plan(&self) -> &SharedSumPlan;
    /// Sends every neighbour its block of `send` (packed as the plan says, `ncomp` values
    /// per node) and receives theirs into `recv`, laid out the same way. Collective over
    /// the neighbours.
    fn exchange_packed_f64(
        &self,
        send: &[f64],
        recv: &mut [f64],
        ncomp: usize,
    ) -> Result<(), WaveError>;
    /// [`NodeExchange::exchange_packed_f64`] in `f32`.
    fn exchange_packed_f32(
        &self,
        send: &[f32],
        recv: &mut [f32],
        ncomp: usize,
    ) -> Result<(), WaveError>;
}

/// [`NodeExchange::sum_shared_f64`] or `_f32` for a vector of `T`.
// (a `Vec`, not a slice: `Any` downcasts sized types only)
#[allow(clippy::ptr_arg)]
pub(crate) fn sum_shared<T: Real>(
    exchange: &dyn NodeExchange,
    v: &mut Vec<T>,
    ncomp: usize,
) -> Result<(), WaveError> {
    let any: &mut dyn Any = v;
    if let Some(v) = any.downcast_mut::<Vec<f64>>() {
        return exchange.sum_shared_f64(v, ncomp);
    }
    if let Some(v) = any.downcast_mut::<Vec<f32>>() {
        return exchange.sum_shared_f32(v, ncomp);
    }
    Err(WaveError::Invalid(format!(
        "no exchange of {} values between ranks",
        T::NAME
    )))
}

/// [`NodeExchange::exchange_packed_f64`] or `_f32` for buffers of `T` (a device's halo
/// staged in host memory).
pub fn exchange_packed<T: Real>(
    exchange: &dyn NodeExchange,
    send: &[T],
    recv: &mut [T],
    ncomp: usize,
) -> Result<(), WaveError> {
    use std::any::TypeId;
    if TypeId::of::<T>() == TypeId::of::<f64>() {
        // SAFETY: T is f64 (same type id), so the slices are reinterpreted as themselves.
        let (s, r) = unsafe {
            (
                std::slice::from_raw_parts(send.as_ptr().cast::<f64>(), send.len()),
                std::slice::from_raw_parts_mut(recv.as_mut_ptr().cast::<f64>(), recv.len()),
            )
        };
        return exchange.exchange_packed_f64(s, r, ncomp);
    }
    if TypeId::of::<T>() == TypeId::of::<f32>() {
        // SAFETY: T is f32 (same type id).
        let (s, r) = unsafe {
            (
                std::slice::from_raw_parts(send.as_ptr().cast::<f32>(), send.len()),
                std::slice::from_raw_parts_mut(recv.as_mut_ptr().cast::<f32>(), recv.len()),
            )
        };
        return exchange.exchange_packed_f32(s, r, ncomp);
    }
    Err(WaveError::Invalid(format!(
        "no exchange of {} values between ranks",
        T::NAME
    )))
}
