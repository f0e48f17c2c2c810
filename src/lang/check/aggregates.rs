//! Tuples, fixed-size arrays and structs in a body: building them (`(a, b)`, `[a, b]`,
//! `[x; N]`, `S { x, ..base }`), reading their parts (`t.0`, `p.mass`, `a[i]`), places inside
//! them, taking them apart with `let`, and `for x in array`.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, LetPat, Member, StructKind};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::body::{CBlock, CExpr, FnCx};
use super::generics::array_view;
use super::unify::{Compound, H, Kind};
use super::{CResult, close_matches};

/// An operand that may be a place (a local, a field or an element of one, an array element)
/// or only a value.
pub(super) enum Operand {
    Place(Place<H>, H),
    Value(CExpr),
}

/// What a value's type says about taking it apart.
pub(super) enum Shape {
    Tuple(Vec<H>),
    Array(H, u64),
    Struct(StructView),
}

/// A struct type as far as it is known: its name, how it is written, and its fields' types.
#[derive(Clone, Debug)]
pub(super) struct StructView {
    pub(super) name: String,
    pub(super) kind: StructKind,
    pub(super) fields: Vec<(String, H)>,
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// `(a, b, ..)`
    pub(super) fn tuple_expr(&mut self, elems: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let mut parts = Vec::new();
        let mut hs = Vec::new();
        for (k, e) in elems.iter().enumerate() {
            let x = self.expr(e)?;
            self.value_component(x.ty, x.span, "a tuple element")?;
            hs.push(x.ty);
            parts.push((k as u32, x));
        }
        let ty = self.u.tuple(hs);
        Ok(Expr { kind: ExprKind::Aggregate { parts, base: None }, ty, span })
    }

    /// `[a, b, c]`
    pub(super) fn array_lit(&mut self, elems: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let elem = self.u.var(Kind::Any);
        let mut parts = Vec::new();
        for (k, e) in elems.iter().enumerate() {
            let x = self.expr(e)?;
            self.value_component(x.ty, x.span, "an array element")?;
            self.unify_or(x.span, elem, x.ty, " (the elements of an array have one type)")?;
            parts.push((k as u32, x));
        }
        let ty = self.u.array(elem, elems.len() as u64);
        self.check_value_size(ty, span)?;
        Ok(Expr { kind: ExprKind::Aggregate { parts, base: None }, ty, span })
    }

    /// `[x; n]`
    pub(super) fn array_repeat(&mut self, x: &ast::Expr, n: &ast::Expr, span: Span) -> CResult<CExpr> {
        let v = self.expr(x)?;
        self.value_component(v.ty, v.span, "an array element")?;
        let len = match self.eval_const_here(n, Some(Scalar::Usize))? {
            Some(l) => u64::try_from(l.as_i128().unwrap_or(0)).unwrap_or(0),
            None => UNKNOWN_LEN,
        };
        let ty = self.u.array(v.ty, len);
        self.check_value_size(ty, span)?;
        Ok(Expr { kind: ExprKind::Repeat(Box::new(v)), ty, span })
    }

    /// A type a tuple or array can hold, as far as it is known here.
    fn value_component(&mut self, h: H, span: Span, what: &str) -> CResult<()> {
        match self.u.ty(h) {
            Some(t) => self.mcx.component_ty(t, span, what),
            None => Ok(()),
        }
    }

    /// The size limit of values, once the type is known.
    fn check_value_size(&mut self, h: H, span: Span) -> CResult<()> {
        match self.u.ty(h) {
            Some(t) => self.mcx.check_size(t, span),
            None => Ok(()),
        }
    }

