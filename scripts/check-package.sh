#!/usr/bin/env bash
# Checks the crate as it would be published, from a crate that depends on it as its users do:
#
# 1. `cargo package` makes the .crate; it carries the sources, the build script, the documents
#    the crate documentation includes, the README and both license files, and none of the
#    tests, fixtures, benchmarks, examples, fuzz targets or docs/results/;
# 2. two fresh crates depend on the unpacked package by path (path dependencies show their
#    warnings, as registry ones do not), one with the default features and one with the runtime
#    alone (`default-features = false, features = ["cuda"]`); `cargo update` resolves the newest
#    compatible versions of every dependency (not this repository's Cargo.lock), then
#    `cargo build` must succeed with no warning from kache.
#
# In target/package-check/ (kept between runs, so the dependencies are built once).
set -euo pipefail
cd "$(dirname "$0")/.."
work=target/package-check
mkdir -p "$work"
echo "check-package: cargo package" >&2
# Each cargo call that may reach the registry has a time limit: a stalled network is a failure
# that says so, never a make test that does not end.
limit="timeout --kill-after=30 900"
$limit cargo package --allow-dirty --no-verify --quiet 2>/dev/null || $limit cargo package --allow-dirty --no-verify
version=$(awk -F'"' '/^version = / {print $2; exit}' Cargo.toml)
crate=target/package/kache-gpu-$version.crate
list=$(tar -tzf "$crate" | sed "s|^kache-gpu-$version/||")
status=0
for f in Cargo.toml README.md LICENSE-MIT LICENSE-APACHE build.rs src/lib.rs docs/guide.md; do
  grep -qx "$f" <<<"$list" || { echo "check-package: $f is not in the package" >&2; status=1; }
done
if grep -E '^(tests|benches|examples|fuzz|cache-fixtures|scripts|docs/results)/' <<<"$list" >&2; then
  echo "check-package: the package carries files a build does not need (above)" >&2
  status=1
fi
rm -rf "$work/kache-gpu-$version"
tar -xzf "$crate" -C "$work"
for form in full runtime; do
  dir=$work/downstream-$form
  mkdir -p "$dir/src"
  if [ $form = full ]; then dep='{ package = "kache-gpu", path = "../kache-gpu-'$version'" }'
  else dep='{ package = "kache-gpu", path = "../kache-gpu-'$version'", default-features = false, features = ["cuda"] }'; fi
  cat > "$dir/Cargo.toml" <<TOML
[package]
name = "downstream-$form"
version = "0.1.0"
edition = "2024"

[dependencies]
kache = $dep

[workspace]
TOML
  cat > "$dir/src/lib.rs" <<'RS'
/// The host backend: in every build of kache, with or without the compiler.
pub fn device() -> kache::Device {
    kache::Device::host()
}
RS
  echo "check-package: a crate that depends on it ($form): cargo update, cargo build" >&2
  (cd "$dir" && $limit cargo update --quiet && CARGO_TARGET_DIR=../target $limit cargo build --quiet --color never 2> build.log) \
    || { cat "$dir/build.log" >&2; echo "check-package: the $form dependent does not build" >&2; status=1; continue; }
  if grep -n 'warning' "$dir/build.log" >&2; then
    echo "check-package: building the $form dependent warned (above)" >&2
    status=1
  fi
done
exit $status
