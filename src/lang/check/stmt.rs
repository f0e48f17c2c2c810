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
                AStmt::Let { name, ty, init: Some(ast::Expr { kind: ast::ExprKind::RefMut(x), span: at }), .. }
                    if ty.as_ref().is_none_or(|t| matches!(t, ast::TypeExpr::Ref { mutable: true, .. })) =>
                {
                    self.let_mut_ref(name, ty.as_ref(), x, *at, &mut stmts)?;
                }
                AStmt::Let { name, mutable, ty, init, span } => {
                    let ann = match ty {
                        Some(t) => {
                            let h = self.annotation(t)?;
                            if self.u.ty(h) == Some(Ty::Unit) {
                                return Err(Diagnostic::error(t.span(), "variables of type `()` are not supported").label("here").into());
                            }
                            Some((h, t.span()))
                        }
                        None => None,
                    };
                    let init = match init {
                        Some(e) => Some(self.expr(e)?),
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
                    self.destructure(pat, ty.as_ref(), init, &mut stmts)?;
                }
                AStmt::LetElse { pat, ty, init, els, .. } => {
                    self.let_else(pat, ty.as_ref(), init, els, &mut stmts)?;
                }
                AStmt::Expr(e, semi) => {
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
            Some(t) => Some(Box::new(self.expr(t)?)),
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

    /// The type a `let` annotation says, where `_` is left to inference (`Vec2<_>`, `[_; 4]`).
    pub(super) fn annotation(&mut self, t: &ast::TypeExpr) -> CResult<H> {
        use ast::TypeExpr as T;
        if !has_infer(t) {
            let ty = self.ty_of(t)?;
            return Ok(self.u.known(ty));
        }
        Ok(match t {
            T::Infer(_) => self.u.var(Kind::Any),
            T::Tuple(ts, _) => {
                let mut hs = Vec::new();
                for t in ts {
                    hs.push(self.annotation(t)?);
                }
                self.u.tuple(hs)
            }
            T::Fixed { elem, len, .. } => {
                let e = self.annotation(elem)?;
                let n = match self.eval_const_here(len, Some(Scalar::Usize))? {
                    Some(v) => v.as_i128().and_then(|v| u64::try_from(v).ok()).unwrap_or(UNKNOWN_LEN),
                    None => UNKNOWN_LEN,
                };
                self.u.array(e, n)
            }
            T::Ref { inner, .. } => self.annotation(inner)?,
            T::Generic { path, args, span } => {
                let Some(adt) = self.mcx.template_named(path, self.module, *span)? else {
                    return Err(Diagnostic::error(*span, "the type placeholder `_` is not allowed here").label("here").into());
                };
                let params = self.mcx.adts.borrow().def(adt).params.clone();
                if params.len() != args.len() {
                    return Err(Diagnostic::error(*span, format!("expected {} generic arguments", params.len())).label("here").into());
                }
                let mut out = Vec::new();
                for ((_, kind), a) in params.iter().zip(args) {
                    out.push(match (kind, a) {
                        (None, ast::GenericArg::Type(t)) => super::unify::ArgH::Ty(self.annotation(t)?),
                        (None, ast::GenericArg::Infer(_)) => super::unify::ArgH::Ty(self.u.var(Kind::Any)),
                        (None, ast::GenericArg::Const(e)) => {
                            let A::Path(n) = &e.kind else { return Err(Diagnostic::error(e.span, "expected a type").label("here").into()) };
                            let t = self.ty_of(&T::Named(vec![n.clone()], n.span))?;
                            super::unify::ArgH::Ty(self.u.known(t))
                        }
                        (Some(s), ast::GenericArg::Const(e)) => {
                            let v = self.eval_const_here(e, Some(*s))?.and_then(|v| match v {
                                ScalarValue::Bool(b) => Some(b as u64),
                                ScalarValue::Int(_, x) => Some(x),
                                _ => None,
                            });
                            super::unify::ArgH::Const(*s, v)
                        }
                        (Some(s), _) => super::unify::ArgH::Const(*s, None),
                    });
                }
                self.u.adt(adt, out, false)
            }
            other => {
                let ty = self.ty_of(other)?;
                self.u.known(ty)
            }
        })
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

/// Whether a type has `_` in it.
fn has_infer(t: &ast::TypeExpr) -> bool {
    use ast::TypeExpr as T;
    match t {
        T::Infer(_) => true,
        T::Tuple(ts, _) => ts.iter().any(has_infer),
        T::Fixed { elem, .. } | T::ArrayRef { elem, .. } => has_infer(elem),
        T::Ref { inner, .. } => has_infer(inner),
        T::Generic { args, .. } => args.iter().any(|a| match a {
            ast::GenericArg::Infer(_) => true,
            ast::GenericArg::Type(t) => has_infer(t),
            ast::GenericArg::Const(_) => false,
        }),
        _ => false,
    }
}

#[allow(dead_code)]
pub(super) fn closure_outside_factory(span: Span) -> Diagnostic {
    Diagnostic::error(span, "closures are only supported in factories")
        .label("closure outside a factory")
        .help("define a factory: `fn make(x: f32) -> impl Kernel { let f = move |i: usize| ..; move |out: &mut [f32]| { .. } }`, or write a device function")
}
