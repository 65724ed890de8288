// Spectral-element wave step on quadrilaterals (DIM 2) and hexahedra (DIM 3): the
// collocated stiffness action K u at the GLL points with acoustic (ELASTIC 0: the metric
// times 1/rho) or isotropic elastic (ELASTIC 1) physics, fused with the leapfrog update of
// the nodes interior to an element; the skeleton's sums go to an accumulator that the
// update kernels consume.
//
// Compile-time constants (with -D): DIM, NP (nodes per direction, p + 1), NPE (NP^DIM),
// NC (components), ELASTIC, COMPACT (1: one value per element and factor, times the
// tensor weight for the factors in WEIGHTED; 0: a value per point), NF (factors per
// point), WEIGHTED (bit mask), EPB (elements per block), NSKEL and NINT (skeleton and
// interior nodes of an element). The host prepends the tables. In global memory, for
// reads that differ between the lanes of a warp (which the constant cache would
// serialise, while L1 serves them in one request):
//   __device__ real WD[NP * NP];  // WD[q * NP + m] = l_m'(x_q), GLL Lagrange derivatives
//   __device__ real WQ[NPE];      // tensor weights of the points, lexicographic
//   __device__ real W1G[NP];      // 1-D GLL weights
//   __device__ short WSLOT[NPE];  // >= 0: skeleton slot; < 0: -(interior index) - 1
// In constant memory, for reads at indices the compiler knows (uniform across the warp:
// constant-bank operands of the contractions): WDK (= WD) and W1C (= W1G).
//
// From order 2 the stiffness kernel takes a thread per line of an element (the pencil
// form); at order 1, where a line leaves too little work to overlap, a thread per point.
//
// Node numbering: the NSKEL skeleton nodes of element e through skel[e * NSKEL + slot]
// (global nodes below nskel), its interior nodes at nskel + e * NINT + index. Fields are
// interleaved by node: dof = node * NC + c. step_scale holds dt^2 / m per node (0 on nodes
// held at zero).

// The pointwise physics: the reference flux f[c][a] from the reference gradients g[c][a]
// and the point's data q (acoustic: the packed metric times 1/rho; elastic: J^-1 row-major,
// lambda w det J, mu w det J), as the CPU's Diffusion and Elastic forms.
__device__ __forceinline__ void wave_flux(const real (&g)[NC][DIM], const real (&q)[NF],
                                          real (&f)[NC][DIM]) {
#if ELASTIC
    real h[DIM][DIM];
#pragma unroll
    for (int c = 0; c < DIM; ++c)
#pragma unroll
        for (int kk = 0; kk < DIM; ++kk) {
            real acc = 0;
#pragma unroll
            for (int r = 0; r < DIM; ++r) acc += g[c][r] * q[r * DIM + kk];
            h[c][kk] = acc;
        }
    real tr = 0;
#pragma unroll
    for (int c = 0; c < DIM; ++c) tr += h[c][c];
    const real wl = q[DIM * DIM], wm = q[DIM * DIM + 1];
    const real lt = wl * tr;
    real s[DIM][DIM];
#pragma unroll
    for (int c = 0; c < DIM; ++c) {
#pragma unroll
        for (int kk = 0; kk < DIM; ++kk) s[c][kk] = wm * (h[c][kk] + h[kk][c]);
        s[c][c] += lt;
    }
#pragma unroll
    for (int c = 0; c < DIM; ++c)
#pragma unroll
        for (int r = 0; r < DIM; ++r) {
            real acc = 0;
#pragma unroll
            for (int kk = 0; kk < DIM; ++kk) acc += q[r * DIM + kk] * s[c][kk];
            f[c][r] = acc;
        }
#else
#pragma unroll
    for (int c = 0; c < NC; ++c) {
#if DIM == 2
        f[c][0] = q[0] * g[c][0] + q[1] * g[c][1];
        f[c][1] = q[1] * g[c][0] + q[2] * g[c][1];
#else
        f[c][0] = q[0] * g[c][0] + q[1] * g[c][1] + q[2] * g[c][2];
        f[c][1] = q[1] * g[c][0] + q[3] * g[c][1] + q[4] * g[c][2];
        f[c][2] = q[2] * g[c][0] + q[4] * g[c][1] + q[5] * g[c][2];
#endif
    }
#endif
}

