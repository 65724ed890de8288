//! Regular-grid velocity models: `vp`, `vs` and `ρ` given at the points of a grid evenly
//! spaced along each axis, read from SPECFEM's ASCII tomography file and sampled anywhere
//! inside the grid by bilinear (2-D) or trilinear (3-D) interpolation.
//!
//! The file (SPECFEM2D's `read_tomo_file`, SPECFEM3D's tomography reader):
//!
//! ```text
//! # comment lines, blank lines and trailing `# comments` are skipped
//! ORIG_X ORIG_Z END_X END_Z                      3-D: ORIG_X ORIG_Y ORIG_Z END_X END_Y END_Z
//! SPACING_X SPACING_Z                            3-D: SPACING_X SPACING_Y SPACING_Z
//! NX NZ                                          3-D: NX NY NZ
//! VP_MIN VP_MAX VS_MIN VS_MAX RHO_MIN RHO_MAX
//! x z vp vs rho [more columns, e.g. Qp Qs]       3-D: x y z vp vs rho [...]
//! ...                                            NX·NZ (NX·NY·NZ) data lines, x varying
//!                                                fastest, then y, then z
//! ```
//!
//! The dimension is read from the first line (four or six values). In 2-D the file's
//! second coordinate (SPECFEM's vertical `z`) is the mesh's `y`. The grid is
//! `ORIG + i·SPACING`, `i = 0 .. N − 1` along each axis; `END` must equal
//! `ORIG + (N − 1)·SPACING` and each data line's coordinates those of its grid point, both
//! within [`GRID_TOLERANCE`] of the spacing (coordinates written with few digits pass, a
//! line missing or out of order does not). The min/max line is read and checked to be
//! numbers but not used (SPECFEM2D does not use it either). Columns after `rho` (SPECFEM's
//! optional `Qp Qs`) are ignored. Fortran's `1.5D3` exponents are accepted.
//!
//! Unlike SPECFEM, which extends the border values outside the grid, a point outside the
//! grid's box is an error ([`VelocityModelError::Outside`]): a model that does not cover
//! the mesh is refused rather than silently extended.

use crate::Material;
use std::fmt;
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// Data-line coordinates and header ends may differ from the grid's by this fraction of
/// the spacing: enough for coordinates printed with few digits, far below the one-spacing
/// shift of a missing or misordered line.
pub const GRID_TOLERANCE: f64 = 1e-2;

/// A point at most this fraction of the spacing outside the grid's box is taken as on its
/// face (rounding of mesh coordinates on a face the grid shares with the mesh).
pub const OUTSIDE_TOLERANCE: f64 = 1e-6;

