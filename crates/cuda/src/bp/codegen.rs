//! The CUDA C specialisation of a bake-off kernel for an operator, a plan and an order:
//! its source (the kernel files with the 1-D matrices as constants), its `-D` constants
//! and its launch shape, without a device (CI compiles every tested specialisation).

use super::bricks::{BrickLayout, SlotOrder};
use super::plan::{BpOperator, BpPlan, LatticePlan, PencilPlan};
use crate::compile::KernelSpec;
use crate::{sources, GpuError, GpuReal};
use ferrofem_fe::{gauss_legendre, gauss_lobatto_legendre, Lagrange1D};
use ferrofem_geometry::GeometrySource;
use ferrofem_operator::tensor::TensorKind;

/// Values each block of the skeleton fill (`bp_zero_skeleton`) zeroes: one contiguous chunk.
pub(crate) const ZERO_CHUNK: u32 = 2048;

/// The most shared memory one block can opt in to on sm_90 (227 KiB), static included.
const SM90_SHARED_PER_BLOCK: usize = 227 * 1024;

/// The kernels' operator code (`OP`).
pub(crate) fn op_code(kind: TensorKind) -> u32 {
    match kind {
        TensorKind::Mass => 1,
        TensorKind::Diffusion { .. } => 3,
        TensorKind::CollocatedDiffusion { .. } => 5,
    }
}

/// Short name of a bake-off operator for kernel names (`bp1`, `bp3`, `bp35`).
pub(crate) fn short_name(kind: TensorKind) -> &'static str {
    match kind {
        TensorKind::Mass => "bp1",
        TensorKind::Diffusion { .. } => "bp3",
        TensorKind::CollocatedDiffusion { .. } => "bp35",
    }
}

/// A kernel specialisation of a bake-off operator and its launch shape.
#[derive(Clone, Debug)]
pub struct BpKernel {
    /// The NVRTC specialisation.
    pub spec: KernelSpec,
    /// Quadrature points per direction.
    pub q: usize,
    /// Elements per thread block.
    pub epb: usize,
    /// Dynamic shared memory per block in bytes.
    pub dyn_smem: usize,
    /// Stored geometric factors per quadrature point.
    pub ngeo: usize,
    /// Reals between consecutive elements of stored geometry.
    pub gstride: usize,
    /// 1-D matrices uploaded for the slice kernel (and points/weights for on the fly).
    pub mats: Vec<f64>,
    /// 1-D reference points and weights of the quadrature.
    pub points: (Vec<f64>, Vec<f64>),
    /// Threads per block along x, y and z.
    pub block: [u32; 3],
}

/// Whether the stored BP1 weights are laid out x slowest (`WXSLOW`): the apply, setup and
/// diagonal kernels must agree on it.
pub(crate) fn pencil_weights(op: &BpOperator, plan: &BpPlan) -> bool {
    matches!(plan, BpPlan::Pencil(c) if c.pencil_weights && c.register_columns)
        && op.geo == GeometrySource::Stored
}

/// The register-column kernel's shared pitches in reals, `[ZPR, ZPP, YPR, YPP]` (rows and
/// planes of its regions sZ and sY), where the bank-modelled layout applies: chosen per
/// order by a model of the kernel's eight shared accesses with 8-byte reals, half-warps
/// served apart, and the default block shape (the fewest wavefronts, then the smallest
/// regions; docs/bp-gpu.md).
fn column_pitches(op: &BpOperator, c: &PencilPlan, p: usize, real: usize) -> Option<[usize; 4]> {
    if !(c.bank_pitches && c.register_columns && real == 8 && op.default_rule(p)) {
        return None;
    }
    match p {
        3 => Some([4, 20, 7, 42]),
        4 => Some([6, 38, 6, 43]),
        5 => Some([6, 38, 7, 54]),
        6 => Some([7, 55, 7, 56]),
        7 => Some([8, 72, 10, 105]),
        8 => Some([9, 89, 9, 90]),
        _ => None,
    }
}

