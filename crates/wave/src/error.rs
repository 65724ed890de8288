//! Errors of the wave solver: bad input is refused before the time loop starts, with what
//! was wrong and where; a run that blows up stops with the step and the place.

use crate::wavelet::WaveletError;

/// What can go wrong setting up or running a wave simulation.
#[derive(Debug, thiserror::Error)]
pub enum WaveError {
    /// The spectral-element method here needs quadrilaterals or hexahedra.
    #[error("the wave solver needs quadrilaterals or hexahedra, the mesh has {0} cells")]
    NotTensorMesh(ferrofem_base::CellType),
    /// A polynomial order outside the supported range.
    #[error("order {0} is not supported: the wave solver takes orders 1 to 10")]
    Order(usize),
    /// A material value that is not physical, with the place where it was found.
    #[error("bad material at x = {x:?} (element {elem}): {reason}")]
    Material {
        /// Element index.
        elem: usize,
        /// The point.
        x: [f64; 3],
        /// What is wrong.
        reason: String,
    },
    /// Elements of a region that no material is given for.
    #[error("no material for region {region} (element {elem}); materials are given for {given}")]
    MissingMaterial {
        /// The region's tag or name.
        region: String,
        /// The first element of it.
        elem: usize,
        /// The regions that have one.
        given: String,
    },
    /// A boundary condition for a boundary the mesh does not have.
    #[error("unknown boundary '{name}'; the mesh has {available}")]
    UnknownBoundary {
        /// The name given.
        name: String,
        /// The boundaries the mesh has.
        available: String,
    },
    /// A source or receiver that is not inside the mesh.
    #[error("{what} '{name}' at {x:?} is outside the mesh")]
    Outside {
        /// "source" or "receiver".
        what: &'static str,
        /// Its name or index.
        name: String,
        /// Where it was asked for.
        x: Vec<f64>,
    },
    /// A time step above the stable bound.
    #[error("time step {dt:e} s is above the stable bound {bound:e} s of this mesh, order and medium (smallest GLL spacing {h_min:e} m at velocity {velocity} m/s); use dt = auto or a step at most the bound")]
    TimeStep {
        /// The step asked for.
        dt: f64,
        /// The bound.
        bound: f64,
        /// The GLL spacing that sets it.
        h_min: f64,
        /// The velocity there.
        velocity: f64,
    },
    /// The run became unstable.
    #[error("the run blew up at step {step} (t = {time:e} s): {what} at node {node}, x = {x:?}")]
    BlowUp {
        /// The step at which it was detected.
        step: usize,
        /// Its time.
        time: f64,
        /// What was seen (a non-finite value, energy growth).
        what: String,
        /// The node with the largest (or a non-finite) value.
        node: usize,
        /// Its position.
        x: [f64; 3],
    },
    /// Any other invalid input, described.
    #[error("{0}")]
    Invalid(String),
    /// A source time function could not be built or read.
    #[error(transparent)]
    Wavelet(#[from] WaveletError),
    /// A velocity model file could not be read or sampled.
    #[error(transparent)]
    VelocityModel(#[from] crate::VelocityModelError),
    /// The mesh could not be used.
    #[error(transparent)]
    Mesh(#[from] ferrofem_mesh::MeshError),
    /// The space could not be built.
    #[error(transparent)]
    Space(#[from] ferrofem_space::SpaceError),
    /// The geometry could not be evaluated (inverted cells).
    #[error(transparent)]
    Geometry(#[from] ferrofem_geometry::GeometryError),
    /// The stiffness operator could not be built.
    #[error(transparent)]
    Tensor(#[from] ferrofem_operator::tensor::TensorError),
    /// Boundary quadrature failed.
    #[error(transparent)]
    Form(#[from] ferrofem_operator::FormError),
    /// Output could not be written.
    #[error(transparent)]
    Io(#[from] ferrofem_io::IoError),
}
