//! `trait` declarations and `impl` blocks checked as items, whether or not a kernel uses them:
//! a trait's supertraits name traits; an `impl` names a type of the crate (an inherent one a
//! struct or enum, a trait's any type), a trait that exists, defines every required member and
//! associated type of the trait and nothing the trait does not declare (rustc's E0046 and
//! E0407).

use crate::lang::ast::{self, Item, OwnerKind};
use crate::lang::diag::Diagnostic;

use super::CResult;
use super::generics::GenericEnv;
use super::items::ModuleCx;
use super::traits::{StdTrait, TraitId};

impl<'m> ModuleCx<'m> {
    /// Checks trait item `i`: its supertraits name traits, its members are each named once.
    pub(super) fn check_trait(&mut self, i: usize) -> CResult<()> {
        let Some(t) = self.trait_decl(i) else { return Ok(()) };
        for b in &t.supertraits {
            self.trait_named(b, t.module)?;
        }
        for a in &t.assoc_types {
            for b in &a.bounds {
                self.trait_named(b, t.module)?;
            }
        }
        let mut seen: Vec<&ast::Ident> = Vec::new();
        for it in &self.m.items {
            if matches!(it.owner(), Some(ast::ImplOwner { kind: OwnerKind::Trait(x), .. }) if *x == i) {
                let n = it.name();
                if let Some(prev) = seen.iter().find(|p| p.name == n.name) {
                    return Err(Diagnostic::error(n.span, format!("the name `{}` is defined multiple times", n.name))
                        .label(format!("`{}` redefined here", n.name))
                        .secondary(prev.span, "previous definition here")
                        .into());
                }
                seen.push(n);
            }
        }
        Ok(())
    }

