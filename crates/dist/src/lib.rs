//! Domain decomposition of a mesh into one part per rank, and the distributed vectors,
//! exchanges and Krylov solves that run on it (see `docs/distribution.md`).
//!
//! The cells are split by a graph partitioner (METIS, recursive bisection, on the graph of
//! cells that share a facet); each rank then holds only its own cells, with their vertices
//! renumbered locally. The decomposition does not overlap: a node on an interface between
//! parts is held by every part that touches it and *owned* by the lowest-numbered of them,
//! so that the sums of a matrix-free operator over each part's cells, added across the
//! interfaces, give the global operator, and each global value has one owner for
//! reductions and output.
//!
//! Messages go through [`Communicator`]: [`SingleRank`] alone, or the system's MPI with
//! the `mpi` feature (`MpiComm`).

mod comm;
mod error;
mod interface;
mod krylov;
mod local_part;
mod partition;
mod scatter;
mod wave;

#[cfg(feature = "mpi")]
pub use comm::MpiComm;
pub use comm::{launched_in_parallel, Communicator, Payload, SingleRank};
pub use error::DistError;
pub use ferrofem_space::{SharedSumPlan, OWN_VALUE};
pub use interface::{node_keys, NodeInterface, NodeKey};
pub use krylov::DistSpace;
pub use local_part::{Decomposition, LocalPart};
pub use partition::{partition_cells, CellPartition};
pub use scatter::scatter_parts;
pub use wave::WavePartition;
