//! Bounds and `impl` blocks, the module's side: what a generic function's parameters are known
//! to implement (their bounds with supertraits, and an opaque parameter for each associated
//! type a bound leaves unsaid), whether a type implements a trait (Rust's rules for the
//! primitive types, `#[derive]`s, and the crate's `impl` blocks), which `impl` block applies to
//! a type, and the associated types they define.

use crate::ir::*;
use crate::lang::ast::{self, GenericParamKind, OwnerKind, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::generic_call::Slot;
use super::generics::{GenericEnv, GenericValue, SELF_INDEX};
use super::items::ModuleCx;
use super::traits::{StdTrait, TraitId, TraitRef};
use super::unify::{ArgH, H, Kind, Unifier};

/// What a declared type's names stand for while it is turned into type variables: the
/// generic parameters of an item (a function, an `impl` block) by position, and `Self`.
pub(super) struct HScope<'a> {
    pub(super) generics: &'a [ast::GenericParamDef],
    pub(super) slots: &'a [Slot],
    pub(super) self_h: Option<H>,
    /// The `impl` block whose associated types `Self::Name` means.
    pub(super) impl_of: Option<usize>,
    /// Matching an `impl` block's type: a struct or enum the program has not met matches
    /// nothing (and is not entered in the program's types).
    pub(super) pattern: bool,
}

/// A type that matches no type of a program: what a pattern names that the program has not
/// met (an `impl` for a struct nothing uses).
const FOREIGN: Ty = Ty::Param(TypeParam { index: 253, bound: Bound::Any });

impl<'m> ModuleCx<'m> {
    /// The parameters of `f` at its definition: opaque, with what their bounds (and
    /// supertraits) let the body do; `Self` in a trait's method is an opaque type bounded by
    /// the trait, in an `impl` block's the block's type.
    pub(super) fn definition_env(&mut self, f: &'m ast::FnItem) -> CResult<GenericEnv> {
        let mut env = GenericEnv::definition(f);
        self.owner_self(f, &mut env)?;
        self.enter_bounds(f, &mut env)?;
        Ok(env)
    }

    /// The instance of `f` for `args`, with `self_ty` as `Self` for a trait's provided method.
    pub(super) fn instance_env(&mut self, f: &'m ast::FnItem, args: &[GenericValue], self_ty: Option<Ty>) -> CResult<GenericEnv> {
        let mut env = GenericEnv::instance(f, args);
        env.self_ty = self_ty;
        self.owner_self(f, &mut env)?;
        // In an instance the bounds only say which trait a method called on a parameter's
        // value means (as at the definition); what does not resolve was reported there.
        let _ = self.enter_bounds(f, &mut env);
        Ok(env)
    }

