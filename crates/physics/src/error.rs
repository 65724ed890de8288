//! Errors of physics construction (dimensions and parameters that users choose).

use std::fmt;

/// A physics or manufactured solution that cannot be built as asked.
#[derive(Clone, Debug, PartialEq)]
pub enum PhysicsError {
    /// The spatial dimension is not supported by this physics.
    Dimension {
        /// Which physics (its short name).
        physics: &'static str,
        /// The dimension asked for.
        dim: usize,
        /// The dimensions that are supported, in words.
        supported: &'static str,
    },
    /// A number of components that the physics cannot have (e.g. zero).
    Components {
        /// Which physics.
        physics: &'static str,
        /// The number asked for.
        ncomp: usize,
    },
    /// A material or model parameter outside its valid range.
    Parameter {
        /// Which physics.
        physics: &'static str,
        /// The parameter's name (`kappa`, `lambda`, …).
        name: &'static str,
        /// The value given.
        value: f64,
        /// What the parameter must satisfy.
        requirement: &'static str,
    },
    /// A coefficient of a configured region outside its valid range (or of the wrong
    /// kind), at a point.
    RegionParameter {
        /// The region's name.
        region: String,
        /// The parameter's name.
        name: &'static str,
        /// The value found (NaN when the problem is not a value).
        value: f64,
        /// Where (empty for a constant).
        at: Vec<f64>,
        /// What the parameter must satisfy.
        requirement: &'static str,
    },
    /// A forcing whose dimension or number of components differs from the physics'.
    ForcingMismatch {
        /// Which physics.
        physics: &'static str,
        /// `(dim, ncomp)` of the physics.
        physics_shape: (usize, usize),
        /// `(dim, ncomp)` of the forcing.
        forcing_shape: (usize, usize),
    },
}

impl fmt::Display for PhysicsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PhysicsError::Dimension {
                physics,
                dim,
                supported,
            } => write!(
                f,
                "{physics}: dimension {dim} is not supported (supported: {supported})"
            ),
            PhysicsError::Components { physics, ncomp } => {
                write!(
                    f,
                    "{physics}: {ncomp} components is not allowed (need at least 1)"
                )
            }
            PhysicsError::Parameter {
                physics,
                name,
                value,
                requirement,
            } => write!(
                f,
                "{physics}: parameter {name} = {value} is invalid ({requirement})"
            ),
            PhysicsError::RegionParameter {
                region,
                name,
                value,
                at,
                requirement,
            } => {
                write!(f, "region `{}`: {name}", region.escape_debug())?;
                if !value.is_nan() {
                    write!(f, " = {value}")?;
                }
                if !at.is_empty() {
                    let xs: Vec<String> = at.iter().map(|v| format!("{v}")).collect();
                    write!(f, " at ({})", xs.join(", "))?;
                }
                write!(f, " is invalid ({requirement})")
            }
            PhysicsError::ForcingMismatch {
                physics,
                physics_shape,
                forcing_shape,
            } => write!(
                f,
                "{physics}: the forcing has dimension {} with {} components, but the physics \
                 has dimension {} with {} components",
                forcing_shape.0, forcing_shape.1, physics_shape.0, physics_shape.1
            ),
        }
    }
}

impl std::error::Error for PhysicsError {}

/// Checks `dim ∈ {1, 2, 3}`.
pub(crate) fn check_dim(physics: &'static str, dim: usize) -> Result<(), PhysicsError> {
    if (1..=3).contains(&dim) {
        Ok(())
    } else {
        Err(PhysicsError::Dimension {
            physics,
            dim,
            supported: "1, 2, 3",
        })
    }
}

/// Checks that a parameter is finite and satisfies `ok`.
pub(crate) fn check_param(
    physics: &'static str,
    name: &'static str,
    value: f64,
    ok: bool,
    requirement: &'static str,
) -> Result<(), PhysicsError> {
    if value.is_finite() && ok {
        Ok(())
    } else {
        Err(PhysicsError::Parameter {
            physics,
            name,
            value,
            requirement,
        })
    }
}
