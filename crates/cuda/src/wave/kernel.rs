//! The specialisation of the wave kernels (`kernels/wave.cu`) for one order, dimension,
//! physics, precision and geometry form.

use super::layout::LocalSlots;
use crate::compile::KernelSpec;
use crate::{sources, GpuReal};
use std::fmt::Write;

/// Threads a block of the stiffness kernel aims at.
const TARGET_THREADS: usize = 256;

/// What one wave kernel specialisation computes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaveKernelShape {
    /// Dimension (2 or 3).
    pub dim: usize,
    /// Nodes per direction (`p + 1`).
    pub np: usize,
    /// Field components (1 acoustic, `dim` elastic).
    pub ncomp: usize,
    /// Isotropic elasticity (else acoustic).
    pub elastic: bool,
    /// One value per element and factor (affine elements, coefficients constant on each).
    pub compact: bool,
    /// Data per point.
    pub factors: usize,
    /// Bit `f`: factor `f` is scaled by the tensor weight of the point (compact data).
    pub weighted: u32,
}

impl WaveKernelShape {
    /// Nodes (and points) per element.
    pub fn npe(&self) -> usize {
        self.np.pow(self.dim as u32)
    }
    /// Whether the stiffness kernel takes a thread per line of an element (from order 2)
    /// rather than a thread per point (order 1).
    pub fn per_line(&self) -> bool {
        self.np > 2
    }
    /// Threads per element of the stiffness kernel: one per line ([`per_line`](Self::per_line))
    /// or one per point.
    pub fn threads_per_elem(&self) -> usize {
        if self.per_line() {
            self.np.pow(self.dim as u32 - 1)
        } else {
            self.npe()
        }
    }
    /// Elements per block of the stiffness kernel.
    pub fn elems_per_block(&self) -> usize {
        (TARGET_THREADS / self.threads_per_elem()).max(1)
    }
    /// Threads per block of the stiffness kernel.
    pub fn block_threads(&self) -> usize {
        self.elems_per_block() * self.threads_per_elem()
    }
    /// Dynamic shared memory of the stiffness kernel in bytes for scalars of `bytes`: per
    /// element and component, four arrays of the element's points in 2-D lines, three
    /// (rows of odd pitch) in 3-D lines, `1 + dim` for the point kernel.
    pub fn shared_bytes(&self, bytes: usize) -> usize {
        let per_elem = match (self.per_line(), self.dim) {
            (true, 2) => 4 * self.npe(),
            (true, _) => 3 * self.np * self.np * (self.np | 1),
            (false, d) => (1 + d) * self.npe(),
        };
        self.elems_per_block() * self.ncomp * per_elem * bytes
    }
}

/// The kernels of `shape` in precision `T`, with the 1-D derivative matrix `d`
/// (`d[q * np + m] = l_m'(x_q)`), the 1-D weights `w1`, the tensor weights `w` of the
/// points (lexicographic) and the local slots.
pub fn wave_kernel<T: GpuReal>(
    shape: &WaveKernelShape,
    d: &[f64],
    w1: &[f64],
    w: &[f64],
    slots: &LocalSlots,
) -> KernelSpec {
    let mut tables = String::new();
    let list = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:e}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(tables, "__device__ real WD[{}] = {{{}}};", d.len(), list(d));
    let _ = writeln!(tables, "__device__ real WQ[{}] = {{{}}};", w.len(), list(w));
    // the same matrix and the 1-D weights in constant memory, for reads at indices the
    // compiler knows (uniform across the warp: constant-bank operands)
    let _ = writeln!(
        tables,
        "__constant__ real WDK[{}] = {{{}}};",
        d.len(),
        list(d)
    );
    let _ = writeln!(
        tables,
        "__constant__ real W1C[{}] = {{{}}};",
        w1.len(),
        list(w1)
    );
    let _ = writeln!(
        tables,
        "__device__ real W1G[{}] = {{{}}};",
        w1.len(),
        list(w1)
    );
    let _ = writeln!(
        tables,
        "__device__ short WSLOT[{}] = {{{}}};",
        slots.slot.len(),
        slots
            .slot
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut src = String::new();
    src.push_str(&format!(
        "#define DIM {}\n#define NP {}\n#define NPE {}\n#define NC {}\n",
        shape.dim,
        shape.np,
        shape.npe(),
        shape.ncomp
    ));
    src.push_str(&sources::with_prelude(&tables));
    src.push_str(sources::WAVE);
    let name = format!(
        "wave_{}{}d_p{}_{}_{}",
        if shape.elastic { "elastic" } else { "acoustic" },
        shape.dim,
        shape.np - 1,
        if shape.compact { "compact" } else { "stored" },
        T::NAME
    );
    KernelSpec::new(name, src)
        .define("REAL", T::CTYPE)
        .define("ELASTIC", shape.elastic as u8)
        .define("COMPACT", shape.compact as u8)
        .define("NF", shape.factors)
        .define("WEIGHTED", shape.weighted)
        .define("EPB", shape.elems_per_block())
        .define("NSKEL", slots.skeleton.max(1))
        .define("NINT", slots.interior)
}
