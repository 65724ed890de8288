//! Geometric factors of the tensor-product operators at their quadrature points, stored
//! per element (in the layout the CPU and GPU kernels share, or in the CPU kernels' own
//! interleaved one), or recomputed on the fly from the element's vertices.

use super::lanes::{lanes_are_the_vector, madd, Lane, LANES};
use super::{PointGeometry, TensorBasis, TensorError};
use ferrofem_base::Real;
use ferrofem_geometry::{adjugate, GeometrySource};
use ferrofem_mesh::Mesh;
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Determinants below this fraction of `h^dim` (with `h` the largest vertex offset of the
/// element) count as degenerate.
const DEGENERATE: f64 = 1e-12;

/// How the CPU kernels lay out stored geometric factors (a choice of the CPU operator
/// only: the GPU kernels always read [`FactorLayout::ElementMajor`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FactorLayout {
    /// Element-major, `[elem][factor][point]`: the layout the GPU kernels read. The CPU
    /// kernels transpose each batch's factors into lane layout, which costs them time.
    ElementMajor,
    /// The CPU kernels' own layout, `[batch][factor][point][lane]` with [`LANES`] elements
    /// per batch (the last batch padded by repeating its last element), read with plain
    /// vector loads: the fastest on the CPU, hence the default.
    #[default]
    Interleaved,
}

/// The geometry an operator reads: its physics' quadrature data at every point
/// ([`TensorPhysics::qdata`](super::TensorPhysics::qdata)).
///
/// For the bake-off problems the data are the plain factors, in order: the packed metric
/// `G = w det J · J⁻¹J⁻ᵀ` (`(00, 01, 11)` in 2-D, `(00, 01, 02, 11, 12, 22)` in 3-D, as
/// [`QuadGeometry::metric`](ferrofem_geometry::QuadGeometry::metric)) when the operator
/// has a gradient term, then `w det J` when it has a mass term. `factors` is laid out
/// `[elem][factor][point]` (one contiguous array per factor and element), points
/// lexicographic with the first direction fastest, so that a GPU kernel reads it
/// coalesced as well.
///
/// `vertex_offsets` holds the multilinear map of each element as offsets of its vertices
/// from vertex 0, `x_v - x_0` for `v = 1..2^d` (lexicographic vertices), laid out
/// `[elem][axis][v - 1]`. The Jacobian only depends on these differences, which keeps
/// it accurate in `f32` too.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorGeometry<T> {
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Number of elements.
    pub num_elem: usize,
    /// Quadrature points per element.
    pub num_points: usize,
    /// Quadrature data per point.
    pub num_factors: usize,
    /// On the fly: true when the factors start with the packed metric.
    pub has_metric: bool,
    /// On the fly: true when the factors end with `w det J`.
    pub has_mass: bool,
    /// Where the kernels get the factors from.
    pub source: GeometrySource,
    /// The layout of the stored factors (meaningless on the fly).
    pub layout: FactorLayout,
    /// Stored factors, `[elem][factor][point]`; empty unless stored
    /// [`FactorLayout::ElementMajor`].
    pub factors: Vec<T>,
    /// Stored factors, `[batch][factor][point]` of lanes; empty unless stored
    /// [`FactorLayout::Interleaved`].
    pub interleaved: Vec<[T; LANES]>,
    /// Vertex offsets `x_v - x_0`, `[elem][axis][v - 1]` (always present: small).
    pub vertex_offsets: Vec<T>,
    /// The stored interleaved factors in compact form, when every element is affine with
    /// coefficients constant on it (then `interleaved` is empty).
    pub compact: Option<CompactFactors<T>>,
}

/// Interleaved factors of elements whose data are one value per element and factor (at
/// most 16 of them),
/// times a per-point scale: factor `c` of element `e` at point `i` is
/// `scale[c nq + i] · per_elem[e / LANES][c][e % LANES]`, the scale being the tensor
/// quadrature weight `w_i` (data with `w det J` in them) or 1 (e.g. `J⁻¹`). Affine elements
/// with coefficients constant on each have such data; storing them so cuts the geometry
/// traffic from `nf · nq` to `nf` values per element.
#[derive(Clone, Debug, PartialEq)]
pub struct CompactFactors<T> {
    /// `[factor][point]` scales.
    pub scale: Vec<T>,
    /// `[batch][factor]` values of the elements.
    pub per_elem: Vec<Lane<T>>,
}

