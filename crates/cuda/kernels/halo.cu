// The halo of a part of a distributed mesh: the values at the nodes shared with other ranks,
// packed for the neighbours and, once theirs have arrived in the same layout, summed at every
// shared node in rank order, the order every holder adds in (so all holders get the same
// bits, and the same as the host's sum). nc values per node, node-major: value c of node n at
// n * nc + c.

// send[i * nc + c] = v[nodes[i] * nc + c]
extern "C" __global__ void halo_pack(u32 n, u32 nc, const u32* FF_RESTRICT nodes,
                                     const real* FF_RESTRICT v, real* FF_RESTRICT send) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n * nc) {
        const u32 i = t / nc, c = t - i * nc;
        send[t] = v[(size_t)nodes[i] * nc + c];
    }
}

// v[nodes[k]] = the sum over terms[offsets[k]..offsets[k + 1]] in that order, each a received
// value's node index or 0xffffffff for this rank's own value.
extern "C" __global__ void halo_combine(u32 n, u32 nc, const u32* FF_RESTRICT nodes,
                                        const u32* FF_RESTRICT offsets,
                                        const u32* FF_RESTRICT terms,
                                        const real* FF_RESTRICT recv, real* FF_RESTRICT v) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n * nc) {
        const u32 k = t / nc, c = t - k * nc;
        const size_t d = (size_t)nodes[k] * nc + c;
        real sum = (real)0;
        for (u32 j = offsets[k]; j < offsets[k + 1]; ++j) {
            const u32 src = terms[j];
            sum += src == 0xffffffffu ? v[d] : recv[(size_t)src * nc + c];
        }
        v[d] = sum;
    }
}
