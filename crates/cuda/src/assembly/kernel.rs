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

/// The same with sum factorisation, whose partial sums take more shared memory per cell:
/// two Q3 hexahedra (110 KiB in f64) per block.
const SUMFAC_SHARED_TARGET: usize = 128 * 1024;

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
    // sum factorisation on tensor cells (`SUMFAC`): against every entry summed over every
    // point (2 x 2 entries per thread), atomics on an H200 at Q1–Q4 hexahedra
    // 16.9 / 80.2 / 178.9 / 421.6 against 11.9 / 9.9 / 10.6 / 11.2 ms, at Q2–Q4
    // quadrilaterals 3.00 / 3.40 / 9.85 against 2.24 / 2.84 / 3.69 ms; Q1 quadrilaterals
    // lost (1.79 against 2.69 ms), and one thread per row recomputes single entries
    let sumfac = match out {
        Output::Rows { .. } => None,
        _ if !tensor || (d == 2 && element.order() == 1) => None,
        _ => Some(SumFactorisation::new(element, rule, j, d)?),
    };
    let cell_bytes = T::BYTES
        * (npt * per_point.max(1) + sumfac.as_ref().map_or(0, SumFactorisation::shared_reals));
    if cell_bytes > SHARED_LIMIT {
        return Err(GpuError::Unsupported(format!(
            "{cell_bytes} bytes of shared memory per element (order {} with {nq} points)",
            element.order()
        )));
    }
    // a (cell, point) item for every thread in the point phase (where the gathers and the
    // physics are), and at least two entries per thread in the matrix phase, as far as
    // shared memory allows; with sum factorisation a (cell, index tuple) item for every
    // thread in its last phase, and at least two cells (atomics on an H200: Q1 / Q2 / Q3
    // hexahedra with 16 / 4 / 2 cells 12.06 / 10.02 / 10.73 ms, with 32 / 8 / 1 cells
    // 12.61 / 11.51 / 11.12 ms; quadrilaterals within 2 %)
    let (cells_per_block, shared_target) = match &sumfac {
        Some(sf) => (
            THREADS.div_ceil(sf.rest_items()).max(2),
            SUMFAC_SHARED_TARGET,
        ),
        None => (
            THREADS.div_ceil(npt).max((2 * THREADS).div_ceil(n * n)),
            SHARED_TARGET,
        ),
    };
    let cells_per_block = cells_per_block
        .clamp(1, THREADS)
        .min(shared_target / cell_bytes)
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
    if let Some(sf) = &sumfac {
        tables.push_str(&table_source("__constant__ const", "cE", &sf.pair_tables));
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
    let spec = KernelSpec::new(
        format!(
            "asm_{}_{}_{}{}_q{nq}{}_{out:?}_{aux:?}{}",
            physics.name,
            T::NAME,
            ct.name(),
            element.order(),
            if sumfac.is_some() { "_sf" } else { "" },
            if nonlinear { "_nl" } else { "" }
        ),
        source,
    )
    .define("REAL", T::CTYPE)
    .define("DIM", d)
    .define("TENSOR", u32::from(tensor))
    .define("SUMFAC", u32::from(sumfac.is_some()))
    .define("Q1D", sumfac.as_ref().map_or(1, |sf| sf.q1d))
    .define("PRESENT", sumfac.as_ref().map_or(0, |sf| sf.present))
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

/// What the sum-factorised matrix phase (`kernels/assembly.cu`, `SUMFAC`) needs of a
/// tensor element and a tensor rule.
struct SumFactorisation {
    /// Points per direction.
    q1d: usize,
    /// Nodes per direction.
    p1d: usize,
    /// The cell's dimension.
    dim: usize,
    /// `[tau][i * p1d + j][q]`: `X[i][q] Y[j][q]` with `X` the 1-D derivatives where
    /// `tau & 2`, else values, and `Y` likewise with `tau & 1`.
    pair_tables: Vec<f64>,
    /// Bit `tau` set where a term of the form has that pair kind in a direction (the same
    /// set in every direction).
    present: u32,
    /// The form's terms (`NTERMS`).
    nterms: usize,
}

impl SumFactorisation {
    fn new(
        element: &LagrangeElement,
        rule: &QuadratureRule,
        terms: ferrofem_physics::JacobianTerms,
        dim: usize,
    ) -> Result<SumFactorisation, GpuError> {
        let (Some(basis), Some(rule_1d)) = (element.basis_1d(), rule.rule_1d.as_ref()) else {
            return Err(GpuError::Unsupported(format!(
                "assembly on {} needs a tensor-product basis and rule",
                element.cell_type()
            )));
        };
        let (p1d, q1d) = (basis.len(), rule_1d.len());
        if element.num_nodes() != p1d.pow(dim as u32) || rule.len() != q1d.pow(dim as u32) {
            return Err(GpuError::Unsupported(format!(
                "a {}-node element or a {}-point rule that is no tensor product",
                element.num_nodes(),
                rule.len()
            )));
        }
        let (b, d) = basis.matrices(&rule_1d.points);
        let table = |deriv: bool, i: usize, q: usize| {
            if deriv {
                d[q * p1d + i]
            } else {
                b[q * p1d + i]
            }
        };
        let mut pair_tables = Vec::with_capacity(4 * p1d * p1d * q1d);
        for tau in 0..4 {
            for i in 0..p1d {
                for j in 0..p1d {
                    for q in 0..q1d {
                        pair_tables.push(table(tau & 2 != 0, i, q) * table(tau & 1 != 0, j, q));
                    }
                }
            }
        }
        // the pair kinds of the form's terms in direction 0 (value or derivative 0 on each
        // side); by the symmetry of the terms in the directions, those of every direction
        let mut present = 0;
        for (has, test_d0, trial_d0) in [
            (terms.g0, &[false][..], &[false][..]),
            (terms.g1, &[false], &[true, false]),
            (terms.g2, &[true, false], &[false]),
            (terms.g3, &[true, false], &[true, false]),
        ] {
            if has {
                for &x in test_d0 {
                    for &y in trial_d0 {
                        present |= 1 << (2 * u32::from(x) + u32::from(y));
                    }
                }
            }
        }
        let nterms = usize::from(terms.g0)
            + dim * (usize::from(terms.g1) + usize::from(terms.g2))
            + dim * dim * usize::from(terms.g3);
        Ok(SumFactorisation {
            q1d,
            p1d,
            dim,
            pair_tables,
            present,
            nterms,
        })
    }

    /// Index tuples of one component block but for direction 1 (the last summed):
    /// `p1d^(2(dim-1))`.
    fn rest_items(&self) -> usize {
        self.p1d.pow(2 * (self.dim as u32 - 1))
    }

    /// Shared memory of one cell's partial sums, in reals (`SUMFAC_REALS`).
    fn shared_reals(&self) -> usize {
        4 * self.rest_items() * self.q1d
            + if self.dim == 3 {
                self.nterms * self.p1d * self.p1d * self.q1d * self.q1d
            } else {
                0
            }
    }
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
    use super::{ReferenceTables, SumFactorisation};
    use ferrofem_base::CellType;
    use ferrofem_fe::{LagrangeElement, QuadratureRule};
    use ferrofem_physics::JacobianTerms;

    /// The products of the pair tables over the directions are the products of the full
    /// tabulation that the element matrix sums: `X_i Y_j` at every point for every term
    /// (value or reference derivative on each side), with lexicographic nodes and points.
    #[test]
    fn pair_tables_factor_the_tabulation() {
        for (ct, p) in [
            (CellType::Quadrilateral, 2),
            (CellType::Quadrilateral, 3),
            (CellType::Hexahedron, 1),
            (CellType::Hexahedron, 2),
        ] {
            let d = ct.dim();
            let element = LagrangeElement::new(ct, p).unwrap();
            let rule = QuadratureRule::gauss(ct, p + 1).unwrap();
            let all = JacobianTerms {
                g0: true,
                g1: true,
                g2: true,
                g3: true,
            };
            let sf = SumFactorisation::new(&element, &rule, all, d).unwrap();
            assert_eq!(sf.present, 0b1111);
            assert_eq!(sf.nterms, (d + 1) * (d + 1));
            let tab = element.tabulate(&rule.points).unwrap();
            let (nb, n1, q1) = (element.num_nodes(), sf.p1d, sf.q1d);
            let digit = |x: usize, m: usize, base: usize| (x / base.pow(m as u32)) % base;
            // value (0) or reference derivative k (1 + k) of basis b at point q
            let full = |b: usize, q: usize, a: usize| {
                if a == 0 {
                    tab.values[q * nb + b]
                } else {
                    tab.grads[(q * nb + b) * d + a - 1]
                }
            };
            for al in 0..=d {
                for be in 0..=d {
                    for q in 0..rule.len() {
                        for i in 0..nb {
                            for j in 0..nb {
                                let mut product = 1.0;
                                for m in 0..d {
                                    let tau =
                                        2 * usize::from(al == m + 1) + usize::from(be == m + 1);
                                    let (im, jm, qm) =
                                        (digit(i, m, n1), digit(j, m, n1), digit(q, m, q1));
                                    product *=
                                        sf.pair_tables[((tau * n1 + im) * n1 + jm) * q1 + qm];
                                }
                                let expected = full(i, q, al) * full(j, q, be);
                                assert!(
                                    (product - expected).abs() < 1e-12 * (1.0 + expected.abs()),
                                    "{ct} Q{p} term ({al}, {be}) point {q} entry ({i}, {j}): {product} against {expected}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

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
