//! Problem files: a user's own problem in TOML (`ferrofem solve problem.toml`; wave
//! problems, `ferrofem wave problem.toml`, are described in [`WaveDefinition`]'s module).
//!
//! ```toml
//! [mesh]
//! file = "plate.msh"            # relative to this file; or box = "quad:32x32,max=2:1"
//! refine = 0
//! renumber = "rcm"              # none | rcm | morton
//! order = 2
//!
//! [problem]
//! kind = "elasticity"           # poisson | screened-poisson | nonlinear-diffusion | elasticity
//! plane = "stress"              # 2-D elasticity: strain (default) | stress
//! source = ["0", "-9.81 * rho"] # expressions of x, y, z and the region's constant parameters
//!
//! [constants]                   # numbers every expression may use
//! S = 1e6
//!
//! [[material]]                  # a physical group of dimension d (name or tag), or "all"
//! region = "steel"
//! E = 210e9                     # or lambda, mu; poisson kinds: kappa (and reaction)
//! nu = 0.3
//!
//! [[boundary]]                  # a physical group of dimension d − 1 (box faces: xmin, ...)
//! region = "clamped"
//! dirichlet = [0, 0]            # or { x = 0 } for some components only
//! [[boundary]]
//! region = "load"
//! neumann = ["S * nx", "0"]     # flux κ∂u/∂n or traction σn; may use nx, ny, nz
//! # robin = { h = 10, u_inf = 293 }   (scalar kinds: κ∂u/∂n = h (u_inf − u))
//!
//! [solver]
//! kind = "pcg"                  # pcg | cg | gmres | direct
//! operator = "matrix-free"      # or "assembled" (the Krylov solvers on the assembled matrix)
//! preconditioner = "jacobi"     # or "chebyshev" (PCG and GMRES)
//! rtol = 1e-10
//! backend = "auto"              # auto | cpu | cuda
//! precision = "f64"
//!
//! [output]
//! vtu = "out/u.vtu"
//! probes = "out/probes.csv"
//!
//! [[probe]]
//! at = [0.0, 0.01]              # or line = { from = [..], to = [..], count = 50 }
//! ```
//!
//! Every key is checked: an unknown one, a value of the wrong type, an expression that
//! does not parse or names an unknown variable, a region the mesh lacks, a boundary
//! condition on a group of the wrong dimension, a cell without a material, a parameter
//! out of range — each is an error naming the file, line and column, before any work.
//! [`ProblemFile::read`] parses and checks what needs no mesh; [`ProblemFile::setup`]
//! loads the mesh and builds the [`Problem`](crate::Problem).

mod conditions;
mod definition;
mod schema;
mod values;
mod wave;

pub use conditions::{BoundaryCondition, BoundarySpec, MaterialSpec, ProbeSpec, RegionRef};
pub use definition::{FileCase, FileDefinition, Outputs};
pub use wave::WaveDefinition;

use crate::pipeline_error::PipelineError;
use schema::FileSpec;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// An error located in a problem file.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct FileError {
    /// The file, as given.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (characters).
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// A problem file read and parsed (not yet interpreted).
#[derive(Debug)]
pub struct ProblemFile {
    path: PathBuf,
    text: String,
    spec: FileSpec,
}

impl ProblemFile {
    /// Reads and parses `path`; syntax errors, unknown keys and values of the wrong type
    /// are [`FileError`]s.
    pub fn read(path: &Path) -> Result<ProblemFile, PipelineError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            PipelineError::File(FileError {
                path: path.display().to_string(),
                line: 0,
                column: 0,
                message: format!("cannot read the problem file: {e}"),
            })
        })?;
        ProblemFile::parse(path, text)
    }

    /// Parses `text` as the content of the file `path` (which locates relative paths and
    /// names the file in errors).
    pub fn parse(path: &Path, text: String) -> Result<ProblemFile, PipelineError> {
        match toml::from_str::<FileSpec>(&text) {
            Ok(spec) => Ok(ProblemFile {
                path: path.to_path_buf(),
                text,
                spec,
            }),
            Err(e) => {
                let span = e.span().unwrap_or(0..0);
                let message = e.message().trim().to_string();
                Err(locate(path, &text, span.start, message).into())
            }
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// `relative` resolved against the file's directory (absolute paths unchanged).
    pub(crate) fn resolve_path(&self, relative: &str) -> PathBuf {
        let p = Path::new(relative);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path.parent().unwrap_or_else(|| Path::new("")).join(p)
        }
    }

    /// An error at byte `offset` of the file.
    pub(crate) fn error_at(&self, offset: usize, message: impl Into<String>) -> PipelineError {
        locate(&self.path, &self.text, offset, message.into()).into()
    }

    /// An error at the start of `span`.
    pub(crate) fn error(&self, span: &Range<usize>, message: impl Into<String>) -> PipelineError {
        self.error_at(span.start, message)
    }

    /// The raw text of `span`.
    pub(crate) fn text(&self, span: &Range<usize>) -> &str {
        self.text.get(span.clone()).unwrap_or("")
    }
}

/// The [`FileError`] at byte `offset` of `text`.
fn locate(path: &Path, text: &str, offset: usize, message: String) -> FileError {
    let offset = offset.min(text.len());
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    FileError {
        path: path.display().to_string(),
        line,
        column,
        message,
    }
}

#[cfg(test)]
mod tests;
