//! A GPU wave simulation on one rank's part of a distributed mesh: the nodes it owns and
//! the halo of the skeleton sums at the nodes it shares ([`DeviceHalo`]).

use super::layout::WaveLayout;
use crate::halo::{DeviceHalo, HaloTransport};
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use ferrofem_wave::{NodeExchange, Simulation};
use rayon::prelude::*;
use std::sync::Arc;

/// A simulation on one rank's part of a distributed mesh: its exchange with the other
/// ranks, the nodes it owns, and the halo of the skeleton sums `ku` at shared nodes,
/// exchanged on every step after the interface cells' stiffness while the other cells'
/// runs.
pub(super) struct RankLink<T: GpuReal> {
    pub(super) exchange: Arc<dyn NodeExchange>,
    /// Per kernel node: 1 where this rank owns it (counts it in the energy).
    pub(super) owned: DeviceVec<u8>,
    /// The interface cells: `0..interface_cells` hold every shared node.
    pub(super) interface_cells: usize,
    /// `None` where the part shares no node.
    pub(super) halo: Option<DeviceHalo<T>>,
    /// How the halo travels (the same on every rank).
    pub(super) transport_name: &'static str,
}

impl<T: GpuReal> RankLink<T> {
    /// The link of `sim` (on a part, with its exchange `exchange`) for the kernels'
    /// numbering `layout`: the owned nodes, and the halo where the part shares nodes.
    /// Checks that every shared node is a skeleton node of the interface cells.
    /// Collective: every rank builds its link (the transport is chosen together).
    pub(super) fn new(
        dev: &Arc<GpuDevice>,
        sim: &Simulation<T>,
        exchange: &Arc<dyn NodeExchange>,
        layout: &WaveLayout,
        nc: usize,
    ) -> Result<RankLink<T>, GpuError> {
        let owned: Vec<u8> = layout
            .old_of
            .iter()
            .map(|&old| u8::from(sim.owns_node(old as usize)))
            .collect();
        let owned = DeviceVec::from_host(dev, &owned, "owned nodes")?;
        let transport = HaloTransport::choose(dev, &**exchange)?;
        let plan = exchange.sum_plan();
        let not_conforming = || {
            GpuError::Unsupported(
                "a node shared with another rank is not on the faces of this rank's \
                 interface cells (the part's mesh does not conform to its neighbours')"
                    .into(),
            )
        };
        let mut shared = vec![false; layout.skeleton];
        for &n in &plan.nodes {
            let k = layout.new_of[n as usize] as usize;
            if k >= layout.skeleton {
                return Err(not_conforming());
            }
            shared[k] = true;
        }
        // the cells after the interface ones must not touch a shared node
        let interface_cells = sim.interface_cells();
        let per = layout.local.skeleton;
        if layout.skeleton_nodes[interface_cells * per..]
            .par_iter()
            .any(|&k| shared[k as usize])
        {
            return Err(not_conforming());
        }
        let halo = DeviceHalo::new(dev, exchange, &transport, nc, |n| {
            Some(layout.new_of[n as usize]).filter(|&k| (k as usize) < layout.skeleton)
        })?;
        Ok(RankLink {
            exchange: exchange.clone(),
            owned,
            interface_cells,
            halo,
            transport_name: transport.name(),
        })
    }
}
