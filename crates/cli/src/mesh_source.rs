//! Where a mesh comes from: a Gmsh file or a `--box` specification, plus optional
//! renumbering.

use crate::error::CliError;
use clap::{Args, ValueEnum};
use ferrofem_mesh::{generate_box, read_gmsh_with_info, BoxSpec, Mesh};
use std::path::PathBuf;

/// Renumbering applied after loading.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Reorder {
    /// Keep the file's or generator's order.
    None,
    /// Reverse Cuthill–McKee on vertices, then cells sorted along a Morton curve.
    Rcm,
    /// Cells sorted along a Morton (Z-order) curve only.
    Morton,
}

impl Reorder {
    /// Renumbers `mesh` in place as this option says.
    pub fn apply(self, mesh: &mut Mesh) {
        match self {
            Reorder::None => {}
            Reorder::Rcm => {
                mesh.renumber_vertices_rcm();
                mesh.sort_cells_morton();
            }
            Reorder::Morton => {
                mesh.sort_cells_morton();
            }
        }
    }
}

/// Mesh selection shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct MeshSource {
    /// Gmsh mesh file (MSH 2.2 or 4.1, ASCII or binary).
    #[arg(value_name = "FILE", conflicts_with = "box_spec")]
    pub file: Option<PathBuf>,
    /// Structured box instead of a file, e.g. `hex:16x16x16`, `tet:8x8x8,perturb=0.2,seed=1`,
    /// `tri:32x32,min=0:0,max=2:1`.
    #[arg(long = "box", value_name = "SPEC")]
    pub box_spec: Option<String>,
    /// Renumber vertices/cells for locality after loading.
    #[arg(long, value_enum, default_value_t = Reorder::None)]
    pub reorder: Reorder,
    /// Refine the mesh uniformly this many times after loading (and renumbering): each
    /// level splits every cell into 4 (2-D) or 8 (3-D), tags and tagged facets carried over.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=10))]
    pub refine: u8,
}

/// A loaded mesh and a description of its origin.
pub struct Loaded {
    /// The mesh.
    pub mesh: Mesh,
    /// Human-readable origin ("box hex:8x8x8", "file x.msh (MSH 4.1 binary)").
    pub origin: String,
    /// Cells reoriented on import.
    pub reoriented: usize,
}

impl MeshSource {
    /// Loads or generates the mesh.
    pub fn load(&self) -> Result<Loaded, CliError> {
        let (mut mesh, origin, reoriented) = match (&self.file, &self.box_spec) {
            (Some(path), None) => {
                let (mesh, info) = read_gmsh_with_info(path)?;
                let origin = format!(
                    "{} (MSH {} {})",
                    path.display(),
                    info.version,
                    if info.binary { "binary" } else { "ASCII" }
                );
                (mesh, origin, info.reoriented_cells)
            }
            (None, Some(spec)) => {
                let spec = BoxSpec::parse(spec)?;
                let mesh = generate_box(&spec)?;
                (mesh, format!("box {spec}"), 0)
            }
            (None, None) => {
                return Err(CliError::Usage(
                    "give a mesh: a Gmsh FILE or --box SPEC (e.g. --box hex:8x8x8)".into(),
                ))
            }
            (Some(_), Some(_)) => {
                return Err(CliError::Usage(
                    "give either a FILE or --box, not both".into(),
                ))
            }
        };
        self.reorder.apply(&mut mesh);
        let (mesh, origin) = if self.refine > 0 {
            (
                mesh.refined(self.refine as usize)?,
                format!("{origin} refined {}", self.refine),
            )
        } else {
            (mesh, origin)
        };
        Ok(Loaded {
            mesh,
            origin,
            reoriented,
        })
    }
}
