// CEED bake-off operators on hexahedra: the whole operator v = A u, L-vector to L-vector.
// One element per (x,y) thread slice: blockDim = (T1D, T1D, EPB) with T1D = max(N, Q); each
// thread owns a column in z held in registers (the 2-D thread structure of Swirydowicz et
// al. 2019), contractions along x and y go through shared memory, along z stay in registers.
//
// Compile-time constants (-D):
//   OP      1 = BP1 mass (Gauss, Q points), 3 = BP3 screened diffusion (Gauss, Q points),
//           5 = BP3.5/BP5 diffusion collocated at the N GLL nodes (Q == N)
//   N       nodes per direction (p + 1);   Q   quadrature points per direction
//   EPB     elements per thread block
//   GEO     0 = stored geometry [elem][NGEO][Q^3];  1 = computed on the fly from the
//           element's 8 vertices, given as [elem][3][8] (x of the 8 vertices, then y, z)
//   MASS    1 to add alpha * w detJ * u (screened Poisson) for OP 3 / 5
//   NGEO    values stored per quadrature point: OP1: 1 (w detJ); OP3/5: 6 (G) + MASS
//
// mats (global, copied to shared): OP1: B[Q][N];  OP3: B[Q][N], Dq[Q][Q];  OP5: D[N][N];
// followed, for GEO == 1, by the 1-D reference points x[Q] and weights w[Q] on [-1, 1].
//
// Accumulation: element-interior nodes belong to one element and are stored directly;
// nodes on element faces/edges/vertices are shared and added with atomicAdd, so v must be
// zeroed before the launch.

// (bp_common.cuh is prepended by the host: NVRTC runs without include paths)

#if GEO == 1
// Loads the 8 vertices of element e ([elem][3][8]) and forms the 12 edge vectors.
__device__ __forceinline__ void load_edges(const real* FF_RESTRICT xv, u32 e, real (*ed)[4][3], int tid, int nthreads) {
    // edges along x: (0,1) (2,3) (4,5) (6,7); along y: (0,2) (1,3) (4,6) (5,7); along z: (0,4) (1,5) (2,6) (3,7)
    for (; tid < 36; tid += nthreads) {
        const int dir = tid / 12, r = tid % 12, edge = r / 3, d = r % 3;
        int v0, v1;
        if (dir == 0) { v0 = 2 * edge; v1 = v0 + 1; }
        else if (dir == 1) { v0 = (edge & 1) + 4 * (edge >> 1); v1 = v0 + 2; }
        else { v0 = edge; v1 = v0 + 4; }
        const real* x = xv + (size_t)e * 24 + d * 8;
        ed[dir][edge][d] = x[v1] - x[v0];
    }
}
#endif

extern "C" __global__ void __launch_bounds__(T1D * T1D * EPB)
bp_apply(const u32 nelem, const u32 nskel_unused, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
         const real* FF_RESTRICT mats, const real* FF_RESTRICT u, real* FF_RESTRICT v, const real alpha)
{
    const int tx = threadIdx.x, ty = threadIdx.y, le = threadIdx.z;
    const int tid = tx + T1D * (ty + T1D * le);
    const u32 e = blockIdx.x * EPB + le;
    const bool active = e < nelem;

    __shared__ real s_mats[NMATS];
#if GEO == 1
    __shared__ real s_xq[Q], s_wq[Q];
    __shared__ real s_edges[EPB][3][4][3];
#endif
    for (int t = tid; t < NMATS; t += T1D * T1D * EPB) s_mats[t] = mats[t];
#if GEO == 1
    for (int t = tid; t < Q; t += T1D * T1D * EPB) { s_xq[t] = mats[NMATS + t]; s_wq[t] = mats[NMATS + Q + t]; }
    if (active) load_edges(geo, e, s_edges[le], tx + T1D * ty, T1D * T1D);
#endif

    u32 r_idx[N];
#if OP == 5
    // ---------------- BP3.5 / BP5: collocated GLL differentiation -------------------------
    const real (*D)[N] = (const real (*)[N])s_mats;
    __shared__ real s_u[EPB][N][N][PADN];
    __shared__ real s_gr[EPB][N][N][PADN];
    __shared__ real s_gs[EPB][N][N][PADN];
    const int i = tx, j = ty;
    real r_u[N], r_gt[N], r_m[N];
    if (active) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            r_idx[k] = offsets[(size_t)e * NNN + k * N * N + j * N + i];
            r_u[k] = u[r_idx[k]];
            s_u[le][k][j][i] = r_u[k];
        }
    }
    __syncthreads();
    if (active) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real ur = 0, us = 0, ut = 0;
