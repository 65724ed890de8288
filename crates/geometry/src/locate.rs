//! Point location: the cell of a mesh that contains a physical point, and the point's
//! reference coordinates in it (probes, point sources, receivers).
//!
//! A uniform grid of bins over the mesh's bounding box lists, per bin, the cells whose
//! (slightly enlarged) bounding boxes overlap it. A query looks at the one bin holding the
//! point, skips cells whose box misses it, and inverts the coordinate map of the rest in
//! ascending cell order: directly for the affine simplices, by Newton's method for the
//! bilinear/trilinear quadrilaterals and hexahedra.

use crate::jacobian::adjugate;
use crate::{CellMap, GeometryError};
use ferrofem_mesh::Mesh;
use rayon::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Tolerance of [`PointLocator::locate`], in units of the reference cell's edge length
/// (1 for the simplices' legs, 2 for `[-1, 1]^d`): a point is in a cell when its reference
/// coordinates are within this of the reference cell. On simplices every barycentric
/// coordinate must be at least `-LOCATE_TOLERANCE`; on quadrilaterals and hexahedra every
/// `(ξ_k + 1) / 2` must lie in `[-LOCATE_TOLERANCE, 1 + LOCATE_TOLERANCE]`. Physically
/// that is a distance of about `LOCATE_TOLERANCE` times the cell's size (its height across
/// the nearest face), so points on the boundary and on faces between cells, up to
/// rounding, are found, and points further out than that are not.
pub const LOCATE_TOLERANCE: f64 = 1e-10;

/// Enlargement of every cell's bounding box, relative to its diagonal, before binning: far
/// more than [`LOCATE_TOLERANCE`] can move a point physically, so a cell that accepts a
/// point is always among the candidates of the point's bin.
const BOX_MARGIN: f64 = 1e-8;

/// Most Newton iterations spent on one (point, cell) pair.
const MAX_NEWTON: usize = 30;

/// Newton has converged when its last step is at most this in every reference coordinate;
/// convergence is quadratic, so the coordinates are then accurate to rounding.
const NEWTON_STEP_TOL: f64 = 1e-13;

/// Newton gives up on a cell once an iterate is this far out in reference coordinates (the
/// point is far outside the cell).
const NEWTON_ESCAPE: f64 = 1e3;

/// A located point: its cell and its reference coordinates there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Located {
    /// Index of the cell in the mesh.
    pub cell: usize,
    /// Reference coordinates in the cell (the first `dim` entries; the rest are zero). They
    /// may lie outside the reference cell by up to [`LOCATE_TOLERANCE`]: they are the
    /// preimage of the point, not clamped, so the cell's map takes them back to it.
    pub xi: [f64; 3],
}

/// Finds the cell containing a physical point and its reference coordinates.
///
/// Built once per mesh ([`PointLocator::new`]), then queried any number of times
/// ([`PointLocator::locate`]); queries only read, so one locator serves many threads.
///
/// The first [`SCANNED_QUERIES`] queries scan every cell's box in parallel: a few points
/// (a run's sources and receivers) are found sooner so than by building an index. The next
/// query builds the index, a uniform grid of bins, each listing the cells whose box overlaps
/// it (one box per cell and about one bin per cell, a few bins per cell for cells of
/// comparable size, so `O(cells)` memory); a query then costs the cells of one bin. Both
/// ways test the same cells in the same order and find the same cell.
#[derive(Debug)]
pub struct PointLocator<'m> {
    map: CellMap<'m>,
    /// The bin grid, built at the first query after the scanned ones.
    bins: OnceLock<Bins>,
    /// Queries still to be answered by a scan.
    scans_left: AtomicUsize,
}

/// Queries a [`PointLocator`] answers by scanning every cell before it builds its bins.
pub const SCANNED_QUERIES: usize = 8;

impl Clone for PointLocator<'_> {
    fn clone(&self) -> Self {
        PointLocator {
            map: self.map.clone(),
            bins: self.bins.clone(),
            scans_left: AtomicUsize::new(self.scans_left.load(Ordering::Relaxed)),
        }
    }
}

/// The bin grid of a [`PointLocator`].
#[derive(Clone, Debug)]
struct Bins {
    /// Lower corner of the bin grid (the mesh's bounding box).
    lo: [f64; 3],
    /// Bins per unit length along each axis (0 on an axis of one bin and zero extent).
    inv_h: [f64; 3],
    /// Bins along each axis (1 beyond the dimension).
    n: [usize; 3],
    /// CSR offsets of the bins' cell lists, `n[0] n[1] n[2] + 1` entries.
    bin_start: Vec<usize>,
    /// Cells of each bin in ascending order.
    bin_cells: Vec<u32>,
    /// Enlarged bounding box of each cell: `dim` lower then `dim` upper coordinates.
    boxes: Vec<f64>,
}

