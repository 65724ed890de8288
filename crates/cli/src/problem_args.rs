//! Command-line options shared by `ferrofem solve` and `ferrofem assemble`: where the mesh
//! comes from and which manufactured problem to set up on it; the range-checking parsers
//! of numeric options that every subcommand uses ([`ranges`]).

use crate::error::CliError;
use crate::mesh_source::{Loaded, MeshSource};
use clap::Args;
use ferrofem_driver::{CoefField, DirichletSpec, Precision, ProblemKind, ProblemOptions};
use serde::Serialize;
use std::path::PathBuf;

/// Mesh and problem selection.
#[derive(Args, Debug, Clone)]
pub struct ProblemArgs {
    #[command(flatten)]
    pub source: MeshSource,
    /// Gmsh mesh file (same as the positional FILE).
    #[arg(long = "mesh", value_name = "FILE.msh", conflicts_with_all = ["file", "box_spec"])]
    pub mesh: Option<PathBuf>,
    /// The manufactured problem.
    #[arg(long, value_enum, default_value_t = ProblemKind::Poisson)]
    pub problem: ProblemKind,
    /// Polynomial order of the Lagrange space (1 to 15; triangles take up to 6,
    /// tetrahedra up to 4).
    #[arg(long, short = 'p', default_value_t = 1, value_parser = ranges::usize_in(1, ranges::MAX_ORDER))]
    pub order: usize,
    /// Floating-point precision of operator, vectors and solver.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub precision: Precision,
    /// Dirichlet conditions only on these boundary groups (Gmsh physical names of
    /// dimension d-1, or numeric IDs; box meshes have xmin,xmax,ymin,ymax[,zmin,zmax]);
    /// natural conditions elsewhere. Default: the whole boundary.
    #[arg(long, value_name = "NAME|ID,...")]
    pub dirichlet: Option<String>,
    /// Diffusion coefficient of `poisson`: positive and finite.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = ranges::positive)]
    pub kappa: f64,
    /// First Lamé parameter of `elasticity`: finite, and (checked once the mesh's
    /// dimension d is known) d lambda + 2 mu > 0, a positive bulk modulus; it may be zero
    /// or negative.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = ranges::finite)]
    pub lambda: f64,
    /// Shear modulus of `elasticity`: positive and finite.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = ranges::positive)]
    pub mu: f64,
    /// Coefficient field of `poisson-varcoef`: P1 interpolant, cellwise constant, or the
    /// interpolant in the solution's space.
    #[arg(long, value_enum, default_value_t = CoefField::P1)]
    pub coef: CoefField,
}

/// The mesh's description for reports.
#[derive(Serialize, Debug, Clone)]
pub struct MeshInfo {
    /// Where it came from.
    pub origin: String,
    /// Cell type name.
    pub cell_type: &'static str,
    /// Cells.
    pub cells: usize,
    /// Vertices.
    pub vertices: usize,
}

impl ProblemArgs {
    /// Loads or generates the mesh (`--mesh`, the positional FILE, or `--box`); a
    /// refinement that would not fit in memory is refused before it starts
    /// ([`Mesh::refined`](ferrofem_mesh::Mesh::refined)).
    pub fn load_mesh(&self) -> Result<(Loaded, MeshInfo), CliError> {
        let mut source = self.source.clone();
        if let Some(m) = &self.mesh {
            source.file = Some(m.clone());
        }
        let loaded = source.load()?;
        let info = MeshInfo {
            origin: loaded.origin.clone(),
            cell_type: loaded.mesh.cell_type().name(),
            cells: loaded.mesh.num_cells(),
            vertices: loaded.mesh.num_vertices(),
        };
        Ok((loaded, info))
    }

    /// The problem definition.
    pub fn options(&self) -> ProblemOptions {
        ProblemOptions {
            kind: self.problem,
            order: self.order,
            kappa: self.kappa,
            lambda: self.lambda,
            mu: self.mu,
            coef: self.coef,
            dirichlet: self
                .dirichlet
                .as_deref()
                .map(DirichletSpec::parse_list)
                .unwrap_or_default(),
        }
    }
}