    /// Checks `impl` block `k`.
    pub(super) fn check_impl(&mut self, k: usize) -> CResult<()> {
        let d = &self.m.impls[k];
        let Some(b) = &d.trait_ else {
            return self.check_impl_heads();
        };
        let Some(tr) = self.trait_named(b, d.module)? else {
            return Err(Diagnostic::error(b.span, format!("`{}` is a bound of kache's, not a trait to implement", b.path_text()))
                .label("not a trait")
                .help("`Float`, `Int` and `Num` hold for the number types already")
                .into());
        };
        // Its type resolves, with its parameters opaque.
        let env = GenericEnv::template(&d.generics);
        let saved = self.self_ty.take();
        let r = self.ty_in(&d.self_ty, d.module, &env);
        self.self_ty = saved;
        r?;
        for g in &d.generics {
            for b in &g.bounds {
                self.trait_named(b, d.module)?;
            }
        }
        let members: Vec<&ast::Ident> = d.items.iter().map(|i| self.m.items[*i].name()).collect();
        match tr {
            TraitId::User(t) => {
                let tname = self.m.items[t].name().name.clone();
                for n in &members {
                    if self.trait_member(t, &n.name).is_none() {
                        return Err(Diagnostic::error(n.span, format!("method `{}` is not a member of trait `{tname}`", n.name))
                            .label(format!("not a member of trait `{tname}`"))
                            .into());
                    }
                }
                let mut missing = Vec::new();
                for it in &self.m.items {
                    let required = match it {
                        Item::Fn(f) => f.required,
                        Item::Const(c) => c.required,
                        _ => false,
                    };
                    if required
                        && matches!(it.owner(), Some(ast::ImplOwner { kind: OwnerKind::Trait(x), .. }) if *x == t)
                        && !members.iter().any(|m| m.name == it.name().name)
                    {
                        missing.push(format!("`{}`", it.name().name));
                    }
                }
                if let Some(td) = self.trait_decl(t) {
                    for a in &td.assoc_types {
                        if !d.assoc_types.iter().any(|(n, _)| n.name == a.name.name) {
                            missing.push(format!("`{}`", a.name.name));
                        }
                    }
                    for (n, _) in &d.assoc_types {
                        if !td.assoc_types.iter().any(|a| a.name.name == n.name) {
                            return Err(Diagnostic::error(n.span, format!("type `{}` is not a member of trait `{tname}`", n.name))
                                .label(format!("not a member of trait `{tname}`"))
                                .into());
                        }
                    }
                }
                if !missing.is_empty() {
                    return Err(Diagnostic::error(d.span, format!("not all trait items implemented, missing: {}", missing.join(", ")))
                        .label(format!("missing {} in implementation", missing.join(", ")))
                        .into());
                }
                // A method's receiver is the trait's.
                for &i in &d.items {
                    let (Item::Fn(f), Some(ti)) = (&self.m.items[i], self.trait_member(t, &self.m.items[i].name().name)) else { continue };
                    if let Item::Fn(tf) = &self.m.items[ti]
                        && tf.receiver != f.receiver
                    {
                        let show = |r: Option<ast::SelfKind>| match r {
                            None => "no `self`",
                            Some(ast::SelfKind::Value) => "`self`",
                            Some(ast::SelfKind::Ref) => "`&self`",
                            Some(ast::SelfKind::RefMut) => "`&mut self`",
                        };
                        return Err(Diagnostic::error(f.sig_span, format!("method `{}` has an incompatible type for trait", f.name.name))
                            .label(format!("takes {}, the trait's takes {}", show(f.receiver), show(tf.receiver)))
                            .secondary(tf.sig_span, "type in trait")
                            .into());
                    }
                }
            }
            TraitId::Std(s) => {
                let allowed = std_members(s).0;
                for n in &members {
                    if !allowed.contains(&n.name.as_str()) && n.name != crate::lang::syntax::index_mut::SETTER {
                        return Err(Diagnostic::error(n.span, format!("method `{}` is not a member of trait `{}`", n.name, s.name()))
                            .label(format!("not a member of trait `{}`", s.name()))
                            .into());
                    }
                }
                let required = std_members(s).1;
                let mut missing: Vec<String> =
                    required.iter().filter(|r| !members.iter().any(|m| m.name == **r)).map(|r| format!("`{r}`")).collect();
                let needs_output = s.is_binary_op() || matches!(s, StdTrait::Neg | StdTrait::Not | StdTrait::Index);
                if needs_output && !d.assoc_types.iter().any(|(n, _)| n.name == "Output") {
                    missing.push("`Output`".into());
                }
                if !missing.is_empty() {
                    return Err(Diagnostic::error(d.span, format!("not all trait items implemented, missing: {}", missing.join(", ")))
                        .label(format!("missing {} in implementation", missing.join(", ")))
                        .into());
                }
            }
        }
        Ok(())
    }
}

/// The methods an `impl` of a standard trait may define, and those it must.
fn std_members(s: StdTrait) -> (&'static [&'static str], &'static [&'static str]) {
    use StdTrait as S;
    match s {
        S::PartialEq => (&["eq", "ne"], &["eq"]),
        S::PartialOrd => (&["partial_cmp", "lt", "le", "gt", "ge"], &["partial_cmp"]),
        S::Ord => (&["cmp", "max", "min", "clamp"], &["cmp"]),
        S::Clone => (&["clone", "clone_from"], &["clone"]),
        S::Default => (&["default"], &["default"]),
        S::Add => (&["add"], &["add"]),
        S::Sub => (&["sub"], &["sub"]),
        S::Mul => (&["mul"], &["mul"]),
        S::Div => (&["div"], &["div"]),
        S::Rem => (&["rem"], &["rem"]),
        S::BitAnd => (&["bitand"], &["bitand"]),
        S::BitOr => (&["bitor"], &["bitor"]),
        S::BitXor => (&["bitxor"], &["bitxor"]),
        S::Shl => (&["shl"], &["shl"]),
        S::Shr => (&["shr"], &["shr"]),
        S::Neg => (&["neg"], &["neg"]),
        S::Not => (&["not"], &["not"]),
        S::AddAssign => (&["add_assign"], &["add_assign"]),
        S::SubAssign => (&["sub_assign"], &["sub_assign"]),
        S::MulAssign => (&["mul_assign"], &["mul_assign"]),
        S::DivAssign => (&["div_assign"], &["div_assign"]),
        S::RemAssign => (&["rem_assign"], &["rem_assign"]),
        S::BitAndAssign => (&["bitand_assign"], &["bitand_assign"]),
        S::BitOrAssign => (&["bitor_assign"], &["bitor_assign"]),
        S::BitXorAssign => (&["bitxor_assign"], &["bitxor_assign"]),
        S::ShlAssign => (&["shl_assign"], &["shl_assign"]),
        S::ShrAssign => (&["shr_assign"], &["shr_assign"]),
        S::Index => (&["index"], &["index"]),
        S::IndexMut => (&["index_mut", "index_mut_set"], &["index_mut"]),
        S::From => (&["from"], &["from"]),
        S::Into => (&["into"], &["into"]),
        S::Eq | S::Copy | S::Debug | S::Hash | S::Send | S::Sync | S::Sized => (&["fmt", "hash"], &[]),
        S::Fn | S::FnMut | S::FnOnce => (&[], &[]),
    }
}

