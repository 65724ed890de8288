//! Sum-factorised tensor-product operators on quadrilaterals and hexahedra with pointwise
//! physics ([`TensorPhysics`]): the CEED bake-off problems BP1 (mass), BP3 (diffusion,
//! Gauss quadrature) and BP3.5 (diffusion collocated at the GLL nodes, CEED BP5) of
//! Świrydowicz et al. (2019), scalar or with several components, as the CPU baseline and
//! twin of the GPU kernels; the spectral-element stiffness (acoustic: diffusion with
//! `1/ρ`; isotropic elastic) and lumped mass; coefficients per element or point, and
//! physics of one's own.
//!
//! One application is the pipeline of the design document: gather (restriction), the
//! element kernel (interpolate with `B`, differentiate with `D̂` along each axis as 1-D
//! contractions, apply the geometric factors pointwise, then the transposed contractions)
//! and the race-free scatter-add. Kernels work on batches of [`LANES`] elements laid out
//! `[node][lane]`, so their inner loops vectorise across elements. The geometric factors
//! are stored or recomputed on the fly ([`GeometrySource`], as on the GPU); stored ones are
//! laid out in the kernels' lanes or `[elem][factor][point]`, the layout the GPU kernels
//! read ([`FactorLayout`]). [`model`] gives the bytes and flops of an application,
//! [`bandwidth`] the copy bandwidth to compare with.

mod accumulate;
pub mod bandwidth;
mod basis;
mod diagonal;
mod error;
mod forms;
mod geometry;
mod kernel;
mod lane_runs;
mod lanes;
pub mod model;
mod operator;
mod physics;

pub use accumulate::{Accumulation, BlockColoring};
pub use bandwidth::measure_copy_bandwidth;
pub use basis::{TensorBasis, MAX_QUADRATURE_POINTS};
pub use error::TensorError;
/// Re-exported: [`TensorOptions::geometry`] and [`ModelSpec::geometry`] take it, as the GPU
/// backend's operators do.
pub use ferrofem_geometry::GeometrySource;
pub use forms::{Diffusion, Elastic, Mass};
pub use geometry::{FactorLayout, TensorGeometry};
pub use kernel::SimdLevel;
pub use lane_runs::lane_numbering;
pub use lanes::{Lane, LANES};
pub use model::{FormModel, IndexTraffic, Model, ModelSpec, VectorTraffic};
pub use operator::{
    default_block_len, Form, PhysicsOptions, Quadrature, TensorKind, TensorOperator, TensorOptions,
    MAX_DEFAULT_BLOCK_LEN,
};
pub use physics::{Coefficient, CompactData, PointBatch, PointGeometry, TensorPhysics};
