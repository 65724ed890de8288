//! A small expression language for the user's coefficients, sources and boundary values.
//!
//! An expression is parsed once against the [`Symbols`] it may use, its variable-free
//! sub-trees are folded, and it is compiled to a flat postfix program that
//! [`Expr::eval`] runs in `f32` or `f64` without allocating. The same expression can be
//! differentiated symbolically ([`Expr::derivative`]) and emitted as CUDA C
//! ([`Expr::to_cuda`]). Errors carry the byte offset of the offending token.
//!
//! The language: numbers (`1`, `2.5`, `.5`, `1e-3`), names (variables, named constants,
//! `pi`, `e`), parentheses, and, from the loosest to the tightest binding, `||`, `&&`,
//! `== !=`, `< <= > >=`, `+ -`, `* /`, unary `- + !`, and right-associative `^`
//! (`-x^2 == -(x^2)`, `2^-1 == 0.5`). Comparisons and logical operators yield 1 or 0.
//! Functions: `sin cos tan asin acos atan atan2(y, x) sinh cosh tanh exp log log10 sqrt
//! abs min(a, b) max(a, b) pow(a, b) floor ceil sign` and `if(c, a, b)`.
//!
//! ```
//! use ferrofem_expr::{Expr, Symbols};
//!
//! let symbols = Symbols::new().variable("x")?.variable("y")?.constant("k", 2.0)?;
//! let f = Expr::parse("k * sin(pi * x) * exp(-y^2) + if(x > 0.5, 1, 0)", &symbols)?;
//! assert!((f.eval(&[0.5_f64, 0.0]) - 2.0).abs() < 1e-15);
//! assert_eq!(f.eval(&[0.75_f32, 0.0]), 2.0 * (0.75 * std::f32::consts::PI).sin() + 1.0);
//! let dfdx = f.derivative(0);
//! assert!((dfdx.eval(&[0.0_f64, 0.0]) - 2.0 * std::f64::consts::PI).abs() < 1e-14);
//! assert_eq!(Expr::parse("2*x^2", &symbols)?.to_cuda(&["u[0]", "u[1]"]), "(((real)2e0) * (u[0] * u[0]))");
//!
//! let err = Expr::parse("1 + sin(x) * foo", &symbols).unwrap_err();
//! assert_eq!((err.offset, err.len, err.column("1 + sin(x) * foo")), (13, 3, 14));
//! assert_eq!(err.to_string(), "unknown name `foo` (known: e, k, pi, x, y)");
//! # Ok::<(), ferrofem_expr::ExprError>(())
//! ```

mod cuda;
mod derivative;
mod error;
mod lexer;
mod parser;
mod program;
mod symbols;

pub use error::{ExprError, ExprErrorKind};
pub use symbols::Symbols;

use ferrofem_base::Real;
use parser::Node;
use program::{Program, STACK};

/// A parsed, constant-folded and compiled expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    source: String,
    vars: Vec<String>,
    ast: Node,
    used: Vec<bool>,
    program: Program,
}

impl Expr {
    /// Builds an expression from a tree; `source` is its text, or `None` to render it.
    fn build(ast: Node, vars: Vec<String>, source: Option<&str>) -> Result<Expr, ExprError> {
        let source = source.map_or_else(
            || {
                let mut s = String::new();
                ast.render(&vars, &mut s);
                s
            },
            str::to_string,
        );
        let program = Program::compile(&ast, STACK).map_err(|e| ExprError {
            len: source.len(),
            ..e
        })?;
        let mut used = vec![false; vars.len()];
        ast.visit_vars(&mut |s| used[s] = true);
        Ok(Expr {
            source,
            vars,
            ast,
            used,
            program,
        })
    }

    /// Parses `source`, which may use the names of `symbols`.
    ///
    /// Refuses ([`ExprErrorKind::TooDeep`]) a syntax tree deeper than 256 levels (a sum of
    /// more than 256 terms is as deep), parentheses nested more than 512 deep, and a program
    /// that needs more than 32 evaluation-stack slots (which takes billions of nodes, as
    /// the deepest operand is evaluated first).
    pub fn parse(source: &str, symbols: &Symbols) -> Result<Expr, ExprError> {
        let ast = parser::parse(source, symbols)?;
        Expr::build(ast, symbols.variables().to_vec(), Some(source))
    }

    /// A literal, of no variables.
    pub fn constant(value: f64) -> Expr {
        Expr::build(Node::Num(value), Vec::new(), None).expect("a literal needs one stack slot")
    }

    /// The text the expression was parsed from (for a derived one, a rendering in the
    /// language).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The number of variable slots of the [`Symbols`] it was parsed with.
    pub fn num_variables(&self) -> usize {
        self.vars.len()
    }

    /// Whether the expression reads variable `slot`.
    pub fn uses(&self, slot: usize) -> bool {
        self.used.get(slot).copied().unwrap_or(false)
    }

    /// The value of an expression that depends on no variable (it is then fully folded).
    pub fn constant_value(&self) -> Option<f64> {
        match self.ast {
            Node::Num(v) => Some(v),
            _ => None,
        }
    }

    /// Evaluates with `vars[slot]` in precision `T`, without allocating.
    /// `vars.len()` must be at least [`num_variables`](Expr::num_variables).
    #[inline]
    pub fn eval<T: Real>(&self, vars: &[T]) -> T {
        debug_assert!(
            vars.len() >= self.vars.len(),
            "{} values for {} variables",
            vars.len(),
            self.vars.len()
        );
        self.program.run(vars)
    }

    /// The symbolic derivative with respect to variable `slot`, simplified (`0*a -> 0`,
    /// `1*a -> a`, `a+0 -> a`, constant folding). Derivatives of `floor`, `ceil`, `sign`,
    /// comparisons and logical operators are 0; those of `min`, `max` and `if` select the
    /// branch's derivative with an `if`.
    ///
    /// # Panics
    /// If `slot >= num_variables()`, or if the derivative needed more than 32 stack slots
    /// (which takes a tree of billions of nodes).
    pub fn derivative(&self, slot: usize) -> Expr {
        assert!(
            slot < self.vars.len(),
            "no variable slot {slot} in {} variables",
            self.vars.len()
        );
        Expr::build(self.ast.derivative(slot), self.vars.clone(), None)
            .expect("derivative too deep for the stack")
    }

    /// The expression as one CUDA C expression of type `real` (a typedef of `float` or
    /// `double` in the kernel prelude), fully parenthesised, with variable `slot` written
    /// as `names[slot]` (e.g. `"x[0]"`; a name other than an identifier with indices or
    /// members is parenthesised). Literals are `((real)1.5e0)`, exact for `f64`.
    ///
    /// # Panics
    /// If `names` has fewer entries than the variables the expression uses.
    pub fn to_cuda(&self, names: &[&str]) -> String {
        self.ast.cuda(names)
    }
}
