//! Uniform refinement: every cell split into `2^d` children per level, so that a coarse
//! file mesh can be brought to the size a solve or a benchmark needs, and a sequence of
//! refinements gives a convergence study on the file's own geometry.
//!
//! Quadrilaterals and hexahedra are split in one step into an `m^d` lattice of children
//! (`m = 2^levels`) in their parent's reference coordinates: the children of a parent are
//! consecutive, lexicographic in the parent's axes (`a + m (b + m c)`), and each keeps its
//! parent's local axes, so the children of one parent tile it as a structured block (which
//! the GPU backend's lattice kernel sorts into its bricks). Triangles and tetrahedra are
//! split level by level into 4 and 8 children (red refinement; a tetrahedron's inner
//! octahedron along its shortest diagonal).
//!
//! Cells are straight-sided, so new vertices are placed by the parent's multilinear (or
//! affine) map; the old vertices keep their indices. Cell tags pass to the children, tagged
//! facets are split the same way, physical names are kept.

use crate::{Mesh, MeshError, TaggedFacets};
use ferrofem_base::CellType;
use std::collections::HashMap;

/// Up to four (vertex, weight numerator) pairs, sorted by vertex: the identity of a point
/// on a cell's boundary (a corner, an edge or a face point), the same from every cell that
/// shares it. Unused slots are `(u32::MAX, 0)`.
type PointKey = [(u32, u32); 4];

/// New vertices of a refinement: the old ones first (same indices), then the new points,
/// shared points found by key.
struct Points {
    dim: usize,
    coords: Vec<f64>,
    shared: HashMap<PointKey, u32>,
}

impl Points {
    fn new(mesh: &Mesh) -> Points {
        Points {
            dim: mesh.dim(),
            coords: mesh.coords().to_vec(),
            shared: HashMap::new(),
        }
    }

    /// The point with weights `w[i] / denom` on vertices `v[i]` (zero weights allowed):
    /// an old vertex where one weight is whole, else a point looked up by key (boundary
    /// points, `unique` false) or always new (`unique`: inside one cell).
    fn point(&mut self, v: &[u32], w: &[u32], denom: u32, unique: bool, old: &[f64]) -> u32 {
        let nz = w.iter().filter(|&&x| x != 0).count();
        if nz == 1 {
            let i = w.iter().position(|&x| x != 0).unwrap_or(0);
            return v[i];
        }
        let key = (!unique && nz <= 4).then(|| {
            let mut k: PointKey = [(u32::MAX, 0); 4];
            let mut n = 0;
            for (&vi, &wi) in v.iter().zip(w) {
                if wi != 0 {
                    k[n] = (vi, wi);
                    n += 1;
                }
            }
            k.sort_unstable();
            k
        });
        if let Some(k) = key {
            if let Some(&id) = self.shared.get(&k) {
                return id;
            }
        }
        let id = (self.coords.len() / self.dim) as u32;
        for a in 0..self.dim {
            let x: f64 = v
                .iter()
                .zip(w)
                .map(|(&vi, &wi)| wi as f64 * old[vi as usize * self.dim + a])
                .sum();
            self.coords.push(x / denom as f64);
        }
        if let Some(k) = key {
            self.shared.insert(k, id);
        }
        id
    }
}

/// Weights of the `2^d` lexicographic corners of a `d`-cube at lattice point `t` (each
/// coordinate in `0..=m`), times `m` for each of the `pad` axes a facet lacks, so that a
/// facet's points get the same weights as the cells' points on it.
fn cube_weights(t: &[usize], m: usize, pad: usize) -> Vec<u32> {
    let d = t.len();
    (0..1usize << d)
        .map(|b| {
            let mut w = m.pow(pad as u32);
            for (a, &ta) in t.iter().enumerate() {
                w *= if b >> a & 1 == 1 { ta } else { m - ta };
            }
            w as u32
        })
        .collect()
}

/// The lattice indices (of [`lattice`]`(d, m)`) of the corners of every child of a
/// `d`-cube split into `m^d`: children lexicographic, each one's `2^d` corners
/// lexicographic, so that chunks of `2^d` are the children's vertices.
fn child_corners(d: usize, m: usize) -> Vec<usize> {
    let n = m + 1;
    lattice(d, m - 1)
        .iter()
        .flat_map(|child| {
            (0..1usize << d).map(move |corner| {
                (0..d)
                    .rev()
                    .fold(0, |li, a| li * n + child[a] + (corner >> a & 1))
            })
        })
        .collect()
}

