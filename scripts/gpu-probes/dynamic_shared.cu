// Where the driver puts dynamic shared memory beside static shared memory (for an extern
// declared 1024-byte aligned, as kache declared it before dynamic_shared_array aligned itself).
// On a GPU machine: nvcc -arch=sm_90 -o /tmp/dynamic_shared scripts/gpu-probes/dynamic_shared.cu && /tmp/dynamic_shared
#include <cstdio>
__global__ void k1024(unsigned* out) {
  __shared__ unsigned long long bar[4];
  extern __shared__ __align__(1024) unsigned char dyn[];
  bar[threadIdx.x & 3] = threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0) {
    out[0] = (unsigned)__cvta_generic_to_shared(dyn);
    out[1] = (unsigned)__cvta_generic_to_shared(bar);
    dyn[0] = (unsigned char)bar[1];
  }
}
__global__ void knostatic(unsigned* out) {
  extern __shared__ __align__(1024) unsigned char dyn2[];
  if (threadIdx.x == 0) { out[2] = (unsigned)__cvta_generic_to_shared(dyn2); dyn2[0] = 1; }
}
int main() {
  unsigned* d; cudaMalloc(&d, 16); cudaMemset(d, 0xff, 16);
  k1024<<<1, 32, 4096>>>(d);
  knostatic<<<1, 32, 4096>>>(d);
  unsigned h[4]; cudaMemcpy(h, d, 16, cudaMemcpyDeviceToHost);
  printf("static+dynamic: dyn at %u, static at %u; dynamic only: dyn at %u; %s\n", h[0], h[1], h[2], cudaGetErrorString(cudaGetLastError()));
}