/// What can go wrong reading a velocity model file or sampling it. Errors in the file name
/// it and the 1-based line.
#[derive(Debug, thiserror::Error)]
pub enum VelocityModelError {
    /// The file could not be read.
    #[error("{}: cannot read the velocity model: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A header line with the wrong number of values, or a file that ends in its header.
    #[error("{}:{line}: {reason}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// The line (for a file that ends early, its last line, at least 1).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A value that is not a number (or a point count that is not a whole number).
    #[error("{}:{line}: {what}: `{token}` is not {expected}", path.display())]
    Number {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// Which value (`ORIG_X`, `vp`, ...).
        what: String,
        /// The text found.
        token: String,
        /// What was expected: "a number" or "a whole number".
        expected: &'static str,
    },
    /// A value that is NaN or infinite.
    #[error("{}:{line}: {what} = {value} is not finite", path.display())]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// Which value.
        what: String,
        /// The value.
        value: f64,
    },
    /// A grid spacing that is zero or negative.
    #[error("{}:{line}: SPACING_{axis} = {value} must be positive", path.display())]
    Spacing {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The axis as the file names it (`X`, `Y`, `Z`).
        axis: &'static str,
        /// The spacing.
        value: f64,
    },
    /// Fewer than two grid points along an axis.
    #[error(
        "{}:{line}: N{axis} = {count}: interpolation needs at least 2 grid points along each axis",
        path.display()
    )]
    TooFewPoints {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The axis as the file names it.
        axis: &'static str,
        /// The count given.
        count: usize,
    },
    /// A header end that is not `ORIG + (N − 1)·SPACING`.
    #[error(
        "{}:{line}: END_{axis} = {end} does not match ORIG_{axis} + (N{axis} − 1)·SPACING_{axis} = {expected}",
        path.display()
    )]
    Extent {
        /// The file.
        path: PathBuf,
        /// The line of the extent.
        line: usize,
        /// The axis as the file names it.
        axis: &'static str,
        /// The end given.
        end: f64,
        /// The end that origin, count and spacing give.
        expected: f64,
    },
    /// A data line with fewer values than coordinates, `vp`, `vs` and `rho`.
    #[error("{}:{line}: a data line needs {expected} values ({columns}), found {found}", path.display())]
    Columns {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The values needed.
        expected: usize,
        /// Their names.
        columns: &'static str,
        /// The values found.
        found: usize,
    },
    /// A data line whose coordinates are not those of its grid point.
    #[error(
        "{}:{line}: data line {index} is for the grid point {} but gives {} (x varies fastest, then {})",
        path.display(), coords(expected), coords(found), if expected.len() == 2 { "z" } else { "y, then z" }
    )]
    Coordinates {
        /// The file.
        path: PathBuf,
        /// The line.
        line: usize,
        /// The data line's number among the data lines (1-based).
        index: usize,
        /// The grid point's coordinates (the file's axes).
        expected: Vec<f64>,
        /// The coordinates on the line.
        found: Vec<f64>,
    },
    /// Fewer data lines than grid points.
    #[error(
        "{}:{line}: the file ends after {found} data lines; the grid has {expected} points",
        path.display()
    )]
    TooFewLines {
        /// The file.
        path: PathBuf,
        /// The file's last line (at least 1).
        line: usize,
        /// Data lines found.
        found: usize,
        /// Grid points.
        expected: usize,
    },
    /// More data lines than grid points.
    #[error("{}:{line}: more data lines than the grid's {expected} points", path.display())]
    TooManyLines {
        /// The file.
        path: PathBuf,
        /// The first line too many.
        line: usize,
        /// Grid points.
        expected: usize,
    },
    /// A point outside the grid's box.
    #[error(
        "the point {} is outside the velocity model {} (its grid covers {extent})",
        coords(point), path.display()
    )]
    Outside {
        /// The file.
        path: PathBuf,
        /// The point (mesh coordinates, `dim` of them).
        point: Vec<f64>,
        /// The grid's box, e.g. `x ∈ [0, 1], y ∈ [0, 2]`.
        extent: String,
    },
}

/// `(a, b, c)`.
fn coords(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// `vp`, `vs` and `ρ` on a regular grid, sampled by multilinear interpolation.
#[derive(Clone)]
pub struct VelocityModel {
    /// The file (for messages).
    path: PathBuf,
    /// 2 or 3.
    dim: usize,
    /// The first grid point (mesh axes; 0 beyond `dim`).
    origin: [f64; 3],
    /// The spacing along each axis (1 beyond `dim`).
    spacing: [f64; 3],
    /// Grid points along each axis (1 beyond `dim`).
    points: [usize; 3],
    /// `[vp, vs, rho]` at point `(i, j, k)`: index `i + nx (j + ny k)`.
    values: Vec<[f64; 3]>,
}

impl fmt::Debug for VelocityModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VelocityModel")
            .field("path", &self.path)
            .field("dim", &self.dim)
            .field("points", &&self.points[..self.dim])
            .field("bounds", &self.bounds())
            .finish()
    }
}

/// The file's names of the axes: SPECFEM2D's `x, z` in 2-D.
fn axis_names(dim: usize) -> &'static [&'static str] {
    if dim == 2 {
        &["X", "Z"]
    } else {
        &["X", "Y", "Z"]
    }
}

/// Lines of the file with their content: comments, blank lines and line ends removed.
struct Lines<'p, R> {
    input: R,
    path: &'p Path,
    /// The number of the last line read.
    line: usize,
    raw: Vec<u8>,
    /// The content of the current line.
    content: String,
}

