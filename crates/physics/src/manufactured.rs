//! Manufactured solutions: smooth exact solutions `u*` with the forcing `f` that makes them
//! solve each problem, for convergence studies and tests.
//!
//! The exact solutions are products of shifted sines, cosines and exponentials, e.g. in 2-D
//! `u* = sin(πx/2 + 0.3)·cos(πy/3)` (times `exp(z/2)` in 3-D): smooth, not polynomials
//! (so no finite element space reproduces them), and nonzero on the boundary of the unit
//! box (so Dirichlet data `g = u*` is not trivial). Elasticity uses a vector field with
//! different components. The variable coefficient of [`Manufactured::PoissonVarCoef`] is
//! `κ(x) = 1 + sin(x₀ + 2x₁ [+ 3x₂])/2 ∈ [1/2, 3/2]` ([`varcoef_kappa`]).
//!
//! The forcings `f = −∇·f1(u*, ∇u*) + (u-dependent part of f0)` were derived symbolically
//! by `scripts/manufactured.py` (sympy), which prints both the Rust functions and the CUDA
//! C bodies in `manufactured/generated.rs`; re-run it after changing a solution. The tests
//! check the forcings against finite differences of the Rust exact solutions, independently
//! of sympy.

#[rustfmt::skip]
mod generated;

use crate::error::{check_param, PhysicsError};
use crate::{Elasticity, NonlinearDiffusion, Physics, Poisson, PoissonVarCoef, ScreenedPoisson};
use ferrofem_base::Real;
use generated as g;

/// A manufactured problem: which equation (with its parameters) and in which dimension.
///
/// Dimensions 2 and 3 are supported; build with the constructors (or check with
/// [`Manufactured::validate`]) so that the dimension and parameters are known to be valid.
/// Evaluation functions take `x` with `dim` entries and write `ncomp` values (`ncomp * dim`
/// for gradients); they panic on slices that are too short, like slice indexing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Manufactured {
    /// `−∇·(κ∇u) = f` with constant `κ`.
    Poisson {
        /// Spatial dimension (2 or 3).
        dim: usize,
        /// Diffusion coefficient.
        kappa: f64,
    },
    /// `−∇·(κ(x)∇u) = f` with the analytic [`varcoef_kappa`].
    PoissonVarCoef {
        /// Spatial dimension (2 or 3).
        dim: usize,
    },
    /// Linear elasticity `−∇·σ(u) = f`.
    Elasticity {
        /// Spatial dimension (2 or 3).
        dim: usize,
        /// First Lamé parameter λ.
        lambda: f64,
        /// Shear modulus μ.
        mu: f64,
    },
    /// `αu − Δu = f`.
    ScreenedPoisson {
        /// Spatial dimension (2 or 3).
        dim: usize,
        /// Reaction coefficient α.
        alpha: f64,
    },
    /// `−∇·((1 + u²)∇u) = f`.
    Nonlinear {
        /// Spatial dimension (2 or 3).
        dim: usize,
    },
}

fn check_mms_dim(physics: &'static str, dim: usize) -> Result<(), PhysicsError> {
    if dim == 2 || dim == 3 {
        Ok(())
    } else {
        Err(PhysicsError::Dimension {
            physics,
            dim,
            supported: "2, 3",
        })
    }
}

/// `(real)<shortest round-trip literal>` for embedding a constant in CUDA C.
pub(crate) fn c_real(v: f64) -> String {
    format!("(real){v:e}")
}

