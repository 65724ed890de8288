//! Geometric factors of every cell at every point of a quadrature rule, computed in
//! parallel over cells from one tabulation of the coordinate map.

use crate::jacobian::{adjugate, is_inverted_or_degenerate};
use crate::GeometryError;
use ferrofem_base::CellType;
use ferrofem_fe::{LagrangeElement, QuadratureRule, Tabulation};
use ferrofem_mesh::Mesh;
use rayon::prelude::*;

/// Cells handed to one rayon task at least (amortises scheduling on small rules).
const MIN_CELLS_PER_TASK: usize = 256;
/// Points per task of the metric and volume loops.
const POINTS_PER_TASK: usize = 1 << 14;

/// Number of packed entries of the symmetric `dim × dim` metric: `dim(dim+1)/2`.
pub const fn metric_len(dim: usize) -> usize {
    dim * (dim + 1) / 2
}

/// Physical points, Jacobian determinants, inverse Jacobians and weighted determinants of
/// all cells at all points of one quadrature rule: the geometry operators and kernels read
/// at quadrature points.
///
/// Arrays are cell-major, then point-major: entry `(c, q)` of a per-point array of width
/// `m` starts at `(c * num_points + q) * m`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuadGeometry {
    /// Number of cells.
    pub num_cells: usize,
    /// Quadrature points per cell.
    pub num_points: usize,
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Physical points, `[cell][q][i]`.
    pub x: Vec<f64>,
    /// `det J`, `[cell][q]`.
    pub detj: Vec<f64>,
    /// Inverse Jacobians, `[cell][q][k][i] = ∂ξ_k/∂x_i`, row-major `dim × dim`.
    pub jinv: Vec<f64>,
    /// Quadrature weight times `det J`, `[cell][q]`.
    pub wdetj: Vec<f64>,
}

impl QuadGeometry {
    /// Evaluates the geometry of every cell of `mesh` at every point of `rule`, in
    /// parallel over cells.
    ///
    /// Fails with [`GeometryError::InvertedOrDegenerate`] naming the lowest-numbered cell
    /// whose determinant is not safely positive at some point (see
    /// [`crate::DEGENERACY_TOLERANCE`]), and with the other variants when the rule does
    /// not fit the mesh.
    pub fn compute(mesh: &Mesh, rule: &QuadratureRule) -> Result<QuadGeometry, GeometryError> {
        let mut geo = QuadGeometry::default();
        geo.update(mesh, rule)?;
        Ok(geo)
    }

    /// Recomputes the geometry in place for `mesh` and `rule` (for example after the mesh
    /// moved), reusing the allocations when the sizes are unchanged. Errors as
    /// [`compute`](Self::compute); after an error the contents are unspecified.
    pub fn update(&mut self, mesh: &Mesh, rule: &QuadratureRule) -> Result<(), GeometryError> {
        let ct = mesh.cell_type();
        if rule.cell_type != ct {
            return Err(GeometryError::CellTypeMismatch {
                mesh: ct,
                rule: rule.cell_type,
            });
        }
        let d = ct.dim();
        if rule.points.len() != rule.weights.len() * d {
            return Err(GeometryError::RuleLength {
                points: rule.points.len(),
                weights: rule.weights.len(),
                dim: d,
            });
        }
        let tab = LagrangeElement::new(ct, 1)?.tabulate(&rule.points)?;
        let w = &rule.weights;
        match ct {
            CellType::Triangle => self.update_for::<2, 3>(mesh, &tab, w, true),
            CellType::Quadrilateral => self.update_for::<2, 4>(mesh, &tab, w, false),
            CellType::Tetrahedron => self.update_for::<3, 4>(mesh, &tab, w, true),
            CellType::Hexahedron => self.update_for::<3, 8>(mesh, &tab, w, false),
        }
    }

