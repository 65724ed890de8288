//! The user-facing tensor-product operator: L-vector in, gather, sum-factorised element
//! kernel, race-free accumulation, L-vector out.

use super::accumulate::{sum_by_node, EVecSink, SharedSink, SharedSlice};
use super::basis::transpose;
use super::geometry::{origins, vertex_offsets, MapTable};
use super::kernel::{self, KernelData, RangeFn, Scratch, Sizes};
use super::lane_runs::LaneRuns;
use super::model::{self, FormModel, IndexTraffic, Model, ModelSpec, VectorTraffic};
use super::{
    diagonal, Accumulation, BlockColoring, Diffusion, Elastic, FactorLayout, Mass, PointGeometry,
    SimdLevel, TensorBasis, TensorError, TensorGeometry, TensorPhysics, LANES,
};
use ferrofem_base::{FlushSubnormals, LinearOperator, Real};
use ferrofem_geometry::GeometrySource;
use ferrofem_mesh::Mesh;
use ferrofem_space::{ElemRestriction, H1Space, TransposeMap};
use rayon::prelude::*;
use std::sync::{Mutex, OnceLock};

/// Elements per task of the by-node accumulation's kernel pass.
const TASK_ELEMS: usize = 8 * LANES;
/// Largest default number of elements per colour block of the coloured accumulation.
pub const MAX_DEFAULT_BLOCK_LEN: usize = 8 * LANES;

/// Default elements per colour block: large blocks for locality, but at least about 32
/// blocks per thread (a few per thread in every colour), in whole batches of [`LANES`].
pub fn default_block_len(num_elem: usize, threads: usize) -> usize {
    let per = num_elem / (32 * threads.max(1));
    per.clamp(LANES, MAX_DEFAULT_BLOCK_LEN).div_ceil(LANES) * LANES
}

/// Which bilinear form a [`TensorOperator`] applies (the CEED bake-off problems).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TensorKind {
    /// BP1: the mass matrix `∫ v u`, Gauss quadrature (default `q = p + 2` points per
    /// direction, CEED's choice).
    Mass,
    /// BP3: `∫ ∇v·∇u + α v u` with Gauss quadrature (default `q = p + 2`); `α = 0` is the
    /// pure diffusion (Laplace) operator of CEED BP3.
    Diffusion {
        /// The screening coefficient `α`.
        alpha: f64,
    },
    /// BP3.5 (CEED BP5): the same form integrated by collocation at the `p + 1` GLL nodes
    /// per direction, with the GLL derivative matrix and no interpolation.
    CollocatedDiffusion {
        /// The screening coefficient `α`.
        alpha: f64,
    },
}

impl TensorKind {
    /// Default quadrature points per direction for order `p`.
    pub fn default_points(self, order: usize) -> usize {
        match self {
            TensorKind::Mass | TensorKind::Diffusion { .. } => order + 2,
            TensorKind::CollocatedDiffusion { .. } => order + 1,
        }
    }
    /// The coefficient of the mass term (1 for the mass operator).
    pub fn alpha(self) -> f64 {
        match self {
            TensorKind::Mass => 1.0,
            TensorKind::Diffusion { alpha } | TensorKind::CollocatedDiffusion { alpha } => alpha,
        }
    }
    /// True when the form has a gradient term.
    pub fn has_gradient(self) -> bool {
        !matches!(self, TensorKind::Mass)
    }
    /// True when the form has a mass term.
    pub fn has_mass(self) -> bool {
        self.alpha() != 0.0
    }
    /// True for collocated quadrature.
    pub fn is_collocated(self) -> bool {
        matches!(self, TensorKind::CollocatedDiffusion { .. })
    }
    /// The benchmark name in the paper's numbering: `BP1`, `BP3`, `BP3.5`.
    pub fn name(self) -> &'static str {
        match self {
            TensorKind::Mass => "BP1",
            TensorKind::Diffusion { .. } => "BP3",
            TensorKind::CollocatedDiffusion { .. } => "BP3.5",
        }
    }
    /// The physics and quadrature of this bake-off problem for `ncomp` components.
    fn form<T: Real>(
        self,
        ncomp: usize,
        q_points: Option<usize>,
        order: usize,
    ) -> (Form<T>, Quadrature) {
        let q = q_points.unwrap_or(self.default_points(order));
        match self {
            TensorKind::Mass => (Form::Mass(Mass::unit(ncomp)), Quadrature::Gauss(q)),
            TensorKind::Diffusion { alpha } => (
                Form::Diffusion(Diffusion::unit(ncomp, alpha)),
                Quadrature::Gauss(q),
            ),
            TensorKind::CollocatedDiffusion { alpha } => {
                let quad = if q == order + 1 {
                    Quadrature::Collocated
                } else {
                    Quadrature::CollocatedWith(q)
                };
                (Form::Diffusion(Diffusion::unit(ncomp, alpha)), quad)
            }
        }
    }
}

