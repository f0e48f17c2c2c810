// The CUDA C side of the execution-speed suite (benches/speed/): the same algorithms as
// benches/speed/kernels.rs, written as a CUDA programmer writes them (int indices where the
// sizes fit, const __restrict__ inputs), compiled by NVRTC with its defaults (-fmad=true),
// launched with the same grids. Plus the FP32 FMA roofline kernel.

#define BLOCK 256
#define TILE 32
#define BINS 256
#define FULL 0xffffffffu

extern "C" __global__ void saxpy(float a, const float* __restrict__ x, float* __restrict__ y, int n) {
    int i = blockIdx.x * (BLOCK * 4) + threadIdx.x;
    if (i + 3 * BLOCK < n) {
        float x0 = x[i], x1 = x[i + BLOCK], x2 = x[i + 2 * BLOCK], x3 = x[i + 3 * BLOCK];
        float y0 = y[i], y1 = y[i + BLOCK], y2 = y[i + 2 * BLOCK], y3 = y[i + 3 * BLOCK];
        y[i] = a * x0 + y0;
        y[i + BLOCK] = a * x1 + y1;
        y[i + 2 * BLOCK] = a * x2 + y2;
        y[i + 3 * BLOCK] = a * x3 + y3;
    } else {
        for (int k = 0; k < 4; k++) {
            int j = i + k * BLOCK;
            if (j < n) y[j] = a * x[j] + y[j];
        }
    }
}

extern "C" __global__ void reduce_block(const float* __restrict__ x, int n, float* out) {
    __shared__ float tile[BLOCK];
    int t = threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    float acc = 0.0f;
    for (int j = blockIdx.x * blockDim.x + t; j < n; j += stride) acc += x[j];
    tile[t] = acc;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s) tile[t] += tile[t + s];
        __syncthreads();
    }
    if (t == 0) atomicAdd(out, tile[0]);
}

__device__ float warp_sum(float v) {
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(FULL, v, d);
    return v;
}

extern "C" __global__ void reduce_warp(const float* __restrict__ x, int n, float* out) {
    __shared__ float warps[32];
    int t = threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    float acc = 0.0f;
    for (int j = blockIdx.x * blockDim.x + t; j < n; j += stride) acc += x[j];
    acc = warp_sum(acc);
    int lane = t % 32, w = t / 32;
    if (lane == 0) warps[w] = acc;
    __syncthreads();
    if (w == 0) {
        float v = lane < BLOCK / 32 ? warps[lane] : 0.0f;
        float total = warp_sum(v);
        if (lane == 0) atomicAdd(out, total);
    }
}

__device__ float rescale(float s, float m, float to) {
    return m == to ? s : s * expf(m - to);
}

extern "C" __global__ void softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float warp_max[32];
    __shared__ float warp_sum[32];
    int row = blockIdx.x, t = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float m = -__int_as_float(0x7f800000);
    float s = 0.0f;
    for (int j = t; j < cols; j += BLOCK) {
        float v = xr[j];
        float e = expf(fminf(m, v) - fmaxf(m, v));
        s = v > m ? s * e + 1.0f : s + e;
        m = fmaxf(m, v);
    }
    for (int d = 16; d > 0; d /= 2) {
        float mo = __shfl_xor_sync(FULL, m, d);
        float so = __shfl_xor_sync(FULL, s, d);
        float to = fmaxf(m, mo);
        s = rescale(s, m, to) + rescale(so, mo, to);
        m = to;
    }
    if (t % 32 == 0) {
        warp_max[t / 32] = m;
        warp_sum[t / 32] = s;
    }
    __syncthreads();
    float mx = -__int_as_float(0x7f800000);
    for (int w = 0; w < BLOCK / 32; w++) mx = fmaxf(mx, warp_max[w]);
    float total = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++) total += rescale(warp_sum[w], warp_max[w], mx);
    float inv = 1.0f / total;
    for (int j = t; j < cols; j += BLOCK) yr[j] = expf(xr[j] - mx) * inv;
}