#if NP > 2
// The line kernels' 1-D contractions (D = WDK, read at indices the compiler knows once the
// callers' loops are unrolled), summed into s in the order of m:
// s + sum_m D[q][m] v[m], the derivative at point q of a line's values v,
__device__ __forceinline__ real wave_d(const real (&v)[NP], int q, real s = 0) {
#pragma unroll
    for (int m = 0; m < NP; ++m) s += WDK[q * NP + m] * v[m];
    return s;
}
// and s + sum_m D[m][k] v[m], the transposed derivative at node k of a line's fluxes v.
__device__ __forceinline__ real wave_dt(const real (&v)[NP], int k, real s = 0) {
#pragma unroll
    for (int m = 0; m < NP; ++m) s += WDK[m * NP + k] * v[m];
    return s;
}
#endif

#if DIM == 2 && NP > 2
// 2-D from order 2: one thread per line of an element (EPB elements of NP threads per block), the 1-D
// derivative matrix as compile-time constants (WDK, uniform across the warp: the
// contractions' coefficients are constant-bank operands, no loads). Row phase: a thread
// gathers its row, forms d/dxi along it; column phase: d/deta along its column, the physics
// at the column's points, the transposed d/deta; row phase: the transposed d/dxi, the sum,
// the update or the skeleton's accumulation. Four shared arrays per component: u, d/dxi,
// the xi-flux and the eta-part of the result, [EPB][NC][NP][NP]. (At order 1, two threads
// per element leave too little to overlap: the point kernel below is faster there.)

// Skeleton slot (>= 0) or -(interior index) - 1 of local node (i, j).
__device__ __forceinline__ int wave_slot2(int i, int j) {
    if (j == 0) return i;
    if (j == NP - 1) return NP + 2 * (NP - 2) + i;
    if (i == 0) return NP + 2 * (j - 1);
    if (i == NP - 1) return NP + 2 * (j - 1) + 1;
    return -((j - 1) * (NP - 2) + (i - 1)) - 1;
}

extern "C" __global__ void __launch_bounds__(EPB * NP)
wave_stiffness(u32 first, u32 nelem, u32 nskel, const real* FF_RESTRICT u, real* FF_RESTRICT up,
               real* FF_RESTRICT ku, const real* FF_RESTRICT step_scale,
               const u32* FF_RESTRICT skel, const real* FF_RESTRICT fac,
               real* FF_RESTRICT kfull) {
    extern __shared__ __align__(16) unsigned char wave_smem[];
    real* sm = (real*)wave_smem;
    const int le = threadIdx.x / NP;
    const int t = threadIdx.x - le * NP;  // row j in the row phases, column i in the column one
    const u32 e = first + blockIdx.x * EPB + le;
    const bool active = e < nelem;
    const size_t ee = active ? e : 0;
    // [4][NC][NP][NP] per element: u, d/dxi, xi-flux, eta-result
    real* se = sm + le * 4 * NC * NP * NP;
#define S2(a, c, j, i) se[(((a) * NC + (c)) * NP + (j)) * NP + (i)]
    // row phase: gather row t, d/dxi along it
    u32 node[NP];
    real uv[NC][NP];
#pragma unroll
    for (int i = 0; i < NP; ++i) {
        const int slot = wave_slot2(i, t);
        node[i] = slot >= 0 ? skel[ee * NSKEL + slot] : nskel + (u32)ee * NINT + (u32)(-slot - 1);
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            uv[c][i] = active ? u[(size_t)node[i] * NC + c] : (real)0;
            S2(0, c, t, i) = uv[c][i];
        }
    }
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int q = 0; q < NP; ++q) S2(1, c, t, q) = wave_d(uv[c], q);
    __syncthreads();
    // column phase: column t, points (t, m)
    {
        const real wt = __ldg(&W1G[t]);
        real fx[NC][NP], fy[NC][NP];
#pragma unroll
        for (int m = 0; m < NP; ++m) {
            real g[NC][2];
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                real a = 0;
#pragma unroll
                for (int k = 0; k < NP; ++k) a += WDK[m * NP + k] * S2(0, c, k, t);
                g[c][0] = S2(1, c, m, t);
                g[c][1] = a;
            }
            const int l = m * NP + t;
            real q[NF];
#pragma unroll
            for (int f = 0; f < NF; ++f) {
#if COMPACT
                const real v = fac[ee * NF + f];
                q[f] = ((WEIGHTED >> f) & 1) ? v * (W1C[m] * wt) : v;
#else
                q[f] = fac[(ee * NF + f) * NPE + l];
#endif
            }
            real f[NC][DIM];
            wave_flux(g, q, f);
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                fx[c][m] = f[c][0];
                fy[c][m] = f[c][1];
            }
        }
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int k = 0; k < NP; ++k) {
                S2(3, c, k, t) = wave_dt(fy[c], k);
                S2(2, c, k, t) = fx[c][k];
            }
    }
    __syncthreads();
    // row phase: the transposed d/dxi of row t, plus the eta part; update or accumulate
    if (!active) return;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        real fr[NP];
