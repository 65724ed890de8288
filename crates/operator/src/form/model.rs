//! The byte and flop model of a residual evaluation of a pointwise form, after §3.3 of
//! Knepley, Rupp & Terrel (2016), shared by the CPU and GPU residual benchmarks.
//!
//! Per cell, with `d` the dimension, `N_b` basis functions per component, `N_comp`
//! components, `N_bt = N_b N_comp`, `N_q` quadrature points and `s` bytes per scalar:
//!
//! **Flops** — eq. (3.5) divided by the cells of a batch (`N_bs N_bl`):
//!
//! ```text
//! [ (2 + (2 + 2d) d) N_bt + 2 d N_comp ] N_q  +  (2 + 2d) d N_q N_bt
//! ```
//!
//! (evaluation of `u` and `∇u` at the points with the transformation by `J⁻¹`, the
//! pointwise `f1` scaled by the weight, and the transposed basis action). A nodal auxiliary
//! field with `N_a` components and `N_ba` nodes per cell adds its own evaluation,
//! `(2 + (2 + 2d) d) N_a N_ba N_q`, counted like the first term; a cellwise one adds
//! nothing. The pointwise physics beyond `f1 = ∇u` is not counted (as in the paper).
//!
//! **Bytes, element vectors** — eq. (3.4) per cell, generalised to the element-vector
//! output: the geometry `d² + 1` scalars (`J⁻¹` and `det J`, one affine map per cell), the
//! input basis coefficients `N_bt`, the auxiliary values (`N_a N_ba` for a nodal field
//! restricted to the cell, `N_a` for a cellwise one), and the output element vector
//! `N_bt`:
//!
//! ```text
//! bytes_element_vectors = s · cells · ( d² + 1 + N_bt + aux + N_bt )
//! ```
//!
//! **Bytes, assembled residual** — the same kernel inside the global operator
//! `r = Eᵀ K(E u)`: geometry per cell as above; the global input vector read once through
//! the restriction and the global output written once (`s · N_dofs` each); the
//! restriction's indices, 4 bytes per cell node (shared by the components); a nodal
//! auxiliary field as its own global vector (`s · N_a · aux_nodes`) with 4-byte indices
//! per cell node, a cellwise one as `s · N_a` per cell:
//!
//! ```text
//! bytes_global = cells · (s (d² + 1) + 4 N_b) + 2 s N_dofs + aux_global
//! ```
//!
//! Both are minima (every array streamed once): caches, scratch E-vectors, the transposed
//! restriction, tabulations (loaded once) and, for non-affine cells, per-point geometry are
//! implementation overheads the model does not count. The paper's own denominator of the
//! algorithmic balance, eq. (3.6), is available as [`ResidualShape::paper_bytes_per_cell`]
//! (4-byte scalars; it also charges `(d + 1) N_q` values per cell and the geometry once
//! per component).

use crate::tensor::Model;

/// How the auxiliary (coefficient) field of a form is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AuxLayout {
    /// No auxiliary field.
    #[default]
    None,
    /// Constants per cell (the paper's `P0` case).
    Cellwise,
    /// Nodal values of a Lagrange space with this many nodes per cell (e.g. 3 for `P1` on
    /// triangles).
    Nodal {
        /// Nodes per cell of the auxiliary space.
        nodes_per_cell: usize,
    },
}

/// The per-cell shape of a residual evaluation: everything the model needs except the
/// mesh size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidualShape {
    /// Spatial dimension `d`.
    pub dim: usize,
    /// Solution components `N_comp`.
    pub ncomp: usize,
    /// Basis functions (nodes) per cell and component, `N_b`.
    pub nb: usize,
    /// Quadrature points per cell, `N_q`.
    pub nq: usize,
    /// Auxiliary field components `N_a`.
    pub naux: usize,
    /// How the auxiliary field is stored.
    pub aux: AuxLayout,
    /// Bytes per scalar (4 for `f32`, 8 for `f64`).
    pub scalar_bytes: usize,
}

impl ResidualShape {
    /// The shape of a residual evaluation (see the field documentation).
    pub fn new(
        dim: usize,
        ncomp: usize,
        nb: usize,
        nq: usize,
        naux: usize,
        aux: AuxLayout,
        scalar_bytes: usize,
    ) -> ResidualShape {
        ResidualShape {
            dim,
            ncomp,
            nb,
            nq,
            naux,
            aux,
            scalar_bytes,
        }
    }

    /// `N_bt = N_b N_comp`.
    pub fn nbt(&self) -> usize {
        self.nb * self.ncomp
    }

