//! The halo of one rank's part of a distributed mesh on its GPU: the values a vector holds
//! at the nodes shared with other ranks, packed on the device, carried to the neighbours'
//! GPUs and summed in rank order (every holder gets the same bits, those of the host's
//! sum), for the wave step's stiffness and the distributed Krylov solvers' operator.
//!
//! Two transports: NCCL, device to device, queued on a stream of the highest priority
//! (nothing waits on the host), or copies through page-locked host memory and the host's
//! exchange (MPI), for machines without NCCL or where ranks share a GPU. The choice is
//! collective ([`HaloTransport::choose`]); `FERROFEM_GPU_EXCHANGE=nccl|host` forces it.

use crate::compile::KernelSpec;
use crate::nccl::{self, NcclComm, UNIQUE_ID_BYTES};
use crate::{sources, DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::{
    CudaEvent, CudaFunction, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use ferrofem_wave::distribution::exchange_packed;
use ferrofem_wave::{NodeExchange, WaveError};
use std::sync::Arc;

// (halo_combine marks a rank's own term as 0xffffffff)
const _: () = assert!(ferrofem_space::OWN_VALUE == u32::MAX);

/// The environment variable that picks the halo's transport: `nccl`, `host`, or unset
/// (NCCL where every rank has its own GPU and can open NCCL, else the host).
pub const TRANSPORT_VARIABLE: &str = "FERROFEM_GPU_EXCHANGE";

/// Threads per block of the halo kernels.
const BLOCK: u32 = 256;

/// The halo kernels for one precision.
struct HaloKernels {
    pack: CudaFunction,
    combine: CudaFunction,
}

impl HaloKernels {
    /// Compiles (or loads from the cache) the halo kernels of `T`.
    fn new<T: GpuReal>(dev: &GpuDevice) -> Result<HaloKernels, GpuError> {
        let spec = kernel_spec::<T>();
        Ok(HaloKernels {
            pack: dev.function(&spec, "halo_pack")?,
            combine: dev.function(&spec, "halo_combine")?,
        })
    }
}

/// The halo kernels' specialisation for `T`.
pub fn kernel_spec<T: GpuReal>() -> KernelSpec {
    KernelSpec::new(
        format!("halo_{}", T::NAME),
        sources::with_prelude(sources::HALO),
    )
    .define("REAL", T::CTYPE)
}

/// How the values travel between the ranks' GPUs: chosen once for all ranks.
pub enum HaloTransport {
    /// NCCL, device to device.
    Nccl(Arc<NcclComm>),
    /// Page-locked host memory and the host's exchange.
    Host,
}

/// Which transport was asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wanted {
    Nccl,
    Host,
    Either,
}

fn wanted() -> Result<Wanted, GpuError> {
    match std::env::var(TRANSPORT_VARIABLE) {
        Err(_) => Ok(Wanted::Either),
        Ok(v) => match v.trim() {
            "" => Ok(Wanted::Either),
            "nccl" => Ok(Wanted::Nccl),
            "host" => Ok(Wanted::Host),
            other => Err(GpuError::Ranks(format!(
                "{TRANSPORT_VARIABLE}={other}: expected `nccl` or `host`"
            ))),
        },
    }
}

fn ranks_err(e: WaveError) -> GpuError {
    GpuError::Ranks(e.to_string())
}

impl HaloTransport {
    /// NCCL where every rank can take part (NCCL opens, no two ranks on one GPU) and it is
    /// not refused by [`TRANSPORT_VARIABLE`], else the host's. Collective: every rank calls
    /// it with its device and comes to the same answer; NCCL's communicator spans all
    /// ranks.
    pub fn choose(dev: &GpuDevice, exchange: &dyn NodeExchange) -> Result<Self, GpuError> {
        let wanted = wanted();
        // a rank whose variable is malformed still answers the collective calls below
        let want = *wanted.as_ref().unwrap_or(&Wanted::Host);
        let uuid = dev
            .context()
            .uuid()
            .map_err(|e| GpuError::driver("reading the GPU's UUID", e))?;
        let key = uuid
            .bytes
            .iter()
            .enumerate()
            .fold(0u64, |k, (i, &b)| k ^ (u64::from(b as u8) << (8 * (i % 8))));
        let mut keys = exchange.gather_u64(key).map_err(ranks_err)?;
        keys.sort_unstable();
        let gpu_shared = keys.windows(2).any(|w| w[0] == w[1]);
        let reason = if wanted.is_err() {
            Some("a malformed choice of transport")
        } else if want == Wanted::Host {
            Some("the host's transport asked for")
        } else if gpu_shared {
            Some("two ranks share a GPU")
        } else if !nccl::available() {
            Some("NCCL does not open")
        } else {
            None
        };
        let refusing = exchange
            .first_rank_with(reason.is_some())
            .map_err(ranks_err)?;
        wanted?;
        if let Some(r) = refusing {
            if want == Wanted::Nccl {
                return Err(GpuError::Ranks(format!(
                    "{TRANSPORT_VARIABLE}=nccl, but rank {r} cannot use NCCL{}",
                    match (r == exchange.rank(), reason) {
                        (true, Some(why)) => format!(" ({why})"),
                        _ => String::new(),
                    }
                )));
            }
            return Ok(HaloTransport::Host);
        }
        // rank 0 makes the id and every rank takes it, 8 bytes at a time
        let made = if exchange.rank() == 0 {
            nccl::unique_id().map(Some)
        } else {
            Ok(None)
        };
        if exchange
            .first_rank_with(made.is_err())
            .map_err(ranks_err)?
            .is_some()
        {
            made?;
            return Err(GpuError::Ranks(
                "rank 0 could not create NCCL's unique id".into(),
            ));
        }
        let own = made?.unwrap_or([0; UNIQUE_ID_BYTES]);
        let mut id = [0u8; UNIQUE_ID_BYTES];
        for (chunk, mine) in id.chunks_mut(8).zip(own.chunks(8)) {
            let word = mine
                .iter()
                .enumerate()
                .fold(0u64, |w, (i, &b)| w | (u64::from(b) << (8 * i)));
            let all = exchange.gather_u64(word).map_err(ranks_err)?;
            for (i, byte) in chunk.iter_mut().enumerate() {
                *byte = (all[0] >> (8 * i)) as u8;
            }
        }
        dev.context()
            .bind_to_thread()
            .map_err(|e| GpuError::driver("making the GPU current for NCCL", e))?;
        let comm = NcclComm::new(exchange.rank(), exchange.size(), &id)?;
        Ok(HaloTransport::Nccl(Arc::new(comm)))
    }

    /// `"NCCL"` or `"host"`.
    pub fn name(&self) -> &'static str {
        match self {
            HaloTransport::Nccl(_) => "NCCL",
            HaloTransport::Host => "host",
        }
    }
}

