// Residual evaluation (and Jacobian action) of a pointwise weak form on simplices
// (Knepley, Rupp & Terrel 2016): r = sum_e E^T [B^T W f0(u, grad u, a) + D^T W f1(...)].
//
// Strategies (STRATEGY):
//   0  thread transposition (the paper's kernel): a block takes a batch of NBC = NBL * NBS
//      cells (NBS = lcm(NB, NQ)); in the quadrature phase each thread owns (cell, point)
//      items and writes w detJ * f0/f1 into shared memory; after one barrier each thread
//      owns (cell, basis function, component) items and reduces over the points. A block
//      loops over NBATCH batches (the paper's chunk); the remainder is bounds-checked.
//   1  one thread per cell (baseline);  2  one thread per basis function and component,
//      recomputing the fields at every point from global memory (baseline).
// Outputs (OUT): 0 element vectors, E-vector in and out [cell][comp][basis] (the paper's
//   setting); 1 global residual, L-vectors in and out, atomicAdd; 2 global residual over a
//   colour (no two cells of one launch share a node), plain read-modify-write.
// JAC: 0 residual of the physics (f0, f1); 1 action of its Jacobian at u on w (g0..g3).
// GEO: 0 stored [cell][DIM*DIM + 1] = J^{-1} (row-major, dxi_k/dx_i at [k*DIM+i]) and
//      det J; 1 computed from the cell's vertex nodes (local nodes 0..DIM, whose physical
//      coordinates are read from coords[node][DIM] through the restriction).
// NEED_X: 1 when the physics reads the physical point x (then GEO is 1: x at point q is
//      the affine map of the reference point cXq[q] from the cell's vertices).
// AUX: 0 none; 1 nodal in the solution's scalar space (aux[node]; with OUT 0 as an
//      E-vector aux[cell][basis], like the coefficients); 2 per cell (aux[cell]).
// Needs (host-prepended): prelude, simplex.cuh, physics source (ff_f0..ff_g3), constant tables
//   cPhi[NQ*NB], cDphi[(NQ*NB)*DIM] (reference gradients), cWq[NQ], and with NEED_X the
//   reference points cXq[NQ*DIM].

#define NBT (NB * NC)
#define NGEOC (DIM * DIM + 1)
#ifndef NEED_X
#define NEED_X 0
#endif
#if NEED_X && GEO == 0
#error "NEED_X needs the vertex coordinates (GEO 1)"
#endif
#ifndef NBL
#define NBL 1
#endif
#ifndef NBATCH
#define NBATCH 1
#endif
#ifndef STRATEGY
#define STRATEGY 0
#endif
#define NBC (NBL * NBS)
// threads per cell of a batch (the host passes NC, the paper's shape, unless tuned)
#ifndef TPC
#define TPC NC
#endif
#if STRATEGY == 0
#define NT (NBC * TPC)
#else
#define NT 128
#endif
#define NF (NC + NC * DIM)
// shared-memory stride of one (cell, point) flux record: odd, so that consecutive cells'
// records fall in different banks
#define NFS (NF | 1)
// whether the point fluxes have f0 (value) terms at all
#if JAC
#define F0_TERMS (HAS_G0 || HAS_G1)
#else
#define F0_TERMS HAS_F0
#endif
// element-local position of basis function b, component c: component-major, the order of
// an E-vector [cell][comp][basis], so a batch of element vectors is one contiguous run
#define ELOC(b, c) ((c) * NB + (b))

__device__ __forceinline__ u32 cell_id(u32 i, u32 cell0, const u32* FF_RESTRICT cells) {
    return cells ? cells[cell0 + i] : cell0 + i;
}

// Fields at point q from element values ue[b*NC + c] (and the aux value), physics, and
// the weighted flux values f[NF]: f0 (NC) then f1 (NC*DIM), times w det J. xv: the cell's
// vertex coordinates (read with NEED_X only).
__device__ __forceinline__ void point_values(int q, const real* ue, const real* we, const real* g, const real* xv, real aval, real* f) {
    real u[NC], du[NC * DIM];
#if JAC
    real v[NC], dv[NC * DIM];
#endif
#pragma unroll
    for (int c = 0; c < NC; c++) {
        u[c] = 0;
#if JAC
        v[c] = 0;
#endif
#pragma unroll
        for (int i = 0; i < DIM; i++) {
            du[c * DIM + i] = 0;
#if JAC
            dv[c * DIM + i] = 0;
#endif
        }
    }
#pragma unroll
    for (int b = 0; b < NB; b++) {
        const real phi = cPhi[q * NB + b];
        real gphys[DIM];
#pragma unroll
        for (int i = 0; i < DIM; i++) {
            real s = 0;
#pragma unroll
            for (int k = 0; k < DIM; k++) s += g[k * DIM + i] * cDphi[(q * NB + b) * DIM + k];
            gphys[i] = s;
        }
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const real ub = ue[ELOC(b, c)];
            u[c] += phi * ub;
#pragma unroll
            for (int i = 0; i < DIM; i++) du[c * DIM + i] += gphys[i] * ub;
#if JAC
            const real vb = we[ELOC(b, c)];
            v[c] += phi * vb;
#pragma unroll
            for (int i = 0; i < DIM; i++) dv[c * DIM + i] += gphys[i] * vb;
#endif
        }
    }
