//! Point-to-point transfers between the GPUs of a distributed run through NCCL, opened at
//! run time from the system's library.
//!
//! NCCL's runtime package installs only `libnccl.so.2` (the unversioned name comes with the
//! development package), a name `cudarc`'s NCCL loader does not look for; the few entry
//! points the halo exchange needs are therefore opened here. A machine without NCCL gets a
//! typed error ([`GpuError::Ranks`]) from [`NcclComm::new`], never a panic.

use crate::GpuError;
use cudarc::driver::sys::CUstream;
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::OnceLock;

/// The library names tried, in order.
const LIBRARY_NAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// NCCL's `ncclComm_t`.
type RawComm = *mut c_void;
/// NCCL's `ncclResult_t` (0 is success).
type RawResult = c_int;

/// NCCL's `ncclUniqueId`: what rank 0 creates and every rank passes to the initialisation.
#[repr(C)]
#[derive(Clone, Copy)]
struct RawUniqueId {
    internal: [c_char; UNIQUE_ID_BYTES],
}

/// The size of NCCL's unique id.
pub const UNIQUE_ID_BYTES: usize = 128;

/// The entry points used, resolved once per process.
struct Api {
    /// Kept open for the entry points below.
    _library: Library,
    version: unsafe extern "C" fn(*mut c_int) -> RawResult,
    unique_id: unsafe extern "C" fn(*mut RawUniqueId) -> RawResult,
    init_rank: unsafe extern "C" fn(*mut RawComm, c_int, RawUniqueId, c_int) -> RawResult,
    destroy: unsafe extern "C" fn(RawComm) -> RawResult,
    send: unsafe extern "C" fn(*const c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    recv: unsafe extern "C" fn(*mut c_void, usize, c_int, c_int, RawComm, CUstream) -> RawResult,
    group_start: unsafe extern "C" fn() -> RawResult,
    group_end: unsafe extern "C" fn() -> RawResult,
    error_string: unsafe extern "C" fn(RawResult) -> *const c_char,
}

impl Api {
    fn open() -> Result<Api, String> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            // SAFETY: NCCL's initialisers have no preconditions.
            match unsafe { Library::new(name) } {
                Ok(library) => return Api::resolve(library).map_err(|e| format!("{name}: {e}")),
                Err(e) => tried.push(format!("{name}: {e}")),
            }
        }
        Err(format!("NCCL not found ({})", tried.join("; ")))
    }

    fn resolve(library: Library) -> Result<Api, libloading::Error> {
        // SAFETY: each symbol is NCCL's function of that name, with the signature of
        // nccl.h (2.x); the pointers stay valid while `library` is held in the `Api`.
        unsafe {
            Ok(Api {
                version: *library.get(b"ncclGetVersion\0")?,
                unique_id: *library.get(b"ncclGetUniqueId\0")?,
                init_rank: *library.get(b"ncclCommInitRank\0")?,
                destroy: *library.get(b"ncclCommDestroy\0")?,
                send: *library.get(b"ncclSend\0")?,
                recv: *library.get(b"ncclRecv\0")?,
                group_start: *library.get(b"ncclGroupStart\0")?,
                group_end: *library.get(b"ncclGroupEnd\0")?,
                error_string: *library.get(b"ncclGetErrorString\0")?,
                _library: library,
            })
        }
    }

    /// `Ok` for success, else NCCL's message for `code` naming `what`.
    fn check(&self, code: RawResult, what: &str) -> Result<(), GpuError> {
        if code == 0 {
            return Ok(());
        }
        // SAFETY: NCCL returns a static, NUL-terminated string for every code.
        let message = unsafe { CStr::from_ptr((self.error_string)(code)) };
        Err(GpuError::Ranks(format!(
            "NCCL, {what}: {} (code {code})",
            message.to_string_lossy()
        )))
    }
}

fn api() -> Result<&'static Api, GpuError> {
    static API: OnceLock<Result<Api, String>> = OnceLock::new();
    API.get_or_init(Api::open)
        .as_ref()
        .map_err(|e| GpuError::Ranks(e.clone()))
}

/// Whether NCCL can be opened here.
pub fn available() -> bool {
    api().is_ok()
}

/// NCCL's version (e.g. 22807 for 2.28.7).
pub fn version() -> Result<i32, GpuError> {
    let api = api()?;
    let mut v: c_int = 0;
    // SAFETY: `v` is a valid out-pointer.
    api.check(unsafe { (api.version)(&mut v) }, "reading the version")?;
    Ok(v)
}

/// A new unique id (made on one rank and given to all, as the bytes of
/// [`UNIQUE_ID_BYTES`]).
pub fn unique_id() -> Result<[u8; UNIQUE_ID_BYTES], GpuError> {
    let api = api()?;
    let mut id = RawUniqueId {
        internal: [0; UNIQUE_ID_BYTES],
    };
    // SAFETY: `id` is a valid out-pointer.
    api.check(
        unsafe { (api.unique_id)(&mut id) },
        "creating the unique id",
    )?;
    Ok(id.internal.map(|c| c as u8))
}

