//! Errors of sparsity construction, assembly and boundary-condition handling.

/// What can go wrong while building a pattern, assembling or applying boundary conditions.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AssemblyError {
    /// A constrained dof index is not a dof of the space.
    #[error("constrained dof {dof} is out of range: the space has {num_dofs} dofs")]
    DofOutOfRange {
        /// The offending index.
        dof: u64,
        /// Number of dofs of the space.
        num_dofs: usize,
    },
    /// The constrained dofs are not strictly increasing (unsorted or repeated).
    #[error(
        "constrained dofs must be sorted and unique: entry {position} ({dof}) does not exceed \
         the one before it"
    )]
    ConstraintsNotSorted {
        /// Position in the list of the first entry that is out of order.
        position: usize,
        /// Its value.
        dof: u32,
    },
    /// A vector has the wrong length (constrained values, linearisation state, solution).
    #[error("{what}: expected length {expected}, got {got}")]
    LengthMismatch {
        /// Which vector.
        what: &'static str,
        /// The length it must have.
        expected: usize,
        /// The length it has.
        got: usize,
    },
    /// An element matrix contains NaN or an infinity.
    #[error("element {element}: element matrix entry ({row}, {col}) is {value}")]
    NonFiniteElementMatrix {
        /// The element.
        element: usize,
        /// Local row of the first bad entry.
        row: usize,
        /// Local column of the first bad entry.
        col: usize,
        /// The entry, widened to `f64`.
        value: f64,
    },
    /// An element vector contains NaN or an infinity.
    #[error("element {element}: element vector entry {entry} is {value}")]
    NonFiniteElementVector {
        /// The element.
        element: usize,
        /// Local index of the first bad entry.
        entry: usize,
        /// The entry, widened to `f64`.
        value: f64,
    },
    /// A count exceeds what the 32-bit indices of the CSR arrays and maps can address.
    #[error("problem too large: {count} {what} exceed the 32-bit index range")]
    TooLarge {
        /// What was counted.
        what: &'static str,
        /// How many there are.
        count: usize,
    },
    /// A work buffer could not be allocated.
    #[error("out of memory allocating {bytes} bytes for {what}")]
    OutOfMemory {
        /// What the buffer was for.
        what: &'static str,
        /// Its size.
        bytes: usize,
    },
    /// The plan, pattern or matrices would not fit in the available memory (the message
    /// gives the estimate and what is available), or an allocation whose size could not be
    /// estimated failed.
    #[error(transparent)]
    Memory(#[from] ferrofem_base::MemoryError),
    /// The element-matrix provider uses a different restriction from the plan's.
    #[error("the element matrices' restriction differs from the one the plan was built for: {0}")]
    RestrictionMismatch(String),
    /// The boundary conditions were set up for a different dof map than the plan's.
    #[error("the boundary conditions' dof map differs from the one the plan was built for")]
    DofMapMismatch,
    /// A matrix handed in for reassembly does not have the plan's sparsity pattern.
    #[error("the matrix does not have the sparsity pattern of this assembly plan")]
    PatternMismatch,
    /// An element colouring is not a valid colouring of the restriction's elements.
    #[error("invalid element colouring: {0}")]
    InvalidColoring(String),
    /// A matrix built from others (identity rows) has an invalid structure.
    #[error(transparent)]
    Matrix(#[from] ferrofem_base::CsrError),
}