impl Manufactured {
    /// Poisson with constant `kappa > 0`.
    pub fn poisson(dim: usize, kappa: f64) -> Result<Manufactured, PhysicsError> {
        let m = Manufactured::Poisson { dim, kappa };
        m.validate()?;
        Ok(m)
    }
    /// Poisson with the variable coefficient [`varcoef_kappa`].
    pub fn poisson_varcoef(dim: usize) -> Result<Manufactured, PhysicsError> {
        let m = Manufactured::PoissonVarCoef { dim };
        m.validate()?;
        Ok(m)
    }
    /// Linear elasticity with Lamé parameters `lambda`, `mu`.
    pub fn elasticity(dim: usize, lambda: f64, mu: f64) -> Result<Manufactured, PhysicsError> {
        let m = Manufactured::Elasticity { dim, lambda, mu };
        m.validate()?;
        Ok(m)
    }
    /// Screened Poisson with `alpha ≥ 0`.
    pub fn screened_poisson(dim: usize, alpha: f64) -> Result<Manufactured, PhysicsError> {
        let m = Manufactured::ScreenedPoisson { dim, alpha };
        m.validate()?;
        Ok(m)
    }
    /// The nonlinear diffusion problem.
    pub fn nonlinear(dim: usize) -> Result<Manufactured, PhysicsError> {
        let m = Manufactured::Nonlinear { dim };
        m.validate()?;
        Ok(m)
    }

    /// Checks the dimension (2 or 3) and the parameters (the same ranges as the physics).
    pub fn validate(&self) -> Result<(), PhysicsError> {
        let name = self.name();
        check_mms_dim(name, self.dim())?;
        match *self {
            Manufactured::Poisson { kappa, .. } => {
                check_param(name, "kappa", kappa, kappa > 0.0, "finite and > 0")
            }
            Manufactured::Elasticity { dim, lambda, mu } => {
                crate::elasticity::check_lame(name, dim, lambda, mu)
            }
            Manufactured::ScreenedPoisson { alpha, .. } => {
                check_param(name, "alpha", alpha, alpha >= 0.0, "finite and >= 0")
            }
            Manufactured::PoissonVarCoef { .. } | Manufactured::Nonlinear { .. } => Ok(()),
        }
    }