#if NEED_X
    real x[DIM];
    affine_point(cXq + q * DIM, xv, x);
#else
    (void)xv;
    const real x[3] = {0, 0, 0};
#endif
    real a[1] = {aval};
    real da[DIM];
#pragma unroll
    for (int i = 0; i < DIM; i++) da[i] = 0;
    const real wdetj = cWq[q] * g[DIM * DIM];
#if JAC == 0
#pragma unroll
    for (int k = 0; k < NF; k++) f[k] = 0;
#if HAS_F0
    ff_f0(x, u, du, a, da, f);
#endif
#if HAS_F1
    ff_f1(x, u, du, a, da, f + NC);
#endif
#else
    real t0[NC], t1[NC * DIM];
#pragma unroll
    for (int k = 0; k < NC; k++) t0[k] = 0;
#pragma unroll
    for (int k = 0; k < NC * DIM; k++) t1[k] = 0;
#if HAS_G0
    { real g0[NC * NC]; ff_g0(x, u, du, a, da, g0);
      for (int ci = 0; ci < NC; ci++) for (int cj = 0; cj < NC; cj++) t0[ci] += g0[ci * NC + cj] * v[cj]; }
#endif
#if HAS_G1
    { real g1[NC * NC * DIM]; ff_g1(x, u, du, a, da, g1);
      for (int ci = 0; ci < NC; ci++) for (int cj = 0; cj < NC; cj++) for (int l = 0; l < DIM; l++)
        t0[ci] += g1[(ci * NC + cj) * DIM + l] * dv[cj * DIM + l]; }
#endif
#if HAS_G2
    { real g2[NC * NC * DIM]; ff_g2(x, u, du, a, da, g2);
      for (int ci = 0; ci < NC; ci++) for (int cj = 0; cj < NC; cj++) for (int k = 0; k < DIM; k++)
        t1[ci * DIM + k] += g2[(ci * NC + cj) * DIM + k] * v[cj]; }
#endif
#if HAS_G3
    { real g3[NC * NC * DIM * DIM]; ff_g3(x, u, du, a, da, g3);
      for (int ci = 0; ci < NC; ci++) for (int cj = 0; cj < NC; cj++) for (int k = 0; k < DIM; k++) for (int l = 0; l < DIM; l++)
        t1[ci * DIM + k] += g3[((ci * NC + cj) * DIM + k) * DIM + l] * dv[cj * DIM + l]; }
#endif
#pragma unroll
    for (int k = 0; k < NC; k++) f[k] = t0[k];
#pragma unroll
    for (int k = 0; k < NC * DIM; k++) f[NC + k] = t1[k];
#endif
#pragma unroll
    for (int k = 0; k < NF; k++) f[k] *= wdetj;
}

// f1 mapped to the reference cell in place, fr[c][k] = sum_i (J^{-1})_{k i} f1[c][i], so
// that the basis phase reduces against the reference gradients and needs no geometry
__device__ __forceinline__ void flux_to_reference(real* f, const real* g) {
#pragma unroll
    for (int c = 0; c < NC; c++) {
        real r[DIM];
#pragma unroll
        for (int k = 0; k < DIM; k++) {
            real s = 0;
#pragma unroll
            for (int i = 0; i < DIM; i++) s += g[k * DIM + i] * f[NC + c * DIM + i];
            r[k] = s;
        }
#pragma unroll
        for (int k = 0; k < DIM; k++) f[NC + c * DIM + k] = r[k];
    }
}

// 16-byte vector of reals (for shared-memory loads of whole cells)
template <typename T> struct Vec16;
template <> struct Vec16<float> { typedef float4 type; };
template <> struct Vec16<double> { typedef double2 type; };

