// Bake-off operator BP1 (mass) on bricks (the `Lattice` plan; docs/bp-gpu.md): a thread
// block owns a brick of BX x BY x BZ elements of a space numbered per brick
// (H1Space::bricked_in, ring slot order) and works on the brick's node lattice,
// NX x NY x NZ nodes (NX = BX p + 1, ...), as one tensor.
//
// Each contraction phase maps whole lines of the lattice to lines of the brick's quadrature
// lattice (XQ = BX Q points along x, ...), element after element along the line. The nodes
// that the brick's elements share are therefore gathered once, and their contributions meet
// in the registers of the thread that owns the line in the transposed phases: the brick's
// inside needs no extra shared-memory pass and no extra barrier. Only the brick's boundary
// is read through offsets and added atomically; the brick's interior nodes (the faces
// between its elements included) are contiguous per brick, their indices computed.
//
// Phases, a barrier after each of the first four (t: the thread's work item, looped over
// THREADS):
//   1 (x, y) columns: gather the z-line from global memory, contract along z   -> sZ[zq][y][x]
//   2 (x, zq):        the y-line of sZ, contract along y, in place              -> sY[zq][yq][x]
//   3 (yq, zq):       the x-line of sY, contract along x, times the weights, transposed x,
//                     back into the same line of sY
//   4 (x, zq):        the yq-line of sY, transposed y, in place                 -> sZ[zq][y][x]
//   5 (x, y) columns: the zq-line of sZ, transposed z, stored (interior) or added atomically
// Along each line the elements are taken in order, and the node one shares with the next is
// read once and its two contributions summed in a register. sZ and sY are one array (the
// host gives both the same plane pitch): phase 2 rewrites each thread's (x, zq) line in
// place, its elements last to first, and phase 4 in place going forward. Rows have the odd
// pitch LP, so that lines read across lanes (phase 3) fall in distinct banks; planes (one
// per zq) the pitch PZ = PY.
//
// Stored weights (w det J, GEO 0) in the brick's quadrature lattice, x slowest
// (lattice_geo_index in bp_common.cuh): phase 3's thread t = zq YQ + yq reads point X of its
// line at brick base + X (YQ ZQ) + t, so a warp reads consecutive addresses. WSHARED 1: the
// block's first thread starts one bulk copy of the brick's weights into shared memory at the
// block's start, and phase 3 reads them there.
//
// The boundary offsets phase 1 reads are kept in shared memory (sOff, by slot) for phase 5,
// which then reads no offsets from global memory. The brick boundary is numbered in ring
// slot order (ferrofem_space::SlotOrder::Ring), and phases 1 and 5 give thread t the column
// of rank t in that order (lattice_column): the ring of the (x, y) rectangle first, walked
// so that a warp's lanes meet each owner brick's boundary nodes consecutively at every
// level, then the inner columns. A boundary node's slot is its level's base plus its
// column's rank.
//
// The skeleton (the brick boundaries' nodes, the output's first nskel values) is zeroed by
// a fill launched just before this kernel, which starts early by programmatic dependent
// launch and waits for the fill only before its scatter.
//
// Needs (prepended by the host): the prelude, the constant matrices cBf [Q][N] and cBt
// [N][Q] with their even-odd parts, bp_common.cuh (LATTICE 1), bp_contract.cuh, bp_fill.cuh.
// -D: N, Q, BX, BY, BZ, NSKB (boundary slots per brick), THREADS, MINB, ZCHUNK, PZ, PY,
// ROLLMASK, WSHARED, LOOKAHEAD.

