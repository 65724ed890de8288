//! The Jacobi diagonal of a bake-off operator, computed on the device (kernels/bp_diag.cu):
//! each element's diagonal from its point factors (stored, or computed from its vertices),
//! accumulated into a vector in the operator's numbering, identity rows on the Dirichlet
//! dofs. It replaces the CPU form operator's diagonal (seconds at 5·10⁶ dofs) in the GPU
//! solves, and it is the diagonal of exactly the operator the GPU applies (same points).
//!
//! Compiled on first use through the device's module cache (memory, then disk), so
//! [`GpuBp::new`] does not pay for it.

use super::codegen::{bp_kernel, op_code, pencil_weights, short_name, skeleton_table};
use super::plan::{BpOperator, BpPlan, Numbering, PencilPlan};
use super::GpuBp;
use crate::compile::KernelSpec;
use crate::{sources, DeviceVec, GpuError, GpuReal};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use ferrofem_fe::{gauss_lobatto_legendre, Lagrange1D};
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// Most threads per block of the diagonal kernel (a thread per node up to this; beyond it,
/// threads take several nodes). The kernel has no launch bounds (with them ptxas spills), so
/// at up to 255 registers per thread, 256 threads always fit a multiprocessor.
const MAX_THREADS: usize = 256;

/// A diagonal kernel specialisation with its launch width and the 1-D tables it reads.
struct DiagKernel {
    spec: KernelSpec,
    threads: u32,
    /// `[B (q·n) | D (q·n) | points (q) | weights (q)]`, row-major `q × n` matrices.
    tables: Vec<f64>,
}

/// The diagonal kernel for the operator `op` applied by `plan` at order `p` in precision
/// `T`: the same points, geometry layout and numbering as the apply kernel ([`bp_kernel`]).
fn diag_kernel<T: GpuReal>(
    op: &BpOperator,
    plan: &BpPlan,
    p: usize,
) -> Result<DiagKernel, GpuError> {
    let k = bp_kernel::<T>(op, plan, p)?;
    let interior_last = plan.numbering() == Numbering::InteriorLast;
    let (n, q) = (p + 1, k.q);
    let (pts, wts) = (&k.points.0, &k.points.1);
    let gll = gauss_lobatto_legendre(n).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let basis = Lagrange1D::new(&gll.points);
    // B and D: GLL basis and its derivative at the points (B = I when collocated, q = n)
    let b = if op.kind.is_collocated() {
        (0..q * n)
            .map(|t| if t / n == t % n { 1.0 } else { 0.0 })
            .collect()
    } else {
        basis.interpolation_matrix(pts)
    };
    let mut tables = b;
    tables.extend(basis.derivative_matrix(pts));
    tables.extend_from_slice(pts);
    tables.extend_from_slice(wts);
    let mass = op.kind != TensorKind::Mass && op.kind.has_mass();
    let table = if interior_last {
        let (t, _) = skeleton_table(n);
        let body: Vec<String> = t.iter().map(|x| x.to_string()).collect();
        format!(
            "__constant__ unsigned short cSK[{}] = {{{}}};\n",
            t.len(),
            body.join(", ")
        )
    } else {
        String::new()
    };
    let source = format!(
        "{}\n{table}{}\n{}",
        sources::PRELUDE,
        sources::BP_COMMON,
        sources::BP_DIAG
    );
    let stored = op.geo == GeometrySource::Stored;
    let lattice = match plan {
        BpPlan::Lattice(l) => Some(l.brick),
        _ => None,
    };
    let threads = (n * n * n).next_multiple_of(32).min(MAX_THREADS);
    // the skeleton slots the way the apply kernel finds them
    let slot_arithmetic = !matches!(
        plan,
        BpPlan::Pencil(PencilPlan {
            slot_table: true,
            ..
        })
    );
    let spec = KernelSpec::new(
        format!(
            "diag_{}{}_{}_p{p}_q{q}_{}{}",
            short_name(op.kind),
            if mass { "m" } else { "" },
            T::NAME,
            if stored {
                format!("stored{}", k.gstride)
            } else {
                "otf".to_string()
            },
            if interior_last { "_il" } else { "" }
        ) + if pencil_weights(op, plan) { "_pw" } else { "" }
            + &lattice.map_or(String::new(), |b| format!("_lat{}x{}x{}", b[0], b[1], b[2])),
        source,
    )
    .define("REAL", T::CTYPE)
    .define("OP", op_code(op.kind))
    .define("N", n)
    .define("Q", q)
    .define("NGEO", k.ngeo)
    .define("GSTRIDE", k.gstride)
    .define("GEO", (!stored) as u32)
    .define("MASS", mass as u32)
    .define("INTLAST", interior_last as u32)
    .define("WXSLOW", pencil_weights(op, plan) as u32)
    .define("SKARITH", slot_arithmetic as u32)
    .define("DT", threads);
    // the lattice kernel's weights sit in brick-lattice order
    let spec = match lattice {
        Some(b) => spec
            .define("LATTICE", 1)
            .define("BX", b[0])
            .define("BY", b[1])
            .define("BZ", b[2]),
        None => spec,
    };
    Ok(DiagKernel {
        spec,
        threads: threads as u32,
        tables,
    })
}