#pragma unroll
        for (int m = 0; m < NP; ++m) fr[m] = S2(2, c, t, m);
#pragma unroll
        for (int i = 0; i < NP; ++i) {
            const real r = wave_dt(fr, i, S2(3, c, t, i));
            const size_t d = (size_t)node[i] * NC + c;
            const bool interior = t > 0 && t < NP - 1 && i > 0 && i < NP - 1;
            if (interior) {
                const real sc = step_scale[node[i]];
                up[d] = (real)2 * uv[c][i] - up[d] - sc * r;
                if (kfull != nullptr) kfull[d] = r;
            } else {
                atomicAdd(&ku[d], r);
            }
        }
    }
#undef S2
}
#elif DIM == 3 && NP > 2
// 3-D from order 2: one thread per line of an element (EPB elements of NP^2 threads per
// block), the 1-D derivative matrix as constant-bank operands. Thread t = a + NP b of an
// element plays the x-line (j, k) = (a, b), the y-line (i, k) = (a, b) or the z-column
// (i, j) = (a, b). Phases, a barrier after each of the first four:
//   1 x-lines: gather u (kept in registers for the update), d/dxi        -> sU, sX
//   2 y-lines: d/deta                                                      -> sY
//   3 z-columns: d/dzeta, the physics at the column's points; the xi- and eta-fluxes
//     overwrite sX and sY, the transposed d/dzeta of the zeta-flux overwrites sU
//   4 y-lines: the transposed d/deta of the eta-flux, added to sU
//   5 x-lines: the transposed d/dxi of the xi-flux plus sU; the update or the skeleton's
//     accumulation.
// Three shared arrays per component, [EPB][3][NC][NP][NP][PR], rows of odd pitch PR so that
// the x-line phases' lanes (rows PR apart) fall in distinct banks.
#define PR (NP | 1)
#define PP (NP * PR)
#define PE (NP * PP)

extern "C" __global__ void __launch_bounds__(EPB * NP * NP)
wave_stiffness(u32 first, u32 nelem, u32 nskel, const real* FF_RESTRICT u, real* FF_RESTRICT up,
               real* FF_RESTRICT ku, const real* FF_RESTRICT step_scale,
               const u32* FF_RESTRICT skel, const real* FF_RESTRICT fac,
               real* FF_RESTRICT kfull) {
    extern __shared__ __align__(16) unsigned char wave_smem[];
    real* sm = (real*)wave_smem;
    const int le = threadIdx.x / (NP * NP);
    const int t = threadIdx.x - le * (NP * NP);
    const int a = t % NP, b = t / NP;
    const u32 e = first + blockIdx.x * EPB + le;
    const bool active = e < nelem;
    const size_t ee = active ? e : 0;
    real* se = sm + le * 3 * NC * PE;
#define S3(arr, c, k, j, i) se[((arr) * NC + (c)) * PE + (k) * PP + (j) * PR + (i)]
    // phase 1: x-line (j, k) = (a, b)
    u32 node[NP];
    real uv[NC][NP];
#pragma unroll
    for (int i = 0; i < NP; ++i) {
        const int slot = __ldg(&WSLOT[(b * NP + a) * NP + i]);
        node[i] = slot >= 0 ? skel[ee * NSKEL + slot] : nskel + (u32)ee * NINT + (u32)(-slot - 1);
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            uv[c][i] = active ? u[(size_t)node[i] * NC + c] : (real)0;
            S3(0, c, b, a, i) = uv[c][i];
        }
    }
