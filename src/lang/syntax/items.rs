//! Items: `fn` (signature, parameters, kernel and factory return types), `const` and `static`,
//! C-like `enum`s, `use` declarations and `mod` items, attributes, and the explanation for every
//! other kind of item.

use crate::ir::Scalar;
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::expr::ident;
use super::spans::{sp, spn};
use super::{Lower, PResult, unsupported};

pub(super) fn check_attr(attr: &syn::Attribute, on_fn: bool) -> PResult<bool> {
    let path = attr.path();
    let name = path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::");
    match name.as_str() {
        "kernel" if on_fn => {
            kernel_options(attr)?;
            Ok(true)
        }
        // Read with the rest of the kernel's signature (`tune.rs`), which its names refer to.
        "tune" if on_fn => Ok(false),
        "doc" | "allow" | "warn" | "deny" | "expect" | "inline" | "rustfmt::skip" | "must_use" | "cfg_attr" => Ok(false),
        _ => Err(Diagnostic::error(spn(attr), format!("unsupported attribute `#[{name}]`"))
            .label("not supported here")
            .help(
                "supported attributes: `#[kernel]` and `#[tune(..)]` on functions, and `#[inline]`, `#[allow(..)]` and doc comments, \
                 which change nothing",
            )
            .into()),
    }
}

/// The options of `#[kernel(..)]`: `fmad = true|false`, `max_threads = N`, `min_blocks = M`.
/// A bare `#[kernel]` has none.
fn kernel_options(attr: &syn::Attribute) -> PResult<KernelOptions> {
    let mut opts = KernelOptions::default();
    let list = match &attr.meta {
        syn::Meta::Path(_) => return Ok(opts),
        syn::Meta::List(l) => l,
        syn::Meta::NameValue(nv) => {
            return Err(Diagnostic::error(spn(nv), "`#[kernel]` takes options in parentheses")
                .label("not `#[kernel = ..]`")
                .help("write `#[kernel]` or `#[kernel(fmad = false)]`")
                .into());
        }
    };
    let parsed = list.parse_args_with(syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated);
    let items = parsed.map_err(|e| {
        Diagnostic::error(sp(e.span()), format!("malformed `#[kernel(..)]`: {e}"))
            .label("here")
            .help("options are `name = value` pairs: `#[kernel(fmad = false)]`")
    })?;
    for nv in items {
        let key = nv.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
        match key.as_str() {
            "fmad" => {
                let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Bool(b), .. }) = &nv.value else {
                    return Err(Diagnostic::error(spn(&nv.value), "`fmad` is `true` or `false`").label("expected a bool").into());
                };
                if opts.fmad.is_some() {
                    return Err(Diagnostic::error(spn(&nv), "`fmad` is given twice").label("repeated").into());
                }
                opts.fmad = Some(b.value);
            }
            "max_threads" | "min_blocks" => {
                let (lo, hi) = if key == "max_threads" { (1, 1024) } else { (1, 32) };
                let n = match &nv.value {
                    syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<u32>().ok(),
                    _ => None,
                }
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| {
                    Diagnostic::error(spn(&nv.value), format!("`{key}` is an integer from {lo} to {hi}"))
                        .label("expected an integer literal")
                })?;
                let slot = if key == "max_threads" { &mut opts.max_threads } else { &mut opts.min_blocks };
                if slot.is_some() {
                    return Err(Diagnostic::error(spn(&nv), format!("`{key}` is given twice")).label("repeated").into());
                }
                *slot = Some(n);
            }
            _ => {
                return Err(Diagnostic::error(spn(&nv.path), format!("unknown kernel option `{key}`"))
                    .label("not an option of `#[kernel]`")
                    .help(
                        "the options of `#[kernel(..)]`: `fmad = true|false` (fuse `a * b + c` into one rounding), \
                         `max_threads = N` and `min_blocks = M` (launch bounds)",
                    )
                    .into());
            }
        }
    }
    if opts.min_blocks.is_some() && opts.max_threads.is_none() {
        return Err(Diagnostic::error(spn(list), "`min_blocks` needs `max_threads`")
            .label("no `max_threads` here")
            .help("write `#[kernel(max_threads = 256, min_blocks = 2)]`: blocks of at most how many threads")
            .into());
    }
    Ok(opts)
}