    /// `Path { field: value, field, ..base }` (a struct, or a struct variant of an enum)
    pub(super) fn struct_lit(
        &mut self,
        path: &[ast::Ident],
        fields: &[(ast::Ident, ast::Expr)],
        base: Option<&ast::Expr>,
        span: Span,
    ) -> CResult<CExpr> {
        if let Some(v) = self.variant_path(path, span)? {
            return self.variant_struct_lit(v, fields, base, span);
        }
        let (ty, def) = self.struct_named(path, span)?;
        let mut parts = Vec::new();
        let mut given: Vec<Option<Span>> = vec![None; def.fields.len()];
        for (name, value) in fields {
            let Some(k) = def.fields.iter().position(|(n, _)| *n == name.name) else {
                return Err(self.no_field(&def, &name.name, name.span));
            };
            if let Some(first) = given[k] {
                return Err(Diagnostic::error(name.span, format!("field `{}` specified more than once", name.name))
                    .label("used more than once")
                    .secondary(first, "first use of this field")
                    .into());
            }
            given[k] = Some(name.span);
            let x = self.expr(value)?;
            let want = def.fields[k].1;
            self.assign_compatible(want, &x, name.span)?;
            parts.push((k as u32, x));
        }
        let base = match base {
            Some(b) => {
                let x = self.expr(b)?;
                self.unify_or(x.span, ty, x.ty, " (the base of a struct update has the struct's type)")?;
                Some(Box::new(x))
            }
            None => {
                let missing: Vec<&str> = def.fields.iter().zip(&given).filter(|(_, g)| g.is_none()).map(|((n, _), _)| n.as_str()).collect();
                if !missing.is_empty() {
                    let list = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
                    return Err(Diagnostic::error(
                        span,
                        format!("missing field{} {list} in initializer of `{}`", super::plural(missing.len()), def.name),
                    )
                    .label(format!("missing {list}"))
                    .help("give every field a value, or take the others from another value: `..base`")
                    .into());
                }
                None
            }
        };
        let ty = self.settle_const_args(ty, &parts);
        Ok(Expr { kind: ExprKind::Aggregate { parts, base }, ty, span })
    }

    /// The struct a path names (`Particle`, `common::Particle`, `Self`, `Vec2` with its
    /// arguments left to inference): its type and fields.
    pub(super) fn struct_named(&mut self, path: &[ast::Ident], span: Span) -> CResult<(H, StructView)> {
        let h = match self.mcx.template_named(path, self.module, span)? {
            Some(adt) => self.fresh_instance(adt),
            None => {
                let t = self.mcx.named_ty_in(path, span, self.module, &self.generics)?;
                self.u.known(t)
            }
        };
        match self.struct_view(h) {
            Some(v) => Ok((h, v)),
            None => {
                let name = self.u.describe(h);
                Err(Diagnostic::error(span, format!("expected a struct, found `{name}`")).label("not a struct").into())
            }
        }
    }

    /// The fields of a struct type (a plain struct, or an instance of a generic one, its
    /// arguments known or being inferred); `None` for anything else.
    pub(super) fn struct_view(&mut self, h: H) -> Option<StructView> {
        if let Some((adt, args)) = self.u.adt_of(h) {
            let def = self.mcx.adts.borrow().def(adt).clone();
            let super::adt::AdtShape::Struct { kind, fields } = &def.shape else { return None };
            let mut out = Vec::with_capacity(fields.len());
            for (n, t) in fields {
                let fh = self.u.inst_h(*t, &args, &def.len_exprs);
                out.push((n.clone(), fh));
            }
            let name = self.u.describe(h);
            return Some(StructView { name, kind: *kind, fields: out });
        }
        let Some(Ty::Agg(id)) = self.u.ty(h) else { return None };
        let def = self.mcx.types.borrow().strukt(id).cloned()?;
        let kind = match self.mcx.item_of_agg(id).map(|i| &self.mcx.m.items[i]) {
            Some(ast::Item::Struct(s)) => s.kind,
            _ => StructKind::Named,
        };
        if self.mcx.closure_of(id).is_some() {
            return None;
        }
        let fields = def.fields.iter().map(|(n, t)| (n.clone(), self.u.known(*t))).collect();
        Some(StructView { name: def.name, kind, fields })
    }

