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
    /// A CPU bake-off operator could not be built or applied.
    #[error(transparent)]
    Tensor(#[from] ferrofem_operator::tensor::TensorError),
    /// A solver failed (diverged, not converged, ...).
    #[error("solve failed: {0}")]
    Solver(#[from] ferrofem_solver::SolverError),
    /// The problem/solve/assemble pipeline or the backend choice failed (its GPU failures
    /// typed, with their kind).
    #[error(transparent)]
    Pipeline(#[from] ferrofem_driver::PipelineError),
    /// The GPU failed (compile, memory, launch, driver), with its kind; never turned into a
    /// CPU run.
    #[cfg(feature = "cuda")]
    #[error(transparent)]
    Gpu(#[from] ferrofem_cuda::GpuError),
    /// A distributed run's partitioning or messages failed.
    #[error(transparent)]
    Dist(#[from] ferrofem_dist::DistError),
    /// A part's exchange with the other ranks could not be set up.
    #[error(transparent)]
    Wave(#[from] ferrofem_wave::WaveError),
    /// An invalid combination of options, explained.
    #[error("{0}")]
    Usage(String),
    /// A benchmark's result failed its own check (the figures would be of a wrong result).
    #[error("check failed: {0}")]
    Check(String),
}