// r[0..n) = s[0..n), n a compile-time constant; 16-byte loads when every cell's run is
// 16-byte aligned (a cell's values at stride n from an aligned base), which also keeps
// cells at strides like 12 reals free of shared-memory bank conflicts
template <int n>
__device__ __forceinline__ void load_cell(real* r, const real* s) {
    constexpr int V = 16 / (int)sizeof(real);
    if ((n * (int)sizeof(real)) % 16 == 0) {
        typedef typename Vec16<real>::type vec;
#pragma unroll
        for (int i = 0; i < n / V; i++) {
            union { vec v; real a[V]; } t;
            t.v = reinterpret_cast<const vec*>(s)[i];
#pragma unroll
            for (int j = 0; j < V; j++) r[i * V + j] = t.a[j];
        }
    } else {
#pragma unroll
        for (int i = 0; i < n; i++) r[i] = s[i];
    }
}

// Basis-phase reduction for basis b, component c of a cell: sum over points of the
// weighted f0 and the reference-mapped f1 (flux_to_reference) against the reference basis.
__device__ __forceinline__ real basis_value_reference(int b, int c, const real* fq /* [NQ][NFS] */) {
    real acc = 0;
#pragma unroll
    for (int q = 0; q < NQ; q++) {
        const real* f = fq + q * NFS;
#if F0_TERMS
        acc += cPhi[q * NB + b] * f[c];
#endif
#pragma unroll
        for (int k = 0; k < DIM; k++) acc += cDphi[(q * NB + b) * DIM + k] * f[NC + c * DIM + k];
    }
    return acc;
}

__device__ __forceinline__ void store(real* FF_RESTRICT out, const u32* FF_RESTRICT offsets, u32 cell, int b, int c, real val) {
#if OUT == 0
    out[((size_t)cell * NC + c) * NB + b] = val;
#elif OUT == 1
    atomicAdd(out + (size_t)offsets[(size_t)cell * NB + b] * NC + c, val);
#else
    out[(size_t)offsets[(size_t)cell * NB + b] * NC + c] += val;
#endif
}

// element value (b, c) of input vector x for a cell
__device__ __forceinline__ real load_value(const real* FF_RESTRICT x, const u32* FF_RESTRICT offsets, u32 cell, int b, int c) {
#if OUT == 0
    return x[((size_t)cell * NC + c) * NB + b];
#else
    return x[(size_t)offsets[(size_t)cell * NB + b] * NC + c];
#endif
}

__device__ __forceinline__ real load_aux(const real* FF_RESTRICT aux, const u32* FF_RESTRICT offsets, u32 cell, int b) {
#if AUX == 1 && OUT == 0
    return aux[(size_t)cell * NB + b];   // element-vector setting: the coefficient per cell too
#elif AUX == 1
    return aux[offsets[(size_t)cell * NB + b]];
#elif AUX == 2
    return aux[cell];
#else
    return 0;
#endif
}

// J^{-1} and det J of a cell into g (and, with GEO 1, its vertex coordinates into xv)
__device__ __forceinline__ void load_geometry(u32 cell, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo, const real* FF_RESTRICT coords, real* g, real* xv) {
#if GEO == 0
    (void)xv;
#pragma unroll
    for (int k = 0; k < NGEOC; k++) g[k] = geo[(size_t)cell * NGEOC + k];
#else
    cell_vertices(cell, offsets, coords, xv);
    geometry_from_vertices(xv, g);
#endif
}

// aux value at point q
__device__ __forceinline__ real aux_at(int q, const real* ae) {
#if AUX == 1
    real s = 0;
#pragma unroll
    for (int b = 0; b < NB; b++) s += cPhi[q * NB + b] * ae[b];
    return s;
#elif AUX == 2
    return ae[0];
#else
    return 0;
#endif
}
#if AUX == 2
#define NAE 1
#else
#define NAE NB
#endif

#if STRATEGY == 0
// geometry reals loaded per cell: stored J^{-1} and det J, or the vertex coordinates
#if GEO == 0
#define NGL NGEOC
#else
#define NGL ((DIM + 1) * DIM)
#endif
// stage buffers: two when a block takes several batches (the next batch's loads are in
// flight while the current one is computed), else one
#define NSTAGE (NBATCH > 1 ? 2 : 1)