    pub(super) fn no_field(&self, def: &StructView, name: &str, span: Span) -> Box<Diagnostic> {
        let names: Vec<&str> = def.fields.iter().map(|(n, _)| n.as_str()).collect();
        let mut d = Diagnostic::error(span, format!("struct `{}` has no field named `{name}`", def.name)).label("unknown field");
        d = match close_matches(name, names.iter().copied()).first() {
            Some(c) => d.help(format!("a field with a similar name exists: `{c}`")),
            None if names.is_empty() => d.note(format!("`{}` has no fields", def.name)),
            None => d.note(format!("available fields are: {}", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "))),
        };
        d.into()
    }

    /// What a value of type `h` is made of; an error where it must be known and is not a
    /// tuple, array or struct.
    pub(super) fn shape(&mut self, h: H) -> Option<Shape> {
        match self.u.compound(h) {
            Some(Compound::Tuple(hs)) => return Some(Shape::Tuple(hs)),
            Some(Compound::Array(e, n)) => return Some(Shape::Array(e, n)),
            _ => {}
        }
        self.struct_view(h).map(Shape::Struct)
    }

    /// The component `member` names in a value of type `h`: its index and type.
    fn member(&mut self, h: H, member: &Member, base_span: Span) -> CResult<(u32, H)> {
        match (self.shape(h), member) {
            (Some(Shape::Tuple(hs)), Member::Index(k, span)) => match hs.get(*k as usize) {
                Some(t) => Ok((*k, *t)),
                None => {
                    let d = self.u.describe(h);
                    Err(Diagnostic::error(*span, format!("no field `{k}` on type `{d}`"))
                        .label("unknown field")
                        .note(format!("the tuple has {} element{}", hs.len(), super::plural(hs.len())))
                        .into())
                }
            },
            (Some(Shape::Struct(def)), member @ (Member::Named(_) | Member::Index(..)))
                if matches!(member, Member::Named(_)) || def.kind == StructKind::Tuple =>
            {
                let (name, at) = match member {
                    Member::Named(n) => (n.name.clone(), n.span),
                    Member::Index(k, s) => (k.to_string(), *s),
                };
                match def.fields.iter().position(|(n, _)| *n == name) {
                    Some(k) => Ok((k as u32, def.fields[k].1)),
                    None => Err(self.no_field(&def, &name, at)),
                }
            }
            (None, _) if self.u.ty(h).is_none() => Err(Diagnostic::error(base_span, "type annotations needed")
                .label("the type of this value must be known to access its fields")
                .help("annotate the variable: `let p: Particle = ..`")
                .into()),
            _ => {
                let d = self.u.describe(h);
                let (what, help) = match member {
                    Member::Named(n) => {
                        (format!("no field `{}` on type `{d}`", n.name), "fields are named on structs; tuples number theirs: `t.0`")
                    }
                    Member::Index(k, _) => {
                        (format!("no field `{k}` on type `{d}`"), "tuples number their elements (`t.0`); structs name their fields")
                    }
                };
                let mut diag = Diagnostic::error(member.span(), what).label("unknown field").help(help);
                if matches!(self.shape(h), Some(Shape::Array(..))) {
                    diag = diag.help("index a fixed-size array: `a[i]`");
                }
                Err(diag.into())
            }
        }
    }

    /// An operand: a place where the expression names one, else a value.
    pub(super) fn operand(&mut self, e: &ast::Expr) -> CResult<Operand> {
        match &e.kind {
            A::Path(n) => match self.lookup_local(&n.name) {
                Some(l) if self.locals[l].alias.is_some() => {
                    let p = self.locals[l].alias.clone().unwrap_or(Place::Local(l));
                    self.use_local(super::refs::place_root(&p));
                    Ok(Operand::Place(p, self.locals[l].ty))
                }
                Some(l) => {
                    self.use_local(l);
                    Ok(Operand::Place(Place::Local(l), self.locals[l].ty))
                }
                None => Ok(Operand::Value(self.expr(e)?)),
            },
            A::Field(base, member) => match self.operand(base)? {
                Operand::Place(p, h) => {
                    let (k, t) = self.member(h, member, base.span)?;
                    Ok(Operand::Place(Place::Field(Box::new(p), k), t))
                }
                Operand::Value(v) => {
                    let (k, t) = self.member(v.ty, member, base.span)?;
                    Ok(Operand::Value(Expr { kind: ExprKind::Field(Box::new(v), k), ty: t, span: e.span }))
                }
            },
            A::Index { array, indices, multi } => {
                let a = self.operand(array)?;
                let ah = match &a {
                    Operand::Place(_, h) => *h,
                    Operand::Value(v) => v.ty,
                };
                if let Some(Shape::Array(elem, len)) = self.shape(ah) {
                    let i = self.fixed_index(indices, *multi, len, e.span)?;
                    return Ok(match a {
                        Operand::Place(p, _) => Operand::Place(Place::Elem(Box::new(p), Box::new(i)), elem),
                        Operand::Value(v) => {
                            Operand::Value(Expr { kind: ExprKind::Elem(Box::new(v), Box::new(i)), ty: elem, span: e.span })
                        }
                    });
                }
                if self.is_aggregate(ah) && !multi && indices.len() == 1 {
                    // `x[i]` of a struct: its `impl Index`.
                    return Ok(Operand::Value(self.index_op(a, &indices[0], e.span)?));
                }
                let a = self.operand_value(a, array.span);
                let (a, elem, idx) = self.index(a, array, indices, *multi, e.span)?;
                let t = self.u.known(elem);
                Ok(Operand::Place(Place::Index(Box::new(a), idx), t))
            }
            A::Deref(x) if matches!(x.kind, A::Path(_) | A::Field(..) | A::Index { .. } | A::Deref(_)) => self.deref_operand(x, e.span),
            _ => Ok(Operand::Value(self.expr(e)?)),
        }
    }

    /// The value of an operand.
    pub(super) fn operand_value(&mut self, o: Operand, span: Span) -> CExpr {
        match o {
            Operand::Value(v) => v,
            Operand::Place(p, ty) => Expr { kind: self.place_value(p), ty, span },
        }
    }

    /// Reading a place.
    fn place_value(&mut self, p: Place<H>) -> ExprKind<H> {
        match p {
            Place::Local(l) => ExprKind::Local(l),
            Place::Index(a, idx) => ExprKind::Index(a, idx),
            Place::Field(inner, k) => {
                let (ty, span) = self.place_ty_span(&inner);
                let base = Expr { kind: self.place_value(*inner), ty, span };
                ExprKind::Field(Box::new(base), k)
            }
            Place::Elem(inner, i) => {
                let (ty, span) = self.place_ty_span(&inner);
                let base = Expr { kind: self.place_value(*inner), ty, span };
                ExprKind::Elem(Box::new(base), i)
            }
        }
    }

    /// The type of a place (its span is the span of its index, or of the local's declaration:
    /// a place read for its parts is never reported).
    pub(super) fn place_ty_of(&mut self, p: &Place<H>) -> (H, Span) {
        self.place_ty_span(p)
    }

    fn place_ty_span(&mut self, p: &Place<H>) -> (H, Span) {
        match p {
            Place::Local(l) => (self.locals[*l].ty, self.locals[*l].span),
            Place::Index(a, _) => {
                let t = self.u.ty(a.ty).and_then(array_view).map(|v| v.elem).unwrap_or(Ty::Unit);
                (self.u.known(t), a.span)
            }
            Place::Field(inner, k) => {
                let (t, span) = self.place_ty_span(inner);
                let c = self.component(t, *k);
                (c, span)
            }
            Place::Elem(inner, i) => {
                let (t, _) = self.place_ty_span(inner);
                let e = match self.shape(t) {
                    Some(Shape::Array(e, _)) => e,
                    _ => self.u.var(Kind::Any),
                };
                (e, i.span)
            }
        }
    }

    /// The type of component `k` of a tuple or struct type.
    fn component(&mut self, h: H, k: u32) -> H {
        match self.shape(h) {
            Some(Shape::Tuple(hs)) => hs.get(k as usize).copied().unwrap_or_else(|| self.u.var(Kind::Any)),
            Some(Shape::Struct(def)) => match def.fields.get(k as usize) {
                Some((_, t)) => *t,
                None => self.u.var(Kind::Any),
            },
            _ => self.u.var(Kind::Any),
        }
    }

    /// The index of a fixed-size array: one `usize`, and a constant one must be in bounds (as
    /// rustc's deny-by-default `unconditional_panic` lint has it).
    fn fixed_index(&mut self, indices: &[ast::Expr], multi: bool, len: u64, span: Span) -> CResult<CExpr> {
        if multi || indices.len() != 1 {
            return Err(Diagnostic::error(span, "a fixed-size array is indexed with one index")
                .label("write `a[i]`")
                .help("index an array of arrays twice: `m[i][j]`")
                .into());
        }
        let x = self.expr(&indices[0])?;
        let u = self.u.known(Ty::Scalar(Scalar::Usize));
        if !self.u.unify(u, x.ty) {
            let d = self.u.describe(x.ty);
            return Err(Diagnostic::error(x.span, format!("array indices are `usize`, found `{d}`"))
                .label("expected `usize`")
                .help("convert with `as usize`")
                .into());
        }
        let constant = match &x.kind {
            ExprKind::PendingLit(PendingLit { int: Some(v), neg: false, .. }) => Some(*v),
            ExprKind::Lit(v @ ScalarValue::Int(..)) => v.as_i128().and_then(|v| u128::try_from(v).ok()),
            _ => None,
        };
        if let Some(i) = constant
            && len != UNKNOWN_LEN
            && i >= len as u128
        {
            return Err(Diagnostic::error(x.span, "this operation will panic at runtime")
                .label(format!("index out of bounds: the length is {len} but the index is {i}"))
                .into());
        }
        Ok(x)
    }

    /// `x.name` and `x.0`
    pub(super) fn field_expr(&mut self, e: &ast::Expr) -> CResult<CExpr> {
        let o = self.operand(e)?;
        Ok(self.operand_value(o, e.span))
    }

    /// `let pattern[: T] = init;`: the value is kept in a hidden local and each name of the
    /// pattern bound to its part.
    pub(super) fn destructure(
        &mut self,
        pat: &LetPat,
        ty: Option<&ast::TypeExpr>,
        init: &ast::Expr,
        out: &mut Vec<Stmt<H>>,
    ) -> CResult<()> {
        let x = self.expr(init)?;
        let h = match ty {
            Some(t) => {
                let t = self.ty_of(t)?;
                let a = self.u.known(t);
                self.assign_compatible(a, &x, init.span)?;
                a
            }
            None => x.ty,
        };
        let span = x.span;
        let tmp = self.declare(&ast::Ident { name: "_".into(), span }, h, false, false);
        out.push(Stmt::Let(tmp, Some(x)));
        let whole = Expr { kind: ExprKind::Local(tmp), ty: h, span };
        self.bind_pattern(pat, whole, out)
    }

    /// Binds the names of `pat` to the parts of `value` (an expression that only reads locals,
    /// so it may be repeated).
    fn bind_pattern(&mut self, pat: &LetPat, value: CExpr, out: &mut Vec<Stmt<H>>) -> CResult<()> {
        match pat {
            LetPat::Bind { name, mutable } => {
                let h = value.ty;
                let id = self.declare(name, h, *mutable, false);
                out.push(Stmt::Let(id, Some(value)));
                Ok(())
            }
            LetPat::Wild(_) => Ok(()),
            LetPat::Tuple { elems, rest, span } => {
                let Some(Shape::Tuple(hs)) = self.shape(value.ty) else {
                    let d = self.u.describe(value.ty);
                    return Err(Diagnostic::error(*span, format!("mismatched types: expected `{d}`, found a tuple"))
                        .label(format!("this pattern takes apart a tuple, but the value is `{d}`"))
                        .into());
                };
                let n = hs.len();
                let ok = match rest {
                    Some(_) => elems.len() <= n,
                    None => elems.len() == n,
                };
                if !ok {
                    return Err(Diagnostic::error(
                        *span,
                        format!(
                            "mismatched types: expected a tuple with {n} element{}, found one with {} element{}",
                            super::plural(n),
                            elems.len(),
                            super::plural(elems.len())
                        ),
                    )
                    .label(format!("expected {n} element{}", super::plural(n)))
                    .into());
                }
                for (j, p) in elems.iter().enumerate() {
                    let k = match rest {
                        Some(r) if j >= *r => n - (elems.len() - j),
                        _ => j,
                    };
                    let part = Expr { kind: ExprKind::Field(Box::new(value.clone()), k as u32), ty: hs[k], span: p.span() };
                    self.bind_pattern(p, part, out)?;
                }
                Ok(())
            }
            LetPat::TupleStruct { path, elems, rest, span } => {
                let (want, def) = self.struct_named(path, *span)?;
                if !self.u.unify(want, value.ty) {
                    let d = self.u.describe(value.ty);
                    return Err(Diagnostic::error(*span, format!("mismatched types: expected `{d}`, found `{}`", def.name))
                        .label(format!("this pattern takes apart a `{}`", def.name))
                        .into());
                }
                let n = def.fields.len();
                if elems.len() > n || (rest.is_none() && elems.len() != n) {
                    return Err(Diagnostic::error(*span, format!("this pattern has {} fields, but `{}` has {n}", elems.len(), def.name))
                        .label(format!("expected {n} field{}", super::plural(n)))
                        .into());
                }
                for (j, p) in elems.iter().enumerate() {
                    let k = match rest {
                        Some(r) if j >= *r => n - (elems.len() - j),
                        _ => j,
                    };
                    let part = Expr { kind: ExprKind::Field(Box::new(value.clone()), k as u32), ty: def.fields[k].1, span: p.span() };
                    self.bind_pattern(p, part, out)?;
                }
                Ok(())
            }
            LetPat::Struct { path, fields, rest, span } => {
                let (want, def) = self.struct_named(path, *span)?;
                if !self.u.unify(want, value.ty) {
                    let d = self.u.describe(value.ty);
                    return Err(Diagnostic::error(*span, format!("mismatched types: expected `{d}`, found `{}`", def.name))
                        .label(format!("this pattern takes apart a `{}`", def.name))
                        .into());
                }
                let mut seen = vec![false; def.fields.len()];
                for (name, p) in fields {
                    let Some(k) = def.fields.iter().position(|(n, _)| *n == name.name) else {
                        return Err(self.no_field(&def, &name.name, name.span));
                    };
                    if seen[k] {
                        return Err(Diagnostic::error(name.span, format!("field `{}` bound multiple times in the pattern", name.name))
                            .label("multiple uses of the field")
                            .into());
                    }
                    seen[k] = true;
                    let t = def.fields[k].1;
                    let part = Expr { kind: ExprKind::Field(Box::new(value.clone()), k as u32), ty: t, span: p.span() };
                    self.bind_pattern(p, part, out)?;
                }
                if !rest && seen.contains(&false) {
                    let missing: Vec<String> =
                        def.fields.iter().zip(&seen).filter(|(_, s)| !**s).map(|((n, _), _)| format!("`{n}`")).collect();
                    return Err(Diagnostic::error(
                        *span,
                        format!("pattern does not mention field{} {}", super::plural(missing.len()), missing.join(", ")),
                    )
                    .label(format!("missing {}", missing.join(", ")))
                    .help("name every field, or ignore the rest with `..`")
                    .into());
                }
                Ok(())
            }
        }
    }

    /// `for pat in array { body }`: a loop over the indices of a fixed-size array (kept in a
    /// hidden local), each element bound to the pattern.
    pub(super) fn for_each(
        &mut self,
        label: &Option<ast::Ident>,
        pat: &LetPat,
        array: &ast::Expr,
        body: &ast::Block,
        span: Span,
    ) -> CResult<CExpr> {
        if let Some(x) = self.iter_loop(label, pat, array, body, span)? {
            return Ok(x);
        }
        let a = self.expr(array)?;
        let Some(Shape::Array(elem, len)) = self.shape(a.ty) else {
            let d = self.u.describe(a.ty);
            let mut diag = Diagnostic::error(array.span, format!("`{d}` is not a fixed-size array or a range"))
                .label("cannot iterate over this")
                .help("`for` loops iterate over ranges (`for i in 0..n`) and fixed-size arrays (`for x in [1, 2, 3]`)");
            if self.u.ty(a.ty).and_then(array_view).is_some() {
                diag = diag.help("iterate over the indices of an array reference: `for i in 0..a.len()`");
            }
            return Err(diag.into());
        };
        let usize_ty = Ty::Scalar(Scalar::Usize);
        let mark = self.scope.len();
        let tmp = self.declare(&ast::Ident { name: "_".into(), span: array.span }, a.ty, false, false);
        let idx_ty = self.u.known(usize_ty);
        let idx = self.declare(&ast::Ident { name: "_".into(), span: array.span }, idx_ty, false, false);
        let mut head = Vec::new();
        let whole = Expr { kind: ExprKind::Local(tmp), ty: a.ty, span: array.span };
        let i = Expr { kind: ExprKind::Local(idx), ty: idx_ty, span: array.span };
        let item = Expr { kind: ExprKind::Elem(Box::new(whole), Box::new(i)), ty: elem, span: pat.span() };
        let r = match pat {
            // A plain binding reads the element directly; a pattern takes it apart.
            LetPat::Bind { .. } | LetPat::Wild(_) => self.bind_pattern(pat, item, &mut head),
            _ => {
                let h = item.ty;
                let t = self.declare(&ast::Ident { name: "_".into(), span: pat.span() }, h, false, false);
                head.push(Stmt::Let(t, Some(item)));
                self.bind_pattern(pat, Expr { kind: ExprKind::Local(t), ty: h, span: pat.span() }, &mut head)
            }
        };
        let loop_id = self.push_loop(label, false);
        let b = r.and_then(|_| self.loop_body(body));
        self.loops.pop();
        self.scope.truncate(mark);
        let mut b: CBlock = b?;
        head.append(&mut b.stmts);
        b.stmts = head;
        let n = if len == UNKNOWN_LEN { 0 } else { len };
        let lit = |fx: &mut Self, v: u64| fx.mk(ExprKind::Lit(ScalarValue::Int(Scalar::Usize, v)), usize_ty, span);
        let (start, end) = (lit(self, 0), lit(self, n));
        let for_loop = self.mk(
            ExprKind::For { id: loop_id, var: idx, start: Box::new(start), end: Box::new(end), inclusive: false, step: None, body: b },
            Ty::Unit,
            span,
        );
        let block = Block { stmts: vec![Stmt::Let(tmp, Some(a)), Stmt::Expr(for_loop)], tail: None };
        Ok(self.mk(ExprKind::Block(block), Ty::Unit, span))
    }
}
