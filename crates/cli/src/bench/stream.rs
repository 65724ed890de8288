//! `ferrofem bench stream`: copy bandwidth of the selected backend.

use crate::backend::{select, Backend, BackendArg};
use crate::error::CliError;
use clap::Args;
use serde::Serialize;

/// Options of `ferrofem bench stream`.
#[derive(Args, Debug)]
pub struct StreamArgs {
    /// Where to measure.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Buffer size in bytes (each of source and destination).
    #[arg(long, default_value_t = 1 << 30)]
    bytes: usize,
    /// Timed repetitions (median reported).
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Print a JSON record instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Record {
    bench: &'static str,
    backend: String,
    bytes: usize,
    gbytes_per_s: f64,
}

/// Runs the copy-bandwidth benchmark.
pub fn run(a: StreamArgs) -> Result<(), CliError> {
    let backend = select(a.backend)?;
    let gbs = match &backend {
        Backend::Cpu { fallback_reason } => {
            if let Some(r) = fallback_reason {
                eprintln!("note: {r}; measuring the CPU");
            }
            ferrofem_operator::tensor::measure_copy_bandwidth(a.bytes, rayon::current_num_threads())
        }
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => {
            ferrofem_cuda::blas::copy_bandwidth(dev, a.bytes, a.reps)
                .map_err(|e| CliError::Usage(e.to_string()))?
                / 1e9
        }
    };
    let rec = Record {
        bench: "stream",
        backend: backend.name(),
        bytes: a.bytes,
        gbytes_per_s: gbs,
    };
    if a.json {
        println!("{}", serde_json::to_string(&rec)?);
    } else {
        println!(
            "copy bandwidth on {}: {:.1} GB/s (read + write, {} MiB buffers)",
            rec.backend,
            gbs,
            a.bytes >> 20
        );
    }
    Ok(())
}
