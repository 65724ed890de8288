//! Choosing where to run (`--backend auto|cpu|cuda`), and when `auto` runs on the CPU
//! instead of the GPU.
//!
//! `auto` takes the GPU when one is usable. It falls back to the CPU, with a one-line
//! reason, in two cases only ([`fallback_reason`]):
//!
//! - no GPU is usable: no CUDA driver, no device, or no NVRTC to compile kernels with
//!   ([`falls_back`]), whether found when the device is opened ([`select`]) or when the
//!   first kernel is compiled;
//! - the case has no GPU path ([`PipelineError::NoGpuPath`]: a solver, cell type, problem
//!   or coefficient the GPU solve does not cover), or does not fit in the device's free
//!   memory (`GpuError::DoesNotFit`, checked before anything is allocated).
//!
//! Every other GPU failure (a kernel that does not compile, the device out of memory, a
//! failed launch or driver call) is an error, with its kind: running on the CPU instead
//! would hide it. `cuda` never falls back; `cpu` never opens a device.

use crate::pipeline_error::PipelineError;
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
#[derive(Clone, Debug)]
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
    /// The CPU, asked for (no fallback reason).
    pub fn cpu() -> Backend {
        Backend::Cpu {
            fallback_reason: None,
        }
    }

    /// Short name for output.
    pub fn name(&self) -> String {
        match self {
            Backend::Cpu { .. } => format!("cpu ({} threads)", rayon::current_num_threads()),
            #[cfg(feature = "cuda")]
            Backend::Cuda(d) => format!("cuda ({})", d.name()),
        }
    }

    /// True for a GPU.
    pub fn is_gpu(&self) -> bool {
        !matches!(self, Backend::Cpu { .. })
    }

    /// The note for output when `auto` fell back to the CPU: the reason, and that the CPU
    /// runs instead.
    pub fn fallback_note(&self) -> Option<String> {
        match self {
            Backend::Cpu {
                fallback_reason: Some(why),
            } => Some(format!("{why}; running on the CPU")),
            _ => None,
        }
    }
}

/// Resolves the requested backend: `cpu` is the CPU; `cuda` opens device 0 or fails with
/// why it cannot; `auto` opens device 0 and falls back to the CPU (with the reason) only
/// when no GPU is usable, see the module documentation.
pub fn select(req: BackendArg) -> Result<Backend, PipelineError> {
    select_for_rank(req, 0)
}

/// [`select`] for the rank `node_rank` among the ranks of one machine: it opens the
/// machine's GPU `node_rank` modulo their count (ranks beyond the count share them).
pub fn select_for_rank(req: BackendArg, node_rank: usize) -> Result<Backend, PipelineError> {
    let open_gpu = || open_gpu(node_rank);
    match req {
        BackendArg::Cpu => Ok(Backend::cpu()),
        BackendArg::Cuda => open_gpu(),
        BackendArg::Auto => match open_gpu() {
            Ok(b) => Ok(b),
            Err(e) => match fallback_reason(&e) {
                Some(why) => Ok(Backend::Cpu {
                    fallback_reason: Some(why),
                }),
                None => Err(e),
            },
        },
    }
}

#[cfg(feature = "cuda")]
fn open_gpu(node_rank: usize) -> Result<Backend, PipelineError> {
    let ordinal = match node_rank {
        0 => 0,
        r => r % ferrofem_cuda::device_count()?.max(1),
    };
    Ok(Backend::Cuda(ferrofem_cuda::GpuDevice::new(ordinal)?))
}

#[cfg(not(feature = "cuda"))]
fn open_gpu(_node_rank: usize) -> Result<Backend, PipelineError> {
    Err(PipelineError::NoGpuPath(
        "this ferrofem was built without the `cuda` feature".into(),
    ))
}

/// Why `--backend auto` runs on the CPU after a GPU attempt failed with `e`, in words, or
/// `None` when `e` is to be reported as it is. The two reasons are that the case has no GPU
/// path ([`PipelineError::NoGpuPath`], or a GPU kernel's own refusal of the input,
/// `GpuError::Unsupported`) and that no GPU is usable ([`falls_back`]); everything else,
/// including every other GPU failure, is not a reason.
pub fn fallback_reason(e: &PipelineError) -> Option<String> {
    match e {
        PipelineError::NoGpuPath(why) => Some(why.clone()),
        #[cfg(feature = "cuda")]
        PipelineError::Gpu(g @ ferrofem_cuda::GpuError::Unsupported(_)) => Some(g.to_string()),
        #[cfg(feature = "cuda")]
        PipelineError::Gpu(g) if falls_back(g) => Some(format!("GPU backend unavailable: {g}")),
        _ => None,
    }
}

