//! Compilation of the tree to a flat postfix program, and its evaluation on a fixed stack.
//!
//! Children are emitted deepest-first (Sethi–Ullman order), so the stack a program needs
//! grows with the logarithm of its size rather than with its nesting: a Horner polynomial
//! of any degree needs two slots.

use crate::error::{ExprError, ExprErrorKind};
use crate::parser::{Bin, Node, Un};
use ferrofem_base::Real;

/// Slots of the evaluation stack; deeper programs are refused at compile time.
pub(crate) const STACK: usize = 32;

fn truth<T: Real>(b: bool) -> T {
    if b {
        T::one()
    } else {
        T::zero()
    }
}

impl Un {
    /// Applies the operation in precision `T`.
    #[inline]
    pub fn apply<T: Real>(self, a: T) -> T {
        use Un::*;
        match self {
            Neg => -a,
            Not => truth(a == T::zero()),
            Sin => a.sin(),
            Cos => a.cos(),
            Tan => a.tan(),
            Asin => a.asin(),
            Acos => a.acos(),
            Atan => a.atan(),
            Sinh => a.sinh(),
            Cosh => a.cosh(),
            Tanh => a.tanh(),
            Exp => a.exp(),
            Log => a.ln(),
            Log10 => a.log10(),
            Sqrt => a.sqrt(),
            Abs => a.abs(),
            Floor => a.floor(),
            Ceil => a.ceil(),
            Sign => truth::<T>(a > T::zero()) - truth::<T>(a < T::zero()),
        }
    }
}

impl Bin {
    /// Applies the operation in precision `T`.
    #[inline]
    pub fn apply<T: Real>(self, a: T, b: T) -> T {
        use Bin::*;
        let zero = T::zero();
        match self {
            Add => a + b,
            Sub => a - b,
            Mul => a * b,
            Div => a / b,
            Pow => a.powf(b),
            Lt => truth(a < b),
            Le => truth(a <= b),
            Gt => truth(a > b),
            Ge => truth(a >= b),
            Eq => truth(a == b),
            Ne => truth(a != b),
            And => truth(a != zero && b != zero),
            Or => truth(a != zero || b != zero),
            Atan2 => a.atan2(b),
            Min => a.min(b),
            Max => a.max(b),
        }
    }
}

/// One postfix instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Instr {
    Push(f64),
    Load(u32),
    Un(Un),
    /// Integer power of the top of the stack.
    Powi(i32),
    /// Left operand below the right one.
    Bin(Bin),
    /// Right operand below the left one (the right one was deeper, so it came first).
    BinRev(Bin),
    /// The three operands' positions, from the lowest of them: condition, then, else.
    If([u8; 3]),
}

/// A compiled expression and the stack depth it needs.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Program {
    code: Vec<Instr>,
    depth: usize,
}

/// Code of a sub-tree and the stack slots it needs.
fn gen(node: &Node) -> (Vec<Instr>, usize) {
    match node {
        Node::Num(v) => (vec![Instr::Push(*v)], 1),
        Node::Var(s) => (vec![Instr::Load(*s as u32)], 1),
        Node::Bin(Bin::Pow, a, b) if matches!(**b, Node::Num(k) if k.fract() == 0.0 && k.abs() <= 16.0) =>
        {
            let (mut code, need) = gen(a);
            let Node::Num(k) = **b else { unreachable!() };
            code.push(Instr::Powi(k as i32));
            (code, need)
        }
        Node::Un(op, a) => {
            let (mut code, need) = gen(a);
            code.push(Instr::Un(*op));
            (code, need)
        }
        Node::Bin(op, a, b) => {
            let ((mut ca, na), (cb, nb)) = (gen(a), gen(b));
            if na >= nb {
                ca.extend(cb);
                ca.push(Instr::Bin(*op));
                (ca, na.max(nb + 1))
            } else {
                let mut code = cb;
                code.extend(ca);
                code.push(Instr::BinRev(*op));
                (code, nb.max(na + 1))
            }
        }
        Node::If(c, a, b) => {
            let parts = [gen(c), gen(a), gen(b)];
            let mut order = [0, 1, 2];
            order.sort_by_key(|&i| std::cmp::Reverse(parts[i].1));
            let (mut code, mut need, mut pos) = (Vec::new(), 0, [0u8; 3]);
            for (k, &i) in order.iter().enumerate() {
                code.extend_from_slice(&parts[i].0);
                need = need.max(parts[i].1 + k);
                pos[i] = k as u8;
            }
            code.push(Instr::If(pos));
            (code, need)
        }
    }
}

impl Program {
    /// Compiles a tree, refusing one that needs more than `limit` stack slots.
    pub fn compile(node: &Node, limit: usize) -> Result<Program, ExprError> {
        let (code, depth) = gen(node);
        if depth > limit {
            return Err(ExprError::new(ExprErrorKind::TooDeep { limit }, 0, 0));
        }
        Ok(Program { code, depth })
    }

    /// Runs the program with `vars[slot]`; allocates nothing.
    #[inline]
    pub fn run<T: Real>(&self, vars: &[T]) -> T {
        debug_assert!(self.depth <= STACK);
        let mut st = [T::zero(); STACK];
        let mut sp = 0;
        for ins in &self.code {
            match *ins {
                Instr::Push(v) => {
                    st[sp] = T::of(v);
                    sp += 1;
                }
                Instr::Load(s) => {
                    st[sp] = vars[s as usize];
                    sp += 1;
                }
                Instr::Un(op) => st[sp - 1] = op.apply(st[sp - 1]),
                Instr::Powi(k) => st[sp - 1] = st[sp - 1].powi(k),
                Instr::Bin(op) => {
                    sp -= 1;
                    st[sp - 1] = op.apply(st[sp - 1], st[sp]);
                }
                Instr::BinRev(op) => {
                    sp -= 1;
                    st[sp - 1] = op.apply(st[sp], st[sp - 1]);
                }
                Instr::If([c, a, b]) => {
                    sp -= 2;
                    let base = sp - 1;
                    let cond = st[base + c as usize] != T::zero();
                    st[base] = st[base + if cond { a } else { b } as usize];
                }
            }
        }
        st[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Expr, Symbols};

    fn program(src: &str) -> Program {
        let s = Symbols::new().variable("x").unwrap().variable("y").unwrap();
        Expr::parse(src, &s).unwrap().program
    }

    #[test]
    fn deepest_child_goes_first() {
        // A Horner polynomial of degree 40 would need 41 slots left to right.
        let mut src = String::from("1");
        for k in 0..40 {
            src = format!("{k} + x*({src})");
        }
        assert_eq!(program(&src).depth, 2);
        assert!(matches!(
            program("x - sin(y)*2").code.last(),
            Some(Instr::BinRev(Bin::Sub))
        ));
        let p = program("if(x, y, x + y*(x - y))");
        assert_eq!((p.code.last(), p.depth), (Some(&Instr::If([1, 2, 0])), 3));
        assert_eq!(p.run(&[0.0, 2.0]), -4.0);
        assert_eq!(p.run(&[1.0, 2.0]), 2.0);
    }

    #[test]
    fn too_deep_is_refused() {
        // A perfectly balanced tree of 2^k leaves needs k + 1 slots.
        let mut node = Node::Var(0);
        for _ in 0..3 {
            node = Node::Bin(Bin::Add, Box::new(node.clone()), Box::new(node));
        }
        assert_eq!(Program::compile(&node, 4).unwrap().depth, 4);
        let err = Program::compile(&node, 3).unwrap_err();
        assert_eq!(err.kind, ExprErrorKind::TooDeep { limit: 3 });
    }
}