__device__ __forceinline__ u32 smem_addr(const void* p) {
    u32 a;
    asm volatile("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// asynchronous global -> shared copy of one real (no register held while in flight)
__device__ __forceinline__ void cp_async_real(real* dst, const real* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(smem_addr(dst)), "l"(src), "n"((int)sizeof(real)) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_prev() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// 16-byte asynchronous copy (bypasses L1: the batch data are streamed once)
__device__ __forceinline__ void cp_async_16(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(smem_addr(dst)), "l"(src) : "memory");
}

// Starts the copy of a contiguous run of n reals into shared memory: consecutive threads
// take consecutive 16-byte chunks when both ends are 16-byte aligned, else one real each.
__device__ __forceinline__ void copy_run(real* dst, const real* src, u32 n, int t) {
    const u32 V = 16 / sizeof(real);
    u32 done = 0;
    if ((((size_t)dst | (size_t)src) & 15) == 0) {
        for (u32 k = t; k < n / V; k += NT) cp_async_16(dst + k * V, src + k * V);
        done = (n / V) * V;
    }
    for (u32 k = done + t; k < n; k += NT) cp_async_real(dst + k, src + k);
}

__device__ __forceinline__ const real* value_ptr(const real* FF_RESTRICT x, const u32* FF_RESTRICT offsets, u32 cell, int b, int c) {
#if OUT == 0
    return x + ((size_t)cell * NC + c) * NB + b;
#else
    return x + (size_t)offsets[(size_t)cell * NB + b] * NC + c;
#endif
}

// Starts the loads of the batch of cells first .. first + nvalid (local indices) into one
// stage: coefficients (and the Jacobian's direction), aux values and geometry, each item
// by the thread whose index it has in the batch, so consecutive threads read consecutive
// addresses wherever the data are contiguous.
__device__ __forceinline__ void batch_issue(u32 first, u32 nvalid, u32 cell0, const u32* FF_RESTRICT cells,
                                            const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
                                            const real* FF_RESTRICT coords, const real* FF_RESTRICT aux,
                                            const real* FF_RESTRICT u, const real* FF_RESTRICT w,
                                            real* su, real* sw, real* sa, real* sx, u32* so, int t) {
#if OUT == 0
    if (cells == nullptr) {
        // element vectors of consecutive cells: one contiguous run each
        copy_run(su, u + (size_t)(cell0 + first) * NBT, nvalid * NBT, t);
#if JAC
        copy_run(sw, w + (size_t)(cell0 + first) * NBT, nvalid * NBT, t);
#endif
    } else
    for (int k = t; k < NBC * NBT; k += NT) {
        const int lc = k / NBT, r = k % NBT, c = r / NB, b = r % NB;
        if ((u32)lc < nvalid) {
            const u32 cell = cell_id(first + lc, cell0, cells);
            cp_async_real(su + k, value_ptr(u, offsets, cell, b, c));
#if JAC
            cp_async_real(sw + k, value_ptr(w, offsets, cell, b, c));
#endif
        }
    }
#else
    // global vectors: each (cell, basis) item reads its index once, gathers every component
    // (and the nodal aux value) through it and keeps it in shared memory for the scatter
    for (int k = t; k < NBC * NB; k += NT) {
        const int lc = k / NB, b = k % NB;
        if ((u32)lc < nvalid) {
            const u32 cell = cell_id(first + lc, cell0, cells);
            const u32 node = offsets[(size_t)cell * NB + b];
            so[k] = node;
#pragma unroll
            for (int c = 0; c < NC; c++) {
                cp_async_real(su + lc * NBT + ELOC(b, c), u + (size_t)node * NC + c);
#if JAC
                cp_async_real(sw + lc * NBT + ELOC(b, c), w + (size_t)node * NC + c);
#endif
            }
#if AUX == 1
            cp_async_real(sa + k, aux + node);
#endif
        }
    }
#endif
#if AUX && !(AUX == 1 && OUT != 0)
    if (cells == nullptr) {
        copy_run(sa, aux + (size_t)(cell0 + first) * NAE, nvalid * NAE, t);
    } else
    for (int k = t; k < NBC * NAE; k += NT) {
        const int lc = k / NAE, b = k % NAE;
        if ((u32)lc < nvalid) {
            const u32 cell = cell_id(first + lc, cell0, cells);
#if AUX == 1
            cp_async_real(sa + k, aux + (size_t)cell * NB + b);
#else
            cp_async_real(sa + k, aux + cell);
#endif
        }
    }
#endif
#if GEO == 0
    if (cells == nullptr) {
        // the batch's factors are one contiguous run
        copy_run(sx, geo + (size_t)(cell0 + first) * NGEOC, nvalid * NGEOC, t);
    } else {
        for (int k = t; k < NBC * NGEOC; k += NT) {
            const int lc = k / NGEOC, j = k % NGEOC;
            if ((u32)lc < nvalid) cp_async_real(sx + k, geo + (size_t)cell_id(first + lc, cell0, cells) * NGEOC + j);
        }
    }
#else
    for (int k = t; k < NBC * NGL; k += NT) {
        const int lc = k / NGL, r = k % NGL, v = r / DIM, i = r % DIM;
        if ((u32)lc < nvalid) {
            const u32 cell = cell_id(first + lc, cell0, cells);
            cp_async_real(sx + k, coords + (size_t)offsets[(size_t)cell * NB + v] * DIM + i);
        }
    }
#endif
}
#endif

extern "C" __global__ void __launch_bounds__(NT)
residual(const u32 ncells, const u32 cell0, const u32* FF_RESTRICT cells, const u32* FF_RESTRICT offsets,
         const real* FF_RESTRICT geo, const real* FF_RESTRICT coords, const real* FF_RESTRICT aux,
         const real* FF_RESTRICT u, const real* FF_RESTRICT w, real* FF_RESTRICT out)
{
#if STRATEGY == 0
    __shared__ __align__(16) real s_u[NSTAGE][NBC * NBT];
#if JAC
    __shared__ __align__(16) real s_w[NSTAGE][NBC * NBT];
#else
    real (*s_w)[NBC * NBT] = s_u;
#endif
#if AUX
    __shared__ __align__(16) real s_a[NSTAGE][NBC * NAE];
#else
    __shared__ real s_a[NSTAGE][1];
#endif
    __shared__ __align__(16) real s_x[NSTAGE][NBC * NGL];
    __shared__ real s_f[NBC * NQ * NFS];
#if OUT != 0
    __shared__ u32 s_o[NSTAGE][NBC * NB];   // the batch's restriction indices
#else
    u32 (*s_o)[1] = nullptr;
#endif
    const int t = threadIdx.x;
    const u32 chunk0 = blockIdx.x * NBATCH;
    // prologue: the chunk's first batch
    if (chunk0 * NBC < ncells) {
        const u32 first = chunk0 * NBC;
        batch_issue(first, min((u32)NBC, ncells - first), cell0, cells, offsets, geo, coords, aux, u, w,
                    s_u[0], s_w[0], s_a[0], s_x[0], s_o ? s_o[0] : nullptr, t);
    }
    cp_async_commit();
    for (int batch = 0; batch < NBATCH; batch++) {
        const u32 first = (chunk0 + batch) * NBC;
        if (first >= ncells) break;
        const u32 nvalid = min((u32)NBC, ncells - first);
        const int st = NSTAGE == 2 ? (batch & 1) : 0;
#if NSTAGE == 2
        // the next batch's loads go out before this batch is computed
        const u32 nfirst = first + NBC;
        if (batch + 1 < NBATCH && nfirst < ncells)
            batch_issue(nfirst, min((u32)NBC, ncells - nfirst), cell0, cells, offsets, geo, coords, aux, u, w,
                        s_u[st ^ 1], s_w[st ^ 1], s_a[st ^ 1], s_x[st ^ 1], s_o ? s_o[st ^ 1] : nullptr, t);
        cp_async_commit();
        cp_async_wait_prev();
#else
        cp_async_wait_all();
#endif
        __syncthreads();
        // quadrature phase: (cell, point) items; the geometry is needed here only, since
        // the fluxes leave it mapped to the reference cell
        for (int k = t; k < NBC * NQ; k += NT) {
            const int lc = k / NQ, q = k % NQ;
            if ((u32)lc < nvalid) {
#if GEO == 1
                real g[NGEOC];
                geometry_from_vertices(s_x[st] + lc * NGL, g);
#else
                const real* g = s_x[st] + lc * NGEOC;
#endif
                const real* xv = s_x[st] + lc * NGL;
                real ue[NBT];
                load_cell<NBT>(ue, s_u[st] + lc * NBT);
#if JAC
                real we[NBT];
                load_cell<NBT>(we, s_w[st] + lc * NBT);
#else
                const real* we = ue;
#endif
                real f[NF];
                point_values(q, ue, we, g, xv, aux_at(q, s_a[st] + lc * NAE), f);
                flux_to_reference(f, g);
#pragma unroll
                for (int m = 0; m < NF; m++) s_f[(lc * NQ + q) * NFS + m] = f[m];
            }
        }
        __syncthreads();
        // basis phase (thread transposition): (cell, basis, component) items
        for (int k = t; k < NBC * NBT; k += NT) {
            const int lc = k / NBT, r = k % NBT;
#if OUT == 0
            const int c = r / NB, b = r % NB;   // consecutive threads, consecutive addresses
#else
            const int b = r / NC, c = r % NC;
#endif
            if ((u32)lc < nvalid) {
                const real val = basis_value_reference(b, c, s_f + lc * NQ * NFS);
#if OUT == 0
                store(out, offsets, cell_id(first + lc, cell0, cells), b, c, val);
#elif OUT == 1
                atomicAdd(out + (size_t)s_o[st][lc * NB + b] * NC + c, val);
#else
                out[(size_t)s_o[st][lc * NB + b] * NC + c] += val;
#endif
            }
        }
        __syncthreads();
    }
#elif STRATEGY == 1
    // one thread per cell
    const u32 i = blockIdx.x * NT + threadIdx.x;
    if (i >= ncells) return;
    const u32 cell = cell_id(i, cell0, cells);
    real ue[NBT], we[NBT], ae[NAE], g[NGEOC], xv[(DIM + 1) * DIM];
    for (int b = 0; b < NB; b++)
        for (int c = 0; c < NC; c++) {
            ue[ELOC(b, c)] = load_value(u, offsets, cell, b, c);
#if JAC
            we[ELOC(b, c)] = load_value(w, offsets, cell, b, c);
#else
            we[ELOC(b, c)] = 0;
#endif
        }
#if AUX
    for (int b = 0; b < NAE; b++) ae[b] = load_aux(aux, offsets, cell, b);
#else
    ae[0] = 0;
#endif
    load_geometry(cell, offsets, geo, coords, g, xv);
    real acc[NBT];
    for (int k = 0; k < NBT; k++) acc[k] = 0;
    for (int q = 0; q < NQ; q++) {
        real f[NF];
        point_values(q, ue, we, g, xv, aux_at(q, ae), f);
        for (int b = 0; b < NB; b++) {
            real gp[DIM];
            for (int d = 0; d < DIM; d++) {
                real s = 0;
                for (int k = 0; k < DIM; k++) s += g[k * DIM + d] * cDphi[(q * NB + b) * DIM + k];
                gp[d] = s;
            }
            for (int c = 0; c < NC; c++) {
                real s = cPhi[q * NB + b] * f[c];
                for (int d = 0; d < DIM; d++) s += gp[d] * f[NC + c * DIM + d];
                acc[b * NC + c] += s;
            }
        }
    }
    for (int b = 0; b < NB; b++)
        for (int c = 0; c < NC; c++) store(out, offsets, cell, b, c, acc[b * NC + c]);
#else
    // one thread per (cell, basis, component): fields recomputed at every point
    const u32 item = blockIdx.x * NT + threadIdx.x;
    if (item >= ncells * NBT) return;
    const u32 i = item / NBT;
    const int r = item % NBT, b = r / NC, c = r % NC;
    const u32 cell = cell_id(i, cell0, cells);
    real g[NGEOC], xv[(DIM + 1) * DIM];
    load_geometry(cell, offsets, geo, coords, g, xv);
    real acc = 0;
    for (int q = 0; q < NQ; q++) {
        real ue[NBT], we[NBT], ae[NAE];
        for (int bb = 0; bb < NB; bb++)
            for (int cc = 0; cc < NC; cc++) {
                ue[ELOC(bb, cc)] = load_value(u, offsets, cell, bb, cc);
#if JAC
                we[ELOC(bb, cc)] = load_value(w, offsets, cell, bb, cc);
#else
                we[ELOC(bb, cc)] = 0;
#endif
            }
#if AUX
        for (int bb = 0; bb < NAE; bb++) ae[bb] = load_aux(aux, offsets, cell, bb);
#else
        ae[0] = 0;
#endif
        real f[NF];
        point_values(q, ue, we, g, xv, aux_at(q, ae), f);
        real gp[DIM];
        for (int d = 0; d < DIM; d++) {
            real s = 0;
            for (int k = 0; k < DIM; k++) s += g[k * DIM + d] * cDphi[(q * NB + b) * DIM + k];
            gp[d] = s;
        }
        acc += cPhi[q * NB + b] * f[c];
        for (int d = 0; d < DIM; d++) acc += gp[d] * f[NC + c * DIM + d];
    }
    store(out, offsets, cell, b, c, acc);
#endif
}