/// The quadrature of a [`TensorOperator`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quadrature {
    /// `q` Gauss points per direction: values interpolated there with `B` (BP1, BP3).
    Gauss(usize),
    /// Collocation at the `p + 1` GLL nodes per direction: no interpolation (BP3.5, the
    /// spectral-element method, whose mass is then diagonal).
    Collocated,
    /// A collocated request with another number of points: refused when the operator is
    /// built (kept so that the error can name it).
    CollocatedWith(usize),
}

/// The pointwise physics of a [`TensorOperator`]: a built-in one (its kernels specialised
/// for orders 1..=8 and compiled in this crate) or one's own.
pub enum Form<T: Real> {
    /// Weighted mass.
    Mass(Mass),
    /// Diffusion with a coefficient (and a screening term).
    Diffusion(Diffusion),
    /// Isotropic linear elasticity.
    Elastic(Elastic),
    /// A physics of one's own (dynamic-size kernels).
    Own(Box<dyn TensorPhysics<T>>),
}

impl<T: Real> From<Mass> for Form<T> {
    fn from(p: Mass) -> Form<T> {
        Form::Mass(p)
    }
}
impl<T: Real> From<Diffusion> for Form<T> {
    fn from(p: Diffusion) -> Form<T> {
        Form::Diffusion(p)
    }
}
impl<T: Real> From<Elastic> for Form<T> {
    fn from(p: Elastic) -> Form<T> {
        Form::Elastic(p)
    }
}
impl<T: Real> From<Box<dyn TensorPhysics<T>>> for Form<T> {
    fn from(p: Box<dyn TensorPhysics<T>>) -> Form<T> {
        Form::Own(p)
    }
}

impl<T: Real> Form<T> {
    fn physics(&self) -> &dyn TensorPhysics<T> {
        match self {
            Form::Mass(p) => p,
            Form::Diffusion(p) => p,
            Form::Elastic(p) => p,
            Form::Own(p) => p.as_ref(),
        }
    }
}

/// A physics with the kernel instance chosen for it.
struct Bound<T: Real, P> {
    physics: P,
    run: RangeFn<T, P>,
}

/// [`Bound`] with the physics type erased.
trait BoundKernel<T: Real>: Send + Sync {
    fn run(
        &self,
        k: &KernelData<'_, T>,
        range: std::ops::Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn kernel::BatchSink<T>,
    );
    fn physics(&self) -> &dyn TensorPhysics<T>;
}

impl<T: Real, P: TensorPhysics<T>> BoundKernel<T> for Bound<T, P> {
    fn run(
        &self,
        k: &KernelData<'_, T>,
        range: std::ops::Range<usize>,
        s: &mut Scratch<T>,
        x: &[T],
        sink: &mut dyn kernel::BatchSink<T>,
    ) {
        (self.run)(k, &self.physics, range, s, x, sink)
    }
    fn physics(&self) -> &dyn TensorPhysics<T> {
        &self.physics
    }
}

