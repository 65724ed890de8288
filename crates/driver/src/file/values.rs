//! Numbers and expressions in a problem file: a value is a number or a string holding an
//! expression; a vector value is a list of them. Expression errors point at the column
//! inside the string.

use super::schema::Raw;
use super::ProblemFile;
use crate::pipeline_error::PipelineError;
use ferrofem_expr::{Expr, Symbols};
use ferrofem_physics::Coef;
use std::ops::Range;
use toml::Value;

/// The symbols of expressions in a `dim`-dimensional problem: `x, y[, z]`, then `extra`
/// variables, and the file's constants.
pub(crate) fn symbols(
    dim: usize,
    extra: &[&str],
    constants: &[(String, f64)],
) -> Result<Symbols, ferrofem_expr::ExprError> {
    let mut s = Symbols::new();
    for name in ["x", "y", "z"].iter().take(dim).chain(extra) {
        s = s.variable(name)?;
    }
    for (name, value) in constants {
        s = s.constant(name, *value)?;
    }
    Ok(s)
}

/// A short description of a TOML value's type, for messages.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "a list",
        Value::Table(_) => "a table",
    }
}

impl ProblemFile {
    /// A number or an expression (the value at `span`).
    pub(crate) fn coef_at(
        &self,
        value: &Value,
        span: &Range<usize>,
        symbols: &Symbols,
        what: &str,
    ) -> Result<Coef, PipelineError> {
        match value {
            Value::Integer(i) => Ok(Coef::Const(*i as f64)),
            Value::Float(f) if f.is_finite() => Ok(Coef::Const(*f)),
            Value::Float(f) => Err(self.error(span, format!("{what}: {f} is not finite"))),
            Value::String(s) => {
                let expr = Expr::parse(s, symbols).map_err(|e| {
                    let offset = self.offset_in_string(span, s, e.offset);
                    self.error_at(offset, format!("{what}: {e}"))
                })?;
                Ok(Coef::of(expr))
            }
            other => Err(self.error(
                span,
                format!(
                    "{what}: expected a number or an expression in quotes, found {}",
                    type_name(other)
                ),
            )),
        }
    }

    /// A scalar value ([`Self::coef_at`] on `raw`).
    pub(crate) fn coef(
        &self,
        raw: &Raw,
        symbols: &Symbols,
        what: &str,
    ) -> Result<Coef, PipelineError> {
        self.coef_at(raw.get_ref(), &raw.span(), symbols, what)
    }

    /// `n` values: a list of `n` numbers or expressions, or, for `n = 1`, a single one.
    pub(crate) fn coefs(
        &self,
        raw: &Raw,
        n: usize,
        symbols: &Symbols,
        what: &str,
    ) -> Result<Vec<Coef>, PipelineError> {
        match raw.get_ref() {
            Value::Array(items) => {
                if items.len() != n {
                    return Err(self.error(
                        &raw.span(),
                        format!(
                            "{what}: expected {n} value{} (one per component), found {}",
                            if n == 1 { "" } else { "s" },
                            items.len()
                        ),
                    ));
                }
                let spans = self.element_spans(&raw.span());
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let span = spans.get(i).cloned().unwrap_or_else(|| raw.span());
                        self.coef_at(v, &span, symbols, what)
                    })
                    .collect()
            }
            v if n == 1 => Ok(vec![self.coef_at(v, &raw.span(), symbols, what)?]),
            v => Err(self.error(
                &raw.span(),
                format!(
                    "{what}: expected a list of {n} values (one per component), found {}",
                    type_name(v)
                ),
            )),
        }
    }

    /// The byte offset in the file of byte `offset` of the string `content` written at
    /// `span` (its quotes included); the string's start when escapes make the text differ.
    fn offset_in_string(&self, span: &Range<usize>, content: &str, offset: usize) -> usize {
        let raw = self.text(span);
        let quote = if raw.starts_with("\"\"\"") || raw.starts_with("'''") {
            3
        } else {
            1
        };
        let inner = raw.get(quote..quote + content.len());
        if inner == Some(content) {
            span.start + quote + offset
        } else {
            span.start
        }
    }

    /// The byte ranges of the elements of the inline array written at `span`.
    pub(crate) fn element_spans(&self, span: &Range<usize>) -> Vec<Range<usize>> {
        let text = self.text(span).as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        // skip the opening bracket
        while i < text.len() && text[i] != b'[' {
            i += 1;
        }
        i += 1;
        loop {
            while i < text.len() && matches!(text[i], b' ' | b'\t' | b'\r' | b'\n' | b',') {
                i += 1;
            }
            if i < text.len() && text[i] == b'#' {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            if i >= text.len() || text[i] == b']' {
                break;
            }
            let start = i;
            i = skip_value(text, i);
            out.push(span.start + start..span.start + i);
        }
        out
    }
}

/// The index after the TOML value starting at `i` (a string, a nested array or table, or
/// a bare number or word).
fn skip_value(text: &[u8], mut i: usize) -> usize {
    match text[i] {
        q @ (b'"' | b'\'') => {
            let triple = text.get(i..i + 3) == Some(&[q, q, q][..]);
            if triple {
                i += 3;
                while i < text.len() && text.get(i..i + 3) != Some(&[q, q, q][..]) {
                    i += if q == b'"' && text[i] == b'\\' { 2 } else { 1 };
                }
                (i + 3).min(text.len())
            } else {
                i += 1;
                while i < text.len() && text[i] != q {
                    i += if q == b'"' && text[i] == b'\\' { 2 } else { 1 };
                }
                (i + 1).min(text.len())
            }
        }
        open @ (b'[' | b'{') => {
            let close = if open == b'[' { b']' } else { b'}' };
            let mut depth = 0usize;
            while i < text.len() {
                match text[i] {
                    b'"' | b'\'' => {
                        i = skip_value(text, i);
                        continue;
                    }
                    c if c == open => depth += 1,
                    c if c == close => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            i
        }
        _ => {
            while i < text.len() && !matches!(text[i], b',' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            i
        }
    }
}
