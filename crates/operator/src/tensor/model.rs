//! The byte and flop model of the tensor-product operators (after Table 2 of
//! Świrydowicz et al. 2019), shared by the CPU and GPU benchmarks.
//!
//! **Bytes** count the *minimum* global-memory traffic of one application, assuming every
//! array is streamed exactly once and nothing else touches memory:
//!
//! - the input vector, read once: `num_nodes · ncomp` scalars (L-vector) or
//!   `num_elem · n^d · ncomp` scalars (E-vector, the paper's unassembled setting);
//! - the output vector, written once, and read once more when `output_read` (an
//!   implementation that accumulates into it, e.g. after zeroing);
//! - the restriction: one 4-byte offset per element node (`num_elem · n^d · 4`), shared by
//!   the components, unless the indices are computed from a structured mesh
//!   ([`IndexTraffic::Structured`]), only the skeleton nodes' offsets are read
//!   ([`IndexTraffic::Skeleton`]) or only the brick boundaries' ([`IndexTraffic::Bricks`]),
//!   or the vectors are E-vectors;
//! - the geometry: stored, `num_elem · q^d · f` scalars with `f` factors per point —
//!   1 (`w det J`) for the mass (BP1), `d(d+1)/2` (packed `G`) for pure diffusion, and
//!   `d(d+1)/2 + 1` (the paper's 7 in 3-D) for diffusion with a mass term; on the fly,
//!   the vertex offsets, `num_elem · d (2^d - 1)` scalars.
//!
//! Caches, E-vector scratch, the transposed restriction, matrices `B`/`D` (tiny) and any
//! second read of shared nodes are *not* counted: they are implementation overheads,
//! and the model is the yardstick, as in the paper.
//!
//! **Flops** count the arithmetic of the sum-factorised algorithm as implemented here
//! (one multiply-add = 2 flops), per element and component: a contraction of an `a × b`
//! matrix along one axis of a tensor with `m` other entries costs `2 a b m`; interpolation
//! and its transpose (Gauss kernels only) three contractions each (two in 2-D), the
//! collocated gradient and its transpose `d` contractions of the `q × q` derivative each;
//! pointwise work `d(2d - 1)` flops per point for `G ∇u`, 2 for `α w det J u`, 1 for the
//! mass kernel's `w det J u`. On-the-fly geometry adds, once per element and point,
//! `2 d² (2^d - 1)` flops for `J` and 71 (3-D) or 18 (2-D) for the adjugate, determinant
//! and `G` (the mass operator needs `w det J` only: 15 or 4).

use super::{TensorKind, TensorPhysics};
use ferrofem_base::Real;
use ferrofem_geometry::GeometrySource;

/// Bytes moved and flops done by one application of an operator.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct Model {
    /// Bytes of global-memory traffic (see the module documentation).
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
}

impl Model {
    /// Flops per byte.
    pub fn intensity(&self) -> f64 {
        self.flops / self.bytes
    }
    /// Achieved bandwidth by the model, in GB/s, for an application taking `seconds`.
    pub fn gbytes_per_s(&self, seconds: f64) -> f64 {
        self.bytes / seconds / 1e9
    }
    /// Achieved GFLOP/s for an application taking `seconds`.
    pub fn gflops_per_s(&self, seconds: f64) -> f64 {
        self.flops / seconds / 1e9
    }
    /// Achieved bandwidth as a fraction of a copy bandwidth (GB/s, read + write).
    pub fn roofline_fraction(&self, seconds: f64, copy_gbytes_per_s: f64) -> f64 {
        self.gbytes_per_s(seconds) / copy_gbytes_per_s
    }
    /// Time the model predicts at a copy bandwidth (GB/s): the roofline bound.
    pub fn roofline_seconds(&self, copy_gbytes_per_s: f64) -> f64 {
        self.bytes / (copy_gbytes_per_s * 1e9)
    }
}

