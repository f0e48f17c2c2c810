// The speed corpus's row kernels in CUDA C (benches/speed/): the twins of rows.rs beside this
// file, compiled by NVRTC with its default options, launched with the same grids.

#define BLOCK 256
#define FULL 0xffffffffu
#define EPS 1e-5f
#define K 8
// NVRTC has no math.h: -infinity by its bits.
#define NEG_INF __int_as_float(0xff800000)

__device__ float warp_sum(float v) {
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(FULL, v, d);
    return v;
}

// The sum over the block, in every thread; red is 32 floats of shared memory.
__device__ float block_sum(float v, float* red) {
    v = warp_sum(v);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++) total += red[w];
    __syncthreads();
    return total;
}

__device__ float block_max(float v, float* red) {
    for (int d = 16; d > 0; d /= 2) v = fmaxf(v, __shfl_down_sync(FULL, v, d));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
    __syncthreads();
    float m = NEG_INF;
    for (int w = 0; w < BLOCK / 32; w++) m = fmaxf(m, red[w]);
    __syncthreads();
    return m;
}

extern "C" __global__ void layernorm(const float* __restrict__ x, const float* __restrict__ gamma, const float* __restrict__ beta,
                                     float* __restrict__ y, int cols) {
    __shared__ float red[32];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float s = 0.0f, s2 = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) {
        float v = xr[j];
        s += v;
        s2 += v * v;
    }
    float mean = block_sum(s, red) / cols;
    float var = block_sum(s2, red) / cols - mean * mean;
    float inv = 1.0f / sqrtf(var + EPS);
    for (int j = threadIdx.x; j < cols; j += BLOCK) yr[j] = (xr[j] - mean) * inv * gamma[j] + beta[j];
}

extern "C" __global__ void rmsnorm(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int cols) {
    __shared__ float red[32];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float s2 = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) {
        float v = xr[j];
        s2 += v * v;
    }
    float inv = 1.0f / sqrtf(block_sum(s2, red) / cols + EPS);
    for (int j = threadIdx.x; j < cols; j += BLOCK) yr[j] = xr[j] * inv * w[j];
}

extern "C" __global__ void softmax3(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float red[32];
    const float* xr = x + blockIdx.x * cols;
    float* yr = y + blockIdx.x * cols;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < cols; j += BLOCK) m = fmaxf(m, xr[j]);
    m = block_max(m, red);
    float s = 0.0f;
    for (int j = threadIdx.x; j < cols; j += BLOCK) s += expf(xr[j] - m);
    s = block_sum(s, red);
    for (int j = threadIdx.x; j < cols; j += BLOCK) yr[j] = expf(xr[j] - m) / s;
}

// The K largest of each row and their columns, a warp per row (see rows.rs).
extern "C" __global__ void topk_rows(const float* __restrict__ x, float* __restrict__ vals, unsigned* __restrict__ idx, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    unsigned lane = threadIdx.x % 32;
    if (row >= rows) return;
    float top[K];
    unsigned at[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        top[k] = NEG_INF;
        at[k] = 0;
    }
    for (int j = lane; j < cols; j += 32) {
        float v = x[row * cols + j];
        if (v > top[K - 1]) {
            unsigned c = j;
#pragma unroll
            for (int k = 0; k < K; k++) {
                if (v > top[k]) {
                    float tv = top[k];
                    unsigned tc = at[k];
                    top[k] = v;
                    at[k] = c;
                    v = tv;
                    c = tc;
                }
            }
        }
    }
    for (int r = 0; r < K; r++) {
        float best = top[0];
        unsigned owner = lane;
        for (int d = 16; d > 0; d /= 2) {
            float other = __shfl_xor_sync(FULL, best, d);
            unsigned other_lane = __shfl_xor_sync(FULL, owner, d);
            if (other > best || (other == best && other_lane < owner)) {
                best = other;
                owner = other_lane;
            }
        }
        if (lane == owner) {
            vals[row * K + r] = top[0];
            idx[row * K + r] = at[0];
#pragma unroll
            for (int k = 0; k < K - 1; k++) {
                top[k] = top[k + 1];
                at[k] = at[k + 1];
            }
            top[K - 1] = NEG_INF;
        }
    }
}
