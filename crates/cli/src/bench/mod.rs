//! `ferrofem bench`: benchmarks that print their roofline fraction beside every figure and
//! can append JSON records.

mod assembly;
mod bp;
mod residual;
mod stream;

use crate::error::CliError;
use clap::{Args, Subcommand};

/// Options of `ferrofem bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    which: Which,
}

#[derive(Subcommand, Debug)]
enum Which {
    /// Device (or CPU) copy bandwidth: the roofline every other benchmark is measured against.
    Stream(stream::StreamArgs),
    /// CEED BP1: mass matrix (Gauss quadrature, q = p + 2).
    Bp1(Box<bp::BpArgs>),
    /// CEED BP3: diffusion with Gauss quadrature (q = p + 2).
    Bp3(Box<bp::BpArgs>),
    /// BP3.5 (CEED BP5): diffusion collocated at the GLL nodes.
    #[command(name = "bp3.5", alias = "bp5", alias = "bp35")]
    Bp35(Box<bp::BpArgs>),
    /// Residual evaluation of a pointwise form on simplices (Knepley, Rupp & Terrel 2016).
    Residual(residual::ResidualArgs),
    /// Global CSR assembly with each strategy of Cecka, Lew & Darve (2011).
    Assembly(assembly::AssemblyArgs),
}

/// Runs `ferrofem bench ...`.
pub fn run(a: BenchArgs) -> Result<(), CliError> {
    match a.which {
        Which::Stream(s) => stream::run(s),
        Which::Bp1(a) => bp::run(bp::BpName::Bp1, *a),
        Which::Bp3(a) => bp::run(bp::BpName::Bp3, *a),
        Which::Bp35(a) => bp::run(bp::BpName::Bp35, *a),
        Which::Residual(a) => residual::run(a),
        Which::Assembly(a) => assembly::run(a),
    }
}

/// Median of a list of seconds.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    if s.is_empty() {
        0.0
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        0.5 * (s[s.len() / 2 - 1] + s[s.len() / 2])
    }
}