#if OP != 1 || GEO != 0 || !LATTICE
#error "the lattice kernel is BP1 with stored weights, LATTICE 1"
#endif
#if EPB != BX * BY * BZ
#error "a lattice block runs one brick of BX * BY * BZ elements"
#endif
#ifndef MINB
#define MINB 1
#endif
#define NX (BX * (N - 1) + 1)
#define NY (BY * (N - 1) + 1)
#define NZ (BZ * (N - 1) + 1)
#define XQ (BX * Q)
#define YQ (BY * Q)
#define ZQ (BZ * Q)
#define LP (NX % 2 ? NX : NX + 1)
// plane pitches of sZ and sY (from the host, congruent to NX modulo the banks' reals
// when chosen conflict-free, so that the (x, zq) phases' lanes fall in consecutive banks)
#ifndef PZ
#define PZ (NY * LP)
#endif
#ifndef PY
#define PY (YQ * LP)
#endif
#if PZ < NY * LP || PY < YQ * LP
#error "lattice plane pitches smaller than the planes"
#endif
#if PZ != PY
#error "one lattice array needs one plane pitch"
#endif
#define SZ_SIZE (ZQ * PZ)
#define SY_SIZE (ZQ * PY)
#define NIB ((NX - 2) * (NY - 2) * (NZ - 2))
// The loops over a line's elements unrolled (the compiler may hoist every element's loads,
// for more loads in flight and more registers) or kept as loops (one element's values live
// at a time, so tighter register caps stay free of spills), phase by phase: bit k - 1 of
// ROLLMASK keeps phase k's loop rolled, so that a phase whose unrolled form spills can be
// rolled while the others keep their loads in flight
#ifndef ROLLMASK
#define ROLLMASK 0
#endif
#if ROLLMASK < 0 || ROLLMASK > 31
#error "ROLLMASK: bits 0..4, one per phase 1..5"
#endif
#define ROLL_1 _Pragma("unroll 1")
#define ROLL_0 _Pragma("unroll")
#if ROLLMASK & 1
#define ELEMENT_LOOP1 ROLL_1
#else
#define ELEMENT_LOOP1 ROLL_0
#endif
#if ROLLMASK & 2
#define ELEMENT_LOOP2 ROLL_1
#else
#define ELEMENT_LOOP2 ROLL_0
#endif
#if ROLLMASK & 4
#define ELEMENT_LOOP3 ROLL_1
#else
#define ELEMENT_LOOP3 ROLL_0
#endif
#if ROLLMASK & 8
#define ELEMENT_LOOP4 ROLL_1
#else
#define ELEMENT_LOOP4 ROLL_0
#endif
#if ROLLMASK & 16
#define ELEMENT_LOOP5 ROLL_1
#else
#define ELEMENT_LOOP5 ROLL_0
#endif

#ifndef LOOKAHEAD
#define LOOKAHEAD 0
#endif
#ifndef WSHARED
#define WSHARED 0
#endif
#if WSHARED
static_assert((EPB * QQQ * sizeof(real)) % 16 == 0, "weights bulk-copied into shared memory need a multiple of 16 bytes per brick");
#endif
// columns on the ring of the (x, y) rectangle
#define NRING (2 * (NX + NY) - 4)

// The (x, y) column of rank r in phases 1 and 5: the ring first — x = NX - 1 upwards (y = 1 .. NY - 1), y = NY - 1 leftwards (x = NX - 2 .. 1), x = 0
// upwards, y = 0 leftwards (x = NX - 1 .. 1), then (0, 0) — and the inner columns x fastest
// (ferrofem_space::BrickLayout::columns).
__device__ __forceinline__ void lattice_column(int r, int& x, int& y) {
    if (r < NY - 1) {
        x = NX - 1;
        y = 1 + r;
        return;
    }
    r -= NY - 1;
    if (r < NX - 2) {
        x = NX - 2 - r;
        y = NY - 1;
        return;
    }
    r -= NX - 2;
    if (r < NY - 1) {
        x = 0;
        y = 1 + r;
        return;
    }
    r -= NY - 1;
    if (r < NX) {
        // (r = NX - 1: the corner (0, 0))
        x = (NX - 1 - r);
        y = 0;
        return;
    }
    r -= NX;
#if NX > 2 && NY > 2
    x = 1 + r % (NX - 2);
    y = 1 + r / (NX - 2);
#else
    x = y = 0;  // (no inner columns)
#endif
}

// Where lattice node (x, y, z) of brick g lies: on the brick's boundary, its slot (what the
// offsets [g][slot] are indexed by: its level's first slot plus its column's rank r; the z
// faces hold every column, the other levels the ring's), else its global index (interior
// nodes follow the boundary nodes, contiguous per brick). The unrolled callers' constant z
// settles the z-boundary test at compile time.
__device__ __forceinline__ u32 lattice_slot(u32 g, u32 nskel, int x, int y, int r, int z, bool& boundary) {
    const bool xin = x > 0 && x < NX - 1, yin = y > 0 && y < NY - 1;
    const bool zin = z > 0 && z < NZ - 1;
    boundary = !(xin && yin && zin);
    if (!boundary) return nskel + g * (u32)NIB + (u32)(((z - 1) * (NY - 2) + (y - 1)) * (NX - 2) + (x - 1));
    if (!zin) return (u32)((z == 0 ? 0 : NX * NY + (NZ - 2) * NRING) + r);
    return (u32)(NX * NY + (z - 1) * NRING + r);
}

