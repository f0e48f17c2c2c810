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
    /// A variant of an enum (its discriminant).
    Enum(EnumTy, ScalarValue),
    /// A tuple, struct or fixed-size array (not a `static`): its initialiser, a constant
    /// expression, is checked and compiled where the constant is used, with the declared type.
    Value(Ty),
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
        // An associated constant sees its block's `Self`.
        let self_ty = match &c.owner {
            Some(o) => match self.owner_ty(o, c.module) {
                Ok(t) => Some(t),
                Err(d) => {
                    self.consts_in_progress.pop();
                    return Err(d);
                }
            },
            None => self.self_ty,
        };
        let saved = std::mem::replace(&mut self.self_ty, self_ty);
        let r = self.eval_const_item(c);
        self.self_ty = saved;
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
            TypeExpr::Named(path, span) => match self.named_ty(path, *span, module)? {
                Ty::Enum(t) => {
                    let v = self.eval_const(&c.value, Some(t.repr), module)?;
                    // Only a variant of the enum is a value of it (not its discriminant).
                    if !self.enum_variant_expr(&c.value, t, module) {
                        return Err(Diagnostic::error(
                            c.value.span,
                            format!("mismatched types: expected `{}`", self.enums[t.id as usize].name),
                        )
                        .label("expected a variant of the enum")
                        .help(format!("write a variant: `{}::Variant`", self.enums[t.id as usize].name))
                        .into());
                    }
                    Ok(ConstVal::Enum(t, v))
                }
                t => self.value_const(c, t),
            },
            TypeExpr::Tuple(..) => {
                let t = self.ty_of(&c.ty, module)?;
                self.value_const(c, t)
            }
            TypeExpr::Generic { .. } => {
                let t = self.ty_of(&c.ty, module)?;
                self.value_const(c, t)
            }
            TypeExpr::Unit(s)
            | TypeExpr::ArrayRef { span: s, .. }
            | TypeExpr::Param(ast::Ident { span: s, .. })
            | TypeExpr::Ref { span: s, .. }
            | TypeExpr::Assoc { span: s, .. }
            | TypeExpr::Infer(s)
            | TypeExpr::Builtin { span: s, .. } => {
                Err(Diagnostic::error(*s, "constants are scalars, enums, structs, tuples or fixed-size arrays")
                    .label("unsupported type")
                    .help("write `const N: u32 = 4;` or `static T: [f32; 3] = [..];`")
                    .into())
            }
        }
    }

    /// A constant of an aggregate type, whose initialiser must be a constant expression: a
    /// `static` of one is an error (statics are arrays in memory).
    fn value_const(&mut self, c: &'m ast::ConstItem, t: Ty) -> CResult<ConstVal> {
        if c.is_static {
            return Err(Diagnostic::error(c.ty.span(), "a `static` is a scalar or an array of scalars")
                .label("unsupported type")
                .help("declare it `const`: a `const` of a struct, tuple or array is a value")
                .into());
        }
        if let Some(bad) = non_constant(&c.value) {
            return Err(Diagnostic::error(bad.span, "expected a constant expression")
                .label("not constant")
                .help("constants are built from literals, other constants, struct, tuple and array expressions, arithmetic and `as` casts")
                .into());
        }
        Ok(ConstVal::Value(t))
    }

    /// Whether `e` names a variant of enum `t` (directly or through another constant).
    fn enum_variant_expr(&mut self, e: &ast::Expr, t: EnumTy, module: ModId) -> bool {
        let res = match &e.kind {
            A::Path(n) => self.m.scopes.value(module, &n.name),
            A::QPath(p) => match self.assoc_path(p, module) {
                Ok(Some((_, _, i))) => Some(Res::Item(i)),
                _ => self.m.scopes.path(self.m, module, p).ok().and_then(|r| r.0).or_else(|| self.self_variant(p)),
            },
            A::Block(b) if b.stmts.is_empty() => return b.tail.as_ref().is_some_and(|x| self.enum_variant_expr(x, t, module)),
            _ => None,
        };
        match res {
            Some(Res::Variant(i, _)) => self.enum_ty(i).is_ok_and(|x| x == t),
            Some(Res::Item(i)) => matches!(self.const_value(i, e.span), Ok(ConstVal::Enum(x, _)) if x == t),
            _ => false,
        }
    }

    /// `Self::Variant` in an `impl` block of an enum.
    pub(super) fn self_variant(&self, p: &[ast::Ident]) -> Option<Res> {
        let [first, v] = p else { return None };
        if first.name != "Self" {
            return None;
        }
        let Some(Ty::Enum(t)) = self.self_ty else { return None };
        let (&i, _) = self.enum_ids.iter().find(|(_, e)| e.id == t.id)?;
        let Item::Enum(e) = &self.m.items[i] else { return None };
        e.variants.iter().position(|x| x.name.name == v.name).map(|k| Res::Variant(i, k))
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
                        let what = p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
                        match self.assoc_path(p, module)? {
                            Some((_, _, i)) => (Some(Res::Item(i)), what),
                            None => match self.self_variant(p) {
                                Some(r) => (Some(r), what),
                                None => (self.m.scopes.path(self.m, module, p)?.0, what),
                            },
                        }
                    }
                    _ => (None, String::new()),
                };
                // `Self::N`, `Plane::DIM`: a constant of a trait the type implements.
                if res.is_none()
                    && let A::QPath(p) = &e.kind
                    && p.len() == 2
                {
                    let t = if p[0].name == "Self" { self.self_ty } else { self.named_ty(&p[..1], p[0].span, module).ok() };
                    if let Some(t) = t {
                        return self.trait_const_named(t, &p[1].name, e.span, check_ty);
                    }
                }
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
                    ConstVal::Scalar(v) | ConstVal::Enum(_, v) => check_ty(v),
                    ConstVal::Array(_) => {
                        Err(Diagnostic::error(e.span, format!("`{what}` is an array, expected a scalar")).label("array").into())
                    }
                    ConstVal::Value(_) => {
                        Err(Diagnostic::error(e.span, format!("`{what}` is not a scalar")).label("a struct, tuple or array").into())
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
            // `cube(2)`: a `const fn` evaluated.
            A::Call { qualifier, func, generics, args, qself: None, .. } if generics.is_empty() => {
                let mut path = qualifier.clone();
                path.push(func.clone());
                let v = self.eval_const_call(&path, args, module, e.span)?;
                check_ty(v)
            }
            // `<Plane as HasDim>::DIM`, `Tile::<4>::LEN`.
            A::AssocPath { ty, name, .. } => {
                let t = self.ty_of(ty, module)?;
                if let Some(ti) = self.type_item(t)
                    && let Some(i) = self.assoc_item(ti, &name.name)?
                    && self.const_item(i).is_some()
                {
                    return match self.const_value(i, e.span)? {
                        ConstVal::Scalar(v) | ConstVal::Enum(_, v) => check_ty(v),
                        _ => Err(not_const().into()),
                    };
                }
                self.trait_const_named(t, &name.name, e.span, check_ty)
            }
            // `T::DIM`, `Self::N`: a constant of a trait for a type known here.
            A::ParamConst { param, name } => {
                let mut t = self.type_scope.iter().find(|(n, _)| *n == param.name).map(|(_, t)| *t);
                if t.is_none() && param.name == "Self" {
                    t = self.self_ty;
                }
                let Some(t) = t.filter(|t| !matches!(t, Ty::Param(_))) else {
                    return Err(not_const().label(format!("`{}` has no value in the definition", param.name)).into());
                };
                self.trait_const_named(t, &name.name, e.span, check_ty)
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

/// The first part of `e` that is not a constant expression: what a `const` of a struct, tuple
/// or array may be built from is literals, paths (constants, variants), operators, casts,
/// blocks of one expression, and struct, tuple and array expressions.
pub(super) fn non_constant(e: &ast::Expr) -> Option<&ast::Expr> {
    match &e.kind {
        A::Lit(_) | A::Path(_) | A::QPath(_) | A::Unit | A::ParamConst { .. } | A::AssocPath { .. } => None,
        A::Call { args, .. } => args.iter().find_map(non_constant),
        A::Unary(_, x) | A::Cast(x, _) => non_constant(x),
        A::Binary(_, a, b) | A::Logic(_, a, b) => non_constant(a).or_else(|| non_constant(b)),
        A::Tuple(xs) | A::ArrayLit(xs) => xs.iter().find_map(non_constant),
        A::ArrayRepeat(x, n) => non_constant(x).or_else(|| non_constant(n)),
        A::StructLit { fields, base, .. } => {
            fields.iter().find_map(|(_, x)| non_constant(x)).or_else(|| base.as_deref().and_then(non_constant))
        }
        A::Field(x, _) => non_constant(x),
        A::Index { array, indices, .. } => non_constant(array).or_else(|| indices.iter().find_map(non_constant)),
        A::Block(b) if b.stmts.is_empty() => b.tail.as_deref().and_then(non_constant),
        _ => Some(e),
    }
}

pub(super) fn mentions(e: &ast::Expr, scope: &[(String, Scalar, Option<ScalarValue>)]) -> bool {
    match &e.kind {
        A::Path(n) => scope.iter().any(|(s, _, _)| *s == n.name),
        A::Unary(_, x) | A::Cast(x, _) => mentions(x, scope),
        A::Binary(_, a, b) | A::Logic(_, a, b) => mentions(a, scope) || mentions(b, scope),
        A::Block(b) => b.tail.as_ref().is_some_and(|t| mentions(t, scope)),
        _ => false,
    }
}

impl<'m> ModuleCx<'m> {
    /// The type of a constant expression that depends on const parameters without values:
    /// the rules of `eval_const`, without evaluating.
    pub(super) fn const_type(
        &mut self,
        e: &ast::Expr,
        expected: Option<Scalar>,
        scope: &[(String, Scalar, Option<ScalarValue>)],
        module: ast::ModId,
    ) -> CResult<Scalar> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.const_type_inner(e, expected, scope, module))
    }

    fn const_type_inner(
        &mut self,
        e: &ast::Expr,
        expected: Option<Scalar>,
        scope: &[(String, Scalar, Option<ScalarValue>)],
        module: ast::ModId,
    ) -> CResult<Scalar> {
        let check = |t: Scalar| -> CResult<Scalar> {
            match expected {
                Some(x) if x != t => Err(Diagnostic::error(e.span, format!("mismatched types: expected `{x}`, found `{t}`"))
                    .label(format!("expected `{x}`"))
                    .into()),
                _ => Ok(t),
            }
        };
        match &e.kind {
            A::Path(n) if scope.iter().any(|(s, _, _)| *s == n.name) => {
                let t = scope.iter().find(|(s, _, _)| *s == n.name).map(|(_, t, _)| *t).unwrap_or(Scalar::Usize);
                check(t)
            }
            A::Unary(_, x) => self.const_type(x, expected, scope, module),
            A::Binary(op, a, b) => {
                if op.is_comparison() {
                    let ta = self.const_type(a, None, scope, module)?;
                    self.const_type(b, Some(ta), scope, module)?;
                    check(Scalar::Bool)
                } else if op.is_shift() {
                    let ta = self.const_type(a, expected, scope, module)?;
                    self.const_type(b, None, scope, module)?;
                    Ok(ta)
                } else {
                    let ta = self.const_type(a, expected, scope, module)?;
                    self.const_type(b, Some(ta), scope, module)
                }
            }
            A::Logic(_, a, b) => {
                self.const_type(a, Some(Scalar::Bool), scope, module)?;
                self.const_type(b, Some(Scalar::Bool), scope, module)?;
                check(Scalar::Bool)
            }
            A::Cast(x, t) => {
                self.const_type(x, None, scope, module)?;
                match t {
                    TypeExpr::Scalar(s, _) => check(*s),
                    _ => Err(Diagnostic::error(t.span(), "casts are to scalar types").label("here").into()),
                }
            }
            A::Block(b) if b.stmts.is_empty() && b.tail.is_some() => match &b.tail {
                Some(t) => self.const_type(t, expected, scope, module),
                None => Err(Diagnostic::error(e.span, "expected a constant expression").label("not constant").into()),
            },
            // Everything else does not depend on the parameters: its value gives its type.
            _ => {
                let v = self.eval_const(e, expected, module)?;
                Ok(v.ty())
            }
        }
    }
}

impl<'m> ModuleCx<'m> {
    /// The scalar constant `name` of a trait that type `t` implements.
    fn trait_const_named(
        &mut self,
        t: Ty,
        name: &str,
        span: Span,
        check_ty: impl Fn(ScalarValue) -> CResult<ScalarValue>,
    ) -> CResult<ScalarValue> {
        for tr in self.traits_with_member(name) {
            if let Some(v) = self.trait_const_value(t, tr, name, span)? {
                return check_ty(v);
            }
        }
        Err(Diagnostic::error(span, format!("no associated constant `{name}` found for this type")).label("not found").into())
    }
}
