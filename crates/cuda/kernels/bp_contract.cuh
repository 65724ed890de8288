// The 1-D contraction shared by the pencil (bp_pencil.cu) and lattice (bp_lattice.cu)
// bake-off kernels.

// 1-D contraction out = M in for the NO x NI matrix named M. The host generates M (full,
// row-major) and, for the even-odd form, M_p and M_m ([(NO + 1) / 2][NI / 2]) and the middle
// column M_c. Gauss and GLL points are symmetric about 0, so M[NO-1-o][NI-1-i] = S M[o][i]
// (S = 1: interpolation, S = -1: derivative); the even-odd form splits the input into its even and odd
// halves and forms mirrored outputs in pairs: about half the multiply-adds of the plain
// product (the paper's symmetric-matrix trick), and dependency chains half as long.
#define CONTRACT(M, S, NI, NO, in, out) contract<NI, NO, S>(M, M##_p, M##_m, M##_c, in, out)
template <int NI, int NO, int S>
__device__ __forceinline__ void contract(const real* M, const real* P, const real* R, const real* C,
                                         const real (&in)[NI], real (&out)[NO]) {
    constexpr int HI = NI / 2, HO = NO / 2;
    real ev[HI], od[HI];
#pragma unroll
    for (int i = 0; i < HI; i++) {
        ev[i] = in[i] + in[NI - 1 - i];
        od[i] = in[i] - in[NI - 1 - i];
    }
#pragma unroll
    for (int o = 0; o < HO; o++) {
        real e = P[o * HI] * ev[0], d = R[o * HI] * od[0];
#pragma unroll
        for (int i = 1; i < HI; i++) {
            e += P[o * HI + i] * ev[i];
            d += R[o * HI + i] * od[i];
        }
        if (NI & 1) e += C[o] * in[HI];
        out[o] = e + d;
        out[NO - 1 - o] = S > 0 ? e - d : d - e;
    }
    if (NO & 1) {
        // the middle row: its odd part vanishes for S = 1, its even part for S = -1
        real s = S > 0 ? P[HO * HI] * ev[0] : R[HO * HI] * od[0];
#pragma unroll
        for (int i = 1; i < HI; i++) s += S > 0 ? P[HO * HI + i] * ev[i] : R[HO * HI + i] * od[i];
        if (S > 0 && (NI & 1)) s += C[HO] * in[HI];
        out[HO] = s;
    }
}
