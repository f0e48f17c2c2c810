#!/usr/bin/env python3
"""The execution-speed suite's kernels in numba-cuda: the same algorithms, sizes and grids as
benches/speed/kernels.rs (kache) and benches/speed/cuda.cu (NVRTC), checked against a float64
(or exact) reference with numpy, timed with CUDA events after warm-up (median over batches of
back-to-back launches, as the Rust suite does).

usage: numba_speed.py [--json FILE] [--reps N] [--batches N] [--check-only]
"""
import json
import math
import sys


def arg(flag, default):
    return type(default)(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else default


REPS = arg("--reps", 10)
BATCHES = arg("--batches", 15)
BLOCK = 256
TILE = 32
# numba's shared.array needs a literal shape: a global name is one, `TILE * TILE` is not.
TILE_ELEMS = TILE * TILE
STRIDED_BLOCKS = 1056


def main():
    import numpy as np
    np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
    from numba import cuda, float32, int32, uint32

    @cuda.jit
    def saxpy(a, x, y):
        n = y.size
        i = cuda.blockIdx.x * (BLOCK * 4) + cuda.threadIdx.x
        if i + 3 * BLOCK < n:
            x0 = x[i]
            x1 = x[i + BLOCK]
            x2 = x[i + 2 * BLOCK]
            x3 = x[i + 3 * BLOCK]
            y0 = y[i]
            y1 = y[i + BLOCK]
            y2 = y[i + 2 * BLOCK]
            y3 = y[i + 3 * BLOCK]
            y[i] = a * x0 + y0
            y[i + BLOCK] = a * x1 + y1
            y[i + 2 * BLOCK] = a * x2 + y2
            y[i + 3 * BLOCK] = a * x3 + y3
        else:
            for k in range(4):
                j = i + k * BLOCK
                if j < n:
                    y[j] = a * x[j] + y[j]

    @cuda.jit
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

    @cuda.jit(device=True)
    def warp_sum(v):
        d = 16
        while d > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
            d //= 2
        return v

    @cuda.jit
    def reduce_warp(x, out):
        warps = cuda.shared.array(32, float32)
        t = cuda.threadIdx.x
        stride = cuda.blockDim.x * cuda.gridDim.x
        acc = float32(0.0)
        for j in range(cuda.grid(1), x.size, stride):
            acc += x[j]
        acc = warp_sum(acc)
        lane = t % 32
        w = t // 32
        if lane == 0:
            warps[w] = acc
        cuda.syncthreads()
        if w == 0:
            v = warps[lane] if lane < BLOCK // 32 else float32(0.0)
            total = warp_sum(v)
            if lane == 0:
                cuda.atomic.add(out, 0, total)

    @cuda.jit(device=True)
    def rescale(s, m, to):
        return s if m == to else s * math.exp(m - to)

    @cuda.jit
    def softmax_rows(x, y):
        warp_max = cuda.shared.array(32, float32)
        warp_sum = cuda.shared.array(32, float32)
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        cols = x.shape[1]
        m = float32(-math.inf)
        s = float32(0.0)
        for j in range(t, cols, BLOCK):
            v = x[row, j]
            e = math.exp(min(m, v) - max(m, v))
            s = s * e + float32(1.0) if v > m else s + e
            m = max(m, v)
        d = 16
        while d > 0:
            mo = cuda.shfl_xor_sync(0xFFFFFFFF, m, d)
            so = cuda.shfl_xor_sync(0xFFFFFFFF, s, d)
            to = max(m, mo)
            s = rescale(s, m, to) + rescale(so, mo, to)
            m = to
            d //= 2
        if t % 32 == 0:
            warp_max[t // 32] = m
            warp_sum[t // 32] = s
        cuda.syncthreads()
        mx = float32(-math.inf)
        for w in range(BLOCK // 32):
            mx = max(mx, warp_max[w])
        total = float32(0.0)
        for w in range(BLOCK // 32):
            total += rescale(warp_sum[w], warp_max[w], mx)
        inv = float32(1.0) / total
        for j in range(t, cols, BLOCK):
            y[row, j] = math.exp(x[row, j] - mx) * inv

    @cuda.jit
    def matmul_tiled(a, b, c):
        ta = cuda.shared.array(TILE_ELEMS, float32)
        tb = cuda.shared.array(TILE_ELEMS, float32)
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

    @cuda.jit
    def histogram(x, bins):
        local = cuda.shared.array(256, uint32)
        t = cuda.threadIdx.x
        local[t] = 0
        cuda.syncthreads()
        stride = cuda.blockDim.x * cuda.gridDim.x
        for j in range(cuda.grid(1), x.size, stride):
            cuda.atomic.add(local, x[j] & 255, 1)
        cuda.syncthreads()
        c = local[t]
        if c > 0:
            cuda.atomic.add(bins, t, c)

    @cuda.jit(device=True)
    def warp_scan(v, lane):
        # numba widens u32 arithmetic to 64 bits and shuffles only i32/i64/f32/f64: the
        # running sum is kept as an i32 (the same bits; sums wrap mod 2^32 as CUDA's unsigned).
        s = int32(v)
        d = 1
        while d < 32:
            up = cuda.shfl_up_sync(0xFFFFFFFF, s, d)
            if lane >= d:
                s = int32(s + up)
            d *= 2
        return uint32(s)

    @cuda.jit
    def scan_blocks(x, y, sums):
        warp_totals = cuda.shared.array(32, uint32)
        t = cuda.threadIdx.x
        lane = t % 32
        w = t // 32
        n = x.size
        base = cuda.blockIdx.x * (BLOCK * 4) + t * 4
        v0 = uint32(0)
        v1 = uint32(0)
        v2 = uint32(0)
        v3 = uint32(0)
        if base < n:
            v0 = x[base]
        v1 = v0 + (x[base + 1] if base + 1 < n else uint32(0))
        v2 = v1 + (x[base + 2] if base + 2 < n else uint32(0))
        v3 = v2 + (x[base + 3] if base + 3 < n else uint32(0))
        inclusive = warp_scan(v3, lane)
        if lane == 31:
            warp_totals[w] = inclusive
        cuda.syncthreads()
        if w == 0:
            total = warp_totals[lane] if lane < BLOCK // 32 else uint32(0)
            warp_totals[lane] = warp_scan(total, lane)
        cuda.syncthreads()
        before = inclusive - v3 + (warp_totals[w - 1] if w > 0 else uint32(0))
        if base < n:
            y[base] = before + v0
        if base + 1 < n:
            y[base + 1] = before + v1
        if base + 2 < n:
            y[base + 2] = before + v2
        if base + 3 < n:
            y[base + 3] = before + v3
        if t == BLOCK - 1:
            sums[cuda.blockIdx.x] = before + v3

    @cuda.jit
    def scan_add(y, scanned_sums):
        b = cuda.blockIdx.x
        if b > 0:
            off = scanned_sums[b - 1]
            base = b * (BLOCK * 4) + cuda.threadIdx.x
            for k in range(4):
                i = base + k * BLOCK
                if i < y.size:
                    y[i] += off

    def time_it(launch):
        for _ in range(2):
            launch()
        cuda.synchronize()
        times = []
        for _ in range(BATCHES):
            a, b = cuda.event(), cuda.event()
            a.record()
            for _ in range(REPS):
                launch()
            b.record()
            b.synchronize()
            times.append(cuda.event_elapsed_time(a, b) / REPS)
        times.sort()
        return times[len(times) // 2], times[0]

    rows = []
    rng = np.random.default_rng(1)

    def row(kernel, launch, verify, bytes_=None, flops=None):
        try:
            launch()
            cuda.synchronize()
            check = verify()
            med, mn = (0.0, 0.0) if "--check-only" in sys.argv else time_it(launch)
            rows.append({
                "kernel": kernel, "implementation": "numba", "median_ms": med, "min_ms": mn,
                "gbs": bytes_ / (med * 1e-3) / 1e9 if bytes_ and med else None,
                "gflops": flops / (med * 1e-3) / 1e9 if flops and med else None, "check": check,
            })
            print("%14s  numba: %9.4f ms  %s" % (kernel, med, check), file=sys.stderr)
        except Exception as e:  # one kernel's failure does not hide the others'
            rows.append({"kernel": kernel, "implementation": "numba", "median_ms": 0.0, "min_ms": 0.0,
                         "gbs": None, "gflops": None, "check": "error: %s" % e})
            print("%14s  numba: error: %s" % (kernel, e), file=sys.stderr)

    n = 1 << 28
    x = rng.random(n, dtype=np.float32)
    y0 = rng.random(n, dtype=np.float32)
    xd, yd = cuda.to_device(x), cuda.to_device(y0)
    grid = (n + 1023) // 1024  # 4 elements per thread
    want = 2.5 * x.astype(np.float64) + y0

    def v_saxpy():
        e = np.max(np.abs(yd.copy_to_host() - want) / np.maximum(np.abs(want), 1e-30))
        assert e < 1e-6, e
        return "max rel err %.1e" % e
    row("saxpy", lambda: saxpy[grid, 256](np.float32(2.5), xd, yd), v_saxpy, bytes_=12.0 * n)
    del yd

    total = float(np.sum(x, dtype=np.float64))
    for name, k in (("reduce_block", reduce_block), ("reduce_warp", reduce_warp)):
        out = cuda.to_device(np.zeros(1, np.float32))

        def v_sum(out=out):
            got = float(out.copy_to_host()[0])
            e = abs(got - total) / total
            assert e < 1e-4, (got, total)
            return "rel err %.1e" % e
        row(name, lambda k=k, out=out: k[STRIDED_BLOCKS, 256](xd, out), v_sum, bytes_=4.0 * n)
    del xd

    rows_, cols = 8192, 4096
    xs = (rng.random((rows_, cols), dtype=np.float32) * 20 - 10).astype(np.float32)
    xsd = cuda.to_device(xs)
    ysd = cuda.device_array_like(xsd)
    x64 = xs.astype(np.float64)
    e64 = np.exp(x64 - x64.max(axis=1, keepdims=True))
    sm = e64 / e64.sum(axis=1, keepdims=True)

    def v_softmax():
        e = np.max(np.abs(ysd.copy_to_host() - sm) / np.maximum(sm, 1e-12))
        assert e < 1e-4, e
        return "max rel err %.1e" % e
    row("softmax_rows", lambda: softmax_rows[rows_, 256](xsd, ysd), v_softmax, bytes_=8.0 * rows_ * cols)
    del xsd, ysd

    m = 4096
    a = (rng.random((m, m), dtype=np.float32) - 0.5).astype(np.float32)
    b = (rng.random((m, m), dtype=np.float32) - 0.5).astype(np.float32)
    ad, bd = cuda.to_device(a), cuda.to_device(b)
    cd = cuda.device_array((m, m), np.float32)

    def v_matmul():
        c = cd.copy_to_host()
        idx = rng.integers(0, m, size=(256, 2))
        worst = 0.0
        for i, j in idx:
            terms = a[i, :].astype(np.float64) * b[:, j]
            worst = max(worst, abs(c[i, j] - terms.sum()) / np.abs(terms).sum())
        assert worst < 1e-5, worst
        return "max err %.1e (of sum |a b|), 256 samples" % worst
    row("matmul_tiled", lambda: matmul_tiled[(m // 32, m // 32), (32, 32)](ad, bd, cd), v_matmul, flops=2.0 * m ** 3)
    del ad, bd, cd

    r = rng.integers(0, 2 ** 32, size=n, dtype=np.uint64)
    hx = np.where(r % 4 == 0, (r >> 8) % 16, r >> 8).astype(np.uint32)
    hxd = cuda.to_device(hx)
    bins = cuda.to_device(np.zeros(256, np.uint32))
    hwant = np.bincount(hx & 255, minlength=256)

    def v_hist():
        got = bins.copy_to_host()
        assert (got == hwant).all()
        return "exact"
    row("histogram", lambda: histogram[STRIDED_BLOCKS, 256](hxd, bins), v_hist, bytes_=4.0 * n)
    del hxd

    sx = rng.integers(0, 4, size=n, dtype=np.uint32)
    sxd = cuda.to_device(sx)
    lens = [n]
    while lens[-1] > 1024:
        lens.append((lens[-1] + 1023) // 1024)
    outs = [cuda.device_array(l, np.uint32) for l in lens]
    totals = [cuda.device_array((l + 1023) // 1024, np.uint32) for l in lens]

    def scan():
        for lv, l in enumerate(lens):
            scan_blocks[(l + 1023) // 1024, 256](sxd if lv == 0 else totals[lv - 1], outs[lv], totals[lv])
        for lv in range(len(lens) - 2, -1, -1):
            scan_add[(lens[lv] + 1023) // 1024, 256](outs[lv], outs[lv + 1])

    def v_scan():
        assert (outs[0].copy_to_host() == np.cumsum(sx, dtype=np.uint32)).all()
        return "exact"
    row("scan", scan, v_scan, bytes_=8.0 * n)

    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
