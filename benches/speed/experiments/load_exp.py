# On the GPU machine (nvcc there): python3 load_exp.py DIR   (docs/benchmarks.md, relocatable captures)
# Module load + first launch in fresh processes: cubins with and without a module variable.
import ctypes as C, subprocess, sys, time, os, statistics, json
cu = C.CDLL("libcuda.so.1") if "--child" in sys.argv else None
def ck(r, what):
    if r != 0: raise SystemExit(f"{what}: CUDA error {r}")
def child(path, kind):
    ck(cu.cuInit(0), "init")
    dev = C.c_int(); ck(cu.cuDeviceGet(C.byref(dev), 0), "dev")
    ctx = C.c_void_p(); ck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "ctx"); ck(cu.cuCtxSetCurrent(ctx), "cur")
    n = 1 << 20
    bufs = []
    for _ in range(3):
        p = C.c_uint64(); ck(cu.cuMemAlloc_v2(C.byref(p), n * 4), "alloc"); ck(cu.cuMemsetD32_v2(p, 0, n), "memset"); bufs.append(p)
    ck(cu.cuCtxSynchronize(), "sync")
    img = open(path, "rb").read()
    t0 = time.perf_counter()
    mod = C.c_void_p(); ck(cu.cuModuleLoadData(C.byref(mod), img), "load")
    fn = C.c_void_p(); ck(cu.cuModuleGetFunction(C.byref(fn), mod, kind["entry"].encode()), "getfn")
    t1 = time.perf_counter()
    slotval = C.c_uint64(bufs[2].value)
    if kind["slot"]:
        g = C.c_uint64(); sz = C.c_size_t()
        ck(cu.cuModuleGetGlobal_v2(C.byref(g), C.byref(sz), mod, kind["slot"].encode()), "getglobal")
        ck(cu.cuMemcpyHtoDAsync_v2(g, C.byref(slotval), C.c_size_t(8), None), "copy")
    t2 = time.perf_counter()
    if kind["args"] == "none":
        print(json.dumps(dict(load=(t1 - t0) * 1e3, fill=(t2 - t1) * 1e3, run=0.0, total=(t2 - t0) * 1e3, size=len(img)))); return
    a = C.c_float(2.0); nn = C.c_int(n)
    vals = [C.c_uint64(bufs[0].value), C.c_uint64(bufs[1].value)]
    if kind["args"] == "axpy": params = [C.byref(a), C.byref(vals[0]), C.byref(vals[1]), C.byref(nn)]
    elif kind["args"] == "param": params = [C.byref(slotval), C.byref(vals[0]), C.byref(vals[1]), C.byref(nn)]
    else: params = [C.byref(vals[0]), C.byref(vals[1]), C.byref(nn)]
    arr = (C.c_void_p * len(params))(*[C.cast(p, C.c_void_p) for p in params])
    ck(cu.cuLaunchKernel(fn, (n + 255) // 256, 1, 1, 256, 1, 1, 0, None, arr, None), "launch")
    ck(cu.cuCtxSynchronize(), "sync2")
    t3 = time.perf_counter()
    print(json.dumps(dict(load=(t1 - t0) * 1e3, fill=(t2 - t1) * 1e3, run=(t3 - t2) * 1e3, total=(t3 - t0) * 1e3, size=len(img))))
SRC = r'''
__constant__ const float* cslot;
__device__ const float* gslot;
extern "C" __global__ void plain(float a, const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i]; }
extern "C" __global__ void constslot(const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = cslot[i % 1024] * x[i] + y[i]; }
extern "C" __global__ void globslot(const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = gslot[i % 1024] * x[i] + y[i]; }
__device__ unsigned itab[6] = {1, 2, 3, 4, 5, 6};
__constant__ unsigned ctab[6] = {1, 2, 3, 4, 5, 6};
extern "C" __global__ void initglobal(float a, const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i] + (float)itab[i % 6]; }
extern "C" __global__ void initconst(float a, const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = a * x[i] + y[i] + (float)ctab[i % 6]; }
extern "C" __global__ void param(const float* c, const float* x, float* y, int n) { int i = blockIdx.x * 256 + threadIdx.x; if (i < n) y[i] = c[i % 1024] * x[i] + y[i]; }
'''
KINDS = {
    "plain": dict(entry="plain", slot=None, args="axpy", file="plain"),
    "const": dict(entry="constslot", slot="cslot", args="xy", file="const"),
    "global": dict(entry="globslot", slot="gslot", args="xy", file="global"),
    "param": dict(entry="param", slot=None, args="param", file="param"),
    "initglobal": dict(entry="initglobal", slot=None, args="axpy", file="initglobal"),
    "initconst": dict(entry="initconst", slot=None, args="axpy", file="initconst"),
}
if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], json.loads(sys.argv[3])); sys.exit()
    d = sys.argv[1]
    # one cubin per kernel, each holding only what it uses (as kache's modules do)
    for k, v in KINDS.items():
        kern = [l for l in SRC.splitlines() if "__global__" in l and f"void {v['entry']}(" in l][0]
        body = [l for l in SRC.splitlines() if "__global__" not in l and l.strip() and l.split("=")[0].split()[-1].split("[")[0].rstrip(";") in kern] + [kern]
        open(f"{d}/{k}.cu", "w").write("\n".join(body))
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", f"{d}/{k}.cubin", f"{d}/{k}.cu"], check=True)
    extra = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
    for k, v in extra.items():
        KINDS[k] = v
    res = {k: [] for k in KINDS}
    for rep in range(int(os.environ.get("REPS", "15"))):
        for k, v in KINDS.items():
            path = v.get("path", f"{d}/{v['file']}.cubin")
            o = subprocess.run([sys.executable, __file__, "--child", path, json.dumps(v)], capture_output=True, text=True, env=dict(os.environ, CUDA_CACHE_DISABLE="1"))
            if o.returncode: print(k, o.stdout, o.stderr); continue
            res[k].append(json.loads(o.stdout))
    for k, v in res.items():
        if not v: continue
        med = lambda f: statistics.median(x[f] for x in v)
        print(f"{k:10s} size {v[0]['size']:6d}  load {med('load'):.3f}  fill {med('fill'):.3f}  run {med('run'):.3f}  total {med('total'):.3f} ms (median of {len(v)})")
