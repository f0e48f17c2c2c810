//! Iterators in `for` loops, as Rust code writes them over arrays: `a.iter()`, `&a`,
//! `a.into_iter()`, `a.iter_mut()`, `&mut a`, `.enumerate()`, `.zip(..)`, and an array
//! reference by name (`for x in xs` of `xs: &[f32]`). Each is the loop over the indices it
//! walks: `for k in 0..a.len() { let x = a[k]; .. }`; an element taken by `&mut` is a name for
//! the element (`let x = &mut a[k];`, `refs.rs`), so writes through it change the array.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, LetPat};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::body::FnCx;

/// Where the elements come from, and how they are taken.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// By value (`a.iter()`, `&a`, `a.into_iter()`, a slice by name).
    Val(&'a ast::Expr),
    /// By `&mut` (`a.iter_mut()`, `&mut a`).
    Mut(&'a ast::Expr),
}

impl<'a> Source<'a> {
    fn array(self) -> &'a ast::Expr {
        match self {
            Source::Val(a) | Source::Mut(a) => a,
        }
    }
}

/// The iterator a `for` loop walks.
enum Walk<'a> {
    One(Source<'a>),
    Enumerate(Source<'a>),
    Zip(Source<'a>, Source<'a>),
}

fn method<'a>(e: &'a ast::Expr, name: &str, n_args: usize) -> Option<(&'a ast::Expr, &'a [ast::Expr])> {
    match &e.kind {
        A::MethodCall { receiver, method, args, generics } if method.name == name && args.len() == n_args && generics.is_empty() => {
            Some((receiver, args))
        }
        _ => None,
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    fn source<'a>(&mut self, e: &'a ast::Expr, plain: bool) -> Option<Source<'a>> {
        if let Some((r, _)) = method(e, "iter", 0).or_else(|| method(e, "into_iter", 0)) {
            return Some(Source::Val(r));
        }
        if let Some((r, _)) = method(e, "iter_mut", 0) {
            return Some(Source::Mut(r));
        }
        match &e.kind {
            A::Ref(x) => Some(Source::Val(x)),
            A::RefMut(x) => Some(Source::Mut(x)),
            // `zip(b)` of an array by value.
            _ if plain => Some(Source::Val(e)),
            A::Path(n) => {
                let l = self.lookup_local(&n.name)?;
                let h = self.locals[l].ty;
                matches!(self.u.ty(h), Some(Ty::Array(_) | Ty::ParamArray(_))).then_some(Source::Val(e))
            }
            _ => None,
        }
    }

    fn walk<'a>(&mut self, e: &'a ast::Expr) -> Option<Walk<'a>> {
        if let Some((r, _)) = method(e, "enumerate", 0) {
            return self.source(r, false).map(Walk::Enumerate);
        }
        if let Some((r, args)) = method(e, "zip", 1) {
            let a = self.source(r, false)?;
            let b = self.source(&args[0], true)?;
            return Some(Walk::Zip(a, b));
        }
        self.source(e, false).map(Walk::One)
    }

    /// `for pat in iter { body }` where `iter` walks an array (see the module's doc): the loop
    /// over its indices, checked; `None` for any other `for` over a value.
    pub(super) fn iter_loop(
        &mut self,
        label: &Option<ast::Ident>,
        pat: &LetPat,
        iter: &ast::Expr,
        body: &ast::Block,
        span: Span,
    ) -> CResult<Option<super::body::CExpr>> {
        let Some(walk) = self.walk(iter) else { return Ok(None) };
        let at = iter.span;
        let name = |n: &str| ast::Ident { name: n.to_string(), span: at };
        let path = |n: &str| ast::Expr { kind: A::Path(name(n)), span: at };
        let len_of = |a: &ast::Expr| ast::Expr {
            kind: A::MethodCall { receiver: Box::new(a.clone()), method: name("len"), generics: Vec::new(), args: Vec::new() },
            span: at,
        };
        let mut elems = Vec::new();
        let (len, pats): (ast::Expr, Vec<(&LetPat, Option<Source>)>) = match (&walk, pat) {
            (Walk::One(s), p) => (len_of(s.array()), vec![(p, Some(*s))]),
            (Walk::Enumerate(s), LetPat::Tuple { elems: e, rest: None, .. }) if e.len() == 2 => {
                (len_of(s.array()), vec![(&e[0], None), (&e[1], Some(*s))])
            }
            (Walk::Zip(a, b), LetPat::Tuple { elems: e, rest: None, .. }) if e.len() == 2 => {
                let min = ast::Expr {
                    kind: A::MethodCall {
                        receiver: Box::new(len_of(a.array())),
                        method: name("min"),
                        generics: Vec::new(),
                        args: vec![len_of(b.array())],
                    },
                    span: at,
                };
                (min, vec![(&e[0], Some(*a)), (&e[1], Some(*b))])
            }
            (_, p) => {
                return Err(Diagnostic::error(p.span(), "expected a pair pattern")
                    .label("`enumerate()` and `zip(..)` give pairs")
                    .help("take the pair apart: `for (i, x) in a.iter().enumerate()`")
                    .into());
            }
        };
        for (p, s) in pats {
            let elem = |a: &ast::Expr| ast::Expr {
                kind: A::Index { array: Box::new(a.clone()), indices: vec![path("#k")], multi: false },
                span: at,
            };
            let init = match s {
                None => path("#k"),
                Some(Source::Val(a)) => elem(a),
                Some(Source::Mut(a)) => {
                    let LetPat::Bind { name, .. } = p else {
                        return Err(Diagnostic::error(p.span(), "an element taken by `&mut` is bound to a name")
                            .label("a pattern")
                            .help("bind it: `for x in a.iter_mut() { *x = .. }`")
                            .into());
                    };
                    let init = ast::Expr { kind: A::RefMut(Box::new(elem(a))), span: at };
                    elems.push(ast::Stmt::Let { name: name.clone(), mutable: false, ty: None, init: Some(init), span: at });
                    continue;
                }
            };
            elems.push(match p {
                LetPat::Bind { name, mutable } => {
                    ast::Stmt::Let { name: name.clone(), mutable: *mutable, ty: None, init: Some(init), span: at }
                }
                p => ast::Stmt::LetPat { pat: p.clone(), ty: None, init, span: at },
            });
        }
        let mut b = body.clone();
        elems.append(&mut b.stmts);
        b.stmts = elems;
        let zero = ast::Expr { kind: A::Lit(ast::Lit::Int(0, Some(Scalar::Usize))), span: at };
        let for_ = ast::Expr {
            kind: A::For {
                label: label.clone(),
                var: name("#k"),
                start: Box::new(zero),
                end: Box::new(len),
                inclusive: false,
                step: None,
                body: b,
            },
            span,
        };
        self.expr(&for_).map(Some)
    }
}
