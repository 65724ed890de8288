//! The GPU bake-off operator: L-vector in, gather, element kernel, scatter-add, L-vector
//! out, for one mesh, space, operator and plan.

use super::codegen::{bp_kernel, skeleton_table, ZERO_CHUNK};
use super::layout::{BrickLayout, KernelSpace, SlotOrder};
use super::plan::{BpOperator, BpPlan, Numbering};
use crate::compile::KernelSpec;
use crate::{DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use ferrofem_base::CellType;
use ferrofem_geometry::GeometrySource;
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::model::{
    self, FormModel, IndexTraffic, Model, ModelSpec, VectorTraffic,
};
use ferrofem_operator::tensor::TensorKind;
use ferrofem_space::H1Space;
use std::sync::Arc;

/// A bake-off operator on the GPU for one mesh and space.
pub struct GpuBp<T: GpuReal> {
    pub(super) dev: Arc<GpuDevice>,
    pub(super) op: BpOperator,
    pub(super) plan: BpPlan,
    pub(super) order: usize,
    q1d: usize,
    pub(super) nelem: usize,
    pub(super) ndofs: usize,
    /// Values zeroed before an apply: the skeleton (interior-last, bricks), else all.
    pub(super) nskel: usize,
    epb: usize,
    dyn_smem: usize,
    block: [u32; 3],
    grid: u32,
    pub(super) offsets: DeviceVec<u32>,
    pub(super) geo: DeviceVec<T>,
    mats: DeviceVec<T>,
    pub(super) alpha: T,
    pub(super) dirichlet: Option<DeviceVec<u32>>,
    spec: KernelSpec,
    func: CudaFunction,
    ident: CudaFunction,
    /// The reverse-order skeleton fill (pencil and lattice kernels' modules).
    zero_fill: Option<CudaFunction>,
    /// With bricks: the space's brick layout (the diagonal kernel rebuilds the full
    /// restriction from it and the brick offsets).
    pub(super) brick_layout: Option<BrickLayout>,
}

/// The restriction's offsets on the device, in compressible memory where the device can
/// compress (runs of consecutive indices then cost less DRAM traffic).
fn upload_indices(dev: &Arc<GpuDevice>, host: &[u32]) -> Result<DeviceVec<u32>, GpuError> {
    let mut v = DeviceVec::<u32>::zeros_preferably_compressible(
        dev,
        host.len(),
        "restriction offsets",
        true,
    )?;
    v.upload(host)?;
    Ok(v)
}

/// How many blocks of the apply kernel `func` one multiprocessor holds at once.
fn resident_blocks_per_sm(
    func: &CudaFunction,
    block: [u32; 3],
    dyn_smem: usize,
) -> Result<usize, GpuError> {
    let per_sm = func
        .occupancy_max_active_blocks_per_multiprocessor(
            block[0] * block[1] * block[2],
            dyn_smem,
            None,
        )
        .map_err(|e| GpuError::driver("occupancy query", e))?;
    Ok(per_sm as usize)
}

/// The compact skeleton offsets `[elem][nsk]` of an interior-last space (the element's
/// boundary nodes in the order of [`skeleton_table`]).
fn skeleton_offsets(space: &H1Space) -> Vec<u32> {
    let (table, nsk) = skeleton_table(space.order() + 1);
    let r = space.restriction();
    let mut off = vec![0u32; r.num_elem() * nsk];
    for e in 0..r.num_elem() {
        let en = r.elem(e);
        for (l, &slot) in table.iter().enumerate() {
            if slot != u16::MAX {
                off[e * nsk + slot as usize] = en[l];
            }
        }
    }
    off
}

impl<T: GpuReal> GpuBp<T> {
    /// Builds the operator `op` with the kernel `plan` for `numbered` (a scalar space on the
    /// hexahedral `mesh`, numbered for `plan` by [`BpPlan::number`]), uploading the restriction, the
    /// geometry (or vertices) and the 1-D matrices, and compiling the kernel
    /// specialisation (or taking it from the cache).
    pub fn new(
        dev: &Arc<GpuDevice>,
        mesh: &Mesh,
        numbered: &KernelSpace,
        op: BpOperator,
        plan: BpPlan,
    ) -> Result<GpuBp<T>, GpuError> {
        let space = numbered.space();
        if mesh.cell_type() != CellType::Hexahedron || space.cell_type() != CellType::Hexahedron {
            return Err(GpuError::Unsupported(format!(
                "bake-off operators need hexahedra, got {}",
                mesh.cell_type()
            )));
        }
        if space.ncomp() != 1 {
            return Err(GpuError::Unsupported(
                "bake-off kernels are scalar (ncomp = 1)".into(),
            ));
        }
        let p = space.order();
        let k = bp_kernel::<T>(&op, &plan, p)?;
        let (q, epb, dyn_smem, gstride, block) = (k.q, k.epb, k.dyn_smem, k.gstride, k.block);
        let spec = k.spec;
        let nelem = mesh.num_cells();
        // restriction: full offsets, compact skeleton offsets (interior-last), or the brick
        // boundaries' offsets
        let (offsets_host, nskel) = match plan.numbering() {
            Numbering::Bricks(b) => {
                let layout = numbered
                    .bricks()
                    .filter(|l| l.shape == b && l.slots == SlotOrder::Ring)
                    .ok_or_else(|| {
                        GpuError::Unsupported(format!(
                            "the lattice kernel for bricks {b:?} needs a space numbered by its plan (BpPlan::number), this one is {}",
                            match numbered.bricks() {
                                Some(l) => format!("bricked {:?} ({:?} slots)", l.shape, l.slots),
                                None => "not bricked".into(),
                            }
                        ))
                    })?;
                let off = layout.skeleton_offsets(space.restriction());
                if nelem % epb != 0 || space.restriction().num_elem() != nelem {
                    return Err(GpuError::Unsupported(format!(
                        "{nelem} cells are not whole bricks of {epb} elements of the space's {}",
                        space.restriction().num_elem()
                    )));
                }
                (off, layout.skeleton_nodes)
            }
            Numbering::InteriorLast => {
                let Some(nskel) = space.skeleton_nodes() else {
                    return Err(GpuError::Unsupported(
                        "the pencil kernel needs a space numbered interior-last (H1Space::interior_last)".into(),
                    ));
                };
                (skeleton_offsets(space), nskel)
            }
            Numbering::Plain => (space.restriction().offsets().to_vec(), space.num_dofs()),
        };
        let func = dev.function(&spec, "bp_apply")?;
        // The opt-in covers static plus dynamic shared memory beyond 48 KiB; the kernel's
        // few static bytes (the geometry mbarrier) can tip a dynamic size just under it
        // over, so the limit is raised for any dynamic size (harmless below 48 KiB).
        if dyn_smem > 0 {
            func.set_attribute(
                cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                dyn_smem as i32,
            )
            .map_err(|e| GpuError::driver("raising the dynamic shared memory limit", e))?;
        }
        let ident = dev.function(&spec, "bp_dirichlet_identity")?;
        let zero_fill = match plan {
            BpPlan::Slice2d => None,
            _ => Some(dev.function(&spec, "bp_zero_skeleton")?),
        };
        let groups = nelem.div_ceil(epb);
        let grid = match plan {
            BpPlan::Pencil(c) if c.persistent => {
                // one wave: as many blocks as can be resident at once
                let per_sm = resident_blocks_per_sm(&func, block, dyn_smem)?;
                if per_sm == 0 {
                    return Err(GpuError::Unsupported(format!(
                        "{} cannot be resident on this device (shared memory or registers)",
                        spec.name
                    )));
                }
                groups.min(per_sm * dev.sm_count())
            }
            _ => groups,
        } as u32;
        // element vertices [elem][3][8]: the input of on-the-fly geometry, and of the device
        // kernel that computes stored factors (so 4e7-dof problems need no host geometry)
        let mut verts: Vec<T> = Vec::with_capacity(nelem * 24);
        for c in 0..nelem {
            let cell = mesh.cell(c);
            for d in 0..3 {
                for &v in cell {
                    verts.push(T::of(mesh.vertex(v as usize)[d]));
                }
            }
        }
        let verts = DeviceVec::from_host(dev, &verts, "element vertices")?;
        let geo = match op.geo {
            GeometrySource::OnTheFly => verts,
            GeometrySource::Stored => {
                let q3 = q * q * q;
                let mut geo =
                    DeviceVec::<T>::zeros(dev, nelem * gstride, "stored geometric factors")?;
                let (pts, wts) = &k.points;
                let reft: Vec<T> = pts.iter().chain(wts).map(|&x| T::of(x)).collect();
                let reft = DeviceVec::from_host(dev, &reft, "reference points")?;
                let setup = dev.function(&spec, "bp_setup_geometry")?;
                let ne = nelem as u32;
                let cfgl = LaunchConfig::for_num_elems((nelem * q3).min(1 << 30) as u32);
                let mut b = dev.stream().launch_builder(&setup);
                b.arg(&ne)
                    .arg(verts.slice())
                    .arg(reft.slice())
                    .arg(geo.slice_mut());
                // SAFETY: matches bp_setup_geometry(nelem, xv, ref, geo).
                unsafe { b.launch(cfgl) }.map_err(|e| GpuError::Launch {
                    kernel: "bp_setup_geometry".into(),
                    source: e,
                })?;
                dev.synchronize()?;
                geo
            }
        };
        let mats_t: Vec<T> = k.mats.iter().map(|&x| T::of(x)).collect();
        Ok(GpuBp {
            dev: dev.clone(),
            op,
            plan,
            order: p,
            q1d: q,
            nelem,
            ndofs: space.num_dofs(),
            nskel,
            epb,
            dyn_smem,
            block,
            grid,
            offsets: upload_indices(dev, &offsets_host)?,
            geo,
            mats: DeviceVec::from_host(dev, &mats_t, "1-D matrices")?,
            alpha: T::of(if op.kind == TensorKind::Mass {
                0.0
            } else {
                op.kind.alpha()
            }),
            dirichlet: None,
            spec,
            func,
            ident,
            zero_fill,
            brick_layout: match plan.numbering() {
                Numbering::Bricks(_) => numbered.bricks(),
                _ => None,
            },
        })
    }

    /// Rows with these dofs become identity rows (Dirichlet conditions for CG): inputs at
    /// them are ignored by the element kernel only if they are zero, so callers keep the
    /// constrained entries of search directions at zero, and `apply` copies them through.
    pub fn set_dirichlet(&mut self, dofs: &[u32]) -> Result<(), GpuError> {
        self.dirichlet = if dofs.is_empty() {
            None
        } else {
            Some(DeviceVec::from_host(&self.dev, dofs, "Dirichlet dofs")?)
        };
        Ok(())
    }

    /// Number of global dofs.
    pub fn ndofs(&self) -> usize {
        self.ndofs
    }
    /// Number of elements.
    pub fn nelem(&self) -> usize {
        self.nelem
    }
    /// Polynomial order.
    pub fn order(&self) -> usize {
        self.order
    }
    /// Quadrature points per direction.
    pub fn q1d(&self) -> usize {
        self.q1d
    }
    /// Elements per thread block.
    pub fn elems_per_block(&self) -> usize {
        self.epb
    }
    /// The operator.
    pub fn operator(&self) -> BpOperator {
        self.op
    }
    /// The kernel plan.
    pub fn plan(&self) -> BpPlan {
        self.plan
    }
    /// The kernel specialisation.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
    }
    /// Thread blocks launched per application (one wave for the persistent kernel).
    pub fn grid(&self) -> u32 {
        self.grid
    }
    /// A zero vector of the operator's length for its output (or a Krylov method's
    /// vectors), in compressible memory where the device can compress, so that the
    /// skeleton's zeros between the fill and the atomics cost less DRAM traffic.
    pub fn output_vector(&self, what: &str) -> Result<DeviceVec<T>, GpuError> {
        DeviceVec::zeros_preferably_compressible(&self.dev, self.ndofs, what, true)
    }

    /// Whether the restriction's offsets live in compressible memory (on a device that
    /// compresses).
    pub fn indices_compressible(&self) -> bool {
        self.offsets.is_compressible()
    }

    /// Registers per thread of the compiled kernel.
    pub fn registers(&self) -> i32 {
        self.func.num_regs().unwrap_or(-1)
    }

    /// The stored geometric factors `[elem][ngeo][q^3]` (or the vertices `[elem][3][8]` of
    /// the on-the-fly variant), copied to the host — for tests.
    pub fn geometry_to_host(&self) -> Result<Vec<T>, GpuError> {
        self.geo.to_host()
    }

    /// Whether the skeleton fill runs overlapped with the apply (sm_90).
    fn overlapped(&self) -> bool {
        let asked = match self.plan {
            BpPlan::Pencil(c) => c.overlapped_fill,
            BpPlan::Lattice(_) => true,
            BpPlan::Slice2d => false,
        };
        asked && self.dev.compute_capability().0 >= 9
    }

    /// `v = A u` (v is overwritten).
    pub fn apply(&self, u: &DeviceVec<T>, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        if u.len() != self.ndofs || v.len() != self.ndofs {
            return Err(GpuError::Size {
                what: "bake-off operator vectors",
                expected: self.ndofs,
                got: u.len().min(v.len()),
            });
        }
        // interior nodes are stored, not accumulated: only the skeleton part needs zeroing
        if self.plan == BpPlan::Slice2d {
            v.fill_zero()?;
        } else {
            self.zero_prefix(v, self.nskel as u32)?;
        }
        let cfg = LaunchConfig {
            grid_dim: (self.grid, 1, 1),
            block_dim: (self.block[0], self.block[1], self.block[2]),
            shared_mem_bytes: self.dyn_smem as u32,
        };
        if self.overlapped() {
            self.launch_overlapped(cfg, u, v)?;
        } else {
            let nelem = self.nelem as u32;
            let nskel = self.nskel as u32;
            let mut b = self.dev.stream().launch_builder(&self.func);
            b.arg(&nelem)
                .arg(&nskel)
                .arg(self.offsets.slice())
                .arg(self.geo.slice())
                .arg(self.mats.slice())
                .arg(u.slice())
                .arg(v.slice_mut())
                .arg(&self.alpha);
            // SAFETY: the argument list matches bp_apply's signature; buffers are sized by
            // `new`.
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: self.spec.name.clone(),
                source: e,
            })?;
        }
        self.dirichlet_identity(u, v)
    }

    /// `bp_apply` launched through `cuLaunchKernelEx` with programmatic dependent launch
    /// after the skeleton fill (sm_90; a launch attribute that cudarc's launch builder does
    /// not set): its blocks start as soon as the fill's have (the fill triggers at its
    /// start). The fill itself was stream-ordered, so it began only once all earlier work
    /// was complete and the input is final; the kernel waits for the fill's zeros only
    /// before its scatter.
    fn launch_overlapped(
        &self,
        cfg: LaunchConfig,
        u: &DeviceVec<T>,
        v: &mut DeviceVec<T>,
    ) -> Result<(), GpuError> {
        use cudarc::driver::sys;
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let stream = self.dev.stream();
        self.dev
            .context()
            .bind_to_thread()
            .map_err(|e| GpuError::driver("binding the context", e))?;
        let (nelem, nskel) = (self.nelem as u32, self.nskel as u32);
        let (offsets, _s0) = self.offsets.slice().device_ptr(stream);
        let (geo, _s1) = self.geo.slice().device_ptr(stream);
        let (mats, _s2) = self.mats.slice().device_ptr(stream);
        let (up, _s3) = u.slice().device_ptr(stream);
        let (vp, _s4) = v.slice_mut().device_ptr_mut(stream);
        let alpha = self.alpha;
        let mut args: Vec<*mut std::ffi::c_void> = vec![
            &nelem as *const u32 as *mut _,
            &nskel as *const u32 as *mut _,
            &offsets as *const sys::CUdeviceptr as *mut _,
            &geo as *const sys::CUdeviceptr as *mut _,
            &mats as *const sys::CUdeviceptr as *mut _,
            &up as *const sys::CUdeviceptr as *mut _,
            &vp as *const sys::CUdeviceptr as *mut _,
            &alpha as *const T as *mut _,
        ];
        // SAFETY: an all-zero launch attribute is valid; the id and value set below.
        let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: the arguments match bp_apply's signature; the device pointers and values
        // outlive the call, which copies them; the grid covers the element groups of the
        // buffers sized by `new`.
        unsafe {
            sys::cuLaunchKernelEx(
                &config,
                self.func.cu_function(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
        .result()
        .map_err(|e| GpuError::Launch {
            kernel: self.spec.name.clone(),
            source: e,
        })
    }

    /// Copies the Dirichlet rows through (identity rows) after the element kernel.
    fn dirichlet_identity(&self, u: &DeviceVec<T>, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        if let Some(d) = &self.dirichlet {
            let m = d.len() as u32;
            let cfg = LaunchConfig::for_num_elems(m);
            let mut b = self.dev.stream().launch_builder(&self.ident);
            b.arg(d.slice()).arg(u.slice()).arg(v.slice_mut()).arg(&m);
            // SAFETY: matches bp_dirichlet_identity.
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: "bp_dirichlet_identity".into(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// Zeroes the first `n` values of `v` (the skeleton) before an apply accumulates into
    /// it, in reverse order of chunks so that the lines the apply touches first are written
    /// last and are still in L2.
    fn zero_prefix(&self, v: &mut DeviceVec<T>, n: u32) -> Result<(), GpuError> {
        if n == 0 {
            return Ok(());
        }
        let Some(f) = &self.zero_fill else {
            return v.fill_zero_prefix(n as usize);
        };
        let cfg = LaunchConfig {
            grid_dim: (n.div_ceil(ZERO_CHUNK), 1, 1),
            block_dim: (256, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut b = self.dev.stream().launch_builder(f);
        b.arg(v.slice_mut()).arg(&n);
        // SAFETY: matches bp_zero_skeleton; v holds at least nskel values (checked by apply).
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
            kernel: "bp_zero_skeleton".into(),
            source: e,
        })?;
        Ok(())
    }

    /// The bytes/flops model of one application (the operator crate's model, shared with
    /// the CPU benchmark): L-vectors in and out once, 4-byte offsets, stored factors or
    /// vertex data.
    pub fn model_spec(&self) -> ModelSpec {
        ModelSpec {
            form: FormModel::of_kind(self.op.kind, 3, 1),
            dim: 3,
            order: self.order,
            q: self.q1d,
            ncomp: 1,
            num_elem: self.nelem,
            num_nodes: self.ndofs,
            scalar_bytes: T::BYTES,
            geometry: self.op.geo,
            compact_geometry: false,
            indices: match self.plan.numbering() {
                Numbering::Bricks(b) => IndexTraffic::Bricks(b),
                Numbering::InteriorLast => IndexTraffic::Skeleton,
                Numbering::Plain => IndexTraffic::Offsets,
            },
            vectors: VectorTraffic::LVector,
            output_read: false,
        }
    }

    /// Bytes and flops of one application by [`GpuBp::model_spec`].
    pub fn model(&self) -> Model {
        model::model(&self.model_spec())
    }
}
