//! `ferrofem bench stream`: copy bandwidth of the selected backend.

use crate::error::CliError;
use crate::problem_args::ranges;
use clap::Args;
use ferrofem_driver::{select, Backend, BackendArg};
use serde::Serialize;

/// Options of `ferrofem bench stream`.
#[derive(Args, Debug)]
pub struct StreamArgs {
    /// Where to measure.
    #[arg(long, value_enum, default_value_t = BackendArg::Auto)]
    backend: BackendArg,
    /// Buffer size in bytes (each of source and destination), 1 MiB to 1 EiB: e.g.
    /// 1073741824, 1e9 or 512MiB.
    #[arg(long, default_value_t = 1 << 30, value_parser = ranges::bytes)]
    bytes: usize,
    /// Timed repetitions on the GPU (median reported), 1 to 1e6; the CPU takes the median
    /// of 9 copies.
    #[arg(long, default_value_t = 20, value_parser = ranges::usize_in(1, ranges::MAX_REPS))]
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

/// Refuses host buffers of `host_copies` times `bytes` that exceed the available memory.
pub fn check_host_buffers(bytes: usize, host_copies: u64) -> Result<(), CliError> {
    ferrofem_base::check_fits(
        &format!(
            "{host_copies} host buffers of {}",
            ferrofem_base::memory::human_bytes(bytes as u64)
        ),
        (bytes as u64).saturating_mul(host_copies),
    )
    .map_err(|e| e.with_remedy("give a smaller --bytes").into())
}

/// Refuses the two device buffers of a GPU copy of `bytes` when they exceed the device's
/// free memory (and the host's copies of the source and of the check when they exceed the
/// host's).
#[cfg(feature = "cuda")]
pub fn check_device_buffers(dev: &ferrofem_cuda::GpuDevice, bytes: usize) -> Result<(), CliError> {
    // the source is made on the host and read back for the check
    check_host_buffers(bytes, 2)?;
    let free = dev
        .mem_info()
        .map_err(|e| CliError::Usage(e.to_string()))?
        .0 as u64;
    ferrofem_base::memory::fits(
        &format!(
            "2 buffers of {} on {}",
            ferrofem_base::memory::human_bytes(bytes as u64),
            dev.name()
        ),
        (bytes as u64).saturating_mul(2),
        Some(free),
    )
    .map_err(|e| e.with_remedy("give a smaller --bytes").into())
}

/// Runs the copy-bandwidth benchmark.
pub fn run(a: StreamArgs) -> Result<(), CliError> {
    let backend = select(a.backend)?;
    let gbs = match &backend {
        Backend::Cpu { fallback_reason } => {
            if let Some(r) = fallback_reason {
                eprintln!("note: {r}; measuring the CPU");
            }
            check_host_buffers(a.bytes, 2)?;
            ferrofem_operator::tensor::measure_copy_bandwidth(a.bytes, rayon::current_num_threads())
        }
        #[cfg(feature = "cuda")]
        Backend::Cuda(dev) => {
            check_device_buffers(dev, a.bytes)?;
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
