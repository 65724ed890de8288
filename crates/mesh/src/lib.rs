//! Meshes of triangles, quadrilaterals, tetrahedra and hexahedra: the [`Mesh`] container,
//! structured box generators, Gmsh import, validity and quality checks, element colouring
//! and locality-improving renumbering.
//!
//! Vertex numbering inside a cell follows [`ferrofem_base::cell`]: counter-clockwise
//! (positively oriented) simplices, lexicographic quadrilaterals and hexahedra.

mod coloring;
mod error;
mod generate;
mod gmsh;
mod mesh;
mod refine;
mod renumber;
mod topology;
mod validate;

pub use coloring::Coloring;
pub use error::{FileLocation, MeshError};
pub use ferrofem_base::CellType;
pub use generate::{generate_box, BoxSpec, MAX_PERTURB, MIN_PERTURBED_QUALITY, SIDE_NAMES};
pub use gmsh::{
    read_gmsh, read_gmsh_bytes, read_gmsh_bytes_with_info, read_gmsh_with_info, ElementTypeCount,
    GmshInfo,
};
pub use mesh::{Mesh, PhysicalName, TaggedFacets};
pub use topology::{FacetIncidence, FacetSide};
pub use validate::DEGENERATE_TOLERANCE;
