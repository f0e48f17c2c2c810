//! The front end: parsing, name resolution and type checking of the kernel language.
//!
//! This layer is pure: it does no IO and does not touch LLVM (the test
//! `front_end_does_no_io_and_no_llvm` holds that). It turns source text into a checked
//! [`Program`](crate::ir::Program) or into [`Diagnostics`] that point at the source.
//!
//! Without the `compiler` feature only the diagnostics types are here: [`Error`](crate::Error)
//! carries them whatever the features.

#[cfg(feature = "compiler")]
mod assign;
#[cfg(feature = "compiler")]
pub mod ast;
#[cfg(feature = "compiler")]
pub mod builtins;
#[cfg(feature = "compiler")]
mod check;
mod diag;
#[cfg(feature = "compiler")]
pub(crate) mod names;
mod source;
#[cfg(feature = "compiler")]
mod syntax;

pub use crate::span::Span;
#[cfg(feature = "compiler")]
pub use check::{
    Binder, Env, GenericKernel, GenericKernelSig, GenericParam, GenericValue, KernelName, KernelSig, LaunchArg, ModuleSummary, check_arch,
    check_factory, check_generic_kernel, check_kernel, check_module, check_unbound_items, file_stem, infer_instance, instance_name,
    needs_accelerated, resolve_kernel_name, show_ty,
};
pub use diag::{Diagnostic, Diagnostics};
pub use source::SourceFile;
#[cfg(feature = "compiler")]
pub use syntax::{
    MAX_BRACKET_DEPTH, MAX_CRATE_FILES, MAX_EXPR_DEPTH, MAX_SOURCE_BYTES, MemorySources, SourceLoader, parse, parse_bytes, parse_crate,
    parse_instance_name, parse_scalar_literal,
};
