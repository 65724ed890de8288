//! The medium: density and wave speeds (`ρ`, `vp`, and `vs` for elastic waves) at every
//! point, uniform, per region (mesh cell tag) or from a function of the position (which may
//! refuse a point, as a velocity model does outside its grid), and the checks that make
//! them physical.

use crate::{WaveError, WaveKind};
use ferrofem_mesh::Mesh;
use std::fmt;
use std::sync::Arc;

/// Density and wave speeds at a point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Density `ρ` (kg/m³).
    pub rho: f64,
    /// Compressional (sound) speed `vp` (m/s).
    pub vp: f64,
    /// Shear speed `vs` (m/s; 0 for a fluid).
    pub vs: f64,
}

impl Material {
    /// A fluid (no shear speed).
    pub fn fluid(rho: f64, vp: f64) -> Material {
        Material { rho, vp, vs: 0.0 }
    }
    /// Bulk modulus `κ = ρ vp²` (acoustic).
    pub fn kappa(&self) -> f64 {
        self.rho * self.vp * self.vp
    }
    /// Shear modulus `μ = ρ vs²`.
    pub fn mu(&self) -> f64 {
        self.rho * self.vs * self.vs
    }
    /// Lamé's `λ = ρ (vp² − 2 vs²)`.
    pub fn lambda(&self) -> f64 {
        self.rho * (self.vp * self.vp - 2.0 * self.vs * self.vs)
    }
    /// Why this material is not physical for `kind`, if it is not.
    pub fn check(&self, kind: WaveKind) -> Option<String> {
        let Material { rho, vp, vs } = *self;
        if !(rho.is_finite() && vp.is_finite() && vs.is_finite()) {
            return Some(format!("rho = {rho}, vp = {vp}, vs = {vs} must be finite"));
        }
        if rho <= 0.0 {
            return Some(format!("density rho = {rho} must be positive"));
        }
        if vp <= 0.0 {
            return Some(format!("vp = {vp} must be positive"));
        }
        match kind {
            WaveKind::Acoustic => None,
            WaveKind::Elastic if vs <= 0.0 => Some(format!(
                "vs = {vs} must be positive for elastic waves (a fluid needs the acoustic solver)"
            )),
            WaveKind::Elastic if vs >= vp => Some(format!("vs = {vs} must be below vp = {vp}")),
            // λ ≥ 0 is not required (auxetic solids), but λ + 2μ/d > 0 is: vp² > 2(d-1)/d vs²
            // holds for every 0 < vs < vp in 2-D and needs vp > 2/√3 vs in 3-D
            WaveKind::Elastic => None,
        }
    }
}

/// A material given as a function of the cell tag (region) and the position; `None` where
/// it has no material.
pub type MaterialFn = Arc<dyn Fn(i32, &[f64; 3]) -> Option<Material> + Send + Sync>;

/// A [`MaterialFn`] that may refuse a point, saying why (a point outside a velocity
/// model's grid); `Ok(None)` where it has no material.
pub type FallibleMaterialFn =
    Arc<dyn Fn(i32, &[f64; 3]) -> Result<Option<Material>, String> + Send + Sync>;

/// Where the material comes from.
#[derive(Clone)]
pub enum Medium {
    /// One material everywhere.
    Uniform(Material),
    /// One material per region: the mesh cell tag (a Gmsh physical group), with a name
    /// for messages.
    Regions(Vec<Region>),
    /// A function of the region (cell tag) and the position.
    Function(MaterialFn),
    /// A function of the region and the position that may refuse a point:
    /// [`Medium::check`] reports the reason with the element and the point.
    Fallible(FallibleMaterialFn),
}

/// The material of one region of the mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// The cell tag.
    pub tag: i32,
    /// Its name (for messages).
    pub name: String,
    /// Its material.
    pub material: Material,
}

