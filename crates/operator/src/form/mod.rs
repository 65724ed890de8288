//! The generic operator of a pointwise weak form (Knepley, Rupp & Terrel 2016, eq. 2.2 and
//! 4.1) on any cell type and order, in `f32` or `f64`:
//!
//! ```text
//! r = Σ_e Eᵀ [ Bᵀ W f0(u, ∇u, a, ∇a, x) + Σ_k D_kᵀ W f1_k(u, ∇u, a, ∇a, x) ]
//! ```
//!
//! with `∇φ = J⁻ᵀ ∇̂φ`. The same pipeline gives the Jacobian action (through `g0..g3`,
//! matrix-free), element matrices (for assembly) and the Jacobian's diagonal (for Jacobi
//! preconditioning). Tabulations and geometry are computed once at construction and
//! stored in the kernels' scalar type.

mod accumulate;
mod aux;
mod error;
mod kernels;
mod linearized;
mod model;

pub use accumulate::Accumulation;
pub use aux::AuxField;
pub use error::FormError;
pub use kernels::{MAX_AUX, MAX_COMPONENTS};
pub use linearized::Linearized;
pub use model::{AuxLayout, ResidualModel, ResidualShape};

use crate::ElementMatrices;
use accumulate::{Accumulator, Scratch};
use aux::{tabulate, AuxData};
use ferrofem_base::{CellType, Real};
use ferrofem_fe::QuadratureRule;
use ferrofem_geometry::QuadGeometry;
use ferrofem_mesh::Mesh;
use ferrofem_physics::Physics;
use ferrofem_space::{ElemRestriction, H1Space};
use kernels::{Ctx, Geo, Kernels, Tab};
use rayon::prelude::*;

/// Which quadrature rule a [`FormOperator`] integrates with.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Quadrature {
    /// Exact for polynomials of degree `2p` (`p` the space's order): the mass matrix on
    /// affine cells, `p + 1` Gauss points per direction on tensor cells.
    #[default]
    Default,
    /// The rule of [`QuadratureRule::for_degree`] for this degree.
    Degree(usize),
    /// This rule (for the mesh's cell type), e.g. Gauss–Lobatto for collocation.
    Rule(QuadratureRule),
}

/// Construction options of a [`FormOperator`].
#[derive(Clone, Debug, Default)]
pub struct FormOptions<'a> {
    /// The quadrature rule.
    pub quadrature: Quadrature,
    /// The auxiliary field the physics reads (must match [`Physics::naux`]).
    pub aux: AuxField<'a>,
    /// How element contributions are summed in parallel.
    pub accumulation: Accumulation,
}

/// Checks that `space` was built on a mesh like `mesh` (same cell type and count), the
/// precondition of every operator, boundary term and error norm here.
pub(crate) fn check_space_on_mesh(mesh: &Mesh, space: &H1Space) -> Result<(), FormError> {
    let ct = mesh.cell_type();
    if space.num_cells() != mesh.num_cells() || space.cell_type() != ct {
        return Err(FormError::MeshMismatch {
            what: "space",
            got: space.num_cells(),
            cell_type: space.cell_type(),
            expected: mesh.num_cells(),
            mesh_type: ct,
        });
    }
    Ok(())
}

/// A pointwise weak form `∫ φ·f0 + ∇φ:f1` on an [`H1Space`], evaluated matrix-free.
///
/// Vectors are L-vectors of the space (`u[node * ncomp + c]`) in the scalar type `T`.
pub struct FormOperator<T: Real, P: Physics<T>> {
    physics: P,
    restriction: ElemRestriction,
    cell_type: CellType,
    order: usize,
    rule: QuadratureRule,
    tab: Tab<T>,
    geo: Geo<T>,
    aux: AuxData<T>,
    kernels: Kernels<T, P>,
    acc: Accumulator<T>,
}

impl<T: Real, P: Physics<T>> FormOperator<T, P> {
    /// The form of `physics` on `space` (built on `mesh`) with the default options: rule
    /// of degree `2p`, no auxiliary field, the default accumulation.
    pub fn new(mesh: &Mesh, space: &H1Space, physics: P) -> Result<FormOperator<T, P>, FormError> {
        Self::with_options(mesh, space, physics, FormOptions::default())
    }

