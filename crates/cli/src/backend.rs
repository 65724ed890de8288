//! Choosing where to run: `--backend auto|cpu|cuda`.

use crate::error::CliError;
use clap::ValueEnum;

/// Requested backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The GPU when one is usable, else the CPU (saying why).
    Auto,
    /// Multithreaded CPU.
    Cpu,
    /// NVIDIA GPU through CUDA; an error when none is usable.
    Cuda,
}

/// The backend a command runs on.
pub enum Backend {
    /// CPU, with the reason when `auto` fell back.
    Cpu {
        /// Why the GPU was not used (for `auto`).
        fallback_reason: Option<String>,
    },
    /// A GPU.
    #[cfg(feature = "cuda")]
    Cuda(std::sync::Arc<ferrofem_cuda::GpuDevice>),
}

impl Backend {
    /// Short name for output.
    pub fn name(&self) -> String {
        match self {
            Backend::Cpu { .. } => format!("cpu ({} threads)", rayon::current_num_threads()),
            #[cfg(feature = "cuda")]
            Backend::Cuda(d) => format!("cuda ({})", d.name()),
        }
    }
}

/// Resolves the requested backend.
pub fn select(req: BackendArg) -> Result<Backend, CliError> {
    match req {
        BackendArg::Cpu => Ok(Backend::Cpu {
            fallback_reason: None,
        }),
        BackendArg::Cuda => open_gpu().map_err(CliError::Usage),
        BackendArg::Auto => match open_gpu() {
            Ok(b) => Ok(b),
            Err(reason) => Ok(Backend::Cpu {
                fallback_reason: Some(reason),
            }),
        },
    }
}

#[cfg(feature = "cuda")]
fn open_gpu() -> Result<Backend, String> {
    ferrofem_cuda::GpuDevice::new(0)
        .map(Backend::Cuda)
        .map_err(|e| format!("GPU backend unavailable: {e}"))
}

#[cfg(not(feature = "cuda"))]
fn open_gpu() -> Result<Backend, String> {
    Err("this ferrofem was built without the `cuda` feature".into())
}
