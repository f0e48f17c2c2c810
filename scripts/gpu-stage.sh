#!/usr/bin/env bash
# Stages the GPU tests, the prebuild demo, the first-launch bench, the several-GPU bench
# (examples/multi_gpu.rs), the execution-speed suite (benches/speed/) and the autotuning bench
# (benches/tune/) for a GPU machine
# without Rust: builds them
# with ../shared/tools/stage-gpu, then compresses the binaries (each links LLVM statically and
# two do not fit the 64 MiB a device call carries). Run there with `bash scripts/gpu-run.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example gpu_first_launch --example multi_gpu --example speed --example tune_speed
# The prebuild demo crate: kernels compiled by its build.rs, run from the binary on the GPU.
(cd examples/prebuild-crate && CARGO_TARGET_DIR=../../target/prebuild-it cargo build --release)
../shared/tools/stage-gpu --test gpu -- target/release/examples/gpu_first_launch target/release/examples/multi_gpu \
  target/release/examples/speed target/release/examples/tune_speed target/prebuild-it/release/prebuild-demo
# Cubins from `kache compile --emit cubin` (the GPU machine has no ptxas) for tests/gpu.rs.
cargo build --release --bin kache
for arch in sm_80 sm_90; do
  KACHE_QUIET=1 target/release/kache compile examples/kernels/saxpy.rs --emit cubin --arch $arch -o .gpu/saxpy-$arch.cubin
done
xz -T0 -6 .gpu/tests/gpu .gpu/gpu_first_launch .gpu/multi_gpu .gpu/speed .gpu/tune_speed .gpu/prebuild-demo
du -sh .gpu
