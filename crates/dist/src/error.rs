//! What can go wrong decomposing a mesh.

use ferrofem_mesh::MeshError;

/// Errors of partitioning and of extracting a rank's part.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// Zero parts were asked for.
    #[error("a partition needs at least one part")]
    NoParts,
    /// More parts than cells: some rank would hold nothing.
    #[error("{nparts} parts asked for a mesh of {ncells} cells: every part needs a cell")]
    MorePartsThanCells {
        /// Parts asked for.
        nparts: usize,
        /// Cells of the mesh.
        ncells: usize,
    },
    /// The mesh is too large for the partitioner's 32-bit indices.
    #[error("{what} ({count}) exceeds the partitioner's 32-bit indices")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
        /// Its count.
        count: usize,
    },
    /// The partitioner failed.
    #[error("METIS failed: {0}")]
    Metis(String),
    /// The partitioner left a part without cells.
    #[error("the partition left part {part} of {nparts} without cells")]
    EmptyPart {
        /// The empty part.
        part: usize,
        /// Parts asked for.
        nparts: usize,
    },
    /// A part array that does not match the mesh or names a part out of range.
    #[error("invalid partition: {0}")]
    InvalidPartition(String),
    /// A rank outside the partition.
    #[error("rank {rank} is outside a partition of {nparts} parts")]
    RankOutOfRange {
        /// The rank asked for.
        rank: usize,
        /// Parts of the partition.
        nparts: usize,
    },
    /// A part used on a rank it was not made for.
    #[error("part {part} of {nparts} used on rank {rank} of {size}")]
    PartNotOnItsRank {
        /// The part's rank.
        part: usize,
        /// The parts of its partition.
        nparts: usize,
        /// The rank using it.
        rank: usize,
        /// The ranks.
        size: usize,
    },
    /// A message between ranks could not be sent as asked.
    #[error("exchange between ranks: {0}")]
    Exchange(String),
    /// A dof index beyond a local vector.
    #[error("dof {dof} is out of range (the local vectors hold {len})")]
    DofOutOfRange {
        /// The dof given.
        dof: u32,
        /// The local vector length.
        len: usize,
    },
    /// The mesh's topology or a part's mesh could not be built.
    #[error(transparent)]
    Mesh(#[from] MeshError),
}
