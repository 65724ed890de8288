//! Physics configured from data (a problem file): the equation, and per region its
//! coefficients and source, each a constant or an expression.
//!
//! One [`ModelPhysics`] covers the problems a user poses without writing code:
//!
//! - [`ModelKind::Diffusion`]: `−∇·(κ∇u) + c u = f` (Poisson, variable coefficient,
//!   screened Poisson): `f0 = c u − f`, `f1 = κ∇u`, `g0 = c`, `g3 = κ I`;
//! - [`ModelKind::NonlinearDiffusion`]: `−∇·(κ(x, u)∇u) = f`: `f1 = κ∇u`,
//!   `g2 = ∂κ/∂u ∇u`, `g3 = κ I` (the derivative is taken symbolically);
//! - [`ModelKind::Elasticity`]: `−∇·σ(u) = b` with the isotropic Hooke law from Lamé
//!   parameters or from Young's modulus and Poisson's ratio, plane strain or plane stress
//!   in 2-D.
//!
//! Cells carry a region slot (their material) in the cellwise auxiliary field `a[0]` when
//! there is more than one region; with one region the physics reads no auxiliary field.
//! The CUDA half inlines every region's coefficients, so an expression runs inside the GPU
//! kernels.

use crate::coefficient::{Coef, MAX_VARIABLES};
use crate::elasticity::{hooke_stress, hooke_tensor};
use crate::error::{check_dim, PhysicsError};
use crate::{CudaPhysics, JacobianTerms, Physics, Point, ResidualTerms};
use ferrofem_base::Real;

/// Which equation a [`ModelPhysics`] solves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModelKind {
    /// `−∇·(κ∇u) + c u = f`.
    Diffusion,
    /// `−∇·(κ(x, u)∇u) = f`.
    NonlinearDiffusion,
    /// `−∇·σ(u) = b`, isotropic linear elasticity.
    Elasticity {
        /// In 2-D: plane stress (`σ_zz = 0`) instead of plane strain (`ε_zz = 0`).
        plane_stress: bool,
    },
}

impl ModelKind {
    /// The name used in problem files and reports.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Diffusion => "diffusion",
            ModelKind::NonlinearDiffusion => "nonlinear-diffusion",
            ModelKind::Elasticity { .. } => "elasticity",
        }
    }
}

/// The elastic moduli of a region.
#[derive(Clone, Debug, PartialEq)]
pub enum Moduli {
    /// Lamé's first parameter `λ` and the shear modulus `μ`.
    Lame {
        /// `λ`.
        lambda: Coef,
        /// `μ`.
        mu: Coef,
    },
    /// Young's modulus `E` and Poisson's ratio `ν`.
    Young {
        /// `E`.
        young: Coef,
        /// `ν`.
        poisson: Coef,
    },
}

/// The material coefficients of one region.
#[derive(Clone, Debug, PartialEq)]
pub enum Material {
    /// Conductivity `κ` and reaction (screening) coefficient `c` of the diffusion kinds
    /// (for the nonlinear kind `κ` may read `u`, and `c` must be zero).
    Diffusion {
        /// `κ`.
        kappa: Coef,
        /// `c` (zero for plain Poisson).
        reaction: Coef,
    },
    /// The elastic moduli.
    Elasticity(Moduli),
}

/// One region: its material and its source (`f` or the body force `b`; empty for none).
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// The region's name (for messages).
    pub name: String,
    /// Its coefficients.
    pub material: Material,
    /// The source per component, or empty.
    pub source: Vec<Coef>,
}

/// A physics configured from data; see the module documentation.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelPhysics {
    dim: usize,
    kind: ModelKind,
    regions: Vec<Region>,
    /// `∂κ/∂u` per region (nonlinear diffusion only).
    dkappa: Vec<Coef>,
    with_source: bool,
}

/// The Lamé pair `(λ, μ)` of moduli `(a, b)` (Lamé or Young/Poisson), with plane stress's
/// reduced `λ* = 2λμ/(λ + 2μ)` where asked.
#[inline]
fn lame<T: Real>(young: bool, a: T, b: T, plane_stress: bool) -> (T, T) {
    let one = T::one();
    let two = one + one;
    let (lambda, mu) = if young {
        (a * b / ((one + b) * (one - two * b)), a / (two * (one + b)))
    } else {
        (a, b)
    };
    if plane_stress {
        (two * lambda * mu / (lambda + two * mu), mu)
    } else {
        (lambda, mu)
    }
}

