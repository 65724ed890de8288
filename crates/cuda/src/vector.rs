//! Vectors in device memory.

use crate::compressible::CompressibleAlloc;
use crate::{GpuDevice, GpuError};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};
use ferrofem_base::Real;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A scalar that lives on the GPU: `f32` or `f64`, with its CUDA C spelling.
pub trait GpuReal: Real + DeviceRepr + ValidAsZeroBits + Unpin + crate::nccl::NcclValue {
    /// The CUDA C type name (`float` or `double`).
    const CTYPE: &'static str;
}

impl GpuReal for f64 {
    const CTYPE: &'static str = "double";
}
impl GpuReal for f32 {
    const CTYPE: &'static str = "float";
}

/// A vector in device memory, tied to its device's stream.
#[derive(Debug)]
pub struct DeviceVec<T: DeviceRepr> {
    /// Owned by cudarc (freed with it), or a view of `compressible` (leaked on drop).
    buf: ManuallyDrop<CudaSlice<T>>,
    dev: Arc<GpuDevice>,
    compressible: Option<CompressibleAlloc>,
}

impl<T: DeviceRepr> Drop for DeviceVec<T> {
    fn drop(&mut self) {
        // SAFETY: `buf` is taken once, here, and not used afterwards.
        let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
        if self.compressible.is_some() {
            // the memory is the compressible allocation's, released when it drops
            buf.leak();
        } else {
            drop(buf);
        }
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> DeviceVec<T> {
    /// A zero vector of length `n`.
    pub fn zeros(dev: &Arc<GpuDevice>, n: usize, what: &str) -> Result<DeviceVec<T>, GpuError> {
        let bytes = n * std::mem::size_of::<T>();
        let buf = dev
            .stream()
            .alloc_zeros::<T>(n.max(1))
            .map_err(|e| GpuError::alloc(bytes, what, e))?;
        let buf = if n == 0 {
            // keep a valid (non-null) allocation but an empty view length
            dev.stream()
                .alloc_zeros::<T>(1)
                .map_err(|e| GpuError::alloc(bytes, what, e))?
        } else {
            buf
        };
        Ok(DeviceVec {
            buf: ManuallyDrop::new(buf),
            dev: dev.clone(),
            compressible: None,
        })
    }

    /// A zero vector of length `n` in compressible memory (generic data compression,
    /// Ampere and later): long runs of zeros, such as an operator output's skeleton
    /// between its fill and the accumulation, then cost less DRAM traffic. A typed error
    /// ([`GpuError::Unsupported`]) where the device cannot compress.
    pub fn zeros_compressible(
        dev: &Arc<GpuDevice>,
        n: usize,
        what: &str,
    ) -> Result<DeviceVec<T>, GpuError> {
        if n == 0 {
            return Self::zeros(dev, 0, what);
        }
        let mem = CompressibleAlloc::new(dev, n * std::mem::size_of::<T>())?;
        // SAFETY: the allocation holds at least n values and outlives the slice (it is
        // released only after the slice is leaked, in Drop); zeroed below.
        let buf = unsafe { dev.stream().upgrade_device_ptr::<T>(mem.ptr, n) };
        let mut v = DeviceVec {
            buf: ManuallyDrop::new(buf),
            dev: dev.clone(),
            compressible: Some(mem),
        };
        v.fill_zero()?;
        Ok(v)
    }

    /// A zero vector of length `n`, in compressible memory when `compressible` and the
    /// device can compress, in plain memory otherwise: for data that compression only
    /// speeds up (operator outputs, index arrays), where plain memory is a correct fallback.
    pub fn zeros_preferably_compressible(
        dev: &Arc<GpuDevice>,
        n: usize,
        what: &str,
        compressible: bool,
    ) -> Result<DeviceVec<T>, GpuError> {
        if compressible {
            match Self::zeros_compressible(dev, n, what) {
                Err(GpuError::Unsupported(_)) => {}
                r => return r,
            }
        }
        Self::zeros(dev, n, what)
    }

    /// Whether the vector lives in compressible memory.
    pub fn is_compressible(&self) -> bool {
        self.compressible.is_some()
    }

    /// Copies `host` to a new device vector.
    pub fn from_host(
        dev: &Arc<GpuDevice>,
        host: &[T],
        what: &str,
    ) -> Result<DeviceVec<T>, GpuError> {
        let bytes = std::mem::size_of_val(host);
        if host.is_empty() {
            return Self::zeros(dev, 0, what);
        }
        let buf = dev
            .stream()
            .clone_htod(host)
            .map_err(|e| GpuError::alloc(bytes, what, e))?;
        Ok(DeviceVec {
            buf: ManuallyDrop::new(buf),
            dev: dev.clone(),
            compressible: None,
        })
    }

    /// Overwrites the vector with `host` (same length).
    pub fn upload(&mut self, host: &[T]) -> Result<(), GpuError> {
        if host.len() != self.len() {
            return Err(GpuError::Size {
                what: "upload",
                expected: self.len(),
                got: host.len(),
            });
        }
        self.dev
            .stream()
            .memcpy_htod(host, &mut *self.buf)
            .map_err(|e| GpuError::driver("copying to the device", e))
    }

    /// Copies the vector to the host.
    pub fn to_host(&self) -> Result<Vec<T>, GpuError> {
        self.dev
            .stream()
            .clone_dtoh(&*self.buf)
            .map_err(|e| GpuError::driver("copying to the host", e))
    }

    /// Sets every entry to zero.
    pub fn fill_zero(&mut self) -> Result<(), GpuError> {
        self.dev
            .stream()
            .memset_zeros(&mut *self.buf)
            .map_err(|e| GpuError::driver("zeroing a vector", e))
    }

    /// Sets entries `0..n` to zero.
    pub fn fill_zero_prefix(&mut self, n: usize) -> Result<(), GpuError> {
        let n = n.min(self.len());
        if n == 0 {
            return Ok(());
        }
        let mut view = self.buf.slice_mut(0..n);
        self.dev
            .stream()
            .memset_zeros(&mut view)
            .map_err(|e| GpuError::driver("zeroing a vector", e))
    }

    /// Copies `src` (same length) into this vector on the device.
    pub fn copy_from(&mut self, src: &DeviceVec<T>) -> Result<(), GpuError> {
        if src.len() != self.len() {
            return Err(GpuError::Size {
                what: "device copy",
                expected: self.len(),
                got: src.len(),
            });
        }
        self.dev
            .stream()
            .memcpy_dtod(&*src.buf, &mut *self.buf)
            .map_err(|e| GpuError::driver("device-to-device copy", e))
    }
}

impl<T: DeviceRepr> DeviceVec<T> {
    /// Length.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// True for an empty vector.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == 0
    }
    /// The underlying slice, to pass to kernels.
    pub fn slice(&self) -> &CudaSlice<T> {
        &self.buf
    }
    /// The underlying slice, mutably.
    pub fn slice_mut(&mut self) -> &mut CudaSlice<T> {
        &mut self.buf
    }
    /// The device.
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.dev
    }
}
