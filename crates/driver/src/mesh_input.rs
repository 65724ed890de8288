//! Where a mesh comes from: a Gmsh file or a box specification, then optional renumbering
//! and uniform refinement. The command line and problem files both load meshes through
//! [`MeshInput::load`].

use crate::pipeline_error::PipelineError;
use clap::ValueEnum;
use ferrofem_mesh::{generate_box, read_gmsh_with_info, BoxSpec, Mesh, MeshError};
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

    /// Parses `none`, `rcm` or `morton`.
    pub fn parse(name: &str) -> Option<Reorder> {
        match name {
            "none" => Some(Reorder::None),
            "rcm" => Some(Reorder::Rcm),
            "morton" => Some(Reorder::Morton),
            _ => None,
        }
    }
}

/// The origin of a mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MeshOrigin {
    /// A Gmsh file (MSH 2.2 or 4.1, ASCII or binary).
    File(PathBuf),
    /// A structured box, e.g. `hex:16x16x16` or `tri:32x32,min=0:0,max=2:1`.
    Box(String),
}

/// A mesh to load: its origin, renumbering and refinement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MeshInput {
    /// File or box.
    pub origin: MeshOrigin,
    /// Renumbering after loading.
    pub reorder: Reorder,
    /// Uniform refinement levels after renumbering (each splits every cell into 4 in 2-D or
    /// 8 in 3-D, tags and tagged facets carried over).
    pub refine: u8,
}

/// A loaded mesh and a description of its origin.
pub struct LoadedMesh {
    /// The mesh.
    pub mesh: Mesh,
    /// Human-readable origin ("box hex:8x8x8", "file x.msh (MSH 4.1 binary)").
    pub origin: String,
    /// Cells reoriented on import.
    pub reoriented: usize,
}

impl MeshInput {
    /// Loads or generates the mesh, renumbers and refines it.
    pub fn load(&self) -> Result<LoadedMesh, PipelineError> {
        let (mut mesh, origin, reoriented) = match &self.origin {
            MeshOrigin::File(path) => {
                let (mesh, info) = read_gmsh_with_info(path)?;
                let origin = format!(
                    "{} (MSH {} {})",
                    path.display(),
                    info.version,
                    if info.binary { "binary" } else { "ASCII" }
                );
                (mesh, origin, info.reoriented_cells)
            }
            MeshOrigin::Box(spec) => {
                let spec = BoxSpec::parse(spec)?;
                let mesh = generate_box(&spec)?;
                (mesh, format!("box {spec}"), 0)
            }
        };
        self.reorder.apply(&mut mesh);
        let (mesh, origin) = if self.refine > 0 {
            let refined = mesh
                .refined(self.refine as usize)
                .map_err(|e| match &self.origin {
                    // name the file the refined mesh came from
                    MeshOrigin::File(path) => MeshError::InFile {
                        path: path.display().to_string(),
                        location: None,
                        elements: Vec::new(),
                        nodes: Vec::new(),
                        source: Box::new(e),
                    },
                    MeshOrigin::Box(_) => e,
                })?;
            (refined, format!("{origin} refined {}", self.refine))
        } else {
            (mesh, origin)
        };
        Ok(LoadedMesh {
            mesh,
            origin,
            reoriented,
        })
    }
}
