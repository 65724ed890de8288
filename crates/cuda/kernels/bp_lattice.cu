// Bake-off operator BP1 (mass), v26: a thread block owns a brick of BX x BY x BZ elements of
// a space numbered per brick (H1Space::bricked) and works on the brick's node lattice,
// NX x NY x NZ nodes (NX = BX p + 1, ...), as one tensor (see notes/gpu-bp.md, v26).
//
// Each contraction phase maps whole lines of the lattice to lines of the brick's quadrature
// lattice (XQ = BX Q points along x, ...), element after element along the line. The nodes
// that the brick's elements share are therefore gathered once, and their contributions meet
// in the registers of the thread that owns the line in the transposed phases: the brick's
// inside needs no extra shared-memory pass and no extra barrier, unlike v19's bricks built
// from per-element work regions. Only the brick's boundary is read through offsets and
// added atomically; the brick's interior nodes (the faces between its elements included)
// are contiguous per brick, their indices computed.
//
// Phases, a barrier after each of the first four (t: the thread's work item, looped over
// THREADS):
//   1 (x, y) columns: gather the z-line from global memory, contract along z   -> sZ[zq][y][x]
//   2 (x, zq):        the y-line of sZ, contract along y                        -> sY[zq][yq][x]
//   3 (yq, zq):       the x-line of sY, contract along x, times the weights, transposed x,
//                     back into the same line of sY
//   4 (x, zq):        the yq-line of sY, transposed y                           -> sZ[zq][y][x]
//   5 (x, y) columns: the zq-line of sZ, transposed z, stored (interior) or added atomically
// Along each line the elements are taken in order, and the node one shares with the next is
// read once and its two contributions summed in a register.
// v48 (ONEARR 1): sZ and sY are one array; phases 2 and 4 rewrite their lines in place.
// Rows of both arrays have the odd pitch LP, so that lines read across lanes (phase 3) fall
// in distinct banks; planes (one per zq) the pitches PZ and PY.
//
// Stored weights (w det J, GEO 0) in the brick's quadrature lattice, x slowest
// (lattice_geo_index in bp_common.cuh): phase 3's thread t = zq YQ + yq reads point X of its
// line at brick base + X (YQ ZQ) + t, so a warp reads consecutive addresses.
//
// v31: with STEPS > 1 the brick of the space's numbering is a column of STEPS bricks of
// BX x BY x BZ elements along z, and the block walks it in STEPS steps, phases 1-5 each;
// the lattice plane two steps share is gathered once (phase 1 keeps its column's top node
// in sCx for the next step) and stored once (phase 5 carries its top node's partial sum in
// sCy), so the column's boundary, not each step's, is read through offsets and added
// atomically. The weights are in each step's lattice order (lattice_geo_index with the
// step's BX, BY, BZ: a column's cells come step after step).
//
// v33: LBND 1 keeps the boundary offsets phase 1 reads in shared memory (sOff, by slot) for
// phase 5, which then reads no offsets from global memory; LBND 2 also stages the
// boundary's sums in shared memory (the free sY, by slot) and adds them after one more
// barrier in slot order, consecutive lanes on consecutive slots, so that a warp's atomics
// fall in fewer sectors than the columns' lanes put them in.
//
// RING 1 (v35): the space's brick boundary is numbered in ring slot order
// (ferrofem_space::SlotOrder::Ring), and phases 1 and 5 give thread t the column of rank t in
// that order (lattice_column): the ring of the (x, y) rectangle first, walked so that a
// warp's lanes meet each owner brick's boundary nodes consecutively at every level, then
// the inner columns. A boundary node's slot is its level's base plus its column's rank.
//
// Needs (prepended by the host): the prelude, the constant matrices cBf [Q][N] and cBt
// [N][Q] with their even-odd parts, bp_common.cuh (LATTICE 1), bp_contract.cuh, bp_fill.cuh.
// -D: N, Q, BX, BY, BZ (one step's brick), STEPS, NSKB (boundary slots per column),
// THREADS, MINB, EO, ZCHUNK, PZ, PY, ROLLMASK, ORD, LBND, SPLIT, RING, GEOPF, GEOCS,
// LOOKAHEAD, ONEARR.
// Arguments as the v2 kernel's: offsets are the brick boundaries' [brick][slot] (slots
// lexicographic among the boundary positions, x fastest, or RING's order); the output's first nskel values
// (the brick boundaries' nodes) are zeroed before the launch, or (ORD 1) in the kernel.

