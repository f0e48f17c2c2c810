// The speed corpus's matrix kernels in CUDA C (benches/speed/): the twins of matrix.rs beside
// this file, written as a CUDA programmer writes them (int indices where the sizes fit, const
// __restrict__ inputs), compiled by NVRTC with its default options, launched with the same grids.

#define TILE 32
#define ROWS 8
#define FULL 0xffffffffu

__device__ float warp_sum(float v) {
    for (int d = 16; d > 0; d /= 2) v += __shfl_down_sync(FULL, v, d);
    return v;
}

extern "C" __global__ void transpose_naive(const float* __restrict__ a, float* __restrict__ t, int rows, int cols) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows && j < cols) t[j * rows + i] = a[i * cols + j];
}

extern "C" __global__ void transpose_tiled(const float* __restrict__ a, float* __restrict__ t, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int tx = threadIdx.x, ty = threadIdx.y;
    int bx = blockIdx.x * TILE, by = blockIdx.y * TILE;
    for (int k = 0; k < TILE; k += ROWS) {
        int i = by + ty + k, j = bx + tx;
        if (i < rows && j < cols) tile[ty + k][tx] = a[i * cols + j];
    }
    __syncthreads();
    for (int k = 0; k < TILE; k += ROWS) {
        int i = bx + ty + k, j = by + tx;
        if (i < cols && j < rows) t[i * rows + j] = tile[tx][ty + k];
    }
}

extern "C" __global__ void gemv(const float* __restrict__ a, const float* __restrict__ x, float* __restrict__ y, int rows, int cols) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row < rows) {
        float acc = 0.0f;
        for (int j = lane; j < cols; j += 32) acc += a[row * cols + j] * x[j];
        float total = warp_sum(acc);
        if (lane == 0) y[row] = total;
    }
}

extern "C" __global__ void spmv_csr(const int* __restrict__ row_ptr, const int* __restrict__ cols, const float* __restrict__ vals,
                                    const float* __restrict__ x, float* __restrict__ y, int rows) {
    int row = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (row < rows) {
        float acc = 0.0f;
        for (int k = row_ptr[row] + lane; k < row_ptr[row + 1]; k += 32) acc += vals[k] * x[cols[k]];
        float total = warp_sum(acc);
        if (lane == 0) y[row] = total;
    }
}

// x is [channels][h][w], w is [out channels][channels][3][3], y is [out channels][h][w].
extern "C" __global__ void conv2d(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int channels, int h, int wd) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int co = blockIdx.z;
    if (r < h && c < wd) {
        float acc = 0.0f;
        for (int ci = 0; ci < channels; ci++)
            for (int ky = 0; ky < 3; ky++)
                for (int kx = 0; kx < 3; kx++) {
                    int iy = r + ky - 1, ix = c + kx - 1;
                    if (iy >= 0 && iy < h && ix >= 0 && ix < wd)
                        acc += x[(ci * h + iy) * wd + ix] * w[((co * channels + ci) * 3 + ky) * 3 + kx];
                }
        y[(co * h + r) * wd + c] = acc;
    }
}