    /// The form of `physics` on `space` with explicit options.
    ///
    /// Fails when the physics does not fit the space (dimension, components, auxiliary
    /// fields), the space or auxiliary field was built on another mesh, the rule is for
    /// another cell type, or a cell is inverted or degenerate.
    pub fn with_options(
        mesh: &Mesh,
        space: &H1Space,
        physics: P,
        options: FormOptions<'_>,
    ) -> Result<FormOperator<T, P>, FormError> {
        let ct = mesh.cell_type();
        check_space_on_mesh(mesh, space)?;
        let dim = ct.dim();
        if physics.dim() != dim {
            return Err(FormError::DimensionMismatch {
                name: physics.name().to_string(),
                physics: physics.dim(),
                mesh: dim,
            });
        }
        if physics.ncomp() != space.ncomp() {
            return Err(FormError::ComponentMismatch {
                name: physics.name().to_string(),
                physics: physics.ncomp(),
                space: space.ncomp(),
            });
        }
        if physics.naux() != options.aux.ncomp() {
            return Err(FormError::AuxCount {
                name: physics.name().to_string(),
                expected: physics.naux(),
                got: options.aux.ncomp(),
            });
        }
        let kernels =
            Kernels::select(dim, space.ncomp()).ok_or(FormError::UnsupportedComponents {
                ncomp: space.ncomp(),
                max: MAX_COMPONENTS,
            })?;
        let rule = match options.quadrature {
            Quadrature::Default => QuadratureRule::for_degree(ct, 2 * space.order())?,
            Quadrature::Degree(k) => QuadratureRule::for_degree(ct, k)?,
            Quadrature::Rule(r) => {
                if r.cell_type != ct {
                    return Err(FormError::RuleCellType {
                        rule: r.cell_type,
                        mesh: ct,
                    });
                }
                r
            }
        };
        let aux = AuxData::new(&options.aux, mesh, &rule)?;
        let tab = tabulate(space.element(), &rule)?;
        let geo = convert_geometry(&QuadGeometry::compute(mesh, &rule)?, ct.is_simplex());
        let restriction = space.restriction().clone();
        let acc = Accumulator::new(options.accumulation, mesh, &restriction);
        Ok(FormOperator {
            physics,
            restriction,
            cell_type: ct,
            order: space.order(),
            rule,
            tab,
            geo,
            aux,
            kernels,
            acc,
        })
    }

    /// The pointwise physics.
    pub fn physics(&self) -> &P {
        &self.physics
    }
    /// The quadrature rule.
    pub fn rule(&self) -> &QuadratureRule {
        &self.rule
    }
    /// Cell type of the mesh.
    pub fn cell_type(&self) -> CellType {
        self.cell_type
    }
    /// Polynomial order of the space.
    pub fn order(&self) -> usize {
        self.order
    }
    /// Solution components.
    pub fn ncomp(&self) -> usize {
        self.restriction.ncomp()
    }
    /// Length of the L-vectors the operator acts on.
    pub fn num_dofs(&self) -> usize {
        self.restriction.lvec_len()
    }
    /// The accumulation strategy in use.
    pub fn accumulation(&self) -> Accumulation {
        self.acc.strategy()
    }
    /// Number of colour classes, once [`Accumulation::Coloring`] has been selected (`None`
    /// before, or when the mesh's colouring did not separate the space's nodes, in which
    /// case colouring falls back to [`Accumulation::ElementVectors`]).
    pub fn num_colors(&self) -> Option<usize> {
        self.acc.num_colors()
    }

    /// Selects the accumulation strategy; `mesh` (the one the operator was built on) is
    /// coloured the first time [`Accumulation::Coloring`] is selected.
    pub fn set_accumulation(&mut self, mesh: &Mesh, accumulation: Accumulation) {
        self.acc.set_strategy(accumulation, mesh, &self.restriction);
    }

