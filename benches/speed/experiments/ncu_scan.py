# Two launches each of scan2_exp.py's CUDA C scan with the ticket and without (16 per thread,
# (256, 8)), for Nsight Compute on the GPU machine (results/h200-run20/ncu-scan.txt):
#   ncu --clock-control none -k regex:scan --launch-skip 1 -c 3 --section SpeedOfLight \
#     --section WarpStateStats --section LaunchStats --section Occupancy python3 .gpu3/ncu_scan.py
# (with scan2_exp.py beside it).
import cupy as cp, numpy as np, os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
src = open("scan2_exp.py").read()
SRC = src[src.index("SRC = r'''") + 10: src.index("'''\ndef variant")]
N = 1 << 28; u = (cp.random.random(N) * 4).astype(cp.uint32); y = cp.empty_like(u)
for ticket in (1, 0):
    f = cp.RawModule(code=SRC, options=("-DTICKET=%d" % ticket, "-DSLEEP=0", "-DSCAN_ITEMS=16", "-DMINB=8", "-DNOLOOK=0", "-arch=sm_90")).get_function("scan")
    tiles = N // 4096; status = cp.zeros(tiles, dtype=cp.uint64); t = cp.zeros(1, dtype=cp.uint64)
    for ep in (1, 2):
        f((tiles,), (256,), (u, np.int32(N), y, status, t, np.uint64(ep)))
cp.cuda.Device().synchronize(); print("done")
