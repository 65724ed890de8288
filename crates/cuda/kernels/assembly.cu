// Element matrices of a pointwise weak form on affine simplices, quadrilaterals and
// hexahedra, and their global CSR assembly (Cecka, Lew & Darve 2011):
//
//   K_e[ci*NB + i][cj*NB + j] = sum_q  phi_i G0 phi_j + phi_i G1.dphi_j + dphi_i.G2 phi_j
//                                     + dphi_i.G3.dphi_j
//
// with reference gradients dphi and the physics' g0..g3 at point q pulled back to the
// reference cell and weighted (G1_k = w detJ sum_l g1_l Jinv_kl, G3_kk' = w detJ
// sum_ll' Jinv_kl g3_ll' Jinv_k'l', ...).
//
// A block takes NCB cells at a time. In the point phase each thread owns (cell, point)
// items: geometry from the cell's vertices, the state u and auxiliary field at the point,
// the physics' g0..g3, and the pulled-back blocks into shared memory. After one barrier each
// thread owns (cell, row, column) entries and sums over the points; consecutive threads
// hold consecutive entries of one element matrix, so the slot-map reads and element-matrix
// writes are coalesced. On tensor cells (SUMFAC) the points are summed one direction at a
// time instead (sumfac_matrices).
//
// OUT: 0 element data [cell][STRIDE] (matrix row-major, the by-nonzero gather's input);
//      1 atomicAdd into the CSR values through the element -> nonzero map targets[cell][n*n];
//      2 the same without atomics, over the cells of one colour (no two share a node);
//      3 one thread per matrix row (kernel `row_matrices`): the row's entries accumulated
//        in the thread's own array (MAXROW entries) from the rows of the element matrices
//        of the node's elements, each recomputed in registers (no element data in memory,
//        no atomics; every CSR value written once);
//      4 sums in shared memory (kernel `shared_sums`): a block computes a set of elements
//        (at most EMAX) into shared memory, then one thread per nonzero they add to sums
//        its entries there through u16 lists and adds the sum to CSR once. SharedNZ: the
//        elements adjacent to a compact set of rows (an element next to several sets is
//        computed for each), every nonzero of the rows stored, no atomics. Block sums: a
//        partition of the elements into compact sets, an atomic only for the nonzeros
//        that other sets add to as well.
// Entries whose target is NO_TARGET (an eliminated Dirichlet row or column) are dropped.
// NONLIN: 1 linearise about the L-vector u (u and du at the points), 0 about zero.
// AUX: 0 none; 1 nodal in the scalar space (aux[node]: value and gradient at the points);
//      2 per cell (aux[cell]).
// NEED_X: the physics reads the physical point.
// TENSOR: quadrilaterals or hexahedra (Q_p, nodes lexicographic, P1D per direction): the Q1
//      map through the corner nodes at every point (tensor.cuh); 0: affine simplices, the
//      geometry from the vertex nodes (simplex.cuh).
// CONST_G: the pulled-back blocks are the same at every point but for the weight (the
//      physics reads neither x, u nor a nodal field, and the cells are affine), so they are
//      computed once per cell without the weight (NPT = 1 "point") and the matrix is their
//      contraction with the reference tables cS0[i][j] = sum_q w_q phi_i phi_j,
//      cS1[l][i][j] = sum_q w_q phi_i dphi_j,l, cS2[k][i][j] = sum_q w_q dphi_i,k phi_j,
//      cS3[k][l][i][j] = sum_q w_q dphi_i,k dphi_j,l (the tables of the present terms):
//      NGQ products per entry instead of NGQ per point.
// SUMFAC: tensor cells with a tensor rule of Q1D points per direction: the matrix phase by
//      sum factorisation (sumfac_matrices), with the pair tables cE of the 1-D basis.
// bad[0]: the complement of the lowest cell whose matrix has a non-finite entry; bad[1]: that
// of the lowest cell with det J <= 0 (inverted or degenerate); 0 when none (so that zeroing
// the two resets them).
// Needs (host-prepended): prelude, simplex.cuh, with TENSOR tensor.cuh and its table cGeo,
// physics source (ff_g0..ff_g3), the tables
// cTab[(q*NB + b)*(DIM+1)] = phi_b(x_q) then its DIM reference derivatives, cWq[NQ], with
// NEED_X the reference points cXq[NQ*DIM], and with CONST_G the reference tables cS0..cS3
// of the present terms.

