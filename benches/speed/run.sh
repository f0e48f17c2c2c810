#!/usr/bin/env bash
# The execution-speed suite on the GPU machine, from the repository root, in one command:
#   bash benches/speed/run.sh [OUT_DIR]
# kache and NVRTC (the staged .gpu/speed binary, or target/release/examples/speed), one process
# per part of the suite (`speed --list`), each under a time limit (SPEED_PART_TIMEOUT, 120 s), so
# that a part that fails, faults the GPU or hangs is a failed row and the others still run; then
# numba-cuda and Triton (numba_speed.py, triton_speed.py: each runs its parts under a time limit
# of its own, SPEED_PY_PART_TIMEOUT, 180 s, and is one skipped row where it does not import or
# finds no GPU); last, the complete table of every row (table.py) and all.json, and the
# tensor cores' table against torch and Triton (tensor_table.py). Exits 1 if any row failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp}}
limit=${SPEED_PART_TIMEOUT:-120}
py_limit=${SPEED_PY_PART_TIMEOUT:-180}
mkdir -p "$out"
for f in .gpu/speed.xz; do [ -e "$f" ] && xz -d -f "$f" && chmod +x .gpu/speed; done
bin=.gpu/speed
[ -x "$bin" ] || bin=target/release/examples/speed
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader
start=$SECONDS
status=0
parts=$("$bin" --list) || { echo "error: $bin --list failed"; exit 2; }
for part in $parts; do
  t0=$SECONDS
  timeout "$limit" "$bin" --only "$part" --json "$out/speed-rust-$part.json" > "$out/speed-rust-$part.txt" 2> "$out/speed-rust-$part.err"
  rc=$?
  echo "part $part: $((SECONDS - t0)) s, exit status $rc$( ((rc == 124)) && echo " (timed out after ${limit}s)")"
  ((rc != 0)) && status=1
done
for impl in numba triton; do
  t0=$SECONDS
  python3 "benches/speed/${impl}_speed.py" --part-timeout "$py_limit" --json "$out/speed-$impl.json" 2> "$out/speed-$impl.err" || status=1
  echo "$impl: $((SECONDS - t0)) s"
done
echo "the whole run: $((SECONDS - start)) s"
python3 benches/speed/table.py "$out" $parts || status=1
python3 benches/speed/tensor_table.py "$out" || status=1
exit $status
