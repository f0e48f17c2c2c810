//! References to values: a `&T` parameter is passed by value (nothing can change the value
//! during the call), a `&mut T` parameter is the caller's place, copied in and written back:
//! the function returns its final value beside its result, and the call stores it in the
//! place. Rust forbids any other access to the place during the call, so this is what a
//! pointer would do, and after inlining (device functions are always inlined) it is the same
//! code. `*x` of such a parameter is the parameter.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::unify::H;

impl<'c, 'm> FnCx<'c, 'm> {
    /// An argument for a `&mut T` parameter: `&mut place` (or a `&mut` parameter of the caller,
    /// passed on), its place and its value.
    pub(super) fn inout_arg(&mut self, a: &ast::Expr, want: H, span: Span) -> CResult<(Place<H>, CExpr)> {
        let inner = match &a.kind {
            A::RefMut(x) => &**x,
            A::Path(n) if self.lookup_local(&n.name).is_some_and(|l| self.inout_params.contains(&l) || self.locals[l].alias.is_some()) => a,
            _ => {
                return Err(Diagnostic::error(a.span, "mismatched types: expected a `&mut` reference")
                    .label("write `&mut ..`")
                    .secondary(span, "this parameter is `&mut`")
                    .into());
            }
        };
        let Operand::Place(p, h) = self.operand(inner)? else {
            return Err(Diagnostic::error(inner.span, "cannot borrow a temporary value as mutable here")
                .label("not a place")
                .help("bind the value to a `let mut` first")
                .into());
        };
        self.check_borrow_mut_at(&p, inner)?;
        self.unify_or(inner.span, want, h, " (the type of the `&mut` parameter)")?;
        let v = self.operand_value(Operand::Place(p.clone(), h), inner.span);
        Ok((p, v))
    }

    /// A `&mut` borrow of a place: a mutable local (or part of one), or an element of a
    /// writable array (rustc's E0596 otherwise).
    pub(super) fn check_borrow_mut_at(&mut self, p: &Place<H>, at: &ast::Expr) -> CResult<()> {
        let mut root = p;
        while let Place::Field(inner, _) | Place::Elem(inner, _) = root {
            root = inner;
        }
        if let Place::Local(l) = root
            && !self.locals[*l].mutable
        {
            let info = &self.locals[*l];
            let name = info.name.clone();
            if name == "self" {
                return Err(Diagnostic::error(at.span, "cannot borrow `self` as mutable, as it is behind a `&` reference")
                    .label("`self` is a `&` reference")
                    .help("take `&mut self` to call methods that change it")
                    .into());
            }
            return Err(Diagnostic::error(at.span, format!("cannot borrow `{name}` as mutable, as it is not declared as mutable"))
                .label("cannot borrow as mutable")
                .secondary(info.span, "declared here")
                .help(format!("make it mutable: `let mut {name}`"))
                .into());
        }
        self.check_writable(p, at, false)
    }

    /// [`check_borrow_mut_at`](Self::check_borrow_mut_at) where only a span is known.
    pub(super) fn check_borrow_mut_place(&mut self, p: &Place<H>, span: Span) -> CResult<()> {
        self.check_borrow_mut_at(p, &ast::Expr { kind: A::Unit, span })
    }