impl<'c, 'm> super::body::FnCx<'c, 'm> {
    /// `N` of type `t` where `N` is an associated constant of a trait: of a bound at a
    /// definition (its value unknown there, its type the trait's), else of the `impl` of the
    /// trait for `t` (or the trait's default); `None` if no trait declares it.
    pub(super) fn trait_const(
        &mut self,
        t: crate::ir::Ty,
        name: &ast::Ident,
        span: crate::span::Span,
    ) -> CResult<Option<super::body::CExpr>> {
        use crate::ir::*;
        let traits = self.mcx.traits_with_member(&name.name);
        for tr in traits {
            let Some(ci) = self.mcx.trait_member(tr, &name.name) else { continue };
            let Item::Const(c) = &self.mcx.m.items[ci] else { continue };
            if let Ty::Param(_) = t {
                if !self.generics.bounds_of(t).any(|b| b.id == TraitId::User(tr)) {
                    continue;
                }
                let mut env = GenericEnv::none();
                env.self_ty = Some(t);
                let ty = self.mcx.ty_in(&c.ty, c.module, &env)?;
                let zero = match ty {
                    Ty::Scalar(Scalar::Bool) => ScalarValue::Bool(false),
                    Ty::Scalar(s) if s.is_int() => ScalarValue::Int(s, 0),
                    Ty::Scalar(Scalar::F32) => ScalarValue::F32(0.0),
                    Ty::Scalar(Scalar::F64) => ScalarValue::F64(0.0),
                    _ => return Ok(Some(self.mk(ExprKind::Zeroed, ty, span))),
                };
                return Ok(Some(self.mk(ExprKind::Lit(zero), ty, span)));
            }
            let Some(v) = self.mcx.trait_const_value(t, tr, &name.name, span)? else { continue };
            return Ok(Some(self.mk(ExprKind::Lit(v), Ty::Scalar(v.ty()), span)));
        }
        Ok(None)
    }
}

impl<'m> ModuleCx<'m> {
    /// The value of trait `tr`'s scalar constant `name` for type `t`: the `impl`'s, else the
    /// trait's default (with `Self` = `t`); `None` if `t` does not implement the trait.
    pub(super) fn trait_const_value(
        &mut self,
        t: crate::ir::Ty,
        tr: usize,
        name: &str,
        span: crate::span::Span,
    ) -> CResult<Option<crate::ir::ScalarValue>> {
        use crate::ir::*;
        let Some((imp, _)) = self.find_impl(TraitId::User(tr), t, &[])? else { return Ok(None) };
        let item = match self.impl_member(imp, name) {
            Some(i) => i,
            None => match self.trait_member(tr, name) {
                Some(i) => i,
                None => return Ok(None),
            },
        };
        let Item::Const(c) = &self.m.items[item] else { return Ok(None) };
        if c.required {
            return Err(Diagnostic::error(span, format!("the constant `{name}` has no value for this type")).label("no value").into());
        }
        let saved = self.self_ty.replace(t);
        let ty = self.ty_of(&c.ty, c.module);
        let r = ty.and_then(|ty| match ty {
            Ty::Scalar(s) => self.eval_const(&c.value, Some(s), c.module).map(Some),
            _ => Ok(None),
        });
        self.self_ty = saved;
        r
    }
}
