//! Errors of parsing and of the [`Symbols`](crate::Symbols) builder, located in the source.

/// One error, located in the source text.
///
/// Its `Display` is the message of its [`kind`](ExprError::kind) only; callers prefix the
/// location (`file:line:col`), using [`ExprError::column`] for the column.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{kind}")]
pub struct ExprError {
    /// What went wrong.
    pub kind: ExprErrorKind,
    /// Byte offset of the offending token in the source.
    pub offset: usize,
    /// Length of the offending token in bytes: at least 1, except 0 at the end of input.
    pub len: usize,
}

/// What went wrong in an [`ExprError`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ExprErrorKind {
    /// A name that is neither a variable, a constant nor a built-in constant.
    #[error("unknown name `{name}` (known: {})", known.join(", "))]
    UnknownName {
        /// The name as written.
        name: String,
        /// All names the expression may use, sorted.
        known: Vec<String>,
    },
    /// A call of a function the language does not have.
    #[error("unknown function `{name}` (available: {})", crate::parser::function_names().join(", "))]
    UnknownFunction {
        /// The name as written.
        name: String,
    },
    /// A call with the wrong number of arguments.
    #[error("function `{function}` takes {expected} argument{}, got {got}", if *expected == 1 { "" } else { "s" })]
    Arity {
        /// The function's name.
        function: String,
        /// How many arguments it takes.
        expected: usize,
        /// How many it was given.
        got: usize,
    },
    /// A token where another was expected.
    #[error("expected {expected}, found {}", quote_found(found))]
    Syntax {
        /// What the parser expected, in words.
        expected: String,
        /// The token's text, or `end of expression`.
        found: String,
    },
    /// A malformed or non-finite number literal.
    #[error("invalid number `{text}`")]
    InvalidNumber {
        /// The literal as written.
        text: String,
    },
    /// An empty (or all-whitespace) expression.
    #[error("empty expression")]
    Empty,
    /// An expression nested deeper than the parser or the evaluator's stack allow.
    #[error("expression nested too deeply (limit {limit})")]
    TooDeep {
        /// The limit that was exceeded.
        limit: usize,
    },
    /// A name refused by the [`Symbols`](crate::Symbols) builder (offset 0, length 0).
    #[error("invalid symbol `{name}`: {reason}")]
    InvalidSymbol {
        /// The name that was declared.
        name: String,
        /// Why it was refused.
        reason: String,
    },
}

/// The `found` text of a syntax error that stands for the end of input.
pub(crate) const END: &str = "end of expression";

fn quote_found(found: &str) -> String {
    if found == END {
        found.to_string()
    } else {
        format!("`{found}`")
    }
}

impl ExprError {
    pub(crate) fn new(kind: ExprErrorKind, offset: usize, len: usize) -> ExprError {
        ExprError { kind, offset, len }
    }

    /// The 1-based column, counted in characters from the start of the source or from its
    /// last line break before the error, at which the error's token starts.
    pub fn column(&self, source: &str) -> usize {
        let mut end = self.offset.min(source.len());
        while !source.is_char_boundary(end) {
            end -= 1;
        }
        let before = &source[..end];
        let line = before.rfind('\n').map_or(before, |i| &before[i + 1..]);
        line.chars().count() + 1
    }
}
