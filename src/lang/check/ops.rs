//! Operators on values that are not numbers, as Rust has them: `a + b` on a struct is a call of
//! its `impl Add` (`Add<Rhs>` with an `Output`), `-a` of `Neg`, `a += b` of `AddAssign`, `a == b`
//! and `a < b` of `PartialEq` and `PartialOrd` (an `impl`, or a `#[derive]`, which compares
//! field by field in order); on a type parameter at its definition, what its bounds allow.
//! Numbers keep their own operators (`expr.rs`).

use crate::ir::*;
use crate::lang::ast::{self, Item};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::generic_call::{CallPre, Slot};
use super::traits::{StdTrait, TraitId};
use super::unify::{Compound, H, Kind};

impl<'c, 'm> FnCx<'c, 'm> {
    /// Whether a value of type `h` is not a number: a struct, an enum with fields, a tuple, an
    /// array, a closure.
    pub(super) fn is_aggregate(&mut self, h: H) -> bool {
        matches!(self.u.ty(h), Some(Ty::Agg(_))) || self.u.adt_of(h).is_some() || self.u.compound(h).is_some()
    }

    /// Whether `h` is a type parameter whose bounds (not a kernel bound) say what `op` does.
    fn param_without_kernel_bound(&mut self, h: H) -> bool {
        matches!(self.u.ty(h), Some(Ty::Param(p)) if p.bound == Bound::Any)
    }

    /// `a op b`.
    pub(super) fn binary(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span) -> CResult<CExpr> {
        if self.is_aggregate(a.ty) || (self.is_aggregate(b.ty) && !op.is_shift()) || self.param_without_kernel_bound(a.ty) {
            return self.trait_binary(op, a, b, span);
        }
        self.scalar_binary(op, a, b, span)
    }

    /// `-x`, `!x`.
    pub(super) fn unary_op(&mut self, op: UnOp, x: CExpr, span: Span) -> CResult<CExpr> {
        if !self.is_aggregate(x.ty) && !self.param_without_kernel_bound(x.ty) {
            return self.scalar_unary(op, x, span);
        }
        let tr = if op == UnOp::Neg { StdTrait::Neg } else { StdTrait::Not };
        if let Some(out) = self.param_op(x.ty, tr, None) {
            return Ok(Expr { kind: ExprKind::Unary(op, Box::new(x)), ty: out, span });
        }
        if let Some((imp, slots)) = self.op_impl(tr, x.ty, None)? {
            return self.impl_op_call(imp, slots, tr, Operand::Value(x), Vec::new(), span);
        }
        let t = self.u.describe(x.ty);
        let sym = if op == UnOp::Neg { "-" } else { "!" };
        Err(Diagnostic::error(span, format!("cannot apply unary operator `{sym}` to type `{t}`"))
            .label(format!("cannot apply unary operator `{sym}`"))
            .note(format!("an implementation of `std::ops::{}` might be missing for `{t}`", tr.name()))
            .help(self.restrict_help(x.ty, tr, None))
            .into())
    }

