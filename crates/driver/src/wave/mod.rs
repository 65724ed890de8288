//! The wave pipeline: a wave problem (from a problem file or set up in code) run by the
//! spectral-element solver of `ferrofem-wave`, with its outputs: seismograms (CSV, Seismic
//! Unix, SEG-Y), snapshots (VTU/PVD for ParaView) and PNG plots, every output path checked
//! before the time loop starts.

mod outputs;
mod ranks;
mod raster;
mod run;
mod stepper;

pub use outputs::{SeismogramFormat, WaveOutputs};
pub use ranks::run_wave_on_ranks;
pub use raster::Raster2d;
pub use run::{run_wave, WaveReport};
pub use stepper::WaveReal;

use crate::backend::BackendArg;
use crate::mesh_input::LoadedMesh;
use crate::settings::Precision;
use ferrofem_wave::WaveSetup;

/// A wave problem ready to run: the mesh, what to simulate, and how.
pub struct WaveCase {
    /// The loaded mesh.
    pub mesh: LoadedMesh,
    /// Medium, boundaries, sources, receivers, time.
    pub setup: WaveSetup,
    /// Field precision.
    pub precision: Precision,
    /// Where to run.
    pub backend: BackendArg,
    /// Output files.
    pub outputs: WaveOutputs,
}
