//! Splits the source into tokens, each with its byte offset and length.

use crate::error::{ExprError, ExprErrorKind};

/// The kind of a token; names and numbers keep their text in the source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Tok {
    Num(f64),
    Ident,
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Star,
    Slash,
    Caret,
    Bang,
    Lt,
    Le,
    Gt,
    Ge,
    EqEq,
    Ne,
    AndAnd,
    OrOr,
    End,
}

/// A token and where it stands in the source.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub offset: usize,
    pub len: usize,
}

/// An on-demand tokenizer, so that the first error in reading order is the one reported.
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Lexer<'a> {
        Lexer { src, pos: 0 }
    }

    /// The source text of a token.
    pub fn text(&self, t: &Token) -> &'a str {
        &self.src[t.offset..t.offset + t.len]
    }

    fn byte(&self, i: usize) -> u8 {
        self.src.as_bytes().get(i).copied().unwrap_or(0)
    }

    /// Scans a number starting at `start`: digits, optional fraction, optional exponent.
    fn number(&self, start: usize) -> Result<Token, ExprError> {
        let mut i = start;
        let digits = |mut i: usize| {
            while self.byte(i).is_ascii_digit() {
                i += 1;
            }
            i
        };
        let int_end = digits(i);
        let mut ok = int_end > start;
        i = int_end;
        if self.byte(i) == b'.' {
            let frac_end = digits(i + 1);
            ok |= frac_end > i + 1;
            i = frac_end;
        }
        if ok && matches!(self.byte(i), b'e' | b'E') {
            let mut j = i + 1;
            if matches!(self.byte(j), b'+' | b'-') {
                j += 1;
            }
            let exp_end = digits(j);
            ok = exp_end > j;
            i = exp_end.max(j);
        }
        // A number glued to letters, digits or dots ("2x", "1.2.3") is one bad literal.
        if is_ident_char(self.byte(i)) || self.byte(i) == b'.' {
            ok = false;
            while is_ident_char(self.byte(i)) || self.byte(i) == b'.' {
                i += 1;
            }
        }
        let text = &self.src[start..i];
        match text.parse::<f64>() {
            Ok(v) if ok && v.is_finite() => Ok(Token {
                tok: Tok::Num(v),
                offset: start,
                len: i - start,
            }),
            _ => Err(ExprError::new(
                ExprErrorKind::InvalidNumber {
                    text: text.to_string(),
                },
                start,
                i - start,
            )),
        }
    }

    /// The next token, or the error of a character that starts none.
    pub fn next_token(&mut self) -> Result<Token, ExprError> {
        while self.src[self.pos..].starts_with(char::is_whitespace) {
            self.pos += self.src[self.pos..]
                .chars()
                .next()
                .map_or(1, char::len_utf8);
        }
        let start = self.pos;
        let (b, next) = (self.byte(start), self.byte(start + 1));
        let (tok, len) = match b {
            0 if start >= self.src.len() => (Tok::End, 0),
            b'0'..=b'9' | b'.' => {
                let t = self.number(start)?;
                self.pos = start + t.len;
                return Ok(t);
            }
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let mut i = start;
                while is_ident_char(self.byte(i)) {
                    i += 1;
                }
                (Tok::Ident, i - start)
            }
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'^' => (Tok::Caret, 1),
            b'<' if next == b'=' => (Tok::Le, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if next == b'=' => (Tok::Ge, 2),
            b'>' => (Tok::Gt, 1),
            b'=' if next == b'=' => (Tok::EqEq, 2),
            b'!' if next == b'=' => (Tok::Ne, 2),
            b'!' => (Tok::Bang, 1),
            b'&' if next == b'&' => (Tok::AndAnd, 2),
            b'|' if next == b'|' => (Tok::OrOr, 2),
            _ => {
                let c = self.src[start..].chars().next().unwrap_or('\0');
                let expected = match c {
                    '=' => "`==`",
                    '&' => "`&&`",
                    '|' => "`||`",
                    _ => "a number, name, operator or parenthesis",
                };
                let kind = ExprErrorKind::Syntax {
                    expected: expected.into(),
                    found: c.to_string(),
                };
                return Err(ExprError::new(kind, start, c.len_utf8()));
            }
        };
        self.pos = start + len;
        Ok(Token {
            tok,
            offset: start,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let t = lx.next_token().unwrap();
            out.push(t.tok);
            if t.tok == Tok::End {
                return out;
            }
        }
    }

    #[test]
    fn numbers_and_operators() {
        use Tok::*;
        assert_eq!(
            toks("1 2.5 .5 1e-3 3.0E+6 7."),
            [
                Num(1.0),
                Num(2.5),
                Num(0.5),
                Num(1e-3),
                Num(3e6),
                Num(7.0),
                End
            ]
        );
        assert_eq!(
            toks("a<=b>=c!=d==e&&f||!g<h>i"),
            [
                Ident, Le, Ident, Ge, Ident, Ne, Ident, EqEq, Ident, AndAnd, Ident, OrOr, Bang,
                Ident, Lt, Ident, Gt, Ident, End
            ]
        );
        for bad in ["1e", "1e+", "2x", "1.2.3", ".", "1e999"] {
            let e = Lexer::new(bad).next_token().unwrap_err();
            assert_eq!((e.offset, e.len), (0, bad.len()), "{bad}");
            assert!(matches!(e.kind, ExprErrorKind::InvalidNumber { .. }));
        }
    }
}