impl fmt::Debug for Medium {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Medium::Uniform(m) => write!(f, "Uniform({m:?})"),
            Medium::Regions(r) => write!(f, "Regions({r:?})"),
            Medium::Function(_) => write!(f, "Function(..)"),
            Medium::Fallible(_) => write!(f, "Fallible(..)"),
        }
    }
}

impl Medium {
    /// A medium given by a function of the position.
    pub fn function(f: impl Fn(&[f64; 3]) -> Material + Send + Sync + 'static) -> Medium {
        Medium::Function(Arc::new(move |_, x| Some(f(x))))
    }

    /// True when the material is constant on each cell (one material, or one per
    /// region), whatever the position.
    pub fn is_cellwise(&self) -> bool {
        matches!(self, Medium::Uniform(_) | Medium::Regions(_))
    }

    /// The material at `x` in a cell with tag `cell_tag`; `None` in a region without a
    /// material or at a point the medium refuses (which [`Medium::check`] reports).
    pub fn at(&self, cell_tag: i32, x: &[f64; 3]) -> Option<Material> {
        self.try_at(cell_tag, x).ok().flatten()
    }

    /// [`Medium::at`], with the reason for a refused point.
    fn try_at(&self, cell_tag: i32, x: &[f64; 3]) -> Result<Option<Material>, String> {
        match self {
            Medium::Uniform(m) => Ok(Some(*m)),
            Medium::Regions(r) => Ok(r.iter().find(|g| g.tag == cell_tag).map(|g| g.material)),
            Medium::Function(f) => Ok(f(cell_tag, x)),
            Medium::Fallible(f) => f(cell_tag, x),
        }
    }

    /// The material at `x` in element `elem` of `mesh` (see [`Medium::at`]).
    pub fn in_cell(&self, mesh: &Mesh, elem: usize, x: &[f64; 3]) -> Option<Material> {
        self.at(mesh.cell_tags().get(elem).copied().unwrap_or(0), x)
    }

    /// Checks the material at every node of every element (`coords` of the space's nodes,
    /// `nodes(e)` the element's node indices) for `kind`; returns the largest `vp` of each
    /// element, for the stable time step.
    pub fn check(
        &self,
        mesh: &Mesh,
        kind: WaveKind,
        num_elem: usize,
        nodes: impl Fn(usize) -> Vec<[f64; 3]> + Sync,
    ) -> Result<Vec<f64>, WaveError> {
        use rayon::prelude::*;
        (0..num_elem)
            .into_par_iter()
            .map(|e| {
                let mut vmax = 0.0f64;
                let tag = mesh.cell_tags().get(e).copied().unwrap_or(0);
                for x in nodes(e) {
                    let m = match self.try_at(tag, &x) {
                        Ok(Some(m)) => m,
                        Ok(None) => return Err(self.missing(mesh, e)),
                        Err(reason) => return Err(WaveError::Material { elem: e, x, reason }),
                    };
                    if let Some(reason) = m.check(kind) {
                        return Err(WaveError::Material { elem: e, x, reason });
                    }
                    vmax = vmax.max(m.vp);
                }
                Ok(vmax)
            })
            .collect()
    }

    fn missing(&self, mesh: &Mesh, elem: usize) -> WaveError {
        let tag = mesh.cell_tags().get(elem).copied().unwrap_or(0);
        let d = mesh.dim();
        let name = mesh
            .physical_names()
            .iter()
            .find(|n| n.dim == d && n.tag == tag)
            .map(|n| format!("'{}' (tag {tag})", n.name))
            .unwrap_or_else(|| format!("tag {tag}"));
        let given = match self {
            Medium::Regions(r) if !r.is_empty() => r
                .iter()
                .map(|g| format!("'{}' (tag {})", g.name, g.tag))
                .collect::<Vec<_>>()
                .join(", "),
            _ => "none".into(),
        };
        WaveError::MissingMaterial {
            region: name,
            elem,
            given,
        }
    }
}