/// The transport's buffers and streams.
enum Carrier<T: GpuReal> {
    Nccl {
        /// Of the highest priority: its kernels take SMs as a running kernel's blocks free
        /// them, not after its last block has started.
        stream: Arc<CudaStream>,
        comm: Arc<NcclComm>,
        /// Set between [`DeviceHalo::start`] and [`DeviceHalo::finish`].
        received: Option<CudaEvent>,
    },
    Host {
        side: Arc<CudaStream>,
        host_send: PinnedHostSlice<T>,
        host_recv: PinnedHostSlice<T>,
    },
}

/// The halo of one part's vectors on its GPU (see the module's documentation).
pub struct DeviceHalo<T: GpuReal> {
    exchange: Arc<dyn NodeExchange>,
    kernels: HaloKernels,
    nc: usize,
    /// The vectors' node of every sent value, in the plan's order.
    send_nodes: DeviceVec<u32>,
    /// The shared nodes (the vectors' numbering) and their terms in rank order.
    nodes: DeviceVec<u32>,
    term_offsets: DeviceVec<u32>,
    terms: DeviceVec<u32>,
    send: DeviceVec<T>,
    recv: DeviceVec<T>,
    /// Per neighbour (increasing rank), where its values start; one more at the end.
    offsets: Vec<usize>,
    carrier: Carrier<T>,
}

