#!/usr/bin/env bash
# Checks that every feature combination docs/features.md documents builds, warning-free, and
# that its library tests pass: runs each `cargo check` and `cargo test` line of its "Checked
# combinations" block (in the usual target folder, so the dependencies' builds are shared
# between runs) and fails on any warning in kache's code or any failing test. Then checks the
# crate as it would be published (scripts/check-package.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t commands < <(awk '/^## Checked combinations/ {s=1} s && /^```sh/ {b=1; next} b && /^```/ {exit} b && /^cargo (check|test)/' docs/features.md)
((${#commands[@]} >= 2)) || { echo "check-features: no commands found in docs/features.md" >&2; exit 1; }
status=0
for c in "${commands[@]}"; do
  echo "check-features: $c" >&2
  if ! out=$($c --message-format short 2>&1); then
    echo "$out" >&2
    status=1
  elif grep -E '^src/.*: (warning|error)' <<<"$out" >&2; then
    echo "check-features: warnings in: $c" >&2
    status=1
  fi
done
scripts/check-package.sh || status=1
exit $status