impl ModelPhysics {
    /// A configured physics of `kind` in dimension `dim` with `regions` (slot `i` is the
    /// region of the cells whose auxiliary value is `i`). Fails on a dimension or source
    /// shape that does not fit, a material of the wrong kind, a coefficient that reads
    /// `u` outside the nonlinear kind, and constant parameters out of range (see
    /// [`ModelPhysics::check_at`]).
    pub fn new(
        dim: usize,
        kind: ModelKind,
        regions: Vec<Region>,
    ) -> Result<ModelPhysics, PhysicsError> {
        check_dim(kind.name(), dim)?;
        if regions.is_empty() {
            return Err(PhysicsError::Components {
                physics: kind.name(),
                ncomp: 0,
            });
        }
        let ncomp = match kind {
            ModelKind::Elasticity { .. } => dim,
            _ => 1,
        };
        let u_slot = dim;
        let mut dkappa = Vec::new();
        for r in &regions {
            if !r.source.is_empty() && r.source.len() != ncomp {
                return Err(PhysicsError::ForcingMismatch {
                    physics: kind.name(),
                    physics_shape: (dim, ncomp),
                    forcing_shape: (dim, r.source.len()),
                });
            }
            let reads_u = |c: &Coef| c.uses(u_slot);
            let bad_u = match (&r.material, kind) {
                (Material::Diffusion { kappa, reaction }, ModelKind::NonlinearDiffusion) => {
                    dkappa.push(kappa.derivative(u_slot));
                    reads_u(reaction) || reaction.constant() != Some(0.0)
                }
                (Material::Diffusion { kappa, reaction }, ModelKind::Diffusion) => {
                    reads_u(kappa) || reads_u(reaction)
                }
                (Material::Elasticity(m), ModelKind::Elasticity { .. }) => match m {
                    Moduli::Lame { lambda, mu } => reads_u(lambda) || reads_u(mu),
                    Moduli::Young { young, poisson } => reads_u(young) || reads_u(poisson),
                },
                _ => {
                    return Err(PhysicsError::RegionParameter {
                        region: r.name.clone(),
                        name: "material",
                        value: f64::NAN,
                        at: Vec::new(),
                        requirement: "a material of the physics' kind",
                    })
                }
            };
            if bad_u || r.source.iter().any(reads_u) {
                return Err(PhysicsError::RegionParameter {
                    region: r.name.clone(),
                    name: "u",
                    value: f64::NAN,
                    at: Vec::new(),
                    requirement: "only the conductivity of nonlinear diffusion may depend on u",
                });
            }
        }
        let p = ModelPhysics {
            dim,
            kind,
            regions,
            dkappa,
            with_source: true,
        };
        for slot in 0..p.regions.len() {
            p.check_constants(slot)?;
        }
        Ok(p)
    }

    /// The same physics without its source: the operator whose action is the Jacobian of
    /// a linear problem (what the GPU solves apply).
    pub fn without_source(&self) -> ModelPhysics {
        ModelPhysics {
            with_source: false,
            ..self.clone()
        }
    }

    /// The equation.
    pub fn kind(&self) -> ModelKind {
        self.kind
    }

