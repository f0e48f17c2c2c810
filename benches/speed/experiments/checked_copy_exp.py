# What the safe softmax's checked copies cost, though they never run: kache's safe softmax PTX
# (commit 6a331bc) against itself with the version tests made unconditional (the checked copy
# of the loading loop, of the storing loop, or both, become unreachable and ptxas drops them:
# not safe code, a measurement), and with the loading loop's checked copy kept but its branches
# to the fault path removed; beside the unchecked PTX and NVRTC's, each linked as kache's
# runtime links PTX, 30 rounds interleaved. Here (no GPU):
#   cargo build --release --example speed
#   target/release/examples/speed --dry-run --only softmax --ptx .gpu3
#   cp benches/speed/experiments/{checked_copy_exp,cuda_timing}.py .gpu3/
# then on the GPU machine: python3 .gpu3/checked_copy_exp.py 30   (docs/benchmarks.md, run 21)
import cupy as cp, numpy as np, os, re, sys
os.chdir(os.path.dirname(os.path.abspath(__file__))); sys.path.insert(0, '.')
from cuda_timing import link, softmax_data, kache_softmax, interleaved

s = open("kache-softmax_rows.ptx").read()
load = "\t@%p3 bra \t$L__BB0_51;\n\tbra.uni \t$L__BB0_1;\n"    # fast loads, else checked
store = "\t@%p76 bra \t$L__BB0_190;\n\tbra.uni \t$L__BB0_126;\n"  # fast stores, else checked
assert load in s and store in s, "the labels are those of 6a331bc's PTX"
variants = {
    "-fastonly": s.replace(load, "\tbra.uni \t$L__BB0_51;\n").replace(store, "\tbra.uni \t$L__BB0_190;\n"),
    "-fastload": s.replace(load, "\tbra.uni \t$L__BB0_51;\n"),
    "-faststore": s.replace(store, "\tbra.uni \t$L__BB0_190;\n"),
}
lines = s.split("\n")
a, b = lines.index("$L__BB0_1:"), lines.index("$L__BB0_52:")
seg = "\n".join(lines[a:b])
seg = seg.replace("\t@%p1 bra \t$L__BB0_3;\n\tbra.uni \t$L__BB0_48;", "\tbra.uni \t$L__BB0_3;")
seg = seg.replace("\t@%p1 bra \t$L__BB0_52;\n\tbra.uni \t$L__BB0_48;", "\tbra.uni \t$L__BB0_52;")
seg = re.sub(r"\t@%p\d+ bra \t\$L__BB0_48;\n", "", seg)
variants["-noexitload"] = "\n".join(lines[:a]) + "\n" + seg + "\n" + "\n".join(lines[b:])
for v, text in variants.items():
    open("kache-softmax_rows%s.ptx" % v, "w").write(text)

rows, cols = 8192, 4096
x, y, ref = softmax_data(rows, cols)
rec = cp.zeros(8, dtype=cp.uint32)
fs = {}
for v in ("", "-unchecked", "-fastonly", "-fastload", "-faststore", "-noexitload"):
    f = cp.RawModule(path=link("kache-softmax_rows%s.ptx" % v)).get_function("softmax_rows")
    fs["kache%s" % v] = kache_softmax(f, x, y, rec, rows, cols)
nv = cp.RawModule(path="nvrtc.ptx").get_function("softmax_rows")
fs["nvrtc"] = lambda: nv((rows,), (256,), (x, y, np.int32(cols)))
interleaved(fs, int(sys.argv[1]) if len(sys.argv) > 1 else 25, y, ref, 2 * rows * cols * 4)