/// Lexicographic lattice points `0..=m` in `d` dimensions (first coordinate fastest).
fn lattice(d: usize, m: usize) -> Vec<Vec<usize>> {
    let n = m + 1;
    (0..n.pow(d as u32))
        .map(|mut i| {
            (0..d)
                .map(|_| {
                    let c = i % n;
                    i /= n;
                    c
                })
                .collect()
        })
        .collect()
}

impl Mesh {
    /// This mesh refined uniformly `levels` times: every cell split into `2^(d levels)`
    /// children (see the module documentation for their order and orientation), tags,
    /// tagged facets and names carried over. `levels = 0` returns a copy.
    ///
    /// Errors: [`MeshError::TooLarge`] when the refined mesh would need more than 32-bit
    /// indices; [`MeshError::Memory`] when [`Mesh::refinement_bytes`] exceeds the available
    /// memory (checked before anything is allocated).
    pub fn refined(&self, levels: usize) -> Result<Mesh, MeshError> {
        let d = self.dim();
        let ct = self.cell_type();
        // the connectivity entries and vertices of the refined mesh (at most: every cell's
        // lattice points counted once per cell), checked before any allocation
        let nc = self.num_cells() as u128;
        let (entries, points) = if levels >= 16 {
            // (2^48 children of one cell, far past the limit; no overflow below)
            (u128::MAX, u128::MAX)
        } else {
            let m = 1u128 << levels;
            (
                nc * m.pow(d as u32) * ct.num_vertices() as u128,
                nc * (m + 1).pow(d as u32) + self.num_vertices() as u128,
            )
        };
        let limit = u32::MAX as u128;
        if entries > limit || points > limit {
            let (what, count) = if entries > limit {
                ("connectivity entries after refinement", entries)
            } else {
                ("vertices after refinement (at most)", points)
            };
            return Err(MeshError::TooLarge {
                what,
                count: count.min(usize::MAX as u128) as usize,
            });
        }
        if levels == 0 {
            return Ok(self.clone());
        }
        let cells = self.num_cells() as f64 * 2f64.powi((d * levels) as i32);
        ferrofem_base::check_fits(
            &format!("the mesh refined {levels} times ({cells:.3e} cells)"),
            self.refinement_bytes(levels),
        )
        .map_err(|e| e.with_remedy("give fewer refinement levels, or a coarser mesh"))?;
        if ct.is_simplex() {
            let mut mesh = self.clone();
            for _ in 0..levels {
                mesh = mesh.red_refined()?;
            }
            Ok(mesh)
        } else {
            self.lattice_refined(1 << levels)
        }
    }

    /// Bytes that refining this mesh `levels` times and using the result take, estimated
    /// from the counts alone, for refusing a refinement that would not fit in memory
    /// before it starts (`ferrofem_base::check_fits`). With `C`, `V` and `F` the cells,
    /// vertices and tagged facets of the refined mesh, `n_v`, `n_f` and `f_v` the vertices
    /// and facets per cell and vertices per facet:
    ///
    /// - the refined mesh: `4 (n_v + 1) C + 8 d V + 4 (f_v + 1) F`, with `V` the bound
    ///   `V₀ + C₀ ((m + 1)^d − 2^d)` of lattice refinement (`m = 2^levels`), and for
    ///   red refinement `V ← V + E` per level with `E ≈ 1.1 (V + C)` edges (Euler's
    ///   formula on a mesh whose facets are shared by two cells);
    /// - the map of shared new points while refining: about 84 bytes (a hashed key and
    ///   index, the table growing by doubling) per point on a parent's boundary;
    /// - the sorted list of every cell's facets that validation, orientation and boundary
    ///   detection build: `2 · 24 n_f C`.
    ///
    /// It matched the peak memory of `ferrofem mesh FILE --refine L` within 15 % on
    /// hexahedral, tetrahedral, quadrilateral and triangular files.
    pub fn refinement_bytes(&self, levels: usize) -> u64 {
        let ct = self.cell_type();
        let d = self.dim() as i32;
        let (c0, v0) = (self.num_cells() as f64, self.num_vertices() as f64);
        let f0 = self.facets().len() as f64;
        let (nv, nf) = (ct.num_vertices() as f64, ct.facets().len() as f64);
        let fv = self.facets().vertices_per_facet as f64;
        let m = 2f64.powi(levels.min(1000) as i32);
        let cells = c0 * m.powi(d);
        let facets = f0 * m.powi(d - 1);
        let (vertices, shared) = if ct.is_simplex() {
            let (mut v, mut c, mut shared) = (v0, c0, 0.0f64);
            for _ in 0..levels.min(1000) {
                let edges = 1.1 * (v + c);
                shared = shared.max(edges);
                v += edges;
                c *= 2f64.powi(d);
            }
            (v, shared)
        } else {
            let boundary = (m + 1.0).powi(d) - (m - 1.0).max(0.0).powi(d);
            (
                v0 + c0 * ((m + 1.0).powi(d) - 2f64.powi(d)),
                c0 * boundary / 2.0,
            )
        };
        let mesh = 4.0 * (nv + 1.0) * cells + 8.0 * d as f64 * vertices + 4.0 * (fv + 1.0) * facets;
        let points_map = 84.0 * shared;
        let facet_list = 2.0 * 24.0 * nf * cells;
        (mesh + points_map + facet_list).min(u64::MAX as f64) as u64
    }