/// The BP3 kernel's shared pitches in reals, `[BPR, BPP, UPR, UPP, RPR, RPP, SPR, SPP]`
/// (rows and planes of its arrays sB, sU and sC, sR, sS), where the bank-modelled layout
/// applies (f64, the default rule), chosen per order by the half-warp bank model of the
/// kernel's shared accesses with the default block shape.
fn bp3_pitches(op: &BpOperator, c: &PencilPlan, p: usize, real: usize) -> Option<[usize; 8]> {
    let bp3 = matches!(op.kind, TensorKind::Diffusion { .. });
    if !(c.bank_pitches && bp3 && real == 8 && op.default_rule(p)) {
        return None;
    }
    match p {
        3 => Some([7, 38, 5, 39, 5, 25, 5, 37]),
        4 => Some([9, 54, 9, 54, 9, 58, 6, 38]),
        5 => Some([7, 42, 7, 61, 7, 49, 7, 55]),
        6 => Some([9, 72, 9, 72, 9, 72, 8, 72]),
        7 => Some([10, 89, 9, 89, 9, 81, 9, 89]),
        8 => Some([11, 110, 10, 106, 10, 101, 10, 106]),
        _ => None,
    }
}

/// Elements per block and dynamic shared memory (bytes) of the slice and pencil kernels,
/// mirroring their layouts (slice: static shared arrays; pencil: `GALL + EPB * WORK`
/// reals).
fn choose_block(
    op: &BpOperator,
    plan: &BpPlan,
    n: usize,
    q: usize,
    gstride: usize,
    real: usize,
) -> Result<(usize, usize), GpuError> {
    let t1d = n.max(q);
    let otf = op.geo == GeometrySource::OnTheFly;
    let opc = op_code(op.kind);
    let p = n - 1;
    // (static bytes per element, dynamic bytes per element, elements per block asked)
    let (stat, dynamic, asked, budget, limit) = match plan {
        BpPlan::Slice2d => {
            let words = match opc {
                5 => 3 * n * n * pad(n),
                1 => n * q * pad(q) + n * n * pad(q),
                _ => n * q * pad(q) + n * n * pad(q) + 3 * q * q * pad(q),
            };
            // static shared memory is limited to 48 KB
            (words * real, 0, None, 40_000, 48_000)
        }
        BpPlan::Pencil(c) => {
            // mirrors WORK / GALL in kernels/bp_pencil.cu
            let reg = match opc {
                1 if c.register_columns => match column_pitches(op, c, p, real) {
                    Some([_, zpp, _, ypp]) => q * zpp.max(ypp),
                    None => q * q * pad(n),
                },
                1 => n * q * pad(q),
                _ => match bp3_pitches(op, c, p, real) {
                    Some([_, bpp, _, upp, _, rpp, _, spp]) => (q * q * pad(q))
                        .max(n * bpp)
                        .max(q * upp)
                        .max(q * rpp)
                        .max(q * spp),
                    None => q * q * pad(q),
                },
            };
            let tma = !otf && !c.direct_geometry;
            // BP1: two regions; BP3 / BP3.5: three (transposed phase in place)
            let nreg = if opc == 1 { 2 } else { 3 };
            let stage = if c.persistent { n * n * pad(n) } else { 0 };
            let work = nreg * reg + stage + if otf { 24 } else { 0 };
            let geo = if tma { gstride } else { 0 };
            // opts in to up to ~200 KB but aims for >= 2 blocks per multiprocessor
            (0, (work + geo) * real, c.elems_per_block, 100_000, 220_000)
        }
        BpPlan::Lattice(_) => unreachable!("the lattice kernel is sized by lattice_block"),
    };
    let per_elem = stat + dynamic;
    let epb = asked.unwrap_or_else(|| {
        let by_threads = (128 / (t1d * t1d)).max(1);
        let by_smem = (budget / per_elem.max(1)).max(1);
        by_threads.min(by_smem)
    });
    if epb == 0 || per_elem * epb > limit || t1d * t1d * epb > 1024 {
        return Err(GpuError::Unsupported(format!(
            "{epb} elements per block of order {p} need {} bytes of shared memory / {} threads",
            per_elem * epb,
            t1d * t1d * epb
        )));
    }
    Ok((epb, dynamic * epb))
}