extern "C" __global__ void matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
    __shared__ float ta[TILE * TILE];
    __shared__ float tb[TILE * TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        ta[ty * TILE + tx] = a[(size_t)row * n + t + tx];
        tb[ty * TILE + tx] = b[(size_t)(t + ty) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++) acc += ta[ty * TILE + k] * tb[k * TILE + tx];
        __syncthreads();
    }
    c[(size_t)row * n + col] = acc;
}

extern "C" __global__ void histogram(const unsigned* __restrict__ x, int n, unsigned* bins) {
    __shared__ unsigned local[BINS];
    int t = threadIdx.x;
    local[t] = 0;
    __syncthreads();
    int stride = blockDim.x * gridDim.x;
    for (int j = blockIdx.x * blockDim.x + t; j < n; j += stride) atomicAdd(&local[x[j] & 255], 1u);
    __syncthreads();
    unsigned c = local[t];
    if (c > 0) atomicAdd(&bins[t], c);
}

__device__ unsigned warp_scan(unsigned v, unsigned lane) {
    for (unsigned d = 1; d < 32; d *= 2) {
        unsigned up = __shfl_up_sync(FULL, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

extern "C" __global__ void scan_blocks(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned* __restrict__ sums) {
    __shared__ unsigned warp_totals[32];
    int t = threadIdx.x;
    unsigned lane = t % 32;
    int w = t / 32;
    int base = blockIdx.x * (BLOCK * 4) + t * 4;
    unsigned v0 = 0, v1 = 0, v2 = 0, v3 = 0;
    if (base + 3 < n) {
        v0 = x[base];
        v1 = v0 + x[base + 1];
        v2 = v1 + x[base + 2];
        v3 = v2 + x[base + 3];
    } else {
        if (base < n) v0 = x[base];
        v1 = v0 + (base + 1 < n ? x[base + 1] : 0);
        v2 = v1 + (base + 2 < n ? x[base + 2] : 0);
        v3 = v2;
    }
    unsigned inclusive = warp_scan(v3, lane);
    if (lane == 31) warp_totals[w] = inclusive;
    __syncthreads();
    if (w == 0) {
        unsigned total = lane < BLOCK / 32 ? warp_totals[lane] : 0;
        warp_totals[lane] = warp_scan(total, lane);
    }
    __syncthreads();
    unsigned before = inclusive - v3 + (w > 0 ? warp_totals[w - 1] : 0);
    if (base < n) y[base] = before + v0;
    if (base + 1 < n) y[base + 1] = before + v1;
    if (base + 2 < n) y[base + 2] = before + v2;
    if (base + 3 < n) y[base + 3] = before + v3;
    if (t == BLOCK - 1) sums[blockIdx.x] = before + v3;
}

extern "C" __global__ void scan_add(unsigned* __restrict__ y, int n, const unsigned* __restrict__ scanned_sums) {
    int b = blockIdx.x;
    if (b > 0) {
        unsigned off = scanned_sums[b - 1];
        int base = b * (BLOCK * 4) + threadIdx.x;
        for (int k = 0; k < 4; k++) {
            int i = base + k * BLOCK;
            if (i < n) y[i] += off;
        }
    }
}

// The FP32 roofline: 8 independent FMA chains per thread, `iters` steps each.
extern "C" __global__ void fma_peak(float* out, int iters, float a, float b) {
    float x0 = threadIdx.x, x1 = x0 + 1, x2 = x0 + 2, x3 = x0 + 3, x4 = x0 + 4, x5 = x0 + 5, x6 = x0 + 6, x7 = x0 + 7;
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int k = 0; k < 16; k++) {
            x0 = fmaf(x0, a, b); x1 = fmaf(x1, a, b); x2 = fmaf(x2, a, b); x3 = fmaf(x3, a, b);
            x4 = fmaf(x4, a, b); x5 = fmaf(x5, a, b); x6 = fmaf(x6, a, b); x7 = fmaf(x7, a, b);
        }
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
}
