#!/usr/bin/env bash
# The autotuning bench on the GPU machine, from the repository root, in one command:
#   bash benches/tune/run.sh [OUT_DIR]
# Runs the staged .gpu/tune_speed (benches/tune/stage.sh or scripts/gpu-stage.sh make it), or
# target/release/examples/tune_speed: for each case of benches/tune/main.rs, the tuned choice
# against an exhaustive sweep, the tuning time, and a second process's first launch with the
# tuning result cached against an untuned cached hit (docs/benchmarks.md, "Autotuning"). Writes
# OUT_DIR/tune.txt and OUT_DIR/tune.json.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp}}
mkdir -p "$out"
[ -e .gpu/tune_speed.xz ] && xz -d -f .gpu/tune_speed.xz && chmod +x .gpu/tune_speed
bin=.gpu/tune_speed
[ -x "$bin" ] || bin=target/release/examples/tune_speed
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
timeout 540 "$bin" --reps "${TUNE_REPS:-7}" --json "$out/tune.json" 2>&1 | tee "$out/tune.txt"
exit "${PIPESTATUS[0]}"