impl<T: GpuReal> DeviceHalo<T> {
    /// The halo of the part whose exchange is `exchange`, for vectors of `nc` values per
    /// node numbered by `index_of` (a local node of the exchange's space to the vectors'
    /// node); `None` where the part shares no node. Fails where a shared node has no index.
    pub fn new(
        dev: &Arc<GpuDevice>,
        exchange: &Arc<dyn NodeExchange>,
        transport: &HaloTransport,
        nc: usize,
        index_of: impl Fn(u32) -> Option<u32>,
    ) -> Result<Option<Self>, GpuError> {
        let plan = exchange.sum_plan();
        if plan.nodes.is_empty() {
            return Ok(None);
        }
        let map = |nodes: &[u32]| -> Result<Vec<u32>, GpuError> {
            nodes
                .iter()
                .map(|&n| {
                    index_of(n).ok_or_else(|| {
                        GpuError::Unsupported(format!(
                            "the shared node {n} has no place in the device's vectors"
                        ))
                    })
                })
                .collect()
        };
        let len = plan.num_sent() * nc;
        let ctx = dev.context();
        let carrier = match transport {
            HaloTransport::Nccl(comm) => {
                ctx.bind_to_thread()
                    .map_err(|e| GpuError::driver("making the GPU current", e))?;
                let (_, greatest) = cudarc::driver::result::stream::get_priority_range()
                    .map_err(|e| GpuError::driver("reading the streams' priorities", e))?;
                Carrier::Nccl {
                    stream: ctx
                        .new_stream_with_priority(greatest)
                        .map_err(|e| GpuError::driver("creating the halo's stream", e))?,
                    comm: comm.clone(),
                    received: None,
                }
            }
            HaloTransport::Host => {
                let pinned = |e| GpuError::driver("allocating the page-locked halo", e);
                // SAFETY: the page-locked buffers are written (by a copy or the exchange)
                // before they are read.
                let (host_send, host_recv) = unsafe {
                    (
                        ctx.alloc_pinned_with_flags::<T>(len, 0).map_err(pinned)?,
                        ctx.alloc_pinned_with_flags::<T>(len, 0).map_err(pinned)?,
                    )
                };
                Carrier::Host {
                    side: ctx
                        .new_stream()
                        .map_err(|e| GpuError::driver("creating the halo's stream", e))?,
                    host_send,
                    host_recv,
                }
            }
        };
        Ok(Some(DeviceHalo {
            exchange: exchange.clone(),
            kernels: HaloKernels::new::<T>(dev)?,
            nc,
            send_nodes: DeviceVec::from_host(dev, &map(&plan.send_nodes)?, "halo nodes")?,
            nodes: DeviceVec::from_host(dev, &map(&plan.nodes)?, "shared nodes")?,
            term_offsets: DeviceVec::from_host(dev, &plan.source_offsets, "halo terms")?,
            terms: DeviceVec::from_host(dev, &plan.sources, "halo terms")?,
            send: DeviceVec::zeros(dev, len, "halo")?,
            recv: DeviceVec::zeros(dev, len, "halo")?,
            offsets: plan.offsets.iter().map(|&o| o * nc).collect(),
            carrier,
        }))
    }