#if OP != 1 || GEO != 0 || !LATTICE
#error "the lattice kernel (v26) is BP1 with stored weights, LATTICE 1"
#endif
#ifndef STEPS
#define STEPS 1
#endif
#if EPB != BX * BY * BZ * STEPS
#error "a lattice block runs one column of STEPS bricks of BX * BY * BZ elements"
#endif
#ifndef MINB
#define MINB 1
#endif
#ifndef LBND
#define LBND 0
#endif
#if LBND < 0 || LBND > 2
#error "LBND: 0 (offsets from global memory), 1 (kept in shared memory), 2 (and the boundary staged)"
#endif
#if LBND == 2 && STEPS > 1
#error "the staged boundary (LBND 2) is for single-step lattice blocks"
#endif
// v34: SPLIT 1 makes every phase's work item one element of a line rather than the line;
// a line's B elements sit in consecutive lanes of one warp, and the node two of them share
// reaches the next element's lane by a shuffle in the transposed phases
#ifndef SPLIT
#define SPLIT 0
#endif
#if SPLIT && (STEPS > 1 || 32 % BX || 32 % BY || 32 % BZ)
#error "split lines (SPLIT 1) are for single-step blocks whose lines' elements divide a warp"
#endif
// ONEARR 1 (v48): sZ and sY are one array (the host gives both the same plane pitch): phase 2
// rewrites each thread's (x, zq) line in place, its elements last to first, and phase 4 in
// place going forward, so a block needs one lattice array's shared memory, not two
#ifndef ONEARR
#define ONEARR 0
#endif
#if ONEARR && (SPLIT || LBND == 2)
#error "one lattice array (ONEARR 1) is for whole lines (SPLIT 0) without the staged boundary (LBND 2)"
#endif
#define NX (BX * (N - 1) + 1)
#define NY (BY * (N - 1) + 1)
#define NZ (BZ * (N - 1) + 1)
// the column's lattice along z (NZ when STEPS is 1)
#define NZC (STEPS * BZ * (N - 1) + 1)
#define XQ (BX * Q)
#define YQ (BY * Q)
#define ZQ (BZ * Q)
#define LP (NX % 2 ? NX : NX + 1)
// plane pitches of sZ and sY (v27: from the host, congruent to NX modulo the banks' reals
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
#if ONEARR && PZ != PY
#error "one lattice array (ONEARR 1) needs one plane pitch"
#endif
#define SZ_SIZE (ZQ * PZ)
#define SY_SIZE (ZQ * PY)
#define NIB ((NX - 2) * (NY - 2) * (NZC - 2))
#if LBND == 2 && NSKB > SY_SIZE
#error "the staged boundary does not fit in sY"
#endif
// v29, v51: the loops over a line's elements unrolled (the compiler may hoist every
// element's loads, for more loads in flight and more registers) or kept as loops (one
// element's values live at a time, so tighter register caps stay free of spills), phase by
// phase: bit k - 1 of ROLLMASK keeps phase k's loop rolled (31: every phase, the host's
// `rolled_element_loops`), so that the one phase whose unrolled form spills can be rolled
// while the others keep their loads in flight
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

// ORD 1 (v30): no fill before the launch. Block g zeroes the brick-boundary nodes whose
// first brick it is (own[g] .. own[g + 1]: the space numbers them by owner brick) before
// its gather, raises flags[g] = epoch (release) after the first barrier, and before its
// scatter waits (acquire) for the flags of the lower bricks that own the rest of its
// boundary (preds[pstart[g] .. pstart[g + 1]]). Blocks are dispatched in increasing index
// order and none waits before it has published, so a waited-on block is running; a wait
// that never ends traps. The zeros are written just before the atomics that use them.
#ifndef ORD
#define ORD 0
#endif
#if ORD == 1 && STEPS > 1
#error "owner zeroing (ORD 1) is for single-step lattice blocks"
#endif
// ORD 4 (v32): the fill before the launch, this kernel launched early after it by
// programmatic dependent launch; every thread waits for the fill (griddepcontrol.wait)
// before its scatter, and only there.
#if ORD == 1
#define ORD_PARAMS , u32* flags, const u32* FF_RESTRICT own, const u32* FF_RESTRICT pstart, \
                   const u32* FF_RESTRICT preds, const u32 epoch