/// Relative tolerance within which an element's datum counts as constant (or constant
/// times the weight) over its points: a few thousand roundings of `f64`.
const COMPACT_TOLERANCE: f64 = 1e-12;

/// Relative departure from a parallelogram (parallelepiped) below which an element counts
/// as affine.
const AFFINE_TOLERANCE: f64 = 1e-13;

/// Bit of [`datum_pattern`]: the datum is the same at every point.
const SAME: u8 = 1;
/// Bit of [`datum_pattern`]: the datum is the weight times the same value at every point.
const WEIGHTED: u8 = 2;

/// Which of the compact patterns datum `vals` (one value per point) follows, with weights
/// `w`.
fn datum_pattern(vals: &[f64], w: &[f64]) -> u8 {
    let size = vals.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let tol = COMPACT_TOLERANCE * size;
    let mut bits = 0;
    if vals.iter().all(|v| (v - vals[0]).abs() <= tol) {
        bits |= SAME;
    }
    let c = vals[0] / w[0];
    if vals.iter().zip(w).all(|(v, wi)| (v - c * wi).abs() <= tol) {
        bits |= WEIGHTED;
    }
    bits
}

impl<T: Real> TensorGeometry<T> {
    /// Quadrature data per point.
    pub fn num_factors(&self) -> usize {
        self.num_factors
    }
    /// Vertex offsets per element, `d (2^d - 1)`.
    pub fn offsets_per_elem(&self) -> usize {
        self.dim * ((1 << self.dim) - 1)
    }

