//! What a model's solution yields besides itself: derived fields at the nodes
//! ([`derived_fields`]), region integrals ([`region_integrals`]), boundary integrals
//! (fluxes, tractions, reactions: [`boundary_integrals`]) and point probes ([`probe_values`], [`write_probes_csv`]).
//! The `_with` variants compute them on one rank's part and combine the ranks' shares
//! through a [`Reduction`].

mod derived;
mod integrals;
mod probes;
mod reduction;

pub use derived::{derived_fields, derived_fields_with, DerivedField};
pub use integrals::{
    boundary_integrals, boundary_integrals_with, region_integrals, region_integrals_with,
    BoundaryIntegral, RegionIntegral,
};
pub use probes::{
    locate_probes, locate_probes_with, probe_values, probe_values_with, write_probes_csv,
    LocatedProbe,
};
pub use reduction::{Reduction, WholeMesh};