/// The lattice kernel's shape for a brick of `b` elements of order `p` with `q` points.
struct LatticeBlock {
    /// Threads per block: one per line of the largest phase, in whole warps.
    threads: usize,
    /// Dynamic shared memory in bytes: the lattice array, the boundary offsets, and the
    /// weights where they are copied in.
    bytes: usize,
    /// Plane pitch of the lattice array in reals, congruent to NX modulo the reals that
    /// one shared-memory wavefront serves per bank sweep (16 in f64, 32 in f32), so that
    /// the lanes of the (x, zq) phases fall in consecutive banks.
    pitch: usize,
}

/// The lattice kernel's block for plan `l` at order `p`, `q` points, `real` bytes per
/// value.
fn lattice_block(
    l: &LatticePlan,
    p: usize,
    q: usize,
    real: usize,
) -> Result<LatticeBlock, GpuError> {
    let b = l.brick;
    let nd = b.map(|e| e * p + 1);
    let lp = nd[0] | 1;
    let (yq, zq) = (b[1] * q, b[2] * q);
    let m = if real == 8 { 16 } else { 32 };
    let min = nd[1].max(yq) * lp;
    let pitch = (min..min + m).find(|&v| v % m == nd[0] % m).unwrap_or(min);
    let words = zq * pitch;
    // one thread per line of the largest phase
    let threads = (nd[0] * nd[1])
        .max(nd[0] * zq)
        .max(yq * zq)
        .next_multiple_of(32)
        .min(1024);
    if words * real > 220_000 {
        return Err(GpuError::Unsupported(format!(
            "a lattice brick of {b:?} elements of order {p} needs {} bytes of shared memory",
            words * real
        )));
    }
    // the boundary's offsets by slot after the lattice
    let offsets = (4 * brick_boundary_slots(b, p)).next_multiple_of(16);
    // the brick's weights after them, 16-byte aligned (one bulk copy)
    let weights = if l.weights_in_shared {
        let bytes = b.iter().product::<usize>() * q * q * q * real;
        if bytes % 16 != 0 {
            return Err(GpuError::Unsupported(format!(
                "weights copied into shared memory need a multiple of 16 bytes; a {b:?} brick of order {p} has {bytes}"
            )));
        }
        bytes + 16
    } else {
        0
    };
    let bytes = words * real + offsets + weights;
    // (sm_90's most per block: 227 KiB, the static mbarrier included)
    if bytes + 16 > SM90_SHARED_PER_BLOCK {
        return Err(GpuError::Unsupported(format!(
            "a lattice block of {b:?} elements of order {p} needs {bytes} bytes of shared memory{}, more than a block can have",
            if weights > 0 { " with its weights" } else { "" }
        )));
    }
    Ok(LatticeBlock {
        threads,
        bytes,
        pitch,
    })
}

/// Boundary nodes (slots) of a brick of `shape` elements of order `p`.
pub(crate) fn brick_boundary_slots(shape: [usize; 3], p: usize) -> usize {
    brick_layout(shape, p).skeleton_positions().len()
}

/// The layout of a brick of `shape` elements of order `p` (slots and positions only).
pub(crate) fn brick_layout(shape: [usize; 3], p: usize) -> BrickLayout {
    BrickLayout {
        shape,
        order: p,
        skeleton_nodes: 0,
        slots: SlotOrder::Ring,
    }
}

