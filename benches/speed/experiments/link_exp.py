# Is a kernel slower when its PTX is compiled by the driver's linker (cuLink*, as kache does)
# than by cuModuleLoad (as CuPy does), or by ptxas whole-program or relocatable (-c)? The suite's
# checked and unchecked softmax and scan, from variants_prepare.py's b256 PTX (run that here
# first); on the GPU machine: python3 .gpu3/link_exp.py
import ctypes as C, cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, '.')
from cuda_timing import timeit, link
def ptxas(ptx_path, rel):
    import subprocess
    p = ptx_path + (".rel.cubin" if rel else ".whole.cubin")
    subprocess.run(["ptxas", "-arch=sm_90"] + (["-c"] if rel else []) + [ptx_path, "-o", p], check=True)
    return p
rows, cols = 8192, 4096
x = cp.random.random((rows, cols), dtype=cp.float32) * 20 - 10; y = cp.empty_like(x)
n = 1 << 28; u = (cp.random.random(n) * 4).astype(cp.uint32); yu = cp.empty_like(u)
rec = cp.zeros(8, dtype=cp.uint32)
for rep in range(2):
    for kind in ("", "-unchecked"):
        for how in ("load", "link", "ptxas", "ptxas-c"):
            ptx = "b256-kache-softmax_rows%s.ptx" % kind
            f = cp.RawModule(path=ptx if how == "load" else (link(ptx) if how == "link" else ptxas(ptx, how == "ptxas-c"))).get_function("softmax_rows")
            go = lambda: f((rows,), (256,), (rec, np.uint32(7), x, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1),
                                             y, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1)))
            print("softmax%-10s %s %.4f ms" % (kind, how, timeit(go)))
            ptx = "b256-kache-scan%s.ptx" % kind
            f = cp.RawModule(path=ptx if how == "load" else (link(ptx) if how == "link" else ptxas(ptx, how == "ptxas-c"))).get_function("scan")
            tiles = n // 4096
            status = cp.zeros(tiles, dtype=cp.uint64); epoch = [0]
            def next_epoch():
                epoch[0] += 1
                return np.uint64(epoch[0])
            go = lambda: f((tiles,), (256,), (rec, np.uint32(7), u, np.uint64(n), np.uint64(1), yu, np.uint64(n), np.uint64(1),
                                              status, np.uint64(tiles), np.uint64(1), next_epoch()))
            print("scan%-13s %s %.4f ms" % (kind, how, timeit(go)))
            sys.stdout.flush()
