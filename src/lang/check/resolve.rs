//! Resolution: turning an inferred body (types as unifier handles, literals pending) into the final
//! IR with concrete types and literal values.

use crate::ir::*;

use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::{CBlock, CExpr, FnCx};
use super::fold::{float_literal, int_range, int_value, lit_range_error, signed_literal};
use super::unify::H;

impl<'c, 'm> FnCx<'c, 'm> {
    fn rty(&mut self, h: H, span: Span) -> CResult<Ty> {
        self.u
            .settle(h)
            .ok_or_else(|| Diagnostic::error(span, "type annotations needed").label("cannot infer the type of this expression").into())
    }

    pub(super) fn resolve_block(&mut self, b: CBlock) -> CResult<Block> {
        let mut stmts = Vec::with_capacity(b.stmts.len());
        for s in b.stmts {
            stmts.push(match s {
                Stmt::Let(l, e) => Stmt::Let(l, e.map(|e| self.resolve(e)).transpose()?),
                Stmt::Expr(e) => Stmt::Expr(self.resolve(e)?),
            });
        }
        let tail = match b.tail {
            Some(t) => Some(Box::new(self.resolve(*t)?)),
            None => None,
        };
        Ok(Block { stmts, tail })
    }

    fn resolve_box(&mut self, e: CExpr) -> CResult<Box<Expr>> {
        Ok(Box::new(self.resolve(e)?))
    }

    fn resolve_vec(&mut self, v: Vec<CExpr>) -> CResult<Vec<Expr>> {
        v.into_iter().map(|e| self.resolve(e)).collect()
    }

    fn resolve_place(&mut self, p: Place<H>) -> CResult<Place> {
        Ok(match p {
            Place::Local(l) => Place::Local(l),
            Place::Index(a, i) => Place::Index(self.resolve_box(*a)?, self.resolve_vec(i)?),
            Place::Field(p, k) => Place::Field(Box::new(self.resolve_place(*p)?), k),
            Place::Elem(p, i) => Place::Elem(Box::new(self.resolve_place(*p)?), self.resolve_box(*i)?),
        })
    }

    /// A closure's body, resolved as the body around it is.
    pub(super) fn resolve_closure_body(&mut self, e: CExpr) -> CResult<Expr> {
        self.resolve(e)
    }

    fn resolve(&mut self, e: CExpr) -> CResult<Expr> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.resolve_inner(e))
    }

    fn resolve_inner(&mut self, e: CExpr) -> CResult<Expr> {
        let span = e.span;
        let ty = self.rty(e.ty, span)?;
        use ExprKind as K;
        let kind = match e.kind {
            K::PendingLit(l) => {
                let Ty::Scalar(s) = ty else {
                    return Err(Diagnostic::error(span, "a literal here has no scalar type").label("here").into());
                };
                K::Lit(match l.int {
                    Some(v) if s.is_int() => {
                        let (lo, hi) = int_range(s);
                        match signed_literal(v, l.neg) {
                            Some(val) if val >= lo && val <= hi => int_value(s, val),
                            _ => return Err(lit_range_error(s, span, l.neg, v).into()),
                        }
                    }
                    _ if s.is_float() => float_literal(l, s, span)?,
                    _ => return Err(Diagnostic::error(span, format!("a literal cannot have type `{s}`")).label("here").into()),
                })
            }
            K::Lit(v) => K::Lit(v),
            K::Unit => K::Unit,
            K::Zeroed => K::Zeroed,
            K::Local(l) => K::Local(l),
            K::Capture(c) => K::Capture(c),
            K::Unary(op, x) => K::Unary(op, self.resolve_box(*x)?),
            K::Binary(op, a, b) => K::Binary(op, self.resolve_box(*a)?, self.resolve_box(*b)?),
            K::Logic(op, a, b) => K::Logic(op, self.resolve_box(*a)?, self.resolve_box(*b)?),
            K::Cast(x) => K::Cast(self.resolve_box(*x)?),
            K::Index(a, i) => K::Index(self.resolve_box(*a)?, self.resolve_vec(i)?),
            K::Assign(p, v) => K::Assign(self.resolve_place(p)?, self.resolve_box(*v)?),
            K::CompoundAssign(op, p, v) => K::CompoundAssign(op, self.resolve_place(p)?, self.resolve_box(*v)?),
            K::Call(f, args) => K::Call(self.callee_id(f), self.resolve_vec(args)?),
            K::CallRef(f, p, args) => K::CallRef(self.callee_id(f), self.resolve_place(p)?, self.resolve_vec(args)?),
            K::Aggregate { parts, base } => K::Aggregate {
                parts: parts.into_iter().map(|(k, x)| Ok((k, self.resolve(x)?))).collect::<CResult<Vec<_>>>()?,
                base: base.map(|b| self.resolve_box(*b)).transpose()?,
            },
            K::Repeat(x) => K::Repeat(self.resolve_box(*x)?),
            K::Field(x, k) => K::Field(self.resolve_box(*x)?, k),
            K::Elem(a, i) => K::Elem(self.resolve_box(*a)?, self.resolve_box(*i)?),
            K::Builtin(b, args) => K::Builtin(b, self.resolve_vec(args)?),
            K::SharedArray { elem, len, site } => K::SharedArray { elem, len, site },
            K::DynSharedArray(s) => K::DynSharedArray(s),
            K::If(c, t, f) => K::If(self.resolve_box(*c)?, self.resolve_block(t)?, f.map(|b| self.resolve_block(b)).transpose()?),
            K::Block(b) => K::Block(self.resolve_block(b)?),
            K::While(id, c, b) => K::While(id, self.resolve_box(*c)?, self.resolve_block(b)?),
            K::Loop(id, b) => K::Loop(id, self.resolve_block(b)?),
            K::For { id, var, start, end, inclusive, step, body } => K::For {
                id,
                var,
                start: self.resolve_box(*start)?,
                end: self.resolve_box(*end)?,
                inclusive,
                step: step.map(|s| self.resolve_box(*s)).transpose()?,
                body: self.resolve_block(body)?,
            },
            K::Break(id, v) => K::Break(id, v.map(|v| self.resolve_box(*v)).transpose()?),
            K::Continue(id) => K::Continue(id),
            K::Return(v) => K::Return(v.map(|v| self.resolve_box(*v)).transpose()?),
            K::Match(s, arms) => {
                let s = self.resolve_box(*s)?;
                let mut out = Vec::with_capacity(arms.len());
                for a in arms {
                    let ranges = match a.ranges {
                        Some(r) => {
                            Some(r.into_iter().map(|(lo, hi)| Ok((self.resolve(lo)?, self.resolve(hi)?))).collect::<CResult<Vec<_>>>()?)
                        }
                        None => None,
                    };
                    let guard = a.guard.map(|g| self.resolve(g)).transpose()?;
                    out.push(MatchArm { ranges, binding: a.binding, guard, body: self.resolve(a.body)?, pat_span: a.pat_span });
                }
                super::matching::check_match(&s, &mut out, &self.mcx.enums, &mut self.mcx.warnings)?;
                K::Match(s, out)
            }
        };
        Ok(Expr { kind, ty, span })
    }
}
