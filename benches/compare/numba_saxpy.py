#!/usr/bin/env python3
"""numba-cuda's `cache=True` saxpy, first call in a fresh process: a miss (empty cache) and a
hit (cache populated), with CUDA_CACHE_DISABLE=1 so the driver's own PTX cache does not hide
the JIT. Import time and context creation are reported separately from the first call.

usage: numba_saxpy.py [--reps N] [--json FILE]
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
import numpy as np
np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
from numba import cuda
t_import = time.perf_counter() - t0
t1 = time.perf_counter()
cuda.current_context()
t_ctx = time.perf_counter() - t1

@cuda.jit(cache=True)
def saxpy(a, x, y):
    i = cuda.grid(1)
    if i < y.size:
        y[i] = a * x[i] + y[i]

n = 1 << 20
x = cuda.to_device(np.ones(n, dtype=np.float32))
y = cuda.to_device(np.full(n, 2.0, dtype=np.float32))
cuda.synchronize()
t2 = time.perf_counter()
saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y)
cuda.synchronize()
t_first = time.perf_counter() - t2
assert float(y.copy_to_host()[0]) == 4.0
print("RESULT " + json.dumps({"import_ms": t_import * 1e3, "ctx_ms": t_ctx * 1e3, "first_ms": t_first * 1e3}))
'''


def run(script, cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, CUDA_CACHE_DISABLE="1")
    t = time.perf_counter()
    out = subprocess.run([sys.executable, script], env=env, capture_output=True, text=True)
    total = (time.perf_counter() - t) * 1e3
    line = next((l for l in out.stdout.splitlines() if l.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit("numba child failed:\n" + out.stdout + out.stderr)
    r = json.loads(line[len("RESULT "):])
    r["process_ms"] = total
    return r


def main():
    reps = int(sys.argv[sys.argv.index("--reps") + 1]) if "--reps" in sys.argv else 5
    out_json = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else None
    work = tempfile.mkdtemp(prefix="numba-saxpy-")
    script = os.path.join(work, "saxpy_child.py")
    with open(script, "w") as f:
        f.write(CHILD)
    miss = []
    for i in range(reps):
        miss.append(run(script, tempfile.mkdtemp(prefix="numba-cache-")))
    hit_dir = tempfile.mkdtemp(prefix="numba-cache-")
    run(script, hit_dir)
    hit = [run(script, hit_dir) for _ in range(reps)]
    import numba
    print("numba %s, numba-cuda %s" % (numba.__version__, __import__("numba_cuda").__version__ if _has("numba_cuda") else "?"))
    print("each row: median of %d fresh processes, CUDA_CACHE_DISABLE=1" % reps)
    print("%-10s %10s %9s %12s %12s" % ("mode", "import ms", "ctx ms", "first ms", "process ms"))
    for mode, rows in (("miss", miss), ("hit", hit)):
        med = lambda k: statistics.median(r[k] for r in rows)
        print("%-10s %10.1f %9.1f %12.2f %12.1f" % (mode, med("import_ms"), med("ctx_ms"), med("first_ms"), med("process_ms")))
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"miss": miss, "hit": hit}, f, indent=1)


def _has(mod):
    try:
        __import__(mod)
        return True
    except Exception:
        return False


if __name__ == "__main__":
    main()