    /// The symmetric metric `G = w·det J·J⁻¹J⁻ᵀ` at every point, packed as the upper
    /// triangle row by row: `(00, 01, 11)` in 2-D, `(00, 01, 02, 11, 12, 22)` in 3-D, so
    /// `G_kl = w det J Σ_i (∂ξ_k/∂x_i)(∂ξ_l/∂x_i)` for `k <= l`. Layout
    /// `[cell][q][entry]` with [`metric_len`]`(dim)` entries per point. This is the only
    /// geometry a constant-coefficient diffusion operator needs.
    ///
    /// Empty if `dim` is not 2 or 3 (only possible for a hand-built value).
    pub fn metric(&self) -> Vec<f64> {
        match self.dim {
            2 => self.metric_for::<2>(),
            3 => self.metric_for::<3>(),
            _ => Vec::new(),
        }
    }

    fn metric_for<const D: usize>(&self) -> Vec<f64> {
        let m = metric_len(D);
        let n = self.wdetj.len().min(self.jinv.len() / (D * D));
        let mut g = vec![0.0; n * m];
        g.par_chunks_mut(POINTS_PER_TASK * m)
            .zip(self.jinv.par_chunks(POINTS_PER_TASK * D * D))
            .zip(self.wdetj.par_chunks(POINTS_PER_TASK))
            .for_each(|((g, jinv), wdetj)| {
                for ((g, a), &s) in g
                    .chunks_exact_mut(m)
                    .zip(jinv.chunks_exact(D * D))
                    .zip(wdetj)
                {
                    let mut e = 0;
                    for k in 0..D {
                        for l in k..D {
                            let mut v = 0.0;
                            for i in 0..D {
                                v += a[k * D + i] * a[l * D + i];
                            }
                            g[e] = s * v;
                            e += 1;
                        }
                    }
                }
            });
        g
    }

    /// Total measure of the mesh, `Σ w det J` over all cells and points (deterministic:
    /// fixed-size partial sums added in order).
    pub fn volume(&self) -> f64 {
        let partial: Vec<f64> = self
            .wdetj
            .par_chunks(POINTS_PER_TASK)
            .map(|c| c.iter().sum::<f64>())
            .collect();
        partial.iter().sum()
    }
}

/// Points evaluated together: the kernel works on blocks of `LANES` points in
/// structure-of-arrays form so that every arithmetic step is a fixed-length loop the
/// compiler vectorises.
const LANES: usize = 8;

/// The coordinate-map tabulation regrouped into blocks of [`LANES`] points (the last
/// block padded by repeating the last point, whose results are not stored).
struct BlockedTabulation {
    num_points: usize,
    num_blocks: usize,
    /// `phi[((blk * nv) + b) * LANES + l]`.
    phi: Vec<f64>,
    /// `dphi[((blk * dim + k) * nv + b) * LANES + l]`.
    dphi: Vec<f64>,
    /// `w[blk * LANES + l]`.
    w: Vec<f64>,
}

impl BlockedTabulation {
    fn new(tab: &Tabulation, weights: &[f64]) -> BlockedTabulation {
        let (nq, nv, d) = (tab.num_points, tab.num_basis, tab.dim);
        let num_blocks = nq.div_ceil(LANES);
        let mut phi = vec![0.0; num_blocks * nv * LANES];
        let mut dphi = vec![0.0; num_blocks * d * nv * LANES];
        let mut w = vec![0.0; num_blocks * LANES];
        for blk in 0..num_blocks {
            for l in 0..LANES {
                let q = (blk * LANES + l).min(nq - 1);
                w[blk * LANES + l] = weights[q];
                for b in 0..nv {
                    phi[(blk * nv + b) * LANES + l] = tab.values[q * nv + b];
                    for k in 0..d {
                        dphi[((blk * d + k) * nv + b) * LANES + l] =
                            tab.grads[(q * nv + b) * d + k];
                    }
                }
            }
        }
        BlockedTabulation {
            num_points: nq,
            num_blocks,
            phi,
            dphi,
            w,
        }
    }
}

/// Makes `v` hold `n` entries (values are overwritten by the caller): kept as is when the
/// length is right, otherwise replaced by a fresh zeroed allocation, which the operating
/// system provides lazily, so the first touch happens in the parallel loop rather than
/// in a serial fill here.
fn resize(v: &mut Vec<f64>, n: usize) {
    if v.len() != n {
        *v = Vec::new();
        *v = vec![0.0; n];
    }
}