    /// Short name of the problem (matches the physics' name).
    pub fn name(&self) -> &'static str {
        match self {
            Manufactured::Poisson { .. } => "poisson",
            Manufactured::PoissonVarCoef { .. } => "poisson-varcoef",
            Manufactured::Elasticity { .. } => "elasticity",
            Manufactured::ScreenedPoisson { .. } => "screened-poisson",
            Manufactured::Nonlinear { .. } => "nonlinear-diffusion",
        }
    }

    /// Spatial dimension.
    pub fn dim(&self) -> usize {
        match *self {
            Manufactured::Poisson { dim, .. }
            | Manufactured::PoissonVarCoef { dim }
            | Manufactured::Elasticity { dim, .. }
            | Manufactured::ScreenedPoisson { dim, .. }
            | Manufactured::Nonlinear { dim } => dim,
        }
    }

    /// Solution components (`dim` for elasticity, else 1).
    pub fn ncomp(&self) -> usize {
        match *self {
            Manufactured::Elasticity { dim, .. } => dim,
            _ => 1,
        }
    }

    /// The exact solution `u*(x)` (`out[ncomp]`), e.g. for Dirichlet data and errors.
    pub fn exact(&self, x: &[f64], out: &mut [f64]) {
        match (self, self.dim()) {
            (Manufactured::Elasticity { .. }, 2) => g::vector2_exact(x, out),
            (Manufactured::Elasticity { .. }, _) => g::vector3_exact(x, out),
            (_, 2) => g::scalar2_exact(x, out),
            (_, _) => g::scalar3_exact(x, out),
        }
    }

    /// The exact gradient, `out[c * dim + k] = ∂u*_c/∂x_k`.
    pub fn exact_grad(&self, x: &[f64], out: &mut [f64]) {
        match (self, self.dim()) {
            (Manufactured::Elasticity { .. }, 2) => g::vector2_grad(x, out),
            (Manufactured::Elasticity { .. }, _) => g::vector3_grad(x, out),
            (_, 2) => g::scalar2_grad(x, out),
            (_, _) => g::scalar3_grad(x, out),
        }
    }

    /// The forcing `f(x)` (`out[ncomp]`) that makes `u*` the solution.
    pub fn forcing(&self, x: &[f64], out: &mut [f64]) {
        let two = self.dim() == 2;
        match *self {
            Manufactured::Poisson { kappa, .. } if two => g::poisson2_forcing(x, kappa, out),
            Manufactured::Poisson { kappa, .. } => g::poisson3_forcing(x, kappa, out),
            Manufactured::PoissonVarCoef { .. } if two => g::varcoef2_forcing(x, out),
            Manufactured::PoissonVarCoef { .. } => g::varcoef3_forcing(x, out),
            Manufactured::Elasticity { lambda, mu, .. } if two => {
                g::elasticity2_forcing(x, lambda, mu, out)
            }
            Manufactured::Elasticity { lambda, mu, .. } => {
                g::elasticity3_forcing(x, lambda, mu, out)
            }
            Manufactured::ScreenedPoisson { alpha, .. } if two => {
                g::screened2_forcing(x, alpha, out)
            }
            Manufactured::ScreenedPoisson { alpha, .. } => g::screened3_forcing(x, alpha, out),
            Manufactured::Nonlinear { .. } if two => g::nonlinear2_forcing(x, out),
            Manufactured::Nonlinear { .. } => g::nonlinear3_forcing(x, out),
        }
    }

    /// The diffusion coefficient at `x`: `κ` for Poisson, [`varcoef_kappa`] for the
    /// variable-coefficient problem, `None` for the others.
    pub fn kappa(&self, x: &[f64]) -> Option<f64> {
        match *self {
            Manufactured::Poisson { kappa, .. } => Some(kappa),
            Manufactured::PoissonVarCoef { .. } => Some(varcoef_kappa(x)),
            _ => None,
        }
    }

    /// The natural boundary datum `f1(u*, ∇u*)·n` (`out[ncomp]`) for an outward normal `n`,
    /// so that Neumann conditions can be imposed on part of the boundary.
    pub fn flux(&self, x: &[f64], n: &[f64], out: &mut [f64]) {
        let d = self.dim();
        let nc = self.ncomp();
        let mut du = [0.0; 9];
        self.exact_grad(x, &mut du[..nc * d]);
        let scalar_coef = match *self {
            Manufactured::Poisson { kappa, .. } => kappa,
            Manufactured::PoissonVarCoef { .. } => varcoef_kappa(x),
            Manufactured::ScreenedPoisson { .. } => 1.0,
            Manufactured::Nonlinear { .. } => {
                let mut u = [0.0];
                self.exact(x, &mut u);
                1.0 + u[0] * u[0]
            }
            Manufactured::Elasticity { lambda, mu, .. } => {
                let tr: f64 = (0..d).map(|k| du[k * d + k]).sum();
                for i in 0..d {
                    out[i] = (0..d)
                        .map(|k| {
                            let s = mu * (du[i * d + k] + du[k * d + i]);
                            let s = if i == k { s + lambda * tr } else { s };
                            s * n[k]
                        })
                        .sum();
                }
                return;
            }
        };
        out[0] = scalar_coef * (0..d).map(|k| du[k] * n[k]).sum::<f64>();
    }

    /// CUDA C of the forcing: `__device__ void ff_forcing(const real* x, real* f)` with the
    /// parameters embedded as literals.
    pub fn forcing_cuda(&self) -> String {
        let two = self.dim() == 2;
        let (params, body) = match *self {
            Manufactured::Poisson { kappa, .. } => (
                format!("  const real kappa = {};\n", c_real(kappa)),
                if two {
                    g::POISSON2_FORCING_C
                } else {
                    g::POISSON3_FORCING_C
                },
            ),
            Manufactured::PoissonVarCoef { .. } => (
                String::new(),
                if two {
                    g::VARCOEF2_FORCING_C
                } else {
                    g::VARCOEF3_FORCING_C
                },
            ),
            Manufactured::Elasticity { lambda, mu, .. } => (
                format!(
                    "  const real lam = {};\n  const real mu = {};\n",
                    c_real(lambda),
                    c_real(mu)
                ),
                if two {
                    g::ELASTICITY2_FORCING_C
                } else {
                    g::ELASTICITY3_FORCING_C
                },
            ),
            Manufactured::ScreenedPoisson { alpha, .. } => (
                format!("  const real alpha = {};\n", c_real(alpha)),
                if two {
                    g::SCREENED2_FORCING_C
                } else {
                    g::SCREENED3_FORCING_C
                },
            ),
            Manufactured::Nonlinear { .. } => (
                String::new(),
                if two {
                    g::NONLINEAR2_FORCING_C
                } else {
                    g::NONLINEAR3_FORCING_C
                },
            ),
        };
        format!(
            "// forcing of the manufactured {} problem ({}-D), generated by scripts/manufactured.py\n\
             static __device__ __forceinline__ void ff_forcing(const real* x, real* out) {{\n\
             {params}{}}}\n",
            self.name(),
            self.dim(),
            body.trim_start_matches('\n'),
        )
    }

    /// CUDA C of the exact solution: `__device__ void ff_exact(const real* x, real* out)`
    /// writing `out[ncomp]` (for Dirichlet data and error norms on the device).
    pub fn exact_cuda(&self) -> String {
        let body = match (self, self.dim()) {
            (Manufactured::Elasticity { .. }, 2) => g::VECTOR2_EXACT_C,
            (Manufactured::Elasticity { .. }, _) => g::VECTOR3_EXACT_C,
            (_, 2) => g::SCALAR2_EXACT_C,
            (_, _) => g::SCALAR3_EXACT_C,
        };
        self.device_fn("ff_exact", "exact solution", body)
    }

    /// CUDA C of the exact gradient: `__device__ void ff_exact_grad(const real* x,
    /// real* out)` writing `out[c * dim + k]` (for H¹ error norms on the device).
    pub fn exact_grad_cuda(&self) -> String {
        let body = match (self, self.dim()) {
            (Manufactured::Elasticity { .. }, 2) => g::VECTOR2_GRAD_C,
            (Manufactured::Elasticity { .. }, _) => g::VECTOR3_GRAD_C,
            (_, 2) => g::SCALAR2_GRAD_C,
            (_, _) => g::SCALAR3_GRAD_C,
        };
        self.device_fn("ff_exact_grad", "exact gradient", body)
    }

    fn device_fn(&self, name: &str, what: &str, body: &str) -> String {
        format!(
            "// {what} of the manufactured {} problem ({}-D), generated by scripts/manufactured.py\n\
             static __device__ __forceinline__ void {name}(const real* x, real* out) {{\n{}}}\n",
            self.name(),
            self.dim(),
            body.trim_start_matches('\n'),
        )
    }

    /// The physics this solution was manufactured for, with this forcing attached.
    pub fn physics<T: Real>(&self) -> Result<Box<dyn Physics<T>>, PhysicsError> {
        let forcing = Some(*self);
        Ok(match *self {
            Manufactured::Poisson { dim, kappa } => Box::new(Poisson::new(dim, kappa, forcing)?),
            Manufactured::PoissonVarCoef { dim } => Box::new(PoissonVarCoef::new(dim, forcing)?),
            Manufactured::Elasticity { dim, lambda, mu } => {
                Box::new(Elasticity::new(dim, lambda, mu, forcing)?)
            }
            Manufactured::ScreenedPoisson { dim, alpha } => {
                Box::new(ScreenedPoisson::new(dim, alpha, forcing)?)
            }
            Manufactured::Nonlinear { dim } => Box::new(NonlinearDiffusion::new(dim, forcing)?),
        })
    }
}