#define NO_PRED 0xffffffffu
#elif ORD == 0 || ORD == 4
#define ORD_PARAMS
#else
#error "the lattice kernel zeroes in the kernel by owner (ORD 1), waits for an overlapped fill (ORD 4), or neither"
#endif

#ifndef RING
#define RING 0
#endif
#ifndef LOOKAHEAD
#define LOOKAHEAD 0
#endif
// GEOCS 1 (v40): phase 3 loads the weights with the evict-first policy (GLD, bp_common.cuh).
// GEOPF 2 (v39): the block's first thread asks for the brick's (column's) weights, which
// phase 3 reads after two barriers, to be brought into L2 at the block's start (one bulk
// prefetch), so that their DRAM latency overlaps the gather and the first contractions
// GEOPF 4 (v41): the block's first thread starts one bulk copy (TMA) of the brick's weights
// into shared memory (sW, after the arrays above) at the block's start; phase 3 waits for it
// on an mbarrier and reads the weights from there, not from L2
#ifndef GEOPF
#define GEOPF 0
#endif
#if GEOPF != 0 && GEOPF != 2 && GEOPF != 4
#error "the lattice kernel prefetches its weights into L2 (GEOPF 2), copies them into shared memory (GEOPF 4), or neither"
#endif
#if GEOPF == 4 && STEPS > 1
#error "weights bulk-copied into shared memory (GEOPF 4) need single-step blocks"
#endif
#if GEOPF == 4
static_assert((EPB * QQQ * sizeof(real)) % 16 == 0, "weights bulk-copied into shared memory (GEOPF 4) need a multiple of 16 bytes per brick");
#endif
// phase 3's load of a weight: from shared memory (GEOPF 4), else from global memory
#if GEOPF == 4
#define WLOAD(x) (x)
#else
#define WLOAD(x) GLD(x)
#endif
// columns on the ring of the (x, y) rectangle
#define NRING (2 * (NX + NY) - 4)

// The (x, y) column of rank r in phases 1 and 5: x fastest (RING 0), or (RING 1) the ring
// first — x = NX - 1 upwards (y = 1 .. NY - 1), y = NY - 1 leftwards (x = NX - 2 .. 1), x = 0
// upwards, y = 0 leftwards (x = NX - 1 .. 1), then (0, 0) — and the inner columns x fastest
// (ferrofem_space::BrickLayout::columns).
__device__ __forceinline__ void lattice_column(int r, int& x, int& y) {
#if RING
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
#else
    x = r % NX;
    y = r / NX;
#endif
}

// lattice coordinates 1 .. n - 2 (the interior ones) below c
__device__ __forceinline__ int lattice_interior_below(int c, int n) {
    return c < 1 ? 0 : (c - 1 < n - 2 ? c - 1 : n - 2);
}

// Where lattice node (x, y, z0 + zl) of brick (column) g lies, z0 = s (NZ - 1) the first
// plane of step s: on the brick's boundary, its slot (its lexicographic index less the
// interior positions before it: what the offsets [g][slot] are indexed by), else its global
// index (interior nodes follow the boundary nodes, contiguous per brick). Only a step's
// first plane in the first step and its last in the last lie on the column's z-boundary,
// which the unrolled callers' constant zl settles at compile time (v31).
// RING 1: a boundary node's slot is its level's first slot plus its column's rank r (the
// z faces hold every column, the other levels the ring's).
__device__ __forceinline__ u32 lattice_slot(u32 g, u32 nskel, int x, int y, int r, int s, int zl, bool& boundary) {
    const int z = s * (NZ - 1) + zl;
    const bool xin = x > 0 && x < NX - 1, yin = y > 0 && y < NY - 1;
    const bool zin = (zl > 0 || s > 0) && (zl < NZ - 1 || s < STEPS - 1);
    boundary = !(xin && yin && zin);
    if (!boundary) return nskel + g * (u32)NIB + (u32)(((z - 1) * (NY - 2) + (y - 1)) * (NX - 2) + (x - 1));
#if RING
    if (!zin) return (u32)((z == 0 ? 0 : NX * NY + (NZC - 2) * NRING) + r);
    return (u32)(NX * NY + (z - 1) * NRING + r);
#else
    (void)r;
#endif
    const int before = (zin ? z - 1 : lattice_interior_below(z, NZC)) * (NY - 2) * (NX - 2) +
                       (zin ? lattice_interior_below(y, NY) * (NX - 2) + (yin ? lattice_interior_below(x, NX) : 0) : 0);
    return (u32)((z * NY + y) * NX + x - before);
}

