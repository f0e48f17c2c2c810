"""The numba-cuda twins of the speed suite's first kernels (benches/speed/kernels.rs and
cuda.cu): saxpy, the reductions, the softmax in registers, the tiled matmul, the histogram and
the single-pass scan; numba_speed.py runs them (PARTS)."""
import math

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
from numba import cuda, float32, int32, int64, uint32, uint64  # noqa: E402

BLOCK = 256
TILE = 32
# numba's shared.array needs a literal shape: a global name is one, `TILE * TILE` is not.
TILE_ELEMS = TILE * TILE
STRIDED_BLOCKS = 1056
# The elements of a softmax row each thread holds (rows of up to BLOCK * ITEMS = 4096).
ITEMS = 16
# The single-pass scan in kernels.rs's earlier form: tiles of 2048 taken by a ticket, 8
# consecutive elements per thread loaded and stored straight from global memory (kernels.rs now
# takes tile b in block b, stages the elements through shared memory and reads statuses with
# atomic_load; docs/benchmarks.md), status words epoch << 34 | AGGREGATE or PREFIX | value.
SCAN_ITEMS = 8
SCAN_TILE = BLOCK * SCAN_ITEMS
AGGREGATE = 1 << 32
PREFIX = 2 << 32
EPOCH_SHIFT = 34


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

@cuda.jit
def reduce_while(x, out):
    # The grid-strided sum spelled as a while loop.
    tile = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    stride = cuda.blockDim.x * cuda.gridDim.x
    acc = float32(0.0)
    j = cuda.grid(1)
    while j < x.size:
        acc += x[j]
        j += stride
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
    # The row in registers, ITEMS elements per thread: rows of up to BLOCK * ITEMS columns.
    warp_max = cuda.shared.array(32, float32)
    warp_sum = cuda.shared.array(32, float32)
    row = cuda.blockIdx.x
    t = cuda.threadIdx.x
    cols = x.shape[1]
    v = cuda.local.array(ITEMS, float32)
    for k in range(ITEMS):
        j = t + k * BLOCK
        v[k] = float32(-math.inf)
        if j < cols:
            v[k] = x[row, j]
    mine = float32(-math.inf)
    for k in range(ITEMS):
        mine = max(mine, v[k])
    s = float32(0.0)
    for k in range(ITEMS):
        v[k] = math.exp(v[k] - mine) if t + k * BLOCK < cols else float32(0.0)
        s += v[k]
    m = mine
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
    scale = rescale(float32(1.0) / total, mine, mx)
    for k in range(ITEMS):
        j = t + k * BLOCK
        if j < cols:
            y[row, j] = v[k] * scale

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

@cuda.jit(device=True)
def warp_total(v):
    # As warp_scan: an i32 running sum (the same bits as u32 arithmetic).
    s = int32(v)
    d = 16
    while d > 0:
        s = int32(s + cuda.shfl_xor_sync(0xFFFFFFFF, s, d))
        d //= 2
    return uint32(s)

@cuda.jit(device=True)
def look_back(status, tile, epoch, lane):
    # Decoupled look-back by one warp (see kernels.rs); every u64 quantity typed as such
    # (numba would make a float of a u64 mixed with an i64).
    total = uint32(0)
    end = int64(tile)
    done = tile == 0
    while not done:
        s = uint64(0)
        ready = False
        while not ready:
            if lane < end:
                s = cuda.atomic.or_(status, end - 1 - lane, uint64(0))
            else:
                s = (epoch << uint64(EPOCH_SHIFT)) | uint64(PREFIX)
            ready = cuda.all_sync(0xFFFFFFFF, (s >> uint64(EPOCH_SHIFT)) == epoch)
        prefixes = uint32(cuda.ballot_sync(0xFFFFFFFF, (s & uint64(PREFIX)) != uint64(0)))
        nearest = cuda.ffs(prefixes) - 1 if prefixes != 0 else 32
        total = uint32(total + warp_total(uint32(s & uint64(0xFFFFFFFF)) if lane <= nearest else uint32(0)))
        done = nearest < 32
        if not done:
            end -= 32
    return total