/// The kernel specialisation of `plan` for `op` at order `p` in precision `T`.
pub fn bp_kernel<T: GpuReal>(
    op: &BpOperator,
    plan: &BpPlan,
    p: usize,
) -> Result<BpKernel, GpuError> {
    if p == 0 || p > 15 {
        return Err(GpuError::Unsupported(format!(
            "bake-off order {p} is outside 1..=15"
        )));
    }
    let n = p + 1;
    let q = op.points(p);
    if q < n {
        return Err(GpuError::Unsupported(format!(
            "{} needs at least p + 1 = {n} quadrature points, got {q}",
            op.kind.name()
        )));
    }
    plan.check(op, p)?;
    let q3 = q * q * q;
    let gll = gauss_lobatto_legendre(n).map_err(|e| GpuError::Unsupported(e.to_string()))?;
    let basis = Lagrange1D::new(&gll.points);
    let (pts, wts) = if op.kind.is_collocated() {
        (gll.points.clone(), gll.weights.clone())
    } else {
        let g = gauss_legendre(q).map_err(|e| GpuError::Unsupported(e.to_string()))?;
        (g.points, g.weights)
    };
    let mut mats: Vec<f64> = mats_host(op.kind, &basis, &pts);
    if op.geo == GeometrySource::OnTheFly {
        mats.extend_from_slice(&pts);
        mats.extend_from_slice(&wts);
    }
    let mass = op.kind != TensorKind::Mass && op.kind.has_mass();
    let ngeo = match op.kind {
        TensorKind::Mass => 1,
        _ => 6 + mass as usize,
    };
    // reals per element of stored geometry: padded to 16 bytes for bulk copies
    let gstride = match plan {
        BpPlan::Slice2d => ngeo * q3,
        _ => (ngeo * q3).next_multiple_of(16 / T::BYTES),
    };
    let (epb, dyn_smem, block, pitch) = match plan {
        BpPlan::Lattice(l) => {
            let lb = lattice_block(l, p, q, T::BYTES)?;
            (
                l.brick.iter().product(),
                lb.bytes,
                [lb.threads as u32, 1, 1],
                Some(lb.pitch),
            )
        }
        _ => {
            let (epb, bytes) = choose_block(op, plan, n, q, gstride, T::BYTES)?;
            let t1d = n.max(q) as u32;
            (epb, bytes, [t1d, t1d, epb as u32], None)
        }
    };
    let constants = |table: Option<&[u16]>| {
        constant_matrices(
            op.kind,
            &mats_host(op.kind, &basis, &pts),
            &pts,
            &wts,
            table,
        )
    };
    let source = match plan {
        BpPlan::Slice2d => [sources::PRELUDE, sources::BP_COMMON, sources::BP].join("\n"),
        BpPlan::Pencil(_) => [
            sources::PRELUDE,
            &constants(Some(&skeleton_table(n).0))?,
            sources::BP_COMMON,
            sources::BP_CONTRACT,
            sources::BP_FILL,
            sources::BP_PENCIL,
        ]
        .join("\n"),
        BpPlan::Lattice(_) => [
            sources::PRELUDE,
            &constants(None)?,
            sources::BP_COMMON,
            sources::BP_CONTRACT,
            sources::BP_FILL,
            sources::BP_LATTICE,
        ]
        .join("\n"),
    };
    let name = format!(
        "{}_{}_p{p}_q{q}_{}_{}",
        short_name(op.kind),
        T::NAME,
        op.geo.tag(),
        plan.describe().replace([' ', '+'], "_")
    );
    let spec = KernelSpec::new(name, source)
        .define("REAL", T::CTYPE)
        .define("OP", op_code(op.kind))
        .define("N", n)
        .define("Q", q)
        .define("EPB", epb)
        .define("GEO", (op.geo == GeometrySource::OnTheFly) as u32)
        .define("MASS", mass as u32)
        .define("NGEO", ngeo)
        .define("GSTRIDE", gstride);
    let spec = match plan {
        BpPlan::Slice2d => spec,
        BpPlan::Pencil(c) => {
            let spec = spec
                .define("INTLAST", 1)
                .define("MINB", c.min_blocks.unwrap_or(1))
                .define("GEOLOAD", c.direct_geometry as u32)
                .define("PIPE", c.persistent as u32)
                .define("ZFIRST", c.register_columns as u32)
                .define("FILLWAIT", c.overlapped_fill as u32)
                .define("ZCHUNK", ZERO_CHUNK)
                .define("WXSLOW", pencil_weights(op, plan) as u32)
                .define("SKARITH", (!c.slot_table) as u32);
            let spec = match bp3_pitches(op, c, p, T::BYTES) {
                Some([bpr, bpp, upr, upp, rpr, rpp, spr, spp]) => spec
                    .define("BPR", bpr)
                    .define("BPP", bpp)
                    .define("UPR", upr)
                    .define("UPP", upp)
                    .define("RPR", rpr)
                    .define("RPP", rpp)
                    .define("SPR", spr)
                    .define("SPP", spp),
                None => spec,
            };
            match column_pitches(op, c, p, T::BYTES) {
                Some([zpr, zpp, ypr, ypp]) => spec
                    .define("ZPR", zpr)
                    .define("ZPP", zpp)
                    .define("YPR", ypr)
                    .define("YPP", ypp),
                None => spec,
            }
        }
        BpPlan::Lattice(l) => {
            let pitch = pitch.unwrap_or(0);
            // a cap kept within what a multiprocessor can hold of these blocks
            let minb = l.min_blocks.unwrap_or(1).min((2048 / block[0]).max(1));
            spec.define("MINB", minb)
                .define("ZCHUNK", ZERO_CHUNK)
                .define("LATTICE", 1)
                .define("PZ", pitch)
                .define("PY", pitch)
                .define("ROLLMASK", l.rolled_phases)
                .define("THREADS", block[0])
                .define("BX", l.brick[0])
                .define("BY", l.brick[1])
                .define("BZ", l.brick[2])
                .define("LOOKAHEAD", l.lookahead)
                .define("WSHARED", l.weights_in_shared as u32)
                .define("NSKB", brick_boundary_slots(l.brick, p))
        }
    };
    Ok(BpKernel {
        spec,
        q,
        epb,
        dyn_smem,
        ngeo,
        gstride,
        mats,
        points: (pts, wts),
        block,
    })
}