impl<T: GpuReal> GpuBp<T> {
    /// The NVRTC specialisation of the diagonal kernel for the operator `op` applied by
    /// `plan` at order `p`, without a device (CI compiles it to check the kernel).
    pub fn diagonal_kernel(
        op: &BpOperator,
        plan: &BpPlan,
        p: usize,
    ) -> Result<KernelSpec, GpuError> {
        Ok(diag_kernel::<T>(op, plan, p)?.spec)
    }

    /// The diagonal of the operator (of [`GpuBp::apply`]'s matrix: 1 on the Dirichlet rows
    /// set by [`GpuBp::set_dirichlet`]), in the operator's numbering, computed on the device
    /// — the Jacobi preconditioner of a device solve. The kernel is compiled (or loaded from
    /// the cache) on the first call.
    pub fn diagonal(&self) -> Result<DeviceVec<T>, GpuError> {
        let mut d = DeviceVec::zeros(&self.dev, self.ndofs, "operator diagonal")?;
        self.diagonal_into(&mut d)?;
        Ok(d)
    }

    /// [`GpuBp::diagonal`] into `d` (length [`GpuBp::ndofs`], overwritten).
    pub fn diagonal_into(&self, d: &mut DeviceVec<T>) -> Result<(), GpuError> {
        if d.len() != self.ndofs {
            return Err(GpuError::Size {
                what: "bake-off operator diagonal",
                expected: self.ndofs,
                got: d.len(),
            });
        }
        let k = diag_kernel::<T>(&self.op, &self.plan, self.order)?;
        d.fill_zero()?;
        let stream = self.dev.stream();
        if self.nelem > 0 {
            let func = self.dev.function(&k.spec, "bp_diagonal")?;
            let tables: Vec<T> = k.tables.iter().map(|&x| T::of(x)).collect();
            let tables = DeviceVec::from_host(&self.dev, &tables, "diagonal tables")?;
            let cfg = LaunchConfig {
                grid_dim: (self.nelem.min(1 << 20) as u32, 1, 1),
                block_dim: (k.threads, 1, 1),
                shared_mem_bytes: 0,
            };
            let (nelem, nskel) = (self.nelem as u32, self.nskel as u32);
            // a bricked operator's offsets cover brick boundaries only: the diagonal kernel
            // reads every element node, through the full restriction
            let full = match &self.brick_layout {
                Some(l) => {
                    let off = l.element_offsets(&self.offsets.to_host()?);
                    Some(DeviceVec::from_host(&self.dev, &off, "element offsets")?)
                }
                None => None,
            };
            let offsets = full.as_ref().unwrap_or(&self.offsets);
            let mut b = stream.launch_builder(&func);
            b.arg(&nelem)
                .arg(&nskel)
                .arg(offsets.slice())
                .arg(self.geo.slice())
                .arg(tables.slice())
                .arg(&self.alpha)
                .arg(d.slice_mut());
            // SAFETY: matches bp_diagonal(nelem, nskel, offsets, geo, tab, alpha, d): the
            // offsets and geometry are the apply kernel's (same layout, sized by `new`), the
            // tables hold 2·q·n + 2·q values, d holds ndofs values (checked above).
            unsafe { b.launch(cfg) }.map_err(|e| GpuError::Launch {
                kernel: k.spec.name.clone(),
                source: e,
            })?;
            // the tables are freed when this scope ends: wait for the kernel first
            self.dev.synchronize()?;
        }
        if let Some(idx) = &self.dirichlet {
            let func = self.dev.function(&k.spec, "bp_diag_set_rows")?;
            let m = idx.len() as u32;
            let one = T::one();
            let mut b = stream.launch_builder(&func);
            b.arg(d.slice_mut()).arg(idx.slice()).arg(&one).arg(&m);
            // SAFETY: matches bp_diag_set_rows(d, idx, value, m); the indices are dofs of
            // the operator (checked by set_dirichlet's caller as for apply).
            unsafe { b.launch(LaunchConfig::for_num_elems(m.max(1))) }.map_err(|e| {
                GpuError::Launch {
                    kernel: "bp_diag_set_rows".into(),
                    source: e,
                }
            })?;
        }
        Ok(())
    }
}
