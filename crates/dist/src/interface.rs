//! The nodes of a rank's space that other ranks hold too, and the exchanges that keep a
//! distributed vector the same on every rank that holds a node.
//!
//! A distributed vector is stored on each rank over all its local nodes, shared ones
//! included, and holds the same value at a shared node on every rank (it is
//! *consistent*). A matrix-free operator applied on the local cells gives each holder a
//! partial sum at its shared nodes; [`NodeInterface::sum_shared`] adds the partial sums of
//! all holders, in rank order, so every holder gets the same bits. A dot product counts
//! each node on its owner alone ([`NodeInterface::dot`]).

use crate::{Communicator, DistError, LocalPart, Payload, SharedSumPlan};
use ferrofem_base::Real;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use rayon::prelude::*;

/// A rank-independent name of a node: for a node on a vertex, edge or face of a cell, its
/// nonzero vertex weights (see `ferrofem_fe::LagrangeElement::vertex_weights`) on the
/// global vertices, as `(vertex << 32) | weight`, sorted and padded with `u64::MAX`; for a
/// node inside a cell, `[u64::MAX - 1, global cell, element node, u64::MAX]`. Every rank
/// (and the serial space of the whole mesh) names a node the same way.
pub type NodeKey = [u64; 4];

/// The key of every node of `space` (built on `mesh`, a mesh whose cell `c` is global
/// cell `cell_global[c]` and whose vertex `v` is global vertex `vertex_global[v]`; pass
/// the identity for the whole mesh).
pub fn node_keys(
    space: &H1Space,
    mesh: &Mesh,
    cell_global: &[u32],
    vertex_global: &[u32],
) -> Result<Vec<NodeKey>, DistError> {
    if cell_global.len() != mesh.num_cells() || vertex_global.len() != mesh.num_vertices() {
        return Err(DistError::InvalidPartition(format!(
            "global numbers for {} cells and {} vertices, the mesh has {} and {}",
            cell_global.len(),
            vertex_global.len(),
            mesh.num_cells(),
            mesh.num_vertices()
        )));
    }
    if space.num_cells() != mesh.num_cells() {
        return Err(DistError::InvalidPartition(format!(
            "a space of {} cells on a mesh of {}",
            space.num_cells(),
            mesh.num_cells()
        )));
    }
    let el = space.element();
    let cell_dim = mesh.dim();
    let restriction = space.restriction();
    let mut keys = vec![[u64::MAX; 4]; space.num_nodes()];
    let mut done = vec![false; space.num_nodes()];
    for c in 0..mesh.num_cells() {
        let cell = mesh.cell(c);
        for (j, &n) in restriction.elem(c).iter().enumerate() {
            if std::mem::replace(&mut done[n as usize], true) {
                continue;
            }
            let key = &mut keys[n as usize];
            if el.node_entity(j).dim == cell_dim {
                *key = [u64::MAX - 1, u64::from(cell_global[c]), j as u64, u64::MAX];
                continue;
            }
            let mut k = 0;
            for (v, &w) in el.vertex_weights(j).iter().enumerate() {
                if w != 0 {
                    if k == 4 {
                        return Err(DistError::InvalidPartition(format!(
                            "node {j} of the element lies on more than 4 vertices' entity"
                        )));
                    }
                    let gv = u64::from(vertex_global[cell[v] as usize]);
                    key[k] = (gv << 32) | u64::from(w);
                    k += 1;
                }
            }
            key[..k].sort_unstable();
        }
    }
    Ok(keys)
}

/// The shared nodes of one rank's space and the plan of its exchanges.
#[derive(Clone, Debug)]
pub struct NodeInterface {
    rank: usize,
    num_nodes: usize,
    /// The ranks sharing at least one node with this one, increasing.
    neighbours: Vec<usize>,
    /// Per neighbour, the local nodes shared with it, in the order of their keys (the
    /// order the neighbour uses too).
    shared: Vec<Vec<u32>>,
    /// Every shared node once, increasing.
    shared_nodes: Vec<u32>,
    /// Whether each local node is owned here (its lowest holder is this rank).
    owned: Vec<bool>,
    /// The exchange and rank-order sum as index lists.
    plan: SharedSumPlan,
}

