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
}

/// `[solver]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SolverSection {
    pub(crate) kind: Option<Spanned<String>>,
    pub(crate) rtol: Option<Spanned<f64>>,
    pub(crate) max_iter: Option<Spanned<i64>>,
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
