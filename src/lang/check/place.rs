//! Places: what may be assigned (locals, their fields and elements, array elements), indexing of
//! array references, and the errors for writes to read-only things.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::generics::array_view;
use super::unify::H;

impl<'c, 'm> FnCx<'c, 'm> {
    /// What may be assigned: a `let mut` local (or a `let` without a value, once), a field or
    /// element of one, or an element of a writable array (and the fields of that element).
    pub(super) fn place(&mut self, lhs: &ast::Expr) -> CResult<(Place<H>, H)> {
        if let A::Path(n) = &lhs.kind
            && self.lookup_local(&n.name).is_none()
        {
            return Err(self.not_assignable(n, lhs.span));
        }
        match self.operand(lhs)? {
            Operand::Place(p, h) => {
                self.check_writable(&p, lhs, true)?;
                Ok((p, h))
            }
            Operand::Value(_) => Err(Diagnostic::error(lhs.span, "invalid left-hand side of assignment")
                .label("cannot assign to this expression")
                .help("assign to a `let mut` variable, a field or element of one, or an element of a `&mut` array")
                .into()),
        }
    }

    /// Checks that `p` may be written: its local is mutable (or, for the whole local, assigned
    /// once), or its array writable. `whole_ok`: a `let` without a value may be assigned whole.
    pub(super) fn check_writable(&mut self, p: &Place<H>, lhs: &ast::Expr, whole_ok: bool) -> CResult<()> {
        match p {
            Place::Local(l) => {
                self.assign_local(*l);
                let info = &self.locals[*l];
                if let Some(Ty::Array(_) | Ty::ParamArray(_)) = self.u.ty(info.ty) {
                    return Err(Diagnostic::error(lhs.span, format!("cannot assign to array `{}`", info.name))
                        .label("arrays are references")
                        .help("assign to an element: `a[i] = v`")
                        .into());
                }
                // `let x;` is initialised by assignment, possibly on several paths
                // (`if c { x = 1 } else { x = 2 }`): whether it is assigned only once on
                // each path is checked on the finished body (`assign::first_reassignment`).
                if info.mutable || (whole_ok && info.deferred_init) {
                    return Ok(());
                }
                let (name, decl) = (info.name.clone(), info.span);
                if name == "self" {
                    return Err(Diagnostic::error(lhs.span, "cannot assign to `self`, which is behind a `&` reference")
                        .label("`self` is a `&` reference, so the data it refers to cannot be written")
                        .help("take `&mut self` to change the value the method is called on")
                        .into());
                }
                if info.shared_ref {
                    let what = lhs_text(lhs).unwrap_or_else(|| format!("*{name}"));
                    return Err(Diagnostic::error(lhs.span, format!("cannot assign to `{what}`, which is behind a `&` reference"))
                        .label(format!("`{name}` is a `&` reference, so the data it refers to cannot be written"))
                        .secondary(decl, "declared here")
                        .help("take a `&mut` reference to change the caller's value")
                        .into());
                }
                if whole_ok {
                    return Err(Diagnostic::error(lhs.span, format!("cannot assign twice to immutable variable `{name}`"))
                        .label("cannot assign twice")
                        .secondary(decl, "declared here")
                        .help(format!("make it mutable: `let mut {name}`"))
                        .into());
                }
                Err(Diagnostic::error(lhs.span, format!("cannot assign to a part of `{name}`, as `{name}` is not declared as mutable"))
                    .label("cannot assign")
                    .secondary(decl, "declared here")
                    .help(format!("make it mutable: `let mut {name}`"))
                    .into())
            }
            Place::Index(a, _) => {
                if let Some(at) = self.u.ty(a.ty).and_then(array_view)
                    && !at.writable
                {
                    let root = index_root(lhs);
                    return Err(self.readonly_write(a, root, lhs.span).into());
                }
                Ok(())
            }
            Place::Field(inner, _) | Place::Elem(inner, _) => self.check_writable(inner, lhs, false),
        }
    }

    /// The error for assigning to a name that is not a local.
    fn not_assignable(&self, n: &ast::Ident, span: Span) -> Box<Diagnostic> {
        let (what, help) = if self.scope_items.and_then(|s| s.get(&n.name)).is_some() {
            (
                "a captured closure variable",
                "captured scalars are constants compiled into the closure; pass a value that changes as a kernel argument",
            )
        } else if self.mcx.const_named(self.module, &n.name).is_some() {
            ("a constant", "declare a local copy: `let mut x = NAME;`")
        } else if self.mcx.env.global(&n.name).is_some() {
            (
                "a global captured as a constant",
                "captured scalars are constants compiled into the kernel; pass a value that changes as a kernel argument",
            )
        } else {
            return self.unresolved(n).into();
        };
        Diagnostic::error(span, format!("cannot assign to `{}`: it is {what}", n.name)).label("read-only").help(help).into()
    }

