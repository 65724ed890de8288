//! A CUDA device: context, stream, properties and the kernels compiled for it.

use crate::compile::{self, DiskCache, KernelSpec, Target};
use crate::GpuError;
use cudarc::driver::{sys, CudaContext, CudaFunction, CudaModule, CudaStream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Whether the CUDA driver library can be loaded (nothing is initialised).
pub fn driver_present() -> bool {
    // SAFETY: only probes for the library.
    unsafe { sys::is_culib_present() }
}

/// Number of CUDA devices (an error when no driver is installed).
pub fn device_count() -> Result<usize, GpuError> {
    if !driver_present() {
        return Err(GpuError::NoDriver);
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .map_err(|e| GpuError::driver("counting devices", e))
}

/// Counters of kernel compilation, to report setup cost separately from steady state.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileStats {
    /// Specialisations compiled by NVRTC in this process.
    pub compiled: usize,
    /// Specialisations loaded from the disk cache.
    pub from_disk: usize,
    /// Seconds spent in NVRTC.
    pub seconds: f64,
}

/// One GPU with its context, a stream, and the modules compiled for it.
pub struct GpuDevice {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    ordinal: usize,
    name: String,
    compute_capability: (i32, i32),
    sm_count: usize,
    l2_bytes: usize,
    /// The most L2 a context may set aside for persisting accesses (0 where the device has
    /// no such set-aside).
    l2_persisting_max: usize,
    total_mem: usize,
    /// Peak memory bandwidth in bytes per second from the memory clock and bus width (0
    /// where the driver does not report them).
    peak_bandwidth: f64,
    max_shared_per_block_optin: usize,
    driver_version: i32,
    cache: Option<DiskCache>,
    modules: Mutex<HashMap<KernelSpec, Arc<CudaModule>>>,
    stats: Mutex<CompileStats>,
}

impl std::fmt::Debug for GpuDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuDevice")
            .field("ordinal", &self.ordinal)
            .field("name", &self.name)
            .field("compute_capability", &self.compute_capability)
            .finish()
    }
}

impl GpuDevice {
    /// Device 0 for a test suite: `None`, saying so, when no device is usable, so that the
    /// GPU tests are skipped on machines without one; a panic instead when
    /// `FERROFEM_REQUIRE_GPU=1` (set where a GPU must be there, scripts/gpu-check.sh).
    pub fn for_tests() -> Option<Arc<GpuDevice>> {
        match GpuDevice::new(0) {
            Ok(d) => Some(d),
            Err(e) => {
                if std::env::var("FERROFEM_REQUIRE_GPU").as_deref() == Ok("1") {
                    panic!("FERROFEM_REQUIRE_GPU=1 but no GPU: {e}");
                }
                eprintln!("no GPU ({e}): GPU tests skipped");
                None
            }
        }
    }

    /// Opens device `ordinal` with the default kernel cache
    /// ([`DiskCache::default_location`]).
    pub fn new(ordinal: usize) -> Result<Arc<GpuDevice>, GpuError> {
        Self::with_cache(ordinal, DiskCache::default_location())
    }

