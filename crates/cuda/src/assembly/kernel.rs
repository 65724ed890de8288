//! The NVRTC specialisation of the element-matrix kernel (`kernels/assembly.cu`), built
//! without a device so that CI can compile every case.

use crate::compile::KernelSpec;
use crate::residual::table_source;
use crate::{sources, GpuError, GpuReal};
use ferrofem_fe::{LagrangeElement, QuadratureRule};
use ferrofem_physics::CudaPhysics;

/// Threads per block of the element-matrix kernel.
pub const THREADS: usize = 256;

/// Shared memory a block of the kernel may use for the pulled-back point blocks: Hopper's
/// opt-in maximum per block.
pub const SHARED_LIMIT: usize = 227 * 1024;

/// Shared memory a block aims to stay within, so that several blocks share a
/// multiprocessor (one element may need more, up to [`SHARED_LIMIT`]).
const SHARED_TARGET: usize = 48 * 1024;

/// Cells whose point blocks SharedNZ computes at a time (the rest of its shared memory
/// holds element matrices).
pub const SHARED_NZ_BATCH: usize = 64;

/// The same for block sums (128 against 64 and 256: P1 tetrahedra 1.54 against 1.72 and
/// 1.49 ms, P2 triangles 1.61 against 1.70 and 1.76 ms, on an H200).
pub const BLOCK_SUMS_BATCH: usize = 128;

/// Shared memory a SharedNZ block aims at for its element matrices (three or four blocks
/// share a multiprocessor; 28 and 112 KiB were slower at P1 and P2 tetrahedra).
pub const SHARED_NZ_BYTES: usize = 56 * 1024;

/// Shared memory a block of block sums holds element matrices in.
pub const BLOCK_SUMS_BYTES: usize = 32 * 1024;

/// The most shared memory the point blocks of sums in shared memory take beside the
/// element matrices.
pub const SHARED_SUMS_POINT_BYTES: usize = 24 * 1024;

/// Where the element-matrix kernel writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output {
    /// Element data `[cell][stride]` (the by-nonzero gather's input).
    ElementData,
    /// Atomic additions into the CSR values through the element → nonzero map.
    Atomic,
    /// Plain additions into the CSR values, over the cells of one colour.
    Colored,
    /// Sums in shared memory (SharedNZ, block sums): at most `emax` element matrices per
    /// block, computed `batch` at a time.
    SharedSums {
        /// The most elements of one block.
        emax: usize,
        /// Cells whose point blocks are computed at a time.
        batch: usize,
    },
    /// One thread per matrix row (rows of at most `max_row` entries).
    Rows {
        /// The longest row of the pattern.
        max_row: usize,
    },
}

/// The auxiliary field the physics reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AuxKind {
    /// None.
    None,
    /// Nodal values in the solution's scalar space.
    Nodal,
    /// One value per cell.
    Cellwise,
}

/// A specialisation of the element-matrix kernel and its launch shape.
#[derive(Clone, Debug)]
pub struct AssemblyKernel {
    /// The NVRTC specialisation (entries `element_matrices`, `row_matrices` or `shared_sums`,
    /// and `gather_nonzeros`).
    pub spec: KernelSpec,
    /// Cells a block takes at a time.
    pub cells_per_block: usize,
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: usize,
}