#pragma unroll
            for (int m = 0; m < N; m++) {
                ur += D[i][m] * s_u[le][k][j][m];
                us += D[j][m] * s_u[le][k][m][i];
                ut += D[k][m] * r_u[m];
            }
            real G[6], wdetj;
#if GEO == 0
            const real* g = geo + (size_t)e * NGEO * NNN + k * N * N + j * N + i;
#pragma unroll
            for (int c = 0; c < 6; c++) G[c] = g[c * NNN];
            wdetj = MASS ? g[6 * NNN] : (real)0;
#else
            geo_point(s_edges[le], s_xq[i], s_xq[j], s_xq[k], s_wq[i] * s_wq[j] * s_wq[k], G, &wdetj);
#endif
            s_gr[le][k][j][i] = G[0] * ur + G[1] * us + G[2] * ut;
            s_gs[le][k][j][i] = G[1] * ur + G[3] * us + G[4] * ut;
            r_gt[k] = G[2] * ur + G[4] * us + G[5] * ut;
            r_m[k] = MASS ? alpha * wdetj * r_u[k] : (real)0;
        }
    }
    __syncthreads();
    if (active) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = r_m[k];
#pragma unroll
            for (int m = 0; m < N; m++)
                acc += D[m][i] * s_gr[le][k][j][m] + D[m][j] * s_gs[le][k][m][i] + D[m][k] * r_gt[m];
            accumulate(v, r_idx[k], acc, is_interior(i, j, k));
        }
    }
#else
    // ---------------- BP1 / BP3: interpolation to Q Gauss points -------------------------
    const real (*B)[N] = (const real (*)[N])s_mats;   // B[q][n]
#if OP == 3
    const real (*Dq)[Q] = (const real (*)[Q])(s_mats + Q * N);
#endif
    // stage buffers: sA holds N x N x N (input) and later N x Q x Q; sB holds N x N x Q
    __shared__ real sA[EPB][N][Q][PADQ];
    __shared__ real sB[EPB][N][N][PADQ];
    const int qi = tx, qj = ty;
    real rq[Q];
    // load u(i=tx, j=ty, k) for tx, ty < N
    if (active && tx < N && ty < N) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            r_idx[k] = offsets[(size_t)e * NNN + k * N * N + ty * N + tx];
            sA[le][k][ty][tx] = u[r_idx[k]];
        }
    }
    __syncthreads();
    // x: sB[k][j][qi] = sum_n B[qi][n] u(n, j, k)
    if (active && ty < N) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = 0;
#pragma unroll
            for (int n = 0; n < N; n++) acc += B[qi][n] * sA[le][k][ty][n];
            sB[le][k][ty][qi] = acc;
        }
    }
    __syncthreads();
    // y then z in registers: r[k] = sum_n B[qj][n] sB[k][n][qi]; rq[qk] = sum_k B[qk][k] r[k]
    if (active) {
        real r[N];
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = 0;
#pragma unroll
            for (int n = 0; n < N; n++) acc += B[qj][n] * sB[le][k][n][qi];
            r[k] = acc;
        }
#pragma unroll
        for (int qk = 0; qk < Q; qk++) {
            real acc = 0;
#pragma unroll
            for (int k = 0; k < N; k++) acc += B[qk][k] * r[k];
            rq[qk] = acc;
        }
    }
#if OP == 1
    // pointwise: multiply by w detJ
    if (active) {
#pragma unroll
        for (int qk = 0; qk < Q; qk++) {
#if GEO == 0
            rq[qk] *= geo[(size_t)e * QQQ + qk * Q * Q + qj * Q + qi];
#else
            real G[6], wdetj;
            geo_point(s_edges[le], s_xq[qi], s_xq[qj], s_xq[qk], s_wq[qi] * s_wq[qj] * s_wq[qk], G, &wdetj);
            rq[qk] *= wdetj;
#endif
        }
    }
