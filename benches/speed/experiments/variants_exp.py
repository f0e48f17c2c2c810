# Softmax and scan block-size variants: kache PTX (checked and unchecked) beside NVRTC (CuPy),
# 2^28 u32 scan, 8192 x 4096 softmax; CUDA events after warm-up, checked first. Its inputs come
# from variants_prepare.py (run here first); on the GPU machine: python3 variants_exp.py [VARIANT ...]
import cupy as cp, numpy as np, sys, os
os.chdir(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, '.')
from cuda_timing import timeit
V = {'b256': (256,16,16), 'b512': (512,8,16), 'b1024': (1024,4,8), 's5': (256,16,32)}
only = sys.argv[1:] or list(V)
a = cp.empty(1 << 28, dtype=cp.uint32); b = cp.empty_like(a)
t = timeit(lambda: cp.cuda.runtime.memcpyAsync(b.data.ptr, a.data.ptr, a.nbytes, 3, 0))
copy = 2 * a.nbytes / t / 1e6
print("copy %.0f GB/s" % copy); del a, b
rows, cols = 8192, 4096
rng = np.random.default_rng(4)
xh = (rng.random((rows, cols), dtype=np.float32) * 20 - 10).astype(np.float32)
x = cp.asarray(xh); y = cp.empty_like(x)
sample = rng.choice(rows, 64, replace=False)
ref = np.exp(xh[sample].astype(np.float64) - xh[sample].max(1, keepdims=True)); ref /= ref.sum(1, keepdims=True)
n = 1 << 28
uh = (rng.integers(0, 4, n)).astype(np.uint32); u = cp.asarray(uh); yu = cp.empty_like(u)
want = np.cumsum(uh, dtype=np.uint32)
rec = cp.zeros(8, dtype=cp.uint32)
def chk_soft():
    got = cp.asnumpy(y[cp.asarray(sample)]).astype(np.float64)
    return float(np.max(np.abs(got - ref) / ref))
for name in only:
    blk, items, sitems = V[name]
    mod = cp.RawModule(code=open(name + '.cu').read(), options=('--gpu-architecture=sm_90',))
    fs = {'nvrtc': mod.get_function('softmax_rows')}
    for kind in ('', '-unchecked'):
        fs['kache' + kind] = cp.RawModule(path='%s-kache-softmax_rows%s.ptx' % (name, kind)).get_function('softmax_rows')
    for imp, f in fs.items():
        if imp == 'nvrtc':
            go = lambda: f((rows,), (blk,), (x, y, np.int32(cols)))
        else:
            go = lambda: f((rows,), (blk,), (rec, np.uint32(7), x, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1),
                                              y, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1)))
        y.fill(0); go(); err = chk_soft()
        ms = timeit(go)
        print("%-6s softmax %-16s %.4f ms %5.1f%% copy  err %.1e  fault %d" % (name, imp, ms, 100 * 8 * rows * cols / ms / 1e6 / copy, err, int(rec[0])))
    fs = {'nvrtc': mod.get_function('scan')}
    for kind in ('', '-unchecked'):
        fs['kache' + kind] = cp.RawModule(path='%s-kache-scan%s.ptx' % (name, kind)).get_function('scan')
    tiles = n // (blk * sitems)
    for imp, f in fs.items():
        # Statuses zeroed once; each launch passes the next epoch (1, 2, ...).
        status = cp.zeros(tiles, dtype=cp.uint64); epoch = [0]
        def next_epoch():
            epoch[0] += 1
            return np.uint64(epoch[0])
        if imp == 'nvrtc':
            go = lambda: f((tiles,), (blk,), (u, np.int32(n), yu, status, next_epoch()))
        else:
            go = lambda: f((tiles,), (blk,), (rec, np.uint32(7), u, np.uint64(n), np.uint64(1), yu, np.uint64(n), np.uint64(1),
                                               status, np.uint64(tiles), np.uint64(1), next_epoch()))
        yu.fill(0); go(); ok = bool((cp.asnumpy(yu) == want).all())
        ms = timeit(go)
        yu.fill(0); go(); ok2 = bool((cp.asnumpy(yu) == want).all())
        print("%-6s scan    %-16s %.4f ms %5.1f%% copy  exact %s %s  fault %d" % (name, imp, ms, 100 * 8 * n / ms / 1e6 / copy, ok, ok2, int(rec[0])))
    sys.stdout.flush()
