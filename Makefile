# The two commands of the README: `make run` (the main job) and `make test` (the whole suite).
# Both install what they need first, idempotently and quietly.
SHELL := /bin/bash
export LLVM_SYS_191_PREFIX ?= /usr/lib/llvm-19
export CARGO_TERM_QUIET ?= true

.PHONY: run test lint deps bench fuzz

# The NVIDIA toolchain of this checkout (ptxas, libdevice, libnvrtc under target/toolchain/,
# installed by scripts/deps.sh): every command below runs with KACHE_PTXAS, KACHE_LIBDEVICE and
# KACHE_NVRTC naming those files, never what the system happens to have.
TOOLCHAIN := . target/toolchain/env &&

deps:
	@scripts/deps.sh

run: deps
	@$(TOOLCHAIN) cargo build --release --bin kache
	@$(TOOLCHAIN) scripts/main-job.sh

test: deps
	@$(TOOLCHAIN) scripts/check-features.sh
	@$(TOOLCHAIN) cargo test --all-targets
	@$(TOOLCHAIN) cargo test --doc

# The gates CI runs before the tests: the tree is formatted (rustfmt.toml) and clean under
# clippy with the [lints] table of Cargo.toml, warnings as errors.
lint: deps
	@cargo fmt --check
	@$(TOOLCHAIN) cargo clippy --all-targets -- -D warnings

bench: deps
	@$(TOOLCHAIN) cargo bench
