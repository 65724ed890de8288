//! The syntax tree, a Pratt parser that folds constant sub-trees as it builds, and a
//! rendering back to the language with minimal parentheses.

use crate::error::{ExprError, ExprErrorKind, END};
use crate::lexer::{Lexer, Tok, Token};
use crate::symbols::{Name, Symbols};

/// Deepest syntax tree (an operand's depth is one more than its operation's), which bounds
/// the recursion of differentiation, emission and rendering.
pub(crate) const MAX_DEPTH: usize = 256;

/// Deepest recursion of the parser, where parentheses add depth the tree does not have.
const MAX_RECURSION: usize = 2 * MAX_DEPTH;

/// One-argument operations: unary operators and functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Un {
    Neg,
    Not,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Exp,
    Log,
    Log10,
    Sqrt,
    Abs,
    Floor,
    Ceil,
    Sign,
}

/// Two-argument operations: binary operators and functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bin {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
    Atan2,
    Min,
    Max,
}

/// A node of the syntax tree. `Num` holds every folded constant.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Num(f64),
    Var(usize),
    Un(Un, Box<Node>),
    Bin(Bin, Box<Node>, Box<Node>),
    If(Box<Node>, Box<Node>, Box<Node>),
}

#[derive(Clone, Copy)]
enum Func {
    Un(Un),
    Bin(Bin),
    If,
}

const FUNCTIONS: &[(&str, Func)] = &[
    ("sin", Func::Un(Un::Sin)),
    ("cos", Func::Un(Un::Cos)),
    ("tan", Func::Un(Un::Tan)),
    ("asin", Func::Un(Un::Asin)),
    ("acos", Func::Un(Un::Acos)),
    ("atan", Func::Un(Un::Atan)),
    ("atan2", Func::Bin(Bin::Atan2)),
    ("sinh", Func::Un(Un::Sinh)),
    ("cosh", Func::Un(Un::Cosh)),
    ("tanh", Func::Un(Un::Tanh)),
    ("exp", Func::Un(Un::Exp)),
    ("log", Func::Un(Un::Log)),
    ("log10", Func::Un(Un::Log10)),
    ("sqrt", Func::Un(Un::Sqrt)),
    ("abs", Func::Un(Un::Abs)),
    ("min", Func::Bin(Bin::Min)),
    ("max", Func::Bin(Bin::Max)),
    ("pow", Func::Bin(Bin::Pow)),
    ("floor", Func::Un(Un::Floor)),
    ("ceil", Func::Un(Un::Ceil)),
    ("sign", Func::Un(Un::Sign)),
    ("if", Func::If),
];

/// The names of all functions, in the order of the language's description.
pub(crate) fn function_names() -> Vec<&'static str> {
    FUNCTIONS.iter().map(|f| f.0).collect()
}

impl Un {
    /// The language's name of a function (`None` for the operators).
    pub fn name(self) -> Option<&'static str> {
        FUNCTIONS
            .iter()
            .find(|f| matches!(f.1, Func::Un(u) if u == self))
            .map(|f| f.0)
    }
}

impl Bin {
    /// The operator's symbol, or `None` for the functions written as calls.
    pub fn symbol(self) -> Option<&'static str> {
        use Bin::*;
        Some(match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Pow => "^",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            And => "&&",
            Or => "||",
            Atan2 | Min | Max => return None,
        })
    }

    /// The language's name of a function written as a call.
    pub fn name(self) -> &'static str {
        FUNCTIONS
            .iter()
            .find(|f| matches!(f.1, Func::Bin(b) if b == self))
            .map_or("?", |f| f.0)
    }

    /// Left and right binding power; right-associative `^` has the smaller right one.
    fn power(self) -> (u8, u8) {
        use Bin::*;
        match self {
            Or => (1, 2),
            And => (3, 4),
            Eq | Ne => (5, 6),
            Lt | Le | Gt | Ge => (7, 8),
            Add | Sub => (9, 10),
            Mul | Div => (11, 12),
            Pow => (16, 15),
            Atan2 | Min | Max => (u8::MAX, u8::MAX),
        }
    }
}

/// Binding power of the operand of a prefix `-`, `+` or `!`: above `*`, below `^`.
const PREFIX: u8 = 13;

fn infix(tok: Tok) -> Option<Bin> {
    Some(match tok {
        Tok::OrOr => Bin::Or,
        Tok::AndAnd => Bin::And,
        Tok::EqEq => Bin::Eq,
        Tok::Ne => Bin::Ne,
        Tok::Lt => Bin::Lt,
        Tok::Le => Bin::Le,
        Tok::Gt => Bin::Gt,
        Tok::Ge => Bin::Ge,
        Tok::Plus => Bin::Add,
        Tok::Minus => Bin::Sub,
        Tok::Star => Bin::Mul,
        Tok::Slash => Bin::Div,
        Tok::Caret => Bin::Pow,
        _ => return None,
    })
}

