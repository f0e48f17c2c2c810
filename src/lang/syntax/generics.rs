//! Generic parameters of functions (`<T: Float, const N: usize>` and `where` clauses), their
//! bounds, and instance names written by the host (`axpy::<f32>`, `conv1d::<f32, 3>`).

use std::sync::Arc;

use crate::ir::{Bound, Scalar};
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;
use crate::lang::source::SourceFile;
use crate::span::Span;

use super::expr::ident;
use super::spans::{LinesGuard, spn};
use super::{Lower, PResult, unsupported};

/// The bounds kernels may put on a type parameter, for messages.
pub(crate) const BOUND_LIST: &str = "`Float` (f16, bf16, f32, f64), `Half` (f16, bf16), `Int` (every integer type) and `Num` (both)";

impl Lower {
    /// The generic parameters of a function, a type or an `impl` block, with the bounds of its
    /// `where` clause merged in, and the `where` predicates on other types.
    pub(super) fn generics(&mut self, g: &syn::Generics) -> PResult<(Vec<GenericParamDef>, Vec<WherePred>)> {
        // A bound may name any of the parameters (`T: Add<Output = T>`).
        let saved = self.type_params.len();
        self.type_params.extend(g.params.iter().filter_map(|p| match p {
            syn::GenericParam::Type(t) => Some(t.ident.to_string()),
            _ => None,
        }));
        let r = self.generics_inner(g);
        self.type_params.truncate(saved);
        r
    }

    fn generics_inner(&mut self, g: &syn::Generics) -> PResult<(Vec<GenericParamDef>, Vec<WherePred>)> {
        let mut out: Vec<GenericParamDef> = Vec::new();
        for p in &g.params {
            let def = match p {
                syn::GenericParam::Lifetime(l) => {
                    return Err(unsupported(spn(l), "lifetime parameters", "remove it; kernels have no references to annotate").into());
                }
                syn::GenericParam::Type(t) => {
                    if let Some(a) = t.attrs.first() {
                        return Err(Diagnostic::error(spn(a), "attributes on generic parameters are not supported").label("here").into());
                    }
                    // `trait Mix<Rhs = Self>`: an `impl` or bound that names no argument means
                    // `Self`, as the operator traits' `Rhs` does.
                    let self_default = matches!(&t.default, Some(syn::Type::Path(p)) if p.qself.is_none() && p.path.is_ident("Self"));
                    if let Some(d) = t.default.as_ref().filter(|_| !self_default) {
                        return Err(Diagnostic::error(spn(d), "type parameters have no defaults in kernels")
                            .label("remove the default")
                            .help("name the type where it is used: `f::<f32>(..)`")
                            .into());
                    }
                    let mut bounds = Vec::new();
                    for b in &t.bounds {
                        if let Some(b) = self.trait_bound(b)? {
                            bounds.push(b);
                        }
                    }
                    GenericParamDef { name: ident(&t.ident), kind: GenericParamKind::Type(Bound::Any), bounds, span: spn(t) }
                }
                syn::GenericParam::Const(c) => {
                    if let Some(d) = &c.default {
                        return Err(Diagnostic::error(spn(d), "const parameters have no defaults in kernels")
                            .label("remove the default")
                            .into());
                    }
                    let ty = match self.ty(&c.ty)? {
                        TypeExpr::Scalar(s, _) if s.is_int() || s == Scalar::Bool => s,
                        other => {
                            return Err(Diagnostic::error(other.span(), "const parameters are integers or `bool`")
                                .label("not an integer type or `bool`")
                                .help("write `const N: usize`")
                                .into());
                        }
                    };
                    GenericParamDef { name: ident(&c.ident), kind: GenericParamKind::Const(ty), bounds: Vec::new(), span: spn(c) }
                }
            };
            if let Some(prev) = out.iter().find(|p| p.name.name == def.name.name) {
                return Err(Diagnostic::error(
                    def.name.span,
                    format!("the name `{}` is already used for a generic parameter", def.name.name),
                )
                .label("already used")
                .secondary(prev.name.span, "first use of the name")
                .into());
            }
            out.push(def);
        }
        let mut preds = Vec::new();
        if let Some(w) = &g.where_clause {
            // The clause's types may name the parameters just declared.
            let saved = self.type_params.len();
            self.type_params.extend(out.iter().filter(|p| matches!(p.kind, GenericParamKind::Type(_))).map(|p| p.name.name.clone()));
            let r = self.where_clause(w, &mut out, &mut preds);
            self.type_params.truncate(saved);
            r?;
        }
        for p in &mut out {
            if let GenericParamKind::Type(_) = p.kind {
                let mut bound = Bound::Any;
                for b in &p.bounds {
                    if let Some(k) = kernel_bound(b) {
                        bound = meet(bound, k, b.span)?;
                    }
                }
                p.kind = GenericParamKind::Type(bound);
            }
        }
        Ok((out, preds))
    }

