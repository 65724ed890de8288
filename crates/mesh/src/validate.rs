//! Cell validity, orientation, quality and measure.
//!
//! Everything here is computed from *corner determinants*: at every vertex (corner) of a
//! cell, the determinant of the edge vectors leaving that corner along the reference axes.
//! For a simplex this is the determinant of the affine map from the unit simplex (the same
//! at every corner); for a quadrilateral or hexahedron it is `2^d` times the Jacobian
//! determinant of the multilinear map at that reference vertex, because the derivative of
//! the map along a reference axis at a corner is half the edge vector along that axis.
//! A cell is valid when every corner determinant is clearly positive.

use crate::{FacetSide, Mesh, MeshError};
use ferrofem_base::CellType;

/// A corner determinant counts as zero when its magnitude is at most this fraction of
/// `h^d`, with `h` the longest edge of the cell and `d` the dimension.
pub const DEGENERATE_TOLERANCE: f64 = 1e-12;

/// Vertex coordinates of one cell, padded to 3 components and 8 vertices.
pub(crate) type CellPoints = [[f64; 3]; 8];

/// Gathers the coordinates of cell `c`.
pub(crate) fn cell_points(mesh: &Mesh, c: usize) -> CellPoints {
    let d = mesh.dim();
    let mut p = [[0.0; 3]; 8];
    for (k, &v) in mesh.cell(c).iter().enumerate() {
        p[k][..d].copy_from_slice(mesh.vertex(v as usize));
    }
    p
}