/// The element-matrix kernel for `physics` on `element` integrated with `rule` (a nonlinear
/// physics linearised about a state the kernel reads), writing to `out` (element data of `stride`
/// entries per cell, or CSR values).
pub fn assembly_kernel<T: GpuReal>(
    physics: &CudaPhysics,
    element: &LagrangeElement,
    rule: &QuadratureRule,
    aux: AuxKind,
    out: Output,
    stride: usize,
) -> Result<AssemblyKernel, GpuError> {
    let ct = element.cell_type();
    let d = ct.dim();
    if physics.dim != d {
        return Err(GpuError::Unsupported(format!(
            "physics is {}-D, mesh is {d}-D",
            physics.dim
        )));
    }
    let tensor = !ct.is_simplex();
    let nonlinear = !physics.linear;
    if rule.cell_type != ct {
        return Err(GpuError::Unsupported(format!(
            "quadrature rule for {}, mesh of {ct}",
            rule.cell_type
        )));
    }
    if (physics.naux > 0) != (aux != AuxKind::None) || physics.naux > 1 {
        return Err(GpuError::Unsupported(format!(
            "physics reads {} auxiliary fields, {aux:?} given (the kernel supplies at most one)",
            physics.naux
        )));
    }
    let (nb, nq, nc) = (element.num_nodes(), rule.len(), physics.ncomp);
    let n = nb * nc;
    if n * n > stride && out == Output::ElementData {
        return Err(GpuError::Size {
            what: "element data stride",
            expected: n * n,
            got: stride,
        });
    }
    let j = physics.jacobian;
    let per_point = nc
        * nc
        * (usize::from(j.g0)
            + d * usize::from(j.g1)
            + d * usize::from(j.g2)
            + d * d * usize::from(j.g3));
    // element-constant blocks (affine cells): contracted with reference tables instead of
    // per point
    let const_g = !tensor && !physics.reads_x && aux != AuxKind::Nodal && !nonlinear;
    let npt = if const_g { 1 } else { nq };
    let cell_bytes = T::BYTES * npt * per_point.max(1);
    if cell_bytes > SHARED_LIMIT {
        return Err(GpuError::Unsupported(format!(
            "{cell_bytes} bytes of shared memory per element (order {} with {nq} points)",
            element.order()
        )));
    }
    // a (cell, point) item for every thread in the point phase (where the gathers and the
    // physics are), and at least two entries per thread in the matrix phase, as far as
    // shared memory allows
    let cells_per_block = THREADS
        .div_ceil(npt)
        .max((2 * THREADS).div_ceil(n * n))
        .clamp(1, THREADS)
        .min(SHARED_TARGET / cell_bytes)
        .max(1);
    // sums in shared memory keep their shared memory for the element matrices
    let cells_per_block = match out {
        Output::SharedSums { batch, .. } => cells_per_block
            .min(batch)
            .min(SHARED_SUMS_POINT_BYTES / cell_bytes)
            .max(1),
        _ => cells_per_block,
    };
    let element_bytes = match out {
        Output::SharedSums { emax, .. } => emax * n * n * T::BYTES,
        _ => 0,
    };
    if cells_per_block * cell_bytes + element_bytes > SHARED_LIMIT {
        return Err(GpuError::Unsupported(format!(
            "{} bytes of shared memory per block",
            cells_per_block * cell_bytes + element_bytes
        )));
    }
    let tab = element
        .tabulate(&rule.points)
        .map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let mut inter = Vec::with_capacity(nq * nb * (d + 1));
    for q in 0..nq {
        for b in 0..nb {
            inter.push(tab.values[q * nb + b]);
            for k in 0..d {
                inter.push(tab.grads[(q * nb + b) * d + k]);
            }
        }
    }
    // in global memory: threads of a warp read different entries (constant memory would
    // serialise them)
    let arr = |name: &str, v: &[f64]| table_source("__device__ const", name, v);
    let mut tables = format!(
        "{}{}{}",
        arr("cTab", &inter),
        arr("cWq", &rule.weights),
        if physics.reads_x {
            arr("cXq", &rule.points)
        } else {
            String::new()
        }
    );
    if tensor {
        // the Q1 map's shape values and reference gradients at the points, corners
        // lexicographic (tensor.cuh)
        let q1 = LagrangeElement::new(ct, 1)
            .and_then(|e| e.tabulate(&rule.points))
            .map_err(|e| GpuError::Unsupported(e.to_string()))?;
        let nv = q1.num_basis;
        let mut geo = Vec::with_capacity(nq * nv * (d + 1));
        for q in 0..nq {
            for v in 0..nv {
                geo.push(q1.values[q * nv + v]);
                geo.extend_from_slice(&q1.grads[(q * nv + v) * d..(q * nv + v + 1) * d]);
            }
        }
        tables.push_str(&arr("cGeo", &geo));
    }
    if const_g {
        let s = ReferenceTables::new(&tab.values, &tab.grads, &rule.weights, nb, d);
        for (present, name, table) in [
            (j.g0, "cS0", &s.s0),
            (j.g1, "cS1", &s.s1),
            (j.g2, "cS2", &s.s2),
            (j.g3, "cS3", &s.s3),
        ] {
            if present {
                tables.push_str(&arr(name, table));
            }
        }
    }
    let source = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        sources::PRELUDE,
        sources::SIMPLEX,
        physics.source,
        tables,
        if tensor { sources::TENSOR } else { "" },
        sources::ASSEMBLY
    );
    // entries per thread in the matrix phase: 2 x 2 tiles (each point's table rows read once
    // per tile) where they won on an H200 — hexahedra Q1–Q4 and quadrilaterals Q3–Q4 (element
    // kernel, Q1 / Q2 / Q3 hexahedra 22.1 / 91.4 / 218.9 against 15.9 / 79.0 / 179.1 ms; Q3 / Q4
    // quadrilaterals, atomics, 5.57 / 12.26 against 3.43 / 9.86 ms); Q1–Q2 quadrilaterals lost
    // (element kernel 1.53 / 2.64 against 1.71 / 2.85 ms); one entry elsewhere
    let (tr, tc) = if tensor && !const_g && !(d == 2 && element.order() <= 2) {
        (2, 2)
    } else {
        (1, 1)
    };
    let spec = KernelSpec::new(
        format!(
            "asm_{}_{}_{}{}_q{nq}_t{tr}x{tc}_{out:?}_{aux:?}{}",
            physics.name,
            T::NAME,
            ct.name(),
            element.order(),
            if nonlinear { "_nl" } else { "" }
        ),
        source,
    )
    .define("REAL", T::CTYPE)
    .define("DIM", d)
    .define("TENSOR", u32::from(tensor))
    .define("TR", tr)
    .define("TC", tc)
    .define("P1D", element.order() + 1)
    .define("NB", nb)
    .define("NQ", nq)
    .define("NC", nc)
    .define("NCB", cells_per_block)
    .define("NT", THREADS)
    .define("STRIDE", stride)
    .define(
        "OUT",
        match out {
            Output::ElementData => 0,
            Output::Atomic => 1,
            Output::Colored => 2,
            Output::Rows { .. } => 3,
            Output::SharedSums { .. } => 4,
        },
    )
    .define(
        "EMAX",
        match out {
            Output::SharedSums { emax, .. } => emax.max(1),
            _ => 1,
        },
    )
    .define(
        "MAXROW",
        match out {
            Output::Rows { max_row } => max_row.max(1),
            _ => 1,
        },
    )
    .define(
        "AUX",
        match aux {
            AuxKind::None => 0,
            AuxKind::Nodal => 1,
            AuxKind::Cellwise => 2,
        },
    )
    .define("NONLIN", u32::from(nonlinear))
    .define("NEED_X", u32::from(physics.reads_x))
    .define("CONST_G", u32::from(const_g))
    .define("HAS_G0", u32::from(j.g0))
    .define("HAS_G1", u32::from(j.g1))
    .define("HAS_G2", u32::from(j.g2))
    .define("HAS_G3", u32::from(j.g3));
    Ok(AssemblyKernel {
        spec,
        cells_per_block,
        shared_bytes: cells_per_block * cell_bytes + element_bytes,
    })
}

