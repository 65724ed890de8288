//! Command-line options shared by `ferrofem solve` and `ferrofem assemble`: where the mesh
//! comes from and which manufactured problem to set up on it.

use crate::error::CliError;
use crate::mesh_source::{Loaded, MeshSource};
use clap::Args;
use ferrofem_cli::{CoefField, DirichletSpec, Precision, ProblemKind, ProblemOptions};
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
    /// Polynomial order of the Lagrange space.
    #[arg(long, short = 'p', default_value_t = 1)]
    pub order: usize,
    /// Floating-point precision of operator, vectors and solver.
    #[arg(long, value_enum, default_value_t = Precision::F64)]
    pub precision: Precision,
    /// Dirichlet conditions only on these boundary groups (Gmsh physical names of
    /// dimension d-1, or numeric IDs; box meshes have xmin,xmax,ymin,ymax[,zmin,zmax]);
    /// natural conditions elsewhere. Default: the whole boundary.
    #[arg(long, value_name = "NAME|ID,...")]
    pub dirichlet: Option<String>,
    /// Diffusion coefficient of `poisson`.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub kappa: f64,
    /// First Lamé parameter of `elasticity`.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub lambda: f64,
    /// Shear modulus of `elasticity`.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
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
    /// Loads or generates the mesh (`--mesh`, the positional FILE, or `--box`).
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

/// Turns a pipeline error into the command's error (one line, exit code 1).
pub fn pipeline(e: ferrofem_cli::PipelineError) -> CliError {
    CliError::Usage(e.to_string())
}
