//! Emission of the tree as one CUDA C expression of type `real`.
//!
//! Every emitted sub-expression is self-delimiting (a parenthesised expression, a cast
//! literal, a call or a plain name), so operators never depend on C precedence.

use crate::parser::{Bin, Node, Un};

/// Whether a caller's name can stand unparenthesised: an identifier, possibly indexed or
/// with members (`x`, `x[0]`, `p.x`).
fn is_primary(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_[].".contains(&b))
}

fn literal(v: f64) -> String {
    if v.is_nan() {
        "(((real)0)/((real)0))".into()
    } else if v.is_infinite() {
        format!("(((real){})/((real)0))", v.signum())
    } else {
        format!("((real){v:e})")
    }
}

impl Node {
    /// The tree as CUDA C, variable `slot` written as `names[slot]`.
    pub fn cuda(&self, names: &[&str]) -> String {
        let c = |n: &Node| n.cuda(names);
        let truth = |test: String| format!("(({test}) ? (real)1 : (real)0)");
        match self {
            Node::Num(v) => literal(*v),
            Node::Var(s) if is_primary(names[*s]) => names[*s].to_string(),
            Node::Var(s) => format!("({})", names[*s]),
            Node::Un(Un::Neg, a) => format!("(-{})", c(a)),
            Node::Un(Un::Not, a) => truth(format!("{} == (real)0", c(a))),
            Node::Un(Un::Sign, a) => {
                let a = c(a);
                format!("(({a} > (real)0) ? (real)1 : (({a} < (real)0) ? (real)-1 : (real)0))")
            }
            Node::Un(Un::Abs, a) => format!("fabs({})", c(a)),
            Node::Un(op, a) => format!("{}({})", op.name().unwrap_or("?"), c(a)),
            Node::Bin(Bin::Pow, a, b)
                if matches!(**a, Node::Var(_))
                    && matches!(**b, Node::Num(k) if k == 2.0 || k == 3.0) =>
            {
                let n = if **b == Node::Num(2.0) { 2 } else { 3 };
                format!("({})", vec![c(a); n].join(" * "))
            }
            Node::Bin(op, a, b) => {
                let (a, b) = (c(a), c(b));
                let sym = op.symbol().unwrap_or("?");
                match op {
                    Bin::Add | Bin::Sub | Bin::Mul | Bin::Div => format!("({a} {sym} {b})"),
                    Bin::Lt | Bin::Le | Bin::Gt | Bin::Ge | Bin::Eq | Bin::Ne => {
                        truth(format!("{a} {sym} {b}"))
                    }
                    Bin::And | Bin::Or => truth(format!("{a} != (real)0 {sym} {b} != (real)0")),
                    Bin::Pow => format!("pow({a}, {b})"),
                    Bin::Atan2 => format!("atan2({a}, {b})"),
                    Bin::Min => format!("fmin({a}, {b})"),
                    Bin::Max => format!("fmax({a}, {b})"),
                }
            }
            Node::If(cond, a, b) => format!("(({} != (real)0) ? {} : {})", c(cond), c(a), c(b)),
        }
    }
}
