//! `Option<T>`'s methods and the `?` operator: each is what `core::option` defines it as,
//! written here as the `match` it is (checked like the user's own code, in the caller's body,
//! so a message points at the call); `unwrap` and `expect` on `None` are a fault of the launch
//! at the call, as a failed bounds check is.

use crate::ir::*;
use crate::lang::ast::{self, Arm, Expr as AExpr, ExprKind as A, Ident, Pat};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::unify::{ArgH, H};

/// A path to one of `Option`'s variants that nothing in the crate can hide.
fn variant(name: &str, span: Span) -> Vec<Ident> {
    vec![Ident { name: "#option".into(), span }, Ident { name: name.into(), span }]
}

fn ident(name: &str, span: Span) -> Ident {
    Ident { name: name.into(), span }
}

fn path(name: &str, span: Span) -> AExpr {
    AExpr { kind: A::Path(ident(name, span)), span }
}

fn some_pat(bind: &str, span: Span) -> Pat {
    Pat::TupleStruct {
        path: variant("Some", span),
        elems: vec![Pat::Bind { name: ident(bind, span), mutable: false, sub: None }],
        rest: None,
        span,
    }
}

fn none_pat(span: Span) -> Pat {
    Pat::Const(AExpr { kind: A::QPath(variant("None", span)), span })
}

fn some(x: AExpr, span: Span) -> AExpr {
    AExpr {
        kind: A::Call {
            qualifier: vec![ident("#option", span)],
            qual_args: Vec::new(),
            qself: None,
            func: ident("Some", span),
            generics: Vec::new(),
            args: vec![x],
        },
        span,
    }
}

fn none(span: Span) -> AExpr {
    AExpr { kind: A::QPath(variant("None", span)), span }
}

fn call(f: &str, args: Vec<AExpr>, span: Span) -> AExpr {
    AExpr {
        kind: A::Call { qualifier: Vec::new(), qual_args: Vec::new(), qself: None, func: ident(f, span), generics: Vec::new(), args },
        span,
    }
}

fn lit_bool(b: bool, span: Span) -> AExpr {
    AExpr { kind: A::Lit(ast::Lit::Bool(b)), span }
}

fn arm(pat: Pat, body: AExpr, span: Span) -> Arm {
    Arm { pat, guard: None, body, span }
}

