//! `trait` declarations and `impl` blocks (inherent and of traits): their generic parameters,
//! the self type and trait an `impl` names, associated types, and the associated functions and
//! constants, each an item of the module owned by its block or trait.

use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;

use super::expr::ident;
use super::items::check_attr;
use super::spans::spn;
use super::{Lower, PResult, unsupported};

impl Lower {
    /// An `impl` block: entered in the crate's list of blocks, its functions and constants
    /// items of the module that name it as their owner.
    pub(super) fn impl_block(&mut self, i: &syn::ItemImpl) -> PResult<()> {
        for a in &i.attrs {
            check_attr(a, false)?;
        }
        if let Some(u) = &i.unsafety {
            return Err(unsupported(spn(u), "`unsafe impl`", "remove `unsafe`").into());
        }
        if let Some(d) = &i.defaultness {
            return Err(unsupported(spn(d), "`default impl`", "remove `default`").into());
        }
        let (generics, where_preds) = self.generics(&i.generics)?;
        let saved = self.type_params.len();
        self.type_params.extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
        let r = self.impl_header(i, generics, where_preds);
        self.type_params.truncate(saved);
        let (decl, items) = r?;
        let id = self.impls.len();
        let owner = ImplOwner { kind: OwnerKind::Impl(id), span: spn(&i.self_ty) };
        let generics = decl.generics.clone();
        let index_mut = decl.trait_.as_ref().is_some_and(|t| t.path.last().is_some_and(|n| n.name == "IndexMut"));
        self.impls.push(decl);
        let module = self.module;
        for item in items {
            let index = self.items.len();
            match item {
                syn::ImplItem::Fn(f) => {
                    if let Some(d) = &f.defaultness {
                        return Err(unsupported(spn(d), "`default` functions", "remove `default`").into());
                    }
                    let fi = self.fn_parts(&f.attrs, &f.vis, &f.sig, Some(&f.block), Some(&owner), &generics)?;
                    if index_mut && fi.name.name == "index_mut" {
                        // `&mut` of a place of `self`: a getter and a hidden setter.
                        let (get, set) = super::index_mut::split(fi)?;
                        self.items.push(Item::Fn(get));
                        self.impls[id].items.push(index);
                        self.items.push(Item::Fn(set));
                        self.impls[id].items.push(index + 1);
                        continue;
                    }
                    self.items.push(Item::Fn(fi));
                }
                syn::ImplItem::Const(c) => {
                    for a in &c.attrs {
                        check_attr(a, false)?;
                    }
                    if !c.generics.params.is_empty() {
                        return Err(unsupported(spn(&c.generics), "generic constants", "remove the generic parameters").into());
                    }
                    let saved = self.type_params.len();
                    self.type_params
                        .extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
                    let r = (|| -> PResult<ConstItem> {
                        Ok(ConstItem {
                            name: ident(&c.ident),
                            module,
                            public: true,
                            is_static: false,
                            owner: Some(owner.clone()),
                            ty: self.ty(&c.ty)?,
                            value: self.expr(&c.expr)?,
                            required: false,
                            span: spn(c),
                        })
                    })();
                    self.type_params.truncate(saved);
                    self.items.push(Item::Const(r?));
                }
                // Associated types are part of the header (read above).
                syn::ImplItem::Type(_) => continue,
                syn::ImplItem::Macro(m) => {
                    return Err(unsupported(spn(&m.mac.path), "macros", "write the code out; kache has no macros").into());
                }
                other => return Err(unsupported(spn(other), "this kind of associated item", "write functions and constants").into()),
            }
            self.impls[id].items.push(index);
        }
        Ok(())
    }