/// The quadrature sums of products of basis values and reference derivatives that an
/// element matrix of element-constant blocks contracts with (`kernels/assembly.cu`,
/// `CONST_G`): `s0[i][j] = Σ_q w φ_i φ_j`, `s1[l][i][j] = Σ_q w φ_i ∂_l φ_j`,
/// `s2[k][i][j] = Σ_q w ∂_k φ_i φ_j`, `s3[k][l][i][j] = Σ_q w ∂_k φ_i ∂_l φ_j`.
struct ReferenceTables {
    s0: Vec<f64>,
    s1: Vec<f64>,
    s2: Vec<f64>,
    s3: Vec<f64>,
}

impl ReferenceTables {
    /// From basis values `values[q * nb + i]`, reference gradients
    /// `grads[(q * nb + i) * d + k]` and weights.
    fn new(values: &[f64], grads: &[f64], weights: &[f64], nb: usize, d: usize) -> ReferenceTables {
        let nn = nb * nb;
        let mut t = ReferenceTables {
            s0: vec![0.0; nn],
            s1: vec![0.0; d * nn],
            s2: vec![0.0; d * nn],
            s3: vec![0.0; d * d * nn],
        };
        for (q, &w) in weights.iter().enumerate() {
            let phi = |i: usize| values[q * nb + i];
            let dphi = |i: usize, k: usize| grads[(q * nb + i) * d + k];
            for i in 0..nb {
                for j in 0..nb {
                    let ij = i * nb + j;
                    t.s0[ij] += w * phi(i) * phi(j);
                    for k in 0..d {
                        t.s1[k * nn + ij] += w * phi(i) * dphi(j, k);
                        t.s2[k * nn + ij] += w * dphi(i, k) * phi(j);
                        for l in 0..d {
                            t.s3[(k * d + l) * nn + ij] += w * dphi(i, k) * dphi(j, l);
                        }
                    }
                }
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::ReferenceTables;

    /// On the P1 reference triangle (φ = 1 − x − y, x, y; one-point rule at the centroid,
    /// weight ½) the tables are the reference mass lumped at the centroid and the
    /// reference stiffness blocks.
    #[test]
    fn reference_tables_of_p1_triangles() {
        let values = [1.0 / 3.0; 3];
        let grads = [-1.0, -1.0, 1.0, 0.0, 0.0, 1.0];
        let t = ReferenceTables::new(&values, &grads, &[0.5], 3, 2);
        assert!(t.s0.iter().all(|&v| (v - 0.5 / 9.0).abs() < 1e-15));
        // s3[0][0] = ½ ∂x φ_i ∂x φ_j
        let s3xx = &t.s3[..9];
        assert_eq!(s3xx, &[0.5, -0.5, 0.0, -0.5, 0.5, 0.0, 0.0, 0.0, 0.0]);
        // s3[0][1] = ½ ∂x φ_i ∂y φ_j
        assert_eq!(
            &t.s3[9..18],
            &[0.5, 0.0, -0.5, -0.5, 0.0, 0.5, 0.0, 0.0, 0.0]
        );
        // s1[0][i][j] = ½ φ_i ∂x φ_j = (1/6) ∂x φ_j
        assert!((t.s1[1] - 1.0 / 6.0).abs() < 1e-15 && (t.s1[0] + 1.0 / 6.0).abs() < 1e-15);
        assert!((t.s2[3] - 1.0 / 6.0).abs() < 1e-15);
    }
}
