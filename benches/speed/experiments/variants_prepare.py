# Prepares variants_exp.py's inputs (docs/benchmarks.md, "Block sizes"): for each variant of the
# softmax's and the scan's block size, elements per thread and launch bounds, kache's PTX
# (bounds-checked and not, from `speed --dry-run --ptx` on kernels.rs so changed) and cuda.cu
# so changed, into OUT_DIR with variants_exp.py and link_exp.py beside them. Here (no GPU):
#   cargo build --release --example speed
#   python3 benches/speed/experiments/variants_prepare.py .gpu3
# then on the GPU machine: python3 .gpu3/variants_exp.py [VARIANT ...]
# (The dry run's host check of a variant whose block is not 256 fails after writing its PTX:
# the suite launches blocks of 256.)
import os, shutil, subprocess, sys, tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
# name: block, softmax elements per thread, softmax bounds, scan elements per thread, scan bounds
VARIANTS = {
    "b256": (256, 16, (256, 6), 16, (256, 8)),
    "b512": (512, 8, (512, 3), 16, (512, 4)),
    "b1024": (1024, 4, (1024, 2), 8, (1024, 2)),
    "s5": (256, 16, (256, 5), 32, (256, 4)),
}


def main(out):
    os.makedirs(out, exist_ok=True)
    src = open(os.path.join(ROOT, "benches/speed/kernels.rs")).read()
    cu = open(os.path.join(ROOT, "benches/speed/cuda.cu")).read()
    speed = os.path.join(ROOT, "target/release/examples/speed")
    for name, (b, items, sb, sitems, scb) in VARIANTS.items():
        k = src
        for old, new in [
            ("const BLOCK: usize = 256;", f"const BLOCK: usize = {b};"),
            ("const ITEMS: usize = 16;", f"const ITEMS: usize = {items};"),
            ("#[kernel(max_threads = 256, min_blocks = 6)]", f"#[kernel(max_threads = {sb[0]}, min_blocks = {sb[1]})]"),
            ("const SCAN_ITEMS: usize = 16;", f"const SCAN_ITEMS: usize = {sitems};"),
            ("#[kernel(max_threads = 256, min_blocks = 8)]", f"#[kernel(max_threads = {scb[0]}, min_blocks = {scb[1]})]"),
        ]:
            assert old in k, old
            k = k.replace(old, new)
        c = cu.replace("#define BLOCK 256", f"#define BLOCK {b}").replace("#define ITEMS 16", f"#define ITEMS {items}")
        c = c.replace("__launch_bounds__(256, 6) softmax_rows", f"__launch_bounds__({sb[0]}, {sb[1]}) softmax_rows")
        c = c.replace("__launch_bounds__(256, 8) scan(", f"__launch_bounds__({scb[0]}, {scb[1]}) scan(")
        # The suite's other scans go (at 1024 threads their shared memory does not fit).
        c = c[: c.index('extern "C" __global__ void __launch_bounds__(256, 8) scan_t2048')] + c[c.index("// The FP32 roofline") :]
        c = c.replace("scan_tiles<16>(x, n, y, status, epoch);", f"scan_tiles<{sitems}>(x, n, y, status, epoch);")
        open(os.path.join(out, name + ".cu"), "w").write(c)
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "benches/speed")
            os.makedirs(d)
            open(os.path.join(d, "kernels.rs"), "w").write(k)
            open(os.path.join(d, "cuda.cu"), "w").write(cu)
            ptx = os.path.join(tmp, "ptx")
            subprocess.run([speed, "--dry-run", "--root", tmp, "--only", "softmax", "--ptx", ptx], capture_output=True)
            for f in ["kache-softmax_rows", "kache-softmax_rows-unchecked", "kache-scan", "kache-scan-unchecked"]:
                shutil.copy(os.path.join(ptx, f + ".ptx"), os.path.join(out, f"{name}-{f}.ptx"))
    for f in ["variants_exp.py", "link_exp.py", "cuda_timing.py"]:
        shutil.copy(os.path.join(os.path.dirname(__file__), f), out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".gpu3")