// The global index of the node for the gather (phase 1): a boundary node's through the
// offsets, which it also keeps in sOff by slot for the scatter.
__device__ __forceinline__ u32 gather_index(const u32* FF_RESTRICT off, u32* sOff, u32 g, u32 nskel, int x, int y,
                                            int r, int z) {
    bool bnd;
    const u32 i = lattice_slot(g, nskel, x, y, r, z, bnd);
    if (!bnd) return i;
    const u32 o = off[(size_t)g * NSKB + i];
    sOff[i] = o;
    return o;
}

// The scatter (phase 5) of node (x, y, z)'s sum: stored (interior) or added atomically
// (boundary, through the offsets kept in sOff).
__device__ __forceinline__ void scatter(const u32* sOff, real* v, u32 g, u32 nskel, int x, int y, int r, int z,
                                        real val) {
    bool bnd;
    const u32 i = lattice_slot(g, nskel, x, y, r, z, bnd);
    if (!bnd) {
        v[i] = val;
        return;
    }
    atomicAdd(v + sOff[i], val);
}

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
bp_apply(const u32 nelem, const u32 nskel, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
         const real* FF_RESTRICT mats, const real* FF_RESTRICT u, real* FF_RESTRICT v, const real alpha) {
    extern __shared__ __align__(16) real smem[];
    real* sZ = smem;
    real* sY = smem;
    u32* sOff = (u32*)(sY + SY_SIZE);
    const u32 g = blockIdx.x;
    const int tid = threadIdx.x;
    if ((g + 1) * (u32)EPB > nelem) return;  // whole bricks only (the host checks)
#if WSHARED
    // the brick's weights in shared memory, 16-byte aligned after the offsets; the host's
    // dynamic size includes them and the alignment's slack
    __shared__ u64 wbar;
    // smem plus a byte offset (the end of the arrays above, rounded up), not a pointer
    // aligned through an integer, so that the compiler keeps the shared state space
    // (ld.shared, not generic loads)
    const size_t wend = (size_t)((const char*)(sOff + NSKB) - (const char*)smem);
    real* sW = (real*)((char*)smem + (wend + 15) / 16 * 16);
    if (tid == 0) {
        const u32 bytes = (u32)(EPB * QQQ * sizeof(real));
        bulk_barrier_init(&wbar);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(&wbar)), "r"(bytes) : "memory");
        bulk_copy_to_shared(sW, geo + (size_t)g * EPB * QQQ, bytes, &wbar);
    }
#endif
#if LOOKAHEAD
    // the boundary offsets and interior nodes of the brick LOOKAHEAD ahead,
    // whose block starts about when this one ends, asked of L2 by a second warp
    if (tid == 32 % THREADS) {
        const u32 h = g + LOOKAHEAD;
        if ((h + 1) * (u32)EPB <= nelem) {
            bulk_prefetch_l2(offsets + (size_t)h * NSKB, (size_t)NSKB * sizeof(u32));
            bulk_prefetch_l2(u + nskel + (size_t)h * NIB, (size_t)NIB * sizeof(real));
        }
    }