    fn where_clause(&mut self, w: &syn::WhereClause, out: &mut [GenericParamDef], preds: &mut Vec<WherePred>) -> PResult<()> {
        for pred in &w.predicates {
            let syn::WherePredicate::Type(pt) = pred else {
                // `'a: 'b`: kernels have no lifetimes to bound.
                continue;
            };
            if let Some(l) = &pt.lifetimes {
                return Err(unsupported(spn(l), "higher-ranked bounds", "remove it").into());
            }
            let mut bounds = Vec::new();
            for b in &pt.bounds {
                if let Some(b) = self.trait_bound(b)? {
                    bounds.push(b);
                }
            }
            let target = match &pt.bounded_ty {
                syn::Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => p.path.get_ident().map(ident),
                _ => None,
            };
            match target.and_then(|t| out.iter().position(|p| p.name.name == t.name && matches!(p.kind, GenericParamKind::Type(_)))) {
                Some(i) => out[i].bounds.extend(bounds),
                None => {
                    let ty = self.ty(&pt.bounded_ty)?;
                    preds.push(WherePred { ty, bounds, span: spn(pt) });
                }
            }
        }
        Ok(())
    }

    /// One bound as written: a trait path with its arguments; `None` for a lifetime bound
    /// (`T: 'static`) and `?Sized`, which change nothing in kernels.
    pub(super) fn trait_bound(&mut self, b: &syn::TypeParamBound) -> PResult<Option<TraitBound>> {
        let t = match b {
            syn::TypeParamBound::Trait(t) => t,
            syn::TypeParamBound::Lifetime(_) => return Ok(None),
            other => return Err(unsupported(spn(other), "this kind of bound", "bound type parameters with traits").into()),
        };
        if let syn::TraitBoundModifier::Maybe(_) = t.modifier {
            return Ok(None);
        }
        if t.lifetimes.is_some() {
            return Err(unsupported(spn(t), "higher-ranked bounds", "remove `for<..>`").into());
        }
        let span = spn(t);
        let mut path = Vec::new();
        for seg in t.path.segments.iter() {
            path.push(ident(&seg.ident));
        }
        let mut bound = TraitBound { path, args: Vec::new(), assoc: Vec::new(), fn_sugar: None, span };
        let n = t.path.segments.len();
        for (i, seg) in t.path.segments.iter().enumerate() {
            match &seg.arguments {
                syn::PathArguments::None => {}
                _ if i + 1 != n => {
                    return Err(Diagnostic::error(spn(seg), "generic arguments are written on the trait's name").label("here").into());
                }
                syn::PathArguments::AngleBracketed(ab) => {
                    for a in &ab.args {
                        match a {
                            syn::GenericArgument::AssocType(at) => {
                                if at.generics.is_some() {
                                    return Err(unsupported(spn(at), "generic associated types", "remove the arguments").into());
                                }
                                bound.assoc.push((ident(&at.ident), self.ty(&at.ty)?));
                            }
                            syn::GenericArgument::Lifetime(_) => {}
                            other => bound.args.push(self.generic_arg(other)?),
                        }
                    }
                }
                syn::PathArguments::Parenthesized(p) => {
                    let params = p.inputs.iter().map(|t| self.ty(t)).collect::<PResult<Vec<_>>>()?;
                    let ret = match &p.output {
                        syn::ReturnType::Default => None,
                        syn::ReturnType::Type(_, t) => Some(Box::new(self.ty(t)?)),
                    };
                    bound.fn_sugar = Some((params, ret));
                }
            }
        }
        Ok(Some(bound))
    }
}

/// The kernel bound a trait bound names, if it is one (`Float`, `Int`, `Num`, `kache::Float`).
/// A crate that declares a trait of one of these names means its own trait: the parse of the
/// crate clears the kernel bounds of such names afterwards ([`clear_shadowed_bounds`]).
pub(super) fn kernel_bound(b: &TraitBound) -> Option<Bound> {
    let plain = b.path.len() == 1 || (b.path.len() == 2 && b.path[0].name == "kache");
    if !plain || !b.args.is_empty() || !b.assoc.is_empty() || b.fn_sugar.is_some() {
        return None;
    }
    match b.name() {
        "Float" => Some(Bound::Float),
        "Half" => Some(Bound::Half),
        "Int" => Some(Bound::Int),
        "Num" => Some(Bound::Num),
        _ => None,
    }
}