/// The bounding box of cell `c` (its vertices' extent in the first `dim` coordinates).
fn cell_box(mesh: &Mesh, c: usize) -> ([f64; 3], [f64; 3]) {
    let d = mesh.dim();
    let mut blo = [f64::INFINITY; 3];
    let mut bhi = [f64::NEG_INFINITY; 3];
    for &v in mesh.cell(c) {
        let x = mesh.vertex(v as usize);
        for k in 0..d {
            blo[k] = blo[k].min(x[k]);
            bhi[k] = bhi[k].max(x[k]);
        }
    }
    (blo, bhi)
}

/// Cell `c`'s bounding box enlarged by [`BOX_MARGIN`] of its diagonal: `dim` lower, then
/// `dim` upper coordinates written to `b`.
fn enlarged_box(mesh: &Mesh, c: usize, b: &mut [f64]) {
    let d = mesh.dim();
    let (blo, bhi) = cell_box(mesh, c);
    let diag = (0..d)
        .map(|k| (bhi[k] - blo[k]).powi(2))
        .sum::<f64>()
        .sqrt();
    let margin = BOX_MARGIN * diag;
    for k in 0..d {
        b[k] = blo[k] - margin;
        b[d + k] = bhi[k] + margin;
    }
}

/// Whether `x` lies in box `b` (`dim` lower, then upper coordinates); never for NaN.
fn in_box(x: &[f64], b: &[f64]) -> bool {
    let d = x.len();
    // negated so that NaN coordinates fail
    !(0..d).any(|k| !(x[k] >= b[k] && x[k] <= b[d + k]))
}

impl<'m> PointLocator<'m> {
    /// A locator for `mesh`: the first [`SCANNED_QUERIES`] queries scan the cells; the bin
    /// grid is built at the next ([`PointLocator`]).
    ///
    /// Fails only if the coordinate element of the mesh's cell type cannot be built.
    pub fn new(mesh: &'m Mesh) -> Result<PointLocator<'m>, GeometryError> {
        Ok(PointLocator {
            map: CellMap::new(mesh)?,
            bins: OnceLock::new(),
            scans_left: AtomicUsize::new(SCANNED_QUERIES),
        })
    }

    /// The mesh.
    pub fn mesh(&self) -> &'m Mesh {
        self.map.mesh()
    }

    /// The coordinate maps of the mesh's cells (to map located reference points back, or
    /// evaluate Jacobians there).
    pub fn cell_map(&self) -> &CellMap<'m> {
        &self.map
    }

    /// The cell containing `x` (`dim` coordinates) and the reference coordinates there, or
    /// `None` when the point is outside the mesh by more than [`LOCATE_TOLERANCE`] (in the
    /// sense documented there; so points on the boundary and on faces between cells are
    /// found, and a point just outside the boundary, however close to the bounding box, is
    /// not). Simplices are inverted directly; quadrilaterals and hexahedra by Newton's
    /// method on their map from the reference centre, at most 30 iterations per cell.
    /// When several cells contain the point (shared vertices, edges, faces) the one with
    /// the lowest index is returned. Non-finite coordinates are never found.
    ///
    /// # Panics
    /// If `x.len()` is not the mesh dimension.
    pub fn locate(&self, x: &[f64]) -> Option<Located> {
        let d = self.mesh().dim();
        assert_eq!(x.len(), d, "a point to locate needs {d} coordinates");
        let scan = self.bins.get().is_none()
            && self
                .scans_left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok();
        if scan {
            self.locate_by_scan(x)
        } else {
            self.locate_in_bins(x)
        }
    }

    /// [`PointLocator::locate`] by testing every cell's enlarged box, in parallel, keeping
    /// the lowest cell that holds the point.
    fn locate_by_scan(&self, x: &[f64]) -> Option<Located> {
        let mesh = self.mesh();
        let d = mesh.dim();
        (0..mesh.num_cells()).into_par_iter().find_map_first(|c| {
            let mut b = [0.0; 6];
            enlarged_box(mesh, c, &mut b[..2 * d]);
            if !in_box(x, &b[..2 * d]) {
                return None;
            }
            self.reference_coordinates(c, x)
                .map(|xi| Located { cell: c, xi })
        })
    }

    /// [`PointLocator::locate`] through the bin grid (built at the first call).
    fn locate_in_bins(&self, x: &[f64]) -> Option<Located> {
        let mesh = self.mesh();
        let d = mesh.dim();
        let bins = ferrofem_base::lazy::get_or_compute(&self.bins, || Bins::new(mesh));
        let mut bin = 0;
        for k in (0..d).rev() {
            bin = bin * bins.n[k] + bins.axis_bin(k, x[k]);
        }
        let cells = &bins.bin_cells[bins.bin_start[bin]..bins.bin_start[bin + 1]];
        cells.iter().find_map(|&c| {
            let c = c as usize;
            if !in_box(x, &bins.boxes[c * 2 * d..(c + 1) * 2 * d]) {
                return None;
            }
            self.reference_coordinates(c, x)
                .map(|xi| Located { cell: c, xi })
        })
    }

    /// Reference coordinates of `x` in cell `c` when it lies in the cell within the
    /// tolerance, else `None`.
    fn reference_coordinates(&self, c: usize, x: &[f64]) -> Option<[f64; 3]> {
        let mesh = self.mesh();
        let d = mesh.dim();
        let cell = mesh.cell(c);
        // vertex and point coordinates relative to the cell's first vertex, so that the
        // residuals below do not lose digits to an offset of the whole mesh
        let x0 = mesh.vertex(cell[0] as usize);
        let mut verts = [[0.0; 3]; 8];
        for (v, &gv) in cell.iter().enumerate() {
            let xv = mesh.vertex(gv as usize);
            for i in 0..d {
                verts[v][i] = xv[i] - x0[i];
            }
        }
        let mut p = [0.0; 3];
        for i in 0..d {
            p[i] = x[i] - x0[i];
        }
        if mesh.cell_type().is_simplex() {
            simplex_inverse(d, &verts, &p)
        } else {
            tensor_inverse(d, &verts, &p)
        }
    }
}

