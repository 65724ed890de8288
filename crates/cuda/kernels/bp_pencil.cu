// Bake-off operators, v2: pencil contractions (see notes/gpu-bp.md).
//
// Thread block (T1D, T1D, EPB), T1D = max(N, Q). In each contraction phase a thread owns
// one whole 1-D pencil of its element: it reads the pencil from shared memory, forms all
// outputs with the 1-D matrix as compile-time constants (uniform across the warp: no
// shared-memory traffic for the matrix), and writes the pencil back. Between phases the
// thread (a, b) plays the x-pencil (y=a, z=b), the y-pencil (x=a, z=b) or the z-column
// (x=a, y=b); z-columns are held in registers.
//
// Stored geometry of the whole block is contiguous and fetched with one bulk copy per
// element (cp.async.bulk, Hopper's copy engine) into shared memory at kernel start,
// completing on an mbarrier that the pointwise phase waits on.
//
// Needs (prepended by the host): the prelude, bp_common.cuh, and the constant matrices
//   __constant__ real cB[Q*N] (OP 1, 3: GLL -> Gauss interpolation, row-major [q][n]),
//   __constant__ real cD[..]  (OP 3: Gauss collocated derivative [Q][Q];
//                              OP 5: GLL derivative [N][N]),
//   __constant__ real cX[Q], cW[Q] (reference points and weights on [-1, 1]).
// Dynamic shared memory: (GALL + EPB * WORK) reals.

#define QQ (Q * Q)
#define NN (N * N)
#define VREG 24
#if OP == 5
#define REG (N * N * PADN)
#elif OP == 3
#define REG (Q * Q * PADQ)
#else
#define REG (N * Q * PADQ)
#endif
#if OP == 1
#define WORK (3 * REG + (GEO == 1 ? VREG : 0))
#else
#define WORK (3 * REG + (GEO == 1 ? REG + VREG : 0))
#endif
#define GALL (GEO == 0 ? EPB * GSTRIDE : 0)

__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

#if GEO == 0
// One thread starts the bulk copies of the block's stored geometry; everybody syncs once.
__device__ __forceinline__ void geometry_prefetch(const real* FF_RESTRICT geo, u32 e0, u32 nelem, real* dst, u64* bar, int tid) {
    if (tid == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(1) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (tid == 0) {
        const u32 nvalid = (nelem - e0) < EPB ? (nelem - e0) : EPB;
        const u32 bytes = nvalid * GSTRIDE * (u32)sizeof(real);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(bar)), "r"(bytes) : "memory");
        for (u32 le = 0; le < nvalid; le++) {
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(smem_u32(dst + le * GSTRIDE)), "l"(geo + (size_t)(e0 + le) * GSTRIDE),
                            "r"((u32)(GSTRIDE * sizeof(real))), "r"(smem_u32(bar)) : "memory");
        }
    }
}

__device__ __forceinline__ void geometry_wait(u64* bar) {
    u32 done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(0) : "memory");
    } while (!done);
}
#else
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

__device__ __forceinline__ void column_point(const ColumnMap& m, real z, real w, real* G, real* wdetj) {
    real J[3][3];
#pragma unroll
    for (int d = 0; d < 3; d++) {
        J[d][0] = m.P0[d] + m.P1[d] * z;
        J[d][1] = m.R0[d] + m.R1[d] * z;
        J[d][2] = m.C2[d];
    }
    real C[3][3];
    C[0][0] = J[1][1] * J[2][2] - J[1][2] * J[2][1];
    C[0][1] = J[1][2] * J[2][0] - J[1][0] * J[2][2];
    C[0][2] = J[1][0] * J[2][1] - J[1][1] * J[2][0];
    C[1][0] = J[0][2] * J[2][1] - J[0][1] * J[2][2];
    C[1][1] = J[0][0] * J[2][2] - J[0][2] * J[2][0];
    C[1][2] = J[0][1] * J[2][0] - J[0][0] * J[2][1];
    C[2][0] = J[0][1] * J[1][2] - J[0][2] * J[1][1];
    C[2][1] = J[0][2] * J[1][0] - J[0][0] * J[1][2];
    C[2][2] = J[0][0] * J[1][1] - J[0][1] * J[1][0];
    const real det = J[0][0] * C[0][0] + J[0][1] * C[0][1] + J[0][2] * C[0][2];
    *wdetj = w * det;
    const real s = w / det;
    G[0] = s * (C[0][0] * C[0][0] + C[1][0] * C[1][0] + C[2][0] * C[2][0]);
    G[1] = s * (C[0][0] * C[0][1] + C[1][0] * C[1][1] + C[2][0] * C[2][1]);
    G[2] = s * (C[0][0] * C[0][2] + C[1][0] * C[1][2] + C[2][0] * C[2][2]);
    G[3] = s * (C[0][1] * C[0][1] + C[1][1] * C[1][1] + C[2][1] * C[2][1]);
    G[4] = s * (C[0][1] * C[0][2] + C[1][1] * C[1][2] + C[2][1] * C[2][2]);
    G[5] = s * (C[0][2] * C[0][2] + C[1][2] * C[1][2] + C[2][2] * C[2][2]);
}
#endif

