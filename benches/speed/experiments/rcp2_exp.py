# rcp_exp.py's softmax variants, linked as kache's runtime links PTX, interleaved over many rounds
# (the GPU's clock moves the figures by about 2% between calls), with NVRTC's softmax loaded as
# the speed suite loads it. Prepared as rcp_exp.py (which writes the -f64 PTX; run it first, or
# write them with its `seq`), and `speed --dry-run` also writes nvrtc.ptx; on the GPU machine:
# python3 .gpu3/rcp2_exp.py 30   (docs/benchmarks.md, H200 run 21)
import cupy as cp, numpy as np, os, re, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import link, softmax_data, kache_softmax, interleaved
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
fs = {}
for kind in ("", "-unchecked"):
    for var in ("", "-f64"):
        f = cp.RawModule(path=link("kache-softmax_rows%s%s.ptx" % (kind, var))).get_function("softmax_rows")
        fs["kache%s%s" % (kind, var)] = kache_softmax(f, x, y, rec, rows, cols)
nv = cp.RawModule(path="nvrtc.ptx").get_function("softmax_rows")
fs["nvrtc"] = lambda: nv((rows,), (256,), (x, y, np.int32(cols)))
interleaved(fs, int(sys.argv[1]) if len(sys.argv) > 1 else 25, y, ref, 2 * rows * cols * 4)
