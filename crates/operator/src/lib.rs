//! ferrofem-operator
