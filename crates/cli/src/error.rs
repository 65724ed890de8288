//! Errors the command line reports (one line each, exit code 1).

/// Everything a subcommand can fail with.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Mesh generation, import or validation.
    #[error(transparent)]
    Mesh(#[from] ferrofem_mesh::MeshError),
    /// Writing or reading an output/exchange file.
    #[error(transparent)]
    Io(#[from] ferrofem_io::IoError),
    /// A function space could not be built.
    #[error(transparent)]
    Space(#[from] ferrofem_space::SpaceError),
    /// Writing to standard output.
    #[error("writing output: {0}")]
    Stdout(#[from] std::io::Error),
    /// JSON serialisation.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The estimate of what the command needs exceeds the available memory (or an
    /// allocation failed): refused before allocating, with both numbers.
    #[error(transparent)]
    Memory(#[from] ferrofem_base::MemoryError),
    /// An invalid combination of options, explained.
    #[error("{0}")]
    Usage(String),
}