/// How a kernel finds each element's dofs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IndexTraffic {
    /// Reads the restriction's offsets, 4 bytes per element node.
    #[default]
    Offsets,
    /// Computes them from a structured grid: no index traffic.
    Structured,
    /// Reads offsets only for the element's skeleton nodes (faces, edges, vertices) and
    /// computes the interior ones (spaces numbered interior-last): 4 bytes per skeleton node.
    Skeleton,
    /// Reads offsets only for the boundary nodes of bricks of `[bx, by, bz]` elements (one
    /// per brick boundary node, spaces numbered per brick), computing the rest: 4 bytes per
    /// brick boundary node.
    Bricks([usize; 3]),
}

/// Which vectors an application reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum VectorTraffic {
    /// Global L-vectors (the operator as a user calls it).
    #[default]
    LVector,
    /// Unassembled E-vectors, `n^d` values per element (the paper's Table 2 setting).
    EVector,
}

/// What the model needs to know of an operator's pointwise physics and quadrature.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FormModel {
    /// True when the physics reads values.
    pub uses_value: bool,
    /// True when the physics reads gradients.
    pub uses_gradient: bool,
    /// True for collocation at the GLL nodes (no interpolation).
    pub collocated: bool,
    /// Stored quadrature data per point.
    pub factors: usize,
    /// Pointwise flops per point and element (all components).
    pub pointwise_flops: f64,
}

impl FormModel {
    /// The model of a bake-off problem with `ncomp` components in dimension `dim`.
    pub fn of_kind(kind: TensorKind, dim: usize, ncomp: usize) -> FormModel {
        let mass = if kind.has_mass() { 2.0 } else { 0.0 };
        FormModel {
            uses_value: kind.has_mass(),
            uses_gradient: kind.has_gradient(),
            collocated: kind.is_collocated(),
            factors: factors_per_point(kind, dim),
            pointwise_flops: ncomp as f64
                * match kind {
                    TensorKind::Mass => 1.0,
                    _ => (dim * (2 * dim - 1)) as f64 + mass,
                },
        }
    }

    /// The model of a physics in dimension `dim`.
    pub fn of_physics<T: Real>(
        physics: &dyn TensorPhysics<T>,
        dim: usize,
        collocated: bool,
    ) -> FormModel {
        FormModel {
            uses_value: physics.uses_value(),
            uses_gradient: physics.uses_gradient(),
            collocated,
            factors: physics.qdata_len(dim),
            pointwise_flops: physics.flops_per_point(dim),
        }
    }
}

/// Everything the model depends on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelSpec {
    /// The operator's physics and quadrature.
    pub form: FormModel,
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Polynomial order `p` (`n = p + 1` nodes per direction).
    pub order: usize,
    /// Quadrature points per direction.
    pub q: usize,
    /// Components per node.
    pub ncomp: usize,
    /// Number of elements.
    pub num_elem: usize,
    /// Number of global nodes (L-vector length / `ncomp`).
    pub num_nodes: usize,
    /// Bytes per scalar (8 for `f64`, 4 for `f32`).
    pub scalar_bytes: usize,
    /// Stored or on-the-fly geometry.
    pub geometry: GeometrySource,
    /// Stored geometry in compact form: one value per element and datum (affine elements,
    /// coefficients constant on each).
    pub compact_geometry: bool,
    /// Index traffic.
    pub indices: IndexTraffic,
    /// L- or E-vectors.
    pub vectors: VectorTraffic,
    /// Whether the output is read as well as written (accumulation).
    pub output_read: bool,
}

/// Geometric factors per quadrature point for `kind` in dimension `dim`.
pub fn factors_per_point(kind: TensorKind, dim: usize) -> usize {
    super::geometry::factor_count(dim, kind.has_gradient(), kind.has_mass())
}

