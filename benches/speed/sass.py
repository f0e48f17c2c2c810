#!/usr/bin/env python3
"""The SASS of PTX files, offline: each kernel's registers, instructions and loops, with the
global loads and stores of each loop's trip, kache's and NVRTC's side by side. No GPU needed.

usage: sass.py [--all] PTX_OR_DIR..

A directory is what `speed --dry-run --ptx DIR` wrote (cargo run --release --example speed --
--dry-run --ptx DIR): kache-NAME.ptx (bounds-checked), kache-NAME-unchecked.ptx and
nvrtc-FILE.ptx (every kernel of a CUDA source). Each PTX is assembled for sm_90 by ptxas
(KACHE_PTXAS, else target/toolchain's, else PATH's) and the cubin disassembled by nvdisasm
(NVDISASM, else target/toolchain/nvdisasm/, which `make deps` installs from the
nvidia-cuda-nvdisasm wheel, else PATH's). Kernels are listed by name, each implementation on a
line: registers, instructions, then each loop (a backward branch) as (instructions, LDG, STG,
LDS) per trip. Bounds-checked code has loops NVRTC's has not: the copies of a loop whose
checks could not be hoisted, and the fault path's (a compare-and-swap retry and its stores,
which no in-bounds thread runs). Without --all only kernels that NVRTC's PTX has too are listed.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def tool(env, under, name):
    for p in (os.environ.get(env), os.path.join(ROOT, "target/toolchain", under), shutil.which(name)):
        if p and os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    sys.exit("sass.py: %s not found: set %s or run `make deps` (it installs %s under target/toolchain/)" % (name, env, under))


def functions(ptxas, nvdisasm, ptx, tmp):
    """{kernel: (registers, [instructions], [loops])} of one PTX file."""
    cubin = os.path.join(tmp, "x.cubin")
    # The PTX's own target (sm_90a for the warpgroup MMA's kernels), else sm_90.
    m = re.search(r"^\.target\s+(sm_\w+)", open(ptx).read(), re.M)
    arch = m.group(1) if m else "sm_90"
    r = subprocess.run([ptxas, "-arch=" + arch, "-v", "-o", cubin, ptx], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ptxas rejected %s: %s" % (ptx, r.stderr.strip()))
    regs = {}
    name = None
    for line in r.stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            regs[name] = int(m.group(1))
    sass = subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout
    out = {}
    for part in re.split(r"\n//-+ \.text\.", sass)[1:]:
        fname = part.split()[0]
        insts, labels = [], {}
        for line in part.splitlines():
            m = re.match(r"\s*(\.L_x_\d+):", line)
            if m:
                labels[m.group(1)] = len(insts)
            m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
            if m:
                insts.append(m.group(1))
        loops = []
        for i, ins in enumerate(insts):
            m = re.search(r"\bBRA\b.*?(\.L_x_\d+)", ins)
            t = labels.get(m.group(1)) if m else None
            # A backward branch to itself is the end of the code (`BRA` after the last `EXIT`).
            if t is not None and t < i:
                body = insts[t:i + 1]
                count = lambda op: sum(bool(re.search(r"\b%s\b" % op, b)) for b in body)
                loops.append((len(body), count("LDG(\\.[A-Z0-9.]+)?"), count("STG(\\.[A-Z0-9.]+)?"), count("LDS(\\.[A-Z0-9.]+)?")))
        out[fname] = (regs.get(fname), insts, loops)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    if not args or "--help" in sys.argv:
        print(__doc__)
        return 0 if args else 2
    ptxas = tool("KACHE_PTXAS", "nvcc/nvidia/cuda_nvcc/bin/ptxas", "ptxas")
    nvdisasm = tool("NVDISASM", "nvdisasm/nvidia/cu13/bin/nvdisasm", "nvdisasm")
    files = []
    for a in args:
        files += sorted(glob.glob(os.path.join(a, "*.ptx"))) if os.path.isdir(a) else [a]
    rows = {}  # kernel -> [(implementation, regs, insts, loops)]
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            base = os.path.basename(f)[:-4]
            for fname, (regs, insts, loops) in functions(ptxas, nvdisasm, f, tmp).items():
                if base.startswith("nvrtc-"):
                    imp = "nvrtc"
                elif base.endswith("-unchecked"):
                    imp = "unchk"
                elif base.startswith("kache-") and "-" in base[len("kache-" + fname):]:
                    imp = base[len("kache-" + fname) + 1:]  # a variant's PTX (kache-NAME-VARIANT)
                else:
                    imp = "kache" if base.startswith("kache-") else base
                rows.setdefault(fname, []).append((imp, regs, len(insts), loops))
    for k in sorted(rows):
        if "--all" not in sys.argv and len(files) > 1 and not any(i == "nvrtc" for i, *_ in rows[k]):
            continue
        print(k)
        for imp, regs, n, loops in sorted(rows[k]):
            print("  %-8s regs %-4s insts %-5d loops (insts, LDG, STG, LDS): %s" % (imp, regs if regs is not None else "?", n, loops))
    return 0


if __name__ == "__main__":
    sys.exit(main())
