//! Finite elements: quadrature rules, Lagrange bases on simplices and tensor-product cells,
//! their tabulation at points, and the 1-D matrices that sum factorisation uses.
//!
//! Everything here is computed on the host in `f64` once; operators and GPU kernels receive
//! the tabulations as data or compile-time constants and never re-derive a basis.

mod element;
mod error;
mod lagrange1d;
mod quadrature;
mod simplex;

pub use element::{LagrangeElement, NodeEntity, Tabulation};
pub use error::FeError;
pub use ferrofem_base::CellType;
pub use lagrange1d::Lagrange1D;
pub use quadrature::{
    gauss_jacobi, gauss_legendre, gauss_lobatto_legendre, QuadratureRule, Rule1D,
};
