//! Types: scalars, array references (`&[T]`, `&mut Array<T, N>`), fixed-size arrays, tuples,
//! named types (structs, enums, `Self`), and the explanation for every other type.

use crate::ir::{MAX_NDIM, Scalar};
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;

use super::expr::{ident, quote_path};
use super::spans::spn;
use super::{Lower, PResult, unsupported};

pub(crate) const SCALAR_LIST: &str = "bool, i8, i16, i32, i64, u8, u16, u32, u64, usize, f16, bf16, f32, f64";

impl Lower {
    pub(super) fn scalar_name(&self, path: &syn::Path) -> PResult<Option<Scalar>> {
        if path.segments.len() != 1 || path.leading_colon.is_some() {
            return Ok(None);
        }
        let seg = &path.segments[0];
        let name = seg.ident.to_string();
        if let Some(s) = Scalar::from_name(&name) {
            if !seg.arguments.is_none() {
                return Err(Diagnostic::error(spn(seg), format!("`{name}` takes no generic arguments")).label("here").into());
            }
            return Ok(Some(s));
        }
        if matches!(name.as_str(), "i128" | "u128" | "isize" | "f128" | "char" | "str" | "String") {
            return Err(Diagnostic::error(spn(seg), format!("type `{name}` is not supported"))
                .label("unsupported type")
                .help(format!("supported scalar types: {SCALAR_LIST}"))
                .into());
        }
        Ok(None)
    }