impl Node {
    /// A one-argument node, folded when its argument is a constant.
    pub fn un(op: Un, a: Node) -> Node {
        match a {
            Node::Num(x) => Node::Num(op.apply(x)),
            a => Node::Un(op, Box::new(a)),
        }
    }

    /// A two-argument node, folded when both arguments are constants.
    pub fn bin(op: Bin, a: Node, b: Node) -> Node {
        match (a, b) {
            (Node::Num(x), Node::Num(y)) => Node::Num(op.apply(x, y)),
            (a, b) => Node::Bin(op, Box::new(a), Box::new(b)),
        }
    }

    /// An `if` node, folded when all three arguments are constants.
    pub fn cond(c: Node, a: Node, b: Node) -> Node {
        match (c, a, b) {
            (Node::Num(c), Node::Num(a), Node::Num(b)) => Node::Num(if c != 0.0 { a } else { b }),
            (c, a, b) => Node::If(Box::new(c), Box::new(a), Box::new(b)),
        }
    }

    /// Calls `f` on every variable slot the tree reads.
    pub fn visit_vars(&self, f: &mut impl FnMut(usize)) {
        match self {
            Node::Num(_) => {}
            Node::Var(s) => f(*s),
            Node::Un(_, a) => a.visit_vars(f),
            Node::Bin(_, a, b) => {
                a.visit_vars(f);
                b.visit_vars(f);
            }
            Node::If(c, a, b) => {
                c.visit_vars(f);
                a.visit_vars(f);
                b.visit_vars(f);
            }
        }
    }

    /// Precedence level for rendering: 1 (`||`) to 6 (`*`), 7 unary, 8 `^`, 9 atoms.
    fn level(&self) -> u8 {
        match self {
            Node::Num(v) if *v < 0.0 || v.is_sign_negative() => 7,
            Node::Un(Un::Neg | Un::Not, _) => 7,
            Node::Bin(op, ..) if op.symbol().is_some() => op.power().0.div_ceil(2).min(8),
            _ => 9,
        }
    }

    /// Renders the tree in the language, with the variable names `vars`.
    pub fn render(&self, vars: &[String], out: &mut String) {
        let wrap = |n: &Node, parens: bool, out: &mut String| {
            out.push_str(if parens { "(" } else { "" });
            n.render(vars, out);
            out.push_str(if parens { ")" } else { "" });
        };
        match self {
            Node::Num(v) if v.is_nan() => out.push_str("(0/0)"),
            Node::Num(v) if v.is_infinite() => {
                out.push_str(if *v > 0.0 { "(1/0)" } else { "(-1/0)" })
            }
            Node::Num(v) => out.push_str(&format!("{v:?}")),
            Node::Var(s) => out.push_str(&vars[*s]),
            Node::Un(op @ (Un::Neg | Un::Not), a) => {
                out.push_str(if *op == Un::Neg { "-" } else { "!" });
                wrap(a, a.level() < 7, out);
            }
            Node::Un(op, a) => {
                out.push_str(op.name().unwrap_or("?"));
                wrap(a, true, out);
            }
            Node::Bin(op, a, b) => match op.symbol() {
                Some(sym) => {
                    let l = self.level();
                    let (pa, pb) = if *op == Bin::Pow {
                        (a.level() <= l, b.level() < l)
                    } else {
                        (a.level() < l, b.level() <= l)
                    };
                    wrap(a, pa, out);
                    out.push_str(&format!(" {sym} "));
                    wrap(b, pb, out);
                }
                None => {
                    out.push_str(op.name());
                    out.push('(');
                    a.render(vars, out);
                    out.push_str(", ");
                    b.render(vars, out);
                    out.push(')');
                }
            },
            Node::If(c, a, b) => {
                out.push_str("if(");
                for (i, n) in [c, a, b].into_iter().enumerate() {
                    out.push_str(if i > 0 { ", " } else { "" });
                    n.render(vars, out);
                }
                out.push(')');
            }
        }
    }
}

/// Parses `src` against `symbols` into a constant-folded tree.
pub(crate) fn parse(src: &str, symbols: &Symbols) -> Result<Node, ExprError> {
    let mut lex = Lexer::new(src);
    let peeked = lex.next_token()?;
    if peeked.tok == Tok::End {
        return Err(ExprError::new(ExprErrorKind::Empty, peeked.offset, 0));
    }
    let mut p = Parser {
        lex,
        peeked,
        symbols,
        recursion: 0,
    };
    let (node, _) = p.expr(0)?;
    match p.peeked.tok {
        Tok::End => Ok(node),
        _ => Err(p.unexpected("an operator or end of expression")),
    }
}

/// A parsed sub-tree and its depth.
type Parsed = (Node, usize);

struct Parser<'a> {
    lex: Lexer<'a>,
    peeked: Token,
    symbols: &'a Symbols,
    recursion: usize,
}

