//! Pointwise physics of the tensor-product operators, the idea of libCEED's QFunctions:
//! the sum-factorised kernel interpolates the element's values and reference gradients to
//! the quadrature points, a [`TensorPhysics`] turns them into the coefficients of the test
//! functions' values and reference gradients there, and the kernel applies the transposed
//! contractions. What a physics needs per point besides the field (geometry with its
//! coefficients folded in: "quadrature data") is computed once, at set-up, by the physics
//! itself from each point's [`PointGeometry`].
//!
//! BP1 (mass), BP3/BP3.5 (diffusion), the acoustic stiffness (diffusion with `1/ρ`), the
//! lumped SEM mass (collocated mass) and isotropic elasticity are instances
//! ([`super::forms`]); a physics of one's own implements the trait.

use super::lanes::{Lane, LANES};
use ferrofem_base::Real;
use std::fmt;
use std::sync::Arc;

/// The geometry of one quadrature point of one element, in `f64`, handed to
/// [`TensorPhysics::qdata`] at set-up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointGeometry {
    /// Dimension (2 or 3); entries beyond it are zero.
    pub dim: usize,
    /// Element index.
    pub elem: usize,
    /// Quadrature point within the element (lexicographic, first direction fastest).
    pub point: usize,
    /// The physical point.
    pub x: [f64; 3],
    /// `J[i][k] = ∂x_i/∂ξ_k`.
    pub jacobian: [[f64; 3]; 3],
    /// `det J` (positive: inverted elements are refused before any physics sees them).
    pub det: f64,
    /// The reference quadrature weight.
    pub weight: f64,
}

impl PointGeometry {
    /// `w det J`, the point's share of the element's volume.
    pub fn wdetj(&self) -> f64 {
        self.weight * self.det
    }

    /// The inverse Jacobian, `A[a][k] = ∂ξ_a/∂x_k`.
    pub fn inverse(&self) -> [[f64; 3]; 3] {
        let (_, adj) = ferrofem_geometry::adjugate(self.dim, &self.jacobian);
        let mut a = [[0.0; 3]; 3];
        for r in 0..self.dim {
            for c in 0..self.dim {
                a[r][c] = adj[r][c] / self.det;
            }
        }
        a
    }

    /// The packed metric `G = w det J · J⁻¹J⁻ᵀ` (`(00, 01, 11)` in 2-D, `(00, 01, 02, 11,
    /// 12, 22)` in 3-D), written to `out`; returns the number of entries.
    pub fn metric(&self, out: &mut [f64]) -> usize {
        let d = self.dim;
        let (_, adj) = ferrofem_geometry::adjugate(d, &self.jacobian);
        // G_kl = w det J Σ_i J⁻¹[k][i] J⁻¹[l][i] = (w / det J) Σ_i adj[k][i] adj[l][i]
        let s = self.weight / self.det;
        let mut c = 0;
        for k in 0..d {
            for l in k..d {
                out[c] = s * (0..d).map(|i| adj[k][i] * adj[l][i]).sum::<f64>();
                c += 1;
            }
        }
        c
    }
}

/// One batch of [`LANES`] elements at the quadrature points, as a physics sees it.
#[derive(Clone, Copy, Debug)]
pub struct PointBatch<'a, T> {
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Quadrature points per element.
    pub num_points: usize,
    /// The batch's quadrature data, `[datum][point]` of lanes (the layout of
    /// [`TensorPhysics::qdata`]'s output, one lane per element).
    pub qdata: &'a [Lane<T>],
    /// The elements of the lanes (lanes past `count` repeat the last element).
    pub elems: &'a [usize; LANES],
    /// Lanes holding distinct elements.
    pub count: usize,
    /// True when the kernel runs with fused multiply-add instructions (a physics may use
    /// `mul_add` then; elsewhere a software fused multiply-add is slow).
    pub fma: bool,
    /// The quadrature data in compact form (one value per element and datum times a
    /// per-point scale), handed only to physics that
    /// [read it](TensorPhysics::reads_compact); `qdata` is empty then.
    pub compact: Option<CompactData<'a, T>>,
}

/// Quadrature data of a batch whose datum `c` at point `i` is `scale[c · num_points + i] ·
/// per[c]` (affine elements with coefficients constant on each).
#[derive(Clone, Copy, Debug)]
pub struct CompactData<'a, T> {
    /// One lane per datum: the batch's elements' values.
    pub per: &'a [Lane<T>],
    /// `[datum][point]` scales, the same for every element.
    pub scale: &'a [T],
}

impl<T: Real> PointBatch<'_, T> {
    /// Datum `c` at point `i` of every lane, from the full or the compact data.
    #[inline(always)]
    pub fn datum(&self, c: usize, i: usize) -> Lane<T> {
        let at = c * self.num_points + i;
        match self.compact {
            Some(cd) => {
                let (p, s) = (cd.per[c], cd.scale[at]);
                std::array::from_fn(|l| p[l] * s)
            }
            None => self.qdata[at],
        }
    }
}

