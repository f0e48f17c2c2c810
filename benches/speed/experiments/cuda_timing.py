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