    /// Opens device `ordinal` with the given kernel cache (`None`: no disk cache).
    pub fn with_cache(
        ordinal: usize,
        cache: Option<DiskCache>,
    ) -> Result<Arc<GpuDevice>, GpuError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        let ctx =
            CudaContext::new(ordinal).map_err(|e| GpuError::driver("creating a context", e))?;
        // ferrofem queues all work on one stream: cudarc's per-buffer event tracking would
        // only add an event record/wait to every launch.
        // SAFETY: no other stream of this context is used by ferrofem.
        unsafe { ctx.disable_event_tracking() };
        // a stream of its own rather than the legacy default one, on which work cannot be
        // captured as a CUDA graph
        let stream = ctx
            .new_stream()
            .map_err(|e| GpuError::driver("creating a stream", e))?;
        let attr = |a: sys::CUdevice_attribute| ctx.attribute(a).map(|v| v.max(0) as usize);
        use sys::CUdevice_attribute as A;
        let sm_count = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| GpuError::driver("reading attributes", e))?;
        let l2_bytes = attr(A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
            .map_err(|e| GpuError::driver("reading attributes", e))?;
        let l2_persisting_max =
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE).unwrap_or(0);
        let max_shared_per_block_optin =
            attr(A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .map_err(|e| GpuError::driver("reading attributes", e))?;
        // the memory clock in kHz, double data rate, over the bus width in bits
        let peak_bandwidth = match (
            attr(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
            attr(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
        ) {
            (Ok(khz), Ok(bits)) => 2.0 * khz as f64 * 1e3 * bits as f64 / 8.0,
            _ => 0.0,
        };
        let mut driver_version = 0;
        // SAFETY: out-parameter.
        unsafe { sys::cuDriverGetVersion(&mut driver_version) };
        Ok(Arc::new(GpuDevice {
            name: ctx.name().unwrap_or_else(|_| "unknown".into()),
            compute_capability: ctx
                .compute_capability()
                .map_err(|e| GpuError::driver("reading compute capability", e))?,
            total_mem: ctx
                .total_mem()
                .map_err(|e| GpuError::driver("reading memory size", e))?,
            ctx,
            stream,
            ordinal,
            sm_count,
            l2_bytes,
            l2_persisting_max,
            peak_bandwidth,
            max_shared_per_block_optin,
            driver_version,
            cache,
            modules: Mutex::new(HashMap::new()),
            stats: Mutex::new(CompileStats::default()),
        }))
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }
    /// The stream all of ferrofem's work on this device is queued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }
    /// Device ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
    /// Marketing name (e.g. "NVIDIA H200").
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Compute capability (major, minor).
    pub fn compute_capability(&self) -> (i32, i32) {
        self.compute_capability
    }
    /// Architecture number for NVRTC (`sm_<arch>`), e.g. 90.
    pub fn arch(&self) -> u32 {
        (self.compute_capability.0 * 10 + self.compute_capability.1) as u32
    }
    /// Number of multiprocessors.
    pub fn sm_count(&self) -> usize {
        self.sm_count
    }
    /// Peak memory bandwidth in bytes per second from the memory clock and bus width (0
    /// where the driver does not report them).
    pub fn peak_bandwidth(&self) -> f64 {
        self.peak_bandwidth
    }
    /// L2 cache size in bytes.
    pub fn l2_bytes(&self) -> usize {
        self.l2_bytes
    }

    /// The most L2 (bytes) a context may set aside for persisting accesses; 0 where the
    /// device has no such set-aside.
    pub fn l2_persisting_max(&self) -> usize {
        self.l2_persisting_max
    }

    /// Device memory in bytes.
    pub fn total_mem(&self) -> usize {
        self.total_mem
    }
    /// Largest dynamic shared memory a block may opt in to.
    pub fn max_shared_per_block(&self) -> usize {
        self.max_shared_per_block_optin
    }
    /// CUDA driver version (e.g. 13000).
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }
    /// Free and total device memory in bytes.
    pub fn mem_info(&self) -> Result<(usize, usize), GpuError> {
        self.ctx
            .mem_get_info()
            .map_err(|e| GpuError::driver("reading free memory", e))
    }
    /// Compilation counters so far.
    pub fn compile_stats(&self) -> CompileStats {
        *self.stats.lock().expect("stats lock")
    }

    /// Waits for all queued work.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream
            .synchronize()
            .map_err(|e| GpuError::driver("synchronizing", e))
    }

    /// The module for `spec`, compiled (or read from the disk cache) on first use.
    pub fn module(&self, spec: &KernelSpec) -> Result<Arc<CudaModule>, GpuError> {
        if let Some(m) = self.modules.lock().expect("module lock").get(spec) {
            return Ok(m.clone());
        }
        let compiled = compile::compile(
            spec,
            Target::Cubin(self.arch()),
            self.cache.as_ref(),
            self.driver_version,
        )?;
        {
            let mut s = self.stats.lock().expect("stats lock");
            if compiled.from_cache {
                s.from_disk += 1;
            } else {
                s.compiled += 1;
                s.seconds += compiled.compile_seconds;
            }
        }
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(compiled.image))
            .map_err(|e| GpuError::driver(format!("loading module {}", spec.name), e))?;
        self.modules
            .lock()
            .expect("module lock")
            .insert(spec.clone(), module.clone());
        Ok(module)
    }

    /// Entry point `entry` of the module for `spec`.
    pub fn function(&self, spec: &KernelSpec, entry: &str) -> Result<CudaFunction, GpuError> {
        self.module(spec)?
            .load_function(entry)
            .map_err(|e| GpuError::driver(format!("finding kernel {entry} in {}", spec.name), e))
    }
}
