//! What a model's solution yields besides itself: derived fields at the nodes
//! ([`derived_fields`]), region integrals ([`region_integrals`]), boundary integrals
//! (fluxes, tractions, reactions: [`boundary_integrals`]) and point probes ([`probe_values`], [`write_probes_csv`]).

mod derived;
mod integrals;
mod probes;

pub use derived::{derived_fields, DerivedField};
pub use integrals::{boundary_integrals, region_integrals, BoundaryIntegral, RegionIntegral};
pub use probes::{locate_probes, probe_values, write_probes_csv, LocatedProbe};