fn pad(k: usize) -> usize {
    if k % 2 == 0 {
        k + 1
    } else {
        k
    }
}

/// The 1-D matrices of `kind`, row-major: BP1 `B` (q x n); BP3 `B` then the Gauss
/// collocated derivative (q x q); BP3.5 the GLL derivative (n x n).
fn mats_host(kind: TensorKind, basis: &Lagrange1D, pts: &[f64]) -> Vec<f64> {
    match kind {
        TensorKind::Mass => basis.interpolation_matrix(pts),
        TensorKind::Diffusion { .. } => {
            let mut m = basis.interpolation_matrix(pts);
            m.extend(Lagrange1D::new(pts).derivative_matrix(pts));
            m
        }
        TensorKind::CollocatedDiffusion { .. } => basis.derivative_matrix(pts),
    }
}

/// C source defining the kernels' `__constant__` matrices, points and weights.
fn constant_matrices(
    kind: TensorKind,
    mats: &[f64],
    pts: &[f64],
    wts: &[f64],
    skeleton_table: Option<&[u16]>,
) -> Result<String, GpuError> {
    let q = pts.len();
    let mut s = String::from("// constant matrices generated by ferrofem (fe crate tabulations)\n");
    // (name, matrix, rows, columns) of the interpolation (sign 1) and derivative (-1) pair
    let pair = |s: &mut String, name: &str, m: &[f64], rows: usize, cols: usize, sign: f64| {
        *s += &constant_matrix(&format!("{name}f"), m, rows, cols, sign)?;
        *s += &constant_matrix(
            &format!("{name}t"),
            &transpose(m, rows, cols),
            cols,
            rows,
            sign,
        )?;
        Ok::<(), GpuError>(())
    };
    match kind {
        TensorKind::Mass => pair(&mut s, "cB", mats, q, mats.len() / q, 1.0)?,
        TensorKind::Diffusion { .. } => {
            let nb = mats.len() - q * q;
            pair(&mut s, "cB", &mats[..nb], q, nb / q, 1.0)?;
            pair(&mut s, "cD", &mats[nb..], q, q, -1.0)?;
        }
        TensorKind::CollocatedDiffusion { .. } => pair(&mut s, "cD", mats, q, q, -1.0)?,
    }
    s += &real_array("cX", pts);
    s += &real_array("cW", wts);
    if let Some(t) = skeleton_table {
        s += &c_array("unsigned short", "cSK", t, |x| x.to_string());
    }
    Ok(s)
}