impl NodeInterface {
    /// Finds the nodes of `space` (built on `part.mesh`) that other ranks hold, by
    /// exchanging the keys of candidate nodes with every neighbour of the part. Collective
    /// over the ranks of `comm`.
    pub fn new<C: Communicator>(
        comm: &C,
        part: &LocalPart,
        space: &H1Space,
    ) -> Result<NodeInterface, DistError> {
        part.check_on(comm)?;
        let keys = node_keys(space, &part.mesh, &part.cell_global, &part.vertex_global)?;
        let neighbours = part.neighbours();
        // Candidates for each neighbour: nodes on an entity all of whose vertices that
        // neighbour holds. It may still not hold the entity; the intersection of both
        // sides' candidates tells.
        let mut candidates: Vec<Vec<(NodeKey, u32)>> = vec![Vec::new(); neighbours.len()];
        let vertex_of = |gv: u64| -> usize {
            part.vertex_global
                .binary_search(&(gv as u32))
                .expect("a key names local vertices")
        };
        for (n, key) in keys.iter().enumerate() {
            if key[0] == u64::MAX - 1 {
                continue;
            }
            let verts: Vec<usize> = key
                .iter()
                .take_while(|&&k| k != u64::MAX)
                .map(|&k| vertex_of(k >> 32))
                .collect();
            let first = part.holders(verts[0]);
            if first.len() < 2 {
                continue;
            }
            for &r in first {
                let r = r as usize;
                if r == part.rank
                    || !verts[1..]
                        .iter()
                        .all(|&v| part.holders(v).contains(&(r as u32)))
                {
                    continue;
                }
                let i = neighbours
                    .binary_search(&r)
                    .expect("a holder is a neighbour");
                candidates[i].push((*key, n as u32));
            }
        }
        for c in &mut candidates {
            c.sort_unstable();
        }
        let send: Vec<Vec<u64>> = candidates
            .iter()
            .map(|c| c.iter().flat_map(|(k, _)| k.iter().copied()).collect())
            .collect();
        let received = comm.exchange_vecs(&neighbours, &send)?;
        let mut shared = Vec::with_capacity(neighbours.len());
        for (mine, theirs) in candidates.iter().zip(&received) {
            let theirs: Vec<NodeKey> = theirs
                .chunks_exact(4)
                .map(|k| [k[0], k[1], k[2], k[3]])
                .collect();
            let common: Vec<u32> = mine
                .iter()
                .filter(|(k, _)| theirs.binary_search(k).is_ok())
                .map(|&(_, n)| n)
                .collect();
            shared.push(common);
        }
        let mut owned = vec![true; space.num_nodes()];
        for (&r, nodes) in neighbours.iter().zip(&shared) {
            if r < part.rank {
                for &n in nodes {
                    owned[n as usize] = false;
                }
            }
        }
        let mut shared_nodes: Vec<u32> = shared.iter().flatten().copied().collect();
        shared_nodes.sort_unstable();
        shared_nodes.dedup();
        let plan = SharedSumPlan::new(part.rank, &neighbours, &shared, &shared_nodes);
        Ok(NodeInterface {
            rank: part.rank,
            num_nodes: space.num_nodes(),
            neighbours,
            shared,
            shared_nodes,
            owned,
            plan,
        })
    }

    /// The local nodes.
    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// The ranks sharing a node with this one, increasing.
    pub fn neighbours(&self) -> &[usize] {
        &self.neighbours
    }

    /// The local nodes shared with neighbour `i` (of [`NodeInterface::neighbours`]), in the
    /// order both ranks use.
    pub fn shared_with(&self, i: usize) -> &[u32] {
        &self.shared[i]
    }

    /// Every shared local node once, increasing.
    pub fn shared_nodes(&self) -> &[u32] {
        &self.shared_nodes
    }

    /// The exchange and sum over the shared nodes as index lists (for a device).
    pub fn sum_plan(&self) -> &SharedSumPlan {
        &self.plan
    }

    /// Whether local node `n` is owned here.
    pub fn is_owned(&self, n: usize) -> bool {
        self.owned[n]
    }

    /// Nodes owned here.
    pub fn num_owned(&self) -> usize {
        self.owned.iter().filter(|&&o| o).count()
    }

    fn check_len(&self, what: &str, len: usize, ncomp: usize) -> Result<(), DistError> {
        if ncomp == 0 || len != self.num_nodes * ncomp {
            return Err(DistError::Exchange(format!(
                "{what}: a vector of {len} values for {} nodes of {ncomp} components",
                self.num_nodes
            )));
        }
        Ok(())
    }

    /// Sends every neighbour `v`'s values at the nodes it shares and returns what they sent,
    /// both laid out as [`SharedSumPlan`] says.
    fn swap<C: Communicator, T: Payload>(
        &self,
        comm: &C,
        v: &[T],
        ncomp: usize,
    ) -> Result<Vec<T>, DistError> {
        let mut send = vec![T::default(); self.plan.num_sent() * ncomp];
        self.plan.pack(v, ncomp, &mut send);
        let mut recv = vec![T::default(); send.len()];
        self.exchange_packed(comm, &send, &mut recv, ncomp)?;
        Ok(recv)
    }