    /// Computes the quadrature data of every cell at the quadrature points of `basis` with
    /// `qdata` (`num_factors` values per point) from the cells' multilinear maps (vertex
    /// offsets from [`vertex_offsets`], first vertices `origins`), checking that no element
    /// is inverted or degenerate and that every value is finite; stores them in `layout`
    /// when `source` is [`GeometrySource::Stored`]. On the fly, the data must be the plain
    /// factors `plain = (metric, mass)` that the kernels recompute.
    #[allow(clippy::type_complexity)]
    pub(crate) fn build(
        offsets_f64: &[f64],
        origins: &[f64],
        basis: &TensorBasis,
        num_factors: usize,
        qdata: &(dyn Fn(&PointGeometry, &mut [f64]) + Sync),
        affine_weighting: Option<&[bool]>,
        plain: (bool, bool),
        source: GeometrySource,
        layout: FactorLayout,
    ) -> Result<TensorGeometry<T>, TensorError> {
        let dim = basis.dim;
        let table = MapTable::new(basis);
        let nq = table.num_points;
        let per = dim * table.nv1;
        let ne = offsets_f64.len() / per;
        let nf = num_factors;
        let (has_metric, has_mass) = plain;
        // data of element `e` through `put(factor, point, value)`; the first bad point
        let element = |e: usize, put: &mut dyn FnMut(usize, usize, f64)| {
            let vd = &offsets_f64[e * per..(e + 1) * per];
            let mut f = vec![0.0; nf];
            let mut bad = None;
            let tiny = DEGENERATE * elem_scale(vd).powi(dim as i32);
            let x0 = &origins[e * dim..(e + 1) * dim];
            // an affine element's Jacobian is one matrix: take it from the first point for
            // all, so that the data vary over the element only through the weights and the
            // coefficients (rounding would make them differ in the last bits)
            let affine = is_affine(dim, table.nv1, vd).then(|| table.point(e, 0, vd, x0));
            for i in 0..nq {
                let pg = match &affine {
                    Some(first) => PointGeometry {
                        point: i,
                        x: table.position(i, vd, x0),
                        weight: table.w[i],
                        ..*first
                    },
                    None => table.point(e, i, vd, x0),
                };
                // a NaN determinant counts as bad too
                if pg.det.partial_cmp(&tiny) != Some(std::cmp::Ordering::Greater) {
                    bad = bad.or(Some(BadPoint::Inverted(e, i, pg.det)));
                    continue;
                }
                qdata(&pg, &mut f);
                if let Some((c, &v)) = f.iter().enumerate().find(|(_, v)| !v.is_finite()) {
                    bad = bad.or(Some(BadPoint::Data(e, i, c, v)));
                }
                for (c, &v) in f.iter().enumerate() {
                    put(c, i, v);
                }
            }
            bad
        };
        let mut factors = Vec::new();
        let mut interleaved = Vec::new();
        // the interleaved layout also keeps each element's data at its first point and
        // which compact patterns every element's data follow
        let mut first_values: Vec<[f64; LANES]> = Vec::new();
        let patterns: Vec<AtomicU8> = (0..nf).map(|_| AtomicU8::new(SAME | WEIGHTED)).collect();
        let block = (nf * nq).max(1);
        let first_bad = match (source, layout) {
            (GeometrySource::Stored, FactorLayout::ElementMajor) => {
                factors = vec![T::zero(); ne * nf * nq];
                factors
                    .par_chunks_mut(block)
                    .enumerate()
                    .with_min_len(64)
                    .filter_map(|(e, out)| element(e, &mut |c, i, v| out[c * nq + i] = T::of(v)))
                    .min_by_key(|b| b.elem())
            }
            (GeometrySource::Stored, FactorLayout::Interleaved) => {
                // first without storing: when every datum follows a compact pattern (affine
                // elements, coefficients constant on each) the per-point data are never
                // needed; a datum that breaks every pattern stops this pass, and the data
                // are stored by the second
                let nb = ne.div_ceil(LANES);
                let broken = AtomicBool::new(nf > super::kernel::MAX_COMPACT);
                first_values = vec![[0.0; LANES]; nb * nf];
                let probe_bad = first_values
                    .par_chunks_mut(nf.max(1))
                    .enumerate()
                    .with_min_len(8)
                    .filter_map(|(b, first)| {
                        if broken.load(Ordering::Relaxed) {
                            return None;
                        }
                        let mut bad = None;
                        let mut vals = vec![0.0; nf * nq];
                        // the patterns this batch follows, merged into the shared ones at
                        // its end (and only where that changes them: the shared cache line
                        // then stays read-only for the other threads)
                        let mut local = vec![SAME | WEIGHTED; nf];
                        for l in 0..LANES {
                            // padding lanes repeat the last element
                            let e = (b * LANES + l).min(ne - 1);
                            if let Some(weighted) = affine_weighting {
                                let vd = &offsets_f64[e * per..(e + 1) * per];
                                if is_affine(dim, table.nv1, vd) {
                                    // the first point says it all (the physics' promise)
                                    let x0 = &origins[e * dim..(e + 1) * dim];
                                    let pg = table.point(e, 0, vd, x0);
                                    let tiny = DEGENERATE * elem_scale(vd).powi(dim as i32);
                                    if pg.det.partial_cmp(&tiny)
                                        != Some(std::cmp::Ordering::Greater)
                                    {
                                        bad = bad.or(Some(BadPoint::Inverted(e, 0, pg.det)));
                                        continue;
                                    }
                                    let mut f = vec![0.0; nf];
                                    qdata(&pg, &mut f);
                                    for (c, pat) in local.iter_mut().enumerate() {
                                        if !f[c].is_finite() {
                                            bad = bad.or(Some(BadPoint::Data(e, 0, c, f[c])));
                                        }
                                        // (a zero datum follows both patterns)
                                        *pat &= match (f[c] == 0.0, weighted[c]) {
                                            (true, _) => SAME | WEIGHTED,
                                            (false, true) => WEIGHTED,
                                            (false, false) => SAME,
                                        };
                                        first[c][l] = f[c];
                                    }
                                    continue;
                                }
                            }
                            bad = bad.or(element(e, &mut |c, i, v| vals[c * nq + i] = v));
                            for (c, pat) in local.iter_mut().enumerate() {
                                let vc = &vals[c * nq..(c + 1) * nq];
                                *pat &= datum_pattern(vc, &table.w);
                                first[c][l] = vc[0];
                            }
                        }
                        for (shared, &here) in patterns.iter().zip(&local) {
                            let now = shared.load(Ordering::Relaxed);
                            // (whoever empties a pattern stops the pass)
                            if now & here != now
                                && shared.fetch_and(here, Ordering::Relaxed) & here == 0
                            {
                                broken.store(true, Ordering::Relaxed);
                            }
                        }
                        bad
                    })
                    .min_by_key(|b| b.elem());
                if !broken.load(Ordering::Relaxed) {
                    probe_bad
                } else {
                    first_values = Vec::new();
                    interleaved = vec![[T::zero(); LANES]; nb * nf * nq];
                    interleaved
                        .par_chunks_mut(block)
                        .enumerate()
                        .with_min_len(8)
                        .filter_map(|(b, out)| {
                            let mut bad = None;
                            for l in 0..LANES {
                                let e = (b * LANES + l).min(ne - 1);
                                bad = bad
                                    .or(element(e, &mut |c, i, v| out[c * nq + i][l] = T::of(v)));
                            }
                            bad
                        })
                        .min_by_key(|b| b.elem())
                }
            }
            (GeometrySource::OnTheFly, _) => (0..ne)
                .into_par_iter()
                .with_min_len(64)
                .filter_map(|e| element(e, &mut |_, _, _| {}))
                .min_by_key(|b| b.elem()),
        };
        match first_bad {
            Some(BadPoint::Inverted(elem, point, det)) => {
                return Err(TensorError::InvertedElement { elem, point, det })
            }
            Some(BadPoint::Data(elem, point, datum, value)) => {
                return Err(TensorError::QuadratureData {
                    elem,
                    point,
                    datum,
                    value,
                })
            }
            None => {}
        }
        let compact = (!first_values.is_empty() && nf <= super::kernel::MAX_COMPACT)
            .then(|| compact_factors(&patterns, &first_values, &table.w, nq))
            .flatten();
        if compact.is_some() {
            interleaved = Vec::new();
        }
        Ok(TensorGeometry {
            dim,
            num_elem: ne,
            num_points: nq,
            num_factors: nf,
            has_metric,
            has_mass,
            source,
            layout,
            factors,
            interleaved,
            vertex_offsets: offsets_f64.par_iter().map(|&x| T::of(x)).collect(),
            compact,
        })
    }