/// `__constant__ ty name[len] = {...};` with the elements as `fmt` writes them.
fn c_array<V>(ty: &str, name: &str, v: &[V], fmt: impl Fn(&V) -> String) -> String {
    let body: Vec<String> = v.iter().map(fmt).collect();
    format!(
        "__constant__ {ty} {name}[{}] = {{{}}};\n",
        v.len(),
        body.join(", ")
    )
}

/// A `__constant__` array of reals, each written in its shortest round-trip form.
fn real_array(name: &str, v: &[f64]) -> String {
    c_array("real", name, v, |x| format!("{x:e}"))
}

/// The `cols x rows` transpose of a row-major `rows x cols` matrix.
fn transpose(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut t = vec![0.0; m.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = m[r * cols + c];
        }
    }
    t
}

/// A 1-D matrix in the even-odd form of the kernels' `contract`: the halves
/// `(m[o][i] ± m[o][cols-1-i]) / 2` of its first `(rows + 1) / 2` rows (`i < cols / 2`,
/// row-major) and its middle column (zeros when `cols` is even).
struct EvenOdd {
    even: Vec<f64>,
    odd: Vec<f64>,
    middle: Vec<f64>,
}

/// The even-odd parts of `m` (`rows x cols`, row-major). The form relies on the reflection
/// symmetry `m[rows-1-o][cols-1-i] = sign * m[o][i]` of matrices tabulated at points
/// symmetric about 0; a matrix without it is refused rather than contracted wrongly.
fn even_odd(
    name: &str,
    m: &[f64],
    rows: usize,
    cols: usize,
    sign: f64,
) -> Result<EvenOdd, GpuError> {
    let at = |o: usize, i: usize| m[o * cols + i];
    let scale = m.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    for o in 0..rows {
        for i in 0..cols {
            if (at(rows - 1 - o, cols - 1 - i) - sign * at(o, i)).abs() > 1e-10 * scale {
                return Err(GpuError::Unsupported(format!(
                    "the 1-D matrix {name} is not reflection-symmetric (points not symmetric about 0)"
                )));
            }
        }
    }
    let (ho, hi) = (rows.div_ceil(2), cols / 2);
    let mut e = EvenOdd {
        even: Vec::with_capacity(ho * hi),
        odd: Vec::with_capacity(ho * hi),
        middle: Vec::with_capacity(ho),
    };
    for o in 0..ho {
        for i in 0..hi {
            e.even.push(0.5 * (at(o, i) + at(o, cols - 1 - i)));
            e.odd.push(0.5 * (at(o, i) - at(o, cols - 1 - i)));
        }
        e.middle.push(if cols % 2 == 1 { at(o, hi) } else { 0.0 });
    }
    Ok(e)
}

/// The `__constant__` arrays of one 1-D matrix for the kernels' `contract`: `name` (full,
/// row-major) and its even-odd parts `name_p`, `name_m`, `name_c`.
fn constant_matrix(
    name: &str,
    m: &[f64],
    rows: usize,
    cols: usize,
    sign: f64,
) -> Result<String, GpuError> {
    let e = even_odd(name, m, rows, cols, sign)?;
    Ok(real_array(name, m)
        + &real_array(&format!("{name}_p"), &e.even)
        + &real_array(&format!("{name}_m"), &e.odd)
        + &real_array(&format!("{name}_c"), &e.middle))
}