fn bind<T: Real>(
    form: Form<T>,
    shape: u8,
    sizes: Sizes,
    simd: SimdLevel,
) -> Box<dyn BoundKernel<T>> {
    match form {
        Form::Mass(physics) => Box::new(Bound {
            run: kernel::select_mass::<T>(shape, sizes, simd),
            physics,
        }),
        Form::Diffusion(physics) => Box::new(Bound {
            run: kernel::select_diffusion::<T>(shape, sizes, simd),
            physics,
        }),
        Form::Elastic(physics) => Box::new(Bound {
            run: kernel::select_elastic::<T>(shape, sizes, simd),
            physics,
        }),
        Form::Own(physics) => Box::new(Bound {
            run: kernel::select_dyn::<T, Box<dyn TensorPhysics<T>>>(shape, simd),
            physics,
        }),
    }
}

/// Construction options of a [`TensorOperator`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TensorOptions {
    /// The form.
    pub kind: TensorKind,
    /// Quadrature points per direction (`None`: [`TensorKind::default_points`]).
    pub q_points: Option<usize>,
    /// Stored or on-the-fly geometry.
    pub geometry: GeometrySource,
    /// The layout of stored factors (ignored on the fly).
    pub factor_layout: FactorLayout,
    /// How element results are accumulated.
    pub accumulation: Accumulation,
    /// Instruction set (`None`: the best one detected; a level the processor lacks falls
    /// back to the baseline).
    pub simd: Option<SimdLevel>,
    /// Elements per colour block for [`Accumulation::Colored`] (`None`:
    /// [`default_block_len`] for the current rayon thread count). Multiples of [`LANES`]
    /// keep batches aligned with the interleaved geometry.
    pub block_len: Option<usize>,
}

impl TensorOptions {
    /// Defaults for `kind`: default points, stored geometry in the interleaved layout (the
    /// CPU's fastest), the default accumulation, detected instruction set.
    pub fn new(kind: TensorKind) -> TensorOptions {
        TensorOptions {
            kind,
            q_points: None,
            geometry: GeometrySource::Stored,
            factor_layout: FactorLayout::default(),
            accumulation: Accumulation::default(),
            simd: None,
            block_len: None,
        }
    }
}

/// Construction options of a [`TensorOperator`] with a physics of its own
/// ([`TensorOperator::with_physics`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhysicsOptions {
    /// The quadrature.
    pub quadrature: Quadrature,
    /// Stored or on-the-fly geometry (on the fly only for physics whose quadrature data
    /// are the plain geometric factors).
    pub geometry: GeometrySource,
    /// The layout of stored data.
    pub factor_layout: FactorLayout,
    /// How element results are accumulated.
    pub accumulation: Accumulation,
    /// Instruction set (`None`: the best one detected).
    pub simd: Option<SimdLevel>,
    /// Elements per colour block (`None`: [`default_block_len`]).
    pub block_len: Option<usize>,
}

impl PhysicsOptions {
    /// Defaults for `quadrature`: stored data in the interleaved layout, the default
    /// accumulation, detected instruction set.
    pub fn new(quadrature: Quadrature) -> PhysicsOptions {
        PhysicsOptions {
            quadrature,
            geometry: GeometrySource::Stored,
            factor_layout: FactorLayout::default(),
            accumulation: Accumulation::default(),
            simd: None,
            block_len: None,
        }
    }
}

/// A sum-factorised operator on quadrilaterals or hexahedra with pointwise physics
/// ([`TensorPhysics`]): the bake-off problems BP1, BP3, BP3.5 and their vector variants
/// BP2/BP4/BP6 ([`TensorOperator::new`]), and any physics ([`TensorOperator::with_physics`]):
/// the acoustic and elastic spectral-element stiffness, variable coefficients, one's own.
/// Applies `y = A x` on L-vectors of its space, in parallel with rayon.
///
/// Elements go through the kernels in batches of [`LANES`], one element per SIMD lane;
/// the built-in physics at orders 1..=8 and the default number of points use kernels
/// specialised at compile time, other orders and point counts a dynamic-size kernel.
pub struct TensorOperator<T: Real> {
    kind: Option<TensorKind>,
    basis: TensorBasis,
    geometry: TensorGeometry<T>,
    restriction: ElemRestriction,
    /// The node-to-entries map, the colouring and the lane runs serve `apply` only: built
    /// at the first (an operator whose data go to a GPU never builds them).
    transpose: OnceLock<TransposeMap>,
    accumulation: Accumulation,
    /// Elements per colouring block.
    block_len: usize,
    coloring: OnceLock<Option<BlockColoring>>,
    runs: OnceLock<LaneRuns>,
    b: Vec<T>,
    bt: Vec<T>,
    d: Vec<T>,
    dt: Vec<T>,
    dphi: Vec<T>,
    w: Vec<T>,
    simd: SimdLevel,
    kernel: Box<dyn BoundKernel<T>>,
    offsets_f64: Vec<f64>,
    evec: Mutex<Vec<T>>,
    scratch: Mutex<Vec<Scratch<T>>>,
}

