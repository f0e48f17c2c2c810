//! Speaking to cargo from a build script: whether this process is one, and cargo's instruction
//! lines. Cargo shows a build script's stderr only with `-vv`, so whatever kache has to say
//! there goes through `cargo::warning=` and `cargo::error=` lines instead.

use std::io::Write as _;

/// Whether this process is a build script run by cargo. Cargo sets `HOST` and the
/// `CARGO_CFG_*` variables for build scripts only (not for the programs and tests it runs).
pub(crate) fn running() -> bool {
    std::env::var_os("HOST").is_some() && std::env::var_os("CARGO_CFG_TARGET_ARCH").is_some()
}

/// Prints `message` as cargo instructions of `kind` (`warning`, `error`, `rerun-if-changed`, ...), one line each: cargo
/// reads its instructions line by line.
pub(crate) fn instruction(kind: &str, message: &str) {
    let mut out = std::io::stdout().lock();
    for line in message.lines() {
        // Nothing to do if stdout is gone: cargo is not listening any more.
        let _ = writeln!(out, "cargo::{kind}={line}");
    }
}
