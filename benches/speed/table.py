#!/usr/bin/env python3
"""The speed suite's complete table, from the rows run.sh collected in OUT_DIR (the Rust
suite's speed-rust-PART.json, one per part, and speed-numba.json, speed-triton.json): every row
with its kind (memory- or compute-bound), its rate and share of the roofline measured in the
same run (the copy bandwidth, or the FP32 FMA peak), and NVRTC's time over its own; then the
geometric mean against NVRTC of each implementation, the slowest kache kernel, the memory-bound
kache kernels at 90% of the copy roofline, and the failed rows. Writes OUT_DIR/all.json.

usage: table.py OUT_DIR PART.. (the Rust suite's parts, in order)
"""
import json
import math
import os
import sys


def load(out, parts):
    rows, rust = [], None
    for part in parts:
        p = os.path.join(out, "speed-rust-%s.json" % part)
        if not os.path.exists(p):
            rows.append({"kernel": part, "implementation": "-", "median_ms": 0, "min_ms": 0, "gbs": None, "gflops": None, "ok": False,
                         "check": "FAILED: the part wrote no results (crashed or timed out: see speed-rust-%s.err)" % part})
            continue
        r = json.load(open(p))
        rust = rust or r
        rows += r["rows"]
    for impl in ("numba", "triton"):
        p = os.path.join(out, "speed-%s.json" % impl)
        if os.path.exists(p):
            rows += [dict(r, ok=r.get("ok", True)) for r in json.load(open(p))]
        else:
            rows.append({"kernel": "*", "implementation": impl, "median_ms": 0, "min_ms": 0, "gbs": None, "gflops": None, "ok": False,
                         "check": "FAILED: %s wrote no results (see speed-%s.err)" % (impl, impl)})
    return rust or {"device": "?", "copy_gbs": None, "fma_tflops": None}, rows


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def table(rust, rows):
    copy, fma = rust.get("copy_gbs") or 0, rust.get("fma_tflops") or 0
    lines = ["device: %s; rooflines measured in the same run: copy %.0f GB/s, FP32 FMA %.1f TFLOP/s" % (rust["device"], copy, fma),
             "%-16s %-8s %-4s %10s %10s %12s %8s %9s  %s" % ("kernel", "impl", "kind", "median ms", "min ms", "rate", "% roof", "nvrtc/x", "check")]
    timed = [r for r in rows if r["ok"] and r["median_ms"] and not r.get("skipped")]
    ratios = {}  # implementation -> [(nvrtc / it, kernel)]
    kinds = {}
    for k in dict.fromkeys(r["kernel"] for r in rows):
        nv = next((r["median_ms"] for r in timed if r["kernel"] == k and r["implementation"] == "nvrtc"), None)
        for r in (r for r in rows if r["kernel"] == k):
            if r["gbs"]:
                kind, rate, pct = "mem", "%.0f GB/s" % r["gbs"], "%.1f%%" % (100 * r["gbs"] / copy) if copy else "-"
            elif r["gflops"]:
                kind, rate, pct = "comp", "%.0f GF/s" % r["gflops"], "%.1f%%" % (100 * r["gflops"] / (1000 * fma)) if fma else "-"
            else:
                kind, rate, pct = kinds.get(k, "-"), "-", "-"
            kinds[k] = kind if kind != "-" else kinds.get(k, "-")
            ok_time = r in timed
            rel = "%.3fx" % (nv / r["median_ms"]) if nv and ok_time else "-"
            lines.append("%-16s %-8s %-4s %10.4f %10.4f %12s %8s %9s  %s" % (k, r["implementation"], kind, r["median_ms"], r["min_ms"], rate, pct, rel, r["check"]))
            if nv and ok_time and r["implementation"] != "nvrtc":
                ratios.setdefault(r["implementation"], []).append((nv / r["median_ms"], k))
    for impl, rs in ratios.items():
        g = geomean([x for x, _ in rs])
        w = min(rs)
        line = "summary: %s vs nvrtc (nvrtc's time over its own): geomean %.3fx over %d kernels, lowest %.3fx (%s)" % (impl, g, len(rs), w[0], w[1])
        for kind in ("mem", "comp"):
            sub = [x for x, k in rs if kinds.get(k) == kind]
            if sub:
                line += "; %s-bound %.3fx over %d" % ("memory" if kind == "mem" else "compute", geomean(sub), len(sub))
        lines.append(line)
    mem = [r for r in timed if r["implementation"] == "kache" and r["gbs"]]
    if mem and copy:
        below = ["%s %.1f%%" % (r["kernel"], 100 * r["gbs"] / copy) for r in mem if r["gbs"] < 0.9 * copy]
        lines.append("summary: memory-bound kache kernels at >= 90%% of the copy roofline: %d of %d%s"
                     % (len(mem) - len(below), len(mem), "; below: " + ", ".join(below) if below else ""))
    skipped = ["%s (%s)" % (r["kernel"], r["implementation"]) for r in rows if r.get("skipped")]
    if skipped:
        lines.append("skipped rows: %s" % ", ".join(skipped))
    failed = ["%s (%s)" % (r["kernel"], r["implementation"]) for r in rows if not r["ok"]]
    lines.append("failed rows: %s" % (", ".join(failed) if failed else "none"))
    return "\n".join(lines), not failed


def main():
    out, parts = sys.argv[1], sys.argv[2:]
    rust, rows = load(out, parts)
    text, ok = table(rust, rows)
    print(text)
    json.dump({"rust": rust, "rows": rows}, open(os.path.join(out, "all.json"), "w"), indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
