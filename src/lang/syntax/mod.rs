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

mod crate_tree;
mod expr;
mod generics;
pub(crate) mod index_mut;
mod items;
mod limits;
mod literals;
mod patterns;
mod spans;
mod split;
mod traits;
mod tune;
mod types;

pub use crate_tree::{MAX_CRATE_FILES, MemorySources, SourceLoader, parse_crate};
pub(crate) use generics::BOUND_LIST;
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

/// Parses a kernel module from raw bytes: non-UTF-8 input is a diagnostic, not a panic. A
/// `mod name;` item is an error (there are no files around the text to read it from); see
/// [`parse_crate`] for sources with modules in files.
pub fn parse_bytes(name: &str, bytes: &[u8]) -> Result<SourceModule, Diagnostics> {
    parse_crate(name, bytes, None)
}

/// Parses a kernel module (without files around it, as [`parse_bytes`]).
pub fn parse(file: Arc<SourceFile>) -> Result<SourceModule, Diagnostics> {
    crate_tree::parse_root(file, None)
}

/// The source file of `bytes` whose spans start at `base`: non-UTF-8 input is a diagnostic,
/// and a byte-order mark is dropped (editors do not count it; neither do our columns).
fn decode(name: &str, bytes: &[u8], base: usize) -> Result<Arc<SourceFile>, (Arc<SourceFile>, Box<Diagnostic>)> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::with_base(name, text.strip_prefix('\u{feff}').unwrap_or(text), base)),
        Err(e) => {
            let valid = e.valid_up_to();
            let file = SourceFile::with_base(name, String::from_utf8_lossy(bytes).into_owned(), base);
            let lossy_offset = base + String::from_utf8_lossy(&bytes[..valid]).len();
            let d = Diagnostic::error(Span::new(lossy_offset, lossy_offset + 1), "kernel source is not valid UTF-8")
                .label(format!("invalid byte 0x{:02x} at byte offset {valid}", bytes[valid]))
                .help("save the file as UTF-8");
            Err((file, Box::new(d)))
        }
    }
}

/// Parses one file of a crate into `lower` (its items into `lower.module`). The root file
/// must have items; a module's file may be empty.
fn parse_file(file: &Arc<SourceFile>, lower: &mut Lower, root: bool) -> PResult<()> {
    let at = Span::new(file.base(), file.base());
    let text = file.text();
    if text.len() > MAX_SOURCE_BYTES {
        return Err(Diagnostic::error(at, "kernel source is too large")
            .label(format!("{} bytes", text.len()))
            .note(format!("kache accepts kernel sources up to {} MiB", MAX_SOURCE_BYTES >> 20))
            .into());
    }
    if root && text.trim().is_empty() {
        return Err(Diagnostic::error(at, "kernel source is empty")
            .label("expected at least one item")
            .help("write a kernel, for example `#[kernel] pub fn k(out: &mut [f32]) { }`")
            .into());
    }
    let before = lower.items.len() + lower.modules.len();
    let result = parse_inner(file, lower);
    // The fallback span map of proc-macro2 keeps every parsed text alive on this thread.
    proc_macro2::extra::invalidate_current_thread_spans();
    result?;
    if root && lower.items.len() + lower.modules.len() == before {
        return Err(Diagnostic::error(at, "kernel source has no items")
            .label("expected a `fn`, `const` or `static` item")
            .help("write a kernel, for example `#[kernel] pub fn k(out: &mut [f32]) { }`")
            .into());
    }
    Ok(())
}

fn parse_inner(file: &Arc<SourceFile>, lower: &mut Lower) -> PResult<()> {
    let _lines = LinesGuard::set(file);
    let tokens = tokenize(file.text())?;
    let mut scan = prescan(&tokens, split::worth_trying(file))?;
    // A large block is lowered in parts on several threads; anything unusual there (an error
    // included) parses the whole file again here, so what comes out never depends on it.
    if let Some(plan) = split::plan(scan.block.take()) {
        let mark = lower.mark();
        if split::parse(file, &plan, &scan, lower) {
            return Ok(());
        }
        lower.reset(mark);
    }
    parse_tokens(tokens, &scan, lower)
}

fn tokenize(text: &str) -> PResult<TokenStream> {
    TokenStream::from_str(text).map_err(|e| {
        Diagnostic::error(sp(e.span()), "syntax error: the source cannot be split into tokens")
            .label("unbalanced bracket, unterminated comment or string, or a character Rust does not allow, here or after")
            .help("check that every `(`, `[` and `{` is closed in order and every `/*` has its `*/`")
            .into()
    })
}

