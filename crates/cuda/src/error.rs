//! Errors of the GPU backend.

use cudarc::driver::DriverError;
use ferrofem_base::memory::human_bytes;

/// Everything the GPU backend can fail with, distinguished so that callers (and the CLI's
/// `--backend auto`) can tell "no GPU here" from "the GPU failed".
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// The CUDA driver library could not be found (no NVIDIA driver on this machine).
    #[error(
        "no CUDA driver found (libcuda could not be loaded): no GPU is usable on this machine"
    )]
    NoDriver,
    /// The NVRTC library could not be found, so kernels cannot be compiled.
    #[error("NVRTC (libnvrtc) could not be loaded: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH")]
    NoNvrtc,
    /// The driver is present but reports no device (or the ordinal is out of range).
    #[error("no CUDA device {ordinal} (the driver reports {count})")]
    NoDevice {
        /// Requested ordinal.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// The device ran out of memory.
    #[error("GPU out of memory allocating {bytes} bytes ({what})")]
    OutOfMemory {
        /// Bytes requested.
        bytes: usize,
        /// What was being allocated.
        what: String,
    },
    /// A problem does not fit in the device's free memory (checked before allocating).
    #[error("{what} needs {} of GPU memory; the device has {} free", human_bytes(*needed as u64), human_bytes(*available as u64))]
    DoesNotFit {
        /// What was to be set up.
        what: String,
        /// Bytes it needs.
        needed: usize,
        /// Bytes free on the device.
        available: usize,
    },
    /// A kernel failed to compile.
    #[error("kernel '{name}' failed to compile with options {options:?}:\n{log}")]
    Compile {
        /// Kernel (source) name.
        name: String,
        /// NVRTC options used.
        options: Vec<String>,
        /// NVRTC's log.
        log: String,
    },
    /// A kernel launch (or the work it queued) failed.
    #[error("launch of kernel '{kernel}' failed: {source}")]
    Launch {
        /// Kernel entry point.
        kernel: String,
        /// Driver error.
        #[source]
        source: DriverError,
    },
    /// Any other driver call failed.
    #[error("CUDA driver error during {during}: {source}")]
    Driver {
        /// What was being done.
        during: String,
        /// Driver error.
        #[source]
        source: DriverError,
    },
    /// Host and device sizes disagree.
    #[error("size mismatch in {what}: expected {expected}, got {got}")]
    Size {
        /// Which transfer or operation.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Given length.
        got: usize,
    },
    /// The operation is not available for this input (e.g. a BP kernel on simplices).
    #[error("not supported on the GPU: {0}")]
    Unsupported(String),
    /// A kernel found an element it cannot integrate, or produced a non-finite value for
    /// it (the lowest such element is reported).
    #[error("element {element}: {what}")]
    BadElement {
        /// The element (cell) index.
        element: usize,
        /// What is wrong with it.
        what: &'static str,
    },
    /// A message to or from another rank of a distributed run failed.
    #[error("exchange with the other ranks: {0}")]
    Ranks(String),
    /// The kernel cache folder could not be used (compilation still works without it).
    #[error("kernel cache at {path}: {source}")]
    Cache {
        /// Cache path.
        path: String,
        /// OS error.
        #[source]
        source: std::io::Error,
    },
}

impl GpuError {
    /// Wraps a driver error, recognising out-of-memory.
    pub fn driver(during: impl Into<String>, e: DriverError) -> GpuError {
        GpuError::Driver {
            during: during.into(),
            source: e,
        }
    }

    /// Wraps an allocation error, recognising out-of-memory.
    pub fn alloc(bytes: usize, what: impl Into<String>, e: DriverError) -> GpuError {
        if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            GpuError::OutOfMemory {
                bytes,
                what: what.into(),
            }
        } else {
            GpuError::Driver {
                during: format!("allocating {bytes} bytes for {}", what.into()),
                source: e,
            }
        }
    }
}