extern "C" __global__ void __launch_bounds__(T1D * T1D * EPB, 1)
bp_apply(const u32 nelem, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
         const real* FF_RESTRICT mats_unused, const real* FF_RESTRICT u, real* FF_RESTRICT v, const real alpha)
{
    extern __shared__ __align__(16) unsigned char ff_smem[];
    real* smem = (real*)ff_smem;
    const int a = threadIdx.x, b = threadIdx.y, le = threadIdx.z;
    const int tid = a + T1D * (b + T1D * le);
    const u32 e0 = blockIdx.x * EPB;
    const u32 e = e0 + le;
    const bool active = e < nelem;
    real* work = smem + GALL + le * WORK;
#if GEO == 0
    __shared__ __align__(8) u64 bar;
    const real* sG = smem + le * GSTRIDE;
    geometry_prefetch(geo, e0, nelem, smem, &bar, tid);
#else
    real* sv = work + WORK - VREG;
    if (active)
        for (int t = a + T1D * b; t < 24; t += T1D * T1D) sv[t] = geo[(size_t)e * 24 + t];
#endif
    u32 r_idx[N];

#if OP == 5
    // ============================ BP3.5: collocated at GLL nodes ==========================
    real (*sU)[N][PADN] = (real (*)[N][PADN])work;
    real (*sR)[N][PADN] = (real (*)[N][PADN])(work + REG);
    real (*sS)[N][PADN] = (real (*)[N][PADN])(work + 2 * REG);
#if GEO == 0
    real (*sQ)[N][PADN] = (real (*)[N][PADN])(smem + le * GSTRIDE);   // after the geometry is used
#else
    real (*sQ)[N][PADN] = (real (*)[N][PADN])(work + 3 * REG);
#endif
    real r_u[N];
    if (active) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            r_idx[k] = offsets[(size_t)e * NNN + k * NN + b * N + a];
            r_u[k] = u[r_idx[k]];
            sU[k][b][a] = r_u[k];
        }
    }
    __syncthreads();
    // x-pencil (y=a, z=b) -> sR: d/dx;  y-pencil (x=a, z=b) -> sS: d/dy
    if (active) {
        real row[N], col[N];
#pragma unroll
        for (int n = 0; n < N; n++) { row[n] = sU[b][a][n]; col[n] = sU[b][n][a]; }
#pragma unroll
        for (int m = 0; m < N; m++) {
            real sr = 0, ss = 0;
#pragma unroll
            for (int n = 0; n < N; n++) { sr += cD[m * N + n] * row[n]; ss += cD[m * N + n] * col[n]; }
            sR[b][a][m] = sr;
            sS[b][m][a] = ss;
        }
    }
    __syncthreads();
#if GEO == 0
    geometry_wait(&bar);
#endif
    real r_gt[N], r_m[N];
    if (active) {
#if GEO == 1
        const ColumnMap cm = column_map(sv, cX[a], cX[b]);
#endif
#pragma unroll
        for (int k = 0; k < N; k++) {
            real ut = 0;
#pragma unroll
            for (int n = 0; n < N; n++) ut += cD[k * N + n] * r_u[n];
            const real ur = sR[k][b][a], us = sS[k][b][a];
            real G[6], wdetj = 0;
#if GEO == 0
#pragma unroll
            for (int c = 0; c < 6; c++) G[c] = sG[c * NNN + k * NN + b * N + a];
            if (MASS) wdetj = sG[6 * NNN + k * NN + b * N + a];
#else
            column_point(cm, cX[k], cW[a] * cW[b] * cW[k], G, &wdetj);
#endif
            sR[k][b][a] = G[0] * ur + G[1] * us + G[2] * ut;
            sS[k][b][a] = G[1] * ur + G[3] * us + G[4] * ut;
            r_gt[k] = G[2] * ur + G[4] * us + G[5] * ut;
            r_m[k] = MASS ? alpha * wdetj * r_u[k] : (real)0;
        }
    }
    __syncthreads();
    // transposed: x-pencil rows of sR -> sU, y-pencil columns of sS -> sQ
    if (active) {
        real row[N], col[N];
#pragma unroll
        for (int n = 0; n < N; n++) { row[n] = sR[b][a][n]; col[n] = sS[b][n][a]; }
#pragma unroll
        for (int i = 0; i < N; i++) {
            real sx = 0, sy = 0;
#pragma unroll
            for (int m = 0; m < N; m++) { sx += cD[m * N + i] * row[m]; sy += cD[m * N + i] * col[m]; }
            sU[b][a][i] = sx;
            sQ[b][i][a] = sy;
        }
    }
    __syncthreads();
    if (active) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = sU[k][b][a] + sQ[k][b][a] + r_m[k];