impl Bins {
    /// A uniform bin grid over the bounding box of `mesh`'s cells: about one bin per cell
    /// on average, with the bins as close to cubes as the box's extents allow (an axis
    /// along which the box is thinner than a bin gets a single bin). Each bin lists the
    /// cells whose bounding box, enlarged by a relative `1e-8` of its diagonal, overlaps
    /// it.
    fn new(mesh: &Mesh) -> Bins {
        let d = mesh.dim();
        let nc = mesh.num_cells();
        // each cell's box, enlarged, and the cells' overall box (in parallel)
        let mut boxes = vec![0.0; nc * 2 * d];
        boxes
            .par_chunks_mut((2 * d).max(1))
            .enumerate()
            .for_each(|(c, b)| enlarged_box(mesh, c, b));
        let (mut lo, mut hi) = (0..nc).into_par_iter().map(|c| cell_box(mesh, c)).reduce(
            || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]),
            |a, b| {
                (
                    std::array::from_fn(|k| a.0[k].min(b.0[k])),
                    std::array::from_fn(|k| a.1[k].max(b.1[k])),
                )
            },
        );
        if nc == 0 {
            (lo, hi) = ([0.0; 3], [0.0; 3]);
        }
        for k in d..3 {
            (lo[k], hi[k]) = (0.0, 0.0);
        }
        let mut ext = [0.0; 3];
        for k in 0..d {
            ext[k] = hi[k] - lo[k];
        }
        let n = bins_per_axis(d, &ext, nc);
        let mut inv_h = [0.0; 3];
        for k in 0..d {
            if ext[k] > 0.0 {
                inv_h[k] = n[k] as f64 / ext[k];
            }
        }
        let mut bins = Bins {
            lo,
            inv_h,
            n,
            bin_start: Vec::new(),
            bin_cells: Vec::new(),
            boxes,
        };
        bins.fill(d, nc);
        bins
    }

    /// Index of the bin along axis `k` holding coordinate `t`, clamped to the grid (NaN
    /// goes to bin 0, where the box test rejects it).
    #[inline]
    fn axis_bin(&self, k: usize, t: f64) -> usize {
        let s = ((t - self.lo[k]) * self.inv_h[k]).floor();
        if s > 0.0 {
            (s as usize).min(self.n[k] - 1)
        } else {
            0
        }
    }

    /// Bins along each axis overlapped by cell `c`'s enlarged box.
    fn cell_bin_ranges(&self, d: usize, c: usize) -> [std::ops::RangeInclusive<usize>; 3] {
        let b = &self.boxes[c * 2 * d..(c + 1) * 2 * d];
        std::array::from_fn(|k| {
            if k < d {
                self.axis_bin(k, b[k])..=self.axis_bin(k, b[d + k])
            } else {
                0..=0
            }
        })
    }

    /// Lists every cell in the bins its box overlaps, in ascending cell order per bin.
    fn fill(&mut self, d: usize, nc: usize) {
        let (n0, n1) = (self.n[0], self.n[1]);
        let nbins = self.n.iter().product::<usize>();
        // (bin, cell) pairs, sorted: each bin's cells in ascending order
        let mut pairs: Vec<u64> = (0..nc)
            .into_par_iter()
            .flat_map_iter(|c| {
                let [r0, r1, r2] = self.cell_bin_ranges(d, c);
                r2.flat_map(move |k| {
                    let r0 = r0.clone();
                    r1.clone().flat_map(move |j| {
                        r0.clone()
                            .map(move |i| ((i + n0 * (j + n1 * k)) as u64) << 32 | c as u64)
                    })
                })
            })
            .collect();
        pairs.par_sort_unstable();
        let mut start = vec![0usize; nbins + 1];
        for &p in &pairs {
            start[(p >> 32) as usize + 1] += 1;
        }
        for b in 0..nbins {
            start[b + 1] += start[b];
        }
        self.bin_start = start;
        self.bin_cells = pairs.par_iter().map(|&p| p as u32).collect();
    }
}