fn matched(value: AExpr, arms: Vec<Arm>, span: Span) -> AExpr {
    AExpr { kind: A::Match(Box::new(value), arms), span }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// Whether `h` is an instance of `Option`.
    pub(super) fn is_option(&mut self, h: H) -> Option<Vec<ArgH>> {
        let (adt, args) = self.u.adt_of(h)?;
        (self.mcx.option == Some(adt)).then_some(args)
    }

    /// `opt.name(args)` on an `Option`: `None` if `r` is not one or `name` not its method.
    pub(super) fn option_method(
        &mut self,
        r: &Operand,
        rh: H,
        receiver: &ast::Expr,
        method: &Ident,
        args: &[AExpr],
        span: Span,
    ) -> CResult<Option<CExpr>> {
        let Some(targs) = self.is_option(rh) else { return Ok(None) };
        let name = method.name.as_str();
        let s = method.span;
        let arity = match name {
            "is_some" | "is_none" | "unwrap" | "unwrap_or_default" | "take" | "copied" | "cloned" | "as_ref" | "as_mut"
            | "unwrap_unchecked" => 0,
            "expect" | "unwrap_or" | "unwrap_or_else" | "map" | "and_then" | "or" | "or_else" | "xor" | "and" | "filter"
            | "is_some_and" | "is_none_or" | "replace" | "insert" | "get_or_insert" | "get_or_insert_with" | "zip" => 1,
            "map_or" | "map_or_else" => 2,
            _ => return Ok(None),
        };
        if args.len() != arity {
            return Err(Diagnostic::error(
                span,
                format!(
                    "this method takes {arity} argument{} but {} {} supplied",
                    super::plural(arity),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {arity} argument{}", super::plural(arity)))
            .into());
        }
        // Methods that change the value: `&mut self` on the caller's place.
        if matches!(name, "take" | "replace" | "insert" | "get_or_insert" | "get_or_insert_with") {
            return self.option_update(r, receiver, name, args, span).map(Some);
        }
        let v = self.operand_value(clone_operand(r), receiver.span);
        let mark = self.scope.len();
        let o = self.declare(&ident("#o", v.span), rh, false, false);
        let mut stmts = vec![Stmt::Let(o, Some(v))];
        let r = (|| -> CResult<CExpr> {
            if matches!(name, "unwrap" | "expect" | "unwrap_unchecked") {
                return self.unwrap_of(o, rh, &targs, if name == "expect" { s.to(args[0].span) } else { s }, span);
            }
            let oe = || path("#o", s);
            let x = || path("#x", s);
            let body = match name {
                "is_some" => {
                    matched(oe(), vec![arm(some_pat("_", s), lit_bool(true, s), s), arm(Pat::Wild(s), lit_bool(false, s), s)], span)
                }
                "is_none" => {
                    matched(oe(), vec![arm(some_pat("_", s), lit_bool(false, s), s), arm(Pat::Wild(s), lit_bool(true, s), s)], span)
                }
                "unwrap_or" => self.with_arg(&mut stmts, &args[0], "#d", |d| {
                    matched(oe(), vec![arm(some_pat("#x", s), x(), s), arm(none_pat(s), d, s)], span)
                })?,
                "unwrap_or_else" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), x(), s), arm(none_pat(s), call_of(f, Vec::new(), s), s)], span)
                })?,
                "unwrap_or_default" => {
                    let default = AExpr {
                        kind: A::Call {
                            qualifier: vec![ident("Default", s)],
                            qual_args: Vec::new(),
                            qself: None,
                            func: ident("default", s),
                            generics: Vec::new(),
                            args: Vec::new(),
                        },
                        span: s,
                    };
                    matched(oe(), vec![arm(some_pat("#x", s), x(), s), arm(none_pat(s), default, s)], span)
                }
                "map" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), some(call_of(f, vec![x()], s), s), s), arm(none_pat(s), none(s), s)], span)
                })?,
                "and_then" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), call_of(f, vec![x()], s), s), arm(none_pat(s), none(s), s)], span)
                })?,
                "is_some_and" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), call_of(f, vec![x()], s), s), arm(none_pat(s), lit_bool(false, s), s)], span)
                })?,
                "is_none_or" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), call_of(f, vec![x()], s), s), arm(none_pat(s), lit_bool(true, s), s)], span)
                })?,
                "filter" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    let test = AExpr {
                        kind: A::If(Box::new(call_of(f, vec![x()], s)), block(some(x(), s), s), Some(Box::new(block_expr(none(s), s)))),
                        span: s,
                    };
                    matched(oe(), vec![arm(some_pat("#x", s), test, s), arm(none_pat(s), none(s), s)], span)
                })?,
                "or" => self.with_arg(&mut stmts, &args[0], "#d", |d| {
                    matched(oe(), vec![arm(some_pat("#x", s), some(x(), s), s), arm(none_pat(s), d, s)], span)
                })?,
                "or_else" => self.with_arg(&mut stmts, &args[0], "#f", |f| {
                    matched(oe(), vec![arm(some_pat("#x", s), some(x(), s), s), arm(none_pat(s), call_of(f, Vec::new(), s), s)], span)
                })?,
                "and" => self.with_arg(&mut stmts, &args[0], "#d", |d| {
                    matched(oe(), vec![arm(some_pat("_", s), d, s), arm(none_pat(s), none(s), s)], span)
                })?,
                "xor" => self.with_arg(&mut stmts, &args[0], "#d", |d| {
                    let pair = AExpr { kind: A::Tuple(vec![oe(), d]), span: s };
                    let both = Pat::Tuple { elems: vec![some_pat("#x", s), none_pat(s)], rest: None, span: s };
                    let other = Pat::Tuple { elems: vec![none_pat(s), some_pat("#y", s)], rest: None, span: s };
                    matched(
                        pair,
                        vec![arm(both, some(x(), s), s), arm(other, some(path("#y", s), s), s), arm(Pat::Wild(s), none(s), s)],
                        span,
                    )
                })?,
                "zip" => self.with_arg(&mut stmts, &args[0], "#d", |d| {
                    let pair = AExpr { kind: A::Tuple(vec![oe(), d]), span: s };
                    let both = Pat::Tuple { elems: vec![some_pat("#x", s), some_pat("#y", s)], rest: None, span: s };
                    let t = AExpr { kind: A::Tuple(vec![x(), path("#y", s)]), span: s };
                    matched(pair, vec![arm(both, some(t, s), s), arm(Pat::Wild(s), none(s), s)], span)
                })?,
                "map_or" => {
                    let d = args[0].clone();
                    self.with_arg(&mut stmts, &args[1], "#f", |f| {
                        matched(oe(), vec![arm(some_pat("#x", s), call_of(f, vec![x()], s), s), arm(none_pat(s), d, s)], span)
                    })?
                }
                "map_or_else" => {
                    let (l, _) = self.bind_arg(&mut stmts, &args[0], "#g")?;
                    let _ = l;
                    self.with_arg(&mut stmts, &args[1], "#f", |f| {
                        matched(
                            oe(),
                            vec![
                                arm(some_pat("#x", s), call_of(f, vec![x()], s), s),
                                arm(none_pat(s), call_of(path("#g", s), Vec::new(), s), s),
                            ],
                            span,
                        )
                    })?
                }
                // References are values: these give the value itself.
                _ => oe(),
            };
            self.expr(&body)
        })();
        self.scope.truncate(mark);
        let tail = r?;
        let ty = tail.ty;
        Ok(Some(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(tail)) }), ty, span }))
    }

    /// Checks `arg` into a hidden local named `name` (visible to the expression `body` builds),
    /// then the expression.
    fn with_arg(&mut self, stmts: &mut Vec<Stmt<H>>, arg: &AExpr, name: &str, body: impl FnOnce(AExpr) -> AExpr) -> CResult<AExpr> {
        if inlinable(arg) {
            // `o.map(|h| h.t)`: the closure's body where it is called, its parameters bound
            // to the arguments, so their types come from the `Option`'s, as rustc infers them.
            return Ok(body(arg.clone()));
        }
        let (_, e) = self.bind_arg(stmts, arg, name)?;
        Ok(body(e))
    }

    fn bind_arg(&mut self, stmts: &mut Vec<Stmt<H>>, arg: &AExpr, name: &str) -> CResult<(LocalId, AExpr)> {
        let x = self.expr(arg)?;
        let l = self.declare(&ident(name, arg.span), x.ty, false, false);
        stmts.push(Stmt::Let(l, Some(x)));
        Ok((l, path(name, arg.span)))
    }

    /// `o.unwrap()` / `o.expect(msg)` of the `Option` in local `o`: its value, or a fault at
    /// `site` (the method's name, or `expect(msg` from the name to the message: the fault is
    /// located at the name, as Rust locates it, and says the message).
    fn unwrap_of(&mut self, o: LocalId, oh: H, targs: &[ArgH], site: Span, span: Span) -> CResult<CExpr> {
        let ArgH::Ty(t) = targs[0] else {
            return Err(Diagnostic::error(span, "internal error: `Option` without a type").label("here").into());
        };
        let whole = Expr { kind: ExprKind::Local(o), ty: oh, span };
        let u32h = self.u.known(Ty::Scalar(Scalar::U32));
        let tag = Expr { kind: ExprKind::Field(Box::new(whole.clone()), 0), ty: u32h, span };
        let one = self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::U32, 1)), Ty::Scalar(Scalar::U32), span);
        let ok = self.mk(ExprKind::Binary(BinOp::Eq, Box::new(tag), Box::new(one)), Ty::Scalar(Scalar::Bool), span);
        let ph = self.u.tuple(vec![t]);
        let payload = Expr { kind: ExprKind::Field(Box::new(whole), 1), ty: ph, span };
        let value = Expr { kind: ExprKind::Field(Box::new(payload), 0), ty: t, span };
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Unwrap, vec![ok, value]), ty: t, span: site })
    }

    /// `take`, `replace`, `insert`, `get_or_insert`: methods that write the `Option` back.
    fn option_update(&mut self, r: &Operand, receiver: &ast::Expr, name: &str, args: &[AExpr], span: Span) -> CResult<CExpr> {
        let Operand::Place(place, h) = clone_operand(r) else {
            return Err(Diagnostic::error(receiver.span, format!("`{name}` changes the value: call it on a `let mut` variable"))
                .label("not a place")
                .into());
        };
        self.check_borrow_mut_at(&place, receiver)?;
        let old = self.operand_value(Operand::Place(place.clone(), h), receiver.span);
        let l = self.declare(&ident("#old", span), h, false, false);
        let mut stmts = vec![Stmt::Let(l, Some(old))];
        let s = span;
        let new_value = match name {
            "take" => none(s),
            _ => {
                let (_, v) = self.bind_arg(&mut stmts, &args[0], "#v")?;
                match name {
                    "get_or_insert" => matched(
                        path("#old", s),
                        vec![arm(some_pat("#x", s), some(path("#x", s), s), s), arm(none_pat(s), some(v, s), s)],
                        s,
                    ),
                    "get_or_insert_with" => matched(
                        path("#old", s),
                        vec![arm(some_pat("#x", s), some(path("#x", s), s), s), arm(none_pat(s), some(call_of(v, Vec::new(), s), s), s)],
                        s,
                    ),
                    _ => some(v, s),
                }
            }
        };
        let mark = self.scope.len();
        let r = (|| -> CResult<CExpr> {
            let nv = self.expr(&new_value)?;
            self.unify_or(nv.span, h, nv.ty, "")?;
            let assign = self.mk(ExprKind::Assign(place.clone(), Box::new(nv)), Ty::Unit, span);
            stmts.push(Stmt::Expr(assign));
            Ok(match name {
                "take" | "replace" => Expr { kind: ExprKind::Local(l), ty: h, span },
                _ => {
                    // The value now held (`insert`, `get_or_insert`): kernels have no references.
                    let now = self.operand_value(Operand::Place(place.clone(), h), span);
                    let nl = self.declare(&ident("#now", span), h, false, false);
                    stmts.push(Stmt::Let(nl, Some(now)));
                    let targs = self.is_option(h).unwrap_or_default();
                    self.unwrap_of(nl, h, &targs, span, span)?
                }
            })
        })();
        self.scope.truncate(mark);
        let tail = r?;
        let ty = tail.ty;
        Ok(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(tail)) }), ty, span })
    }

    /// `x?` in a function returning `Option`: `match x { Some(v) => v, None => return None }`.
    pub(super) fn try_expr(&mut self, x: &AExpr, span: Span) -> CResult<CExpr> {
        let v = self.expr(x)?;
        if self.is_option(v.ty).is_none() {
            let d = self.u.describe(v.ty);
            return Err(Diagnostic::error(span, format!("the `?` operator can only be applied to values of type `Option`, found `{d}`"))
                .label("the `?` operator cannot be applied to this type")
                .into());
        }
        let ret = self.ret;
        let unit = self.u.ty(ret) == Some(Ty::Unit);
        if unit || self.u.ty(ret).is_some_and(|_| self.is_option(ret).is_none()) {
            return Err(Diagnostic::error(span, "the `?` operator can only be used in a function that returns `Option`")
                .label("cannot use the `?` operator in a function that returns `()`")
                .help("return `Option<T>` from the function, or `match` the value")
                .into());
        }
        let s = span;
        let mark = self.scope.len();
        let o = self.declare(&ident("#o", v.span), v.ty, false, false);
        let ret_none = AExpr { kind: A::Return(Some(Box::new(none(s)))), span: s };
        let body = matched(path("#o", s), vec![arm(some_pat("#x", s), path("#x", s), s), arm(none_pat(s), ret_none, s)], s);
        let r = self.expr(&body);
        self.scope.truncate(mark);
        let tail = r?;
        let ty = tail.ty;
        Ok(Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(o, Some(v))], tail: Some(Box::new(tail)) }), ty, span })
    }
}

