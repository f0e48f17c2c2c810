//! Blocks and statements: `let` bindings with their annotations, expression statements, and the
//! type of a block.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, Stmt as AStmt};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::{CBlock, CExpr, FnCx};
use super::unify::{H, Kind, Oblig};

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn block(&mut self, b: &ast::Block) -> CResult<CBlock> {
        let mark = self.scope.len();
        let r = self.block_inner(b);
        self.scope.truncate(mark);
        r
    }

    fn block_inner(&mut self, b: &ast::Block) -> CResult<CBlock> {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            match s {
                AStmt::Let { name, mutable, ty, init, span } => {
                    let ann = match ty {
                        Some(t) => {
                            let ty = self.ty_of(t)?;
                            if ty == Ty::Unit {
                                return Err(Diagnostic::error(t.span(), "variables of type `()` are not supported").label("here").into());
                            }
                            Some((self.u.known(ty), t.span()))
                        }
                        None => None,
                    };
                    let init = match init {
                        Some(e) => {
                            if let A::Closure { .. } = e.kind {
                                return Err(closure_outside_factory(e.span).into());
                            }
                            Some(self.expr(e)?)
                        }
                        None => None,
                    };
                    let h = match (&ann, &init) {
                        (Some((a, aspan)), Some(i)) => {
                            self.assign_compatible(*a, i, *aspan)?;
                            *a
                        }
                        (Some((a, _)), None) => *a,
                        (None, Some(i)) => {
                            if let Some(Ty::Unit) = self.u.ty(i.ty) {
                                return Err(Diagnostic::error(i.span, "this expression has type `()`, which cannot be stored")
                                    .label("no value")
                                    .into());
                            }
                            if let Some(Ty::Never) = self.u.ty(i.ty) { self.u.var(Kind::Any) } else { i.ty }
                        }
                        (None, None) => {
                            let v = self.u.var(Kind::Any);
                            self.obligations.push(Oblig::Settled { h: v, span: *span });
                            v
                        }
                    };
                    let deferred = init.is_none();
                    let id = self.declare(name, h, *mutable, deferred);
                    stmts.push(Stmt::Let(id, init));
                }
                AStmt::LetPat { pat, ty, init, .. } => {
                    if let A::Closure { .. } = init.kind {
                        return Err(closure_outside_factory(init.span).into());
                    }
                    self.destructure(pat, ty.as_ref(), init, &mut stmts)?;
                }
                AStmt::Expr(e, semi) => {
                    if let A::Closure { .. } = e.kind {
                        return Err(closure_outside_factory(e.span).into());
                    }
                    let x = self.expr(e)?;
                    if !semi {
                        // A block-like expression statement without `;` must be `()`, like Rust.
                        let unit = self.u.known(Ty::Unit);
                        if !self.u.unify(unit, x.ty) {
                            let d = self.u.describe(x.ty);
                            return Err(Diagnostic::error(e.span, format!("mismatched types: expected `()`, found `{d}`"))
                                .label("this value is not used")
                                .help("add `;` after it, or make it the last expression of the block")
                                .into());
                        }
                    }
                    stmts.push(Stmt::Expr(x));
                }
            }
        }
        let tail = match &b.tail {
            Some(t) => {
                if let A::Closure { .. } = t.kind {
                    return Err(closure_outside_factory(t.span).into());
                }
                Some(Box::new(self.expr(t)?))
            }
            None => None,
        };
        Ok(Block { stmts, tail })
    }

    /// `let x: T = init` / argument passing: arrays by shape and writability, scalars by unification.
    pub(super) fn assign_compatible(&mut self, want: H, got: &CExpr, span: Span) -> CResult<()> {
        match (self.u.ty(want), self.u.ty(got.ty)) {
            (Some(Ty::Array(w)), Some(Ty::Array(g))) => {
                if w.elem != g.elem || w.ndim != g.ndim {
                    return Err(self.mismatch(got.span, want, got.ty, "").into());
                }
                if w.writable && !g.writable {
                    return Err(Diagnostic::error(got.span, "this array is read-only")
                        .label(format!("expected `{w}`, found `{g}`"))
                        .secondary(span, "requires a writable array")
                        .into());
                }
                Ok(())
            }
            (Some(Ty::ParamArray(w)), Some(Ty::ParamArray(g))) if w.elem == g.elem && w.ndim == g.ndim => {
                if w.writable && !g.writable {
                    let (ws, gs) = (self.u.ty_name(Ty::ParamArray(w)), self.u.ty_name(Ty::ParamArray(g)));
                    return Err(Diagnostic::error(got.span, "this array is read-only")
                        .label(format!("expected `{ws}`, found `{gs}`"))
                        .secondary(span, "requires a writable array")
                        .into());
                }
                Ok(())
            }
            _ => {
                if self.u.unify(want, got.ty) {
                    return Ok(());
                }
                let mut d = self.mismatch(got.span, want, got.ty, "");
                if let ExprKind::PendingLit(l) = &got.kind
                    && let Some(help) = self.literal_as_param(want, got.ty, Some(l))
                {
                    d.help.clear();
                    d = d.help(help);
                }
                Err(d.into())
            }
        }
    }

    /// The type of a block: its tail's, `!` if a statement diverges, else `()`.
    pub(super) fn body_type(&mut self, b: &CBlock) -> H {
        if let Some(t) = &b.tail {
            return t.ty;
        }
        for s in &b.stmts {
            let e = match s {
                Stmt::Expr(e) | Stmt::Let(_, Some(e)) => e,
                Stmt::Let(_, None) => continue,
            };
            if self.u.ty(e.ty) == Some(Ty::Never) {
                return self.u.known(Ty::Never);
            }
        }
        self.u.known(Ty::Unit)
    }
}

pub(super) fn closure_outside_factory(span: Span) -> Diagnostic {
    Diagnostic::error(span, "closures are only supported in factories")
        .label("closure outside a factory")
        .help("define a factory: `fn make(x: f32) -> impl Kernel { let f = move |i: usize| ..; move |out: &mut [f32]| { .. } }`, or write a device function")
}