/// `pub`, `pub(crate)`, `pub(super)`, `pub(in path)`: all visible to the rest of the crate.
fn is_pub(v: &syn::Visibility) -> bool {
    !matches!(v, syn::Visibility::Inherited)
}

/// The scalar of an integer `#[repr(..)]`.
fn repr_int(name: &str) -> Option<Scalar> {
    Scalar::from_name(name).filter(|s| s.is_int())
}

impl Lower {
    /// Lowers the items of one module (a file's, or an inline `mod`'s) into `self.items`.
    pub(super) fn items(&mut self, items: &[syn::Item]) -> PResult<()> {
        for item in items {
            if let Some(i) = self.item(item)? {
                self.items.push(i);
            }
        }
        Ok(())
    }

    fn item(&mut self, item: &syn::Item) -> PResult<Option<Item>> {
        use syn::Item as I;
        let module = self.module;
        Ok(Some(match item {
            I::Fn(f) => Item::Fn(self.fn_item(f)?),
            I::Const(c) => {
                for a in &c.attrs {
                    check_attr(a, false)?;
                }
                if !c.generics.params.is_empty() {
                    return Err(unsupported(spn(&c.generics), "generic constants", "remove the generic parameters").into());
                }
                Item::Const(ConstItem {
                    name: ident(&c.ident),
                    module,
                    public: is_pub(&c.vis),
                    is_static: false,
                    owner: None,
                    ty: self.ty(&c.ty)?,
                    value: self.expr(&c.expr)?,
                    required: false,
                    span: spn(c),
                })
            }
            I::Static(s) => {
                for a in &s.attrs {
                    check_attr(a, false)?;
                }
                if let syn::StaticMutability::Mut(m) = &s.mutability {
                    return Err(unsupported(
                        spn(m),
                        "`static mut` items",
                        "use a `static` (read-only) or pass a writable array as a kernel argument",
                    )
                    .into());
                }
                Item::Const(ConstItem {
                    name: ident(&s.ident),
                    module,
                    public: is_pub(&s.vis),
                    is_static: true,
                    owner: None,
                    ty: self.ty(&s.ty)?,
                    value: self.expr(&s.expr)?,
                    required: false,
                    span: spn(s),
                })
            }
            I::Use(u) => {
                for a in &u.attrs {
                    check_attr(a, false)?;
                }
                let mut prefix = Vec::new();
                if u.leading_colon.is_none() {
                    self.use_tree(&u.tree, &mut prefix, is_pub(&u.vis))?;
                }
                return Ok(None);
            }
            I::Struct(s) => Item::Struct(self.struct_item(s)?),
            I::Enum(e) => Item::Enum(self.enum_item(e)?),
            I::Union(u) => return Err(unsupported(spn(&u.ident), "unions", "use separate arrays").into()),
            I::Trait(t) => {
                self.trait_item(t)?;
                return Ok(None);
            }
            I::Impl(i) => {
                self.impl_block(i)?;
                return Ok(None);
            }
            I::Mod(m) => {
                self.mod_item(m)?;
                return Ok(None);
            }
            I::Type(t) => return Err(unsupported(spn(&t.ident), "type aliases", "write the type out").into()),
            I::Macro(m) => return Err(unsupported(spn(&m.mac.path), "macros", "write the code out; kache has no macros").into()),
            I::ExternCrate(e) => return Err(unsupported(spn(e), "`extern crate` items", "remove it").into()),
            I::ForeignMod(f) => return Err(unsupported(spn(&f.abi), "`extern` blocks", "remove it").into()),
            I::TraitAlias(t) => return Err(unsupported(spn(&t.ident), "trait aliases", "remove it").into()),
            other => return Err(unsupported(spn(other), "this kind of item", "use `fn`, `const` and `static` items").into()),
        }))
    }

    fn fn_item(&mut self, f: &syn::ItemFn) -> PResult<FnItem> {
        self.fn_parts(&f.attrs, &f.vis, &f.sig, Some(&f.block), None, &[])
    }

