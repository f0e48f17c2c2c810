//! From text to [`ast`](super::ast): `syn` parses, this module keeps the supported subset and
//! explains everything else at its span.
//!
//! Pathological input must give an error, never a stack overflow: before `syn` sees the tokens,
//! a scan bounds the bracket nesting and the length of each statement (which bounds how deep
//! `syn` recurses), `syn` itself runs on a stack grown for it, and the lowering counts its own
//! depth (`limits`).
//!
//! This file is the entry point (`parse`, `parse_bytes`); the lowering from `syn`'s tree is
//! split by job: `items`, `types`, `expr` (statements and expressions), `literals`, and
//! `spans` (byte ranges of syntax nodes).

mod expr;
mod generics;
mod items;
mod limits;
mod literals;
mod spans;
mod types;

pub use generics::parse_instance_name;
pub use limits::{MAX_BRACKET_DEPTH, MAX_EXPR_DEPTH, MAX_SOURCE_BYTES};
pub(crate) use literals::assoc_const;
pub use literals::parse_scalar_literal;
pub(crate) use types::SCALAR_LIST;

use std::str::FromStr;
use std::sync::Arc;

use proc_macro2::TokenStream;

use crate::lang::ast::*;
use crate::lang::diag::{Diagnostic, Diagnostics};
use crate::lang::source::SourceFile;
use crate::span::Span;

use items::check_attr;
use limits::prescan;
use spans::{LinesGuard, sp};

type PResult<T> = Result<T, Box<Diagnostic>>;

/// Parses a kernel module from raw bytes: non-UTF-8 input is a diagnostic, not a panic.
pub fn parse_bytes(name: &str, bytes: &[u8]) -> Result<SourceModule, Diagnostics> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse(SourceFile::new(name, text)),
        Err(e) => {
            let valid = e.valid_up_to();
            let file = SourceFile::new(name, String::from_utf8_lossy(bytes).into_owned());
            let lossy_offset = String::from_utf8_lossy(&bytes[..valid]).len();
            let d = Diagnostic::error(Span::new(lossy_offset, lossy_offset + 1), "kernel source is not valid UTF-8")
                .label(format!("invalid byte 0x{:02x} at byte offset {valid}", bytes[valid]))
                .help("save the file as UTF-8");
            Err(Diagnostics::single(file, d))
        }
    }
}

/// Parses a kernel module.
pub fn parse(file: Arc<SourceFile>) -> Result<SourceModule, Diagnostics> {
    let err = |d: Diagnostic| Diagnostics::single(file.clone(), d);
    let text = file.text();
    if text.len() > MAX_SOURCE_BYTES {
        return Err(err(Diagnostic::error(Span::new(0, 0), "kernel source is too large")
            .label(format!("{} bytes", text.len()))
            .note(format!("kache accepts kernel sources up to {} MiB", MAX_SOURCE_BYTES >> 20))));
    }
    if let Some(body) = text.strip_prefix('\u{feff}') {
        // Editors do not count the byte-order mark; neither do our columns.
        return parse(SourceFile::new(file.name(), body));
    }
    let body = text;
    if body.trim().is_empty() {
        return Err(err(Diagnostic::error(Span::new(0, 0), "kernel source is empty")
            .label("expected at least one item")
            .help("write a kernel, for example `#[kernel] pub fn k(out: &mut [f32]) { }`")));
    }
    let result = parse_inner(&file);
    // The fallback span map of proc-macro2 keeps every parsed text alive on this thread.
    proc_macro2::extra::invalidate_current_thread_spans();
    result.map_err(|d| err(*d))
}

fn parse_inner(file: &Arc<SourceFile>) -> PResult<SourceModule> {
    let _lines = LinesGuard::set(file);
    let tokens = TokenStream::from_str(file.text()).map_err(|e| {
        Diagnostic::error(sp(e.span()), "syntax error: the source cannot be split into tokens")
            .label("unbalanced bracket, unterminated comment or string, or a character Rust does not allow, here or after")
            .help("check that every `(`, `[` and `{` is closed in order and every `/*` has its `*/`")
    })?;
    // The scan bounds how deep syn (and the lowering after it) will recurse; shallow sources
    // parse on the current stack, deep ones on a stack grown for them (growing costs more
    // than a small parse). The syntax tree is dropped on the same stack: dropping recurses too.
    let (cost, depth) = prescan(&tokens)?;
    let shallow = cost < 256 && depth < 16;
    let run = || -> PResult<Vec<Item>> {
        let parsed: syn::File =
            syn::parse2(tokens).map_err(|e| Diagnostic::error(sp(e.span()), format!("syntax error: {e}")).label("here"))?;
        let mut items = Vec::new();
        let mut lower = Lower { depth: 0, type_params: Vec::new() };
        for attr in &parsed.attrs {
            // Inner attributes (`#![allow(..)]`) change nothing in kernels.
            check_attr(attr, false)?;
        }
        for item in &parsed.items {
            if let Some(i) = lower.item(item)? {
                items.push(i);
            }
        }
        Ok(items)
    };
    let items = if shallow { crate::stack::ensure(1 << 20, 16 << 20, run)? } else { stacker::grow(256 << 20, run)? };
    if items.is_empty() {
        return Err(Diagnostic::error(Span::new(0, 0), "kernel source has no items")
            .label("expected a `fn`, `const` or `static` item")
            .help("write a kernel, for example `#[kernel] pub fn k(out: &mut [f32]) { }`")
            .into());
    }
    let mut names: Vec<&Ident> = Vec::new();
    for i in &items {
        let n = match i {
            Item::Fn(f) => &f.name,
            Item::Const(c) => &c.name,
        };
        if let Some(prev) = names.iter().find(|p| p.name == n.name) {
            return Err(Diagnostic::error(n.span, format!("the name `{}` is defined more than once", n.name))
                .label("redefined here")
                .secondary(prev.span, "first defined here")
                .into());
        }
        names.push(n);
    }
    Ok(SourceModule { file: file.clone(), items })
}

fn unsupported(span: Span, what: &str, instead: &str) -> Diagnostic {
    // "structs are", "field access is": plural subjects end in `s`, but for these.
    let plural = (what.ends_with('s') && !matches!(what, "field access" | "slicing with ranges")) || what.starts_with("references");
    Diagnostic::error(span, format!("{what} {} not supported in kernels", if plural { "are" } else { "is" }))
        .label("not supported")
        .help(instead.to_string())
}

/// The lowering from `syn`'s tree to [`ast`](crate::lang::ast): its methods live in the file of
/// the syntax they lower.
struct Lower {
    /// Current expression nesting, bounded by [`MAX_EXPR_DEPTH`].
    depth: usize,
    /// The type parameters of the function being lowered: a type or path that names one is
    /// the parameter.
    type_params: Vec<String>,
}