// The global index of the node for the gather (phase 1): a boundary node's through the
// offsets, which LBND 1, 2 also keep in sOff by slot for the scatter.
__device__ __forceinline__ u32 gather_index(const u32* FF_RESTRICT off, u32* sOff, u32 g, u32 nskel, int x, int y,
                                            int r, int s, int zl) {
    bool bnd;
    const u32 i = lattice_slot(g, nskel, x, y, r, s, zl, bnd);
    if (!bnd) return i;
    const u32 o = off[(size_t)g * NSKB + i];
#if LBND
    sOff[i] = o;
#else
    (void)sOff;
#endif
    return o;
}

// The scatter (phase 5) of node (x, y, s, zl)'s sum: stored (interior) or added atomically
// (boundary, through the offsets in global memory or, LBND 1, in sOff); LBND 2 writes a
// boundary node's sum into stage by slot, for the flush after phase 5.
__device__ __forceinline__ void scatter(const u32* FF_RESTRICT off, const u32* sOff, real* stage, real* v, u32 g,
                                        u32 nskel, int x, int y, int r, int s, int zl, real val) {
    bool bnd;
    const u32 i = lattice_slot(g, nskel, x, y, r, s, zl, bnd);
    if (!bnd) {
        v[i] = val;
        return;
    }
#if LBND == 2
    (void)off;
    (void)sOff;
    stage[i] = val;
#elif LBND == 1
    (void)off;
    (void)stage;
    atomicAdd(v + sOff[i], val);
#else
    (void)sOff;
    (void)stage;
    atomicAdd(v + off[(size_t)g * NSKB + i], val);
#endif
}

#if SPLIT
// The phases' loops over items t0 + tid, t0 = 0, THREADS, ...: whole warps take part in each
// iteration or skip it (the shuffles need every lane); lanes past the items compute the
// last item again (valid addresses, the same values) and write nothing.
#define ITEM_LOOP(ITEMS) _Pragma("unroll 1") for (int t0 = 0; t0 < (ITEMS); t0 += THREADS)
#define ITEM_PROLOGUE(ITEMS)                      \
    if (t0 + (tid & ~31) >= (ITEMS)) continue;    \
    const bool act = t0 + tid < (ITEMS);          \
    const int t = act ? t0 + tid : (ITEMS) - 1

// The contribution of element e - 1 of the same line (the lane before) to the node it
// shares with element e; zero for a line's first element.
template <int B>
__device__ __forceinline__ real carry_from_previous_lane(real v, int e) {
    if (B == 1) return (real)0;
    const real c = __shfl_up_sync(0xffffffffu, v, 1);
    return e > 0 ? c : (real)0;
}
#endif

// Before the first atomic add into the skeleton: the other owners' zeros visible (ORD 1:
// acquire, then a barrier), or the overlapped fill's (ORD 4, at once after the first step).
// LBND 2 waits only before its flush, so the interior stores do not wait.
#if ORD == 1
#define SCATTER_WAIT()                                                                      \
    do {                                                                                    \
        if (p_mine != NO_PRED) wait_flag(flags, p_mine, epoch);                             \
        for (u32 t = pbeg + tid + THREADS; t < pend; t += THREADS) wait_flag(flags, preds[t], epoch); \
    } while (0)
#elif ORD == 4
#define SCATTER_WAIT()      \
    do {                    \
        if (s == 0) pdl_wait(); \
    } while (0)