    /// Factor `c` of element `e` at point `i`, whatever the layout (`None` on the fly).
    pub fn factor(&self, e: usize, c: usize, i: usize) -> Option<T> {
        let (nf, nq) = (self.num_factors(), self.num_points);
        match (self.source, self.layout) {
            (GeometrySource::Stored, FactorLayout::ElementMajor) => {
                self.factors.get((e * nf + c) * nq + i).copied()
            }
            (GeometrySource::Stored, FactorLayout::Interleaved) if self.compact.is_some() => {
                let cf = self.compact.as_ref()?;
                let s = *cf.scale.get(c * nq + i)?;
                let v = cf.per_elem.get((e / LANES) * nf + c)?[e % LANES];
                Some(s * v)
            }
            (GeometrySource::Stored, FactorLayout::Interleaved) => self
                .interleaved
                .get(((e / LANES) * nf + c) * nq + i)
                .map(|lane| lane[e % LANES]),
            (GeometrySource::OnTheFly, _) => None,
        }
    }
}

/// The compact form of interleaved data whose every datum follows one pattern on every
/// element (the weighted one preferred), from each element's data at its first point.
fn compact_factors<T: Real>(
    patterns: &[AtomicU8],
    first_values: &[[f64; LANES]],
    w: &[f64],
    nq: usize,
) -> Option<CompactFactors<T>> {
    let nf = patterns.len();
    let weighted: Vec<bool> = patterns
        .iter()
        .map(|p| match p.load(Ordering::Relaxed) {
            b if b & WEIGHTED != 0 => Some(true),
            b if b & SAME != 0 => Some(false),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let mut scale = Vec::with_capacity(nf * nq);
    for &wc in &weighted {
        for &wi in &w[..nq] {
            scale.push(T::of(if wc { wi } else { 1.0 }));
        }
    }
    let per_elem = first_values
        .chunks_exact(nf.max(1))
        .flat_map(|batch| {
            batch.iter().zip(&weighted).map(|(lanes, &wc)| {
                let div = if wc { w[0] } else { 1.0 };
                lanes.map(|v| T::of(v / div))
            })
        })
        .collect();
    Some(CompactFactors { scale, per_elem })
}

/// The first bad point met while computing the quadrature data.
enum BadPoint {
    /// `(elem, point, det J)`: an inverted or degenerate map.
    Inverted(usize, usize, f64),
    /// `(elem, point, datum, value)`: a datum that is not finite.
    Data(usize, usize, usize, f64),
}

impl BadPoint {
    fn elem(&self) -> usize {
        match *self {
            BadPoint::Inverted(e, ..) | BadPoint::Data(e, ..) => e,
        }
    }
}

/// Factors per point for the given terms.
pub(crate) fn factor_count(dim: usize, metric: bool, mass: bool) -> usize {
    (if metric { dim * (dim + 1) / 2 } else { 0 }) + mass as usize
}

/// Whether an element's multilinear map is affine: every vertex offset the sum of the
/// offsets of the edge vertices it is made of (`x_v − x_0 = Σ_{bit k of v} (x_{2^k} − x_0)`),
/// to rounding. `vd` is `[axis][v − 1]`.
fn is_affine(dim: usize, nv1: usize, vd: &[f64]) -> bool {
    let tol = AFFINE_TOLERANCE * elem_scale(vd);
    (1..=nv1).filter(|v| !v.is_power_of_two()).all(|v| {
        (0..dim).all(|a| {
            let va = &vd[a * nv1..(a + 1) * nv1];
            let sum: f64 = (0..dim)
                .filter(|k| v & (1 << k) != 0)
                .map(|k| va[(1 << k) - 1])
                .sum();
            (va[v - 1] - sum).abs() <= tol
        })
    })
}

/// Largest absolute vertex offset of an element (its size).
fn elem_scale(vd: &[f64]) -> f64 {
    vd.iter().fold(0.0f64, |m, &x| m.max(x.abs()))
}

/// The first vertex `x_0` of every cell, `[elem][axis]`.
pub(crate) fn origins(mesh: &Mesh) -> Vec<f64> {
    let d = mesh.dim();
    let mut out = vec![0.0; mesh.num_cells() * d];
    out.par_chunks_mut(d.max(1))
        .enumerate()
        .for_each(|(e, o)| o.copy_from_slice(&mesh.vertex(mesh.cell(e)[0] as usize)[..d]));
    out
}

/// Vertex offsets `x_v - x_0` of all cells, `[elem][axis][v - 1]`, in `f64`.
pub(crate) fn vertex_offsets(mesh: &Mesh) -> Vec<f64> {
    let d = mesh.dim();
    let nv = 1usize << d;
    let per = d * (nv - 1);
    let mut out = vec![0.0; mesh.num_cells() * per];
    out.par_chunks_mut(per.max(1))
        .enumerate()
        .for_each(|(e, o)| {
            let cell = mesh.cell(e);
            let x0 = mesh.vertex(cell[0] as usize);
            for v in 1..nv {
                let xv = mesh.vertex(cell[v] as usize);
                for a in 0..d {
                    o[a * (nv - 1) + v - 1] = xv[a] - x0[a];
                }
            }
        });
    out
}

/// Reference derivatives of the multilinear map's vertex functions `φ_v`, `v >= 1`, and
/// the tensor weights at every quadrature point of a basis.
#[derive(Clone, Debug)]
pub(crate) struct MapTable {
    /// Quadrature points per element.
    pub num_points: usize,
    /// Vertex functions used (`2^d - 1`).
    pub nv1: usize,
    /// Dimension.
    pub dim: usize,
    /// `dphi[(point * dim + k) * nv1 + v - 1] = ∂φ_v/∂ξ_k`.
    pub dphi: Vec<f64>,
    /// `phi[point * nv1 + v - 1] = φ_v`.
    pub phi: Vec<f64>,
    /// Tensor quadrature weights.
    pub w: Vec<f64>,
}

impl MapTable {
    pub(crate) fn new(basis: &TensorBasis) -> MapTable {
        let d = basis.dim;
        let nq = basis.points_per_elem();
        let nv1 = (1usize << d) - 1;
        let mut dphi = vec![0.0; nq * d * nv1];
        let mut phi = vec![0.0; nq * nv1];
        let mut w = vec![0.0; nq];
        for i in 0..nq {
            let mut xi = [0.0; 3];
            let mut r = i;
            for x in xi.iter_mut().take(d) {
                *x = basis.points[r % basis.q];
                r /= basis.q;
            }
            w[i] = basis.weight(i);
            for v in 1..=nv1 {
                phi[i * nv1 + v - 1] = (0..d)
                    .map(|a| 0.5 * (1.0 + if (v >> a) & 1 == 1 { xi[a] } else { -xi[a] }))
                    .product();
                for k in 0..d {
                    let mut g = 1.0;
                    for a in 0..d {
                        let s = if (v >> a) & 1 == 1 { 1.0 } else { -1.0 };
                        g *= if a == k {
                            0.5 * s
                        } else {
                            0.5 * (1.0 + s * xi[a])
                        };
                    }
                    dphi[(i * d + k) * nv1 + v - 1] = g;
                }
            }
        }
        MapTable {
            num_points: nq,
            nv1,
            dim: d,
            dphi,
            phi,
            w,
        }
    }

    /// The geometry of point `i` of element `e` with vertex offsets `vd` (`[axis][v - 1]`)
    /// and first vertex `x0`.
    pub(crate) fn point(&self, e: usize, i: usize, vd: &[f64], x0: &[f64]) -> PointGeometry {
        let (d, nv1) = (self.dim, self.nv1);
        let dp = self.dphi_at(i);
        let ph = &self.phi[i * nv1..(i + 1) * nv1];
        let mut jac = [[0.0; 3]; 3];
        let mut x = [0.0; 3];
        for a in 0..d {
            let va = &vd[a * nv1..(a + 1) * nv1];
            x[a] = x0[a] + va.iter().zip(ph).map(|(o, p)| o * p).sum::<f64>();
            for k in 0..d {
                jac[a][k] = va
                    .iter()
                    .zip(&dp[k * nv1..(k + 1) * nv1])
                    .map(|(o, g)| o * g)
                    .sum();
            }
        }
        let (det, _) = adjugate(d, &jac);
        PointGeometry {
            dim: d,
            elem: e,
            point: i,
            x,
            jacobian: jac,
            det,
            weight: self.w[i],
        }
    }

    /// The position of point `i` of an element with vertex offsets `vd` and first vertex
    /// `x0` (what [`MapTable::point`] computes first).
    pub(crate) fn position(&self, i: usize, vd: &[f64], x0: &[f64]) -> [f64; 3] {
        let nv1 = self.nv1;
        let ph = &self.phi[i * nv1..(i + 1) * nv1];
        let mut x = [0.0; 3];
        for a in 0..self.dim {
            let va = &vd[a * nv1..(a + 1) * nv1];
            x[a] = x0[a] + va.iter().zip(ph).map(|(o, p)| o * p).sum::<f64>();
        }
        x
    }

    /// The derivatives at point `i`, `[k][v - 1]`.
    pub(crate) fn dphi_at(&self, i: usize) -> &[f64] {
        let s = self.dim * self.nv1;
        &self.dphi[i * s..(i + 1) * s]
    }
}

/// Geometric factors at one point (in `f64`): writes the packed metric (if `metric`) and
/// `w det J` (if `mass`) to `out` and returns `det J`. `vd` are the element's vertex
/// offsets `[axis][v - 1]`, `dphi` the map derivatives at the point `[k][v - 1]`.
pub(crate) fn point_factors(
    dim: usize,
    vd: &[f64],
    dphi: &[f64],
    w: f64,
    metric: bool,
    mass: bool,
    out: &mut [f64],
) -> f64 {
    let nv1 = (1usize << dim) - 1;
    let mut j = [[0.0; 3]; 3];
    for i in 0..dim {
        for k in 0..dim {
            j[i][k] = (0..nv1).map(|v| vd[i * nv1 + v] * dphi[k * nv1 + v]).sum();
        }
    }
    let (det, adj) = adjugate(dim, &j);
    let mut c = 0;
    if metric {
        // G_kl = w det J Σ_i J⁻¹[k][i] J⁻¹[l][i] = (w / det J) Σ_i adj[k][i] adj[l][i]
        let s = w / det;
        for k in 0..dim {
            for l in k..dim {
                out[c] = s * (0..dim).map(|i| adj[k][i] * adj[l][i]).sum::<f64>();
                c += 1;
            }
        }
    }
    if mass {
        out[c] = w * det;
    }
    det
}

/// The on-the-fly twin of [`point_factors`] for a batch: computes the factors of all
/// lanes at every point and writes factor `c` of point `i` to `out[c * nq + i]`.
/// `vd[a * nv1 + v]` are the lanes' vertex offsets, `dphi` the map table in `T`.
#[inline(always)]
pub(crate) fn lane_factors<T: Real, const FMA: bool>(
    dim: usize,
    nq: usize,
    vd: &[Lane<T>],
    dphi: &[T],
    w: &[T],
    metric: bool,
    mass: bool,
    out: &mut [Lane<T>],
) {
    let nv1 = (1usize << dim) - 1;
    let vd = &vd[..dim * nv1];
    let dphi = &dphi[..nq * dim * nv1];
    for i in 0..nq {
        lanes_are_the_vector();
        let dp = &dphi[i * dim * nv1..(i + 1) * dim * nv1];
        let mut j = [[[T::zero(); LANES]; 3]; 3];
        for a in 0..dim {
            for k in 0..dim {
                let mut acc = [T::zero(); LANES];
                for v in 0..nv1 {
                    let g = dp[k * nv1 + v];
                    let x = &vd[a * nv1 + v];
                    for l in 0..LANES {
                        acc[l] = madd::<T, FMA>(acc[l], g, x[l]);
                    }
                }
                j[a][k] = acc;
            }
        }
        let wi = w[i];
        if !metric {
            // the mass term needs det J only
            if mass {
                let mut wd = [T::zero(); LANES];
                for l in 0..LANES {
                    let m = |r: usize, s: usize| j[r][s][l];
                    let det = if dim == 2 {
                        m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0)
                    } else {
                        m(0, 0) * (m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1))
                            - m(0, 1) * (m(1, 0) * m(2, 2) - m(1, 2) * m(2, 0))
                            + m(0, 2) * (m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0))
                    };
                    wd[l] = wi * det;
                }
                out[i] = wd;
            }
            continue;
        }
        let mut c = 0;
        if dim == 2 {
            let mut g = [[T::zero(); LANES]; 3];
            let mut wd = [T::zero(); LANES];
            for l in 0..LANES {
                let (j00, j01, j10, j11) = (j[0][0][l], j[0][1][l], j[1][0][l], j[1][1][l]);
                let det = j00 * j11 - j01 * j10;
                let s = wi / det;
                // adj = [[j11, -j01], [-j10, j00]]
                g[0][l] = s * (j11 * j11 + j01 * j01);
                g[1][l] = -s * (j11 * j10 + j01 * j00);
                g[2][l] = s * (j10 * j10 + j00 * j00);
                wd[l] = wi * det;
            }
            if metric {
                for gk in g {
                    out[c * nq + i] = gk;
                    c += 1;
                }
            }
            if mass {
                out[c * nq + i] = wd;
            }
        } else {
            let mut g = [[T::zero(); LANES]; 6];
            let mut wd = [T::zero(); LANES];
            for l in 0..LANES {
                let m = |r: usize, s: usize| j[r][s][l];
                let a00 = m(1, 1) * m(2, 2) - m(1, 2) * m(2, 1);
                let a01 = m(0, 2) * m(2, 1) - m(0, 1) * m(2, 2);
                let a02 = m(0, 1) * m(1, 2) - m(0, 2) * m(1, 1);
                let a10 = m(1, 2) * m(2, 0) - m(1, 0) * m(2, 2);
                let a11 = m(0, 0) * m(2, 2) - m(0, 2) * m(2, 0);
                let a12 = m(0, 2) * m(1, 0) - m(0, 0) * m(1, 2);
                let a20 = m(1, 0) * m(2, 1) - m(1, 1) * m(2, 0);
                let a21 = m(0, 1) * m(2, 0) - m(0, 0) * m(2, 1);
                let a22 = m(0, 0) * m(1, 1) - m(0, 1) * m(1, 0);
                let det = m(0, 0) * a00 + m(0, 1) * a10 + m(0, 2) * a20;
                let s = wi / det;
                g[0][l] = s * (a00 * a00 + a01 * a01 + a02 * a02);
                g[1][l] = s * (a00 * a10 + a01 * a11 + a02 * a12);
                g[2][l] = s * (a00 * a20 + a01 * a21 + a02 * a22);
                g[3][l] = s * (a10 * a10 + a11 * a11 + a12 * a12);
                g[4][l] = s * (a10 * a20 + a11 * a21 + a12 * a22);
                g[5][l] = s * (a20 * a20 + a21 * a21 + a22 * a22);
                wd[l] = wi * det;
            }
            if metric {
                for gk in g {
                    out[c * nq + i] = gk;
                    c += 1;
                }
            }
            if mass {
                out[c * nq + i] = wd;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::TensorPhysics;
    use ferrofem_base::CellType;
    use ferrofem_fe::QuadratureRule;
    use ferrofem_geometry::QuadGeometry;
    use ferrofem_mesh::{generate_box, BoxSpec};

    #[test]
    fn affine_elements_take_their_data_from_the_first_point() {
        // an affine box (sheared) with per-element coefficients: the shortcut and the
        // computation at every point give the same compact data
        for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
            let d = ct.dim();
            let mut mesh = generate_box(&BoxSpec::unit(ct, &vec![3; d])).unwrap();
            for x in mesh.coords_mut().chunks_mut(d) {
                x[0] += 0.3 * x[1];
            }
            let ne = mesh.num_cells();
            let lambda: Vec<f64> = (0..ne).map(|e| 1.0 + e as f64).collect();
            let mu: Vec<f64> = (0..ne).map(|e| 2.0 + 0.5 * e as f64).collect();
            let phys = crate::tensor::Elastic {
                dim: d,
                lambda: crate::tensor::Coefficient::PerElement(lambda.into()),
                mu: crate::tensor::Coefficient::PerElement(mu.into()),
            };
            let weighting = TensorPhysics::<f64>::affine_weighting(&phys, d).unwrap();
            let nf = TensorPhysics::<f64>::qdata_len(&phys, d);
            let qdata =
                |p: &PointGeometry, out: &mut [f64]| TensorPhysics::<f64>::qdata(&phys, p, out);
            let basis = TensorBasis::new(d, 3, 4, true).unwrap();
            let build = |w: Option<&[bool]>| {
                TensorGeometry::<f64>::build(
                    &vertex_offsets(&mesh),
                    &origins(&mesh),
                    &basis,
                    nf,
                    &qdata,
                    w,
                    (false, false),
                    GeometrySource::Stored,
                    FactorLayout::Interleaved,
                )
                .unwrap()
            };
            let (fast, full) = (build(Some(&weighting)), build(None));
            let (a, b) = (fast.compact.unwrap(), full.compact.unwrap());
            assert_eq!(a.scale, b.scale);
            assert_eq!(a.per_elem, b.per_elem);
        }
    }

    #[test]
    fn stored_factors_match_quad_geometry() {
        for ct in [CellType::Quadrilateral, CellType::Hexahedron] {
            let d = ct.dim();
            let mut spec = BoxSpec::unit(ct, &vec![3; d]);
            spec.perturb = 0.25;
            spec.seed = 3;
            let mesh = generate_box(&spec).unwrap();
            let basis = TensorBasis::new(d, 2, 4, false).unwrap();
            let rule = QuadratureRule::gauss(ct, 4).unwrap();
            let qg = QuadGeometry::compute(&mesh, &rule).unwrap();
            let g = qg.metric();
            let m = d * (d + 1) / 2;
            for layout in [FactorLayout::ElementMajor, FactorLayout::Interleaved] {
                let offsets = vertex_offsets(&mesh);
                let stored = GeometrySource::Stored;
                let phys = crate::tensor::Diffusion::unit(1, 1.0);
                let nf = TensorPhysics::<f64>::qdata_len(&phys, d);
                let qdata =
                    |p: &PointGeometry, out: &mut [f64]| TensorPhysics::<f64>::qdata(&phys, p, out);
                let geo = TensorGeometry::<f64>::build(
                    &offsets,
                    &origins(&mesh),
                    &basis,
                    nf,
                    &qdata,
                    None,
                    (true, true),
                    stored,
                    layout,
                )
                .unwrap();
                let nq = geo.num_points;
                for e in 0..mesh.num_cells() {
                    for i in 0..nq {
                        for c in 0..m {
                            let want = g[(e * nq + i) * m + c];
                            let got = geo.factor(e, c, i).unwrap();
                            assert!((got - want).abs() < 1e-13 * (1.0 + want.abs()));
                        }
                        let want = qg.wdetj[e * nq + i];
                        assert!((geo.factor(e, m, i).unwrap() - want).abs() < 1e-14);
                    }
                }
            }
        }
    }
}
