//! The names an expression may use: run-time variables and named constants.

use crate::error::{ExprError, ExprErrorKind};
use crate::parser::function_names;

/// Built-in constants, always known and never redeclared.
const BUILTIN: [(&str, f64); 2] = [("pi", std::f64::consts::PI), ("e", std::f64::consts::E)];

/// What a name stands for.
pub(crate) enum Name {
    Variable(usize),
    Constant(f64),
}

/// Builder of the names an expression may use: variables, whose slot is their index in
/// the order of declaration, and named constants, folded into the expression when parsed.
///
/// The built-in constants `pi` and `e` are always known; declaring them, a function's
/// name, an invalid identifier or a name twice is an error.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    variables: Vec<String>,
    constants: Vec<(String, f64)>,
}

impl Symbols {
    /// No names but the built-in constants.
    pub fn new() -> Symbols {
        Symbols::default()
    }

    fn check(&self, name: &str) -> Result<(), ExprError> {
        let bytes = name.as_bytes();
        let valid = !bytes.is_empty()
            && !bytes[0].is_ascii_digit()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
        let reason = if !valid {
            "not an identifier ([A-Za-z_][A-Za-z0-9_]*)"
        } else if BUILTIN.iter().any(|b| b.0 == name) {
            "reserved for a built-in constant"
        } else if function_names().contains(&name) {
            "reserved for a built-in function"
        } else if self.lookup(name).is_some() {
            "declared twice"
        } else {
            return Ok(());
        };
        let kind = ExprErrorKind::InvalidSymbol {
            name: name.into(),
            reason: reason.into(),
        };
        Err(ExprError::new(kind, 0, 0))
    }

    /// A run-time variable; its slot is the index in the order of declaration (0, 1, ...).
    pub fn variable(mut self, name: &str) -> Result<Symbols, ExprError> {
        self.check(name)?;
        self.variables.push(name.to_string());
        Ok(self)
    }

    /// A named constant, folded into the expression at parse time.
    pub fn constant(mut self, name: &str, value: f64) -> Result<Symbols, ExprError> {
        self.check(name)?;
        self.constants.push((name.to_string(), value));
        Ok(self)
    }

    /// The variables' names, indexed by slot.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }

    /// All known names (variables, constants, `pi` and `e`), sorted, for messages.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .variables
            .iter()
            .chain(self.constants.iter().map(|c| &c.0))
            .cloned()
            .collect();
        names.extend(BUILTIN.iter().map(|b| b.0.to_string()));
        names.sort();
        names
    }

    pub(crate) fn lookup(&self, name: &str) -> Option<Name> {
        if let Some(slot) = self.variables.iter().position(|v| v == name) {
            return Some(Name::Variable(slot));
        }
        let constants = self.constants.iter().map(|(n, v)| (n.as_str(), *v));
        constants
            .chain(BUILTIN)
            .find(|c| c.0 == name)
            .map(|c| Name::Constant(c.1))
    }
}
