// Jacobi diagonal of the bake-off operators (BP1, BP3, BP3.5, screened or not), matrix-free:
// for every element, the diagonal of its element matrix, accumulated into the global vector
// in the operator's numbering (natural or interior-last, as bp_pencil.cu numbers it).
//
// Diagonal entry of local node n = (i, j, k), with x, y, z the quadrature point's 1-D indices:
//   BP1:   sum_q wdetJ(q) (B[x][i] B[y][j] B[z][k])^2
//   BP3:   sum_q sum_ab G_ab(q) d_a(q, n) d_b(q, n)   [+ alpha * the BP1 sum with MASS]
// with G = w detJ J^-1 J^-T (00, 01, 02, 11, 12, 22), d_x = D[x][i] B[y][j] B[z][k],
// d_y = B[x][i] D[y][j] B[z][k], d_z = B[x][i] B[y][j] D[z][k]; B interpolates the GLL basis to
// the points, D is its derivative there (both Q x N, row-major). BP3.5 (OP 5) runs the same
// sums with Q = N, B = I and D the GLL derivative.
//
// Not a hot loop (once per solve): one block per element (grid-stride over elements), one
// thread per node (NPT nodes per thread where N^3 > DT). The point factors of one z-slice of
// points (Q^2 points) are staged in shared memory, read from the stored factors (GEO 0) or
// computed from the element's vertices (GEO 1, the trilinear map of bp_common.cuh); every
// thread then adds its node's terms of that slice. O(N^3 Q^3) per element.
//
// Needs (prepended by the host): the prelude, the table cSK (INTLAST: local node -> skeleton
// slot, as bp_pencil.cu reads it) and bp_common.cuh (OP, N, Q, NGEO, GSTRIDE, GEO, MASS).
// -D DT: threads per block.
// Arguments: tab = [B (Q*N) | D (Q*N) | points (Q) | weights (Q)]; geo as the apply kernel
// reads it ([elem][GSTRIDE] stored factors, or [elem][3][8] vertices); d: zeroed by the host.

#define NPT ((NNN + DT - 1) / DT)
#if OP == 1
#define NF 1
#else
#define NF (6 + MASS)
#endif
#define QQ (Q * Q)

// (No __launch_bounds__: with one, ptxas trades spills for occupancy here; without, it stays
// under 160 registers, and DT <= 256 threads always fit a multiprocessor's register file.)
extern "C" __global__ void bp_diagonal(const u32 nelem, const u32 nskel, const u32* FF_RESTRICT offsets,
                                       const real* FF_RESTRICT geo, const real* FF_RESTRICT tab,
                                       const real alpha, real* FF_RESTRICT d) {
    __shared__ real sB[Q * N];
#if OP != 1
    __shared__ real sD[Q * N];
#endif
    __shared__ real sF[NF][QQ];
#if GEO == 1
    __shared__ real sX[Q], sW[Q];
    __shared__ real sE[3][4][3];
#endif
    const int tid = threadIdx.x;
    for (int t = tid; t < Q * N; t += DT) {
        sB[t] = tab[t];
#if OP != 1
        sD[t] = tab[Q * N + t];
#endif
    }
#if GEO == 1
    for (int t = tid; t < Q; t += DT) {
        sX[t] = tab[2 * Q * N + t];
        sW[t] = tab[2 * Q * N + Q + t];
    }
#endif
    // (the first slice's barrier orders these stores before their first reads)
    for (u32 e = blockIdx.x; e < nelem; e += gridDim.x) {
#if GEO == 1
        // edge vectors of the element (as bp_setup_geometry forms them); every thread is past
        // the previous element's last staging phase (its barrier), so nobody still reads sE
        for (int t = tid; t < 36; t += DT) {
            const int dir = t / 12, edge = (t / 3) % 4, c = t % 3;
            const real* x = geo + (size_t)e * 24 + c * 8;
            const int v = dir == 0 ? 2 * edge : dir == 1 ? (edge & 1) + 4 * (edge >> 1) : edge;
            sE[dir][edge][c] = x[v + (1 << dir)] - x[v];
        }
#endif
        real acc[NPT];
#pragma unroll
        for (int s = 0; s < NPT; s++) acc[s] = 0;
#pragma unroll 1
        for (int qz = 0; qz < Q; qz++) {
            __syncthreads(); // the previous slice's factors are consumed (and sE is written)
#pragma unroll 1
            for (int t = tid; t < QQ; t += DT) {
#if GEO == 0
                const real* g = geo + GEO_INDEX(e, t % Q, t / Q, qz);
#pragma unroll
                for (int c = 0; c < NF; c++) sF[c][t] = g[(size_t)c * QQQ];
#else
                const int qx = t % Q, qy = t / Q;
                real G[6], wdetj;
                geo_point(sE, sX[qx], sX[qy], sX[qz], sW[qx] * sW[qy] * sW[qz], G, &wdetj);
#if OP == 1
                sF[0][t] = wdetj;
#else
#pragma unroll
                for (int c = 0; c < 6; c++) sF[c][t] = G[c];
#if MASS
                sF[6][t] = wdetj;
#endif
#endif
#endif
            }
            __syncthreads();
#pragma unroll
            for (int s = 0; s < NPT; s++) {
                const int n = tid + s * DT;
                if (n >= NNN) continue;
                const int i = n % N, j = (n / N) % N, k = n / (N * N);
                const real bz = sB[qz * N + k];
#if OP != 1
                const real dz = sD[qz * N + k];
#endif
                real sum = 0;
#pragma unroll 1
                for (int qy = 0; qy < Q; qy++) {
                    const real by = sB[qy * N + j];
#if OP != 1
                    const real dy = sD[qy * N + j];
                    const real byz = by * bz, dyz = dy * bz, bdz = by * dz;
#else
                    const real byz = by * bz;
#endif
                    for (int qx = 0; qx < Q; qx++) {
                        const int t = qy * Q + qx;
                        const real bx = sB[qx * N + i];
#if OP == 1
                        const real v = bx * byz;
                        sum += sF[0][t] * v * v;
#else
                        const real dx = sD[qx * N + i];
                        const real gx = dx * byz, gy = bx * dyz, gz = bx * bdz;
                        real term = sF[0][t] * gx * gx + sF[3][t] * gy * gy + sF[5][t] * gz * gz
                                  + (real)2 * (sF[1][t] * gx * gy + sF[2][t] * gx * gz + sF[4][t] * gy * gz);
#if MASS
                        const real v = bx * byz;
                        term += alpha * sF[6][t] * v * v;
#endif
                        sum += term;
#endif
                    }
                }
                acc[s] += sum;
            }
        }
#pragma unroll
        for (int s = 0; s < NPT; s++) {
            const int n = tid + s * DT;
            if (n >= NNN) continue;
            const int i = n % N, j = (n / N) % N, k = n / (N * N);
            accumulate(d, node_index(offsets, e, nskel, i, j, k), acc[s], is_interior(i, j, k));
        }
    }
}

// d[idx[k]] = value for k < m: the identity rows of Dirichlet dofs.
extern "C" __global__ void bp_diag_set_rows(real* FF_RESTRICT d, const u32* FF_RESTRICT idx, const real value, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x) d[idx[k]] = value;
}