impl<R: BufRead> Lines<'_, R> {
    /// Moves to the next line with content and returns its number; `None` at the end.
    fn next(&mut self) -> Result<Option<usize>, VelocityModelError> {
        loop {
            self.raw.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.raw)
                .map_err(|source| VelocityModelError::Read {
                    path: self.path.to_path_buf(),
                    source,
                })?;
            if n == 0 {
                return Ok(None);
            }
            self.line += 1;
            let text = String::from_utf8_lossy(&self.raw);
            let text = text.split('#').next().unwrap_or("").trim();
            if !text.is_empty() {
                self.content.clear();
                self.content.push_str(text);
                return Ok(Some(self.line));
            }
        }
    }

    /// The next line with content, which the header needs (`what` names it).
    fn header(&mut self, what: &str) -> Result<usize, VelocityModelError> {
        self.next()?.ok_or_else(|| VelocityModelError::Header {
            path: self.path.to_path_buf(),
            line: self.line.max(1),
            reason: format!("the file ends before the header's {what}"),
        })
    }

    /// The current line's values, which must be `count` (`what` says which they are).
    fn values(
        &self,
        line: usize,
        count: usize,
        what: &str,
    ) -> Result<Vec<&str>, VelocityModelError> {
        let v: Vec<&str> = self.content.split_whitespace().collect();
        if v.len() != count {
            return Err(VelocityModelError::Header {
                path: self.path.to_path_buf(),
                line,
                reason: format!("expected {count} values ({what}), found {}", v.len()),
            });
        }
        Ok(v)
    }

    /// `token` as a finite number.
    fn number(&self, line: usize, token: &str, what: &str) -> Result<f64, VelocityModelError> {
        let value = token
            .parse::<f64>()
            .ok()
            .or_else(|| {
                // Fortran's double-precision exponent: 1.5D3
                token
                    .contains(['d', 'D'])
                    .then(|| token.replace(['d', 'D'], "e").parse::<f64>().ok())
                    .flatten()
            })
            .ok_or_else(|| VelocityModelError::Number {
                path: self.path.to_path_buf(),
                line,
                what: what.to_string(),
                token: token.to_string(),
                expected: "a number",
            })?;
        if !value.is_finite() {
            return Err(VelocityModelError::NonFinite {
                path: self.path.to_path_buf(),
                line,
                what: what.to_string(),
                value,
            });
        }
        Ok(value)
    }
}

