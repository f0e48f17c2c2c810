//! From text to [`ast`](super::ast): `syn` parses, this module keeps the supported subset and
//! explains everything else at its span.
//!
//! Pathological input must give an error, never a stack overflow: before `syn` sees the tokens,
//! a scan bounds the bracket nesting and the length of each statement (which bounds how deep
//! `syn` recurses), `syn` itself runs on a stack grown for it, and the lowering below counts its
//! own depth.

use std::str::FromStr;
use std::sync::Arc;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::spanned::Spanned;

use super::ast::*;
use super::diag::{Diagnostic, Diagnostics};
use super::source::SourceFile;
use crate::ir::{BinOp, LogicOp, MAX_NDIM, Scalar, UnOp};
use crate::span::Span;

/// Largest kernel source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 8 << 20;
/// Deepest bracket nesting accepted.
pub const MAX_BRACKET_DEPTH: usize = 256;
/// Deepest expression nesting accepted (after parsing).
pub const MAX_EXPR_DEPTH: usize = 1024;
/// Bound on the tokens of one statement plus those of the statements enclosing it.
const MAX_STATEMENT_COST: usize = 8192;

const SCALAR_LIST: &str = "bool, i32, i64, u32, u64, usize, f32, f64";

type PResult<T> = Result<T, Diagnostic>;

thread_local! {
    /// The lines of the source being parsed on this thread: byte offset of each line's start
    /// and whether the line is ASCII. See [`sp`].
    static LINES: std::cell::RefCell<Option<LineIndex>> = const { std::cell::RefCell::new(None) };
}

struct LineIndex {
    text: Arc<SourceFile>,
    starts: Vec<(usize, bool)>,
}

impl LineIndex {
    fn new(file: &Arc<SourceFile>) -> LineIndex {
        let text = file.text();
        let mut starts = Vec::with_capacity(text.len() / 32 + 1);
        let mut start = 0;
        for line in text.split_inclusive('\n') {
            starts.push((start, line.is_ascii()));
            start += line.len();
        }
        if text.is_empty() || text.ends_with('\n') {
            starts.push((start, true));
        }
        LineIndex { text: file.clone(), starts }
    }

    /// Byte offset of a (1-based line, column in chars) position.
    fn offset(&self, lc: proc_macro2::LineColumn) -> Option<usize> {
        let &(start, ascii) = self.starts.get(lc.line.checked_sub(1)?)?;
        if ascii {
            return Some(start + lc.column);
        }
        let rest = &self.text.text()[start..];
        Some(start + rest.char_indices().nth(lc.column).map(|(i, _)| i).unwrap_or(rest.len()))
    }
}

/// Sets the line index for the parse on this thread; cleared on drop.
struct LinesGuard;

impl LinesGuard {
    fn set(file: &Arc<SourceFile>) -> LinesGuard {
        LINES.with(|l| *l.borrow_mut() = Some(LineIndex::new(file)));
        LinesGuard
    }
}

impl Drop for LinesGuard {
    fn drop(&mut self) {
        LINES.with(|l| *l.borrow_mut() = None);
    }
}

/// A token's byte range in the source. proc-macro2's `byte_range` converts from characters
/// through a search tree that it fills as it goes (a fifth of a parse's time); line and column
/// come from a binary search, and the line index turns them into bytes.
fn sp(s: proc_macro2::Span) -> Span {
    let fast = LINES.with(|l| {
        let l = l.borrow();
        let idx = l.as_ref()?;
        Some(Span::new(idx.offset(s.start())?, idx.offset(s.end())?))
    });
    let span = fast.unwrap_or_else(|| {
        let r = s.byte_range();
        Span::new(r.start, r.end)
    });
    #[cfg(debug_assertions)]
    {
        let r = s.byte_range();
        debug_assert_eq!(span, Span::new(r.start, r.end), "line index disagrees with proc-macro2");
    }
    span
}

fn spn<T: Spanned>(t: &T) -> Span {
    sp(t.span())
}

fn join(a: Span, b: Span) -> Span {
    Span::new(a.lo as usize, b.hi as usize)
}

/// The span of an expression, as [`spn`] gives it (first token to last), without what `spn`
/// does for a syntax tree node: print the whole subtree back into tokens. Lowering asks for the
/// span of every expression, so with `spn` a parse was quadratic in nesting depth and spent
/// 40% of its time there; this follows only the left and right edges of the tree. Attributes,
/// labels and qualified paths (rare) fall back to `spn`.
fn expr_span(e: &syn::Expr) -> Span {
    let fast = join(expr_first(e), expr_last(e));
    #[cfg(debug_assertions)]
    debug_assert_eq!(fast, spn(e), "expr_span disagrees with the tokens' span");
    fast
}

fn plain_path(p: &syn::ExprPath) -> bool {
    p.attrs.is_empty() && p.qself.is_none() && p.path.leading_colon.is_none() && !p.path.segments.is_empty()
}

/// The span of an expression's first token (or of the whole, where that is simpler).
fn expr_first(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => expr_first(&b.left),
        E::Assign(a) if a.attrs.is_empty() => expr_first(&a.left),
        E::Lit(l) if l.attrs.is_empty() => sp(l.lit.span()),
        E::Paren(p) if p.attrs.is_empty() => sp(p.paren_token.span.open()),
        E::Array(a) if a.attrs.is_empty() => sp(a.bracket_token.span.open()),
        E::Call(c) if c.attrs.is_empty() => expr_first(&c.func),
        E::MethodCall(m) if m.attrs.is_empty() => expr_first(&m.receiver),
        E::Index(i) if i.attrs.is_empty() => expr_first(&i.expr),
        E::Unary(u) if u.attrs.is_empty() => spn(&u.op),
        E::Cast(c) if c.attrs.is_empty() => expr_first(&c.expr),
        E::Block(b) if b.attrs.is_empty() && b.label.is_none() => sp(b.block.brace_token.span.open()),
        E::If(i) if i.attrs.is_empty() => sp(i.if_token.span),
        E::ForLoop(f) if f.attrs.is_empty() && f.label.is_none() => sp(f.for_token.span),
        E::While(w) if w.attrs.is_empty() && w.label.is_none() => sp(w.while_token.span),
        E::Loop(l) if l.attrs.is_empty() && l.label.is_none() => sp(l.loop_token.span),
        E::Return(r) if r.attrs.is_empty() => sp(r.return_token.span),
        E::Path(p) if plain_path(p) => sp(p.path.segments[0].ident.span()),
        _ => spn(e),
    }
}