impl Parser<'_> {
    #[inline(never)]
    fn bump(&mut self) -> Result<Token, ExprError> {
        let next = self.lex.next_token()?;
        Ok(std::mem::replace(&mut self.peeked, next))
    }

    #[cold]
    #[inline(never)]
    fn unexpected(&self, expected: &str) -> ExprError {
        let t = self.peeked;
        let found = if t.tok == Tok::End {
            END
        } else {
            self.lex.text(&t)
        };
        let kind = ExprErrorKind::Syntax {
            expected: expected.into(),
            found: found.into(),
        };
        ExprError::new(kind, t.offset, t.len)
    }

    fn expect(&mut self, tok: Tok, expected: &str) -> Result<(), ExprError> {
        if self.peeked.tok != tok {
            return Err(self.unexpected(expected));
        }
        self.bump().map(|_| ())
    }

    #[cold]
    #[inline(never)]
    fn unknown(&self, name: &str, t: Token) -> ExprError {
        let kind = ExprErrorKind::UnknownName {
            name: name.into(),
            known: self.symbols.names(),
        };
        ExprError::new(kind, t.offset, t.len)
    }

    #[cold]
    #[inline(never)]
    fn too_deep(at: Token) -> ExprError {
        ExprError::new(
            ExprErrorKind::TooDeep { limit: MAX_DEPTH },
            at.offset,
            at.len,
        )
    }

    /// A new node whose deepest operand has depth `below`; `at` is its operator's token.
    fn grow(at: Token, node: Node, below: usize) -> Result<Parsed, ExprError> {
        let depth = if matches!(node, Node::Num(_)) {
            1
        } else {
            below + 1
        };
        if depth > MAX_DEPTH {
            return Err(Self::too_deep(at));
        }
        Ok((node, depth))
    }

    fn expr(&mut self, min_power: u8) -> Result<Parsed, ExprError> {
        self.recursion += 1;
        if self.recursion > MAX_RECURSION {
            return Err(Self::too_deep(self.peeked));
        }
        let mut lhs = self.prefix()?;
        while let Some(op) = infix(self.peeked.tok) {
            let (left, right) = op.power();
            if left < min_power {
                break;
            }
            let at = self.bump()?;
            let rhs = self.expr(right)?;
            lhs = Self::grow(at, Node::bin(op, lhs.0, rhs.0), lhs.1.max(rhs.1))?;
        }
        self.recursion -= 1;
        Ok(lhs)
    }

    fn prefix(&mut self) -> Result<Parsed, ExprError> {
        let t = self.peeked;
        match t.tok {
            Tok::Num(v) => {
                self.bump()?;
                Ok((Node::Num(v), 1))
            }
            Tok::Minus | Tok::Plus | Tok::Bang => {
                self.bump()?;
                let (a, below) = self.expr(PREFIX)?;
                match t.tok {
                    Tok::Minus => Self::grow(t, Node::un(Un::Neg, a), below),
                    Tok::Bang => Self::grow(t, Node::un(Un::Not, a), below),
                    _ => Ok((a, below)),
                }
            }
            Tok::LParen => {
                self.bump()?;
                let a = self.expr(0)?;
                self.expect(Tok::RParen, "`)`")?;
                Ok(a)
            }
            Tok::Ident => {
                self.bump()?;
                let name = self.lex.text(&t);
                if self.peeked.tok == Tok::LParen {
                    return self.call(name, t);
                }
                match self.symbols.lookup(name) {
                    Some(Name::Variable(slot)) => Ok((Node::Var(slot), 1)),
                    Some(Name::Constant(v)) => Ok((Node::Num(v), 1)),
                    None => Err(self.unknown(name, t)),
                }
            }
            _ => Err(self.unexpected("an expression")),
        }
    }

    #[inline(never)]
    fn call(&mut self, name: &str, t: Token) -> Result<Parsed, ExprError> {
        let Some(&(_, func)) = FUNCTIONS.iter().find(|f| f.0 == name) else {
            let kind = ExprErrorKind::UnknownFunction { name: name.into() };
            return Err(ExprError::new(kind, t.offset, t.len));
        };
        self.bump()?; // `(`
        let (mut args, mut below) = (Vec::new(), 0);
        if self.peeked.tok != Tok::RParen {
            loop {
                let (arg, depth) = self.expr(0)?;
                args.push(arg);
                below = below.max(depth);
                if self.peeked.tok != Tok::Comma {
                    break;
                }
                self.bump()?;
            }
        }
        self.expect(Tok::RParen, "`,` or `)`")?;
        let expected = match func {
            Func::Un(_) => 1,
            Func::Bin(_) => 2,
            Func::If => 3,
        };
        if args.len() != expected {
            let kind = ExprErrorKind::Arity {
                function: name.into(),
                expected,
                got: args.len(),
            };
            return Err(ExprError::new(kind, t.offset, t.len));
        }
        let mut args = args.into_iter();
        let mut arg = || args.next().unwrap_or(Node::Num(0.0));
        let node = match func {
            Func::Un(op) => Node::un(op, arg()),
            Func::Bin(op) => Node::bin(op, arg(), arg()),
            Func::If => Node::cond(arg(), arg(), arg()),
        };
        Self::grow(t, node, below)
    }
}
