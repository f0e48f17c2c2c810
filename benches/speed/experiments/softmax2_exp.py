# The suite's softmax in CUDA C (one barrier: (max, sum) pairs combined, rescaling by exp)
# against a two-barrier form (the row's maximum first, then the exponentials relative to it and
# their sum: 16 exponentials per thread instead of about 30), both through NVRTC under (256, 6),
# results checked, CUDA events after warm-up. On the GPU machine, from the repository's root
# with cuda_timing.py beside it: python3 .gpu3/softmax2_exp.py   (docs/benchmarks.md, run 20)
import cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, copy_gbs, softmax_data
cu_src = open("../benches/speed/cuda.cu").read()
# The two-barrier form: the suite's softmax_rows as far as its row in registers, then its own
# tail (the row's maximum first, then the exponentials and their sum).
start = cu_src.index('extern "C" __global__ void __launch_bounds__(256, 6) softmax_rows(')
two = "\n" + cu_src[start:cu_src.index("    float mine = ", start)].replace("softmax_rows", "softmax_two") + r'''    float m = -__int_as_float(0x7f800000);
#pragma unroll
    for (int k = 0; k < ITEMS; k++) m = fmaxf(m, v[k]);
    for (int d = 16; d > 0; d /= 2) m = fmaxf(m, __shfl_xor_sync(FULL, m, d));
    if (t % 32 == 0) warp_max[t / 32] = m;
    __syncthreads();
    float mx = warp_max[0];
    for (int w = 1; w < BLOCK / 32; w++) mx = fmaxf(mx, warp_max[w]);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        v[k] = t + k * BLOCK < cols ? expf(v[k] - mx) : 0.0f;
        s += v[k];
    }
    for (int d = 16; d > 0; d /= 2) s += __shfl_xor_sync(FULL, s, d);
    if (t % 32 == 0) warp_sum[t / 32] = s;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < BLOCK / 32; w++) total += warp_sum[w];
    float scale = 1.0f / total;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        int j = t + k * BLOCK;
        if (j < cols) yr[j] = v[k] * scale;
    }
}
'''
mod = cp.RawModule(code=cu_src.replace("// The FP32 roofline", two + "\n// The FP32 roofline"), options=("-arch=sm_90",))
copy = copy_gbs()
print("copy %.0f GB/s" % copy)
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
for rep in range(3):
    for name in ("softmax_rows", "softmax_two"):
        f = mod.get_function(name)
        go = lambda: f((rows,), (256,), (x, y, np.int32(cols)))
        y.fill(0); go(); err = float(cp.abs(y - ref).max())
        t = timeit(go)
        print("%-13s %.4f ms %5.1f%%  err %.1e" % (name, t, 100 * 2 * rows * cols * 4 / t / 1e6 / copy, err)); sys.stdout.flush()
