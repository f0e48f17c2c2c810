#!/usr/bin/env bash
# Many processes, one store: 16 `kache compile` processes started at once, each compiling its
# own kernel, into one fresh store and into 16 separate stores; then the same 16 again (hits).
# usage: cargo build --release --bin kache && bash benches/concurrent.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/kache
rounds=${1:-3}
w=$(mktemp -d)
trap 'rm -rf "$w"' EXIT
for i in $(seq 0 15); do
  printf 'fn f(x: f32) -> f32 { x * %d.0 + 0.5 }\n#[kernel]\npub fn k%d(x: &[f32], y: &mut [f32]) { let j = global_id_x(); if j < y.len() { y[j] = f(x[j]); } }\n' "$i" "$i" >"$w/k$i.rs"
done
wave() { # $1: shared|separate, $2: store base; 16 processes at once
  local d
  for i in $(seq 0 15); do
    d=$2; [ "$1" = separate ] && d=$2/$i
    KACHE_DIR=$d KACHE_QUIET=1 "$bin" compile "$w/k$i.rs" --arch sm_80 -o "$w/out-$1-$i.ptx" >/dev/null &
  done
  wait
}
run() { # $1: shared|separate
  local base t0 t1 t2 busy="-"
  base=$(mktemp -d -p "$w")
  t0=$(date +%s%N)
  wave "$1" "$base"
  t1=$(date +%s%N)
  wave "$1" "$base"
  t2=$(date +%s%N)
  [ "$1" = shared ] && busy=$(KACHE_DIR=$base "$bin" stats --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["busy"])')
  printf '%-8s 16 misses %5d ms   16 hits %5d ms   busy %s\n' "$1" $(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) "$busy"
}
for _ in $(seq "$rounds"); do
  run shared
  run separate
done
