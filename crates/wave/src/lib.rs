//! Explicit spectral-element wave propagation (Carrascal-Manzanares et al. 2017): the
//! acoustic (pressure) and isotropic elastic (displacement) wave equations on
//! quadrilaterals and hexahedra with Gauss–Lobatto–Legendre nodes, a lumped (diagonal)
//! mass and the second-order central difference (leapfrog) in time.
//!
//! The stiffness is the tensor-product operator of `ferrofem-operator` with wave physics at
//! the GLL points (diffusion with `1/ρ` for pressure, isotropic elasticity for
//! displacement); the mass is the same operator's collocated mass applied to ones.
//! [`Simulation`] holds the time loop; [`WaveSetup`] says what to simulate: medium
//! ([`Medium`]), boundary conditions ([`BoundarySpec`]), sources ([`Source`]) and
//! receivers ([`Receiver`]) anywhere in the mesh, and the time step ([`TimeSpec`], the
//! stable one by default, [`cfl`]). A medium may be sampled from a regular-grid velocity
//! model file ([`VelocityModel`], SPECFEM's tomography format).

#![warn(missing_docs)]

pub mod analytic;
mod boundary;
pub mod cfl;
pub mod distribution;
mod error;
mod mass;
mod medium;
mod points;
mod simulation;
mod velocity_model;
pub mod wavelet;

pub use boundary::{setup_boundaries, BoundaryCondition, BoundarySetup, BoundarySpec};
pub use distribution::{NodeExchange, WavePart};
pub use error::WaveError;
pub use medium::{Material, Medium, Region};
pub use points::{Receiver, Source, SourceKind};
pub use simulation::{
    blow_up_error, AbsorbingNode, BlowUpWatch, Progress, ReceiverStencil, RunLength, Simulation,
    SourceLoad, TimeSpec, WaveSetup, MAX_ORDER,
};
pub use velocity_model::{VelocityModel, VelocityModelError, GRID_TOLERANCE, OUTSIDE_TOLERANCE};
pub use wavelet::Wavelet;

/// Which wave equation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WaveKind {
    /// Pressure waves in a fluid: `(1/κ) p_tt = ∇·(ρ⁻¹ ∇p) + f`.
    Acoustic,
    /// Displacement waves in an isotropic solid: `ρ u_tt = ∇·σ(u) + f`.
    Elastic,
}

impl WaveKind {
    /// Field components in dimension `dim`.
    pub fn components(self, dim: usize) -> usize {
        match self {
            WaveKind::Acoustic => 1,
            WaveKind::Elastic => dim,
        }
    }
    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            WaveKind::Acoustic => "acoustic",
            WaveKind::Elastic => "elastic",
        }
    }
}