/// The analytic coefficient of the variable-coefficient problem,
/// `κ(x) = 1 + sin(x₀ + 2x₁ [+ 3x₂])/2` (2-D when `x` has two entries, else 3-D); it lies
/// in `[1/2, 3/2]`. Interpolate it into the auxiliary field of [`PoissonVarCoef`].
pub fn varcoef_kappa(x: &[f64]) -> f64 {
    let mut k = [0.0];
    if x.len() == 2 {
        g::kappa2(x, &mut k);
    } else {
        g::kappa3(x, &mut k);
    }
    k[0]
}

/// CUDA C of [`varcoef_kappa`] in dimension `dim` (2, else 3):
/// `__device__ real ff_kappa(const real* x)`.
pub fn varcoef_kappa_cuda(dim: usize) -> String {
    let body = if dim == 2 { g::KAPPA2_C } else { g::KAPPA3_C };
    format!(
        "static __device__ __forceinline__ real ff_kappa(const real* x) {{\n  real out[1];\n{}  return out[0];\n}}\n",
        body.trim_start_matches('\n')
    )
}

/// Evaluates the forcing of `m` at a point given in precision `T` (computed in f64).
pub(crate) fn forcing_at<T: Real>(m: &Manufactured, x: &[T], out: &mut [T]) {
    let d = m.dim();
    let nc = m.ncomp();
    let mut xf = [0.0f64; 3];
    for (k, v) in x.iter().take(d).enumerate() {
        xf[k] = v.as_f64();
    }
    let mut f = [0.0f64; 3];
    m.forcing(&xf[..d], &mut f[..nc]);
    for c in 0..nc {
        out[c] = T::of(f[c]);
    }
}

