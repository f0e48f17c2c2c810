#!/usr/bin/env bash
# The execution-speed suite on the GPU machine, from the repository root, in one command:
#   bash benches/speed/run.sh [OUT_DIR]
# kache and NVRTC (the staged .gpu/speed binary, or target/release/examples/speed), one process
# per part of the suite (`speed --list`), each under a time limit, so that a part that fails,
# faults the GPU or hangs is a failed row and the others still run; then numba-cuda and Triton
# where they import; one table of every row (with the geometric mean against NVRTC) and
# all.json. Exits 1 if any row failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp}}
limit=${SPEED_PART_TIMEOUT:-240}
mkdir -p "$out"
for f in .gpu/speed.xz; do [ -e "$f" ] && xz -d -f "$f" && chmod +x .gpu/speed; done
bin=.gpu/speed
[ -x "$bin" ] || bin=target/release/examples/speed
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
status=0
parts=$("$bin" --list) || { echo "error: $bin --list failed"; exit 2; }
for part in $parts; do
  timeout "$limit" "$bin" --only "$part" --json "$out/speed-rust-$part.json" > "$out/speed-rust-$part.txt"
  rc=$?
  if ((rc != 0)); then
    status=1
    echo "part $part: exit status $rc$( ((rc == 124)) && echo " (timed out after ${limit}s)")"
  fi
done
for impl in numba triton; do
  if python3 -c "import ${impl/numba/numba.cuda}" 2>/dev/null; then
    timeout 600 python3 "benches/speed/${impl}_speed.py" --json "$out/speed-$impl.json" || status=1
  else
    echo "skipping $impl: it does not import here"
  fi
done
python3 - "$out" $parts <<'PY' || status=1
import json, math, os, sys
out, parts = sys.argv[1], sys.argv[2:]
rows, rust = [], None
for part in parts:
    p = os.path.join(out, "speed-rust-%s.json" % part)
    if not os.path.exists(p):
        rows.append({"kernel": part, "implementation": "-", "median_ms": 0, "min_ms": 0, "gbs": None, "gflops": None,
                     "check": "FAILED: the part wrote no results (crashed or timed out: see speed-rust-%s.txt)" % part, "ok": False})
        continue
    r = json.load(open(p))
    rust = rust or r
    rows += r["rows"]
for impl in ("numba", "triton"):
    p = os.path.join(out, "speed-%s.json" % impl)
    if os.path.exists(p):
        rows += [dict(r, ok=r.get("ok", True)) for r in json.load(open(p))]
rust = rust or {"device": "?", "copy_gbs": None, "fma_tflops": None}
copy = rust.get("copy_gbs") or 0
print("device: %s; copy roofline %.0f GB/s; FP32 FMA %.1f TFLOP/s" % (rust["device"], copy, rust.get("fma_tflops") or 0))
print("%-16s %-8s %10s %10s %8s %10s  check" % ("kernel", "impl", "median ms", "GB/s|GF", "% copy", "nvrtc/x"))
ratios, bound, at_roof = [], 0, 0
for k in dict.fromkeys(r["kernel"] for r in rows):
    nv = next((r["median_ms"] for r in rows if r["kernel"] == k and r["implementation"] == "nvrtc" and r["ok"] and r["median_ms"]), None)
    for r in (r for r in rows if r["kernel"] == k):
        rate = r["gbs"] if r["gbs"] else (r["gflops"] or 0)
        pct = "%.1f%%" % (100 * r["gbs"] / copy) if r["gbs"] and copy else "-"
        rel = "%.3fx" % (nv / r["median_ms"]) if nv and r["median_ms"] else "-"
        print("%-16s %-8s %10.4f %10.0f %8s %10s  %s" % (k, r["implementation"], r["median_ms"], rate, pct, rel, r["check"]))
        if r["implementation"] == "kache" and r["ok"] and r["median_ms"]:
            if nv:
                ratios.append((nv / r["median_ms"], k))
            if r["gbs"] and copy:
                bound += 1
                at_roof += r["gbs"] >= 0.9 * copy
if ratios:
    g = math.exp(sum(math.log(x) for x, _ in ratios) / len(ratios))
    w = min(ratios)
    print("summary: kache (safe) vs nvrtc: geomean %.3fx over %d kernels, lowest %.3fx (%s); memory-bound kernels at >= 90%% of copy: %d of %d"
          % (g, len(ratios), w[0], w[1], at_roof, bound))
failed = ["%s (%s)" % (r["kernel"], r["implementation"]) for r in rows if not r["ok"]]
print("failed rows: %s" % (", ".join(failed) if failed else "none"))
json.dump({"rust": rust, "rows": rows}, open(os.path.join(out, "all.json"), "w"), indent=1)
sys.exit(1 if failed else 0)
PY
exit $status
