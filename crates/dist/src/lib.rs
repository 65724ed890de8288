//! Domain decomposition of a mesh into one part per rank (see `docs/distribution.md`).
//!
//! The cells are split by a graph partitioner (METIS, recursive bisection, on the graph of
//! cells that share a facet); each rank then holds only its own cells, with their vertices
//! renumbered locally. The decomposition does not overlap: a vertex on an interface between
//! parts is held by every part that touches it and *owned* by the lowest-numbered of them,
//! so that the sums of a matrix-free operator over each part's cells, added across the
//! interfaces, give the global operator, and each global value has one owner for
//! reductions and output.

mod error;
mod local_part;
mod partition;

pub use error::DistError;
pub use local_part::{vertex_owners, LocalPart};
pub use partition::{partition_cells, CellPartition};
