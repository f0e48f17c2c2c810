//! The front end: parsing, name resolution and type checking of the kernel language.
//!
//! This layer is pure: it does no IO and does not touch LLVM (the test
//! `front_end_does_no_io_and_no_llvm` holds that). It turns source text into a checked
//! [`Program`](crate::ir::Program) or into [`Diagnostics`] that point at the source.

mod assign;
pub mod ast;
pub mod builtins;
mod check;
mod diag;
pub(crate) mod names;
mod source;
mod syntax;

pub use crate::span::Span;
pub use check::{
    Env, GenericKernel, GenericKernelSig, GenericParam, GenericValue, KernelName, KernelSig, LaunchArg, ModuleSummary, check_factory,
    check_generic_kernel, check_kernel, check_module, file_stem, infer_instance, instance_name, resolve_kernel_name, show_ty,
};
pub use diag::{Diagnostic, Diagnostics};
pub use source::SourceFile;
pub use syntax::{
    MAX_BRACKET_DEPTH, MAX_CRATE_FILES, MAX_EXPR_DEPTH, MAX_SOURCE_BYTES, MemorySources, SourceLoader, parse, parse_bytes, parse_crate,
    parse_instance_name, parse_scalar_literal,
};
