#!/usr/bin/env bash
# The main job: compile every example kernel through kache (and its cache) and say where the
# PTX went. Run twice to see the second run served from the cache.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kache="$root/target/release/kache"
out="$root/target/kache-out"
mkdir -p "$out"
echo "kache cache folder: $("$kache" dir)"
for f in "$root"/examples/kernels/*.rs; do
  name=$(basename "$f" .rs)
  "$kache" compile "$f" -o "$out/$name/"
done
echo "PTX written under $out:"
find "$out" -name '*.ptx' | sort | sed 's/^/  /'
"$kache" stats
