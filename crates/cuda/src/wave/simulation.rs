//! The whole time loop of a wave simulation on the device.

use super::halo::RankLink;
use super::kernel::{wave_kernel, WaveKernelShape};
use super::layout::WaveLayout;
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::{
    CudaFunction, CudaGraph, CudaSlice, CudaStream, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::{FactorLayout, TensorOperator};
use ferrofem_space::H1Space;
use ferrofem_wave::{blow_up_error, BlowUpWatch, Simulation, WaveError, WaveKind};
use rayon::prelude::*;
use std::sync::Arc;

/// The highest order the wave kernels are specialised and tested for (higher orders run on
/// the CPU).
pub const MAX_GPU_ORDER: usize = 8;

/// Threads per block of the vector kernels.
const VECTOR_BLOCK: u32 = 256;

/// Receiver samples buffered on the device before they are copied back.
const SAMPLE_BATCH: usize = 512;
/// Plain steps replayed from one CUDA graph (even: the fields end where they started).
const GRAPH_STEPS: usize = 16;
const _: () = assert!(GRAPH_STEPS % 2 == 0 && GRAPH_STEPS <= SAMPLE_BATCH);

/// What a device time loop can fail with: the device, or the simulation (a blow-up).
#[derive(Debug, thiserror::Error)]
pub enum GpuWaveError {
    /// The device failed (or the case is not supported on it).
    #[error(transparent)]
    Gpu(#[from] GpuError),
    /// The simulation failed (a blow-up, with its step and place).
    #[error(transparent)]
    Wave(#[from] WaveError),
}

/// The bytes and flops of one step by the model of [`GpuWave::model`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaveModel {
    /// Bytes moved between the device memory and the chip.
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
}

/// Seconds of one step and of its stiffness kernel ([`GpuWave::benchmark`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WaveTimings {
    /// The step: stiffness, skeleton and absorbing updates (no sources, no receivers).
    pub step: f64,
    /// The stiffness kernel alone.
    pub stiffness: f64,
}

/// The `kfull` argument of the step kernels: the vector on energy steps, a null pointer
/// otherwise.
enum KfullArg<'a, T> {
    Vector(&'a cudarc::driver::CudaSlice<T>),
    Null(u64),
}

impl<T> KfullArg<'_, T> {
    fn push<'b>(&'b self, b: &mut cudarc::driver::LaunchArgs<'b>) {
        match self {
            KfullArg::Vector(v) => {
                b.arg(*v);
            }
            KfullArg::Null(z) => {
                b.arg(z);
            }
        }
    }
}

/// The kernels of one specialisation.
struct Kernels {
    stiffness: CudaFunction,
    update: CudaFunction,
    absorb: CudaFunction,
    inject: CudaFunction,
    record: CudaFunction,
    tick: CudaFunction,
    energy: CudaFunction,
}

/// A wave simulation whose time loop runs on the GPU: the stiffness action with the
/// leapfrog update of element-interior nodes in one kernel, the skeleton's and the
/// absorbing nodes' updates, the sources and the receivers, all on the device; the
/// seismograms are copied back in batches.
///
/// It is built from a [`Simulation`] (which has checked the input and set up the mass, the
/// boundaries, the sources, the receivers and the step) and runs the same steps: the same
/// seismograms up to rounding.
pub struct GpuWave<T: GpuReal> {
    dev: Arc<GpuDevice>,
    kernels: Kernels,
    shape: WaveKernelShape,
    layout: WaveLayout,
    space: H1Space,
    nelem: usize,
    u: DeviceVec<T>,
    up: DeviceVec<T>,
    ku: DeviceVec<T>,
    step_scale: DeviceVec<T>,
    skeleton: DeviceVec<u32>,
    factors: DeviceVec<T>,
    absorbing: DeviceVec<f64>,
    /// The sources' loads at skeleton dofs, taken out of `ku` before the stiffness.
    load_target: DeviceVec<u32>,
    load_source: DeviceVec<u32>,
    load_coef: DeviceVec<f64>,
    /// The sources at element-interior dofs, into `u⁺` after the stiffness kernel.
    inject_target: DeviceVec<u32>,
    inject_source: DeviceVec<u32>,
    inject_coef: DeviceVec<f64>,
    wavelets: DeviceVec<f64>,
    receiver_nodes: DeviceVec<u32>,
    receiver_values: DeviceVec<f64>,
    /// `[sample][receiver][component]`, [`SAMPLE_BATCH`] samples.
    samples: DeviceVec<f64>,
    /// Samples in `samples` not yet copied back.
    pending: usize,
    /// The first sample held in `samples`.
    pending_from: usize,
    /// `K u − F` at every dof, written on energy steps only.
    kfull: DeviceVec<T>,
    force_dof: DeviceVec<u32>,
    force_source: DeviceVec<u32>,
    /// Minus the sources' weights: their load taken out of `kfull`.
    force_weight: DeviceVec<f64>,
    energy_out: DeviceVec<f64>,
    nreceivers: usize,
    /// `[receiver][component][sample]`, as [`Simulation::seismograms`].
    seismograms: Vec<f64>,
    dt: f64,
    steps: usize,
    step: usize,
    check_every: usize,
    energy: f64,
    watch: BlowUpWatch,
    stiffness_blocks: usize,
    update_blocks: usize,
    absorb_blocks: usize,
    /// `[step being taken, its sample slot in the batch]` on the device (`wave_tick`).
    clock: DeviceVec<u32>,
    /// Whether `u` and `up` have traded places an odd number of times.
    swapped: bool,
    /// [`GRAPH_STEPS`] plain steps captured as a CUDA graph, for each value of `swapped`.
    graphs: [Option<CudaGraph>; 2],
    /// The buffers of snapshots copied beside the steps (allocated at the first).
    snapshot: Option<SnapshotCopy<T>>,
    /// The step and time of the snapshot on its way, if any.
    snapshot_pending: Option<(usize, f64)>,
    /// On a part of a distributed mesh, the link to the other ranks.
    ranks: Option<RankLink<T>>,
}

