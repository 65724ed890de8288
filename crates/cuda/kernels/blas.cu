// Level-1 vector kernels for the device solvers, and a copy kernel for the bandwidth roofline.
// Grid-stride loops; n is 64-bit so vectors above 2^31 entries work.

extern "C" __global__ void ff_copy(const real* FF_RESTRICT x, real* FF_RESTRICT y, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = x[i];
}

// y = a*x + y
extern "C" __global__ void ff_axpy(real a, const real* FF_RESTRICT x, real* FF_RESTRICT y, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

// y = x + b*y
extern "C" __global__ void ff_xpby(const real* FF_RESTRICT x, real b, real* FF_RESTRICT y, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        y[i] = x[i] + b * y[i];
}

// z = x .* y
extern "C" __global__ void ff_pointwise_mult(const real* FF_RESTRICT x, const real* FF_RESTRICT y, real* FF_RESTRICT z, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        z[i] = x[i] * y[i];
}

// y[idx[k]] = value for k < m (e.g. zero Dirichlet rows)
extern "C" __global__ void ff_set_indices(real* FF_RESTRICT y, const u32* FF_RESTRICT idx, real value, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
        y[idx[k]] = value;
}

// y[idx[k]] = x[idx[k]] for k < m
extern "C" __global__ void ff_copy_indices(const real* FF_RESTRICT x, real* FF_RESTRICT y, const u32* FF_RESTRICT idx, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
        y[idx[k]] = x[idx[k]];
}

// The sum of every thread's acc over the block, written by thread 0 to *out (blockDim.x a
// power of two <= 1024).
__device__ void ff_block_sum(double acc, double* out) {
    __shared__ double s[1024];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned int w = blockDim.x / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = s[0];
}

// Partial dot products: one double per block (accumulated in double for f32 too), reduced on the host
// or by ff_sum_partials. blockDim.x must be a power of two <= 1024.
extern "C" __global__ void ff_dot_partial(const real* FF_RESTRICT x, const real* FF_RESTRICT y, double* FF_RESTRICT partial, u64 n) {
    double acc = 0.0;
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        acc += (double)x[i] * (double)y[i];
    ff_block_sum(acc, &partial[blockIdx.x]);
}

// The same over the listed entries only: sum of x[idx[k]] * y[idx[k]] for k < m.
extern "C" __global__ void ff_dot_indices_partial(const real* FF_RESTRICT x, const real* FF_RESTRICT y, const u32* FF_RESTRICT idx, double* FF_RESTRICT partial, u32 m) {
    double acc = 0.0;
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x)
        acc += (double)x[idx[k]] * (double)y[idx[k]];
    ff_block_sum(acc, &partial[blockIdx.x]);
}

// Sums m partials into out[0] with one block.
extern "C" __global__ void ff_sum_partials(const double* FF_RESTRICT partial, double* FF_RESTRICT out, u32 m) {
    double acc = 0.0;
    for (u32 i = threadIdx.x; i < m; i += blockDim.x) acc += partial[i];
    ff_block_sum(acc, out);
}

// x = a*x
extern "C" __global__ void ff_scale(real a, real* FF_RESTRICT x, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
        x[i] *= a;
}

// x = 1/x in place where x is positive and finite (a Jacobi preconditioner's inverse
// diagonal); any other entry is left as it is and *bad becomes the lowest such index (the
// host sets *bad to ~0 first). (v - v is NaN for an infinite v; v > 0 fails for NaN.)
extern "C" __global__ void ff_reciprocal(real* FF_RESTRICT x, u64* FF_RESTRICT bad, u64 n) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const real v = x[i];
        if (v > (real)0 && v - v == (real)0) x[i] = (real)1 / v;
        else atomicMin(bad, i);
    }
}
