//! The cargo prebuild step: compile a crate's kernels at `cargo build` time, through the
//! persistent cache, and generate typed launch functions.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     kache::prebuild::Builder::new()
//!         .kernels_dir("kernels") // default "kernels"
//!         .arch("sm_80")          // repeatable; default KACHE_ARCH, else sm_70
//!         .build()?;              // writes $OUT_DIR/kache_kernels.rs
//!     Ok(())
//! }
//! ```
//!
//! and in the crate, `include!(concat!(env!("OUT_DIR"), "/kache_kernels.rs"));`. Each kernel
//! file becomes a module with one launch function per kernel, and a module `prebuilt` with the
//! underlying [`Prebuilt`] of each; the PTX (and cubin, where `ptxas` is found) for each
//! architecture is embedded and loaded once per device, and the host backend's machine code is
//! linked into the crate, so the crate needs only kache's runtime (`default-features = false`).
//! For array layouts other than C, the same functions compile the embedded source at run time,
//! through the cache, with the `compiler` feature. `docs/prebuild.md` states how file and
//! kernel names become Rust names.
//!
//! Three parts: [`Builder`] (the build script's side), the code generator, and [`Prebuilt`]
//! (the run-time side of generated code), with [`PrebuiltTuned`] for kernels declared with
//! `#[tune(..)]`: it launches the configuration the build step found tuned in the cache for the
//! device and the arguments' tuning key.

#[cfg(feature = "compiler")]
mod builder;
#[cfg(feature = "compiler")]
mod generate;
#[cfg(feature = "compiler")]
mod host_object;
#[cfg(feature = "compiler")]
mod names;
mod runtime;
mod tuned;

#[cfg(feature = "compiler")]
pub use builder::{Builder, Cubins, TRACKED_ENV};
pub use runtime::{EnumData, Global, Globals, HostCode, KernelData, Prebuilt};
pub use tuned::{PrebuiltTuned, TunedCandidate, TunedChoice, TunedData, TunedResult};
