//! The CUDA C sources of ferrofem's kernels, embedded in the binary.

/// Definitions shared by every kernel (the `real` type from `-DREAL=...`, helpers).
pub const PRELUDE: &str = include_str!("../kernels/prelude.cuh");
/// Vector kernels used by the solvers (axpy, dot, pointwise products) and the copy
/// kernel that measures the device's copy bandwidth.
pub const BLAS: &str = include_str!("../kernels/blas.cu");
/// The CEED bake-off operators BP1, BP3 and BP3.5 on hexahedra (see the file's header).
pub const BP: &str = include_str!("../kernels/bp.cu");

/// Concatenates the prelude and a kernel source.
pub fn with_prelude(src: &str) -> String {
    let mut s = String::with_capacity(PRELUDE.len() + src.len() + 1);
    s.push_str(PRELUDE);
    s.push('\n');
    s.push_str(src);
    s
}
