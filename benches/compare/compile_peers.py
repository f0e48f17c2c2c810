"""Compile speed of numba-cuda (cuda.compile_ptx) and Triton (triton.compile to PTX for
sm_90), on the CPU, beside benches/compare/compile.rs: saxpy, tiled matmul, block reduction
and row softmax (the algorithms of benches/speed/), and a generated kernel of 10 to 5,000
statements. For each: a miss in this process (a fresh compile), a miss as a whole process,
and for Triton a hit in a fresh process (its on-disk cache; numba's compile_ptx has none).
A peer that does not import is reported as "not installed" and skipped.

Each peer gets a time budget (--budget seconds, default 120): rows it does not reach in time
are reported as skipped, so one slow peer never hides the other.

usage: python3 benches/compare/compile_peers.py [--quick] [--reps N] [--budget S] [--json FILE]
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

QUICK = "--quick" in sys.argv


def arg(flag, default):
    if flag in sys.argv:
        return sys.argv[sys.argv.index(flag) + 1]
    return default


REPS = int(arg("--reps", "1" if QUICK else "5"))
BUDGET = float(arg("--budget", "120"))
SIZES = [10, 100] if QUICK else [10, 100, 1000, 2000, 5000]
KERNELS = ["saxpy", "matmul_tiled", "reduce_block", "softmax_rows"]

NUMBA = '''
import math
import numpy as np
np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
from numba import cuda, float32
BLOCK = 256
TILE = 32
TILE2 = 1024  # TILE * TILE: numba sizes a shared array only by a constant, not an expression

def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = a * x[i] + y[i]

def reduce_block(x, out):
    tile = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    stride = cuda.blockDim.x * cuda.gridDim.x
    acc = float32(0.0)
    for j in range(cuda.grid(1), x.size, stride):
        acc += x[j]
    tile[t] = acc
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            tile[t] += tile[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, tile[0])

def softmax_rows(x, y):
    red = cuda.shared.array(BLOCK, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    m = float32(-math.inf)
    for j in range(t, cols, BLOCK):
        m = max(m, x[row, j])
    red[t] = m
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            red[t] = max(red[t], red[t + s])
        cuda.syncthreads()
        s //= 2
    mx = red[0]
    cuda.syncthreads()
    acc = float32(0.0)
    for j in range(t, cols, BLOCK):
        acc += math.exp(x[row, j] - mx)
    red[t] = acc
    cuda.syncthreads()
    s = BLOCK // 2
    while s > 0:
        if t < s:
            red[t] += red[t + s]
        cuda.syncthreads()
        s //= 2
    inv = float32(1.0) / red[0]
    for j in range(t, cols, BLOCK):
        y[row, j] = math.exp(x[row, j] - mx) * inv

def matmul_tiled(a, b, c):
    ta = cuda.shared.array(TILE2, float32)
    tb = cuda.shared.array(TILE2, float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    n = a.shape[1]
    acc = float32(0.0)
    for t in range(0, n, TILE):
        ta[ty * TILE + tx] = a[row, t + tx]
        tb[ty * TILE + tx] = b[t + ty, col]
        cuda.syncthreads()
        for k in range(TILE):
            acc += ta[ty * TILE + k] * tb[k * TILE + tx]
        cuda.syncthreads()
    c[row, col] = acc

SIGS = {
    "saxpy": "void(float32, float32[::1], float32[::1])",
    "reduce_block": "void(float32[::1], float32[::1])",
    "softmax_rows": "void(float32[:, ::1], float32[:, ::1])",
    "matmul_tiled": "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
}

def generated(n):
    body = "".join("        v = v * float32(%r) + a * float32(%r)\\n" % (1.0 + (k % 97) * 1e-4, (k % 13) * 0.25 + 0.5) for k in range(n))
    src = "def gen(x, a):\\n    i = cuda.grid(1)\\n    if i < x.size:\\n        v = x[i]\\n" + body + "        x[i] = v\\n"
    scope = dict(globals())
    exec(src, scope)
    return scope["gen"], "void(float32[::1], float32)"

def compile_one(name, n=None):
    fn, sig = generated(n) if name == "gen" else (globals()[name], SIGS[name])
    return cuda.compile_ptx(fn, sig, cc=(9, 0))
'''

TRITON = '''
import os
import tempfile
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget

@triton.jit
def saxpy(a, x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y + offs, a * tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

@triton.jit
def reduce_block(x, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out, tl.sum(v, axis=0))

@triton.jit
def softmax_rows(x, y, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    v = tl.load(x + row * cols + offs, mask=m, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(y + row * cols + offs, e / tl.sum(e, axis=0), mask=m)

@triton.jit
def matmul_tiled(a, b, c, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm, pn = tl.program_id(0), tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, n, BK):
        ta = tl.load(a + rm[:, None] * n + (k + rk)[None, :])
        tb = tl.load(b + (k + rk)[:, None] * n + rn[None, :])
        acc += tl.dot(ta, tb, input_precision="ieee")
    tl.store(c + rm[:, None] * n + rn[None, :], acc)

SPECS = {
    "saxpy": ({"a": "fp32", "x": "*fp32", "y": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}),
    "reduce_block": ({"x": "*fp32", "out": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 1024}),
    "softmax_rows": ({"x": "*fp32", "y": "*fp32", "cols": "i32", "BLOCK": "constexpr"}, {"BLOCK": 4096}),
    "matmul_tiled": ({"a": "*fp32", "b": "*fp32", "c": "*fp32", "n": "i32", "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"},
                     {"BM": 64, "BN": 64, "BK": 32}),
}

def generated(n):
    body = "".join("    v = v * %r + a * %r\\n" % (1.0 + (k % 97) * 1e-4, (k % 13) * 0.25 + 0.5) for k in range(n))
    src = ("import triton\\nimport triton.language as tl\\n@triton.jit\\ndef gen(x, a, n, BLOCK: tl.constexpr):\\n"
           "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\\n    v = tl.load(x + offs, mask=offs < n)\\n"
           + body + "    tl.store(x + offs, v, mask=offs < n)\\n")
    # triton.jit reads the function's source from its file.
    path = os.path.join(tempfile.mkdtemp(), "gen%d.py" % n)
    open(path, "w").write(src)
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen%d" % n, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.gen, ({"x": "*fp32", "a": "fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 256})

def compile_one(name, n=None):
    fn, (sig, consts) = generated(n) if name == "gen" else (globals()[name], SPECS[name])
    src = triton.compiler.ASTSource(fn=fn, signature=sig, constexprs=consts)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32)).asm["ptx"]
'''

PEERS = {"numba": ("numba.cuda", NUMBA), "triton": ("triton", TRITON)}


def installed(module):
    try:
        __import__(module)
        return True
    except Exception:
        return False


def load(peer):
    """The peer's kernels as a module loaded from a file: Triton's `@jit` reads its
    function's source, which code given to `exec` does not have."""
    import importlib.util
    path = os.path.join(tempfile.mkdtemp(), "peer_%s.py" % peer)
    with open(path, "w") as f:
        f.write(PEERS[peer][1])
    spec = importlib.util.spec_from_file_location("peer_%s" % peer, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def child(peer, name, n):
    """A whole process: import the peer, compile one kernel, exit."""
    t = time.perf_counter()
    load(peer).compile_one(name, n)
    return time.perf_counter() - t


def process_ms(peer, name, n, env):
    t = time.perf_counter()
    subprocess.run([sys.executable, __file__, "--child", peer, name, str(n or 0)], check=True, env=env, stdout=subprocess.DEVNULL)
    return (time.perf_counter() - t) * 1e3


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        peer, name, n = sys.argv[i + 1], sys.argv[i + 2], int(sys.argv[i + 3])
        child(peer, name, n or None)
        return
    report = {}
    for peer, (module, code) in PEERS.items():
        if not installed(module):
            print("%s: not installed (import %s failed); skipped" % (peer, module))
            report[peer] = "not installed"
            continue
        compile_one = load(peer).compile_one
        rows = []
        print("%s\n%-14s %12s %14s %14s" % (peer, "kernel", "miss ms", "proc miss ms", "proc hit ms"))
        start = time.perf_counter()
        for name, n in [(k, None) for k in KERNELS] + [("gen", s) for s in SIZES]:
            label = name if n is None else "gen %d" % n
            if time.perf_counter() - start > BUDGET:
                rows.append({"kernel": label, "skipped": "time budget of %.0f s spent" % BUDGET})
                print("%-14s skipped: the peer's time budget (%.0f s) is spent" % (label, BUDGET))
                continue
            try:
                compile_one(name, n)  # warm: imports, first-use costs
                miss = []
                for _ in range(REPS):
                    if peer == "triton":
                        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
                    t = time.perf_counter()
                    compile_one(name, n)
                    miss.append((time.perf_counter() - t) * 1e3)
                proc_miss, proc_hit = [], []
                for _ in range(REPS):
                    env = dict(os.environ, TRITON_CACHE_DIR=tempfile.mkdtemp(), NUMBA_CACHE_DIR=tempfile.mkdtemp())
                    proc_miss.append(process_ms(peer, name, n, env))
                    if peer == "triton":
                        proc_hit.append(process_ms(peer, name, n, env))
                row = {"kernel": label, "miss_ms": med(miss), "process_miss_ms": med(proc_miss),
                       "process_hit_ms": med(proc_hit) if proc_hit else None}
                print("%-14s %12.2f %14.2f %14s" % (label, row["miss_ms"], row["process_miss_ms"],
                                                      "%.2f" % row["process_hit_ms"] if proc_hit else "-"))
            except Exception as e:  # one kernel's failure does not hide the others'
                row = {"kernel": label, "error": str(e)}
                print("%-14s error: %s" % (label, e))
            rows.append(row)
        report[peer] = rows
    out = arg("--json", None)
    if out:
        json.dump(report, open(out, "w"), indent=1)


if __name__ == "__main__":
    main()