/// Value parsers of numeric options that check their range, for clap's `value_parser`:
/// a value outside is refused by the argument parser with a message that gives the range
/// (exit code 2), before the command starts.
pub mod ranges {
    use clap::builder::RangedU64ValueParser;

    /// The largest polynomial order of any cell type (quadrilaterals and hexahedra); the
    /// element of each cell type refuses orders beyond its own limit with that limit.
    pub const MAX_ORDER: u64 =
        ferrofem_fe::LagrangeElement::max_order(ferrofem_base::CellType::Hexahedron) as u64;

    /// The largest count of repetitions (timed or warm-up) of a benchmark.
    pub const MAX_REPS: u64 = 1_000_000;

    /// The largest quadrature degree a benchmark takes (`degree / 2 + 1` Gauss points per
    /// direction: 201).
    pub const MAX_QDEGREE: u64 = 400;

    /// The smallest buffer of a bandwidth measurement: 1 MiB (below, the copy measures
    /// the cache and the timer rather than memory).
    pub const MIN_BYTES: u64 = 1 << 20;

    /// The largest buffer size accepted: 1 EiB, which keeps sizes and their multiples
    /// exact in 64-bit arithmetic (sizes beyond the machine's memory are then refused by
    /// the memory check, with the available memory).
    pub const MAX_BYTES: u64 = 1 << 60;

    /// A `usize` parser for `lo..=hi`, whose error names the range.
    pub fn usize_in(lo: u64, hi: u64) -> RangedU64ValueParser<usize> {
        RangedU64ValueParser::<usize>::new().range(lo..=hi)
    }

