# Is what the driver's linker (cuLink*, as kache's runtime loads PTX: relocatable code) costs
# kache's softmax the call to ptxas's rcp.rn.f32 subroutine? The suite's softmax PTX, checked and
# unchecked, as it is and with its one rcp.rn.f32 replaced by rcp.approx.ftz.f32 (a test only:
# not IEEE), each loaded (cuModuleLoad, whole program) and linked. Here (no GPU):
#   cargo build --release --example speed
#   target/release/examples/speed --dry-run --only softmax --ptx .gpu3
#   cp benches/speed/experiments/link2_exp.py benches/speed/experiments/cuda_timing.py .gpu3/
# then on the GPU machine: python3 .gpu3/link2_exp.py   (docs/benchmarks.md, H200 run 20)
import ctypes as C, cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link, softmax_data, kache_softmax
for kind in ("", "-unchecked"):
    s = open("kache-softmax_rows%s.ptx" % kind).read()
    assert s.count("rcp.rn.f32") == 1
    open("kache-softmax_rows%s-approx.ptx" % kind, "w").write(s.replace("rcp.rn.f32", "rcp.approx.ftz.f32"))
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
for rep in range(3):
    for kind in ("", "-unchecked"):
        for var in ("", "-approx"):
            for how in ("load", "link"):
                ptx = "kache-softmax_rows%s%s.ptx" % (kind, var)
                f = cp.RawModule(path=ptx if how == "load" else link(ptx)).get_function("softmax_rows")
                go = kache_softmax(f, x, y, rec, rows, cols)
                y.fill(0); go(); err = float(cp.abs(y - ref).max())
                print("softmax%-10s %-8s %s %.4f ms  err %.1e" % (kind, var or "rcp.rn", how, timeit(go), err)); sys.stdout.flush()
