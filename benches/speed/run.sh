#!/usr/bin/env bash
# The execution-speed suite on the GPU machine, from the repository root, in one command:
#   bash benches/speed/run.sh [OUT_DIR]
# kache and NVRTC (the staged .gpu/speed binary, or target/release/examples/speed), then
# numba-cuda and Triton where they import; one table of every row, and all.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp}}
mkdir -p "$out"
for f in .gpu/speed.xz; do [ -e "$f" ] && xz -d -f "$f" && chmod +x .gpu/speed; done
bin=.gpu/speed
[ -x "$bin" ] || bin=target/release/examples/speed
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
status=0
"$bin" --json "$out/speed-rust.json" | tee "$out/speed-rust.txt" || status=1
for impl in numba triton; do
  if python3 -c "import ${impl/numba/numba.cuda}" 2>/dev/null; then
    timeout 600 python3 "benches/speed/${impl}_speed.py" --json "$out/speed-$impl.json" || status=1
  else
    echo "skipping $impl: it does not import here"
  fi
done
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
rust = json.load(open(os.path.join(out, "speed-rust.json")))
rows = list(rust["rows"])
for impl in ("numba", "triton"):
    p = os.path.join(out, "speed-%s.json" % impl)
    if os.path.exists(p):
        rows += json.load(open(p))
copy = rust.get("copy_gbs") or 0
print("device: %s; copy roofline %.0f GB/s; FP32 FMA %.1f TFLOP/s" % (rust["device"], copy, rust.get("fma_tflops") or 0))
print("%-14s %-7s %10s %10s %8s %10s  check" % ("kernel", "impl", "median ms", "GB/s|GF", "% copy", "nvrtc/x"))
for k in dict.fromkeys(r["kernel"] for r in rows):
    nv = next((r["median_ms"] for r in rows if r["kernel"] == k and r["implementation"] == "nvrtc"), None)
    for r in (r for r in rows if r["kernel"] == k):
        rate = r["gbs"] if r["gbs"] else (r["gflops"] or 0)
        pct = "%.1f%%" % (100 * r["gbs"] / copy) if r["gbs"] and copy else "-"
        rel = "%.3fx" % (nv / r["median_ms"]) if nv and r["median_ms"] else "-"
        print("%-14s %-7s %10.4f %10.0f %8s %10s  %s" % (k, r["implementation"], r["median_ms"], rate, pct, rel, r["check"]))
json.dump({"rust": rust, "rows": rows}, open(os.path.join(out, "all.json"), "w"), indent=1)
PY
exit $status