#pragma unroll
            for (int m = 0; m < N; m++) acc += cD[m * N + k] * r_gt[m];
            accumulate(v, r_idx[k], acc, is_interior(a, b, k));
        }
    }
#else
    // ======================= BP1 / BP3: interpolation to Q Gauss points ====================
    // three regions, reused: R0 = sA (N,N,PADN) / sU (Q,Q,PADQ); R1 = sB (N,N,PADQ) / sR;
    // R2 = sC (N,Q,PADQ) / sS; (BP3) R3 = sV: the element's geometry slot once consumed.
    real (*sA)[N][PADN] = (real (*)[N][PADN])work;
    real (*sB)[N][PADQ] = (real (*)[N][PADQ])(work + REG);
    real (*sC)[Q][PADQ] = (real (*)[Q][PADQ])(work + 2 * REG);
    if (active && a < N && b < N) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            r_idx[k] = offsets[(size_t)e * NNN + k * NN + b * N + a];
            sA[k][b][a] = u[r_idx[k]];
        }
    }
    __syncthreads();
    // x: pencils (y=a, z=b), a, b < N
    if (active && a < N && b < N) {
        real in[N];
#pragma unroll
        for (int n = 0; n < N; n++) in[n] = sA[b][a][n];
#pragma unroll
        for (int q = 0; q < Q; q++) {
            real s = 0;
#pragma unroll
            for (int n = 0; n < N; n++) s += cB[q * N + n] * in[n];
            sB[b][a][q] = s;
        }
    }
    __syncthreads();
    // y: pencils (x=a < Q, z=b < N)
    if (active && b < N) {
        real in[N];
#pragma unroll
        for (int n = 0; n < N; n++) in[n] = sB[b][n][a];
#pragma unroll
        for (int q = 0; q < Q; q++) {
            real s = 0;
#pragma unroll
            for (int n = 0; n < N; n++) s += cB[q * N + n] * in[n];
            sC[b][q][a] = s;
        }
    }
    __syncthreads();
    // z: columns (x=a, y=b) into registers
    real rq[Q];
    if (active) {
        real in[N];
#pragma unroll
        for (int n = 0; n < N; n++) in[n] = sC[n][b][a];
#pragma unroll
        for (int q = 0; q < Q; q++) {
            real s = 0;
#pragma unroll
            for (int n = 0; n < N; n++) s += cB[q * N + n] * in[n];
            rq[q] = s;
        }
    }
#if OP == 1
#if GEO == 0
    geometry_wait(&bar);
#endif
    if (active) {
#if GEO == 1
        const ColumnMap cm = column_map(sv, cX[a], cX[b]);
#endif
#pragma unroll
        for (int q = 0; q < Q; q++) {
#if GEO == 0
            rq[q] *= sG[q * QQ + b * Q + a];
#else
            real G[6], wdetj;
            column_point(cm, cX[q], cW[a] * cW[b] * cW[q], G, &wdetj);
            rq[q] *= wdetj;
#endif
        }
    }
#else
    // gradient at the Gauss points through the collocated derivative cD (Q x Q)
    real (*sU)[Q][PADQ] = (real (*)[Q][PADQ])work;
    real (*sR)[Q][PADQ] = (real (*)[Q][PADQ])(work + REG);
    real (*sS)[Q][PADQ] = (real (*)[Q][PADQ])(work + 2 * REG);
#if GEO == 0
    real (*sV)[Q][PADQ] = (real (*)[Q][PADQ])(smem + le * GSTRIDE);
#else
    real (*sV)[Q][PADQ] = (real (*)[Q][PADQ])(work + 3 * REG);
