//! A field of a 2-D mesh sampled on a regular raster (for PNG snapshots): each pixel's
//! cell and basis values are found once, then every snapshot is a weighted sum.

use ferrofem_geometry::PointLocator;
use ferrofem_mesh::Mesh;
use ferrofem_space::H1Space;
use rayon::prelude::*;

/// Pixels of a raster over a 2-D mesh's bounding box, with the basis at each pixel centre.
pub struct Raster2d {
    /// Pixels along x.
    pub nx: usize,
    /// Pixels along y.
    pub ny: usize,
    /// The box `[x0, x1] × [y0, y1]`.
    pub bounds: [f64; 4],
    /// Per pixel (row-major, y outer): the element's nodes and basis values, or nothing
    /// outside the mesh.
    pixels: Vec<Option<(Vec<u32>, Vec<f64>)>>,
}

impl Raster2d {
    /// A raster about `width` pixels wide (the height follows the aspect ratio) over the
    /// mesh of `space` (2-D).
    pub fn new(mesh: &Mesh, space: &H1Space, width: usize) -> Option<Raster2d> {
        if mesh.dim() != 2 {
            return None;
        }
        let (lo, hi) = mesh.bounding_box();
        let (w, h) = (hi[0] - lo[0], hi[1] - lo[1]);
        if !(w > 0.0 && h > 0.0) {
            return None;
        }
        let nx = width.max(2);
        let ny = ((nx as f64 * h / w).round() as usize).clamp(2, 4 * nx);
        let locator = PointLocator::new(mesh).ok()?;
        let el = space.element();
        let nb = el.num_nodes();
        let pixels = (0..nx * ny)
            .into_par_iter()
            .map(|k| {
                let (i, j) = (k % nx, k / nx);
                let x = [
                    lo[0] + (i as f64 + 0.5) * w / nx as f64,
                    lo[1] + (j as f64 + 0.5) * h / ny as f64,
                ];
                let loc = locator.locate(&x)?;
                let mut values = vec![0.0; nb];
                let mut grads = vec![0.0; 2 * nb];
                el.eval(&loc.xi[..2], &mut values, &mut grads);
                Some((space.restriction().elem(loc.cell).to_vec(), values))
            })
            .collect();
        Some(Raster2d {
            nx,
            ny,
            bounds: [lo[0], hi[0], lo[1], hi[1]],
            pixels,
        })
    }

    /// Component `c` of the field `u` (`ncomp` values per node) at every pixel; NaN outside
    /// the mesh.
    pub fn sample(&self, u: &[f64], ncomp: usize, c: usize) -> Vec<f64> {
        self.pixels
            .par_iter()
            .map(|p| match p {
                Some((nodes, values)) => nodes
                    .iter()
                    .zip(values)
                    .map(|(&n, &v)| v * u[n as usize * ncomp + c])
                    .sum(),
                None => f64::NAN,
            })
            .collect()
    }
}