/// A value NCCL transfers.
pub trait NcclValue: DeviceRepr {
    /// NCCL's `ncclDataType_t` of the type.
    const DATA_TYPE: c_int;
}

impl NcclValue for f32 {
    const DATA_TYPE: c_int = 7;
}

impl NcclValue for f64 {
    const DATA_TYPE: c_int = 8;
}

/// One rank's member of an NCCL communicator over all ranks.
pub struct NcclComm {
    api: &'static Api,
    comm: RawComm,
}

// SAFETY: the communicator is used by one thread at a time (its owner's, through `&mut`
// or while no other call is in flight), which NCCL allows from any thread.
unsafe impl Send for NcclComm {}
// SAFETY: as above: shared references only read the handle.
unsafe impl Sync for NcclComm {}

impl NcclComm {
    /// This process's member of the communicator of `size` ranks with id `id` (every rank
    /// passes the same id), on the device whose context is current on this thread.
    /// Collective: every rank calls it.
    pub fn new(rank: usize, size: usize, id: &[u8; UNIQUE_ID_BYTES]) -> Result<Self, GpuError> {
        let api = api()?;
        let id = RawUniqueId {
            internal: id.map(|b| b as c_char),
        };
        let mut comm: RawComm = std::ptr::null_mut();
        let (rank, size) = (to_int(rank)?, to_int(size)?);
        // SAFETY: `comm` is a valid out-pointer; the id is passed by value as nccl.h says.
        api.check(
            unsafe { (api.init_rank)(&mut comm, size, id, rank) },
            "joining the communicator",
        )?;
        Ok(NcclComm { api, comm })
    }

    /// On `stream`, sends `send[offsets[i]..offsets[i + 1]]` to rank `peers[i]` and
    /// receives the same range of `recv` from it, for every `i`, as one group (so that
    /// the pairs cannot deadlock). The peers must do the same with this rank.
    pub fn exchange<T: NcclValue>(
        &self,
        stream: &CudaStream,
        peers: &[usize],
        offsets: &[usize],
        send: &CudaSlice<T>,
        recv: &mut CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let end = offsets.last().copied().unwrap_or(0);
        if offsets.len() != peers.len() + 1 || send.len() < end || recv.len() < end {
            return Err(GpuError::Ranks(format!(
                "NCCL exchange: {} peers with {} offsets over buffers of {} and {} values",
                peers.len(),
                offsets.len(),
                send.len(),
                recv.len()
            )));
        }
        let peers: Vec<c_int> = peers.iter().map(|&r| to_int(r)).collect::<Result<_, _>>()?;
        let size = std::mem::size_of::<T>() as u64;
        let (send_ptr, _send_sync) = send.device_ptr(stream);
        let (recv_ptr, _recv_sync) = recv.device_ptr_mut(stream);
        let cu_stream = stream.cu_stream();
        let api = self.api;
        // SAFETY: NCCL's group calls have no preconditions.
        api.check(unsafe { (api.group_start)() }, "starting the group")?;
        let mut queued = Ok(());
        // (nothing returns between the group's start and end)
        for (i, &peer) in peers.iter().enumerate() {
            let (start, count) = (offsets[i], offsets[i + 1].saturating_sub(offsets[i]));
            let at = size * start as u64;
            // SAFETY: the ranges lie within the device buffers (checked above), which
            // outlive the transfer: the caller orders their next use after it on `stream`.
            let sent = unsafe {
                (api.send)(
                    (send_ptr + at) as *const c_void,
                    count,
                    T::DATA_TYPE,
                    peer,
                    self.comm,
                    cu_stream,
                )
            };
            // SAFETY: as for the send.
            let received = unsafe {
                (api.recv)(
                    (recv_ptr + at) as *mut c_void,
                    count,
                    T::DATA_TYPE,
                    peer,
                    self.comm,
                    cu_stream,
                )
            };
            queued = api
                .check(sent, "queueing a send")
                .and_then(|()| api.check(received, "queueing a receive"));
            if queued.is_err() {
                break;
            }
        }
        // SAFETY: closes the group opened above.
        let ended = api.check(unsafe { (api.group_end)() }, "ending the group");
        queued.and(ended)
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // SAFETY: the handle came from ncclCommInitRank and is destroyed once.
        unsafe {
            (self.api.destroy)(self.comm);
        }
    }
}

fn to_int(x: usize) -> Result<c_int, GpuError> {
    c_int::try_from(x).map_err(|_| GpuError::Ranks(format!("rank {x} out of NCCL's range")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where NCCL is not installed, asking for it is a typed error naming the library, not
    /// a panic; where it is, the version is 2.x and an id is made.
    #[test]
    fn nccl_opens_or_says_why() {
        match (version(), unique_id()) {
            (Ok(v), Ok(id)) => {
                assert!((20000..30000).contains(&v), "version {v}");
                assert!(id.iter().any(|&b| b != 0));
                assert!(available());
            }
            (Err(e), Err(_)) => {
                assert!(!available());
                assert!(e.to_string().contains("libnccl.so.2"), "{e}");
            }
            (v, id) => panic!("NCCL half open: {v:?} / {:?}", id.map(|_| ())),
        }
    }
}