impl VelocityModel {
    /// Reads the model file at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<VelocityModel, VelocityModelError> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| VelocityModelError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_reader(std::io::BufReader::new(file), path)
    }

    /// Parses `text` as the content of a model file; `path` names it in errors.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<VelocityModel, VelocityModelError> {
        Self::from_reader(text.as_bytes(), path.as_ref())
    }

    fn from_reader(input: impl BufRead, path: &Path) -> Result<VelocityModel, VelocityModelError> {
        let mut lines = Lines {
            input,
            path,
            line: 0,
            raw: Vec::new(),
            content: String::new(),
        };
        let p = || path.to_path_buf();

        // extent: its number of values gives the dimension
        let extent_line = lines.header("extent (ORIG_X ORIG_Z END_X END_Z)")?;
        let n = lines.content.split_whitespace().count();
        let dim = match n {
            4 => 2,
            6 => 3,
            _ => {
                return Err(VelocityModelError::Header {
                    path: p(),
                    line: extent_line,
                    reason: format!(
                        "the first line is the grid's extent, ORIG_X ORIG_Z END_X END_Z (2-D) or \
                         ORIG_X ORIG_Y ORIG_Z END_X END_Y END_Z (3-D); found {n} values"
                    ),
                })
            }
        };
        let axes = axis_names(dim);
        let joined = |prefix: &str| -> String {
            axes.iter()
                .map(|a| format!("{prefix}{a}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut origin = [0.0; 3];
        let mut end = [0.0; 3];
        {
            let v: Vec<&str> = lines.content.split_whitespace().collect();
            for (a, &name) in axes.iter().enumerate() {
                origin[a] = lines.number(extent_line, v[a], &format!("ORIG_{name}"))?;
                end[a] = lines.number(extent_line, v[dim + a], &format!("END_{name}"))?;
            }
        }

        let spacing_line = lines.header(&format!("spacing ({})", joined("SPACING_")))?;
        let mut spacing = [1.0; 3];
        {
            let v = lines.values(spacing_line, dim, &joined("SPACING_"))?;
            for (a, &name) in axes.iter().enumerate() {
                spacing[a] = lines.number(spacing_line, v[a], &format!("SPACING_{name}"))?;
                if spacing[a] <= 0.0 {
                    return Err(VelocityModelError::Spacing {
                        path: p(),
                        line: spacing_line,
                        axis: name,
                        value: spacing[a],
                    });
                }
            }
        }

        let count_line = lines.header(&format!("point counts ({})", joined("N")))?;
        let mut points = [1usize; 3];
        {
            let v = lines.values(count_line, dim, &joined("N"))?;
            for (a, &name) in axes.iter().enumerate() {
                points[a] = v[a]
                    .parse::<usize>()
                    .map_err(|_| VelocityModelError::Number {
                        path: p(),
                        line: count_line,
                        what: format!("N{name}"),
                        token: v[a].to_string(),
                        expected: "a whole number",
                    })?;
                if points[a] < 2 {
                    return Err(VelocityModelError::TooFewPoints {
                        path: p(),
                        line: count_line,
                        axis: name,
                        count: points[a],
                    });
                }
            }
        }
        for (a, &name) in axes.iter().enumerate() {
            let expected = origin[a] + (points[a] - 1) as f64 * spacing[a];
            if (end[a] - expected).abs() > GRID_TOLERANCE * spacing[a] {
                return Err(VelocityModelError::Extent {
                    path: p(),
                    line: extent_line,
                    axis: name,
                    end: end[a],
                    expected,
                });
            }
        }
        let total = points[..dim]
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .filter(|&t| t <= isize::MAX as usize / std::mem::size_of::<[f64; 3]>())
            .ok_or_else(|| VelocityModelError::Header {
                path: p(),
                line: count_line,
                reason: "too many grid points".into(),
            })?;

        let stats = "VP_MIN VP_MAX VS_MIN VS_MAX RHO_MIN RHO_MAX";
        let stats_line = lines.header(&format!("value range ({stats})"))?;
        {
            let v = lines.values(stats_line, 6, stats)?;
            for (token, name) in v.iter().zip(stats.split(' ')) {
                lines.number(stats_line, token, name)?;
            }
        }

        // data lines, x fastest, then y, then z
        let columns: &'static str = if dim == 2 {
            "x z vp vs rho"
        } else {
            "x y z vp vs rho"
        };
        let names: Vec<&str> = columns.split(' ').collect();
        let mut values = Vec::with_capacity(total.min(1 << 20));
        for r in 0..total {
            let Some(line) = lines.next()? else {
                return Err(VelocityModelError::TooFewLines {
                    path: p(),
                    line: lines.line.max(1),
                    found: r,
                    expected: total,
                });
            };
            let v: Vec<&str> = lines.content.split_whitespace().collect();
            if v.len() < dim + 3 {
                return Err(VelocityModelError::Columns {
                    path: p(),
                    line,
                    expected: dim + 3,
                    columns,
                    found: v.len(),
                });
            }
            let mut row = [0.0; 6];
            for c in 0..dim + 3 {
                row[c] = lines.number(line, v[c], names[c])?;
            }
            let mut rest = r;
            let expected: Vec<f64> = (0..dim)
                .map(|a| {
                    let i = rest % points[a];
                    rest /= points[a];
                    origin[a] + i as f64 * spacing[a]
                })
                .collect();
            if (0..dim).any(|a| (row[a] - expected[a]).abs() > GRID_TOLERANCE * spacing[a]) {
                return Err(VelocityModelError::Coordinates {
                    path: p(),
                    line,
                    index: r + 1,
                    expected,
                    found: row[..dim].to_vec(),
                });
            }
            values.push([row[dim], row[dim + 1], row[dim + 2]]);
        }
        if let Some(line) = lines.next()? {
            return Err(VelocityModelError::TooManyLines {
                path: p(),
                line,
                expected: total,
            });
        }
        Ok(VelocityModel {
            path: path.to_path_buf(),
            dim,
            origin,
            spacing,
            points,
            values,
        })
    }

    /// The file the model was read from (as given).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// 2 or 3.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The grid's box: its lowest and highest corners (mesh axes; 0 beyond the dimension).
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let mut lo = [0.0; 3];
        let mut hi = [0.0; 3];
        for a in 0..self.dim {
            lo[a] = self.origin[a];
            hi[a] = self.origin[a] + (self.points[a] - 1) as f64 * self.spacing[a];
        }
        (lo, hi)
    }

    /// The material at `x` (mesh coordinates; in 2-D `x[2]` is not used) by bilinear
    /// (trilinear) interpolation between the grid points around it. A point outside the
    /// grid's box, beyond [`OUTSIDE_TOLERANCE`] of the spacing, is an error.
    ///
    /// `vs` is the file's column as it is: acoustic problems do not use it.
    pub fn at(&self, x: &[f64; 3]) -> Result<Material, VelocityModelError> {
        let mut cell = [0usize; 3];
        let mut frac = [0.0f64; 3];
        for a in 0..self.dim {
            let last = (self.points[a] - 1) as f64;
            let t = (x[a] - self.origin[a]) / self.spacing[a];
            // false for NaN too
            let inside = t >= -OUTSIDE_TOLERANCE && t <= last + OUTSIDE_TOLERANCE;
            if !inside {
                return Err(self.outside(x));
            }
            let t = t.clamp(0.0, last);
            let i = (t.floor() as usize).min(self.points[a] - 2);
            cell[a] = i;
            frac[a] = t - i as f64;
        }
        let mut v = [0.0f64; 3];
        for corner in 0..1usize << self.dim {
            let mut weight = 1.0;
            let mut index = 0;
            let mut stride = 1;
            for a in 0..self.dim {
                let up = (corner >> a) & 1;
                weight *= if up == 1 { frac[a] } else { 1.0 - frac[a] };
                index += (cell[a] + up) * stride;
                stride *= self.points[a];
            }
            let g = &self.values[index];
            for c in 0..3 {
                v[c] += weight * g[c];
            }
        }
        Ok(Material {
            vp: v[0],
            vs: v[1],
            rho: v[2],
        })
    }

    fn outside(&self, x: &[f64; 3]) -> VelocityModelError {
        let (lo, hi) = self.bounds();
        let extent = ["x", "y", "z"][..self.dim]
            .iter()
            .enumerate()
            .map(|(a, n)| format!("{n} ∈ [{}, {}]", lo[a], hi[a]))
            .collect::<Vec<_>>()
            .join(", ");
        VelocityModelError::Outside {
            path: self.path.clone(),
            point: x[..self.dim].to_vec(),
            extent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A linear material in the coordinates: exactly what multilinear interpolation
    /// reproduces.
    fn linear(x: &[f64]) -> [f64; 3] {
        let z = x.get(2).copied().unwrap_or(0.0);
        [
            2000.0 + 300.0 * x[0] - 150.0 * x[1] + 70.0 * z,
            1000.0 - 40.0 * x[0] + 90.0 * x[1] - 25.0 * z,
            2500.0 + 11.0 * x[0] + 13.0 * x[1] + 17.0 * z,
        ]
    }

    /// A model file of `linear` on the grid `origin + i·spacing`, `n` points per axis,
    /// with comments, a blank line and trailing Q columns.
    fn model_text(origin: &[f64], spacing: &[f64], n: &[usize]) -> String {
        let dim = origin.len();
        let mut s = String::from("# a test model\n\n");
        let end: Vec<f64> = (0..dim)
            .map(|a| origin[a] + (n[a] - 1) as f64 * spacing[a])
            .collect();
        let join = |v: &[f64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        s += &format!("{} {}   # extent\n", join(origin), join(&end));
        s += &format!("{}\n", join(spacing));
        s += &format!(
            "{}\n",
            n.iter()
                .map(|k| k.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        );
        s += "1000 4000 500 2000 1000 3000\n";
        let total: usize = n.iter().product();
        for r in 0..total {
            let mut rest = r;
            let x: Vec<f64> = (0..dim)
                .map(|a| {
                    let i = rest % n[a];
                    rest /= n[a];
                    origin[a] + i as f64 * spacing[a]
                })
                .collect();
            let v = linear(&x);
            s += &format!("{} {} {} {} 100 50\n", join(&x), v[0], v[1], v[2]);
        }
        s
    }

    fn model_2d() -> String {
        model_text(&[-1.5, 0.25], &[0.5, 0.3], &[5, 4])
    }

    fn model_3d() -> String {
        model_text(&[0.1, -0.2, 1.0], &[0.4, 0.25, 0.3], &[3, 4, 3])
    }

    /// A small generator of uniform numbers in `[0, 1)` (xorshift).
    struct Uniform(u64);
    impl Uniform {
        fn next(&mut self) -> f64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    fn check_linear(m: &VelocityModel, count: usize) {
        let (lo, hi) = m.bounds();
        let mut u = Uniform(0x9e37_79b9_7f4a_7c15);
        for _ in 0..count {
            let mut x = [0.0; 3];
            for a in 0..m.dim() {
                x[a] = lo[a] + u.next() * (hi[a] - lo[a]);
            }
            let got = m.at(&x).unwrap();
            let want = linear(&x[..m.dim()]);
            assert!(close(got.vp, want[0], 1e-12), "{x:?}: {got:?} vs {want:?}");
            assert!(close(got.vs, want[1], 1e-12), "{x:?}: {got:?} vs {want:?}");
            assert!(close(got.rho, want[2], 1e-12), "{x:?}: {got:?} vs {want:?}");
        }
    }

    #[test]
    fn parses_a_2d_model() {
        let m = VelocityModel::parse(&model_2d(), "m2.xyz").unwrap();
        assert_eq!(m.dim(), 2);
        assert_eq!(m.path(), Path::new("m2.xyz"));
        let (lo, hi) = m.bounds();
        assert_eq!(lo, [-1.5, 0.25, 0.0]);
        assert!(
            close(hi[0], 0.5, 1e-15) && close(hi[1], 1.15, 1e-15),
            "{hi:?}"
        );
        assert_eq!(hi[2], 0.0);
        assert_eq!(m.values.len(), 20);
    }

    #[test]
    fn parses_a_3d_model() {
        let m = VelocityModel::parse(&model_3d(), "m3.xyz").unwrap();
        assert_eq!(m.dim(), 3);
        let (lo, hi) = m.bounds();
        assert_eq!(lo, [0.1, -0.2, 1.0]);
        for (h, w) in hi.iter().zip([0.9, 0.55, 1.6]) {
            assert!(close(*h, w, 1e-15), "{hi:?}");
        }
        assert_eq!(m.values.len(), 36);
    }

    #[test]
    fn interpolation_reproduces_linear_functions() {
        check_linear(&VelocityModel::parse(&model_2d(), "m2.xyz").unwrap(), 500);
        check_linear(&VelocityModel::parse(&model_3d(), "m3.xyz").unwrap(), 500);
    }

    #[test]
    fn values_at_grid_points_are_the_files() {
        for (text, origin, spacing, n) in [
            (model_2d(), vec![-1.5, 0.25], vec![0.5, 0.3], vec![5, 4, 1]),
            (
                model_3d(),
                vec![0.1, -0.2, 1.0],
                vec![0.4, 0.25, 0.3],
                vec![3, 4, 3],
            ),
        ] {
            let m = VelocityModel::parse(&text, "m.xyz").unwrap();
            let dim = origin.len();
            for k in 0..n[2] {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let idx = [i, j, k];
                        let mut x = [0.0; 3];
                        for a in 0..dim {
                            x[a] = origin[a] + idx[a] as f64 * spacing[a];
                        }
                        let got = m.at(&x).unwrap();
                        let file = linear(&x[..dim]);
                        // the file's numbers, to rounding of the point's cell position
                        assert!(close(got.vp, file[0], 1e-15), "{x:?}: {got:?}");
                        assert!(close(got.vs, file[1], 1e-15), "{x:?}: {got:?}");
                        assert!(close(got.rho, file[2], 1e-15), "{x:?}: {got:?}");
                    }
                }
            }
        }
        // on a dyadic grid the cell positions are exact, and so are the values
        let text = model_text(&[0.0, 0.0], &[0.25, 0.5], &[3, 3]);
        let m = VelocityModel::parse(&text, "m.xyz").unwrap();
        let x = [0.25, 1.0, 0.0];
        let got = m.at(&x).unwrap();
        let want = linear(&x[..2]);
        assert_eq!([got.vp, got.vs, got.rho], want);
    }

    #[test]
    fn fortran_exponents_crlf_and_trailing_comments_are_read() {
        let text = "0 0 1 1\r\n1 1 # spacing\r\n2 2\r\n1 2 3 4 5 6\r\n\
                    0 0 1.5D3 1.0d3 2E3\r\n1 0 1500 1000 2000\r\n\
                    0 1 1500 1000 2000\r\n1 1 1500 1000 2000 # last\r\n";
        let m = VelocityModel::parse(text, "f.xyz").unwrap();
        let v = m.at(&[0.5, 0.5, 0.0]).unwrap();
        assert_eq!((v.vp, v.vs, v.rho), (1500.0, 1000.0, 2000.0));
    }

    /// The error of parsing `text` (which must fail) and its message.
    fn error_of(text: &str) -> (VelocityModelError, String) {
        match VelocityModel::parse(text, "bad.xyz") {
            Ok(_) => panic!("parsed:\n{text}"),
            Err(e) => {
                let msg = e.to_string();
                (e, msg)
            }
        }
    }

    /// `model_2d()` with line `line` (1-based) replaced by `with`.
    fn replace_line(line: usize, with: &str) -> String {
        let mut lines: Vec<String> = model_2d().lines().map(String::from).collect();
        lines[line - 1] = with.to_string();
        lines.join("\n") + "\n"
    }

    #[test]
    fn an_unreadable_file_is_named() {
        let missing = std::env::temp_dir().join("ferrofem-no-such-model.xyz");
        match VelocityModel::read(&missing) {
            Err(e @ VelocityModelError::Read { .. }) => {
                assert!(e.to_string().contains("ferrofem-no-such-model.xyz"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_numbers_are_located() {
        // model_2d: lines 1-2 comment and blank, 3 extent, 4 spacing, 5 counts, 6 range,
        // data from 7
        let (e, msg) = error_of(&replace_line(3, "-1.5 0.25 0.5 1.l5"));
        assert!(
            matches!(e, VelocityModelError::Number { line: 3, .. }),
            "{e:?}"
        );
        assert!(msg.starts_with("bad.xyz:3:") && msg.contains("END_Z") && msg.contains("1.l5"));
        let (e, msg) = error_of(&replace_line(9, "-0.5 0.25 abc 1000 2000"));
        assert!(
            matches!(e, VelocityModelError::Number { line: 9, .. }),
            "{e:?}"
        );
        assert!(msg.contains("bad.xyz:9:") && msg.contains("vp"), "{msg}");
        let (e, msg) = error_of(&replace_line(5, "5 4.0"));
        assert!(
            matches!(e, VelocityModelError::Number { line: 5, .. }),
            "{e:?}"
        );
        assert!(msg.contains("NZ") && msg.contains("whole number"), "{msg}");
        // the wrong number of values on a header line
        let (e, msg) = error_of(&replace_line(4, "0.5 0.3 0.1"));
        assert!(
            matches!(e, VelocityModelError::Header { line: 4, .. }),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:4:") && msg.contains("SPACING_X SPACING_Z"),
            "{msg}"
        );
        let (e, msg) = error_of(&replace_line(3, "0 0 1 1 1"));
        assert!(
            matches!(e, VelocityModelError::Header { line: 3, .. }),
            "{e:?}"
        );
        assert!(msg.contains("found 5 values"), "{msg}");
        // a file that ends in its header
        let (e, msg) = error_of("# nothing\n0 0 1 1\n1 1\n");
        assert!(
            matches!(e, VelocityModelError::Header { line: 3, .. }),
            "{e:?}"
        );
        assert!(msg.contains("ends before"), "{msg}");
        // a data line with too few values
        let (e, msg) = error_of(&replace_line(8, "-1.0 0.25 2000 1000"));
        assert!(
            matches!(
                e,
                VelocityModelError::Columns {
                    line: 8,
                    found: 4,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:8:") && msg.contains("x z vp vs rho"),
            "{msg}"
        );
    }

    #[test]
    fn non_finite_values_are_refused() {
        let (e, msg) = error_of(&replace_line(10, "0.0 0.25 NaN 1000 2000"));
        assert!(
            matches!(e, VelocityModelError::NonFinite { line: 10, .. }),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:10:") && msg.contains("vp = NaN"),
            "{msg}"
        );
        let (e, _) = error_of(&replace_line(6, "1000 inf 500 2000 1000 3000"));
        assert!(
            matches!(e, VelocityModelError::NonFinite { line: 6, .. }),
            "{e:?}"
        );
        let (e, _) = error_of(&replace_line(3, "-1.5 0.25 0.5 1e999"));
        assert!(
            matches!(e, VelocityModelError::NonFinite { line: 3, .. }),
            "{e:?}"
        );
    }

    #[test]
    fn bad_grids_are_refused() {
        let (e, msg) = error_of(&replace_line(4, "0.5 0"));
        assert!(
            matches!(
                e,
                VelocityModelError::Spacing {
                    line: 4,
                    axis: "Z",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:4:") && msg.contains("SPACING_Z = 0"),
            "{msg}"
        );
        let (e, _) = error_of(&replace_line(4, "-0.5 0.3"));
        assert!(
            matches!(e, VelocityModelError::Spacing { axis: "X", .. }),
            "{e:?}"
        );
        let (e, msg) = error_of(&replace_line(5, "1 4"));
        assert!(
            matches!(
                e,
                VelocityModelError::TooFewPoints {
                    line: 5,
                    count: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:5:") && msg.contains("NX = 1"),
            "{msg}"
        );
        // END_X one spacing off: NX says 5 points, the extent 6
        let (e, msg) = error_of(&replace_line(3, "-1.5 0.25 1 1.15"));
        assert!(
            matches!(
                e,
                VelocityModelError::Extent {
                    line: 3,
                    axis: "X",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(
            msg.contains("bad.xyz:3:") && msg.contains("END_X = 1"),
            "{msg}"
        );
    }

    #[test]
    fn data_lines_must_match_the_grid() {
        // too few: the last data line is missing
        let text = model_2d();
        let short: String = text
            .lines()
            .take(6 + 19)
            .map(|l| format!("{l}\n"))
            .collect();
        let (e, msg) = error_of(&short);
        assert!(
            matches!(
                e,
                VelocityModelError::TooFewLines {
                    line: 25,
                    found: 19,
                    expected: 20,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(msg.contains("bad.xyz:25:"), "{msg}");
        // too many
        let long = format!("{text}0.5 1.15 1 1 1\n");
        let (e, msg) = error_of(&long);
        assert!(
            matches!(
                e,
                VelocityModelError::TooManyLines {
                    line: 27,
                    expected: 20,
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(msg.contains("bad.xyz:27:"), "{msg}");
        // data line 3 (file line 9) of the grid is (-0.5, 0.25); z-fastest order gives
        // (-1.5, 0.85) there
        let (e, msg) = error_of(&replace_line(9, "-1.5 0.85 2000 1000 2500"));
        match &e {
            VelocityModelError::Coordinates {
                line: 9,
                index: 3,
                expected,
                found,
                ..
            } => {
                assert_eq!(expected, &vec![-0.5, 0.25]);
                assert_eq!(found, &vec![-1.5, 0.85]);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            msg.contains("bad.xyz:9:") && msg.contains("(-0.5, 0.25)"),
            "{msg}"
        );
        // coordinates written with few digits pass
        let rounded = replace_line(9, &format!("-0.501 0.2502 {} {} {}", 1, 1, 1));
        assert!(VelocityModel::parse(&rounded, "ok.xyz").is_ok());
    }

    #[test]
    fn points_outside_the_grid_are_errors() {
        let m = VelocityModel::parse(&model_2d(), "m2.xyz").unwrap();
        // on the faces, and within the tolerance outside them: the face's values
        let on = m.at(&[-1.5, 1.15, 7.0]).unwrap();
        let near = m.at(&[-1.5 - 1e-9, 1.15 + 1e-9, 0.0]).unwrap();
        assert!(close(near.vp, on.vp, 1e-14));
        for x in [
            [-1.6, 0.5, 0.0],
            [0.0, 1.2, 0.0],
            [0.51, 0.3, 0.0],
            [f64::NAN, 0.5, 0.0],
        ] {
            match m.at(&x) {
                Err(e @ VelocityModelError::Outside { .. }) => {
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("({}, {})", x[0], x[1]))
                            && msg.contains("m2.xyz")
                            && msg.contains("x ∈ [-1.5, 0.5]"),
                        "{msg}"
                    );
                }
                other => panic!("{x:?}: {other:?}"),
            }
        }
        let m3 = VelocityModel::parse(&model_3d(), "m3.xyz").unwrap();
        match m3.at(&[0.5, 0.0, 1.7]) {
            Err(e @ VelocityModelError::Outside { .. }) => {
                assert!(e.to_string().contains("(0.5, 0, 1.7)"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }
}