impl QuadGeometry {
    /// `update` for dimension `D` and `NV` vertices per cell (compile-time loop bounds).
    fn update_for<const D: usize, const NV: usize>(
        &mut self,
        mesh: &Mesh,
        tab: &Tabulation,
        weights: &[f64],
        affine: bool,
    ) -> Result<(), GeometryError> {
        let nc = mesh.num_cells();
        let nq = weights.len();
        self.num_cells = nc;
        self.num_points = nq;
        self.dim = D;
        resize(&mut self.x, nc * nq * D);
        resize(&mut self.detj, nc * nq);
        resize(&mut self.jinv, nc * nq * D * D);
        resize(&mut self.wdetj, nc * nq);
        if nc == 0 || nq == 0 {
            return Ok(());
        }
        let blocked = BlockedTabulation::new(tab, weights);
        let coords = mesh.coords();
        let cells = mesh.cells();
        let first_bad = self
            .x
            .par_chunks_mut(nq * D)
            .zip(self.detj.par_chunks_mut(nq))
            .zip(self.jinv.par_chunks_mut(nq * D * D))
            .zip(self.wdetj.par_chunks_mut(nq))
            .enumerate()
            .with_min_len(MIN_CELLS_PER_TASK)
            .filter_map(|(c, (((x, detj), jinv), wdetj))| {
                let mut xv = [[0.0; D]; NV];
                for (xb, &v) in xv.iter_mut().zip(&cells[c * NV..(c + 1) * NV]) {
                    xb.copy_from_slice(&coords[v as usize * D..(v as usize + 1) * D]);
                }
                let out = CellOut {
                    x,
                    detj,
                    jinv,
                    wdetj,
                };
                cell_geometry::<D, NV>(&xv, &blocked, affine, out).map(|(q, det)| (c, q, det))
            })
            .min_by_key(|&(c, _, _)| c);
        match first_bad {
            Some((cell, point, det)) => {
                Err(GeometryError::InvertedOrDegenerate { cell, point, det })
            }
            None => Ok(()),
        }
    }
}

/// Copies the first `len` points of a block (already point-major) to the outputs.
#[inline(always)]
fn store_block<const D: usize>(
    out: &mut CellOut<'_>,
    q0: usize,
    len: usize,
    (xs, js, det, ws): (
        &[f64; LANES * 3],
        &[f64; LANES * 9],
        &[f64; LANES],
        &[f64; LANES],
    ),
) {
    out.x[q0 * D..(q0 + len) * D].copy_from_slice(&xs[..len * D]);
    out.jinv[q0 * D * D..(q0 + len) * D * D].copy_from_slice(&js[..len * D * D]);
    out.detj[q0..q0 + len].copy_from_slice(&det[..len]);
    out.wdetj[q0..q0 + len].copy_from_slice(&ws[..len]);
}

/// One cell's slices of the output arrays.
struct CellOut<'a> {
    x: &'a mut [f64],
    detj: &'a mut [f64],
    jinv: &'a mut [f64],
    wdetj: &'a mut [f64],
}