#pragma unroll
    for (int c = 0; c < NC; ++c)
#pragma unroll
        for (int q = 0; q < NP; ++q) S3(1, c, b, a, q) = wave_d(uv[c], q);
    __syncthreads();
    // phase 2: y-line (i, k) = (a, b)
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        real v[NP];
#pragma unroll
        for (int m = 0; m < NP; ++m) v[m] = S3(0, c, b, m, a);
#pragma unroll
        for (int q = 0; q < NP; ++q) S3(2, c, b, q, a) = wave_d(v, q);
    }
    __syncthreads();
    // phase 3: z-column (i, j) = (a, b)
    {
        real col[NC][NP], fz[NC][NP];
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int m = 0; m < NP; ++m) col[c][m] = S3(0, c, m, b, a);
#if COMPACT
        const real wab = __ldg(&W1G[a]) * __ldg(&W1G[b]);
#endif
#pragma unroll
        for (int m = 0; m < NP; ++m) {
            real g[NC][3];
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                g[c][0] = S3(1, c, m, b, a);
                g[c][1] = S3(2, c, m, b, a);
                g[c][2] = wave_d(col[c], m);
            }
            real q[NF];
#pragma unroll
            for (int f = 0; f < NF; ++f) {
#if COMPACT
                const real v = fac[ee * NF + f];
                q[f] = ((WEIGHTED >> f) & 1) ? v * (W1C[m] * wab) : v;
#else
                q[f] = fac[(ee * NF + f) * NPE + (m * NP + b) * NP + a];
#endif
            }
            real fl[NC][3];
            wave_flux(g, q, fl);
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                S3(1, c, m, b, a) = fl[c][0];
                S3(2, c, m, b, a) = fl[c][1];
                fz[c][m] = fl[c][2];
            }
        }
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int k = 0; k < NP; ++k) S3(0, c, k, b, a) = wave_dt(fz[c], k);
    }
    __syncthreads();
    // phase 4: y-line (i, k) = (a, b)
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        real v[NP];
#pragma unroll
        for (int m = 0; m < NP; ++m) v[m] = S3(2, c, b, m, a);
#pragma unroll
        for (int j = 0; j < NP; ++j) S3(0, c, b, j, a) = wave_dt(v, j, S3(0, c, b, j, a));
    }
    __syncthreads();
    // phase 5: x-line (j, k) = (a, b): the transposed d/dxi, the update or accumulation
    if (!active) return;
    const bool inner_line = a > 0 && a < NP - 1 && b > 0 && b < NP - 1;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        real v[NP];
#pragma unroll
        for (int m = 0; m < NP; ++m) v[m] = S3(1, c, b, a, m);
#pragma unroll
        for (int i = 0; i < NP; ++i) {
            const real r = wave_dt(v, i, S3(0, c, b, a, i));
            const size_t d = (size_t)node[i] * NC + c;
            if (inner_line && i > 0 && i < NP - 1) {
                const real sc = step_scale[node[i]];
                up[d] = (real)2 * uv[c][i] - up[d] - sc * r;
                if (kfull != nullptr) kfull[d] = r;
            } else {
                atomicAdd(&ku[d], r);
            }
        }
    }
