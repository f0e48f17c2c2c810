# The safe softmax with its checked copies rolled (the copy that a correct launch never runs is
# not unrolled and works on its own copy of the register array) against the same kernel with
# both copies unrolled (commit 3bac847), with the rolled copy's array read back `volatile`
# element by element (so that LLVM does not merge those reads with the fast copy's loads), the
# unchecked kernel and NVRTC's, each linked as kache's runtime links PTX, rounds interleaved;
# first each kernel on rows shorter than 4096 (the checked copies run) against the reference,
# and on a grid with one block past the last row (a fault it must record). Here (no GPU), for
# each build: cargo build --release --example speed
#   target/release/examples/speed --dry-run --only softmax --ptx DIR
# into .gpu3: the rolled PTX as kache-softmax_rows.ptx (and its -unchecked and nvrtc.ptx), the
# unrolled one as kache-softmax_rows-unrolled.ptx, the volatile one as
# kache-softmax_rows-volatile.ptx; then on the GPU machine: python3 .gpu3/rolled_exp.py 40
import cupy as cp, numpy as np, os, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import link, softmax_data, kache_softmax, interleaved

rec = cp.zeros(8, dtype=cp.uint32)
mod = {v: cp.RawModule(path=link("kache-softmax_rows%s.ptx" % v)).get_function("softmax_rows")
       for v in ("", "-volatile", "-unrolled", "-unchecked")}
# Short rows: both checked copies run, and must give the softmax.
for cols in (3000, 4095, 1):
    x, y, ref = softmax_data(64, cols)
    for v, f in mod.items():
        y.fill(0); kache_softmax(f, x, y, rec, 64, cols)(); cp.cuda.Device().synchronize()
        print("cols %4d %-12s err %.1e  fault record %s" % (cols, v or "-rolled", float(cp.abs(y - ref).max()), rec.get().tolist()))
        assert float(cp.abs(y - ref).max()) < 1e-5 and not rec.get().any()
# One block past the last row: the first load of that block leaves x, a fault to record.
x, y, ref = softmax_data(64, 4096)
for v in ("", "-volatile", "-unrolled"):
    rec.fill(0); u = np.uint64
    mod[v]((65,), (256,), (rec, np.uint32(7), x, u(64), u(4096), u(4096), u(1), y, u(64), u(4096), u(4096), u(1)))
    cp.cuda.Device().synchronize()
    print("grid 65 of 64 rows %-12s fault record %s" % (v or "-rolled", rec.get().tolist()))
    assert rec.get().any()

rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
fs = {"kache%s" % v: kache_softmax(f, x, y, rec, rows, cols) for v, f in mod.items()}
nv = cp.RawModule(path="nvrtc.ptx").get_function("softmax_rows")
fs["nvrtc"] = lambda: nv((rows,), (256,), (x, y, np.int32(cols)))
interleaved(fs, int(sys.argv[1]) if len(sys.argv) > 1 else 25, y, ref, 2 * rows * cols * 4)
