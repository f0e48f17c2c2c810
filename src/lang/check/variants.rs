//! Enums with fields (`Option` among them) and tuple and unit structs in a body: the variant or
//! constructor a path names (`Some`, `Shape::Circle`, `Self::Empty`, `Meters`), and the values
//! they build. A value of an enum is its tag and, for the variant it is, that variant's fields;
//! the other variants' parts are zero (`adt.rs`).

use crate::ir::*;
use crate::lang::ast::{self, Item, StructKind};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::CResult;
use super::adt::{AdtId, VariantShape};
use super::body::{CExpr, FnCx};
use super::unify::{ArgH, H, Kind};

/// A variant of an enum with fields: its template and its position (its tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct VariantRef {
    pub(super) adt: AdtId,
    pub(super) index: usize,
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// A new instance of template `adt`, its arguments left to inference: its type and its
    /// arguments.
    pub(super) fn fresh_instance_args(&mut self, adt: AdtId) -> (H, Vec<ArgH>) {
        let params = self.mcx.adts.borrow().def(adt).params.clone();
        let args: Vec<ArgH> = params
            .iter()
            .map(|(_, k)| match k {
                None => ArgH::Ty(self.u.var(Kind::Any)),
                Some(s) => ArgH::Const(*s, None),
            })
            .collect();
        let h = self.u.adt(adt, args.clone(), false);
        (h, args)
    }

    /// A new instance of template `adt`, its arguments left to inference.
    pub(super) fn fresh_instance(&mut self, adt: AdtId) -> H {
        self.fresh_instance_args(adt).0
    }

    /// The type of a struct literal, its const arguments read from its fields where it does not
    /// know them (`Tile { v: [0.0; 4] }` is a `Tile<4>`: its field is `[f32; N]`).
    pub(super) fn settle_const_args(&mut self, h: H, parts: &[(u32, CExpr)]) -> H {
        let Some((adt, mut args)) = self.u.adt_of(h) else { return h };
        if !args.iter().any(|a| matches!(a, ArgH::Const(_, None))) {
            return h;
        }
        let def = self.mcx.adts.borrow().def(adt).clone();
        let super::adt::AdtShape::Struct { fields, .. } = &def.shape else { return h };
        for (k, x) in parts {
            let Some((_, Ty::Agg(id))) = fields.get(*k as usize) else { continue };
            let Some(AggTy::Array { len, .. }) = self.mcx.types.borrow().get(*id).cloned() else { continue };
            if !super::adt::Adts::is_marker(len) {
                continue;
            }
            let Some(super::adt::LenExpr::Param(p)) = def.len_exprs.get((len - super::adt::Adts::len_marker(0)) as usize).cloned() else {
                continue;
            };
            if let (Some(ArgH::Const(s, None)), Some(super::unify::Compound::Array(_, n))) = (args.get(p).copied(), self.u.compound(x.ty))
                && n != UNKNOWN_LEN
            {
                args[p] = ArgH::Const(s, Some(n));
            }
        }
        let nh = self.u.adt(adt, args, false);
        if self.u.unify(nh, h) { nh } else { h }
    }

    /// The variant of an enum with fields a path names: `Some`, `None` (where the crate names
    /// nothing else so), `Shape::Circle`, `Circle` after `use Shape::*`, `Self::Empty`,
    /// `Option::Some`.
    pub(super) fn variant_path(&mut self, path: &[ast::Ident], span: Span) -> CResult<Option<VariantRef>> {
        let m = self.mcx.m;
        let found = |me: &mut Self, e: usize, k: usize| -> CResult<Option<VariantRef>> {
            if !me.mcx.is_template(e) {
                return Ok(None);
            }
            Ok(Some(VariantRef { adt: me.mcx.adt_of_item(e, span)?, index: k }))
        };
        match path {
            [] => Ok(None),
            [name] => match m.scopes.value(self.module, &name.name) {
                Some(Res::Variant(e, k)) => found(self, e, k),
                Some(_) => Ok(None),
                None if self.lookup_local(&name.name).is_some() => Ok(None),
                None => Ok(option_variant(&name.name).map(|k| VariantRef { adt: self.mcx.option_adt(), index: k })),
            },
            [first, v] if first.name == "#option" => {
                Ok(option_variant(&v.name).map(|k| VariantRef { adt: self.mcx.option_adt(), index: k }))
            }
            [first, v] if first.name == "Self" => {
                let Some(Ty::Agg(id)) = self.generics.self_ty.or(self.mcx.self_ty) else { return Ok(None) };
                let Some((adt, _)) = self.mcx.adts.borrow().instance_of(id) else { return Ok(None) };
                let k = self.mcx.adts.borrow().def(adt).variants().iter().position(|x| x.name == v.name);
                Ok(k.map(|index| VariantRef { adt, index }))
            }
            _ => {
                let (ty_path, last) = path.split_at(path.len() - 1);
                if super::templates::is_option_path(ty_path) && m.scopes.type_name(self.module, "Option").is_none() {
                    return match option_variant(&last[0].name) {
                        Some(k) => Ok(Some(VariantRef { adt: self.mcx.option_adt(), index: k })),
                        None => Err(Diagnostic::error(last[0].span, format!("no variant named `{}` in enum `Option`", last[0].name))
                            .label("variant not found")
                            .help("the variants of `Option` are: `None`, `Some`")
                            .into()),
                    };
                }
                match m.scopes.path(m, self.module, path)? {
                    (Some(Res::Variant(e, k)), _) => found(self, e, k),
                    _ => Ok(None),
                }
            }
        }
    }

    /// The fields of variant `v` of an instance with arguments `args`: names and types.
    fn variant_fields(&mut self, v: VariantRef, args: &[ArgH]) -> (VariantShape, Vec<(String, H)>) {
        let def = self.mcx.adts.borrow().def(v.adt).clone();
        let shape = def.variants()[v.index].clone();
        let fields = shape.fields.iter().map(|(n, t)| (n.clone(), self.u.inst_h(*t, args, &def.len_exprs))).collect();
        (shape, fields)
    }

    /// The value of variant `v` with its fields' values (in order), of an instance `ty` with
    /// arguments `args`.
    fn variant_value(&mut self, v: VariantRef, ty: H, args: &[ArgH], values: Vec<CExpr>, span: Span) -> CExpr {
        let def = self.mcx.adts.borrow().def(v.adt).clone();
        let tag = self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::U32, v.index as u64)), Ty::Scalar(Scalar::U32), span);
        let mut parts = vec![(0u32, tag)];
        let mut values = Some(values);
        for (k, w) in def.variants().iter().enumerate() {
            let Some(p) = w.payload else { continue };
            let hs: Vec<H> = w.fields.iter().map(|(_, t)| self.u.inst_h(*t, args, &def.len_exprs)).collect();
            let th = self.u.tuple(hs);
            let x = match (k == v.index, values.take()) {
                (true, Some(vals)) => {
                    let parts: Vec<(u32, CExpr)> = vals.into_iter().enumerate().map(|(i, x)| (i as u32, x)).collect();
                    Expr { kind: ExprKind::Aggregate { parts, base: None }, ty: th, span }
                }
                (_, vals) => {
                    values = vals;
                    Expr { kind: ExprKind::Zeroed, ty: th, span }
                }
            };
            parts.push((p, x));
        }
        Expr { kind: ExprKind::Aggregate { parts, base: None }, ty, span }
    }

    /// A variant named as a value: a unit variant (`None`, `Shape::Empty`), or a tuple
    /// variant's constructor, which must be called.
    pub(super) fn variant_unit(&mut self, v: VariantRef, span: Span) -> CResult<CExpr> {
        let (ty, args) = self.fresh_instance_args(v.adt);
        let (shape, _) = self.variant_fields(v, &args);
        if shape.kind != StructKind::Unit {
            let name = self.mcx.adts.borrow().def(v.adt).name.clone();
            let how = if shape.kind == StructKind::Tuple {
                format!("call it: `{}(..)`", shape.name)
            } else {
                format!("give its fields: `{name}::{} {{ .. }}`", shape.name)
            };
            return Err(Diagnostic::error(span, format!("expected a value, found the variant `{name}::{}` with fields", shape.name))
                .label("has fields")
                .help(how)
                .into());
        }
        Ok(self.variant_value(v, ty, &args, Vec::new(), span))
    }

    /// `Some(x)`, `Shape::Circle(r)`: a tuple variant's constructor called.
    pub(super) fn variant_call(&mut self, v: VariantRef, args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let (ty, targs) = self.fresh_instance_args(v.adt);
        let (shape, fields) = self.variant_fields(v, &targs);
        let name = self.mcx.adts.borrow().def(v.adt).name.clone();
        if shape.kind != StructKind::Tuple {
            return Err(Diagnostic::error(span, format!("`{name}::{}` is not a tuple variant", shape.name))
                .label("not called like this")
                .help(match shape.kind {
                    StructKind::Unit => format!("write `{}` without arguments", shape.name),
                    _ => format!("give its fields: `{name}::{} {{ .. }}`", shape.name),
                })
                .into());
        }
        if fields.len() != args.len() {
            return Err(Diagnostic::error(
                span,
                format!(
                    "this enum variant takes {} argument{} but {} {} supplied",
                    fields.len(),
                    super::plural(fields.len()),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {} argument{}", fields.len(), super::plural(fields.len())))
            .into());
        }
        let mut values = Vec::with_capacity(args.len());
        for (a, (_, want)) in args.iter().zip(&fields) {
            let x = self.expr(a)?;
            self.assign_compatible(*want, &x, span)?;
            values.push(x);
        }
        Ok(self.variant_value(v, ty, &targs, values, span))
    }

    /// `Shape::Rect { w, h }`: a struct variant built.
    pub(super) fn variant_struct_lit(
        &mut self,
        v: VariantRef,
        fields: &[(ast::Ident, ast::Expr)],
        base: Option<&ast::Expr>,
        span: Span,
    ) -> CResult<CExpr> {
        let (ty, targs) = self.fresh_instance_args(v.adt);
        let (shape, want) = self.variant_fields(v, &targs);
        let name = self.mcx.adts.borrow().def(v.adt).name.clone();
        if let Some(b) = base {
            return Err(Diagnostic::error(b.span, "functional update syntax requires a struct").label("an enum variant").into());
        }
        let mut values: Vec<Option<CExpr>> = (0..want.len()).map(|_| None).collect();
        for (n, e) in fields {
            let Some(k) = want.iter().position(|(f, _)| *f == n.name) else {
                return Err(Diagnostic::error(n.span, format!("variant `{name}::{}` has no field named `{}`", shape.name, n.name))
                    .label("unknown field")
                    .into());
            };
            if values[k].is_some() {
                return Err(Diagnostic::error(n.span, format!("field `{}` specified more than once", n.name))
                    .label("used more than once")
                    .into());
            }
            let x = self.expr(e)?;
            self.assign_compatible(want[k].1, &x, n.span)?;
            values[k] = Some(x);
        }
        let missing: Vec<String> = want.iter().zip(&values).filter(|(_, v)| v.is_none()).map(|((n, _), _)| format!("`{n}`")).collect();
        if !missing.is_empty() {
            return Err(Diagnostic::error(
                span,
                format!("missing field{} {} in initializer of `{name}::{}`", super::plural(missing.len()), missing.join(", "), shape.name),
            )
            .label(format!("missing {}", missing.join(", ")))
            .into());
        }
        let values = values.into_iter().flatten().collect();
        Ok(self.variant_value(v, ty, &targs, values, span))
    }

    /// A tuple or unit struct's name used as a value or called: `Relu`, `Meters(2.0)`; `None`
    /// if `i` is not such a struct.
    pub(super) fn struct_constructor(&mut self, i: usize, args: Option<&[ast::Expr]>, span: Span) -> CResult<Option<CExpr>> {
        let m = self.mcx.m;
        let Item::Struct(s) = &m.items[i] else { return Ok(None) };
        let path = vec![ast::Ident { name: s.name.name.clone(), span }];
        let (ty, view) = match self.mcx.template_named(&path, s.module, span)? {
            Some(adt) => {
                let h = self.fresh_instance(adt);
                let v = self.struct_view(h).ok_or_else(|| Diagnostic::error(span, "expected a struct").label("here"))?;
                (h, v)
            }
            None => {
                let id = self.mcx.struct_ty(i, span)?;
                let h = self.u.known(Ty::Agg(id));
                let v = self.struct_view(h).ok_or_else(|| Diagnostic::error(span, "expected a struct").label("here"))?;
                (h, v)
            }
        };
        match (s.kind, args) {
            (StructKind::Unit, None) => Ok(Some(Expr { kind: ExprKind::Aggregate { parts: Vec::new(), base: None }, ty, span })),
            (StructKind::Tuple, Some(args)) => {
                if args.len() != view.fields.len() {
                    return Err(Diagnostic::error(
                        span,
                        format!(
                            "this struct takes {} argument{} but {} {} supplied",
                            view.fields.len(),
                            super::plural(view.fields.len()),
                            args.len(),
                            if args.len() == 1 { "was" } else { "were" }
                        ),
                    )
                    .label(format!("expected {} argument{}", view.fields.len(), super::plural(view.fields.len())))
                    .into());
                }
                let mut parts = Vec::with_capacity(args.len());
                for (k, (a, (_, want))) in args.iter().zip(&view.fields).enumerate() {
                    let x = self.expr(a)?;
                    self.assign_compatible(*want, &x, span)?;
                    parts.push((k as u32, x));
                }
                Ok(Some(Expr { kind: ExprKind::Aggregate { parts, base: None }, ty, span }))
            }
            (StructKind::Tuple, None) => Err(Diagnostic::error(span, format!("`{}` is a tuple struct's constructor", s.name.name))
                .label("call it")
                .help(format!("build one: `{}(..)`", s.name.name))
                .into()),
            (StructKind::Unit, Some(_)) => Err(Diagnostic::error(span, format!("`{}` is a unit struct", s.name.name))
                .label("takes no arguments")
                .help(format!("write `{}`", s.name.name))
                .into()),
            (StructKind::Named, _) => Ok(None),
        }
    }
}

/// The position of `None` and `Some` in `Option`.
pub(super) fn option_variant(name: &str) -> Option<usize> {
    match name {
        "None" => Some(0),
        "Some" => Some(1),
        _ => None,
    }
}
