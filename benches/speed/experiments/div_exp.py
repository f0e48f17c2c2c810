# An inline IEEE f32 division for kache's NVPTX code, tried and not merged (docs/benchmarks.md,
# H200 run 20; the code is on branch exp-div, commits 390a86c and 1a19458): (1) its fast path,
# replayed in CUDA C, against div.rn for every pair of significands in [1, 2) (2^46); (2)
# kache's PTX of div_exp.rs (a / b, 1.0 / b, a chain of 64 divisions) against IEEE division bit
# for bit on special, subnormal, boundary, nearly exact and random operands and every
# reciprocal (2^32) (the NVRTC reference turned out to flush subnormals, so those classes were
# not judged here; the branch's host-JIT test covers them); (3) speed, linked as kache's
# runtime loads PTX: the chain against the same before (ptxas's div.rn, old-div_chain.ptx) and
# NVRTC, and the suite's softmax before and after (`speed --dry-run --ptx` of either build).
import ctypes as C, cupy as cp, numpy as np, os, sys, time
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link
# (1) the fast path for every pair of significands.
proof = cp.RawModule(code=r'''
__device__ __forceinline__ float rcp_approx(float x) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
extern "C" __global__ void every_pair(unsigned a_lo, unsigned a_count, unsigned long long* bad, unsigned* first) {
    unsigned mb = blockIdx.x * blockDim.x + threadIdx.x;
    if (mb >= (1u << 23)) return;
    float b = __uint_as_float(0x3f800000u | mb);
    float r0 = rcp_approx(b);
    float r = __fmaf_rn(r0, __fmaf_rn(-b, r0, 1.0f), r0);
    for (unsigned ma = a_lo; ma < a_lo + a_count; ma++) {
        float a = __uint_as_float(0x3f800000u | ma);
        float q0 = __fmul_rn(a, r);
        float q1 = __fmaf_rn(__fmaf_rn(-b, q0, a), r, q0);
        float rem = __fmaf_rn(-b, q1, a);
        float half = __uint_as_float((__float_as_uint(q1) & 0x7f800000u) - (24u << 23));
        float c = __fmaf_rn(b, rem > 0.0f ? -half : half, rem);
        int step = (rem > 0.0f && c > 0.0f) - (rem < 0.0f && c < 0.0f);
        unsigned q = __float_as_uint(q1) + step;
        if (q != __float_as_uint(__fdiv_rn(a, b))) { unsigned long long k = atomicAdd(bad, 1ull); if (k < 4) { first[2 * k] = ma; first[2 * k + 1] = mb; } }
    }
}''', options=("-arch=sm_90", "-ftz=false", "-prec-div=true")).get_function("every_pair")
bad = cp.zeros(1, dtype=cp.uint64); first = cp.zeros(8, dtype=cp.uint32)
t = time.time(); chunk = 1 << 16
for c in range((1 << 23) // chunk):
    proof(((1 << 23) // 256,), (256,), (np.uint32(c * chunk), np.uint32(chunk), bad, first))
    if c % 32 == 31:
        cp.cuda.Device().synchronize(); p("  %3d/128 chunks, %d differ, %.0f s" % (c + 1, int(bad[0]), time.time() - t))
cp.cuda.Device().synchronize()
p("fast path, every pair of significands (2^46): %d differ from div.rn %s, %.0f s" % (int(bad[0]), first.get()[:2 * min(int(bad[0]), 4)], time.time() - t))
# (2) kache's PTX against IEEE division.
rec = cp.zeros(8, dtype=cp.uint32)
div = cp.RawModule(path=link("div.ptx")).get_function("div")
rcp = cp.RawModule(path=link("rcp.ptx")).get_function("rcp")
ieee_k = cp.RawKernel(r'''extern "C" __global__ void ieee(const float* a, const float* b, float* q, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; if (i < n) q[i] = a[i] / b[i]; }''', "ieee", options=("-ftz=false", "-prec-div=true"))
def ieee(a, b):
    q = cp.empty_like(a); ieee_k(((a.size + 255) // 256,), (256,), (a, b, q, np.int64(a.size))); return q
def sl(x):
    return (x, np.uint64(x.size), np.uint64(1))
def kdiv(a, b):
    q = cp.full(a.size, np.nan, dtype=cp.float32)
    div(((a.size + 255) // 256,), (256,), (rec, np.uint32(7)) + sl(a) + sl(b) + sl(q)); return q
def krcp(b):
    q = cp.full(b.size, np.nan, dtype=cp.float32)
    rcp(((b.size + 255) // 256,), (256,), (rec, np.uint32(7)) + sl(b) + sl(q)); return q
def same(x, y):
    return (x.view(cp.uint32) == y.view(cp.uint32)) | (cp.isnan(x) & cp.isnan(y))
total = [0, 0]
def check(name, a, b):
    q = kdiv(a, b); r = ieee(a, b); ok = same(q, r); nb = int((~ok).sum())
    total[0] += a.size; total[1] += nb
    p("%-28s %11d pairs, %d differ" % (name, a.size, nb))
    for j in cp.nonzero(~ok)[0][:4].get():
        p("   a=%08x b=%08x: kache %08x ieee %08x" % (int(a.view(cp.uint32)[j]), int(b.view(cp.uint32)[j]), int(q.view(cp.uint32)[j]), int(r.view(cp.uint32)[j])))
rng = np.random.default_rng(1)
ha = rng.integers(0, 2**32, 1 << 22, dtype=np.uint64).astype(np.uint32).view(np.float32)
hb = rng.integers(0, 2**32, 1 << 22, dtype=np.uint64).astype(np.uint32).view(np.float32)
with np.errstate(all="ignore"):
    hq = ha / hb
p("reference (NVRTC, no ftz) against NumPy: %d of %d differ" % (int((~same(ieee(cp.asarray(ha), cp.asarray(hb)), cp.asarray(hq))).sum()), ha.size))
s = [0.0, 1.0, 1.5, 3.0, 0.1, 7.0, np.inf, np.nan, 2.0**-149, 3 * 2.0**-149, 2.0**-127, 2.0**-126, 1.5 * 2.0**-126, (1 - 2.0**-23) * 2.0**-126,
     2.0**127, 1.9999999 * 2.0**127, 2.0**-100, 2.0**100, 2.0**-95, 2.0**-96, 2.0**124, 2.0**-125, 2.0**-64, 2.0**64, 1 + 2.0**-23, 2 - 2.0**-23, 2.0**26, 2.0**-26, 2.0**24, 2.0**-24]
s = np.array(s + [-v for v in s], dtype=np.float32)
A, B = np.meshgrid(s, s)
check("special x special", cp.asarray(A.ravel()), cp.asarray(B.ravel()))
n = 1 << 26
for rep in range(3):
    ri = lambda: cp.random.randint(0, 2**32, n, dtype=cp.uint64).astype(cp.uint32).view(cp.float32)
    check("random bits", ri(), ri())
    m = lambda lo, hi: (cp.random.randint(0, 1 << 23, n, dtype=cp.uint32) | (cp.random.randint(lo, hi, n, dtype=cp.uint32) << 23)).view(cp.float32)
    check("normal, mid exponents", m(64, 190), m(64, 190))
    check("the fast path's edges", m(28, 36), m(1, 6)); check("the fast path's edges 2", m(240, 255), m(245, 255)); check("quotients near 2^+-100", m(120, 135), m(20, 30))
    check("tiny quotients", m(0, 30), m(127, 160)); check("near 2^-126 / 2^-149", m(100, 130), m(127, 160))
    check("near overflow", m(200, 255), m(1, 60)); check("subnormal quotients", m(1, 40), m(200, 254))
    sub = (cp.random.randint(1, 1 << 23, n, dtype=cp.uint32)).view(cp.float32)
    check("subnormal / normal", sub, m(60, 140)); check("normal / subnormal", m(60, 140), sub); check("subnormal / subnormal", sub, sub[::-1].copy())
    q0 = m(100, 150); b = m(100, 150); a = (q0 * b).view(cp.uint32)
    check("near-exact quotients", (a + cp.random.randint(-2, 3, n, dtype=cp.int32).astype(cp.uint32)).view(cp.float32), b)
nb = 0
for k in range(16):
    b = (cp.arange(1 << 28, dtype=cp.uint64) + (k << 28)).astype(cp.uint32).view(cp.float32)
    q = krcp(b); r = ieee(cp.ones_like(b), b); ok = same(q, r); c = int((~ok).sum()); nb += c
    for j in cp.nonzero(~ok)[0][:2].get():
        p("   rcp b=%08x kache %08x ieee %08x" % (int(b.view(cp.uint32)[j]), int(q.view(cp.uint32)[j]), int(r.view(cp.uint32)[j])))
p("every reciprocal (2^32): %d differ" % nb)
p("TOTAL division pairs %d, %d differ" % tuple(total))
# (3) speed.
n = 1 << 26
a = (cp.random.random(n) + 0.5).astype(cp.float32); b = (cp.random.random(n) + 1.5).astype(cp.float32)
nv = cp.RawKernel(r'''extern "C" __global__ void div_chain(const float* a, const float* b, float* q, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float x = a[i], d = b[i]; for (int k = 0; k < 64; k++) x = x / d + 1.0f; q[i] = x; } }''', "div_chain")
outs = {}
for name in ("div_chain.ptx", "old-div_chain.ptx"):
    f = cp.RawModule(path=link(name)).get_function("div_chain"); q = cp.empty_like(a); outs[name] = q
    outs[name + "go"] = (lambda f=f, q=q: f(((n + 255) // 256,), (256,), (rec, np.uint32(7)) + sl(a) + sl(b) + sl(q)))
qn = cp.empty_like(a); gn = lambda: nv(((n + 255) // 256,), (256,), (a, b, qn, np.int32(n)))
outs["div_chain.ptxgo"](); outs["old-div_chain.ptxgo"](); gn(); cp.cuda.Device().synchronize()
p("div_chain results equal: new/NVRTC %s, old/NVRTC %s" % (bool(same(outs["div_chain.ptx"], qn).all()), bool(same(outs["old-div_chain.ptx"], qn).all())))
for rep in range(2):
    p("div_chain kache new %.4f ms, kache before %.4f ms, NVRTC %.4f ms" % (timeit(outs["div_chain.ptxgo"]), timeit(outs["old-div_chain.ptxgo"]), timeit(gn)))
rows, cols = 8192, 4096
x = cp.random.random((rows, cols), dtype=cp.float32) * 20 - 10; y = cp.empty_like(x)
e = cp.exp(x - x.max(1, keepdims=True)); ref = e / e.sum(1, keepdims=True)
for rep in range(3):
    for ptx in ("old-softmax.ptx", "new-softmax.ptx", "old-softmax-unchecked.ptx", "new-softmax-unchecked.ptx"):
        for how in ("link", "load"):
            f = cp.RawModule(path=ptx if how == "load" else link(ptx)).get_function("softmax_rows")
            go = lambda: f((rows,), (256,), (rec, np.uint32(7), x, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1),
                                             y, np.uint64(rows), np.uint64(cols), np.uint64(cols), np.uint64(1)))
            y.fill(0); go(); err = float(cp.abs(y - ref).max())
            p("%-27s %s %.4f ms  err %.1e" % (ptx, how, timeit(go), err))
