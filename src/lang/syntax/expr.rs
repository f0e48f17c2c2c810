//! Statements and expressions: blocks, `let`, operators, calls, control flow, closures and paths,
//! and the explanation for every unsupported form.

use crate::ir::{BinOp, LogicOp, UnOp};
use crate::lang::ast::*;
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::items::check_attr;
use super::literals::{assoc_const, lit};
use super::spans::{block_span, expr_span, local_span, sp, spn};
use super::{Lower, PResult, unsupported};

impl Lower {
    pub(super) fn block(&mut self, b: &syn::Block) -> PResult<Block> {
        let span = block_span(b);
        self.enter(span)?;
        // The block whose later statements other threads lowered (`split`): its own last
        // statement here is never its tail.
        let joins = self.split.as_ref().is_some_and(|j| j.at == span.lo as usize);
        let (mut stmts, mut tail) = self.stmts(&b.stmts, !joins)?;
        if joins {
            self.join_parts(&mut stmts, &mut tail)?;
        }
        self.depth -= 1;
        Ok(Block { stmts, tail, span })
    }

    /// A block's statements, in order, and its tail (the last statement, if an expression
    /// without `;` and `tail_allowed`).
    pub(super) fn stmts(&mut self, list: &[syn::Stmt], tail_allowed: bool) -> PResult<(Vec<Stmt>, Option<Box<Expr>>)> {
        let mut stmts = Vec::with_capacity(list.len());
        let mut tail = None;
        let n = list.len();
        for (i, s) in list.iter().enumerate() {
            match s {
                syn::Stmt::Local(l) => {
                    for a in &l.attrs {
                        check_attr(a, false)?;
                    }
                    let (pat, ty) = match &l.pat {
                        syn::Pat::Type(pt) => (&*pt.pat, Some(self.ty(&pt.ty)?)),
                        p => (p, None),
                    };
                    if let Some(init) = &l.init
                        && let Some((_, els)) = &init.diverge
                    {
                        // `let PATTERN = value else { .. };`
                        let pat = self.pattern(pat)?;
                        let value = self.expr(&init.expr)?;
                        let els = match &**els {
                            syn::Expr::Block(b) if b.label.is_none() => self.block(&b.block)?,
                            other => return Err(Diagnostic::error(spn(other), "expected a block after `else`").label("here").into()),
                        };
                        stmts.push(Stmt::LetElse { pat, ty, init: value, els, span: local_span(l) });
                        continue;
                    }
                    let init = match &l.init {
                        Some(init) => Some(self.expr(&init.expr)?),
                        None => None,
                    };
                    match self.let_pat(pat)? {
                        LetPat::Bind { name, mutable } => stmts.push(Stmt::Let { name, mutable, ty, init, span: local_span(l) }),
                        LetPat::Wild(w) => stmts.push(Stmt::Let {
                            name: Ident { name: "_".into(), span: w },
                            mutable: false,
                            ty,
                            init,
                            span: local_span(l),
                        }),
                        pat => {
                            let Some(init) = init else {
                                return Err(Diagnostic::error(pat.span(), "a pattern that takes a value apart needs the value")
                                    .label("no initialiser")
                                    .help("write `let (a, b) = value;`, or declare each name with its own `let`")
                                    .into());
                            };
                            stmts.push(Stmt::LetPat { pat, ty, init, span: local_span(l) });
                        }
                    }
                }
                syn::Stmt::Expr(e, semi) => {
                    let e = self.expr(e)?;
                    if semi.is_none() && i + 1 == n && tail_allowed {
                        tail = Some(Box::new(e));
                    } else {
                        stmts.push(Stmt::Expr(e, semi.is_some()));
                    }
                }
                syn::Stmt::Item(item) => {
                    return Err(Diagnostic::error(spn(item), "items inside function bodies are not supported")
                        .label("nested item")
                        .help("move it to the top level of the file")
                        .into());
                }
                syn::Stmt::Macro(m) => {
                    return Err(macro_error(&m.mac).into());
                }
            }
        }
        Ok((stmts, tail))
    }

