# On the GPU machine (CuPy there): python3 scan2_exp.py   (docs/benchmarks.md, "H200 run 20")
# What the suite's single-pass scan could gain and what NVIDIA's own libraries reach on the
# same shapes: the copy roofline at the softmax's and the scan's sizes, CUB's inclusive scan
# (through CuPy with CUPY_ACCELERATORS=cub, and torch.cumsum), torch.softmax, then the suite's
# scan in CUDA C (CuPy/NVRTC, each result checked first) with one change at a time: the tile
# from the block index instead of a ticket (the epoch then comes from the host), a
# __nanosleep back-off in the look-back's wait, no look-back at all (wrong sums: the cost of
# the rest), and other tile sizes and launch bounds.
import os, sys
os.environ.setdefault("CUPY_ACCELERATORS", "cub")
import cupy as cp, numpy as np
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import timeit, copy_gbs
def p(*a):
    print(*a); sys.stdout.flush()
N = 1 << 28
u = (cp.random.random(N) * 4).astype(cp.uint32)
ref = cp.cumsum(u, dtype=cp.uint32)
y = cp.empty_like(u)


def libraries():
    """The copy at the softmax's and the scan's sizes, and NVIDIA's libraries on the same shapes."""
    for mib in (128, 1024):
        p("copy %5d MiB: %.0f GB/s" % (mib, copy_gbs(mib << 20)))
    t = timeit(lambda: cp.cumsum(u, dtype=cp.uint32, out=y))
    p("cupy cumsum (CUB=%s) %.4f ms ok=%s" % (os.environ["CUPY_ACCELERATORS"], t, bool((y == ref).all())))
    try:
        import torch
        tu = torch.as_tensor(u.astype(cp.int32), device="cuda"); ty = torch.empty_like(tu)
        t = timeit(lambda: torch.cumsum(tu, 0, dtype=torch.int32, out=ty))
        p("torch cumsum int32 %.4f ms ok=%s" % (t, bool((cp.asarray(ty).view(cp.uint32) == ref).all())))
        xs = torch.rand(8192, 4096, device="cuda") * 20 - 10; ys = torch.empty_like(xs)
        t = timeit(lambda: torch.softmax(xs, 1, out=ys))
        p("torch softmax %.4f ms" % t)
    except Exception as e:
        p("torch:", e)