#else
#define SCATTER_WAIT() \
    do {               \
    } while (0)
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MINB)
bp_apply(const u32 nelem, const u32 nskel, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT geo,
         const real* FF_RESTRICT mats, const real* FF_RESTRICT u, real* FF_RESTRICT v, const real alpha ORD_PARAMS) {
    extern __shared__ __align__(16) real smem[];
    real* sZ = smem;
#if ONEARR
    real* sY = smem;
#else
    real* sY = smem + SZ_SIZE;
#endif
#if STEPS > 1
    // per (x, y) column, private to the thread that owns it in phases 1 and 5: the node
    // phase 1 read last (the next step's first), the partial sum phase 5 carries
    real* sCx = sY + SY_SIZE;
    real* sCy = sCx + NX * NY;
    u32* sOff = (u32*)(sCy + NX * NY);
#else
    u32* sOff = (u32*)(sY + SY_SIZE);
#endif
    // LBND 2: the boundary's sums by slot, in sY (free after phase 4)
    real* stage = sY;
    const u32 g = blockIdx.x;
    const int tid = threadIdx.x;
    if ((g + 1) * (u32)EPB > nelem) return;  // whole bricks only (the host checks)
#if GEOPF == 4
    // the brick's weights in shared memory, 16-byte aligned after the offsets (LBND 1, 2) or
    // after sY; the host's dynamic size includes them and the alignment's slack
    __shared__ u64 wbar;
    // v44: smem plus a byte offset (the end of the arrays above, rounded up), not a pointer
    // aligned through an integer, so that the compiler keeps the shared state space
    // (ld.shared, not generic loads)
    const size_t wend = (size_t)((const char*)(sOff + (LBND ? NSKB : 0)) - (const char*)smem);
    real* sW = (real*)((char*)smem + (wend + 15) / 16 * 16);
    if (tid == 0) {
        const u32 bytes = (u32)(EPB * QQQ * sizeof(real));
        bulk_barrier_init(&wbar);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(smem_u32(&wbar)), "r"(bytes) : "memory");
        bulk_copy_to_shared(sW, geo + (size_t)g * EPB * QQQ, bytes, &wbar);
    }
#endif
#if GEOPF == 2
    // the column's weights
    if (tid == 0) bulk_prefetch_l2(geo + (size_t)g * (STEPS * BX * BY * BZ) * QQQ, (size_t)(STEPS * BX * BY * BZ) * QQQ * sizeof(real));
#endif
#if LOOKAHEAD
    // v42: the boundary offsets and interior nodes of the brick (column) LOOKAHEAD ahead,
    // whose block starts about when this one ends, asked of L2 by a second warp
    if (tid == 32 % THREADS) {
        const u32 h = g + LOOKAHEAD;
        if ((h + 1) * (u32)EPB <= nelem) {
            bulk_prefetch_l2(offsets + (size_t)h * NSKB, (size_t)NSKB * sizeof(u32));
            bulk_prefetch_l2(u + nskel + (size_t)h * NIB, (size_t)NIB * sizeof(real));
        }
    }
#endif
#if ORD == 1
    {
        const u32 z1 = own[g + 1];
        for (u32 t = own[g] + tid; t < z1; t += THREADS) v[t] = (real)0;
    }
    const u32 pbeg = pstart[g], pend = pstart[g + 1];
    const u32 p_mine = pbeg + tid < pend ? preds[pbeg + tid] : NO_PRED;
#endif

#pragma unroll 1
    for (int s = 0; s < STEPS; s++) {
#if SPLIT
        // 1 (SPLIT): one element of a z-column per item
        ITEM_LOOP(NX * NY * BZ) {
            ITEM_PROLOGUE(NX * NY * BZ);
            const int ez = t % BZ, c = t / BZ;
            int x, y;
            lattice_column(c, x, y);
            real in[N], out[Q];
#pragma unroll
            for (int i = 0; i < N; i++) in[i] = u[gather_index(offsets, sOff, g, nskel, x, y, c, s, ez * (N - 1) + i)];
            CONTRACT(cBf, 1, N, Q, in, out);
            if (act) {
#pragma unroll
                for (int q = 0; q < Q; q++) sZ[(ez * Q + q) * PZ + y * LP + x] = out[q];
            }
        }
#else
        // 1: gather the z-columns, contract along z, element by element (the node an element
        // shares with the next one carried over, not loaded again)
#pragma unroll 1
        for (int t = tid; t < NX * NY; t += THREADS) {
            int x, y;
            lattice_column(t, x, y);
            real in[N], out[Q];
#if STEPS > 1
            if (s > 0)
                in[0] = sCx[t];
            else
#endif
                in[0] = u[gather_index(offsets, sOff, g, nskel, x, y, t, s, 0)];
            ELEMENT_LOOP1
            for (int ez = 0; ez < BZ; ez++) {
#pragma unroll
                for (int i = 1; i < N; i++) in[i] = u[gather_index(offsets, sOff, g, nskel, x, y, t, s, ez * (N - 1) + i)];
                CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
                for (int q = 0; q < Q; q++) sZ[(ez * Q + q) * PZ + y * LP + x] = out[q];
                in[0] = in[N - 1];
            }
#if STEPS > 1
            sCx[t] = in[0];
#endif
        }
#endif
        __syncthreads();
#if ORD == 1
        // every thread's zero stores are before the barrier: publish them (cumulative release)
        if (tid == 0) asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(flags + g), "r"(epoch) : "memory");
