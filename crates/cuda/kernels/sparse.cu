// CSR matrices on the device: y = A x, the diagonal, and the right-hand side of an
// eliminated system gathered from a full residual.
//
// SpMV: a group of G lanes (G | 32) per row; the lanes stride through the row's entries and
// the group sums with shuffles. Every lane of a warp runs the same number of iterations
// (rows past the end contribute zero) so that the full-mask shuffles are legal.

template <int G>
__device__ __forceinline__ void spmv_groups(u32 nrows, const u32* FF_RESTRICT row_ptr,
                                            const u32* FF_RESTRICT col_idx, const real* FF_RESTRICT values,
                                            const real* FF_RESTRICT x, real* FF_RESTRICT y) {
    const u32 tid = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 lane = tid % G;
    const u32 warp_first = (tid / 32) * (32 / G);
    const u32 stride = (gridDim.x * blockDim.x / 32) * (32 / G);
    for (u32 r0 = warp_first; r0 < nrows; r0 += stride) {
        const u32 row = r0 + (threadIdx.x % 32) / G;
        real acc = 0;
        if (row < nrows) {
            const u32 z = row_ptr[row + 1];
            for (u32 k = row_ptr[row] + lane; k < z; k += G) acc += values[k] * x[col_idx[k]];
        }
#pragma unroll
        for (int o = G / 2; o > 0; o /= 2) acc += __shfl_down_sync(0xffffffffu, acc, o, G);
        if (lane == 0 && row < nrows) y[row] = acc;
    }
}

#define FF_SPMV(G)                                                                                  \
    extern "C" __global__ void __launch_bounds__(256)                                               \
    ff_csr_spmv_##G(u32 nrows, const u32* FF_RESTRICT row_ptr, const u32* FF_RESTRICT col_idx,      \
                    const real* FF_RESTRICT values, const real* FF_RESTRICT x, real* FF_RESTRICT y) { \
        spmv_groups<G>(nrows, row_ptr, col_idx, values, x, y);                                      \
    }
FF_SPMV(4)
FF_SPMV(8)
FF_SPMV(16)
FF_SPMV(32)

// out[i] = values[diag_pos[i]]
extern "C" __global__ void ff_csr_diagonal(u32 nrows, const u32* FF_RESTRICT diag_pos,
                                           const real* FF_RESTRICT values, real* FF_RESTRICT out) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < nrows; i += gridDim.x * blockDim.x)
        out[i] = values[diag_pos[i]];
}

// out[i] = -r[rows[i]]: the right-hand side b_f - A_fc g_c of an eliminated system from the
// full residual r(g) of the lifted boundary values g
extern "C" __global__ void ff_gather_negated(u32 n, const u32* FF_RESTRICT rows, const real* FF_RESTRICT r,
                                             real* FF_RESTRICT out) {
    for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        out[i] = -r[rows[i]];
}