/// Bins per axis for `nc` cells in a box of extents `ext`: about `nc` bins of (nearly)
/// equal side `s`, `n_k = ceil(ext_k / s)`. Axes thinner than `s` get one bin and `s` is
/// recomputed over the others, so the total stays below `2^d nc` (and at least 1 per
/// axis) however flat the box is.
fn bins_per_axis(d: usize, ext: &[f64; 3], nc: usize) -> [usize; 3] {
    let mut n = [1usize; 3];
    if nc == 0 {
        return n;
    }
    let mut active = [false; 3];
    for k in 0..d {
        active[k] = ext[k] > 0.0 && ext[k].is_finite();
    }
    let side = loop {
        let na = active.iter().filter(|&&a| a).count();
        if na == 0 {
            return n;
        }
        let volume: f64 = (0..3).filter(|&k| active[k]).map(|k| ext[k]).product();
        let side = (volume / nc as f64).powf(1.0 / na as f64);
        let mut changed = false;
        for k in 0..3 {
            if active[k] && ext[k] < side {
                active[k] = false;
                changed = true;
            }
        }
        if !changed {
            break side;
        }
    };
    for k in 0..3 {
        if active[k] && side > 0.0 {
            n[k] = ((ext[k] / side).ceil() as usize).clamp(1, nc);
        }
    }
    n
}

/// Solves `J ξ = p` for an affine simplex with vertices `verts` (relative to vertex 0),
/// returning `ξ` when it lies in the reference simplex within the tolerance.
fn simplex_inverse(d: usize, verts: &[[f64; 3]; 8], p: &[f64; 3]) -> Option<[f64; 3]> {
    let mut j = [[0.0; 3]; 3];
    for i in 0..d {
        for k in 0..d {
            j[i][k] = verts[k + 1][i];
        }
    }
    let (det, adj) = adjugate(d, &j);
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let r = 1.0 / det;
    let mut xi = [0.0; 3];
    for k in 0..d {
        xi[k] = r * (0..d).map(|i| adj[k][i] * p[i]).sum::<f64>();
    }
    let sum: f64 = xi[..d].iter().sum();
    let inside = xi[..d].iter().all(|&t| t >= -LOCATE_TOLERANCE) && sum <= 1.0 + LOCATE_TOLERANCE;
    inside.then_some(xi)
}

/// Solves `x(ξ) = p` for a bilinear/trilinear cell with vertices `verts` (lexicographic,
/// relative to vertex 0) by Newton's method from the reference centre, returning `ξ` when
/// it converged inside the reference cell within the tolerance.
fn tensor_inverse(d: usize, verts: &[[f64; 3]; 8], p: &[f64; 3]) -> Option<[f64; 3]> {
    let mut xi = [0.0; 3];
    for _ in 0..MAX_NEWTON {
        let (x, j) = multilinear_map(d, verts, &xi);
        let (det, adj) = adjugate(d, &j);
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let r = 1.0 / det;
        let mut step_max: f64 = 0.0;
        let mut far = false;
        for k in 0..d {
            let step = r * (0..d).map(|i| adj[k][i] * (x[i] - p[i])).sum::<f64>();
            xi[k] -= step;
            far |= xi[k].is_nan() || xi[k].abs() > NEWTON_ESCAPE;
            step_max = step_max.max(step.abs());
        }
        if far {
            return None;
        }
        if step_max <= NEWTON_STEP_TOL {
            let bound = 1.0 + 2.0 * LOCATE_TOLERANCE;
            return xi[..d].iter().all(|t| t.abs() <= bound).then_some(xi);
        }
    }
    None
}