/// Kernel work arrays borrowed from an operator's pool for one rayon task, returned when
/// dropped, so that applications after the first allocate nothing.
struct PooledScratch<'a, T: Real> {
    scratch: Scratch<T>,
    pool: &'a Mutex<Vec<Scratch<T>>>,
}

impl<'a, T: Real> PooledScratch<'a, T> {
    fn take(
        pool: &'a Mutex<Vec<Scratch<T>>>,
        sizes: Sizes,
        nf: usize,
        nc: usize,
    ) -> PooledScratch<'a, T> {
        let reused = pool.lock().ok().and_then(|mut p| p.pop());
        PooledScratch {
            scratch: reused.unwrap_or_else(|| Scratch::new(sizes, nf, nc)),
            pool,
        }
    }
    fn get(&mut self) -> &mut Scratch<T> {
        &mut self.scratch
    }
}

impl<T: Real> Drop for PooledScratch<'_, T> {
    fn drop(&mut self) {
        if let Ok(mut p) = self.pool.lock() {
            p.push(std::mem::replace(&mut self.scratch, Scratch::empty()));
        }
    }
}

impl<T: Real> std::fmt::Debug for TensorOperator<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TensorOperator")
            .field("physics", &self.kernel.physics().name())
            .field("kind", &self.kind)
            .field("order", &self.basis.order)
            .field("q", &self.basis.q)
            .field("dim", &self.basis.dim)
            .field("ncomp", &self.restriction.ncomp())
            .field("num_elem", &self.restriction.num_elem())
            .field("geometry", &self.geometry.source)
            .field("factor_layout", &self.geometry.layout)
            .field("accumulation", &self.accumulation)
            .field("simd", &self.simd)
            .finish()
    }
}

impl<T: Real> TensorOperator<T> {
    /// Builds the bake-off operator of `opts.kind` for `space` on `mesh` (the mesh the
    /// space was built on; the same scalar form on each of the space's components),
    /// computing the geometry at the quadrature points.
    pub fn new(
        mesh: &Mesh,
        space: &H1Space,
        opts: &TensorOptions,
    ) -> Result<TensorOperator<T>, TensorError> {
        let kind = opts.kind;
        if !kind.alpha().is_finite() {
            return Err(TensorError::Alpha(kind.alpha()));
        }
        let (form, quadrature) = kind.form::<T>(space.ncomp(), opts.q_points, space.order());
        let popts = PhysicsOptions {
            quadrature,
            geometry: opts.geometry,
            factor_layout: opts.factor_layout,
            accumulation: opts.accumulation,
            simd: opts.simd,
            block_len: opts.block_len,
        };
        let mut op = TensorOperator::with_physics(mesh, space, form, &popts)?;
        op.kind = Some(kind);
        Ok(op)
    }

