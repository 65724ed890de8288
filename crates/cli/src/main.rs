//! The `ferrofem` command line: mesh summaries, PDE solves, wave propagation, matrix export
//! and benchmarks.
//! It parses arguments and prints; problem set-up and the solve pipelines are in
//! `ferrofem-driver`.

mod assemble_cmd;
#[cfg(feature = "cuda")]
mod autotune;
mod bench;
mod error;
mod huge_pages;
mod info_cmd;
mod mesh_cmd;
mod mesh_source;
mod peak_memory;
mod problem_args;
mod ranks;
mod solve_cmd;
mod wave_cmd;

use clap::{Parser, Subcommand};
use error::CliError;

#[global_allocator]
static ALLOCATOR: huge_pages::HugePageAlloc = huge_pages::HugePageAlloc;

/// ferrofem: finite elements at the memory-bandwidth limit.
#[derive(Parser, Debug)]
#[command(name = "ferrofem", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Read or generate a mesh and print a summary (counts, bounding box, quality, tags, colours).
    Mesh(mesh_cmd::MeshArgs),
    /// List the CPU and GPU devices with their measured copy bandwidth.
    Info(info_cmd::InfoArgs),
    /// Benchmarks (each prints its roofline fraction).
    Bench(bench::BenchArgs),
    /// Solve a manufactured problem (Poisson, variable coefficient, elasticity, nonlinear)
    /// and report its error, timing and VTU output.
    Solve(solve_cmd::SolveArgs),
    /// Assemble a problem's matrix and right-hand side and export them (Matrix Market, CSV).
    Assemble(assemble_cmd::AssembleArgs),
    /// Explicit spectral-element wave propagation (acoustic or elastic): seismograms,
    /// snapshots and plots, from a problem file or flags.
    Wave(wave_cmd::WaveArgs),
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Mesh(a) => mesh_cmd::run(a),
        Command::Info(a) => info_cmd::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Solve(a) => solve_cmd::run(a),
        Command::Assemble(a) => assemble_cmd::run(a),
        Command::Wave(a) => wave_cmd::run(a),
    }
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