#undef S3
}
#else
// Order 1: a thread per point, the derivative rows and columns it needs in registers.
#if DIM == 3
#define NPLANE (NP * NP)
#else
#define NPLANE 0
#endif
extern "C" __global__ void __launch_bounds__(EPB * NPE)
wave_stiffness(u32 first, u32 nelem, u32 nskel, const real* FF_RESTRICT u, real* FF_RESTRICT up,
               real* FF_RESTRICT ku, const real* FF_RESTRICT step_scale,
               const u32* FF_RESTRICT skel, const real* FF_RESTRICT fac,
               real* FF_RESTRICT kfull) {
    extern __shared__ __align__(16) unsigned char wave_smem[];
    real* su = (real*)wave_smem;        // [EPB][NC][NPE]
    real* sf = su + EPB * NC * NPE;     // [EPB][NC][DIM][NPE]
#define DAT(q, m) __ldg(&WD[(q) * NP + (m)])
    const int le = threadIdx.x / NPE;
    const int l = threadIdx.x - le * NPE;
    const u32 e = first + blockIdx.x * EPB + le;
    const bool active = e < nelem;
    const int i = l % NP;
    const int j = (l / NP) % NP;
#if DIM == 3
    const int k = l / (NP * NP);
#endif
    const int slot = __ldg(&WSLOT[l]);
    u32 node = 0;
    real uv[NC];
    if (active) {
        node = slot >= 0 ? skel[(size_t)e * NSKEL + slot] : nskel + e * NINT + (u32)(-slot - 1);
#pragma unroll
        for (int c = 0; c < NC; ++c) uv[c] = u[(size_t)node * NC + c];
    } else {
#pragma unroll
        for (int c = 0; c < NC; ++c) uv[c] = (real)0;
    }
    real* sue = su + le * NC * NPE;
    real* sfe = sf + le * NC * DIM * NPE;
#pragma unroll
    for (int c = 0; c < NC; ++c) sue[c * NPE + l] = uv[c];
    // the rows of the derivative matrix this point needs, and its columns for the
    // transposed action
    real di[NP], dj[NP], ti[NP], tj[NP];
#if DIM == 3
    real dk[NP], tk[NP];
#endif
#pragma unroll
    for (int m = 0; m < NP; ++m) {
        di[m] = DAT(i, m);
        dj[m] = DAT(j, m);
        ti[m] = DAT(m, i);
        tj[m] = DAT(m, j);
#if DIM == 3
        dk[m] = DAT(k, m);
        tk[m] = DAT(m, k);
#endif
    }
#define DI(m) di[m]
#define DJ(m) dj[m]
#define DK(m) dk[m]
#define TI(m) ti[m]
#define TJ(m) tj[m]
#define TK(m) tk[m]
    __syncthreads();
    // reference gradients g[c][a] = d u_c / d xi_a
    real g[NC][DIM];
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        const real* s = sue + c * NPE;
        real a0 = 0, a1 = 0;
#if DIM == 3
        real a2 = 0;
#endif
#pragma unroll
        for (int m = 0; m < NP; ++m) {
            a0 += DI(m) * s[l + (m - i)];
            a1 += DJ(m) * s[l + (m - j) * NP];
#if DIM == 3
            a2 += DK(m) * s[l + (m - k) * NPLANE];
#endif
        }
        g[c][0] = a0;
        g[c][1] = a1;
#if DIM == 3
        g[c][2] = a2;
#endif
    }
    // the point's data
    real q[NF];
    // inactive threads (past the last element) read element 0's data, unused
    const size_t eq = active ? e : 0;
#if COMPACT
    const real wq = __ldg(&WQ[l]);
#endif
#pragma unroll
    for (int f = 0; f < NF; ++f) {
#if COMPACT
        const real v = fac[eq * NF + f];
        q[f] = ((WEIGHTED >> f) & 1) ? v * wq : v;
#else
        q[f] = fac[(eq * NF + f) * NPE + l];
#endif
    }
    // the flux in reference coordinates
    {
        real f[NC][DIM];
        wave_flux(g, q, f);
#pragma unroll
        for (int c = 0; c < NC; ++c)
#pragma unroll
            for (int r = 0; r < DIM; ++r) sfe[(c * DIM + r) * NPE + l] = f[c][r];
    }
    __syncthreads();
    // the transposed gradient: r_c at node l
    real r[NC];