/// Pointwise physics of a sum-factorised operator: `v · f0(u, ∇u) + ∇v : f1(u, ∇u)` at every
/// quadrature point, linear in the field (an operator's action, as in libCEED).
///
/// The kernel hands [`apply`](Self::apply) the field's values `v[c][point]` (when
/// [`uses_value`](Self::uses_value)) and *reference* gradients `g[c][a][point]` (`∂u_c/∂ξ_a`,
/// when [`uses_gradient`](Self::uses_gradient)) of a batch, each entry a lane of
/// [`LANES`] elements; the physics overwrites them with the coefficients of the test
/// functions' values and reference gradients, quadrature weight and Jacobian included
/// (which it finds in its quadrature data).
pub trait TensorPhysics<T: Real>: Send + Sync {
    /// A short name for messages and benchmarks.
    fn name(&self) -> &str;
    /// Components of the field.
    fn ncomp(&self) -> usize;
    /// Whether the physics reads and writes values (a mass-like term).
    fn uses_value(&self) -> bool;
    /// Whether the physics reads and writes gradients (a stiffness-like term).
    fn uses_gradient(&self) -> bool;
    /// Quadrature data per point in dimension `dim`.
    fn qdata_len(&self, dim: usize) -> usize;
    /// Computes the quadrature data of one point (`qdata_len` entries) at set-up.
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]);
    /// True when the quadrature data is exactly the plain geometric factors (the packed
    /// metric when [`uses_gradient`](Self::uses_gradient), then `w det J` when
    /// [`uses_value`](Self::uses_value), no coefficients), so that the kernels may
    /// recompute it from the element's vertices instead of reading it
    /// ([`GeometrySource::OnTheFly`](ferrofem_geometry::GeometrySource::OnTheFly)).
    fn plain_geometry(&self) -> bool {
        false
    }
    /// True when [`apply`](Self::apply) reads [`PointBatch::compact`] when it is present
    /// (e.g. through [`PointBatch::datum`]), so that the kernel may hand it compact data
    /// instead of expanding them into `qdata` first.
    fn reads_compact(&self) -> bool {
        false
    }
    /// On an affine element whose coefficients are constant on it, which data are the
    /// first point's value times `w_i / w_0` (`true`) and which are the same at every
    /// point (`false`), so that the set-up computes the first point only; `None` (the
    /// default) when a datum may vary otherwise, e.g. with a coefficient given per point.
    fn affine_weighting(&self, _dim: usize) -> Option<Vec<bool>> {
        None
    }
    /// The pointwise operator on a batch: `v` holds `ncomp · num_points` lanes
    /// (`[c][point]`), `g` holds `ncomp · dim · num_points` lanes (`[c][a][point]`); both
    /// are overwritten in place (only those the physics uses are meaningful).
    fn apply(&self, batch: &PointBatch<'_, T>, v: &mut [Lane<T>], g: &mut [Lane<T>]);
    /// Flops of [`apply`](Self::apply) per point and element (for the performance model).
    fn flops_per_point(&self, dim: usize) -> f64;
}

impl<T: Real> TensorPhysics<T> for Box<dyn TensorPhysics<T>> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn ncomp(&self) -> usize {
        (**self).ncomp()
    }
    fn uses_value(&self) -> bool {
        (**self).uses_value()
    }
    fn uses_gradient(&self) -> bool {
        (**self).uses_gradient()
    }
    fn qdata_len(&self, dim: usize) -> usize {
        (**self).qdata_len(dim)
    }
    fn qdata(&self, at: &PointGeometry, out: &mut [f64]) {
        (**self).qdata(at, out)
    }
    fn plain_geometry(&self) -> bool {
        (**self).plain_geometry()
    }
    fn reads_compact(&self) -> bool {
        (**self).reads_compact()
    }
    fn affine_weighting(&self, dim: usize) -> Option<Vec<bool>> {
        (**self).affine_weighting(dim)
    }
    fn apply(&self, batch: &PointBatch<'_, T>, v: &mut [Lane<T>], g: &mut [Lane<T>]) {
        (**self).apply(batch, v, g)
    }
    fn flops_per_point(&self, dim: usize) -> f64 {
        (**self).flops_per_point(dim)
    }
}

/// A material coefficient of a physics, evaluated at set-up at every quadrature point.
#[derive(Clone)]
pub enum Coefficient {
    /// The same value everywhere.
    Constant(f64),
    /// One value per element.
    PerElement(Arc<[f64]>),
    /// Any function of the point: its position `x`, its element (for regions), its index.
    Field(Arc<dyn Fn(&PointGeometry) -> f64 + Send + Sync>),
}

impl Coefficient {
    /// A coefficient given by a function of the point.
    pub fn field(f: impl Fn(&PointGeometry) -> f64 + Send + Sync + 'static) -> Coefficient {
        Coefficient::Field(Arc::new(f))
    }
    /// The value at a point (a per-element coefficient shorter than the mesh reads as NaN,
    /// which the operator's set-up refuses).
    pub fn at(&self, p: &PointGeometry) -> f64 {
        match self {
            Coefficient::Constant(c) => *c,
            Coefficient::PerElement(v) => v.get(p.elem).copied().unwrap_or(f64::NAN),
            Coefficient::Field(f) => f(p),
        }
    }
    /// True when the value is constant on each element (a constant or one value per
    /// element).
    pub fn is_cellwise(&self) -> bool {
        !matches!(self, Coefficient::Field(_))
    }
    /// True for the constant 1 (the coefficient of the bake-off problems).
    pub fn is_one(&self) -> bool {
        matches!(self, Coefficient::Constant(c) if *c == 1.0)
    }
}

impl fmt::Debug for Coefficient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Coefficient::Constant(c) => write!(f, "Constant({c})"),
            Coefficient::PerElement(v) => write!(f, "PerElement({} values)", v.len()),
            Coefficient::Field(_) => write!(f, "Field(..)"),
        }
    }
}

impl From<f64> for Coefficient {
    fn from(c: f64) -> Coefficient {
        Coefficient::Constant(c)
    }
}