    /// `a op b` where `a` or `b` is not a number, or `a` is a type parameter bounded by traits.
    fn trait_binary(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span) -> CResult<CExpr> {
        let (tr, _) = StdTrait::of_binop(op);
        let bool_ty = Ty::Scalar(Scalar::Bool);
        if op.is_comparison() {
            if let Some(_out) = self.param_op(a.ty, tr, Some(b.ty)) {
                let ty = self.u.known(bool_ty);
                return Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span });
            }
            return self.compare_values(op, a, b, span);
        }
        if let Some(out) = self.param_op(a.ty, tr, Some(b.ty)) {
            return Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty: out, span });
        }
        if let Some((imp, slots)) = self.op_impl(tr, a.ty, Some(b.ty))? {
            return self.impl_op_call(imp, slots, tr, Operand::Value(a), vec![b], span);
        }
        Err(self.no_op(op, a.ty, b.ty, span).into())
    }

    /// `place op= value` on a value that is not a number.
    pub(super) fn trait_compound(&mut self, op: BinOp, place: Place<H>, pty: H, rhs: CExpr, lhs: &ast::Expr, span: Span) -> CResult<CExpr> {
        let (_, tr) = StdTrait::of_binop(op);
        if self.param_op(pty, tr, Some(rhs.ty)).is_some() {
            return Ok(self.mk(ExprKind::CompoundAssign(op, place, Box::new(rhs)), Ty::Unit, span));
        }
        if let Some((imp, slots)) = self.op_impl(tr, pty, Some(rhs.ty))? {
            self.check_borrow_mut_at(&place, lhs)?;
            return self.impl_op_call(imp, slots, tr, Operand::Place(place, pty), vec![rhs], span);
        }
        let (t, r) = (self.u.describe(pty), self.u.describe(rhs.ty));
        let mut d = Diagnostic::error(span, format!("binary assignment operation `{}=` cannot be applied to type `{t}`", op.symbol()))
            .label(format!("cannot use `{}=` on type `{t}`", op.symbol()))
            .note(format!("an implementation of `std::ops::{}<{r}>` might be missing for `{t}`", tr.name()));
        let (plain, _) = StdTrait::of_binop(op);
        if self.op_impl(plain, pty, Some(rhs.ty))?.is_some() {
            d = d.help(format!(
                "`{t}` has `{}` but not `{}`: write `x = x {} y`, or implement `{}`",
                plain.name(),
                tr.name(),
                op.symbol(),
                tr.name()
            ));
        } else {
            d = d.help(self.restrict_help(pty, tr, Some(rhs.ty)));
        }
        Err(d.into())
    }

    /// What the bounds of type parameter `a` (at a definition) say `a op b` gives: the
    /// trait's `Output` (`Rhs` being `b`'s type), `None` if no bound has the trait.
    fn param_op(&mut self, a: H, tr: StdTrait, b: Option<H>) -> Option<H> {
        let Some(p @ Ty::Param(_)) = self.u.ty(a) else { return None };
        let bounds: Vec<super::traits::TraitRef> = self.generics.bounds_of(p).filter(|r| r.id == TraitId::Std(tr)).cloned().collect();
        for r in bounds {
            if let (Some(b), Some(rhs)) = (b, r.args.first()) {
                let want = self.u.known(*rhs);
                let snap = self.u.snapshot();
                if !self.u.unify(want, b) {
                    self.u.rollback(snap);
                    continue;
                }
            }
            let out = match tr {
                StdTrait::PartialEq | StdTrait::PartialOrd => Ty::Scalar(Scalar::Bool),
                t if t.is_assign_op() => Ty::Unit,
                _ => r.assoc.iter().find(|(n, _)| n == "Output").map(|(_, t)| *t).unwrap_or(p),
            };
            return Some(self.u.known(out));
        }
        // The kernel bounds give numbers' operators (`T: Num`).
        if let Ty::Param(tp) = p
            && tp.bound != Bound::Any
        {
            return None;
        }
        None
    }

    /// The `impl` block of operator trait `tr` for `a` (with `Rhs` = `b`), when one matches;
    /// its generic arguments as variables of this body (unified with `a` and `b`).
    pub(super) fn op_impl(&mut self, tr: StdTrait, a: H, b: Option<H>) -> CResult<Option<(usize, Vec<Slot>)>> {
        let id = TraitId::Std(tr);
        let mut found = Vec::new();
        for imp in self.mcx.impls_of(id) {
            let head_ok = match self.u.ty(a) {
                Some(t) => self.mcx.head_may_match(imp, t),
                None => match self.head_item(a) {
                    Some(i) => self.mcx.impl_for_item(imp) == Some(i),
                    // A number not yet settled (`0.5 * v`): an `impl` for a number type may fit.
                    None => {
                        matches!(self.u.get(a), super::unify::Node::Var(_))
                            && matches!(self.mcx.m.impls[imp].self_ty, ast::TypeExpr::Scalar(..))
                    }
                },
            };
            if !head_ok {
                continue;
            }
            let snap = self.u.snapshot();
            let args: Vec<H> = b.into_iter().collect();
            let r = self.mcx.match_impl(&mut self.u, imp, a, &args)?;
            self.u.rollback(snap);
            if r.is_some() {
                found.push(imp);
            }
        }
        // One candidate (or the first of several that all fit): unify for real.
        let Some(&imp) = found.first() else { return Ok(None) };
        let args: Vec<H> = b.into_iter().collect();
        Ok(self.mcx.match_impl(&mut self.u, imp, a, &args)?.map(|s| (imp, s)))
    }

    /// `x[i]` where `x` is a struct: a call of its `impl Index`'s `index` (the value it refers
    /// to: references are values).
    pub(super) fn index_op(&mut self, x: Operand, index: &ast::Expr, span: Span) -> CResult<CExpr> {
        let i = self.expr(index)?;
        let xh = match &x {
            Operand::Place(_, h) => *h,
            Operand::Value(v) => v.ty,
        };
        if let Some((imp, slots)) = self.op_impl(StdTrait::Index, xh, Some(i.ty))? {
            return self.impl_op_call(imp, slots, StdTrait::Index, x, vec![i], span);
        }
        let t = self.u.describe(xh);
        Err(Diagnostic::error(span, format!("cannot index into a value of type `{t}`"))
            .label("not an array")
            .note(format!("an implementation of `std::ops::Index` might be missing for `{t}`"))
            .help("implement it: `impl Index<usize> for .. { type Output = ..; fn index(&self, i: usize) -> &.. { .. } }`")
            .into())
    }

    /// `x[i] = v` and `x[i] op= v` where `x` is a struct: its `impl IndexMut`'s hidden setter
    /// (`syntax/index_mut.rs`), the old value read through `Index` for `op=`; `None` where `x`
    /// is not a struct.
    pub(super) fn index_assign(&mut self, op: Option<BinOp>, lhs: &ast::Expr, rhs: &ast::Expr, span: Span) -> CResult<Option<CExpr>> {
        let ast::ExprKind::Index { array, indices, multi: false } = &lhs.kind else { return Ok(None) };
        if indices.len() != 1 || !matches!(array.kind, ast::ExprKind::Path(_) | ast::ExprKind::Field(..) | ast::ExprKind::Deref(_)) {
            return Ok(None);
        }
        let x = self.operand(array)?;
        let xh = match &x {
            Operand::Place(_, h) => *h,
            Operand::Value(v) => v.ty,
        };
        if matches!(self.shape(xh), Some(super::aggregates::Shape::Array(..))) || !self.is_aggregate(xh) {
            return Ok(None);
        }
        let i = self.expr(&indices[0])?;
        let Some((imp, slots)) = self.op_impl(StdTrait::IndexMut, xh, Some(i.ty))? else {
            let t = self.u.describe(xh);
            return Err(Diagnostic::error(lhs.span, format!("cannot assign to data in an index of `{t}`"))
                .label("cannot assign")
                .note(format!("trait `IndexMut` is required to modify indexed content, but it is not implemented for `{t}`"))
                .into());
        };
        let Operand::Place(p, _) = x else {
            return Err(Diagnostic::error(array.span, "cannot assign to a temporary value").label("not a place").into());
        };
        self.check_borrow_mut_at(&p, array)?;
        let (ih, ispan) = (i.ty, i.span);
        let held = self.declare(&ast::Ident { name: "_".into(), span: ispan }, ih, false, false);
        let index = Expr { kind: ExprKind::Local(held), ty: ih, span: ispan };
        let v = self.expr(rhs)?;
        let value = match op {
            None => v,
            Some(op) => {
                let Some((ri, rslots)) = self.op_impl(StdTrait::Index, xh, Some(ih))? else {
                    return Err(Diagnostic::error(lhs.span, "cannot index into this value").label("no `impl Index`").into());
                };
                let cur = self.impl_op_call(ri, rslots, StdTrait::Index, Operand::Place(p.clone(), xh), vec![index.clone()], lhs.span)?;
                self.binary(op, cur, v, span)?
            }
        };
        let setter = crate::lang::syntax::index_mut::SETTER;
        let Some(k) = self.mcx.impl_member(imp, setter) else {
            return Err(Diagnostic::error(self.mcx.m.impls[imp].span, "not all trait items implemented, missing: `index_mut`")
                .label("missing")
                .into());
        };
        let Item::Fn(f) = &self.mcx.m.items[k] else { return Ok(None) };
        let name = ast::Ident { name: "index_mut".into(), span: lhs.span };
        let pre = CallPre { prefix: slots, self_h: None, receiver: Some(Operand::Place(p, xh)), args: vec![index, value] };
        let call = self.call_item(f, &name, &[], pre, &[], span)?;
        let ty = call.ty;
        Ok(Some(Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(held, Some(i))], tail: Some(Box::new(call)) }), ty, span }))
    }

    /// A call of the method of operator trait `tr` that `impl` block `imp` defines.
    fn impl_op_call(&mut self, imp: usize, slots: Vec<Slot>, tr: StdTrait, recv: Operand, args: Vec<CExpr>, span: Span) -> CResult<CExpr> {
        let method = tr.method().unwrap_or("");
        let Some(i) = self.mcx.impl_member(imp, method) else {
            let d = &self.mcx.m.impls[imp];
            return Err(Diagnostic::error(d.span, format!("not all trait items implemented, missing: `{method}`"))
                .label(format!("missing `{method}` in implementation of `{}`", tr.name()))
                .into());
        };
        let Item::Fn(f) = &self.mcx.m.items[i] else {
            return Err(Diagnostic::error(span, format!("`{method}` is not a function")).label("here").into());
        };
        let name = ast::Ident { name: method.to_string(), span };
        let pre = CallPre { prefix: slots, self_h: None, receiver: Some(recv), args };
        self.call_item(f, &name, &[], pre, &[], span)
    }

    /// `a == b`, `a < b`, .. where `a` is not a number: an `impl PartialEq`/`PartialOrd`, or a
    /// `#[derive]` (field by field, in order; tuples and arrays element by element).
    fn compare_values(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span) -> CResult<CExpr> {
        let (tr, _) = StdTrait::of_binop(op);
        if let Some((imp, slots)) = self.op_impl(tr, a.ty, Some(b.ty))? {
            let eq = matches!(op, BinOp::Eq | BinOp::Ne);
            let own = match op {
                BinOp::Eq | BinOp::Ne => "eq",
                BinOp::Lt => "lt",
                BinOp::Le => "le",
                BinOp::Gt => "gt",
                _ => "ge",
            };
            let method = if self.mcx.impl_member(imp, own).is_some() {
                own
            } else if eq {
                "eq"
            } else {
                "partial_cmp"
            };
            let Some(i) = self.mcx.impl_member(imp, method) else {
                return Err(Diagnostic::error(self.mcx.m.impls[imp].span, format!("not all trait items implemented, missing: `{method}`"))
                    .label("missing")
                    .into());
            };
            let Item::Fn(f) = &self.mcx.m.items[i] else { return Err(Diagnostic::error(span, "expected a function").label("here").into()) };
            let name = ast::Ident { name: method.to_string(), span };
            let pre = CallPre { prefix: slots, self_h: None, receiver: Some(Operand::Value(a)), args: vec![b] };
            let call = self.call_item(f, &name, &[], pre, &[], span)?;
            if method == "partial_cmp" {
                return self.ordering_test(op, call, span);
            }
            if op == BinOp::Ne {
                return Ok(self.mk(ExprKind::Unary(UnOp::Not, Box::new(call)), Ty::Scalar(Scalar::Bool), span));
            }
            return Ok(call);
        }
        if !self.u.unify(a.ty, b.ty) {
            return Err(self.no_op(op, a.ty, b.ty, span).into());
        }
        match self.derived_compare(op, a.clone(), b.clone(), span, 0)? {
            Some(x) => Ok(x),
            None => Err(self.no_op(op, a.ty, b.ty, span).into()),
        }
    }

    /// `a op b` of a derived `PartialEq`/`PartialOrd` (or of tuples, arrays and enums with
    /// fields, whose derive compares tag first, then the parts): `None` if the type has none.
    pub(super) fn derived_compare(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span, depth: u32) -> CResult<Option<CExpr>> {
        if depth > 32 {
            return Ok(None);
        }
        let h = a.ty;
        let (tr, _) = StdTrait::of_binop(op);
        let parts: Vec<H> = if let Some(Compound::Tuple(hs)) = self.u.compound(h) {
            hs
        } else if let Some(Compound::Array(e, n)) = self.u.compound(h) {
            vec![e; n.min(1 << 12) as usize]
        } else {
            let t = self.u.ty(h);
            let derived = match t {
                Some(Ty::Agg(id)) => {
                    if let Some((adt, _)) = self.mcx.adts.borrow().instance_of(id) {
                        self.mcx.adts.borrow().def(adt).derives(tr.name())
                    } else if let Some(i) = self.mcx.item_of_agg(id) {
                        matches!(&self.mcx.m.items[i], Item::Struct(s) if s.derives.iter().any(|d| d == tr.name() || d.ends_with(&format!("::{}", tr.name()))))
                    } else {
                        false
                    }
                }
                Some(Ty::Scalar(_) | Ty::Enum(_)) => {
                    return self.scalar_binary(op, a, b, span).map(Some);
                }
                _ => false,
            };
            if !derived {
                return Ok(None);
            }
            let Some(Ty::Agg(id)) = t else { return Ok(None) };
            let comps = self.mcx.types.borrow().components(id);
            comps.into_iter().map(|t| self.u.known(t)).collect()
        };
        // Each side in a local, read part by part.
        let (la, ea) = self.temp_value(a);
        let (lb, eb) = self.temp_value(b);
        let part = |me: &mut Self, whole: &CExpr, k: usize, t: H| -> CExpr {
            match me.u.compound(whole.ty) {
                Some(Compound::Array(..)) => {
                    let i = me.mk(ExprKind::Lit(ScalarValue::Int(Scalar::Usize, k as u64)), Ty::Scalar(Scalar::Usize), span);
                    Expr { kind: ExprKind::Elem(Box::new(whole.clone()), Box::new(i)), ty: t, span }
                }
                _ => Expr { kind: ExprKind::Field(Box::new(whole.clone()), k as u32), ty: t, span },
            }
        };
        let bool_h = |me: &mut Self| me.u.known(Ty::Scalar(Scalar::Bool));
        let lit = |me: &mut Self, v: bool| me.mk(ExprKind::Lit(ScalarValue::Bool(v)), Ty::Scalar(Scalar::Bool), span);
        // Lexicographic: `==` all parts equal; `<` the first part that differs is less.
        let mut acc: Option<CExpr> = None;
        for (k, t) in parts.iter().enumerate().rev() {
            let (x, y) = (part(self, &ea, k, *t), part(self, &eb, k, *t));
            let e = match op {
                BinOp::Eq | BinOp::Ne => {
                    let eq = self.part_compare(BinOp::Eq, x, y, span, depth)?;
                    match acc {
                        Some(rest) => {
                            let bh = bool_h(self);
                            Expr { kind: ExprKind::Logic(LogicOp::And, Box::new(eq), Box::new(rest)), ty: bh, span }
                        }
                        None => eq,
                    }
                }
                _ => {
                    let last = acc.is_none();
                    let strict = match op {
                        BinOp::Lt | BinOp::Le => BinOp::Lt,
                        _ => BinOp::Gt,
                    };
                    if last {
                        self.part_compare(op, x, y, span, depth)?
                    } else {
                        let less = self.part_compare(strict, x.clone(), y.clone(), span, depth)?;
                        let eq = self.part_compare(BinOp::Eq, x, y, span, depth)?;
                        let bh = bool_h(self);
                        let rest = acc.take().unwrap_or_else(|| lit(self, false));
                        let and = Expr { kind: ExprKind::Logic(LogicOp::And, Box::new(eq), Box::new(rest)), ty: bh, span };
                        let bh = bool_h(self);
                        Expr { kind: ExprKind::Logic(LogicOp::Or, Box::new(less), Box::new(and)), ty: bh, span }
                    }
                }
            };
            acc = Some(e);
        }
        let mut value = match acc {
            Some(e) => e,
            None => lit(self, matches!(op, BinOp::Eq | BinOp::Le | BinOp::Ge)),
        };
        if op == BinOp::Ne {
            value = self.mk(ExprKind::Unary(UnOp::Not, Box::new(value)), Ty::Scalar(Scalar::Bool), span);
        }
        let ty = value.ty;
        Ok(Some(Expr {
            kind: ExprKind::Block(Block {
                stmts: vec![Stmt::Let(la, Some(ea.clone_init())), Stmt::Let(lb, Some(eb.clone_init()))],
                tail: Some(Box::new(value)),
            }),
            ty,
            span,
        }))
    }

    /// `x op y` of two parts of a derived comparison.
    fn part_compare(&mut self, op: BinOp, x: CExpr, y: CExpr, span: Span, depth: u32) -> CResult<CExpr> {
        if self.is_aggregate(x.ty) {
            if let Some(e) = self.derived_compare(op, x.clone(), y.clone(), span, depth + 1)? {
                return Ok(e);
            }
            return self.compare_values(op, x, y, span);
        }
        let b = self.u.known(Ty::Scalar(Scalar::Bool));
        Ok(Expr { kind: ExprKind::Binary(op, Box::new(x), Box::new(y)), ty: b, span })
    }

    /// A value kept in a hidden local: the local, and an expression reading it (its `Let`'s
    /// initialiser travels in the expression's `clone_init`).
    fn temp_value(&mut self, v: CExpr) -> (LocalId, TempRead) {
        let span = v.span;
        let h = v.ty;
        let l = self.declare(&ast::Ident { name: "_".into(), span }, h, false, false);
        (l, TempRead { read: Expr { kind: ExprKind::Local(l), ty: h, span }, init: v })
    }

    /// `a.partial_cmp(&b)` turned into `op`: `Some(Less)` is `<`, and so on; `None` (unordered)
    /// makes every comparison false.
    fn ordering_test(&mut self, op: BinOp, cmp: CExpr, span: Span) -> CResult<CExpr> {
        let (l, t) = self.temp_value(cmp);
        let tag_h = self.u.known(Ty::Scalar(Scalar::U32));
        let is_some = {
            let tag = Expr { kind: ExprKind::Field(Box::new(t.read.clone()), 0), ty: tag_h, span };
            let one = self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::U32, 1)), Ty::Scalar(Scalar::U32), span);
            self.mk(ExprKind::Binary(BinOp::Eq, Box::new(tag), Box::new(one)), Ty::Scalar(Scalar::Bool), span)
        };
        let ord_ty = self.mcx.ordering_ty()?;
        let ord_h = self.u.known(Ty::Enum(ord_ty));
        let payload_h = self.u.tuple(vec![ord_h]);
        let payload = Expr { kind: ExprKind::Field(Box::new(t.read.clone()), 1), ty: payload_h, span };
        let ord = Expr { kind: ExprKind::Field(Box::new(payload), 0), ty: ord_h, span };
        let zero = self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::I8, 0)), Ty::Enum(ord_ty), span);
        let test = self.mk(ExprKind::Binary(op, Box::new(ord), Box::new(zero)), Ty::Scalar(Scalar::Bool), span);
        let both = self.mk(ExprKind::Logic(LogicOp::And, Box::new(is_some), Box::new(test)), Ty::Scalar(Scalar::Bool), span);
        let ty = both.ty;
        Ok(Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(l, Some(t.init))], tail: Some(Box::new(both)) }), ty, span })
    }

    /// The error for an operator a type does not have (rustc's E0369).
    fn no_op(&mut self, op: BinOp, a: H, b: H, span: Span) -> Diagnostic {
        let (ta, tb) = (self.u.describe(a), self.u.describe(b));
        let (tr, _) = StdTrait::of_binop(op);
        let msg = match op {
            BinOp::Add => format!("cannot add `{tb}` to `{ta}`"),
            BinOp::Sub => format!("cannot subtract `{tb}` from `{ta}`"),
            BinOp::Mul => format!("cannot multiply `{ta}` by `{tb}`"),
            BinOp::Div => format!("cannot divide `{ta}` by `{tb}`"),
            BinOp::Rem => format!("cannot calculate the remainder of `{ta}` divided by `{tb}`"),
            BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr => {
                format!("no implementation for `{ta} {} {tb}`", op.symbol())
            }
            _ => format!("binary operation `{}` cannot be applied to type `{ta}`", op.symbol()),
        };
        let rhs = if op.is_comparison() { None } else { Some(b) };
        let help = self.restrict_help(a, tr, rhs);
        Diagnostic::error(span, msg)
            .label(format!("`{ta}` {} `{tb}`", op.symbol()))
            .note(format!("an implementation of `{}` might be missing for `{ta}`", tr.path()))
            .help(help)
    }

    /// How to give type `a` trait `tr`: a bound on a type parameter, else an `impl`.
    fn restrict_help(&mut self, a: H, tr: StdTrait, rhs: Option<H>) -> String {
        let ta = self.u.describe(a);
        let output =
            if tr.is_binary_op() || matches!(tr, StdTrait::Neg | StdTrait::Not) { format!("<Output = {ta}>") } else { String::new() };
        let rhs_text = match rhs.map(|r| self.u.describe(r)) {
            Some(r) if r != ta && tr.is_binary_op() => format!("<{r}, Output = {ta}>"),
            _ => output,
        };
        if matches!(self.u.ty(a), Some(Ty::Param(_))) {
            format!("consider restricting type parameter `{ta}` with trait `{}`: `{ta}: {}{rhs_text}`", tr.name(), tr.path())
        } else if matches!(tr, StdTrait::PartialEq | StdTrait::PartialOrd) {
            format!(
                "add `#[derive({})]` to the type, or implement `{}` for it",
                if tr == StdTrait::PartialEq { "PartialEq" } else { "PartialEq, PartialOrd" },
                tr.name()
            )
        } else {
            format!("implement it: `impl {}{rhs_text} for {ta} {{ .. }}`", tr.path())
        }
    }

    /// `T::default()`, `Default::default()`: the type's `impl Default`, a derive (each field's
    /// default), or a number's zero (`false`).
    pub(super) fn default_value(&mut self, h: H, span: Span) -> CResult<CExpr> {
        if let Some(Ty::Param(p)) = self.u.ty(h)
            && (p.bound != Bound::Any || self.generics.bounds_of(Ty::Param(p)).any(|b| b.id == TraitId::Std(StdTrait::Default)))
        {
            return Ok(Expr { kind: ExprKind::Zeroed, ty: h, span });
        }
        if let Some((imp, slots)) = self.op_impl(StdTrait::Default, h, None)?
            && let Some(i) = self.mcx.impl_member(imp, "default")
            && let Item::Fn(f) = &self.mcx.m.items[i]
        {
            let name = ast::Ident { name: "default".into(), span };
            return self.call_item(f, &name, &[], CallPre { prefix: slots, ..CallPre::default() }, &[], span);
        }
        match self.u.ty(h) {
            Some(Ty::Scalar(_)) => return Ok(Expr { kind: ExprKind::Zeroed, ty: h, span }),
            None if self.u.adt_of(h).is_none() && self.u.compound(h).is_none() => {
                // Settled later: a number's default is its zero.
                return Ok(Expr { kind: ExprKind::Zeroed, ty: h, span });
            }
            _ => {}
        }
        let derived = match self.u.adt_of(h) {
            Some((adt, _)) => self.mcx.adts.borrow().def(adt).derives("Default"),
            None => match self.u.ty(h) {
                Some(Ty::Agg(id)) => match self.mcx.item_of_agg(id).map(|i| &self.mcx.m.items[i]) {
                    Some(Item::Struct(s)) => s.derives.iter().any(|d| d == "Default" || d.ends_with("::Default")),
                    None => true,
                    _ => false,
                },
                _ => false,
            },
        };
        if derived {
            // Every part's default is its zero, unless a field's type has an `impl Default`.
            if let Some(v) = self.struct_view(h)
                && v.fields.iter().any(|(_, f)| self.has_default_impl(*f))
            {
                let mut parts = Vec::new();
                for (k, (_, f)) in v.fields.iter().enumerate() {
                    parts.push((k as u32, self.default_value(*f, span)?));
                }
                return Ok(Expr { kind: ExprKind::Aggregate { parts, base: None }, ty: h, span });
            }
            return Ok(Expr { kind: ExprKind::Zeroed, ty: h, span });
        }
        let t = self.u.describe(h);
        Err(Diagnostic::error(span, format!("the trait bound `{t}: Default` is not satisfied"))
            .label(format!("the trait `Default` is not implemented for `{t}`"))
            .help("add `#[derive(Default)]` to the type, or implement `Default` for it")
            .into())
    }

    fn has_default_impl(&mut self, h: H) -> bool {
        matches!(self.op_impl(StdTrait::Default, h, None), Ok(Some(_)))
    }

    /// `T::from(x)`, `x.into()`: Rust's lossless conversions between numbers, as `as`.
    pub(super) fn convert(&mut self, x: CExpr, to: H, span: Span) -> CResult<CExpr> {
        if !self.u.unify(x.ty, to) || self.u.ty(to).is_none() {
            let (f, t) = (self.u.ty(x.ty), self.u.ty(to));
            match (f, t) {
                (Some(Ty::Scalar(a)), Some(Ty::Scalar(b))) if super::bounds::lossless(a, b) => {
                    return Ok(self.mk(ExprKind::Cast(Box::new(x)), Ty::Scalar(b), span));
                }
                (Some(Ty::Scalar(a)), Some(Ty::Scalar(b))) => {
                    return Err(Diagnostic::error(span, format!("the trait bound `{b}: From<{a}>` is not satisfied"))
                        .label(format!("`{a}` does not convert to `{b}` without loss"))
                        .help(format!("convert with `as`: `x as {b}`"))
                        .into());
                }
                (_, None) => {
                    return Err(Diagnostic::error(span, "type annotations needed")
                        .label("cannot infer the type to convert into")
                        .help("annotate it: `let y: f64 = x.into();`")
                        .into());
                }
                _ => {
                    let (a, b) = (self.u.describe(x.ty), self.u.describe(to));
                    return Err(Diagnostic::error(span, format!("the trait bound `{b}: From<{a}>` is not satisfied"))
                        .label("no conversion")
                        .into());
                }
            }
        }
        Ok(x)
    }
}

/// A value held in a hidden local: reading it, and its initialiser.
struct TempRead {
    read: CExpr,
    init: CExpr,
}

impl TempRead {
    fn clone_init(&self) -> CExpr {
        self.init.clone()
    }
}

impl std::ops::Deref for TempRead {
    type Target = CExpr;
    fn deref(&self) -> &CExpr {
        &self.read
    }
}

#[allow(dead_code)]
fn unused(_: Kind) {}