    /// A call of a function with `&mut` parameters: its value is a tuple of its result (unless
    /// `()`) and their final values, which are stored back into the places given.
    pub(super) fn write_back(&mut self, call: CExpr, inout: Vec<(usize, Place<H>)>, _method: bool, span: Span) -> CResult<CExpr> {
        // The call's type so far is the function's result; the value it gives holds the places'
        // values too.
        let ret = call.ty;
        let unit = self.u.ty(ret) == Some(Ty::Unit);
        let mut parts = Vec::new();
        if !unit {
            parts.push(ret);
        }
        for (_, p) in &inout {
            let (h, _) = self.place_ty_of(p);
            parts.push(h);
        }
        let th = self.u.tuple(parts);
        let call = Expr { ty: th, ..call };
        let tmp = self.declare(&ast::Ident { name: "_".into(), span }, th, false, false);
        let mut stmts = vec![Stmt::Let(tmp, Some(call))];
        let first = usize::from(!unit);
        for (j, (_, p)) in inout.into_iter().enumerate() {
            let (h, _) = self.place_ty_of(&p);
            let whole = Expr { kind: ExprKind::Local(tmp), ty: th, span };
            let v = Expr { kind: ExprKind::Field(Box::new(whole), (first + j) as u32), ty: h, span };
            stmts.push(Stmt::Expr(self.mk(ExprKind::Assign(p, Box::new(v)), Ty::Unit, span)));
        }
        let tail = if unit {
            self.mk(ExprKind::Unit, Ty::Unit, span)
        } else {
            let whole = Expr { kind: ExprKind::Local(tmp), ty: th, span };
            Expr { kind: ExprKind::Field(Box::new(whole), 0), ty: ret, span }
        };
        let ty = tail.ty;
        Ok(Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(tail)) }), ty, span })
    }

    /// The value a function with `&mut` parameters returns: `value` and their final values
    /// (`value` left out when `()`).
    pub(super) fn with_inouts(&mut self, value: CExpr) -> CExpr {
        if self.inout_params.is_empty() {
            return value;
        }
        let span = value.span;
        let unit = self.u.ty(value.ty) == Some(Ty::Unit);
        let mut parts = Vec::new();
        let mut stmts = Vec::new();
        if unit {
            stmts.push(Stmt::Expr(value));
        } else {
            parts.push(value);
        }
        for l in self.inout_params.clone() {
            let h = self.locals[l].ty;
            parts.push(Expr { kind: ExprKind::Local(l), ty: h, span });
        }
        let hs: Vec<H> = parts.iter().map(|p| p.ty).collect();
        let th = self.u.tuple(hs);
        let parts = parts.into_iter().enumerate().map(|(k, x)| (k as u32, x)).collect();
        let tuple = Expr { kind: ExprKind::Aggregate { parts, base: None }, ty: th, span };
        if stmts.is_empty() { tuple } else { Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(tuple)) }), ty: th, span } }
    }

    /// `*x`: the value `x` refers to (a `&` or `&mut` parameter's value is the parameter).
    pub(super) fn deref(&mut self, x: &ast::Expr, span: Span) -> CResult<CExpr> {
        self.check_deref(x, span)?;
        let v = self.expr(x)?;
        if let Some(Ty::Array(_) | Ty::ParamArray(_)) = self.u.ty(v.ty) {
            return Err(Diagnostic::error(span, "cannot dereference an array")
                .label("an array reference")
                .help("index the array: `a[i]`")
                .into());
        }
        Ok(Expr { span, ..v })
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// `let r = &mut place;`: `r` names the place (its indices computed once, here), as the
    /// reference would; Rust forbids any other use of the place while `r` lives.
    pub(super) fn let_mut_ref(
        &mut self,
        name: &ast::Ident,
        ty: Option<&TypeExpr>,
        x: &ast::Expr,
        at: Span,
        out: &mut Vec<Stmt<H>>,
    ) -> CResult<()> {
        let Operand::Place(p, h) = self.operand(x)? else {
            return Err(Diagnostic::error(x.span, "cannot borrow a temporary value as mutable here")
                .label("not a place")
                .help("bind the value to a `let mut` first")
                .into());
        };
        if let Some(Ty::Array(_) | Ty::ParamArray(_)) = self.u.ty(h) {
            return Err(Diagnostic::error(at, "`&mut` of an array is not supported").label("arrays are passed by name").into());
        }
        self.check_borrow_mut_at(&p, x)?;
        if let Some(TypeExpr::Ref { inner, .. }) = ty {
            let want = self.annotation(inner)?;
            self.unify_or(x.span, want, h, "")?;
        }
        let p = self.fix_indices(p, out);
        let l = self.declare(name, h, true, false);
        self.locals[l].alias = Some(p);
        Ok(())
    }

    /// `p` with each index that is not a constant or a local computed into a hidden local now.
    fn fix_indices(&mut self, p: Place<H>, out: &mut Vec<Stmt<H>>) -> Place<H> {
        let hold = |me: &mut Self, e: CExpr, out: &mut Vec<Stmt<H>>| -> CExpr {
            if matches!(e.kind, ExprKind::Lit(_)) {
                return e;
            }
            let (h, span) = (e.ty, e.span);
            let t = me.declare(&ast::Ident { name: "_".into(), span }, h, false, false);
            out.push(Stmt::Let(t, Some(e)));
            Expr { kind: ExprKind::Local(t), ty: h, span }
        };
        match p {
            Place::Local(l) => Place::Local(l),
            Place::Field(inner, k) => Place::Field(Box::new(self.fix_indices(*inner, out)), k),
            Place::Elem(inner, i) => {
                let inner = self.fix_indices(*inner, out);
                Place::Elem(Box::new(inner), Box::new(hold(self, *i, out)))
            }
            Place::Index(a, idx) => {
                // The array is a parameter or a capture, read again at each use.
                let a = *a;
                let idx = idx.into_iter().map(|i| hold(self, i, out)).collect();
                Place::Index(Box::new(a), idx)
            }
        }
    }

    /// `*x` of a parameter that is not a reference: rustc's E0614.
    pub(super) fn check_deref(&mut self, x: &ast::Expr, span: Span) -> CResult<()> {
        if let A::Path(n) = &x.kind
            && let Some(l) = self.lookup_local(&n.name)
            && self.locals[l].not_ref
        {
            let t = self.u.describe(self.locals[l].ty);
            return Err(Diagnostic::error(span, format!("type `{t}` cannot be dereferenced"))
                .label("not a reference")
                .secondary(self.locals[l].span, format!("`{}` is a `{t}`, not a reference", n.name))
                .into());
        }
        Ok(())
    }

    /// `*x` as a place: `x` a `&mut` parameter (or any place: references are their values).
    pub(super) fn deref_operand(&mut self, x: &ast::Expr, span: Span) -> CResult<Operand> {
        self.check_deref(x, span)?;
        let o = self.operand(x)?;
        if let Operand::Place(_, h) | Operand::Value(Expr { ty: h, .. }) = &o
            && let Some(Ty::Array(_) | Ty::ParamArray(_)) = self.u.ty(*h)
        {
            return Err(Diagnostic::error(span, "cannot dereference an array")
                .label("an array reference")
                .help("index the array: `a[i]`")
                .into());
        }
        Ok(o)
    }
}