    /// Auxiliary scalars read per cell in the element-vector model.
    fn aux_values_per_cell(&self) -> usize {
        match self.aux {
            AuxLayout::None => 0,
            AuxLayout::Cellwise => self.naux,
            AuxLayout::Nodal { nodes_per_cell } => self.naux * nodes_per_cell,
        }
    }

    /// Flops per cell: eq. (3.5) per cell plus the evaluation of a nodal auxiliary field.
    pub fn flops_per_cell(&self) -> f64 {
        let (d, nbt, nq, nc) = (
            self.dim as f64,
            self.nbt() as f64,
            self.nq as f64,
            self.ncomp as f64,
        );
        let eval = 2.0 + (2.0 + 2.0 * d) * d;
        let mut f = (eval * nbt + 2.0 * d * nc) * nq + (2.0 + 2.0 * d) * d * nq * nbt;
        if let AuxLayout::Nodal { nodes_per_cell } = self.aux {
            f += eval * (self.naux * nodes_per_cell) as f64 * nq;
        }
        f
    }

    /// Bytes per cell of the element-vector model: geometry, input coefficients, auxiliary
    /// values and output element vector.
    pub fn bytes_per_cell(&self) -> f64 {
        let d = self.dim;
        let scalars = d * d + 1 + 2 * self.nbt() + self.aux_values_per_cell();
        (scalars * self.scalar_bytes) as f64
    }

    /// The paper's bytes per cell, the denominator of eq. (3.6) divided by the cells of a
    /// batch: `4 N_comp ((d² + 1) + N_bt + (d + 1) N_q)` (4-byte scalars, no output, no
    /// auxiliary field). With [`ResidualShape::flops_per_cell`] it reproduces the paper's
    /// balance `β = 41/22` for P1 Poisson in 2-D with one quadrature point.
    pub fn paper_bytes_per_cell(&self) -> f64 {
        let d = self.dim;
        (4 * self.ncomp * (d * d + 1 + self.nbt() + (d + 1) * self.nq)) as f64
    }
}

/// Bytes and flops of one residual evaluation on a mesh, in the two variants of the module
/// documentation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ResidualModel {
    /// Bytes of the element kernel alone (element vectors in and out), eq. (3.4)
    /// generalised to the output.
    pub bytes_element_vectors: f64,
    /// Bytes of the assembled global residual (L-vectors, indices).
    pub bytes_global: f64,
    /// Flops, eq. (3.5).
    pub flops: f64,
}

impl ResidualModel {
    /// The model for `num_cells` cells of `shape`, a solution L-vector of `num_dofs`
    /// scalars (all components), and, for a nodal auxiliary field, `aux_nodes` nodes of
    /// its space (ignored otherwise).
    pub fn new(
        shape: &ResidualShape,
        num_cells: usize,
        num_dofs: usize,
        aux_nodes: usize,
    ) -> ResidualModel {
        let cells = num_cells as f64;
        let s = shape.scalar_bytes as f64;
        let d = shape.dim as f64;
        let aux_global = match shape.aux {
            AuxLayout::None => 0.0,
            AuxLayout::Cellwise => s * (shape.naux as f64) * cells,
            AuxLayout::Nodal { nodes_per_cell } => {
                s * (shape.naux * aux_nodes) as f64 + 4.0 * (nodes_per_cell as f64) * cells
            }
        };
        ResidualModel {
            bytes_element_vectors: cells * shape.bytes_per_cell(),
            bytes_global: cells * (s * (d * d + 1.0) + 4.0 * shape.nb as f64)
                + 2.0 * s * num_dofs as f64
                + aux_global,
            flops: cells * shape.flops_per_cell(),
        }
    }

    /// The same evaluation with the geometry computed in the kernel from the cells' vertex
    /// coordinates instead of read as `d² + 1` stored scalars per cell: the coordinates
    /// are one global array (`s · d · num_vertices`, read once) reached through the
    /// restriction's indices of the vertex nodes (`4 (d + 1)` bytes per cell, already
    /// counted in the assembled variant). Fewer bytes: a win only where cells/s rises.
    pub fn with_vertex_geometry(
        &self,
        shape: &ResidualShape,
        num_cells: usize,
        num_vertices: usize,
    ) -> ResidualModel {
        let cells = num_cells as f64;
        let s = shape.scalar_bytes as f64;
        let d = shape.dim as f64;
        let stored = cells * s * (d * d + 1.0);
        let coords = s * d * num_vertices as f64;
        ResidualModel {
            bytes_element_vectors: self.bytes_element_vectors - stored
                + coords
                + cells * 4.0 * (d + 1.0),
            bytes_global: self.bytes_global - stored + coords,
            flops: self.flops,
        }
    }