    pub(super) fn ty(&mut self, t: &syn::Type) -> PResult<TypeExpr> {
        let span = spn(t);
        match t {
            syn::Type::Paren(p) => self.ty(&p.elem),
            syn::Type::Group(g) => self.ty(&g.elem),
            syn::Type::Tuple(tt) if tt.elems.is_empty() => Ok(TypeExpr::Unit(span)),
            syn::Type::Tuple(tt) => Ok(TypeExpr::Tuple(tt.elems.iter().map(|t| self.ty(t)).collect::<PResult<_>>()?, span)),
            syn::Type::Path(p) => {
                if let Some(q) = &p.qself {
                    // `<T as Trait>::Name` (or `<T>::Name`): an associated type.
                    let base = self.ty(&q.ty)?;
                    let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                    let (Some(last), true) = (segs.last(), segs.len() == q.position + 1) else {
                        return Err(unsupported(span, "this qualified path", "write `<T as Trait>::Name`").into());
                    };
                    let trait_ = (q.position > 0).then(|| segs[..q.position].iter().map(|s| ident(&s.ident)).collect());
                    return Ok(TypeExpr::Assoc { base: Box::new(base), trait_, name: ident(&last.ident), span });
                }
                if let Some(s) = self.scalar_name(&p.path)? {
                    return Ok(TypeExpr::Scalar(s, span));
                }
                if let Some(t) = self.type_param(&p.path)? {
                    return Ok(t);
                }
                let name = p.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
                if name == "Array" {
                    return Err(Diagnostic::error(span, "`Array` is passed by reference")
                        .label("write `&Array<T, N>` or `&mut Array<T, N>`")
                        .into());
                }
                if name == "Vec" {
                    return Err(Diagnostic::error(span, "`Vec` is not supported in kernels")
                        .label("heap allocation is not available on the device")
                        .help("take a slice parameter: `&[T]` or `&mut [T]`")
                        .into());
                }
                if let Some(t) = self.builtin_type(&p.path, span)? {
                    return Ok(t);
                }
                if matches!(name.as_str(), "Box" | "Rc" | "Arc") {
                    if let Some(d) = dyn_inside(t) {
                        return Err(trait_object_error(d).into());
                    }
                    return Err(Diagnostic::error(span, format!("`{name}` is not supported in kernels"))
                        .label("heap allocation is not available on the device")
                        .help("hold the value itself")
                        .into());
                }
                if let Some(d) = dyn_inside(t) {
                    return Err(trait_object_error(d).into());
                }
                let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                // `T::Output`, `Self::Output`: an associated type of a type parameter or `Self`.
                if segs.len() == 2
                    && p.path.leading_colon.is_none()
                    && segs.iter().all(|s| s.arguments.is_none())
                    && (segs[0].ident == "Self" || self.is_type_param(&segs[0].ident))
                {
                    let base = if segs[0].ident == "Self" {
                        TypeExpr::Named(vec![ident(&segs[0].ident)], spn(segs[0]))
                    } else {
                        TypeExpr::Param(ident(&segs[0].ident))
                    };
                    return Ok(TypeExpr::Assoc { base: Box::new(base), trait_: None, name: ident(&segs[1].ident), span });
                }
                if p.path.leading_colon.is_some() || segs[..segs.len() - 1].iter().any(|s| !s.arguments.is_none()) {
                    return Err(Diagnostic::error(span, format!("unknown type `{}`", quote_path(&p.path)))
                        .label("not a kernel type")
                        .help(format!(
                            "supported types: {SCALAR_LIST}, `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`, `[T; N]`, tuples, and the kernel's structs and enums"
                        ))
                        .into());
                }
                let path: Vec<Ident> = segs.iter().map(|s| ident(&s.ident)).collect();
                match &segs[segs.len() - 1].arguments {
                    syn::PathArguments::None => Ok(TypeExpr::Named(path, span)),
                    syn::PathArguments::AngleBracketed(ab) => {
                        let mut args = Vec::new();
                        for a in &ab.args {
                            match a {
                                syn::GenericArgument::Lifetime(_) => {}
                                other => args.push(self.generic_arg(other)?),
                            }
                        }
                        Ok(TypeExpr::Generic { path, args, span })
                    }
                    syn::PathArguments::Parenthesized(pa) => {
                        Err(Diagnostic::error(spn(pa), "unexpected parenthesised arguments").label("here").into())
                    }
                }
            }
            syn::Type::Reference(r) => {
                if let Some(l) = &r.lifetime {
                    return Err(unsupported(spn(l), "lifetimes", "remove the lifetime").into());
                }
                let mutable = r.mutability.is_some();
                match &*r.elem {
                    syn::Type::Slice(s) => {
                        let elem = self.elem_type(&s.elem)?;
                        Ok(TypeExpr::ArrayRef { elem, ndim: 1, mutable, span })
                    }
                    syn::Type::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Array") => {
                        let seg = p.path.segments.last().ok_or_else(|| Diagnostic::error(span, "expected a type"))?;
                        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
                            return Err(Diagnostic::error(span, "`Array` needs an element type and a dimension count")
                                .label("write `Array<T, N>`")
                                .into());
                        };
                        let args: Vec<_> = ab.args.iter().collect();
                        if args.len() != 2 {
                            return Err(Diagnostic::error(spn(ab), "`Array` takes two arguments")
                                .label("write `Array<T, N>`, N in 0..=4")
                                .into());
                        }
                        let elem = match args[0] {
                            syn::GenericArgument::Type(t) => self.elem_type(t)?,
                            other => return Err(Diagnostic::error(spn(other), "expected an element type").label("here").into()),
                        };
                        let ndim = match args[1] {
                            syn::GenericArgument::Const(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) => {
                                i.base10_parse::<u8>().ok().filter(|n| *n <= MAX_NDIM)
                            }
                            _ => None,
                        };
                        let Some(ndim) = ndim else {
                            return Err(Diagnostic::error(spn(args[1]), "unsupported dimension count")
                                .label("expected an integer literal from 0 to 4")
                                .into());
                        };
                        Ok(TypeExpr::ArrayRef { elem, ndim, mutable, span })
                    }
                    syn::Type::Path(p) if p.path.is_ident("str") => {
                        Err(unsupported(span, "strings", "kernels work on numbers and arrays").into())
                    }
                    syn::Type::TraitObject(t) => Err(trait_object_error(spn(t)).into()),
                    // `&T`, `&mut T` of a value: passed by value, or written through.
                    inner => {
                        let inner = self.ty(inner)?;
                        if let TypeExpr::Ref { span: at, .. } = inner {
                            return Err(unsupported(at, "references to references", "take one reference: `&T`").into());
                        }
                        Ok(TypeExpr::Ref { inner: Box::new(inner), mutable, span })
                    }
                }
            }
            syn::Type::Array(a) => {
                let elem = self.ty(&a.elem)?;
                // A constant expression, evaluated by the checker (`const` items and const
                // parameters may name it).
                let len = Box::new(self.expr(&a.len)?);
                Ok(TypeExpr::Fixed { elem: Box::new(elem), len, span })
            }
            syn::Type::Slice(_) => {
                Err(Diagnostic::error(span, "slices are passed by reference").label("write `&[T]` or `&mut [T]`").into())
            }
            syn::Type::Ptr(_) => Err(unsupported(span, "raw pointers", "take a slice: `&[T]` or `&mut [T]`").into()),
            syn::Type::BareFn(_) => Err(unsupported(span, "function pointers", "call the function directly").into()),
            syn::Type::ImplTrait(_) => {
                Err(Diagnostic::error(span, "`impl Trait` is only supported as a factory's return type").label("not supported here").into())
            }
            syn::Type::TraitObject(_) => Err(trait_object_error(span).into()),
            syn::Type::Never(_) => Err(unsupported(span, "the never type", "return nothing").into()),
            syn::Type::Infer(_) => Ok(TypeExpr::Infer(span)),
            _ => Err(unsupported(span, "this type", &format!("supported types: {SCALAR_LIST}, `&[T]`, `&mut [T]`, `&Array<T, N>`")).into()),
        }
    }

    /// A builtin generic type (`FragA<bf16, 16, 8, 16>`) with its arguments; the checker
    /// checks them.
    fn builtin_type(&mut self, path: &syn::Path, span: crate::span::Span) -> PResult<Option<TypeExpr>> {
        let [seg] = path.segments.iter().collect::<Vec<_>>()[..] else { return Ok(None) };
        if path.leading_colon.is_some() || crate::lang::builtins::builtin_type(&seg.ident.to_string()).is_none() {
            return Ok(None);
        }
        let syn::PathArguments::AngleBracketed(ab) = &seg.arguments else {
            return Err(Diagnostic::error(span, format!("`{}` needs its generic arguments", seg.ident))
                .label("missing generic arguments")
                .help("write the element type and the shape: `FragA<bf16, 16, 8, 16>`, `FragC<f32, 16, 8>`")
                .into());
        };
        let args = ab.args.iter().map(|a| self.generic_arg(a)).collect::<PResult<Vec<_>>>()?;
        Ok(Some(TypeExpr::Builtin { name: ident(&seg.ident), args, span }))
    }

    /// `impl Trait` in a parameter's type: each becomes an anonymous type parameter of the
    /// function (as Rust's argument-position `impl Trait` is); `None` for any other type.
    pub(super) fn impl_trait_bounds(&mut self, t: &syn::Type) -> PResult<Option<Vec<TraitBound>>> {
        let syn::Type::ImplTrait(it) = t else { return Ok(None) };
        let mut bounds = Vec::new();
        for b in &it.bounds {
            if let Some(b) = self.trait_bound(b)? {
                bounds.push(b);
            }
        }
        Ok(Some(bounds))
    }

    /// A type parameter of the function being lowered, named by `path`.
    pub(super) fn type_param(&self, path: &syn::Path) -> PResult<Option<TypeExpr>> {
        let Some(id) = path.get_ident() else { return Ok(None) };
        if !self.is_type_param(id) {
            return Ok(None);
        }
        Ok(Some(TypeExpr::Param(ident(id))))
    }

    fn elem_type(&mut self, t: &syn::Type) -> PResult<Box<TypeExpr>> {
        match self.ty(t)? {
            // A named type is a struct (an element) or an enum (not one): the checker says which.
            e @ (TypeExpr::Scalar(..) | TypeExpr::Param(_) | TypeExpr::Named(..) | TypeExpr::Generic { .. }) => Ok(Box::new(e)),
            other => Err(Diagnostic::error(other.span(), "array elements must be scalars or structs")
                .label("not a scalar or a struct")
                .help(format!("supported element types: {SCALAR_LIST}, and the kernel's structs"))
                .into()),
        }
    }
}