fn call_of(f: AExpr, args: Vec<AExpr>, span: Span) -> AExpr {
    match f.kind {
        A::Path(n) => call(&n.name, args, span),
        // An inlinable closure: `{ let p = arg; ..; body }`.
        A::Closure { params, ret, body, .. } => {
            let stmts = params
                .into_iter()
                .zip(args)
                .map(|(p, a)| ast::Stmt::Let { name: p.name, mutable: p.mutable, ty: p.ty, init: Some(a), span })
                .collect();
            let _ = ret;
            AExpr { kind: A::Block(ast::Block { stmts, tail: Some(body), span }), span }
        }
        _ => f,
    }
}

/// Whether argument `a` is a closure that may be written out where it is called: its
/// parameters are names and its body neither returns nor uses `?`.
fn inlinable(a: &AExpr) -> bool {
    let A::Closure { body, ret: None, is_move, .. } = &a.kind else { return false };
    // A `move` closure that assigns changes its own copies, not the caller's variables.
    !body.any(&mut |e| matches!(e.kind, A::Return(_) | A::Try(_)) || (*is_move && matches!(e.kind, A::Assign(..) | A::CompoundAssign(..))))
}

fn block(e: AExpr, span: Span) -> ast::Block {
    ast::Block { stmts: Vec::new(), tail: Some(Box::new(e)), span }
}

fn block_expr(e: AExpr, span: Span) -> AExpr {
    AExpr { kind: A::Block(block(e, span)), span }
}

/// A copy of an operand (a place is read again, a value repeated: receivers are read once).
pub(super) fn clone_operand(r: &Operand) -> Operand {
    match r {
        Operand::Place(p, h) => Operand::Place(p.clone(), *h),
        Operand::Value(v) => Operand::Value(v.clone()),
    }
}
