// The speed corpus's compute kernels in CUDA C (benches/speed/): the twins of science.rs beside
// this file, compiled by NVRTC with its default options, launched with the same grids.

#define NB 256

// Bodies are float4 (x, y, z, mass); accelerations float3.
extern "C" __global__ void nbody(const float4* __restrict__ bodies, float3* __restrict__ acc, int n, float soft2) {
    __shared__ float4 tile[NB];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x;
    float4 me = i < n ? bodies[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float ax = 0.0f, ay = 0.0f, az = 0.0f;
    for (int base = 0; base < n; base += NB) {
        tile[t] = base + t < n ? bodies[base + t] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        __syncthreads();
        for (int k = 0; k < NB; k++) {
            float4 b = tile[k];
            float dx = b.x - me.x, dy = b.y - me.y, dz = b.z - me.z;
            float inv = rsqrtf(dx * dx + dy * dy + dz * dz + soft2);
            float s = b.w * inv * inv * inv;
            ax += dx * s;
            ay += dy * s;
            az += dz * s;
        }
        __syncthreads();
    }
    if (i < n) acc[i] = make_float3(ax, ay, az);
}

__device__ float cnd(float d) {
    return 0.5f * erfcf(-d * 0.70710678118654752f);
}

extern "C" __global__ void black_scholes(const float* __restrict__ s, const float* __restrict__ k, const float* __restrict__ t, float r, float v,
                                         float* __restrict__ call, float* __restrict__ put, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float si = s[i], ki = k[i], ti = t[i];
        float sq = sqrtf(ti);
        float d1 = (logf(si / ki) + (r + 0.5f * v * v) * ti) / (v * sq);
        float d2 = d1 - v * sq;
        float e = expf(-r * ti);
        call[i] = si * cnd(d1) - ki * e * cnd(d2);
        put[i] = ki * e * cnd(-d2) - si * cnd(-d1);
    }
}

extern "C" __global__ void mandelbrot(unsigned* __restrict__ out, int rows, int cols, float x0, float y0, float dx, float dy, unsigned max_iter) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row < rows && col < cols) {
        float cx = x0 + col * dx, cy = y0 + row * dy;
        float x = 0.0f, y = 0.0f;
        unsigned it = 0;
        while (it < max_iter && x * x + y * y <= 4.0f) {
            float xt = x * x - y * y + cx;
            y = 2.0f * x * y + cy;
            x = xt;
            it++;
        }
        out[row * cols + col] = it;
    }
}
