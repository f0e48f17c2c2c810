//! kache: a GPU kernel compiler for Rust programs with a persistent, content-addressed kernel
//! cache around it.
//!
//! Kernels are written in a small Rust-syntax language (see `docs/language.md`), compiled
//! through LLVM to PTX for NVIDIA GPUs (or to host code for the CPU backend), and every compile
//! goes through a cache keyed by the content of everything that can change the code. Kernels
//! may capture values from globals bound by the host and from closures: host scalars and
//! arrays become constants, device arrays are captured by pointer, and a kernel that captured
//! a device array is never persisted.
//!
//! ```
//! use kache::{Config, Device, Grid, Jit};
//!
//! let jit = Jit::new(Config::in_memory())?;
//! let device = Device::host(); // or Device::cuda(0)?
//! let prices = device.upload(&[10.0f32, 25.0, 5.0])?;
//! let module = jit
//!     .load_source("shop.rs", r#"
//!         fn price(i: usize) -> f32 { PRICES[i] * (1.0 + TAX_RATE) }
//!         #[kernel]
//!         pub fn totals(quantities: &[f32], totals: &mut [f32]) {
//!             let i = global_id_x();
//!             if i < totals.len() { totals[i] = quantities[i] * price(i); }
//!         }
//!     "#)?
//!     .with_global("PRICES", &prices)? // device array: captured by pointer
//!     .with_global("TAX_RATE", 0.5f32)?; // host value: captured as a constant
//! let quantities = device.upload(&[1.0f32, 2.0, 4.0])?;
//! let mut out = device.alloc::<f32>(&[3])?;
//! module.kernel("totals")?.launch(&device, Grid::linear(3, 128), (&quantities, &mut out))?;
//! assert_eq!(out.download()?, vec![15.0, 75.0, 30.0]);
//! # Ok::<(), kache::Error>(())
//! ```
#![warn(missing_docs)]
// Which features build which parts: docs/features.md. Without `compiler`, the crate is the
// runtime alone: devices, arrays, launches, and the kernels a build script prebuilt.

pub mod abi;
mod build_script;
#[cfg(feature = "compiler")]
pub mod cache;
pub mod capture;
#[cfg(feature = "compiler")]
pub mod codegen;
#[cfg(feature = "compiler")]
pub mod config;
mod error;
pub mod files;
pub mod float16;
#[cfg_attr(not(feature = "compiler"), allow(dead_code))]
mod host_calls;
pub mod ir;
#[cfg(feature = "compiler")]
mod jit;
pub mod lang;
#[cfg(feature = "compiler")]
pub mod library;
mod location;
pub mod logging;
#[cfg(feature = "compiler")]
pub mod parallel;
pub mod prebuild;
pub mod runtime;
pub mod span;
#[cfg(feature = "compiler")]
mod stack;
pub mod target;
#[cfg(feature = "compiler")]
pub mod toolchain;

/// bytemuck, whose traits bound [`Element`]: a plain-data type becomes an element through them.
pub use bytemuck;
pub use capture::{ArrayInterface, CaptureValue, Element, HostArray, IntoCapture, Location, Order, layout_of, strides_from_shape};
#[cfg(feature = "compiler")]
pub use config::Config;
pub use error::{CodegenError, Error, Result};
/// The `half` crate, whose `f16` and `bf16` are the host types of the kernel types `f16` and
/// `bf16` (re-exported so callers name the same version).
pub use half;
pub use ir::{Layout, Scalar, Ty};
#[cfg(feature = "compiler")]
pub use jit::{CaptureSlot, CompileRequest, CompiledFile, CompiledKernel, Direct, DirectExplanation, DirectMiss, FileRequest, Served};
#[cfg(feature = "compiler")]
pub use jit::{FactoryArgs, Jit, Kernel, KernelsToCompile, Module, ModuleLoad, Origin};
#[cfg(feature = "compiler")]
pub use jit::{Tuner, Tuning, TuningCandidate, TuningExplanation, TuningReport, TuningSource};
#[cfg(feature = "compiler")]
pub use library::CodeLibrary;
#[cfg(feature = "cuda")]
pub use runtime::CudaSliceView;
#[cfg(feature = "dlpack")]
pub use runtime::DlpackArray;
pub use runtime::tune::{DeviceModel, DeviceTimer, LaunchTimer, TuneCandidate, TuneOutcome};
pub use runtime::{ArgValue, ByValue, Device, DeviceArray, Dim3, Grid, KernelArg, KernelArgs, TensorMap, TensorMapArg};
pub use runtime::{FieldKind, FieldType, HostField, HostStruct, PlainStruct, StructArray, StructsArg};
pub use target::{Arch, HostCpu, Specialization, Target};

// The guides' Rust examples run as doctests.
#[cfg(all(doctest, feature = "compiler"))]
#[doc = include_str!("../docs/captures.md")]
pub struct CapturesGuide;
#[cfg(all(doctest, feature = "compiler"))]
#[doc = include_str!("../docs/guide.md")]
pub struct UserGuide;
#[cfg(all(doctest, feature = "compiler"))]
#[doc = include_str!("../docs/runtime.md")]
pub struct RuntimeGuide;
#[cfg(all(doctest, feature = "compiler"))]
#[doc = include_str!("../docs/cache.md")]
pub struct CacheGuide;