/// The first `dyn Trait` inside a type (`Box<dyn Shape>`, `&dyn Shape`), if any.
fn dyn_inside(t: &syn::Type) -> Option<crate::span::Span> {
    match t {
        syn::Type::TraitObject(o) => Some(spn(o)),
        syn::Type::Reference(r) => dyn_inside(&r.elem),
        syn::Type::Paren(p) => dyn_inside(&p.elem),
        syn::Type::Group(g) => dyn_inside(&g.elem),
        syn::Type::Slice(s) => dyn_inside(&s.elem),
        syn::Type::Array(a) => dyn_inside(&a.elem),
        syn::Type::Tuple(t) => t.elems.iter().find_map(dyn_inside),
        syn::Type::Path(p) => p.path.segments.iter().find_map(|s| match &s.arguments {
            syn::PathArguments::AngleBracketed(ab) => ab.args.iter().find_map(|a| match a {
                syn::GenericArgument::Type(t) => dyn_inside(t),
                _ => None,
            }),
            _ => None,
        }),
        _ => None,
    }
}

/// The error for `dyn Trait`: kernels dispatch statically.
fn trait_object_error(span: crate::span::Span) -> Diagnostic {
    Diagnostic::error(span, "trait objects (`dyn Trait`) are not supported in kernels")
        .label("a trait object")
        .note("kernels call trait methods by static dispatch: each call is resolved to one `impl` when the kernel is compiled")
        .help("take a generic parameter instead: `fn f<S: Shape>(s: S)` or `fn f(s: impl Shape)`")
}