    /// The regions, by slot.
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }

    /// True when some region has a source.
    pub fn has_source(&self) -> bool {
        self.with_source && self.regions.iter().any(|r| !r.source.is_empty())
    }

    /// The number of solution components.
    pub fn components(&self) -> usize {
        match self.kind {
            ModelKind::Elasticity { .. } => self.dim,
            _ => 1,
        }
    }

    fn check_constants(&self, slot: usize) -> Result<(), PhysicsError> {
        let r = &self.regions[slot];
        let constant = |c: &Coef| c.constant();
        let all_constant = match &r.material {
            Material::Diffusion { kappa, reaction } => {
                constant(kappa).is_some() && constant(reaction).is_some()
            }
            Material::Elasticity(Moduli::Lame { lambda, mu }) => {
                constant(lambda).is_some() && constant(mu).is_some()
            }
            Material::Elasticity(Moduli::Young { young, poisson }) => {
                constant(young).is_some() && constant(poisson).is_some()
            }
        };
        if all_constant {
            self.check_at(slot, &[0.0; 3][..self.dim], 0.0)
        } else {
            Ok(())
        }
    }

    /// Checks the coefficients of region `slot` at point `x` (and solution value `u` for a
    /// conductivity that reads it): `κ > 0`, `c ≥ 0`; `E > 0` and `−1 < ν < ½`, or `μ > 0`
    /// and `dλ + 2μ > 0`. The error names the region, the parameter, its value and the
    /// point. Expressions are checked by the caller at the points it samples (the driver:
    /// every quadrature point of the region's cells).
    pub fn check_at(&self, slot: usize, x: &[f64], u: f64) -> Result<(), PhysicsError> {
        let r = &self.regions[slot];
        let mut vars = [0.0; MAX_VARIABLES];
        vars[..self.dim].copy_from_slice(&x[..self.dim]);
        vars[self.dim] = u;
        let fail = |name: &'static str, value: f64, requirement: &'static str| {
            Err(PhysicsError::RegionParameter {
                region: r.name.clone(),
                name,
                value,
                at: x.to_vec(),
                requirement,
            })
        };
        match &r.material {
            Material::Diffusion { kappa, reaction } => {
                let k = kappa.eval(&vars);
                if !(k.is_finite() && k > 0.0) {
                    return fail("kappa", k, "finite and > 0");
                }
                let c = reaction.eval(&vars);
                if !(c.is_finite() && c >= 0.0) {
                    return fail("reaction", c, "finite and >= 0");
                }
            }
            Material::Elasticity(Moduli::Young { young, poisson }) => {
                let e = young.eval(&vars);
                if !(e.is_finite() && e > 0.0) {
                    return fail("E", e, "finite and > 0");
                }
                let nu = poisson.eval(&vars);
                if !(nu.is_finite() && nu > -1.0 && nu < 0.5) {
                    return fail("nu", nu, "-1 < nu < 0.5");
                }
            }
            Material::Elasticity(Moduli::Lame { lambda, mu }) => {
                let (l, m) = (lambda.eval(&vars), mu.eval(&vars));
                if !(m.is_finite() && m > 0.0) {
                    return fail("mu", m, "finite and > 0");
                }
                if !(l.is_finite() && self.dim as f64 * l + 2.0 * m > 0.0) {
                    return fail("lambda", l, "finite with dim*lambda + 2*mu > 0");
                }
            }
        }
        for c in &r.source {
            let v = c.eval(&vars);
            if !v.is_finite() {
                return fail("source", v, "finite");
            }
        }
        Ok(())
    }

    /// The region of a point: slot `a[0]` with several regions, else the only one.
    #[inline]
    fn slot<T: Real>(&self, p: &Point<'_, T>) -> usize {
        if self.regions.len() == 1 {
            0
        } else {
            (p.a[0].as_f64() as usize).min(self.regions.len() - 1)
        }
    }

    /// `x, y, z` and `u` as the coefficients' variables.
    #[inline]
    fn vars<T: Real>(&self, p: &Point<'_, T>) -> [T; MAX_VARIABLES] {
        let mut v = [T::zero(); MAX_VARIABLES];
        v[..self.dim].copy_from_slice(&p.x[..self.dim]);
        if self.kind == ModelKind::NonlinearDiffusion {
            v[self.dim] = p.u[0];
        }
        v
    }

    /// `(λ, μ)` of region `slot` at `vars`.
    #[inline]
    fn lame_at<T: Real>(&self, slot: usize, vars: &[T]) -> (T, T) {
        let plane_stress =
            matches!(self.kind, ModelKind::Elasticity { plane_stress: true }) && self.dim == 2;
        match &self.regions[slot].material {
            Material::Elasticity(Moduli::Lame { lambda, mu }) => {
                lame(false, lambda.eval(vars), mu.eval(vars), plane_stress)
            }
            Material::Elasticity(Moduli::Young { young, poisson }) => {
                lame(true, young.eval(vars), poisson.eval(vars), plane_stress)
            }
            Material::Diffusion { .. } => (T::zero(), T::zero()),
        }
    }

    /// `(κ, c)` of region `slot` at `vars`.
    #[inline]
    fn diffusion_at<T: Real>(&self, slot: usize, vars: &[T]) -> (T, T) {
        match &self.regions[slot].material {
            Material::Diffusion { kappa, reaction } => (kappa.eval(vars), reaction.eval(vars)),
            Material::Elasticity(_) => (T::zero(), T::zero()),
        }
    }

    /// The normal stress `σ_zz` of 2-D elasticity at `x` in region `slot` for the
    /// displacement gradient `du` (`du[c * 2 + k]`): `λ (ε_xx + ε_yy)` in plane strain,
    /// zero in plane stress (and for the other kinds and dimensions).
    pub fn out_of_plane_stress(&self, slot: usize, x: &[f64], du: &[f64]) -> f64 {
        if self.dim != 2 || matches!(self.kind, ModelKind::Elasticity { plane_stress: true }) {
            return 0.0;
        }
        let mut vars = [0.0; MAX_VARIABLES];
        vars[..2].copy_from_slice(&x[..2]);
        let lambda = match &self.regions[slot.min(self.regions.len() - 1)].material {
            Material::Elasticity(Moduli::Lame { lambda, .. }) => lambda.eval(&vars),
            Material::Elasticity(Moduli::Young { young, poisson }) => {
                lame(true, young.eval(&vars), poisson.eval(&vars), false).0
            }
            Material::Diffusion { .. } => return 0.0,
        };
        lambda * (du[0] + du[3])
    }

    /// True when a coefficient of the operator, or a source that is included, reads a
    /// coordinate.
    pub fn reads_x(&self) -> bool {
        let any = |c: &Coef| (0..self.dim).any(|k| c.uses(k));
        self.regions.iter().any(|r| {
            let material = match &r.material {
                Material::Diffusion { kappa, reaction } => any(kappa) || any(reaction),
                Material::Elasticity(Moduli::Lame { lambda, mu }) => any(lambda) || any(mu),
                Material::Elasticity(Moduli::Young { young, poisson }) => {
                    any(young) || any(poisson)
                }
            };
            material || (self.with_source && r.source.iter().any(any))
        })
    }

    fn is_elasticity(&self) -> bool {
        matches!(self.kind, ModelKind::Elasticity { .. })
    }

    fn has_reaction(&self) -> bool {
        self.regions.iter().any(|r| match &r.material {
            Material::Diffusion { reaction, .. } => reaction.constant() != Some(0.0),
            Material::Elasticity(_) => false,
        })
    }
}