/// Checks that a forcing fits a physics of the given shape (and is itself valid).
pub(crate) fn check_forcing(
    physics: &'static str,
    dim: usize,
    ncomp: usize,
    forcing: &Option<Manufactured>,
) -> Result<(), PhysicsError> {
    if let Some(m) = forcing {
        m.validate()?;
        if m.dim() != dim || m.ncomp() != ncomp {
            return Err(PhysicsError::ForcingMismatch {
                physics,
                physics_shape: (dim, ncomp),
                forcing_shape: (m.dim(), m.ncomp()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors_reject_bad_input() {
        assert!(Manufactured::poisson(1, 1.0).is_err());
        assert!(Manufactured::poisson(4, 1.0).is_err());
        assert!(Manufactured::poisson(2, 0.0).is_err());
        assert!(Manufactured::poisson(2, f64::NAN).is_err());
        assert!(Manufactured::screened_poisson(3, -1.0).is_err());
        assert!(Manufactured::elasticity(3, 1.0, 0.0).is_err());
        assert!(Manufactured::elasticity(3, -1.0, 1.0).is_err());
        assert!(Manufactured::elasticity(3, 1.0, 1.0).is_ok());
        assert!(Manufactured::nonlinear(2).is_ok());
    }

    #[test]
    fn exact_solutions_do_not_vanish_on_the_unit_box_boundary() {
        // Sample every face of [0,1]^d: u* must be bounded away from zero somewhere on each
        // face, so that Dirichlet data are nontrivial everywhere.
        for dim in [2, 3] {
            for m in [
                Manufactured::poisson(dim, 1.0).unwrap(),
                Manufactured::elasticity(dim, 1.0, 1.0).unwrap(),
            ] {
                for face in 0..2 * dim {
                    let mut largest = 0.0f64;
                    for s in 0..11 {
                        for t in 0..11 {
                            let mut x = [0.0; 3];
                            let free: Vec<usize> = (0..dim).filter(|&k| k != face / 2).collect();
                            x[face / 2] = (face % 2) as f64;
                            x[free[0]] = s as f64 / 10.0;
                            if dim == 3 {
                                x[free[1]] = t as f64 / 10.0;
                            }
                            let mut u = [0.0; 3];
                            m.exact(&x[..dim], &mut u[..m.ncomp()]);
                            largest = largest.max(u.iter().fold(0.0, |a: f64, v| a.max(v.abs())));
                        }
                    }
                    assert!(
                        largest > 0.1,
                        "{} {dim}-D face {face}: max |u*| {largest}",
                        m.name()
                    );
                }
            }
        }
    }

    #[test]
    fn varcoef_kappa_is_bounded_below() {
        let mut x = [0.0; 3];
        for i in 0..2000 {
            let t = i as f64 * 0.7548776662466927;
            x[0] = (t * 1.3).sin() * 3.0;
            x[1] = (t * 0.7).cos() * 3.0;
            x[2] = (t * 2.1).sin() * 3.0;
            let k2 = varcoef_kappa(&x[..2]);
            let k3 = varcoef_kappa(&x);
            assert!((0.5..=1.5).contains(&k2) && (0.5..=1.5).contains(&k3));
        }
    }
}
