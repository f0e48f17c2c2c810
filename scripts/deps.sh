#!/usr/bin/env bash
# Installs what building and testing kache needs, if it is missing, idempotently and quietly:
#
# - from apt: LLVM 19 (linked statically), zstd, redis-server and redis-cli (the remote-tier
#   tests: one server, TLS, which Debian's redis-server is built with, and a cluster made with
#   redis-cli), and pip where Python has none;
# - NVIDIA's toolchain pieces, into one project-local prefix, target/toolchain/ (pinned wheels
#   from PyPI, installed with `pip --target`, so nothing outside the tree is read or changed):
#   `nvidia-cuda-nvcc-cu12` (ptxas, libdevice), `nvidia-cuda-nvrtc-cu12` (libnvrtc, for the
#   speed suite's CUDA twins and the NVRTC comparisons) and `nvidia-cuda-nvdisasm` (nvdisasm,
#   for the SASS the speed suite's benches/speed/sass.py reads; it reads cubins of every
#   architecture ptxas 12 writes).
#
# It then writes target/toolchain/env: the variables (KACHE_PTXAS, KACHE_LIBDEVICE, KACHE_NVRTC)
# that point kache and its tests at exactly those files. The Makefile sources it for every
# command, so a ptxas, libdevice or libnvrtc installed by hand elsewhere on the machine is never
# what a test finds. `scripts/toolchain.sh` prints what the file names.
set -euo pipefail
cd "$(dirname "$0")/.."
NVCC_WHEEL="nvidia-cuda-nvcc-cu12==12.9.86"
NVRTC_WHEEL="nvidia-cuda-nvrtc-cu12==12.9.86"
NVDISASM_WHEEL="nvidia-cuda-nvdisasm==13.5.37"
prefix=target/toolchain
py=$(command -v python3 || command -v python || true)

need=()
[ -x /usr/lib/llvm-19/bin/llvm-config ] || need+=(llvm-19-dev)
[ -e /usr/lib/llvm-19/lib/libPolly.a ] || need+=(libpolly-19-dev)
[ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
if [ -z "$py" ]; then
  need+=(python3 python3-pip)
elif ! "$py" -m pip --version >/dev/null 2>&1; then
  need+=(python3-pip)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (apt)" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  py=$(command -v python3 || command -v python)
fi

# The wheels, each in its own folder under the prefix (a stamp file names the pinned version,
# so a changed pin reinstalls).
wheel() { # name==version folder
  local spec=$1 dir=$prefix/$2
  if [ "$(cat "$dir/.installed" 2>/dev/null)" != "$spec" ]; then
    echo "installing $spec into $dir (pip)" >&2
    rm -rf "$dir" "$dir.partial"
    mkdir -p "$dir.partial"
    # --target installs into a folder, not into an environment: no virtual environment module,
    # no externally-managed refusal, nothing outside the tree touched.
    "$py" -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps --target "$dir.partial" "$spec"
    echo "$spec" > "$dir.partial/.installed"
    mv "$dir.partial" "$dir"
  fi
}
wheel "$NVCC_WHEEL" nvcc
wheel "$NVRTC_WHEEL" nvrtc
wheel "$NVDISASM_WHEEL" nvdisasm

abs=$(cd "$prefix" && pwd)
ptxas=$abs/nvcc/nvidia/cuda_nvcc/bin/ptxas
libdevice=$abs/nvcc/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc
nvrtc=$(ls "$abs"/nvrtc/nvidia/cuda_nvrtc/lib/libnvrtc.so.* 2>/dev/null | grep -v alt | head -1 || true)
nvdisasm=$abs/nvdisasm/nvidia/cu13/bin/nvdisasm
for f in "$ptxas" "$libdevice" "$nvrtc" "$nvdisasm"; do
  [ -n "$f" ] && [ -f "$f" ] || { echo "deps: $f missing after installing the wheels; remove $prefix and run make deps again" >&2; exit 1; }
done
cat > "$prefix/env.partial" <<ENV
# Written by scripts/deps.sh: the NVIDIA toolchain of this checkout (sourced by the Makefile).
export KACHE_PTXAS='$ptxas'
export KACHE_LIBDEVICE='$libdevice'
export KACHE_NVRTC='$nvrtc'
ENV
mv "$prefix/env.partial" "$prefix/env"