#ifndef CONST_G
#define CONST_G 0
#endif
#ifndef SUMFAC
#define SUMFAC 0
#endif
#if CONST_G
#define NPT 1
#else
#define NPT NQ
#endif
#define N (NB * NC)
#define NN (N * N)
#define NO_TARGET 0xffffffffu
#define OFF_G0 0
#define OFF_G1 (OFF_G0 + HAS_G0 * NC * NC)
#define OFF_G2 (OFF_G1 + HAS_G1 * NC * NC * DIM)
#define OFF_G3 (OFF_G2 + HAS_G2 * NC * NC * DIM)
#define NGQ (OFF_G3 + HAS_G3 * NC * NC * DIM * DIM)
// shared memory of one cell of a batch, in reals: its point blocks and, with SUMFAC, the
// partial sums of sumfac_matrices
#if SUMFAC
#define SUMFAC_REALS (4 * SF_PR * Q1D + (DIM == 3) * NTERMS * P1D * P1D * Q1D * Q1D)
#if DIM == 3
#define SF_PR (P1D * P1D * P1D * P1D)
#else
#define SF_PR (P1D * P1D)
#endif
#else
#define SUMFAC_REALS 0
#endif
#define CELL_REALS (NPT * NGQ + SUMFAC_REALS)
// the terms of the form (value or reference derivative on each side)
#define NTERMS (HAS_G0 + DIM * HAS_G1 + DIM * HAS_G2 + DIM * DIM * HAS_G3)

__device__ __forceinline__ u32 launch_cell(u32 k, u32 cell0, const u32* FF_RESTRICT cells) {
    return cells ? cells[cell0 + k] : cell0 + k;
}

