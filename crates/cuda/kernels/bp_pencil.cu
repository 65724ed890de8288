// Bake-off operators with pencil contractions (the `Pencil` plan; docs/bp-gpu.md).
//
// Thread block (T1D, T1D, EPB), T1D = max(N, Q). In each contraction phase a thread owns
// one whole 1-D pencil of its element: it reads the pencil from shared memory, forms all
// outputs with the 1-D matrix as compile-time constants (uniform across the warp: no
// shared-memory traffic for the matrix), and writes the pencil back. Between phases the
// thread (a, b) plays the x-pencil (y=a, z=b), the y-pencil (x=a, z=b) or the z-column
// (x=a, y=b); z-columns are held in registers. Contractions use the even-odd form
// (bp_contract.cuh).
//
// BP3 and BP3.5 share the gradient / pointwise / transposed-gradient phases on the Q^3
// points (for BP3.5, Q = N and the points are the GLL nodes, so the values there are the
// nodal values and no interpolation happens).
//
// The space is numbered interior-last (H1Space::interior_last): interior indices are
// computed, only the skeleton's offsets are read, and only the skeleton is zeroed before
// the apply (by the host's fill; FILLWAIT 1: the fill runs while this kernel starts, by
// programmatic dependent launch, and the kernel waits for it only before its scatter).
//
// Stored geometry of a block's elements is fetched with bulk copies (cp.async.bulk,
// Hopper's copy engine) into shared memory, completing on an mbarrier that the pointwise
// phase waits on (GEOLOAD 0), or read directly from global memory there (GEOLOAD 1).
//
// PIPE 1 (persistent): a block loops over element groups (grid-stride). While it
// computes group g it already has group g + gridDim's input gather in flight (cp.async into
// a staging buffer, issued as soon as the staging buffer is consumed) and its geometry
// (bulk copy, issued as soon as the pointwise phase has consumed the current one), so the
// dependent offsets -> values loads and the geometry stream overlap the contractions.
//
// ZFIRST 1 (register columns, BP1): the gather and the scatter go through registers. Owner
// threads load their z-columns straight from global memory and contract along z in
// registers; y goes through shared memory; the x-pencils then meet the pointwise weights in
// registers, and the transposed phases run x (registers, in place), y (shared), z
// (registers) before the scatter. Four shared-memory round trips per element instead of six.
//
// Needs (prepended by the host): the prelude, bp_common.cuh, bp_contract.cuh, bp_fill.cuh,
// and the constant matrices
//   cBf [Q][N] (OP 1, 3: GLL -> Gauss interpolation) and its transpose cBt [N][Q],
//   cDf (OP 3: Gauss collocated derivative [Q][Q]; OP 5: GLL derivative [N][N]) and its
//   transpose cDt, each with the even-odd parts _p, _m, _c (see `contract`),
//   __constant__ real cX[Q], cW[Q] (reference points and weights on [-1, 1]),
//   __constant__ unsigned short cSK[N^3] (local node -> skeleton slot) unless SKARITH.
// Dynamic shared memory: (GALL + EPB * WORK) reals.