/// The span of an expression's last token (or of the whole, where that is simpler).
fn expr_last(e: &syn::Expr) -> Span {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => expr_last(&b.right),
        E::Assign(a) if a.attrs.is_empty() => expr_last(&a.right),
        E::Lit(l) if l.attrs.is_empty() => sp(l.lit.span()),
        E::Paren(p) if p.attrs.is_empty() => sp(p.paren_token.span.close()),
        E::Array(a) if a.attrs.is_empty() => sp(a.bracket_token.span.close()),
        E::Call(c) if c.attrs.is_empty() => sp(c.paren_token.span.close()),
        E::MethodCall(m) if m.attrs.is_empty() => sp(m.paren_token.span.close()),
        E::Index(i) if i.attrs.is_empty() => sp(i.bracket_token.span.close()),
        E::Unary(u) if u.attrs.is_empty() => expr_last(&u.expr),
        E::Cast(c) if c.attrs.is_empty() => spn(&*c.ty),
        E::Block(b) if b.attrs.is_empty() && b.label.is_none() => sp(b.block.brace_token.span.close()),
        E::If(i) if i.attrs.is_empty() => match &i.else_branch {
            Some((_, e)) => expr_last(e),
            None => sp(i.then_branch.brace_token.span.close()),
        },
        E::ForLoop(f) if f.attrs.is_empty() && f.label.is_none() => sp(f.body.brace_token.span.close()),
        E::While(w) if w.attrs.is_empty() && w.label.is_none() => sp(w.body.brace_token.span.close()),
        E::Loop(l) if l.attrs.is_empty() && l.label.is_none() => sp(l.body.brace_token.span.close()),
        E::Return(r) if r.attrs.is_empty() => match &r.expr {
            Some(v) => expr_last(v),
            None => sp(r.return_token.span),
        },
        E::Path(p) if plain_path(p) && p.path.segments.iter().all(|s| s.arguments.is_none()) => {
            sp(p.path.segments[p.path.segments.len() - 1].ident.span())
        }
        _ => spn(e),
    }
}

fn block_span(b: &syn::Block) -> Span {
    sp(b.brace_token.span.join())
}

/// The span of a `let` statement (see [`expr_span`]).
fn local_span(l: &syn::Local) -> Span {
    if l.attrs.is_empty() { join(sp(l.let_token.span), sp(l.semi_token.span)) } else { spn(l) }
}

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
    result.map_err(err)
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
        let mut lower = Lower { depth: 0 };
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
            .help("write a kernel, for example `#[kernel] pub fn k(out: &mut [f32]) { }`"));
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
                .secondary(prev.span, "first defined here"));
        }
        names.push(n);
    }
    Ok(SourceModule { file: file.clone(), items })
}

/// Bounds bracket nesting and statement length before `syn` recurses over the tokens; returns
/// the largest cost seen (tokens of a statement plus those of the statements around it) and
/// the deepest bracket nesting.
fn prescan(tokens: &TokenStream) -> PResult<(usize, usize)> {
    let mut max_cost = 0;
    let mut max_depth = 0;
    struct Frame {
        iter: proc_macro2::token_stream::IntoIter,
        base: usize,
        seg: usize,
        after_brace: bool,
    }
    let mut stack = vec![Frame { iter: tokens.clone().into_iter(), base: 0, seg: 0, after_brace: false }];
    while let Some(top) = stack.last_mut() {
        let Some(tt) = top.iter.next() else {
            stack.pop();
            continue;
        };
        if top.after_brace {
            top.after_brace = false;
            let continues = matches!(&tt, TokenTree::Ident(i) if i == "else");
            if !continues {
                top.seg = 0;
            }
        }
        top.seg += 1;
        max_cost = max_cost.max(top.base + top.seg);
        if top.base + top.seg > MAX_STATEMENT_COST {
            return Err(Diagnostic::error(sp(tt.span()), "statement is too long to compile")
                .label("the statement containing this token is too long")
                .note(format!("kache accepts statements of up to {MAX_STATEMENT_COST} tokens, counting the statements around them"))
                .help("split the expression into several `let` statements"));
        }
        match tt {
            TokenTree::Punct(p) if p.as_char() == ';' || p.as_char() == ',' => top.seg = 0,
            TokenTree::Group(g) => {
                let base = top.base + top.seg;
                if g.delimiter() == Delimiter::Brace {
                    top.after_brace = true;
                }
                if stack.len() > MAX_BRACKET_DEPTH {
                    return Err(Diagnostic::error(sp(g.span_open()), "brackets are nested too deeply")
                        .label(format!("more than {MAX_BRACKET_DEPTH} levels of nesting here"))
                        .note(format!("kache accepts up to {MAX_BRACKET_DEPTH} nested brackets"))
                        .help("split the expression into several `let` statements"));
                }
                stack.push(Frame { iter: g.stream().into_iter(), base, seg: 0, after_brace: false });
                max_depth = max_depth.max(stack.len());
            }
            _ => {}
        }
    }
    Ok((max_cost, max_depth))
}

fn check_attr(attr: &syn::Attribute, on_fn: bool) -> PResult<bool> {
    let path = attr.path();
    let name = path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::");
    match name.as_str() {
        "kernel" if on_fn => {
            if !matches!(attr.meta, syn::Meta::Path(_)) {
                return Err(Diagnostic::error(spn(attr), "`#[kernel]` takes no arguments").label("written with arguments"));
            }
            Ok(true)
        }
        "doc" | "allow" | "warn" | "deny" | "expect" | "inline" | "rustfmt::skip" | "must_use" => Ok(false),
        _ => Err(Diagnostic::error(spn(attr), format!("unsupported attribute `#[{name}]`")).label("not supported here").help(
            "supported attributes: `#[kernel]` on functions, and `#[inline]`, `#[allow(..)]` and doc comments, which change nothing",
        )),
    }
}

fn unsupported(span: Span, what: &str, instead: &str) -> Diagnostic {
    // "structs are", "field access is": plural subjects end in `s`, but for these.
    let plural = (what.ends_with('s') && !matches!(what, "field access" | "slicing with ranges")) || what.starts_with("references");
    Diagnostic::error(span, format!("{what} {} not supported in kernels", if plural { "are" } else { "is" }))
        .label("not supported")
        .help(instead.to_string())
}

struct Lower {
    depth: usize,
}

