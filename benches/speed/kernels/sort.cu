// The speed corpus's sorting pieces in CUDA C (benches/speed/): the twins of sort.rs beside
// this file, compiled by NVRTC with its default options, launched with the same grids.

#define BINS 256
#define FULL 0xffffffffu

extern "C" __global__ void bitonic_step(const unsigned* __restrict__ x, unsigned* __restrict__ y, int n, unsigned j, unsigned k) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        unsigned p = i ^ j;
        unsigned a = x[i], b = x[p];
        bool ascending = (i & k) == 0;
        y[i] = (i < p) == ascending ? min(a, b) : max(a, b);
    }
}

extern "C" __global__ void radix_hist(const unsigned* __restrict__ keys, int n, unsigned* counts) {
    __shared__ unsigned local[4 * BINS];
    int t = threadIdx.x;
    for (int d = 0; d < 4; d++) local[d * BINS + t] = 0;
    __syncthreads();
    int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + t; i < n; i += stride) {
        unsigned key = keys[i];
        for (int d = 0; d < 4; d++) atomicAdd(&local[d * BINS + ((key >> (8 * d)) & 255)], 1u);
    }
    __syncthreads();
    for (int d = 0; d < 4; d++) {
        unsigned c = local[d * BINS + t];
        if (c > 0) atomicAdd(&counts[d * BINS + t], c);
    }
}

extern "C" __global__ void compact(const float* __restrict__ x, int n, float threshold, float* __restrict__ out, unsigned* count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    bool keep = i < n && x[i] > threshold;
    unsigned mask = __ballot_sync(FULL, keep);
    unsigned lane = threadIdx.x % 32;
    unsigned base = 0;
    if (lane == 0 && mask != 0) base = atomicAdd(count, __popc(mask));
    base = __shfl_sync(FULL, base, 0);
    if (keep) out[base + __popc(mask & ((1u << lane) - 1))] = x[i];
}
