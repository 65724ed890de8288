// Shared by the bake-off kernels (bp.cu, bp_pencil.cu): sizes, accumulation, the metric
// of the trilinear map, and the device-side setup of stored geometric factors.

#ifndef EPB
#define EPB 1
#endif
#ifndef GEO
#define GEO 0
#endif
#ifndef MASS
#define MASS 0
#endif
#if OP == 5
#undef Q
#define Q N
#endif
#define T1D (N > Q ? N : Q)
#define NNN (N * N * N)
#define QQQ (Q * Q * Q)
// odd row pitch for shared arrays whose rows are read by different threads (bank conflicts)
#define PADQ (Q % 2 == 0 ? Q + 1 : Q)
#define PADN (N % 2 == 0 ? N + 1 : N)
// reals between consecutive elements of stored geometry (v2 pads to 16 bytes for bulk copies)
#ifndef GSTRIDE
#define GSTRIDE (NGEO * QQQ)
#endif

#if OP == 1
#define NMATS (Q * N)
#elif OP == 3
#define NMATS (Q * N + Q * Q)
#else
#define NMATS (N * N)
#endif

__device__ __forceinline__ bool is_interior(int i, int j, int k) {
    return i > 0 && i < N - 1 && j > 0 && j < N - 1 && k > 0 && k < N - 1;
}

__device__ __forceinline__ void accumulate(real* v, u32 idx, real val, bool interior) {
    if (interior) v[idx] = val;
    else atomicAdd(v + idx, val);
}

// From the Jacobian J of the map at a point with weight w: the symmetric factors
// G = w det(J) J^{-1} J^{-T} (00, 01, 02, 11, 12, 22) and w det(J).
__device__ __forceinline__ void metric_from_jacobian(const real (*J)[3], real w, real* G, real* wdetj) {
    // cofactors C[i][k] of J; adj(J) = C^T, J^{-1} = C^T / det
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
    // G_kl = (w / det) sum_i C[i][k] C[i][l]
    const real s = w / det;
    G[0] = s * (C[0][0] * C[0][0] + C[1][0] * C[1][0] + C[2][0] * C[2][0]);
    G[1] = s * (C[0][0] * C[0][1] + C[1][0] * C[1][1] + C[2][0] * C[2][1]);
    G[2] = s * (C[0][0] * C[0][2] + C[1][0] * C[1][2] + C[2][0] * C[2][2]);
    G[3] = s * (C[0][1] * C[0][1] + C[1][1] * C[1][1] + C[2][1] * C[2][1]);
    G[4] = s * (C[0][1] * C[0][2] + C[1][1] * C[1][2] + C[2][1] * C[2][2]);
    G[5] = s * (C[0][2] * C[0][2] + C[1][2] * C[1][2] + C[2][2] * C[2][2]);
}

// Metric factors of the trilinear map at reference point (a, b, c) with weight w, from the
// element's 12 edge vectors (s_edge[dir][edge][comp], dir 0: along x ...).
__device__ __forceinline__ void geo_point(const real (*ed)[4][3], real a, real b, real c, real w,
                                          real* G, real* wdetj) {
    const real a0 = (real)0.5 * (1 - a), a1 = (real)0.5 * (1 + a);
    const real b0 = (real)0.5 * (1 - b), b1 = (real)0.5 * (1 + b);
    const real c0 = (real)0.5 * (1 - c), c1 = (real)0.5 * (1 + c);
    real J[3][3];
#pragma unroll
    for (int d = 0; d < 3; d++) {
        // edges along x at (y,z) = (0,0),(1,0),(0,1),(1,1) -> weights b0c0, b1c0, b0c1, b1c1
        J[d][0] = (real)0.5 * (ed[0][0][d] * b0 * c0 + ed[0][1][d] * b1 * c0 + ed[0][2][d] * b0 * c1 + ed[0][3][d] * b1 * c1);
        J[d][1] = (real)0.5 * (ed[1][0][d] * a0 * c0 + ed[1][1][d] * a1 * c0 + ed[1][2][d] * a0 * c1 + ed[1][3][d] * a1 * c1);
        J[d][2] = (real)0.5 * (ed[2][0][d] * a0 * b0 + ed[2][1][d] * a1 * b0 + ed[2][2][d] * a0 * b1 + ed[2][3][d] * a1 * b1);
    }
    metric_from_jacobian(J, w, G, wdetj);
}
#define geo_point_any geo_point


#if GEO == 0
// Stored-geometry setup on the device: from vertices [elem][3][8] to factors
// [elem][NGEO][Q^3] (OP1: w detJ; OP3/5: G (6) and, with MASS, w detJ), with the 1-D
// reference points and weights in ref[0..Q) and ref[Q..2Q). One thread per point.
extern "C" __global__ void bp_setup_geometry(const u32 nelem, const real* FF_RESTRICT xv,
                                             const real* FF_RESTRICT ref, real* FF_RESTRICT geo) {
    const u64 total = (u64)nelem * QQQ;
    for (u64 t = blockIdx.x * (u64)blockDim.x + threadIdx.x; t < total; t += (u64)gridDim.x * blockDim.x) {
        const u32 e = (u32)(t / QQQ);
        const int qp = (int)(t % QQQ);
        const int qi = qp % Q, qj = (qp / Q) % Q, qk = qp / (Q * Q);
        real ed[3][4][3];
        const real* x = xv + (size_t)e * 24;
#pragma unroll
        for (int d = 0; d < 3; d++) {
#pragma unroll
            for (int edge = 0; edge < 4; edge++) {
                const int vx = 2 * edge, vy = (edge & 1) + 4 * (edge >> 1), vz = edge;
                ed[0][edge][d] = x[d * 8 + vx + 1] - x[d * 8 + vx];
                ed[1][edge][d] = x[d * 8 + vy + 2] - x[d * 8 + vy];
                ed[2][edge][d] = x[d * 8 + vz + 4] - x[d * 8 + vz];
            }
        }
        real G[6], wdetj;
        const real w = ref[Q + qi] * ref[Q + qj] * ref[Q + qk];
        geo_point_any(ed, ref[qi], ref[qj], ref[qk], w, G, &wdetj);
        real* g = geo + (size_t)e * GSTRIDE + qp;
#if OP == 1
        g[0] = wdetj;
#else
#pragma unroll
        for (int c = 0; c < 6; c++) g[c * QQQ] = G[c];
        if (MASS) g[6 * QQQ] = wdetj;
#endif
    }
}
#endif
