//! Where a mesh comes from on the command line: a Gmsh file or a `--box` specification,
//! plus optional renumbering and refinement, loaded by the driver's [`MeshInput`].

use crate::error::CliError;
use clap::Args;
pub use ferrofem_driver::LoadedMesh as Loaded;
use ferrofem_driver::{MeshInput, MeshOrigin, Reorder};
use std::path::PathBuf;

/// Mesh selection shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct MeshSource {
    /// Gmsh mesh file (MSH 2.2 or 4.1, ASCII or binary); for `solve`, a problem file
    /// (`.toml`) instead.
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

impl MeshSource {
    /// Loads or generates the mesh.
    pub fn load(&self) -> Result<Loaded, CliError> {
        let origin = match (&self.file, &self.box_spec) {
            (Some(path), None) => MeshOrigin::File(path.clone()),
            (None, Some(spec)) => MeshOrigin::Box(spec.clone()),
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
        Ok(MeshInput {
            origin,
            reorder: self.reorder,
            refine: self.refine,
        }
        .load()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A source reading `path`.
    fn from_file(path: PathBuf) -> MeshSource {
        MeshSource {
            file: Some(path),
            box_spec: None,
            reorder: Reorder::None,
            refine: 0,
        }
    }

    /// The unit square as 8 triangles around the middle node 5, placed at `middle`.
    fn square(middle: &str) -> String {
        format!(
            "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n9\n1 0 0 0\n2 0.5 0 0\n3 1 0 0\n\
             4 0 0.5 0\n5 {middle} 0\n6 1 0.5 0\n7 0 1 0\n8 0.5 1 0\n9 1 1 0\n$EndNodes\n\
             $Elements\n8\n1 2 2 1 1 1 2 5\n2 2 2 1 1 1 5 4\n3 2 2 1 1 2 3 6\n\
             4 2 2 1 1 2 6 5\n5 2 2 1 1 4 5 8\n6 2 2 1 1 4 8 7\n7 2 2 1 1 5 6 9\n\
             8 2 2 1 1 5 9 8\n$EndElements\n"
        )
    }

    #[test]
    fn a_folded_file_is_refused_naming_the_file_and_the_cell() {
        let dir = std::env::temp_dir().join(format!("ferrofem-mesh-source-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let good = dir.join("square.msh");
        std::fs::write(&good, square("0.5 0.5")).expect("write");
        let loaded = from_file(good).load().expect("the unfolded square reads");
        assert_eq!(loaded.reoriented, 0);
        assert!((loaded.mesh.total_measure() - 1.0).abs() < 1e-14);

        // the middle node moved below the bottom edge: two triangles turn over
        let folded = dir.join("folded.msh");
        std::fs::write(&folded, square("0.5 -0.1")).expect("write");
        let err = match from_file(folded.clone()).load() {
            Err(e) => e.to_string(),
            Ok(l) => panic!(
                "a folded mesh was accepted (measure {})",
                l.mesh.total_measure()
            ),
        };
        let name = folded.display().to_string();
        assert!(
            err.starts_with(&format!("{name}: line 18: cell 0 folds over cell 1")),
            "{err}"
        );
        assert!(err.contains("Gmsh elements 1, 2"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