#define QQ (Q * Q)
#define NN (N * N)
#define VREG 24
#ifndef GEOLOAD
#define GEOLOAD 0
#endif
#ifndef PIPE
#define PIPE 0
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef ZFIRST
#define ZFIRST 0
#endif
#if ZFIRST && (OP != 1 || PIPE)
#error "ZFIRST (register columns) exists for BP1 without PIPE only"
#endif
// ZFIRST's two shared regions, sZ [z < Q][y < N][x] and sY [z < Q][y < Q][x]: row and
// plane pitches (chosen per order by the host from a bank model, for the fewest
// wavefronts of the kernel's eight shared accesses; some conflicts remain where rows and
// columns of one array cannot both be served at once; by default odd rows, planes
// unpadded)
#ifndef ZPR
#define ZPR PADN
#endif
#ifndef ZPP
#define ZPP (N * ZPR)
#endif
#ifndef YPR
#define YPR PADN
#endif
#ifndef YPP
#define YPP (Q * YPR)
#endif
#if ZPR < N || ZPP < N * ZPR || YPR < N || YPP < Q * YPR
#error "ZFIRST pitches smaller than the regions they lay out"
#endif
// The other kernels' arrays (chosen per order by the host from the half-warp bank
// model, BP3 only): sB (x-contraction and transposed-y outputs, N planes) rows BPR,
// planes BPP; sU and sC (values at the points; y-contraction and transposed-z outputs)
// UPR, UPP; sR and sS (x and y derivatives, then fluxes) RPR, RPP and SPR, SPP. By
// default odd rows, planes unpadded.
#ifndef BPR
#define BPR PADQ
#endif
#ifndef BPP
#define BPP (N * BPR)
#endif
#ifndef UPR
#define UPR PADQ
#endif
#ifndef UPP
#define UPP (Q * UPR)
#endif
#ifndef RPR
#define RPR PADQ
#endif
#ifndef RPP
#define RPP (Q * RPR)
#endif
#ifndef SPR
#define SPR PADQ
#endif
#ifndef SPP
#define SPP (Q * SPR)
#endif
#if BPR < Q || BPP < N * BPR || UPR < Q || UPP < Q * UPR || RPR < Q || RPP < Q * RPR || SPR < Q || SPP < Q * SPR
#error "pitches smaller than the arrays they lay out"
#endif
#if OP != 3 && (BPR != PADQ || BPP != N * PADQ || UPR != PADQ || UPP != Q * PADQ || RPR != PADQ || RPP != Q * PADQ || SPR != PADQ || SPP != Q * PADQ)
#error "the pitches of sB, sU, sC, sR and sS are chosen for BP3 only"
#endif
#define MAX2(x, y) ((x) > (y) ? (x) : (y))
#if OP == 1 && ZFIRST
#define REG (Q * (ZPP > YPP ? ZPP : YPP))
#elif OP == 1
#define REG (N * Q * PADQ)
#else
#define REG MAX2(MAX2(Q * Q * PADQ, N * BPP), MAX2(Q * UPP, MAX2(Q * RPP, Q * SPP)))
#endif
// stored geometry staged in shared memory by bulk copies
#define TMA_GEO (GEO == 0 && GEOLOAD == 0)
// the staging buffer of the persistent kernel's input gather
#define STG (PIPE ? N * N * PADN : 0)
#if OP == 1
// BP1: the input staging (sA) and the y-contraction output (sC) have disjoint lifetimes
#define NREG 2
#else
// BP3 / BP3.5: the values, and the x / y derivatives (then fluxes, then their transposed
// contractions, in place)
#define NREG 3
#endif
#define WORK (NREG * REG + STG + (GEO == 1 ? VREG : 0))
#define GALL (TMA_GEO ? EPB * GSTRIDE : 0)
// threads owning a z-column of nodes
#define OWNER (a < N && b < N)
#ifndef FILLWAIT
#define FILLWAIT 0
#endif
#if FILLWAIT && PIPE
#error "FILLWAIT (the overlapped skeleton fill) is for the non-persistent kernel"
#endif
// before the scatter: the overlapped skeleton fill complete and its zeros visible
#if FILLWAIT
#define FILL_WAIT() pdl_wait()
#else
#define FILL_WAIT() do { } while (0)
#endif

