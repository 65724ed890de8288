//! How the post-processing combines what each rank computes on its own cells: sums at the
//! nodes that several ranks hold, which node a rank counts, and sums over the ranks. The
//! serial run ([`WholeMesh`]) has nothing to combine.

use crate::pipeline_error::PipelineError;

/// The sums a post-processing step needs across ranks.
pub trait Reduction {
    /// Adds at every shared node the values of all its holders (`ncomp` values per node,
    /// node-major), so that every holder has the same sum.
    fn sum_shared(&self, values: &mut [f64], ncomp: usize) -> Result<(), PipelineError>;
    /// Whether this rank counts node `node` in a sum over nodes (its owner does).
    fn counts_node(&self, node: usize) -> bool;
    /// Sums `values` element-wise over the ranks, the same bits on every rank.
    fn sum_ranks(&self, values: &mut [f64]) -> Result<(), PipelineError>;
    /// The union over the ranks of `tags` (sorted, without repeats).
    fn union_tags(&self, tags: Vec<i32>) -> Result<Vec<i32>, PipelineError>;
    /// The lowest rank for which `found` is true, if any.
    fn first_rank_with(&self, found: bool) -> Result<Option<usize>, PipelineError>;
    /// This rank.
    fn rank(&self) -> usize;
}

/// The whole mesh on one process: every sum is already complete.
#[derive(Clone, Copy, Debug, Default)]
pub struct WholeMesh;

impl Reduction for WholeMesh {
    fn sum_shared(&self, _values: &mut [f64], _ncomp: usize) -> Result<(), PipelineError> {
        Ok(())
    }
    fn counts_node(&self, _node: usize) -> bool {
        true
    }
    fn sum_ranks(&self, _values: &mut [f64]) -> Result<(), PipelineError> {
        Ok(())
    }
    fn union_tags(&self, mut tags: Vec<i32>) -> Result<Vec<i32>, PipelineError> {
        tags.sort_unstable();
        tags.dedup();
        Ok(tags)
    }
    fn first_rank_with(&self, found: bool) -> Result<Option<usize>, PipelineError> {
        Ok(found.then_some(0))
    }
    fn rank(&self) -> usize {
        0
    }
}
