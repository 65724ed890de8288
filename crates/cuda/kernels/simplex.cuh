// Cell geometry shared by the residual and assembly kernels: J^{-1} and det J from a
// Jacobian, and for affine simplices the vertex coordinates of a cell (its local nodes
// 0..DIM, through the restriction) and the Jacobian from them. Needs DIM and NB (nodes per
// cell) defined.

// J^{-1} (row-major, dxi_k/dx_i at [k*DIM+i]) and det J (at g[DIM*DIM]) from the Jacobian
// J[i][k] = dx_i/dxi_k
__device__ __forceinline__ void geometry_from_jacobian(const real J[DIM][DIM], real* g) {
#if DIM == 2
    const real det = J[0][0] * J[1][1] - J[0][1] * J[1][0];
    const real id = (real)1 / det;
    g[0] = J[1][1] * id; g[1] = -J[0][1] * id; g[2] = -J[1][0] * id; g[3] = J[0][0] * id;
    g[4] = det;
#else
    real C[3][3];
    C[0][0] = J[1][1] * J[2][2] - J[1][2] * J[2][1];
    C[0][1] = J[1][2] * J[2][0] - J[1][0] * J[2][2];
    C[0][2] = J[1][0] * J[2][1] - J[1][1] * J[2][0];
    C[1][0] = J[0][2] * J[2][1] - J[0][1] * J[2][2];
    C[1][1] = J[0][0] * J[2][2] - J[0][2] * J[2][0];
    C[1][2] = J[0][1] * J[2][0] - J[0][0] * J[2][1];
    C[2][0] = J[0][1] * J[1][2] - J[0][2] * J[1][1];
    C[2][1] = J[0][2] * J[1][0] - J[0][0] * J[1][2];
    C[2][2] = J[0][0] * J[1][1] - J[0][1] * J[1][0];
    const real det = J[0][0] * C[0][0] + J[0][1] * C[0][1] + J[0][2] * C[0][2];
    const real id = (real)1 / det;
    // (J^{-1})_{k i} = C[i][k] / det
#pragma unroll
    for (int k = 0; k < 3; k++)
#pragma unroll
        for (int i = 0; i < 3; i++) g[k * 3 + i] = C[i][k] * id;
    g[9] = det;
#endif
}

// J^{-1} and det J of the affine simplex of vertex coordinates x[v * DIM + i], v = 0..DIM
__device__ __forceinline__ void geometry_from_vertices(const real* x, real* g) {
    real J[DIM][DIM];
#pragma unroll
    for (int k = 0; k < DIM; k++)
#pragma unroll
        for (int i = 0; i < DIM; i++) J[i][k] = x[(k + 1) * DIM + i] - x[i];
    geometry_from_jacobian(J, g);
}

// The vertex coordinates x[v * DIM + i] of cell c (its local nodes 0..DIM, read through
// the restriction)
__device__ __forceinline__ void cell_vertices(u32 c, const u32* FF_RESTRICT offsets, const real* FF_RESTRICT coords, real* x) {
#pragma unroll
    for (int v = 0; v <= DIM; v++) {
        const u32 n = offsets[(size_t)c * NB + v];
#pragma unroll
        for (int i = 0; i < DIM; i++) x[v * DIM + i] = coords[(size_t)n * DIM + i];
    }
}


// The physical point x[DIM] of reference point xi[DIM] in the affine cell of vertices
// xv[v * DIM + i]: x = xv_0 + sum_k xi_k (xv_{k+1} - xv_0)
__device__ __forceinline__ void affine_point(const real* xi, const real* xv, real* x) {
#pragma unroll
    for (int i = 0; i < DIM; i++) {
        real s = xv[i];
#pragma unroll
        for (int k = 0; k < DIM; k++) s += xi[k] * (xv[(k + 1) * DIM + i] - xv[i]);
        x[i] = s;
    }
}
