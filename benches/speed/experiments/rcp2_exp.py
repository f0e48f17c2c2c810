# rcp_exp.py's softmax variants, linked as kache's runtime links PTX, interleaved over many rounds
# (the GPU's clock moves the figures by about 2% between calls), with NVRTC's softmax loaded as
# the speed suite loads it. Prepared as rcp_exp.py (which writes the -f64 PTX; run it first, or
# write them with its `seq`), and `speed --dry-run` also writes nvrtc.ptx; on the GPU machine:
# python3 .gpu3/rcp2_exp.py 30   (docs/benchmarks.md, H200 run 21)
import cupy as cp, numpy as np, os, re, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link, softmax_data, copy_gbs
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
fs = {}
for kind in ("", "-unchecked"):
    for var in ("", "-f64"):
        f = cp.RawModule(path=link("kache-softmax_rows%s%s.ptx" % (kind, var))).get_function("softmax_rows")
        fs["kache%s%s" % (kind, var)] = (lambda f: lambda: f((rows,), (256,), (rec, np.uint32(7), x, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1),
                                                 y, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1))))(f)
nv = cp.RawModule(path="nvrtc.ptx").get_function("softmax_rows")
fs["nvrtc"] = lambda: nv((rows,), (256,), (x, y, np.int32(cols)))
for name, go in fs.items():
    y.fill(0); go(); print("%-22s err %.1e" % (name, float(cp.abs(y - ref).max())))
gbs = copy_gbs(); print("copy %.0f GB/s; 90%% of it: %.4f ms" % (gbs, 2 * rows * cols * 4 / (0.9 * gbs) / 1e6))
ts = {k: [] for k in fs}
for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 25):
    for name, go in fs.items():
        ts[name].append(timeit(go, reps=20, batches=10))
for name, t in ts.items():
    t = np.array(t)
    print("%-22s median %.4f ms (%.1f%% copy)  min %.4f  max %.4f" % (name, np.median(t), 100 * 2 * rows * cols * 4 / np.median(t) / 1e6 / gbs, t.min(), t.max()))
