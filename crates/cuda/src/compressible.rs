//! Device memory with generic data compression (Ampere and later): a buffer that holds
//! many zeros, such as an operator's output between the skeleton fill and the
//! accumulation, moves fewer bytes between L2 and DRAM, because the hardware stores
//! compressible lines compressed. Incompressible data costs what plain memory costs.
//!
//! Allocated through the driver's virtual memory management (reserve, create with the
//! compression hint, map, grant access), which is the only way to ask for it.

use crate::{GpuDevice, GpuError};
use cudarc::driver::sys;

/// One compressible allocation, mapped read-write for its device; unmapped and released on
/// drop (after the device's stream has drained: unmapping is not stream-ordered).
#[derive(Debug)]
pub(crate) struct CompressibleAlloc {
    pub(crate) ptr: sys::CUdeviceptr,
    size: usize,
    handle: sys::CUmemGenericAllocationHandle,
    stream: std::sync::Arc<cudarc::driver::CudaStream>,
}

fn check(r: sys::CUresult, during: &str) -> Result<(), GpuError> {
    r.result().map_err(|e| GpuError::driver(during, e))
}

impl CompressibleAlloc {
    /// At least `bytes` of compressible memory on `dev`; a typed error where the device or
    /// driver cannot compress (the caller then falls back to plain memory if it wishes).
    pub(crate) fn new(dev: &GpuDevice, bytes: usize) -> Result<CompressibleAlloc, GpuError> {
        use sys::CUdevice_attribute as A;
        let ctx = dev.context();
        ctx.bind_to_thread()
            .map_err(|e| GpuError::driver("binding the context", e))?;
        let supported = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED)
            .map_err(|e| GpuError::driver("reading attributes", e))?;
        let vmm = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED)
            .map_err(|e| GpuError::driver("reading attributes", e))?;
        if supported == 0 || vmm == 0 {
            return Err(GpuError::Unsupported(format!(
                "{} has no generic memory compression",
                dev.name()
            )));
        }
        // SAFETY: an all-zero allocation property is valid; the fields used are set below.
        let mut prop: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        prop.type_ = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        prop.location = sys::CUmemLocation {
            type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
            id: dev.ordinal() as i32,
        };
        prop.allocFlags.compressionType =
            sys::CUmemAllocationCompType::CU_MEM_ALLOCATION_COMP_GENERIC as u8;
        let mut gran = 0usize;
        // SAFETY: out-parameter and a valid property.
        check(
            unsafe {
                sys::cuMemGetAllocationGranularity(
                    &mut gran,
                    &prop,
                    sys::CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_RECOMMENDED,
                )
            },
            "querying the allocation granularity",
        )?;
        let size = bytes.max(1).next_multiple_of(gran.max(1));
        let mut handle: sys::CUmemGenericAllocationHandle = 0;
        // SAFETY: out-parameter and a valid property.
        unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) }
            .result()
            .map_err(|e| GpuError::alloc(size, "compressible memory", e))?;
        let release = |h| {
            // SAFETY: `h` came from cuMemCreate and is not mapped.
            unsafe { sys::cuMemRelease(h) };
        };
        // the flag is a hint: keep the allocation only if it really is compressible
        // SAFETY: an all-zero property is a valid out-parameter.
        let mut got: sys::CUmemAllocationProp = unsafe { std::mem::zeroed() };
        // SAFETY: out-parameter and a live handle.
        let r = unsafe { sys::cuMemGetAllocationPropertiesFromHandle(&mut got, handle) };
        if r.result().is_err()
            || got.allocFlags.compressionType
                != sys::CUmemAllocationCompType::CU_MEM_ALLOCATION_COMP_GENERIC as u8
        {
            release(handle);
            return Err(GpuError::Unsupported(
                "the driver granted no compressible memory".into(),
            ));
        }
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: out-parameter; any suitably aligned free range.
        if let Err(e) = check(
            unsafe { sys::cuMemAddressReserve(&mut ptr, size, 0, 0, 0) },
            "reserving an address range",
        ) {
            release(handle);
            return Err(e);
        }
        // SAFETY: `ptr` reserves `size` bytes and `handle` holds `size` bytes.
        if let Err(e) = check(
            unsafe { sys::cuMemMap(ptr, size, 0, handle, 0) },
            "mapping compressible memory",
        ) {
            // SAFETY: the range was reserved above and is not mapped.
            unsafe { sys::cuMemAddressFree(ptr, size) };
            release(handle);
            return Err(e);
        }
        let alloc = CompressibleAlloc {
            ptr,
            size,
            handle,
            stream: dev.stream().clone(),
        };
        let access = sys::CUmemAccessDesc {
            location: prop.location,
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        // SAFETY: the range is mapped; one descriptor. On error `alloc` is dropped, which
        // unmaps and releases it.
        check(
            unsafe { sys::cuMemSetAccess(ptr, size, &access, 1) },
            "granting access to compressible memory",
        )?;
        Ok(alloc)
    }
}

impl Drop for CompressibleAlloc {
    fn drop(&mut self) {
        // work queued on the stream may still use the memory
        let _ = self.stream.synchronize();
        // SAFETY: the range was mapped by `new` from `handle`; nothing uses it any more.
        unsafe {
            sys::cuMemUnmap(self.ptr, self.size);
            sys::cuMemAddressFree(self.ptr, self.size);
            sys::cuMemRelease(self.handle);
        }
    }
}
