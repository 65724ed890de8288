//! Level-1 vector operations on the device (for the solvers) and the copy-bandwidth
//! measurement that every GPU benchmark reports its roofline fraction against.

use crate::compile::KernelSpec;
use crate::{median, sources, DeviceVec, GpuDevice, GpuError, GpuReal, GpuTimer};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Launches `$f` on the device stream with the given arguments, mapping errors.
macro_rules! launch {
    ($self:expr, $name:expr, $f:expr, $cfg:expr, $($arg:expr),+) => {{
        let stream = $self.dev.stream();
        let mut b = stream.launch_builder($f);
        $(b.arg($arg);)+
        // SAFETY: each call site passes the argument list of the named kernel in blas.cu.
        unsafe { b.launch($cfg) }.map(|_| ()).map_err(|e| GpuError::Launch {
            kernel: $name.into(),
            source: e,
        })
    }};
}

/// Compiled vector kernels for one precision.
pub struct GpuBlas<T: GpuReal> {
    dev: Arc<GpuDevice>,
    copy: CudaFunction,
    axpy: CudaFunction,
    xpby: CudaFunction,
    mult: CudaFunction,
    dot: CudaFunction,
    dot_at: CudaFunction,
    sum: CudaFunction,
    copy_idx: CudaFunction,
    set_idx: CudaFunction,
    scale: CudaFunction,
    recip: CudaFunction,
    partial: std::sync::Mutex<(DeviceVec<f64>, DeviceVec<f64>)>,
    _t: std::marker::PhantomData<T>,
}

const DOT_BLOCKS: usize = 1024;
const DOT_THREADS: u32 = 256;

impl<T: GpuReal> GpuBlas<T> {
    /// Compiles (or loads from cache) the vector kernels for `T`.
    pub fn new(dev: &Arc<GpuDevice>) -> Result<GpuBlas<T>, GpuError> {
        let spec = KernelSpec::new(
            format!("blas_{}", T::NAME),
            sources::with_prelude(sources::BLAS),
        )
        .define("REAL", T::CTYPE);
        let f = |name: &str| dev.function(&spec, name);
        Ok(GpuBlas {
            dev: dev.clone(),
            copy: f("ff_copy")?,
            axpy: f("ff_axpy")?,
            xpby: f("ff_xpby")?,
            mult: f("ff_pointwise_mult")?,
            dot: f("ff_dot_partial")?,
            dot_at: f("ff_dot_indices_partial")?,
            sum: f("ff_sum_partials")?,
            copy_idx: f("ff_copy_indices")?,
            set_idx: f("ff_set_indices")?,
            scale: f("ff_scale")?,
            recip: f("ff_reciprocal")?,
            partial: std::sync::Mutex::new((
                DeviceVec::zeros(dev, DOT_BLOCKS, "dot partial sums")?,
                DeviceVec::zeros(dev, 1, "dot result")?,
            )),
            _t: std::marker::PhantomData,
        })
    }