/// `syn` over a file's tokens (or fewer: `split`), then the lowering of its items into
/// `lower`; `scan` is the whole file's.
fn parse_tokens(tokens: TokenStream, scan: &limits::Scan, lower: &mut Lower) -> PResult<()> {
    // The scan bounds how deep syn (and the lowering after it) will recurse; shallow sources
    // parse on the current stack, deep ones on a stack grown for them (growing costs more
    // than a small parse). The syntax tree is dropped on the same stack: dropping recurses too.
    let run = || -> PResult<()> {
        let parsed: syn::File =
            syn::parse2(tokens).map_err(|e| Diagnostic::error(sp(e.span()), format!("syntax error: {e}")).label("here"))?;
        for attr in &parsed.attrs {
            // Inner attributes (`#![allow(..)]`) change nothing in kernels.
            check_attr(attr, false)?;
        }
        lower.depth = 0;
        lower.items(&parsed.items)
    };
    if scan.shallow() { crate::stack::ensure(1 << 20, 16 << 20, run) } else { stacker::grow(256 << 20, run) }
}

fn unsupported(span: Span, what: &str, instead: &str) -> Diagnostic {
    // "structs are", "field access is": plural subjects end in `s`, but for these.
    let plural = (what.ends_with('s') && !matches!(what, "field access" | "slicing with ranges")) || what.starts_with("references");
    Diagnostic::error(span, format!("{what} {} not supported in kernels", if plural { "are" } else { "is" }))
        .label("not supported")
        .help(instead.to_string())
}

/// The lowering from `syn`'s tree to [`ast`](crate::lang::ast): its methods live in the file of
/// the syntax they lower. One runs over every file of a crate.
#[derive(Default)]
struct Lower {
    /// Current expression nesting, bounded by [`MAX_EXPR_DEPTH`].
    depth: usize,
    /// The type parameters of the function being lowered: a type or path that names one is
    /// the parameter.
    type_params: Vec<String>,
    /// The module whose items are being lowered.
    module: ModId,
    /// Every item lowered so far.
    items: Vec<Item>,
    /// Every `impl` block lowered so far.
    impls: Vec<ImplDecl>,
    /// Every module declared so far (the root first).
    modules: Vec<ModuleDecl>,
    /// `use` declarations, by module.
    uses: Vec<(ModId, UseDecl)>,
    /// `mod name;` items whose files are still to be read.
    pending: Vec<crate_tree::PendingMod>,
    /// Where the files of the current module's `mod name;` children are (relative to the
    /// root's folder, ending in `/` unless empty).
    child_dir: String,
    /// The folder of the file being lowered (for `#[path]`).
    file_dir: String,
    /// Deepest expression nesting reached (a part lowered on its own thread reports it).
    max_depth: usize,
    /// The block whose later statements other threads are lowering (`split`).
    split: Option<split::Join>,
    /// On a thread lowering part of a block: every name asked about as a type parameter (it
    /// knows none; the block's own thread checks them against its own).
    asked: Option<std::cell::RefCell<Vec<String>>>,
}

/// How far a [`Lower`] had got: a file's parse that is given up returns it there.
struct Mark {
    lengths: [usize; 5],
    module: ModId,
    child_dir: String,
    file_dir: String,
}

impl Lower {
    fn mark(&self) -> Mark {
        Mark {
            lengths: [self.items.len(), self.modules.len(), self.uses.len(), self.pending.len(), self.impls.len()],
            module: self.module,
            child_dir: self.child_dir.clone(),
            file_dir: self.file_dir.clone(),
        }
    }

    /// Back to `mark`: a file's parse only appends to what came before it.
    fn reset(&mut self, mark: Mark) {
        let [items, modules, uses, pending, impls] = mark.lengths;
        self.items.truncate(items);
        self.impls.truncate(impls);
        self.modules.truncate(modules);
        self.uses.truncate(uses);
        self.pending.truncate(pending);
        (self.module, self.child_dir, self.file_dir) = (mark.module, mark.child_dir, mark.file_dir);
        self.type_params.clear();
        self.split = None;
    }

    /// Whether `name` (an identifier or its text) is a type parameter of the function being
    /// lowered.
    fn is_type_param<N: PartialEq<String> + ToString + ?Sized>(&self, name: &N) -> bool {
        if let Some(asked) = &self.asked {
            asked.borrow_mut().push(name.to_string());
        }
        self.type_params.iter().any(|t| name == t)
    }
}