/// For `n` nodes per direction: the skeleton slot of every local node (lexicographic among
/// the skeleton nodes; `u16::MAX` for interior nodes), and the number of skeleton nodes.
pub fn skeleton_table(n: usize) -> (Vec<u16>, usize) {
    let mut t = vec![u16::MAX; n * n * n];
    let mut next = 0u16;
    for k in 0..n {
        for j in 0..n {
            for i in 0..n {
                let interior = [i, j, k].iter().all(|&c| c > 0 && c + 1 < n);
                if !interior {
                    t[(k * n + j) * n + i] = next;
                    next += 1;
                }
            }
        }
    }
    (t, next as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bp::plan::PencilPlan;

    /// The modelled pitches apply only to the rule they were modelled for (p + 2 points):
    /// a solve's own rule with more points would otherwise get pitches smaller than its
    /// arrays (the kernel refuses to compile them).
    #[test]
    fn pitch_tables_apply_only_to_the_modelled_rule() {
        let c = PencilPlan::new().bank_pitches();
        let cols = c.columns();
        for p in 3..=8 {
            let mut op =
                BpOperator::new(TensorKind::Diffusion { alpha: 0.0 }, GeometrySource::Stored);
            assert!(bp3_pitches(&op, &c, p, 8).is_some());
            assert!(
                bp3_pitches(&op, &c, p, 4).is_none(),
                "f32 keeps the default layout"
            );
            op.q1d = Some(p + 2);
            assert!(bp3_pitches(&op, &c, p, 8).is_some());
            op.q1d = Some(p + 3);
            assert!(bp3_pitches(&op, &c, p, 8).is_none());
            let mut m = BpOperator::new(TensorKind::Mass, GeometrySource::Stored);
            assert!(column_pitches(&m, &cols, p, 8).is_some());
            assert!(
                column_pitches(&m, &c, p, 8).is_none(),
                "pitches of register columns only"
            );
            m.q1d = Some(p + 1);
            assert!(column_pitches(&m, &cols, p, 8).is_none());
        }
    }

    /// The kernels' closed form of a skeleton slot (`skeleton_slot` in bp_common.cuh under
    /// SKARITH, written out here the same way) gives [`skeleton_table`]'s slots at every
    /// order the kernels take; the GPU tests check the kernels' text against the CPU twin.
    #[test]
    fn skeleton_slot_closed_form_matches_the_table() {
        for n in 2..=16usize {
            let (t, nsk) = skeleton_table(n);
            let m = n as i64 - 2;
            let below = |c: i64| if c < 1 { 0 } else { (c - 1).min(m) };
            let mut seen = 0;
            for k in 0..n as i64 {
                for j in 0..n as i64 {
                    for i in 0..n as i64 {
                        let lex = (k * n as i64 + j) * n as i64 + i;
                        let inner = |c: i64| c > 0 && c < n as i64 - 1;
                        if inner(i) && inner(j) && inner(k) {
                            assert_eq!(t[lex as usize], u16::MAX);
                            continue;
                        }
                        let before = below(k) * m * m
                            + if inner(k) {
                                below(j) * m + if inner(j) { below(i) } else { 0 }
                            } else {
                                0
                            };
                        assert_eq!(t[lex as usize] as i64, lex - before, "n={n} ({i},{j},{k})");
                        seen += 1;
                    }
                }
            }
            assert_eq!(seen, nsk);
        }
    }

    /// The lattice block holds its array, its boundary offsets and (asked) the brick's
    /// weights, and refuses weights whose copy is not a whole number of 16-byte units.
    #[test]
    fn lattice_block_adds_offsets_and_weights() {
        let l = LatticePlan {
            brick: [2, 2, 1],
            min_blocks: None,
            rolled_phases: 0,
            weights_in_shared: false,
            lookahead: 0,
        };
        for p in 3..=8 {
            let plain = lattice_block(&l, p, p + 2, 8).unwrap();
            let w = LatticePlan {
                weights_in_shared: true,
                ..l
            };
            let with = lattice_block(&w, p, p + 2, 8).unwrap();
            assert_eq!(with.bytes, plain.bytes + 4 * (p + 2).pow(3) * 8 + 16);
            assert_eq!(plain.pitch % 16, (2 * p + 1) % 16);
        }
        // 4 * 27 reals of 4 bytes: 432 bytes, a multiple of 16; 1 * 27 * 4 = 108 is not
        let odd = LatticePlan {
            brick: [1, 1, 1],
            weights_in_shared: true,
            ..l
        };
        assert!(lattice_block(&odd, 1, 3, 4).is_err());
    }

    fn contract_even_odd(e: &EvenOdd, rows: usize, cols: usize, sign: f64, x: &[f64]) -> Vec<f64> {
        let (hi, ho) = (cols / 2, rows / 2);
        let ev: Vec<f64> = (0..hi).map(|i| x[i] + x[cols - 1 - i]).collect();
        let od: Vec<f64> = (0..hi).map(|i| x[i] - x[cols - 1 - i]).collect();
        let mut y = vec![0.0; rows];
        for o in 0..ho {
            let mut a: f64 = (0..hi).map(|i| e.even[o * hi + i] * ev[i]).sum();
            let d: f64 = (0..hi).map(|i| e.odd[o * hi + i] * od[i]).sum();
            if cols % 2 == 1 {
                a += e.middle[o] * x[hi];
            }
            y[o] = a + d;
            y[rows - 1 - o] = if sign > 0.0 { a - d } else { d - a };
        }
        if rows % 2 == 1 {
            y[ho] = if sign > 0.0 {
                (0..hi).map(|i| e.even[ho * hi + i] * ev[i]).sum::<f64>()
                    + if cols % 2 == 1 {
                        e.middle[ho] * x[hi]
                    } else {
                        0.0
                    }
            } else {
                (0..hi).map(|i| e.odd[ho * hi + i] * od[i]).sum()
            };
        }
        y
    }

    /// Every matrix the kernels contract with, at every order they are built for, gives the
    /// plain product in even-odd form (interpolation GLL -> Gauss with q = p + 1 .. p + 3,
    /// the Gauss and GLL derivatives, and their transposes).
    #[test]
    fn even_odd_form_reproduces_the_plain_products() {
        for p in 1..=10 {
            let n = p + 1;
            let gll = gauss_lobatto_legendre(n).unwrap();
            let basis = Lagrange1D::new(&gll.points);
            let mut cases: Vec<(Vec<f64>, usize, usize, f64)> = Vec::new();
            for q in n..=n + 2 {
                let g = gauss_legendre(q).unwrap();
                let b = basis.interpolation_matrix(&g.points);
                cases.push((transpose(&b, q, n), n, q, 1.0));
                cases.push((b, q, n, 1.0));
                let d = Lagrange1D::new(&g.points).derivative_matrix(&g.points);
                cases.push((transpose(&d, q, q), q, q, -1.0));
                cases.push((d, q, q, -1.0));
            }
            let d = basis.derivative_matrix(&gll.points);
            cases.push((transpose(&d, n, n), n, n, -1.0));
            cases.push((d, n, n, -1.0));
            for (m, rows, cols, sign) in cases {
                let e = even_odd("m", &m, rows, cols, sign).unwrap();
                let x: Vec<f64> = (0..cols).map(|i| ((i * 7 + 3) % 11) as f64 - 4.5).collect();
                let y = contract_even_odd(&e, rows, cols, sign, &x);
                for (o, yo) in y.iter().enumerate() {
                    let plain: f64 = (0..cols).map(|i| m[o * cols + i] * x[i]).sum();
                    let scale: f64 = (0..cols).map(|i| (m[o * cols + i] * x[i]).abs()).sum();
                    assert!(
                        (yo - plain).abs() <= 1e-13 * scale.max(1.0),
                        "p {p}, {rows}x{cols}, row {o}: {yo} vs {plain}"
                    );
                }
            }
        }
    }

    /// A matrix without the reflection symmetry is refused, not contracted wrongly.
    #[test]
    fn even_odd_refuses_an_asymmetric_matrix() {
        let m = [1.0, 2.0, 3.0, 4.0];
        assert!(even_odd("m", &m, 2, 2, 1.0).is_err());
        assert!(even_odd("m", &[1.0, 2.0, 2.0, 1.0], 2, 2, 1.0).is_ok());
        assert!(even_odd("m", &[-1.0, 1.0, -1.0, 1.0], 2, 2, -1.0).is_ok());
    }
}