    /// Quadrilaterals and hexahedra split into an `m^d` lattice of children each.
    fn lattice_refined(&self, m: usize) -> Result<Mesh, MeshError> {
        let d = self.dim();
        let nv = self.cell_type().num_vertices();
        let old = self.coords();
        let mut pts = Points::new(self);
        let denom = m.pow(d as u32) as u32;
        let lat = lattice(d, m);
        let weights: Vec<Vec<u32>> = lat.iter().map(|t| cube_weights(t, m, 0)).collect();
        let inside: Vec<bool> = lat
            .iter()
            .map(|t| t.iter().all(|&c| c > 0 && c < m))
            .collect();
        let children = m.pow(d as u32);
        let mut cells = Vec::with_capacity(self.num_cells() * children * nv);
        let mut tags = Vec::with_capacity(self.num_cells() * children);
        let mut ids = vec![0u32; lat.len()];
        let corners = child_corners(d, m);
        for c in 0..self.num_cells() {
            let v = self.cell(c);
            for (i, w) in weights.iter().enumerate() {
                ids[i] = pts.point(v, w, denom, inside[i], old);
            }
            // the children, lexicographic; each one's vertices lexicographic
            cells.extend(corners.iter().map(|&li| ids[li]));
            tags.extend(std::iter::repeat_n(self.cell_tags()[c], children));
        }
        // facets: segments (2-D) or lexicographic quadrilaterals (3-D), split alike
        let fd = d - 1;
        let flat = lattice(fd, m);
        let fweights: Vec<Vec<u32>> = flat.iter().map(|t| cube_weights(t, m, 1)).collect();
        let f = self.facets();
        let mut fv = Vec::with_capacity(f.vertices.len() * m.pow(fd as u32));
        let mut ftags = Vec::with_capacity(f.len() * m.pow(fd as u32));
        let mut fids = vec![0u32; flat.len()];
        let fcorners = child_corners(fd, m);
        for i in 0..f.len() {
            let v = f.facet(i);
            for (k, w) in fweights.iter().enumerate() {
                fids[k] = pts.point(v, w, denom, false, old);
            }
            fv.extend(fcorners.iter().map(|&li| fids[li]));
            ftags.extend(std::iter::repeat_n(f.tags[i], m.pow(fd as u32)));
        }
        self.assemble(pts.coords, cells, tags, fv, ftags)
    }

