#!/usr/bin/env bash
# On the GPU machine: the GPU tests, the prebuild demo, the first-launch bench beside numba-cuda,
# then the execution-speed suite (kache, NVRTC, numba-cuda, Triton; benches/speed/run.sh) and the
# autotuning bench (benches/tune/run.sh). Where
# `nvidia-smi -L` lists two GPUs or more, the tests that need two must run (KACHE_REQUIRE_GPUS=2)
# and the several-GPU bench (examples/multi_gpu.rs) runs first.
# usage: bash scripts/gpu-run.sh [REPS] [OUT_DIR]
set -uo pipefail
cd "$(dirname "$0")/.."
for f in .gpu/tests/*.xz .gpu/*.xz; do [ -e "$f" ] && xz -d -f "$f" && chmod +x "${f%.xz}"; done
reps=${1:-10}
out=${2:-${OUT:-/tmp}}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
status=0
if ((gpus >= 2)); then
  export KACHE_REQUIRE_GPUS=2
  .gpu/multi_gpu --reps "$reps" 2>&1 | tee "$out/multi-gpu.txt" || status=1
fi
bash .gpu/run.sh 2>&1 | tee "$out/gpu-tests.txt" || status=1
# Kernels compiled at cargo build time, loaded from the binary: no compiler, no cache.
{ time .gpu/prebuild-demo; } 2>&1 | tee "$out/prebuild-demo.txt" || status=1
# Its first launch from process start, CUDA context apart (issue 13: at most 2 ms beyond it).
.gpu/prebuild-demo --first-launch "$reps" cuda 2>&1 | tee "$out/prebuild-first-launch.txt" || status=1
bash benches/compare/run.sh "$reps" "$out" 2>&1 | tee "$out/compare.txt" || status=1
bash benches/speed/run.sh "$out" 2>&1 | tee "$out/speed.txt" || status=1
# Autotuning: tuned choices against an exhaustive sweep, tuning time, first launches (issue 36).
bash benches/tune/run.sh "$out" || status=1
exit $status
