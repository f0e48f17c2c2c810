#!/usr/bin/env bash
# Installs what building and testing kache needs, if it is missing: LLVM 19 (linked
# statically), zstd, redis-server and redis-cli (remote-tier tests: one server, TLS, which
# Debian's redis-server is built with, and a cluster made with redis-cli), and NVIDIA's nvcc
# wheel for ptxas and libdevice. Idempotent and quiet.
set -euo pipefail
need=()
[ -x /usr/lib/llvm-19/bin/llvm-config ] || need+=(llvm-19-dev)
[ -e /usr/lib/llvm-19/lib/libPolly.a ] || need+=(libpolly-19-dev)
[ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} (apt)" >&2
  sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq >/dev/null
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
py=$(command -v python3 || command -v python || true)
if [ -n "$py" ] && ! "$py" -c 'import importlib.util,sys; sys.exit(0 if importlib.util.find_spec("nvidia.cuda_nvcc") else 1)' 2>/dev/null; then
  echo "installing nvidia-cuda-nvcc-cu12 (pip, for ptxas and libdevice)" >&2
  "$py" -m pip install -q --disable-pip-version-check nvidia-cuda-nvcc-cu12 2>/dev/null \
    || "$py" -m pip install -q --disable-pip-version-check --break-system-packages nvidia-cuda-nvcc-cu12
fi