#if PIPE
// asynchronous element-wise copy global -> shared (no registers held while in flight)
__device__ __forceinline__ void cp_async_real(real* dst, const real* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(smem_u32(dst)), "l"(src), "n"((int)sizeof(real)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }
#endif

#if TMA_GEO
__device__ __forceinline__ void geometry_barrier_init(u64* bar, int tid) {
    if (tid == 0) bulk_barrier_init(bar);
    __syncthreads();
}

// Thread 0 starts the bulk copies of the stored geometry of elements e0 .. e0 + EPB.
__device__ __forceinline__ void geometry_issue(const real* FF_RESTRICT geo, u32 e0, u32 nelem, real* dst, u64* bar) {
    const u32 nvalid = (nelem - e0) < EPB ? (nelem - e0) : EPB;
    const u32 bytes = nvalid * GSTRIDE * (u32)sizeof(real);
    // order earlier generic-proxy reads of the slot before the async-proxy writes
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
    for (u32 le = 0; le < nvalid; le++) {
        bulk_copy_to_shared(dst + le * GSTRIDE, geo + (size_t)(e0 + le) * GSTRIDE, (u32)(GSTRIDE * sizeof(real)), bar);
    }
}

__device__ __forceinline__ void geometry_wait(u64* bar, u32 parity) { bulk_wait(bar, parity); }
#endif

#if GEO == 1
// Trilinear map along one z-column (x = xi, y = eta fixed): J[:,0] = P0 + P1 z,
// J[:,1] = R0 + R1 z, J[:,2] = C2 (constant). Vertices in sv[comp * 8 + v].
struct ColumnMap { real P0[3], P1[3], R0[3], R1[3], C2[3]; };

__device__ __forceinline__ ColumnMap column_map(const real* sv, real xi, real eta) {
    const real a0 = (real)0.5 * (1 - xi), a1 = (real)0.5 * (1 + xi);
    const real b0 = (real)0.5 * (1 - eta), b1 = (real)0.5 * (1 + eta);
    ColumnMap m;
#pragma unroll
    for (int d = 0; d < 3; d++) {
        const real* X = sv + d * 8;
        // edges along x indexed (y + 2z), along y (x + 2z), along z (x + 2y)
        const real A0 = (X[1] - X[0]) * b0 + (X[3] - X[2]) * b1;          // z = 0
        const real A1 = (X[5] - X[4]) * b0 + (X[7] - X[6]) * b1;          // z = 1
        const real B0 = (X[2] - X[0]) * a0 + (X[3] - X[1]) * a1;
        const real B1 = (X[6] - X[4]) * a0 + (X[7] - X[5]) * a1;
        m.P0[d] = (real)0.25 * (A0 + A1); m.P1[d] = (real)0.25 * (A1 - A0);
        m.R0[d] = (real)0.25 * (B0 + B1); m.R1[d] = (real)0.25 * (B1 - B0);
        m.C2[d] = (real)0.5 * ((X[4] - X[0]) * a0 * b0 + (X[5] - X[1]) * a1 * b0 + (X[6] - X[2]) * a0 * b1 + (X[7] - X[3]) * a1 * b1);
    }
    return m;
}

// det J along the column is a quadratic in z: det = C2 . ((P0 + z P1) x (R0 + z R1)).
// Its coefficients times `scale` (the column's two quadrature weights), so that BP1 needs
// only w_z (d0 + z (d1 + z d2)) per point.
struct DetPoly { real d0, d1, d2; };

__device__ __forceinline__ real cross_c(const real* x, const real* y, int d) {
    const int d1 = (d + 1) % 3, d2 = (d + 2) % 3;
    return x[d1] * y[d2] - x[d2] * y[d1];
}

__device__ __forceinline__ DetPoly column_det(const real* sv, real xi, real eta, real scale) {
    const ColumnMap m = column_map(sv, xi, eta);
    DetPoly p = {0, 0, 0};
#pragma unroll
    for (int d = 0; d < 3; d++) {
        p.d0 += m.C2[d] * cross_c(m.P0, m.R0, d);
        p.d1 += m.C2[d] * (cross_c(m.P0, m.R1, d) + cross_c(m.P1, m.R0, d));
        p.d2 += m.C2[d] * cross_c(m.P1, m.R1, d);
    }
    p.d0 *= scale;
    p.d1 *= scale;
    p.d2 *= scale;
    return p;
}

__device__ __forceinline__ real det_at(const DetPoly& p, real z) { return p.d0 + z * (p.d1 + z * p.d2); }

// 1 / d, correctly rounded, by the reciprocal intrinsics (a hardware estimate and Newton
// steps) rather than the division subroutine. Both keep a slow path for special operands,
// which also keeps the compiler from interleaving a whole column's points (an inline
// estimate with open-coded Newton steps took BP3.5 otf p = 7 from 120 to 230 registers).
__device__ __forceinline__ double recip_rn(double d) { return __drcp_rn(d); }
__device__ __forceinline__ float recip_rn(float d) { return __frcp_rn(d); }

// Along the column, the adjugate's rows are the cross products of J's columns
// c0 = P0 + z P1, c1 = R0 + z R1, c2 = C2: c1 x c2 and c2 x c0 are linear in z, c0 x c1 is
// quadratic, and det J = c0 . (c1 x c2) is quadratic. Their 24 coefficients are formed once
// per column; a point then costs 14 multiply-adds for the adjugate and det J instead of 27
// for J, its cofactors and det J.
struct ColumnAdj { real A0[3], A1[3], B0[3], B1[3], E0[3], E1[3], E2[3], d0, d1, d2; };

__device__ __forceinline__ ColumnAdj column_adj(const real* sv, real xi, real eta) {
    const ColumnMap m = column_map(sv, xi, eta);
    ColumnAdj c;
#pragma unroll
    for (int d = 0; d < 3; d++) {
        c.A0[d] = cross_c(m.R0, m.C2, d);
        c.A1[d] = cross_c(m.R1, m.C2, d);
        c.B0[d] = cross_c(m.C2, m.P0, d);
        c.B1[d] = cross_c(m.C2, m.P1, d);
        c.E0[d] = cross_c(m.P0, m.R0, d);
        c.E1[d] = cross_c(m.P0, m.R1, d) + cross_c(m.P1, m.R0, d);
        c.E2[d] = cross_c(m.P1, m.R1, d);
    }
    c.d0 = m.P0[0] * c.A0[0] + m.P0[1] * c.A0[1] + m.P0[2] * c.A0[2];
    c.d1 = m.P0[0] * c.A1[0] + m.P0[1] * c.A1[1] + m.P0[2] * c.A1[2]
         + m.P1[0] * c.A0[0] + m.P1[1] * c.A0[1] + m.P1[2] * c.A0[2];
    c.d2 = m.P1[0] * c.A1[0] + m.P1[1] * c.A1[1] + m.P1[2] * c.A1[2];
    return c;
}

// The flux w det(J) J^{-1} J^{-T} g at height z of the column, without forming the six
// factors: with adj J (rows r_k) and J^{-1} = adj J / det, flux_k = r_k . t with
// t = (w / det) adj(J)^T g: 21 multiply-adds instead of 24 for the factors and 9 for
// applying them. Also w det J (the mass term).
__device__ __forceinline__ void column_flux(const ColumnAdj& c, real z, real w, const real g[3],
                                            real flux[3], real* wdetj) {
    real r0[3], r1[3], r2[3];
#pragma unroll
    for (int d = 0; d < 3; d++) {
        r0[d] = c.A0[d] + z * c.A1[d];
        r1[d] = c.B0[d] + z * c.B1[d];
        r2[d] = c.E0[d] + z * (c.E1[d] + z * c.E2[d]);
    }
    const real det = c.d0 + z * (c.d1 + z * c.d2);
    *wdetj = w * det;
    const real s = w * recip_rn(det);
    const real g0 = s * g[0], g1 = s * g[1], g2 = s * g[2];
    real t[3];
#pragma unroll
    for (int i = 0; i < 3; i++) t[i] = r0[i] * g0 + r1[i] * g1 + r2[i] * g2;
    flux[0] = r0[0] * t[0] + r0[1] * t[1] + r0[2] * t[2];
    flux[1] = r1[0] * t[0] + r1[1] * t[1] + r1[2] * t[2];
    flux[2] = r2[0] * t[0] + r2[1] * t[1] + r2[2] * t[2];
}
#endif

#if GEO == 1
#if ZFIRST
// the element's vertices into sv, with the axes cycled (x, y, z) -> (z, x, y), so that
// column_map's column runs along x: the thread (a, b) owns the x-pencil (y = a, z = b); a
// cyclic permutation of the Jacobian's columns leaves det J unchanged
#define LOAD_VERTICES()                                                                   \
    do {                                                                                  \
        if (active)                                                                       \
            for (int t = a + T1D * b; t < VREG; t += T1D * T1D) {                         \
                const int d = t / 8, vx = t & 1, vy = (t >> 1) & 1, vz = (t >> 2) & 1;    \
                sv[d * 8 + (vy | (vz << 1) | (vx << 2))] = geo[(size_t)e * VREG + t];    \
            }                                                                             \
    } while (0)
#else
#define LOAD_VERTICES()                                                                   \
    do {                                                                                  \
        if (active)                                                                       \
            for (int t = a + T1D * b; t < VREG; t += T1D * T1D) sv[t] = geo[(size_t)e * VREG + t]; \
    } while (0)
#endif
#endif

#if PIPE
// the next group's gather into the staging buffer, once every thread has consumed it
#define STAGE_REFILL()                                                                   \
    do {                                                                                 \
        if (next_active && OWNER) {                                                      \
            _Pragma("unroll") for (int k = 0; k < N; k++) cp_async_real(&sIn[k][b][a], u + r_nidx[k]); \
        }                                                                                \
        cp_async_commit();                                                               \
    } while (0)
#if TMA_GEO
// the next group's geometry into the slot, once the pointwise phase has consumed it
#define GEO_REFILL()                                                                     \
    do {                                                                                 \
        if (tid == 0 && gnext < ngroups) geometry_issue(geo, gnext * EPB, nelem, smem, &bar); \
    } while (0)
#else
#define GEO_REFILL() do { } while (0)
#endif
#else
#define STAGE_REFILL() do { } while (0)
#define GEO_REFILL() do { } while (0)
#endif

// the non-ZFIRST arrays, [z][y][x] with the pitches above (pC, pU: the kernel's pointers):
// in the default layout as typed arrays (ptxas allocates these better: the arithmetic form
// spills some capped kernels), with the bank model's pitches by arithmetic
#define CUSTOM_PITCHES (BPR != PADQ || BPP != N * PADQ || UPR != PADQ || UPP != Q * PADQ || RPR != PADQ || RPP != Q * PADQ || SPR != PADQ || SPP != Q * PADQ)
#if CUSTOM_PITCHES
#define SB(z, y, x) R1[(z) * BPP + (y) * BPR + (x)]
#define SC(z, y, x) pC[(z) * UPP + (y) * UPR + (x)]
#define SU(z, y, x) pU[(z) * UPP + (y) * UPR + (x)]
#define SR(z, y, x) R1[(z) * RPP + (y) * RPR + (x)]
#define SS(z, y, x) R2[(z) * SPP + (y) * SPR + (x)]
#else
#define SB(z, y, x) ((real (*)[N][PADQ])R1)[z][y][x]
#define SC(z, y, x) ((real (*)[Q][PADQ])pC)[z][y][x]
#if OP == 5
// (BP3.5: the values at the points are the input, sIn, in its own layout)
#define SU(z, y, x) sIn[z][y][x]
#else
#define SU(z, y, x) ((real (*)[Q][PADQ])pU)[z][y][x]
#endif
#define SR(z, y, x) ((real (*)[Q][PADQ])R1)[z][y][x]
#define SS(z, y, x) ((real (*)[Q][PADQ])R2)[z][y][x]
#endif

extern "C" __global__ void __launch_bounds__(T1D * T1D * EPB, MINB)
bp_apply(const u32 nelem, const u32 nskel, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
         const real* FF_RESTRICT mats_unused, const real* FF_RESTRICT u, real* FF_RESTRICT v, const real alpha)
{
    extern __shared__ __align__(16) unsigned char ff_smem[];
    real* smem = (real*)ff_smem;
    const int a = threadIdx.x, b = threadIdx.y, le = threadIdx.z;
    const int tid = a + T1D * (b + T1D * le);
    const u32 ngroups = (nelem + EPB - 1) / EPB;
    real* work = smem + GALL + le * WORK;
#if TMA_GEO
    __shared__ __align__(8) u64 bar;
    const real* sG = smem + le * GSTRIDE;
    geometry_barrier_init(&bar, tid);
#endif
#if GEO == 1
    real* sv = work + WORK - VREG;
#endif
    // work regions (see the phase comments for their roles)
    real* R0 = work;
    real* R1 = work + REG;
#if OP != 1
    real* R2 = work + 2 * REG;
#endif
#if PIPE
    real (*sIn)[N][PADN] = (real (*)[N][PADN])(work + NREG * REG);
#else
    real (*sIn)[N][PADN] = (real (*)[N][PADN])R0;
#endif
    u32 r_idx[N];

#if PIPE
    // prologue: the first group's geometry and gather
    u32 grp = blockIdx.x;
    if (grp < ngroups) {
        const u32 e = grp * EPB + le;
#if TMA_GEO
        if (tid == 0) geometry_issue(geo, grp * EPB, nelem, smem, &bar);
#endif
        if (e < nelem && OWNER) {
#pragma unroll
            for (int k = 0; k < N; k++) {
                r_idx[k] = node_index(offsets, e, nskel, a, b, k);
                cp_async_real(&sIn[k][b][a], u + r_idx[k]);
            }
        }
        cp_async_commit();
    }
    for (u32 it = 0; grp < ngroups; it++, grp += gridDim.x) {
        const u32 gnext = grp + gridDim.x;
        const u32 e = grp * EPB + le, en = gnext * EPB + le;
        const bool active = e < nelem, next_active = gnext < ngroups && en < nelem;
        // the next group's indices: in flight during this group's first phase
        u32 r_nidx[N];
#pragma unroll
        for (int k = 0; k < N; k++) r_nidx[k] = 0;
        if (next_active && OWNER) {
#pragma unroll
            for (int k = 0; k < N; k++) r_nidx[k] = node_index(offsets, en, nskel, a, b, k);
        }
#else
    // one element group per block
    {
        const u32 g = blockIdx.x;
        const u32 it = 0;   // the geometry barrier's phase parity: its first use
        if (g >= ngroups) return;
        const u32 e = g * EPB + le;
        const bool active = e < nelem;
#if TMA_GEO
        if (tid == 0) geometry_issue(geo, g * EPB, nelem, smem, &bar);
#endif
#endif
#if GEO == 0 && !TMA_GEO
        const real* sG = geo + (size_t)(active ? e : 0) * GSTRIDE;   // read directly (GEOLOAD 1)
#endif
#if GEO == 1
        LOAD_VERTICES();
#endif
#if OP == 1 && GEO == 0 && !TMA_GEO && !ZFIRST
        real gW[Q];   // this column's weights, loaded before the gather completes
        if (active) {
#pragma unroll
            for (int q = 0; q < Q; q++) gW[q] = (sG[GPOS(a, b, q)]);
        }
#endif
#if ZFIRST
        // ================== BP1, register columns: gather and scatter =======================
        // sZ [z < Q][y < N][x]: after the z-contraction, and after the transposed y one;
        // sY [z < Q][y < Q][x]: after the y-contraction, then the x-pencils' transposed
        // outputs (each thread rewrites its own pencil in place)
#define SZ(z, y, x) R0[(z) * ZPP + (y) * ZPR + (x)]
#define SY(z, y, x) R1[(z) * YPP + (y) * YPR + (x)]
        if (active && OWNER) {
            real in[N];
#pragma unroll
            for (int k = 0; k < N; k++) r_idx[k] = node_index(offsets, e, nskel, a, b, k);
#pragma unroll
            for (int k = 0; k < N; k++) in[k] = u[r_idx[k]];
            real out[Q];
            CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
            for (int q = 0; q < Q; q++) SZ(q, b, a) = out[q];
        }
        __syncthreads();
        // y: pencils (x = a < N, z = b < Q)
        if (active && a < N) {
            real in[N];
#pragma unroll
            for (int n = 0; n < N; n++) in[n] = SZ(b, n, a);
            real out[Q];
            CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
            for (int q = 0; q < Q; q++) SY(b, q, a) = out[q];
        }
        __syncthreads();
        // x: pencils (y = a, z = b) into registers, weights, transposed x in place
#if TMA_GEO
        geometry_wait(&bar, it & 1);
#endif
        if (active) {
            real in[N], rx[Q], out[N];
#pragma unroll
            for (int n = 0; n < N; n++) in[n] = SY(b, a, n);
#if GEO == 1
            const DetPoly dp = column_det(sv, cX[a], cX[b], cW[a] * cW[b]);
#endif
            CONTRACT(cBf, 1, N, Q, in, rx);
#pragma unroll
            for (int i = 0; i < Q; i++) {
#if GEO == 0
                rx[i] *= (sG[GPOS(i, a, b)]);
#else
                rx[i] *= cW[i] * det_at(dp, cX[i]);
#endif
            }
            CONTRACT(cBt, 1, Q, N, rx, out);
#pragma unroll
            for (int n = 0; n < N; n++) SY(b, a, n) = out[n];
        }
        __syncthreads();
        // transposed y: pencils (x = a < N, z = b < Q) -> sZ
        if (active && a < N) {
            real in[Q];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = SY(b, q, a);
            real out[N];
            CONTRACT(cBt, 1, Q, N, in, out);
#pragma unroll
            for (int n = 0; n < N; n++) SZ(b, n, a) = out[n];
        }
        FILL_WAIT();
        __syncthreads();
        // transposed z in registers, scatter
        if (active && OWNER) {
            real in[Q];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = SZ(q, b, a);
            real out[N];
            CONTRACT(cBt, 1, Q, N, in, out);
#pragma unroll
            for (int k = 0; k < N; k++) accumulate(v, r_idx[k], out[k], is_interior(a, b, k));
        }
#else
#if PIPE
        cp_async_wait_all();
#else
        if (active && OWNER) {
#pragma unroll
            for (int k = 0; k < N; k++) {
                r_idx[k] = node_index(offsets, e, nskel, a, b, k);
                sIn[k][b][a] = u[r_idx[k]];
            }
        }
#endif
        __syncthreads();

        real rq[Q];   // z-column of values at the points (x = a, y = b)
#if OP == 5
        // collocated: the values at the points are the nodal values
        if (active) {
#pragma unroll
            for (int k = 0; k < Q; k++) rq[k] = sIn[k][b][a];
        }
#else
        // interpolation to the Gauss points; x-pencils (y=a, z=b) -> sB (R1)
#if OP == 1
        real* const pC = R0;   // shares R0 with sA (disjoint lifetimes)
#else
        real* pC = R2;   // the transposed phase moves it to R0
#endif
        real (*sA)[N][PADN] = (real (*)[N][PADN])R0;   // output of the last transposed phase
        if (active && OWNER) {
            real in[N];
#pragma unroll
            for (int n = 0; n < N; n++) in[n] = sIn[b][a][n];
            real out[Q];
            CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
            for (int q = 0; q < Q; q++) SB(b, a, q) = out[q];
        }
        __syncthreads();
        STAGE_REFILL();
        // y: pencils (x=a < Q, z=b < N) -> sC
        if (active && b < N) {
            real in[N];
#pragma unroll
            for (int n = 0; n < N; n++) in[n] = SB(b, n, a);
            real out[Q];
            CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
            for (int q = 0; q < Q; q++) SC(b, q, a) = out[q];
        }
        __syncthreads();
#if OP == 1
#endif
        // z: columns (x=a, y=b) into registers
        if (active) {
            real in[N];
#pragma unroll
            for (int n = 0; n < N; n++) in[n] = SC(n, b, a);
            CONTRACT(cBf, 1, N, Q, in, rq);
        }
#endif

#if OP == 1
        // ============================ BP1: pointwise weights ==============================
#if TMA_GEO
        geometry_wait(&bar, it & 1);
#endif
        if (active) {
#if GEO == 1
            const DetPoly dp = column_det(sv, cX[a], cX[b], cW[a] * cW[b]);
#endif
#pragma unroll
            for (int q = 0; q < Q; q++) {
#if TMA_GEO
                rq[q] *= sG[GPOS(a, b, q)];
#elif GEO == 0
                rq[q] *= gW[q];
#else
                rq[q] *= cW[q] * det_at(dp, cX[q]);
#endif
            }
        }
#else
        // =============== BP3 / BP3.5: gradient, metric, transposed gradient ================
        // on the Q^3 points with the collocated derivative cDf (Q x Q); regions: sU the
        // values (R0, or the input for BP3.5), sR (R1) and sS (R2) the x / y derivatives and
        // then the fluxes and, in place, their transposed x / y contractions
#if OP == 3
        real* const pU = R0;
        if (active) {
#pragma unroll
            for (int q = 0; q < Q; q++) SU(q, b, a) = rq[q];
        }
        __syncthreads();
#endif
        // x-pencil (y=a, z=b) -> sR: d/dx;  y-pencil (x=a, z=b) -> sS: d/dy
        if (active) {
            real row[Q], col[Q];
#pragma unroll
            for (int n = 0; n < Q; n++) { row[n] = SU(b, a, n); col[n] = SU(b, n, a); }
            real dr[Q], ds[Q];
            CONTRACT(cDf, -1, Q, Q, row, dr);
            CONTRACT(cDf, -1, Q, Q, col, ds);
#pragma unroll
            for (int m = 0; m < Q; m++) {
                SR(b, a, m) = dr[m];
                SS(b, m, a) = ds[m];
            }
        }
        __syncthreads();
#if OP == 5
        STAGE_REFILL();
#endif
#if TMA_GEO
        geometry_wait(&bar, it & 1);
#endif
        real rt[Q], rm[Q];
        if (active) {
#if GEO == 1
            const ColumnAdj cm = column_adj(sv, cX[a], cX[b]);
#endif
            CONTRACT(cDf, -1, Q, Q, rq, rt);   // rt holds d/dz until the fluxes replace it
#pragma unroll
            for (int k = 0; k < Q; k++) {
                const real ut = rt[k];
                const real ur = SR(k, b, a), us = SS(k, b, a);
                real wdetj = 0;
#if GEO == 0
                real G[6];
#pragma unroll
                for (int c = 0; c < 6; c++) G[c] = (sG[c * QQQ + GPOS(a, b, k)]);
                if (MASS) wdetj = (sG[6 * QQQ + GPOS(a, b, k)]);
                SR(k, b, a) = G[0] * ur + G[1] * us + G[2] * ut;
                SS(k, b, a) = G[1] * ur + G[3] * us + G[4] * ut;
                rt[k] = G[2] * ur + G[4] * us + G[5] * ut;
#else
                const real g[3] = {ur, us, ut};
                real f[3];
                column_flux(cm, cX[k], cW[a] * cW[b] * cW[k], g, f, &wdetj);
                SR(k, b, a) = f[0];
                SS(k, b, a) = f[1];
                rt[k] = f[2];
#endif
                rm[k] = MASS ? alpha * wdetj * rq[k] : (real)0;
            }
        }
        __syncthreads();
        GEO_REFILL();
        // transposed: x-pencil rows of sR and y-pencil columns of sS, each rewritten in
        // place by the one thread that owns (and has read) it: no third and fourth region
        if (active) {
            real row[Q], col[Q];
#pragma unroll
            for (int n = 0; n < Q; n++) { row[n] = SR(b, a, n); col[n] = SS(b, n, a); }
            real tx[Q], ty[Q];
            CONTRACT(cDt, -1, Q, Q, row, tx);
            CONTRACT(cDt, -1, Q, Q, col, ty);
#pragma unroll
            for (int i = 0; i < Q; i++) {
                SR(b, a, i) = tx[i];
                SS(b, i, a) = ty[i];
            }
        }
#if OP == 5
        FILL_WAIT();
#endif
        __syncthreads();
        if (active) {
            CONTRACT(cDt, -1, Q, Q, rt, rq);
#pragma unroll
            for (int k = 0; k < Q; k++) rq[k] += SR(k, b, a) + SS(k, b, a) + rm[k];
        }
#endif

#if OP == 5
        if (active && OWNER) {
#pragma unroll
            for (int k = 0; k < N; k++) accumulate(v, r_idx[k], rq[k], is_interior(a, b, k));
        }
#else
        // transposed interpolation: z in registers -> sC, then y -> sB, x -> sA
#if OP == 3
        // sC into R0, the values' region, whose last reads (the derivatives) are two
        // barriers back; over sS (R2) it would need a barrier more whenever its pitches
        // differ from sS's (every thread's last reads of sS first), since another
        // thread's sC column may then lie on the fluxes a slower thread is still reading.
        // sA (R0) comes after the barrier that ends the reads of sC.
        pC = R0;
#endif
        if (active) {
            real out[N];
            CONTRACT(cBt, 1, Q, N, rq, out);
#pragma unroll
            for (int n = 0; n < N; n++) SC(n, b, a) = out[n];
        }
        __syncthreads();
#if OP == 1
        GEO_REFILL();
#endif
        if (active && b < N) {
            real in[Q];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = SC(b, q, a);
            real out[N];
            CONTRACT(cBt, 1, Q, N, in, out);
#pragma unroll
            for (int j = 0; j < N; j++) SB(b, j, a) = out[j];
        }
        __syncthreads();
        if (active && OWNER) {
            real in[Q];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = SB(b, a, q);
            real out[N];
            CONTRACT(cBt, 1, Q, N, in, out);
#pragma unroll
            for (int i = 0; i < N; i++) sA[b][a][i] = out[i];
        }
        FILL_WAIT();
        __syncthreads();
        if (active && OWNER) {
#pragma unroll
            for (int k = 0; k < N; k++) accumulate(v, r_idx[k], sA[k][b][a], is_interior(a, b, k));
        }
#endif
#endif  // ZFIRST
#if PIPE
#pragma unroll
        for (int k = 0; k < N; k++) r_idx[k] = r_nidx[k];
#endif
    }
}