impl<T: Real> Physics<T> for ModelPhysics {
    fn name(&self) -> &str {
        self.kind.name()
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn ncomp(&self) -> usize {
        self.components()
    }
    fn naux(&self) -> usize {
        usize::from(self.regions.len() > 1)
    }
    fn terms(&self) -> ResidualTerms {
        ResidualTerms {
            f0: self.has_source() || self.has_reaction(),
            f1: true,
        }
    }
    fn jacobian_terms(&self) -> JacobianTerms {
        JacobianTerms {
            g0: self.has_reaction(),
            g1: false,
            g2: self.kind == ModelKind::NonlinearDiffusion,
            g3: true,
        }
    }
    fn is_linear(&self) -> bool {
        self.kind != ModelKind::NonlinearDiffusion
            || self.dkappa.iter().all(|d| d.constant() == Some(0.0))
    }
    fn is_symmetric(&self) -> bool {
        Physics::<T>::is_linear(self)
    }

    fn f0(&self, p: &Point<'_, T>, f0: &mut [T]) {
        let slot = self.slot(p);
        let vars = self.vars(p);
        let nc = self.components();
        let (_, c) = if self.is_elasticity() {
            (T::zero(), T::zero())
        } else {
            self.diffusion_at(slot, &vars)
        };
        let source = &self.regions[slot].source;
        for i in 0..nc {
            let f = if self.with_source && !source.is_empty() {
                source[i].eval(&vars)
            } else {
                T::zero()
            };
            f0[i] = if self.is_elasticity() {
                -f
            } else {
                c * p.u[i] - f
            };
        }
    }

    fn f1(&self, p: &Point<'_, T>, f1: &mut [T]) {
        let slot = self.slot(p);
        let vars = self.vars(p);
        let d = self.dim;
        if self.is_elasticity() {
            let (lambda, mu) = self.lame_at(slot, &vars);
            hooke_stress(d, lambda, mu, p.du, f1);
        } else {
            let (kappa, _) = self.diffusion_at(slot, &vars);
            for k in 0..d {
                f1[k] = kappa * p.du[k];
            }
        }
    }

    fn g0(&self, p: &Point<'_, T>, g0: &mut [T]) {
        let (_, c) = self.diffusion_at(self.slot(p), &self.vars(p));
        g0[0] = c;
    }

    fn g2(&self, p: &Point<'_, T>, g2: &mut [T]) {
        let slot = self.slot(p);
        let dk = self.dkappa[slot].eval(&self.vars(p));
        for k in 0..self.dim {
            g2[k] = dk * p.du[k];
        }
    }

    fn g3(&self, p: &Point<'_, T>, g3: &mut [T]) {
        let slot = self.slot(p);
        let vars = self.vars(p);
        let d = self.dim;
        if self.is_elasticity() {
            let (lambda, mu) = self.lame_at(slot, &vars);
            hooke_tensor(d, lambda, mu, g3);
        } else {
            let (kappa, _) = self.diffusion_at(slot, &vars);
            for k in 0..d {
                for l in 0..d {
                    g3[k * d + l] = if k == l { kappa } else { T::zero() };
                }
            }
        }
    }

    fn cuda(&self) -> CudaPhysics {
        crate::model_cuda::cuda(
            self,
            Physics::<T>::terms(self),
            Physics::<T>::jacobian_terms(self),
        )
    }
}

/// Read access for the CUDA generator ([`crate::model_cuda`]).
impl ModelPhysics {
    pub(crate) fn dim_of(&self) -> usize {
        self.dim
    }
    pub(crate) fn dkappa(&self) -> &[Coef] {
        &self.dkappa
    }
    pub(crate) fn sourced(&self) -> bool {
        self.with_source
    }
}