/// Bytes of one application (module documentation).
pub fn bytes(s: &ModelSpec) -> f64 {
    let sb = s.scalar_bytes as f64;
    let d = s.dim as u32;
    let nn = ((s.order + 1) as f64).powi(d as i32);
    let nq = (s.q as f64).powi(d as i32);
    let ne = s.num_elem as f64;
    let nc = s.ncomp as f64;
    let vec_len = match s.vectors {
        VectorTraffic::LVector => s.num_nodes as f64 * nc,
        VectorTraffic::EVector => ne * nn * nc,
    };
    let input = vec_len * sb;
    let output = vec_len * sb * if s.output_read { 2.0 } else { 1.0 };
    let indices = match (s.vectors, s.indices) {
        (VectorTraffic::LVector, IndexTraffic::Offsets) => ne * nn * 4.0,
        (VectorTraffic::LVector, IndexTraffic::Skeleton) => {
            let interior = ((s.order as f64) - 1.0).max(0.0).powi(d as i32);
            ne * (nn - interior) * 4.0
        }
        (VectorTraffic::LVector, IndexTraffic::Bricks(b)) => {
            let p = s.order;
            let all: usize = b[..d as usize].iter().map(|&e| e * p + 1).product();
            let inner: usize = b[..d as usize]
                .iter()
                .map(|&e| (e * p).saturating_sub(1))
                .product();
            let bricks = ne / b[..d as usize].iter().product::<usize>().max(1) as f64;
            bricks * (all - inner) as f64 * 4.0
        }
        _ => 0.0,
    };
    let geometry = match s.geometry {
        GeometrySource::Stored if s.compact_geometry => ne * s.form.factors as f64 * sb,
        GeometrySource::Stored => ne * nq * s.form.factors as f64 * sb,
        GeometrySource::OnTheFly => ne * (s.dim * ((1 << s.dim) - 1)) as f64 * sb,
    };
    input + output + indices + geometry
}

/// Flops of one application (module documentation).
pub fn flops(s: &ModelSpec) -> f64 {
    let d = s.dim as i32;
    let n = (s.order + 1) as f64;
    let q = s.q as f64;
    let nq = q.powi(d);
    // interpolation N^d -> Q^d: axis a contracts q x n over n^(d-1-a) q^a others
    let interp: f64 = (0..d)
        .map(|a| 2.0 * q * n * n.powi(d - 1 - a) * q.powi(a))
        .sum();
    let grad = d as f64 * 2.0 * q * q * q.powi(d - 1);
    let f = &s.form;
    let per_comp = match (f.collocated, f.uses_gradient) {
        (false, false) => 2.0 * interp,
        (false, true) => 2.0 * interp + 2.0 * grad,
        (true, true) => 2.0 * grad,
        (true, false) => 0.0,
    };
    let geometry = match s.geometry {
        GeometrySource::Stored => 0.0,
        GeometrySource::OnTheFly => {
            let nv1 = ((1 << s.dim) - 1) as f64;
            let j = 2.0 * (d * d) as f64 * nv1;
            let rest = match (f.uses_gradient, s.dim) {
                (false, 3) => 15.0,
                (false, _) => 4.0,
                (_, 3) => 71.0,
                _ => 18.0,
            };
            nq * (j + rest)
        }
    };
    s.num_elem as f64 * (per_comp * s.ncomp as f64 + nq * f.pointwise_flops + geometry)
}

/// The model of one application.
pub fn model(s: &ModelSpec) -> Model {
    Model {
        bytes: bytes(s),
        flops: flops(s),
    }
}

