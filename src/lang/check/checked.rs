//! The integers' `checked_*` methods (`checked_add`, `checked_sub`, `checked_mul`,
//! `checked_div`, `checked_rem`, `checked_neg`): `Some` of the result, `None` where it would
//! overflow (or divide by zero), as `core` defines them. Each is its wrapping operation and a
//! test of overflow, written as the `if` it is and checked in the caller's body.

use crate::ir::*;
use crate::lang::ast::{self, Expr as AExpr, ExprKind as A, Ident};
use crate::span::Span;

use super::CResult;
use super::body::{CExpr, FnCx};

fn ident(name: &str, span: Span) -> Ident {
    Ident { name: name.into(), span }
}

fn path(name: &str, span: Span) -> AExpr {
    AExpr { kind: A::Path(ident(name, span)), span }
}

fn int(v: u128, span: Span) -> AExpr {
    AExpr { kind: A::Lit(ast::Lit::Int(v, None)), span }
}

fn neg_one(span: Span) -> AExpr {
    AExpr { kind: A::Unary(UnOp::Neg, Box::new(int(1, span))), span }
}

fn bin(op: BinOp, a: AExpr, b: AExpr, span: Span) -> AExpr {
    AExpr { kind: A::Binary(op, Box::new(a), Box::new(b)), span }
}

fn and(a: AExpr, b: AExpr, span: Span) -> AExpr {
    AExpr { kind: A::Logic(LogicOp::And, Box::new(a), Box::new(b)), span }
}

fn or(a: AExpr, b: AExpr, span: Span) -> AExpr {
    AExpr { kind: A::Logic(LogicOp::Or, Box::new(a), Box::new(b)), span }
}

fn method(recv: AExpr, name: &str, args: Vec<AExpr>, span: Span) -> AExpr {
    AExpr { kind: A::MethodCall { receiver: Box::new(recv), method: ident(name, span), generics: Vec::new(), args }, span }
}

/// `i32::MIN` of scalar `s`.
fn min_of(s: Scalar, span: Span) -> AExpr {
    let lit = AExpr { kind: A::Lit(ast::Lit::Int(1u128 << (s.bits() - 1), Some(s))), span };
    AExpr { kind: A::Unary(UnOp::Neg, Box::new(lit)), span }
}

fn option(name: &str, args: Vec<AExpr>, span: Span) -> AExpr {
    if args.is_empty() {
        return AExpr { kind: A::QPath(vec![ident("#option", span), ident(name, span)]), span };
    }
    AExpr {
        kind: A::Call {
            qualifier: vec![ident("#option", span)],
            qual_args: Vec::new(),
            qself: None,
            func: ident(name, span),
            generics: Vec::new(),
            args,
        },
        span,
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// `a.checked_op(b)` (`b` is `None` for `checked_neg`) of integers of type `s`; `None` for a
    /// method that is not one of them.
    pub(super) fn checked_int(&mut self, name: &str, s: Scalar, a: CExpr, b: Option<&ast::Expr>, span: Span) -> CResult<Option<CExpr>> {
        let signed = s.is_signed();
        let (pa, pb) = (|| path("#a", span), || path("#b", span));
        let zero = || int(0, span);
        // The overflow test and the value when there is none.
        let (overflow, value) = match (name, b.is_some()) {
            ("checked_add", true) => {
                let r = || path("#r", span);
                let t = or(
                    and(bin(BinOp::Gt, pb(), zero(), span), bin(BinOp::Lt, r(), pa(), span), span),
                    and(bin(BinOp::Lt, pb(), zero(), span), bin(BinOp::Gt, r(), pa(), span), span),
                    span,
                );
                (t, ("wrapping_add", r()))
            }
            ("checked_sub", true) => {
                let r = || path("#r", span);
                let t = or(
                    and(bin(BinOp::Gt, pb(), zero(), span), bin(BinOp::Gt, r(), pa(), span), span),
                    and(bin(BinOp::Lt, pb(), zero(), span), bin(BinOp::Lt, r(), pa(), span), span),
                    span,
                );
                (t, ("wrapping_sub", r()))
            }
            ("checked_mul", true) => {
                let r = || path("#r", span);
                let back = method(r(), "wrapping_div", vec![pa()], span);
                let mut t = and(bin(BinOp::Ne, pa(), zero(), span), bin(BinOp::Ne, back, pb(), span), span);
                if signed {
                    let min_case =
                        |x: AExpr, y: AExpr| and(bin(BinOp::Eq, x, neg_one(span), span), bin(BinOp::Eq, y, min_of(s, span), span), span);
                    t = or(or(t, min_case(pa(), pb()), span), min_case(pb(), pa()), span);
                }
                (t, ("wrapping_mul", r()))
            }
            ("checked_div" | "checked_rem", true) => {
                let mut t = bin(BinOp::Eq, pb(), zero(), span);
                if signed {
                    t = or(t, and(bin(BinOp::Eq, pa(), min_of(s, span), span), bin(BinOp::Eq, pb(), neg_one(span), span), span), span);
                }
                let op = if name == "checked_div" { BinOp::Div } else { BinOp::Rem };
                (t, ("", bin(op, pa(), pb(), span)))
            }
            ("checked_neg", false) => {
                let t = if signed { bin(BinOp::Eq, pa(), min_of(s, span), span) } else { bin(BinOp::Ne, pa(), zero(), span) };
                (t, ("", AExpr { kind: A::Unary(UnOp::Neg, Box::new(pa())), span }))
            }
            _ => return Ok(None),
        };
        let (wrapping, value) = value;
        let ty = a.ty;
        let la = self.declare(&ident("#a", span), ty, false, false);
        let mut stmts = vec![Stmt::Let(la, Some(a))];
        let mark = self.scope.len();
        self.scope.push(("#a".into(), la));
        let r = (|| -> CResult<CExpr> {
            if let Some(b) = b {
                let bx = self.expr(b)?;
                self.unify_or(bx.span, ty, bx.ty, " (both operands have one type)")?;
                let lb = self.declare(&ident("#b", span), ty, false, false);
                stmts.push(Stmt::Let(lb, Some(bx)));
                self.scope.push(("#b".into(), lb));
            }
            if !wrapping.is_empty() {
                let r = self.expr(&method(pa(), wrapping, vec![pb()], span))?;
                let lr = self.declare(&ident("#r", span), ty, false, false);
                stmts.push(Stmt::Let(lr, Some(r)));
                self.scope.push(("#r".into(), lr));
            }
            let block = |e: AExpr| ast::Block { stmts: Vec::new(), tail: Some(Box::new(e)), span };
            let some = AExpr { kind: A::Block(block(option("Some", vec![value], span))), span };
            let e = AExpr { kind: A::If(Box::new(overflow), block(option("None", Vec::new(), span)), Some(Box::new(some))), span };
            self.expr(&e)
        })();
        self.scope.truncate(mark);
        let x = r?;
        let ty = x.ty;
        Ok(Some(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(x)) }), ty, span }))
    }
}
