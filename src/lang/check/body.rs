//! The function context: checking one function or closure body, then finishing it: discharging
//! obligations, settling every type and checking initialisation.

use crate::ir::*;
use crate::lang::ast::{self, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::factory::FactoryScope;
use super::generic_call::{PendingCall, cannot_infer};
use super::generics::{GenericEnv, satisfies};
use super::items::ModuleCx;
use super::unify::{H, Kind, Oblig, Unifier};

/// A local variable or parameter of the function being checked.
pub(super) struct LocalInfo {
    pub(super) name: String,
    pub(super) ty: H,
    pub(super) mutable: bool,
    /// `let x;` without initialiser: assignments initialise it.
    pub(super) deferred_init: bool,
    pub(super) span: Span,
    /// Array params and captured arrays, for messages about writes.
    pub(super) declared_readonly: bool,
    /// A parameter declared with a value type (not `&T`): `*x` of it is an error.
    pub(super) not_ref: bool,
    /// A `&T` parameter (not `&mut`): what it refers to cannot be written.
    pub(super) shared_ref: bool,
    /// A `&mut T` parameter or `&mut self`: a `match` on it binds its parts by reference.
    pub(super) mut_ref: bool,
    /// A name for a place (`ref mut` bindings of a `match` on a `&mut` value, `let r = &mut
    /// x;`, `for x in a.iter_mut()`): reading and writing it is reading and writing the place.
    pub(super) alias: Option<Place<H>>,
}

/// An enclosing loop, for `break` and `continue`.
pub(super) struct LoopInfo {
    pub(super) label: Option<String>,
    pub(super) id: LoopId,
    pub(super) is_loop: bool,
    pub(super) break_ty: Option<H>,
    pub(super) has_break: bool,
}

/// The state of checking one function or closure body.
pub(super) struct FnCx<'c, 'm> {
    pub(super) mcx: &'c mut ModuleCx<'m>,
    pub(super) scope_items: Option<&'c FactoryScope>,
    pub(super) u: Unifier,
    pub(super) locals: Vec<LocalInfo>,
    pub(super) scope: Vec<(String, LocalId)>,
    pub(super) loops: Vec<LoopInfo>,
    pub(super) next_loop: usize,
    pub(super) ret: H,
    pub(super) obligations: Vec<Oblig>,
    pub(super) callees: Vec<FuncId>,
    pub(super) captures: Vec<CaptureId>,
    pub(super) shared_sites: usize,
    pub(super) uses_libdevice: bool,
    pub(super) uses_block_sync: bool,
    /// What the generic parameters of the function stand for.
    pub(super) generics: GenericEnv,
    /// Calls of generic functions whose instances are made when the body is finished.
    pub(super) pending: Vec<PendingCall<'m>>,
    /// Placeholder and real id of each instance made for a pending call.
    pub(super) instantiated: Vec<(FuncId, FuncId)>,
    /// The module whose names the body sees.
    pub(super) module: ast::ModId,
    /// The function's `&mut T` parameters (of values): their final values are returned beside
    /// the result (`refs.rs`).
    pub(super) inout_params: Vec<LocalId>,
    /// The type the function returns when it is not the result's (`&mut` parameters).
    pub(super) final_ret: Option<H>,
    /// Calls whose callee's bounds are checked once the body's types are settled: the callee,
    /// what the call gives its generic parameters and `Self`, and where.
    pub(super) trait_checks: Vec<(&'m ast::FnItem, Vec<super::generic_call::Slot>, Option<H>, Span)>,
    /// The closures of the body (`closures.rs`).
    pub(super) closures: Vec<super::closures::ClosureDef>,
    /// The closures whose bodies are being checked, outermost first (by index).
    pub(super) closure_frames: Vec<usize>,
    /// A pattern is taking apart a `&mut` place: its bindings name the parts (`patterns.rs`).
    pub(super) bind_by_ref: bool,
}

pub(super) type CExpr = Expr<H>;

pub(super) type CBlock = Block<H>;

impl<'c, 'm> FnCx<'c, 'm> {
    pub(super) fn new(mcx: &'c mut ModuleCx<'m>, scope_items: Option<&'c FactoryScope>, module: ast::ModId) -> Self {
        let mut u = Unifier::new(mcx.enum_names.clone(), mcx.types.clone(), mcx.adts.clone());
        let ret = u.known(Ty::Unit);
        FnCx {
            mcx,
            scope_items,
            u,
            locals: Vec::new(),
            scope: Vec::new(),
            loops: Vec::new(),
            next_loop: 0,
            ret,
            obligations: Vec::new(),
            callees: Vec::new(),
            captures: Vec::new(),
            shared_sites: 0,
            uses_libdevice: false,
            uses_block_sync: false,
            generics: GenericEnv::none(),
            pending: Vec::new(),
            instantiated: Vec::new(),
            module,
            inout_params: Vec::new(),
            trait_checks: Vec::new(),
            final_ret: None,
            closures: Vec::new(),
            closure_frames: Vec::new(),
            bind_by_ref: false,
        }
    }

    /// The type a declared parameter or annotation stands for, in this body's module.
    pub(super) fn ty_of(&mut self, t: &TypeExpr) -> CResult<Ty> {
        self.mcx.ty_in(t, self.module, &self.generics)
    }

    pub(super) fn declare(&mut self, name: &ast::Ident, ty: H, mutable: bool, deferred_init: bool) -> LocalId {
        let id = self.locals.len();
        let declared_readonly = matches!(
            self.u.ty(ty),
            Some(Ty::Array(ArrayTy { writable: false, .. }) | Ty::ParamArray(ParamArrayTy { writable: false, .. }))
        );
        self.locals.push(LocalInfo {
            name: name.name.clone(),
            ty,
            mutable,
            deferred_init,
            span: name.span,
            declared_readonly,
            not_ref: false,
            shared_ref: false,
            mut_ref: false,
            alias: None,
        });
        if name.name != "_" {
            self.scope.push((name.name.clone(), id));
        }
        id
    }

    pub(super) fn lookup_local(&self, name: &str) -> Option<LocalId> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, id)| *id)
    }

    pub(super) fn mk(&mut self, kind: ExprKind<H>, ty: Ty, span: Span) -> CExpr {
        let ty = self.u.known(ty);
        Expr { kind, ty, span }
    }

    /// Checks the body of `f`, named `name` (an instance's name for an instance).
    pub(super) fn check_fn_body(&mut self, f: &ast::FnItem, name: String, kind: FuncKind, ret: Ty) -> CResult<Func> {
        self.ret = self.u.known(ret);
        for p in &f.params {
            let decl = p.ty.as_ref().ok_or_else(|| Diagnostic::error(p.span, "missing type").label("here"))?;
            let t = self.ty_of(decl)?;
            let h = self.u.known(t);
            let inout = super::refs::is_inout(decl) || self.mcx.is_mutating_closure_ty(t);
            let l = self.declare(&p.name, h, p.mutable || inout, false);
            let by_ref = matches!(decl, TypeExpr::Ref { .. } | TypeExpr::ArrayRef { .. })
                || (p.name.name == "self" && matches!(f.receiver, Some(ast::SelfKind::Ref | ast::SelfKind::RefMut)));
            self.locals[l].not_ref = !by_ref && matches!(t, Ty::Scalar(_) | Ty::Enum(_) | Ty::Agg(_));
            self.locals[l].shared_ref =
                matches!(decl, TypeExpr::Ref { mutable: false, inner, .. } if !matches!(**inner, TypeExpr::ArrayRef { .. }));
            self.locals[l].mut_ref = super::refs::is_inout(decl) || (p.name.name == "self" && f.receiver == Some(ast::SelfKind::RefMut));
            if inout {
                self.inout_params.push(l);
            }
        }
        let params = f.params.len();
        let body = self.block(&f.body)?;
        let body_ty = self.body_type(&body);
        if !self.u.unify(self.ret, body_ty) {
            let span = f
                .body
                .tail
                .as_ref()
                .map(|t| t.span)
                .unwrap_or(Span::new(f.body.span.hi.saturating_sub(1) as usize, f.body.span.hi as usize));
            let r = self.u.describe(self.ret);
            let b = self.u.describe(body_ty);
            let mut d = Diagnostic::error(span, format!("mismatched types: `{}` returns `{r}` but its body has type `{b}`", f.name.name))
                .label(format!("expected `{r}`"))
                .secondary(f.sig_span, "return type declared here");
            if b == "()" {
                d = d.help("end the body with an expression of the return type (no `;`), or `return` a value");
            }
            return Err(d.into());
        }
        let body = if self.inout_params.is_empty() {
            body
        } else {
            let span = f.body.span;
            let value = Expr { kind: ExprKind::Block(body), ty: self.ret, span };
            let wrapped = self.with_inouts(value);
            self.final_ret = Some(wrapped.ty);
            Block { stmts: Vec::new(), tail: Some(Box::new(wrapped)) }
        };
        self.finish(name, kind, params, body, f.name.span)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn check_closure_body(
        &mut self,
        name: &str,
        kind: FuncKind,
        params: &[ast::Param],
        ret: Option<&TypeExpr>,
        body: &ast::Expr,
        span: Span,
        expected: Option<(Vec<Ty>, Ty)>,
        is_kernel: bool,
    ) -> CResult<Func> {
        for (i, p) in params.iter().enumerate() {
            let h = match (&p.ty, &expected) {
                (Some(t), exp) => {
                    let ty = self.ty_of(t)?;
                    if let Some((want, _)) = exp
                        && want.get(i).is_some_and(|w| !same_shape(*w, ty))
                    {
                        return Err(Diagnostic::error(
                            t.span(),
                            format!("closure parameter has type `{ty}` but the factory's type says `{}`", want[i]),
                        )
                        .label("mismatched parameter type")
                        .into());
                    }
                    self.u.known(ty)
                }
                (None, Some((want, _))) => self.u.known(want[i]),
                (None, None) if is_kernel => {
                    return Err(Diagnostic::error(p.span, "kernel closure parameters need type annotations")
                        .label("write `name: Type`")
                        .help("the parameters of a kernel closure are its launch signature")
                        .into());
                }
                (None, None) => self.u.var(Kind::Any),
            };
            if matches!(self.u.ty(h), Some(Ty::Unit)) {
                return Err(Diagnostic::error(p.span, "parameters cannot have type `()`").label("here").into());
            }
            self.declare(&p.name, h, p.mutable, false);
            self.obligations.push(Oblig::Settled { h, span: p.span });
        }
        self.ret = match (ret, &expected) {
            (Some(t), _) => {
                let t = self.ty_of(t)?;
                self.u.known(t)
            }
            (None, Some((_, r))) => self.u.known(*r),
            (None, None) if is_kernel => self.u.known(Ty::Unit),
            (None, None) => self.u.var(Kind::Any),
        };
        let body_e = self.expr(body)?;
        let bt = body_e.ty;
        if !self.u.unify(self.ret, bt) {
            return Err(self.mismatch(body.span, self.ret, bt, " as the closure's return type").into());
        }
        if let Some(Ty::Array(_)) = self.u.ty(self.ret) {
            return Err(Diagnostic::error(body.span, "closures cannot return arrays").label("returns an array").into());
        }
        self.obligations.push(Oblig::Settled { h: self.ret, span });
        let block = Block { stmts: Vec::new(), tail: Some(Box::new(body_e)) };
        let name_span = span;
        self.finish(name.to_string(), kind, params.len(), block, name_span)
    }

    pub(super) fn finish(&mut self, name: String, kind: FuncKind, params: usize, body: CBlock, span: Span) -> CResult<Func> {
        // Discharge obligations in order (earliest source position first gives the first error).
        let obligations = std::mem::take(&mut self.obligations);
        for o in &obligations {
            if let Oblig::Class { h, .. } | Oblig::Cast { h, .. } = o {
                self.u.settle(*h);
            }
        }
        for o in obligations {
            match o {
                Oblig::Bound { h, bound, param, func, span } => match self.u.settle(h) {
                    Some(t) if satisfies(t, bound) => {}
                    Some(t) => {
                        let shown = self.u.ty_name(t);
                        let what = super::generics::describe_param(&param, bound);
                        let d =
                            Diagnostic::error(span, format!("the type `{shown}` does not satisfy the bound `{what}` of `{func}`")).label(
                                format!("`{param}` is inferred as `{shown}` here, which is not {}", super::generics::bound_admits(bound)),
                            );
                        let d = match t {
                            Ty::Param(p) => d
                                .help(format!("restrict the type parameter: `{}: {}`", shown, bound.name().unwrap_or("Num")))
                                .note(match p.bound.name() {
                                    Some(b) => format!("`{shown}` is only bounded by `{b}`"),
                                    None => format!("`{shown}` has no bound"),
                                }),
                            _ => d.help(format!("`{}` is {}", bound.name().unwrap_or("_"), super::generics::bound_members(bound))),
                        };
                        return Err(d.into());
                    }
                    None => {
                        let Some(f) = self.mcx.m.func(&func) else { continue };
                        return Err(cannot_infer(f, &param, span).into());
                    }
                },
                Oblig::Class { h, class, span, what } => match self.u.settle(h) {
                    Some(Ty::Scalar(s)) if !class.accepts(s) => return Err(self.class_error(s.name(), class, span, &what).into()),
                    Some(Ty::Param(p)) if !class.accepts_bound(p.bound) => return Err(self.bound_error(p, class, span, &what).into()),
                    Some(Ty::Scalar(_)) | Some(Ty::Never) | Some(Ty::Param(_)) => {}
                    Some(t) => {
                        let name = self.u.ty_name(t);
                        return Err(self.class_error(&name, class, span, &what).into());
                    }
                    None => {
                        return Err(Diagnostic::error(span, "type annotations needed")
                            .label("cannot infer the type of this value")
                            .help("annotate the variable: `let x: f32 = ..`")
                            .into());
                    }
                },
                Oblig::Cast { h, to, span } => match self.u.settle(h) {
                    Some(from @ (Ty::Scalar(_) | Ty::Param(_))) => self.check_cast(from, to, span)?,
                    Some(Ty::Never) => {}
                    Some(Ty::Enum(_)) if to.scalar().is_some_and(|s| s.is_int()) => {}
                    Some(t @ Ty::Enum(_)) => {
                        let (name, to) = (self.u.ty_name(t), self.u.ty_name(to));
                        return Err(Diagnostic::error(span, format!("casting `{name}` as `{to}` is invalid"))
                            .label("an enum casts to integer types only")
                            .help(format!("cast to its discriminant first, then convert: `(x as i64) as {to}`"))
                            .into());
                    }
                    Some(t) => {
                        let (t, to) = (self.u.ty_name(t), self.u.ty_name(to));
                        return Err(Diagnostic::error(span, format!("invalid cast from `{t}` to `{to}`"))
                            .label("only scalars can be cast")
                            .into());
                    }
                    None => {
                        return Err(Diagnostic::error(span, "type annotations needed").label("cannot infer the type of this value").into());
                    }
                },
                Oblig::Settled { h, span } => {
                    if self.u.settle(h).is_none() {
                        return Err(Diagnostic::error(span, "type annotations needed")
                            .label("cannot infer the type")
                            .help("annotate it: `let x: f32 = ..` or `|i: usize| ..`")
                            .into());
                    }
                }
            }
        }
        self.register_closures()?;
        self.check_call_bounds()?;
        let mut locals = Vec::new();
        for i in 0..self.locals.len() {
            let h = self.locals[i].ty;
            let Some(ty) = self.u.settle(h) else {
                return Err(Diagnostic::error(self.locals[i].span, "type annotations needed")
                    .label(format!("cannot infer the type of `{}`", self.locals[i].name))
                    .help("annotate it: `let x: f32 = ..`")
                    .into());
            };
            if !self.generics.is_definition() && self.unknown_len(ty, 0) {
                return Err(Diagnostic::error(self.locals[i].span, "type annotations needed")
                    .label(format!("cannot infer the length of an array in the type of `{}`", self.locals[i].name))
                    .help("annotate it, or name the constants: `Tile::<4>::new()`")
                    .into());
            }
            locals.push(LocalDecl { name: self.locals[i].name.clone(), ty });
        }
        let ret = self.u.settle(self.final_ret.unwrap_or(self.ret)).unwrap_or(Ty::Unit);
        self.instantiate_pending()?;
        let body = self.resolve_block(body)?;
        self.extract_closures(&name)?;
        if let Some((l, used)) = crate::lang::assign::first_unassigned_use(&body, params, locals.len()) {
            let info = &self.locals[l];
            return Err(Diagnostic::error(used, format!("used binding `{}` isn't initialized", info.name))
                .label(format!("`{}` used here but it isn't initialized on every path to here", info.name))
                .secondary(info.span, "binding declared here but left uninitialized")
                .help(format!("give it a value where it is declared: `let {} = ..;`, or assign it on every path first", info.name))
                .into());
        }
        let once: Vec<bool> = self.locals.iter().map(|l| !l.mutable && l.deferred_init).collect();
        if let Some((l, at)) = crate::lang::assign::first_reassignment(&body, &once) {
            let info = &self.locals[l];
            return Err(Diagnostic::error(at, format!("cannot assign twice to immutable variable `{}`", info.name))
                .label("cannot assign twice: it may already have a value here")
                .secondary(info.span, "declared here without `mut`")
                .help(format!("make it mutable: `let mut {}`", info.name))
                .into());
        }
        // Float `%` is libdevice's fmod on the GPU.
        visit_block(&body, &mut |e| {
            let float_rem = match &e.kind {
                ExprKind::Binary(BinOp::Rem, a, _) | ExprKind::CompoundAssign(BinOp::Rem, _, a) => {
                    a.ty.scalar().is_some_and(|s| s.is_float())
                }
                ExprKind::Builtin(Builtin::Math(MathFn::RemEuclid), a) => a[0].ty.scalar().is_some_and(|s| s.is_float()),
                _ => false,
            };
            self.uses_libdevice |= float_rem;
        });
        Ok(Func {
            name,
            kind,
            params,
            ref_self: false,
            ret,
            locals,
            body,
            callees: std::mem::take(&mut self.callees),
            captures: std::mem::take(&mut self.captures),
            uses_libdevice: self.uses_libdevice,
            uses_block_sync: self.uses_block_sync,
            span,
        })
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// Whether `t` holds an array whose length was never inferred (in an instance, an error).
    fn unknown_len(&self, t: Ty, depth: u32) -> bool {
        let Ty::Agg(id) = t else { return false };
        if depth > 64 {
            return false;
        }
        let agg = self.mcx.types.borrow().get(id).cloned();
        match agg {
            Some(AggTy::Array { elem, len }) => len == UNKNOWN_LEN || self.unknown_len(elem, depth + 1),
            Some(AggTy::Tuple(ts)) => ts.into_iter().any(|t| self.unknown_len(t, depth + 1)),
            Some(AggTy::Struct(s)) => s.fields.into_iter().any(|(_, t)| self.unknown_len(t, depth + 1)),
            None => false,
        }
    }

    /// `x as T`: between scalars as Rust allows; to and from a type parameter when its bound
    /// makes every instance a valid numeric cast (`bool` casts only to integers).
    fn check_cast(&self, from: Ty, to: Ty, span: Span) -> CResult<()> {
        let num = |b: Bound| b.implies(Bound::Num);
        let ok = match (from, to) {
            (Ty::Scalar(f), Ty::Scalar(t)) => match (f, t) {
                (_, Scalar::Bool) => f == Scalar::Bool,
                (Scalar::Bool, t) => t.is_int(),
                _ => true,
            },
            (Ty::Param(p), Ty::Param(q)) => p == q || (num(p.bound) && num(q.bound)),
            (Ty::Param(p), Ty::Scalar(t)) => num(p.bound) && t.is_numeric(),
            (Ty::Scalar(f), Ty::Param(q)) => (f.is_numeric() && num(q.bound)) || (f == Scalar::Bool && q.bound == Bound::Int),
            _ => false,
        };
        if ok {
            return Ok(());
        }
        let (f, t) = (self.u.ty_name(from), self.u.ty_name(to));
        let mut d = Diagnostic::error(span, format!("invalid cast from `{f}` to `{t}`")).label("not a valid `as` cast");
        if to == Ty::Scalar(Scalar::Bool) {
            d = d.help("compare instead: `x != 0`");
        }
        for side in [from, to] {
            if let Ty::Param(p) = side
                && !num(p.bound)
            {
                let n = self.u.ty_name(side);
                d = d.help(format!("casts with `as` need a number type: restrict the type parameter, `{n}: Num`"));
            }
        }
        Err(d.into())
    }
}

fn same_shape(a: Ty, b: Ty) -> bool {
    match (a, b) {
        (Ty::Array(x), Ty::Array(y)) => x.elem == y.elem && x.ndim == y.ndim && x.writable == y.writable,
        _ => a == b,
    }
}
