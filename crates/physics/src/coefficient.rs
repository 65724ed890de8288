//! Coefficients of configured physics: a constant, or an expression of the point (and,
//! where the physics allows it, of the solution), evaluated on the CPU in the kernels'
//! precision and emitted as CUDA C for the GPU kernels.

use ferrofem_base::Real;
use ferrofem_expr::Expr;

/// Most variables a coefficient reads: `x, y, z` and the solution `u`.
pub const MAX_VARIABLES: usize = 4;

/// A coefficient: a constant or an expression whose variable slots are `x, y, z` (the first
/// `dim` of them) followed, for coefficients that may depend on the solution, by `u`.
#[derive(Clone, Debug, PartialEq)]
pub enum Coef {
    /// A constant.
    Const(f64),
    /// An expression (not constant: [`Coef::of`] folds constant ones).
    Expr(Expr),
}

impl Coef {
    /// The coefficient of `expr`: [`Coef::Const`] when it depends on no variable.
    pub fn of(expr: Expr) -> Coef {
        match expr.constant_value() {
            Some(v) => Coef::Const(v),
            None => Coef::Expr(expr),
        }
    }

    /// Its value at `vars` (`x, y, z` in the first `dim` slots, then `u`).
    #[inline]
    pub fn eval<T: Real>(&self, vars: &[T]) -> T {
        match self {
            Coef::Const(c) => T::of(*c),
            Coef::Expr(e) => e.eval(vars),
        }
    }

    /// The constant value, if it is one.
    pub fn constant(&self) -> Option<f64> {
        match self {
            Coef::Const(c) => Some(*c),
            Coef::Expr(_) => None,
        }
    }

    /// True when it reads variable `slot`.
    pub fn uses(&self, slot: usize) -> bool {
        match self {
            Coef::Const(_) => false,
            Coef::Expr(e) => e.uses(slot),
        }
    }

    /// Its derivative with respect to variable `slot`.
    pub fn derivative(&self, slot: usize) -> Coef {
        match self {
            Coef::Const(_) => Coef::Const(0.0),
            Coef::Expr(e) => Coef::of(e.derivative(slot)),
        }
    }

    /// A CUDA C expression of type `real`, with variable `slot` written as `names[slot]`.
    pub fn to_cuda(&self, names: &[&str]) -> String {
        match self {
            Coef::Const(c) => format!("((real){c:e})"),
            Coef::Expr(e) => e.to_cuda(names),
        }
    }

    /// How it is written in reports: the number, or the expression's text.
    pub fn describe(&self) -> String {
        match self {
            Coef::Const(c) => format!("{c}"),
            Coef::Expr(e) => e.source().to_string(),
        }
    }
}

impl From<f64> for Coef {
    fn from(value: f64) -> Coef {
        Coef::Const(value)
    }
}

/// The variable names of the CUDA half: coordinates `x[0..dim]` and the solution `u[0]`.
pub(crate) fn cuda_names(dim: usize) -> Vec<&'static str> {
    let mut names = vec!["x[0]", "x[1]", "x[2]"];
    names.truncate(dim);
    names.push("u[0]");
    names
}
