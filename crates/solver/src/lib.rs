//! ferrofem-solver
