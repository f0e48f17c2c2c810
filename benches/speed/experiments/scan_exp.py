# On the GPU machine (CuPy there): python3 scan_exp.py   (docs/benchmarks.md, the scan's item)
# Scan variants in CUDA C (CuPy/NVRTC) on 2^28 u32, CUDA events after warm-up, checked first.
import cupy as cp, numpy as np, sys
N = 1 << 28
COMMON = r'''
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
__device__ unsigned long long rd(unsigned long long* p) {
#if VOLATILE
    return *(volatile unsigned long long*)p;
#else
    return atomicOr(p, 0ull);
#endif
}
__device__ unsigned look_back(unsigned long long* status, unsigned tile, unsigned long long epoch, unsigned lane) {
    unsigned sum = 0; unsigned end = tile; bool done = tile == 0;
    while (!done) {
        unsigned long long s = 0; bool ready = false;
        while (!ready) {
            s = lane < end ? rd(&status[end - 1 - lane]) : (epoch << EPOCH_SHIFT) | PREFIX;
            ready = __all_sync(FULL, (s >> EPOCH_SHIFT) == epoch);
        }
        unsigned prefixes = __ballot_sync(FULL, (s & PREFIX) != 0);
        unsigned nearest = prefixes == 0 ? 32 : __ffs(prefixes) - 1;
        sum += warp_total(lane <= nearest ? (unsigned)s : 0u);
        done = nearest < 32;
        if (!done) end -= 32;
    }
    return sum;
}
extern "C" __global__ void scan(const unsigned* __restrict__ x, int n, unsigned* __restrict__ y, unsigned long long* status, unsigned long long* ticket) {
    __shared__ unsigned long long taken;
    __shared__ unsigned warp_totals[32];
    __shared__ unsigned before_tile;
#if TRANSPOSE
    __shared__ unsigned stage[BLOCK / 32][32 * ITEMS + ITEMS];
#endif
    int t = threadIdx.x; unsigned lane = t % 32; int w = t / 32;
    if (t == 0) taken = atomicAdd(ticket, 1ull);
    __syncthreads();
    unsigned long long tiles = gridDim.x;
    unsigned long long epoch = taken / tiles + 1;
    unsigned tile = (unsigned)(taken % tiles);
    int tile_base = tile * (BLOCK * ITEMS);
    int base = tile_base + t * ITEMS;
    unsigned v[ITEMS];
#if TRANSPOSE
    int wbase = tile_base + w * 32 * ITEMS;
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) { int i = k * 32 + lane; stage[w][i + i / 32] = wbase + i < n ? x[wbase + i] : 0u; }
    __syncwarp();
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) { int i = lane * ITEMS + k; v[k] = stage[w][i + i / 32]; }
#else
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) { v[k] = 0; if (base + k < n) v[k] = x[base + k]; }
#endif
    #pragma unroll
    for (int k = 1; k < ITEMS; k++) v[k] += v[k - 1];
    unsigned mine = v[ITEMS - 1];
    unsigned inclusive = warp_scan(mine, lane);
    if (lane == 31) warp_totals[w] = inclusive;
    __syncthreads();
    if (w == 0) {
        unsigned total = lane < BLOCK / 32 ? warp_totals[lane] : 0;
        unsigned scanned = warp_scan(total, lane);
        unsigned tile_sum = __shfl_sync(FULL, scanned, BLOCK / 32 - 1);
        warp_totals[lane] = scanned;
        if (lane == 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | (tile == 0 ? PREFIX : AGGREGATE) | tile_sum);
        unsigned sum = look_back(status, tile, epoch, lane);
        if (lane == 0) {
            if (tile > 0) atomicExch(&status[tile], (epoch << EPOCH_SHIFT) | PREFIX | (unsigned long long)(sum + tile_sum));
            before_tile = sum;
        }
    }
    __syncthreads();
    unsigned before = before_tile + inclusive - mine + (w > 0 ? warp_totals[w - 1] : 0);
#if TRANSPOSE
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) { int i = lane * ITEMS + k; stage[w][i + i / 32] = before + v[k]; }
    __syncwarp();
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) { int i = k * 32 + lane; if (wbase + i < n) y[wbase + i] = stage[w][i + i / 32]; }
#else
    #pragma unroll
    for (int k = 0; k < ITEMS; k++) if (base + k < n) y[base + k] = before + v[k];
#endif
}
'''
rng = np.random.default_rng(9)
xh = rng.integers(0, 4, N, dtype=np.uint32)
x = cp.asarray(xh)
ref = np.cumsum(xh, dtype=np.uint32)
y = cp.zeros(N, cp.uint32)
def timeit(f, reps=20):
    for _ in range(3): f()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record(); f(); b.record(); b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts))
src_copy = cp.empty_like(x)
copy_ms = timeit(lambda: cp.copyto(src_copy, x))
copy_gbs = 8.0 * N / copy_ms / 1e6
print(f"copy roofline {copy_gbs:.0f} GB/s ({copy_ms:.4f} ms for 2 x {4*N>>20} MiB)")
for name, defs in [("atomic-blocked-8", dict(TRANSPOSE=0, VOLATILE=0, ITEMS=8)),
                   ("volatile-blocked-8", dict(TRANSPOSE=0, VOLATILE=1, ITEMS=8)),
                   ("atomic-transposed-8", dict(TRANSPOSE=1, VOLATILE=0, ITEMS=8)),
                   ("volatile-transposed-8", dict(TRANSPOSE=1, VOLATILE=1, ITEMS=8)),
                   ("atomic-transposed-16", dict(TRANSPOSE=1, VOLATILE=0, ITEMS=16)),
                   ("volatile-transposed-16", dict(TRANSPOSE=1, VOLATILE=1, ITEMS=16)),
                   ("atomic-transposed-12", dict(TRANSPOSE=1, VOLATILE=0, ITEMS=12))]:
    opts = tuple(f"-D{k}={v}" for k, v in defs.items()) + ("-arch=sm_90",)
    k = cp.RawKernel(COMMON, "scan", options=opts)
    tiles = (N + 256 * defs["ITEMS"] - 1) // (256 * defs["ITEMS"])
    status = cp.zeros(tiles, cp.uint64); ticket = cp.zeros(1, cp.uint64)
    f = lambda: k((tiles,), (256,), (x, np.int32(N), y, status, ticket))
    y.fill(0); f(); cp.cuda.Device().synchronize()
    ok = bool((cp.asnumpy(y) == ref).all())
    ms = timeit(f)
    y.fill(0); f(); ok2 = bool((cp.asnumpy(y) == ref).all())
    print(f"{name:24s} {ms:.4f} ms  {8.0*N/ms/1e6:6.0f} GB/s  {100*copy_ms/ms:5.1f}% of copy  check {ok and ok2}  regs {k.num_regs}")
