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
                if p.qself.is_some() {
                    return Err(unsupported(span, "qualified paths", "write the type out").into());
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
                if p.path.leading_colon.is_some() || p.path.segments.iter().any(|s| !s.arguments.is_none()) {
                    return Err(Diagnostic::error(span, format!("unknown type `{}`", quote_path(&p.path)))
                        .label("not a kernel type")
                        .help(format!(
                            "supported types: {SCALAR_LIST}, `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`, `[T; N]`, tuples, and the kernel's structs and enums"
                        ))
                        .into());
                }
                // An enum of the kernel's modules, or an unknown name: the checker says which.
                Ok(TypeExpr::Named(p.path.segments.iter().map(|s| super::expr::ident(&s.ident)).collect(), span))
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
                    syn::Type::Array(_) => Err(Diagnostic::error(span, "references to fixed-size arrays are not supported")
                        .label("not a kernel type")
                        .help("take the array by value (`a: [f32; 3]`) or a slice (`&[T]`, `&mut [T]`)")
                        .into()),
                    _ => Err(unsupported(
                        span,
                        "references to this type",
                        "references are only for arrays: `&[T]`, `&mut [T]`, `&Array<T, N>`",
                    )
                    .into()),
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
            syn::Type::TraitObject(_) => Err(unsupported(span, "trait objects", "call functions directly").into()),
            syn::Type::Never(_) => Err(unsupported(span, "the never type", "return nothing").into()),
            syn::Type::Infer(_) => Err(Diagnostic::error(span, "the type must be written here").label("`_` is not allowed").into()),
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
            e @ (TypeExpr::Scalar(..) | TypeExpr::Param(_) | TypeExpr::Named(..)) => Ok(Box::new(e)),
            other => Err(Diagnostic::error(other.span(), "array elements must be scalars or structs")
                .label("not a scalar or a struct")
                .help(format!("supported element types: {SCALAR_LIST}, and the kernel's structs"))
                .into()),
        }
    }
}