#else
    // OP 3: gradient at Gauss points through the collocated Gauss derivative Dq
    __shared__ real sU[EPB][Q][Q][PADQ];
    __shared__ real sR[EPB][Q][Q][PADQ];
    __shared__ real sS[EPB][Q][Q][PADQ];
    if (active) {
#pragma unroll
        for (int qk = 0; qk < Q; qk++) sU[le][qk][qj][qi] = rq[qk];
    }
    __syncthreads();
    real rt[Q], rm[Q];
    if (active) {
#pragma unroll
        for (int qk = 0; qk < Q; qk++) {
            real ur = 0, us = 0, ut = 0;
#pragma unroll
            for (int m = 0; m < Q; m++) {
                ur += Dq[qi][m] * sU[le][qk][qj][m];
                us += Dq[qj][m] * sU[le][qk][m][qi];
                ut += Dq[qk][m] * rq[m];
            }
            real G[6], wdetj;
#if GEO == 0
            const real* g = geo + (size_t)e * NGEO * QQQ + qk * Q * Q + qj * Q + qi;
#pragma unroll
            for (int c = 0; c < 6; c++) G[c] = g[c * QQQ];
            wdetj = MASS ? g[6 * QQQ] : (real)0;
#else
            geo_point(s_edges[le], s_xq[qi], s_xq[qj], s_xq[qk], s_wq[qi] * s_wq[qj] * s_wq[qk], G, &wdetj);
#endif
            sR[le][qk][qj][qi] = G[0] * ur + G[1] * us + G[2] * ut;
            sS[le][qk][qj][qi] = G[1] * ur + G[3] * us + G[4] * ut;
            rt[qk] = G[2] * ur + G[4] * us + G[5] * ut;
            rm[qk] = MASS ? alpha * wdetj * rq[qk] : (real)0;
        }
    }
    __syncthreads();
    if (active) {
#pragma unroll
        for (int qk = 0; qk < Q; qk++) {
            real acc = rm[qk];
#pragma unroll
            for (int m = 0; m < Q; m++)
                acc += Dq[m][qi] * sR[le][qk][qj][m] + Dq[m][qj] * sS[le][qk][m][qi] + Dq[m][qk] * rt[m];
            rq[qk] = acc;
        }
    }
#endif
    // transpose interpolation: z in registers, then y and x through shared memory
    if (active) {
        real r[N];
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = 0;
#pragma unroll
            for (int qk = 0; qk < Q; qk++) acc += B[qk][k] * rq[qk];
            r[k] = acc;
        }
        // sA[k][qj][qi] = r[k]  (sA is free: its input was consumed before the 2nd barrier)
#pragma unroll
        for (int k = 0; k < N; k++) sA[le][k][qj][qi] = r[k];
    }
    __syncthreads();
    // y^T: sB[k][j][qi] = sum_qj B[qj][j] sA[k][qj][qi]   (threads ty < N)
    if (active && ty < N) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = 0;
#pragma unroll
            for (int q = 0; q < Q; q++) acc += B[q][ty] * sA[le][k][q][qi];
            sB[le][k][ty][qi] = acc;
        }
    }
    __syncthreads();
    // x^T: out(i, j, k) = sum_qi B[qi][i] sB[k][j][qi]   (threads tx, ty < N)
    if (active && tx < N && ty < N) {
#pragma unroll
        for (int k = 0; k < N; k++) {
            real acc = 0;
#pragma unroll
            for (int q = 0; q < Q; q++) acc += B[q][tx] * sB[le][k][ty][q];
            accumulate(v, r_idx[k], acc, is_interior(tx, ty, k));
        }
    }
#endif
}

// v[idx[k]] = u[idx[k]] for the constrained dofs (identity rows of a Dirichlet operator);
// used after zeroing the constrained inputs.
extern "C" __global__ void bp_dirichlet_identity(const u32* FF_RESTRICT idx, const real* FF_RESTRICT u, real* FF_RESTRICT v, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x) v[idx[k]] = u[idx[k]];
}