#endif

    {
        // 1: gather the z-columns, contract along z, element by element (the node an element
        // shares with the next one carried over, not loaded again)
#pragma unroll 1
        for (int t = tid; t < NX * NY; t += THREADS) {
            int x, y;
            lattice_column(t, x, y);
            real in[N], out[Q];
                in[0] = u[gather_index(offsets, sOff, g, nskel, x, y, t, 0)];
            ELEMENT_LOOP1
            for (int ez = 0; ez < BZ; ez++) {
#pragma unroll
                for (int i = 1; i < N; i++) in[i] = u[gather_index(offsets, sOff, g, nskel, x, y, t, ez * (N - 1) + i)];
                CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
                for (int q = 0; q < Q; q++) sZ[(ez * Q + q) * PZ + y * LP + x] = out[q];
                in[0] = in[N - 1];
            }
        }
        __syncthreads();

        // 2: contract along y (in place, the elements last to first, so that an
        // element's points overwrite only nodes that it and the later elements have read)
#pragma unroll 1
        for (int t = tid; t < NX * ZQ; t += THREADS) {
            const int x = t % NX, zq = t / NX;
            ELEMENT_LOOP2
            for (int e = 0; e < BY; e++) {
                const int ey = BY - 1 - e;
                real in[N], out[Q];
#pragma unroll
                for (int i = 0; i < N; i++) in[i] = sZ[zq * PZ + (ey * (N - 1) + i) * LP + x];
                CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
                for (int q = 0; q < Q; q++) sY[zq * PY + (ey * Q + q) * LP + x] = out[q];
            }
        }
        __syncthreads();

#if WSHARED
        // the weights' copy, started at the block's start (the barriers above made the
        // mbarrier's initialisation visible to every thread)
        bulk_wait(&wbar, 0);
#endif
        // 3: contract along x, weigh, transposed x, in place: element ex reads nodes
        // ex p .. ex p + p of the line before it writes ex p .. ex p + p - 1; the node it shares
        // with the next element is carried in a register and summed there
#if WSHARED
        const real* w = sW;
#else
        const real* w = geo + (size_t)g * (BX * BY * BZ) * QQQ;
#endif
#pragma unroll 1
        for (int t = tid; t < YQ * ZQ; t += THREADS) {
            real* row = sY + (t / YQ) * PY + (t % YQ) * LP;   // (zq, yq) = (t / YQ, t % YQ)
            real carry = 0;
            ELEMENT_LOOP3
            for (int ex = 0; ex < BX; ex++) {
                real in[N], pts[Q], out[N];
#pragma unroll
                for (int i = 0; i < N; i++) in[i] = row[ex * (N - 1) + i];
                CONTRACT(cBf, 1, N, Q, in, pts);
#pragma unroll
                for (int q = 0; q < Q; q++) pts[q] *= (w[(size_t)(ex * Q + q) * (YQ * ZQ) + t]);
                CONTRACT(cBt, 1, Q, N, pts, out);
                row[ex * (N - 1)] = out[0] + carry;
#pragma unroll
                for (int i = 1; i < N - 1; i++) row[ex * (N - 1) + i] = out[i];
                carry = out[N - 1];
            }
            row[NX - 1] = carry;
        }
        __syncthreads();

        // 4: transposed y (shared nodes carried as in 3; in place, element e's nodes
        // e p .. e p + p - 1 below the points e Q .. that the later elements still read)
#pragma unroll 1
        for (int t = tid; t < NX * ZQ; t += THREADS) {
            const int x = t % NX, zq = t / NX;
            real carry = 0;
            ELEMENT_LOOP4
            for (int ey = 0; ey < BY; ey++) {
                real in[Q], out[N];
#pragma unroll
                for (int q = 0; q < Q; q++) in[q] = sY[zq * PY + (ey * Q + q) * LP + x];
                CONTRACT(cBt, 1, Q, N, in, out);
                sZ[zq * PZ + ey * (N - 1) * LP + x] = out[0] + carry;
#pragma unroll
                for (int j = 1; j < N - 1; j++) sZ[zq * PZ + (ey * (N - 1) + j) * LP + x] = out[j];
                carry = out[N - 1];
            }
            sZ[zq * PZ + (NY - 1) * LP + x] = carry;
        }
        // the overlapped skeleton fill complete and its zeros visible
        pdl_wait();
        __syncthreads();

        // 5: transposed z (shared nodes carried), then one store (brick interior) or one atomic
        // add (brick boundary) per node
#pragma unroll 1
        for (int t = tid; t < NX * NY; t += THREADS) {
            int x, y;
            lattice_column(t, x, y);
            real carry = 0;
            ELEMENT_LOOP5
            for (int ez = 0; ez < BZ; ez++) {
                real in[Q], out[N];
#pragma unroll
                for (int q = 0; q < Q; q++) in[q] = sZ[(ez * Q + q) * PZ + y * LP + x];
                CONTRACT(cBt, 1, Q, N, in, out);
                out[0] += carry;
#pragma unroll
                for (int k = 0; k < N - 1; k++) scatter(sOff, v, g, nskel, x, y, t, ez * (N - 1) + k, out[k]);
                carry = out[N - 1];
            }
            scatter(sOff, v, g, nskel, x, y, t, NZ - 1, carry);
        }
    }
    (void)mats;
    (void)alpha;
}