/// A snapshot on its way to the host: the field copied on the device (on the steps' stream,
/// at device bandwidth), then from there into page-locked host memory on a second stream,
/// while the next steps run.
struct SnapshotCopy<T: GpuReal> {
    side: Arc<CudaStream>,
    staged: DeviceVec<T>,
    host: PinnedHostSlice<T>,
}

/// The operator's data per element (`[elem][factor]` compact, or `[elem][factor][point]`),
/// whether compact, and the mask of the factors scaled by the tensor weight.
fn element_data<T: GpuReal>(
    k: &TensorOperator<T>,
    tensor_weights: &[f64],
) -> Result<(Vec<T>, bool, u32), GpuError> {
    let g = k.geometry();
    let (ne, nf, nq) = (g.num_elem, g.num_factors, g.num_points);
    if g.source != GeometrySource::Stored {
        return Err(GpuError::Unsupported(
            "the wave kernels read stored quadrature data".into(),
        ));
    }
    if let Some(c) = &g.compact {
        let mut weighted = 0u32;
        for f in 0..nf {
            let s = &c.scale[f * nq..(f + 1) * nq];
            if s.iter().zip(tensor_weights).all(|(a, &b)| *a == T::of(b))
                && !s.iter().all(|a| *a == T::one())
            {
                weighted |= 1 << f;
            } else if !s.iter().all(|a| *a == T::one()) {
                return Err(GpuError::Unsupported(
                    "compact quadrature data scaled by other than the weights".into(),
                ));
            }
        }
        let lanes = c.per_elem.first().map_or(1, |l| l.len());
        let mut out = Vec::with_capacity(ne * nf);
        for e in 0..ne {
            for f in 0..nf {
                out.push(c.per_elem[(e / lanes) * nf + f][e % lanes]);
            }
        }
        return Ok((out, true, weighted));
    }
    let mut out = Vec::with_capacity(ne * nf * nq);
    match g.layout {
        FactorLayout::ElementMajor => out.extend_from_slice(&g.factors),
        FactorLayout::Interleaved => {
            let lanes = g.interleaved.first().map_or(1, |l| l.len());
            for e in 0..ne {
                let b = e / lanes;
                for f in 0..nf {
                    for q in 0..nq {
                        out.push(g.interleaved[(b * nf + f) * nq + q][e % lanes]);
                    }
                }
            }
        }
    }
    Ok((out, false, 0))
}

fn launch_err(kernel: &str) -> impl FnOnce(cudarc::driver::DriverError) -> GpuError + '_ {
    move |e| GpuError::Launch {
        kernel: kernel.into(),
        source: e,
    }
}

fn blocks(n: usize) -> usize {
    n.div_ceil(VECTOR_BLOCK as usize).max(1)
}