    pub(super) fn expr(&mut self, e: &syn::Expr) -> PResult<Expr> {
        let span = expr_span(e);
        self.enter(span)?;
        let r = crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e, span));
        self.depth -= 1;
        r
    }

    fn boxed(&mut self, e: &syn::Expr) -> PResult<Box<Expr>> {
        self.expr(e).map(Box::new)
    }

    fn expr_inner(&mut self, e: &syn::Expr, span: Span) -> PResult<Expr> {
        use syn::Expr as E;
        let kind = match e {
            E::Lit(l) => {
                for a in &l.attrs {
                    check_attr(a, false)?;
                }
                match &l.lit {
                    // A message (`expect("..")`); the checker says where strings may not go.
                    syn::Lit::Str(s) => ExprKind::Str(s.value()),
                    other => ExprKind::Lit(lit(other)?),
                }
            }
            E::Paren(p) => return self.expr(&p.expr),
            E::Group(g) => return self.expr(&g.expr),
            E::Path(p) => {
                if let Some(q) = &p.qself {
                    // `<T as Trait>::NAME`, `<T>::NAME`.
                    let segs: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
                    if segs.len() != q.position + 1 || segs.iter().any(|s| !s.arguments.is_none()) {
                        return Err(unsupported(span, "this qualified path", "write `<T as Trait>::NAME`").into());
                    }
                    let ty = Box::new(self.ty(&q.ty)?);
                    let trait_ = (q.position > 0).then(|| segs[..q.position].iter().map(|s| ident(&s.ident)).collect());
                    return Ok(Expr { kind: ExprKind::AssocPath { ty, trait_, name: ident(&segs[segs.len() - 1].ident) }, span });
                }
                let n = p.path.segments.len();
                if n >= 2
                    && p.path.segments.iter().take(n - 2).all(|s| s.arguments.is_none())
                    && !p.path.segments[n - 2].arguments.is_none()
                    && p.path.segments[n - 1].arguments.is_none()
                {
                    // `Tile::<4>::LEN`: an associated item of a type with its arguments.
                    let mut tp = p.path.clone();
                    let last = tp.segments.pop().map(|s| s.into_value());
                    tp.segments.pop_punct();
                    let ty = self.ty(&syn::Type::Path(syn::TypePath { qself: None, path: tp }))?;
                    let Some(last) = last else { return Err(Diagnostic::error(span, "expected a path").label("here").into()) };
                    return Ok(Expr { kind: ExprKind::AssocPath { ty: Box::new(ty), trait_: None, name: ident(&last.ident) }, span });
                }
                return self.path_expr(&p.path, span);
            }
            E::Tuple(t) if t.elems.is_empty() => ExprKind::Unit,
            E::Tuple(t) => ExprKind::Tuple(t.elems.iter().map(|x| self.expr(x)).collect::<PResult<_>>()?),
            E::Unary(u) => {
                let op = match u.op {
                    syn::UnOp::Neg(_) => UnOp::Neg,
                    syn::UnOp::Not(_) => UnOp::Not,
                    // `*self` in a method is `self`'s value.
                    syn::UnOp::Deref(_) if matches!(&*u.expr, E::Path(p) if p.path.is_ident("self")) => return self.expr(&u.expr),
                    syn::UnOp::Deref(_) => return Ok(Expr { kind: ExprKind::Deref(self.boxed(&u.expr)?), span }),
                    _ => return Err(unsupported(span, "this operator", "use arithmetic and logic operators").into()),
                };
                ExprKind::Unary(op, self.boxed(&u.expr)?)
            }
            E::Binary(b) => {
                use syn::BinOp as B;
                let (l, r) = (self.boxed(&b.left)?, self.boxed(&b.right)?);
                match b.op {
                    B::And(_) => ExprKind::Logic(LogicOp::And, l, r),
                    B::Or(_) => ExprKind::Logic(LogicOp::Or, l, r),
                    op => {
                        let (bin, assign) = match op {
                            B::Add(_) => (BinOp::Add, false),
                            B::Sub(_) => (BinOp::Sub, false),
                            B::Mul(_) => (BinOp::Mul, false),
                            B::Div(_) => (BinOp::Div, false),
                            B::Rem(_) => (BinOp::Rem, false),
                            B::BitXor(_) => (BinOp::BitXor, false),
                            B::BitAnd(_) => (BinOp::BitAnd, false),
                            B::BitOr(_) => (BinOp::BitOr, false),
                            B::Shl(_) => (BinOp::Shl, false),
                            B::Shr(_) => (BinOp::Shr, false),
                            B::Eq(_) => (BinOp::Eq, false),
                            B::Lt(_) => (BinOp::Lt, false),
                            B::Le(_) => (BinOp::Le, false),
                            B::Ne(_) => (BinOp::Ne, false),
                            B::Ge(_) => (BinOp::Ge, false),
                            B::Gt(_) => (BinOp::Gt, false),
                            B::AddAssign(_) => (BinOp::Add, true),
                            B::SubAssign(_) => (BinOp::Sub, true),
                            B::MulAssign(_) => (BinOp::Mul, true),
                            B::DivAssign(_) => (BinOp::Div, true),
                            B::RemAssign(_) => (BinOp::Rem, true),
                            B::BitXorAssign(_) => (BinOp::BitXor, true),
                            B::BitAndAssign(_) => (BinOp::BitAnd, true),
                            B::BitOrAssign(_) => (BinOp::BitOr, true),
                            B::ShlAssign(_) => (BinOp::Shl, true),
                            B::ShrAssign(_) => (BinOp::Shr, true),
                            _ => return Err(unsupported(span, "this operator", "use arithmetic, comparison and logic operators").into()),
                        };
                        if assign { ExprKind::CompoundAssign(bin, l, r) } else { ExprKind::Binary(bin, l, r) }
                    }
                }
            }
            E::Assign(a) => ExprKind::Assign(self.boxed(&a.left)?, self.boxed(&a.right)?),
            E::Cast(c) => ExprKind::Cast(self.boxed(&c.expr)?, self.ty(&c.ty)?),
            E::Index(ix) => {
                let array = self.boxed(&ix.expr)?;
                match &*ix.index {
                    E::Array(a) => {
                        ExprKind::Index { array, indices: a.elems.iter().map(|x| self.expr(x)).collect::<PResult<_>>()?, multi: true }
                    }
                    E::Range(r) => {
                        return Err(unsupported(spn(r), "slicing with ranges", "pass the whole array and an offset").into());
                    }
                    other => ExprKind::Index { array, indices: vec![self.expr(other)?], multi: false },
                }
            }
            E::Call(c) => {
                let E::Path(p) = &*c.func else {
                    // `(self.f)(x)`, `(f)(x)`: a call of a closure value held in a place.
                    if let E::Paren(inner) = &*c.func
                        && let E::Path(p) = &*inner.expr
                        && p.qself.is_none()
                        && p.path.get_ident().is_some()
                    {
                        return self.expr(&syn::Expr::Call(syn::ExprCall { func: inner.expr.clone(), ..c.clone() }));
                    }
                    return Err(unsupported(
                        spn(&c.func),
                        "calls through expressions",
                        "bind the function to a local first: `let f = ..; f(x)`",
                    )
                    .into());
                };
                if p.path.leading_colon.is_some() {
                    return Err(Diagnostic::error(spn(&c.func), format!("unknown function `{}`", quote_path(&p.path)))
                        .label("paths are not supported here")
                        .help("call a device function, closure or builtin by its name or its module path (`common::dot(..)`)")
                        .into());
                }
                let n = p.path.segments.len();
                let qself = match &p.qself {
                    Some(q) => Some(Box::new(self.ty(&q.ty)?)),
                    None => None,
                };
                let mut qualifier = Vec::new();
                let mut qual_args = Vec::new();
                for (i, s) in p.path.segments.iter().take(n - 1).enumerate() {
                    match &s.arguments {
                        syn::PathArguments::None => {}
                        syn::PathArguments::AngleBracketed(ab) if i + 2 == n => {
                            for a in &ab.args {
                                match a {
                                    syn::GenericArgument::Lifetime(_) => {}
                                    other => qual_args.push(self.generic_arg(other)?),
                                }
                            }
                        }
                        _ => {
                            return Err(Diagnostic::error(spn(s), "generic arguments are written on the type or the function's name")
                                .label("here")
                                .into());
                        }
                    }
                    qualifier.push(ident(&s.ident));
                }
                let seg = &p.path.segments[n - 1];
                let generics = match &seg.arguments {
                    syn::PathArguments::None => Vec::new(),
                    syn::PathArguments::AngleBracketed(ab) => ab.args.iter().map(|g| self.generic_arg(g)).collect::<PResult<_>>()?,
                    syn::PathArguments::Parenthesized(pa) => {
                        return Err(Diagnostic::error(spn(pa), "unexpected parenthesised arguments").label("here").into());
                    }
                };
                ExprKind::Call {
                    qualifier,
                    qual_args,
                    qself,
                    func: ident(&seg.ident),
                    generics,
                    args: c.args.iter().map(|a| self.expr(a)).collect::<PResult<_>>()?,
                }
            }
            E::MethodCall(m) => {
                let generics = match &m.turbofish {
                    Some(t) => t.args.iter().map(|g| self.generic_arg(g)).collect::<PResult<_>>()?,
                    None => Vec::new(),
                };
                // `(0..n).map(..)`: a range as an iterator chain's source.
                let receiver = match range_of(&m.receiver).map(|r| (r, &r.start, &r.end)) {
                    Some((r, Some(a), Some(b))) => {
                        let at = spn(r);
                        let inclusive = Expr { kind: ExprKind::Lit(Lit::Bool(matches!(r.limits, syn::RangeLimits::Closed(_)))), span: at };
                        let func = Ident { name: RANGE_SOURCE.into(), span: at };
                        let args = vec![self.expr(a)?, self.expr(b)?, inclusive];
                        Box::new(Expr {
                            kind: ExprKind::Call {
                                qualifier: Vec::new(),
                                qual_args: Vec::new(),
                                qself: None,
                                func,
                                generics: Vec::new(),
                                args,
                            },
                            span: at,
                        })
                    }
                    _ => self.boxed(&m.receiver)?,
                };
                ExprKind::MethodCall {
                    receiver,
                    method: ident(&m.method),
                    generics,
                    args: m.args.iter().map(|a| self.expr(a)).collect::<PResult<_>>()?,
                }
            }
            E::If(i) => {
                if let E::Let(l) = &*i.cond {
                    let pat = Box::new(self.pattern(&l.pat)?);
                    let value = self.boxed(&l.expr)?;
                    let then = self.block(&i.then_branch)?;
                    let els = match &i.else_branch {
                        Some((_, e)) => Some(self.boxed(e)?),
                        None => None,
                    };
                    return Ok(Expr { kind: ExprKind::IfLet { pat, value, then, els }, span });
                }
                if let E::Binary(b) = &*i.cond
                    && contains_let(&b.left) | contains_let(&b.right)
                {
                    return Err(unsupported(spn(&*i.cond), "`let` chains", "nest the `if let`s").into());
                }
                let cond = self.boxed(&i.cond)?;
                let then = self.block(&i.then_branch)?;
                let els = match &i.else_branch {
                    Some((_, e)) => Some(self.boxed(e)?),
                    None => None,
                };
                ExprKind::If(cond, then, els)
            }
            E::While(w) => {
                if let E::Let(l) = &*w.cond {
                    let pat = Box::new(self.pattern(&l.pat)?);
                    let value = self.boxed(&l.expr)?;
                    return Ok(Expr {
                        kind: ExprKind::WhileLet { label: w.label.as_ref().map(label), pat, value, body: self.block(&w.body)? },
                        span,
                    });
                }
                ExprKind::While(w.label.as_ref().map(label), self.boxed(&w.cond)?, self.block(&w.body)?)
            }
            E::Loop(l) => ExprKind::Loop(l.label.as_ref().map(label), self.block(&l.body)?),
            E::ForLoop(f) => self.for_loop(f)?,
            E::Break(b) => ExprKind::Break(
                b.label.as_ref().map(lifetime),
                match &b.expr {
                    Some(x) => Some(self.boxed(x)?),
                    None => None,
                },
            ),
            E::Continue(c) => ExprKind::Continue(c.label.as_ref().map(lifetime)),
            E::Return(r) => ExprKind::Return(match &r.expr {
                Some(x) => Some(self.boxed(x)?),
                None => None,
            }),
            E::Block(b) => {
                if let Some(l) = &b.label {
                    return Err(unsupported(spn(l), "labelled blocks", "use a labelled `loop` with `break`").into());
                }
                ExprKind::Block(self.block(&b.block)?)
            }
            E::Closure(c) => {
                if let Some(a) = &c.asyncness {
                    return Err(unsupported(spn(a), "async closures", "remove `async`").into());
                }
                if let Some(c) = &c.constness {
                    return Err(unsupported(spn(c), "`const` closures", "remove `const`").into());
                }
                let mut params = Vec::new();
                // Parameters written as patterns (`|&x|`, `|(a, b)|`) are bound by a `let` at
                // the start of the body.
                let mut lets = Vec::new();
                for (k, p) in c.inputs.iter().enumerate() {
                    let (pat, ty) = match p {
                        syn::Pat::Type(pt) => (&*pt.pat, Some(self.ty(&pt.ty)?)),
                        other => (other, None),
                    };
                    let mut pat = pat;
                    while let syn::Pat::Reference(r) = pat {
                        pat = &r.pat;
                    }
                    match pat {
                        syn::Pat::Ident(_) | syn::Pat::Wild(_) => {
                            let (name, mutable) = self.binding_pat(pat)?;
                            params.push(Param { name, mutable, ty, span: spn(p) });
                        }
                        other => {
                            let lp = self.let_pat(other)?;
                            let name = Ident { name: format!("#arg{k}"), span: spn(p) };
                            let init = Expr { kind: ExprKind::Path(name.clone()), span: name.span };
                            lets.push(Stmt::LetPat { pat: lp, ty: None, init, span: spn(p) });
                            params.push(Param { name, mutable: false, ty, span: spn(p) });
                        }
                    }
                }
                let ret = match &c.output {
                    syn::ReturnType::Default => None,
                    syn::ReturnType::Type(_, t) => Some(self.ty(t)?),
                };
                let mut body = self.boxed(&c.body)?;
                if !lets.is_empty() {
                    let at = body.span;
                    body = Box::new(Expr { kind: ExprKind::Block(Block { stmts: lets, tail: Some(body), span: at }), span: at });
                }
                ExprKind::Closure { is_move: c.capture.is_some(), params, ret, body }
            }
            E::Reference(r) if r.mutability.is_none() => ExprKind::Ref(self.boxed(&r.expr)?),
            E::Reference(r) => ExprKind::RefMut(self.boxed(&r.expr)?),
            E::Array(a) => ExprKind::ArrayLit(a.elems.iter().map(|x| self.expr(x)).collect::<PResult<_>>()?),
            E::Repeat(r) => ExprKind::ArrayRepeat(self.boxed(&r.expr)?, self.boxed(&r.len)?),
            E::Macro(m) if m.mac.path.is_ident("matches") => self.matches_macro(&m.mac, span)?,
            E::Macro(m) => return Err(macro_error(&m.mac).into()),
            E::Unsafe(u) => return Err(unsupported(spn(&u.unsafe_token), "`unsafe` blocks", "kernels need no `unsafe`").into()),
            E::Struct(s) => {
                if s.qself.is_some() {
                    return Err(unsupported(spn(&s.path), "qualified paths", "write the struct's name").into());
                }
                // `Tile::<4> { .. }`, `Range::<f32> { .. }`: the arguments say the value's type, as
                // `let t: Tile<4> = Tile { .. }` does; written that way, the literal gets the
                // annotation (an enum variant's arguments, `E::<T>::V { .. }`, stay an error).
                let mut annotation = None;
                for (k, seg) in s.path.segments.iter().enumerate() {
                    if !seg.arguments.is_none() {
                        if s.path.segments.len() != 1 || k != 0 {
                            return Err(unsupported(
                                spn(seg),
                                "generic arguments on enum variants",
                                "annotate the binding's type instead: `let e: Either<f32> = Either::Left { .. }`",
                            )
                            .into());
                        }
                        let ty = syn::Type::Path(syn::TypePath { qself: None, path: s.path.clone() });
                        annotation = Some(self.ty(&ty)?);
                    }
                }
                let path = s.path.segments.iter().map(|seg| ident(&seg.ident)).collect();
                let mut fields = Vec::new();
                for f in &s.fields {
                    for a in &f.attrs {
                        check_attr(a, false)?;
                    }
                    let syn::Member::Named(name) = &f.member else {
                        return Err(unsupported(spn(&f.member), "numbered fields", "name the field").into());
                    };
                    fields.push((ident(name), self.expr(&f.expr)?));
                }
                let base = match &s.rest {
                    Some(r) => Some(self.boxed(r)?),
                    None if s.dot2_token.is_some() => {
                        return Err(Diagnostic::error(spn(&s.path), "`..` needs a base value in a struct expression")
                            .label("write `..base`")
                            .into());
                    }
                    None => None,
                };
                let lit = ExprKind::StructLit { path, fields, base };
                match annotation {
                    None => lit,
                    Some(ty) => {
                        let name = Ident { name: "#literal".into(), span };
                        let value = Expr { kind: lit, span };
                        let tail = Expr { kind: ExprKind::Path(name.clone()), span };
                        let stmts = vec![Stmt::Let { name, mutable: false, ty: Some(ty), init: Some(value), span }];
                        ExprKind::Block(Block { stmts, tail: Some(Box::new(tail)), span })
                    }
                }
            }
            E::Field(f) => {
                let member = match &f.member {
                    syn::Member::Named(n) => Member::Named(ident(n)),
                    syn::Member::Unnamed(i) => Member::Index(i.index, spn(i)),
                };
                ExprKind::Field(self.boxed(&f.base)?, member)
            }
            E::Match(m) => {
                for a in &m.attrs {
                    check_attr(a, false)?;
                }
                self.match_expr(m)?
            }
            E::Range(r) => {
                return Err(Diagnostic::error(spn(r), "ranges are only supported in `for` loops")
                    .label("not supported here")
                    .help("write `for i in a..b { .. }`")
                    .into());
            }
            E::Try(t) => ExprKind::Try(self.boxed(&t.expr)?),
            E::Async(a) => return Err(unsupported(spn(&a.async_token), "`async` blocks", "remove `async`").into()),
            E::Await(a) => return Err(unsupported(spn(&a.await_token), "`.await`", "remove `.await`").into()),
            E::Let(l) => {
                return Err(unsupported(spn(l), "`let` expressions here", "use `if let`, `while let` or `let` as a statement").into());
            }
            E::Const(c) => return Err(unsupported(spn(&c.const_token), "`const` blocks", "use a `const` item").into()),
            E::Yield(y) => return Err(unsupported(spn(&y.yield_token), "`yield`", "remove it").into()),
            E::TryBlock(t) => return Err(unsupported(spn(&t.try_token), "`try` blocks", "remove it").into()),
            E::Infer(i) => return Err(Diagnostic::error(spn(i), "`_` is not an expression").label("here").into()),
            E::RawAddr(r) => return Err(unsupported(spn(r), "raw pointers", "index arrays").into()),
            _ => return Err(unsupported(span, "this expression", "see the language reference for what kernels may contain").into()),
        };
        Ok(Expr { kind, span })
    }

    pub(super) fn generic_arg(&mut self, g: &syn::GenericArgument) -> PResult<GenericArg> {
        match g {
            syn::GenericArgument::Type(syn::Type::Infer(i)) => Ok(GenericArg::Infer(spn(i))),
            syn::GenericArgument::Type(syn::Type::Path(p))
                if p.qself.is_none() && p.path.segments.iter().all(|s| s.arguments.is_none()) =>
            {
                if let Some(s) = self.scalar_name(&p.path)? {
                    return Ok(GenericArg::Type(TypeExpr::Scalar(s, spn(p))));
                }
                if let Some(t) = self.type_param(&p.path)? {
                    return Ok(GenericArg::Type(t));
                }
                // A bare name in a type position may be a `const` item: `shared_array::<f32, N>`.
                Ok(GenericArg::Const(self.path_expr(&p.path, spn(p))?))
            }
            syn::GenericArgument::Type(t) => Ok(GenericArg::Type(self.ty(t)?)),
            syn::GenericArgument::Const(e) => Ok(GenericArg::Const(self.expr(e)?)),
            other => Err(Diagnostic::error(spn(other), "unsupported generic argument").label("expected a type or a constant").into()),
        }
    }

    pub(super) fn path_expr(&mut self, path: &syn::Path, span: Span) -> PResult<Expr> {
        let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        for s in &path.segments {
            if !s.arguments.is_none() {
                return Err(Diagnostic::error(spn(s), "generic arguments are written on calls")
                    .label("not a call")
                    .help("call the function with them: `f::<f32>(..)`")
                    .into());
            }
        }
        if segs.len() == 1 && path.leading_colon.is_none() {
            return Ok(Expr { kind: ExprKind::Path(ident(&path.segments[0].ident)), span });
        }
        if segs.len() == 2 && path.leading_colon.is_none() && self.is_type_param(&segs[0]) {
            let (param, name) = (ident(&path.segments[0].ident), ident(&path.segments[1].ident));
            return Ok(Expr { kind: ExprKind::ParamConst { param, name }, span });
        }
        let trimmed: Vec<&str> = segs.iter().map(String::as_str).skip_while(|s| *s == "std" || *s == "core").collect();
        if let Some(e) = assoc_const(&trimmed, span) {
            return Ok(e);
        }
        // `std::cmp::Ordering::Less`, `std::option::Option::None`: the checker knows them.
        let std_enum = matches!(trimmed.as_slice(), ["cmp", "Ordering", _] | ["option", "Option", _]);
        if (path.leading_colon.is_some() || segs[0] == "std" || segs[0] == "core") && !std_enum {
            return Err(Diagnostic::error(span, format!("unknown path `{}`", quote_path(path)))
                .label("not found")
                .help("kernels name their own items (`common::SCALE`, `Mode::Add`) and numeric constants like `f32::MAX`, `i32::MIN` and `f32::consts::PI`").into());
        }
        // A module path or an enum variant, resolved by the checker.
        Ok(Expr { kind: ExprKind::QPath(path.segments.iter().map(|s| ident(&s.ident)).collect()), span })
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> PResult<ExprKind> {
        let mut iter = &*f.expr;
        while let syn::Expr::Paren(p) = iter {
            iter = &p.expr;
        }
        if let syn::Expr::MethodCall(m) = iter
            && m.method == "rev"
            && m.args.is_empty()
            && let Some(r) = range_of(&m.receiver)
        {
            return self.rev_loop(f, r);
        }
        let is_range = match iter {
            syn::Expr::Range(_) => true,
            syn::Expr::MethodCall(m) => m.method == "step_by",
            _ => false,
        };
        if !is_range {
            // Each element of a fixed-size array, by value (as `IntoIterator` for `[T; N]`).
            return Ok(ExprKind::ForEach {
                label: f.label.as_ref().map(label),
                var: self.let_pat(&f.pat)?,
                array: self.boxed(iter)?,
                body: self.block(&f.body)?,
            });
        }
        let (var, mutable) = self.binding_pat(&f.pat)?;
        if mutable {
            return Err(Diagnostic::error(var.span, "the loop variable cannot be `mut`").label("remove `mut`").into());
        }
        let mut iter = &*f.expr;
        while let syn::Expr::Paren(p) = iter {
            iter = &p.expr;
        }
        let (range, step) = match iter {
            syn::Expr::MethodCall(m) if m.method == "step_by" => {
                if m.args.len() != 1 {
                    return Err(Diagnostic::error(spn(m), "`step_by` takes one argument").label("here").into());
                }
                let mut r = &*m.receiver;
                while let syn::Expr::Paren(p) = r {
                    r = &p.expr;
                }
                (r, Some(self.boxed(&m.args[0])?))
            }
            other => (other, None),
        };
        let syn::Expr::Range(r) = range else {
            return Err(Diagnostic::error(spn(&f.expr), "`for` loops iterate over ranges and fixed-size arrays")
                .label("not a range")
                .help("write `for i in a..b`, `for i in a..=b`, `for i in (a..b).step_by(s)` or `for x in array`")
                .into());
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return Err(Diagnostic::error(spn(r), "the range needs a start and an end").label("write `a..b`").into());
        };
        Ok(ExprKind::For {
            label: f.label.as_ref().map(label),
            var,
            start: self.boxed(start)?,
            end: self.boxed(end)?,
            inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
            step,
            body: self.block(&f.body)?,
        })
    }
}

