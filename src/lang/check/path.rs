//! Names in expressions: locals, factory captures, constants, statics and enum variants (plain
//! names and paths through modules), globals, and the error for a name that is none of them.

use crate::ir::*;
use crate::lang::ast::{self, Item};
use crate::lang::builtins;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use crate::lang::names::Res;

use super::body::{CExpr, FnCx};
use super::consts::ConstVal;
use super::factory::ScopeItem;
use super::fold::int_value;
use super::{CResult, close_matches};

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn path(&mut self, n: &ast::Ident) -> CResult<CExpr> {
        let span = n.span;
        if let Some(l) = self.lookup_local(&n.name) {
            let ty = self.locals[l].ty;
            if let Some(p) = self.locals[l].alias.clone() {
                self.use_local(super::refs::place_root(&p));
                return Ok(self.operand_value(super::aggregates::Operand::Place(p, ty), span));
            }
            self.use_local(l);
            return Ok(Expr { kind: ExprKind::Local(l), ty, span });
        }
        if let Some(scope) = self.scope_items {
            match scope.get(&n.name) {
                Some(ScopeItem::Capture(id, ty)) => {
                    let (id, ty) = (*id, *ty);
                    return Ok(self.capture_expr(id, ty, span));
                }
                Some(ScopeItem::Closure(_)) => {
                    return Err(Diagnostic::error(span, format!("closure `{}` must be called", n.name))
                        .label("closures are not values in kernels")
                        .help(format!("call it: `{}(..)`", n.name))
                        .into());
                }
                None => {}
            }
        }
        if let Some((s, v)) = self.generics.const_param(&n.name) {
            // At the definition the value is not known; its type is all the body needs.
            let v = v.unwrap_or(if s == Scalar::Bool { ScalarValue::Bool(false) } else { ScalarValue::Int(s, 0) });
            return Ok(self.mk(ExprKind::Lit(v), Ty::Scalar(s), span));
        }
        if self.generics.type_param(&n.name).is_some() {
            return Err(Diagnostic::error(span, format!("`{}` is a type parameter, not a value", n.name))
                .label("a type")
                .help(format!("write a value of this type: `{}::ZERO`, or `x as {}`", n.name, n.name))
                .into());
        }
        if let Some(v) = self.variant_path(std::slice::from_ref(n), span)? {
            return self.variant_unit(v, span);
        }
        if let Some(res) = self.mcx.m.scopes.value(self.module, &n.name) {
            // A bound global of the same name must not be silently shadowed by the item.
            if let (Res::Item(i), Some(_)) = (res, self.mcx.env.global(&n.name))
                && let Item::Const(c) = &self.mcx.m.items[i]
            {
                let kind = if c.is_static { "static" } else { "const" };
                let files = &self.mcx.m.files;
                let at = files.iter().rev().find(|f| f.contains(c.name.span)).map(|f| format!(" at {}", f.location(c.name.span)));
                return Err(Diagnostic::error(
                    span,
                    format!("`{}` is both the `{kind}`{} and a global bound on the module", n.name, at.unwrap_or_default()),
                )
                .label("ambiguous")
                .secondary(c.name.span, format!("`{kind} {}` defined here", n.name))
                .note(self.mcx.env.binder.bound(&n.name))
                .note("an item of the source and a bound global may not share a name: neither hides the other")
                .help(format!("rename the `{kind}` or the global, or {}", self.mcx.env.binder.unbind(&n.name)))
                .into());
            }
            return self.item_value(res, &n.name, span);
        }
        if let Some((i, ty)) = self.mcx.env.global(&n.name) {
            let id = self.mcx.add_capture(CaptureOrigin::Global(n.name.clone()), ty, CaptureSource::Binding(i));
            return Ok(self.capture_expr(id, ty, span));
        }
        if builtins::function(&n.name).is_some() {
            return Err(Diagnostic::error(span, format!("builtin `{}` must be called", n.name))
                .label("not a value")
                .help(format!("write `{}()`", n.name))
                .into());
        }
        Err(self.unresolved(n).into())
    }

    /// A path of two or more segments as a value: an enum variant, or a constant or static of
    /// another module.
    pub(super) fn qpath(&mut self, path: &[ast::Ident], span: Span) -> CResult<CExpr> {
        let text = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        if let Some(v) = self.variant_path(path, span)? {
            return self.variant_unit(v, span);
        }
        if let Some(x) = self.ordering_variant(path, span)? {
            return Ok(x);
        }
        if let Some(x) = self.assoc_const_path(path, span)? {
            return Ok(x);
        }
        if let Some((_, _, i)) = self.mcx.assoc_path(path, self.module)? {
            return self.item_value(Res::Item(i), &text, span);
        }
        if let Some(r) = self.mcx.self_variant(path) {
            return self.item_value(r, &text, span);
        }
        if path.len() >= 2 && path[0].name == "Self" {
            let t = self.mcx.self_ty;
            let d = match t {
                Some(t) => {
                    let name = self.u.ty_name(t);
                    let ti = self.mcx.type_item(t);
                    let names = ti.map(|ti| self.mcx.assoc_names(ti)).unwrap_or_default();
                    let d = Diagnostic::error(span, format!("no associated item named `{}` found for `{name}`", path[1].name))
                        .label("associated item not found");
                    match close_matches(&path[1].name, names.iter().map(String::as_str)).first() {
                        Some(c) => d.help(format!("an item with a similar name exists: `Self::{c}`")),
                        None => d,
                    }
                }
                None => Diagnostic::error(span, "`Self` is only available in `impl` blocks").label("`Self` is only available in impls"),
            };
            return Err(d.into());
        }
        match self.mcx.m.scopes.path(self.mcx.m, self.module, path)? {
            (Some(res), _) => self.item_value(res, &text, span),
            (None, Some(_)) => Err(Diagnostic::error(span, format!("expected a value, found `{text}`"))
                .label("a module or a type, not a value")
                .into()),
            (None, None) => Err(Diagnostic::error(span, format!("cannot find `{text}` in the kernel's modules"))
                .label("not found")
                .help("a path names an item of a module (`common::SCALE`), a variant of an enum (`Mode::Add`), or a numeric constant (`f32::MAX`)")
                .into()),
        }
    }

    /// The value an item or a variant stands for: a constant, a static array or a variant;
    /// a function is not a value.
    fn item_value(&mut self, res: Res, name: &str, span: Span) -> CResult<CExpr> {
        match res {
            Res::Variant(e, _) if self.mcx.is_template(e) => {
                let v = self.variant_path(&[ast::Ident { name: name.rsplit("::").next().unwrap_or(name).to_string(), span }], span)?;
                match v {
                    Some(v) => self.variant_unit(v, span),
                    None => Err(Diagnostic::error(span, format!("cannot find `{name}`")).label("here").into()),
                }
            }
            Res::Variant(e, k) => {
                let t = self.mcx.enum_ty(e)?;
                let d = self.mcx.enums[t.id as usize].variants[k].1;
                Ok(self.mk(ExprKind::Lit(int_value(t.repr, d)), Ty::Enum(t), span))
            }
            Res::Item(i) => match &{ self.mcx.m }.items[i] {
                Item::Const(c) => match self.mcx.const_value(i, span)? {
                    ConstVal::Scalar(v) => Ok(self.mk(ExprKind::Lit(v), Ty::Scalar(v.ty()), span)),
                    ConstVal::Enum(t, v) => Ok(self.mk(ExprKind::Lit(v), Ty::Enum(t), span)),
                    ConstVal::Value(t) => self.inline_const(c, t, span),
                    ConstVal::Array(arr) => {
                        let ty = CaptureTy::Array {
                            ty: ArrayTy { elem: Elem::Scalar(arr.elem), ndim: arr.shape.len() as u8, writable: false },
                            device: false,
                            layout: Layout::C,
                        };
                        let id = self.mcx.add_capture(CaptureOrigin::Static(c.name.name.clone()), ty, CaptureSource::Static(arr));
                        Ok(self.capture_expr(id, ty, span))
                    }
                },
                // A function as a value: the closure that calls it (`apply(double, x)`).
                Item::Fn(f)
                    if !f.is_kernel && !f.is_generic() && f.receiver.is_none() && matches!(f.ret, ast::RetTy::Unit | ast::RetTy::Ty(_)) =>
                {
                    let params: Vec<ast::Param> = (0..f.params.len())
                        .map(|k| ast::Param { name: ast::Ident { name: format!("#fn{k}"), span }, mutable: false, ty: None, span })
                        .collect();
                    let args = params.iter().map(|p| ast::Expr { kind: ast::ExprKind::Path(p.name.clone()), span }).collect();
                    let segs: Vec<&str> = name.split("::").collect();
                    let (qualifier, func) = segs.split_at(segs.len() - 1);
                    let call = ast::Expr {
                        kind: ast::ExprKind::Call {
                            qualifier: qualifier.iter().map(|q| ast::Ident { name: q.to_string(), span }).collect(),
                            qual_args: Vec::new(),
                            qself: None,
                            func: ast::Ident { name: func[0].to_string(), span },
                            generics: Vec::new(),
                            args,
                        },
                        span,
                    };
                    self.closure(true, &params, None, &call, span)
                }
                Item::Fn(f) => Err(Diagnostic::error(span, format!("`{name}` is a function"))
                    .label("functions are not values in kernels")
                    .secondary(f.name.span, "defined here")
                    .help(format!("call it: `{name}(..)`"))
                    .into()),
                Item::Enum(_) => Err(Diagnostic::error(span, format!("expected a value, found enum `{name}`"))
                    .label("an enum type")
                    .help(format!("name a variant: `{name}::Variant`"))
                    .into()),
                Item::Trait(_) => Err(Diagnostic::error(span, format!("expected a value, found trait `{name}`")).label("a trait").into()),
                Item::Struct(s) if s.kind == ast::StructKind::Unit => match self.struct_constructor(i, None, span)? {
                    Some(x) => Ok(x),
                    None => Err(Diagnostic::error(span, format!("expected a value, found struct `{name}`")).label("a struct type").into()),
                },
                Item::Struct(_) => Err(Diagnostic::error(span, format!("expected a value, found struct `{name}`"))
                    .label("a struct type")
                    .help(format!("build one: `{name} {{ field: value, .. }}`"))
                    .into()),
            },
            Res::Module(_) => Err(Diagnostic::error(span, format!("expected a value, found module `{name}`")).label("a module").into()),
        }
    }

    pub(super) fn unresolved(&self, n: &ast::Ident) -> Diagnostic {
        // Another binding of the module could supply the name.
        super::touched_globals();
        let globals: Vec<&str> = self.mcx.env.globals.iter().map(|(g, _)| g.as_str()).collect();
        let mut d = Diagnostic::error(n.span, format!("cannot find value `{}` in this scope", n.name)).label("not found");
        d = if globals.is_empty() {
            d.note("no globals are bound on this module")
        } else {
            d.note(format!("globals bound on this module: {}", globals.join(", ")))
        };
        let mut candidates: Vec<&str> = self.scope.iter().map(|(s, _)| s.as_str()).collect();
        candidates.extend(globals.iter().copied());
        if let Some(s) = self.scope_items {
            candidates.extend(s.names.iter().map(|(n, _, _)| n.as_str()));
        }
        candidates.extend(self.mcx.m.scopes.names(self.module));
        let close = close_matches(&n.name, candidates.into_iter());
        if let Some(c) = close.first() {
            d = d.help(format!("a name with a similar spelling exists: `{c}`"));
        } else {
            d = d.help(format!(
                "bind it on the module with `with_global(\"{}\", value)`, or `--define {}=VALUE` on the command line",
                n.name, n.name
            ));
        }
        d
    }

    /// A constant of a tuple, struct or array type: its initialiser, checked with the declared
    /// type in the constant's module (where no local is in scope), at this use.
    fn inline_const(&mut self, c: &'m ast::ConstItem, t: Ty, span: Span) -> CResult<CExpr> {
        let self_ty = match &c.owner {
            Some(o) => Some(self.mcx.owner_ty(o, c.module)?),
            None => None,
        };
        let outer_self = self.mcx.self_ty;
        let saved_self = std::mem::replace(&mut self.mcx.self_ty, self_ty.or(outer_self));
        let saved_module = std::mem::replace(&mut self.module, c.module);
        let saved_scope = std::mem::take(&mut self.scope);
        let r = self.expr(&c.value);
        self.scope = saved_scope;
        self.module = saved_module;
        self.mcx.self_ty = saved_self;
        let mut x = r?;
        let want = self.u.known(t);
        self.assign_compatible(want, &x, c.ty.span())?;
        // The value's span is where the constant is used, for messages about the use.
        x.span = span;
        Ok(x)
    }

    fn capture_expr(&mut self, id: CaptureId, ty: CaptureTy, span: Span) -> CExpr {
        if !self.captures.contains(&id) {
            self.captures.push(id);
        }
        let t = match ty {
            CaptureTy::Scalar(s) => Ty::Scalar(s),
            CaptureTy::Array { ty, .. } => Ty::Array(ty),
        };
        self.mk(ExprKind::Capture(id), t, span)
    }

    /// `Ordering::Less` and friends (`std::cmp::Ordering`), where the crate names no
    /// `Ordering` of its own.
    fn ordering_variant(&mut self, path: &[ast::Ident], span: Span) -> CResult<Option<CExpr>> {
        let Some((last, ty_path)) = path.split_last() else { return Ok(None) };
        if !super::templates::is_ordering_path(ty_path)
            || self.mcx.m.scopes.type_name(self.module, "Ordering").is_some() && ty_path.len() == 1
        {
            return Ok(None);
        }
        let t = self.mcx.ordering_ty()?;
        let v = match last.name.as_str() {
            "Less" => -1,
            "Equal" => 0,
            "Greater" => 1,
            other => {
                return Err(Diagnostic::error(last.span, format!("no variant named `{other}` in enum `Ordering`"))
                    .label("variant not found")
                    .help("the variants of `Ordering` are: `Less`, `Equal`, `Greater`")
                    .into());
            }
        };
        Ok(Some(self.mk(ExprKind::Lit(int_value(t.repr, v)), Ty::Enum(t), span)))
    }

    /// `T::N`, `Self::N`, `Shape::N` where `N` is a constant of a trait the type implements (or
    /// of its bounds, at a definition); `None` if the path is not such.
    fn assoc_const_path(&mut self, path: &[ast::Ident], span: Span) -> CResult<Option<CExpr>> {
        let Some((last, ty_path)) = path.split_last() else { return Ok(None) };
        if ty_path.is_empty() {
            return Ok(None);
        }
        let Some(h) = self.qualifier_type(ty_path, &[], span)? else { return Ok(None) };
        let Some(t) = self.u.ty(h) else { return Ok(None) };
        self.trait_const(t, last, span)
    }

    /// `Tile::<4>::LEN`, `<T as Dim>::N`: an associated constant (inherent, or of a trait) or a
    /// unit variant of a type written with its arguments.
    pub(super) fn assoc_path_value(
        &mut self,
        ty: &ast::TypeExpr,
        trait_: Option<&[ast::Ident]>,
        name: &ast::Ident,
        span: Span,
    ) -> CResult<CExpr> {
        let t = self.ty_of(ty)?;
        if trait_.is_none()
            && let Some(ti) = self.mcx.type_item(t)
            && let Some(i) = self.mcx.assoc_item(ti, &name.name)?
            && let Item::Const(c) = &self.mcx.m.items[i]
        {
            // A constant of a generic `impl` block: its value for this instance.
            let saved = self.mcx.self_ty.replace(t);
            let r = self.const_of_instance(c, t, span);
            self.mcx.self_ty = saved;
            return r;
        }
        if let Some(x) = self.trait_const(t, name, span)? {
            return Ok(x);
        }
        let tn = self.u.ty_name(t);
        Err(Diagnostic::error(name.span, format!("no associated item named `{}` found for `{tn}`", name.name))
            .label("associated item not found")
            .into())
    }

    /// An inherent constant of a (possibly generic) `impl` block, for the instance `t`: its
    /// initialiser checked with the block's parameters bound to `t`'s arguments.
    fn const_of_instance(&mut self, c: &'m ast::ConstItem, t: Ty, span: Span) -> CResult<CExpr> {
        let Some(ast::ImplOwner { kind: ast::OwnerKind::Impl(imp), .. }) = c.owner else {
            return Err(Diagnostic::error(span, "expected an associated constant").label("here").into());
        };
        let h = self.u.known(t);
        let snap = self.u.snapshot();
        let slots = self.mcx.match_impl(&mut self.u, imp, h, &[])?;
        let Some(slots) = slots else {
            self.u.rollback(snap);
            return Err(Diagnostic::error(span, "this constant is not defined for this type").label("here").into());
        };
        let d = &self.mcx.m.impls[imp];
        let mut values = Vec::new();
        for s in slots {
            values.push(match s {
                super::generic_call::Slot::Type(h) => super::generics::GenericValue::Type(self.u.settle(h).unwrap_or(Ty::Unit)),
                super::generic_call::Slot::Const(v) => {
                    super::generics::GenericValue::Const(v.unwrap_or(ScalarValue::Int(Scalar::Usize, 0)))
                }
            });
        }
        let mut env = super::bounds::impl_env(d, &values);
        env.self_ty = Some(t);
        let saved_generics = std::mem::replace(&mut self.generics, env);
        let saved_module = std::mem::replace(&mut self.module, c.module);
        let saved_scope = std::mem::take(&mut self.scope);
        let r = self.expr(&c.value);
        let want = self.ty_of(&c.ty);
        self.scope = saved_scope;
        self.module = saved_module;
        self.generics = saved_generics;
        let mut x = r?;
        let want = want?;
        let wh = self.u.known(want);
        self.assign_compatible(wh, &x, c.ty.span())?;
        x.span = span;
        Ok(x)
    }
}