    /// Builds the operator of `physics` for `space` on `mesh` (the mesh the space was
    /// built on), computing the physics' quadrature data at every point.
    ///
    /// Errors: a mesh that is not of quadrilaterals or hexahedra or does not fit the
    /// space, a physics whose component count differs from the space's, a quadrature the
    /// physics cannot use (values only with Gauss points, a collocated rule with other
    /// than `p + 1` points), on-the-fly geometry for a physics with coefficients,
    /// inverted elements and quadrature data that are not finite.
    pub fn with_physics(
        mesh: &Mesh,
        space: &H1Space,
        physics: impl Into<Form<T>>,
        opts: &PhysicsOptions,
    ) -> Result<TensorOperator<T>, TensorError> {
        let form = physics.into();
        let ct = mesh.cell_type();
        if !ct.is_tensor() {
            return Err(TensorError::NotTensorCell(ct));
        }
        if space.cell_type() != ct || space.num_cells() != mesh.num_cells() {
            return Err(TensorError::MeshMismatch {
                space_cells: space.num_cells(),
                space_type: space.cell_type(),
                mesh_cells: mesh.num_cells(),
                mesh_type: ct,
            });
        }
        let phys = form.physics();
        if phys.ncomp() != space.ncomp() {
            return Err(TensorError::Unsupported(format!(
                "the {} physics has {} components, the space {}",
                phys.name(),
                phys.ncomp(),
                space.ncomp()
            )));
        }
        if !phys.uses_value() && !phys.uses_gradient() {
            return Err(TensorError::Unsupported(format!(
                "the {} physics uses neither values nor gradients",
                phys.name()
            )));
        }
        let dim = ct.dim();
        let order = space.order();
        let (q, collocated) = match opts.quadrature {
            Quadrature::Gauss(q) => (q, false),
            Quadrature::Collocated => (order + 1, true),
            Quadrature::CollocatedWith(q) => (q, true),
        };
        let basis = TensorBasis::new(dim, order, q, collocated)?;
        let shape = match (collocated, phys.uses_gradient()) {
            (true, _) => kernel::COLLOC,
            (false, true) => kernel::GAUSS,
            (false, false) => kernel::INTERP,
        };
        let plain = (phys.uses_gradient(), phys.uses_value());
        if opts.geometry == GeometrySource::OnTheFly && !phys.plain_geometry() {
            return Err(TensorError::Unsupported(format!(
                "the {} physics has coefficients in its quadrature data: on-the-fly geometry needs the plain geometric factors; store it instead",
                phys.name()
            )));
        }
        let nf = phys.qdata_len(dim);
        let offsets_f64 = vertex_offsets(mesh);
        let qdata = |p: &PointGeometry, out: &mut [f64]| phys.qdata(p, out);
        let weighting = phys.affine_weighting(dim);
        let geometry = TensorGeometry::build(
            &offsets_f64,
            &origins(mesh),
            &basis,
            nf,
            &qdata,
            weighting.as_deref(),
            plain,
            opts.geometry,
            opts.factor_layout,
        )?;
        let restriction = space.restriction().clone();
        let block_len = opts
            .block_len
            .unwrap_or_else(|| default_block_len(mesh.num_cells(), rayon::current_num_threads()));
        let conv = |v: &[f64]| v.iter().map(|&x| T::of(x)).collect::<Vec<T>>();
        let (n, qq) = (basis.n, basis.q);
        let table = MapTable::new(&basis);
        let simd = opts
            .simd
            .map_or_else(SimdLevel::detect, SimdLevel::supported);
        let sizes = Sizes { dim, n, q: qq };
        Ok(TensorOperator {
            kind: None,
            b: conv(&basis.interp),
            bt: conv(&transpose_of(&basis.interp, qq, n)),
            d: conv(&basis.grad),
            dt: conv(&transpose_of(&basis.grad, qq, qq)),
            dphi: conv(&table.dphi),
            w: conv(&table.w),
            basis,
            geometry,
            restriction,
            transpose: OnceLock::new(),
            accumulation: opts.accumulation,
            block_len,
            coloring: OnceLock::new(),
            runs: OnceLock::new(),
            simd,
            kernel: bind(form, shape, sizes, simd),
            offsets_f64,
            evec: Mutex::new(Vec::new()),
            scratch: Mutex::new(Vec::new()),
        })
    }

