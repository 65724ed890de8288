//! The CEED bake-off operators (BP1 mass, BP3 screened diffusion with Gauss quadrature,
//! BP3.5 diffusion collocated at GLL nodes) on hexahedral meshes, applied on the GPU as the
//! whole operator a user calls: L-vector in, gather, element kernel, scatter-add, L-vector
//! out. Kernels: `kernels/bp.cu`.

use crate::compile::KernelSpec;
use crate::{sources, DeviceVec, GpuDevice, GpuError, GpuReal};
use cudarc::driver::{CudaFunction, LaunchConfig, PushKernelArg};
use ferrofem_base::CellType;
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, Lagrange1D};
use ferrofem_mesh::Mesh;
use ferrofem_operator::tensor::model::{self, IndexTraffic, Model, ModelSpec, VectorTraffic};
use ferrofem_operator::tensor::{GeometryMode, TensorKind};
use ferrofem_space::H1Space;
use std::sync::Arc;

fn op_code(kind: TensorKind) -> u32 {
    match kind {
        TensorKind::Mass => 1,
        TensorKind::Diffusion { .. } => 3,
        TensorKind::CollocatedDiffusion { .. } => 5,
    }
}

/// Short name of a bake-off operator for kernel cache files (`bp1`, `bp3`, `bp35`).
fn short_name(kind: TensorKind) -> &'static str {
    match kind {
        TensorKind::Mass => "bp1",
        TensorKind::Diffusion { .. } => "bp3",
        TensorKind::CollocatedDiffusion { .. } => "bp35",
    }
}

/// Where geometric factors come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GeoMode {
    /// Precomputed at every quadrature point and read from memory.
    Stored,
    /// Computed in the kernel from the element's 8 vertices (24 numbers per element).
    OnTheFly,
}

/// Options of a GPU bake-off operator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BpConfig {
    /// Which operator (with its mass coefficient `α`), as on the CPU.
    pub kind: TensorKind,
    /// Geometry variant.
    pub geo: GeoMode,
    /// Quadrature points per direction (`None`: `p + 2` Gauss for BP1/BP3; BP3.5 always
    /// uses the `p + 1` GLL nodes).
    pub q1d: Option<usize>,
    /// Elements per thread block (`None`: chosen from the shape).
    pub elems_per_block: Option<usize>,
}

impl BpConfig {
    /// Defaults for `kind`: stored geometry, default quadrature.
    pub fn new(kind: TensorKind) -> BpConfig {
        BpConfig {
            kind,
            geo: GeoMode::Stored,
            q1d: None,
            elems_per_block: None,
        }
    }
}

/// A bake-off operator on the GPU for one mesh and space.
pub struct GpuBp<T: GpuReal> {
    dev: Arc<GpuDevice>,
    cfg: BpConfig,
    order: usize,
    q1d: usize,
    nelem: usize,
    ndofs: usize,
    epb: usize,
    offsets: DeviceVec<u32>,
    geo: DeviceVec<T>,
    mats: DeviceVec<T>,
    alpha: T,
    dirichlet: Option<DeviceVec<u32>>,
    spec: KernelSpec,
    func: CudaFunction,
    ident: CudaFunction,
}

fn shared_bytes_per_elem(op: u32, n: usize, q: usize, real: usize) -> usize {
    let pad = |k: usize| if k % 2 == 0 { k + 1 } else { k };
    let words = match op {
        5 => 3 * n * n * pad(n),
        1 => n * q * pad(q) + n * n * pad(q),
        _ => n * q * pad(q) + n * n * pad(q) + 3 * q * q * pad(q),
    };
    words * real
}

