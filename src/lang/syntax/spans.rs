//! Spans of syntax nodes as byte ranges of the source: a per-thread line index turns proc-macro2
//! line/column positions into bytes, and expression spans are found from the edges of the tree
//! instead of by printing it.

use std::sync::Arc;

use syn::spanned::Spanned;

use crate::lang::source::SourceFile;
use crate::span::Span;

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
        let base = self.text.base();
        if ascii {
            return Some(base + start + lc.column);
        }
        let rest = &self.text.text()[start..];
        Some(base + start + rest.char_indices().nth(lc.column).map(|(i, _)| i).unwrap_or(rest.len()))
    }
}

/// Sets the line index for the parse on this thread; the one set before (if any) is back on
/// drop (a block parsed in parts sets its own text's index inside a file's parse: `split`).
pub(super) struct LinesGuard(Option<LineIndex>);

impl LinesGuard {
    pub(super) fn set(file: &Arc<SourceFile>) -> LinesGuard {
        LinesGuard(LINES.with(|l| l.borrow_mut().replace(LineIndex::new(file))))
    }
}

impl Drop for LinesGuard {
    fn drop(&mut self) {
        let before = self.0.take();
        LINES.with(|l| *l.borrow_mut() = before);
    }
}

/// A token's byte range in the source. proc-macro2's `byte_range` converts from characters
/// through a search tree that it fills as it goes (a fifth of a parse's time); line and column
/// come from a binary search, and the line index turns them into bytes.
pub(super) fn sp(s: proc_macro2::Span) -> Span {
    Span::new(lo(s), hi(s))
}

/// The byte offset where a token starts (half of [`sp`]: each end is a search of its own).
fn lo(s: proc_macro2::Span) -> usize {
    offset(s, s.start(), |r| r.start)
}

/// The byte offset where a token ends.
fn hi(s: proc_macro2::Span) -> usize {
    offset(s, s.end(), |r| r.end)
}

fn offset(s: proc_macro2::Span, lc: proc_macro2::LineColumn, end: fn(std::ops::Range<usize>) -> usize) -> usize {
    let (fast, base) = LINES.with(|l| match l.borrow().as_ref() {
        Some(idx) => (idx.offset(lc), idx.text.base()),
        None => (None, 0),
    });
    let at = fast.unwrap_or_else(|| base + end(s.byte_range()));
    #[cfg(debug_assertions)]
    debug_assert_eq!(at, base + end(s.byte_range()), "line index disagrees with proc-macro2");
    at
}

pub(super) fn spn<T: Spanned>(t: &T) -> Span {
    sp(t.span())
}

/// The span of an expression, as [`spn`] gives it (first token to last), without what `spn`
/// does for a syntax tree node: print the whole subtree back into tokens. Lowering asks for the
/// span of every expression, so with `spn` a parse was quadratic in nesting depth and spent
/// 40% of its time there; this follows only the left and right edges of the tree. Attributes,
/// labels and qualified paths (rare) fall back to `spn`.
pub(super) fn expr_span(e: &syn::Expr) -> Span {
    let fast = Span::new(expr_first(e), expr_last(e));
    #[cfg(debug_assertions)]
    debug_assert_eq!(fast, spn(e), "expr_span disagrees with the tokens' span");
    fast
}

fn plain_path(p: &syn::ExprPath) -> bool {
    p.attrs.is_empty() && p.qself.is_none() && p.path.leading_colon.is_none() && !p.path.segments.is_empty()
}

/// Where an expression's first token starts.
fn expr_first(e: &syn::Expr) -> usize {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => expr_first(&b.left),
        E::Assign(a) if a.attrs.is_empty() => expr_first(&a.left),
        E::Lit(l) if l.attrs.is_empty() => lo(l.lit.span()),
        E::Paren(p) if p.attrs.is_empty() => lo(p.paren_token.span.open()),
        E::Array(a) if a.attrs.is_empty() => lo(a.bracket_token.span.open()),
        E::Call(c) if c.attrs.is_empty() => expr_first(&c.func),
        E::MethodCall(m) if m.attrs.is_empty() => expr_first(&m.receiver),
        E::Index(i) if i.attrs.is_empty() => expr_first(&i.expr),
        E::Unary(u) if u.attrs.is_empty() => lo(u.op.span()),
        E::Cast(c) if c.attrs.is_empty() => expr_first(&c.expr),
        E::Block(b) if b.attrs.is_empty() && b.label.is_none() => lo(b.block.brace_token.span.open()),
        E::If(i) if i.attrs.is_empty() => lo(i.if_token.span),
        E::ForLoop(f) if f.attrs.is_empty() && f.label.is_none() => lo(f.for_token.span),
        E::While(w) if w.attrs.is_empty() && w.label.is_none() => lo(w.while_token.span),
        E::Loop(l) if l.attrs.is_empty() && l.label.is_none() => lo(l.loop_token.span),
        E::Return(r) if r.attrs.is_empty() => lo(r.return_token.span),
        E::Path(p) if plain_path(p) => lo(p.path.segments[0].ident.span()),
        _ => spn(e).lo as usize,
    }
}

/// Where an expression's last token ends.
fn expr_last(e: &syn::Expr) -> usize {
    use syn::Expr as E;
    match e {
        E::Binary(b) if b.attrs.is_empty() => expr_last(&b.right),
        E::Assign(a) if a.attrs.is_empty() => expr_last(&a.right),
        E::Lit(l) if l.attrs.is_empty() => hi(l.lit.span()),
        E::Paren(p) if p.attrs.is_empty() => hi(p.paren_token.span.close()),
        E::Array(a) if a.attrs.is_empty() => hi(a.bracket_token.span.close()),
        E::Call(c) if c.attrs.is_empty() => hi(c.paren_token.span.close()),
        E::MethodCall(m) if m.attrs.is_empty() => hi(m.paren_token.span.close()),
        E::Index(i) if i.attrs.is_empty() => hi(i.bracket_token.span.close()),
        E::Unary(u) if u.attrs.is_empty() => expr_last(&u.expr),
        E::Cast(c) if c.attrs.is_empty() => spn(&*c.ty).hi as usize,
        E::Block(b) if b.attrs.is_empty() && b.label.is_none() => hi(b.block.brace_token.span.close()),
        E::If(i) if i.attrs.is_empty() => match &i.else_branch {
            Some((_, e)) => expr_last(e),
            None => hi(i.then_branch.brace_token.span.close()),
        },
        E::ForLoop(f) if f.attrs.is_empty() && f.label.is_none() => hi(f.body.brace_token.span.close()),
        E::While(w) if w.attrs.is_empty() && w.label.is_none() => hi(w.body.brace_token.span.close()),
        E::Loop(l) if l.attrs.is_empty() && l.label.is_none() => hi(l.body.brace_token.span.close()),
        E::Return(r) if r.attrs.is_empty() => match &r.expr {
            Some(v) => expr_last(v),
            None => hi(r.return_token.span),
        },
        E::Path(p) if plain_path(p) && p.path.segments.iter().all(|s| s.arguments.is_none()) => {
            hi(p.path.segments[p.path.segments.len() - 1].ident.span())
        }
        _ => spn(e).hi as usize,
    }
}

pub(super) fn block_span(b: &syn::Block) -> Span {
    sp(b.brace_token.span.join())
}

/// The span of a `let` statement (see [`expr_span`]).
pub(super) fn local_span(l: &syn::Local) -> Span {
    if l.attrs.is_empty() { Span::new(lo(l.let_token.span), hi(l.semi_token.span)) } else { spn(l) }
}