    /// The bake-off form, for operators built by [`TensorOperator::new`].
    pub fn kind(&self) -> Option<TensorKind> {
        self.kind
    }
    /// The pointwise physics.
    pub fn physics(&self) -> &dyn TensorPhysics<T> {
        self.kernel.physics()
    }
    /// The 1-D matrices and quadrature.
    pub fn basis(&self) -> &TensorBasis {
        &self.basis
    }
    /// The geometry the kernels read (the arrays the GPU kernels reuse).
    pub fn geometry(&self) -> &TensorGeometry<T> {
        &self.geometry
    }
    /// The element restriction.
    pub fn restriction(&self) -> &ElemRestriction {
        &self.restriction
    }
    /// The accumulation strategy.
    pub fn accumulation(&self) -> Accumulation {
        self.accumulation
    }
    /// The block colouring (for [`Accumulation::Colored`]).
    pub fn coloring(&self) -> Option<&BlockColoring> {
        ferrofem_base::lazy::get_or_compute(&self.coloring, || {
            (self.accumulation == Accumulation::Colored)
                .then(|| BlockColoring::new(&self.restriction, self.transpose(), self.block_len))
        })
        .as_ref()
    }
    /// The node-to-entries map of the restriction.
    fn transpose(&self) -> &TransposeMap {
        ferrofem_base::lazy::get_or_compute(&self.transpose, || self.restriction.transpose())
    }
    /// The lane runs of the restriction.
    fn runs(&self) -> &LaneRuns {
        ferrofem_base::lazy::get_or_compute(&self.runs, || LaneRuns::new(&self.restriction))
    }
    /// Fraction of the nodes of full batches whose lanes are a run of consecutive nodes
    /// (moved by vector loads and stores; see [`lane_numbering`](super::lane_numbering)).
    pub fn lane_run_fraction(&self) -> f64 {
        self.runs().run_fraction()
    }
    /// The instruction set the kernels run with.
    pub fn simd(&self) -> SimdLevel {
        self.simd
    }
    /// Length of the input and output L-vectors.
    pub fn len(&self) -> usize {
        self.restriction.lvec_len()
    }
    /// True for an operator on an empty space.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn kernel_data(&self) -> KernelData<'_, T> {
        KernelData {
            sizes: Sizes {
                dim: self.basis.dim,
                n: self.basis.n,
                q: self.basis.q,
            },
            b: &self.b,
            bt: &self.bt,
            d: &self.d,
            dt: &self.dt,
            uses_value: self.physics().uses_value(),
            uses_gradient: self.physics().uses_gradient(),
            reads_compact: self.physics().reads_compact(),
            geo: &self.geometry,
            dphi: &self.dphi,
            w: &self.w,
            offsets: self.restriction.offsets(),
            num_nodes: self.restriction.num_nodes(),
            ncomp: self.restriction.ncomp(),
            runs: self.runs(),
        }
    }

    /// `y = A x` (overwrites `y`); errors when a length differs from [`len`](Self::len).
    /// Subnormal numbers are flushed to zero inside the kernels ([`FlushSubnormals`]): a
    /// wave spreading from a point source would otherwise feed them to every instruction
    /// ahead of its front.
    pub fn try_apply(&self, x: &[T], y: &mut [T]) -> Result<(), TensorError> {
        let len = self.len();
        for (what, got) in [("input", x.len()), ("output", y.len())] {
            if got != len {
                return Err(TensorError::VectorLength {
                    what,
                    got,
                    expected: len,
                });
            }
        }
        let kd = self.kernel_data();
        let nf = self.geometry.num_factors();
        let sizes = kd.sizes;
        let (nn, nc, ne) = (
            self.restriction.elem_size(),
            self.restriction.ncomp(),
            self.restriction.num_elem(),
        );
        let kernel = &self.kernel;
        match self.coloring() {
            None => {
                let mut local = Vec::new();
                let mut guard = self.evec.try_lock().ok();
                let evec: &mut Vec<T> = match guard.as_deref_mut() {
                    Some(v) => v,
                    None => &mut local,
                };
                evec.resize(self.restriction.evec_len(), T::zero());
                evec.par_chunks_mut(TASK_ELEMS * nc * nn)
                    .enumerate()
                    .for_each_init(
                        || PooledScratch::take(&self.scratch, sizes, nf, nc),
                        |s, (t, chunk)| {
                            let _flush = FlushSubnormals::new();
                            let e0 = t * TASK_ELEMS;
                            let mut sink = EVecSink {
                                evec: chunk,
                                base: e0,
                                ncomp: nc,
                                nodes: nn,
                            };
                            kernel.run(&kd, e0..(e0 + TASK_ELEMS).min(ne), s.get(), x, &mut sink);
                        },
                    );
                sum_by_node(self.transpose(), nn, nc, evec, y);
            }
            Some(coloring) => {
                y.par_chunks_mut(1 << 14).for_each(|c| c.fill(T::zero()));
                let shared = SharedSlice::new(y);
                for color in &coloring.colors {
                    color.par_iter().for_each_init(
                        || PooledScratch::take(&self.scratch, sizes, nf, nc),
                        |s, &b| {
                            let _flush = FlushSubnormals::new();
                            let mut sink = SharedSink::new(&shared, &self.restriction, self.runs());
                            kernel.run(&kd, coloring.block(b as usize), s.get(), x, &mut sink);
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The diagonal of the assembled operator (an L-vector), computed matrix-free: per
    /// element by sum factorisation in `f64`, then summed by node. Available for the
    /// bake-off problems ([`TensorOperator::new`]); `None` for other physics.
    pub fn diagonal(&self) -> Option<Vec<T>> {
        let kind = self.kind?;
        let ne = self.restriction.num_elem();
        let mass_coef = kind.has_mass().then(|| kind.alpha());
        let ed = diagonal::element_diagonals(
            &self.basis,
            &self.offsets_f64,
            ne,
            kind.has_gradient(),
            mass_coef,
        );
        let mut dn = vec![0.0f64; self.restriction.num_nodes()];
        sum_by_node(
            self.transpose(),
            self.restriction.elem_size(),
            1,
            &ed,
            &mut dn,
        );
        let nc = self.restriction.ncomp();
        Some((0..self.len()).map(|i| T::of(dn[i / nc])).collect())
    }

    /// The inputs of the byte/flop model for this operator: L-vectors, restriction
    /// offsets, its geometry source, and an output that is read as well as written when the
    /// accumulation adds into it ([`Accumulation::Colored`]).
    pub fn model_spec(&self) -> ModelSpec {
        let form = match self.kind {
            Some(kind) => FormModel::of_kind(kind, self.basis.dim, self.restriction.ncomp()),
            None => FormModel::of_physics(self.physics(), self.basis.dim, self.basis.collocated),
        };
        ModelSpec {
            form,
            dim: self.basis.dim,
            order: self.basis.order,
            q: self.basis.q,
            ncomp: self.restriction.ncomp(),
            num_elem: self.restriction.num_elem(),
            num_nodes: self.restriction.num_nodes(),
            scalar_bytes: T::BYTES,
            geometry: self.geometry.source,
            compact_geometry: self.geometry.compact.is_some(),
            indices: IndexTraffic::Offsets,
            vectors: VectorTraffic::LVector,
            output_read: self.accumulation == Accumulation::Colored,
        }
    }

    /// Bytes and flops of one application (see [`model`](super::model)).
    pub fn model(&self) -> Model {
        model::model(&self.model_spec())
    }
}

fn transpose_of(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    transpose(m, rows, cols)
}

impl<T: Real> LinearOperator<T> for TensorOperator<T> {
    fn nrows(&self) -> usize {
        self.len()
    }
    fn ncols(&self) -> usize {
        self.len()
    }
    /// # Panics
    /// If `x` or `y` does not have length [`TensorOperator::len`] (use
    /// [`TensorOperator::try_apply`] for an error instead).
    fn apply(&self, x: &[T], y: &mut [T]) {
        if let Err(e) = self.try_apply(x, y) {
            panic!("TensorOperator::apply: {e}");
        }
    }
    fn diagonal(&self) -> Option<Vec<T>> {
        TensorOperator::diagonal(self)
    }
}
