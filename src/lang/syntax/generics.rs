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
    /// The generic parameters of a function, with the bounds of its `where` clause merged in.
    pub(super) fn generics(&mut self, g: &syn::Generics) -> PResult<Vec<GenericParamDef>> {
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
                    if let Some(d) = &t.default {
                        return Err(Diagnostic::error(spn(d), "type parameters of functions have no defaults")
                            .label("remove the default")
                            .help("name the type where the function is used: `f::<f32>(..)`")
                            .into());
                    }
                    let mut bound = Bound::Any;
                    for b in &t.bounds {
                        bound = meet(bound, self.bound(b)?, spn(t))?;
                    }
                    GenericParamDef { name: ident(&t.ident), kind: GenericParamKind::Type(bound), span: spn(t) }
                }
                syn::GenericParam::Const(c) => {
                    if let Some(d) = &c.default {
                        return Err(Diagnostic::error(spn(d), "const parameters of functions have no defaults")
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
                    GenericParamDef { name: ident(&c.ident), kind: GenericParamKind::Const(ty), span: spn(c) }
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
        if let Some(w) = &g.where_clause {
            for pred in &w.predicates {
                let syn::WherePredicate::Type(pt) = pred else {
                    return Err(unsupported(spn(pred), "lifetime bounds", "remove it").into());
                };
                if let Some(l) = &pt.lifetimes {
                    return Err(unsupported(spn(l), "higher-ranked bounds", "remove it").into());
                }
                let target = match &pt.bounded_ty {
                    syn::Type::Path(p) if p.qself.is_none() && p.path.get_ident().is_some() => p.path.get_ident().map(ident),
                    _ => None,
                };
                let Some(target) = target else {
                    return Err(Diagnostic::error(spn(&pt.bounded_ty), "a `where` clause bounds a type parameter of this function")
                        .label("not a type parameter")
                        .help("write `where T: Float`")
                        .into());
                };
                let Some(i) = out.iter().position(|p| p.name.name == target.name && matches!(p.kind, GenericParamKind::Type(_))) else {
                    return Err(Diagnostic::error(target.span, format!("`{}` is not a type parameter of this function", target.name))
                        .label("not declared in `<..>`")
                        .help(format!("declare it first: `fn f<{}: Float>(..)`", target.name))
                        .into());
                };
                for b in &pt.bounds {
                    let GenericParamKind::Type(cur) = out[i].kind else { continue };
                    let b = self.bound(b)?;
                    out[i].kind = GenericParamKind::Type(meet(cur, b, spn(pt))?);
                }
            }
        }
        Ok(out)
    }

    /// One bound: `Float`, `Int` or `Num`; `Copy` and `Clone` hold for every kernel type and
    /// add nothing.
    fn bound(&mut self, b: &syn::TypeParamBound) -> PResult<Bound> {
        let syn::TypeParamBound::Trait(t) = b else {
            return Err(unsupported(spn(b), "this kind of bound", &format!("bound type parameters with {BOUND_LIST}")).into());
        };
        if !matches!(t.modifier, syn::TraitBoundModifier::None) || t.lifetimes.is_some() {
            return Err(unsupported(spn(t), "this kind of bound", &format!("bound type parameters with {BOUND_LIST}")).into());
        }
        let name = t.path.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::");
        let last = t.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let plain = t.path.segments.len() == 1 || name == format!("kache::{last}");
        if t.path.segments.iter().any(|s| !s.arguments.is_none()) {
            return Err(Diagnostic::error(spn(t), format!("unknown bound `{name}<..>`"))
                .label("not a kernel bound")
                .help(format!("bound type parameters with {BOUND_LIST}"))
                .into());
        }
        match last.as_str() {
            "Float" if plain => Ok(Bound::Float),
            "Half" if plain => Ok(Bound::Half),
            "Int" if plain => Ok(Bound::Int),
            "Num" if plain => Ok(Bound::Num),
            "Copy" | "Clone" | "Send" | "Sync" | "Sized" => Ok(Bound::Any),
            _ => {
                let close = match last.to_ascii_lowercase().as_str() {
                    "float" | "real" | "floating" | "floatingpoint" => Some("Float"),
                    "half" | "f16" | "bf16" | "float16" => Some("Half"),
                    "int" | "integer" | "primint" => Some("Int"),
                    "num" | "number" | "numeric" | "primitive" | "scalar" => Some("Num"),
                    _ => None,
                };
                let mut d = Diagnostic::error(spn(t), format!("unknown bound `{name}`"))
                    .label("not a kernel bound")
                    .help(format!("bound type parameters with {BOUND_LIST}"));
                if let Some(c) = close {
                    d = d.note(format!("did you mean `{c}`?"));
                }
                Err(d.into())
            }
        }
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
