//! Symbolic differentiation of the tree, with algebraic simplification of the result.
//!
//! Unlike parsing, which folds only variable-free sub-trees, the derivative drops terms
//! multiplied by an exact zero (`0*a -> 0`): such a zero comes from a sub-tree that does
//! not depend on the variable, never from a NaN or infinite value.

use crate::parser::{Bin, Node, Un};

fn num(v: f64) -> Node {
    Node::Num(v)
}

fn is(n: &Node, v: f64) -> bool {
    matches!(n, Node::Num(x) if *x == v)
}

fn add(a: Node, b: Node) -> Node {
    match (a, b) {
        (a, b) if is(&a, 0.0) => b,
        (a, b) if is(&b, 0.0) => a,
        (a, Node::Un(Un::Neg, b)) => sub(a, *b),
        (a, b) => Node::bin(Bin::Add, a, b),
    }
}

fn sub(a: Node, b: Node) -> Node {
    match (a, b) {
        (a, b) if is(&b, 0.0) => a,
        (a, b) if is(&a, 0.0) => neg(b),
        (a, b) => Node::bin(Bin::Sub, a, b),
    }
}

fn mul(a: Node, b: Node) -> Node {
    match (a, b) {
        (a, b) if is(&a, 0.0) || is(&b, 0.0) => num(0.0),
        (Node::Num(u), Node::Num(v)) => num(u * v),
        (a, b) if is(&a, 1.0) => b,
        (a, b) if is(&b, 1.0) => a,
        (a, b) if is(&a, -1.0) => neg(b),
        (a, b) if is(&b, -1.0) => neg(a),
        (Node::Un(Un::Neg, a), b) => neg(mul(*a, b)),
        (a, Node::Un(Un::Neg, b)) => neg(mul(a, *b)),
        // Constants to the front, so that `2*(3*x)` can fold.
        (a, Node::Num(v)) => mul(num(v), a),
        (Node::Num(u), Node::Bin(Bin::Mul, b, c)) if matches!(*b, Node::Num(_)) => {
            let Node::Num(v) = *b else { unreachable!() };
            mul(num(u * v), *c)
        }
        (a, b) => Node::bin(Bin::Mul, a, b),
    }
}

fn div(a: Node, b: Node) -> Node {
    match (a, b) {
        (a, _) if is(&a, 0.0) => num(0.0),
        (a, b) if is(&b, 1.0) => a,
        (Node::Un(Un::Neg, a), b) => neg(div(*a, b)),
        (a, b) => Node::bin(Bin::Div, a, b),
    }
}

fn neg(a: Node) -> Node {
    match a {
        Node::Un(Un::Neg, a) => *a,
        a => Node::un(Un::Neg, a),
    }
}

fn pow(a: Node, b: Node) -> Node {
    match (a, b) {
        (a, b) if is(&b, 1.0) => a,
        (_, b) if is(&b, 0.0) => num(1.0),
        (a, b) => Node::bin(Bin::Pow, a, b),
    }
}

fn un(op: Un, a: &Node) -> Node {
    Node::un(op, a.clone())
}

fn sq(a: &Node) -> Node {
    pow(a.clone(), num(2.0))
}

fn cond(c: Node, a: Node, b: Node) -> Node {
    if a == b {
        a
    } else {
        Node::cond(c, a, b)
    }
}

impl Node {
    /// Whether the tree reads variable `slot`.
    fn depends_on(&self, slot: usize) -> bool {
        let mut found = false;
        self.visit_vars(&mut |s| found |= s == slot);
        found
    }

    /// The simplified derivative with respect to variable `slot`.
    pub fn derivative(&self, slot: usize) -> Node {
        if !self.depends_on(slot) {
            return num(0.0);
        }
        match self {
            Node::Num(_) => num(0.0),
            Node::Var(s) => num(if *s == slot { 1.0 } else { 0.0 }),
            Node::Un(op, a) => {
                let da = a.derivative(slot);
                let one_minus_sq = || sub(num(1.0), sq(a));
                let outer = match op {
                    Un::Neg => return neg(da),
                    Un::Not | Un::Floor | Un::Ceil | Un::Sign => return num(0.0),
                    Un::Sin => un(Un::Cos, a),
                    Un::Cos => neg(un(Un::Sin, a)),
                    Un::Tan => return div(da, sq(&un(Un::Cos, a))),
                    Un::Asin => return div(da, un(Un::Sqrt, &one_minus_sq())),
                    Un::Acos => return neg(div(da, un(Un::Sqrt, &one_minus_sq()))),
                    Un::Atan => return div(da, add(num(1.0), sq(a))),
                    Un::Sinh => un(Un::Cosh, a),
                    Un::Cosh => un(Un::Sinh, a),
                    Un::Tanh => sub(num(1.0), sq(&un(Un::Tanh, a))),
                    Un::Exp => un(Un::Exp, a),
                    Un::Log => return div(da, (**a).clone()),
                    Un::Log10 => return div(da, mul(num(std::f64::consts::LN_10), (**a).clone())),
                    Un::Sqrt => return div(da, mul(num(2.0), un(Un::Sqrt, a))),
                    Un::Abs => un(Un::Sign, a),
                };
                mul(outer, da)
            }
            Node::Bin(op, a, b) => {
                let (da, db) = (a.derivative(slot), b.derivative(slot));
                let (a, b) = ((**a).clone(), (**b).clone());
                match op {
                    Bin::Add => add(da, db),
                    Bin::Sub => sub(da, db),
                    Bin::Mul => add(mul(da, b.clone()), mul(a, db)),
                    Bin::Div => sub(div(da, b.clone()), div(mul(a, db), sq(&b))),
                    Bin::Pow => match b {
                        Node::Num(k) => mul(mul(num(k), pow(a, num(k - 1.0))), da),
                        b => {
                            let inner =
                                add(mul(db, un(Un::Log, &a)), div(mul(b.clone(), da), a.clone()));
                            mul(pow(a, b), inner)
                        }
                    },
                    Bin::Atan2 => div(
                        sub(mul(b.clone(), da), mul(a.clone(), db)),
                        add(sq(&b), sq(&a)),
                    ),
                    Bin::Min => cond(Node::bin(Bin::Le, a, b), da, db),
                    Bin::Max => cond(Node::bin(Bin::Ge, a, b), da, db),
                    Bin::Lt
                    | Bin::Le
                    | Bin::Gt
                    | Bin::Ge
                    | Bin::Eq
                    | Bin::Ne
                    | Bin::And
                    | Bin::Or => num(0.0),
                }
            }
            Node::If(c, a, b) => cond((**c).clone(), a.derivative(slot), b.derivative(slot)),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Expr, Symbols};

    fn d(src: &str) -> String {
        let s = Symbols::new().variable("x").unwrap().variable("y").unwrap();
        Expr::parse(src, &s)
            .unwrap()
            .derivative(0)
            .source()
            .to_string()
    }

    #[test]
    fn simplified_forms() {
        assert_eq!(d("3*x^2 + y"), "6.0 * x");
        assert_eq!(d("x*y"), "y");
        assert_eq!(d("sin(2*x)"), "2.0 * cos(2.0 * x)");
        assert_eq!(d("y - x"), "-1.0");
        assert_eq!(d("floor(x) + (x < y)"), "0.0");
        assert_eq!(d("exp(x*y)"), "exp(x * y) * y");
        assert_eq!(d("if(x < 0, y, 2*x)"), "if(x < 0.0, 0.0, 2.0)");
        assert_eq!(d("x^y"), "x ^ y * (y / x)");
    }
}