impl<T: GpuReal> GpuBp<T> {
    /// Builds the operator for `space` (scalar, on a hexahedral `mesh`), uploading the
    /// restriction, the geometry (or vertices) and the 1-D matrices, and compiling the
    /// kernel specialisation (or taking it from the cache).
    pub fn new(
        dev: &Arc<GpuDevice>,
        mesh: &Mesh,
        space: &H1Space,
        cfg: BpConfig,
    ) -> Result<GpuBp<T>, GpuError> {
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
        let n = p + 1;
        let q = match cfg.kind {
            TensorKind::CollocatedDiffusion { .. } => n,
            _ => cfg.q1d.unwrap_or(p + 2),
        };
        if q < n {
            return Err(GpuError::Unsupported(format!(
                "{} needs at least p + 1 = {n} quadrature points, got {q}",
                cfg.kind.name()
            )));
        }
        let nelem = mesh.num_cells();
        let q3 = q * q * q;
        // 1-D matrices
        let gll = gauss_lobatto_legendre(n).map_err(|e| GpuError::Unsupported(e.to_string()))?;
        let basis = Lagrange1D::new(&gll.points);
        let (pts, wts) = if cfg.kind.is_collocated() {
            (gll.points.clone(), gll.weights.clone())
        } else {
            let g = gauss_legendre(q).map_err(|e| GpuError::Unsupported(e.to_string()))?;
            (g.points, g.weights)
        };
        let mut mats: Vec<f64> = match cfg.kind {
            TensorKind::Mass => basis.interpolation_matrix(&pts),
            TensorKind::Diffusion { .. } => {
                let mut m = basis.interpolation_matrix(&pts);
                m.extend(Lagrange1D::new(&pts).derivative_matrix(&pts));
                m
            }
            TensorKind::CollocatedDiffusion { .. } => basis.derivative_matrix(&pts),
        };
        if cfg.geo == GeoMode::OnTheFly {
            mats.extend_from_slice(&pts);
            mats.extend_from_slice(&wts);
        }
        let mass = cfg.kind != TensorKind::Mass && cfg.kind.has_mass();
        let ngeo = match cfg.kind {
            TensorKind::Mass => 1,
            _ => 6 + mass as usize,
        };
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
        let t1d = n.max(q);
        let smem_elem = shared_bytes_per_elem(op_code(cfg.kind), n, q, T::BYTES);
        let epb = cfg.elems_per_block.unwrap_or_else(|| {
            let by_threads = (128 / (t1d * t1d)).max(1);
            let by_smem = (40_000 / smem_elem.max(1)).max(1);
            by_threads.min(by_smem)
        });
        if smem_elem * epb > 48_000 || t1d * t1d * epb > 1024 {
            return Err(GpuError::Unsupported(format!(
                "{} elements per block of order {p} need {} bytes of shared memory / {} threads",
                epb,
                smem_elem * epb,
                t1d * t1d * epb
            )));
        }
        let spec = KernelSpec::new(
            format!(
                "{}_{}_p{p}_q{q}_{}_e{epb}",
                short_name(cfg.kind),
                T::NAME,
                if cfg.geo == GeoMode::Stored {
                    "stored"
                } else {
                    "otf"
                }
            ),
            sources::with_prelude(sources::BP),
        )
        .define("REAL", T::CTYPE)
        .define("OP", op_code(cfg.kind))
        .define("N", n)
        .define("Q", q)
        .define("EPB", epb)
        .define("GEO", (cfg.geo == GeoMode::OnTheFly) as u32)
        .define("MASS", mass as u32)
        .define("NGEO", ngeo);
        let func = dev.function(&spec, "bp_apply")?;
        let ident = dev.function(&spec, "bp_dirichlet_identity")?;
        let mats_t: Vec<T> = mats.iter().map(|&x| T::of(x)).collect();
        let verts = DeviceVec::from_host(dev, &verts, "element vertices")?;
        let geo = match cfg.geo {
            GeoMode::OnTheFly => verts,
            GeoMode::Stored => {
                let mut geo =
                    DeviceVec::<T>::zeros(dev, nelem * ngeo * q3, "stored geometric factors")?;
                let reft: Vec<T> = pts.iter().chain(&wts).map(|&x| T::of(x)).collect();
                let reft = DeviceVec::from_host(dev, &reft, "reference points")?;
                let setup = dev.function(&spec, "bp_setup_geometry")?;
                let ne = nelem as u32;
                let cfgl = LaunchConfig::for_num_elems(((nelem * q3).min(1 << 30)) as u32);
                let stream = dev.stream();
                let mut b = stream.launch_builder(&setup);
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
        Ok(GpuBp {
            dev: dev.clone(),
            cfg,
            order: p,
            q1d: q,
            nelem,
            ndofs: space.num_dofs(),
            epb,
            offsets: DeviceVec::from_host(
                dev,
                space.restriction().offsets(),
                "restriction offsets",
            )?,
            geo,
            mats: DeviceVec::from_host(dev, &mats_t, "1-D matrices")?,
            alpha: T::of(if cfg.kind == TensorKind::Mass {
                0.0
            } else {
                cfg.kind.alpha()
            }),
            dirichlet: None,
            spec,
            func,
            ident,
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
    /// The configuration.
    pub fn config(&self) -> BpConfig {
        self.cfg
    }
    /// The kernel specialisation.
    pub fn spec(&self) -> &KernelSpec {
        &self.spec
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

    /// `v = A u` (v is overwritten).
    pub fn apply(&self, u: &DeviceVec<T>, v: &mut DeviceVec<T>) -> Result<(), GpuError> {
        if u.len() != self.ndofs || v.len() != self.ndofs {
            return Err(GpuError::Size {
                what: "bake-off operator vectors",
                expected: self.ndofs,
                got: u.len().min(v.len()),
            });
        }
        v.fill_zero()?;
        let n = self.order + 1;
        let t1d = n.max(self.q1d) as u32;
        let cfg = LaunchConfig {
            grid_dim: (self.nelem.div_ceil(self.epb) as u32, 1, 1),
            block_dim: (t1d, t1d, self.epb as u32),
            shared_mem_bytes: 0,
        };
        let nelem = self.nelem as u32;
        let stream = self.dev.stream();
        let mut b = stream.launch_builder(&self.func);
        b.arg(&nelem)
            .arg(self.offsets.slice())
            .arg(self.geo.slice())
            .arg(self.mats.slice())
            .arg(u.slice())
            .arg(v.slice_mut())
            .arg(&self.alpha);
        // SAFETY: argument list matches bp_apply's signature; buffers are sized by `new`.
        unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
            kernel: self.spec.name.clone(),
            source: e,
        })?;
        if let Some(d) = &self.dirichlet {
            let m = d.len() as u32;
            let cfg = LaunchConfig::for_num_elems(m);
            let mut b = stream.launch_builder(&self.ident);
            b.arg(d.slice()).arg(u.slice()).arg(v.slice_mut()).arg(&m);
            // SAFETY: matches bp_dirichlet_identity.
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: "bp_dirichlet_identity".into(),
                source: e,
            })?;
        }
        Ok(())
    }

    /// The bytes/flops model of one application (the operator crate's model, shared with
    /// the CPU benchmark): L-vectors in and out once, 4-byte offsets, stored factors or
    /// vertex data.
    pub fn model_spec(&self) -> ModelSpec {
        ModelSpec {
            kind: self.cfg.kind,
            dim: 3,
            order: self.order,
            q: self.q1d,
            ncomp: 1,
            num_elem: self.nelem,
            num_nodes: self.ndofs,
            scalar_bytes: T::BYTES,
            geometry: match self.cfg.geo {
                GeoMode::Stored => GeometryMode::Stored,
                GeoMode::OnTheFly => GeometryMode::OnTheFly,
            },
            indices: IndexTraffic::Offsets,
            vectors: VectorTraffic::LVector,
            output_read: false,
        }
    }

    /// Bytes and flops of one application by [`GpuBp::model_spec`].
    pub fn model(&self) -> Model {
        model::model(&self.model_spec())
    }
}