    fn grid(&self, n: usize) -> LaunchConfig {
        LaunchConfig {
            grid_dim: ((n * self.nc).div_ceil(BLOCK as usize).max(1) as u32, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Packs the shared values of `v` on `main` and starts sending them (NCCL: queued on
    /// its stream; host: the copy to host memory queued on the side stream). Work queued
    /// on `main` afterwards runs beside the transfer; [`DeviceHalo::finish`] completes it.
    pub fn start(&mut self, main: &CudaStream, v: &CudaSlice<T>) -> Result<(), GpuError> {
        let n_sent = self.send_nodes.len();
        let (n, nc) = (n_sent as u32, self.nc as u32);
        let cfg = self.grid(n_sent);
        let mut b = main.launch_builder(&self.kernels.pack);
        b.arg(&n)
            .arg(&nc)
            .arg(self.send_nodes.slice())
            .arg(v)
            .arg(self.send.slice_mut());
        // SAFETY: matches halo_pack's parameters; the sent nodes index `v` (by the map).
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::driver("launching halo_pack", e))?;
        let packed = main
            .record_event(None)
            .map_err(|e| GpuError::driver("recording the packed halo", e))?;
        let exchange = &self.exchange;
        match &mut self.carrier {
            Carrier::Nccl {
                stream,
                comm,
                received,
            } => {
                stream.wait(&packed).map_err(|e| {
                    GpuError::driver("ordering the halo's transfer after its packing", e)
                })?;
                comm.exchange(
                    stream,
                    exchange.neighbours(),
                    &self.offsets,
                    self.send.slice(),
                    self.recv.slice_mut(),
                )?;
                *received = Some(
                    stream
                        .record_event(None)
                        .map_err(|e| GpuError::driver("recording the received halo", e))?,
                );
            }
            Carrier::Host {
                side, host_send, ..
            } => {
                side.wait(&packed).map_err(|e| {
                    GpuError::driver("ordering the halo's copy after its packing", e)
                })?;
                side.memcpy_dtoh(self.send.slice(), host_send)
                    .map_err(|e| GpuError::driver("copying the halo to the host", e))?;
            }
        }
        Ok(())
    }

    /// Completes the transfer [`DeviceHalo::start`] began (host: waits for the copy out,
    /// exchanges, copies the neighbours' values in) and, on `main`, once they are there,
    /// sums every shared node of `v` in rank order.
    pub fn finish(&mut self, main: &CudaStream, v: &mut CudaSlice<T>) -> Result<(), GpuError> {
        let received = match &mut self.carrier {
            Carrier::Nccl { received, .. } => received.take().ok_or_else(|| {
                GpuError::Ranks("the halo was finished without being started".into())
            })?,
            Carrier::Host {
                side,
                host_send,
                host_recv,
            } => {
                // (the context does not track events: the page-locked buffers' own events
                // are never recorded, so the side stream is waited for explicitly; this
                // also orders the last copy out of `host_recv` before it is written again)
                side.synchronize()
                    .map_err(|e| GpuError::driver("waiting for the halo's copy", e))?;
                {
                    let send = host_send
                        .as_slice()
                        .map_err(|e| GpuError::driver("waiting for the halo's copy", e))?;
                    let recv = host_recv
                        .as_mut_slice()
                        .map_err(|e| GpuError::driver("waiting for the halo's buffer", e))?;
                    exchange_packed(&*self.exchange, send, recv, self.nc)
                        .map_err(|e| GpuError::Ranks(e.to_string()))?;
                }
                side.memcpy_htod(&*host_recv, self.recv.slice_mut())
                    .map_err(|e| GpuError::driver("copying the neighbours' halo in", e))?;
                side.record_event(None)
                    .map_err(|e| GpuError::driver("recording the received halo", e))?
            }
        };
        main.wait(&received)
            .map_err(|e| GpuError::driver("ordering the sums after the halo", e))?;
        let n_nodes = self.nodes.len();
        let (n, nc) = (n_nodes as u32, self.nc as u32);
        let cfg = self.grid(n_nodes);
        let mut b = main.launch_builder(&self.kernels.combine);
        b.arg(&n)
            .arg(&nc)
            .arg(self.nodes.slice())
            .arg(self.term_offsets.slice())
            .arg(self.terms.slice())
            .arg(self.recv.slice())
            .arg(v);
        // SAFETY: matches halo_combine's parameters; the shared nodes index `v` and every
        // term indexes the received values or is this rank's own.
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::driver("launching halo_combine", e))?;
        Ok(())
    }

    /// [`DeviceHalo::start`] and [`DeviceHalo::finish`]: `v` summed at the shared nodes.
    pub fn sum(&mut self, main: &CudaStream, v: &mut CudaSlice<T>) -> Result<(), GpuError> {
        self.start(main, v)?;
        self.finish(main, v)
    }
}
