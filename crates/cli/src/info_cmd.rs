//! `ferrofem info`: the machine, its devices and their measured copy bandwidth.

use crate::error::CliError;
use crate::problem_args::ranges;
use clap::Args;
use serde::Serialize;

/// Options of `ferrofem info`.
#[derive(Args, Debug)]
pub struct InfoArgs {
    /// Print as JSON.
    #[arg(long)]
    json: bool,
    /// Bytes copied per bandwidth measurement (the CPU's at most 512 MiB), 1 MiB to 1 EiB:
    /// e.g. 1073741824, 1e9 or 512MiB.
    #[arg(long, default_value_t = 1 << 30, value_parser = ranges::bytes)]
    bytes: usize,
}

#[derive(Serialize, Default)]
struct GpuInfo {
    ordinal: usize,
    name: String,
    compute_capability: String,
    multiprocessors: usize,
    memory_gib: f64,
    l2_mib: f64,
    /// The L2 a context may set aside for persisting accesses.
    l2_persisting_mib: f64,
    driver_version: i32,
    copy_gbytes_per_s: f64,
}

#[derive(Serialize, Default)]
struct Info {
    version: String,
    cpu_threads: usize,
    cpu_copy_gbytes_per_s: f64,
    cuda: Option<String>,
    nvrtc: Option<String>,
    kernel_cache: Option<String>,
    gpus: Vec<GpuInfo>,
}

/// Runs `ferrofem info`.
pub fn run(a: InfoArgs) -> Result<(), CliError> {
    let cpu_bytes = a.bytes.min(1 << 29);
    crate::bench::check_host_buffers(cpu_bytes, 2)?;
    let mut info = Info {
        version: env!("CARGO_PKG_VERSION").into(),
        cpu_threads: rayon::current_num_threads(),
        cpu_copy_gbytes_per_s: ferrofem_operator::tensor::measure_copy_bandwidth(
            cpu_bytes,
            rayon::current_num_threads(),
        ),
        ..Default::default()
    };
    gpu_info(&mut info, a.bytes)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&info)?);
        return Ok(());
    }
    println!("ferrofem {}", info.version);
    println!(
        "cpu        {} threads, copy bandwidth {:.1} GB/s (read + write)",
        info.cpu_threads, info.cpu_copy_gbytes_per_s
    );
    println!("cuda       {}", info.cuda.as_deref().unwrap_or("-"));
    println!("nvrtc      {}", info.nvrtc.as_deref().unwrap_or("-"));
    if let Some(c) = &info.kernel_cache {
        println!("kernels    cached in {c}");
    }
    for g in &info.gpus {
        println!(
            "gpu {}      {} (sm_{}), {} SMs, {:.1} GiB, L2 {:.0} MiB ({:.1} MiB persisting), driver {}; copy bandwidth {:.0} GB/s (read + write)",
            g.ordinal, g.name, g.compute_capability, g.multiprocessors, g.memory_gib, g.l2_mib, g.l2_persisting_mib, g.driver_version, g.copy_gbytes_per_s
        );
    }
    Ok(())
}

/// Fills in the GPUs; a `bytes` too large for a device's (or the host's) memory is refused.
#[cfg(feature = "cuda")]
fn gpu_info(info: &mut Info, bytes: usize) -> Result<(), CliError> {
    use ferrofem_cuda::{blas::copy_bandwidth, compile, device_count, GpuDevice};
    info.nvrtc = match compile::nvrtc_version() {
        Ok((a, b)) => Some(format!("{a}.{b}")),
        Err(e) => Some(format!("unavailable ({e})")),
    };
    info.kernel_cache =
        compile::DiskCache::default_location().map(|c| c.dir().display().to_string());
    let count = match device_count() {
        Ok(n) => n,
        Err(e) => {
            info.cuda = Some(format!("unavailable ({e})"));
            return Ok(());
        }
    };
    info.cuda = Some(format!("{count} device(s)"));
    for ordinal in 0..count {
        match GpuDevice::new(ordinal) {
            Ok(d) => {
                let (maj, min) = d.compute_capability();
                crate::bench::check_device_buffers(&d, bytes)?;
                let bw = copy_bandwidth(&d, bytes, 20).unwrap_or(f64::NAN);
                info.gpus.push(GpuInfo {
                    ordinal,
                    name: d.name().into(),
                    compute_capability: format!("{maj}{min}"),
                    multiprocessors: d.sm_count(),
                    memory_gib: d.total_mem() as f64 / (1u64 << 30) as f64,
                    l2_mib: d.l2_bytes() as f64 / (1u64 << 20) as f64,
                    l2_persisting_mib: d.l2_persisting_max() as f64 / (1u64 << 20) as f64,
                    driver_version: d.driver_version(),
                    copy_gbytes_per_s: bw / 1e9,
                });
            }
            Err(e) => info.cuda = Some(format!("device {ordinal}: {e}")),
        }
    }
    Ok(())
}

/// Without the `cuda` feature: says so.
#[cfg(not(feature = "cuda"))]
fn gpu_info(info: &mut Info, _bytes: usize) -> Result<(), CliError> {
    info.cuda = Some("not built (feature `cuda` off)".into());
    Ok(())
}