    /// `Self` of `f`: an `impl` block's type (with the block's parameters as `env` has them), or
    /// in a trait at its definition an opaque type bounded by the trait.
    pub(super) fn owner_self(&mut self, f: &'m ast::FnItem, env: &mut GenericEnv) -> CResult<()> {
        let Some(o) = &f.owner else { return Ok(()) };
        match o.kind {
            OwnerKind::Impl(i) => {
                if env.self_ty.is_none() {
                    let d = &self.m.impls[i];
                    let saved = self.self_ty.take();
                    let t = self.ty_in(&d.self_ty, d.module, env);
                    self.self_ty = saved;
                    env.self_ty = Some(t.map_err(|e| self.bad_impl_type(i, e))?);
                }
            }
            OwnerKind::Trait(t) => {
                if env.self_ty.is_none() {
                    let s = Ty::Param(TypeParam { index: SELF_INDEX, bound: Bound::Any });
                    env.self_ty = Some(s);
                    env.extra_names.push((SELF_INDEX, "Self".into()));
                    let args: Vec<Ty> = f.generics[..f.impl_generics].iter().filter_map(|g| env.type_param(&g.name.name)).collect();
                    let mut list = Vec::new();
                    self.with_supertraits(TraitRef { id: TraitId::User(t), args, assoc: Vec::new() }, s, &mut list, 0)?;
                    for r in list {
                        self.push_bound(s, r, env)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn bad_impl_type(&self, i: usize, e: Box<Diagnostic>) -> Box<Diagnostic> {
        let d = &self.m.impls[i];
        if e.message.starts_with("unknown type") {
            let name = match &d.self_ty {
                TypeExpr::Named(p, _) | TypeExpr::Generic { path: p, .. } => {
                    p.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::")
                }
                _ => String::new(),
            };
            return Diagnostic::error(d.self_ty.span(), format!("cannot find type `{name}` for this `impl` block"))
                .label("not a type of the kernel")
                .help("`impl` blocks are for the kernel's structs and enums, and for trait `impl`s the scalar types too")
                .into();
        }
        e
    }

    /// The bounds of `f`'s type parameters, with their supertraits, into `env`.
    fn enter_bounds(&mut self, f: &'m ast::FnItem, env: &mut GenericEnv) -> CResult<()> {
        for g in &f.generics {
            let Some(subject) = env.type_param(&g.name.name) else { continue };
            for b in &g.bounds {
                let snapshot = env.clone();
                if let Some(r) = self.trait_ref(b, f.module, &snapshot, subject)? {
                    let mut list = Vec::new();
                    self.with_supertraits(r, subject, &mut list, 0)?;
                    for r in list {
                        self.push_bound(subject, r, env)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Enters `r` as a bound of `subject`, giving each associated type it leaves unsaid an
    /// opaque parameter of its own (at a definition).
    fn push_bound(&mut self, subject: Ty, mut r: TraitRef, env: &mut GenericEnv) -> CResult<()> {
        if env.bounds.iter().any(|(s, b)| *s == subject && b.id == r.id && b.args == r.args) {
            return Ok(());
        }
        let names: Vec<String> = match r.id {
            TraitId::Std(t) if t.is_binary_op() || matches!(t, StdTrait::Neg | StdTrait::Not | StdTrait::Index) => vec!["Output".into()],
            TraitId::User(i) => self.trait_decl(i).map(|t| t.assoc_types.iter().map(|a| a.name.name.clone()).collect()).unwrap_or_default(),
            _ => Vec::new(),
        };
        for n in names {
            if r.assoc.iter().any(|(x, _)| *x == n) {
                continue;
            }
            let t = if env.is_definition() {
                let used: Vec<u8> = env.extra_names.iter().map(|(i, _)| *i).collect();
                let index = (200..SELF_INDEX).rev().find(|i| !used.contains(i) && *i != 253).unwrap_or(200);
                let subject_name = env.names().get(subject_index(subject)).cloned().unwrap_or_else(|| "Self".into());
                let tr = match r.id {
                    TraitId::Std(t) => t.name().to_string(),
                    TraitId::User(i) => self.m.items[i].name().name.clone(),
                };
                env.extra_names.push((index, format!("<{subject_name} as {tr}>::{n}")));
                Ty::Param(TypeParam { index, bound: Bound::Any })
            } else {
                match self.assoc_of(subject, r.id, &r.args, &n)? {
                    Some(t) => t,
                    None => continue,
                }
            };
            r.assoc.push((n, t));
        }
        env.bounds.push((subject, r));
        Ok(())
    }

    /// The function a call of trait `t`'s member `f` on type `st` means: the `impl` block's
    /// own (with the block's generic arguments and `f`'s own), or the trait's provided one with
    /// `Self` = `st`; an error if no `impl` of the trait is for `st`.
    pub(super) fn resolve_trait_member(
        &mut self,
        t: usize,
        f: &'m ast::FnItem,
        values: Vec<GenericValue>,
        st: Ty,
        span: Span,
    ) -> CResult<(&'m ast::FnItem, Vec<GenericValue>, Option<Ty>)> {
        let trait_args: Vec<Ty> = values
            .iter()
            .take(f.impl_generics)
            .filter_map(|v| match v {
                GenericValue::Type(t) => Some(*t),
                GenericValue::Const(_) => None,
            })
            .collect();
        if matches!(st, Ty::Param(_)) {
            // A definition's call on a type parameter: its bound says the trait is there.
            return Ok((f, values, Some(st)));
        }
        let Some((imp, impl_vals)) = self.find_impl(TraitId::User(t), st, &trait_args)? else {
            let tn = self.m.items[t].name().name.clone();
            let shown = self.ty_name_in(st, &GenericEnv::none());
            return Err(Diagnostic::error(span, format!("the trait bound `{shown}: {tn}` is not satisfied"))
                .label(format!("the trait `{tn}` is not implemented for `{shown}`"))
                .help(format!("implement it: `impl {tn} for {shown} {{ .. }}`"))
                .into());
        };
        if let Some(i) = self.impl_member(imp, &f.name.name)
            && let ast::Item::Fn(g) = &self.m.items[i]
        {
            let mut all = impl_vals;
            all.extend(values.into_iter().skip(f.impl_generics));
            return Ok((g, all, None));
        }
        if f.required {
            let tn = self.m.items[t].name().name.clone();
            return Err(Diagnostic::error(self.m.impls[imp].span, format!("not all trait items implemented, missing: `{}`", f.name.name))
                .label(format!("missing `{}` in implementation of `{tn}`", f.name.name))
                .secondary(f.sig_span, format!("`{}` from trait", f.name.name))
                .into());
        }
        Ok((f, values, Some(st)))
    }

    /// Whether `ty` implements `r` (with `r`'s associated types, where it gives them), with
    /// `env`'s parameters and their bounds.
    pub(super) fn implements(&mut self, ty: Ty, r: &TraitRef, env: &GenericEnv) -> CResult<bool> {
        self.implements_depth(ty, r, env, 0)
    }

    fn implements_depth(&mut self, ty: Ty, r: &TraitRef, env: &GenericEnv, depth: u32) -> CResult<bool> {
        if depth > 16 {
            return Ok(false);
        }
        if ty == Ty::Never {
            return Ok(true);
        }
        if let Ty::Param(p) = ty {
            if env.bounds_of(ty).any(|b| b.id == r.id && (r.args.is_empty() || b.args == r.args) && assoc_agree(b, r)) {
                return Ok(true);
            }
            return Ok(match r.id {
                TraitId::Std(t) if t.is_marker() => true,
                TraitId::Std(t) => numeric_implements(p.bound, t, ty, r),
                TraitId::User(_) => false,
            });
        }
        if let (TraitId::Std(t @ (StdTrait::Fn | StdTrait::FnMut | StdTrait::FnOnce)), Ty::Agg(id)) = (r.id, ty) {
            let Some(sig) = self.closure_of(id) else { return Ok(false) };
            let want: Vec<Ty> = match r.args.first() {
                Some(Ty::Agg(a)) => self.types.borrow().components(*a),
                _ => Vec::new(),
            };
            let ret_ok = r.assoc.iter().all(|(n, o)| n != "Output" || *o == sig.ret);
            return Ok(want == sig.params && ret_ok && !(t == StdTrait::Fn && sig.mutates));
        }
        if let TraitId::Std(t) = r.id {
            if t.is_marker() {
                return Ok(!matches!(ty, Ty::Array(_) | Ty::ParamArray(_)));
            }
            if let Ty::Scalar(s) = ty {
                return Ok(scalar_implements(s, t, r) || self.find_impl(r.id, ty, &r.args)?.is_some());
            }
            if let Some(d) = self.derived(ty, t) {
                return Ok(d);
            }
        }
        let Some((imp, args)) = self.find_impl(r.id, ty, &r.args)? else { return Ok(false) };
        for (name, want) in &r.assoc {
            if let Some(got) = self.impl_assoc(imp, &args, name)?
                && got != *want
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Whether a `#[derive]` (or the element types, for tuples and arrays) gives `ty` the
    /// standard trait `t`; `None` where only an `impl` block can.
    fn derived(&mut self, ty: Ty, t: StdTrait) -> Option<bool> {
        use StdTrait as S;
        if !matches!(t, S::PartialEq | S::Eq | S::PartialOrd | S::Ord | S::Default | S::Hash) {
            return None;
        }
        match ty {
            Ty::Enum(e) => Some(t != S::Default && self.enum_derives(e, t.name())),
            Ty::Agg(id) => {
                let item = self.item_of_agg(id);
                let adt = self.adts.borrow().instance_of(id);
                if let Some((a, _)) = adt {
                    return if self.adts.borrow().def(a).derives(t.name()) { Some(true) } else { None };
                }
                if let Some(i) = item {
                    let derives = match &self.m.items[i] {
                        ast::Item::Struct(s) => s.derives.clone(),
                        _ => Vec::new(),
                    };
                    return if derives.iter().any(|d| d == t.name() || d.ends_with(&format!("::{}", t.name()))) {
                        Some(true)
                    } else {
                        None
                    };
                }
                // Tuples and arrays: when their elements have it.
                let parts = self.types.borrow().components(id);
                let mut seen = Vec::new();
                for p in parts {
                    if seen.contains(&p) {
                        continue;
                    }
                    seen.push(p);
                    let r = TraitRef {
                        id: TraitId::Std(t),
                        args: if matches!(t, S::PartialEq | S::PartialOrd) { vec![p] } else { Vec::new() },
                        assoc: Vec::new(),
                    };
                    if !self.implements_depth(p, &r, &GenericEnv::none(), 1).unwrap_or(false) {
                        return Some(false);
                    }
                }
                Some(true)
            }
            Ty::Unit => Some(true),
            _ => None,
        }
    }

    /// The `impl` block of trait `t` for `ty` (with `trait_args` its arguments, where given)
    /// and the block's generic arguments.
    pub(super) fn find_impl(&mut self, t: TraitId, ty: Ty, trait_args: &[Ty]) -> CResult<Option<(usize, Vec<GenericValue>)>> {
        let mut u = Unifier::new(self.enum_names.clone(), self.types.clone(), self.adts.clone());
        let self_h = u.known(ty);
        let arg_hs: Vec<H> = trait_args.iter().map(|t| u.known(*t)).collect();
        for imp in self.impls_of(t) {
            if !self.head_may_match(imp, ty) {
                continue;
            }
            let snap = u.snapshot();
            if let Some(slots) = self.match_impl(&mut u, imp, self_h, &arg_hs)? {
                let mut values = Vec::with_capacity(slots.len());
                let mut ok = true;
                for s in slots {
                    match s {
                        Slot::Type(h) => match u.settle(h) {
                            Some(t) => values.push(GenericValue::Type(t)),
                            None => ok = false,
                        },
                        Slot::Const(Some(v)) => values.push(GenericValue::Const(v)),
                        Slot::Const(None) => ok = false,
                    }
                }
                if ok && self.impl_bounds_hold(imp, &values)? {
                    return Ok(Some((imp, values)));
                }
            }
            u.rollback(snap);
        }
        Ok(None)
    }

    /// Whether the bounds of `impl` block `imp`'s parameters hold for `values`.
    pub(super) fn impl_bounds_hold(&mut self, imp: usize, values: &[GenericValue]) -> CResult<bool> {
        let d = &self.m.impls[imp];
        if d.generics.iter().all(|g| g.bounds.is_empty()) {
            return Ok(true);
        }
        let env = impl_env(d, values);
        for (g, v) in d.generics.iter().zip(values) {
            let GenericValue::Type(t) = v else { continue };
            if let GenericParamKind::Type(b) = g.kind
                && !super::generics::satisfies(*t, b)
            {
                return Ok(false);
            }
            for b in &g.bounds {
                if let Some(r) = self.trait_ref(b, d.module, &env, *t)?
                    && !self.implements_depth(*t, &r, &env, 1)?
                {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// Whether `impl` block `imp` could be for `ty`, from the heads alone (a cheap filter that
    /// enters nothing in the program's types).
    pub(super) fn head_may_match(&self, imp: usize, ty: Ty) -> bool {
        let d = &self.m.impls[imp];
        match &d.self_ty {
            TypeExpr::Param(_) | TypeExpr::Infer(_) => true,
            TypeExpr::Scalar(s, _) => ty == Ty::Scalar(*s),
            TypeExpr::Unit(_) => ty == Ty::Unit,
            TypeExpr::Tuple(..) | TypeExpr::Fixed { .. } => matches!(ty, Ty::Agg(id) if self.types.borrow().strukt(id).is_none()),
            TypeExpr::Named(p, _) | TypeExpr::Generic { path: p, .. } => {
                if p.len() == 1 && p[0].name == "Self" {
                    return false;
                }
                let res = if p.len() == 1 {
                    self.m.scopes.type_name(d.module, &p[0].name)
                } else {
                    self.m.scopes.path(self.m, d.module, p).ok().and_then(|r| r.1)
                };
                match (res, ty) {
                    (Some(crate::lang::names::Res::Item(i)), Ty::Agg(id)) => self.item_of_agg(id) == Some(i),
                    (Some(crate::lang::names::Res::Item(i)), Ty::Enum(e)) => self.enum_ids.get(&i).is_some_and(|x| x.id == e.id),
                    (None, Ty::Agg(id)) if super::templates::is_option_path(p) => {
                        self.option.is_some_and(|o| self.adts.borrow().instance_of(id).is_some_and(|(a, _)| a == o))
                    }
                    _ => false,
                }
            }
            TypeExpr::Ref { .. } | TypeExpr::Assoc { .. } | TypeExpr::ArrayRef { .. } | TypeExpr::Builtin { .. } => true,
        }
    }

    /// Matches `impl` block `imp`'s type against `self_h` (and its trait's arguments against
    /// `trait_args`, where given) in `u`: the block's generic arguments as `u`'s variables, or
    /// `None` (then `u` may be left changed: take a snapshot first).
    pub(super) fn match_impl(&mut self, u: &mut Unifier, imp: usize, self_h: H, trait_args: &[H]) -> CResult<Option<Vec<Slot>>> {
        let d = &self.m.impls[imp];
        let slots: Vec<Slot> = d
            .generics
            .iter()
            .map(|g| match g.kind {
                GenericParamKind::Type(_) => Slot::Type(u.var(Kind::Any)),
                GenericParamKind::Const(_) => Slot::Const(None),
            })
            .collect();
        let scope = HScope { generics: &d.generics, slots: &slots, self_h: None, impl_of: None, pattern: true };
        let pat = self.texpr_h(u, &d.self_ty, d.module, &scope)?;
        if !u.unify(pat, self_h) {
            return Ok(None);
        }
        if let Some(b) = &d.trait_
            && !trait_args.is_empty()
        {
            let scope = HScope { generics: &d.generics, slots: &slots, self_h: Some(self_h), impl_of: None, pattern: true };
            let mut given = Vec::new();
            for a in &b.args {
                given.push(match a {
                    ast::GenericArg::Type(t) => self.texpr_h(u, t, d.module, &scope)?,
                    ast::GenericArg::Const(ast::Expr { kind: ast::ExprKind::Path(n), .. }) => {
                        self.texpr_h(u, &TypeExpr::Named(vec![n.clone()], n.span), d.module, &scope)?
                    }
                    _ => u.var(Kind::Any),
                });
            }
            if given.is_empty() {
                // `impl Add for T`: `Rhs = Self`.
                given.push(self_h);
            }
            for (g, w) in given.iter().zip(trait_args) {
                if !u.unify(*g, *w) {
                    return Ok(None);
                }
            }
        }
        // Const parameters take their values from the type they name.
        let slots = self.const_slots(u, &d.self_ty, &d.generics, slots, self_h);
        Ok(Some(slots))
    }

    /// The values of an `impl` block's const parameters, read where its type names them
    /// (`impl<const N: usize> Tile<N>` matched against `Tile<16>`).
    pub(super) fn const_slots(
        &self,
        u: &mut Unifier,
        t: &TypeExpr,
        generics: &[ast::GenericParamDef],
        mut slots: Vec<Slot>,
        h: H,
    ) -> Vec<Slot> {
        if let TypeExpr::Generic { args, .. } = t
            && let Some((_, hargs)) = u.adt_of(h)
        {
            for (a, ha) in args.iter().zip(hargs) {
                let name = match a {
                    ast::GenericArg::Const(ast::Expr { kind: ast::ExprKind::Path(n), .. }) => Some(&n.name),
                    ast::GenericArg::Type(TypeExpr::Param(n)) => Some(&n.name),
                    _ => None,
                };
                if let (Some(n), ArgH::Const(s, Some(v))) = (name, ha)
                    && let Some(k) = generics.iter().position(|g| g.name.name == *n && matches!(g.kind, GenericParamKind::Const(_)))
                {
                    slots[k] = Slot::Const(Some(if s == Scalar::Bool { ScalarValue::Bool(v != 0) } else { ScalarValue::Int(s, v) }));
                }
                if let ast::GenericArg::Type(inner) = a
                    && let ArgH::Ty(ih) = ha
                {
                    slots = self.const_slots(u, inner, generics, slots, ih);
                }
            }
        }
        slots
    }

    /// A declared type as type variables of `u`: the generic parameters as `scope` says,
    /// tuples, arrays and instances of templates as compounds (nothing entered in the
    /// program's types), named types as known types.
    pub(super) fn texpr_h(&mut self, u: &mut Unifier, t: &TypeExpr, module: ast::ModId, scope: &HScope) -> CResult<H> {
        let slot = |name: &str| scope.generics.iter().position(|g| g.name.name == name).and_then(|i| scope.slots.get(i)).copied();
        Ok(match t {
            TypeExpr::Unit(_) => u.known(Ty::Unit),
            TypeExpr::Scalar(s, _) => u.known(Ty::Scalar(*s)),
            TypeExpr::Infer(_) => u.var(Kind::Any),
            TypeExpr::Param(id) => match slot(&id.name) {
                Some(Slot::Type(h)) => h,
                _ => {
                    return Err(Diagnostic::error(id.span, format!("cannot find type `{}` in this scope", id.name))
                        .label("not a type parameter here")
                        .into());
                }
            },
            TypeExpr::Named(p, span) if p.len() == 1 && p[0].name == "Self" => match scope.self_h {
                Some(h) => h,
                None => {
                    let t = self.named_ty(p, *span, module)?;
                    u.known(t)
                }
            },
            TypeExpr::Named(p, span) => {
                // A struct or enum the program has not met cannot be any of its values' types.
                let res = if p.len() == 1 { self.m.scopes.type_name(module, &p[0].name) } else { self.m.scopes.path(self.m, module, p)?.1 };
                if scope.pattern
                    && let Some(crate::lang::names::Res::Item(i)) = res
                    && !self.struct_ids.contains_key(&i)
                    && !self.enum_ids.contains_key(&i)
                    && !self.is_template(i)
                {
                    return Ok(u.known(FOREIGN));
                }
                let t = self.named_ty(p, *span, module)?;
                u.known(t)
            }
            TypeExpr::Generic { path, args, span } => {
                let Some(adt) = self.template_named(path, module, *span)? else {
                    let t = self.generic_named_ty(path, args, *span, module, &GenericEnv::none())?;
                    return Ok(u.known(t));
                };
                let params = self.adts.borrow().def(adt).params.clone();
                let mut out = Vec::with_capacity(args.len());
                for ((_, kind), a) in params.iter().zip(args) {
                    out.push(match (kind, a) {
                        (None, ast::GenericArg::Type(t)) => ArgH::Ty(self.texpr_h(u, t, module, scope)?),
                        (None, ast::GenericArg::Const(ast::Expr { kind: ast::ExprKind::Path(n), .. })) => {
                            ArgH::Ty(self.texpr_h(u, &TypeExpr::Named(vec![n.clone()], n.span), module, scope)?)
                        }
                        (None, _) => ArgH::Ty(u.var(Kind::Any)),
                        (Some(s), a) => {
                            let e = match a {
                                ast::GenericArg::Const(e) => Some(e.clone()),
                                ast::GenericArg::Type(TypeExpr::Param(n)) => {
                                    Some(ast::Expr { kind: ast::ExprKind::Path(n.clone()), span: n.span })
                                }
                                _ => None,
                            };
                            let v = match &e {
                                Some(ast::Expr { kind: ast::ExprKind::Path(n), .. }) if slot(&n.name).is_some() => match slot(&n.name) {
                                    Some(Slot::Const(v)) => v.and_then(const_bits),
                                    _ => None,
                                },
                                Some(e) => self.eval_const(e, Some(*s), module).ok().and_then(const_bits),
                                None => None,
                            };
                            ArgH::Const(*s, v)
                        }
                    });
                }
                u.adt(adt, out, true)
            }
            TypeExpr::Tuple(ts, _) => {
                let mut hs = Vec::with_capacity(ts.len());
                for t in ts {
                    hs.push(self.texpr_h(u, t, module, scope)?);
                }
                u.tuple_lazy(hs)
            }
            TypeExpr::Fixed { elem, len, .. } => {
                let e = self.texpr_h(u, elem, module, scope)?;
                let n = match &len.kind {
                    ast::ExprKind::Path(n) if slot(&n.name).is_some() => match slot(&n.name) {
                        Some(Slot::Const(Some(v))) => v.as_i128().and_then(|v| u64::try_from(v).ok()).unwrap_or(UNKNOWN_LEN),
                        _ => UNKNOWN_LEN,
                    },
                    _ => {
                        // `[T; Self::N]`, `[T; D::DIM]`: the constants of the types known here.
                        let mut types: Vec<(String, Ty)> = Vec::new();
                        for (g, s) in scope.generics.iter().zip(scope.slots) {
                            if let Slot::Type(h) = s
                                && let Some(t) = u.ty(*h)
                            {
                                types.push((g.name.name.clone(), t));
                            }
                        }
                        let self_ty = scope.self_h.and_then(|h| u.ty(h));
                        if let Some(t) = self_ty {
                            types.push(("Self".into(), t));
                        }
                        let saved = std::mem::replace(&mut self.type_scope, types);
                        let outer = self.self_ty;
                        let saved_self = std::mem::replace(&mut self.self_ty, self_ty.or(outer));
                        let v = self.eval_const(len, Some(Scalar::Usize), module);
                        self.type_scope = saved;
                        self.self_ty = saved_self;
                        v.ok().and_then(|v| v.as_i128()).and_then(|v| u64::try_from(v).ok()).unwrap_or(UNKNOWN_LEN)
                    }
                };
                u.array_lazy(e, n)
            }
            TypeExpr::Ref { inner, .. } => self.texpr_h(u, inner, module, scope)?,
            TypeExpr::Assoc { base, trait_, name, span } => {
                if let (Some(imp), TypeExpr::Named(p, _)) = (scope.impl_of, &**base)
                    && p.len() == 1
                    && p[0].name == "Self"
                    && let Some((_, t)) = self.m.impls[imp].assoc_types.iter().find(|(n, _)| n.name == name.name)
                {
                    let d_module = self.m.impls[imp].module;
                    return self.texpr_h(u, t, d_module, scope);
                }
                let b = self.texpr_h(u, base, module, scope)?;
                match u.ty(b) {
                    Some(bt) => {
                        let t = self.assoc_of_ty(bt, trait_, name, *span, module, &GenericEnv::none())?;
                        u.known(t)
                    }
                    None => u.var(Kind::Any),
                }
            }
            // A tensor-core fragment: its element type a scalar or a type parameter the call's
            // arguments have settled (`-> FragA<T, 16, 8, 16>`), its shape constants.
            TypeExpr::Builtin { .. } => {
                let values: Vec<Option<GenericValue>> = scope
                    .slots
                    .iter()
                    .map(|s| match s {
                        Slot::Type(h) => u.ty(*h).map(GenericValue::Type),
                        Slot::Const(v) => v.map(GenericValue::Const),
                    })
                    .collect();
                let env = GenericEnv::settled(scope.generics, &values);
                let t = self.ty_in(t, module, &env)?;
                u.known(t)
            }
            TypeExpr::ArrayRef { elem, ndim, mutable, span } => {
                let e = self.texpr_h(u, elem, module, scope)?;
                match u.ty(e) {
                    Some(et) => match super::generics::array_of(&self.types.borrow(), et, *ndim, *mutable) {
                        Some(t) => u.known(t),
                        None => return Err(Diagnostic::error(*span, "array elements must be scalars or structs").label("here").into()),
                    },
                    None => u.var(Kind::Any),
                }
            }
        })
    }

    /// The associated type `name` of `imp`'s trait as the block defines it, for its generic
    /// arguments `args`.
    pub(super) fn impl_assoc(&mut self, imp: usize, args: &[GenericValue], name: &str) -> CResult<Option<Ty>> {
        let d = &self.m.impls[imp];
        let Some((_, t)) = d.assoc_types.iter().find(|(n, _)| n.name == name) else {
            // The operators' `Output` of an `impl` that does not say: none (rustc requires it).
            return Ok(None);
        };
        let mut env = impl_env(d, args);
        let saved = self.self_ty.take();
        let st = self.ty_in(&d.self_ty, d.module, &env);
        env.self_ty = st.ok();
        let r = self.ty_in(t, d.module, &env);
        self.self_ty = saved;
        r.map(Some)
    }

    /// The associated type `name` of trait `tr` (with arguments `args`) for `ty`.
    pub(super) fn assoc_of(&mut self, ty: Ty, tr: TraitId, args: &[Ty], name: &str) -> CResult<Option<Ty>> {
        if let (Ty::Scalar(_), TraitId::Std(t)) = (ty, tr)
            && name == "Output"
            && (t.is_binary_op() || matches!(t, StdTrait::Neg | StdTrait::Not))
        {
            return Ok(Some(ty));
        }
        match self.find_impl(tr, ty, args)? {
            Some((imp, values)) => self.impl_assoc(imp, &values, name),
            None => Ok(None),
        }
    }

    /// `T::Output`, `Self::Output`, `<T as Add>::Output`: an associated type.
    pub(super) fn assoc_ty(
        &mut self,
        base: &TypeExpr,
        trait_: Option<&[ast::Ident]>,
        name: &ast::Ident,
        span: Span,
        module: ast::ModId,
        env: &GenericEnv,
    ) -> CResult<Ty> {
        let b = self.ty_in(base, module, env)?;
        let trait_ = trait_.map(|p| p.to_vec());
        self.assoc_of_ty(b, &trait_, name, span, module, env)
    }

    fn assoc_of_ty(
        &mut self,
        b: Ty,
        trait_: &Option<Vec<ast::Ident>>,
        name: &ast::Ident,
        span: Span,
        module: ast::ModId,
        env: &GenericEnv,
    ) -> CResult<Ty> {
        let want = match trait_ {
            Some(p) => {
                let tb = ast::TraitBound { path: p.clone(), args: Vec::new(), assoc: Vec::new(), fn_sugar: None, span };
                self.trait_named(&tb, module)?
            }
            None => None,
        };
        // What the bounds of a parameter say.
        let known: Vec<Ty> = env
            .bounds_of(b)
            .filter(|r| want.is_none_or(|w| w == r.id))
            .filter_map(|r| r.assoc.iter().find(|(n, _)| *n == name.name).map(|(_, t)| *t))
            .collect();
        if let Some(t) = known.first() {
            if known.iter().any(|x| x != t) {
                return Err(Diagnostic::error(
                    span,
                    format!("ambiguous associated type `{}` in bounds of `{}`", name.name, self.ty_name_in(b, env)),
                )
                .label(format!("ambiguous associated type `{}`", name.name))
                .help(format!("name the trait: `<{} as Trait>::{}`", self.ty_name_in(b, env), name.name))
                .into());
            }
            return Ok(*t);
        }
        if !matches!(b, Ty::Param(_)) {
            let traits: Vec<TraitId> = match want {
                Some(w) => vec![w],
                None => {
                    let mut v: Vec<TraitId> = self.traits_with_assoc(&name.name).into_iter().map(TraitId::User).collect();
                    if name.name == "Output" {
                        v.extend(
                            [
                                StdTrait::Add,
                                StdTrait::Sub,
                                StdTrait::Mul,
                                StdTrait::Div,
                                StdTrait::Rem,
                                StdTrait::Neg,
                                StdTrait::Not,
                                StdTrait::Index,
                            ]
                            .map(TraitId::Std),
                        );
                    }
                    v
                }
            };
            for t in traits {
                if let Some(x) = self.assoc_of(b, t, &[], &name.name)? {
                    return Ok(x);
                }
            }
        }
        let shown = self.ty_name_in(b, env);
        Err(Diagnostic::error(name.span, format!("associated type `{}` not found for `{shown}`", name.name))
            .label(format!("associated type `{}` not found", name.name))
            .help(format!("bound the type with a trait that has it: `{shown}: Add<Output = ..>`, or write the type out"))
            .into())
    }

    /// The crate's traits that declare an associated type `name`.
    fn traits_with_assoc(&self, name: &str) -> Vec<usize> {
        self.m
            .items
            .iter()
            .enumerate()
            .filter_map(|(i, it)| match it {
                ast::Item::Trait(t) if t.assoc_types.iter().any(|a| a.name.name == name) => Some(i),
                _ => None,
            })
            .collect()
    }

    /// A type as messages write it, type parameters by their names in `env`.
    pub(super) fn ty_name_in(&self, t: Ty, env: &GenericEnv) -> String {
        let names = env.names();
        let enums = self.enum_names.borrow();
        self.types.borrow().name_with(t, &|t| match t {
            Ty::Param(p) => names.get(p.index as usize).cloned().unwrap_or_else(|| format!("T{}", p.index)),
            Ty::Enum(e) => enums.get(e.id as usize).cloned().unwrap_or_else(|| t.to_string()),
            t => t.to_string(),
        })
    }
}

/// The environment of an `impl` block's parameters bound to `values`.
pub(super) fn impl_env(d: &ast::ImplDecl, values: &[GenericValue]) -> GenericEnv {
    let f = ast::FnItem {
        name: ast::Ident { name: String::new(), span: d.span },
        module: d.module,
        public: false,
        is_kernel: false,
        options: Default::default(),
        params: Vec::new(),
        ret: ast::RetTy::Unit,
        body: ast::Block { stmts: Vec::new(), tail: None, span: d.span },
        sig_span: d.span,
        generics: d.generics.clone(),
        owner: None,
        receiver: None,
        impl_generics: 0,
        where_preds: Vec::new(),
        required: false,
        is_const: false,
        tune: None,
    };
    GenericEnv::instance(&f, values)
}

/// The bits of a constant argument.
fn const_bits(v: ScalarValue) -> Option<u64> {
    match v {
        ScalarValue::Bool(b) => Some(b as u64),
        ScalarValue::Int(_, x) => Some(x),
        _ => None,
    }
}

fn subject_index(t: Ty) -> usize {
    match t {
        Ty::Param(p) => p.index as usize,
        _ => usize::MAX,
    }
}

/// Whether bound `b` gives the associated types `r` asks for.
fn assoc_agree(b: &TraitRef, r: &TraitRef) -> bool {
    r.assoc.iter().all(|(n, t)| b.assoc.iter().find(|(m, _)| m == n).is_none_or(|(_, u)| u == t))
}

/// What the kernel bounds give a type parameter: `Num` the arithmetic and comparison traits,
/// `Int` the bit operators too, `Float` negation.
fn numeric_implements(b: Bound, t: StdTrait, ty: Ty, r: &TraitRef) -> bool {
    use StdTrait as S;
    if b == Bound::Any {
        return false;
    }
    let same = r.args.iter().all(|a| *a == ty) && r.assoc.iter().all(|(_, o)| *o == ty);
    match t {
        S::Add | S::Sub | S::Mul | S::Div | S::Rem | S::AddAssign | S::SubAssign | S::MulAssign | S::DivAssign | S::RemAssign => same,
        S::PartialEq | S::PartialOrd | S::Default => same,
        S::BitAnd | S::BitOr | S::BitXor | S::Not | S::BitAndAssign | S::BitOrAssign | S::BitXorAssign | S::Eq | S::Ord | S::Hash => {
            b == Bound::Int && same
        }
        S::Neg => b == Bound::Float && same,
        _ => false,
    }
}

/// Rust's implementations of the standard traits for the primitive types.
fn scalar_implements(s: Scalar, t: StdTrait, r: &TraitRef) -> bool {
    use StdTrait as S;
    let me = Ty::Scalar(s);
    let rhs = r.args.first().copied().unwrap_or(me);
    let out_ok = |o: Ty| r.assoc.iter().all(|(n, x)| n != "Output" || *x == o);
    match t {
        S::Add | S::Sub | S::Mul | S::Div | S::Rem => s.is_numeric() && rhs == me && out_ok(me),
        S::AddAssign | S::SubAssign | S::MulAssign | S::DivAssign | S::RemAssign => s.is_numeric() && rhs == me,
        S::BitAnd | S::BitOr | S::BitXor => (s.is_int() || s == Scalar::Bool) && rhs == me && out_ok(me),
        S::BitAndAssign | S::BitOrAssign | S::BitXorAssign => (s.is_int() || s == Scalar::Bool) && rhs == me,
        S::Shl | S::Shr => s.is_int() && matches!(rhs, Ty::Scalar(x) if x.is_int()) && out_ok(me),
        S::ShlAssign | S::ShrAssign => s.is_int() && matches!(rhs, Ty::Scalar(x) if x.is_int()),
        S::Neg => (s.is_signed() || s.is_float()) && out_ok(me),
        S::Not => (s.is_int() || s == Scalar::Bool) && out_ok(me),
        S::PartialEq | S::PartialOrd => rhs == me,
        S::Eq | S::Ord | S::Hash => !s.is_float(),
        S::Default => true,
        S::From => r.args.first().is_some_and(|a| matches!(a, Ty::Scalar(x) if lossless(*x, s))),
        S::Into => r.args.first().is_some_and(|a| matches!(a, Ty::Scalar(x) if lossless(s, *x))),
        _ => false,
    }
}

/// Whether Rust has `From<a> for b` (conversions that lose nothing).
pub(super) fn lossless(a: Scalar, b: Scalar) -> bool {
    use Scalar::*;
    if a == b {
        return true;
    }
    match (a, b) {
        (Bool, x) => x.is_int(),
        (U8, U16 | U32 | U64 | I16 | I32 | I64 | Usize | F32 | F64) => true,
        (U16, U32 | U64 | I32 | I64 | Usize | F32 | F64) => true,
        (U32, U64 | I64 | F64) => true,
        (I8, I16 | I32 | I64 | F32 | F64) => true,
        (I16, I32 | I64 | F32 | F64) => true,
        (I32, I64 | F64) => true,
        (F16 | Bf16, F32 | F64) => true,
        (F32, F64) => true,
        _ => false,
    }
}
