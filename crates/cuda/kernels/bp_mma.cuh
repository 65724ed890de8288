// FP64 tensor-core line contractions (v47) for the lattice kernel's phases 2-4 (MMA 1).
//
// A warp contracts 16 lines of the lattice at once with mma.sync.aligned.m16n8k8 and m16n8k4,
// which (below) are two m8n8k4 (D = A B + C; A 8 x 4: row lane/4, column lane%4; B 4 x 8: row
// lane%4, column lane/4; D 8 x 8: row lane/4, columns 2 (lane%4) + {0, 1}) on two sets of 8
// lines. The rows of A and D are the tile's lines: lane l works on row r = l/4 of both sets
// and holds each of its two lines' values at positions 4h + c, c = l%4, h = 0, 1, ... ("quarter"
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

// v47b: sm_90's m16n8k8 and m16n8k4 shapes, which run at twice m8n8k4's rate per
// multiply-add on Hopper: rows g and g + 8 of A and D are two lines of the lane (its
// "first" and "second"), and m16n8k8 takes two k-steps (quarters h, h + 1) at once:
// a = (first h, second h, first h + 1, second h + 1), b = (B fragment h, B fragment h + 1),
// d = (first 2t, first 2t + 1, second 2t, second 2t + 1).
__device__ __forceinline__ void dmma16_k8(double (&d)[4], double a0, double a1, double a2, double a3, double b0,
                                          double b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
}
__device__ __forceinline__ void dmma16_k4(double (&d)[4], double a0, double a1, double b0) {
    asm("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
        : "d"(a0), "d"(a1), "d"(b0));
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

// y = M x for the tile's 16 lines: x the lane's HI input quarters of its two lines (x[0]
// the first's, x[1] the second's), y their 2 TO output quarters
template <int HI, int TO>
__device__ __forceinline__ void mma_contract(const double (&f)[HI][TO], const double (&x)[2][HI], double (&y)[2][2 * TO]) {
#pragma unroll
    for (int t = 0; t < TO; t++) {
        double d[4] = {0.0, 0.0, 0.0, 0.0};
#pragma unroll
        for (int h = 0; h + 1 < HI; h += 2) dmma16_k8(d, x[0][h], x[1][h], x[0][h + 1], x[1][h + 1], f[h][t], f[h + 1][t]);
        if (HI & 1) dmma16_k4(d, x[0][HI - 1], x[1][HI - 1], f[HI - 1][t]);
        y[0][2 * t] = d[0];
        y[0][2 * t + 1] = d[1];
        y[1][2 * t] = d[2];
        y[1][2 * t + 1] = d[3];
    }
}

// The line (s = 0: first, 1: second) of row r (0-7) of 16-line tile T: each half-warp (rows
// 0-3, 4-7) takes 4 lines 4 apart for each of its loads and stores, so that where
// consecutive lines lie in consecutive banks, and the positions along them an odd pitch
// apart, its 16 lanes meet 16 distinct banks.
__device__ __forceinline__ int mma_line(int T, int s, int r) {
    return 16 * T + 2 * s + (r >> 2) + 4 * (r & 3);
}

// 16-line tiles for L lines
#define MMA_TILES(L) (((L) + 15) / 16)
#endif
