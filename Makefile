# The two commands of the README: `make run` (the main job) and `make test` (the whole suite).
# Both install what they need first, idempotently and quietly.
SHELL := /bin/bash
export LLVM_SYS_191_PREFIX ?= /usr/lib/llvm-19
export CARGO_TERM_QUIET ?= true

.PHONY: run test lint deps bench fuzz

deps:
	@scripts/deps.sh

run: deps
	@cargo build --release --bin kache
	@scripts/main-job.sh

test: deps
	@scripts/check-features.sh
	@cargo test --all-targets
	@cargo test --doc

# The gates CI runs before the tests: the tree is formatted (rustfmt.toml) and clean under
# clippy with the [lints] table of Cargo.toml, warnings as errors.
lint: deps
	@cargo fmt --check
	@cargo clippy --all-targets -- -D warnings

bench: deps
	@cargo bench