// The pulled-back, weighted blocks of point q of `cell` into G[NGQ]
__device__ __forceinline__ void point_blocks(u32 cell, int q, const u32* FF_RESTRICT offsets,
                                             const real* FF_RESTRICT coords, const real* FF_RESTRICT uvec,
                                             const real* FF_RESTRICT aux, u32* bad, real* G) {
    real g[DIM * DIM + 1];
#if TENSOR
    real xv[NV * DIM];
    cell_corners(cell, offsets, coords, xv);
    geometry_at_point(xv, q, g);
#else
    real xv[(DIM + 1) * DIM];
    cell_vertices(cell, offsets, coords, xv);
    geometry_from_vertices(xv, g);
#endif
    const real det = g[DIM * DIM];
    if (!(det > (real)0)) atomicMax(bad + 1, ~cell);
#if CONST_G
    (void)q;
    const real w = det;
#else
    const real w = cWq[q] * det;
#endif
    real u[NC], du[NC * DIM];
#pragma unroll
    for (int c = 0; c < NC; c++) {
        u[c] = 0;
#pragma unroll
        for (int l = 0; l < DIM; l++) du[c * DIM + l] = 0;
    }
    real a[1] = {0};
    real da[DIM];
#pragma unroll
    for (int l = 0; l < DIM; l++) da[l] = 0;
#if NONLIN || AUX == 1
    for (int b = 0; b < NB; b++) {
        const real* t = cTab + (q * NB + b) * (DIM + 1);
        real gp[DIM];
#pragma unroll
        for (int l = 0; l < DIM; l++) {
            real s = 0;
#pragma unroll
            for (int k = 0; k < DIM; k++) s += t[1 + k] * g[k * DIM + l];
            gp[l] = s;
        }
        const u32 node = offsets[(size_t)cell * NB + b];
#if NONLIN
#pragma unroll
        for (int c = 0; c < NC; c++) {
            const real ub = uvec[(size_t)node * NC + c];
            u[c] += t[0] * ub;
#pragma unroll
            for (int l = 0; l < DIM; l++) du[c * DIM + l] += gp[l] * ub;
        }
#endif
#if AUX == 1
        const real ab = aux[node];
        a[0] += t[0] * ab;
#pragma unroll
        for (int l = 0; l < DIM; l++) da[l] += gp[l] * ab;
#endif
    }
#endif
#if AUX == 2
    a[0] = aux[cell];
#endif
    (void)uvec;
    (void)aux;
#if NEED_X && TENSOR
    real x[DIM];
    mapped_point(xv, q, x);
#elif NEED_X
    real x[DIM];
    affine_point(cXq + q * DIM, xv, x);
#else
    const real x[3] = {0, 0, 0};
#endif
#if HAS_G0
    {
        real g0[NC * NC];
        ff_g0(x, u, du, a, da, g0);
#pragma unroll
        for (int b = 0; b < NC * NC; b++) G[OFF_G0 + b] = w * g0[b];
    }
#endif
#if HAS_G1
    {
        real g1[NC * NC * DIM];
        ff_g1(x, u, du, a, da, g1);
#pragma unroll
        for (int b = 0; b < NC * NC; b++)
#pragma unroll
            for (int k = 0; k < DIM; k++) {
                real s = 0;
#pragma unroll
                for (int l = 0; l < DIM; l++) s += g1[b * DIM + l] * g[k * DIM + l];
                G[OFF_G1 + b * DIM + k] = w * s;
            }
    }
#endif
#if HAS_G2
    {
        real g2[NC * NC * DIM];
        ff_g2(x, u, du, a, da, g2);
#pragma unroll
        for (int b = 0; b < NC * NC; b++)
#pragma unroll
            for (int k = 0; k < DIM; k++) {
                real s = 0;
#pragma unroll
                for (int l = 0; l < DIM; l++) s += g[k * DIM + l] * g2[b * DIM + l];
                G[OFF_G2 + b * DIM + k] = w * s;
            }
    }
#endif
#if HAS_G3
    {
        real g3[NC * NC * DIM * DIM];
        ff_g3(x, u, du, a, da, g3);
#pragma unroll
        for (int b = 0; b < NC * NC; b++) {
            // T = g3 Jinv^T, then G3 = Jinv T
            real t[DIM * DIM];
#pragma unroll
            for (int l = 0; l < DIM; l++)
#pragma unroll
                for (int k2 = 0; k2 < DIM; k2++) {
                    real s = 0;
#pragma unroll
                    for (int l2 = 0; l2 < DIM; l2++) s += g3[(b * DIM + l) * DIM + l2] * g[k2 * DIM + l2];
                    t[l * DIM + k2] = s;
                }
#pragma unroll
            for (int k = 0; k < DIM; k++)
#pragma unroll
                for (int k2 = 0; k2 < DIM; k2++) {
                    real s = 0;
#pragma unroll
                    for (int l = 0; l < DIM; l++) s += g[k * DIM + l] * t[l * DIM + k2];
                    G[OFF_G3 + (b * DIM + k) * DIM + k2] = w * s;
                }
        }
    }
#endif
}

// One point's contribution to an entry of component block blk: the table rows ti, tj of its
// row and column functions (value, then the DIM reference derivatives) and the point's
// pulled-back blocks Gq
__device__ __forceinline__ real point_term(const real* ti, const real* tj, const real* Gq, int blk) {
    real v = 0;
    (void)ti; (void)tj; (void)Gq; (void)blk;
#if HAS_G0
    v += ti[0] * Gq[OFF_G0 + blk] * tj[0];
#endif
#if HAS_G1
#pragma unroll
    for (int l = 0; l < DIM; l++) v += ti[0] * Gq[OFF_G1 + blk * DIM + l] * tj[1 + l];
#endif
#if HAS_G2
#pragma unroll
    for (int k = 0; k < DIM; k++) v += ti[1 + k] * Gq[OFF_G2 + blk * DIM + k] * tj[0];
#endif
#if HAS_G3
#pragma unroll
    for (int k = 0; k < DIM; k++) {
        real s2 = 0;
#pragma unroll
        for (int l = 0; l < DIM; l++) s2 += Gq[OFF_G3 + (blk * DIM + k) * DIM + l] * tj[1 + l];
        v += ti[1 + k] * s2;
    }
#endif
    return v;
}

