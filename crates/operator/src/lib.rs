//! Operators on the CPU: residual evaluation, Jacobian action and element matrices of
//! pointwise weak forms through the L→E→Q→E→L pipeline, sum-factorised tensor-product
//! operators (the CEED bake-off problems), error norms and boundary terms.
//!
//! Vector layouts follow [`ferrofem_space`]: L-vectors node-major with interleaved
//! components, E-vectors `[elem][comp][node]`.

mod boundary;
mod element_matrix;
mod facet;
mod form;
mod norms;
pub mod tensor;

pub use boundary::{
    add_boundary_values, lift_residual, lift_rhs, neumann_rhs, ConstrainedOperator,
};
pub use element_matrix::ElementMatrices;
pub use facet::{for_each_facet_point, FacetPoint};
pub use form::{
    Accumulation, AuxField, AuxLayout, FormError, FormOperator, FormOptions, Linearized,
    Quadrature, ResidualModel, ResidualShape, MAX_AUX, MAX_COMPONENTS,
};
pub use norms::{errors, Errors};
