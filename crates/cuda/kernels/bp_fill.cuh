// Launch helpers and the small kernels around an apply, shared by the pencil (bp_pencil.cu)
// and lattice (bp_lattice.cu) bake-off kernels: programmatic dependent launch, the Dirichlet
// rows' identity, and the skeleton fill before an apply.

// programmatic dependent launch (sm_90): let the next launch in the stream start, and wait
// for the previous one to complete with its stores visible; no-ops on earlier devices,
// where the launches are simply stream-ordered
__device__ __forceinline__ void pdl_trigger() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

extern "C" __global__ void bp_dirichlet_identity(const u32* FF_RESTRICT idx, const real* FF_RESTRICT u, real* FF_RESTRICT v, u32 m) {
    for (u32 k = blockIdx.x * blockDim.x + threadIdx.x; k < m; k += gridDim.x * blockDim.x) v[idx[k]] = u[idx[k]];
}

// The skeleton fill before an apply: v[0 .. n) = 0, one contiguous chunk of ZCHUNK values
// (-D by the host, which sizes the grid by it) per block, the chunks in reverse order. Blocks are dispatched in
// increasing index order, so the lowest lines (the skeleton owned by the first element
// groups, which the apply's first blocks accumulate into) are written last and are still
// in L2 when the apply starts; a memset writes them first and the atomics read them back
// from DRAM.
#ifndef ZCHUNK
#error "ZCHUNK (values per block of the skeleton fill) comes from the host"
#endif
extern "C" __global__ void __launch_bounds__(256) bp_zero_skeleton(real* FF_RESTRICT v, u32 n) {
    // an apply launched after this fill with programmatic dependent launch may start at once:
    // it gathers and contracts while the zeros are written, and waits for them before its
    // scatter
    pdl_trigger();
    const u32 chunk = gridDim.x - 1 - blockIdx.x;
    const u32 end = (chunk + 1) * ZCHUNK < n ? (chunk + 1) * ZCHUNK : n;
    for (u32 i = chunk * ZCHUNK + threadIdx.x; i < end; i += blockDim.x) v[i] = (real)0;
}
