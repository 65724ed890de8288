//! The sections and keys of a problem file, as TOML reads them. Every table refuses keys it
//! does not know; values that may be numbers or expressions (or lists of them) are kept
//! as TOML values with their place in the file and interpreted by [`super::values`].

use serde::Deserialize;
use std::collections::BTreeMap;
use toml::Spanned;

/// A value as written, with its byte range in the file.
pub(crate) type Raw = Spanned<toml::Value>;

/// The whole file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FileSpec {
    pub(crate) mesh: MeshSection,
    pub(crate) problem: ProblemSection,
    #[serde(default)]
    pub(crate) constants: BTreeMap<String, Spanned<f64>>,
    #[serde(default)]
    pub(crate) material: Vec<Spanned<MaterialSection>>,
    #[serde(default)]
    pub(crate) boundary: Vec<Spanned<BoundarySection>>,
    #[serde(default)]
    pub(crate) solver: SolverSection,
    #[serde(default)]
    pub(crate) output: OutputSection,
    #[serde(default)]
    pub(crate) probe: Vec<Spanned<ProbeSection>>,
    /// Waves: the time step and run length.
    pub(crate) time: Option<Spanned<TimeSection>>,
    /// Waves: point sources.
    #[serde(default)]
    pub(crate) source: Vec<Spanned<SourceSection>>,
    /// Waves: receivers.
    #[serde(default)]
    pub(crate) receiver: Vec<Spanned<ReceiverSection>>,
}

/// `[mesh]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MeshSection {
    /// A Gmsh file, relative to the problem file's directory.
    pub(crate) file: Option<Spanned<String>>,
    /// A box specification (`quad:32x32,max=2:1`).
    #[serde(rename = "box")]
    pub(crate) box_spec: Option<Spanned<String>>,
    /// Uniform refinement levels.
    pub(crate) refine: Option<Spanned<u8>>,
    /// `none`, `rcm` or `morton`.
    pub(crate) renumber: Option<Spanned<String>>,
    /// Polynomial order of the Lagrange space.
    pub(crate) order: Spanned<usize>,
}

/// `[problem]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProblemSection {
    /// `poisson`, `screened-poisson`, `nonlinear-diffusion` or `elasticity`.
    pub(crate) kind: Spanned<String>,
    /// The source (scalar) or body force (list), numbers or expressions.
    pub(crate) source: Option<Raw>,
    /// 2-D elasticity: `strain` (default) or `stress`.
    pub(crate) plane: Option<Spanned<String>>,
}

/// `[[material]]`: a region and its coefficients.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MaterialSection {
    /// A physical group of dimension d (name or numeric tag), or `all`.
    pub(crate) region: Raw,
    pub(crate) kappa: Option<Raw>,
    pub(crate) reaction: Option<Raw>,
    #[serde(rename = "E")]
    pub(crate) young: Option<Raw>,
    pub(crate) nu: Option<Raw>,
    pub(crate) lambda: Option<Raw>,
    pub(crate) mu: Option<Raw>,
    pub(crate) rho: Option<Raw>,
    /// Waves: the compressional (sound) speed.
    pub(crate) vp: Option<Raw>,
    /// Waves: the shear speed (elastic).
    pub(crate) vs: Option<Raw>,
    /// Waves: a velocity model file (SPECFEM's ASCII tomography format) giving rho, vp and
    /// vs, relative to the problem file's directory.
    pub(crate) model: Option<Spanned<String>>,
}

/// `[[boundary]]`: a boundary group and its condition.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BoundarySection {
    /// A physical group of dimension d − 1 (name or numeric tag).
    pub(crate) region: Raw,
    pub(crate) dirichlet: Option<Raw>,
    pub(crate) neumann: Option<Raw>,
    pub(crate) robin: Option<Raw>,
    /// Waves: a free surface.
    pub(crate) free: Option<Spanned<bool>>,
    /// Waves: a rigid wall.
    pub(crate) rigid: Option<Spanned<bool>>,
    /// Waves: an absorbing boundary (`"stacey"`).
    pub(crate) absorbing: Option<Spanned<String>>,
}

/// `[solver]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SolverSection {
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) rtol: Option<Spanned<f64>>,
    pub(crate) max_iter: Option<Spanned<i64>>,
    pub(crate) operator: Option<Spanned<String>>,
    pub(crate) preconditioner: Option<Spanned<String>>,
    pub(crate) backend: Option<Spanned<String>>,
    pub(crate) precision: Option<Spanned<String>>,
}

/// `[output]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OutputSection {
    /// VTU file of the solution and its derived fields.
    pub(crate) vtu: Option<Spanned<String>>,
    /// CSV file of the probes.
    pub(crate) probes: Option<Spanned<String>>,
    /// Waves: the seismograms' path prefix.
    pub(crate) seismograms: Option<Spanned<String>>,
    /// Waves: seismogram formats (`csv`, `su`, `segy`).
    pub(crate) formats: Option<Spanned<Vec<String>>>,
    /// Waves: a PVD time series of snapshots.
    pub(crate) snapshots: Option<Spanned<String>>,
    /// Waves: steps between snapshots.
    pub(crate) every: Option<Spanned<usize>>,
    /// Waves: PNG plots of the seismograms (and, in 2-D, of the snapshots).
    pub(crate) plots: Option<Spanned<bool>>,
}

/// `[time]` (waves).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimeSection {
    /// Physical duration (s).
    pub(crate) duration: Option<Spanned<f64>>,
    /// Number of steps.
    pub(crate) steps: Option<Spanned<i64>>,
    /// `"auto"` or a step (s).
    pub(crate) dt: Option<Raw>,
}

/// `[[source]]` (waves).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SourceSection {
    pub(crate) name: Option<String>,
    pub(crate) at: Spanned<Vec<f64>>,
    pub(crate) wavelet: Spanned<WaveletSection>,
    /// Acoustic monopole strength (default 1).
    pub(crate) amplitude: Option<Spanned<f64>>,
    /// Elastic point force.
    pub(crate) force: Option<Spanned<Vec<f64>>>,
    /// Elastic moment tensor: `[mxx, myy, mxy]` (2-D) or `[mxx, myy, mzz, mxy, mxz, myz]`.
    pub(crate) moment: Option<Spanned<Vec<f64>>>,
}

/// `wavelet = { kind = "ricker", f0 = 5e5 }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct WaveletSection {
    /// `ricker`, `gaussian`, `gaussian-derivative` or `file`.
    pub(crate) kind: Spanned<String>,
    pub(crate) f0: Option<Spanned<f64>>,
    pub(crate) delay: Option<Spanned<f64>>,
    /// A CSV of `t, value` (kind = "file").
    pub(crate) file: Option<Spanned<String>>,
}

/// `[[receiver]]` (waves): a point, a line or a grid of points.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReceiverSection {
    pub(crate) name: Option<String>,
    pub(crate) at: Option<Vec<f64>>,
    pub(crate) line: Option<LineSection>,
    pub(crate) grid: Option<GridSection>,
}

/// `grid = { from = [...], to = [...], count = [nx, ny] }`: the box between two corners.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GridSection {
    pub(crate) from: Vec<f64>,
    pub(crate) to: Vec<f64>,
    pub(crate) count: Vec<usize>,
}

/// `[[probe]]`: a point, or a line of points.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProbeSection {
    pub(crate) name: Option<String>,
    pub(crate) at: Option<Vec<f64>>,
    pub(crate) line: Option<LineSection>,
}

/// `line = { from = [...], to = [...], count = N }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineSection {
    pub(crate) from: Vec<f64>,
    pub(crate) to: Vec<f64>,
    pub(crate) count: usize,
}
