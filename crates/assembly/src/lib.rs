//! ferrofem-assembly
