// The speed corpus's stencils in CUDA C (benches/speed/): the twins of stencil.rs beside this
// file, compiled by NVRTC with its default options, launched with the same grids.

#define C0 0.5f
#define C1 0.125f
#define D0 0.4f
#define D1 0.1f

extern "C" __global__ void stencil2d(const float* __restrict__ u, float* __restrict__ v, int ny, int nx) {
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < ny && j < nx) {
        int p = i * nx + j;
        if (i > 0 && j > 0 && i + 1 < ny && j + 1 < nx)
            v[p] = C0 * u[p] + C1 * (u[p - nx] + u[p + nx] + u[p - 1] + u[p + 1]);
        else
            v[p] = u[p];
    }
}

extern "C" __global__ void stencil3d(const float* __restrict__ u, float* __restrict__ v, int nz, int ny, int nx) {
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    int i = blockIdx.y * blockDim.y + threadIdx.y;
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < nz && i < ny && j < nx) {
        int plane = ny * nx;
        int p = k * plane + i * nx + j;
        if (k > 0 && i > 0 && j > 0 && k + 1 < nz && i + 1 < ny && j + 1 < nx)
            v[p] = D0 * u[p] + D1 * (u[p - plane] + u[p + plane] + u[p - nx] + u[p + nx] + u[p - 1] + u[p + 1]);
        else
            v[p] = u[p];
    }
}