// Entry (r, s) of the element matrix whose pulled-back blocks are G[NPT][NGQ]
__device__ __forceinline__ real matrix_entry(int r, int s, const real* G) {
    const int ci = r / NB, i = r - ci * NB;
    const int cj = s / NB, j = s - cj * NB;
    const int b = ci * NC + cj;
    real acc = 0;
#if CONST_G
    const int ij = i * NB + j;
    (void)b; (void)ij;
#if HAS_G0
    acc += G[OFF_G0 + b] * cS0[ij];
#endif
#if HAS_G1
#pragma unroll
    for (int l = 0; l < DIM; l++) acc += G[OFF_G1 + b * DIM + l] * cS1[l * NB * NB + ij];
#endif
#if HAS_G2
#pragma unroll
    for (int k = 0; k < DIM; k++) acc += G[OFF_G2 + b * DIM + k] * cS2[k * NB * NB + ij];
#endif
#if HAS_G3
#pragma unroll
    for (int kl = 0; kl < DIM * DIM; kl++) acc += G[OFF_G3 + b * DIM * DIM + kl] * cS3[kl * NB * NB + ij];
#endif
#else
    for (int q = 0; q < NQ; q++)
        acc += point_term(cTab + (q * NB + i) * (DIM + 1), cTab + (q * NB + j) * (DIM + 1), G + q * NGQ, b);
#endif
    return acc;
}

// Entry e (row-major) of the matrix of `cell` (the `slot`-th of the launch or block) to its
// destination: element data, shared memory, or CSR through the element -> nonzero map
__device__ __forceinline__ void store_entry(u32 cell, u32 slot, u32 e, real v, const u32* FF_RESTRICT targets,
                                            real* out, u32* bad) {
    if (!isfinite(v)) atomicMax(bad, ~cell);
#if OUT == 0
    (void)targets; (void)slot;
    out[(size_t)cell * STRIDE + e] = v;
#elif OUT == 4
    (void)targets; (void)cell;
    out[(size_t)slot * NN + e] = v;
#else
    (void)slot;
    const u32 k = targets[(size_t)cell * NN + e];
    if (k != NO_TARGET) {
#if OUT == 1
        atomicAdd(out + k, v);
#else
        out[k] += v;
#endif
    }
#endif
}

#if SUMFAC
// Sum factorisation of the element matrix on quadrilaterals and hexahedra. With the tensor
// rule's Q1D points per direction and the P1D-node 1-D basis (values B, derivatives D), a
// term (al, be) of the form (al, be = 0: the value, 1 + k: reference derivative k) is
//   K_t[i][j] = sum_q C_t(q) prod_m X_m[i_m][q_m] Y_m[j_m][q_m],
// X_m = D where al = 1 + m, else B (Y_m likewise with be). The pair tables
// cE[tau][i_m * P1D + j_m][q_m] = X[i_m][q_m] Y[j_m][q_m] (tau = 2 (X = D) + (Y = D)) carry
// one direction each, and the points are summed one direction at a time instead of every
// point for every entry: O(P^2d Q) work per term rather than O(P^2d Q^d). The order is
// direction 2 (3-D), then 0, then 1: the last sum's threads each own the index pairs of
// directions 0 and 2, so consecutive threads hold consecutive columns (x-neighbours) of a
// row and a warp's stores hit adjacent CSR values. Terms of the same tau in direction 1 are
// added before the last sum (PRESENT: the bit mask of the taus that occur in a direction,
// the same for every direction), which leaves at most four products per point there.
#define P2 (P1D * P1D)
#define PR SF_PR

