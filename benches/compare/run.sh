#!/usr/bin/env bash
# Side by side on one GPU machine, in one run: kache's first launch (miss, PTX hit, cubin hit)
# and numba-cuda's cache=True first call (miss, hit), for saxpy. Needs the staged
# gpu_first_launch binary (../shared/tools/stage-gpu --test gpu -- target/release/examples/gpu_first_launch).
# usage: benches/compare/run.sh [REPS] [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-10}
out=${2:-${OUT:-/tmp}}
bin=.gpu/gpu_first_launch
[ -x "$bin" ] || bin=target/release/examples/gpu_first_launch
echo "== kache"
"$bin" --reps "$reps" --json "$out/kache.json" | tee "$out/kache.txt"
echo "== numba-cuda"
python3 benches/compare/numba_saxpy.py --reps "$reps" --json "$out/numba.json" | tee "$out/numba.txt"
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
k = json.load(open(out + "/kache.json"))
n = json.load(open(out + "/numba.json"))
def med(rows, key):
    return statistics.median(r[key] for r in rows)
kc = [r for r in k if r["kernel"] == "saxpy" and r["mode"] == "cubin hit"]
kp = [r for r in k if r["kernel"] == "saxpy" and r["mode"] == "ptx hit"]
km = [r for r in k if r["kernel"] == "saxpy" and r["mode"] == "miss"]
print("== saxpy, first launch/call beyond context creation (median)")
print("kache miss      %8.2f ms" % med(km, "first_ms"))
print("kache PTX hit   %8.2f ms" % med(kp, "first_ms"))
print("kache cubin hit %8.2f ms" % med(kc, "first_ms"))
print("numba miss      %8.2f ms" % med(n["miss"], "first_ms"))
print("numba hit       %8.2f ms" % med(n["hit"], "first_ms"))
print("numba hit / kache cubin hit: %.0fx" % (med(n["hit"], "first_ms") / med(kc, "first_ms")))
print("== whole process, numba hit vs kache cubin hit: %.1f ms vs %.1f ms (%.0fx)" % (
    med(n["hit"], "process_ms"), med(kc, "process_ms"), med(n["hit"], "process_ms") / med(kc, "process_ms")))
PY