    /// Triangles and tetrahedra split once into 4 and 8 children, positively oriented.
    fn red_refined(&self) -> Result<Mesh, MeshError> {
        let ct = self.cell_type();
        let d = self.dim();
        let old = self.coords();
        let mut pts = Points::new(self);
        let mid = |pts: &mut Points, a: u32, b: u32| pts.point(&[a, b], &[1, 1], 2, false, old);
        let nv = ct.num_vertices();
        let kids = 1usize << d;
        let mut cells = Vec::with_capacity(self.cells().len() * kids);
        let mut tags = Vec::with_capacity(self.num_cells() * kids);
        for c in 0..self.num_cells() {
            let v = self.cell(c);
            let tag = self.cell_tags()[c];
            if ct == CellType::Triangle {
                let (m01, m12, m02) = (
                    mid(&mut pts, v[0], v[1]),
                    mid(&mut pts, v[1], v[2]),
                    mid(&mut pts, v[0], v[2]),
                );
                for k in [
                    [v[0], m01, m02],
                    [m01, v[1], m12],
                    [m02, m12, v[2]],
                    [m01, m12, m02],
                ] {
                    cells.extend_from_slice(&k);
                }
            } else {
                let m01 = mid(&mut pts, v[0], v[1]);
                let m02 = mid(&mut pts, v[0], v[2]);
                let m03 = mid(&mut pts, v[0], v[3]);
                let m12 = mid(&mut pts, v[1], v[2]);
                let m13 = mid(&mut pts, v[1], v[3]);
                let m23 = mid(&mut pts, v[2], v[3]);
                for k in [
                    [v[0], m01, m02, m03],
                    [m01, v[1], m12, m13],
                    [m02, m12, v[2], m23],
                    [m03, m13, m23, v[3]],
                ] {
                    cells.extend_from_slice(&k);
                }
                // the octahedron around its shortest diagonal; the other two opposite
                // pairs alternate around it
                let pairs = [(m01, m23), (m02, m13), (m03, m12)];
                let len = |p: &Points, (a, b): (u32, u32)| -> f64 {
                    (0..3)
                        .map(|k| {
                            let x = p.coords[a as usize * 3 + k] - p.coords[b as usize * 3 + k];
                            x * x
                        })
                        .sum()
                };
                let s = (0..3)
                    .min_by(|&i, &j| len(&pts, pairs[i]).total_cmp(&len(&pts, pairs[j])))
                    .unwrap_or(0);
                let (d0, d1) = pairs[s];
                let (p0, p1) = pairs[(s + 1) % 3];
                let (q0, q1) = pairs[(s + 2) % 3];
                for (a, b) in [(p0, q0), (q0, p1), (p1, q1), (q1, p0)] {
                    cells.extend_from_slice(&[d0, d1, a, b]);
                }
            }
            tags.extend(std::iter::repeat_n(tag, kids));
        }
        debug_assert_eq!(cells.len(), tags.len() * nv);
        // facets: segments (2-D) or triangles (3-D), split at their edges' midpoints
        let f = self.facets();
        let mut fv = Vec::new();
        let mut ftags = Vec::new();
        for i in 0..f.len() {
            let v = f.facet(i);
            if d == 2 {
                let m = mid(&mut pts, v[0], v[1]);
                fv.extend_from_slice(&[v[0], m, m, v[1]]);
                ftags.extend([f.tags[i]; 2]);
            } else {
                let (m01, m12, m02) = (
                    mid(&mut pts, v[0], v[1]),
                    mid(&mut pts, v[1], v[2]),
                    mid(&mut pts, v[0], v[2]),
                );
                fv.extend_from_slice(&[
                    v[0], m01, m02, m01, v[1], m12, m02, m12, v[2], m01, m12, m02,
                ]);
                ftags.extend([f.tags[i]; 4]);
            }
        }
        let mut mesh = self.assemble(pts.coords, cells, tags, fv, ftags)?;
        // the inner children (and any corner child of a mirrored parent) put right; the
        // children of non-overlapping parents do not overlap, so no fold check is needed
        mesh.orient_cells_locally()?;
        Ok(mesh)
    }

    /// A mesh of this one's cell type and names from refined parts.
    fn assemble(
        &self,
        coords: Vec<f64>,
        cells: Vec<u32>,
        tags: Vec<i32>,
        facet_vertices: Vec<u32>,
        facet_tags: Vec<i32>,
    ) -> Result<Mesh, MeshError> {
        let facets = TaggedFacets {
            vertices_per_facet: self.facets().vertices_per_facet,
            vertices: facet_vertices,
            tags: facet_tags,
        };
        Ok(Mesh::new(self.cell_type(), coords, cells)?
            .with_cell_tags(tags)
            .with_facets(facets)?
            .with_names(self.physical_names().to_vec()))
    }
}