// The offset of term (al, be) of component block blk in a point's blocks (-1: absent)
__device__ __forceinline__ int term_offset(int al, int be, int blk) {
    if (al == 0 && be == 0) return HAS_G0 ? OFF_G0 + blk : -1;
    if (al == 0) return HAS_G1 ? OFF_G1 + blk * DIM + be - 1 : -1;
    if (be == 0) return HAS_G2 ? OFF_G2 + blk * DIM + al - 1 : -1;
    return HAS_G3 ? OFF_G3 + (blk * DIM + al - 1) * DIM + be - 1 : -1;
}

__device__ __forceinline__ bool term_present(int al, int be) {
    if (al == 0 && be == 0) return HAS_G0;
    if (al == 0) return HAS_G1;
    if (be == 0) return HAS_G2;
    return HAS_G3;
}

// The pair-table kind of term (al, be) in direction m
__device__ __forceinline__ int term_tau(int al, int be, int m) { return 2 * (al == m + 1) + (be == m + 1); }

// The compact index of term (al, be) among the present ones (a compile-time constant once
// the loops over the terms are unrolled)
__device__ __forceinline__ int term_index(int al, int be) {
    int k = 0;
#pragma unroll
    for (int s = 0; s < al * (DIM + 1) + be; s++) k += term_present(s / (DIM + 1), s % (DIM + 1));
    return k;
}

// One direction's sum for every index pair: acc[i j] += sum_q cE[tau][i j][q] c[q]
__device__ __forceinline__ void add_pairs(real* acc, int tau, const real* c) {
#pragma unroll
    for (int ij = 0; ij < P2; ij++)
#pragma unroll
        for (int q = 0; q < Q1D; q++) acc[ij] += cE[(tau * P2 + ij) * Q1D + q] * c[q];
}

// A thread's first item of a segment that starts at item `base` of its phase: a phase's items
// are dealt to the block's threads in turn across its segments (one per term or tau)
__device__ __forceinline__ u32 first_item(u32 base) { return (threadIdx.x + NT - base % NT) % NT; }

