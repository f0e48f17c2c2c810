#!/usr/bin/env bash
# Regenerates cache-fixtures/stores/ from cache-fixtures/sources/ (see examples/make_fixtures.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo run --quiet --example make_fixtures