#pragma unroll
    for (int c = 0; c < NC; ++c) {
        const real* f0 = sfe + (c * DIM + 0) * NPE;
        const real* f1 = sfe + (c * DIM + 1) * NPE;
#if DIM == 3
        const real* f2 = sfe + (c * DIM + 2) * NPE;
#endif
        real acc = 0;
#pragma unroll
        for (int m = 0; m < NP; ++m) {
            acc += TI(m) * f0[l + (m - i)];
            acc += TJ(m) * f1[l + (m - j) * NP];
#if DIM == 3
            acc += TK(m) * f2[l + (m - k) * NPLANE];
#endif
        }
        r[c] = acc;
    }
    // interior nodes: the leapfrog update here (and K u kept in kfull on energy steps);
    // skeleton nodes: accumulate
    if (active) {
        if (slot < 0) {
            const real m = step_scale[node];
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                const size_t d = (size_t)node * NC + c;
                up[d] = (real)2 * uv[c] - up[d] - m * r[c];
                if (kfull != nullptr) kfull[d] = r[c];
            }
        } else {
#pragma unroll
            for (int c = 0; c < NC; ++c) atomicAdd(&ku[(size_t)node * NC + c], r[c]);
        }
    }
}
#endif

// The plain leapfrog update of skeleton nodes 0..n: u+ = 2u - u- - (dt^2/m) (K u), into
// up; the accumulator is zeroed for the next step (and copied to kfull on energy steps).
extern "C" __global__ void wave_update(u32 n, const real* FF_RESTRICT u, real* FF_RESTRICT up,
                                       real* FF_RESTRICT ku,
                                       const real* FF_RESTRICT step_scale,
                                       real* FF_RESTRICT kfull) {
    const u32 node = blockIdx.x * blockDim.x + threadIdx.x;
    if (node < n) {
        const real m = step_scale[node];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            const size_t d = (size_t)node * NC + c;
            const real k = ku[d];
            up[d] = (real)2 * u[d] - up[d] - m * k;
            ku[d] = (real)0;
            if (kfull != nullptr) kfull[d] = k;
        }
    }
}

// The damped update of absorbing nodes first + a, a < n: u+ = A+^-1 (2 m u - A- u- -
// dt^2 K u), in double; absorbing[a] holds (m, A+^-1 [NC][NC], A- [NC][NC]).
extern "C" __global__ void wave_absorb(u32 n, u32 first, double dt2, const real* FF_RESTRICT u,
                                       real* FF_RESTRICT up, real* FF_RESTRICT ku,
                                       const double* FF_RESTRICT absorbing,
                                       real* FF_RESTRICT kfull) {
    const u32 a = blockIdx.x * blockDim.x + threadIdx.x;
    if (a < n) {
        const u32 node = first + a;
        const double* data = absorbing + (size_t)a * (1 + 2 * NC * NC);
        const double mass = data[0];
        double uc[NC], upc[NC], kc[NC], rhs[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            const size_t d = (size_t)node * NC + c;
            uc[c] = (double)u[d];
            upc[c] = (double)up[d];
            kc[c] = (double)ku[d];
        }
#pragma unroll
        for (int r = 0; r < NC; ++r) {
            double s = 2.0 * mass * uc[r] - dt2 * kc[r];
#pragma unroll
            for (int c = 0; c < NC; ++c) s -= data[1 + NC * NC + r * NC + c] * upc[c];
            rhs[r] = s;
        }
#pragma unroll
        for (int r = 0; r < NC; ++r) {
            double v = 0.0;
#pragma unroll
            for (int c = 0; c < NC; ++c) v += data[1 + r * NC + c] * rhs[c];
            const size_t d = (size_t)node * NC + r;
            up[d] = (real)v;
            if (kfull != nullptr) kfull[d] = ku[d];
            ku[d] = (real)0;
        }
    }
}