    /// Sends every neighbour its block of `send` (the values at the nodes it shares,
    /// `ncomp` per node, laid out as [`SharedSumPlan`] says, as a device packs them) and
    /// receives theirs into `recv`, laid out the same way. Collective over the neighbours.
    pub fn exchange_packed<C: Communicator, T: Payload>(
        &self,
        comm: &C,
        send: &[T],
        recv: &mut [T],
        ncomp: usize,
    ) -> Result<(), DistError> {
        let plan = &self.plan;
        let len = plan.num_sent() * ncomp;
        if send.len() != len || recv.len() != len {
            return Err(DistError::Exchange(format!(
                "packed exchange: {} values sent and {} received for {} shared values",
                send.len(),
                recv.len(),
                len
            )));
        }
        if self.neighbours.is_empty() {
            return Ok(());
        }
        let blocks = |i: usize| plan.offsets[i] * ncomp..plan.offsets[i + 1] * ncomp;
        let send_refs: Vec<&[T]> = (0..self.neighbours.len())
            .map(|i| &send[blocks(i)])
            .collect();
        let mut rest = recv;
        let mut recv_refs: Vec<&mut [T]> = Vec::with_capacity(self.neighbours.len());
        for i in 0..self.neighbours.len() {
            let (block, tail) = rest.split_at_mut(blocks(i).len());
            recv_refs.push(block);
            rest = tail;
        }
        comm.exchange(&self.neighbours, &send_refs, &mut recv_refs)
    }

    /// Adds at every shared node the values all its holders have there (`ncomp` values
    /// per node, node-major), in rank order: afterwards every holder has the same sum,
    /// bit for bit. Collective over the neighbours.
    pub fn sum_shared<C: Communicator, T: Real + Payload>(
        &self,
        comm: &C,
        v: &mut [T],
        ncomp: usize,
    ) -> Result<(), DistError> {
        self.check_len("sum over shared nodes", v.len(), ncomp)?;
        if self.neighbours.is_empty() {
            return Ok(());
        }
        let recv = self.swap(comm, v, ncomp)?;
        self.plan.combine(v, ncomp, &recv);
        Ok(())
    }

    /// Replaces the values at every shared node by its owner's, so that a vector computed
    /// independently on each rank (interpolated data, say) becomes consistent. Collective
    /// over the neighbours.
    pub fn take_owners<C: Communicator, T: Payload>(
        &self,
        comm: &C,
        v: &mut [T],
        ncomp: usize,
    ) -> Result<(), DistError> {
        self.check_len("owners' values", v.len(), ncomp)?;
        if self.neighbours.is_empty() {
            return Ok(());
        }
        let recv = self.swap(comm, v, ncomp)?;
        let below = self.neighbours.partition_point(|&r| r < self.rank);
        // a node's owner is its lowest holder: take the lowest neighbour's value first
        // and never overwrite it with a higher one's
        let mut taken = vec![false; self.num_nodes];
        for i in 0..below {
            let block = &recv[self.plan.offsets[i] * ncomp..self.plan.offsets[i + 1] * ncomp];
            for (&n, vals) in self.shared[i].iter().zip(block.chunks_exact(ncomp)) {
                if !std::mem::replace(&mut taken[n as usize], true) {
                    v[n as usize * ncomp..(n as usize + 1) * ncomp].copy_from_slice(vals);
                }
            }
        }
        Ok(())
    }

    /// `aᵀb` over the distributed vectors (`ncomp` values per node): each node counted on
    /// its owner, each rank's part summed in `f64` in a fixed order, the parts added in
    /// rank order. Collective over all ranks.
    pub fn dot<C: Communicator, T: Real>(
        &self,
        comm: &C,
        a: &[T],
        b: &[T],
        ncomp: usize,
    ) -> Result<f64, DistError> {
        self.check_len("dot product", a.len(), ncomp)?;
        self.check_len("dot product", b.len(), ncomp)?;
        const NODES_PER_CHUNK: usize = 1024;
        let local: f64 = self
            .owned
            .par_chunks(NODES_PER_CHUNK)
            .enumerate()
            .map(|(chunk, owned)| {
                let first = chunk * NODES_PER_CHUNK;
                let mut s = 0.0f64;
                for (k, &o) in owned.iter().enumerate() {
                    if o {
                        let d = (first + k) * ncomp;
                        for c in d..d + ncomp {
                            s += a[c].as_f64() * b[c].as_f64();
                        }
                    }
                }
                s
            })
            .collect::<Vec<f64>>()
            .into_iter()
            .sum();
        comm.sum(local)
    }
}
