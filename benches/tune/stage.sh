#!/usr/bin/env bash
# Builds the autotuning bench alone for the GPU machine and stages it as .gpu/tune_speed.xz
# (git-ignored: carry `.gpu` to the machine), where `bash benches/tune/run.sh` runs it.
# scripts/gpu-stage.sh stages it with everything else.
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release --example tune_speed
mkdir -p .gpu
cp target/release/examples/tune_speed .gpu/tune_speed
strip .gpu/tune_speed
xz -T0 -6 -f .gpu/tune_speed
du -sh .gpu/tune_speed.xz