/// Fills one cell's geometry from its vertex coordinates `xv`, a block of [`LANES`]
/// points at a time; returns the first point (and its determinant) where the cell is
/// inverted or degenerate. With `affine` the Jacobian of the first block (whose lanes
/// are all equal: P1 gradients are constant) is reused for every block.
#[inline(always)]
fn cell_geometry<const D: usize, const NV: usize>(
    xv: &[[f64; D]; NV],
    tab: &BlockedTabulation,
    affine: bool,
    mut out: CellOut<'_>,
) -> Option<(usize, f64)> {
    let nq = tab.num_points;
    let mut bad = None;
    let mut det = [0.0; LANES];
    let mut inv = [[[0.0; LANES]; 3]; 3];
    for blk in 0..tab.num_blocks {
        let phi = &tab.phi[blk * NV * LANES..(blk + 1) * NV * LANES];
        let w = &tab.w[blk * LANES..(blk + 1) * LANES];
        // physical points
        let mut x = [[0.0; LANES]; 3];
        for b in 0..NV {
            let p = &phi[b * LANES..(b + 1) * LANES];
            for i in 0..D {
                for l in 0..LANES {
                    x[i][l] += xv[b][i] * p[l];
                }
            }
        }
        if !affine || blk == 0 {
            // J[i][k] = Σ_b x_b,i ∂φ_b/∂ξ_k
            let dphi = &tab.dphi[blk * D * NV * LANES..(blk + 1) * D * NV * LANES];
            let mut j = [[[0.0; LANES]; 3]; 3];
            for k in 0..D {
                for b in 0..NV {
                    let g = &dphi[(k * NV + b) * LANES..(k * NV + b + 1) * LANES];
                    for i in 0..D {
                        for l in 0..LANES {
                            j[i][k][l] += xv[b][i] * g[l];
                        }
                    }
                }
            }
            let mut ok = [true; LANES];
            for l in 0..LANES {
                let mut m = [[0.0; 3]; 3];
                for i in 0..D {
                    for k in 0..D {
                        m[i][k] = j[i][k][l];
                    }
                }
                let (dt, adj) = adjugate(D, &m);
                ok[l] = !is_inverted_or_degenerate(D, &m, dt);
                det[l] = dt;
                let r = 1.0 / dt;
                for k in 0..D {
                    for i in 0..D {
                        inv[k][i][l] = adj[k][i] * r;
                    }
                }
            }
            if bad.is_none() && !ok.iter().all(|&o| o) {
                let first = ok.iter().position(|&o| !o).unwrap_or(0);
                let q = blk * LANES + first;
                if q < nq {
                    bad = Some((q, det[first]));
                }
            }
        }
        // store the block's real points: transpose into point-major order on the stack,
        // then copy contiguous runs (fixed-size loops, no per-entry bounds checks)
        let mut xs = [0.0; LANES * 3];
        let mut js = [0.0; LANES * 9];
        let mut ws = [0.0; LANES];
        for l in 0..LANES {
            for i in 0..D {
                xs[l * D + i] = x[i][l];
            }
            for k in 0..D {
                for i in 0..D {
                    js[(l * D + k) * D + i] = inv[k][i][l];
                }
            }
            ws[l] = w[l] * det[l];
        }
        let q0 = blk * LANES;
        let blocks = (&xs, &js, &det, &ws);
        if nq - q0 >= LANES {
            // a compile-time length: the copies become inlined moves
            store_block::<D>(&mut out, q0, LANES, blocks);
        } else {
            store_block::<D>(&mut out, q0, nq - q0, blocks);
        }
    }
    bad
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_meshes::perturbed_box;
    use crate::{CellMap, Jacobian};

    const LEN: [f64; 3] = [2.0, 0.75, 1.25];

    fn rule(ct: CellType) -> QuadratureRule {
        match ct {
            CellType::Quadrilateral | CellType::Hexahedron => QuadratureRule::gauss(ct, 3).unwrap(),
            _ => QuadratureRule::for_degree(ct, 4).unwrap(),
        }
    }

    /// Inverse by Gauss–Jordan elimination with partial pivoting (independent of the
    /// adjugate formulas under test).
    fn gauss_jordan_inverse(d: usize, j: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
        let mut a = *j;
        let mut inv = [[0.0; 3]; 3];
        for i in 0..d {
            inv[i][i] = 1.0;
        }
        for col in 0..d {
            let piv = (col..d)
                .max_by(|&r, &s| a[r][col].abs().total_cmp(&a[s][col].abs()))
                .unwrap();
            a.swap(col, piv);
            inv.swap(col, piv);
            let p = a[col][col];
            for c in 0..d {
                a[col][c] /= p;
                inv[col][c] /= p;
            }
            for r in 0..d {
                if r != col {
                    let f = a[r][col];
                    for c in 0..d {
                        a[r][c] -= f * a[col][c];
                        inv[r][c] -= f * inv[col][c];
                    }
                }
            }
        }
        inv
    }

    #[test]
    fn volume_equals_box_volume_on_perturbed_meshes() {
        for (s, ct) in CellType::ALL.into_iter().enumerate() {
            let mesh = perturbed_box(ct, 5, LEN, 0.15, 11 + s as u64);
            let geo = QuadGeometry::compute(&mesh, &rule(ct)).unwrap();
            let want: f64 = LEN[..ct.dim()].iter().product();
            assert!(
                (geo.volume() - want).abs() < 1e-12 * want,
                "{ct}: {} vs {want}",
                geo.volume()
            );
            // the perturbation is real: cell volumes differ
            let nq = geo.num_points;
            let vols: Vec<f64> = geo.wdetj.chunks(nq).map(|c| c.iter().sum()).collect();
            let (lo, hi) = vols
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), &v| (l.min(v), h.max(v)));
            assert!(hi - lo > 0.05 * hi, "{ct}: volumes {lo}..{hi}");
            assert_eq!(geo.detj.len(), mesh.num_cells() * nq);
        }
    }

    #[test]
    fn matches_pointwise_cell_map() {
        for (s, ct) in CellType::ALL.into_iter().enumerate() {
            let mesh = perturbed_box(ct, 3, LEN, 0.15, 21 + s as u64);
            let r = rule(ct);
            let geo = QuadGeometry::compute(&mesh, &r).unwrap();
            let map = CellMap::new(&mesh).unwrap();
            let (d, nq) = (ct.dim(), r.len());
            for c in 0..mesh.num_cells() {
                for q in 0..nq {
                    let p = c * nq + q;
                    let jac = map.jacobian(c, r.point(q)).unwrap();
                    let x = map.map_point(c, r.point(q)).unwrap();
                    let tol = 1e-13;
                    assert!((geo.detj[p] - jac.det).abs() < tol * jac.det, "{ct}");
                    assert!((geo.wdetj[p] - r.weights[q] * jac.det).abs() < tol * jac.det);
                    let inv = jac.inverse();
                    for i in 0..d {
                        assert!((geo.x[p * d + i] - x[i]).abs() < tol);
                        for k in 0..d {
                            let g = geo.jinv[p * d * d + k * d + i];
                            assert!((g - inv[k][i]).abs() < tol * (1.0 + inv[k][i].abs()));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn metric_is_symmetric_positive_definite_and_matches_independent_product() {
        for (s, ct) in CellType::ALL.into_iter().enumerate() {
            let mesh = perturbed_box(ct, 3, LEN, 0.15, 31 + s as u64);
            let r = rule(ct);
            let geo = QuadGeometry::compute(&mesh, &r).unwrap();
            let g = geo.metric();
            let (d, nq, m) = (ct.dim(), r.len(), metric_len(ct.dim()));
            assert_eq!(g.len(), mesh.num_cells() * nq * m);
            let map = CellMap::new(&mesh).unwrap();
            for c in 0..mesh.num_cells() {
                for q in 0..nq {
                    let p = c * nq + q;
                    // unpack the upper triangle into a full symmetric matrix
                    let mut full = [[0.0; 3]; 3];
                    let mut e = 0;
                    for k in 0..d {
                        for l in k..d {
                            full[k][l] = g[p * m + e];
                            full[l][k] = g[p * m + e];
                            e += 1;
                        }
                    }
                    // independent: w det J · J⁻¹ J⁻ᵀ with J⁻¹ by elimination
                    let jac = map.jacobian(c, r.point(q)).unwrap();
                    let inv = gauss_jordan_inverse(d, &jac.j);
                    let scale = r.weights[q] * jac.det;
                    for k in 0..d {
                        for l in 0..d {
                            let want: f64 =
                                scale * (0..d).map(|i| inv[k][i] * inv[l][i]).sum::<f64>();
                            assert!(
                                (full[k][l] - want).abs() < 1e-12 * (1.0 + want.abs()),
                                "{ct} cell {c} point {q} G[{k}][{l}] {} vs {want}",
                                full[k][l]
                            );
                        }
                    }
                    // positive definite: leading principal minors positive (Sylvester)
                    let m1 = full[0][0];
                    let m2 = full[0][0] * full[1][1] - full[0][1] * full[1][0];
                    assert!(m1 > 0.0 && m2 > 0.0, "{ct}");
                    if d == 3 {
                        assert!(Jacobian::from_matrix(3, full).det > 0.0, "{ct}");
                    }
                }
            }
        }
    }

    #[test]
    fn affine_simplex_geometry_is_constant_across_points() {
        for ct in [CellType::Triangle, CellType::Tetrahedron] {
            let mesh = perturbed_box(ct, 3, LEN, 0.15, 41);
            let r = rule(ct);
            let geo = QuadGeometry::compute(&mesh, &r).unwrap();
            let (d, nq) = (ct.dim(), r.len());
            assert!(nq > 1);
            let map = CellMap::new(&mesh).unwrap();
            for c in 0..mesh.num_cells() {
                // the constant value is the Jacobian at the cell's centroid
                let centroid = vec![1.0 / (d + 1) as f64; d];
                let jac = map.jacobian(c, &centroid).unwrap();
                let inv = jac.inverse();
                for q in 0..nq {
                    let p = c * nq + q;
                    assert!((geo.detj[p] - jac.det).abs() < 1e-14 * jac.det);
                    for k in 0..d {
                        for i in 0..d {
                            let g = geo.jinv[p * d * d + k * d + i];
                            assert!((g - inv[k][i]).abs() < 1e-12 * (1.0 + g.abs()));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn inverted_cell_is_reported_with_its_index() {
        for ct in CellType::ALL {
            let mesh = perturbed_box(ct, 3, LEN, 0.1, 51);
            let bad_cell = 5;
            let nv = ct.num_vertices();
            let mut cells = mesh.cells().to_vec();
            // a reflection of the reference cell: swap two vertices
            let (a, b) = if ct.is_simplex() { (1, 2) } else { (0, 1) };
            cells.swap(bad_cell * nv + a, bad_cell * nv + b);
            // a second, later inverted cell: the lowest index must be reported
            cells.swap(7 * nv + a, 7 * nv + b);
            let bad = Mesh::new(ct, mesh.coords().to_vec(), cells).unwrap();
            match QuadGeometry::compute(&bad, &rule(ct)) {
                Err(GeometryError::InvertedOrDegenerate { cell, det, .. }) => {
                    assert_eq!(cell, bad_cell, "{ct}");
                    assert!(det < 0.0, "{ct}: det {det}");
                }
                other => panic!("{ct}: expected an inverted cell, got {other:?}"),
            }
        }
    }

    #[test]
    fn degenerate_cell_is_reported() {
        // the third vertex of cell 1 is collinear with the first two
        let coords = vec![0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0];
        let mesh = Mesh::new(CellType::Triangle, coords, vec![0, 1, 2, 0, 1, 3]).unwrap();
        let err = QuadGeometry::compute(&mesh, &rule(CellType::Triangle)).unwrap_err();
        assert!(
            matches!(err, GeometryError::InvertedOrDegenerate { cell: 1, det, .. } if det == 0.0)
        );
        assert!(err.to_string().contains("cell 1"));
        // a unit cube whose vertex 7 is pulled onto the plane of its neighbours 3, 5, 6
        // (x + y + z = 2): the three edges at that corner become coplanar, so det J
        // vanishes there (up to rounding) and only there
        let mut coords = Vec::new();
        for v in 0..8 {
            let r = CellType::Hexahedron.reference_vertex(v);
            coords.extend(r.iter().map(|c| 0.5 * (c + 1.0)));
        }
        coords[21..24].copy_from_slice(&[2.0 / 3.0; 3]);
        let squashed = Mesh::new(CellType::Hexahedron, coords, (0..8).collect()).unwrap();
        let lobatto = QuadratureRule::gauss_lobatto(CellType::Hexahedron, 2).unwrap();
        assert!(matches!(
            QuadGeometry::compute(&squashed, &lobatto),
            Err(GeometryError::InvertedOrDegenerate {
                cell: 0,
                point: 7,
                ..
            })
        ));
    }

    #[test]
    fn mismatched_rules_are_errors_and_empty_inputs_are_fine() {
        let mesh = perturbed_box(CellType::Hexahedron, 2, LEN, 0.0, 0);
        assert_eq!(
            QuadGeometry::compute(&mesh, &rule(CellType::Quadrilateral)),
            Err(GeometryError::CellTypeMismatch {
                mesh: CellType::Hexahedron,
                rule: CellType::Quadrilateral
            })
        );
        let mut r = rule(CellType::Hexahedron);
        r.weights.pop();
        assert!(matches!(
            QuadGeometry::compute(&mesh, &r),
            Err(GeometryError::RuleLength { .. })
        ));
        let empty = Mesh::new(CellType::Hexahedron, Vec::new(), Vec::new()).unwrap();
        let geo = QuadGeometry::compute(&empty, &rule(CellType::Hexahedron)).unwrap();
        assert_eq!(
            (geo.num_cells, geo.volume(), geo.metric().len()),
            (0, 0.0, 0)
        );
    }

    #[test]
    fn update_in_place_matches_a_fresh_compute() {
        let ct = CellType::Hexahedron;
        let a = perturbed_box(ct, 3, LEN, 0.1, 61);
        let b = perturbed_box(ct, 3, LEN, 0.2, 62); // same cells, other coordinates
        let r = rule(ct);
        let mut geo = QuadGeometry::compute(&a, &r).unwrap();
        let ptr = geo.jinv.as_ptr();
        geo.update(&b, &r).unwrap();
        assert_eq!(geo, QuadGeometry::compute(&b, &r).unwrap());
        assert_eq!(geo.jinv.as_ptr(), ptr, "allocation reused");
        // a different rule resizes
        let r2 = QuadratureRule::gauss(ct, 2).unwrap();
        geo.update(&a, &r2).unwrap();
        assert_eq!(geo, QuadGeometry::compute(&a, &r2).unwrap());
        assert_eq!(geo.jinv.len(), a.num_cells() * 8 * 9);
    }

    /// Timing of the brief's reference case, 64³ hexahedra with a 5³ Gauss rule (33M
    /// points, 3.7 GB of output), next to the time to fill the same amount of fresh and of
    /// already-mapped memory in parallel (the floor). Run by hand:
    /// `cargo test --release -p ferrofem-geometry -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn timing_hex_64_cubed_gauss_5() {
        let mesh = perturbed_box(CellType::Hexahedron, 64, [1.0; 3], 0.1, 1);
        let r = QuadratureRule::gauss(CellType::Hexahedron, 5).unwrap();
        let secs = |t: std::time::Instant| t.elapsed().as_secs_f64();
        for _ in 0..3 {
            let n = mesh.num_cells() * r.len() * 14;
            let t = std::time::Instant::now();
            let mut floor = vec![0.0f64; n];
            floor.par_chunks_mut(1 << 16).for_each(|c| c.fill(1.0));
            let fresh = secs(t);
            let t = std::time::Instant::now();
            floor.par_chunks_mut(1 << 16).for_each(|c| c.fill(2.0));
            let refill = secs(t);
            drop(floor);

            let t = std::time::Instant::now();
            let mut geo = QuadGeometry::compute(&mesh, &r).unwrap();
            let compute = secs(t);
            let t = std::time::Instant::now();
            geo.update(&mesh, &r).unwrap();
            let update = secs(t);
            let t = std::time::Instant::now();
            let g = geo.metric();
            let metric = secs(t);
            let pts = geo.detj.len();
            println!(
                "{} cells, {pts} points: compute {compute:.3} s ({:.1} Mpts/s), update in place \
                 {update:.3} s, metric {metric:.3} s | floor: fill fresh {fresh:.3} s, refill \
                 {refill:.3} s",
                geo.num_cells,
                pts as f64 / compute / 1e6,
            );
            assert!((geo.volume() - 1.0).abs() < 1e-12);
            assert_eq!(g.len(), pts * 6);
        }
    }
}