#endif

#if SPLIT
        // 2 (SPLIT): one element of a y-line per item
        ITEM_LOOP(NX * ZQ * BY) {
            ITEM_PROLOGUE(NX * ZQ * BY);
            const int ey = t % BY, l = t / BY, x = l % NX, zq = l / NX;
            real in[N], out[Q];
#pragma unroll
            for (int i = 0; i < N; i++) in[i] = sZ[zq * PZ + (ey * (N - 1) + i) * LP + x];
            CONTRACT(cBf, 1, N, Q, in, out);
            if (act) {
#pragma unroll
                for (int q = 0; q < Q; q++) sY[zq * PY + (ey * Q + q) * LP + x] = out[q];
            }
        }
#else
        // 2: contract along y (ONEARR: in place, the elements last to first, so that an
        // element's points overwrite only nodes that it and the later elements have read)
#pragma unroll 1
        for (int t = tid; t < NX * ZQ; t += THREADS) {
            const int x = t % NX, zq = t / NX;
            ELEMENT_LOOP2
            for (int e = 0; e < BY; e++) {
                const int ey = ONEARR ? BY - 1 - e : e;
                real in[N], out[Q];
#pragma unroll
                for (int i = 0; i < N; i++) in[i] = sZ[zq * PZ + (ey * (N - 1) + i) * LP + x];
                CONTRACT(cBf, 1, N, Q, in, out);
#pragma unroll
                for (int q = 0; q < Q; q++) sY[zq * PY + (ey * Q + q) * LP + x] = out[q];
            }
        }
#endif
        __syncthreads();

#if GEOPF == 4
        // the weights' copy, started at the block's start (the barriers above made the
        // mbarrier's initialisation visible to every thread)
        bulk_wait(&wbar, 0);
#endif
#if SPLIT
        // 3 (SPLIT): one element of an x-line per item, in place; every lane of the warp
        // reads its nodes before any writes, and the node element ex shares with ex - 1
        // gets ex - 1's contribution from the lane before
#if GEOPF == 4
        const real* w = sW;
#else
        const real* w = geo + (size_t)g * (BX * BY * BZ) * QQQ;
#endif
        ITEM_LOOP(YQ * ZQ * BX) {
            ITEM_PROLOGUE(YQ * ZQ * BX);
            const int ex = t % BX, l = t / BX;
            real* row = sY + (l / YQ) * PY + (l % YQ) * LP;
            real in[N], pts[Q], out[N];
#pragma unroll
            for (int i = 0; i < N; i++) in[i] = row[ex * (N - 1) + i];
            CONTRACT(cBf, 1, N, Q, in, pts);
#pragma unroll
            for (int q = 0; q < Q; q++) pts[q] *= WLOAD(w[(size_t)(ex * Q + q) * (YQ * ZQ) + l]);
            CONTRACT(cBt, 1, Q, N, pts, out);
            const real cin = carry_from_previous_lane<BX>(out[N - 1], ex);
            __syncwarp();
            if (act) {
                row[ex * (N - 1)] = out[0] + cin;
#pragma unroll
                for (int i = 1; i < N - 1; i++) row[ex * (N - 1) + i] = out[i];
                if (ex == BX - 1) row[NX - 1] = out[N - 1];
            }
        }
#else
        // 3: contract along x, weigh, transposed x, in place: element ex reads nodes
        // ex p .. ex p + p of the line before it writes ex p .. ex p + p - 1; the node it shares
        // with the next element is carried in a register and summed there
#if GEOPF == 4
        const real* w = sW;
#else
        const real* w = geo + ((size_t)g * STEPS + s) * (BX * BY * BZ) * QQQ;
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
                for (int q = 0; q < Q; q++) pts[q] *= WLOAD(w[(size_t)(ex * Q + q) * (YQ * ZQ) + t]);
                CONTRACT(cBt, 1, Q, N, pts, out);
                row[ex * (N - 1)] = out[0] + carry;
