//! Calls by name and path, and method calls: functions of the crate's modules, tuple structs'
//! and enum variants' constructors, closures, associated functions and methods of `impl`
//! blocks (inherent first, then traits, as Rust resolves them), the methods of a type
//! parameter's bounds, `Trait::f(..)`, `T::f()` and `<T as Trait>::f(..)`. A call of a trait's
//! method is an instance resolved once the type it is called on is settled: the `impl` block's
//! method, else the trait's provided one with `Self` that type.

use crate::ir::*;
use crate::lang::ast::{self, GenericArg, Item, OwnerKind, TypeExpr};
use crate::lang::builtins;
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::bounds::HScope;
use super::factory::ScopeItem;
use super::generic_call::{CallPre, Slot};
use super::traits::TraitId;
use super::unify::{H, Kind};
use super::{CResult, close_matches};

/// A member found for a type: the item, the generic arguments of its `impl` block (or trait),
/// and `Self` where it is a trait's.
pub(super) struct Member<'m> {
    pub(super) f: &'m ast::FnItem,
    pub(super) prefix: Vec<Slot>,
    pub(super) self_h: Option<H>,
}

impl<'c, 'm> FnCx<'c, 'm> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call(
        &mut self,
        qualifier: &[ast::Ident],
        qual_args: &[GenericArg],
        qself: Option<&TypeExpr>,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        if let Some(q) = qself {
            return self.qself_call(q, qualifier, func, generics, args, span);
        }
        if !qualifier.is_empty() {
            let mut path = qualifier.to_vec();
            path.push(func.clone());
            let text = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
            if let Some(v) = self.variant_path(&path, span)? {
                return self.variant_call(v, args, span);
            }
            if let Some(r) = self.path_member_call(qualifier, qual_args, func, generics, args, span)? {
                return Ok(r);
            }
            return match self.mcx.m.scopes.path(self.mcx.m, self.module, &path)?.0 {
                Some(Res::Item(i)) if matches!(self.mcx.m.items[i], Item::Fn(_)) => self.call_fn_item(i, &text, func, generics, args, span),
                Some(Res::Item(i)) if matches!(self.mcx.m.items[i], Item::Struct(_)) => {
                    match self.struct_constructor(i, Some(args), span)? {
                        Some(x) => Ok(x),
                        None => Err(Diagnostic::error(func.span, format!("`{text}` is a struct with named fields, not a function"))
                            .label("not callable")
                            .help(format!("build one: `{text} {{ field: value, .. }}`"))
                            .into()),
                    }
                }
                Some(_) => Err(Diagnostic::error(func.span, format!("`{text}` is a value, not a function")).label("not callable").into()),
                None => Err(Diagnostic::error(func.span, format!("cannot find function `{text}`"))
                    .label("not found")
                    .help("a path names a function of a module of the kernel (`common::dot(..)`), an associated function (`Vec2::new(..)`) or a variant (`Shape::Circle(..)`)")
                    .into()),
            };
        }
        if let Some(l) = self.lookup_local(&func.name) {
            if let Some(r) = self.local_closure_call(l, func, generics, args, span)? {
                return Ok(r);
            }
            return Err(Diagnostic::error(func.span, format!("`{}` is a variable, not a function", func.name))
                .label("not callable")
                .secondary(self.locals[l].span, "declared here")
                .into());
        }
        if let Some(scope) = self.scope_items {
            match scope.get(&func.name) {
                Some(ScopeItem::Closure(id)) => {
                    let id = *id;
                    self.no_generics(generics)?;
                    return self.call_fn(id, &func.name, args, span, None);
                }
                Some(ScopeItem::Capture(..)) => {
                    return Err(Diagnostic::error(func.span, format!("`{}` is a captured value, not a function", func.name))
                        .label("not callable")
                        .into());
                }
                None => {}
            }
        }
        if let Some(v) = self.variant_path(std::slice::from_ref(func), func.span)? {
            return self.variant_call(v, args, span);
        }
        let res = self.mcx.m.scopes.value(self.module, &func.name);
        if let Some(Res::Item(i)) = res {
            match &self.mcx.m.items[i] {
                Item::Fn(_) => return self.call_fn_item(i, &func.name, func, generics, args, span),
                Item::Struct(_) => {
                    if let Some(x) = self.struct_constructor(i, Some(args), span)? {
                        return Ok(x);
                    }
                }
                _ => {}
            }
        }
        if let Some(b) = builtins::function(&func.name) {
            return self.builtin_call(b, func, generics, args, span);
        }
        if res.is_some() || self.mcx.env.global(&func.name).is_some() {
            return Err(Diagnostic::error(func.span, format!("`{}` is a value, not a function", func.name)).label("not callable").into());
        }
        let mut names: Vec<&str> = builtins::FUNCTIONS.iter().map(|(n, _)| *n).collect();
        names.extend(self.mcx.m.scopes.names(self.module));
        if let Some(s) = self.scope_items {
            names.extend(s.names.iter().map(|(n, _, _)| n.as_str()));
        }
        let close = close_matches(&func.name, names.into_iter());
        let mut d = Diagnostic::error(func.span, format!("cannot find function `{}`", func.name)).label("not found");
        if let Some(c) = close.first() {
            d = d.help(format!("a function with a similar name exists: `{c}`"));
        } else {
            d = d.help("call a device function of this file, a closure, or a builtin (see the language reference)");
        }
        Err(d.into())
    }

    /// A call of the function item `i`, named `name` at the call.
    fn call_fn_item(
        &mut self,
        i: usize,
        name: &str,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let m = self.mcx.m;
        let Item::Fn(f) = &m.items[i] else {
            return Err(Diagnostic::error(func.span, format!("`{name}` is not a function")).label("not callable").into());
        };
        if f.is_kernel {
            return Err(Diagnostic::error(func.span, format!("`{name}` is a kernel"))
                .label("kernels cannot be called from device code")
                .secondary(f.name.span, "defined here")
                .help("move the shared code into a device function (a `fn` without `#[kernel]`)")
                .into());
        }
        if !f.is_generic() {
            self.no_generics(generics)?;
        }
        if let ast::RetTy::ImplFn { .. } | ast::RetTy::ImplKernel(_) = f.ret {
            // A factory: checked as one (an error there says why it cannot be called).
            self.mcx.ensure_fn(f, Some(func.span))?;
        }
        self.call_item(f, func, generics, CallPre::default(), args, span)
    }

    /// `Type::f(..)`, `T::f(..)`, `Self::f(..)`, `Trait::f(..)`, `f32::max(a, b)`: a call of an
    /// associated function or method through its type or trait; `None` if the qualifier names
    /// neither.
    fn path_member_call(
        &mut self,
        qualifier: &[ast::Ident],
        qual_args: &[GenericArg],
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<Option<CExpr>> {
        let name = func.name.as_str();
        // `f32::max(a, b)`: a number's method called through its type.
        if let [q] = qualifier
            && let Some(s) = Scalar::from_name(&q.name)
        {
            let self_h = self.u.known(Ty::Scalar(s));
            if let Some(m) = self.find_member(self_h, name, func.span)? {
                return self.call_member(m, func, generics, None, args, span).map(Some);
            }
            if let Some(t) = self.std_assoc(self_h, name, args, span)? {
                return Ok(Some(t));
            }
            if let Some((first, rest)) = args.split_first()
                && builtins::method(name).is_some()
            {
                let recv = first.clone();
                let x = self.method(&recv, func, generics, rest, span)?;
                let want = self.u.known(Ty::Scalar(s));
                self.unify_or(first.span, want, x.ty, "")?;
                return Ok(Some(x));
            }
            return Ok(None);
        }
        let Some(self_h) = self.qualifier_type(qualifier, qual_args, func.span)? else {
            // `Trait::f(..)`: `Self` is inferred.
            if let Some(t) = self.trait_qualifier(qualifier)? {
                return self.trait_call(t, None, func, generics, args, span).map(Some);
            }
            return Ok(None);
        };
        if let Some(m) = self.find_member(self_h, name, func.span)? {
            return self.call_member(m, func, generics, None, args, span).map(Some);
        }
        if let Some(t) = self.std_assoc(self_h, name, args, span)? {
            return Ok(Some(t));
        }
        let tn = self.u.describe(self_h);
        let names = match self.u.ty(self_h).and_then(|t| self.mcx.type_item(t)) {
            Some(ti) => self.mcx.assoc_names(ti),
            None => Vec::new(),
        };
        let mut d = Diagnostic::error(func.span, format!("no function or associated item named `{name}` found for `{tn}`"))
            .label("associated item not found");
        if let Some(c) = close_matches(name, names.iter().map(String::as_str)).first() {
            d = d.help(format!("an associated function with a similar name exists: `{c}`"));
        }
        if matches!(self.u.ty(self_h), Some(Ty::Param(_))) {
            d = d.help(format!("bound the type parameter with a trait that has `{name}`"));
        }
        Err(d.into())
    }

    /// The type a call's qualifier names (`Vec2`, `Vec2::<f32>`, `Self`, `T`, `common::Shape`),
    /// if it names one.
    pub(super) fn qualifier_type(&mut self, qualifier: &[ast::Ident], qual_args: &[GenericArg], at: Span) -> CResult<Option<H>> {
        if let [q] = qualifier {
            if q.name == "Self" {
                return Ok(self.generics.self_ty.or(self.mcx.self_ty).map(|t| self.u.known(t)));
            }
            if let Some(t) = self.generics.type_param(&q.name) {
                return Ok(Some(self.u.known(t)));
            }
        }
        let m = self.mcx.m;
        let res = if qualifier.len() == 1 {
            m.scopes.type_name(self.module, &qualifier[0].name)
        } else {
            m.scopes.path(m, self.module, qualifier).ok().and_then(|r| r.1)
        };
        let span = qualifier.last().map(|q| q.span).unwrap_or(at);
        match res {
            Some(Res::Item(i)) if m.items[i].is_type() => {
                if !qual_args.is_empty() {
                    let t = self.mcx.generic_named_ty(qualifier, qual_args, span, self.module, &self.generics)?;
                    return Ok(Some(self.u.known(t)));
                }
                if self.mcx.is_template(i) {
                    let adt = self.mcx.adt_of_item(i, span)?;
                    return Ok(Some(self.fresh_instance(adt)));
                }
                let t = self.mcx.named_ty_in(qualifier, span, self.module, &self.generics)?;
                Ok(Some(self.u.known(t)))
            }
            None if super::templates::is_option_path(qualifier) => {
                let adt = self.mcx.option_adt();
                if qual_args.is_empty() {
                    Ok(Some(self.fresh_instance(adt)))
                } else {
                    let t = self.mcx.generic_named_ty(qualifier, qual_args, span, self.module, &self.generics)?;
                    Ok(Some(self.u.known(t)))
                }
            }
            _ => Ok(None),
        }
    }

    /// The trait a call's qualifier names (`Shape`, `Default`, `ops::Add`), if it names one.
    fn trait_qualifier(&mut self, qualifier: &[ast::Ident]) -> CResult<Option<TraitId>> {
        let b = ast::TraitBound {
            path: qualifier.to_vec(),
            args: Vec::new(),
            assoc: Vec::new(),
            fn_sugar: None,
            span: qualifier[0].span.to(qualifier[qualifier.len() - 1].span),
        };
        Ok(self.mcx.trait_named(&b, self.module).ok().flatten())
    }

    /// `<T as Trait>::f(..)` and `<T>::f(..)`.
    fn qself_call(
        &mut self,
        q: &TypeExpr,
        qualifier: &[ast::Ident],
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let t = self.ty_of(q)?;
        let self_h = self.u.known(t);
        if qualifier.is_empty() {
            if let Some(m) = self.find_member(self_h, &func.name, func.span)? {
                return self.call_member(m, func, generics, None, args, span);
            }
            if let Some(x) = self.std_assoc(self_h, &func.name, args, span)? {
                return Ok(x);
            }
            let tn = self.u.describe(self_h);
            return Err(Diagnostic::error(func.span, format!("no function or associated item named `{}` found for `{tn}`", func.name))
                .label("not found")
                .into());
        }
        let Some(tr) = self.trait_qualifier(qualifier)? else {
            let text = qualifier.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
            return Err(Diagnostic::error(qualifier[0].span, format!("cannot find trait `{text}` in this scope"))
                .label("not a trait")
                .into());
        };
        self.trait_call(tr, Some(self_h), func, generics, args, span)
    }

    /// A trait's function called through the trait: `Trait::f(x)`, `<T as Trait>::f()`.
    fn trait_call(
        &mut self,
        tr: TraitId,
        self_h: Option<H>,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        match tr {
            TraitId::User(t) => {
                let Some(i) = self.mcx.trait_member(t, &func.name) else {
                    let tn = self.mcx.m.items[t].name().name.clone();
                    return Err(Diagnostic::error(
                        func.span,
                        format!("cannot find method or associated constant `{}` in trait `{tn}`", func.name),
                    )
                    .label("not a member of the trait")
                    .into());
                };
                let Item::Fn(f) = &self.mcx.m.items[i] else {
                    return Err(Diagnostic::error(func.span, format!("`{}` is an associated constant, not a function", func.name))
                        .label("not callable")
                        .into());
                };
                let self_h = match self_h {
                    Some(h) => h,
                    None => self.u.var(Kind::Any),
                };
                let prefix = (0..f.impl_generics).map(|_| Slot::Type(self.u.var(Kind::Any))).collect();
                let m = Member { f, prefix, self_h: Some(self_h) };
                self.call_member(m, func, generics, None, args, span)
            }
            TraitId::Std(s) => {
                let self_h = match self_h {
                    Some(h) => h,
                    None => match args.first() {
                        Some(a) => {
                            let x = self.expr(a)?;
                            x.ty
                        }
                        None => self.u.var(Kind::Any),
                    },
                };
                match self.std_assoc(self_h, &func.name, args, span)? {
                    Some(x) => Ok(x),
                    None => Err(Diagnostic::error(func.span, format!("`{}::{}` is not supported in kernels", s.name(), func.name))
                        .label("not supported")
                        .help("call the operator or method itself: `a + b`, `a.clone()`, `T::default()`")
                        .into()),
                }
            }
        }
    }

    /// A call of a member found for a type (`recv` a method's receiver, else `args` holds
    /// every argument).
    pub(super) fn call_member(
        &mut self,
        m: Member<'m>,
        func: &ast::Ident,
        generics: &[GenericArg],
        recv: Option<Operand>,
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let pre = CallPre { prefix: m.prefix, self_h: m.self_h, receiver: recv, args: Vec::new() };
        self.call_item(m.f, func, generics, pre, args, span)
    }

    /// The function `name` of type `self_h`: an inherent `impl`'s, then a trait's (the
    /// bounds' of a type parameter at its definition; otherwise the trait of the one `impl`
    /// for the type that has it), as a trait's member called with `Self` the type.
    pub(super) fn find_member(&mut self, self_h: H, name: &str, at: Span) -> CResult<Option<Member<'m>>> {
        let t = self.u.ty(self_h);
        // A type parameter: what its bounds give (at the definition, and in an instance, where
        // a method called on the parameter's value means its bound's).
        let subject = match t {
            Some(p @ Ty::Param(_)) => Some(p),
            Some(t) if !self.generics.is_definition() => self.generics.type_params().find(|(_, v)| *v == t).map(|(_, v)| v),
            _ => None,
        };
        if let Some(subject) = subject {
            let bounds: Vec<super::traits::TraitRef> = self.generics.bounds_of(subject).cloned().collect();
            for b in bounds {
                if let TraitId::User(tr) = b.id
                    && let Some(i) = self.mcx.trait_member(tr, name)
                    && let Item::Fn(f) = &self.mcx.m.items[i]
                {
                    let prefix = b.args.iter().take(f.impl_generics).map(|a| Slot::Type(self.u.known(*a))).collect();
                    return Ok(Some(Member { f, prefix, self_h: Some(self_h) }));
                }
            }
            if matches!(t, Some(Ty::Param(_))) {
                return Ok(None);
            }
        }
        // Inherent `impl` blocks of the type's item.
        if let Some(item) = self.head_item(self_h) {
            let impls: Vec<usize> = (0..self.mcx.m.impls.len()).filter(|k| self.mcx.m.impls[*k].trait_.is_none()).collect();
            for imp in impls {
                if self.mcx.impl_for_item(imp) != Some(item) {
                    continue;
                }
                let Some(i) = self.mcx.impl_member(imp, name) else { continue };
                let Item::Fn(f) = &self.mcx.m.items[i] else { continue };
                let snap = self.u.snapshot();
                match self.mcx.match_impl(&mut self.u, imp, self_h, &[])? {
                    Some(slots) => return Ok(Some(Member { f, prefix: slots, self_h: None })),
                    None => self.u.rollback(snap),
                }
            }
        }
        // `impl Add for Vec2`'s `add`, called by name (`a.add(b)`, `x.add_assign(y)`).
        if let Some(item) = self.head_item(self_h) {
            let impls: Vec<usize> = (0..self.mcx.m.impls.len()).filter(|k| self.mcx.m.impls[*k].trait_.is_some()).collect();
            for imp in impls {
                if self.mcx.impl_for_item(imp) != Some(item) || !matches!(self.mcx.impl_trait(imp), Some(TraitId::Std(_))) {
                    continue;
                }
                let Some(i) = self.mcx.impl_member(imp, name) else { continue };
                let Item::Fn(f) = &self.mcx.m.items[i] else { continue };
                let snap = self.u.snapshot();
                match self.mcx.match_impl(&mut self.u, imp, self_h, &[])? {
                    Some(slots) => return Ok(Some(Member { f, prefix: slots, self_h: None })),
                    None => self.u.rollback(snap),
                }
            }
        }
        // The crate's traits with a member of that name, implemented for the type.
        for tr in self.mcx.traits_with_member(name) {
            if self.type_implements(self_h, TraitId::User(tr), at)? {
                let Some(i) = self.mcx.trait_member(tr, name) else { continue };
                let Item::Fn(f) = &self.mcx.m.items[i] else { continue };
                let prefix = (0..f.impl_generics).map(|_| Slot::Type(self.u.var(Kind::Any))).collect();
                return Ok(Some(Member { f, prefix, self_h: Some(self_h) }));
            }
        }
        Ok(None)
    }

    /// The struct or enum item a type is an instance of (`None` for scalars, tuples, `Option`).
    pub(super) fn head_item(&mut self, h: H) -> Option<usize> {
        if let Some((adt, _)) = self.u.adt_of(h) {
            return self.mcx.adts.borrow().def(adt).item;
        }
        self.u.ty(h).and_then(|t| self.mcx.type_item(t))
    }

    /// Whether some `impl` of trait `tr` is for the type `h` (settled, or an instance being
    /// inferred whose head is known).
    pub(super) fn type_implements(&mut self, h: H, tr: TraitId, _at: Span) -> CResult<bool> {
        for imp in self.mcx.impls_of(tr) {
            let ok = match self.u.ty(h) {
                Some(t) => self.mcx.head_may_match(imp, t),
                None => match self.head_item(h) {
                    Some(i) => self.mcx.impl_for_item(imp) == Some(i),
                    None => false,
                },
            };
            if !ok {
                continue;
            }
            let snap = self.u.snapshot();
            let r = self.mcx.match_impl(&mut self.u, imp, h, &[])?;
            self.u.rollback(snap);
            if r.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// `recv.name(args)`.
    pub(super) fn method(
        &mut self,
        receiver: &ast::Expr,
        method: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let name = method.name.as_str();
        if let Some(x) = self.iter_chain(receiver, name, args, span)? {
            return Ok(x);
        }
        let r = self.operand(receiver)?;
        let rh = match &r {
            Operand::Place(_, h) => *h,
            Operand::Value(v) => v.ty,
        };
        if let Some(x) = self.option_method(&r, rh, receiver, method, args, span)? {
            return Ok(x);
        }
        let t = self.u.ty(rh);
        let builtin_first = matches!(t, Some(Ty::Scalar(_) | Ty::Array(_) | Ty::ParamArray(_)))
            || matches!(t, Some(Ty::Param(p)) if p.bound != Bound::Any)
            || self.u.compound(rh).is_some();
        let prefer_trait = self.bound_method_preferred(rh, name);
        if (!builtin_first || prefer_trait)
            && let Some(m) = self.find_member(rh, name, method.span)?
        {
            if m.f.receiver.is_none() {
                let tn = self.u.describe(rh);
                return Err(Diagnostic::error(method.span, format!("`{name}` is an associated function of `{tn}`, not a method"))
                    .label("this is an associated function, not a method")
                    .secondary(m.f.name.span, "defined here")
                    .help(format!("call it with the type: `{tn}::{name}(..)`"))
                    .into());
            }
            if m.f.receiver == Some(ast::SelfKind::RefMut)
                && let Operand::Place(p, _) = &r
            {
                self.check_borrow_mut_at(p, receiver)?;
            }
            return self.call_member(m, method, generics, Some(r), args, span);
        }
        if let Some(x) = self.std_method(&r, rh, receiver, method, args, span)? {
            return Ok(x);
        }
        if builtin_first
            && !matches!(t, Some(Ty::Param(_)))
            && builtins::method(name).is_none()
            && !matches!(t, Some(Ty::Array(_) | Ty::ParamArray(_)))
            && self.u.compound(rh).is_none()
            && let Some(m) = self.find_member(rh, name, method.span)?
        {
            return self.call_member(m, method, generics, Some(r), args, span);
        }
        if !builtin_first {
            if let Some(Ty::Agg(_) | Ty::Enum(_)) = t
                && let Some(ti) = self.mcx.type_item(t.unwrap_or(Ty::Unit))
            {
                let tn = self.u.ty_name(t.unwrap_or(Ty::Unit));
                let names = self.mcx.assoc_names(ti);
                let mut d = Diagnostic::error(method.span, format!("no method named `{name}` found for `{tn}` in the current scope"))
                    .label("method not found");
                if let Some(c) = close_matches(name, names.iter().map(String::as_str)).first() {
                    d = d.help(format!("a method with a similar name exists: `{c}`"));
                }
                return Err(d.into());
            }
            if let Some(Ty::Param(_)) = t {
                let tn = self.u.describe(rh);
                return Err(Diagnostic::error(
                    method.span,
                    format!("no method named `{name}` found for type parameter `{tn}` in the current scope"),
                )
                .label(format!("method not found in `{tn}`"))
                .help(format!("restrict the type parameter with a trait that has `{name}`: `{tn}: Trait`"))
                .into());
            }
            if t.is_none() && self.u.adt_of(rh).is_some() {
                let d = self.u.describe(rh);
                return Err(Diagnostic::error(method.span, format!("no method named `{name}` found for `{d}` in the current scope"))
                    .label("method not found")
                    .into());
            }
        }
        if !generics.is_empty() {
            return Err(Diagnostic::error(generics[0].span(), "this method takes no generic arguments").label("remove this").into());
        }
        self.builtin_method(r, receiver, method, args, span)
    }

    /// Whether `name` called on a value of type `h` means a bound's method: `h` is the value of
    /// a type parameter whose bounds have a trait with that method (as at the definition).
    fn bound_method_preferred(&mut self, h: H, name: &str) -> bool {
        let Some(t) = self.u.ty(h) else { return false };
        let Some(subject) = self.generics.type_params().find(|(_, v)| *v == t).map(|(_, v)| v) else { return false };
        let bounds: Vec<TraitId> = self.generics.bounds_of(subject).map(|b| b.id).collect();
        bounds.into_iter().any(|id| matches!(id, TraitId::User(tr) if self.mcx.trait_member(tr, name).is_some()))
    }

    /// `T::default()`, `Default::default()`, `f32::from(x)`: the standard traits' associated
    /// functions, for the types that have them.
    fn std_assoc(&mut self, self_h: H, name: &str, args: &[ast::Expr], span: Span) -> CResult<Option<CExpr>> {
        match (name, args) {
            ("default", []) => self.default_value(self_h, span).map(Some),
            ("from", [a]) => {
                let x = self.expr(a)?;
                self.convert(x, self_h, span).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The standard traits' methods on a value: `clone`, `eq`, `ne`, `lt` and the other
    /// comparisons, `into`, `add` and the other operators' methods.
    fn std_method(
        &mut self,
        r: &Operand,
        rh: H,
        receiver: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<Option<CExpr>> {
        let name = method.name.as_str();
        let op = match name {
            "eq" => Some(BinOp::Eq),
            "ne" => Some(BinOp::Ne),
            "lt" => Some(BinOp::Lt),
            "le" => Some(BinOp::Le),
            "gt" => Some(BinOp::Gt),
            "ge" => Some(BinOp::Ge),
            "add" => Some(BinOp::Add),
            "sub" => Some(BinOp::Sub),
            "mul" => Some(BinOp::Mul),
            "div" => Some(BinOp::Div),
            "rem" => Some(BinOp::Rem),
            _ => None,
        };
        let value = |me: &mut Self, r: &Operand| -> CExpr {
            let r = match r {
                Operand::Place(p, h) => Operand::Place(p.clone(), *h),
                Operand::Value(v) => Operand::Value(v.clone()),
            };
            me.operand_value(r, receiver.span)
        };
        let scalar = matches!(self.u.ty(rh), Some(Ty::Scalar(_)));
        match (name, args, op) {
            // Of numbers, and of values with `PartialOrd`/`Ord` (derived or written with
            // `lt`/`gt`): through the comparison operators.
            ("partial_cmp" | "cmp", [b], _) if scalar || self.is_aggregate(rh) => {
                let a = value(self, r);
                let b = self.expr(b)?;
                self.unify_or(b.span, rh, b.ty, " (both sides of a comparison have one type)")?;
                self.scalar_ordering(a, b, name == "partial_cmp", span).map(Some)
            }
            (n, [] | [_], _) if n.starts_with("checked_") && matches!(self.u.ty(rh), Some(Ty::Scalar(s)) if s.is_int()) => {
                let Some(Ty::Scalar(s)) = self.u.ty(rh) else { return Ok(None) };
                let a = value(self, r);
                self.checked_int(n, s, a, args.first(), span)
            }
            ("clone", [], _) => {
                let _ = rh;
                Ok(Some(value(self, r)))
            }
            ("into", [], _) => {
                let x = value(self, r);
                let to = self.u.var(Kind::Any);
                self.convert(x, to, span).map(Some)
            }
            ("neg", [], _) if !matches!(self.u.ty(rh), Some(Ty::Scalar(_))) => {
                let x = value(self, r);
                self.unary_op(UnOp::Neg, x, span).map(Some)
            }
            (_, [b], Some(op)) => {
                let a = value(self, r);
                let b = self.expr(b)?;
                self.binary(op, a, b, span).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// `a.partial_cmp(&b)` (an `Option<Ordering>`, `None` where unordered: a NaN) and
    /// `a.cmp(&b)` (an `Ordering`) of numbers.
    fn scalar_ordering(&mut self, a: CExpr, b: CExpr, partial: bool, span: Span) -> CResult<CExpr> {
        let la = self.declare(&ast::Ident { name: "#a".into(), span }, a.ty, false, false);
        let lb = self.declare(&ast::Ident { name: "#b".into(), span }, b.ty, false, false);
        let mark = self.scope.len();
        let p = |n: &str| ast::Expr { kind: ast::ExprKind::Path(ast::Ident { name: n.into(), span }), span };
        let ord = |n: &str| {
            let path = ["std", "cmp", "Ordering", n].map(|s| ast::Ident { name: s.into(), span }).to_vec();
            let v = ast::Expr { kind: ast::ExprKind::QPath(path), span };
            if partial {
                ast::Expr {
                    kind: ast::ExprKind::Call {
                        qualifier: vec![ast::Ident { name: "#option".into(), span }],
                        qual_args: Vec::new(),
                        qself: None,
                        func: ast::Ident { name: "Some".into(), span },
                        generics: Vec::new(),
                        args: vec![v],
                    },
                    span,
                }
            } else {
                v
            }
        };
        let cmp = |op: BinOp| ast::Expr { kind: ast::ExprKind::Binary(op, Box::new(p("#a")), Box::new(p("#b"))), span };
        let block = |e: ast::Expr| ast::Block { stmts: Vec::new(), tail: Some(Box::new(e)), span };
        let last = if partial {
            let none = ast::Expr {
                kind: ast::ExprKind::QPath(vec![ast::Ident { name: "#option".into(), span }, ast::Ident { name: "None".into(), span }]),
                span,
            };
            ast::Expr {
                kind: ast::ExprKind::If(
                    Box::new(cmp(BinOp::Eq)),
                    block(ord("Equal")),
                    Some(Box::new(ast::Expr { kind: ast::ExprKind::Block(block(none)), span })),
                ),
                span,
            }
        } else {
            ord("Equal")
        };
        let gt = ast::Expr { kind: ast::ExprKind::If(Box::new(cmp(BinOp::Gt)), block(ord("Greater")), Some(Box::new(last))), span };
        let e = ast::Expr { kind: ast::ExprKind::If(Box::new(cmp(BinOp::Lt)), block(ord("Less")), Some(Box::new(gt))), span };
        self.scope.push(("#a".into(), la));
        self.scope.push(("#b".into(), lb));
        let r = self.expr(&e);
        self.scope.truncate(mark);
        let x = r?;
        let ty = x.ty;
        Ok(Expr {
            kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(la, Some(a)), Stmt::Let(lb, Some(b))], tail: Some(Box::new(x)) }),
            ty,
            span,
        })
    }

    /// A call's generics, where the callee takes none.
    pub(super) fn no_generics(&self, g: &[GenericArg]) -> CResult<()> {
        if let Some(first) = g.first() {
            return Err(Diagnostic::error(first.span(), "this function takes no generic arguments").label("remove this").into());
        }
        Ok(())
    }

    /// Checks `f`'s declared return type of an associated item.
    #[allow(dead_code)]
    fn owner_scope<'s>(&self, f: &'s ast::FnItem, slots: &'s [Slot], self_h: Option<H>) -> HScope<'s> {
        let impl_of = match &f.owner {
            Some(ast::ImplOwner { kind: OwnerKind::Impl(i), .. }) => Some(*i),
            _ => None,
        };
        HScope { generics: &f.generics, slots, self_h, impl_of, pattern: false }
    }
}
