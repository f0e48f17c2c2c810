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

extern "C" __global__ void reduce_while(const float* __restrict__ x, int n, float* out) {
    __shared__ float tile[BLOCK];
    int t = threadIdx.x;
    int stride = blockDim.x * gridDim.x;
    float acc = 0.0f;
    int j = blockIdx.x * blockDim.x + t;
    while (j < n) {
        acc += x[j];
        j += stride;
    }
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

#define ITEMS 16

// The row in registers, 16 elements per thread: rows of up to BLOCK * ITEMS = 4096 columns.
extern "C" __global__ void __launch_bounds__(256, 6) softmax_rows(const float* __restrict__ x, float* __restrict__ y, int cols) {
    __shared__ float warp_max[32];
    __shared__ float warp_sum[32];
    int row = blockIdx.x, t = threadIdx.x;
    const float* xr = x + (size_t)row * cols;
    float* yr = y + (size_t)row * cols;
    float v[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        int j = t + k * BLOCK;
        v[k] = -__int_as_float(0x7f800000);
        if (j < cols) v[k] = xr[j];
    }
    float mine = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) mine = fmaxf(mine, v[k]);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        v[k] = t + k * BLOCK < cols ? expf(v[k] - mine) : 0.0f;
        s += v[k];
    }
    float m = mine;
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
    float scale = rescale(1.0f / total, mine, mx);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        int j = t + k * BLOCK;
        if (j < cols) yr[j] = v[k] * scale;
    }
}

extern "C" __global__ void __launch_bounds__(1024, 2) matmul_tiled(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c, int n) {
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

#define AGGREGATE (1ull << 32)
#define PREFIX (2ull << 32)
#define EPOCH_SHIFT 34

__device__ unsigned warp_total(unsigned v) {
    for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(FULL, v, d);
    return v;
}

// Decoupled look-back by one warp (see kernels.rs): statuses read with a volatile load.
__device__ unsigned look_back(unsigned long long* status, unsigned tile, unsigned long long epoch, unsigned lane) {
    unsigned sum = 0;
    unsigned end = tile;
    bool done = tile == 0;
    while (!done) {
        unsigned long long s = 0;
        bool ready = false;
        while (!ready) {
            s = lane < end ? *(volatile unsigned long long*)&status[end - 1 - lane] : (epoch << EPOCH_SHIFT) | PREFIX;
            ready = __all_sync(FULL, (s >> EPOCH_SHIFT) == epoch);
        }
        unsigned prefixes = __ballot_sync(FULL, (s & PREFIX) != 0);
        unsigned nearest = prefixes == 0 ? 32 : __ffs(prefixes) - 1;
        sum += warp_total(lane <= nearest ? (unsigned)s : 0u);
        done = nearest < 32;
        if (!done) end -= 32;
    }
    return sum;
}

// Single-pass inclusive scan (decoupled look-back), as kernels.rs's `scan`: loads and stores
// coalesced through a per-warp stage buffer in shared memory.
template <int SCAN_ITEMS>
__device__ __forceinline__ void scan_tiles(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long epoch) {
    __shared__ unsigned warp_totals[32];
    __shared__ unsigned before_tile;
    // A warp's part of the stage buffer: element i at i + i / 32 (see kernels.rs).
    __shared__ unsigned stage[BLOCK / 32][33 * SCAN_ITEMS];
    int t = threadIdx.x;
    unsigned lane = t % 32;
    int w = t / 32;
    unsigned tile = blockIdx.x;  // blocks start in index order (see kernels.rs)
    int base = tile * (BLOCK * SCAN_ITEMS) + w * 32 * SCAN_ITEMS;
    unsigned* own = stage[w];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int i = k * 32 + lane;
        own[i + i / 32] = base + i < n ? x[base + i] : 0u;
    }
    __syncwarp();
    unsigned v[SCAN_ITEMS];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int i = lane * SCAN_ITEMS + k;
        v[k] = own[i + i / 32];
    }
#pragma unroll
    for (int k = 1; k < SCAN_ITEMS; k++) v[k] += v[k - 1];
    unsigned mine = v[SCAN_ITEMS - 1];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int i = lane * SCAN_ITEMS + k;
        own[i + i / 32] = v[k];
    }
    unsigned inclusive = warp_scan(mine, lane);
    if (lane == 31) warp_totals[w] = inclusive;
    __syncthreads();
    if (w == 0) {
        unsigned total = lane < BLOCK / 32 ? warp_totals[lane] : 0;
        unsigned scanned = warp_scan(total, lane);
        unsigned tile_sum = __shfl_sync(FULL, scanned, BLOCK / 32 - 1);
        warp_totals[lane] = scanned;
        if (lane == 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | (tile == 0 ? PREFIX : AGGREGATE) | tile_sum);
        unsigned sum = look_back(status, tile, epoch, lane);
        if (lane == 0) {
            if (tile > 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | PREFIX | (unsigned long long)(sum + tile_sum));
            before_tile = sum;
        }
    }
    __syncthreads();
    unsigned before = before_tile + inclusive - mine + (w > 0 ? warp_totals[w - 1] : 0);
    base = blockIdx.x * (BLOCK * SCAN_ITEMS) + w * 32 * SCAN_ITEMS;  // afresh, as kernels.rs
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int i = lane * SCAN_ITEMS + k;
        own[i + i / 32] += before;
    }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) {
        int i = k * 32 + lane;
        if (base + i < n) y[base + i] = own[i + i / 32];
    }
}

// The suite's scan (16 elements per thread, tiles of 4096) under kache's launch bounds, the same
// with 8 (tiles of 2048), and under (256, 6), room for 40 registers: NVRTC's fastest, the row
// the suite compares kache with (suite.rs).
extern "C" __global__ void __launch_bounds__(256, 8) scan(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long epoch) {
    scan_tiles<16>(x, n, y, status, epoch);
}
extern "C" __global__ void __launch_bounds__(256, 8) scan_t2048(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long epoch) {
    scan_tiles<8>(x, n, y, status, epoch);
}
extern "C" __global__ void __launch_bounds__(256, 6) scan_lb6(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long epoch) {
    scan_tiles<16>(x, n, y, status, epoch);
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
