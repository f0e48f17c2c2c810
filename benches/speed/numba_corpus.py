"""The numba-cuda twins of the speed corpus (benches/speed/kernels/*.rs and *.cu): the same
algorithms, sizes and grids, written as numba-cuda code is (cuda.grid, cuda.shared.array,
cuda.local.array for per-thread lists), checked against float64 (or exact) references with
numpy; numba_speed.py runs them (PARTS)."""
import math

import numpy as np

np.row_stack = np.vstack  # numba-cuda 0.30 with numpy 2.5
from numba import cuda, float32, uint32  # noqa: E402

BLOCK = 256
TILE = 32
ROWS = 8
# numba's shared.array needs a literal shape: a global name is one, an expression is not.
TILE_PADDED = (TILE, TILE + 1)
BINS = 256
BINS4 = 4 * BINS
STRIDED_BLOCKS = 1056
FULL = 0xFFFFFFFF
EPS = 1e-5
K = 8
NB = 256
C0, C1 = 0.5, 0.125
D0, D1 = 0.4, 0.1


@cuda.jit(device=True)
def warp_sum(v):
    d = 16
    while d > 0:
        v += cuda.shfl_down_sync(FULL, v, d)
        d //= 2
    return v


@cuda.jit(device=True)
def block_sum(v, red):
    v = warp_sum(v)
    t = cuda.threadIdx.x
    if t % 32 == 0:
        red[t // 32] = v
    cuda.syncthreads()
    total = float32(0.0)
    for w in range(BLOCK // 32):
        total += red[w]
    cuda.syncthreads()
    return total


@cuda.jit(device=True)
def block_max(v, red):
    d = 16
    while d > 0:
        v = max(v, cuda.shfl_down_sync(FULL, v, d))
        d //= 2
    t = cuda.threadIdx.x
    if t % 32 == 0:
        red[t // 32] = v
    cuda.syncthreads()
    m = float32(-math.inf)
    for w in range(BLOCK // 32):
        m = max(m, red[w])
    cuda.syncthreads()
    return m


# Matrix kernels (kernels/matrix.rs).

@cuda.jit
def transpose_naive(a, t):
    j, i = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        t[j, i] = a[i, j]


@cuda.jit
def transpose_tiled(a, t):
    tile = cuda.shared.array(TILE_PADDED, float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    rows, cols = a.shape
    bx, by = cuda.blockIdx.x * TILE, cuda.blockIdx.y * TILE
    for k in range(0, TILE, ROWS):
        i, j = by + ty + k, bx + tx
        if i < rows and j < cols:
            tile[ty + k, tx] = a[i, j]
    cuda.syncthreads()
    for k in range(0, TILE, ROWS):
        i, j = bx + ty + k, by + tx
        if i < cols and j < rows:
            t[i, j] = tile[tx, ty + k]


@cuda.jit
def gemv(a, x, y):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < a.shape[0]:
        acc = float32(0.0)
        for j in range(lane, a.shape[1], 32):
            acc += a[row, j] * x[j]
        total = warp_sum(acc)
        if lane == 0:
            y[row] = total


@cuda.jit
def spmv_csr(row_ptr, cols, vals, x, y):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < y.size:
        acc = float32(0.0)
        for k in range(row_ptr[row] + lane, row_ptr[row + 1], 32):
            acc += vals[k] * x[cols[k]]
        total = warp_sum(acc)
        if lane == 0:
            y[row] = total


@cuda.jit
def conv2d(x, w, y):
    c, r = cuda.grid(2)
    co = cuda.blockIdx.z
    channels, h, wd = x.shape
    if r < h and c < wd:
        acc = float32(0.0)
        for ci in range(channels):
            for ky in range(3):
                for kx in range(3):
                    iy, ix = r + ky - 1, c + kx - 1
                    if iy >= 0 and iy < h and ix >= 0 and ix < wd:
                        acc += x[ci, iy, ix] * w[co, ci, ky, kx]
        y[co, r, c] = acc


# Row kernels (kernels/rows.rs).

@cuda.jit
def layernorm(x, gamma, beta, y):
    red = cuda.shared.array(32, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    cols = x.shape[1]
    s = float32(0.0)
    s2 = float32(0.0)
    for j in range(t, cols, BLOCK):
        v = x[row, j]
        s += v
        s2 += v * v
    mean = block_sum(s, red) / float32(cols)
    var = block_sum(s2, red) / float32(cols) - mean * mean
    inv = float32(1.0) / math.sqrt(var + float32(EPS))
    for j in range(t, cols, BLOCK):
        y[row, j] = (x[row, j] - mean) * inv * gamma[j] + beta[j]


@cuda.jit
def rmsnorm(x, w, y):
    red = cuda.shared.array(32, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    cols = x.shape[1]
    s2 = float32(0.0)
    for j in range(t, cols, BLOCK):
        v = x[row, j]
        s2 += v * v
    inv = float32(1.0) / math.sqrt(block_sum(s2, red) / float32(cols) + float32(EPS))
    for j in range(t, cols, BLOCK):
        y[row, j] = x[row, j] * inv * w[j]


@cuda.jit
def softmax3(x, y):
    red = cuda.shared.array(32, float32)
    row, t = cuda.blockIdx.x, cuda.threadIdx.x
    cols = x.shape[1]
    m = float32(-math.inf)
    for j in range(t, cols, BLOCK):
        m = max(m, x[row, j])
    m = block_max(m, red)
    s = float32(0.0)
    for j in range(t, cols, BLOCK):
        s += math.exp(x[row, j] - m)
    s = block_sum(s, red)
    for j in range(t, cols, BLOCK):
        y[row, j] = math.exp(x[row, j] - m) / s


@cuda.jit
def topk_rows(x, vals, idx):
    row = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if row < x.shape[0]:
        top = cuda.local.array(K, float32)
        at = cuda.local.array(K, uint32)
        for k in range(K):
            top[k] = float32(-math.inf)
            at[k] = 0
        for j in range(lane, x.shape[1], 32):
            v = x[row, j]
            if v > top[K - 1]:
                c = uint32(j)
                for k in range(K):
                    if v > top[k]:
                        tv, tc = top[k], at[k]
                        top[k] = v
                        at[k] = c
                        v, c = tv, tc
        for r in range(K):
            best = top[0]
            owner = lane
            d = 16
            while d > 0:
                other = cuda.shfl_xor_sync(FULL, best, d)
                other_lane = cuda.shfl_xor_sync(FULL, owner, d)
                if other > best or (other == best and other_lane < owner):
                    best = other
                    owner = other_lane
                d //= 2
            if lane == owner:
                vals[row, r] = top[0]
                idx[row, r] = at[0]
                for k in range(K - 1):
                    top[k] = top[k + 1]
                    at[k] = at[k + 1]
                top[K - 1] = float32(-math.inf)


# Stencils (kernels/stencil.rs).

@cuda.jit
def stencil2d(u, v):
    j, i = cuda.grid(2)
    ny, nx = u.shape
    if i < ny and j < nx:
        if i > 0 and j > 0 and i + 1 < ny and j + 1 < nx:
            v[i, j] = float32(C0) * u[i, j] + float32(C1) * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1])
        else:
            v[i, j] = u[i, j]


@cuda.jit
def stencil3d(u, v):
    j, i, k = cuda.grid(3)
    nz, ny, nx = u.shape
    if k < nz and i < ny and j < nx:
        if k > 0 and i > 0 and j > 0 and k + 1 < nz and i + 1 < ny and j + 1 < nx:
            around = u[k - 1, i, j] + u[k + 1, i, j] + u[k, i - 1, j] + u[k, i + 1, j] + u[k, i, j - 1] + u[k, i, j + 1]
            v[k, i, j] = float32(D0) * u[k, i, j] + float32(D1) * around
        else:
            v[k, i, j] = u[k, i, j]


# Sorting pieces (kernels/sort.rs).

@cuda.jit
def bitonic_step(x, y, j, k):
    i = cuda.grid(1)
    if i < x.size:
        p = i ^ j
        a, b = x[i], x[p]
        ascending = (i & k) == 0
        y[i] = min(a, b) if (i < p) == ascending else max(a, b)


@cuda.jit
def radix_hist(keys, counts):
    local = cuda.shared.array(BINS4, uint32)
    t = cuda.threadIdx.x
    for d in range(4):
        local[d * BINS + t] = 0
    cuda.syncthreads()
    stride = cuda.blockDim.x * cuda.gridDim.x
    for i in range(cuda.grid(1), keys.size, stride):
        key = keys[i]
        for d in range(4):
            cuda.atomic.add(local, d * BINS + ((key >> (8 * d)) & 255), 1)
    cuda.syncthreads()
    for d in range(4):
        c = local[d * BINS + t]
        if c > 0:
            cuda.atomic.add(counts, d * BINS + t, c)


@cuda.jit
def compact(x, threshold, out, count):
    i = cuda.grid(1)
    keep = i < x.size and x[i] > threshold
    mask = cuda.ballot_sync(FULL, keep)
    lane = cuda.threadIdx.x % 32
    base = 0
    if lane == 0 and mask != 0:
        base = cuda.atomic.add(count, 0, cuda.popc(mask))
    base = cuda.shfl_sync(FULL, base, 0)
    if keep:
        below = mask & ((1 << lane) - 1)
        out[base + cuda.popc(below)] = x[i]


# Compute kernels (kernels/science.rs).

@cuda.jit
def nbody(bodies, acc, soft2):
    # bodies is [n, 4] (x, y, z, mass), acc [n, 3].
    tile = cuda.shared.array((NB, 4), float32)
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    n = bodies.shape[0]
    mx = bodies[i, 0] if i < n else float32(0.0)
    my = bodies[i, 1] if i < n else float32(0.0)
    mz = bodies[i, 2] if i < n else float32(0.0)
    ax = float32(0.0)
    ay = float32(0.0)
    az = float32(0.0)
    for base in range(0, n, NB):
        for c in range(4):
            tile[t, c] = bodies[base + t, c] if base + t < n else float32(0.0)
        cuda.syncthreads()
        for k in range(NB):
            dx, dy, dz = tile[k, 0] - mx, tile[k, 1] - my, tile[k, 2] - mz
            inv = cuda.libdevice.rsqrtf(dx * dx + dy * dy + dz * dz + soft2)
            s = tile[k, 3] * inv * inv * inv
            ax += dx * s
            ay += dy * s
            az += dz * s
        cuda.syncthreads()
    if i < n:
        acc[i, 0] = ax
        acc[i, 1] = ay
        acc[i, 2] = az


@cuda.jit(device=True)
def cnd(d):
    return float32(0.5) * math.erfc(-d * float32(0.70710678118654752))


@cuda.jit
def black_scholes(s, k, t, r, v, call, put):
    i = cuda.grid(1)
    if i < call.size:
        si, ki, ti = s[i], k[i], t[i]
        sq = math.sqrt(ti)
        d1 = (math.log(si / ki) + (r + float32(0.5) * v * v) * ti) / (v * sq)
        d2 = d1 - v * sq
        e = math.exp(-r * ti)
        call[i] = si * cnd(d1) - ki * e * cnd(d2)
        put[i] = ki * e * cnd(-d2) - si * cnd(-d1)


@cuda.jit
def mandelbrot(out, x0, y0, dx, dy, max_iter):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        cx = x0 + float32(col) * dx
        cy = y0 + float32(row) * dy
        x = float32(0.0)
        y = float32(0.0)
        it = uint32(0)
        while it < max_iter and x * x + y * y <= float32(4.0):
            xt = x * x - y * y + cx
            y = float32(2.0) * x * y + cy
            x = xt
            it += uint32(1)
        out[row, col] = it


# The parts (the Rust suite's cases/*.rs: the same inputs' shapes and references).

def uniform(n, seed, shape=None):
    """Values uniform in [0, 1) on a grid of 2^-24 (as the Rust suite's uniform_f32)."""
    v = (np.random.default_rng(seed).integers(0, 1 << 24, size=n) / float(1 << 24)).astype(np.float32)
    return v.reshape(shape) if shape else v


def cdiv(a, b):
    return (a + b - 1) // b


def sum_err(got, want, scale):
    return float(np.max(np.abs(got.astype(np.float64) - want) / np.maximum(scale, 1e-30)))


def check(worst, tol, what):
    assert worst <= tol, "%s %e (tolerance %e)" % (what, worst, tol)
    return "%s %.1e" % (what, worst)


def part_transpose(ctx):
    rows, cols = ctx.size(8192, 100), ctx.size(8192, 70)
    a = uniform(rows * cols, 11, (rows, cols))
    ad, td = cuda.to_device(a), cuda.device_array((cols, rows), np.float32)

    def verify():
        assert np.array_equal(td.copy_to_host(), a.T), "differs from a.T"
        return "exact"
    zero = np.zeros((cols, rows), np.float32)
    g = (cdiv(cols, 32), cdiv(rows, 8))
    ctx.row("transpose_naive", lambda: transpose_naive[g, (32, 8)](ad, td), verify, bytes_=8.0 * rows * cols,
            reset=lambda: td.copy_to_device(zero))
    g = (cdiv(cols, 32), cdiv(rows, 32))
    ctx.row("transpose_tiled", lambda: transpose_tiled[g, (32, 8)](ad, td), verify, bytes_=8.0 * rows * cols,
            reset=lambda: td.copy_to_device(zero))


def part_gemv(ctx):
    rows, cols = ctx.size(16384, 37), ctx.size(8192, 300)
    a = uniform(rows * cols, 12, (rows, cols)) - np.float32(0.5)
    x = uniform(cols, 13) - np.float32(0.5)
    ad, xd, yd = cuda.to_device(a), cuda.to_device(x), cuda.device_array(rows, np.float32)
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    want, scale = a64 @ x64, np.abs(a64) @ np.abs(x64)

    def verify():
        return check(sum_err(yd.copy_to_host(), want, scale), 1e-5, "max err (of sum |a x|)")
    ctx.row("gemv", lambda: gemv[cdiv(rows, 8), 256](ad, xd, yd), verify, bytes_=4.0 * (rows * cols + cols + rows))


def part_spmv(ctx):
    rows = cols = ctx.size(1 << 21, 1000)
    lo, hi = (0, 40) if ctx.small else (16, 48)
    r = np.random.default_rng(14)
    row_ptr = np.zeros(rows + 1, np.int32)
    row_ptr[1:] = np.cumsum(r.integers(lo, hi + 1, size=rows))
    nnz = int(row_ptr[-1])
    col = r.integers(0, cols, size=nnz).astype(np.int32)
    vals = uniform(nnz, 15) - np.float32(0.5)
    x = uniform(cols, 16) - np.float32(0.5)
    terms = vals.astype(np.float64) * x[col]
    rid = np.repeat(np.arange(rows), np.diff(row_ptr))
    want = np.bincount(rid, weights=terms, minlength=rows)
    scale = np.bincount(rid, weights=np.abs(terms), minlength=rows)
    rd, cd, vd, xd = (cuda.to_device(v) for v in (row_ptr, col, vals, x))
    yd = cuda.device_array(rows, np.float32)

    def verify():
        return check(sum_err(yd.copy_to_host(), want, scale), 1e-5, "max err (of sum |a x|)")
    ctx.row("spmv_csr", lambda: spmv_csr[cdiv(rows, 8), 256](rd, cd, vd, xd, yd), verify,
            bytes_=8.0 * nnz + 4.0 * (2 * rows + 1 + cols))


def part_conv2d(ctx):
    cin, cout = ctx.size(32, 3), ctx.size(32, 4)
    h, w = ctx.size(1024, 20), ctx.size(1024, 37)
    x = uniform(cin * h * w, 17, (cin, h, w)) - np.float32(0.5)
    wt = uniform(cout * cin * 9, 18, (cout, cin, 3, 3)) - np.float32(0.5)
    xd, wd, yd = cuda.to_device(x), cuda.to_device(wt), cuda.device_array((cout, h, w), np.float32)
    rs = np.random.default_rng(19)
    picks = rs.integers(0, cout * h * w, size=min(4096, cout * h * w))
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1)))

    def verify():
        y = yd.copy_to_host().reshape(-1)
        worst = 0.0
        for p in picks:
            co, r, c = p // (h * w), p // w % h, p % w
            terms = xp[:, r:r + 3, c:c + 3] * wt[co]
            worst = max(worst, abs(y[p] - terms.sum()) / max(np.abs(terms).sum(), 1e-30))
        return check(worst, 1e-5, "max err (of sum |x w|), %d outputs:" % len(picks))
    g = (cdiv(w, 32), cdiv(h, 8), cout)
    ctx.row("conv2d", lambda: conv2d[g, (32, 8, 1)](xd, wd, yd), verify, flops=2.0 * cout * cin * 9 * h * w)


def norm_shape(ctx):
    return ctx.size(16384, 6), ctx.size(4096, 1000)


def part_layernorm(ctx):
    rows, cols = norm_shape(ctx)
    x = uniform(rows * cols, 21, (rows, cols)) * np.float32(2) - np.float32(1)
    gamma, beta = uniform(cols, 22) + np.float32(0.5), uniform(cols, 23) - np.float32(0.5)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    want = (x64 - mean) / np.sqrt(x64.var(axis=1, keepdims=True) + 1e-5) * gamma + beta
    xd, gd, bd, yd = cuda.to_device(x), cuda.to_device(gamma), cuda.to_device(beta), cuda.device_array((rows, cols), np.float32)

    def verify():
        return check(sum_err(yd.copy_to_host(), want, np.maximum(np.abs(want), 1.0)), 1e-4, "max err (rel, at least 1)")
    ctx.row("layernorm", lambda: layernorm[rows, 256](xd, gd, bd, yd), verify, bytes_=8.0 * rows * cols + 8.0 * cols)


def part_rmsnorm(ctx):
    rows, cols = norm_shape(ctx)
    x = uniform(rows * cols, 24, (rows, cols)) * np.float32(2) - np.float32(1)
    w = uniform(cols, 25) + np.float32(0.5)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-5) * w
    xd, wd, yd = cuda.to_device(x), cuda.to_device(w), cuda.device_array((rows, cols), np.float32)

    def verify():
        return check(sum_err(yd.copy_to_host(), want, np.maximum(np.abs(want), 1.0)), 1e-4, "max err (rel, at least 1)")
    ctx.row("rmsnorm", lambda: rmsnorm[rows, 256](xd, wd, yd), verify, bytes_=8.0 * rows * cols + 4.0 * cols)


def part_softmax3(ctx):
    rows, cols = norm_shape(ctx)
    x = uniform(rows * cols, 26, (rows, cols)) * np.float32(20) - np.float32(10)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    xd, yd = cuda.to_device(x), cuda.device_array((rows, cols), np.float32)

    def verify():
        return check(sum_err(yd.copy_to_host(), want, np.maximum(want, 1e-12)), 1e-4, "max rel err")
    ctx.row("softmax3", lambda: softmax3[rows, 256](xd, yd), verify, bytes_=8.0 * rows * cols)


def part_topk(ctx):
    rows, cols = ctx.size(32768, 9), ctx.size(2048, 600)
    x = uniform(rows * cols, 27, (rows, cols))
    want = -np.sort(-x, axis=1)[:, :K]
    xd, vd, idd = cuda.to_device(x), cuda.device_array((rows, K), np.float32), cuda.device_array((rows, K), np.uint32)

    def verify():
        v, ix = vd.copy_to_host(), idd.copy_to_host()
        assert np.array_equal(v, want), "values differ"
        assert np.array_equal(np.take_along_axis(x, ix.astype(np.int64), axis=1), v), "columns do not hold the values"
        assert all(len(set(r)) == K for r in ix.tolist()), "a column twice"
        return "exact"
    ctx.row("topk_rows", lambda: topk_rows[cdiv(rows, 8), 256](xd, vd, idd), verify, bytes_=4.0 * rows * cols + 8.0 * rows * K)


def part_stencil2d(ctx):
    ny, nx = ctx.size(8192, 40), ctx.size(8192, 70)
    u = uniform(ny * nx, 31, (ny, nx))
    u64 = u.astype(np.float64)
    want = u64.copy()
    want[1:-1, 1:-1] = C0 * u64[1:-1, 1:-1] + C1 * (u64[:-2, 1:-1] + u64[2:, 1:-1] + u64[1:-1, :-2] + u64[1:-1, 2:])
    ud, vd = cuda.to_device(u), cuda.device_array((ny, nx), np.float32)

    def verify():
        return check(sum_err(vd.copy_to_host(), want, np.abs(want)), 1e-6, "max rel err")
    g = (cdiv(nx, 32), cdiv(ny, 8))
    ctx.row("stencil2d", lambda: stencil2d[g, (32, 8)](ud, vd), verify, bytes_=8.0 * ny * nx)


def part_stencil3d(ctx):
    nz, ny, nx = ctx.size(512, 9), ctx.size(512, 12), ctx.size(512, 40)
    u = uniform(nz * ny * nx, 32, (nz, ny, nx))
    u64 = u.astype(np.float64)
    want = u64.copy()
    c = u64[1:-1, 1:-1, 1:-1]
    around = u64[:-2, 1:-1, 1:-1] + u64[2:, 1:-1, 1:-1] + u64[1:-1, :-2, 1:-1] + u64[1:-1, 2:, 1:-1] + u64[1:-1, 1:-1, :-2] + u64[1:-1, 1:-1, 2:]
    want[1:-1, 1:-1, 1:-1] = D0 * c + D1 * around
    ud, vd = cuda.to_device(u), cuda.device_array((nz, ny, nx), np.float32)

    def verify():
        return check(sum_err(vd.copy_to_host(), want, np.abs(want)), 1e-6, "max rel err")
    g = (cdiv(nx, 32), cdiv(ny, 8), nz)
    ctx.row("stencil3d", lambda: stencil3d[g, (32, 8, 1)](ud, vd), verify, bytes_=8.0 * nz * ny * nx)


def part_bitonic(ctx):
    n = ctx.size(1 << 28, 1 << 12)
    j, k = (1 << 5, 1 << 9) if ctx.small else (1 << 12, 1 << 20)
    x = np.random.default_rng(41).integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    # Pairs (i, i + j) lie in blocks of 2j, and k > j: a block's direction is its start's bit k.
    v = x.reshape(-1, 2, j)
    ascending = ((np.arange(v.shape[0]) * 2 * j) & k == 0)[:, None]
    lo, hi = np.minimum(v[:, 0], v[:, 1]), np.maximum(v[:, 0], v[:, 1])
    want = np.stack([np.where(ascending, lo, hi), np.where(ascending, hi, lo)], axis=1).reshape(-1)
    del v, lo, hi
    xd, yd = cuda.to_device(x), cuda.device_array(n, np.uint32)

    def verify():
        assert np.array_equal(yd.copy_to_host(), want), "differs"
        return "exact"
    ctx.row("bitonic_step", lambda: bitonic_step[cdiv(n, 256), 256](xd, yd, np.uint32(j), np.uint32(k)), verify, bytes_=8.0 * n)


def part_radix_hist(ctx):
    n = ctx.size(1 << 28, 5000)
    keys = np.random.default_rng(42).integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    want = np.concatenate([np.bincount((keys >> (8 * d)) & 255, minlength=256) for d in range(4)])
    kd, cd = cuda.to_device(keys), cuda.to_device(np.zeros(BINS4, np.uint32))

    def verify():
        assert np.array_equal(cd.copy_to_host(), want), "counts differ"
        return "exact"
    blocks = ctx.size(STRIDED_BLOCKS, 4)
    ctx.row("radix_hist", lambda: radix_hist[blocks, 256](kd, cd), verify, bytes_=4.0 * n,
            reset=lambda: cd.copy_to_device(np.zeros(BINS4, np.uint32)))


def part_compact(ctx):
    from numba.cuda.cudadrv.driver import device_memset
    n = ctx.size(1 << 28, 10_000)
    threshold = np.float32(0.5)
    x = uniform(n, 43)
    # Every value is k / 2^24 (`uniform`): the kept values as a multiset are counts by k.
    key = lambda v: (v.astype(np.float64) * (1 << 24)).astype(np.int64)
    kept = x[x > threshold]
    want = np.bincount(key(kept), minlength=1 << 24)
    xd, od, count = cuda.to_device(x), cuda.device_array(n, np.float32), cuda.to_device(np.zeros(1, np.uint32))
    simulator = not hasattr(count, "device_ctypes_pointer")

    def launch():
        # Every launch starts from a zero count (a memset on the stream, as the Rust suite's).
        if simulator:
            count.copy_to_device(np.zeros(1, np.uint32))
        else:
            device_memset(count, 0, 4, stream=0)
        compact[cdiv(n, 256), 256](xd, threshold, od, count)

    def verify():
        got = int(count.copy_to_host()[0])
        assert got == len(kept), "count %d, expected %d" % (got, len(kept))
        out = od.copy_to_host()[:got]
        assert (out > threshold).all() and np.array_equal(np.bincount(key(out), minlength=1 << 24), want), "not the kept values"
        return "exact (%d kept, as a multiset)" % got
    ctx.row("compact", launch, verify, bytes_=4.0 * (n + len(kept)))


def part_nbody(ctx):
    n = ctx.size(1 << 17, 300)
    soft2 = np.float32(0.01)
    u = uniform(4 * n, 51, (n, 4))
    bodies = np.where(np.arange(4) == 3, u + np.float32(0.01), np.float32(2) * u - np.float32(1)).astype(np.float32)
    bd, ad = cuda.to_device(bodies), cuda.device_array((n, 3), np.float32)
    picks = np.random.default_rng(52).integers(0, n, size=min(256, n))
    b64 = bodies.astype(np.float64)

    def verify():
        acc = ad.copy_to_host()
        worst = 0.0
        for i in picks:
            d = b64[:, :3] - b64[i, :3]
            inv = 1.0 / np.sqrt((d * d).sum(axis=1) + float(soft2))
            terms = d * (b64[:, 3] * inv ** 3)[:, None]
            worst = max(worst, sum_err(acc[i], terms.sum(axis=0), np.abs(terms).sum(axis=0)))
        return check(worst, 1e-4, "max err (of sum |terms|), %d bodies:" % len(picks))
    ctx.row("nbody", lambda: nbody[cdiv(n, NB), NB](bd, ad, soft2), verify, flops=20.0 * n * n)


def part_black_scholes(ctx):
    n = ctx.size(1 << 26, 5000)
    rate, vol = np.float32(0.02), np.float32(0.30)
    s = np.float32(5) + np.float32(25) * uniform(n, 53)
    k = np.float32(1) + np.float32(99) * uniform(n, 54)
    t = np.float32(0.25) + np.float32(9.75) * uniform(n, 55)
    picks = np.random.default_rng(56).integers(0, n, size=min(1 << 16, n))
    s64, k64, t64 = (v[picks].astype(np.float64) for v in (s, k, t))
    r, v = float(rate), float(vol)
    d1 = (np.log(s64 / k64) + (r + 0.5 * v * v) * t64) / (v * np.sqrt(t64))
    d2 = d1 - v * np.sqrt(t64)
    from math import erfc as _erfc
    cnd64 = np.vectorize(lambda d: 0.5 * _erfc(-d / math.sqrt(2.0)))
    e = np.exp(-r * t64)
    wc, wp = s64 * cnd64(d1) - k64 * e * cnd64(d2), k64 * e * cnd64(-d2) - s64 * cnd64(-d1)
    sd, kd, td = cuda.to_device(s), cuda.to_device(k), cuda.to_device(t)
    cd, pd = cuda.device_array(n, np.float32), cuda.device_array(n, np.float32)

    def verify():
        c, p = cd.copy_to_host()[picks], pd.copy_to_host()[picks]
        worst = float(np.max(np.maximum(np.abs(c - wc), np.abs(p - wp)) / (s64 + k64)))
        return check(worst, 1e-5, "max err (of spot + strike), %d options:" % len(picks))
    ctx.row("black_scholes", lambda: black_scholes[cdiv(n, 256), 256](sd, kd, td, rate, vol, cd, pd), verify, bytes_=20.0 * n)


def part_mandelbrot(ctx):
    rows, cols = ctx.size(4096, 40), ctx.size(4096, 64)
    max_iter = 256
    x0, y0 = np.float32(-2.0), np.float32(-1.5)
    dx, dy = np.float32(3.0 / cols), np.float32(3.0 / rows)
    picks = np.random.default_rng(57).integers(0, rows * cols, size=min(1 << 16, rows * cols))
    cx = float(x0) + (picks % cols) * float(dx)
    cy = float(y0) + (picks // cols) * float(dy)
    want = np.zeros(len(picks), np.int64)
    zx, zy = np.zeros(len(picks)), np.zeros(len(picks))
    for _ in range(max_iter):
        live = zx * zx + zy * zy <= 4.0
        want += live
        zx, zy = np.where(live, zx * zx - zy * zy + cx, zx), np.where(live, 2.0 * zx * zy + cy, zy)
    od = cuda.device_array((rows, cols), np.uint32)

    def verify():
        got = od.copy_to_host().reshape(-1)[picks]
        share = float(np.mean(got != want))
        return check(share, 0.01, "share of %d pixels whose count differs from f64's:" % len(picks))
    g = (cdiv(cols, 32), cdiv(rows, 8))
    ctx.row("mandelbrot", lambda: mandelbrot[g, (32, 8)](od, x0, y0, dx, dy, np.uint32(max_iter)), verify,
            flops=8.0 * float(want.mean()) * rows * cols)


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
