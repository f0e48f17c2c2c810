# The experiments' helpers: `timeit`, the median milliseconds per launch of `batches` batches of
# `reps` back-to-back launches between two CUDA events, after two warm-up launches; `link`, PTX
# loaded as kache's runtime loads it.
import cupy as cp, numpy as np


def timeit(launch, reps=10, batches=15):
    launch(); launch(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
    for _ in range(batches):
        s.record()
        for _ in range(reps): launch()
        e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e) / reps)
    return float(np.median(ts))


def link(ptx_path, pic=None):
    """PTX through the driver's linker (cuLinkCreate/AddData/Complete), as kache's runtime loads
    it (relocatable code); `pic` sets CU_JIT_POSITION_INDEPENDENT_CODE. Writes the cubin beside
    the PTX and returns its path, for cp.RawModule(path=...)."""
    import ctypes as C
    cu = C.CDLL("libcuda.so.1")
    text = open(ptx_path, "rb").read() + b"\0"
    st = C.c_void_p()
    if pic is None:
        assert cu.cuLinkCreate_v2(0, None, None, C.byref(st)) == 0
    else:
        opts = (C.c_int * 1)(30); vals = (C.c_void_p * 1)(pic)
        r = cu.cuLinkCreate_v2(1, opts, vals, C.byref(st)); assert r == 0, r
    r = cu.cuLinkAddData_v2(st, 1, C.c_char_p(text), C.c_size_t(len(text)), b"k.ptx", 0, None, None)  # CU_JIT_INPUT_PTX
    assert r == 0, r
    out = C.c_void_p(); size = C.c_size_t()
    assert cu.cuLinkComplete(st, C.byref(out), C.byref(size)) == 0
    data = C.string_at(out, size.value)
    cu.cuLinkDestroy(st)
    p = ptx_path + (".linked.cubin" if pic is None else ".linked%s.cubin" % pic)
    open(p, "wb").write(data)
    return p


def copy_gbs(nbytes=1 << 30):
    """The copy roofline: GB/s (read + write) of a device-to-device copy of `nbytes`."""
    a = cp.empty(nbytes, dtype=cp.uint8); b = cp.empty_like(a)
    return 2 * nbytes / timeit(lambda: cp.cuda.runtime.memcpy(b.data.ptr, a.data.ptr, nbytes, 3)) / 1e6


def softmax_data(rows=8192, cols=4096):
    """The speed suite's softmax input (uniform in [-10, 10)), an output array and the float32
    reference softmax of each row."""
    x = cp.random.random((rows, cols), dtype=cp.float32) * 20 - 10
    e = cp.exp(x - x.max(1, keepdims=True))
    return x, cp.empty_like(x), e / e.sum(1, keepdims=True)


def kache_softmax(f, x, y, rec, rows, cols):
    """A launch of kache's `softmax_rows` (the speed suite's, 256 threads per row): its fault
    record and token, then `x` and `y`, each with its shape and strides."""
    u = np.uint64
    return lambda: f((rows,), (256,), (rec, np.uint32(7), x, u(rows), u(cols), u(cols), u(1), y, u(rows), u(cols), u(cols), u(1)))


def interleaved(fs, rounds, y, ref, nbytes):
    """Each launch of `fs` (name -> launch) checked against `ref` (its largest error printed),
    the copy roofline, then `rounds` rounds of every launch in turn (timeit, 10 batches of 20),
    and per launch the median, fastest and slowest round and the median's % of copy for
    `nbytes` moved."""
    for name, go in fs.items():
        y.fill(0); go(); print("%-22s err %.1e" % (name, float(cp.abs(y - ref).max())))
    gbs = copy_gbs(); print("copy %.0f GB/s; 90%% of it: %.4f ms" % (gbs, nbytes / (0.9 * gbs) / 1e6))
    ts = {k: [] for k in fs}
    for _ in range(rounds):
        for name, go in fs.items():
            ts[name].append(timeit(go, reps=20, batches=10))
    for name, t in ts.items():
        t = np.array(t)
        print("%-22s median %.4f ms (%.1f%% copy)  min %.4f  max %.4f" % (name, np.median(t), 100 * nbytes / np.median(t) / 1e6 / gbs, t.min(), t.max()))
