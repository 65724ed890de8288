//! The `ferrofem` command line: mesh summaries, PDE solves, matrix export and benchmarks.

mod backend;
mod bench;
mod error;
mod info_cmd;
mod mesh_cmd;
mod mesh_source;

use clap::{Parser, Subcommand};
use error::CliError;

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
}

fn run(cli: Cli) -> Result<(), CliError> {
    match cli.command {
        Command::Mesh(a) => mesh_cmd::run(a),
        Command::Info(a) => info_cmd::run(a),
        Command::Bench(a) => bench::run(a),
    }
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