impl Lower {
    /// `for i in (a..b).rev() { body }`: `{ let lo = a; let hi = b; for k in lo..hi { let i =
    /// hi - 1 - k + lo; body } }` (`hi - k + lo` for `a..=b`), with hidden names for `lo`,
    /// `hi` and `k`: each value once, in the loop's order, without overflow.
    fn rev_loop(&mut self, f: &syn::ExprForLoop, r: &syn::ExprRange) -> PResult<ExprKind> {
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            return Err(Diagnostic::error(spn(r), "the range needs a start and an end").label("write `a..b`").into());
        };
        let (var, mutable) = self.binding_pat(&f.pat)?;
        if mutable {
            return Err(Diagnostic::error(var.span, "the loop variable cannot be `mut`").label("remove `mut`").into());
        }
        let span = spn(f);
        let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
        let name = |n: &str| Ident { name: n.to_string(), span };
        let path = |n: &str| Expr { kind: ExprKind::Path(name(n)), span };
        let bin = |op: crate::ir::BinOp, a: Expr, b: Expr| Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), span };
        let one = Expr { kind: ExprKind::Lit(Lit::Int(1, None)), span };
        let top = if inclusive { path("#hi") } else { bin(BinOp::Sub, path("#hi"), one) };
        let value = bin(BinOp::Add, bin(BinOp::Sub, top, path("#k")), path("#lo"));
        let let_ = |n: Ident, init: Expr| Stmt::Let { name: n, mutable: false, ty: None, init: Some(init), span };
        let mut body = self.block(&f.body)?;
        body.stmts.insert(0, let_(var, value));
        let lo = self.expr(start)?;
        let hi = self.expr(end)?;
        let for_ = Expr {
            kind: ExprKind::For {
                label: f.label.as_ref().map(label),
                var: name("#k"),
                start: Box::new(path("#lo")),
                end: Box::new(path("#hi")),
                inclusive,
                step: None,
                body,
            },
            span,
        };
        Ok(ExprKind::Block(Block { stmts: vec![let_(name("#lo"), lo), let_(name("#hi"), hi)], tail: Some(Box::new(for_)), span }))
    }
}

