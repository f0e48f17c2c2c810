"""The Triton twins of the speed suite's first kernels (benches/speed/kernels.rs and cuda.cu):
saxpy, the sum, the softmax (the row in registers), the matmul (tl.dot in fp32 "ieee"
precision, no TF32), the histogram (tl.histogram) and the scan (tl.cumsum per block of 1024,
the block totals scanned level by level); triton_speed.py runs them (PARTS)."""
import torch
import triton
import triton.language as tl

DEV = "cuda"


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


def gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def part_saxpy(ctx):
    n = 1 << 28
    g = gen(1)
    x = torch.rand(n, device=DEV, generator=g)
    y0 = torch.rand(n, device=DEV, generator=g)
    y = y0.clone()
    want = 2.5 * x.double() + y0.double()
    B = 1024

    def verify():
        e = ((y.double() - want).abs() / want.abs().clamp_min(1e-30)).max().item()
        assert e < 1e-6, e
        return "max rel err %.1e" % e
    ctx.row("saxpy", lambda: saxpy[(triton.cdiv(n, B),)](2.5, x, y, n, BLOCK=B), verify, bytes_=12.0 * n,
            reset=lambda: y.copy_(y0))


def part_reduce(ctx):
    n = 1 << 28
    x = torch.rand(n, device=DEV, generator=gen(3))
    total = x.double().sum().item()
    out = torch.zeros(1, device=DEV)

    def verify():
        got = out.item()
        e = abs(got - total) / total
        assert e < 1e-4, (got, total)
        return "rel err %.1e" % e
    ctx.row("reduce_block", lambda: reduce_sum[(triton.cdiv(n, 4096),)](x, out, n, BLOCK=4096), verify, bytes_=4.0 * n,
            reset=lambda: out.zero_())
    ctx.skip("reduce_warp", "Triton has no warp shuffles: its one sum (tl.sum) is the reduce_block row")
    ctx.skip("reduce_while", "Triton has no per-thread loops: its one sum (tl.sum) is the reduce_block row")


def part_softmax(ctx):
    rows_, cols = 8192, 4096
    xs = torch.rand((rows_, cols), device=DEV, generator=gen(4)) * 20 - 10
    ys = torch.empty_like(xs)
    sm = torch.softmax(xs.double(), dim=1)

    def verify():
        e = ((ys.double() - sm).abs() / sm.clamp_min(1e-12)).max().item()
        assert e < 1e-4, e
        return "max rel err %.1e" % e
    ctx.row("softmax_rows", lambda: softmax_rows[(rows_,)](xs, ys, cols, BLOCK=4096), verify, bytes_=8.0 * rows_ * cols)


def part_matmul(ctx):
    m = 4096
    g = gen(5)
    a = torch.rand((m, m), device=DEV, generator=g) - 0.5
    b = torch.rand((m, m), device=DEV, generator=g) - 0.5
    c = torch.empty((m, m), device=DEV)

    def verify():
        idx = torch.randint(0, m, (256, 2), device=DEV, generator=g)
        terms = a[idx[:, 0], :].double() * b[:, idx[:, 1]].T.double()
        worst = ((c[idx[:, 0], idx[:, 1]].double() - terms.sum(1)).abs() / terms.abs().sum(1)).max().item()
        assert worst < 1e-5, worst
        return "max err %.1e (of sum |a b|), 256 samples" % worst
    ctx.row("matmul_tiled", lambda: matmul[(m // 64, m // 64)](a, b, c, m, BM=64, BN=64, BK=32), verify, flops=2.0 * m ** 3)


def part_histogram(ctx):
    n = 1 << 28
    r = torch.randint(0, 2 ** 31, (n,), device=DEV, generator=gen(8), dtype=torch.int64)
    hx = torch.where(r % 4 == 0, (r >> 8) % 16, r >> 8).to(torch.int32)
    del r
    bins = torch.zeros(256, device=DEV, dtype=torch.int32)
    hwant = torch.bincount((hx & 255).long(), minlength=256)

    def verify():
        assert torch.equal(bins.long(), hwant)
        return "exact"
    ctx.row("histogram", lambda: histogram[(triton.cdiv(n, 4096),)](hx, bins, n, BLOCK=4096), verify, bytes_=4.0 * n,
            reset=lambda: bins.zero_())


def part_scan(ctx):
    n = 1 << 28
    sx = torch.randint(0, 4, (n,), device=DEV, generator=gen(9), dtype=torch.int32)
    lens = [n]
    while lens[-1] > 1024:
        lens.append((lens[-1] + 1023) // 1024)
    outs = [torch.empty(length, device=DEV, dtype=torch.int32) for length in lens]
    totals = [torch.empty((length + 1023) // 1024, device=DEV, dtype=torch.int32) for length in lens]

    def scan():
        for lv, length in enumerate(lens):
            src = sx if lv == 0 else totals[lv - 1]
            scan_blocks[(triton.cdiv(length, 1024),)](src, outs[lv], totals[lv], length, BLOCK=1024)
        for lv in range(len(lens) - 2, -1, -1):
            scan_add[(triton.cdiv(lens[lv], 1024),)](outs[lv], outs[lv + 1], lens[lv], BLOCK=1024)

    def verify():
        assert torch.equal(outs[0], torch.cumsum(sx, 0, dtype=torch.int32))
        return "exact"
    ctx.row("scan", scan, verify, bytes_=8.0 * n)


PARTS = {
    "saxpy": part_saxpy,
    "reduce": part_reduce,
    "softmax": part_softmax,
    "matmul": part_matmul,
    "histogram": part_histogram,
    "scan": part_scan,
}
