//! The CUDA C sources of ferrofem's kernels, embedded in the binary.

/// Definitions shared by every kernel (the `real` type from `-DREAL=...`, helpers).
pub const PRELUDE: &str = include_str!("../kernels/prelude.cuh");
/// Vector kernels used by the solvers (axpy, dot, pointwise products) and the copy
/// kernel that measures the device's copy bandwidth.
pub const BLAS: &str = include_str!("../kernels/blas.cu");
/// Pieces shared by both bake-off kernel variants (sizes, accumulation, trilinear metric,
/// device-side geometry setup).
pub const BP_COMMON: &str = include_str!("../kernels/bp_common.cuh");
/// The CEED bake-off operators BP1, BP3 and BP3.5 on hexahedra: the paper's 2-D slice
/// kernel, the baseline strategy (see the file's header).
pub const BP: &str = include_str!("../kernels/bp.cu");
/// The bake-off operators with pencil contractions: one element per group of threads, 1-D
/// matrices as compile-time constants (see the file's header and docs/bp-gpu.md).
pub const BP_PENCIL: &str = include_str!("../kernels/bp_pencil.cu");
/// The 1-D contraction (plain or even-odd) shared by the pencil and lattice bake-off
/// kernels.
pub const BP_CONTRACT: &str = include_str!("../kernels/bp_contract.cuh");
/// Programmatic dependent launch, the Dirichlet rows' identity and the skeleton fill,
/// shared by the pencil and lattice bake-off kernels.
pub const BP_FILL: &str = include_str!("../kernels/bp_fill.cuh");
/// BP1 on a brick of elements as one node lattice (see the file's header and
/// docs/bp-gpu.md).
pub const BP_LATTICE: &str = include_str!("../kernels/bp_lattice.cu");
/// The Jacobi diagonal of the bake-off operators, matrix-free on the device (see the file's
/// header; host side in `bp/diag.rs`).
pub const BP_DIAG: &str = include_str!("../kernels/bp_diag.cu");

/// Cell geometry from a Jacobian, and affine simplex geometry from a cell's vertex nodes,
/// shared by the residual and assembly kernels.
pub const SIMPLEX: &str = include_str!("../kernels/simplex.cuh");

/// The Q1 geometry of quadrilaterals and hexahedra at quadrature points, for the assembly
/// kernels.
pub const TENSOR: &str = include_str!("../kernels/tensor.cuh");

/// Residual evaluation and Jacobian action of pointwise forms on simplices (thread
/// transposition of Knepley, Rupp & Terrel 2016, and the two baselines).
pub const RESIDUAL: &str = include_str!("../kernels/residual.cu");

/// Element matrices of pointwise forms on simplices and their global CSR assembly (Cecka,
/// Lew & Darve 2011): scattered through the element -> nonzero map (atomics or colours) or
/// stored for the by-nonzero gather (see the file's header and `assembly/`).
pub const ASSEMBLY: &str = include_str!("../kernels/assembly.cu");

/// The spectral-element wave step: the collocated stiffness with acoustic or elastic
/// physics fused with the leapfrog update of element-interior nodes, the skeleton's update,
/// absorbing nodes, sources and receivers (see the file's header and `wave/`).
pub const WAVE: &str = include_str!("../kernels/wave.cu");

/// The halo of a part of a distributed mesh: shared values packed for the neighbours and
/// summed in rank order (host side in `halo.rs`).
pub const HALO: &str = include_str!("../kernels/halo.cu");

/// Concatenates the prelude and a kernel source.
pub fn with_prelude(src: &str) -> String {
    let mut s = String::with_capacity(PRELUDE.len() + src.len() + 1);
    s.push_str(PRELUDE);
    s.push('\n');
    s.push_str(src);
    s
}

/// CSR matrices on the device: SpMV, the diagonal, the eliminated system's right-hand side
/// (host side in `sparse.rs`).
pub const SPARSE: &str = include_str!("../kernels/sparse.cu");