    /// The device.
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.dev
    }

    fn grid(&self, n: usize) -> LaunchConfig {
        let blocks = n.div_ceil(256).clamp(1, self.dev.sm_count().max(1) * 16);
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    fn check(a: usize, b: usize, what: &'static str) -> Result<(), GpuError> {
        if a != b {
            return Err(GpuError::Size {
                what,
                expected: a,
                got: b,
            });
        }
        Ok(())
    }

    /// `y = x` (device copy through a kernel, as the bandwidth roofline measures it).
    pub fn copy(&self, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        Self::check(x.len(), y.len(), "copy")?;
        let n = x.len() as u64;
        launch!(
            self,
            "ff_copy",
            &self.copy,
            self.grid(x.len()),
            x.slice(),
            y.slice_mut(),
            &n
        )
    }

    /// `y += a x`.
    pub fn axpy(&self, a: T, x: &DeviceVec<T>, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        Self::check(x.len(), y.len(), "axpy")?;
        let n = x.len() as u64;
        launch!(
            self,
            "ff_axpy",
            &self.axpy,
            self.grid(x.len()),
            &a,
            x.slice(),
            y.slice_mut(),
            &n
        )
    }

    /// `y = x + b y`.
    pub fn xpby(&self, x: &DeviceVec<T>, beta: T, y: &mut DeviceVec<T>) -> Result<(), GpuError> {
        Self::check(x.len(), y.len(), "xpby")?;
        let n = x.len() as u64;
        launch!(
            self,
            "ff_xpby",
            &self.xpby,
            self.grid(x.len()),
            x.slice(),
            &beta,
            y.slice_mut(),
            &n
        )
    }

    /// `z = x .* y`.
    pub fn pointwise_mult(
        &self,
        x: &DeviceVec<T>,
        y: &DeviceVec<T>,
        z: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        Self::check(x.len(), y.len(), "pointwise product")?;
        Self::check(x.len(), z.len(), "pointwise product")?;
        let n = x.len() as u64;
        launch!(
            self,
            "ff_pointwise_mult",
            &self.mult,
            self.grid(x.len()),
            x.slice(),
            y.slice(),
            z.slice_mut(),
            &n
        )
    }

    /// `y[idx[k]] = x[idx[k]]` for every index (identity rows of Dirichlet dofs).
    pub fn copy_indices(
        &self,
        x: &DeviceVec<T>,
        y: &mut DeviceVec<T>,
        idx: &DeviceVec<u32>,
    ) -> Result<(), GpuError> {
        Self::check(x.len(), y.len(), "copy_indices")?;
        let m = idx.len() as u32;
        if m == 0 {
            return Ok(());
        }
        launch!(
            self,
            "ff_copy_indices",
            &self.copy_idx,
            self.grid(idx.len()),
            x.slice(),
            y.slice_mut(),
            idx.slice(),
            &m
        )
    }

    /// `y[idx[k]] = value` for every index (e.g. ones on the Dirichlet rows of a diagonal).
    pub fn set_indices(
        &self,
        y: &mut DeviceVec<T>,
        idx: &DeviceVec<u32>,
        value: T,
    ) -> Result<(), GpuError> {
        let m = idx.len() as u32;
        if m == 0 {
            return Ok(());
        }
        launch!(
            self,
            "ff_set_indices",
            &self.set_idx,
            self.grid(idx.len()),
            y.slice_mut(),
            idx.slice(),
            &value,
            &m
        )
    }

    /// `x = a x`.
    pub fn scale(&self, a: T, x: &mut DeviceVec<T>) -> Result<(), GpuError> {
        let n = x.len() as u64;
        let grid = self.grid(x.len());
        launch!(self, "ff_scale", &self.scale, grid, &a, x.slice_mut(), &n)
    }

    /// `x = 1 / x` entrywise, in place, where every entry is positive and finite (a Jacobi
    /// preconditioner's inverse diagonal). Returns the lowest index of an entry that is not
    /// (those entries are left as they are), or `None` when all were inverted; one 8-byte
    /// copy to the host.
    pub fn reciprocal(&self, x: &mut DeviceVec<T>) -> Result<Option<usize>, GpuError> {
        let n = x.len() as u64;
        if n == 0 {
            return Ok(None);
        }
        let mut bad = DeviceVec::<u64>::from_host(&self.dev, &[u64::MAX], "reciprocal check")?;
        let grid = self.grid(x.len());
        launch!(
            self,
            "ff_reciprocal",
            &self.recip,
            grid,
            x.slice_mut(),
            bad.slice_mut(),
            &n
        )?;
        let first = bad.to_host()?[0];
        Ok((first != u64::MAX).then_some(first as usize))
    }

    /// `xᵀ y`, accumulated in f64 (one partial per block, summed on the device, one 8-byte
    /// copy to the host).
    pub fn dot(&self, x: &DeviceVec<T>, y: &DeviceVec<T>) -> Result<f64, GpuError> {
        Self::check(x.len(), y.len(), "dot")?;
        let n = x.len() as u64;
        let blocks = x.len().div_ceil(DOT_THREADS as usize).clamp(1, DOT_BLOCKS);
        let mut guard = self.partial.lock().expect("dot buffer lock");
        let (partial, out) = &mut *guard;
        launch!(
            self,
            "ff_dot_partial",
            &self.dot,
            Self::dot_grid(blocks),
            x.slice(),
            y.slice(),
            partial.slice_mut(),
            &n
        )?;
        self.sum_partials(blocks, partial, out)
    }

    /// `Σ x[idx[k]] y[idx[k]]`: the part of `xᵀ y` at the listed entries (each within `x`
    /// and `y`), accumulated as [`GpuBlas::dot`].
    pub fn dot_at(
        &self,
        x: &DeviceVec<T>,
        y: &DeviceVec<T>,
        idx: &DeviceVec<u32>,
    ) -> Result<f64, GpuError> {
        Self::check(x.len(), y.len(), "dot")?;
        if idx.is_empty() {
            return Ok(0.0);
        }
        let m = idx.len() as u32;
        let blocks = idx
            .len()
            .div_ceil(DOT_THREADS as usize)
            .clamp(1, DOT_BLOCKS);
        let mut guard = self.partial.lock().expect("dot buffer lock");
        let (partial, out) = &mut *guard;
        launch!(
            self,
            "ff_dot_indices_partial",
            &self.dot_at,
            Self::dot_grid(blocks),
            x.slice(),
            y.slice(),
            idx.slice(),
            partial.slice_mut(),
            &m
        )?;
        self.sum_partials(blocks, partial, out)
    }

    fn dot_grid(blocks: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (DOT_THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// The sum of the first `blocks` partial sums, on the device, copied to the host.
    fn sum_partials(
        &self,
        blocks: usize,
        partial: &DeviceVec<f64>,
        out: &mut DeviceVec<f64>,
    ) -> Result<f64, GpuError> {
        let m = blocks as u32;
        launch!(
            self,
            "ff_sum_partials",
            &self.sum,
            Self::dot_grid(1),
            partial.slice(),
            out.slice_mut(),
            &m
        )?;
        Ok(out.to_host()?[0])
    }
}

/// Device copy bandwidth in bytes/s (read + write), median of `reps` copies of a buffer of
/// `bytes` bytes through the same kind of grid-stride kernel ferrofem's vector code uses.
pub fn copy_bandwidth(dev: &Arc<GpuDevice>, bytes: usize, reps: usize) -> Result<f64, GpuError> {
    let blas = GpuBlas::<f64>::new(dev)?;
    let n = bytes / 8;
    let host: Vec<f64> = (0..n).map(|i| (i % 1000) as f64 * 0.5 + 1.0).collect();
    let x = DeviceVec::from_host(dev, &host, "bandwidth source")?;
    let mut y = DeviceVec::<f64>::zeros(dev, n, "bandwidth target")?;
    let times = GpuTimer::new(dev).time(3, reps, || blas.copy(&x, &mut y))?;
    let check = y.to_host()?;
    if check != host {
        return Err(GpuError::Unsupported(
            "bandwidth copy produced wrong data".into(),
        ));
    }
    Ok(2.0 * (n * 8) as f64 / median(&times))
}
