// Geometry of quadrilaterals and hexahedra for the assembly kernels: the bilinear or
// trilinear (Q1) map through the cell's 2^DIM corner nodes, evaluated at each quadrature
// point, as the CPU's cell map does. Needs DIM, P1D (nodes per direction of the cell's
// lexicographic Q_p nodes), geometry_from_jacobian (simplex.cuh) and the host table
// cGeo[(q * NV + v) * (DIM + 1)]: the Q1 shape value of corner v at point q, then its DIM
// reference derivatives (corners lexicographic: v = a + 2 b + 4 c).

#define NV (1 << DIM)

// Local node of corner v (a, b, c its bits): lattice point (a, b, c) * (P1D - 1)
__device__ __forceinline__ u32 corner_node(int v) {
    const u32 p = P1D - 1;
    u32 node = (v & 1) * p + ((v >> 1) & 1) * p * P1D;
#if DIM == 3
    node += ((v >> 2) & 1) * p * P1D * P1D;
#endif
    return node;
}

// The corner coordinates x[v * DIM + i] of cell c (read through the restriction)
__device__ __forceinline__ void cell_corners(u32 c, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT coords, real* x) {
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const u32 n = offsets[(size_t)c * NB + corner_node(v)];
#pragma unroll
        for (int i = 0; i < DIM; i++) x[v * DIM + i] = coords[(size_t)n * DIM + i];
    }
}

// J^{-1} and det J at point q of the cell of corner coordinates x (as geometry_from_jacobian)
__device__ __forceinline__ void geometry_at_point(const real* x, int q, real* g) {
    real J[DIM][DIM];
#pragma unroll
    for (int i = 0; i < DIM; i++)
#pragma unroll
        for (int k = 0; k < DIM; k++) J[i][k] = 0;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const real* t = cGeo + (q * NV + v) * (DIM + 1);
#pragma unroll
        for (int i = 0; i < DIM; i++)
#pragma unroll
            for (int k = 0; k < DIM; k++) J[i][k] += x[v * DIM + i] * t[1 + k];
    }
    geometry_from_jacobian(J, g);
}

// The physical point y[DIM] of point q in the cell of corner coordinates x
__device__ __forceinline__ void mapped_point(const real* x, int q, real* y) {
#pragma unroll
    for (int i = 0; i < DIM; i++) y[i] = 0;
#pragma unroll
    for (int v = 0; v < NV; v++) {
        const real s = cGeo[(q * NV + v) * (DIM + 1)];
#pragma unroll
        for (int i = 0; i < DIM; i++) y[i] += s * x[v * DIM + i];
    }
}
