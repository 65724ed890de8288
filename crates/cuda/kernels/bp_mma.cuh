// FP64 tensor-core line contractions (v47) for the lattice kernel's phases 2-4 (MMA 1).
//
// A warp contracts 8 lines of the lattice at once with mma.sync.aligned.m8n8k4 (D = A B + C;
// A 8 x 4: row lane/4, column lane%4; B 4 x 8: row lane%4, column lane/4; D 8 x 8: row lane/4,
// columns 2 (lane%4) + {0, 1}). The rows of A and D are the tile's lines: lane l works on line
// r = l/4 and holds that line's values at positions 4h + c, c = l%4, h = 0, 1, ... ("quarter"
// h). K-step h of a contraction takes its input's quarter h; column 2c + j of n-tile t is read
// as position 8t + 4j + c, so that D's two values of n-tile t are the lane's quarters 2t and
// 2t + 1 of the output: one contraction's output is the next one's input where it stands, and
// no value moves between lanes. The matrix is the B operand: for k-step h and n-tile t, lane l
// holds M[8t + 4 (r & 1) + (r >> 1)][4h + c] (zero outside the matrix), in registers for the
// whole phase, so the contractions load no coefficient.
//
// Needs: real = double (the host refuses f32), N and Q (-D); empty unless MMA is 1.

#if defined(MMA) && MMA
static_assert(sizeof(real) == 8, "the FP64 tensor-core contractions (MMA 1) are for f64");

// quarters of a line's nodes and points, and n-tiles of 8 outputs
#define MMA_HN ((N + 3) / 4)
#define MMA_HQ ((Q + 3) / 4)
#define MMA_TN ((N + 7) / 8)
#define MMA_TQ ((Q + 7) / 8)

// d += a b on the tensor cores (one k-step of one n-tile)
__device__ __forceinline__ void dmma_acc(double& d0, double& d1, double a, double b) {
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
        : "+d"(d0), "+d"(d1)
        : "d"(a), "d"(b));
}

// The B fragments of the NO x NI matrix M: the interpolation matrix B [Q][N] of `mats`
// (row-major), or (TRANS) its transpose, [N][Q].
template <int NI, int NO, bool TRANS>
__device__ __forceinline__ void mma_matrix(const real* FF_RESTRICT mats, int lane, double (&f)[(NI + 3) / 4][(NO + 7) / 8]) {
    const int c = lane & 3, r = lane >> 2;
#pragma unroll
    for (int h = 0; h < (NI + 3) / 4; h++) {
#pragma unroll
        for (int t = 0; t < (NO + 7) / 8; t++) {
            const int i = 4 * h + c, o = 8 * t + 4 * (r & 1) + (r >> 1);
            f[h][t] = i < NI && o < NO ? mats[TRANS ? i * N + o : o * N + i] : 0.0;
        }
    }
}

// y = M x for the tile's 8 lines: x the lane's HI input quarters, y its 2 TO output quarters
template <int HI, int TO>
__device__ __forceinline__ void mma_contract(const double (&f)[HI][TO], const double* x, double* y) {
#pragma unroll
    for (int t = 0; t < TO; t++) {
        double d0 = 0.0, d1 = 0.0;
#pragma unroll
        for (int h = 0; h < HI; h++) dmma_acc(d0, d1, x[h], f[h][t]);
        y[2 * t] = d0;
        y[2 * t + 1] = d1;
    }
}

// The line of row r of tile T: in each group of 16 lines (two tiles), a half-warp (rows 0-3,
// 4-7) takes 4 lines 4 apart, so that where consecutive lines lie in consecutive banks, and
// the positions along them an odd pitch apart, its 16 lanes meet 16 distinct banks.
__device__ __forceinline__ int mma_line(int T, int r) {
    return 16 * (T >> 1) + 2 * (T & 1) + (r >> 2) + 4 * (r & 3);
}

// tiles (in whole groups of 16 lines) for L lines
#define MMA_TILES(L) (2 * (((L) + 15) / 16))
#endif