// The element matrices of the batch's `here` cells from their point blocks sG[NCB][NQ][NGQ],
// each entry to store_entry. sT: [NCB][4][PR][Q1D] (the sums over all directions but 1, by
// tau of direction 1); sS (3-D): [NCB][NTERMS][P2][Q1D * Q1D] (each term summed over
// direction 2). Every term is in flight at once in each phase, so that a phase has work for
// the whole block even at one cell per block.
__device__ __forceinline__ void sumfac_matrices(u32 first, u32 here, u32 cell0, const u32* FF_RESTRICT cells,
                                                const u32* FF_RESTRICT targets, real* out, u32* bad, const real* sG,
                                                real* sT, real* sS) {
    (void)sS;
    for (int blk = 0; blk < NC * NC; blk++) {
#if DIM == 3
        // direction 2: sS[lc][term][i2 j2][q0 + Q q1]
        {
            const u32 m = here * Q1D * Q1D;
#pragma unroll
            for (int al = 0; al <= DIM; al++)
#pragma unroll
                for (int be = 0; be <= DIM; be++) {
                    if (!term_present(al, be)) continue;
                    const int tt = term_index(al, be), off = term_offset(al, be, blk);
                    for (u32 t = first_item(tt * m); t < m; t += NT) {
                        const u32 lc = t / (Q1D * Q1D), qq = t - lc * (Q1D * Q1D);
                        const real* g = sG + ((size_t)lc * NQ + qq) * NGQ + off;
                        real c[Q1D], acc[P2];
#pragma unroll
                        for (int q = 0; q < Q1D; q++) c[q] = g[q * Q1D * Q1D * NGQ];
#pragma unroll
                        for (int ij = 0; ij < P2; ij++) acc[ij] = 0;
                        add_pairs(acc, term_tau(al, be, 2), c);
                        real* o = sS + ((size_t)lc * NTERMS + tt) * P2 * Q1D * Q1D + qq;
#pragma unroll
                        for (int ij = 0; ij < P2; ij++) o[ij * Q1D * Q1D] = acc[ij];
                    }
                }
        }
        __syncthreads();
#endif
        // direction 0, the terms of each tau of direction 1 added:
        // sT[lc][t1][i0 j0 + P2 (i2 j2)][q1] (i2 j2 = 0 in 2-D), from sS in 3-D and from the
        // point blocks in 2-D
        {
            const u32 per = PR / P2 * Q1D, m = here * per;
#pragma unroll
            for (int t1 = 0; t1 < 4; t1++) {
                if (!((PRESENT >> t1) & 1)) continue;
                for (u32 t = first_item(t1 * m); t < m; t += NT) {
                    const u32 lc = t / per, w = t - lc * per;
                    const u32 ij2 = w / Q1D, q1 = w - ij2 * Q1D;
                    real acc[P2];
#pragma unroll
                    for (int ij = 0; ij < P2; ij++) acc[ij] = 0;
#pragma unroll
                    for (int al = 0; al <= DIM; al++)
#pragma unroll
                        for (int be = 0; be <= DIM; be++) {
                            if (!term_present(al, be) || term_tau(al, be, 1) != t1) continue;
#if DIM == 3
                            const real* s =
                                sS + (((size_t)lc * NTERMS + term_index(al, be)) * P2 + ij2) * Q1D * Q1D + Q1D * q1;
                            const int stride = 1;
#else
                            const real* s = sG + ((size_t)lc * NQ + Q1D * q1) * NGQ + term_offset(al, be, blk);
                            const int stride = NGQ;
#endif
                            real c[Q1D];
#pragma unroll
                            for (int q = 0; q < Q1D; q++) c[q] = s[q * stride];
                            add_pairs(acc, term_tau(al, be, 0), c);
                        }
                    real* o = sT + (((size_t)lc * 4 + t1) * PR + P2 * ij2) * Q1D + q1;
#pragma unroll
                    for (int ij = 0; ij < P2; ij++) o[ij * Q1D] = acc[ij];
                }
            }
        }
        __syncthreads();
        // direction 1 and the entries: one thread per (cell, rest of the indices)
        const int ci = blk / NC, cj = blk - ci * NC;
        for (u32 t = threadIdx.x; t < here * PR; t += NT) {
            const u32 lc = t / PR, rest = t - lc * PR;
            real v[4][Q1D];
#pragma unroll
            for (int k = 0; k < 4; k++)
#pragma unroll
                for (int q = 0; q < Q1D; q++)
                    v[k][q] = (PRESENT >> k) & 1 ? sT[(((size_t)lc * 4 + k) * PR + rest) * Q1D + q] : (real)0;
            // rest = (i0 P1D + j0) + P2 (i2 P1D + j2) in 3-D, i0 P1D + j0 in 2-D
            const u32 r0 = rest % P2, ri = r0 / P1D, rj = r0 - ri * P1D;
            u32 ibase = ri, jbase = rj;
#if DIM == 3
            const u32 r2 = rest / P2, si = r2 / P1D, sj = r2 - si * P1D;
            ibase += si * P2;
            jbase += sj * P2;
#endif
            const u32 cell = launch_cell(first + lc, cell0, cells);
#pragma unroll
            for (int i1 = 0; i1 < P1D; i1++)
#pragma unroll
                for (int j1 = 0; j1 < P1D; j1++) {
                    real acc = 0;
#pragma unroll
                    for (int k = 0; k < 4; k++)
                        if ((PRESENT >> k) & 1)
#pragma unroll
                            for (int q = 0; q < Q1D; q++) acc += cE[(k * P2 + i1 * P1D + j1) * Q1D + q] * v[k][q];
                    const u32 e = (ci * NB + ibase + P1D * i1) * N + cj * NB + jbase + P1D * j1;
                    store_entry(cell, first + lc, e, acc, targets, out, bad);
                }
        }
        __syncthreads();
    }
}
#endif