    /// A function item, or an associated function of an `impl` block or a trait (`owner`,
    /// whose generic parameters `outer` come first in the function's). A trait's method may
    /// have no body.
    pub(super) fn fn_parts(
        &mut self,
        attrs: &[syn::Attribute],
        vis: &syn::Visibility,
        sig: &syn::Signature,
        block: Option<&syn::Block>,
        owner: Option<&ImplOwner>,
        outer: &[GenericParamDef],
    ) -> PResult<FnItem> {
        let mut is_kernel = false;
        let mut options = KernelOptions::default();
        for a in attrs {
            if check_attr(a, true)? {
                if owner.is_some() {
                    return Err(Diagnostic::error(spn(a), "a kernel cannot be an associated function")
                        .label("`#[kernel]` in an `impl` block")
                        .help("declare the kernel at the top level of a module and call the methods from it")
                        .into());
                }
                is_kernel = true;
                options = kernel_options(a)?;
            }
        }
        if let Some(u) = &sig.unsafety {
            return Err(unsupported(spn(u), "`unsafe` functions", "remove `unsafe`").into());
        }
        if let Some(a) = &sig.asyncness {
            return Err(unsupported(spn(a), "`async` functions", "remove `async`").into());
        }
        if let Some(a) = &sig.abi {
            return Err(unsupported(spn(a), "`extern` functions", "remove the ABI").into());
        }
        let saved = self.type_params.clone();
        self.type_params.extend(outer.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
        let r = self.generics(&sig.generics).and_then(|(own, preds)| {
            for g in &own {
                if let Some(prev) = outer.iter().find(|p| p.name.name == g.name.name) {
                    return Err(Diagnostic::error(
                        g.name.span,
                        format!("the name `{}` is already used for a generic parameter", g.name.name),
                    )
                    .label("already used")
                    .secondary(prev.name.span, "first use of the name, in the enclosing block")
                    .into());
                }
            }
            let mut generics = outer.to_vec();
            generics.extend(own);
            self.type_params.extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
            let parts =
                FnHead { is_kernel, options, generics, impl_generics: outer.len(), where_preds: preds, is_const: sig.constness.is_some() };
            self.fn_rest(vis, sig, block, parts, owner)
        });
        self.type_params = saved;
        let mut f = r?;
        let mut tunes = attrs.iter().filter(|a| a.path().is_ident("tune"));
        if let Some(a) = tunes.next() {
            if let Some(again) = tunes.next() {
                return Err(Diagnostic::error(spn(again), "`#[tune]` is given twice").label("repeated").into());
            }
            if !is_kernel {
                return Err(Diagnostic::error(spn(a), "`#[tune]` on a function that is not a kernel")
                    .label("not a `#[kernel]`")
                    .help("a tuning space belongs to a kernel: add `#[kernel]`")
                    .into());
            }
            f.tune = Some(super::tune::tune_space(a, &f)?);
        }
        Ok(f)
    }

    fn fn_rest(
        &mut self,
        vis: &syn::Visibility,
        sig: &syn::Signature,
        block: Option<&syn::Block>,
        head: FnHead,
        owner: Option<&ImplOwner>,
    ) -> PResult<FnItem> {
        let FnHead { is_kernel, options, mut generics, impl_generics, where_preds, is_const } = head;
        if let Some(v) = &sig.variadic {
            return Err(unsupported(spn(v), "variadic functions", "list the parameters").into());
        }
        let mut params: Vec<Param> = Vec::new();
        let mut receiver = None;
        for input in &sig.inputs {
            match input {
                syn::FnArg::Receiver(r) => {
                    if owner.is_none() {
                        return Err(Diagnostic::error(spn(r), "`self` parameter is only allowed in associated functions")
                            .label("not an associated function")
                            .help("declare methods in an `impl` block: `impl Particle { fn speed(&self) -> f32 { .. } }`")
                            .into());
                    }
                    if r.colon_token.is_some() && !self_type_ok(&r.ty) {
                        return Err(unsupported(spn(r), "`self` with this type", "write `self`, `&self` or `&mut self`").into());
                    }
                    if let Some((_, Some(l))) = &r.reference {
                        return Err(unsupported(spn(l), "lifetimes", "remove the lifetime").into());
                    }
                    let kind = match (&r.reference, &*r.ty) {
                        (Some(_), _) if r.mutability.is_some() => SelfKind::RefMut,
                        (Some(_), _) => SelfKind::Ref,
                        // `self: &Self`, `self: &mut Self`
                        (None, syn::Type::Reference(t)) if r.colon_token.is_some() && t.mutability.is_some() => SelfKind::RefMut,
                        (None, syn::Type::Reference(_)) if r.colon_token.is_some() => SelfKind::Ref,
                        (None, _) => SelfKind::Value,
                    };
                    receiver = Some(kind);
                    let span = spn(r);
                    let self_span = spn(&r.self_token);
                    params.push(Param {
                        name: Ident { name: "self".into(), span: self_span },
                        // A `&mut self` receiver is written through; `mut self` is a mutable copy.
                        mutable: kind == SelfKind::RefMut || (kind == SelfKind::Value && r.mutability.is_some()),
                        ty: Some(TypeExpr::Named(vec![Ident { name: "Self".into(), span: self_span }], span)),
                        span,
                    });
                }
                syn::FnArg::Typed(pt) => {
                    let (name, mutable) = self.binding_pat(&pt.pat)?;
                    if let Some(first) = params.iter().find(|p| p.name.name == name.name && name.name != "_") {
                        return Err(Diagnostic::error(
                            name.span,
                            format!("identifier `{}` is bound more than once in this parameter list", name.name),
                        )
                        .label("used as parameter more than once")
                        .secondary(first.name.span, "first bound here")
                        .help("give each parameter its own name")
                        .into());
                    }
                    // `x: &impl Trait`, `x: &mut impl Trait`: a reference to one.
                    let (inner_ty, by_ref) = match &*pt.ty {
                        syn::Type::Reference(r) if matches!(*r.elem, syn::Type::ImplTrait(_)) => {
                            (&*r.elem, Some((r.mutability.is_some(), spn(r))))
                        }
                        t => (t, None),
                    };
                    let ty = match self.impl_trait_bounds(inner_ty)? {
                        // `x: impl Trait`: an anonymous type parameter bounded by the trait.
                        Some(bounds) => {
                            let text = quote::ToTokens::to_token_stream(inner_ty).to_string();
                            let mut pname = text.clone();
                            let mut n = 1;
                            while generics.iter().any(|g| g.name.name == pname) {
                                n += 1;
                                pname = format!("{text} #{n}");
                            }
                            let pid = Ident { name: pname, span: spn(inner_ty) };
                            let bound = bounds.iter().filter_map(super::generics::kernel_bound).next().unwrap_or(crate::ir::Bound::Any);
                            generics.push(GenericParamDef {
                                name: pid.clone(),
                                kind: GenericParamKind::Type(bound),
                                bounds,
                                span: pid.span,
                            });
                            match by_ref {
                                Some((mutable, span)) => TypeExpr::Ref { inner: Box::new(TypeExpr::Param(pid)), mutable, span },
                                None => TypeExpr::Param(pid),
                            }
                        }
                        None => self.ty(&pt.ty)?,
                    };
                    params.push(Param { name, mutable, ty: Some(ty), span: spn(pt) });
                }
            }
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => RetTy::Unit,
            syn::ReturnType::Type(_, t) => self.ret_ty(t)?,
        };
        let sig_span = Span::new(spn(&sig.fn_token).lo as usize, spn(&sig.output).hi.max(spn(&sig.paren_token.span.join()).hi) as usize);
        let body = match block {
            Some(b) => self.block(b)?,
            None => Block { stmts: Vec::new(), tail: None, span: sig_span },
        };
        Ok(FnItem {
            name: ident(&sig.ident),
            module: self.module,
            public: is_pub(vis),
            is_kernel,
            options,
            params,
            ret,
            body,
            sig_span,
            generics,
            owner: owner.cloned(),
            receiver,
            tune: None,
            impl_generics,
            where_preds,
            required: block.is_none(),
            is_const,
        })
    }

    fn struct_item(&mut self, s: &syn::ItemStruct) -> PResult<StructItem> {
        let mut derives = Vec::new();
        for a in &s.attrs {
            if a.path().is_ident("derive") {
                let _ = a.parse_nested_meta(|m| {
                    derives.push(m.path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::"));
                    Ok(())
                });
                continue;
            }
            if a.path().is_ident("repr") {
                // Kernel structs have C's layout by definition: `#[repr(C)]` says so again.
                let mut bad = None;
                let _ = a.parse_nested_meta(|m| {
                    if !m.path.is_ident("C") {
                        bad = Some(spn(&m.path));
                    }
                    Ok(())
                });
                if let Some(span) = bad {
                    return Err(Diagnostic::error(span, "unsupported `repr` for a struct")
                        .label("only `C` is accepted")
                        .note("kernel structs have C's layout: fields in order, each at its natural alignment")
                        .help("write `#[repr(C)]`, or no `repr`")
                        .into());
                }
                continue;
            }
            check_attr(a, false)?;
        }
        let (generics, _) = self.generics(&s.generics)?;
        let saved = self.type_params.len();
        self.type_params.extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
        let r = self.struct_fields(&s.fields);
        self.type_params.truncate(saved);
        let (kind, out) = r?;
        Ok(StructItem {
            name: ident(&s.ident),
            module: self.module,
            public: is_pub(&s.vis),
            derives,
            kind,
            generics,
            fields: out,
            span: spn(&s.ident),
        })
    }

    /// The fields of a struct or of an enum's variant: named, numbered (a tuple struct's are
    /// named `0`, `1`, ..) or none.
    pub(super) fn struct_fields(&mut self, fields: &syn::Fields) -> PResult<(StructKind, Vec<FieldDecl>)> {
        let (kind, list) = match fields {
            syn::Fields::Named(n) => (StructKind::Named, n.named.iter().collect::<Vec<_>>()),
            syn::Fields::Unnamed(u) => (StructKind::Tuple, u.unnamed.iter().collect::<Vec<_>>()),
            syn::Fields::Unit => (StructKind::Unit, Vec::new()),
        };
        let mut out: Vec<FieldDecl> = Vec::new();
        for (k, f) in list.into_iter().enumerate() {
            for a in &f.attrs {
                check_attr(a, false)?;
            }
            let name = match &f.ident {
                Some(id) => ident(id),
                None => Ident { name: k.to_string(), span: spn(&f.ty) },
            };
            if let Some(prev) = out.iter().find(|p| p.name.name == name.name) {
                return Err(Diagnostic::error(name.span, format!("field `{}` is already declared", name.name))
                    .label("field already declared")
                    .secondary(prev.name.span, format!("`{}` first declared here", name.name))
                    .into());
            }
            out.push(FieldDecl { name, ty: self.ty(&f.ty)? });
        }
        Ok((kind, out))
    }

    /// `use` trees, flattened into one [`UseDecl`] per name they bind.
    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<Ident>, public: bool) -> PResult<()> {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(ident(&p.ident));
                self.use_tree(&p.tree, prefix, public)?;
                prefix.pop();
            }
            syn::UseTree::Name(n) if n.ident == "self" => {
                // `use a::b::{self}` binds `b`.
                let Some(last) = prefix.last().cloned() else {
                    return Err(Diagnostic::error(spn(n), "`self` imports are only allowed within a `{ }` list").label("here").into());
                };
                self.uses.push((self.module, UseDecl { path: prefix.clone(), alias: last, glob: false, public }));
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                path.push(ident(&n.ident));
                self.uses.push((self.module, UseDecl { path, alias: ident(&n.ident), glob: false, public }));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                path.push(ident(&r.ident));
                self.uses.push((self.module, UseDecl { path, alias: ident(&r.rename), glob: false, public }));
            }
            syn::UseTree::Glob(g) => {
                let alias = Ident { name: "*".into(), span: spn(g) };
                self.uses.push((self.module, UseDecl { path: prefix.clone(), alias, glob: true, public }));
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(t, prefix, public)?;
                }
            }
        }
        Ok(())
    }

    fn enum_item(&mut self, e: &syn::ItemEnum) -> PResult<EnumItem> {
        let mut repr = None;
        let mut derives = Vec::new();
        for a in &e.attrs {
            if a.path().is_ident("derive") {
                let _ = a.parse_nested_meta(|m| {
                    derives.push(m.path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::"));
                    Ok(())
                });
                continue;
            }
            if a.path().is_ident("repr") {
                let mut bad = None;
                let _ = a.parse_nested_meta(|m| {
                    let name = m.path.get_ident().map(|i| i.to_string()).unwrap_or_default();
                    match (name.as_str(), repr_int(&name)) {
                        (_, Some(s)) => repr = Some(s),
                        ("C", _) => {}
                        _ => bad = Some(spn(&m.path)),
                    }
                    Ok(())
                });
                if let Some(span) = bad {
                    return Err(Diagnostic::error(span, "unsupported `repr` for an enum")
                        .label("not an integer type or `C`")
                        .help("write `#[repr(u8)]` (or another integer type), `#[repr(C)]`, or no `repr`")
                        .into());
                }
                continue;
            }
            check_attr(a, false)?;
        }
        let (generics, _) = self.generics(&e.generics)?;
        let saved = self.type_params.len();
        self.type_params.extend(generics.iter().filter(|g| matches!(g.kind, GenericParamKind::Type(_))).map(|g| g.name.name.clone()));
        let r = self.variants(e);
        self.type_params.truncate(saved);
        let variants = r?;
        Ok(EnumItem {
            name: ident(&e.ident),
            module: self.module,
            public: is_pub(&e.vis),
            repr,
            derives,
            generics,
            variants,
            span: spn(&e.ident),
        })
    }

    fn variants(&mut self, e: &syn::ItemEnum) -> PResult<Vec<VariantDecl>> {
        let mut variants = Vec::new();
        for v in &e.variants {
            for a in &v.attrs {
                if !a.path().is_ident("default") {
                    check_attr(a, false)?;
                }
            }
            let fields = match self.struct_fields(&v.fields)? {
                (StructKind::Unit, _) => VariantFields::Unit,
                (StructKind::Tuple, f) => VariantFields::Tuple(f.into_iter().map(|f| f.ty).collect()),
                (StructKind::Named, f) => VariantFields::Named(f),
            };
            let discriminant = match &v.discriminant {
                Some((_, x)) if !matches!(fields, VariantFields::Unit) => {
                    return Err(unsupported(spn(x), "discriminants on enums with fields", "remove the discriminant").into());
                }
                Some((_, x)) => Some(self.expr(x)?),
                None => None,
            };
            variants.push(VariantDecl { name: ident(&v.ident), discriminant, fields });
        }
        Ok(variants)
    }

    fn mod_item(&mut self, m: &syn::ItemMod) -> PResult<()> {
        let mut path_attr = None;
        for a in &m.attrs {
            if a.path().is_ident("path") {
                if let syn::Meta::NameValue(nv) = &a.meta
                    && let syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(s), .. }) = &nv.value
                {
                    path_attr = Some((s.value(), spn(a)));
                    continue;
                }
                return Err(Diagnostic::error(spn(a), "malformed `#[path]` attribute").label("write `#[path = \"file.rs\"]`").into());
            }
            check_attr(a, false)?;
        }
        if let Some(u) = &m.unsafety {
            return Err(unsupported(spn(u), "`unsafe` modules", "remove `unsafe`").into());
        }
        let name = ident(&m.ident);
        let id = self.modules.len();
        let span = spn(&m.ident);
        self.modules.push(ModuleDecl {
            name: name.name.clone(),
            parent: Some(self.module),
            public: is_pub(&m.vis),
            span,
            uses: Vec::new(),
        });
        match &m.content {
            Some((_, items)) => {
                if let Some((_, at)) = path_attr {
                    return Err(Diagnostic::error(at, "`#[path]` on an inline module is not supported").label("remove it").into());
                }
                let saved = (self.module, self.child_dir.clone());
                self.module = id;
                self.child_dir = format!("{}{}/", self.child_dir, name.name);
                let r = self.items(items);
                (self.module, self.child_dir) = saved;
                r?;
            }
            None => self.pending.push(super::crate_tree::PendingMod {
                module: id,
                name,
                dir: self.child_dir.clone(),
                file_dir: self.file_dir.clone(),
                path_attr: path_attr.map(|p| p.0),
            }),
        }
        Ok(())
    }

    fn ret_ty(&mut self, t: &syn::Type) -> PResult<RetTy> {
        if let syn::Type::ImplTrait(it) = t {
            let span = spn(it);
            if it.bounds.len() != 1 {
                return Err(Diagnostic::error(span, "a factory returns `impl Kernel` or `impl Fn(..) -> T`")
                    .label("unsupported bounds")
                    .into());
            }
            if let Some(syn::TypeParamBound::Trait(tb)) = it.bounds.first() {
                let Some(last) = tb.path.segments.last() else {
                    return Err(Diagnostic::error(span, "expected a trait").label("here").into());
                };
                match (last.ident.to_string().as_str(), &last.arguments) {
                    ("Kernel", syn::PathArguments::None) => return Ok(RetTy::ImplKernel(span)),
                    ("Fn", syn::PathArguments::Parenthesized(p)) => {
                        let params = p.inputs.iter().map(|t| self.ty(t)).collect::<PResult<Vec<_>>>()?;
                        let ret = match &p.output {
                            syn::ReturnType::Default => None,
                            syn::ReturnType::Type(_, t) => Some(self.ty(t)?),
                        };
                        return Ok(RetTy::ImplFn { params, ret, span });
                    }
                    ("FnMut" | "FnOnce", _) => {
                        return Err(Diagnostic::error(span, "device closures are `Fn`")
                            .label("write `impl Fn(..) -> T`")
                            .note("closures cannot mutate what they capture")
                            .into());
                    }
                    _ => {}
                }
            }
            return Err(Diagnostic::error(span, "unsupported `impl` return type")
                .label("expected `impl Kernel` or `impl Fn(..) -> T`")
                .help("a factory returns `impl Kernel` (a kernel closure) or `impl Fn(..) -> T` (a device closure)")
                .into());
        }
        Ok(RetTy::Ty(self.ty(t)?))
    }

    pub(super) fn binding_pat(&mut self, pat: &syn::Pat) -> PResult<(Ident, bool)> {
        match pat {
            syn::Pat::Ident(pi) => {
                if let Some(r) = &pi.by_ref {
                    return Err(unsupported(spn(r), "`ref` bindings", "bind by value").into());
                }
                if let Some((_, sub)) = &pi.subpat {
                    return Err(unsupported(spn(sub), "sub-patterns", "bind a plain name").into());
                }
                Ok((ident(&pi.ident), pi.mutability.is_some()))
            }
            syn::Pat::Wild(w) => Ok((Ident { name: "_".into(), span: spn(w) }, false)),
            syn::Pat::Tuple(t) => Err(Diagnostic::error(spn(t), "tuple patterns are only supported in `let`")
                .label("not supported here")
                .help("bind a plain name, then take it apart: `let (a, b) = pair;`")
                .into()),
            syn::Pat::Struct(s) => Err(Diagnostic::error(spn(s), "struct patterns are only supported in `let`")
                .label("not supported here")
                .help("bind a plain name, then take it apart: `let Particle { mass, .. } = p;`")
                .into()),
            other => Err(unsupported(spn(other), "this pattern", "bind a plain name, like `x` or `mut x`").into()),
        }
    }
}

/// The head of a function: what its attributes and generic parameters say.
pub(super) struct FnHead {
    pub(super) is_kernel: bool,
    pub(super) options: KernelOptions,
    pub(super) generics: Vec<GenericParamDef>,
    pub(super) impl_generics: usize,
    pub(super) where_preds: Vec<WherePred>,
    pub(super) is_const: bool,
}

/// `self: Self`, `self: &Self`, `self: &mut Self`.
fn self_type_ok(t: &syn::Type) -> bool {
    match t {
        syn::Type::Path(p) => p.qself.is_none() && p.path.is_ident("Self"),
        syn::Type::Reference(r) => r.lifetime.is_none() && self_type_ok(&r.elem),
        _ => false,
    }
}
