"""The Triton twins of the speed corpus (benches/speed/kernels/*.rs and *.cu), written as Triton
writes them: a program per tile of a matrix or image, per block of rows or per row, reductions
with tl.sum and tl.max, compaction with tl.cumsum; checked against float64 (or exact)
references with torch. Where the corpus's algorithm is not natural in Triton the row is skipped
and says why. triton_speed.py runs them (PARTS).

Keys are int32 (torch's unsigned 32-bit tensors support few operations): the bitonic step's are
below 2^31, so they order as the other implementations' u32 keys do."""
import math

import torch
import triton
import triton.language as tl

DEV = "cuda"


# Matrix kernels.

@triton.jit
def transpose(a, t, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(1) * BM + tl.arange(0, BM)
    rn = tl.program_id(0) * BN + tl.arange(0, BN)
    m = (rm[:, None] < rows) & (rn[None, :] < cols)
    tile = tl.load(a + rm[:, None] * cols + rn[None, :], mask=m)
    tl.store(t + rn[None, :] * rows + rm[:, None], tile, mask=m)


@triton.jit
def gemv(a, x, y, rows, cols, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    acc = tl.zeros((BM,), dtype=tl.float32)
    for k in range(0, cols, BN):
        rn = k + tl.arange(0, BN)
        tile = tl.load(a + rm[:, None] * cols + rn[None, :], mask=(rm[:, None] < rows) & (rn[None, :] < cols), other=0.0)
        xv = tl.load(x + rn, mask=rn < cols, other=0.0)
        acc += tl.sum(tile * xv[None, :], axis=1)
    tl.store(y + rm, acc, mask=rm < rows)


@triton.jit
def spmv_csr(row_ptr, cols, vals, x, y, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    start = tl.load(row_ptr + row)
    end = tl.load(row_ptr + row + 1)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(start, end, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        m = offs < end
        c = tl.load(cols + offs, mask=m, other=0)
        acc += tl.load(vals + offs, mask=m, other=0.0) * tl.load(x + c, mask=m, other=0.0)
    tl.store(y + row, tl.sum(acc, axis=0))


@triton.jit
def conv2d(x, w, y, channels, h, wd, BH: tl.constexpr, BW: tl.constexpr):
    r = tl.program_id(1) * BH + tl.arange(0, BH)[:, None]
    c = tl.program_id(0) * BW + tl.arange(0, BW)[None, :]
    co = tl.program_id(2)
    acc = tl.zeros((BH, BW), dtype=tl.float32)
    for ci in range(channels):
        for ky in tl.static_range(3):
            for kx in tl.static_range(3):
                iy = r + ky - 1
                ix = c + kx - 1
                m = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < wd)
                v = tl.load(x + (ci * h + iy) * wd + ix, mask=m, other=0.0)
                acc += v * tl.load(w + ((co * channels + ci) * 3 + ky) * 3 + kx)
    tl.store(y + (co * h + r) * wd + c, acc, mask=(r < h) & (c < wd))


# Row kernels: a program per row, the row in registers.

@triton.jit
def layernorm(x, gamma, beta, y, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    v = tl.load(x + row * cols + offs, mask=m, other=0.0)
    mean = tl.sum(v, axis=0) / cols
    d = tl.where(m, v - mean, 0.0)
    inv = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / cols + 1e-5)
    g = tl.load(gamma + offs, mask=m)
    b = tl.load(beta + offs, mask=m)
    tl.store(y + row * cols + offs, d * inv * g + b, mask=m)


@triton.jit
def rmsnorm(x, w, y, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < cols
    v = tl.load(x + row * cols + offs, mask=m, other=0.0)
    inv = 1.0 / tl.sqrt(tl.sum(v * v, axis=0) / cols + 1e-5)
    tl.store(y + row * cols + offs, v * inv * tl.load(w + offs, mask=m), mask=m)


@triton.jit
def topk_rows(x, vals, idx, cols, K: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x + row * cols + offs, mask=offs < cols, other=-float("inf"))
    for r in tl.static_range(K):
        best = tl.max(v, axis=0)
        at = tl.argmax(v, axis=0)
        tl.store(vals + row * K + r, best)
        tl.store(idx + row * K + r, at)
        v = tl.where(offs == at, -float("inf"), v)


# Stencils: a program per tile (and plane).

@triton.jit
def stencil2d(u, v, ny, nx, BY: tl.constexpr, BX: tl.constexpr):
    i = tl.program_id(1) * BY + tl.arange(0, BY)[:, None]
    j = tl.program_id(0) * BX + tl.arange(0, BX)[None, :]
    inside = (i < ny) & (j < nx)
    inner = (i > 0) & (j > 0) & (i + 1 < ny) & (j + 1 < nx)
    p = u + i * nx + j
    c = tl.load(p, mask=inside, other=0.0)
    around = tl.load(p - nx, mask=inner, other=0.0) + tl.load(p + nx, mask=inner, other=0.0)
    around += tl.load(p - 1, mask=inner, other=0.0) + tl.load(p + 1, mask=inner, other=0.0)
    tl.store(v + i * nx + j, tl.where(inner, 0.5 * c + 0.125 * around, c), mask=inside)


@triton.jit
def stencil3d(u, v, nz, ny, nx, BY: tl.constexpr, BX: tl.constexpr):
    k = tl.program_id(2)
    i = tl.program_id(1) * BY + tl.arange(0, BY)[:, None]
    j = tl.program_id(0) * BX + tl.arange(0, BX)[None, :]
    plane = ny * nx
    inside = (i < ny) & (j < nx)
    inner = (k > 0) & (k + 1 < nz) & (i > 0) & (j > 0) & (i + 1 < ny) & (j + 1 < nx)
    p = u + k * plane + i * nx + j
    c = tl.load(p, mask=inside, other=0.0)
    around = tl.load(p - plane, mask=inner, other=0.0) + tl.load(p + plane, mask=inner, other=0.0)
    around += tl.load(p - nx, mask=inner, other=0.0) + tl.load(p + nx, mask=inner, other=0.0)
    around += tl.load(p - 1, mask=inner, other=0.0) + tl.load(p + 1, mask=inner, other=0.0)
    tl.store(v + k * plane + i * nx + j, tl.where(inner, 0.4 * c + 0.1 * around, c), mask=inside)


# Sorting pieces: a program per block of elements.

@triton.jit
def bitonic_step(x, y, n, j, k, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    p = i ^ j
    a = tl.load(x + i, mask=m)
    b = tl.load(x + p, mask=m)
    lower = (i < p) == ((i & k) == 0)
    tl.store(y + i, tl.where(lower, tl.minimum(a, b), tl.maximum(a, b)), mask=m)


@triton.jit
def radix_hist(keys, counts, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    key = tl.load(keys + offs, mask=offs < n, other=0)
    # Lanes past the end count as digit 0 of every digit: taken back out of bin 0.
    extra = tl.sum((offs >= n).to(tl.int32), axis=0)
    for d in tl.static_range(4):
        h = tl.histogram((key >> (8 * d)) & 255, 256)
        h = h - tl.where(tl.arange(0, 256) == 0, extra, 0)
        tl.atomic_add(counts + d * 256 + tl.arange(0, 256), h)


@triton.jit
def compact(x, threshold, out, count, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0.0)
    keep = (m & (v > threshold)).to(tl.int32)
    place = tl.cumsum(keep, axis=0) - keep
    base = tl.atomic_add(count, tl.sum(keep, axis=0))
    tl.store(out + base + place, v, mask=keep != 0)


# Compute kernels.

@triton.jit
def nbody(bodies, acc, n, soft2, BI: tl.constexpr, BJ: tl.constexpr):
    # bodies is [n, 4] (x, y, z, mass), acc [n, 3].
    i = tl.program_id(0) * BI + tl.arange(0, BI)
    mi = i < n
    xi = tl.load(bodies + i * 4, mask=mi, other=0.0)
    yi = tl.load(bodies + i * 4 + 1, mask=mi, other=0.0)
    zi = tl.load(bodies + i * 4 + 2, mask=mi, other=0.0)
    ax = tl.zeros((BI,), dtype=tl.float32)
    ay = tl.zeros((BI,), dtype=tl.float32)
    az = tl.zeros((BI,), dtype=tl.float32)
    for j0 in range(0, n, BJ):
        j = j0 + tl.arange(0, BJ)
        mj = j < n
        dx = tl.load(bodies + j * 4, mask=mj, other=0.0)[None, :] - xi[:, None]
        dy = tl.load(bodies + j * 4 + 1, mask=mj, other=0.0)[None, :] - yi[:, None]
        dz = tl.load(bodies + j * 4 + 2, mask=mj, other=0.0)[None, :] - zi[:, None]
        mass = tl.load(bodies + j * 4 + 3, mask=mj, other=0.0)
        inv = tl.rsqrt(dx * dx + dy * dy + dz * dz + soft2)
        s = mass[None, :] * inv * inv * inv
        ax += tl.sum(dx * s, axis=1)
        ay += tl.sum(dy * s, axis=1)
        az += tl.sum(dz * s, axis=1)
    tl.store(acc + i * 3, ax, mask=mi)
    tl.store(acc + i * 3 + 1, ay, mask=mi)
    tl.store(acc + i * 3 + 2, az, mask=mi)


@triton.jit
def cnd(d):
    return 0.5 * (1.0 + tl.erf(d * 0.70710678118654752))


@triton.jit
def black_scholes(s, k, t, r, v, call, put, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    si = tl.load(s + offs, mask=m, other=1.0)
    ki = tl.load(k + offs, mask=m, other=1.0)
    ti = tl.load(t + offs, mask=m, other=1.0)
    sq = tl.sqrt(ti)
    d1 = (tl.log(si / ki) + (r + 0.5 * v * v) * ti) / (v * sq)
    d2 = d1 - v * sq
    e = tl.exp(-r * ti)
    tl.store(call + offs, si * cnd(d1) - ki * e * cnd(d2), mask=m)
    tl.store(put + offs, ki * e * cnd(-d2) - si * cnd(-d1), mask=m)


# The parts (the Rust suite's cases/*.rs: the same shapes, inputs of the same kind and the same
# references).

def gen(seed):
    return torch.Generator(device=DEV).manual_seed(seed)


def rand(shape, seed):
    return torch.rand(shape, device=DEV, generator=gen(seed))


def sum_err(got, want, scale):
    return ((got.double() - want).abs() / scale.clamp_min(1e-30)).max().item()


def check(worst, tol, what):
    assert worst <= tol, "%s %e (tolerance %e)" % (what, worst, tol)
    return "%s %.1e" % (what, worst)


def part_transpose(ctx):
    rows, cols = 8192, 8192
    a = rand((rows, cols), 11)
    t = torch.empty((cols, rows), device=DEV)
    ctx.skip("transpose_naive", "Triton moves a tile at a time: its one transpose is the transpose_tiled row")

    def verify():
        assert torch.equal(t, a.T), "differs from a.T"
        return "exact"
    g = (triton.cdiv(cols, 64), triton.cdiv(rows, 64))
    ctx.row("transpose_tiled", lambda: transpose[g](a, t, rows, cols, BM=64, BN=64), verify, bytes_=8.0 * rows * cols,
            reset=lambda: t.zero_())


def part_gemv(ctx):
    rows, cols = 16384, 8192
    a, x = rand((rows, cols), 12) - 0.5, rand(cols, 13) - 0.5
    y = torch.empty(rows, device=DEV)
    a64, x64 = a.double(), x.double()
    want, scale = a64 @ x64, a64.abs() @ x64.abs()
    del a64

    def verify():
        return check(sum_err(y, want, scale), 1e-5, "max err (of sum |a x|)")
    ctx.row("gemv", lambda: gemv[(triton.cdiv(rows, 16),)](a, x, y, rows, cols, BM=16, BN=256), verify,
            bytes_=4.0 * (rows * cols + cols + rows))


def part_spmv(ctx):
    rows = cols = 1 << 21
    g = gen(14)
    per_row = torch.randint(16, 49, (rows,), device=DEV, generator=g, dtype=torch.int32)
    row_ptr = torch.zeros(rows + 1, device=DEV, dtype=torch.int32)
    row_ptr[1:] = torch.cumsum(per_row, 0)
    nnz = int(row_ptr[-1].item())
    col = torch.randint(0, cols, (nnz,), device=DEV, generator=g, dtype=torch.int32)
    vals, x = rand(nnz, 15) - 0.5, rand(cols, 16) - 0.5
    terms = vals.double() * x.double()[col.long()]
    rid = torch.repeat_interleave(torch.arange(rows, device=DEV), per_row.long())
    want = torch.zeros(rows, device=DEV, dtype=torch.float64).index_add_(0, rid, terms)
    scale = torch.zeros(rows, device=DEV, dtype=torch.float64).index_add_(0, rid, terms.abs())
    del terms, rid
    y = torch.empty(rows, device=DEV)

    def verify():
        return check(sum_err(y, want, scale), 1e-5, "max err (of sum |a x|)")
    ctx.row("spmv_csr", lambda: spmv_csr[(rows,)](row_ptr, col, vals, x, y, BLOCK=32, num_warps=1), verify,
            bytes_=8.0 * nnz + 4.0 * (2 * rows + 1 + cols))


def part_conv2d(ctx):
    cin = cout = 32
    h = w = 1024
    x, wt = rand((cin, h, w), 17) - 0.5, rand((cout, cin, 3, 3), 18) - 0.5
    y = torch.empty((cout, h, w), device=DEV)
    picks = torch.randint(0, cout * h * w, (4096,), device=DEV, generator=gen(19))
    xp = torch.nn.functional.pad(x.double(), (1, 1, 1, 1))
    co, r, c = picks // (h * w), picks // w % h, picks % w
    # Each picked output's 3 x 3 x cin window, times its filter.
    win = torch.stack([xp[:, r + ky, c + kx] for ky in range(3) for kx in range(3)], dim=2)  # [cin, picks, 9]
    terms = win.permute(1, 0, 2) * wt.double()[co].reshape(len(picks), cin, 9)
    want, scale = terms.sum(dim=(1, 2)), terms.abs().sum(dim=(1, 2))
    del xp, win, terms

    def verify():
        return check(sum_err(y.reshape(-1)[picks], want, scale), 1e-5, "max err (of sum |x w|), %d outputs:" % len(picks))
    g = (triton.cdiv(w, 32), triton.cdiv(h, 8), cout)
    ctx.row("conv2d", lambda: conv2d[g](x, wt, y, cin, h, w, BH=8, BW=32), verify, flops=2.0 * cout * cin * 9 * h * w)


def part_layernorm(ctx):
    rows, cols = 16384, 4096
    x = rand((rows, cols), 21) * 2 - 1
    gamma, beta = rand(cols, 22) + 0.5, rand(cols, 23) - 0.5
    x64 = x.double()
    mean = x64.mean(dim=1, keepdim=True)
    want = (x64 - mean) / torch.sqrt(x64.var(dim=1, correction=0, keepdim=True) + 1e-5) * gamma.double() + beta.double()
    del x64, mean
    y = torch.empty_like(x)

    def verify():
        return check(sum_err(y, want, want.abs().clamp_min(1.0)), 1e-4, "max err (rel, at least 1)")
    ctx.row("layernorm", lambda: layernorm[(rows,)](x, gamma, beta, y, cols, BLOCK=4096), verify,
            bytes_=8.0 * rows * cols + 8.0 * cols)


def part_rmsnorm(ctx):
    rows, cols = 16384, 4096
    x = rand((rows, cols), 24) * 2 - 1
    w = rand(cols, 25) + 0.5
    x64 = x.double()
    want = x64 / torch.sqrt((x64 * x64).mean(dim=1, keepdim=True) + 1e-5) * w.double()
    del x64
    y = torch.empty_like(x)

    def verify():
        return check(sum_err(y, want, want.abs().clamp_min(1.0)), 1e-4, "max err (rel, at least 1)")
    ctx.row("rmsnorm", lambda: rmsnorm[(rows,)](x, w, y, cols, BLOCK=4096), verify, bytes_=8.0 * rows * cols + 4.0 * cols)


def part_softmax3(ctx):
    ctx.skip("softmax3", "Triton's softmax keeps the row in registers and reads it once: the softmax_rows row")


def part_topk(ctx):
    rows, cols, k = 32768, 2048, 8
    x = rand((rows, cols), 27)
    vals = torch.empty((rows, k), device=DEV)
    idx = torch.empty((rows, k), device=DEV, dtype=torch.int32)
    want = torch.topk(x.double(), k, dim=1).values

    def verify():
        assert torch.equal(vals.double(), want), "values differ"
        assert torch.equal(torch.gather(x, 1, idx.long()), vals), "columns do not hold the values"
        assert (torch.sort(idx, dim=1).values.diff(dim=1) != 0).all(), "a column twice"
        return "exact"
    ctx.row("topk_rows", lambda: topk_rows[(rows,)](x, vals, idx, cols, K=k, BLOCK=2048), verify,
            bytes_=4.0 * rows * cols + 8.0 * rows * k)


def part_stencil2d(ctx):
    ny = nx = 8192
    u = rand((ny, nx), 31)
    u64 = u.double()
    want = u64.clone()
    want[1:-1, 1:-1] = 0.5 * u64[1:-1, 1:-1] + 0.125 * (u64[:-2, 1:-1] + u64[2:, 1:-1] + u64[1:-1, :-2] + u64[1:-1, 2:])
    del u64
    v = torch.empty_like(u)

    def verify():
        return check(sum_err(v, want, want.abs()), 1e-6, "max rel err")
    g = (triton.cdiv(nx, 64), triton.cdiv(ny, 16))
    ctx.row("stencil2d", lambda: stencil2d[g](u, v, ny, nx, BY=16, BX=64), verify, bytes_=8.0 * ny * nx)


def part_stencil3d(ctx):
    nz = ny = nx = 512
    u = rand((nz, ny, nx), 32)
    u64 = u.double()
    want = u64.clone()
    around = u64[:-2, 1:-1, 1:-1] + u64[2:, 1:-1, 1:-1] + u64[1:-1, :-2, 1:-1] + u64[1:-1, 2:, 1:-1]
    around += u64[1:-1, 1:-1, :-2] + u64[1:-1, 1:-1, 2:]
    want[1:-1, 1:-1, 1:-1] = 0.4 * u64[1:-1, 1:-1, 1:-1] + 0.1 * around
    del u64, around
    v = torch.empty_like(u)

    def verify():
        return check(sum_err(v, want, want.abs()), 1e-6, "max rel err")
    g = (triton.cdiv(nx, 64), triton.cdiv(ny, 16), nz)
    ctx.row("stencil3d", lambda: stencil3d[g](u, v, nz, ny, nx, BY=16, BX=64), verify, bytes_=8.0 * nz * ny * nx)


def part_bitonic(ctx):
    n = 1 << 28
    j, k = 1 << 12, 1 << 20
    x = torch.randint(0, 2 ** 31, (n,), device=DEV, generator=gen(41), dtype=torch.int32)
    # Pairs (i, i + j) lie in blocks of 2j, and k > j: a block's direction is its start's bit k.
    pairs = x.view(-1, 2, j)
    ascending = ((torch.arange(pairs.shape[0], device=DEV) * 2 * j) & k == 0)[:, None]
    lo, hi = torch.minimum(pairs[:, 0], pairs[:, 1]), torch.maximum(pairs[:, 0], pairs[:, 1])
    want = torch.stack([torch.where(ascending, lo, hi), torch.where(ascending, hi, lo)], dim=1).reshape(-1)
    del pairs, lo, hi
    y = torch.empty_like(x)

    def verify():
        assert torch.equal(y, want), "differs"
        return "exact"
    ctx.row("bitonic_step", lambda: bitonic_step[(triton.cdiv(n, 1024),)](x, y, n, j, k, BLOCK=1024), verify, bytes_=8.0 * n)


def part_radix_hist(ctx):
    n = 1 << 28
    keys = torch.randint(-2 ** 31, 2 ** 31, (n,), device=DEV, generator=gen(42), dtype=torch.int64).to(torch.int32)
    want = torch.cat([torch.bincount(((keys >> (8 * d)) & 255).long(), minlength=256) for d in range(4)])
    counts = torch.zeros(4 * 256, device=DEV, dtype=torch.int32)

    def verify():
        assert torch.equal(counts.long(), want), "counts differ"
        return "exact"
    ctx.row("radix_hist", lambda: radix_hist[(triton.cdiv(n, 4096),)](keys, counts, n, BLOCK=4096), verify, bytes_=4.0 * n,
            reset=lambda: counts.zero_())


def part_compact(ctx):
    n = 1 << 28
    threshold = 0.5
    x = rand(n, 43)
    want = torch.sort(x[x > threshold]).values
    out = torch.empty_like(x)
    count = torch.zeros(1, device=DEV, dtype=torch.int32)

    def launch():
        # Every launch starts from a zero count (a kernel on the stream, as the Rust suite's memset).
        count.zero_()
        compact[(triton.cdiv(n, 1024),)](x, threshold, out, count, n, BLOCK=1024)

    def verify():
        got = int(count.item())
        assert got == len(want), "count %d, expected %d" % (got, len(want))
        assert torch.equal(torch.sort(out[:got]).values, want), "not the kept values"
        return "exact (%d kept, as a multiset)" % got
    ctx.row("compact", launch, verify, bytes_=4.0 * (n + len(want)))


def part_nbody(ctx):
    n = 1 << 17
    soft2 = 0.01
    u = rand((n, 4), 51)
    bodies = torch.where(torch.arange(4, device=DEV) == 3, u + 0.01, 2 * u - 1).contiguous()
    acc = torch.empty((n, 3), device=DEV)
    picks = torch.randint(0, n, (256,), device=DEV, generator=gen(52))
    b64 = bodies.double()
    d = b64[None, :, :3] - b64[picks, None, :3]  # [picks, n, 3]
    inv = 1.0 / torch.sqrt((d * d).sum(dim=2) + soft2)
    terms = d * (b64[None, :, 3] * inv ** 3)[:, :, None]
    want, scale = terms.sum(dim=1), terms.abs().sum(dim=1)
    del d, inv, terms

    def verify():
        return check(sum_err(acc[picks], want, scale), 1e-4, "max err (of sum |terms|), %d bodies:" % len(picks))
    ctx.row("nbody", lambda: nbody[(triton.cdiv(n, 64),)](bodies, acc, n, soft2, BI=64, BJ=64), verify, flops=20.0 * n * n)


def part_black_scholes(ctx):
    n = 1 << 26
    rate, vol = 0.02, 0.30
    s, k, t = 5 + 25 * rand(n, 53), 1 + 99 * rand(n, 54), 0.25 + 9.75 * rand(n, 55)
    call, put = torch.empty_like(s), torch.empty_like(s)
    picks = torch.randint(0, n, (1 << 16,), device=DEV, generator=gen(56))
    s64, k64, t64 = s[picks].double(), k[picks].double(), t[picks].double()
    d1 = (torch.log(s64 / k64) + (rate + 0.5 * vol * vol) * t64) / (vol * torch.sqrt(t64))
    d2 = d1 - vol * torch.sqrt(t64)

    def cnd64(d):
        return 0.5 * torch.erfc(-d / math.sqrt(2.0))
    e = torch.exp(-rate * t64)
    wc, wp = s64 * cnd64(d1) - k64 * e * cnd64(d2), k64 * e * cnd64(-d2) - s64 * cnd64(-d1)

    def verify():
        worst = (torch.maximum((call[picks] - wc).abs(), (put[picks] - wp).abs()) / (s64 + k64)).max().item()
        return check(worst, 1e-5, "max err (of spot + strike), %d options:" % len(picks))
    ctx.row("black_scholes", lambda: black_scholes[(triton.cdiv(n, 1024),)](s, k, t, rate, vol, call, put, n, BLOCK=1024),
            verify, bytes_=20.0 * n)


def part_mandelbrot(ctx):
    ctx.skip("mandelbrot", "each pixel's escape loop runs its own count of steps: a Triton program steps its block's "
             "pixels together, so it is not written in Triton")


PARTS = {
    "transpose": part_transpose,
    "gemv": part_gemv,
    "spmv": part_spmv,
    "conv2d": part_conv2d,
    "layernorm": part_layernorm,
    "rmsnorm": part_rmsnorm,
    "softmax3": part_softmax3,
    "topk": part_topk,
    "stencil2d": part_stencil2d,
    "stencil3d": part_stencil3d,
    "bitonic": part_bitonic,
    "radix_hist": part_radix_hist,
    "compact": part_compact,
    "nbody": part_nbody,
    "black_scholes": part_black_scholes,
    "mandelbrot": part_mandelbrot,
}