// The step's clock on the device, so that a captured sequence of steps (a CUDA graph) can be
// replayed: clock[0] the step k being taken, clock[1] the slot of its receiver samples in
// the batch; advanced by wave_tick at the end of each step.

// Sources at step k = clock[0]: field[target[s]] += coef[s] * wavelet[source[s] * nsteps + k]
// (into u+ with coef dt^2 M^-1 weight, or out of K u on energy steps with coef -weight).
extern "C" __global__ void wave_inject(u32 n, const u32* FF_RESTRICT clock, u32 nsteps,
                                       const u32* FF_RESTRICT target,
                                       const u32* FF_RESTRICT source,
                                       const double* FF_RESTRICT coef,
                                       const double* FF_RESTRICT wavelet,
                                       real* FF_RESTRICT field) {
    const u32 s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < n) {
        const double w = wavelet[(size_t)source[s] * nsteps + clock[0]];
        if (w != 0.0) atomicAdd(&field[target[s]], (real)(coef[s] * w));
    }
}

// Receivers into batch slot clock[1]: out[(clock[1] * nrec + rec) * NC + c] = sum_i
// values[rec][i] field[nodes[rec][i] * NC + c] over the NPE nodes of the receiver's element.
extern "C" __global__ void wave_record(u32 nrec, const u32* FF_RESTRICT nodes,
                                       const double* FF_RESTRICT values,
                                       const real* FF_RESTRICT field,
                                       const u32* FF_RESTRICT clock, double* FF_RESTRICT out) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    out += (size_t)clock[1] * nrec * NC;
    if (t < nrec * NC) {
        const u32 rec = t / NC, c = t - rec * NC;
        double s = 0.0;
        for (int i = 0; i < NPE; ++i)
            s += values[(size_t)rec * NPE + i] * (double)field[(size_t)nodes[(size_t)rec * NPE + i] * NC + c];
        out[t] = s;
    }
}

// The end of a step: the clock advances.
extern "C" __global__ void wave_tick(u32* FF_RESTRICT clock) {
    if (threadIdx.x == 0) {
        clock[0] += 1;
        clock[1] += 1;
    }
}

// The discrete energy's two sums over the nodes 0..n, into out[0] (kinetic, sum of
// (u+ - u)^2 / (dt^2 / m)) and out[1] (potential, sum of u+ (K u - F)); out zeroed before.
// Nodes held at zero (dt^2 / m = 0) do not count, nor, on a part of a distributed mesh,
// those another rank owns (owned[node] = 0; owned null: every node counts).
extern "C" __global__ void wave_energy(u32 n, const real* FF_RESTRICT next,
                                       const real* FF_RESTRICT u,
                                       const real* FF_RESTRICT kfull,
                                       const real* FF_RESTRICT step_scale,
                                       const unsigned char* FF_RESTRICT owned,
                                       double* FF_RESTRICT out) {
    double kin = 0.0, pot = 0.0;
    for (u32 node = blockIdx.x * blockDim.x + threadIdx.x; node < n;
         node += gridDim.x * blockDim.x) {
        const real m = step_scale[node];
        if (m == (real)0 || (owned != nullptr && !owned[node])) continue;
#pragma unroll
        for (int c = 0; c < NC; ++c) {
            const size_t d = (size_t)node * NC + c;
            const real nx = next[d];
            const double v = (double)(nx - u[d]);
            kin += v * v / (double)m;
            pot += (double)nx * (double)kfull[d];
        }
    }
    __shared__ double2 sums[32];
    for (int o = 16; o > 0; o >>= 1) {
        kin += __shfl_down_sync(0xffffffffu, kin, o);
        pot += __shfl_down_sync(0xffffffffu, pot, o);
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) sums[warp] = make_double2(kin, pot);
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)((blockDim.x + 31) >> 5); ++w) {
            kin += sums[w].x;
            pot += sums[w].y;
        }
        atomicAdd(&out[0], kin);
        atomicAdd(&out[1], pot);
    }
}