// The element matrices of cells[0..ncells) (or cell0 + k) into out: through the element ->
// nonzero map (OUT 1, 2), as element data (OUT 0) or, for SharedNZ, into shared memory at
// [k][NN] (OUT 4). sG: the block's shared point blocks [NCB][NPT][NGQ], then with SUMFAC
// the partial sums (NCB * CELL_REALS reals in all).
__device__ __forceinline__ void element_batch(u32 first, u32 here, u32 cell0, const u32* FF_RESTRICT cells,
                                              const u32* FF_RESTRICT offsets, const real* FF_RESTRICT coords,
                                              const real* FF_RESTRICT uvec, const real* FF_RESTRICT aux,
                                              const u32* FF_RESTRICT targets, real* out, u32* bad, real* sG) {
    for (u32 t = threadIdx.x; t < here * NPT; t += NT) {
        const u32 lc = t / NPT, q = t - lc * NPT;
        const u32 cell = launch_cell(first + lc, cell0, cells);
        point_blocks(cell, q, offsets, coords, uvec, aux, bad, sG + (lc * NPT + q) * NGQ);
    }
    __syncthreads();
#if SUMFAC
    real* sT = sG + NCB * NPT * NGQ;
    sumfac_matrices(first, here, cell0, cells, targets, out, bad, sG, sT, sT + NCB * 4 * PR * Q1D);
#else
    for (u32 t = threadIdx.x; t < here * NN; t += NT) {
        const u32 lc = t / NN, e = t - lc * NN;
        const u32 r = e / N, s = e - r * N;
        const u32 cell = launch_cell(first + lc, cell0, cells);
        store_entry(cell, first + lc, e, matrix_entry(r, s, sG + lc * NPT * NGQ), targets, out, bad);
    }
#endif
    __syncthreads();
}

#if OUT <= 2
// ncells cells of this launch: cells[cell0 + k] (or cell0 + k when cells is null)
extern "C" __global__ void __launch_bounds__(NT)
element_matrices(u32 ncells, u32 cell0, const u32* FF_RESTRICT cells, const u32* FF_RESTRICT offsets,
                 const real* FF_RESTRICT coords, const real* FF_RESTRICT uvec, const real* FF_RESTRICT aux,
                 const u32* FF_RESTRICT targets, real* out, u32* bad) {
    extern __shared__ unsigned char smem_raw[];
    real* sG = reinterpret_cast<real*>(smem_raw);  // NCB * CELL_REALS: point blocks, partial sums
    for (u32 first = blockIdx.x * NCB; first < ncells; first += gridDim.x * NCB) {
        const u32 here = min((u32)NCB, ncells - first);
        element_batch(first, here, cell0, cells, offsets, coords, uvec, aux, targets, out, bad, sG);
    }
}