    /// A `usize` parser for `lo..` (no upper limit), whose error names the range.
    pub fn usize_from(
        lo: usize,
    ) -> impl Fn(&str) -> Result<usize, String> + Clone + Send + Sync + 'static {
        move |s: &str| match s.trim().parse::<usize>() {
            Ok(v) if v >= lo => Ok(v),
            _ => Err(format!(
                "'{s}' is out of range: give a whole number >= {lo}"
            )),
        }
    }

    /// `s` as a float, or an error that names the range `what`.
    fn float(s: &str, what: &str) -> Result<f64, String> {
        s.trim()
            .parse::<f64>()
            .map_err(|_| format!("'{s}' is not a number; give {what}"))
    }

    /// `s` as a float for which `ok` holds, or an error that names the range `what`.
    fn checked(s: &str, what: &str, ok: impl Fn(f64) -> bool) -> Result<f64, String> {
        let v = float(s, what)?;
        if ok(v) {
            Ok(v)
        } else {
            Err(format!("'{s}' is out of range: give {what}"))
        }
    }

    /// A finite number (NaN and infinities refused).
    pub fn finite(s: &str) -> Result<f64, String> {
        checked(s, "a finite number", f64::is_finite)
    }

    /// A positive finite number: `(0, ∞)`.
    pub fn positive(s: &str) -> Result<f64, String> {
        checked(s, "a positive finite number, in (0, inf)", |v| {
            v > 0.0 && v.is_finite()
        })
    }

    /// A relative tolerance: `(0, 1)`, both ends excluded (0 can never be met; 1 or more
    /// is met before the first iteration).
    pub fn rtol(s: &str) -> Result<f64, String> {
        checked(s, "a relative tolerance in (0, 1), e.g. 1e-8", |v| {
            v > 0.0 && v < 1.0
        })
    }

    /// A number in `[lo, hi]` (finite), whose error names the range.
    pub fn float_in(
        lo: f64,
        hi: f64,
    ) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
        move |s: &str| {
            let what = format!("a number in [{}, {}]", short(lo), short(hi));
            checked(s, &what, |v| (lo..=hi).contains(&v))
        }
    }

    /// `x` as written by a person: `0.35`, `1e12`.
    fn short(x: f64) -> String {
        if x != 0.0 && (x.abs() >= 1e6 || x.abs() < 1e-3) {
            format!("{x:e}")
        } else {
            format!("{x}")
        }
    }

    /// A perturbation of interior vertices: `[0, MAX_PERTURB]` of the grid spacing.
    pub fn perturb(s: &str) -> Result<f64, String> {
        float_in(0.0, ferrofem_mesh::MAX_PERTURB)(s)
    }

    /// A size in bytes from [`MIN_BYTES`] (1 MiB) to [`MAX_BYTES`] (1 EiB): a whole number,
    /// written plainly (`1073741824`), with an exponent (`1e9`) or with a binary suffix
    /// (`512MiB`, `4GiB`; also `KiB`, `TiB`).
    pub fn bytes(s: &str) -> Result<usize, String> {
        const WHAT: &str =
            "a whole number of bytes from 1 MiB to 1 EiB, e.g. 1073741824, 1e9 or 512MiB";
        let t = s.trim();
        let (num, unit) = [
            ("KiB", 1u64 << 10),
            ("MiB", 1 << 20),
            ("GiB", 1 << 30),
            ("TiB", 1 << 40),
        ]
        .iter()
        .find_map(|&(suffix, unit)| t.strip_suffix(suffix).map(|n| (n.trim(), unit)))
        .unwrap_or((t, 1));
        let v = num
            .parse::<f64>()
            .map_err(|_| format!("'{s}' is not a size; give {WHAT}"))?
            * unit as f64;
        if !(v.is_finite() && v.fract() == 0.0) {
            return Err(format!("'{s}' is not a whole number of bytes; give {WHAT}"));
        }
        if !(MIN_BYTES as f64..=MAX_BYTES as f64).contains(&v) || v > usize::MAX as f64 {
            return Err(format!("'{s}' is out of range: give {WHAT}"));
        }
        Ok(v as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn sizes_are_read_in_every_written_form() {
        assert_eq!(ranges::bytes("1048576"), Ok(1 << 20));
        assert_eq!(ranges::bytes("1MiB"), Ok(1 << 20));
        assert_eq!(ranges::bytes(" 4 GiB "), Ok(4 << 30));
        assert_eq!(ranges::bytes("1.5KiB").ok(), None, "below 1 MiB");
        assert_eq!(ranges::bytes("1e9"), Ok(1_000_000_000));
        assert_eq!(ranges::bytes("2TiB"), Ok(2 << 40));
        assert_eq!(ranges::bytes("1024TiB"), Ok(1 << 50));
        for bad in [
            "0", "1048575", "1e300", "nan", "inf", "-1", "1.5", "2048TiB0", "x",
        ] {
            let e = ranges::bytes(bad).unwrap_err();
            assert!(e.contains("from 1 MiB to 1 EiB"), "{bad}: {e}");
        }
    }

    #[test]
    fn floats_are_checked_against_their_ranges() {
        assert_eq!(ranges::rtol("1e-10"), Ok(1e-10));
        for bad in ["0", "1", "2", "-0.1", "nan", "inf"] {
            assert!(ranges::rtol(bad).unwrap_err().contains("(0, 1)"), "{bad}");
        }
        assert_eq!(ranges::positive("1e-300"), Ok(1e-300));
        assert!(ranges::positive("0").is_err() && ranges::positive("-inf").is_err());
        assert_eq!(ranges::finite("-3.5"), Ok(-3.5));
        assert!(ranges::finite("NaN").is_err());
        let dofs = ranges::float_in(1.0, 1e12);
        assert_eq!(dofs("4e7"), Ok(4e7));
        let e = dofs("nan").unwrap_err();
        assert_eq!(e, "'nan' is out of range: give a number in [1, 1e12]");
        assert_eq!(
            ranges::perturb("0.4").unwrap_err(),
            "'0.4' is out of range: give a number in [0, 0.35]"
        );
        let at_least = ranges::usize_from(1);
        assert_eq!(at_least("7"), Ok(7));
        assert!(at_least("0").unwrap_err().contains(">= 1"));
    }
}