/// Where the crate declares a trait named like a kernel bound (`trait Float { .. }`), a bound of
/// that name is the crate's trait: the kernel bound it stood for is removed.
pub(super) fn clear_shadowed_bounds(items: &mut [Item], impls: &mut [ImplDecl]) {
    let shadowed: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            Item::Trait(t) if matches!(t.name.name.as_str(), "Float" | "Half" | "Int" | "Num") => Some(t.name.name.clone()),
            _ => None,
        })
        .collect();
    if shadowed.is_empty() {
        return;
    }
    let fix = |gs: &mut Vec<GenericParamDef>| {
        for g in gs {
            if let GenericParamKind::Type(_) = g.kind {
                let mut bound = Bound::Any;
                for b in &g.bounds {
                    if let Some(k) = kernel_bound(b).filter(|_| !(b.path.len() == 1 && shadowed.iter().any(|s| s == b.name()))) {
                        bound = meet(bound, k, b.span).unwrap_or(bound);
                    }
                }
                g.kind = GenericParamKind::Type(bound);
            }
        }
    };
    for item in items {
        match item {
            Item::Fn(f) => fix(&mut f.generics),
            Item::Struct(s) => fix(&mut s.generics),
            Item::Enum(e) => fix(&mut e.generics),
            Item::Trait(t) => fix(&mut t.generics),
            Item::Const(_) => {}
        }
    }
    for i in impls {
        fix(&mut i.generics);
    }
}

/// Both bounds at once.
fn meet(a: Bound, b: Bound, span: Span) -> PResult<Bound> {
    if a.implies(b) {
        Ok(a)
    } else if b.implies(a) {
        Ok(b)
    } else {
        Err(Diagnostic::error(span, format!("no type is both `{}` and `{}`", a.name().unwrap_or("_"), b.name().unwrap_or("_")))
            .label("contradictory bounds")
            .help("keep one of them")
            .into())
    }
}

/// An instance name as the host writes it: `axpy`, `axpy::<f64>`, `conv1d::<f32, { 2 + 1 }>`.
/// The arguments are lowered like a turbofish in source (their constants are evaluated by the
/// checker); their spans are offsets into `text`.
pub fn parse_instance_name(text: &str) -> Result<(Ident, Vec<GenericArg>), Box<Diagnostic>> {
    let file = SourceFile::new("<instance name>", text);
    let r = parse_instance_inner(&file);
    proc_macro2::extra::invalidate_current_thread_spans();
    r
}

fn parse_instance_inner(file: &Arc<SourceFile>) -> PResult<(Ident, Vec<GenericArg>)> {
    let _lines = LinesGuard::set(file);
    let bad = || {
        Diagnostic::error(Span::new(0, file.text().len()), format!("`{}` is not a kernel name or instance", file.text().trim()))
            .label("expected a name, or a name with generic arguments")
            .help("write `axpy`, `axpy::<f32>` or `conv1d::<f32, 3>`")
    };
    if file.text().len() > 4096 {
        return Err(bad().into());
    }
    let run = || -> PResult<(Ident, Vec<GenericArg>)> {
        let path: syn::ExprPath = syn::parse_str(file.text()).map_err(|_| bad())?;
        if path.qself.is_some() || path.path.leading_colon.is_some() || !path.attrs.is_empty() {
            return Err(bad().into());
        }
        // A kernel of a module is named by its path: `common::axpy::<f32>`.
        let segs: Vec<&syn::PathSegment> = path.path.segments.iter().collect();
        let Some((seg, before)) = segs.split_last() else { return Err(bad().into()) };
        if before.iter().any(|s| !s.arguments.is_none()) {
            return Err(bad().into());
        }
        let mut name = ident(&seg.ident);
        if let Some(first) = before.first() {
            let mut parts: Vec<String> = before.iter().map(|s| ident(&s.ident).name).collect();
            parts.push(name.name);
            name = Ident { name: parts.join("::"), span: ident(&first.ident).span.to(name.span) };
        }
        let args = match &seg.arguments {
            syn::PathArguments::None => Vec::new(),
            syn::PathArguments::AngleBracketed(ab) => {
                let mut lower = Lower::default();
                ab.args.iter().map(|g| lower.generic_arg(g)).collect::<PResult<_>>()?
            }
            syn::PathArguments::Parenthesized(_) => return Err(bad().into()),
        };
        Ok((name, args))
    };
    crate::stack::ensure(1 << 20, 16 << 20, run)
}
