//! `const` and `static` items: evaluating them (scalars and nested array literals) once per module,
//! and evaluating the constant expressions that lengths and factory arguments are written with.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, Item, Lit, ModId, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::fold::{float_literal, fold_binary, fold_cast, fold_unary, int_range, int_value, lit_range_error, signed_literal};
use super::items::ModuleCx;

/// The value of a `const` or `static` item.
#[derive(Clone, Debug)]
pub(super) enum ConstVal {
    Scalar(ScalarValue),
    Array(ConstArray),
}

impl<'m> ModuleCx<'m> {
    /// The `const` or `static` item a plain name means in `module`.
    pub(super) fn const_named(&self, module: ModId, name: &str) -> Option<usize> {
        match self.m.scopes.value(module, name)? {
            Res::Item(i) if matches!(self.m.items[i], Item::Const(_)) => Some(i),
            _ => None,
        }
    }

    /// The item `i` as a constant item.
    pub(super) fn const_item(&self, i: usize) -> Option<&'m ast::ConstItem> {
        match &self.m.items[i] {
            Item::Const(c) => Some(c),
            _ => None,
        }
    }

    /// The value of the constant item `i` (evaluated once).
    pub(super) fn const_value(&mut self, i: usize, use_span: Span) -> CResult<ConstVal> {
        if let Some(v) = self.consts.get(&i) {
            return Ok(v.clone());
        }
        let Some(c) = self.const_item(i) else {
            return Err(Diagnostic::error(use_span, "expected a constant").label("not a constant").into());
        };
        if self.consts_in_progress.contains(&i) {
            return Err(Diagnostic::error(c.name.span, format!("constant `{}` depends on itself", c.name.name))
                .label("cycle")
                .secondary(use_span, "used here")
                .into());
        }
        self.consts_in_progress.push(i);
        let r = self.eval_const_item(c);
        self.consts_in_progress.pop();
        let v = r?;
        self.consts.insert(i, v.clone());
        Ok(v)
    }

    fn eval_const_item(&mut self, c: &'m ast::ConstItem) -> CResult<ConstVal> {
        let module = c.module;
        match &c.ty {
            TypeExpr::Scalar(s, _) => Ok(ConstVal::Scalar(self.eval_const(&c.value, Some(*s), module)?)),
            TypeExpr::Fixed { .. } => {
                let mut shape = Vec::new();
                let mut t = &c.ty;
                while let TypeExpr::Fixed { elem, len, .. } = t {
                    let n = self.eval_const(len, Some(Scalar::Usize), module)?;
                    let n = n.as_i128().and_then(|n| usize::try_from(n).ok()).unwrap_or(usize::MAX);
                    shape.push(n);
                    t = elem;
                }
                let TypeExpr::Scalar(elem, _) = t else {
                    return Err(Diagnostic::error(t.span(), "array elements must be scalars").label("here").into());
                };
                let count = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d)).unwrap_or(usize::MAX);
                if count > (64 << 20) {
                    return Err(Diagnostic::error(c.ty.span(), "constant array is too large").label("more than 64 Mi elements").into());
                }
                let mut bytes = Vec::with_capacity(count * elem.size());
                self.eval_const_array(&c.value, &shape, *elem, &mut bytes, module)?;
                Ok(ConstVal::Array(ConstArray { elem: *elem, shape, bytes: bytes.into() }))
            }
            TypeExpr::Unit(s)
            | TypeExpr::ArrayRef { span: s, .. }
            | TypeExpr::Named(_, s)
            | TypeExpr::Param(ast::Ident { span: s, .. }) => Err(Diagnostic::error(*s, "constants are scalars or fixed-size arrays")
                .label("unsupported type")
                .help("write `const N: u32 = 4;` or `static T: [f32; 3] = [..];`")
                .into()),
        }
    }

    fn eval_const_array(&mut self, e: &ast::Expr, shape: &[usize], elem: Scalar, out: &mut Vec<u8>, module: ModId) -> CResult<()> {
        let Some((&n, rest)) = shape.split_first() else {
            let v = self.eval_const(e, Some(elem), module)?;
            out.extend_from_slice(&v.to_le_bytes());
            return Ok(());
        };
        match &e.kind {
            A::ArrayLit(items) => {
                if items.len() != n {
                    return Err(Diagnostic::error(e.span, format!("expected an array of {n} elements, found {}", items.len()))
                        .label("wrong length")
                        .into());
                }
                for x in items {
                    self.eval_const_array(x, rest, elem, out, module)?;
                }
                Ok(())
            }
            A::ArrayRepeat(x, len) => {
                let l = self.eval_const(len, Some(Scalar::Usize), module)?;
                if l.as_i128() != Some(n as i128) {
                    return Err(Diagnostic::error(len.span, format!("expected an array of {n} elements")).label("wrong length").into());
                }
                let start = out.len();
                self.eval_const_array(x, rest, elem, out, module)?;
                let chunk = out[start..].to_vec();
                for _ in 1..n {
                    out.extend_from_slice(&chunk);
                }
                Ok(())
            }
            _ => Err(Diagnostic::error(e.span, "expected an array literal").label("write `[a, b, ..]` or `[x; n]`").into()),
        }
    }

    /// Evaluates a constant expression whose names are resolved in `module`; `expected` types
    /// its literals.
    pub(super) fn eval_const(&mut self, e: &ast::Expr, expected: Option<Scalar>, module: ModId) -> CResult<ScalarValue> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.eval_const_inner(e, expected, module))
    }

    fn eval_const_inner(&mut self, e: &ast::Expr, expected: Option<Scalar>, module: ModId) -> CResult<ScalarValue> {
        let not_const = || {
            Diagnostic::error(e.span, "expected a constant expression")
                .label("not constant")
                .help("constants are built from literals, other constants, arithmetic and `as` casts")
        };
        let check_ty = |v: ScalarValue| -> CResult<ScalarValue> {
            match expected {
                Some(t) if t != v.ty() => Err(Diagnostic::error(e.span, format!("mismatched types: expected `{t}`, found `{}`", v.ty()))
                    .label(format!("expected `{t}`"))
                    .into()),
                _ => Ok(v),
            }
        };
        match &e.kind {
            A::Lit(l) => {
                let v = lit_value(*l, false, expected, e.span)?;
                check_ty(v)
            }
            A::Unary(UnOp::Neg, x) if matches!(x.kind, A::Lit(Lit::Int(..) | Lit::Float { .. })) => {
                let A::Lit(l) = x.kind else { return Err(not_const().into()) };
                let v = lit_value(l, true, expected, e.span)?;
                check_ty(v)
            }
            A::Path(n) if self.const_scope.iter().any(|(p, _, _)| *p == n.name) => {
                match self.const_scope.iter().find(|(p, _, _)| *p == n.name).and_then(|(_, _, v)| *v) {
                    Some(v) => check_ty(v),
                    None => Err(not_const().label(format!("`{}` has no value in the definition", n.name)).into()),
                }
            }
            A::Path(_) | A::QPath(_) => {
                let (res, what) = match &e.kind {
                    A::Path(n) => (self.m.scopes.value(module, &n.name), n.name.clone()),
                    A::QPath(p) => {
                        (self.m.scopes.path(self.m, module, p)?.0, p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::"))
                    }
                    _ => (None, String::new()),
                };
                let i = match res {
                    Some(Res::Item(i)) if self.const_item(i).is_some() => i,
                    Some(Res::Variant(e_item, k)) => {
                        let et = self.enum_ty(e_item)?;
                        let d = self.enums[et.id as usize].variants[k].1;
                        return check_ty(int_value(et.repr, d));
                    }
                    _ => return Err(not_const().label(format!("`{what}` is not a constant")).into()),
                };
                match self.const_value(i, e.span)? {
                    ConstVal::Scalar(v) => check_ty(v),
                    ConstVal::Array(_) => {
                        Err(Diagnostic::error(e.span, format!("`{what}` is an array, expected a scalar")).label("array").into())
                    }
                }
            }
            A::Unary(op, x) => {
                let v = self.eval_const(x, expected, module)?;
                fold_unary(*op, v).ok_or_else(|| {
                    Diagnostic::error(e.span, format!("cannot apply `{}` to `{v}` in a constant", if *op == UnOp::Neg { "-" } else { "!" }))
                        .label(if v.ty().is_signed() { "overflows" } else { "not defined for this type" })
                        .into()
                })
            }
            A::Binary(op, a, b) => {
                let (va, vb) = if op.is_comparison() {
                    let va = self.eval_const(a, None, module)?;
                    (va, self.eval_const(b, Some(va.ty()), module)?)
                } else if op.is_shift() {
                    (self.eval_const(a, expected, module)?, self.eval_const(b, None, module)?)
                } else {
                    let va = self.eval_const(a, expected, module)?;
                    (va, self.eval_const(b, Some(va.ty()), module)?)
                };
                let r = fold_binary(*op, va, vb).map_err(|m| Diagnostic::error(e.span, m).label("in this constant"))?;
                check_ty(r)
            }
            A::Logic(op, a, b) => {
                let va = self.eval_const(a, Some(Scalar::Bool), module)?;
                let vb = self.eval_const(b, Some(Scalar::Bool), module)?;
                let (ScalarValue::Bool(x), ScalarValue::Bool(y)) = (va, vb) else { return Err(not_const().into()) };
                check_ty(ScalarValue::Bool(if *op == LogicOp::And { x && y } else { x || y }))
            }
            A::Cast(x, t) => {
                let TypeExpr::Scalar(s, _) = t else {
                    return Err(Diagnostic::error(t.span(), "casts are to scalar types").label("here").into());
                };
                let v = self.eval_const(x, None, module)?;
                let r = fold_cast(v, *s)
                    .ok_or_else(|| Diagnostic::error(e.span, format!("cannot cast `{}` to `{s}`", v.ty())).label("invalid cast"))?;
                check_ty(r)
            }
            A::Block(b) if b.stmts.is_empty() && b.tail.is_some() => {
                self.eval_const(b.tail.as_ref().ok_or_else(not_const)?, expected, module)
            }
            _ => Err(not_const().into()),
        }
    }
}

fn lit_value(l: Lit, neg: bool, expected: Option<Scalar>, span: Span) -> CResult<ScalarValue> {
    match l {
        Lit::Bool(b) => Ok(ScalarValue::Bool(b)),
        Lit::Int(v, suffix) => {
            let s = suffix.or(expected.filter(|e| e.is_int())).unwrap_or(Scalar::I32);
            let (lo, hi) = int_range(s);
            match signed_literal(v, neg) {
                Some(val) if val >= lo && val <= hi => Ok(int_value(s, val)),
                _ => Err(lit_range_error(s, span, neg, v).into()),
            }
        }
        Lit::Float { f64, f32, f16, bf16, suffix } => {
            let s = suffix.or(expected.filter(|e| e.is_float())).unwrap_or(Scalar::F64);
            float_literal(PendingLit { int: None, neg, f64, f32, f16, bf16 }, s, span)
        }
    }
}
