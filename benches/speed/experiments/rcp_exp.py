# An IEEE f32 reciprocal without ptxas's rcp.rn.f32 subroutine: rcp.approx.ftz.f64 refined by
# Newton steps in f64, rounded once to f32 (53 >= 2*24+2 bits, so the f64 value, within 2^-50
# of 1/x, rounds to the correctly rounded f32). Checked on every f32 against rcp.rn.f32 (one
# step and two), then the softmax's PTX with its rcp.rn.f32 replaced, loaded and linked; what
# kache's NVPTX code now does (codegen/pipeline.rs, reciprocals_through_f64). Here (no GPU), on
# a build from before that change:
#   cargo build --release --example speed
#   target/release/examples/speed --dry-run --only softmax --ptx .gpu3
#   cp benches/speed/experiments/{rcp_exp,rcp2_exp,cuda_timing}.py .gpu3/
# then on the GPU machine: python3 .gpu3/rcp_exp.py   (docs/benchmarks.md, H200 run 21)
import ctypes as C, cupy as cp, numpy as np, os, re, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, link, softmax_data, copy_gbs, kache_softmax

def seq(x, y, steps):
    body = ["cvt.f64.f32 %rd_d, {x};", "rcp.approx.ftz.f64 %rd_r, %rd_d;", "neg.f64 %rd_n, %rd_d;", "mov.f64 %rd_s, %rd_r;"]
    for _ in range(steps):
        body += ["fma.rn.f64 %rd_e, %rd_n, %rd_s, 0d3FF0000000000000;", "fma.rn.f64 %rd_s, %rd_s, %rd_e, %rd_s;"]
    body += ["setp.nan.f64 %rd_p, %rd_s, %rd_s;", "selp.f64 %rd_s, %rd_r, %rd_s, %rd_p;", "cvt.rn.f32.f64 {y}, %rd_s;"]
    decl = "{ .reg .f64 %rd_d, %rd_r, %rd_n, %rd_s, %rd_e; .reg .pred %rd_p; "
    return decl + " ".join(b.format(x=x, y=y) for b in body) + " }"

src = r'''
extern "C" __global__ void check(unsigned hi, unsigned long long* bad, unsigned* first) {
    unsigned bits = (hi << 24) | (blockIdx.x * blockDim.x + threadIdx.x);
    float x = __uint_as_float(bits), y, ref;
    asm("rcp.rn.f32 %0, %1;" : "=f"(ref) : "f"(x));
    asm(SEQ : "=f"(y) : "f"(x));
    unsigned a = __float_as_uint(y), b = __float_as_uint(ref);
    bool same = a == b || (y != y && ref != ref);
    if (!same) { atomicAdd(bad, 1ull); atomicMin(first, bits); }
}'''
for steps in (1, 2):
    k = cp.RawKernel(src.replace("SEQ", '"' + seq("%1", "%0", steps).replace("%rd_", "%%rd_") + '"'), "check")
    bad = cp.zeros(1, dtype=cp.uint64); first = cp.full(1, 0xffffffff, dtype=cp.uint32)
    for hi in range(256):
        k((1 << 16,), (256,), (np.uint32(hi), bad, first))
    cp.cuda.Device().synchronize()
    print("newton steps %d: %d of 2^32 differ from rcp.rn.f32 (first 0x%08x)" % (steps, int(bad[0]), int(first[0]))); sys.stdout.flush()

for kind in ("", "-unchecked"):
    s = open("kache-softmax_rows%s.ptx" % kind).read()
    m = re.search(r"rcp\.rn\.f32 \t(%f\d+), (%f\d+);", s)
    open("kache-softmax_rows%s-f64.ptx" % kind, "w").write(s.replace(m.group(0), seq(m.group(2), m.group(1), 2)))
    open("kache-softmax_rows%s-approx.ptx" % kind, "w").write(s.replace("rcp.rn.f32", "rcp.approx.ftz.f32"))
rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
gbs = copy_gbs(); print("copy %.0f GB/s; 90%% of it: %.4f ms" % (gbs, 2 * rows * cols * 4 / (0.9 * gbs) / 1e6))
for rep in range(3):
    for kind in ("", "-unchecked"):
        for var in ("", "-f64", "-approx"):
            for how in ("load", "link"):
                ptx = "kache-softmax_rows%s%s.ptx" % (kind, var)
                f = cp.RawModule(path=ptx if how == "load" else link(ptx)).get_function("softmax_rows")
                go = kache_softmax(f, x, y, rec, rows, cols)
                y.fill(0); go(); err = float(cp.abs(y - ref).max())
                t = timeit(go)
                print("softmax%-10s %-8s %s %.4f ms %5.1f%% copy  err %.1e" % (kind, var or "rcp.rn", how, t, 100 * 2 * rows * cols * 4 / t / 1e6 / gbs, err)); sys.stdout.flush()
