//! Limits on what the parser accepts, so that pathological input gives an error and never a stack
//! overflow: source size, bracket nesting and statement length (checked on the tokens before `syn`
//! recurses over them) and expression depth (counted while lowering).

use proc_macro2::{Delimiter, TokenStream, TokenTree};

use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::spans::sp;
use super::{Lower, PResult};

/// Largest kernel source accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 8 << 20;

/// Deepest bracket nesting accepted.
pub const MAX_BRACKET_DEPTH: usize = 256;

/// Deepest expression nesting accepted (after parsing).
pub const MAX_EXPR_DEPTH: usize = 1024;

/// Bound on the tokens of one statement plus those of the statements enclosing it.
const MAX_STATEMENT_COST: usize = 8192;

/// What [`prescan`] found.
pub(super) struct Scan {
    /// The largest cost seen (tokens of a statement plus those of the statements around it).
    pub(super) cost: usize,
    /// The deepest bracket nesting.
    pub(super) depth: usize,
    /// When asked for: the brace group with the most `;` of its own, and how many (`split`).
    pub(super) block: Option<(proc_macro2::Group, usize)>,
}

impl Scan {
    /// Whether `syn` and the lowering may run on the current stack (growing one costs more
    /// than a small parse).
    pub(super) fn shallow(&self) -> bool {
        self.cost < 256 && self.depth < 16
    }
}

/// Bounds bracket nesting and statement length before `syn` recurses over the tokens; with
/// `find_block`, also finds the block a parse in parts would cut (in the same walk: each walk
/// over a token stream copies it).
pub(super) fn prescan(tokens: &TokenStream, find_block: bool) -> PResult<Scan> {
    let mut max_cost = 0;
    let mut max_depth = 0;
    let (mut best, mut best_semis) = (None, 0);
    struct Frame {
        iter: proc_macro2::token_stream::IntoIter,
        base: usize,
        seg: usize,
        after_brace: bool,
        semis: usize,
        brace: Option<proc_macro2::Group>,
    }
    let mut stack = vec![Frame { iter: tokens.clone().into_iter(), base: 0, seg: 0, after_brace: false, semis: 0, brace: None }];
    while let Some(top) = stack.last_mut() {
        let Some(tt) = top.iter.next() else {
            if let Some(Frame { brace: Some(g), semis, .. }) = stack.pop()
                && semis > best_semis
            {
                (best, best_semis) = (Some(g), semis);
            }
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
                .help("split the expression into several `let` statements")
                .into());
        }
        match tt {
            TokenTree::Punct(p) if p.as_char() == ';' => {
                top.seg = 0;
                top.semis += 1;
            }
            TokenTree::Punct(p) if p.as_char() == ',' => top.seg = 0,
            TokenTree::Group(g) => {
                let base = top.base + top.seg;
                if g.delimiter() == Delimiter::Brace {
                    top.after_brace = true;
                }
                if stack.len() > MAX_BRACKET_DEPTH {
                    return Err(Diagnostic::error(sp(g.span_open()), "brackets are nested too deeply")
                        .label(format!("more than {MAX_BRACKET_DEPTH} levels of nesting here"))
                        .note(format!("kache accepts up to {MAX_BRACKET_DEPTH} nested brackets"))
                        .help("split the expression into several `let` statements")
                        .into());
                }
                let brace = (find_block && g.delimiter() == Delimiter::Brace).then(|| g.clone());
                stack.push(Frame { iter: g.stream().into_iter(), base, seg: 0, after_brace: false, semis: 0, brace });
                max_depth = max_depth.max(stack.len());
            }
            _ => {}
        }
    }
    Ok(Scan { cost: max_cost, depth: max_depth, block: best.map(|g| (g, best_semis)) })
}

impl Lower {
    pub(super) fn enter(&mut self, span: Span) -> PResult<()> {
        self.depth += 1;
        self.max_depth = self.max_depth.max(self.depth);
        if self.depth > MAX_EXPR_DEPTH {
            return Err(Diagnostic::error(span, "expression is nested too deeply")
                .label(format!("more than {MAX_EXPR_DEPTH} levels of nesting"))
                .help("move nested code into device functions, or split it into several `let` statements")
                .into());
        }
        Ok(())
    }
}