impl Lower {
    fn enter(&mut self, span: Span) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_EXPR_DEPTH {
            return Err(Diagnostic::error(span, "expression is nested too deeply")
                .label(format!("more than {MAX_EXPR_DEPTH} levels of nesting"))
                .help("move nested code into device functions, or split it into several `let` statements"));
        }
        Ok(())
    }

    fn item(&mut self, item: &syn::Item) -> PResult<Option<Item>> {
        use syn::Item as I;
        Ok(Some(match item {
            I::Fn(f) => Item::Fn(self.fn_item(f)?),
            I::Const(c) => {
                for a in &c.attrs {
                    check_attr(a, false)?;
                }
                if !c.generics.params.is_empty() {
                    return Err(unsupported(spn(&c.generics), "generic constants", "remove the generic parameters"));
                }
                Item::Const(ConstItem {
                    name: ident(&c.ident),
                    is_static: false,
                    ty: self.ty(&c.ty, true)?,
                    value: self.expr(&c.expr)?,
                    span: spn(c),
                })
            }
            I::Static(s) => {
                for a in &s.attrs {
                    check_attr(a, false)?;
                }
                if let syn::StaticMutability::Mut(m) = &s.mutability {
                    return Err(unsupported(
                        spn(m),
                        "`static mut` items",
                        "use a `static` (read-only) or pass a writable array as a kernel argument",
                    ));
                }
                Item::Const(ConstItem {
                    name: ident(&s.ident),
                    is_static: true,
                    ty: self.ty(&s.ty, true)?,
                    value: self.expr(&s.expr)?,
                    span: spn(s),
                })
            }
            I::Use(_) => return Ok(None),
            I::Struct(s) => return Err(unsupported(spn(&s.ident), "structs", "pass the fields as separate parameters")),
            I::Enum(e) => return Err(unsupported(spn(&e.ident), "enums", "use integer constants")),
            I::Union(u) => return Err(unsupported(spn(&u.ident), "unions", "use separate arrays")),
            I::Trait(t) => return Err(unsupported(spn(&t.ident), "traits", "write plain functions")),
            I::Impl(i) => return Err(unsupported(spn(&i.self_ty), "`impl` blocks", "write plain functions")),
            I::Mod(m) => return Err(unsupported(spn(&m.ident), "modules", "put every item in the kernel file")),
            I::Type(t) => return Err(unsupported(spn(&t.ident), "type aliases", "write the type out")),
            I::Macro(m) => return Err(unsupported(spn(&m.mac.path), "macros", "write the code out; kache has no macros")),
            I::ExternCrate(e) => return Err(unsupported(spn(e), "`extern crate` items", "remove it")),
            I::ForeignMod(f) => return Err(unsupported(spn(&f.abi), "`extern` blocks", "remove it")),
            I::TraitAlias(t) => return Err(unsupported(spn(&t.ident), "trait aliases", "remove it")),
            other => return Err(unsupported(spn(other), "this kind of item", "use `fn`, `const` and `static` items")),
        }))
    }

    fn fn_item(&mut self, f: &syn::ItemFn) -> PResult<FnItem> {
        let mut is_kernel = false;
        for a in &f.attrs {
            is_kernel |= check_attr(a, true)?;
        }
        let sig = &f.sig;
        if let Some(u) = &sig.unsafety {
            return Err(unsupported(spn(u), "`unsafe` functions", "remove `unsafe`"));
        }
        if let Some(a) = &sig.asyncness {
            return Err(unsupported(spn(a), "`async` functions", "remove `async`"));
        }
        if let Some(c) = &sig.constness {
            return Err(unsupported(spn(c), "`const fn`", "remove `const`; device functions are inlined anyway"));
        }
        if let Some(a) = &sig.abi {
            return Err(unsupported(spn(a), "`extern` functions", "remove the ABI"));
        }
        if !sig.generics.params.is_empty() {
            return Err(unsupported(spn(&sig.generics), "generic functions", "write one function per type"));
        }
        if let Some(w) = &sig.generics.where_clause {
            return Err(unsupported(spn(w), "`where` clauses", "remove it"));
        }
        if let Some(v) = &sig.variadic {
            return Err(unsupported(spn(v), "variadic functions", "list the parameters"));
        }
        let mut params = Vec::new();
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(r) => return Err(unsupported(spn(r), "`self` parameters", "write a plain function")),
                syn::FnArg::Typed(pt) => {
                    let (name, mutable) = self.binding_pat(&pt.pat)?;
                    params.push(Param { name, mutable, ty: Some(self.ty(&pt.ty, false)?), span: spn(pt) });
                }
            }
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => RetTy::Unit,
            syn::ReturnType::Type(_, t) => self.ret_ty(t)?,
        };
        let sig_span = Span::new(spn(&sig.fn_token).lo as usize, spn(&sig.output).hi.max(spn(&sig.paren_token.span.join()).hi) as usize);
        Ok(FnItem { name: ident(&sig.ident), is_kernel, params, ret, body: self.block(&f.block)?, sig_span })
    }

    fn ret_ty(&mut self, t: &syn::Type) -> PResult<RetTy> {
        if let syn::Type::ImplTrait(it) = t {
            let span = spn(it);
            if it.bounds.len() != 1 {
                return Err(Diagnostic::error(span, "a factory returns `impl Kernel` or `impl Fn(..) -> T`").label("unsupported bounds"));
            }
            if let Some(syn::TypeParamBound::Trait(tb)) = it.bounds.first() {
                let Some(last) = tb.path.segments.last() else {
                    return Err(Diagnostic::error(span, "expected a trait").label("here"));
                };
                match (last.ident.to_string().as_str(), &last.arguments) {
                    ("Kernel", syn::PathArguments::None) => return Ok(RetTy::ImplKernel(span)),
                    ("Fn", syn::PathArguments::Parenthesized(p)) => {
                        let params = p.inputs.iter().map(|t| self.ty(t, false)).collect::<PResult<Vec<_>>>()?;
                        let ret = match &p.output {
                            syn::ReturnType::Default => None,
                            syn::ReturnType::Type(_, t) => Some(self.ty(t, false)?),
                        };
                        return Ok(RetTy::ImplFn { params, ret, span });
                    }
                    ("FnMut" | "FnOnce", _) => {
                        return Err(Diagnostic::error(span, "device closures are `Fn`")
                            .label("write `impl Fn(..) -> T`")
                            .note("closures cannot mutate what they capture"));
                    }
                    _ => {}
                }
            }
            return Err(Diagnostic::error(span, "unsupported `impl` return type")
                .label("expected `impl Kernel` or `impl Fn(..) -> T`")
                .help("a factory returns `impl Kernel` (a kernel closure) or `impl Fn(..) -> T` (a device closure)"));
        }
        Ok(RetTy::Ty(self.ty(t, false)?))
    }

    fn binding_pat(&mut self, pat: &syn::Pat) -> PResult<(Ident, bool)> {
        match pat {
            syn::Pat::Ident(pi) => {
                if let Some(r) = &pi.by_ref {
                    return Err(unsupported(spn(r), "`ref` bindings", "bind by value"));
                }
                if let Some((_, sub)) = &pi.subpat {
                    return Err(unsupported(spn(sub), "sub-patterns", "bind a plain name"));
                }
                Ok((ident(&pi.ident), pi.mutability.is_some()))
            }
            syn::Pat::Wild(w) => Ok((Ident { name: "_".into(), span: spn(w) }, false)),
            syn::Pat::Tuple(t) => Err(unsupported(spn(t), "tuple patterns", "bind each value with its own `let`")),
            syn::Pat::Struct(s) => Err(unsupported(spn(s), "struct patterns", "bind a plain name")),
            other => Err(unsupported(spn(other), "this pattern", "bind a plain name, like `x` or `mut x`")),
        }
    }

    fn scalar_name(&self, path: &syn::Path) -> PResult<Option<Scalar>> {
        if path.segments.len() != 1 || path.leading_colon.is_some() {
            return Ok(None);
        }
        let seg = &path.segments[0];
        let name = seg.ident.to_string();
        if let Some(s) = Scalar::from_name(&name) {
            if !seg.arguments.is_none() {
                return Err(Diagnostic::error(spn(seg), format!("`{name}` takes no generic arguments")).label("here"));
            }
            return Ok(Some(s));
        }
        if matches!(name.as_str(), "i8" | "i16" | "i128" | "u8" | "u16" | "u128" | "isize" | "f16" | "f128" | "char" | "str" | "String") {
            return Err(Diagnostic::error(spn(seg), format!("type `{name}` is not supported"))
                .label("unsupported type")
                .help(format!("supported scalar types: {SCALAR_LIST}")));
        }
        Ok(None)
    }

    fn ty(&mut self, t: &syn::Type, fixed_ok: bool) -> PResult<TypeExpr> {
        let span = spn(t);
        match t {
            syn::Type::Paren(p) => self.ty(&p.elem, fixed_ok),
            syn::Type::Group(g) => self.ty(&g.elem, fixed_ok),
            syn::Type::Tuple(tt) if tt.elems.is_empty() => Ok(TypeExpr::Unit(span)),
            syn::Type::Tuple(tt) => Err(unsupported(spn(tt), "tuples", "use separate values")),
            syn::Type::Path(p) => {
                if p.qself.is_some() {
                    return Err(unsupported(span, "qualified paths", "write the type out"));
                }
                if let Some(s) = self.scalar_name(&p.path)? {
                    return Ok(TypeExpr::Scalar(s, span));
                }
                let name = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                if name == "Array" {
                    return Err(
                        Diagnostic::error(span, "`Array` is passed by reference").label("write `&Array<T, N>` or `&mut Array<T, N>`")
                    );
                }
                if name == "Vec" {
                    return Err(Diagnostic::error(span, "`Vec` is not supported in kernels")
                        .label("heap allocation is not available on the device")
                        .help("take a slice parameter: `&[T]` or `&mut [T]`"));
                }
                Err(Diagnostic::error(span, format!("unknown type `{}`", quote_path(&p.path)))
                    .label("not a kernel type")
                    .help(format!("supported types: {SCALAR_LIST}, `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`")))
            }
            syn::Type::Reference(r) => {
                if let Some(l) = &r.lifetime {
                    return Err(unsupported(spn(l), "lifetimes", "remove the lifetime"));
                }
                let mutable = r.mutability.is_some();
                match &*r.elem {
                    syn::Type::Slice(s) => {
                        let elem = self.elem_scalar(&s.elem)?;
                        Ok(TypeExpr::ArrayRef { elem, ndim: 1, mutable, span })
                    }
                    syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Array") => {
                        let seg = p.path.segments.last().ok_or_else(|| Diagnostic::error(span, "expected a type"))?;
                        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
                            return Err(
                                Diagnostic::error(span, "`Array` needs an element type and a dimension count").label("write `Array<T, N>`")
                            );
                        };
                        let args: Vec<_> = ab.args.iter().collect();
                        if args.len() != 2 {
                            return Err(Diagnostic::error(spn(ab), "`Array` takes two arguments").label("write `Array<T, N>`, N in 0..=4"));
                        }
                        let elem = match args[0] {
                            syn::GenericArgument::Type(t) => self.elem_scalar(t)?,
                            other => return Err(Diagnostic::error(spn(other), "expected an element type").label("here")),
                        };
                        let ndim = match args[1] {
                            syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) => {
                                i.base10_parse::<u8>().ok().filter(|n| *n <= MAX_NDIM)
                            }
                            _ => None,
                        };
                        let Some(ndim) = ndim else {
                            return Err(Diagnostic::error(spn(args[1]), "unsupported dimension count")
                                .label("expected an integer literal from 0 to 4"));
                        };
                        Ok(TypeExpr::ArrayRef { elem, ndim, mutable, span })
                    }
                    syn::Type::Path(p) if p.path.is_ident("str") => Err(unsupported(span, "strings", "kernels work on numbers and arrays")),
                    syn::Type::Array(_) => Err(Diagnostic::error(span, "references to fixed-size arrays are not supported")
                        .label("not a kernel type")
                        .help("take a slice: `&[T]` or `&mut [T]`")),
                    _ => Err(unsupported(
                        span,
                        "references to this type",
                        "references are only for arrays: `&[T]`, `&mut [T]`, `&Array<T, N>`",
                    )),
                }
            }
            syn::Type::Array(a) if fixed_ok => {
                let elem = self.ty(&a.elem, true)?;
                if !matches!(elem, TypeExpr::Scalar(..) | TypeExpr::Fixed { .. }) {
                    return Err(Diagnostic::error(elem.span(), "expected a scalar element type").label("here"));
                }
                let len = match &a.len {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u64>().ok(),
                    _ => None,
                };
                let Some(len) = len else {
                    return Err(Diagnostic::error(spn(&a.len), "array length must be an integer literal").label("here"));
                };
                Ok(TypeExpr::Fixed { elem: Box::new(elem), len, span })
            }
            syn::Type::Array(_) => Err(Diagnostic::error(span, "fixed-size arrays are only supported in `static` and `const` items")
                .label("not a parameter type")
                .help("take a slice: `&[T]` or `&mut [T]`, or use `shared_array::<T, N>()` for scratch memory")),
            syn::Type::Slice(_) => Err(Diagnostic::error(span, "slices are passed by reference").label("write `&[T]` or `&mut [T]`")),
            syn::Type::Ptr(_) => Err(unsupported(span, "raw pointers", "take a slice: `&[T]` or `&mut [T]`")),
            syn::Type::BareFn(_) => Err(unsupported(span, "function pointers", "call the function directly")),
            syn::Type::ImplTrait(_) => {
                Err(Diagnostic::error(span, "`impl Trait` is only supported as a factory's return type").label("not supported here"))
            }
            syn::Type::TraitObject(_) => Err(unsupported(span, "trait objects", "call functions directly")),
            syn::Type::Never(_) => Err(unsupported(span, "the never type", "return nothing")),
            syn::Type::Infer(_) => Err(Diagnostic::error(span, "the type must be written here").label("`_` is not allowed")),
            _ => Err(unsupported(span, "this type", &format!("supported types: {SCALAR_LIST}, `&[T]`, `&mut [T]`, `&Array<T, N>`"))),
        }
    }

    fn elem_scalar(&mut self, t: &syn::Type) -> PResult<Scalar> {
        match self.ty(t, false)? {
            TypeExpr::Scalar(s, _) => Ok(s),
            other => Err(Diagnostic::error(other.span(), "array elements must be scalars")
                .label("not a scalar")
                .help(format!("supported element types: {SCALAR_LIST}"))),
        }
    }

    fn block(&mut self, b: &syn::Block) -> PResult<Block> {
        let span = block_span(b);
        self.enter(span)?;
        let mut stmts = Vec::new();
        let mut tail = None;
        let n = b.stmts.len();
        for (i, s) in b.stmts.iter().enumerate() {
            match s {
                syn::Stmt::Local(l) => {
                    for a in &l.attrs {
                        check_attr(a, false)?;
                    }
                    let (pat, ty) = match &l.pat {
                        syn::Pat::Type(pt) => (&*pt.pat, Some(self.ty(&pt.ty, false)?)),
                        p => (p, None),
                    };
                    let (name, mutable) = self.binding_pat(pat)?;
                    let init = match &l.init {
                        Some(init) => {
                            if let Some((e, _)) = &init.diverge {
                                return Err(unsupported(spn(e), "`let .. else`", "use `if`"));
                            }
                            Some(self.expr(&init.expr)?)
                        }
                        None => None,
                    };
                    stmts.push(Stmt::Let { name, mutable, ty, init, span: local_span(l) });
                }
                syn::Stmt::Expr(e, semi) => {
                    let e = self.expr(e)?;
                    if semi.is_none() && i + 1 == n {
                        tail = Some(Box::new(e));
                    } else {
                        stmts.push(Stmt::Expr(e, semi.is_some()));
                    }
                }
                syn::Stmt::Item(item) => {
                    return Err(Diagnostic::error(spn(item), "items inside function bodies are not supported")
                        .label("nested item")
                        .help("move it to the top level of the file"));
                }
                syn::Stmt::Macro(m) => {
                    return Err(macro_error(&m.mac));
                }
            }
        }
        self.depth -= 1;
        Ok(Block { stmts, tail, span })
    }

    fn expr(&mut self, e: &syn::Expr) -> PResult<Expr> {
        let span = expr_span(e);
        self.enter(span)?;
        let r = crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e, span));
        self.depth -= 1;
        r
    }

    fn boxed(&mut self, e: &syn::Expr) -> PResult<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn expr_inner(&mut self, e: &syn::Expr, span: Span) -> PResult<Expr> {
        use syn::Expr as E;
        let kind = match e {
            E::Lit(l) => {
                for a in &l.attrs {
                    check_attr(a, false)?;
                }
                ExprKind::Lit(lit(&l.lit)?)
            }
            E::Paren(p) => return self.expr(&p.expr),
            E::Group(g) => return self.expr(&g.expr),
            E::Path(p) => {
                if p.qself.is_some() {
                    return Err(unsupported(span, "qualified paths", "write a plain name"));
                }
                return self.path_expr(&p.path, span);
            }
            E::Tuple(t) if t.elems.is_empty() => ExprKind::Unit,
            E::Tuple(_) => return Err(unsupported(span, "tuples", "use separate values")),
            E::Unary(u) => {
                let op = match u.op {
                    syn::UnOp::Neg(_) => UnOp::Neg,
                    syn::UnOp::Not(_) => UnOp::Not,
                    syn::UnOp::Deref(_) => {
                        return Err(unsupported(span, "dereferencing with `*`", "index the array instead: `a[i]`"));
                    }
                    _ => return Err(unsupported(span, "this operator", "use arithmetic and logic operators")),
                };
                ExprKind::Unary(op, self.boxed(&u.expr)?)
            }
            E::Binary(b) => {
                use syn::BinOp as B;
                let (l, r) = (self.boxed(&b.left)?, self.boxed(&b.right)?);
                match b.op {
                    B::And(_) => ExprKind::Logic(LogicOp::And, l, r),
                    B::Or(_) => ExprKind::Logic(LogicOp::Or, l, r),
                    op => {
                        let (bin, assign) = match op {
                            B::Add(_) => (BinOp::Add, false),
                            B::Sub(_) => (BinOp::Sub, false),
                            B::Mul(_) => (BinOp::Mul, false),
                            B::Div(_) => (BinOp::Div, false),
                            B::Rem(_) => (BinOp::Rem, false),
                            B::BitXor(_) => (BinOp::BitXor, false),
                            B::BitAnd(_) => (BinOp::BitAnd, false),
                            B::BitOr(_) => (BinOp::BitOr, false),
                            B::Shl(_) => (BinOp::Shl, false),
                            B::Shr(_) => (BinOp::Shr, false),
                            B::Eq(_) => (BinOp::Eq, false),
                            B::Lt(_) => (BinOp::Lt, false),
                            B::Le(_) => (BinOp::Le, false),
                            B::Ne(_) => (BinOp::Ne, false),
                            B::Ge(_) => (BinOp::Ge, false),
                            B::Gt(_) => (BinOp::Gt, false),
                            B::AddAssign(_) => (BinOp::Add, true),
                            B::SubAssign(_) => (BinOp::Sub, true),
                            B::MulAssign(_) => (BinOp::Mul, true),
                            B::DivAssign(_) => (BinOp::Div, true),
                            B::RemAssign(_) => (BinOp::Rem, true),
                            B::BitXorAssign(_) => (BinOp::BitXor, true),
                            B::BitAndAssign(_) => (BinOp::BitAnd, true),
                            B::BitOrAssign(_) => (BinOp::BitOr, true),
                            B::ShlAssign(_) => (BinOp::Shl, true),
                            B::ShrAssign(_) => (BinOp::Shr, true),
                            _ => return Err(unsupported(span, "this operator", "use arithmetic, comparison and logic operators")),
                        };
                        if assign { ExprKind::CompoundAssign(bin, l, r) } else { ExprKind::Binary(bin, l, r) }
                    }
                }
            }
            E::Assign(a) => ExprKind::Assign(self.boxed(&a.left)?, self.boxed(&a.right)?),
            E::Cast(c) => ExprKind::Cast(self.boxed(&c.expr)?, self.ty(&c.ty, false)?),
            E::Index(ix) => {
                let array = self.boxed(&ix.expr)?;
                match &*ix.index {
                    E::Array(a) => {
                        ExprKind::Index { array, indices: a.elems.iter().map(|x| self.expr(x)).collect::<PResult<_>>()?, multi: true }
                    }
                    E::Range(r) => {
                        return Err(unsupported(spn(r), "slicing with ranges", "pass the whole array and an offset"));
                    }
                    other => ExprKind::Index { array, indices: vec![self.expr(other)?], multi: false },
                }
            }
            E::Call(c) => {
                let E::Path(p) = &*c.func else {
                    return Err(unsupported(spn(&c.func), "calls through expressions", "call a function or closure by name"));
                };
                if p.path.segments.len() != 1 || p.qself.is_some() || p.path.leading_colon.is_some() {
                    return Err(Diagnostic::error(spn(&c.func), format!("unknown function `{}`", quote_path(&p.path)))
                        .label("paths are not supported here")
                        .help("call a device function, closure or builtin by its plain name"));
                }
                let seg = &p.path.segments[0];
                let generics = match &seg.arguments {
                    syn::PathArguments::None => Vec::new(),
                    syn::PathArguments::AngleBracketed(ab) => ab.args.iter().map(|g| self.generic_arg(g)).collect::<PResult<_>>()?,
                    syn::PathArguments::Parenthesized(pa) => {
                        return Err(Diagnostic::error(spn(pa), "unexpected parenthesised arguments").label("here"));
                    }
                };
                ExprKind::Call { func: ident(&seg.ident), generics, args: c.args.iter().map(|a| self.expr(a)).collect::<PResult<_>>()? }
            }
            E::MethodCall(m) => {
                if let Some(t) = &m.turbofish {
                    return Err(Diagnostic::error(spn(t), "methods take no generic arguments").label("remove this"));
                }
                ExprKind::MethodCall {
                    receiver: self.boxed(&m.receiver)?,
                    method: ident(&m.method),
                    args: m.args.iter().map(|a| self.expr(a)).collect::<PResult<_>>()?,
                }
            }
            E::If(i) => {
                if let E::Let(l) = &*i.cond {
                    return Err(unsupported(spn(l), "`if let`", "use a plain `if` with a condition"));
                }
                let cond = self.boxed(&i.cond)?;
                let then = self.block(&i.then_branch)?;
                let els = match &i.else_branch {
                    Some((_, e)) => Some(self.boxed(e)?),
                    None => None,
                };
                ExprKind::If(cond, then, els)
            }
            E::While(w) => {
                if let E::Let(l) = &*w.cond {
                    return Err(unsupported(spn(l), "`while let`", "use a plain `while` with a condition"));
                }
                ExprKind::While(w.label.as_ref().map(label), self.boxed(&w.cond)?, self.block(&w.body)?)
            }
            E::Loop(l) => ExprKind::Loop(l.label.as_ref().map(label), self.block(&l.body)?),
            E::ForLoop(f) => self.for_loop(f)?,
            E::Break(b) => ExprKind::Break(
                b.label.as_ref().map(lifetime),
                match &b.expr {
                    Some(x) => Some(self.boxed(x)?),
                    None => None,
                },
            ),
            E::Continue(c) => ExprKind::Continue(c.label.as_ref().map(lifetime)),
            E::Return(r) => ExprKind::Return(match &r.expr {
                Some(x) => Some(self.boxed(x)?),
                None => None,
            }),
            E::Block(b) => {
                if let Some(l) = &b.label {
                    return Err(unsupported(spn(l), "labelled blocks", "use a labelled `loop` with `break`"));
                }
                ExprKind::Block(self.block(&b.block)?)
            }
            E::Closure(c) => {
                if let Some(a) = &c.asyncness {
                    return Err(unsupported(spn(a), "async closures", "remove `async`"));
                }
                let mut params = Vec::new();
                for p in &c.inputs {
                    let (pat, ty) = match p {
                        syn::Pat::Type(pt) => (&*pt.pat, Some(self.ty(&pt.ty, false)?)),
                        other => (other, None),
                    };
                    let (name, mutable) = self.binding_pat(pat)?;
                    params.push(Param { name, mutable, ty, span: spn(p) });
                }
                let ret = match &c.output {
                    syn::ReturnType::Default => None,
                    syn::ReturnType::Type(_, t) => Some(self.ty(t, false)?),
                };
                ExprKind::Closure { params, ret, body: self.boxed(&c.body)? }
            }
            E::Reference(r) => {
                if r.mutability.is_none() {
                    return Err(Diagnostic::error(span, "references are only taken for atomics")
                        .label("not supported here")
                        .help("pass arrays by name; write `&mut a[i]` as the first argument of an atomic"));
                }
                ExprKind::RefMut(self.boxed(&r.expr)?)
            }
            E::Array(a) => ExprKind::ArrayLit(a.elems.iter().map(|x| self.expr(x)).collect::<PResult<_>>()?),
            E::Repeat(r) => ExprKind::ArrayRepeat(self.boxed(&r.expr)?, self.boxed(&r.len)?),
            E::Macro(m) => return Err(macro_error(&m.mac)),
            E::Unsafe(u) => return Err(unsupported(spn(&u.unsafe_token), "`unsafe` blocks", "kernels need no `unsafe`")),
            E::Struct(s) => return Err(unsupported(spn(&s.path), "struct literals", "use separate values")),
            E::Field(f) => {
                return Err(unsupported(spn(f), "field access", "kernels have no structs; call methods like `a.len()` instead"));
            }
            E::Match(m) => return Err(unsupported(spn(&m.match_token), "`match` expressions", "use `if`/`else if`")),
            E::Range(r) => {
                return Err(Diagnostic::error(spn(r), "ranges are only supported in `for` loops")
                    .label("not supported here")
                    .help("write `for i in a..b { .. }`"));
            }
            E::Try(t) => return Err(unsupported(spn(&t.question_token), "the `?` operator", "kernels have no error values")),
            E::Async(a) => return Err(unsupported(spn(&a.async_token), "`async` blocks", "remove `async`")),
            E::Await(a) => return Err(unsupported(spn(&a.await_token), "`.await`", "remove `.await`")),
            E::Let(l) => return Err(unsupported(spn(l), "`let` expressions", "use `let` as a statement")),
            E::Const(c) => return Err(unsupported(spn(&c.const_token), "`const` blocks", "use a `const` item")),
            E::Yield(y) => return Err(unsupported(spn(&y.yield_token), "`yield`", "remove it")),
            E::TryBlock(t) => return Err(unsupported(spn(&t.try_token), "`try` blocks", "remove it")),
            E::Infer(i) => return Err(Diagnostic::error(spn(i), "`_` is not an expression").label("here")),
            E::RawAddr(r) => return Err(unsupported(spn(r), "raw pointers", "index arrays")),
            _ => return Err(unsupported(span, "this expression", "see the language reference for what kernels may contain")),
        };
        Ok(Expr { kind, span })
    }

    fn generic_arg(&mut self, g: &syn::GenericArgument) -> PResult<GenericArg> {
        match g {
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.qself.is_none() => {
                if let Some(s) = self.scalar_name(&p.path)? {
                    return Ok(GenericArg::Type(TypeExpr::Scalar(s, spn(p))));
                }
                // A bare name in a type position may be a `const` item: `shared_array::<f32, N>`.
                Ok(GenericArg::Const(self.path_expr(&p.path, spn(p))?))
            }
            syn::GenericArgument::Type(t) => Ok(GenericArg::Type(self.ty(t, false)?)),
            syn::GenericArgument::Const(e) => Ok(GenericArg::Const(self.expr(e)?)),
            other => Err(Diagnostic::error(spn(other), "unsupported generic argument").label("expected a type or a constant")),
        }
    }

    fn path_expr(&mut self, path: &syn::Path, span: Span) -> PResult<Expr> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        for s in &path.segments {
            if !s.arguments.is_none() {
                return Err(Diagnostic::error(spn(s), "generic arguments are only supported on builtin calls").label("here"));
            }
        }
        if segs.len() == 1 && path.leading_colon.is_none() {
            return Ok(Expr { kind: ExprKind::Path(ident(&path.segments[0].ident)), span });
        }
        let trimmed: Vec<&str> = segs.iter().map(String::as_str).skip_while(|s| *s == "std" || *s == "core").collect();
        if let Some(e) = assoc_const(&trimmed, span) {
            return Ok(e);
        }
        Err(Diagnostic::error(span, format!("unknown path `{}`", quote_path(path)))
            .label("not found")
            .help("kernels refer to items by plain names; supported paths are numeric constants like `f32::MAX`, `i32::MIN` and `f32::consts::PI`"))
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> PResult<ExprKind> {
        let (var, mutable) = self.binding_pat(&f.pat)?;
        if mutable {
            return Err(Diagnostic::error(var.span, "the loop variable cannot be `mut`").label("remove `mut`"));
        }
        let mut iter = &*f.expr;
        while let syn::Expr::Paren(p) = iter {
            iter = &p.expr;
        }
        let (range, step) = match iter {
            syn::Expr::MethodCall(m) if m.method == "step_by" => {
                if m.args.len() != 1 {
                    return Err(Diagnostic::error(spn(m), "`step_by` takes one argument").label("here"));
                }
                let mut r = &*m.receiver;
                while let syn::Expr::Paren(p) = r {
                    r = &p.expr;
                }
                (r, Some(self.boxed(&m.args[0])?))
            }
            other => (other, None),
        };
        let syn::Expr::Range(r) = range else {
            return Err(Diagnostic::error(spn(&f.expr), "`for` loops iterate over ranges")
                .label("not a range")
                .help("write `for i in a..b`, `for i in a..=b` or `for i in (a..b).step_by(s)`"));
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return Err(Diagnostic::error(spn(r), "the range needs a start and an end").label("write `a..b`"));
        };
        Ok(ExprKind::For {
            label: f.label.as_ref().map(label),
            var,
            start: self.boxed(start)?,
            end: self.boxed(end)?,
            inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
            step,
            body: self.block(&f.body)?,
        })
    }
}