SRC = r'''
#define BLOCK 256
#define FULL 0xffffffffu
#define AGGREGATE (1ull << 32)
#define PREFIX (2ull << 32)
#define EPOCH_SHIFT 34
__device__ unsigned warp_scan(unsigned v, unsigned lane) {
    for (unsigned d = 1; d < 32; d *= 2) { unsigned up = __shfl_up_sync(FULL, v, d); if (lane >= d) v += up; }
    return v;
}
__device__ unsigned warp_total(unsigned v) { for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(FULL, v, d); return v; }
__device__ unsigned look_back(unsigned long long* status, unsigned tile, unsigned long long epoch, unsigned lane) {
    unsigned sum = 0; unsigned end = tile; bool done = tile == 0;
    while (!done) {
        unsigned long long s = 0; bool ready = false;
        while (!ready) {
            s = lane < end ? *(volatile unsigned long long*)&status[end - 1 - lane] : (epoch << EPOCH_SHIFT) | PREFIX;
            ready = __all_sync(FULL, (s >> EPOCH_SHIFT) == epoch);
#if SLEEP
            if (!ready) __nanosleep(SLEEP);
#endif
        }
        unsigned prefixes = __ballot_sync(FULL, (s & PREFIX) != 0);
        unsigned nearest = prefixes == 0 ? 32 : __ffs(prefixes) - 1;
        sum += warp_total(lane <= nearest ? (unsigned)s : 0u);
        done = nearest < 32;
        if (!done) end -= 32;
    }
    return sum;
}
extern "C" __global__ void __launch_bounds__(256, MINB) scan(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long* ticket, unsigned long long ep) {
    __shared__ unsigned long long taken;
    __shared__ unsigned warp_totals[32];
    __shared__ unsigned before_tile;
    __shared__ unsigned stage[BLOCK / 32][33 * SCAN_ITEMS];
    int t = threadIdx.x; unsigned lane = t % 32; int w = t / 32;
#if TICKET
    if (t == 0) taken = atomicAdd(ticket, 1ull);
    __syncthreads();
    unsigned long long tiles = gridDim.x;
    unsigned long long epoch = taken / tiles + 1;
    unsigned tile = (unsigned)(taken % tiles);
#else
    unsigned long long epoch = ep;
    unsigned tile = blockIdx.x;
#endif
    int base = tile * (BLOCK * SCAN_ITEMS) + w * 32 * SCAN_ITEMS;
    unsigned* own = stage[w];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) { int i = k * 32 + lane; own[i + i / 32] = base + i < n ? x[base + i] : 0u; }
    __syncwarp();
    unsigned v[SCAN_ITEMS];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) { int i = lane * SCAN_ITEMS + k; v[k] = own[i + i / 32]; }
#pragma unroll
    for (int k = 1; k < SCAN_ITEMS; k++) v[k] += v[k - 1];
    unsigned mine = v[SCAN_ITEMS - 1];
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) { int i = lane * SCAN_ITEMS + k; own[i + i / 32] = v[k]; }
    unsigned inclusive = warp_scan(mine, lane);
    if (lane == 31) warp_totals[w] = inclusive;
    __syncthreads();
    if (w == 0) {
        unsigned total = lane < BLOCK / 32 ? warp_totals[lane] : 0;
        unsigned scanned = warp_scan(total, lane);
        unsigned tile_sum = __shfl_sync(FULL, scanned, BLOCK / 32 - 1);
        warp_totals[lane] = scanned;
#if NOLOOK
        if (lane == 0) before_tile = 0;
#else
        if (lane == 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | (tile == 0 ? PREFIX : AGGREGATE) | tile_sum);
        unsigned sum = look_back(status, tile, epoch, lane);
        if (lane == 0) {
            if (tile > 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | PREFIX | (unsigned long long)(sum + tile_sum));
            before_tile = sum;
        }
#endif
    }
    __syncthreads();
    unsigned before = before_tile + inclusive - mine + (w > 0 ? warp_totals[w - 1] : 0);
#if TICKET
    base = (unsigned)(taken % tiles) * (BLOCK * SCAN_ITEMS) + w * 32 * SCAN_ITEMS;
#endif
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) { int i = lane * SCAN_ITEMS + k; own[i + i / 32] += before; }
    __syncwarp();
#pragma unroll
    for (int k = 0; k < SCAN_ITEMS; k++) { int i = k * 32 + lane; if (base + i < n) y[base + i] = own[i + i / 32]; }
}
'''
def variant(ticket, sleep, items, minb, nolook=0):
    opts = ("-DTICKET=%d" % ticket, "-DSLEEP=%d" % sleep, "-DSCAN_ITEMS=%d" % items, "-DMINB=%d" % minb, "-DNOLOOK=%d" % nolook, "-arch=sm_90")
    f = cp.RawModule(code=SRC, options=opts).get_function("scan")
    tiles = N // (256 * items)
    status = cp.zeros(tiles, dtype=cp.uint64); ticket_a = cp.zeros(1, dtype=cp.uint64)
    ep = [0]
    def go():
        ep[0] += 1
        f((tiles,), (256,), (u, np.int32(N), y, status, ticket_a, np.uint64(ep[0])))
    y.fill(0); go(); cp.cuda.Device().synchronize()
    ok = nolook or bool((y == ref).all())
    t = timeit(go)
    name = "ticket=%d sleep=%d items=%d (256,%d)%s" % (ticket, sleep, items, minb, " nolook" if nolook else "")
    p("scan %-40s %.4f ms  %.1f%% of 1GiB copy  ok=%s" % (name, t, 100 * 2 * (N * 4) / t / 1e6 / COPY, ok))
COPY = copy_gbs()
p("copy roofline for the scan rows: %.0f GB/s" % COPY)
if __name__ == "__main__":
    libraries()
    for rep in range(2):
        for args in [(1, 0, 16, 8), (0, 0, 16, 8), (1, 100, 16, 8), (0, 100, 16, 8), (0, 0, 16, 8, 1), (1, 0, 16, 8, 1),
                     (0, 0, 24, 5), (0, 0, 32, 4), (1, 0, 32, 4), (0, 300, 16, 8), (0, 30, 16, 8), (0, 0, 8, 8)]:
            try:
                variant(*args)
            except Exception as e:
                p("scan", args, "failed:", str(e)[:300])