/// Whether the GPU error `e` means that `--backend auto` should run on the CPU: no GPU is
/// usable (no CUDA driver, no device, no NVRTC), or a kernel refuses this input
/// (`Unsupported`: the case has no GPU path) or does not fit its free memory (`DoesNotFit`,
/// found before allocating). A kernel that fails to compile, the device
/// out of memory, a failed launch and any other driver failure are not: they are errors of
/// a usable GPU, reported with their kind.
#[cfg(feature = "cuda")]
pub fn falls_back(e: &ferrofem_cuda::GpuError) -> bool {
    use ferrofem_cuda::GpuError;
    match e {
        GpuError::NoDriver
        | GpuError::NoDevice { .. }
        | GpuError::NoNvrtc
        | GpuError::Unsupported(_)
        | GpuError::DoesNotFit { .. } => true,
        // a driver that is present but sees no device reports it when it is initialised
        GpuError::Driver { source, .. } => {
            source.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE
        }
        // out of memory, compilation, launch, size, cache: failures of a usable GPU
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_is_never_a_fallback() {
        let b = select(BackendArg::Cpu).expect("the CPU is always there");
        assert!(!b.is_gpu());
        assert_eq!(b.fallback_note(), None);
        assert!(b.name().starts_with("cpu ("));
    }

    #[test]
    fn a_case_without_a_gpu_path_falls_back_other_errors_do_not() {
        let why = "the GPU solve covers Poisson on hexahedra, not elasticity on quadrilateral";
        let e = PipelineError::NoGpuPath(why.into());
        assert_eq!(fallback_reason(&e).as_deref(), Some(why));
        let e = PipelineError::Unsupported("--solver cg for the nonlinear problem".into());
        assert_eq!(fallback_reason(&e), None);
        let e = PipelineError::Solver(ferrofem_solver::SolverError::backend("diverged"));
        assert_eq!(fallback_reason(&e), None);
        let note = Backend::Cpu {
            fallback_reason: Some(why.into()),
        }
        .fallback_note();
        assert_eq!(note, Some(format!("{why}; running on the CPU")));
    }

    #[cfg(feature = "cuda")]
    mod gpu {
        use super::super::*;
        use cudarc::driver::sys::CUresult;
        use cudarc::driver::DriverError;
        use ferrofem_cuda::GpuError;

        fn failures() -> Vec<GpuError> {
            vec![
                GpuError::Compile {
                    name: "bp_apply".into(),
                    options: vec!["-arch=sm_90".into()],
                    log: "error: expected a ';'".into(),
                },
                GpuError::OutOfMemory {
                    bytes: 1 << 40,
                    what: "solution".into(),
                },
                GpuError::Launch {
                    kernel: "bp_apply".into(),
                    source: DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED),
                },
                GpuError::driver(
                    "synchronising",
                    DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS),
                ),
                GpuError::Size {
                    what: "right-hand side",
                    expected: 4,
                    got: 3,
                },
            ]
        }

        fn no_gpu() -> Vec<GpuError> {
            vec![
                GpuError::NoDriver,
                GpuError::NoDevice {
                    ordinal: 0,
                    count: 0,
                },
                GpuError::NoNvrtc,
            ]
        }

        // (a `DriverError` is shown through the driver library, so the errors that hold
        // one are only shown here when an assertion fails)
        #[test]
        fn only_an_unusable_gpu_falls_back() {
            for e in failures() {
                assert!(!falls_back(&e), "{e:?} must be reported, not hidden");
                let p = PipelineError::from(e);
                assert!(fallback_reason(&p).is_none(), "{p}");
            }
            for e in no_gpu() {
                assert!(falls_back(&e), "{e:?} means no GPU is usable");
                let p = PipelineError::from(e);
                let why = fallback_reason(&p).expect("a reason");
                assert!(why.starts_with("GPU backend unavailable: "), "{why}");
            }
            // a driver that is present but sees no device
            let none = GpuError::driver(
                "counting devices",
                DriverError(CUresult::CUDA_ERROR_NO_DEVICE),
            );
            assert!(falls_back(&none));
            let e = GpuError::DoesNotFit {
                what: "the elastic wave simulation".into(),
                needed: 3 << 30,
                available: 1 << 30,
            };
            assert!(falls_back(&e));
            let why = fallback_reason(&PipelineError::from(e)).expect("a reason");
            assert!(why.contains("needs 3") && why.contains("free"), "{why}");
            let e = GpuError::Unsupported("BP kernels on simplices".into());
            assert!(falls_back(&e));
            let why = fallback_reason(&PipelineError::from(e)).expect("a reason");
            assert!(why.contains("BP kernels on simplices"), "{why}");
        }

        #[test]
        fn gpu_failures_name_their_kind() {
            let kinds = ["failed to compile", "out of memory"];
            for (e, kind) in failures().into_iter().zip(kinds) {
                let msg = PipelineError::from(e).to_string();
                assert!(msg.starts_with("GPU: ") && msg.contains(kind), "{msg}");
            }
        }
    }
}
