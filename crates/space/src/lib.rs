//! Continuous Lagrange function spaces on meshes: global degree-of-freedom numbering for any
//! supported order (shared edge and face dofs numbered consistently whatever the local
//! orientation of the cells), vector-valued fields, the element restriction (gather of an
//! L-vector into an E-vector and its transpose, the scatter-add), dof coordinates and
//! boundary dofs by tag or by predicate, and point evaluation of fields (probes:
//! [`H1Space::eval_at`], [`H1Space::eval_grad_at`]).
//!
//! Vector layouts, used throughout ferrofem:
//! - **L-vector** (global): node-major, components interleaved, `l[node * ncomp + c]`.
//! - **E-vector** (per element): `e[(elem * ncomp + c) * nodes_per_elem + i]`, i.e. each
//!   component of an element is one contiguous tensor in the element's node order.

mod error;
mod numbering;
mod probe;
mod restriction;
mod shared_sum;
mod space;

pub use error::SpaceError;
pub use restriction::{ElemRestriction, TransposeMap};
pub use shared_sum::{SharedSumPlan, OWN_VALUE};
pub use space::H1Space;
