//! Expressions: operators, assignments, casts, literals, `if` and the loops with their `break` and
//! `continue`.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, Lit, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::body::{CBlock, CExpr, FnCx, LoopInfo};
use super::fold::{int_range, lit_range_error, signed_literal};
use super::unify::{Class, H, Kind, Oblig, is_num};
use super::{CResult, close_matches};

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn expr(&mut self, e: &ast::Expr) -> CResult<CExpr> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e))
    }

    fn expr_inner(&mut self, e: &ast::Expr) -> CResult<CExpr> {
        let span = e.span;
        match &e.kind {
            A::Lit(l) => self.lit(*l, false, span),
            A::Unit => Ok(self.mk(ExprKind::Unit, Ty::Unit, span)),
            A::Path(n) => self.path(n),
            A::QPath(p) => self.qpath(p, span),
            A::Match(s, arms) => self.match_expr(s, arms, span),
            A::Unary(op, x) => {
                if let (UnOp::Neg, A::Lit(l @ (Lit::Int(..) | Lit::Float { .. }))) = (op, &x.kind) {
                    let r = self.lit(*l, true, span)?;
                    self.need(r.ty, Class::SignedOrFloat, span, "unary `-`")?;
                    return Ok(r);
                }
                let x = self.expr(x)?;
                self.unary_op(*op, x, span)
            }
            A::Binary(op, a, b) => {
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.binary(*op, a, b, span)
            }
            A::Logic(op, a, b) => {
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                let t = self.u.known(Ty::Scalar(Scalar::Bool));
                let sym = if *op == LogicOp::And { "&&" } else { "||" };
                self.unify_or(a.span, t, a.ty, &format!(" (operands of `{sym}` are `bool`)"))?;
                self.unify_or(b.span, t, b.ty, &format!(" (operands of `{sym}` are `bool`)"))?;
                Ok(Expr { kind: ExprKind::Logic(*op, Box::new(a), Box::new(b)), ty: t, span })
            }
            A::Assign(lhs, rhs) => {
                if let Some(x) = self.index_assign(None, lhs, rhs, span)? {
                    return Ok(x);
                }
                let rhs = self.expr(rhs)?;
                let (place, pty) = self.place(lhs)?;
                self.unify_or(rhs.span, pty, rhs.ty, " (the type of the assigned place)")?;
                Ok(self.mk(ExprKind::Assign(place, Box::new(rhs)), Ty::Unit, span))
            }
            A::CompoundAssign(op, lhs, rhs) => {
                if let Some(x) = self.index_assign(Some(*op), lhs, rhs, span)? {
                    return Ok(x);
                }
                let rhs = self.expr(rhs)?;
                let (place, pty) = self.place(lhs)?;
                if self.is_aggregate(pty) || (self.is_aggregate(rhs.ty) && !op.is_shift()) || self.param_bounded_by_traits(pty) {
                    return self.trait_compound(*op, place, pty, rhs, lhs, span);
                }
                let what = format!("`{}=`", op.symbol());
                if op.is_shift() {
                    self.need(pty, Class::Int, lhs.span, &what)?;
                    self.need(rhs.ty, Class::Int, rhs.span, &what)?;
                } else {
                    self.unify_or(rhs.span, pty, rhs.ty, &format!(" (both sides of {what} have one type)"))?;
                    let class = if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) { Class::IntOrBool } else { Class::Numeric };
                    self.need(pty, class, span, &what)?;
                }
                Ok(self.mk(ExprKind::CompoundAssign(*op, place, Box::new(rhs)), Ty::Unit, span))
            }
            A::Cast(x, t) => {
                let x = self.expr(x)?;
                let to = match t {
                    TypeExpr::Scalar(..) | TypeExpr::Param(_) => self.ty_of(t)?,
                    TypeExpr::Named(..) if matches!(self.ty_of(t), Ok(Ty::Enum(_))) => {
                        let from = self.u.describe(x.ty);
                        let name = match t {
                            TypeExpr::Named(p, _) => p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::"),
                            _ => String::new(),
                        };
                        return Err(Diagnostic::error(span, format!("non-primitive cast: `{from}` as `{name}`"))
                            .label("an integer cannot become an enum")
                            .help(format!("name the variant (`{name}::Variant`), or `match` on the integer"))
                            .into());
                    }
                    _ => return Err(Diagnostic::error(t.span(), "`as` casts to scalar types only").label("not a scalar type").into()),
                };
                if let Some(Ty::Array(_) | Ty::ParamArray(_) | Ty::Unit | Ty::Agg(_)) = self.u.ty(x.ty) {
                    let (d, to) = (self.u.describe(x.ty), self.u.ty_name(to));
                    return Err(Diagnostic::error(span, format!("invalid cast from `{d}` to `{to}`"))
                        .label("only scalars can be cast")
                        .into());
                }
                self.obligations.push(Oblig::Cast { h: x.ty, to, span });
                Ok(self.mk(ExprKind::Cast(Box::new(x)), to, span))
            }
            A::ParamConst { param, name } => self.param_const(param, name, span),
            A::AssocPath { ty, trait_, name } => self.assoc_path_value(ty, trait_.as_deref(), name, span),
            A::Index { .. } | A::Field(..) => self.field_expr(e),
            A::Tuple(elems) => self.tuple_expr(elems, span),
            A::ArrayLit(elems) => self.array_lit(elems, span),
            A::ArrayRepeat(x, n) => self.array_repeat(x, n, span),
            A::StructLit { path, fields, base } => self.struct_lit(path, fields, base.as_deref(), span),
            A::ForEach { label, var, array, body } => self.for_each(label, var, array, body, span),
            A::Call { qualifier, qual_args, qself, func, generics, args } => {
                self.call(qualifier, qual_args, qself.as_deref(), func, generics, args, span)
            }
            A::MethodCall { receiver, method, generics, args } => self.method(receiver, method, generics, args, span),
            A::IfLet { pat, value, then, els } => self.if_let(pat, value, then, els.as_deref(), span),
            A::WhileLet { label, pat, value, body } => self.while_let(label, pat, value, body, span),
            A::Deref(x) => self.deref(x, span),
            A::Try(x) => self.try_expr(x, span),
            A::Str(_) => Err(Diagnostic::error(span, "strings are not supported in kernels")
                .label("a string")
                .help("kernels work on numbers and arrays; a string is only the message of `expect`")
                .into()),
            A::If(c, t, f) => self.if_expr(c, t, f.as_deref(), span),
            A::While(label, c, body) => {
                let c = self.expr(c)?;
                let b = self.u.known(Ty::Scalar(Scalar::Bool));
                self.unify_or(c.span, b, c.ty, " (the condition of `while`)")
                    .map_err(|d| d.help("conditions are `bool`: compare, for example `x != 0`"))?;
                let id = self.push_loop(label, false);
                let body = self.loop_body(body);
                self.loops.pop();
                let body = body?;
                Ok(self.mk(ExprKind::While(id, Box::new(c), body), Ty::Unit, span))
            }
            A::Loop(label, body) => {
                let id = self.push_loop(label, true);
                let body = self.loop_body(body);
                let info = self.loops.pop();
                let body = body?;
                let ty = match info {
                    Some(LoopInfo { break_ty: Some(h), .. }) => h,
                    Some(LoopInfo { has_break: true, .. }) => self.u.known(Ty::Unit),
                    _ => self.u.known(Ty::Never),
                };
                Ok(Expr { kind: ExprKind::Loop(id, body), ty, span })
            }
            A::For { label, var, start, end, inclusive, step, body } => {
                let s = self.expr(start)?;
                let en = self.expr(end)?;
                self.unify_or(en.span, s.ty, en.ty, " (both ends of a range have one type)")?;
                self.need(s.ty, Class::Int, start.span, "a `for` range")?;
                let step = match step {
                    Some(st) => {
                        let st = self.expr(st)?;
                        let u = self.u.known(Ty::Scalar(Scalar::Usize));
                        self.unify_or(st.span, u, st.ty, " (`step_by` takes a `usize`)")?;
                        Some(Box::new(st))
                    }
                    None => None,
                };
                let mark = self.scope.len();
                let v = self.declare(var, s.ty, false, false);
                let id = self.push_loop(label, false);
                let b = self.loop_body(body);
                self.loops.pop();
                self.scope.truncate(mark);
                let b = b?;
                Ok(self.mk(
                    ExprKind::For { id, var: v, start: Box::new(s), end: Box::new(en), inclusive: *inclusive, step, body: b },
                    Ty::Unit,
                    span,
                ))
            }
            A::Break(label, value) => {
                let i = self.find_loop(label.as_ref(), span, "break")?;
                let value = match value {
                    Some(v) => {
                        if !self.loops[i].is_loop {
                            return Err(Diagnostic::error(v.span, "`break` with a value is only allowed in `loop`")
                                .label("`while` and `for` loops have no value")
                                .help("remove the value, or use `loop`")
                                .into());
                        }
                        let v = self.expr(v)?;
                        match self.loops[i].break_ty {
                            Some(h) => self.unify_or(v.span, h, v.ty, " (every `break` of a loop gives one type)")?,
                            None => self.loops[i].break_ty = Some(v.ty),
                        }
                        Some(Box::new(v))
                    }
                    None => {
                        if let Some(h) = self.loops[i].break_ty {
                            let unit = self.u.known(Ty::Unit);
                            self.unify_or(span, h, unit, " (every `break` of a loop gives one type)")?;
                        }
                        None
                    }
                };
                self.loops[i].has_break = true;
                let id = self.loops[i].id;
                Ok(self.mk(ExprKind::Break(id, value), Ty::Never, span))
            }
            A::Continue(label) => {
                let i = self.find_loop(label.as_ref(), span, "continue")?;
                let id = self.loops[i].id;
                Ok(self.mk(ExprKind::Continue(id), Ty::Never, span))
            }
            A::Return(v) => {
                let v = match v {
                    Some(v) => {
                        let x = self.expr(v)?;
                        let r = self.ret;
                        self.unify_or(x.span, r, x.ty, " (the return type)")?;
                        Some(Box::new(self.with_inouts(x)))
                    }
                    None => {
                        let unit = self.u.known(Ty::Unit);
                        let r = self.ret;
                        if !self.u.unify(r, unit) {
                            let d = self.u.describe(r);
                            return Err(Diagnostic::error(span, format!("`return` needs a value of type `{d}`"))
                                .label("no value returned")
                                .into());
                        }
                        if self.inout_params.is_empty() {
                            None
                        } else {
                            let u = self.mk(ExprKind::Unit, Ty::Unit, span);
                            Some(Box::new(self.with_inouts(u)))
                        }
                    }
                };
                Ok(self.mk(ExprKind::Return(v), Ty::Never, span))
            }
            A::Block(b) => {
                let b = self.block(b)?;
                let ty = self.body_type(&b);
                Ok(Expr { kind: ExprKind::Block(b), ty, span })
            }
            A::Closure { is_move, params, ret, body } => self.closure(*is_move, params, ret.as_ref(), body, span),
            // `&x` is the value (references are values in kernels).
            A::Ref(x) => {
                let v = self.expr(x)?;
                Ok(Expr { span, ..v })
            }
            A::RefMut(_) => Err(Diagnostic::error(span, "`&mut` is only written as an argument of a `&mut` parameter, an atomic or a `cp_async`")
                .label("not supported here")
                .help("pass `&mut x` to a function that takes `&mut T`; `atomic_add(&mut a[i], v)` and `cp_async::<16>(&mut tile[i], &a[j])` take a reference to an element")
                .into()),
        }
    }

    fn lit(&mut self, l: Lit, neg: bool, span: Span) -> CResult<CExpr> {
        Ok(match l {
            Lit::Bool(b) => self.mk(ExprKind::Lit(ScalarValue::Bool(b)), Ty::Scalar(Scalar::Bool), span),
            Lit::Int(v, suffix) => {
                if let Some(s) = suffix {
                    let (lo, hi) = int_range(s);
                    let val = signed_literal(v, neg);
                    if neg && !s.is_signed() {
                        return Err(Diagnostic::error(span, format!("cannot apply unary operator `-` to type `{s}`"))
                            .label("unsigned values cannot be negative")
                            .help("use a signed type such as `i64`")
                            .into());
                    }
                    if !val.is_some_and(|val| val >= lo && val <= hi) {
                        return Err(lit_range_error(s, span, neg, v).into());
                    }
                }
                let ty = match suffix {
                    Some(s) => self.u.known(Ty::Scalar(s)),
                    None => self.u.var(Kind::Int),
                };
                Expr {
                    kind: ExprKind::PendingLit(PendingLit {
                        int: Some(v),
                        neg,
                        f64: v as f64,
                        f32: v as f32,
                        f16: crate::float16::int_to_f16(v as i128),
                        bf16: crate::float16::int_to_bf16(v as i128),
                    }),
                    ty,
                    span,
                }
            }
            Lit::Float { f64, f32, f16, bf16, suffix } => {
                let ty = match suffix {
                    Some(s) => self.u.known(Ty::Scalar(s)),
                    None => self.u.var(Kind::Float),
                };
                Expr { kind: ExprKind::PendingLit(PendingLit { int: None, neg, f64, f32, f16, bf16 }), ty, span }
            }
        })
    }

    /// `-x`, `!x` on numbers and `bool`.
    pub(super) fn scalar_unary(&mut self, op: UnOp, x: CExpr, span: Span) -> CResult<CExpr> {
        let (class, what) = match op {
            UnOp::Neg => (Class::SignedOrFloat, "unary `-`"),
            UnOp::Not => (Class::IntOrBool, "unary `!`"),
        };
        self.need(x.ty, class, span, what)?;
        let ty = x.ty;
        Ok(Expr { kind: ExprKind::Unary(op, Box::new(x)), ty, span })
    }

    /// Whether `h` is a type parameter bounded by traits rather than a kernel bound.
    pub(super) fn param_bounded_by_traits(&mut self, h: H) -> bool {
        matches!(self.u.ty(h), Some(Ty::Param(p)) if p.bound == Bound::Any)
    }

    pub(super) fn scalar_binary(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span) -> CResult<CExpr> {
        let what = format!("binary `{}`", op.symbol());
        if op.is_shift() {
            self.need(a.ty, Class::Int, a.span, &what)?;
            self.need(b.ty, Class::Int, b.span, &what)?;
            let ty = a.ty;
            return Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span });
        }
        if !self.u.unify(a.ty, b.ty) {
            let (ta, tb) = (self.u.describe(a.ty), self.u.describe(b.ty));
            let mut d = Diagnostic::error(b.span, format!("mismatched types: `{ta}` {} `{tb}`", op.symbol()))
                .label(format!("expected `{ta}`, found `{tb}`"))
                .secondary(a.span, format!("this is `{ta}`"))
                .note("kache follows Rust: both operands of an arithmetic or comparison operator have the same type");
            let lit = match (&a.kind, &b.kind) {
                (ExprKind::PendingLit(l), _) | (_, ExprKind::PendingLit(l)) => Some(*l),
                _ => None,
            };
            if let Some(help) = self.literal_as_param(a.ty, b.ty, lit.as_ref()) {
                return Err(d.note("an unsuffixed literal does not take the type of a type parameter").help(help).into());
            }
            if is_num(&ta) && is_num(&tb) {
                d = d.help(format!("convert one side with `as`, for example `(..) as {}`", if ta.starts_with('{') { &tb } else { &ta }));
            }
            return Err(d.into());
        }
        if let Some(Ty::Enum(e)) = self.u.ty(a.ty) {
            // Enums compare with `#[derive(PartialEq)]` (and order with `PartialOrd`), as in
            // Rust; they have no arithmetic.
            let derived = match op {
                BinOp::Eq | BinOp::Ne => self.mcx.enum_derives(e, "PartialEq"),
                BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => self.mcx.enum_derives(e, "PartialOrd"),
                _ => false,
            };
            if !derived {
                return Err(self.mcx.enum_op_error(e, op, span).into());
            }
            let ty = self.u.known(Ty::Scalar(Scalar::Bool));
            return Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span });
        }
        let (class, ty) = if op.is_comparison() {
            (Class::Scalar, self.u.known(Ty::Scalar(Scalar::Bool)))
        } else if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) {
            (Class::IntOrBool, a.ty)
        } else {
            (Class::Numeric, a.ty)
        };
        self.need(a.ty, class, span, &what)?;
        Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span })
    }

    fn if_expr(&mut self, c: &ast::Expr, t: &ast::Block, f: Option<&ast::Expr>, span: Span) -> CResult<CExpr> {
        let c = self.expr(c)?;
        let b = self.u.known(Ty::Scalar(Scalar::Bool));
        self.unify_or(c.span, b, c.ty, " (the condition of `if`)")
            .map_err(|d| d.help("conditions are `bool`: compare, for example `x != 0`"))?;
        let then = self.block(t)?;
        let tt = self.body_type(&then);
        let (els, ty) = match f {
            None => {
                let unit = self.u.known(Ty::Unit);
                if !self.u.unify(unit, tt) {
                    let d = self.u.describe(tt);
                    return Err(Diagnostic::error(
                        t.tail.as_ref().map(|x| x.span).unwrap_or(t.span),
                        format!("`if` without `else` has type `()`, found `{d}`"),
                    )
                    .label("this value has nowhere to go")
                    .help("add an `else` branch, or end the expression with `;`")
                    .into());
                }
                (None, unit)
            }
            Some(fe) => {
                let eb = match &fe.kind {
                    A::Block(b) => self.block(b)?,
                    _ => {
                        let x = self.expr(fe)?;
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
                            return Err(Diagnostic::error(fe.span, format!("`if` and `else` have incompatible types: `{x}` and `{y}`"))
                                .label(format!("expected `{x}`, found `{y}`"))
                                .secondary(t.span, format!("this branch has type `{x}`"))
                                .into());
                        }
                        tt
                    }
                };
                (Some(eb), ty)
            }
        };
        Ok(Expr { kind: ExprKind::If(Box::new(c), then, els), ty, span })
    }

    pub(super) fn push_loop(&mut self, label: &Option<ast::Ident>, is_loop: bool) -> LoopId {
        let id = self.next_loop;
        self.next_loop += 1;
        self.loops.push(LoopInfo { label: label.as_ref().map(|l| l.name.clone()), id, is_loop, break_ty: None, has_break: false });
        id
    }

    pub(super) fn loop_body(&mut self, body: &ast::Block) -> CResult<CBlock> {
        let b = self.block(body)?;
        let unit = self.u.known(Ty::Unit);
        let bt = self.body_type(&b);
        if !self.u.unify(unit, bt) {
            let d = self.u.describe(bt);
            return Err(Diagnostic::error(
                body.tail.as_ref().map(|t| t.span).unwrap_or(body.span),
                format!("loop bodies have type `()`, found `{d}`"),
            )
            .label("this value has nowhere to go")
            .help("end the expression with `;`")
            .into());
        }
        Ok(b)
    }

    fn find_loop(&self, label: Option<&ast::Ident>, span: Span, what: &str) -> CResult<usize> {
        match label {
            None => self.loops.len().checked_sub(1).ok_or_else(|| {
                Diagnostic::error(span, format!("`{what}` outside of a loop")).label(format!("cannot `{what}` here")).into()
            }),
            Some(l) => self.loops.iter().rposition(|x| x.label.as_deref() == Some(&l.name)).ok_or_else(|| {
                let labels: Vec<&str> = self.loops.iter().filter_map(|x| x.label.as_deref()).collect();
                let d =
                    Diagnostic::error(l.span, format!("use of undeclared label `{}`", l.name)).label("no enclosing loop has this label");
                let d = match close_matches(&l.name, labels.iter().copied()).first() {
                    Some(c) => d.help(format!("a label with a similar name is in scope: `{c}`")),
                    None if labels.is_empty() => d.help("label the loop: `'outer: for ..` and `break 'outer`"),
                    None => d.help(format!("labels in scope: {}", labels.join(", "))),
                };
                d.into()
            }),
        }
    }
}