#endif
    __syncthreads();   // everyone is done reading sC / sA before sU overwrites R0
    if (active) {
#pragma unroll
        for (int q = 0; q < Q; q++) sU[q][b][a] = rq[q];
    }
    __syncthreads();
    if (active) {
        real row[Q], col[Q];
#pragma unroll
        for (int n = 0; n < Q; n++) { row[n] = sU[b][a][n]; col[n] = sU[b][n][a]; }
#pragma unroll
        for (int m = 0; m < Q; m++) {
            real sr = 0, ss = 0;
#pragma unroll
            for (int n = 0; n < Q; n++) { sr += cD[m * Q + n] * row[n]; ss += cD[m * Q + n] * col[n]; }
            sR[b][a][m] = sr;
            sS[b][m][a] = ss;
        }
    }
    __syncthreads();
#if GEO == 0
    geometry_wait(&bar);
#endif
    real rt[Q], rm[Q];
    if (active) {
#if GEO == 1
        const ColumnMap cm = column_map(sv, cX[a], cX[b]);
#endif
#pragma unroll
        for (int k = 0; k < Q; k++) {
            real ut = 0;
#pragma unroll
            for (int n = 0; n < Q; n++) ut += cD[k * Q + n] * rq[n];
            const real ur = sR[k][b][a], us = sS[k][b][a];
            real G[6], wdetj = 0;
#if GEO == 0
#pragma unroll
            for (int c = 0; c < 6; c++) G[c] = sG[c * QQQ + k * QQ + b * Q + a];
            if (MASS) wdetj = sG[6 * QQQ + k * QQ + b * Q + a];
#else
            column_point(cm, cX[k], cW[a] * cW[b] * cW[k], G, &wdetj);
#endif
            sR[k][b][a] = G[0] * ur + G[1] * us + G[2] * ut;
            sS[k][b][a] = G[1] * ur + G[3] * us + G[4] * ut;
            rt[k] = G[2] * ur + G[4] * us + G[5] * ut;
            rm[k] = MASS ? alpha * wdetj * rq[k] : (real)0;
        }
    }
    __syncthreads();
    if (active) {
        real row[Q], col[Q];
#pragma unroll
        for (int n = 0; n < Q; n++) { row[n] = sR[b][a][n]; col[n] = sS[b][n][a]; }
#pragma unroll
        for (int i = 0; i < Q; i++) {
            real sx = 0, sy = 0;
#pragma unroll
            for (int m = 0; m < Q; m++) { sx += cD[m * Q + i] * row[m]; sy += cD[m * Q + i] * col[m]; }
            sU[b][a][i] = sx;
            sV[b][i][a] = sy;
        }
    }
    __syncthreads();
    if (active) {
#pragma unroll
        for (int k = 0; k < Q; k++) {
            real acc = sU[k][b][a] + sV[k][b][a] + rm[k];
#pragma unroll
            for (int m = 0; m < Q; m++) acc += cD[m * Q + k] * rt[m];
            rq[k] = acc;
        }
    }
#endif
    // transposed interpolation: z in registers -> sC, then y -> sB, x -> sA
    if (active) {
#pragma unroll
        for (int n = 0; n < N; n++) {
            real s = 0;
#pragma unroll
            for (int q = 0; q < Q; q++) s += cB[q * N + n] * rq[q];
            sC[n][b][a] = s;
        }
    }
    __syncthreads();
    if (active && b < N) {
        real in[Q];
#pragma unroll
        for (int q = 0; q < Q; q++) in[q] = sC[b][q][a];
#pragma unroll
        for (int j = 0; j < N; j++) {
            real s = 0;
#pragma unroll
            for (int q = 0; q < Q; q++) s += cB[q * N + j] * in[q];
            sB[b][j][a] = s;
        }
    }
    __syncthreads();
    if (active && a < N && b < N) {
        real in[Q];
#pragma unroll
        for (int q = 0; q < Q; q++) in[q] = sB[b][a][q];
#pragma unroll
        for (int i = 0; i < N; i++) {
            real s = 0;
#pragma unroll
            for (int q = 0; q < Q; q++) s += cB[q * N + i] * in[q];
            sA[b][a][i] = s;
        }
    }
    __syncthreads();
    if (active && a < N && b < N) {
#pragma unroll
        for (int k = 0; k < N; k++) accumulate(v, r_idx[k], sA[k][b][a], is_interior(a, b, k));
    }
#endif
}

extern "C" __global__ void bp_dirichlet_identity(const u32* FF_RESTRICT idx, const real* FF_RESTRICT u, real* FF_RESTRICT v, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x) v[idx[k]] = u[idx[k]];
}