#pragma unroll
                for (int i = 1; i < N - 1; i++) row[ex * (N - 1) + i] = out[i];
                carry = out[N - 1];
            }
            row[NX - 1] = carry;
        }
#endif
        __syncthreads();

#if SPLIT
        // 4 (SPLIT): one element of a y-line per item, the shared node's carry from the lane
        // before
        ITEM_LOOP(NX * ZQ * BY) {
            ITEM_PROLOGUE(NX * ZQ * BY);
            const int ey = t % BY, l = t / BY, x = l % NX, zq = l / NX;
            real in[Q], out[N];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = sY[zq * PY + (ey * Q + q) * LP + x];
            CONTRACT(cBt, 1, Q, N, in, out);
            const real cin = carry_from_previous_lane<BY>(out[N - 1], ey);
            if (act) {
                sZ[zq * PZ + ey * (N - 1) * LP + x] = out[0] + cin;
#pragma unroll
                for (int j = 1; j < N - 1; j++) sZ[zq * PZ + (ey * (N - 1) + j) * LP + x] = out[j];
                if (ey == BY - 1) sZ[zq * PZ + (NY - 1) * LP + x] = out[N - 1];
            }
        }
#else
        // 4: transposed y (shared nodes carried as in 3; ONEARR: in place, element e's nodes
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
#endif
#if LBND != 2
        SCATTER_WAIT();
#endif
        __syncthreads();

#if SPLIT
        // 5 (SPLIT): one element of a z-column per item, the shared node's carry from the
        // lane before, then one store or atomic add per node
        ITEM_LOOP(NX * NY * BZ) {
            ITEM_PROLOGUE(NX * NY * BZ);
            const int ez = t % BZ, c = t / BZ;
            int x, y;
            lattice_column(c, x, y);
            real in[Q], out[N];
#pragma unroll
            for (int q = 0; q < Q; q++) in[q] = sZ[(ez * Q + q) * PZ + y * LP + x];
            CONTRACT(cBt, 1, Q, N, in, out);
            const real cin = carry_from_previous_lane<BZ>(out[N - 1], ez);
            if (act) {
                out[0] += cin;
#pragma unroll
                for (int k = 0; k < N - 1; k++) scatter(offsets, sOff, stage, v, g, nskel, x, y, c, s, ez * (N - 1) + k, out[k]);
                if (ez == BZ - 1) scatter(offsets, sOff, stage, v, g, nskel, x, y, c, s, NZ - 1, out[N - 1]);
            }
        }
#else
        // 5: transposed z (shared nodes carried), then one store (brick interior) or one atomic
        // add (brick boundary) per node
#pragma unroll 1
        for (int t = tid; t < NX * NY; t += THREADS) {
            int x, y;
            lattice_column(t, x, y);
            real carry = 0;
#if STEPS > 1
            if (s > 0) carry = sCy[t];
#endif
            ELEMENT_LOOP5
            for (int ez = 0; ez < BZ; ez++) {
                real in[Q], out[N];
#pragma unroll
                for (int q = 0; q < Q; q++) in[q] = sZ[(ez * Q + q) * PZ + y * LP + x];
                CONTRACT(cBt, 1, Q, N, in, out);
                out[0] += carry;
#pragma unroll
                for (int k = 0; k < N - 1; k++) scatter(offsets, sOff, stage, v, g, nskel, x, y, t, s, ez * (N - 1) + k, out[k]);
                carry = out[N - 1];
            }
#if STEPS > 1
            if (s < STEPS - 1) {
                sCy[t] = carry;
                continue;
            }
#endif
            scatter(offsets, sOff, stage, v, g, nskel, x, y, t, STEPS - 1, NZ - 1, carry);
        }
#endif
#if LBND == 2
        // the staged boundary, in slot order
        SCATTER_WAIT();
        __syncthreads();
        for (int i = tid; i < NSKB; i += THREADS) atomicAdd(v + sOff[i], stage[i]);
#endif
#if STEPS > 1
        // the next step's phase 1 writes sZ, which this phase read
        if (s < STEPS - 1) __syncthreads();
#endif
    }  // steps
    (void)mats;
    (void)alpha;
}
