//! `if let`, `while let` and `let .. else`: one pattern tested against a value (with the
//! pattern tests and the coverage check of `patterns.rs`), its bindings in scope where it
//! matched.

use crate::ir::*;
use crate::lang::ast::{self, Pat};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::{CExpr, FnCx};
use super::unify::H;

impl<'c, 'm> FnCx<'c, 'm> {
    /// `if let PATTERN = value { then } else ..`
    pub(super) fn if_let(
        &mut self,
        pat: &Pat,
        value: &ast::Expr,
        then: &ast::Block,
        els: Option<&ast::Expr>,
        span: Span,
    ) -> CResult<CExpr> {
        let (held, whole) = self.scrutinee(value)?;
        let (sty, sspan) = (whole.ty, whole.span);
        let mark = self.scope.len();
        let mut binds = Vec::new();
        let saved = std::mem::replace(&mut self.bind_by_ref, held.is_none());
        let r = self.pat_test(pat, &whole, &mut binds);
        self.bind_by_ref = saved;
        let r = r.and_then(|(t, pt)| Ok((t, pt, self.block(then)?)));
        self.scope.truncate(mark);
        let (test, pt, then_b) = r?;
        self.check_coverage(&[(pt, false, pat.span())], sty, sspan, false)?;
        let tt = self.body_type(&then_b);
        let (els_b, ty) = match els {
            None => {
                let unit = self.u.known(Ty::Unit);
                if !self.u.unify(unit, tt) {
                    let d = self.u.describe(tt);
                    return Err(Diagnostic::error(then.span, format!("`if let` without `else` has type `()`, found `{d}`"))
                        .label("this value has nowhere to go")
                        .help("add an `else` branch, or end the expression with `;`")
                        .into());
                }
                (Block { stmts: Vec::new(), tail: None }, unit)
            }
            Some(e) => {
                let eb = match &e.kind {
                    ast::ExprKind::Block(b) => self.block(b)?,
                    _ => {
                        let x = self.expr(e)?;
                        Block { stmts: Vec::new(), tail: Some(Box::new(x)) }
                    }
                };
                let et = self.body_type(&eb);
                let ty = match (self.u.ty(tt), self.u.ty(et)) {
                    (Some(Ty::Never), _) => et,
                    (_, Some(Ty::Never)) => tt,
                    _ => {
                        if !self.u.unify(tt, et) {
                            let (x, y) = (self.u.describe(tt), self.u.describe(et));
                            return Err(Diagnostic::error(e.span, format!("`if let` and `else` have incompatible types: `{x}` and `{y}`"))
                                .label(format!("expected `{x}`, found `{y}`"))
                                .into());
                        }
                        tt
                    }
                };
                (eb, ty)
            }
        };
        let mut then_b = then_b;
        let mut stmts = binds;
        stmts.append(&mut then_b.stmts);
        then_b.stmts = stmts;
        let out = match test {
            Some(t) => Expr { kind: ExprKind::If(Box::new(t), then_b, Some(els_b)), ty, span },
            None => Expr { kind: ExprKind::Block(then_b), ty, span },
        };
        let stmts = held.map(|(tmp, s)| vec![Stmt::Let(tmp, Some(s))]).unwrap_or_default();
        Ok(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(out)) }), ty, span })
    }

    /// The value an `if let` or `while let` takes apart: a `&mut` place where it is (its
    /// bindings name its parts), any other value held in a hidden local (returned with it).
    fn scrutinee(&mut self, value: &ast::Expr) -> CResult<(Option<(LocalId, CExpr)>, CExpr)> {
        if let Some((p, h)) = self.mut_ref_place(value)? {
            let whole = self.operand_value(super::aggregates::Operand::Place(p, h), value.span);
            return Ok((None, whole));
        }
        let s = self.expr(value)?;
        let (sty, sspan) = (s.ty, s.span);
        let tmp = self.declare(&ast::Ident { name: "_".into(), span: sspan }, sty, false, false);
        let whole = Expr { kind: ExprKind::Local(tmp), ty: sty, span: sspan };
        Ok((Some((tmp, s)), whole))
    }

    /// `while let PATTERN = value { body }`: a `loop` that matches the value each time round
    /// and leaves when it does not match.
    pub(super) fn while_let(
        &mut self,
        label: &Option<ast::Ident>,
        pat: &Pat,
        value: &ast::Expr,
        body: &ast::Block,
        span: Span,
    ) -> CResult<CExpr> {
        let id = self.push_loop(label, false);
        let r = (|| -> CResult<CExpr> {
            let (held, whole) = self.scrutinee(value)?;
            let (sty, sspan) = (whole.ty, whole.span);
            let mark = self.scope.len();
            let mut binds = Vec::new();
            let saved = std::mem::replace(&mut self.bind_by_ref, held.is_none());
            let r = self.pat_test(pat, &whole, &mut binds);
            self.bind_by_ref = saved;
            let r = r.and_then(|(t, pt)| Ok((t, pt, self.loop_body(body)?)));
            self.scope.truncate(mark);
            let (test, pt, mut b) = r?;
            self.check_coverage(&[(pt, false, pat.span())], sty, sspan, false)?;
            let mut stmts = binds;
            stmts.append(&mut b.stmts);
            b.stmts = stmts;
            let brk = self.mk(ExprKind::Break(id, None), Ty::Never, span);
            let step = match test {
                Some(t) => {
                    let unit = self.u.known(Ty::Unit);
                    Expr { kind: ExprKind::If(Box::new(t), b, Some(Block { stmts: vec![Stmt::Expr(brk)], tail: None })), ty: unit, span }
                }
                None => self.mk(ExprKind::Block(b), Ty::Unit, span),
            };
            let mut stmts = held.map(|(tmp, s)| vec![Stmt::Let(tmp, Some(s))]).unwrap_or_default();
            stmts.push(Stmt::Expr(step));
            Ok(self.mk(ExprKind::Block(Block { stmts, tail: None }), Ty::Unit, span))
        })();
        self.loops.pop();
        let step = r?;
        Ok(self.mk(ExprKind::Loop(id, Block { stmts: vec![Stmt::Expr(step)], tail: None }), Ty::Unit, span))
    }

    /// `let PATTERN = value else { .. };`: the bindings are the block's from here on.
    pub(super) fn let_else(
        &mut self,
        pat: &Pat,
        ty: Option<&ast::TypeExpr>,
        init: &ast::Expr,
        els: &ast::Block,
        out: &mut Vec<Stmt<H>>,
    ) -> CResult<()> {
        let s = self.expr(init)?;
        let sty = match ty {
            Some(t) => {
                let t = self.ty_of(t)?;
                let h = self.u.known(t);
                self.assign_compatible(h, &s, init.span)?;
                h
            }
            None => s.ty,
        };
        let sspan = s.span;
        let tmp = self.declare(&ast::Ident { name: "_".into(), span: sspan }, sty, false, false);
        out.push(Stmt::Let(tmp, Some(s)));
        let whole = Expr { kind: ExprKind::Local(tmp), ty: sty, span: sspan };
        // The `else` block sees none of the pattern's names.
        let eb = self.block(els)?;
        let et = self.body_type(&eb);
        if self.u.ty(et) != Some(Ty::Never) {
            return Err(Diagnostic::error(els.span, "`else` clause of `let...else` does not diverge")
                .label("this block must leave: `return`, `break`, `continue`, or a call that never returns")
                .into());
        }
        let mut binds = Vec::new();
        let (test, pt) = self.pat_test(pat, &whole, &mut binds)?;
        self.check_coverage(&[(pt, false, pat.span())], sty, sspan, false)?;
        if let Some(t) = test {
            let span = t.span;
            let not = self.mk(ExprKind::Unary(UnOp::Not, Box::new(t)), Ty::Scalar(Scalar::Bool), span);
            let unit = self.u.known(Ty::Unit);
            out.push(Stmt::Expr(Expr { kind: ExprKind::If(Box::new(not), eb, None), ty: unit, span }));
        }
        out.append(&mut binds);
        Ok(())
    }
}