fn sub(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn norm(a: &[f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

fn det2(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a[0] * b[1] - a[1] * b[0]
}

fn det3(a: &[f64; 3], b: &[f64; 3], c: &[f64; 3]) -> f64 {
    a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
        + a[2] * (b[0] * c[1] - b[1] * c[0])
}

/// Edge vector along reference axis `axis` at corner `v` of a tensor cell, pointing in
/// the positive reference direction.
fn tensor_edge(p: &CellPoints, v: usize, axis: usize) -> [f64; 3] {
    let bit = 1 << axis;
    sub(&p[v | bit], &p[v & !bit])
}

/// Corner determinants of a cell (see the module documentation), one per vertex.
pub(crate) fn corner_determinants(ct: CellType, p: &CellPoints) -> [f64; 8] {
    let mut d = [0.0; 8];
    match ct {
        CellType::Triangle => d = [det2(&sub(&p[1], &p[0]), &sub(&p[2], &p[0])); 8],
        CellType::Tetrahedron => {
            d = [det3(&sub(&p[1], &p[0]), &sub(&p[2], &p[0]), &sub(&p[3], &p[0])); 8];
        }
        CellType::Quadrilateral => {
            for (v, dv) in d.iter_mut().enumerate().take(4) {
                *dv = det2(&tensor_edge(p, v, 0), &tensor_edge(p, v, 1));
            }
        }
        CellType::Hexahedron => {
            for (v, dv) in d.iter_mut().enumerate() {
                *dv = det3(
                    &tensor_edge(p, v, 0),
                    &tensor_edge(p, v, 1),
                    &tensor_edge(p, v, 2),
                );
            }
        }
    }
    d
}

/// Factor turning a corner determinant into the Jacobian determinant of the reference map.
fn jacobian_factor(ct: CellType) -> f64 {
    match ct {
        CellType::Triangle | CellType::Tetrahedron => 1.0,
        CellType::Quadrilateral => 0.25,
        CellType::Hexahedron => 0.125,
    }
}

/// Longest edge of a cell.
pub(crate) fn max_edge_length(ct: CellType, p: &CellPoints) -> f64 {
    ct.edges()
        .iter()
        .map(|e| norm(&sub(&p[e[1]], &p[e[0]])))
        .fold(0.0, f64::max)
}

/// Scale-invariant shape quality of a cell: 1 for the regular simplex, the square and the
/// cube, smaller for distorted cells, `<= 0` for inverted ones.
///
/// Simplices use the mean ratio (`4√3·A / Σl²` for triangles, `12·(3V)^{2/3} / Σl²` for
/// tetrahedra, with the sign of the volume); tensor cells the minimum over corners of the
/// scaled corner Jacobian (corner determinant over the product of the corner's edge
/// lengths).
pub(crate) fn quality_of(ct: CellType, p: &CellPoints) -> f64 {
    let d = corner_determinants(ct, p);
    match ct {
        CellType::Triangle | CellType::Tetrahedron => {
            let sum_sq: f64 = ct
                .edges()
                .iter()
                .map(|e| {
                    let l = norm(&sub(&p[e[1]], &p[e[0]]));
                    l * l
                })
                .sum();
            if sum_sq <= 0.0 {
                return 0.0;
            }
            if ct == CellType::Triangle {
                // A = D / 2
                2.0 * 3f64.sqrt() * d[0] / sum_sq
            } else {
                // V = D / 6, so 3V = D / 2
                12.0 * d[0].signum() * (0.5 * d[0].abs()).powf(2.0 / 3.0) / sum_sq
            }
        }
        CellType::Quadrilateral | CellType::Hexahedron => {
            let dim = ct.dim();
            let mut q = f64::INFINITY;
            for (v, &dv) in d.iter().enumerate().take(ct.num_vertices()) {
                let lengths: f64 = (0..dim).map(|a| norm(&tensor_edge(p, v, a))).product();
                let scaled = if lengths > 0.0 { dv / lengths } else { 0.0 };
                q = q.min(scaled);
            }
            q
        }
    }
}

/// Signed measure (area or volume) of a cell: negative for inverted simplices; for tensor
/// cells the integral of the Jacobian determinant by the 2-point Gauss rule per axis,
/// which is exact for multilinear maps.
pub(crate) fn measure_of(ct: CellType, p: &CellPoints) -> f64 {
    match ct {
        CellType::Triangle => corner_determinants(ct, p)[0] / 2.0,
        CellType::Tetrahedron => corner_determinants(ct, p)[0] / 6.0,
        CellType::Quadrilateral => tensor_measure::<2>(p),
        CellType::Hexahedron => tensor_measure::<3>(p),
    }
}

/// Integral of det J over a `D`-dimensional tensor cell with 2 Gauss points per axis.
fn tensor_measure<const D: usize>(p: &CellPoints) -> f64 {
    const E: usize = 4; // edges per axis in a hexahedron (2 in a quadrilateral)
    let per_axis = 1 << (D - 1);
    // edges[a][i]: the i-th edge along axis a, from the vertex with bit a clear whose
    // other bits are i
    let mut edges = [[[0.0; 3]; E]; D];
    for (a, ea) in edges.iter_mut().enumerate() {
        let bit = 1 << a;
        for (i, e) in ea.iter_mut().enumerate().take(per_axis) {
            let v = ((i >> a) << (a + 1)) | (i & (bit - 1));
            *e = sub(&p[v | bit], &p[v]);
        }
    }
    // weights (1 ± ξ)/2 at the two Gauss points ξ = ∓1/√3: half[q bit][vertex bit]
    let g = 1.0 / 3f64.sqrt();
    let half = [
        [0.5 * (1.0 + g), 0.5 * (1.0 - g)],
        [0.5 * (1.0 - g), 0.5 * (1.0 + g)],
    ];
    let mut sum = 0.0;
    for q in 0..(1usize << D) {
        // dx/dξ_a is half the edges along a, interpolated multilinearly in the other
        // reference coordinates
        let mut jac = [[0.0; 3]; 3];
        for a in 0..D {
            for (i, e) in edges[a].iter().enumerate().take(per_axis) {
                let v = ((i >> a) << (a + 1)) | (i & ((1 << a) - 1));
                let mut w = 0.5;
                for b in 0..D {
                    if b != a {
                        w *= half[(q >> b) & 1][(v >> b) & 1];
                    }
                }
                for t in 0..3 {
                    jac[a][t] += w * e[t];
                }
            }
        }
        sum += if D == 2 {
            det2(&jac[0], &jac[1])
        } else {
            det3(&jac[0], &jac[1], &jac[2])
        };
    }
    sum // Gauss weights are all 1
}

/// Sign pattern of the corner determinants of one cell.
struct CornerSigns {
    positive: usize,
    negative: usize,
    zero: usize,
    /// Corner with the most negative determinant.
    worst_corner: usize,
    /// Corner determinant of least magnitude.
    smallest: f64,
    /// Longest edge.
    scale: f64,
}

fn corner_signs(ct: CellType, p: &CellPoints) -> (CornerSigns, [f64; 8]) {
    let d = corner_determinants(ct, p);
    let scale = max_edge_length(ct, p);
    let tol = DEGENERATE_TOLERANCE * scale.powi(ct.dim() as i32);
    let mut s = CornerSigns {
        positive: 0,
        negative: 0,
        zero: 0,
        worst_corner: 0,
        smallest: f64::INFINITY,
        scale,
    };
    for (k, &dk) in d.iter().enumerate().take(ct.num_vertices()) {
        if dk > tol {
            s.positive += 1;
        } else if dk < -tol {
            s.negative += 1;
        } else {
            s.zero += 1;
        }
        if dk < d[s.worst_corner] {
            s.worst_corner = k;
        }
        if dk.abs() < s.smallest.abs() {
            s.smallest = dk;
        }
    }
    (s, d)
}

/// Accumulates a sum with Neumaier's compensation, so that totals over millions of cells
/// keep full precision.
pub(crate) fn compensated_sum(values: impl Iterator<Item = f64>) -> f64 {
    let mut sum = 0.0f64;
    let mut comp = 0.0f64;
    for x in values {
        let t = sum + x;
        if sum.abs() >= x.abs() {
            comp += (sum - t) + x;
        } else {
            comp += (x - t) + sum;
        }
        sum = t;
    }
    sum + comp
}

impl Mesh {
    /// Checks that every cell is positively oriented and not degenerate, judging the
    /// corner Jacobian determinants (the affine one for simplices, the multilinear map's
    /// at each vertex for quadrilaterals and hexahedra).
    ///
    /// Returns the error for the first bad cell: [`MeshError::InvertedCell`] when some
    /// corner determinant is clearly negative, [`MeshError::DegenerateCell`] when one is
    /// zero relative to `h^d` (`h` the cell's longest edge, see [`DEGENERATE_TOLERANCE`]).
    pub fn validate(&self) -> Result<(), MeshError> {
        let ct = self.cell_type();
        let factor = jacobian_factor(ct);
        for c in 0..self.num_cells() {
            let (s, d) = corner_signs(ct, &cell_points(self, c));
            if s.negative > 0 {
                return Err(MeshError::InvertedCell {
                    cell: c,
                    corner: s.worst_corner,
                    det: d[s.worst_corner] * factor,
                });
            }
            if s.zero > 0 {
                return Err(MeshError::DegenerateCell {
                    cell: c,
                    det: s.smallest * factor,
                    scale: s.scale,
                });
            }
        }
        Ok(())
    }

    /// Reorders the vertices of every cell that is inverted as a whole (all corner
    /// determinants negative, as when a file uses the opposite orientation) so that it
    /// becomes positively oriented: simplices swap local vertices 1 and 2; quadrilaterals
    /// and hexahedra mirror their lexicographic order along the first reference axis
    /// (local vertex `v` takes the old `v ^ 1`). Returns how many cells were flipped.
    ///
    /// Cells may be listed in any mix of vertex orders, but the mesh must not fold over
    /// itself: the two cells sharing an interior facet must lie on opposite sides of it.
    /// A cell flipped over a neighbour (an overlap, which individual reorientation would
    /// hide) is [`MeshError::FoldedCells`], naming both cells and the facet.
    ///
    /// Nothing is changed when an error is returned: [`MeshError::DegenerateCell`] for a
    /// cell with a (numerically) zero corner determinant, [`MeshError::TangledCell`] for a
    /// cell whose corner determinants have mixed signs, which no reordering can fix,
    /// [`MeshError::FoldedCells`] for a fold and [`MeshError::NonManifoldFacet`] for a
    /// facet shared by more than two cells.
    pub fn orient_cells(&mut self) -> Result<usize, MeshError> {
        let flip = self.cells_to_flip()?;
        self.check_folds(&flip)?;
        self.flip_cells(&flip);
        Ok(flip.len())
    }

    /// Like [`Mesh::orient_cells`] without the fold check: for meshes whose cells are
    /// known not to overlap, such as the children of a uniformly refined fold-free mesh.
    pub(crate) fn orient_cells_locally(&mut self) -> Result<usize, MeshError> {
        let flip = self.cells_to_flip()?;
        self.flip_cells(&flip);
        Ok(flip.len())
    }

    /// The cells that are inverted as a whole; an error for degenerate or tangled cells.
    fn cells_to_flip(&self) -> Result<Vec<usize>, MeshError> {
        let ct = self.cell_type();
        let factor = jacobian_factor(ct);
        let mut flip = Vec::new();
        for c in 0..self.num_cells() {
            let (s, _) = corner_signs(ct, &cell_points(self, c));
            if s.zero > 0 {
                return Err(MeshError::DegenerateCell {
                    cell: c,
                    det: s.smallest * factor,
                    scale: s.scale,
                });
            }
            if s.negative == ct.num_vertices() {
                flip.push(c);
            } else if s.negative > 0 {
                return Err(MeshError::TangledCell {
                    cell: c,
                    negative: s.negative,
                    corners: ct.num_vertices(),
                });
            }
        }
        Ok(flip)
    }

    /// Mirrors the vertex order of the given cells.
    fn flip_cells(&mut self, flip: &[usize]) {
        let ct = self.cell_type();
        let nv = ct.num_vertices();
        let cells = self.cells_mut();
        for &c in flip {
            let cell = &mut cells[c * nv..(c + 1) * nv];
            if ct.is_simplex() {
                cell.swap(1, 2);
            } else {
                for v in (0..nv).step_by(2) {
                    cell.swap(v, v + 1);
                }
            }
        }
    }

    /// Checks every interior facet for a fold: its two cells on the same side of it.
    ///
    /// The test is geometric and independent of how the cells list their vertices. At a
    /// corner `g` of the facet, with the facet's edges from `g` taken in one fixed order
    /// (by global vertex index) as tangents, each cell's side is the sign of the
    /// determinant of those tangents and the cell's edge leaving the facet at `g`. That
    /// determinant is, up to sign, the cell's corner determinant at `g`, which
    /// [`Mesh::cells_to_flip`] has already checked to be clearly non-zero. Two cells that
    /// meet properly lie on opposite sides; the same sign means they overlap next to the
    /// facet.
    ///
    /// One corner decides: every corner determinant of a cell has the same sign (else it
    /// is tangled), and when both cells give the facet the same edges, the factor relating
    /// each cell's corner determinant to its side changes from corner to corner in the
    /// same way for both (the two cells' facet numberings differ by a symmetry of the
    /// facet). Hexahedra whose shared face joins its four vertices by different edges
    /// (a non-conforming face) are checked at every corner.
    ///
    /// `flip` (the cells listed with mirrored vertex order) only decides which cell of a
    /// folded pair the error names first.
    fn check_folds(&self, flip: &[usize]) -> Result<(), MeshError> {
        let ct = self.cell_type();
        let facets = ct.facets();
        // leaving[l][k]: the local vertex joined by an edge to the k-th vertex of facet l
        // that does not lie on the facet (unique for all four cell types)
        let leaving: Vec<Vec<usize>> = facets
            .iter()
            .map(|f| {
                f.iter()
                    .map(|&lv| {
                        ct.edges()
                            .iter()
                            .filter_map(|e| match *e {
                                [a, b] if a == lv => Some(b),
                                [a, b] if b == lv => Some(a),
                                _ => None,
                            })
                            .find(|w| !f.contains(w))
                            .expect("every facet vertex has an edge leaving the facet")
                    })
                    .collect()
            })
            .collect();
        let incidence = self.facet_incidence()?;
        let per = incidence.vertices_per_facet();
        let mut first: Option<(FacetSide, FacetSide, usize)> = None;
        let mut folds = 0usize;
        for f in 0..incidence.num_facets() {
            let (a, Some(b)) = incidence.sides(f) else {
                continue;
            };
            let same_side = |k: usize| {
                let (sa, sb) = self.facet_sides(&facets, &leaving, a, b, k);
                (sa > 0.0) == (sb > 0.0)
            };
            let folded = same_side(0)
                || (per == 4 && !self.same_face_edges(&facets, a, b) && (1..per).any(same_side));
            if folded {
                folds += 1;
                first.get_or_insert((a, b, f));
            }
        }
        let Some((a, b, facet)) = first else {
            return Ok(());
        };
        // Name first the cell whose listed orientation disagrees with most of the mesh's
        // cells, when exactly one of the two does: that is the cell that was flipped over.
        let (a, b) = (a.cell as usize, b.cell as usize);
        let mirrored_majority = 2 * flip.len() > self.num_cells();
        let odd = |c: usize| flip.binary_search(&c).is_ok() != mirrored_majority;
        let (cell, neighbor) = if odd(a) && !odd(b) { (a, b) } else { (b, a) };
        Err(MeshError::FoldedCells {
            cell,
            neighbor,
            facet: incidence.vertices(facet).to_vec(),
            folds,
        })
    }

    /// Whether the cells of a hexahedron face `a`, `b` join its four vertices by the same
    /// edges: the vertex diagonally opposite the face's first vertex is the same in both.
    fn same_face_edges(&self, facets: &[&[usize]], a: FacetSide, b: FacetSide) -> bool {
        let fa = facets[a.local as usize];
        let fb = facets[b.local as usize];
        let (cell_a, cell_b) = (self.cell(a.cell as usize), self.cell(b.cell as usize));
        // lexicographic face positions: position k is diagonal to k ^ 3
        match fb.iter().position(|&lv| cell_b[lv] == cell_a[fa[0]]) {
            Some(kb) => cell_b[fb[kb ^ 3]] == cell_a[fa[3]],
            None => false,
        }
    }

    /// The sides of cells `a` and `b` of their shared facet at its corner `k` (the `k`-th
    /// vertex of the facet as cell `a` lists it), as determinants of the facet's edges
    /// from that corner and each cell's edge leaving the facet there.
    fn facet_sides(
        &self,
        facets: &[&[usize]],
        leaving: &[Vec<usize>],
        a: FacetSide,
        b: FacetSide,
        k: usize,
    ) -> (f64, f64) {
        let fa = facets[a.local as usize];
        let fb = facets[b.local as usize];
        let (cell_a, cell_b) = (self.cell(a.cell as usize), self.cell(b.cell as usize));
        let g = cell_a[fa[k]];
        // the facet's neighbours of corner k, in increasing global index
        let mut tangents = [0u32; 2];
        let nt = match fa.len() {
            2 => {
                tangents[0] = cell_a[fa[1 - k]];
                1
            }
            3 => {
                let (m1, m2) = match k {
                    0 => (1, 2),
                    1 => (0, 2),
                    _ => (0, 1),
                };
                tangents = [cell_a[fa[m1]], cell_a[fa[m2]]];
                2
            }
            _ => {
                // lexicographic quadrilateral face: neighbours of position k are k^1, k^2
                tangents = [cell_a[fa[k ^ 1]], cell_a[fa[k ^ 2]]];
                2
            }
        };
        tangents[..nt].sort_unstable();
        let kb = fb.iter().position(|&lv| cell_b[lv] == g).unwrap_or(0);
        let leave_a = cell_a[leaving[a.local as usize][k]];
        let leave_b = cell_b[leaving[b.local as usize][kb]];
        let d = self.dim();
        let point = |v: u32| {
            let mut p = [0.0; 3];
            p[..d].copy_from_slice(self.vertex(v as usize));
            p
        };
        let x = point(g);
        let t = [sub(&point(tangents[0]), &x), sub(&point(tangents[1]), &x)];
        let side = |w: u32| {
            let e = sub(&point(w), &x);
            if nt == 1 {
                det2(&t[0], &e)
            } else {
                det3(&t[0], &t[1], &e)
            }
        };
        (side(leave_a), side(leave_b))
    }

    /// Shape quality of every cell, scale-invariant, in `(0, 1]` for valid cells (1 for
    /// the regular simplex, the square and the cube) and `<= 0` for inverted ones.
    ///
    /// Simplices use the mean ratio; quadrilaterals and hexahedra the minimum over corners
    /// of the scaled Jacobian (corner determinant over the product of the lengths of the
    /// edges meeting there).
    pub fn cell_quality(&self) -> Vec<f64> {
        let ct = self.cell_type();
        (0..self.num_cells())
            .map(|c| quality_of(ct, &cell_points(self, c)))
            .collect()
    }

    /// Smallest and largest cell quality (see [`Mesh::cell_quality`]); `(+inf, -inf)` for
    /// a mesh without cells.
    pub fn quality_range(&self) -> (f64, f64) {
        self.cell_quality()
            .into_iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), q| {
                (lo.min(q), hi.max(q))
            })
    }

    /// Signed area or volume of cell `c` (negative for an inverted simplex). Tensor cells
    /// integrate the Jacobian determinant with 2 Gauss points per axis, which is exact
    /// for their multilinear maps.
    ///
    /// # Panics
    /// If `c >= self.num_cells()`.
    pub fn cell_measure(&self, c: usize) -> f64 {
        measure_of(self.cell_type(), &cell_points(self, c))
    }

    /// Sum of all cell measures (compensated summation): the area or volume of the domain
    /// for a valid mesh.
    pub fn total_measure(&self) -> f64 {
        let ct = self.cell_type();
        compensated_sum((0..self.num_cells()).map(|c| measure_of(ct, &cell_points(self, c))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference vertices of a cell type, mapped by `x -> a x + b` (per axis scale) and
    /// returned as a one-cell mesh.
    fn one_cell(ct: CellType, map: impl Fn([f64; 3]) -> [f64; 3]) -> Mesh {
        let d = ct.dim();
        let mut coords = Vec::new();
        for v in 0..ct.num_vertices() {
            let x = map(ct.reference_vertex(v));
            coords.extend_from_slice(&x[..d]);
        }
        let cells = (0..ct.num_vertices() as u32).collect();
        Mesh::new(ct, coords, cells).expect("valid one-cell mesh")
    }

    fn regular(ct: CellType) -> Mesh {
        match ct {
            CellType::Triangle => Mesh::new(
                ct,
                vec![0.0, 0.0, 1.0, 0.0, 0.5, 0.75f64.sqrt()],
                vec![0, 1, 2],
            ),
            CellType::Tetrahedron => {
                let s = 1.0 / 2f64.sqrt();
                Mesh::new(
                    ct,
                    vec![1.0, 0.0, -s, -1.0, 0.0, -s, 0.0, 1.0, s, 0.0, -1.0, s],
                    vec![0, 1, 2, 3],
                )
                .map(|mut m| {
                    // make it positively oriented whatever the listing above gives
                    m.orient_cells().expect("regular tet is not degenerate");
                    m
                })
            }
            _ => Ok(one_cell(ct, |x| x)),
        }
        .expect("valid mesh")
    }

    #[test]
    fn ideal_cells_have_quality_one_and_known_measure() {
        for ct in CellType::ALL {
            let m = regular(ct);
            m.validate().expect("ideal cell is valid");
            let q = m.cell_quality()[0];
            assert!((q - 1.0).abs() < 1e-12, "{ct}: quality {q}");
            // scaling and translating leaves quality unchanged
            let mut scaled = m.clone();
            for (i, x) in scaled.coords_mut().iter_mut().enumerate() {
                *x = 1e-3 * *x + [3.0, -2.0, 5.0][i % ct.dim()];
            }
            let qs = scaled.cell_quality()[0];
            assert!((qs - 1.0).abs() < 1e-9, "{ct}: scaled quality {qs}");
        }
        // reference cells: measures known in closed form
        for ct in CellType::ALL {
            let m = one_cell(ct, |x| x);
            assert!(
                (m.total_measure() - ct.reference_measure()).abs() < 1e-14,
                "{ct}"
            );
        }
    }

    #[test]
    fn multilinear_measure_is_exact() {
        // a general (non-parallelogram) quad: area by the shoelace formula
        let quad = Mesh::new(
            CellType::Quadrilateral,
            // lexicographic: (0,0) (3,0.5) (0.2,2) (2.5,3)
            vec![0.0, 0.0, 3.0, 0.5, 0.2, 2.0, 2.5, 3.0],
            vec![0, 1, 2, 3],
        )
        .unwrap();
        let ccw = [[0.0, 0.0], [3.0, 0.5], [2.5, 3.0], [0.2, 2.0]];
        let shoelace: f64 = (0..4)
            .map(|i| {
                let (a, b) = (ccw[i], ccw[(i + 1) % 4]);
                a[0] * b[1] - a[1] * b[0]
            })
            .sum::<f64>()
            / 2.0;
        assert!((quad.total_measure() - shoelace).abs() < 1e-13);

        // a hexahedron with one corner pulled out: split into 6 Kuhn tets of the same
        // vertices would not be exact (faces are not planar), so compare against a fine
        // midpoint-rule integral of det J instead.
        let hex = one_cell(CellType::Hexahedron, |x| {
            let bump = if x == [1.0, 1.0, 1.0] { 0.7 } else { 0.0 };
            [
                x[0] + bump,
                x[1] + 0.3 * x[0] + bump,
                x[2] + 0.1 * x[0] * x[1] + bump,
            ]
        });
        let p = cell_points(&hex, 0);
        let n = 60;
        let h = 2.0 / n as f64;
        let mut fine = 0.0;
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let xi = [
                        -1.0 + (i as f64 + 0.5) * h,
                        -1.0 + (j as f64 + 0.5) * h,
                        -1.0 + (k as f64 + 0.5) * h,
                    ];
                    // det J at xi by central differences of the trilinear map (exact for
                    // a map linear in each variable)
                    let map = |y: [f64; 3]| -> [f64; 3] {
                        let mut x = [0.0; 3];
                        for (v, pv) in p.iter().enumerate() {
                            let w: f64 = (0..3)
                                .map(|a| {
                                    let s = if (v >> a) & 1 == 1 { 1.0 } else { -1.0 };
                                    0.5 * (1.0 + s * y[a])
                                })
                                .product();
                            for t in 0..3 {
                                x[t] += w * pv[t];
                            }
                        }
                        x
                    };
                    let col = |a: usize| {
                        let (mut yp, mut ym) = (xi, xi);
                        yp[a] += 0.5;
                        ym[a] -= 0.5;
                        sub(&map(yp), &map(ym))
                    };
                    fine += det3(&col(0), &col(1), &col(2)) * h * h * h;
                }
            }
        }
        // midpoint rule error is O(h^2) for the quadratic det J
        assert!(
            (hex.total_measure() - fine).abs() < 1e-3 * fine,
            "{} vs {fine}",
            hex.total_measure()
        );
        assert!(hex.total_measure() > 8.0);
    }

    #[test]
    fn validate_finds_inverted_and_degenerate_cells_by_index() {
        for ct in CellType::ALL {
            // three copies of the reference cell, far apart (no shared vertices)
            let d = ct.dim();
            let nv = ct.num_vertices();
            let mut coords = Vec::new();
            let mut cells = Vec::new();
            for copy in 0..3 {
                for v in 0..nv {
                    let x = ct.reference_vertex(v);
                    coords.extend((0..d).map(|a| x[a] + 10.0 * copy as f64));
                    cells.push((copy * nv + v) as u32);
                }
            }
            let good = Mesh::new(ct, coords.clone(), cells.clone()).unwrap();
            good.validate().unwrap();

            // plant an inverted cell 1: mirror its vertex 1 through the opposite side
            let mut inv = coords.clone();
            if ct.is_simplex() {
                inv[(nv + 1) * d] -= 2.0; // vertex 1 moves from x=1 to x=-1
            } else {
                // tensor: push vertex 0 of cell 1 beyond the far corner along every axis
                for a in 0..d {
                    inv[nv * d + a] += 4.0;
                }
            }
            let m = Mesh::new(ct, inv, cells.clone()).unwrap();
            match m.validate() {
                Err(MeshError::InvertedCell { cell: 1, det, .. }) => assert!(det < 0.0),
                other => panic!("{ct}: expected inverted cell 1, got {other:?}"),
            }

            // plant a degenerate cell 2: collapse it onto a hyperplane
            let mut deg = coords.clone();
            for v in 0..nv {
                deg[(2 * nv + v) * d + d - 1] = 20.0;
            }
            let m = Mesh::new(ct, deg, cells.clone()).unwrap();
            match m.validate() {
                Err(MeshError::DegenerateCell { cell: 2, .. }) => {}
                other => panic!("{ct}: expected degenerate cell 2, got {other:?}"),
            }
            assert!(m.cell_quality()[2].abs() < 1e-12);
            assert!(m.cell_quality()[0] > 0.5);
        }
    }

    #[test]
    fn orient_cells_fixes_mirrored_cells_of_every_type() {
        for ct in CellType::ALL {
            // mirror x -> -x: every corner determinant changes sign
            let mut m = one_cell(ct, |x| [-x[0], x[1], x[2]]);
            let before = m.total_measure();
            assert!(before < 0.0 || ct.is_tensor());
            assert!(matches!(
                m.validate(),
                Err(MeshError::InvertedCell { cell: 0, .. })
            ));
            assert!(m.cell_quality()[0] < 0.0);
            assert_eq!(m.orient_cells().unwrap(), 1, "{ct}");
            m.validate().unwrap();
            assert!((m.total_measure() - ct.reference_measure()).abs() < 1e-14);
            assert!((m.cell_quality()[0] - one_cell(ct, |x| x).cell_quality()[0]).abs() < 1e-14);
            // a second call finds nothing to do
            assert_eq!(m.orient_cells().unwrap(), 0);
        }
    }

    #[test]
    fn orient_cells_refuses_tangled_and_degenerate_cells() {
        // bow-tie quad: swapping two vertices of the lexicographic order
        let mut bow = Mesh::new(
            CellType::Quadrilateral,
            vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0],
            vec![0, 1, 3, 2],
        )
        .unwrap();
        let before = bow.cells().to_vec();
        assert!(matches!(
            bow.orient_cells(),
            Err(MeshError::TangledCell {
                cell: 0,
                negative: 2,
                corners: 4
            })
        ));
        assert_eq!(bow.cells(), &before[..], "nothing changed on error");
        let mut flat = Mesh::new(
            CellType::Triangle,
            vec![0.0, 0.0, 1.0, 0.0, 2.0, 0.0],
            vec![0, 1, 2],
        )
        .unwrap();
        assert!(matches!(
            flat.orient_cells(),
            Err(MeshError::DegenerateCell { cell: 0, .. })
        ));
    }

    /// Lowest first reference coordinate of a cell type (0 for simplices, -1 otherwise).
    fn low(ct: CellType) -> f64 {
        if ct.is_simplex() {
            0.0
        } else {
            -1.0
        }
    }

    /// Two cells sharing the facet of the reference cell at `x0 = low(ct)`: the reference
    /// cell and a copy of it whose vertices off the facet have their `x0` mapped by
    /// `other` (the shared ones kept), listed in the same local order.
    fn two_cells(ct: CellType, other: impl Fn(f64) -> f64) -> Mesh {
        let d = ct.dim();
        let nv = ct.num_vertices();
        let mut coords = Vec::new();
        let mut cells: Vec<u32> = (0..nv as u32).collect();
        for v in 0..nv {
            coords.extend_from_slice(&ct.reference_vertex(v)[..d]);
        }
        for v in 0..nv {
            let mut x = ct.reference_vertex(v);
            if x[0] == low(ct) {
                cells.push(v as u32);
            } else {
                cells.push((coords.len() / d) as u32);
                x[0] = other(x[0]);
                coords.extend_from_slice(&x[..d]);
            }
        }
        Mesh::new(ct, coords, cells).expect("two cells")
    }

    #[test]
    fn mirrored_neighbours_are_reoriented_but_folds_refused() {
        for ct in CellType::ALL {
            // mirror image across the shared facet: a proper neighbour, listed mirrored
            let lo = low(ct);
            let mut m = two_cells(ct, |x0| 2.0 * lo - x0);
            assert_eq!(m.orient_cells().unwrap(), 1, "{ct}");
            m.validate().unwrap();
            assert!((m.total_measure() - 2.0 * ct.reference_measure()).abs() < 1e-14);

            // squashed towards the facet: inside the first cell, listed positively
            let squash = |x0: f64| lo + 0.5 * (x0 - lo);
            let mut m = two_cells(ct, squash);
            m.validate().expect("each cell is fine on its own");
            let before = m.cells().to_vec();
            match m.orient_cells() {
                Err(MeshError::FoldedCells {
                    cell: 1,
                    neighbor: 0,
                    facet,
                    folds: 1,
                }) => {
                    let expected: Vec<u32> = (0..ct.num_vertices() as u32)
                        .filter(|&v| ct.reference_vertex(v as usize)[0] == lo)
                        .collect();
                    assert_eq!(facet, expected, "{ct}");
                }
                other => panic!("{ct}: expected a fold, got {other:?}"),
            }
            assert_eq!(m.cells(), &before[..], "nothing changed on error");

            // the same fold with the second cell listed mirrored: still a fold, and the
            // mirrored cell is the one named (whichever cell is listed first)
            let mut m = two_cells(ct, squash);
            let nv = ct.num_vertices();
            let mut cells = m.cells().to_vec();
            let mut mirrored = cells[nv..].to_vec();
            if ct.is_simplex() {
                mirrored.swap(1, 2);
            } else {
                for v in (0..nv).step_by(2) {
                    mirrored.swap(v, v + 1);
                }
            }
            cells.splice(nv.., mirrored.iter().copied());
            m = Mesh::new(ct, m.coords().to_vec(), cells.clone()).unwrap();
            assert!(matches!(
                m.orient_cells(),
                Err(MeshError::FoldedCells {
                    cell: 1,
                    neighbor: 0,
                    ..
                })
            ));
            let swapped: Vec<u32> = cells[nv..].iter().chain(&cells[..nv]).copied().collect();
            let mut m = Mesh::new(ct, m.coords().to_vec(), swapped).unwrap();
            assert!(
                matches!(
                    m.orient_cells(),
                    Err(MeshError::FoldedCells {
                        cell: 0,
                        neighbor: 1,
                        ..
                    })
                ),
                "{ct}"
            );
        }
    }

    /// Knuth's MMIX linear congruential generator: deterministic choices for tests.
    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *state >> 33
    }

    /// Lists cell `c` of `cells` in mirrored order.
    fn mirror(ct: CellType, cells: &mut [u32], c: usize) {
        let nv = ct.num_vertices();
        let cell = &mut cells[c * nv..(c + 1) * nv];
        if ct.is_simplex() {
            cell.swap(0, 1);
        } else {
            for v in 0..nv / 2 {
                // mirror along the last reference axis: v <-> v ^ (nv / 2)
                cell.swap(v, v + nv / 2);
            }
        }
    }

    #[test]
    fn box_meshes_in_any_vertex_order_are_accepted_and_folds_found() {
        use crate::{generate_box, BoxSpec};
        let mut state = 7u64;
        for ct in CellType::ALL {
            let n: &[usize] = if ct.dim() == 2 { &[5, 4] } else { &[3, 3, 2] };
            let mut spec = BoxSpec::unit(ct, n);
            spec.perturb = 0.2;
            let good = generate_box(&spec).unwrap();
            let area = good.total_measure();
            // all mirrored, then random mixtures
            for round in 0..4 {
                let mut cells = good.cells().to_vec();
                let mut flipped = 0;
                for c in 0..good.num_cells() {
                    if round == 0 || lcg(&mut state) % 2 == 0 {
                        mirror(ct, &mut cells, c);
                        flipped += 1;
                    }
                }
                let mut m = Mesh::new(ct, good.coords().to_vec(), cells).unwrap();
                assert_eq!(m.orient_cells().unwrap(), flipped, "{ct} round {round}");
                m.validate().unwrap();
                assert!((m.total_measure() - area).abs() < 1e-12, "{ct}");
            }
            // an interior vertex moved far through its neighbours: some cell turns over
            // (a fold) or loses its shape (tangled, for quadrilaterals and hexahedra)
            let d = ct.dim();
            let interior = (0..good.num_vertices())
                .find(|&v| good.vertex(v).iter().all(|&x| x > 0.01 && x < 0.99))
                .expect("an interior vertex");
            let mut folded = good.clone();
            let h = 1.0 / n[0] as f64;
            folded.coords_mut()[interior * d] += 1.3 * h;
            let mut mirrored_fold = folded.clone();
            let result = folded.orient_cells();
            let tangled = matches!(result, Err(MeshError::TangledCell { .. }));
            assert!(
                matches!(result, Err(MeshError::FoldedCells { .. })) || (tangled && ct.is_tensor()),
                "{ct}: {result:?}"
            );
            // the fold is found whatever the listing order
            let mut cells = mirrored_fold.cells().to_vec();
            for c in 0..mirrored_fold.num_cells() {
                mirror(ct, &mut cells, c);
            }
            mirrored_fold = Mesh::new(ct, mirrored_fold.coords().to_vec(), cells).unwrap();
            let again = mirrored_fold.orient_cells();
            assert_eq!(
                std::mem::discriminant(&again.unwrap_err()),
                std::mem::discriminant(&result.unwrap_err()),
                "{ct}"
            );
        }
    }

    #[test]
    fn hexahedra_joining_a_face_differently_are_told_apart() {
        use crate::topology::sorted_facet_entries;
        // the shared face of two proper neighbours has the same edges in both
        let m = two_cells(CellType::Hexahedron, |x0| -2.0 - x0);
        let facets = CellType::Hexahedron.facets();
        let shared = |m: &Mesh| {
            let e = sorted_facet_entries(m);
            let k = e
                .windows(2)
                .position(|w| w[0].key == w[1].key)
                .expect("shared");
            (e[k].side, e[k + 1].side)
        };
        let (a, b) = shared(&m);
        assert!(m.same_face_edges(&facets, a, b));
        // the second hexahedron's face joins the same four vertices as a bow tie (its
        // first face vertex is joined to the one diagonally opposite in the cube's face)
        let mut coords = m.coords()[..24].to_vec();
        let mut cells: Vec<u32> = (0..8).collect();
        let bow_tie = [0u32, 6, 2, 4];
        let mut second = [0u32; 8];
        for (q, &g) in bow_tie.iter().enumerate() {
            let lv = ((q & 1) << 1) | ((q >> 1) << 2);
            second[lv | 1] = g;
            second[lv] = (coords.len() / 3) as u32;
            let x = &m.coords()[3 * g as usize..3 * g as usize + 3];
            coords.extend([-3.0, x[1], x[2]]);
        }
        cells.extend(second);
        let mut bad = Mesh::new(CellType::Hexahedron, coords, cells).unwrap();
        let (a, b) = shared(&bad);
        assert!(!bad.same_face_edges(&facets, a, b));
        assert!(bad.orient_cells().is_err());
    }

    #[test]
    fn orient_cells_refuses_non_manifold_facets() {
        // three triangles on the edge (0, 1)
        let mut m = Mesh::new(
            CellType::Triangle,
            vec![0.0, 0.0, 1.0, 0.0, 0.5, 1.0, 0.5, -1.0, 0.5, 2.0],
            vec![0, 1, 2, 1, 0, 3, 0, 1, 4],
        )
        .unwrap();
        assert!(matches!(
            m.orient_cells(),
            Err(MeshError::NonManifoldFacet { count: 3, .. })
        ));
    }
}