/// The paper's Table 2 per element (E-vectors, stored geometry, no indices, `f` factors per
/// point: read `n^d + f q^d` scalars, write `n^d`) with this module's flop count.
pub fn paper_table2(
    kind: TensorKind,
    dim: usize,
    order: usize,
    q: usize,
    scalar_bytes: usize,
) -> Model {
    model(&ModelSpec {
        form: FormModel::of_kind(kind, dim, 1),
        dim,
        order,
        q,
        ncomp: 1,
        num_elem: 1,
        num_nodes: 0,
        scalar_bytes,
        geometry: GeometrySource::Stored,
        compact_geometry: false,
        indices: IndexTraffic::Structured,
        vectors: VectorTraffic::EVector,
        output_read: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table2_counts_match_the_paper() {
        // BP1: read N_p + N_q, write N_p doubles; BP3.5: read 8 N_p, write N_p;
        // BP3: read N_p + 7 N_q, write N_p.
        let p = 5;
        let (np, nq) = (216.0, 343.0);
        let m1 = paper_table2(TensorKind::Mass, 3, p, p + 2, 8);
        assert_eq!(m1.bytes, 8.0 * (2.0 * np + nq));
        let m35 = paper_table2(
            TensorKind::CollocatedDiffusion { alpha: 1.0 },
            3,
            p,
            p + 1,
            8,
        );
        assert_eq!(m35.bytes, 8.0 * (9.0 * np));
        let m3 = paper_table2(TensorKind::Diffusion { alpha: 1.0 }, 3, p, p + 2, 8);
        assert_eq!(m3.bytes, 8.0 * (2.0 * np + 7.0 * nq));
        // pure diffusion stores 6 factors
        let m30 = paper_table2(TensorKind::Diffusion { alpha: 0.0 }, 3, p, p + 2, 8);
        assert_eq!(m30.bytes, 8.0 * (2.0 * np + 6.0 * nq));
        assert!(m3.flops > m35.flops && m35.flops > 0.0 && m1.flops > 0.0);
    }

    #[test]
    fn brick_indices_count_the_brick_boundary() {
        let spec = |indices, p, ne| ModelSpec {
            form: FormModel::of_kind(TensorKind::Mass, 3, 1),
            dim: 3,
            order: p,
            q: p + 2,
            ncomp: 1,
            num_elem: ne,
            num_nodes: 1000,
            scalar_bytes: 8,
            geometry: GeometrySource::Stored,
            compact_geometry: false,
            indices,
            vectors: VectorTraffic::LVector,
            output_read: false,
        };
        for p in 1..=8 {
            // a brick of one element is the element's skeleton
            assert_eq!(
                bytes(&spec(IndexTraffic::Bricks([1, 1, 1]), p, 16)),
                bytes(&spec(IndexTraffic::Skeleton, p, 16))
            );
        }
        // p = 7, 2 x 2 x 2: 15^3 - 13^3 = 1178 offsets per 8 elements
        let idx = |i| bytes(&spec(i, 7, 16)) - bytes(&spec(IndexTraffic::Structured, 7, 16));
        assert_eq!(idx(IndexTraffic::Bricks([2, 2, 2])), 2.0 * 1178.0 * 4.0);
        // 2 x 2 x 1: 15 * 15 * 8 - 13 * 13 * 6 = 786 per 4 elements
        assert_eq!(idx(IndexTraffic::Bricks([2, 2, 1])), 4.0 * 786.0 * 4.0);
    }

    #[test]
    fn lvector_model_counts_indices_and_accumulation() {
        let base = ModelSpec {
            form: FormModel::of_kind(TensorKind::Mass, 2, 1),
            dim: 2,
            order: 1,
            q: 3,
            ncomp: 1,
            num_elem: 10,
            num_nodes: 20,
            scalar_bytes: 4,
            geometry: GeometrySource::Stored,
            compact_geometry: false,
            indices: IndexTraffic::Offsets,
            vectors: VectorTraffic::LVector,
            output_read: false,
        };
        // 20 in + 20 out scalars, 40 offsets, 90 factors
        assert_eq!(bytes(&base), 4.0 * 40.0 + 4.0 * 40.0 + 4.0 * 90.0);
        let acc = ModelSpec {
            output_read: true,
            geometry: GeometrySource::OnTheFly,
            compact_geometry: false,
            ..base
        };
        assert_eq!(bytes(&acc), 4.0 * 60.0 + 4.0 * 40.0 + 4.0 * 60.0);
    }
}