/// Position and Jacobian `J[i][k] = ∂x_i/∂ξ_k` of the multilinear map with lexicographic
/// vertices `verts` (vertex `v` at reference corner `(±1, ±1, ±1)`, `+` for a set bit `k`
/// of `v` in direction `k`) at `xi`.
#[inline]
fn multilinear_map(d: usize, verts: &[[f64; 3]; 8], xi: &[f64; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    // 1-D factors (1 ∓ ξ)/2 and their derivatives ∓1/2, per direction and bit
    let mut f = [[0.0; 2]; 3];
    for a in 0..d {
        f[a] = [0.5 * (1.0 - xi[a]), 0.5 * (1.0 + xi[a])];
    }
    const DF: [f64; 2] = [-0.5, 0.5];
    let mut x = [0.0; 3];
    let mut j = [[0.0; 3]; 3];
    for (v, xv) in verts.iter().enumerate().take(1 << d) {
        let bit = |a: usize| (v >> a) & 1;
        let mut value = 1.0;
        for a in 0..d {
            value *= f[a][bit(a)];
        }
        for i in 0..d {
            x[i] += value * xv[i];
        }
        for k in 0..d {
            let mut g = DF[bit(k)];
            for a in 0..d {
                if a != k {
                    g *= f[a][bit(a)];
                }
            }
            for i in 0..d {
                j[i][k] += g * xv[i];
            }
        }
    }
    (x, j)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_stay_near_one_per_cell_for_flat_boxes() {
        // a square: nc bins
        assert_eq!(bins_per_axis(2, &[1.0, 1.0, 0.0], 100), [10, 10, 1]);
        // a strip: one row of bins
        let n = bins_per_axis(2, &[1.0, 1e-6, 0.0], 1000);
        assert_eq!(n[1], 1);
        assert!(n[0] >= 1000 && n[0] <= 1001, "{n:?}");
        // a plate in 3-D
        let n = bins_per_axis(3, &[1.0, 1.0, 1e-9], 10_000);
        assert_eq!(n[2], 1);
        assert!(n[0] * n[1] <= 4 * 10_000, "{n:?}");
        // degenerate inputs
        assert_eq!(bins_per_axis(3, &[0.0; 3], 10), [1, 1, 1]);
        assert_eq!(bins_per_axis(3, &[1.0; 3], 0), [1, 1, 1]);
    }

    #[test]
    fn the_scan_and_the_bins_find_the_same_cell() {
        use ferrofem_base::CellType;
        use ferrofem_mesh::{generate_box, BoxSpec};
        for (ct, dims) in [
            (CellType::Quadrilateral, vec![6, 5]),
            (CellType::Triangle, vec![4, 4]),
            (CellType::Hexahedron, vec![3, 4, 3]),
            (CellType::Tetrahedron, vec![2, 2, 2]),
        ] {
            let mut spec = BoxSpec::unit(ct, &dims);
            spec.perturb = 0.2;
            spec.seed = 5;
            let mesh = generate_box(&spec).unwrap();
            let d = mesh.dim();
            let loc = PointLocator::new(&mesh).unwrap();
            // a lattice through the box and beyond it, every vertex, and a NaN
            let mut points: Vec<Vec<f64>> = (0..7usize.pow(d as u32))
                .map(|i| {
                    (0..d)
                        .map(|k| -0.1 + 0.2 * ((i / 7usize.pow(k as u32)) % 7) as f64)
                        .collect()
                })
                .collect();
            points.extend((0..mesh.num_vertices()).map(|v| mesh.vertex(v).to_vec()));
            points.push(vec![f64::NAN; d]);
            let mut found = 0;
            for x in &points {
                let scanned = loc.locate_by_scan(x);
                assert_eq!(scanned, loc.locate_in_bins(x), "{ct:?} at {x:?}");
                found += scanned.is_some() as usize;
            }
            assert!(found > mesh.num_vertices(), "{ct:?}: {found} points found");
            // the locator scans its first queries, then uses its bins
            assert!(loc.bins.get().is_some());
            let fresh = PointLocator::new(&mesh).unwrap();
            for x in points.iter().take(SCANNED_QUERIES) {
                fresh.locate(x);
            }
            assert!(fresh.bins.get().is_none());
            fresh.locate(&points[0]);
            assert!(fresh.bins.get().is_some());
        }
    }
}