    /// The element-vector variant as a [`Model`] (for GB/s and roofline fractions).
    pub fn element_vectors(&self) -> Model {
        Model {
            bytes: self.bytes_element_vectors,
            flops: self.flops,
        }
    }

    /// The assembled-residual variant as a [`Model`].
    pub fn global(&self) -> Model {
        Model {
            bytes: self.bytes_global,
            flops: self.flops,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vertex_geometry_replaces_stored_factors_by_coordinates() {
        // 2-D P1 Poisson, f64, 100 cells on 66 vertices (and 66 dofs)
        let s = ResidualShape::new(2, 1, 3, 1, 0, AuxLayout::None, 8);
        let m = ResidualModel::new(&s, 100, 66, 0);
        let v = m.with_vertex_geometry(&s, 100, 66);
        // stored: 5 scalars per cell; vertices: 2 coordinates per vertex + 3 indices per cell
        assert_eq!(m.bytes_global - v.bytes_global, 100.0 * 40.0 - 66.0 * 16.0);
        assert_eq!(
            m.bytes_element_vectors - v.bytes_element_vectors,
            100.0 * 40.0 - 66.0 * 16.0 - 100.0 * 12.0
        );
        assert_eq!(m.flops, v.flops);
    }

    #[test]
    fn reproduces_the_papers_balance_for_p1_poisson() {
        // d = 2, N_b = 3, N_q = 1, N_comp = 1: eq. (3.7), beta = 41/22
        let s = ResidualShape::new(2, 1, 3, 1, 0, AuxLayout::None, 4);
        assert_eq!(s.flops_per_cell(), 82.0);
        assert_eq!(s.paper_bytes_per_cell(), 44.0);
        let beta = s.flops_per_cell() / s.paper_bytes_per_cell();
        assert!((beta - 41.0 / 22.0).abs() < 1e-15);
    }

    #[test]
    fn element_vector_bytes_count_geometry_coefficients_aux_and_output() {
        // 3-D P1 elasticity in f64: 10 geometry + 12 in + 12 out scalars
        let s = ResidualShape::new(3, 3, 4, 1, 0, AuxLayout::None, 8);
        assert_eq!(s.bytes_per_cell(), 8.0 * 34.0);
        // a P1 coefficient on triangles adds 3 values per cell, a P0 one 1 value
        let nodal = ResidualShape::new(2, 1, 3, 1, 1, AuxLayout::Nodal { nodes_per_cell: 3 }, 8);
        let cellwise = ResidualShape {
            aux: AuxLayout::Cellwise,
            ..nodal
        };
        let plain = ResidualShape {
            naux: 0,
            aux: AuxLayout::None,
            ..nodal
        };
        assert_eq!(nodal.bytes_per_cell() - plain.bytes_per_cell(), 24.0);
        assert_eq!(cellwise.bytes_per_cell() - plain.bytes_per_cell(), 8.0);
        // and the nodal field's evaluation costs flops, the cellwise one none
        assert!(nodal.flops_per_cell() > plain.flops_per_cell());
        assert_eq!(cellwise.flops_per_cell(), plain.flops_per_cell());
    }

    #[test]
    fn global_model_adds_vectors_and_indices() {
        let s = ResidualShape::new(2, 1, 3, 1, 0, AuxLayout::None, 8);
        let m = ResidualModel::new(&s, 100, 60, 0);
        // 100 cells x (5 geometry scalars + 3 indices) + 2 x 60 scalars
        assert_eq!(m.bytes_global, 100.0 * (40.0 + 12.0) + 2.0 * 8.0 * 60.0);
        assert_eq!(m.bytes_element_vectors, 100.0 * s.bytes_per_cell());
        assert_eq!(m.flops, 100.0 * 82.0);
        assert_eq!(m.global().bytes, m.bytes_global);
        assert_eq!(m.element_vectors().flops, m.flops);
        let nodal = ResidualShape {
            naux: 1,
            aux: AuxLayout::Nodal { nodes_per_cell: 3 },
            ..s
        };
        let mn = ResidualModel::new(&nodal, 100, 60, 60);
        assert_eq!(mn.bytes_global - m.bytes_global, 8.0 * 60.0 + 4.0 * 300.0);
    }
}
