//! The sum over the nodes a space shares with other ranks of a distributed mesh, as flat
//! index lists: which local values a rank sends each neighbour, and, at every shared node,
//! the terms of the sum in rank order. The host sum (`ferrofem_dist::NodeInterface`) runs
//! on it, and a device runs the same lists in its pack and combine kernels, so both add in
//! the same order and every holder of a node gets the same bits.

use ferrofem_base::Real;

/// In [`SharedSumPlan::sources`]: the rank's own value at the node.
pub const OWN_VALUE: u32 = u32::MAX;

/// The exchange and sum of the values at a rank's shared nodes (`ncomp` values per node,
/// node-major, for any `ncomp`).
///
/// Sent and received values have the same layout: neighbour `i`'s block is
/// `offsets[i]..offsets[i + 1]` (in nodes), holding the values at `send_nodes` of that
/// block, in the order both ranks list their common nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedSumPlan {
    /// Per neighbour (increasing rank), where its block starts; one more entry at the end.
    pub offsets: Vec<usize>,
    /// The local node of every sent (and received) value.
    pub send_nodes: Vec<u32>,
    /// The shared nodes, increasing: the nodes the sum writes.
    pub nodes: Vec<u32>,
    /// `sources[source_offsets[k]..source_offsets[k + 1]]`: the terms of the sum at
    /// `nodes[k]` in rank order, each a position in the received values or
    /// [`OWN_VALUE`].
    pub source_offsets: Vec<u32>,
    /// See [`SharedSumPlan::source_offsets`].
    pub sources: Vec<u32>,
}

impl SharedSumPlan {
    /// The plan of rank `rank` whose neighbours `neighbours` (increasing) share the local
    /// nodes `shared[i]` (in the order both sides list them); `nodes` is every shared node
    /// once, increasing (each node of `shared` must be in it).
    pub fn new(
        rank: usize,
        neighbours: &[usize],
        shared: &[Vec<u32>],
        nodes: &[u32],
    ) -> SharedSumPlan {
        let mut offsets = Vec::with_capacity(neighbours.len() + 1);
        offsets.push(0);
        for s in shared {
            offsets.push(offsets.last().copied().unwrap_or(0) + s.len());
        }
        let send_nodes: Vec<u32> = shared.iter().flatten().copied().collect();
        // terms per shared node, gathered neighbour by neighbour (so in rank order)
        let mut terms: Vec<Vec<u32>> = vec![Vec::new(); nodes.len()];
        let mut own_placed = vec![false; nodes.len()];
        for (i, (&r, s)) in neighbours.iter().zip(shared).enumerate() {
            for (j, &n) in s.iter().enumerate() {
                let k = nodes
                    .binary_search(&n)
                    .expect("a node shared with a neighbour is a shared node");
                if r > rank && !std::mem::replace(&mut own_placed[k], true) {
                    terms[k].push(OWN_VALUE);
                }
                terms[k].push((offsets[i] + j) as u32);
            }
        }
        for (t, placed) in terms.iter_mut().zip(&own_placed) {
            if !placed {
                t.push(OWN_VALUE);
            }
        }
        let mut source_offsets = Vec::with_capacity(nodes.len() + 1);
        source_offsets.push(0u32);
        let mut sources = Vec::new();
        for t in &terms {
            sources.extend_from_slice(t);
            source_offsets.push(sources.len() as u32);
        }
        SharedSumPlan {
            offsets,
            send_nodes,
            nodes: nodes.to_vec(),
            source_offsets,
            sources,
        }
    }

    /// Values sent (and received) in all, in nodes.
    pub fn num_sent(&self) -> usize {
        self.send_nodes.len()
    }

    /// Gathers the values `v` has at the sent nodes into `send` (`num_sent() * ncomp`).
    pub fn pack<T: Copy>(&self, v: &[T], ncomp: usize, send: &mut [T]) {
        for (out, &n) in send.chunks_exact_mut(ncomp).zip(&self.send_nodes) {
            let n = n as usize * ncomp;
            out.copy_from_slice(&v[n..n + ncomp]);
        }
    }

    /// Writes at every shared node of `v` the sum of its terms in rank order: the values
    /// `received` from the neighbours (laid out like the sent ones) and `v`'s own.
    pub fn combine<T: Real>(&self, v: &mut [T], ncomp: usize, received: &[T]) {
        for (k, &n) in self.nodes.iter().enumerate() {
            let terms =
                &self.sources[self.source_offsets[k] as usize..self.source_offsets[k + 1] as usize];
            let at = n as usize * ncomp;
            for c in 0..ncomp {
                let mut sum = T::zero();
                for &t in terms {
                    sum += if t == OWN_VALUE {
                        v[at + c]
                    } else {
                        received[t as usize * ncomp + c]
                    };
                }
                v[at + c] = sum;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_come_in_rank_order() {
        // rank 2 shares node 5 with ranks 0 and 3, node 7 with rank 3, node 9 with rank 0
        let plan = SharedSumPlan::new(2, &[0, 3], &[vec![5, 9], vec![5, 7]], &[5, 7, 9]);
        assert_eq!(plan.offsets, vec![0, 2, 4]);
        assert_eq!(plan.send_nodes, vec![5, 9, 5, 7]);
        assert_eq!(plan.source_offsets, vec![0, 3, 5, 7]);
        assert_eq!(
            plan.sources,
            vec![0, OWN_VALUE, 2, OWN_VALUE, 3, 1, OWN_VALUE]
        );
        let mut v: Vec<f64> = (0..10).map(|i| i as f64).collect();
        let mut send = vec![0.0; 4];
        plan.pack(&v, 1, &mut send);
        assert_eq!(send, vec![5.0, 9.0, 5.0, 7.0]);
        plan.combine(&mut v, 1, &[100.0, 200.0, 1000.0, 2000.0]);
        assert_eq!((v[5], v[7], v[9], v[6]), (1105.0, 2007.0, 209.0, 6.0));
    }
}
