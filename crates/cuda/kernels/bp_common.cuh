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
// Position of point (x, y, z) in an element's block of stored factors: lexicographic, or
// x slowest (WXSLOW, v20: BP1's register-column kernel, whose x-pencil owner (y, z) then
// reads point x of consecutive pencils at consecutive addresses).
#ifndef WXSLOW
#define WXSLOW 0
#endif
#if WXSLOW
#define GPOS(x, y, z) (((x) * Q + (z)) * Q + (y))
#else
#define GPOS(x, y, z) (((z) * Q + (y)) * Q + (x))
#endif
// reals between consecutive elements of stored geometry (v2 pads to 16 bytes for bulk copies)
// GEOCS 1: stored geometry (weights, factors) read once per apply, loaded with the
// evict-first (streaming) policy, so that L2 keeps the vectors and the skeleton's partial
// sums rather than data that will not be read again; GLD(x) is such a load of x
#ifndef GEOCS
#define GEOCS 0
#endif
#if GEOCS
__device__ __forceinline__ double ld_cs(const double* p) {
    double v;
    asm("ld.global.cs.f64 %0, [%1];" : "=d"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ float ld_cs(const float* p) {
    float v;
    asm("ld.global.cs.f32 %0, [%1];" : "=f"(v) : "l"(p));
    return v;
}
#define GLD(x) ld_cs(&(x))
#else
#define GLD(x) (x)
#endif

// Hopper's bulk copies (cp.async.bulk, the TMA unit) from global into shared memory,
// completing on an mbarrier in shared memory: the v2 kernels' staged geometry and the
// lattice's weights (v41)
__device__ __forceinline__ u32 smem_u32(const void* p) {
    u32 a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// One thread: the barrier expects one arrival (the issuing thread's) per phase
__device__ __forceinline__ void bulk_barrier_init(u64* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_u32(bar)), "r"(1) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// bytes (a multiple of 16, both addresses 16-byte aligned) from src to dst; completes on bar
// (the issuing thread announces the bytes with mbarrier.arrive.expect_tx first)
__device__ __forceinline__ void bulk_copy_to_shared(void* dst, const void* src, u32 bytes, u64* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(smem_u32(dst)), "l"(src), "r"(bytes), "r"(smem_u32(bar)) : "memory");
}

// A hint to bring [p, p + bytes) into L2 (one bulk prefetch; its bounds must be 16-byte
// aligned, so the range is widened down to one and narrowed up to the other: a few bytes
// missed are read as usual)
__device__ __forceinline__ void bulk_prefetch_l2(const void* p, size_t bytes) {
#if __CUDA_ARCH__ >= 900
    const size_t b0 = (size_t)p, b1 = b0 + bytes;
    const size_t a0 = b0 & ~(size_t)15;
    const u32 n = (u32)((b1 - a0) & ~(size_t)15);
    if (n > 0) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(a0), "r"(n) : "memory");
#else
    (void)p;
    (void)bytes;
#endif
}

// until bar's phase of this parity has completed (its bytes arrived)
__device__ __forceinline__ void bulk_wait(u64* bar, u32 parity) {
    u32 done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(smem_u32(bar)), "r"(parity) : "memory");
    } while (!done);
}

#ifndef GSTRIDE
#define GSTRIDE (NGEO * QQQ)
#endif
// Where point (x, y, z) of element e sits in the stored factors: GSTRIDE reals per element,
// GPOS within; or (LATTICE, v26: the lattice kernel of bp_lattice.cu, one block per brick of
// BX x BY x BZ elements) in the brick's quadrature lattice, x slowest, so that the threads of
// its pointwise phase, which own (y, z) lines of the lattice, read consecutive addresses.
#ifndef LATTICE
#define LATTICE 0
#endif
#if LATTICE
__device__ __forceinline__ size_t lattice_geo_index(u32 e, int x, int y, int z) {
    const u32 g = e / (BX * BY * BZ), le = e % (BX * BY * BZ);
    const int ex = le % BX, ey = (le / BX) % BY, ez = le / (BX * BY);
    return (size_t)g * (BX * BY * BZ) * QQQ + ((size_t)(ex * Q + x) * (BZ * Q) + ez * Q + z) * (BY * Q) + ey * Q + y;
}
#define GEO_INDEX(e, x, y, z) lattice_geo_index((e), (x), (y), (z))
#else
#define GEO_INDEX(e, x, y, z) ((size_t)(e) * GSTRIDE + GPOS(x, y, z))
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

#ifndef INTLAST
#define INTLAST 0
#endif
// an offset through a load the compiler cannot merge with an earlier one (LATEIDX)
__device__ __forceinline__ u32 ld_nc_u32(const u32* p) {
    u32 x;
    asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(x) : "l"(p));
    return x;
}
// The global index of local node (i, j, k) of element e, for the apply and diagonal
// kernels; LATE reads its offset with ld_nc_u32 (the scatter's reload under LATEIDX), else
// with a plain load.
#if INTLAST
// Interior-last numbering: interior node (i, j, k) of element e is nskel + e * NIE + its
// lexicographic interior index; skeleton nodes read compact offsets [elem][NSKE] through
// the constant table cSK (local node -> skeleton slot), generated by the host.
#define NIE ((N - 2) * (N - 2) * (N - 2))   // interior nodes per element
#define NSKE (NNN - NIE)                   // skeleton nodes per element
// SKARITH (v25): the slot computed from (i, j, k) rather than read from cSK. The table's
// reads are lane-varying, so the indexed constant cache serves a warp's distinct slots one
// after another (Nsight Compute: IDC busy 60 % and the ADU pipe at 64-73 % in BP1).
#ifndef SKARITH
#define SKARITH 0
#endif
// interior coordinates (1 .. N - 2) below c
__device__ __forceinline__ int interior_below(int c) { return c < 1 ? 0 : (c - 1 < N - 2 ? c - 1 : N - 2); }
// skeleton slot of local node (i, j, k): the order of cSK (the host's skeleton_table), i.e.
// the lexicographic index less the interior nodes that precede it
__device__ __forceinline__ u32 skeleton_slot(int i, int j, int k) {
    const int m = N - 2;
    const bool kin = k > 0 && k < N - 1, jin = j > 0 && j < N - 1;
    const int before = interior_below(k) * m * m + (kin ? interior_below(j) * m + (jin ? interior_below(i) : 0) : 0);
    return (u32)((k * N + j) * N + i - before);
}
template <bool LATE = false>
__device__ __forceinline__ u32 node_index(const u32* FF_RESTRICT off, u32 e, u32 nskel, int i, int j, int k) {
    if (is_interior(i, j, k)) return nskel + e * (u32)NIE + (u32)(((k - 1) * (N - 2) + (j - 1)) * (N - 2) + (i - 1));
#if SKARITH
    const u32* p = off + (size_t)e * NSKE + skeleton_slot(i, j, k);
#else
    // (the table read exactly as before v25: ptxas allocates these kernels as it did)
    const u32* p = off + (size_t)e * NSKE + cSK[(k * N + j) * N + i];
#endif
    return LATE ? ld_nc_u32(p) : *p;
}
#else
template <bool LATE = false>
__device__ __forceinline__ u32 node_index(const u32* FF_RESTRICT off, u32 e, u32, int i, int j, int k) {
    const u32* p = off + (size_t)e * NNN + (k * N + j) * N + i;
    return LATE ? ld_nc_u32(p) : *p;
}
#endif

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
        real* g = geo + GEO_INDEX(e, qi, qj, qk);
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
