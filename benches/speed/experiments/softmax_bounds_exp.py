# The softmax's launch bounds (256, k), k = 5..8: kache's PTX (checked and unchecked) with
# .minnctapersm k, linked as kache's runtime loads PTX, and cuda.cu's softmax_rows with
# __launch_bounds__(256, k) through NVRTC; results checked, CUDA events after warm-up. Here:
#   target/release/examples/speed --dry-run --only softmax --ptx /tmp/p
#   for k in "" -unchecked; do for mb in 5 6 7 8; do sed "s/.minnctapersm 6/.minnctapersm $mb/" \
#     /tmp/p/kache-softmax_rows$k.ptx > .gpu3/sm$k-$mb.ptx; done; done
#   cp benches/speed/experiments/{softmax_bounds_exp,cuda_timing}.py .gpu3/
# then on the GPU machine (from the repository's root): python3 .gpu3/softmax_bounds_exp.py
import ctypes as C, cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link, copy_gbs, softmax_data
copy = copy_gbs()
print("copy %.0f GB/s" % copy)
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
cu_src = open("../benches/speed/cuda.cu").read()
assert "__launch_bounds__(256, 6) softmax_rows" in cu_src
for rep in range(2):
    for mb in (5, 6, 7, 8):
        for k in ("", "-unchecked"):
            f = cp.RawModule(path=link("sm%s-%d.ptx" % (k, mb))).get_function("softmax_rows")
            go = lambda: f((rows,), (256,), (rec, np.uint32(7), x, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1),
                                             y, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1)))
            y.fill(0); go(); err = float(cp.abs(y - ref).max())
            t = timeit(go)
            print("(256,%d) kache%-10s %.4f ms %5.1f%%  err %.1e" % (mb, k, t, 100 * 2 * rows * cols * 4 / t / 1e6 / copy, err)); sys.stdout.flush()
        src = cu_src.replace("__launch_bounds__(256, 6) softmax_rows", "__launch_bounds__(256, %d) softmax_rows" % mb)
        f = cp.RawModule(code=src, options=("-arch=sm_90",)).get_function("softmax_rows")
        go = lambda: f((rows,), (256,), (x, y, np.int32(cols)))
        y.fill(0); go(); err = float(cp.abs(y - ref).max())
        t = timeit(go)
        print("(256,%d) nvrtc           %.4f ms %5.1f%%  err %.1e" % (mb, t, 100 * 2 * rows * cols * 4 / t / 1e6 / copy, err)); sys.stdout.flush()