/// The local a place is part of.
pub(super) fn place_root(p: &Place<H>) -> LocalId {
    match p {
        Place::Local(l) => *l,
        Place::Field(inner, _) | Place::Elem(inner, _) => place_root(inner),
        // An array element: the array is a parameter, never an alias's concern.
        Place::Index(..) => LocalId::MAX,
    }
}

/// The place an expression that reads one reads (`x`, `x.0.f`, `a[2]` of a local), if it is
/// one whose indices are plain reads of locals or constants (it may be named again).
pub(super) fn expr_place(e: &CExpr) -> Option<Place<H>> {
    match &e.kind {
        ExprKind::Local(l) => Some(Place::Local(*l)),
        ExprKind::Field(b, k) => Some(Place::Field(Box::new(expr_place(b)?), *k)),
        ExprKind::Elem(b, i) if matches!(i.kind, ExprKind::Local(_) | ExprKind::Lit(_)) => {
            Some(Place::Elem(Box::new(expr_place(b)?), i.clone()))
        }
        _ => None,
    }
}

/// Whether a parameter's declared type is `&mut T` of a value (an inout parameter).
pub(super) fn is_inout(t: &TypeExpr) -> bool {
    matches!(t, TypeExpr::Ref { mutable: true, inner, .. } if !matches!(**inner, TypeExpr::ArrayRef { .. }))
}