    fn ctx(&self) -> Ctx<'_, T, P> {
        Ctx {
            physics: &self.physics,
            tab: &self.tab,
            geo: &self.geo,
            aux: &self.aux,
            terms: self.physics.terms(),
            jac: self.physics.jacobian_terms(),
            naux: self.physics.naux(),
        }
    }

    fn check_len(&self, what: &str, v: &[T]) {
        assert_eq!(
            v.len(),
            self.num_dofs(),
            "{what}: L-vector of length {} expected, got {}",
            self.num_dofs(),
            v.len()
        );
    }

    /// The state to linearise about: `None` when the physics is linear (its Jacobian does
    /// not depend on `u`, which then is not read and may be empty).
    fn state<'u>(&self, u: &'u [T]) -> Option<&'u [T]> {
        if self.physics.is_linear() {
            None
        } else {
            self.check_len("state u", u);
            Some(u)
        }
    }

    /// The residual `r = Σ_e Eᵀ [Bᵀ W f0 + Σ_k D_kᵀ W f1_k]` at `u` (overwrites `r`).
    ///
    /// # Panics
    /// If `u` or `r` is not an L-vector of the space (a programming error).
    pub fn residual(&self, u: &[T], r: &mut [T]) {
        self.check_len("u", u);
        self.check_len("r", r);
        let ctx = self.ctx();
        let kernel = self.kernels.residual;
        let rs = &self.restriction;
        self.acc.run(rs, r, |e, s: &mut Scratch<T>, re| {
            rs.gather_elem(e, u, &mut s.ue);
            kernel(&ctx, e, &s.ue, re);
        });
    }

    /// The action `out = J(u) v` of the Jacobian linearised at `u`, through `g0..g3`
    /// without forming any matrix. For linear physics `u` is not read (pass `&[]`).
    ///
    /// # Panics
    /// If `v` or `out` (or `u`, for nonlinear physics) is not an L-vector of the space.
    pub fn jacobian_apply(&self, u: &[T], v: &[T], out: &mut [T]) {
        let u = self.state(u);
        self.check_len("v", v);
        self.check_len("out", out);
        let ctx = self.ctx();
        let kernel = self.kernels.jacobian;
        let rs = &self.restriction;
        self.acc.run(rs, out, |e, s: &mut Scratch<T>, re| {
            rs.gather_elem(e, v, &mut s.ve);
            match u {
                Some(u) => {
                    rs.gather_elem(e, u, &mut s.ue);
                    kernel(&ctx, e, Some(&s.ue), &s.ve, re);
                }
                None => kernel(&ctx, e, None, &s.ve, re),
            }
        });
    }

    /// The diagonal of the Jacobian at `u` (assembled from the diagonals of the element
    /// matrices), for Jacobi preconditioning. For linear physics `u` is not read.
    ///
    /// # Panics
    /// If `u` is needed and is not an L-vector of the space.
    pub fn diagonal(&self, u: &[T]) -> Vec<T> {
        let u = self.state(u);
        let mut out = vec![T::zero(); self.num_dofs()];
        let ctx = self.ctx();
        let kernel = self.kernels.diagonal;
        let rs = &self.restriction;
        self.acc
            .run(rs, &mut out, |e, s: &mut Scratch<T>, de| match u {
                Some(u) => {
                    rs.gather_elem(e, u, &mut s.ue);
                    kernel(&ctx, e, Some(&s.ue), de);
                }
                None => kernel(&ctx, e, None, de),
            });
        out
    }

    /// The Jacobian at `u` as a [`LinearOperator`](ferrofem_base::LinearOperator) (copies
    /// `u`; for linear physics pass `&[]`).
    pub fn linearize(&self, u: &[T]) -> Linearized<'_, T, P> {
        Linearized::new(self, u)
    }

    /// All element matrices at `u` (E-vector dof order, row-major), in parallel: a
    /// convenience for tests and small problems; assembly calls
    /// [`ElementMatrices::element_matrix`] element by element instead.
    pub fn element_matrices(&self, u: &[T]) -> Vec<T> {
        let u = self.state(u);
        let n = self.element_matrix_size();
        let mut out = vec![T::zero(); self.restriction.num_elem() * n * n];
        let rs = &self.restriction;
        out.par_chunks_mut((n * n).max(1))
            .enumerate()
            .for_each_init(
                || vec![T::zero(); n],
                |ue, (e, ke)| match u {
                    Some(u) => {
                        rs.gather_elem(e, u, ue);
                        self.element_matrix(e, Some(ue), ke);
                    }
                    None => self.element_matrix(e, None, ke),
                },
            );
        out
    }
}

impl<T: Real, P: Physics<T>> ElementMatrices<T> for FormOperator<T, P> {
    fn restriction(&self) -> &ElemRestriction {
        &self.restriction
    }

    /// `K_e[c_i nb + i][c_j nb + j] = Σ_q w det J (φ_i g0 φ_j + φ_i g1·∇φ_j + ∇φ_i·g2 φ_j +
    /// ∇φ_i·g3·∇φ_j)`, linearised about `u_e` (ignored by linear physics; treated as zero
    /// when absent).
    ///
    /// # Panics
    /// If `out` is shorter than `n²` or `u_e` shorter than `n` (programming errors).
    fn element_matrix(&self, e: usize, u_e: Option<&[T]>, out: &mut [T]) {
        let n = self.element_matrix_size();
        // with `None` the kernel linearises about zero
        let ue = if self.physics.is_linear() {
            None
        } else {
            u_e.map(|u| &u[..n])
        };
        (self.kernels.matrix)(&self.ctx(), e, ue, &mut out[..n * n]);
    }

    fn is_symmetric(&self) -> bool {
        self.physics.is_symmetric()
    }
}

/// Converts the `f64` geometry into the kernels' storage: one inverse Jacobian per cell
/// for affine cells, per point otherwise.
fn convert_geometry<T: Real>(g: &QuadGeometry, affine: bool) -> Geo<T> {
    let (nc, nq, d) = (g.num_cells, g.num_points, g.dim);
    let dd = d * d;
    let jinv: Vec<T> = if affine && nq > 0 {
        let mut j = vec![T::zero(); nc * dd];
        j.par_chunks_mut(dd.max(1)).enumerate().for_each(|(c, jc)| {
            for (o, &v) in jc.iter_mut().zip(&g.jinv[c * nq * dd..c * nq * dd + dd]) {
                *o = T::of(v);
            }
        });
        j
    } else {
        g.jinv.par_iter().map(|&v| T::of(v)).collect()
    };
    Geo {
        nq,
        dim: d,
        affine: affine && nq > 0,
        x: g.x.par_iter().map(|&v| T::of(v)).collect(),
        jinv,
        wdetj: g.wdetj.par_iter().map(|&v| T::of(v)).collect(),
    }
}