fn macro_error(m: &syn::Macro) -> Diagnostic {
    let name = quote_path(&m.path);
    let help = match name.as_str() {
        "println" | "print" | "eprintln" | "dbg" => "kernels cannot print; write results to an output array",
        "assert" | "assert_eq" | "debug_assert" | "panic" | "unreachable" | "todo" | "unimplemented" => {
            "kernels cannot panic; guard with `if` and return early"
        }
        "vec" => "kernels cannot allocate; use `shared_array::<T, N>()` or an array parameter",
        _ => "write the code out; kache has no macros",
    };
    Diagnostic::error(spn(&m.path), format!("macro `{name}!` is not supported in kernels")).label("macros are not supported").help(help)
}

fn ident(i: &syn::Ident) -> Ident {
    let name = i.to_string();
    let name = name.strip_prefix("r#").map(str::to_owned).unwrap_or(name);
    Ident { name, span: spn(i) }
}

fn lifetime(l: &syn::Lifetime) -> Ident {
    Ident { name: format!("'{}", l.ident), span: spn(l) }
}

fn label(l: &syn::Label) -> Ident {
    lifetime(&l.name)
}

fn quote_path(p: &syn::Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    s.push_str(&p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::"));
    s
}

fn lit(l: &syn::Lit) -> PResult<Lit> {
    let span = spn(l);
    let suffix_ty = |suffix: &str| -> PResult<Option<Scalar>> {
        if suffix.is_empty() {
            return Ok(None);
        }
        match Scalar::from_name(suffix) {
            Some(Scalar::Bool) | None => Err(Diagnostic::error(span, format!("unsupported literal suffix `{suffix}`"))
                .label("unsupported type")
                .help(format!("supported scalar types: {SCALAR_LIST}"))),
            Some(s) => Ok(Some(s)),
        }
    };
    match l {
        syn::Lit::Int(i) => {
            let suffix = suffix_ty(i.suffix())?;
            if let Some(s) = suffix.filter(|s| s.is_float()) {
                return float_lit(i.base10_digits(), Some(s), span);
            }
            let v = i
                .base10_parse::<u128>()
                .map_err(|_| Diagnostic::error(span, "integer literal is too large").label("does not fit in 128 bits"))?;
            Ok(Lit::Int(v, suffix))
        }
        syn::Lit::Float(f) => {
            let suffix = suffix_ty(f.suffix())?;
            if let Some(s) = suffix.filter(|s| !s.is_float()) {
                return Err(Diagnostic::error(span, format!("float literal with integer suffix `{s}`"))
                    .label("a float cannot have an integer type")
                    .help(format!("write an integer (`1{s}`), or a float type (`1.5f32`), or convert: `(1.5 as {s})`")));
            }
            float_lit(f.base10_digits(), suffix, span)
        }
        syn::Lit::Bool(b) => Ok(Lit::Bool(b.value)),
        syn::Lit::Str(_) | syn::Lit::ByteStr(_) | syn::Lit::CStr(_) => {
            Err(unsupported(span, "strings", "kernels work on numbers and arrays"))
        }
        syn::Lit::Char(_) | syn::Lit::Byte(_) => Err(unsupported(span, "character literals", "use an integer: `65u32`")),
        _ => Err(unsupported(span, "this literal", "use integer, float and bool literals")),
    }
}

fn float_lit(digits: &str, suffix: Option<Scalar>, span: Span) -> PResult<Lit> {
    // Parse once per precision: going through f64 to f32 could round twice.
    match (digits.parse::<f64>(), digits.parse::<f32>()) {
        (Ok(v64), Ok(v32)) => Ok(Lit::Float { f64: v64, f32: v32, suffix }),
        _ => Err(Diagnostic::error(span, "invalid float literal").label("here")),
    }
}

/// `f32::MAX`, `i32::MIN`, `f64::consts::PI` and friends.
fn assoc_const(segs: &[&str], span: Span) -> Option<Expr> {
    let e = |kind| Some(Expr { kind, span });
    let float = |v: f64, s: Scalar| e(ExprKind::Lit(Lit::Float { f64: v, f32: v as f32, suffix: Some(s) }));
    match segs {
        [ty, name] => {
            let s = Scalar::from_name(ty)?;
            if s.is_float() {
                let f32v = |a: f32, b: f64| if s == Scalar::F32 { a as f64 } else { b };
                match *name {
                    "MAX" => float(f32v(f32::MAX, f64::MAX), s),
                    "MIN" => float(f32v(f32::MIN, f64::MIN), s),
                    "MIN_POSITIVE" => float(f32v(f32::MIN_POSITIVE, f64::MIN_POSITIVE), s),
                    "EPSILON" => float(f32v(f32::EPSILON, f64::EPSILON), s),
                    "INFINITY" => float(f64::INFINITY, s),
                    "NEG_INFINITY" => float(f64::NEG_INFINITY, s),
                    "NAN" => float(f64::NAN, s),
                    _ => None,
                }
            } else if s.is_int() {
                let bits = s.bits();
                let (min_mag, max): (u128, u128) =
                    if s.is_signed() { (1u128 << (bits - 1), (1u128 << (bits - 1)) - 1) } else { (0, (1u128 << bits) - 1) };
                match *name {
                    "MAX" => e(ExprKind::Lit(Lit::Int(max, Some(s)))),
                    "MIN" if min_mag == 0 => e(ExprKind::Lit(Lit::Int(0, Some(s)))),
                    "MIN" => e(ExprKind::Unary(UnOp::Neg, Box::new(Expr { kind: ExprKind::Lit(Lit::Int(min_mag, Some(s))), span }))),
                    "BITS" => e(ExprKind::Lit(Lit::Int(bits as u128, Some(Scalar::U32)))),
                    _ => None,
                }
            } else {
                None
            }
        }
        [ty, "consts", name] => {
            let s = Scalar::from_name(ty).filter(|s| s.is_float())?;
            use std::f64::consts as c;
            let v = match *name {
                "PI" => c::PI,
                "E" => c::E,
                "TAU" => c::TAU,
                "SQRT_2" => c::SQRT_2,
                "LN_2" => c::LN_2,
                "LN_10" => c::LN_10,
                "LOG2_E" => c::LOG2_E,
                "LOG10_E" => c::LOG10_E,
                "FRAC_PI_2" => c::FRAC_PI_2,
                "FRAC_PI_4" => c::FRAC_PI_4,
                "FRAC_1_PI" => c::FRAC_1_PI,
                "FRAC_1_SQRT_2" => c::FRAC_1_SQRT_2,
                "FRAC_2_SQRT_PI" => c::FRAC_2_SQRT_PI,
                _ => return None,
            };
            float(v, s)
        }
        _ => None,
    }
}

/// Parses a Rust literal as a host scalar, for `--define NAME=LITERAL`: the suffix gives the
/// type (`0.08f32`, `3u32`, `-2i64`); unsuffixed integers are `i64`, floats `f64`.
pub fn parse_scalar_literal(text: &str) -> Result<crate::ir::ScalarValue, String> {
    use crate::ir::ScalarValue;
    let t = text.trim();
    let (neg, body) = match t.strip_prefix('-') {
        Some(b) => (true, b.trim_start()),
        None => (false, t),
    };
    let parsed = stacker::grow(1 << 20, || syn::parse_str::<syn::Lit>(body).map(|l| lit(&l)));
    proc_macro2::extra::invalidate_current_thread_spans();
    let l = match parsed {
        Ok(Ok(l)) => l,
        Ok(Err(d)) => return Err(d.message),
        Err(_) => return Err(format!("`{text}` is not a Rust literal (examples: 0.08f32, 3u32, true)")),
    };
    let default = match l {
        Lit::Int(..) => Some(Scalar::I64),
        Lit::Float { .. } => Some(Scalar::F64),
        Lit::Bool(_) => None,
    };
    if neg && matches!(l, Lit::Bool(_)) {
        return Err("`-` before a bool".into());
    }
    let v = match l {
        Lit::Bool(b) => ScalarValue::Bool(b),
        Lit::Int(v, suffix) => {
            let s = suffix.or(default).unwrap_or(Scalar::I64);
            let bits = s.bits();
            let (lo, hi): (i128, i128) =
                if s.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) };
            let val = if neg { (v <= 1u128 << 127).then(|| (v as i128).wrapping_neg()) } else { i128::try_from(v).ok() };
            let Some(val) = val.filter(|val| *val >= lo && *val <= hi) else {
                return Err(format!("`{text}` does not fit in `{s}`"));
            };
            let mask: u128 = if bits >= 64 { u64::MAX as u128 } else { (1u128 << bits) - 1 };
            ScalarValue::Int(s, (val as u128 & mask) as u64)
        }
        Lit::Float { f64: v64, f32: v32, suffix } => match suffix.unwrap_or(Scalar::F64) {
            Scalar::F32 => ScalarValue::F32(if neg { -v32 } else { v32 }),
            _ => ScalarValue::F64(if neg { -v64 } else { v64 }),
        },
    };
    Ok(v)
}