impl<T: GpuReal> GpuWave<T> {
    /// Moves `sim` (before its first step, or at any step) onto `dev`: its numbering, data,
    /// state and seismograms so far. Refused with the bytes needed and available when the
    /// device does not have the memory, and for a body force (a host closure).
    pub fn new(dev: &Arc<GpuDevice>, sim: &Simulation<T>) -> Result<GpuWave<T>, GpuError> {
        if sim.has_body_force() {
            return Err(GpuError::Unsupported(
                "a body force (a host function) cannot be evaluated on the GPU".into(),
            ));
        }
        let space = sim.space().clone();
        let dim = space.dim();
        let nc = space.ncomp();
        let np = space.order() + 1;
        let k = sim.stiffness();
        let basis = k.basis();
        if !basis.collocated || basis.q != np {
            return Err(GpuError::Unsupported(
                "the wave kernels need the stiffness collocated at the GLL nodes".into(),
            ));
        }
        let nelem = space.num_cells();
        let npe = np.pow(dim as u32);
        // the tensor weights of the points, lexicographic
        let w1 = &basis.weights;
        let tensor_w: Vec<f64> = (0..npe)
            .map(|l| {
                let (i, j, kk) = (l % np, (l / np) % np, l / (np * np));
                w1[i] * w1[j] * if dim == 3 { w1[kk] } else { 1.0 }
            })
            .collect();
        if np - 1 > MAX_GPU_ORDER {
            return Err(GpuError::Unsupported(format!(
                "order {}: the GPU wave kernels are built and tested for orders 1 to {MAX_GPU_ORDER}",
                np - 1
            )));
        }
        // (the quadrature data and the node layout built side by side)
        let absorbing_cpu: Vec<u32> = sim.absorbing_nodes().iter().map(|a| a.node).collect();
        let (data, layout) = rayon::join(
            || element_data(k, &tensor_w),
            || WaveLayout::for_space(&space, &absorbing_cpu),
        );
        let ((factors, compact, weighted), layout) = (data?, layout?);
        let nf = k.geometry().num_factors;
        let shape = WaveKernelShape {
            dim,
            np,
            ncomp: nc,
            elastic: sim.kind() == WaveKind::Elastic,
            compact,
            factors: nf,
            weighted,
        };
        let nn = layout.num_nodes();
        let steps = sim.steps();
        let dt = sim.dt();
        let nrec = sim.receivers().len();
        let nsrc = sim.source_loads().count();
        // the device memory this needs, checked before anything is allocated
        let tb = std::mem::size_of::<T>();
        let stiffness_blocks = nelem.div_ceil(shape.elems_per_block());
        let update_blocks = blocks(layout.plain);
        let absorb_blocks = blocks(layout.skeleton - layout.plain);
        let inject_len: usize = sim.source_loads().map(|s| s.dofs.len() * nc).sum::<usize>();
        // (the fields, the accumulator, K u for the energy and a snapshot's copy)
        let halo_bytes = sim.exchange().map_or(0, |ex| {
            let plan = ex.sum_plan();
            nn + 4 * plan.num_sent() * nc * tb
                + 4 * (plan.send_nodes.len() + plan.nodes.len() + plan.sources.len())
        });
        let needed = halo_bytes
            + 5 * nn * nc * tb
            + nn * tb
            + layout.skeleton_nodes.len() * 4
            + factors.len() * tb
            + absorbing_cpu.len() * (1 + 2 * nc * nc) * 8
            + inject_len * 16
            + inject_len * 16
            + nsrc * steps * 8
            + nrec * npe * 12
            + SAMPLE_BATCH * nrec * nc * 8
            + 16;
        let (free, _total) = dev.mem_info()?;
        if needed > free {
            return Err(GpuError::DoesNotFit {
                what: format!(
                    "the {} wave simulation ({nelem} elements, order {}, {} dofs, {})",
                    sim.kind().name(),
                    np - 1,
                    nn * nc,
                    T::NAME
                ),
                needed,
                available: free,
            });
        }
        // the kernels
        let d = &basis.grad;
        let spec = wave_kernel::<T>(&shape, d, w1, &tensor_w, &layout.local);
        let f = |name: &str| dev.function(&spec, name);
        let kernels = Kernels {
            stiffness: f("wave_stiffness")?,
            update: f("wave_update")?,
            absorb: f("wave_absorb")?,
            inject: f("wave_inject")?,
            record: f("wave_record")?,
            tick: f("wave_tick")?,
            energy: f("wave_energy")?,
        };
        let smem = shape.shared_bytes(tb);
        kernels
            .stiffness
            .set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                smem as i32,
            )
            .map_err(|e| GpuError::driver("raising the dynamic shared memory limit", e))?;
        // vectors in the kernels' numbering
        let permute = |v: &[T]| -> Vec<T> {
            let mut out = vec![T::zero(); v.len()];
            for (new, &old) in layout.old_of.iter().enumerate() {
                for c in 0..nc {
                    out[new * nc + c] = v[old as usize * nc + c];
                }
            }
            out
        };
        // (fields at rest, as every run starts, are zeroed on the device)
        let field = |v: &[T]| {
            if sim.at_rest() {
                DeviceVec::zeros(dev, nn * nc, "wave field")
            } else {
                DeviceVec::from_host(dev, &permute(v), "wave field")
            }
        };
        let u = field(sim.field())?;
        let up = field(sim.previous_field())?;
        let ku = DeviceVec::zeros(dev, layout.skeleton * nc, "skeleton accumulator")?;
        let scale_cpu = sim.step_scale();
        let scale: Vec<T> = layout
            .old_of
            .par_iter()
            .map(|&old| scale_cpu[old as usize])
            .collect();
        let step_scale = DeviceVec::from_host(dev, &scale, "dt^2 / mass")?;
        let skeleton = DeviceVec::from_host(dev, &layout.skeleton_nodes, "skeleton offsets")?;
        let factors = DeviceVec::from_host(dev, &factors, "quadrature data")?;
        let mut absorbing = Vec::with_capacity(absorbing_cpu.len() * (1 + 2 * nc * nc));
        for a in sim.absorbing_nodes() {
            absorbing.push(a.mass);
            absorbing.extend_from_slice(&a.plus_inv[..nc * nc]);
            absorbing.extend_from_slice(&a.minus[..nc * nc]);
        }
        let absorbing = DeviceVec::from_host(dev, &absorbing, "absorbing nodes")?;
        // sources: at a skeleton node the load F is taken out of the accumulator before the
        // stiffness adds K u (so that the update, plain or absorbing, steps with K u − F and,
        // on a distributed mesh, the load is summed over the node's holders like K u); at an
        // element's interior node u⁺ gains dt² M⁻¹ F after the stiffness kernel's update,
        // and on energy steps F is taken out of K u there
        let (mut ltarget, mut lsource, mut lcoef) = (Vec::new(), Vec::new(), Vec::new());
        let (mut target, mut source, mut coef) = (Vec::new(), Vec::new(), Vec::new());
        let (mut fdof, mut fsource, mut fweight) = (Vec::new(), Vec::new(), Vec::new());
        let mut wavelets = Vec::with_capacity(nsrc * steps);
        for (s, load) in sim.source_loads().enumerate() {
            for (&dof, &wt) in load.dofs.iter().zip(load.weights) {
                let (node, c) = (dof as usize / nc, dof as usize % nc);
                let new = layout.new_of[node] as usize;
                let d = (new * nc + c) as u32;
                if new < layout.skeleton {
                    ltarget.push(d);
                    lsource.push(s as u32);
                    lcoef.push(-wt);
                    continue;
                }
                fdof.push(d);
                fsource.push(s as u32);
                fweight.push(-wt);
                let m = scale_cpu[node].as_f64();
                if m != 0.0 {
                    target.push(d);
                    source.push(s as u32);
                    coef.push(m * wt);
                }
            }
            wavelets.extend((0..steps).map(|k| load.wavelet.value(k as f64 * dt)));
        }
        let load_target = DeviceVec::from_host(dev, &ltarget, "source dofs")?;
        let load_source = DeviceVec::from_host(dev, &lsource, "source indices")?;
        let load_coef = DeviceVec::from_host(dev, &lcoef, "source weights")?;
        let inject_target = DeviceVec::from_host(dev, &target, "source dofs")?;
        let inject_source = DeviceVec::from_host(dev, &source, "source indices")?;
        let inject_coef = DeviceVec::from_host(dev, &coef, "source weights")?;
        let wavelets = DeviceVec::from_host(dev, &wavelets, "source time functions")?;
        let (mut rn, mut rv) = (Vec::new(), Vec::new());
        for st in sim.receiver_stencils() {
            if st.nodes.is_empty() {
                // a receiver another rank records: zero here
                rn.extend(std::iter::repeat_n(0u32, npe));
                rv.extend(std::iter::repeat_n(0.0, npe));
                continue;
            }
            rn.extend(st.nodes.iter().map(|&n| layout.new_of[n as usize]));
            rv.extend_from_slice(st.values);
        }
        let receiver_nodes = DeviceVec::from_host(dev, &rn, "receiver nodes")?;
        let receiver_values = DeviceVec::from_host(dev, &rv, "receiver weights")?;
        let samples = DeviceVec::zeros(dev, SAMPLE_BATCH * nrec * nc, "receiver samples")?;
        let kfull = DeviceVec::zeros(dev, nn * nc, "K u for the energy")?;
        let force_dof = DeviceVec::from_host(dev, &fdof, "source dofs")?;
        let force_source = DeviceVec::from_host(dev, &fsource, "source indices")?;
        let force_weight = DeviceVec::from_host(dev, &fweight, "source weights")?;
        let energy_out = DeviceVec::zeros(dev, 2, "energy")?;
        let clock = DeviceVec::from_host(dev, &[sim.step_count() as u32, 0], "step clock")?;
        let ranks = match sim.exchange() {
            Some(ex) => Some(RankLink::new(dev, sim, ex, &layout, nc)?),
            None => None,
        };
        Ok(GpuWave {
            dev: dev.clone(),
            kernels,
            shape,
            layout,
            space,
            nelem,
            u,
            up,
            ku,
            step_scale,
            skeleton,
            factors,
            absorbing,
            load_target,
            load_source,
            load_coef,
            inject_target,
            inject_source,
            inject_coef,
            wavelets,
            receiver_nodes,
            receiver_values,
            samples,
            pending: 0,
            pending_from: sim.step_count() + 1,
            kfull,
            force_dof,
            force_source,
            force_weight,
            energy_out,
            nreceivers: nrec,
            seismograms: sim.seismograms().to_vec(),
            dt,
            steps,
            step: sim.step_count(),
            check_every: sim.check_every(),
            energy: sim.energy(),
            watch: BlowUpWatch::new(sim.source_end()),
            stiffness_blocks,
            update_blocks,
            absorb_blocks,
            clock,
            swapped: false,
            graphs: [None, None],
            snapshot: None,
            snapshot_pending: None,
            ranks,
        })
    }

    /// The device.
    pub fn device(&self) -> &Arc<GpuDevice> {
        &self.dev
    }
    /// The name of the stiffness kernel's specialisation.
    pub fn describe(&self) -> String {
        format!(
            "{} {}-D p={} {} ({} elements per block, a thread per {})",
            if self.shape.elastic {
                "elastic"
            } else {
                "acoustic"
            },
            self.shape.dim,
            self.shape.np - 1,
            if self.shape.compact {
                "compact data"
            } else {
                "stored data"
            },
            self.shape.elems_per_block(),
            if self.shape.per_line() {
                "line"
            } else {
                "point"
            }
        )
    }
    /// On a part of a distributed mesh, how the interface sums travel between the ranks'
    /// GPUs: `"NCCL"` (device to device) or `"host"` (page-locked host memory and MPI).
    pub fn halo_transport(&self) -> Option<&'static str> {
        self.ranks.as_ref().map(|link| link.transport_name)
    }
    /// Whether the quadrature data are one value per element and factor.
    pub fn compact(&self) -> bool {
        self.shape.compact
    }
    /// The field's space (the host's numbering).
    pub fn space(&self) -> &H1Space {
        &self.space
    }
    /// The time step (s).
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Steps in the run.
    pub fn steps(&self) -> usize {
        self.steps
    }
    /// Steps done.
    pub fn step_count(&self) -> usize {
        self.step
    }
    /// The time reached (s).
    pub fn time(&self) -> f64 {
        self.step as f64 * self.dt
    }
    /// Steps between energy checks.
    pub fn check_every(&self) -> usize {
        self.check_every
    }
    /// The discrete energy at the last check.
    pub fn energy(&self) -> f64 {
        self.energy
    }
    /// Elements.
    pub fn num_elements(&self) -> usize {
        self.nelem
    }
    /// Skeleton nodes (updated through the accumulator) and all nodes.
    pub fn node_counts(&self) -> (usize, usize) {
        (self.layout.skeleton, self.layout.num_nodes())
    }

    /// The current field in the host's numbering (an L-vector of [`space`](Self::space)).
    pub fn field(&self) -> Result<Vec<T>, GpuError> {
        Ok(self.host_numbering(&self.u.to_host()?))
    }

    /// A field of the kernels' numbering in the host's.
    fn host_numbering(&self, g: &[T]) -> Vec<T> {
        let nc = self.shape.ncomp;
        let mut out = vec![T::zero(); g.len()];
        for (old, &new) in self.layout.new_of.iter().enumerate() {
            for c in 0..nc {
                out[old * nc + c] = g[new as usize * nc + c];
            }
        }
        out
    }

    /// Starts copying the current field to the host for a snapshot, beside the steps that
    /// follow; [`take_snapshot`](Self::take_snapshot) returns it. An error while the
    /// previous one has not been taken.
    pub fn request_snapshot(&mut self) -> Result<(), GpuError> {
        if self.snapshot_pending.is_some() {
            return Err(GpuError::Unsupported(
                "a snapshot is requested while the previous one has not been taken".into(),
            ));
        }
        let copy = match &mut self.snapshot {
            Some(copy) => copy,
            None => {
                let ctx = self.dev.context();
                let side = ctx
                    .new_stream()
                    .map_err(|e| GpuError::driver("creating the snapshot stream", e))?;
                let staged = DeviceVec::zeros(&self.dev, self.u.len(), "snapshot")?;
                // SAFETY: the memory is written by the copy before it is read.
                let host = unsafe { ctx.alloc_pinned_with_flags::<T>(self.u.len(), 0) }
                    .map_err(|e| GpuError::driver("allocating page-locked snapshot memory", e))?;
                self.snapshot.insert(SnapshotCopy { side, staged, host })
            }
        };
        copy.staged.copy_from(&self.u)?;
        let staged = self
            .dev
            .stream()
            .record_event(None)
            .map_err(|e| GpuError::driver("recording the snapshot's copy", e))?;
        copy.side
            .wait(&staged)
            .map_err(|e| GpuError::driver("ordering the snapshot's copy", e))?;
        copy.side
            .memcpy_dtoh(copy.staged.slice(), &mut copy.host)
            .map_err(|e| GpuError::driver("copying the snapshot to the host", e))?;
        self.snapshot_pending = Some((self.step, self.time()));
        Ok(())
    }

    /// The snapshot requested last (its step, time and field in the host's numbering),
    /// waiting for its copy; `None` when none is on its way.
    #[allow(clippy::type_complexity)]
    pub fn take_snapshot(&mut self) -> Result<Option<(usize, f64, Vec<T>)>, GpuError> {
        let (Some((step, time)), Some(copy)) = (self.snapshot_pending.take(), &self.snapshot)
        else {
            return Ok(None);
        };
        // (the context does not track events, so the page-locked buffer's event is never
        // recorded: the copy's stream is waited for)
        copy.side
            .synchronize()
            .map_err(|e| GpuError::driver("waiting for the snapshot's copy", e))?;
        let g = copy
            .host
            .as_slice()
            .map_err(|e| GpuError::driver("waiting for the snapshot's copy", e))?;
        Ok(Some((step, time, self.host_numbering(g))))
    }

    /// The seismograms so far, `[receiver][component][sample]` with `steps + 1` samples
    /// per trace (those not reached yet are zero), as [`Simulation::seismograms`].
    pub fn seismograms(&mut self) -> Result<&[f64], GpuError> {
        self.flush_samples()?;
        Ok(&self.seismograms)
    }

    /// Copies the buffered receiver samples back.
    fn flush_samples(&mut self) -> Result<(), GpuError> {
        if self.pending == 0 {
            return Ok(());
        }
        let host = self.samples.to_host()?;
        let nc = self.shape.ncomp;
        let per = self.nreceivers * nc;
        let ns = self.steps + 1;
        for s in 0..self.pending {
            let k = self.pending_from + s;
            for (t, &v) in host[s * per..(s + 1) * per].iter().enumerate() {
                self.seismograms[t * ns + k] = v;
            }
        }
        self.pending_from += self.pending;
        self.pending = 0;
        // (at a step boundary: the device's clock is at this step)
        self.clock.upload(&[self.step as u32, 0])?;
        Ok(())
    }

    /// Runs the steps up to `target` (at most the run's steps), checking the energy after
    /// the last one when `check`.
    ///
    /// Runs of [`GRAPH_STEPS`] steps without an energy check are replayed from a CUDA graph
    /// (captured at the first such run): one launch instead of five or six per step, which
    /// is what bounds the step time of small meshes.
    pub fn run_to(&mut self, target: usize, check: bool) -> Result<(), GpuWaveError> {
        let target = target.min(self.steps);
        while self.step < target {
            let end = self.step + GRAPH_STEPS;
            // (a step of a distributed run waits for the host's exchange: no graph)
            if self.ranks.is_none() && (end < target || (end == target && !check)) {
                self.run_graph()?;
            } else {
                self.advance(check && self.step + 1 == target)?;
            }
        }
        Ok(())
    }

    /// [`GRAPH_STEPS`] plain steps from the graph of the current `swapped`.
    fn run_graph(&mut self) -> Result<(), GpuError> {
        if self.nreceivers > 0 && self.pending + GRAPH_STEPS > SAMPLE_BATCH {
            self.flush_samples()?;
        }
        let parity = self.swapped as usize;
        if self.graphs[parity].is_none() {
            self.graphs[parity] = Some(self.capture_steps()?);
        }
        if let Some(g) = &self.graphs[parity] {
            g.launch()
                .map_err(|e| GpuError::driver("launching the captured steps", e))?;
        }
        self.step += GRAPH_STEPS;
        if self.nreceivers > 0 {
            self.pending += GRAPH_STEPS;
        }
        Ok(())
    }

    /// Captures [`GRAPH_STEPS`] plain steps (an even number: `u` and `up` are where they
    /// started) as a CUDA graph; nothing runs.
    fn capture_steps(&mut self) -> Result<CudaGraph, GpuError> {
        let stream = self.dev.stream().clone();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| GpuError::driver("capturing the steps", e))?;
        let mut launched = Ok(());
        for _ in 0..GRAPH_STEPS {
            launched = self.launch_step_kernels(false);
            if launched.is_err() {
                break;
            }
        }
        let graph = stream.end_capture(CUgraphInstantiate_flags(0));
        launched?;
        graph
            .map_err(|e| GpuError::driver("instantiating the captured steps", e))?
            .ok_or_else(|| GpuError::Unsupported("the step capture recorded nothing".into()))
    }

    /// The launches of one step: stiffness, updates, sources, the fields' swap, the
    /// receivers, the clock.
    fn launch_step_kernels(&mut self, check: bool) -> Result<(), GpuError> {
        self.launch_loads()?;
        self.launch_stiffness_summed(check)?;
        self.launch_updates(check)?;
        self.launch_sources(check)?;
        std::mem::swap(&mut self.u, &mut self.up);
        self.swapped = !self.swapped;
        self.launch_record()?;
        self.launch_tick()
    }

    /// One step, computing the energy and checking for a blow-up when `check`.
    pub fn advance(&mut self, check: bool) -> Result<(), GpuWaveError> {
        if self.step >= self.steps {
            return Ok(());
        }
        if self.nreceivers > 0 && self.pending == SAMPLE_BATCH {
            self.flush_samples()?;
        }
        self.launch_step_kernels(check)?;
        self.step += 1;
        if self.nreceivers > 0 {
            self.pending += 1;
        }
        if check {
            self.energy = self.sum_energy()?;
            if let Some(link) = &self.ranks {
                self.energy = link.exchange.sum(self.energy)?;
            }
            if let Some(what) = self.watch.check(self.energy, self.time()) {
                let u = self.field()?;
                return Err(blow_up_error(&self.space, &u, self.step, self.time(), what).into());
            }
        }
        Ok(())
    }

    /// `kfull` on energy steps, a null pointer otherwise.
    fn kfull_arg(&self, check: bool) -> KfullArg<'_, T> {
        if check {
            KfullArg::Vector(self.kfull.slice())
        } else {
            KfullArg::Null(0)
        }
    }

    /// The stiffness kernel over the elements `first..end`: `K u` and the interior nodes'
    /// update into `up`, the skeleton's sums into `ku`.
    fn launch_stiffness(&self, first: usize, end: usize, check: bool) -> Result<(), GpuError> {
        if end <= first {
            return Ok(());
        }
        let blocks = if (first, end) == (0, self.nelem) {
            self.stiffness_blocks
        } else {
            (end - first).div_ceil(self.shape.elems_per_block())
        };
        let cfg = LaunchConfig {
            grid_dim: (blocks as u32, 1, 1),
            block_dim: (self.shape.block_threads() as u32, 1, 1),
            shared_mem_bytes: self.shape.shared_bytes(std::mem::size_of::<T>()) as u32,
        };
        let (first, ne, nskel) = (first as u32, end as u32, self.layout.skeleton as u32);
        let kfull = self.kfull_arg(check);
        let mut b = self.dev.stream().launch_builder(&self.kernels.stiffness);
        b.arg(&first)
            .arg(&ne)
            .arg(&nskel)
            .arg(self.u.slice())
            .arg(self.up.slice())
            .arg(self.ku.slice())
            .arg(self.step_scale.slice())
            .arg(self.skeleton.slice())
            .arg(self.factors.slice());
        kfull.push(&mut b);
        // SAFETY: matches wave_stiffness's parameters; every index is within the buffers
        // by the layout's construction.
        unsafe { b.launch(cfg) }.map_err(launch_err("wave_stiffness"))?;
        Ok(())
    }

    /// The stiffness kernel over all elements; on a part of a distributed mesh, with the
    /// skeleton sums at the shared nodes added over their holders, the exchange overlapped
    /// with the stiffness of the cells away from the interface.
    fn launch_stiffness_summed(&mut self, check: bool) -> Result<(), GpuError> {
        let Some(mut link) = self.ranks.take() else {
            return self.launch_stiffness(0, self.nelem, check);
        };
        let done = self.stiffness_with_halo(&mut link, check);
        self.ranks = Some(link);
        done
    }

    /// The interface cells' stiffness; their sums at the shared nodes packed and sent to
    /// the neighbours while the other cells' stiffness runs; then the sums in rank order.
    ///
    /// No kernel of ours runs beside the other cells' stiffness on a stream of ordinary
    /// priority: it would wait for their blocks to be dispatched (the whole GPU) and the
    /// exchange would start at their end.
    fn stiffness_with_halo(&mut self, link: &mut RankLink<T>, check: bool) -> Result<(), GpuError> {
        let main = self.dev.stream().clone();
        let nb = link.interface_cells;
        self.launch_stiffness(0, nb, check)?;
        let Some(halo) = link.halo.as_mut() else {
            return self.launch_stiffness(nb, self.nelem, check);
        };
        halo.start(&main, self.ku.slice())?;
        self.launch_stiffness(nb, self.nelem, check)?;
        halo.finish(&main, self.ku.slice_mut())
    }

    /// The skeleton's plain and absorbing updates into `up`, zeroing `ku`.
    fn launch_updates(&self, check: bool) -> Result<(), GpuError> {
        let nplain = self.layout.plain as u32;
        let nabs = (self.layout.skeleton - self.layout.plain) as u32;
        let kfull = self.kfull_arg(check);
        if nplain > 0 {
            let cfg = LaunchConfig {
                grid_dim: (self.update_blocks as u32, 1, 1),
                block_dim: (VECTOR_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = self.dev.stream().launch_builder(&self.kernels.update);
            b.arg(&nplain)
                .arg(self.u.slice())
                .arg(self.up.slice())
                .arg(self.ku.slice())
                .arg(self.step_scale.slice());
            kfull.push(&mut b);
            // SAFETY: matches wave_update's parameters.
            unsafe { b.launch(cfg) }.map_err(launch_err("wave_update"))?;
        }
        if nabs > 0 {
            let cfg = LaunchConfig {
                grid_dim: (self.absorb_blocks as u32, 1, 1),
                block_dim: (VECTOR_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let dt2 = self.dt * self.dt;
            let mut b = self.dev.stream().launch_builder(&self.kernels.absorb);
            b.arg(&nabs)
                .arg(&nplain)
                .arg(&dt2)
                .arg(self.u.slice())
                .arg(self.up.slice())
                .arg(self.ku.slice())
                .arg(self.absorbing.slice());
            kfull.push(&mut b);
            // SAFETY: matches wave_absorb's parameters.
            unsafe { b.launch(cfg) }.map_err(launch_err("wave_absorb"))?;
        }
        Ok(())
    }

    /// `field[target[s]] += coef[s] · wavelet of source[s]` at the current step.
    fn launch_inject(
        &self,
        target: &DeviceVec<u32>,
        source: &DeviceVec<u32>,
        coef: &DeviceVec<f64>,
        field: &CudaSlice<T>,
    ) -> Result<(), GpuError> {
        let n = target.len() as u32;
        if n == 0 {
            return Ok(());
        }
        let ns = self.steps as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks(n as usize) as u32, 1, 1),
            block_dim: (VECTOR_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.dev.stream().launch_builder(&self.kernels.inject);
        b.arg(&n)
            .arg(self.clock.slice())
            .arg(&ns)
            .arg(target.slice())
            .arg(source.slice())
            .arg(coef.slice())
            .arg(self.wavelets.slice())
            .arg(field);
        // SAFETY: matches wave_inject's parameters; the targets index `field`.
        unsafe { b.launch(cfg) }.map_err(launch_err("wave_inject"))?;
        Ok(())
    }

    /// The sources' loads at skeleton dofs at the current step, out of `ku` (before the
    /// stiffness adds to it).
    fn launch_loads(&self) -> Result<(), GpuError> {
        self.launch_inject(
            &self.load_target,
            &self.load_source,
            &self.load_coef,
            self.ku.slice(),
        )
    }

    /// The sources at element-interior dofs at the current step, into `up` (and, on
    /// energy steps, their load out of `kfull`).
    fn launch_sources(&self, check: bool) -> Result<(), GpuError> {
        self.launch_inject(
            &self.inject_target,
            &self.inject_source,
            &self.inject_coef,
            self.up.slice(),
        )?;
        if check {
            self.launch_inject(
                &self.force_dof,
                &self.force_source,
                &self.force_weight,
                self.kfull.slice(),
            )?;
        }
        Ok(())
    }

    /// Samples the receivers on the current field into the device buffer's slot of the
    /// clock.
    fn launch_record(&mut self) -> Result<(), GpuError> {
        if self.nreceivers == 0 {
            return Ok(());
        }
        let nr = self.nreceivers as u32;
        let per = self.nreceivers * self.shape.ncomp;
        let cfg = LaunchConfig {
            grid_dim: (blocks(per) as u32, 1, 1),
            block_dim: (VECTOR_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.dev.stream().launch_builder(&self.kernels.record);
        b.arg(&nr)
            .arg(self.receiver_nodes.slice())
            .arg(self.receiver_values.slice())
            .arg(self.u.slice())
            .arg(self.clock.slice())
            .arg(self.samples.slice_mut());
        // SAFETY: matches wave_record's parameters; the slot is below SAMPLE_BATCH (the
        // host flushes the batch before it fills).
        unsafe { b.launch(cfg) }.map_err(launch_err("wave_record"))?;
        Ok(())
    }

    /// Advances the device's step clock.
    fn launch_tick(&mut self) -> Result<(), GpuError> {
        let cfg = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.dev.stream().launch_builder(&self.kernels.tick);
        b.arg(self.clock.slice_mut());
        // SAFETY: matches wave_tick's parameter.
        unsafe { b.launch(cfg) }.map_err(launch_err("wave_tick"))?;
        Ok(())
    }

    /// The bytes and flops of one step by the kernels' model: the field read once, the
    /// previous field read and overwritten, `dt²/m` read, the skeleton offsets and the
    /// quadrature data read once; the sum-factorised gradient and its transpose, the
    /// pointwise physics and the update.
    pub fn model(&self) -> WaveModel {
        let tb = std::mem::size_of::<T>() as f64;
        let nn = self.layout.num_nodes() as f64;
        let nc = self.shape.ncomp as f64;
        let absorbing = (self.layout.skeleton - self.layout.plain) as f64;
        let bytes = (3.0 * nc + 1.0) * nn * tb
            + 4.0 * self.layout.skeleton_nodes.len() as f64
            + tb * self.factors.len() as f64
            + absorbing * (1.0 + 2.0 * nc * nc) * 8.0;
        let (d, np) = (self.shape.dim as f64, self.shape.np as f64);
        let npe = self.shape.npe() as f64;
        let contractions = 2.0 * nc * d * npe * 2.0 * np;
        let physics = if self.shape.elastic {
            4.0 * d * d * d + 3.0 * d * d + d
        } else {
            d * (2.0 * d - 1.0)
        };
        let flops = self.nelem as f64 * (contractions + physics * npe) + 4.0 * nc * nn;
        WaveModel { bytes, flops }
    }

    /// Times the device's step (`reps` steps after `warmup`, median of per-step event
    /// times) and the stiffness kernel alone; consumes the simulation, whose state the
    /// stiffness-only launches leave meaningless.
    pub fn benchmark(mut self, warmup: usize, reps: usize) -> Result<WaveTimings, GpuError> {
        let timer = crate::GpuTimer::new(&self.dev);
        // a step for every timed and warm-up one, whatever the run's length
        self.steps = usize::MAX / 2;
        self.step = 0;
        let steps = timer.time(warmup, reps, || {
            self.launch_stiffness_summed(false)?;
            self.launch_updates(false)?;
            std::mem::swap(&mut self.u, &mut self.up);
            self.swapped = !self.swapped;
            Ok(())
        })?;
        let stiffness = timer.time(warmup, reps, || self.launch_stiffness(0, self.nelem, false))?;
        Ok(WaveTimings {
            step: crate::median(&steps),
            stiffness: crate::median(&stiffness),
        })
    }

    /// `½ (kinetic + potential)` of the last step, as [`Simulation`] computes it: the sum
    /// of `(u⁺ − u)² m / dt²` and of `u⁺ · (K u − F)` over the dofs not held at zero (on a
    /// part of a distributed mesh, over the nodes it owns: the caller sums the ranks).
    fn sum_energy(&mut self) -> Result<f64, GpuError> {
        self.energy_out.fill_zero()?;
        let n = self.layout.num_nodes() as u32;
        let cfg = LaunchConfig {
            grid_dim: (blocks(n as usize).min(4 * self.dev.sm_count()) as u32, 1, 1),
            block_dim: (VECTOR_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let every_node = 0u64;
        let mut b = self.dev.stream().launch_builder(&self.kernels.energy);
        b.arg(&n)
            .arg(self.u.slice())
            .arg(self.up.slice())
            .arg(self.kfull.slice())
            .arg(self.step_scale.slice());
        match &self.ranks {
            Some(link) => b.arg(link.owned.slice()),
            None => b.arg(&every_node),
        };
        b.arg(self.energy_out.slice_mut());
        // SAFETY: matches wave_energy's parameters.
        unsafe { b.launch(cfg) }.map_err(launch_err("wave_energy"))?;
        let e = self.energy_out.to_host()?;
        Ok(0.5 * e[0] + 0.5 * e[1])
    }

    /// Waits for the queued steps.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.dev.synchronize()
    }
}