    pub(super) fn readonly_write(&self, a: &CExpr, array_src: &ast::Expr, span: Span) -> Diagnostic {
        let (name, why, help) = self.readonly_reason(a, array_src);
        Diagnostic::error(span, format!("cannot write to read-only array `{name}`")).label(why).help(help)
    }

    /// The name of the read-only array `a` (the value of `array_src`), why it is read-only and
    /// how to have a writable one.
    pub(super) fn readonly_reason(&self, a: &CExpr, array_src: &ast::Expr) -> (String, String, String) {
        let name = match &array_src.kind {
            A::Path(n) => n.name.clone(),
            _ => "array".into(),
        };
        let (why, help) = match &a.kind {
            ExprKind::Capture(c) => match self.mcx.captures[*c].ty {
                CaptureTy::Array { device: false, .. } => (
                    format!("`{name}` is a host array captured as a constant, which is read-only"),
                    "pass a writable array as a kernel argument, or capture a device array".to_string(),
                ),
                _ => (
                    format!("`{name}` is a device array captured read-only"),
                    "capture an array whose interface is writable, or pass it as a `&mut` kernel argument".to_string(),
                ),
            },
            ExprKind::Local(l) if self.locals[*l].declared_readonly => {
                (format!("`{name}` is a read-only array"), format!("declare it `&mut`: `{name}: &mut [..]`"))
            }
            _ => (format!("`{name}` is a read-only array"), "write through a `&mut` array".to_string()),
        };
        (name, why, help)
    }

    /// An element of the array reference `a` (the value of `array`).
    pub(super) fn index(
        &mut self,
        a: CExpr,
        array: &ast::Expr,
        indices: &[ast::Expr],
        multi: bool,
        span: Span,
    ) -> CResult<(CExpr, Ty, Vec<CExpr>)> {
        let Some(at) = self.u.ty(a.ty).and_then(array_view) else {
            let d = self.u.describe(a.ty);
            return Err(Diagnostic::error(array.span, format!("cannot index into a value of type `{d}`"))
                .label("not an array")
                .help("only arrays (`&[T]`, `&Array<T, N>`, `[T; N]`, captured arrays, shared arrays) can be indexed")
                .into());
        };
        let n = at.ndim as usize;
        if !multi && n != 1 {
            let form = if n == 0 {
                "a[[]]".to_string()
            } else {
                format!("a[[{}]]", (0..n).map(|i| ["i", "j", "k", "l"][i]).collect::<Vec<_>>().join(", "))
            };
            return Err(Diagnostic::error(span, format!("a {n}-d array is indexed with {n} indices"))
                .label("one index given")
                .help(format!("write `{form}`"))
                .into());
        }
        if multi && indices.len() != n {
            return Err(Diagnostic::error(
                span,
                format!("a {n}-d array is indexed with {n} ind{}, found {}", if n == 1 { "ex" } else { "ices" }, indices.len()),
            )
            .label("wrong number of indices")
            .into());
        }
        let mut idx = Vec::new();
        for i in indices {
            let x = self.expr(i)?;
            let u = self.u.known(Ty::Scalar(Scalar::Usize));
            if !self.u.unify(u, x.ty) {
                let d = self.u.describe(x.ty);
                return Err(Diagnostic::error(i.span, format!("array indices are `usize`, found `{d}`"))
                    .label("expected `usize`")
                    .help("convert with `as usize`")
                    .into());
            }
            idx.push(x);
        }
        Ok((a, at.elem, idx))
    }
}

/// The array expression an assignment's element place starts from (`a` in `a[i].x = ..`).
pub(super) fn index_root(e: &ast::Expr) -> &ast::Expr {
    match &e.kind {
        A::Index { array, .. } => match &array.kind {
            A::Index { .. } | A::Field(..) => index_root(array),
            _ => array,
        },
        A::Field(base, _) => index_root(base),
        _ => e,
    }
}

/// The source form of a place written as a path, a dereference and fields (`*v`, `p.x.0`).
fn lhs_text(e: &ast::Expr) -> Option<String> {
    match &e.kind {
        A::Path(n) => Some(n.name.clone()),
        A::Deref(x) => Some(format!("*{}", lhs_text(x)?)),
        A::Field(b, ast::Member::Named(m)) => Some(format!("{}.{}", lhs_text(b)?, m.name)),
        A::Field(b, ast::Member::Index(k, _)) => Some(format!("{}.{k}", lhs_text(b)?)),
        _ => None,
    }
}
