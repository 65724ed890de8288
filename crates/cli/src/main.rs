//! The `ferrofem` command line.

fn main() {}