#elif OUT == 3
// Matrix row `row` (full dof rowdof[row], or `row` when rowdof is null) of node m =
// dof / NC, component ci = dof % NC: for every element position pos = e * NB + i of the
// node (node_ptr/node_pos, the restriction's transpose), row ci * NB + i of element e's
// matrix, added at the in-row positions targets[e][ci * NB + i][*] - row_ptr[row].
extern "C" __global__ void __launch_bounds__(NT)
row_matrices(u32 nrows, const u32* FF_RESTRICT rowdof, const unsigned long long* FF_RESTRICT row_ptr,
             const u32* FF_RESTRICT node_ptr, const u32* FF_RESTRICT node_pos, const u32* FF_RESTRICT offsets,
             const real* FF_RESTRICT coords, const real* FF_RESTRICT uvec, const real* FF_RESTRICT aux,
             const u32* FF_RESTRICT targets, real* FF_RESTRICT values, u32* bad) {
    for (u32 row = blockIdx.x * NT + threadIdx.x; row < nrows; row += gridDim.x * NT) {
        const u32 dof = rowdof ? rowdof[row] : row;
        const u32 m = dof / NC, ci = dof - m * NC;
        const unsigned long long a = row_ptr[row];
        const u32 len = (u32)(row_ptr[row + 1] - a);
        real acc[MAXROW];
        for (u32 t = 0; t < len; t++) acc[t] = 0;
        const u32 z = node_ptr[m + 1];
        for (u32 p = node_ptr[m]; p < z; p++) {
            const u32 pos = node_pos[p];
            const u32 e = pos / NB, r = ci * NB + (pos - e * NB);
            real G[NPT * NGQ];
            for (int q = 0; q < NPT; q++) point_blocks(e, q, offsets, coords, uvec, aux, bad, G + q * NGQ);
            const u32* tg = targets + ((size_t)e * N + r) * N;
            for (u32 s = 0; s < N; s++) {
                const u32 k = tg[s];
                const real v = matrix_entry(r, s, G);
                if (!isfinite(v)) atomicMax(bad, ~e);
                if (k != NO_TARGET) acc[k - a] += v;
            }
        }
        for (u32 t = 0; t < len; t++) values[a + t] = acc[t];
    }
}
#else
// Sums in shared memory (SharedNZ and block sums): block b's elements
// elems[eptr[b]..eptr[b+1]) (at most EMAX) computed into shared memory, then for each of
// its nonzeros t in zptr[b]..zptr[b+1] the shared entries lists[lptr[t]..lptr[t+1]] (local
// element * NN + entry) summed and added to CSR value nzs[t] & ~ONLY_HERE: stored when
// ONLY_HERE is set (no other block adds to it), added atomically otherwise.
#define ONLY_HERE 0x80000000u
extern "C" __global__ void __launch_bounds__(NT)
shared_sums(u32 nblocks, const u32* FF_RESTRICT eptr, const u32* FF_RESTRICT elems,
            const u32* FF_RESTRICT zptr, const u32* FF_RESTRICT nzs, const u32* FF_RESTRICT lptr,
            const unsigned short* FF_RESTRICT lists, const u32* FF_RESTRICT offsets,
            const real* FF_RESTRICT coords, const real* FF_RESTRICT uvec, const real* FF_RESTRICT aux,
            real* FF_RESTRICT values, u32* bad) {
    extern __shared__ unsigned char smem_raw[];
    real* sG = reinterpret_cast<real*>(smem_raw);  // NCB * CELL_REALS: point blocks, partial sums
    real* sK = sG + NCB * CELL_REALS;              // [EMAX][NN]
    for (u32 b = blockIdx.x; b < nblocks; b += gridDim.x) {
        const u32 e0 = eptr[b], ne = eptr[b + 1] - e0;
        for (u32 first = 0; first < ne; first += NCB) {
            const u32 here = min((u32)NCB, ne - first);
            element_batch(first, here, 0, elems + e0, offsets, coords, uvec, aux, nullptr, sK, bad, sG);
        }
        const u32 z1 = zptr[b + 1];
        for (u32 t = zptr[b] + threadIdx.x; t < z1; t += NT) {
            const u32 k = nzs[t];
            real acc = 0;
            const u32 pz = lptr[t + 1];
            for (u32 p = lptr[t]; p < pz; p++) acc += sK[lists[p]];
            if (k & ONLY_HERE)
                values[k & ~ONLY_HERE] = acc;
            else
                atomicAdd(values + k, acc);
        }
        __syncthreads();
    }
}
#endif

// One thread per nonzero k: the sum of its element entries data[src[ptr[k]..ptr[k+1]]]
extern "C" __global__ void __launch_bounds__(256)
gather_nonzeros(u32 nnz, const u32* FF_RESTRICT ptr, const u32* FF_RESTRICT src,
                const real* FF_RESTRICT data, real* FF_RESTRICT values) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < nnz; k += gridDim.x * blockDim.x) {
        real acc = 0;
        const u32 z = ptr[k + 1];
        for (u32 p = ptr[k]; p < z; p++) acc += data[src[p]];
        values[k] = acc;
    }
}
