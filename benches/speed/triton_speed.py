#!/usr/bin/env python3
"""The execution-speed suite's kernels in Triton, written as Triton writes them (a program per
block of elements or per row, tl.sum/tl.max/tl.cumsum/tl.dot instead of hand-written trees and
shuffles), on the same sizes, checked against the same float64 (or exact) references and
timed the same way (CUDA events, median over batches of back-to-back launches). The matmul
uses fp32 "ieee" precision (no TF32), like the other implementations. Triton has no warp
shuffles: its `reduce_warp` row is its block reduction again.

usage: triton_speed.py [--json FILE] [--reps N] [--batches N]
"""
import json
import sys


def arg(flag, default):
    return type(default)(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else default


REPS = arg("--reps", 10)
BATCHES = arg("--batches", 15)


def main():
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def saxpy(a, x, y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(y + offs, a * tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    @triton.jit
    def reduce_sum(x, out, n, BLOCK: tl.constexpr):
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
    def matmul(a, b, c, n, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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

    @triton.jit
    def histogram(x, bins, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x + offs, mask=offs < n, other=0) & 255
        h = tl.histogram(v, 256)
        # Lanes past the end counted as bin 0: take them back out.
        extra = tl.sum((offs >= n).to(tl.int32), axis=0)
        h = h - tl.where(tl.arange(0, 256) == 0, extra, 0)
        tl.atomic_add(bins + tl.arange(0, 256), h.to(tl.uint32))

    @triton.jit
    def scan_blocks(x, y, sums, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x + offs, mask=offs < n, other=0)
        c = tl.cumsum(v, axis=0)
        tl.store(y + offs, c, mask=offs < n)
        tl.store(sums + tl.program_id(0), tl.sum(v, axis=0))

    @triton.jit
    def scan_add(y, scanned, n, BLOCK: tl.constexpr):
        b = tl.program_id(0)
        if b > 0:
            offs = b * BLOCK + tl.arange(0, BLOCK)
            off = tl.load(scanned + b - 1)
            tl.store(y + offs, tl.load(y + offs, mask=offs < n) + off, mask=offs < n)

    def time_it(launch):
        for _ in range(2):
            launch()
        torch.cuda.synchronize()
        times = []
        for _ in range(BATCHES):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(REPS):
                launch()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / REPS)
        times.sort()
        return times[len(times) // 2], times[0]

    rows = []

    def row(kernel, launch, verify, bytes_=None, flops=None):
        try:
            launch()
            torch.cuda.synchronize()
            check = verify()
            med, mn = time_it(launch)
            rows.append({
                "kernel": kernel, "implementation": "triton", "median_ms": med, "min_ms": mn,
                "gbs": bytes_ / (med * 1e-3) / 1e9 if bytes_ else None,
                "gflops": flops / (med * 1e-3) / 1e9 if flops else None, "check": check,
            })
            print("%14s triton: %9.4f ms  %s" % (kernel, med, check), file=sys.stderr)
        except Exception as e:  # one kernel's failure does not hide the others'
            rows.append({"kernel": kernel, "implementation": "triton", "median_ms": 0.0, "min_ms": 0.0,
                         "gbs": None, "gflops": None, "check": "error: %s" % e})
            print("%14s triton: error: %s" % (kernel, e), file=sys.stderr)

    dev = "cuda"
    g = torch.Generator(device=dev).manual_seed(1)
    n = 1 << 28
    x = torch.rand(n, device=dev, generator=g)
    y0 = torch.rand(n, device=dev, generator=g)
    y = y0.clone()
    want = 2.5 * x.double() + y0.double()
    B = 1024

    def v_saxpy():
        e = ((y.double() - want).abs() / want.abs().clamp_min(1e-30)).max().item()
        assert e < 1e-6, e
        return "max rel err %.1e" % e
    row("saxpy", lambda: saxpy[(triton.cdiv(n, B),)](2.5, x, y, n, BLOCK=B), v_saxpy, bytes_=12.0 * n)
    del y, y0, want

    total = x.double().sum().item()
    for name in ("reduce_block", "reduce_warp"):
        out = torch.zeros(1, device=dev)

        def v_sum(out=out):
            got = out.item()
            e = abs(got - total) / total
            assert e < 1e-4, (got, total)
            return "rel err %.1e" % e
        row(name, lambda out=out: reduce_sum[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096), v_sum, bytes_=4.0 * n)
    del x

    rows_, cols = 8192, 4096
    xs = torch.rand((rows_, cols), device=dev, generator=g) * 20 - 10
    ys = torch.empty_like(xs)
    sm = torch.softmax(xs.double(), dim=1)

    def v_softmax():
        e = ((ys.double() - sm).abs() / sm.clamp_min(1e-12)).max().item()
        assert e < 1e-4, e
        return "max rel err %.1e" % e
    row("softmax_rows", lambda: softmax_rows[(rows_,)](xs, ys, cols, BLOCK=4096), v_softmax, bytes_=8.0 * rows_ * cols)
    del xs, ys, sm

    m = 4096
    a = torch.rand((m, m), device=dev, generator=g) - 0.5
    b = torch.rand((m, m), device=dev, generator=g) - 0.5
    c = torch.empty((m, m), device=dev)

    def v_matmul():
        idx = torch.randint(0, m, (256, 2), device=dev, generator=g)
        terms = a[idx[:, 0], :].double() * b[:, idx[:, 1]].T.double()
        worst = ((c[idx[:, 0], idx[:, 1]].double() - terms.sum(1)).abs() / terms.abs().sum(1)).max().item()
        assert worst < 1e-5, worst
        return "max err %.1e (of sum |a b|), 256 samples" % worst
    row("matmul_tiled", lambda: matmul[(m // 64, m // 64)](a, b, c, m, BM=64, BN=64, BK=32), v_matmul, flops=2.0 * m ** 3)
    del a, b, c

    r = torch.randint(0, 2 ** 31, (n,), device=dev, generator=g, dtype=torch.int64)
    hx = torch.where(r % 4 == 0, (r >> 8) % 16, r >> 8).to(torch.int32)
    bins = torch.zeros(256, device=dev, dtype=torch.int32)
    hwant = torch.bincount((hx & 255).long(), minlength=256)

    def v_hist():
        assert torch.equal(bins.long(), hwant)
        return "exact"
    row("histogram", lambda: histogram[(triton.cdiv(n, 4096),)](hx, bins, n, BLOCK=4096), v_hist, bytes_=4.0 * n)
    del hx, r

    sx = torch.randint(0, 4, (n,), device=dev, generator=g, dtype=torch.int32)
    lens = [n]
    while lens[-1] > 1024:
        lens.append((lens[-1] + 1023) // 1024)
    outs = [torch.empty(l, device=dev, dtype=torch.int32) for l in lens]
    totals = [torch.empty((l + 1023) // 1024, device=dev, dtype=torch.int32) for l in lens]

    def scan():
        for lv, l in enumerate(lens):
            src = sx if lv == 0 else totals[lv - 1]
            scan_blocks[(triton.cdiv(l, 1024),)](src, outs[lv], totals[lv], l, BLOCK=1024)
        for lv in range(len(lens) - 2, -1, -1):
            scan_add[(triton.cdiv(lens[lv], 1024),)](outs[lv], outs[lv + 1], lens[lv], BLOCK=1024)

    def v_scan():
        assert torch.equal(outs[0], torch.cumsum(sx, 0, dtype=torch.int32))
        return "exact"
    row("scan", scan, v_scan, bytes_=8.0 * n)

    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
