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
                Item::Fn(f) => Err(Diagnostic::error(span, format!("`{name}` is a function"))
                    .label("functions are not values in kernels")
                    .secondary(f.name.span, "defined here")
                    .help(format!("call it: `{name}(..)`"))
                    .into()),
                Item::Enum(_) => Err(Diagnostic::error(span, format!("expected a value, found enum `{name}`"))
                    .label("an enum type")
                    .help(format!("name a variant: `{name}::Variant`"))
                    .into()),
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
}