    fn impl_header<'i>(
        &mut self,
        i: &'i syn::ItemImpl,
        generics: Vec<GenericParamDef>,
        where_preds: Vec<WherePred>,
    ) -> PResult<(ImplDecl, Vec<&'i syn::ImplItem>)> {
        let self_ty = self.ty(&i.self_ty)?;
        let trait_ = match &i.trait_ {
            Some((Some(bang), _, _)) => return Err(unsupported(spn(bang), "negative impls", "remove the `!`").into()),
            Some((None, path, _)) => {
                let bound = syn::TypeParamBound::Trait(syn::TraitBound {
                    paren_token: None,
                    modifier: syn::TraitBoundModifier::None,
                    lifetimes: None,
                    path: path.clone(),
                });
                self.trait_bound(&bound)?
            }
            None => None,
        };
        let mut assoc_types = Vec::new();
        let mut items = Vec::new();
        for item in &i.items {
            match item {
                syn::ImplItem::Type(t) => {
                    for a in &t.attrs {
                        check_attr(a, false)?;
                    }
                    if !t.generics.params.is_empty() {
                        return Err(unsupported(spn(&t.generics), "generic associated types", "remove the parameters").into());
                    }
                    if trait_.is_none() {
                        return Err(Diagnostic::error(spn(&t.ident), "associated types are declared in trait `impl`s")
                            .label("in an inherent `impl`")
                            .help("write the type out")
                            .into());
                    }
                    assoc_types.push((ident(&t.ident), self.ty(&t.ty)?));
                }
                other => items.push(other),
            }
        }
        let span = match &i.trait_ {
            Some((_, path, _)) => spn(path).to(spn(&i.self_ty)),
            None => spn(&i.self_ty),
        };
        let decl = ImplDecl { module: self.module, generics, self_ty, trait_, assoc_types, where_preds, items: Vec::new(), span };
        Ok((decl, items))
    }

    /// A `trait` declaration: the trait an item, its methods and constants items it owns.
    pub(super) fn trait_item(&mut self, t: &syn::ItemTrait) -> PResult<()> {
        for a in &t.attrs {
            check_attr(a, false)?;
        }
        if let Some(u) = &t.unsafety {
            return Err(unsupported(spn(u), "`unsafe trait`", "remove `unsafe`").into());
        }
        if let Some(a) = &t.auto_token {
            return Err(unsupported(spn(a), "auto traits", "remove `auto`").into());
        }
        let (generics, _) = self.generics(&t.generics)?;
        let saved = self.type_params.len();
        self.type_params.extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
        let r = self.trait_body(t, generics);
        self.type_params.truncate(saved);
        r
    }

    fn trait_body(&mut self, t: &syn::ItemTrait, generics: Vec<GenericParamDef>) -> PResult<()> {
        let mut supertraits = Vec::new();
        for b in &t.supertraits {
            if let Some(b) = self.trait_bound(b)? {
                supertraits.push(b);
            }
        }
        let mut assoc_types = Vec::new();
        for item in &t.items {
            if let syn::TraitItem::Type(ty) = item {
                if !ty.generics.params.is_empty() {
                    return Err(unsupported(spn(&ty.generics), "generic associated types", "remove the parameters").into());
                }
                if let Some((_, d)) = &ty.default {
                    return Err(unsupported(spn(d), "defaults of associated types", "give the type in each `impl`").into());
                }
                let mut bounds = Vec::new();
                for b in &ty.bounds {
                    if let Some(b) = self.trait_bound(b)? {
                        bounds.push(b);
                    }
                }
                assoc_types.push(AssocTypeDecl { name: ident(&ty.ident), bounds });
            }
        }
        let index = self.items.len();
        let module = self.module;
        self.items.push(Item::Trait(TraitItem {
            name: ident(&t.ident),
            module,
            public: !matches!(t.vis, syn::Visibility::Inherited),
            generics: generics.clone(),
            supertraits,
            assoc_types,
            span: spn(&t.ident),
        }));
        let owner = ImplOwner { kind: OwnerKind::Trait(index), span: spn(&t.ident) };
        for item in &t.items {
            match item {
                syn::TraitItem::Fn(f) => {
                    let fi = self.fn_parts(&f.attrs, &syn::Visibility::Inherited, &f.sig, f.default.as_ref(), Some(&owner), &generics)?;
                    self.items.push(Item::Fn(fi));
                }
                syn::TraitItem::Const(c) => {
                    for a in &c.attrs {
                        check_attr(a, false)?;
                    }
                    if !c.generics.params.is_empty() {
                        return Err(unsupported(spn(&c.generics), "generic constants", "remove the generic parameters").into());
                    }
                    let (value, required) = match &c.default {
                        Some((_, e)) => (self.expr(e)?, false),
                        None => (Expr { kind: ExprKind::Unit, span: spn(&c.ident) }, true),
                    };
                    let ty = self.ty(&c.ty)?;
                    self.items.push(Item::Const(ConstItem {
                        name: ident(&c.ident),
                        module,
                        public: true,
                        is_static: false,
                        owner: Some(owner.clone()),
                        ty,
                        value,
                        required,
                        span: spn(c),
                    }));
                }
                syn::TraitItem::Type(_) => {}
                syn::TraitItem::Macro(m) => {
                    return Err(unsupported(spn(&m.mac.path), "macros", "write the code out; kache has no macros").into());
                }
                other => return Err(unsupported(spn(other), "this kind of trait item", "write functions and constants").into()),
            }
        }
        Ok(())
    }
}