/// The range `r` is, under parentheses.
fn range_of(mut r: &syn::Expr) -> Option<&syn::ExprRange> {
    while let syn::Expr::Paren(p) = r {
        r = &p.expr;
    }
    match r {
        syn::Expr::Range(x) => Some(x),
        _ => None,
    }
}

fn macro_error(m: &syn::Macro) -> Diagnostic {
    let name = quote_path(&m.path);
    let help = match name.as_str() {
        "println" | "print" | "eprintln" | "dbg" => "kernels cannot print; write results to an output array",
        "assert" | "assert_eq" | "debug_assert" | "panic" | "unreachable" | "todo" | "unimplemented" => {
            "kernels cannot panic; guard with `if` and return early"
        }
        "vec" => "kernels cannot allocate; use `shared_array::<T, N>()` or an array parameter",
        _ => "write the code out; kache has no macros",
    };
    Diagnostic::error(spn(&m.path), format!("macro `{name}!` is not supported in kernels")).label("macros are not supported").help(help)
}

pub(super) fn ident(i: &syn::Ident) -> Ident {
    let name = i.to_string();
    let name = name.strip_prefix("r#").map(str::to_owned).unwrap_or(name);
    Ident { name, span: sp(i.span()) }
}

pub(super) fn lifetime(l: &syn::Lifetime) -> Ident {
    Ident { name: format!("'{}", l.ident), span: spn(l) }
}

fn label(l: &syn::Label) -> Ident {
    lifetime(&l.name)
}

pub(super) fn quote_path(p: &syn::Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    s.push_str(&p.segments.iter().map(|s| s.ident.to_string()).collect::<Vec<_>>().join("::"));
    s
}

/// Whether an expression holds a `let` (a `let` chain: `if let A = a && b`).
fn contains_let(e: &syn::Expr) -> bool {
    match e {
        syn::Expr::Let(_) => true,
        syn::Expr::Binary(b) => contains_let(&b.left) || contains_let(&b.right),
        _ => false,
    }
}
