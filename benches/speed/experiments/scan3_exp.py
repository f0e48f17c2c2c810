# The suite's kache scan with tiles taken by a ticket (an atomic counter, thread 0, then a barrier
# before the first load: kernels.rs's `scan` at 661a363) against the same with block b scanning
# tile b and the epoch passed by the host (kernels.rs's `scan` since), both loaded as kache's
# runtime loads PTX (cuLink), results checked; then scan2_exp.py's CUDA C twins, ticket or not,
# at launch bounds where NVRTC's code spills less. Here (no GPU), with kache built:
#   git show 661a363:benches/speed/kernels.rs > /tmp/k.rs   (keep from `fn warp_scan` on, and
#   BLOCK and FULL): kache compile /tmp/k.rs --kernel scan --arch sm_90 -o .gpu3/scan_t.ptx
#   the same from today's kernels.rs, its `scan` renamed `scan_nt`: .gpu3/scan_nt.ptx
#   cp benches/speed/experiments/{scan3_exp,scan2_exp,cuda_timing}.py .gpu3/
# then on the GPU machine: python3 .gpu3/scan3_exp.py   (docs/benchmarks.md, H200 run 20)
import ctypes as C, cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link
import scan2_exp as s2
n = s2.N; u = s2.u; ref = s2.ref; y = cp.empty_like(u); rec = cp.zeros(8, dtype=cp.uint32)
tiles = n // 4096
kt = cp.RawModule(path=link("scan_t.ptx")).get_function("scan")
knt = cp.RawModule(path=link("scan_nt.ptx")).get_function("scan_nt")
status = cp.zeros(tiles, dtype=cp.uint64); ticket = cp.zeros(1, dtype=cp.uint64)
status2 = cp.zeros(tiles, dtype=cp.uint64); ep = [0]
def go_t():
    kt((tiles,), (256,), (rec, np.uint32(7), u, np.uint64(n), np.uint64(1), y, np.uint64(n), np.uint64(1),
                          status, np.uint64(tiles), np.uint64(1), ticket, np.uint64(1), np.uint64(1)))
def go_nt():
    ep[0] += 1
    knt((tiles,), (256,), (rec, np.uint32(7), u, np.uint64(n), np.uint64(1), y, np.uint64(n), np.uint64(1),
                           status2, np.uint64(tiles), np.uint64(1), np.uint64(ep[0])))
for rep in range(3):
    for name, go in (("kache ticket (suite)", go_t), ("kache block index", go_nt)):
        y.fill(0); go(); cp.cuda.Device().synchronize(); ok = bool((y == ref).all())
        t = timeit(go)
        s2.p("%-24s %.4f ms  %.1f%% of copy  ok=%s" % (name, t, 100 * 2 * (n * 4) / t / 1e6 / s2.COPY, ok))
    for args in [(1, 0, 16, 6), (0, 0, 16, 6), (1, 0, 8, 8), (0, 0, 8, 8)]:
        s2.variant(*args)
