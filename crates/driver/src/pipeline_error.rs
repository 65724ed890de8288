//! The one error type of the problem/solve/assemble pipeline: every layer's error (the GPU's
//! included, typed), plus the option combinations the pipeline itself refuses and the cases
//! the GPU has no path for. Each displays as one line (a kernel's compiler log aside).

/// Everything building, solving or exporting a problem can fail with.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The mesh is invalid (inverted or degenerate cells, bad tags, ...).
    #[error(transparent)]
    Mesh(#[from] ferrofem_mesh::MeshError),
    /// The function space could not be built (e.g. an order the cell type lacks).
    #[error(transparent)]
    Space(#[from] ferrofem_space::SpaceError),
    /// Geometry queries failed (point location).
    #[error(transparent)]
    Geometry(#[from] ferrofem_geometry::GeometryError),
    /// The physics or its manufactured solution rejected a parameter.
    #[error(transparent)]
    Physics(#[from] ferrofem_physics::PhysicsError),
    /// Operator set-up, boundary terms or error norms failed.
    #[error(transparent)]
    Form(#[from] ferrofem_operator::FormError),
    /// Global assembly failed.
    #[error("assembly: {0}")]
    Assembly(#[from] ferrofem_assembly::AssemblyError),
    /// A linear or nonlinear solver failed (diverged, NaN, not converged, singular, ...).
    #[error("solve failed: {0}")]
    Solver(#[from] ferrofem_solver::SolverError),
    /// Writing an output file failed.
    #[error(transparent)]
    Io(#[from] ferrofem_io::IoError),
    /// The estimate of what a step needs exceeds the available memory (or an allocation
    /// failed): refused before allocating, with both numbers.
    #[error(transparent)]
    Memory(#[from] ferrofem_base::MemoryError),
    /// A boundary named by `--dirichlet` that the mesh does not have.
    #[error("unknown boundary '{given}' for --dirichlet; {available}")]
    UnknownBoundary {
        /// The name or ID given.
        given: String,
        /// The boundaries the mesh does have, in words.
        available: String,
    },
    /// The built-in manufactured solution (or its gradient) exceeds 1e150 in magnitude (or
    /// is not finite) at a node of the mesh, so norms of it would overflow: it is given in
    /// physical coordinates for domains of order one, and grows like `exp(z/2)` in 3-D.
    #[error(
        "the manufactured solution overflows on this mesh: it (or its gradient) is {value:e} at the node at ({at}), beyond 1e150; the built-in problems are meant for domains of order one (their solution grows like exp(z/2) in 3-D)"
    )]
    UnrepresentableSolution {
        /// The offending value.
        value: f64,
        /// The node's coordinates, in words.
        at: String,
    },
    /// A problem file that is not valid, located (file, line, column).
    #[error(transparent)]
    File(#[from] crate::file::FileError),
    /// The wave solver refused its input or stopped (a blow-up).
    #[error(transparent)]
    Wave(#[from] ferrofem_wave::WaveError),
    /// Partitioning or exchanging between ranks failed.
    #[error("distributed run: {0}")]
    Distributed(#[from] ferrofem_dist::DistError),
    /// An output that cannot be written, or inconsistent output settings.
    #[error("{0}")]
    Output(String),
    /// A combination of options the pipeline does not support, explained.
    #[error("{0}")]
    Unsupported(String),
    /// The case has no GPU path (a solver, cell type, problem or coefficient the GPU solve
    /// does not cover, or a build without the GPU backend), explained: `--backend auto`
    /// runs such a case on the CPU, `--backend cuda` reports it.
    #[error("{0}")]
    NoGpuPath(String),
    /// The GPU failed: a kernel did not compile, the device ran out of memory, a launch or
    /// driver call failed, or no GPU is usable; the [`GpuError`](ferrofem_cuda::GpuError)
    /// says which.
    #[cfg(feature = "cuda")]
    #[error("GPU: {0}")]
    Gpu(#[from] ferrofem_cuda::GpuError),
}