@cuda.jit
def scan(x, y, status, ticket):
    # Single-pass inclusive scan (decoupled look-back), as kernels.rs's `scan` was before its
    # loads and stores were staged through shared memory.
    taken = cuda.shared.array(1, uint64)
    warp_totals = cuda.shared.array(32, uint32)
    before_tile = cuda.shared.array(1, uint32)
    t = cuda.threadIdx.x
    lane = t % 32
    w = t // 32
    n = x.size
    if t == 0:
        taken[0] = cuda.atomic.add(ticket, 0, uint64(1))
    cuda.syncthreads()
    tiles = uint64(cuda.gridDim.x)
    epoch = taken[0] // tiles + uint64(1)
    tile = int64(taken[0] % tiles)
    base = tile * SCAN_TILE + t * SCAN_ITEMS
    v = cuda.local.array(SCAN_ITEMS, uint32)
    for k in range(SCAN_ITEMS):
        v[k] = x[base + k] if base + k < n else uint32(0)
    for k in range(1, SCAN_ITEMS):
        v[k] = uint32(v[k] + v[k - 1])
    mine = v[SCAN_ITEMS - 1]
    inclusive = warp_scan(mine, lane)
    if lane == 31:
        warp_totals[w] = inclusive
    cuda.syncthreads()
    if w == 0:
        total = warp_totals[lane] if lane < BLOCK // 32 else uint32(0)
        scanned = warp_scan(total, lane)
        tile_sum = uint32(cuda.shfl_sync(0xFFFFFFFF, int32(scanned), BLOCK // 32 - 1))
        warp_totals[lane] = scanned
        if lane == 0:
            flag = uint64(PREFIX) if tile == 0 else uint64(AGGREGATE)
            cuda.atomic.exch(status, tile, (epoch << uint64(EPOCH_SHIFT)) | flag | uint64(tile_sum))
        total = look_back(status, tile, epoch, lane)
        if lane == 0:
            if tile > 0:
                word = (epoch << uint64(EPOCH_SHIFT)) | uint64(PREFIX) | uint64(uint32(total + tile_sum))
                cuda.atomic.exch(status, tile, word)
            before_tile[0] = total
    cuda.syncthreads()
    before = uint32(before_tile[0] + inclusive - mine + (warp_totals[w - 1] if w > 0 else uint32(0)))
    for k in range(SCAN_ITEMS):
        if base + k < n:
            y[base + k] = uint32(before + v[k])


def rng(seed):
    return np.random.default_rng(seed)


def part_saxpy(ctx):
    n = ctx.size(1 << 28, 5000)
    r = rng(1)
    x = r.random(n, dtype=np.float32)
    y0 = r.random(n, dtype=np.float32)
    xd, yd = cuda.to_device(x), cuda.to_device(y0)
    grid = (n + 1023) // 1024  # 4 elements per thread
    want = 2.5 * x.astype(np.float64) + y0

    def verify():
        e = np.max(np.abs(yd.copy_to_host() - want) / np.maximum(np.abs(want), 1e-30))
        assert e < 1e-6, e
        return "max rel err %.1e" % e
    ctx.row("saxpy", lambda: saxpy[grid, 256](np.float32(2.5), xd, yd), verify, bytes_=12.0 * n,
            reset=lambda: yd.copy_to_device(y0))


def part_reduce(ctx):
    n = ctx.size(1 << 28, 5000)
    x = rng(3).random(n, dtype=np.float32)
    xd = cuda.to_device(x)
    total = float(np.sum(x, dtype=np.float64))
    blocks = ctx.size(STRIDED_BLOCKS, 4)
    for name, k in (("reduce_block", reduce_block), ("reduce_warp", reduce_warp), ("reduce_while", reduce_while)):
        out = cuda.to_device(np.zeros(1, np.float32))

        def verify(out=out):
            got = float(out.copy_to_host()[0])
            e = abs(got - total) / total
            assert e < 1e-4, (got, total)
            return "rel err %.1e" % e
        ctx.row(name, lambda k=k, out=out: k[blocks, 256](xd, out), verify, bytes_=4.0 * n)


def part_softmax(ctx):
    rows_, cols = ctx.size(8192, 2), ctx.size(4096, 1000)
    xs = (rng(4).random((rows_, cols), dtype=np.float32) * 20 - 10).astype(np.float32)
    xsd = cuda.to_device(xs)
    ysd = cuda.device_array_like(xsd)
    x64 = xs.astype(np.float64)
    e64 = np.exp(x64 - x64.max(axis=1, keepdims=True))
    sm = e64 / e64.sum(axis=1, keepdims=True)

    def verify():
        e = np.max(np.abs(ysd.copy_to_host() - sm) / np.maximum(sm, 1e-12))
        assert e < 1e-4, e
        return "max rel err %.1e" % e
    ctx.row("softmax_rows", lambda: softmax_rows[rows_, 256](xsd, ysd), verify, bytes_=8.0 * rows_ * cols)


def part_matmul(ctx):
    m = ctx.size(4096, 64)
    r = rng(5)
    a = (r.random((m, m), dtype=np.float32) - 0.5).astype(np.float32)
    b = (r.random((m, m), dtype=np.float32) - 0.5).astype(np.float32)
    ad, bd = cuda.to_device(a), cuda.to_device(b)
    cd = cuda.device_array((m, m), np.float32)

    def verify():
        c = cd.copy_to_host()
        idx = r.integers(0, m, size=(256, 2))
        worst = 0.0
        for i, j in idx:
            terms = a[i, :].astype(np.float64) * b[:, j]
            worst = max(worst, abs(c[i, j] - terms.sum()) / np.abs(terms).sum())
        assert worst < 1e-5, worst
        return "max err %.1e (of sum |a b|), 256 samples" % worst
    ctx.row("matmul_tiled", lambda: matmul_tiled[(m // 32, m // 32), (32, 32)](ad, bd, cd), verify, flops=2.0 * m ** 3)


def part_histogram(ctx):
    n = ctx.size(1 << 28, 5000)
    r = rng(8).integers(0, 2 ** 32, size=n, dtype=np.uint64)
    hx = np.where(r % 4 == 0, (r >> 8) % 16, r >> 8).astype(np.uint32)
    hxd = cuda.to_device(hx)
    bins = cuda.to_device(np.zeros(256, np.uint32))
    hwant = np.bincount(hx & 255, minlength=256)

    def verify():
        got = bins.copy_to_host()
        assert (got == hwant).all()
        return "exact"
    blocks = ctx.size(STRIDED_BLOCKS, 4)
    ctx.row("histogram", lambda: histogram[blocks, 256](hxd, bins), verify, bytes_=4.0 * n)


def part_scan(ctx):
    n = ctx.size(1 << 28, 5000)
    sx = rng(9).integers(0, 4, size=n, dtype=np.uint32)
    sxd = cuda.to_device(sx)
    tiles = (n + SCAN_TILE - 1) // SCAN_TILE
    syd = cuda.device_array(n, np.uint32)
    # Tile statuses and the ticket counter, zeroed once: the launches' tickets tell their epochs.
    status = cuda.to_device(np.zeros(tiles, np.uint64))
    ticket = cuda.to_device(np.zeros(1, np.uint64))
    swant = np.cumsum(sx, dtype=np.uint32)

    def verify():
        assert (syd.copy_to_host() == swant).all()
        # A later launch (a later epoch) gives the same answer.
        syd.copy_to_device(np.zeros(n, np.uint32))
        scan[tiles, 256](sxd, syd, status, ticket)
        cuda.synchronize()
        assert (syd.copy_to_host() == swant).all(), "a later launch differs"
        return "exact"
    ctx.row("scan", lambda: scan[tiles, 256](sxd, syd, status, ticket), verify, bytes_=8.0 * n)


PARTS = {
    "saxpy": part_saxpy,
    "reduce": part_reduce,
    "softmax": part_softmax,
    "matmul": part_matmul,
    "histogram": part_histogram,
    "scan": part_scan,
}
