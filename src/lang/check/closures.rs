//! Closures as values: `|x| x * a` in a body is a value of a type of its own (a struct of what
//! it captures, by value), called through a function of its own that takes that value first.
//! A closure's body is checked in the body that holds it (one inference for both, so a call
//! settles its parameters' types), then taken out into its function: its parameters and locals
//! renumbered, each captured variable a field of the value.
//!
//! A closure that assigns what it captures (an `FnMut`) takes its value by reference (`&mut
//! self`), so its state lasts from call to call; one that is not `move` writes each captured
//! variable it changed back to the variable after every call, and a function it is passed to
//! returns it changed (a `&mut` parameter, `refs.rs`), as Rust's borrow of the variable would.
//! Passed to a generic function, a closure's type is the type parameter's: the instance calls
//! its function directly.

use std::collections::HashMap;

use crate::ir::*;
use crate::lang::ast::{self, GenericArg, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::CResult;
use super::adt::{AdtDef, AdtId, AdtShape};
use super::body::{CExpr, FnCx, LoopInfo};
use super::generic_call::Slot;
use super::items::{ModuleCx, Sig};
use super::traits::{StdTrait, TraitId};
use super::unify::{ArgH, H, Kind};

/// A closure of the body being checked.
#[derive(Debug)]
pub(super) struct ClosureDef {
    /// Its type's template (a struct of its captures).
    pub(super) adt: AdtId,
    /// The function its body becomes.
    pub(super) func: FuncId,
    /// Its parameters and locals: `first_local..end_local` of the body's locals.
    pub(super) first_local: LocalId,
    pub(super) end_local: LocalId,
    pub(super) params: Vec<H>,
    pub(super) ret: H,
    /// The variables it captures (locals of the body around it) and their types.
    pub(super) captures: Vec<(LocalId, H)>,
    /// Which of them its body assigns.
    pub(super) mutated: Vec<bool>,
    pub(super) is_move: bool,
    /// Its type: the template's instance for the captures' types.
    pub(super) ty: H,
    /// Its body, until it is taken out into its function.
    pub(super) body: Option<CExpr>,
    pub(super) span: Span,
}

impl ClosureDef {
    /// Whether a call changes its value (it assigns a captured variable: an `FnMut`).
    pub(super) fn mutates(&self) -> bool {
        self.mutated.iter().any(|m| *m)
    }
}

/// What a closure's type says to a function it is passed to: its function and signature.
#[derive(Clone, Debug)]
pub(super) struct ClosureSig {
    pub(super) func: FuncId,
    pub(super) params: Vec<Ty>,
    pub(super) ret: Ty,
    /// A call changes the value (`&mut self`).
    pub(super) mutates: bool,
}

impl<'m> ModuleCx<'m> {
    /// The closure an aggregate type is, if it is one.
    pub(super) fn closure_of(&self, id: AggId) -> Option<ClosureSig> {
        let (adt, _) = self.adts.borrow().instance_of(id)?;
        self.closure_sigs.get(&adt).cloned()
    }

    /// Whether `t` is a closure whose calls change it (a parameter of that type is passed
    /// back changed, as a `&mut` one).
    pub(super) fn is_mutating_closure_ty(&self, t: Ty) -> bool {
        matches!(t, Ty::Agg(id) if self.closure_of(id).is_some_and(|s| s.mutates))
    }
}

/// The closures' signatures of a module context, by template.
pub(super) type ClosureSigs = HashMap<AdtId, ClosureSig>;

impl<'c, 'm> FnCx<'c, 'm> {
    /// The closure this body defines whose type is `h`, by index into `self.closures`.
    pub(super) fn closure_def(&mut self, h: H) -> Option<usize> {
        let (adt, _) = self.u.adt_of(h)?;
        self.closures.iter().position(|c| c.adt == adt)
    }

    /// Notes a use of local `l`: inside a closure's body, a local of the body around it is
    /// captured (by every closure between).
    pub(super) fn use_local(&mut self, l: LocalId) {
        if l >= self.locals.len() {
            return;
        }
        for &k in &self.closure_frames {
            let c = &mut self.closures[k];
            if l < c.first_local && !c.captures.iter().any(|(x, _)| *x == l) {
                let h = self.locals[l].ty;
                c.captures.push((l, h));
                c.mutated.push(false);
            }
        }
    }

    /// Notes an assignment to local `l` (or a part of it): a captured variable a closure
    /// changes.
    pub(super) fn assign_local(&mut self, l: LocalId) {
        self.use_local(l);
        for &k in &self.closure_frames {
            let c = &mut self.closures[k];
            if let Some(j) = c.captures.iter().position(|(x, _)| *x == l) {
                c.mutated[j] = true;
            }
        }
    }

    /// `[move] |params| body`
    pub(super) fn closure(
        &mut self,
        is_move: bool,
        params: &[ast::Param],
        ret: Option<&TypeExpr>,
        body: &ast::Expr,
        span: Span,
    ) -> CResult<CExpr> {
        let index = self.closures.len();
        let name = format!("{{closure#{}}}", index + 1);
        let adt = self.mcx.adts.borrow_mut().add(AdtDef {
            item: None,
            name: name.clone(),
            params: Vec::new(),
            shape: AdtShape::Struct { kind: ast::StructKind::Named, fields: Vec::new() },
            len_exprs: Vec::new(),
            derives: ["Clone", "Copy"].map(String::from).to_vec(),
        });
        let func = self.mcx.reserve(Sig { params: Vec::new(), ret: Ty::Unit });
        let first_local = self.locals.len();
        let mut phs = Vec::with_capacity(params.len());
        let mark = self.scope.len();
        for p in params {
            let h = match &p.ty {
                Some(t) => self.annotation(t)?,
                None => self.u.var(Kind::Any),
            };
            if self.u.ty(h) == Some(Ty::Unit) {
                return Err(Diagnostic::error(p.span, "parameters cannot have type `()`").label("here").into());
            }
            self.declare(&p.name, h, p.mutable, false);
            phs.push(h);
        }
        let ret_h = match ret {
            Some(t) => self.annotation(t)?,
            None => self.u.var(Kind::Any),
        };
        self.closures.push(ClosureDef {
            adt,
            func,
            first_local,
            end_local: first_local,
            params: phs.clone(),
            ret: ret_h,
            captures: Vec::new(),
            mutated: Vec::new(),
            is_move,
            ty: ret_h,
            body: None,
            span,
        });
        // The body: its own `return` target, no loop around it, no `&mut` parameters.
        let saved_ret = std::mem::replace(&mut self.ret, ret_h);
        let saved_loops: Vec<LoopInfo> = std::mem::take(&mut self.loops);
        let saved_inouts = std::mem::take(&mut self.inout_params);
        let saved_final = self.final_ret.take();
        self.closure_frames.push(index);
        let r = self.expr(body);
        self.closure_frames.pop();
        self.ret = saved_ret;
        self.loops = saved_loops;
        self.inout_params = saved_inouts;
        self.final_ret = saved_final;
        self.scope.truncate(mark);
        let b = r?;
        self.unify_or(b.span, ret_h, b.ty, " as the closure's return type")?;
        self.obligations.push(super::unify::Oblig::Settled { h: ret_h, span });
        for (p, h) in params.iter().zip(&phs) {
            self.obligations.push(super::unify::Oblig::Settled { h: *h, span: p.span });
        }
        // The closure's value: what it captures, in order.
        let caps = self.closures[index].captures.clone();
        let mut parts = Vec::with_capacity(caps.len());
        let mut args = Vec::with_capacity(caps.len());
        let mut fields = Vec::with_capacity(caps.len());
        for (k, (l, h)) in caps.iter().enumerate() {
            parts.push((k as u32, Expr { kind: ExprKind::Local(*l), ty: *h, span }));
            args.push(ArgH::Ty(*h));
            fields.push((self.locals[*l].name.clone(), Ty::Param(TypeParam { index: k as u8, bound: Bound::Any })));
        }
        if caps.len() > 200 {
            return Err(Diagnostic::error(span, "a closure captures more than 200 variables").label("too many").into());
        }
        {
            let mut adts = self.mcx.adts.borrow_mut();
            let def = &mut adts.defs[adt as usize];
            def.params = (0..caps.len()).map(|k| (format!("C{k}"), None)).collect();
            def.shape = AdtShape::Struct { kind: ast::StructKind::Named, fields };
        }
        let ty = self.u.adt(adt, args, false);
        let c = &mut self.closures[index];
        c.end_local = self.locals.len();
        c.ty = ty;
        c.body = Some(b);
        Ok(Expr { kind: ExprKind::Aggregate { parts, base: None }, ty, span })
    }

    /// `f(args)` where local `l` holds a closure (of this body, or a type parameter's value in
    /// an instance) or, at a definition, a value of a type parameter bounded by `Fn`.
    pub(super) fn local_closure_call(
        &mut self,
        l: LocalId,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<Option<CExpr>> {
        let h = self.locals[l].ty;
        self.use_local(l);
        // A closure of this body.
        if let Some(k) = self.closure_def(h) {
            self.no_generics(generics)?;
            let (params, ret, func_id, mutates) = {
                let c = &self.closures[k];
                (c.params.clone(), c.ret, c.func, c.mutates())
            };
            let out = self.closure_args(&params, args, span)?;
            let byref: Vec<(LocalId, usize)> = {
                let c = &self.closures[k];
                if c.is_move {
                    Vec::new()
                } else {
                    c.captures.iter().zip(&c.mutated).enumerate().filter(|(_, (_, m))| **m).map(|(j, ((x, _), _))| (*x, j)).collect()
                }
            };
            return self.closure_call_expr(func_id, l, h, mutates, out, ret, &byref, span).map(Some);
        }
        // A closure passed in (an instance's type parameter).
        if let Some(Ty::Agg(id)) = self.u.ty(h)
            && let Some(sig) = self.mcx.closure_of(id)
        {
            self.no_generics(generics)?;
            let params: Vec<H> = sig.params.iter().map(|t| self.u.known(*t)).collect();
            let ret = self.u.known(sig.ret);
            let out = self.closure_args(&params, args, span)?;
            if !self.callees.contains(&sig.func) {
                self.callees.push(sig.func);
            }
            return self.closure_call_expr(sig.func, l, h, sig.mutates, out, ret, &[], span).map(Some);
        }
        // A type parameter bounded by a closure trait (a definition).
        if let Some(p @ Ty::Param(_)) = self.u.ty(h) {
            let b = self
                .generics
                .bounds_of(p)
                .find(|b| matches!(b.id, TraitId::Std(StdTrait::Fn | StdTrait::FnMut | StdTrait::FnOnce)))
                .cloned();
            let Some(b) = b else {
                let d = self.u.describe(h);
                return Err(Diagnostic::error(func.span, format!("expected function, found `{d}`"))
                    .label("not a function")
                    .help(format!("bound the type parameter by a closure trait: `{d}: Fn(..) -> ..`"))
                    .into());
            };
            let params: Vec<H> = match b.args.first() {
                Some(Ty::Agg(id)) => {
                    self.mcx.types.borrow().components(*id).into_iter().collect::<Vec<_>>().into_iter().map(|t| self.u.known(t)).collect()
                }
                _ => Vec::new(),
            };
            let ret = b.assoc.iter().find(|(n, _)| n == "Output").map(|(_, t)| *t).unwrap_or(Ty::Unit);
            let ret = self.u.known(ret);
            let mut out = vec![Expr { kind: ExprKind::Local(l), ty: h, span }];
            out.extend(self.closure_args(&params, args, span)?);
            return Ok(Some(Expr { kind: ExprKind::Call(super::generic_call::DEFINITION_CALL, out), ty: ret, span }));
        }
        Ok(None)
    }

    /// The arguments of a closure's call, checked against its parameters.
    fn closure_args(&mut self, params: &[H], args: &[ast::Expr], span: Span) -> CResult<Vec<CExpr>> {
        if params.len() != args.len() {
            return Err(Diagnostic::error(
                span,
                format!(
                    "this closure takes {} argument{} but {} {} supplied",
                    params.len(),
                    super::plural(params.len()),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {} argument{}", params.len(), super::plural(params.len())))
            .into());
        }
        let mut out = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(params) {
            let x = self.expr(a)?;
            self.assign_compatible(*p, &x, span)?;
            out.push(x);
        }
        Ok(out)
    }

    /// A call of closure function `func` on the value in local `l`: by value (`Fn`), or on the
    /// local itself (`FnMut`), then the variables it changed written back (`byref`: the
    /// captured local and its field).
    #[allow(clippy::too_many_arguments)]
    fn closure_call_expr(
        &mut self,
        func: FuncId,
        l: LocalId,
        h: H,
        mutates: bool,
        out: Vec<CExpr>,
        ret: H,
        byref: &[(LocalId, usize)],
        span: Span,
    ) -> CResult<CExpr> {
        if !self.callees.contains(&func) {
            self.callees.push(func);
        }
        if !mutates {
            let mut all = vec![Expr { kind: ExprKind::Local(l), ty: h, span }];
            all.extend(out);
            return Ok(Expr { kind: ExprKind::Call(func, all), ty: ret, span });
        }
        if !self.locals[l].mutable {
            let name = self.locals[l].name.clone();
            return Err(Diagnostic::error(span, format!("cannot borrow `{name}` as mutable, as it is not declared as mutable"))
                .label("calling a closure that changes what it captures")
                .secondary(self.locals[l].span, "declared here")
                .help(format!("make it mutable: `let mut {name}`"))
                .into());
        }
        self.assign_local(l);
        let call = Expr { kind: ExprKind::CallRef(func, Place::Local(l), out), ty: ret, span };
        if byref.is_empty() {
            return Ok(call);
        }
        let back = self.write_captures_back(l, h, byref, span);
        Ok(self.then_stmts(call, back, span))
    }

    /// `x = closure.k` for each variable a closure (in local `l`) captured by reference and
    /// changed.
    pub(super) fn write_captures_back(&mut self, l: LocalId, h: H, byref: &[(LocalId, usize)], span: Span) -> Vec<Stmt<H>> {
        let mut out = Vec::new();
        for (x, k) in byref {
            self.assign_local(*x);
            let xt = self.locals[*x].ty;
            let whole = Expr { kind: ExprKind::Local(l), ty: h, span };
            let v = Expr { kind: ExprKind::Field(Box::new(whole), *k as u32), ty: xt, span };
            out.push(Stmt::Expr(self.mk(ExprKind::Assign(Place::Local(*x), Box::new(v)), Ty::Unit, span)));
        }
        out
    }

    /// The variables a closure of this body captured by reference and changes (not `move`):
    /// `(variable, field)`.
    pub(super) fn byref_captures(&mut self, h: H) -> Option<Vec<(LocalId, usize)>> {
        let k = self.closure_def(h)?;
        let c = &self.closures[k];
        if c.is_move {
            return Some(Vec::new());
        }
        Some(c.captures.iter().zip(&c.mutated).enumerate().filter(|(_, (_, m))| **m).map(|(j, ((x, _), _))| (*x, j)).collect())
    }

    /// Whether a value of type `h` is a closure whose calls change it (passed on, it is
    /// returned changed).
    pub(super) fn is_mutating_closure(&mut self, h: H) -> bool {
        if let Some(k) = self.closure_def(h) {
            return self.closures[k].mutates();
        }
        match self.u.ty(h) {
            Some(Ty::Agg(id)) => self.mcx.closure_of(id).is_some_and(|s| s.mutates),
            _ => false,
        }
    }

    /// A closure passed for a parameter `F: Fn(A, B) -> R` (or `impl Fn(..)`): its parameters
    /// and result are the bound's.
    pub(super) fn apply_fn_bound(&mut self, f: &ast::FnItem, slots: &[Slot], param: &str, arg: H, span: Span) -> CResult<()> {
        let Some(k) = self.closure_def(arg) else { return Ok(()) };
        let Some(g) = f.generics.iter().find(|g| g.name.name == param) else { return Ok(()) };
        for b in &g.bounds {
            let Some((ps, r)) = &b.fn_sugar else { continue };
            let scope = super::bounds::HScope { generics: &f.generics, slots, self_h: None, impl_of: None, pattern: false };
            let cparams = self.closures[k].params.clone();
            let cret = self.closures[k].ret;
            if ps.len() != cparams.len() {
                return Err(Diagnostic::error(
                    span,
                    format!(
                        "this closure takes {} argument{}, but `{}` takes {}",
                        cparams.len(),
                        super::plural(cparams.len()),
                        b.path_text(),
                        ps.len()
                    ),
                )
                .label("mismatched closure")
                .secondary(b.span, "required by this bound")
                .into());
            }
            for (p, c) in ps.iter().zip(cparams) {
                let want = self.mcx.texpr_h(&mut self.u, p, f.module, &scope)?;
                self.unify_or(span, want, c, " (a parameter of the closure, as the bound says)")?;
            }
            let want = match r {
                Some(r) => self.mcx.texpr_h(&mut self.u, r, f.module, &scope)?,
                None => self.u.known(Ty::Unit),
            };
            self.unify_or(span, want, cret, " (the closure's result, as the bound says)")?;
        }
        Ok(())
    }

    /// Takes each closure's body out into its function, now that the body's types are settled
    /// and its calls' instances made: the parameters and locals renumbered, captured variables
    /// read from the closure's value.
    pub(super) fn extract_closures(&mut self, parent: &str) -> CResult<()> {
        for k in (0..self.closures.len()).rev() {
            let Some(body) = self.closures[k].body.take() else { continue };
            let (first, end, func, caps, span, mutates) = {
                let c = &self.closures[k];
                (c.first_local, c.end_local, c.func, c.captures.clone(), c.span, c.mutates())
            };
            let ty = self
                .u
                .settle(self.closures[k].ty)
                .ok_or_else(|| Diagnostic::error(span, "type annotations needed").label("cannot infer the closure's type"))?;
            let body = self.resolve_closure_body(body)?;
            let cap_index: HashMap<LocalId, (u32, Ty)> =
                caps.iter().enumerate().map(|(j, (l, h))| (*l, (j as u32, self.u.settle(*h).unwrap_or(Ty::Unit)))).collect();
            let body = rewrite(body, first, end, &cap_index, ty, span)?;
            let mut locals = vec![LocalDecl { name: "self".into(), ty }];
            for l in first..end {
                let t = self
                    .u
                    .settle(self.locals[l].ty)
                    .ok_or_else(|| Diagnostic::error(self.locals[l].span, "type annotations needed").label("cannot infer the type"))?;
                locals.push(LocalDecl { name: self.locals[l].name.clone(), ty: t });
            }
            let ret = self.u.settle(self.closures[k].ret).unwrap_or(Ty::Unit);
            let nparams = self.closures[k].params.len() + 1;
            let mut callees = Vec::new();
            visit_block(&Block { stmts: Vec::new(), tail: Some(Box::new(body.clone())) }, &mut |e| {
                if let ExprKind::Call(id, _) | ExprKind::CallRef(id, _, _) = &e.kind
                    && *id != super::generic_call::DEFINITION_CALL
                    && !callees.contains(id)
                {
                    callees.push(*id);
                }
            });
            let f = Func {
                name: format!("{parent}::{{closure#{}}}", k + 1),
                kind: FuncKind::Closure { factory: parent.to_string() },
                params: nparams,
                ref_self: mutates,
                ret,
                locals,
                body: Block { stmts: Vec::new(), tail: Some(Box::new(body)) },
                callees,
                captures: Vec::new(),
                uses_libdevice: self.uses_libdevice,
                uses_block_sync: self.uses_block_sync,
                span,
            };
            self.mcx.sigs[func] = Sig { params: f.param_decls().iter().map(|l| l.ty).collect(), ret };
            self.mcx.funcs[func] = Some(f);
        }
        Ok(())
    }

    /// Registers the signature of each closure of this body by its type (before the
    /// instances of the body's calls are made: a closure passed on is called there).
    pub(super) fn register_closures(&mut self) -> CResult<()> {
        for k in 0..self.closures.len() {
            let c = &self.closures[k];
            let (adt, func, span, mutates) = (c.adt, c.func, c.span, c.mutates());
            let params: Vec<H> = c.params.clone();
            let ret = c.ret;
            let mut ps = Vec::with_capacity(params.len());
            for h in params {
                ps.push(self.u.settle(h).ok_or_else(|| {
                    Diagnostic::error(span, "type annotations needed").label("cannot infer the type of this closure's parameter")
                })?);
            }
            let ret = self
                .u
                .settle(ret)
                .ok_or_else(|| Diagnostic::error(span, "type annotations needed").label("cannot infer the closure's result"))?;
            let mut sig_params = vec![self.u.settle(self.closures[k].ty).unwrap_or(Ty::Unit)];
            sig_params.extend(ps.iter().copied());
            self.mcx.sigs[func] = Sig { params: sig_params, ret };
            self.mcx.closure_sigs.insert(adt, ClosureSig { func, params: ps, ret, mutates });
        }
        Ok(())
    }
}

impl<'c, 'm> FnCx<'c, 'm> {
    /// A closure that changes its state, passed to a function (which returns it changed): the
    /// place it is in (a local, or a new one for a closure written in the call), its value,
    /// and the statements that write the variables it changed back after the call.
    pub(super) fn closure_place(&mut self, a: Option<&ast::Expr>, x: CExpr, span: Span) -> CResult<(Place<H>, CExpr, Vec<Stmt<H>>)> {
        let h = x.ty;
        let l = match (a.map(|a| &a.kind), &x.kind) {
            (Some(ast::ExprKind::Path(_)), ExprKind::Local(l)) => *l,
            _ => {
                let t = self.declare(&ast::Ident { name: "_".into(), span }, h, true, false);
                // Its value is built before the call, as the argument.
                return self.closure_temp(t, x, span);
            }
        };
        let byref = self.byref_captures(h).unwrap_or_default();
        let back = self.write_captures_back(l, h, &byref, span);
        let v = Expr { kind: ExprKind::Local(l), ty: h, span };
        Ok((Place::Local(l), v, back))
    }

    fn closure_temp(&mut self, t: LocalId, x: CExpr, span: Span) -> CResult<(Place<H>, CExpr, Vec<Stmt<H>>)> {
        let h = x.ty;
        let byref = self.byref_captures(h).unwrap_or_default();
        let back = self.write_captures_back(t, h, &byref, span);
        // `{ let t = closure; t }`: the argument's value, the local holding it for the
        // write-back.
        let read = Expr { kind: ExprKind::Local(t), ty: h, span };
        let v = Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(t, Some(x))], tail: Some(Box::new(read)) }), ty: h, span };
        Ok((Place::Local(t), v, back))
    }
}

/// A closure's body with its parameters and locals (`first..end` of the body around it)
/// renumbered after its value (local 0), and its captured variables read from that value.
fn rewrite(e: Expr, first: LocalId, end: LocalId, caps: &HashMap<LocalId, (u32, Ty)>, ty: Ty, span: Span) -> CResult<Expr> {
    let map_local = |l: LocalId| -> Option<LocalId> { (first..end).contains(&l).then(|| l - first + 1) };
    let bad = |l: LocalId| -> Box<Diagnostic> {
        Diagnostic::error(span, format!("internal error: a closure reads local {l} of another body")).label("here").into()
    };
    fn rw(e: Expr, f: &dyn Fn(ExprKind, Ty, Span) -> CResult<Expr>) -> CResult<Expr> {
        f(e.kind, e.ty, e.span)
    }
    let _ = rw;
    fn walk(
        e: Expr,
        m: &dyn Fn(LocalId) -> Option<LocalId>,
        caps: &HashMap<LocalId, (u32, Ty)>,
        ty: Ty,
        bad: &dyn Fn(LocalId) -> Box<Diagnostic>,
    ) -> CResult<Expr> {
        let w = |x: Expr| walk(x, m, caps, ty, bad);
        let wb = |x: Box<Expr>| -> CResult<Box<Expr>> { Ok(Box::new(walk(*x, m, caps, ty, bad)?)) };
        let wv = |v: Vec<Expr>| -> CResult<Vec<Expr>> { v.into_iter().map(|x| walk(x, m, caps, ty, bad)).collect() };
        let state = |span: Span| Expr { kind: ExprKind::Local(0), ty, span };
        let span = e.span;
        use ExprKind as K;
        let kind = match e.kind {
            K::Local(l) => match (m(l), caps.get(&l)) {
                (Some(n), _) => K::Local(n),
                (None, Some((k, _))) => K::Field(Box::new(state(span)), *k),
                (None, None) => return Err(bad(l)),
            },
            K::Unary(op, x) => K::Unary(op, wb(x)?),
            K::Binary(op, a, b) => K::Binary(op, wb(a)?, wb(b)?),
            K::Logic(op, a, b) => K::Logic(op, wb(a)?, wb(b)?),
            K::Cast(x) => K::Cast(wb(x)?),
            K::Index(a, i) => K::Index(wb(a)?, wv(i)?),
            K::Aggregate { parts, base } => K::Aggregate {
                parts: parts.into_iter().map(|(k, x)| Ok((k, w(x)?))).collect::<CResult<Vec<_>>>()?,
                base: base.map(wb).transpose()?,
            },
            K::Repeat(x) => K::Repeat(wb(x)?),
            K::Field(x, k) => K::Field(wb(x)?, k),
            K::Elem(a, i) => K::Elem(wb(a)?, wb(i)?),
            K::CallRef(f, p, args) => K::CallRef(f, place(p, m, caps, ty, bad)?, wv(args)?),
            K::Assign(p, v) => K::Assign(place(p, m, caps, ty, bad)?, wb(v)?),
            K::CompoundAssign(op, p, v) => K::CompoundAssign(op, place(p, m, caps, ty, bad)?, wb(v)?),
            K::Call(f, args) => K::Call(f, wv(args)?),
            K::Builtin(b, args) => K::Builtin(b, wv(args)?),
            K::If(c, t, f) => K::If(wb(c)?, block(t, m, caps, ty, bad)?, f.map(|b| block(b, m, caps, ty, bad)).transpose()?),
            K::Block(b) => K::Block(block(b, m, caps, ty, bad)?),
            K::While(id, c, b) => K::While(id, wb(c)?, block(b, m, caps, ty, bad)?),
            K::Loop(id, b) => K::Loop(id, block(b, m, caps, ty, bad)?),
            K::For { id, var, start, end, inclusive, step, body } => K::For {
                id,
                var: m(var).ok_or_else(|| bad(var))?,
                start: wb(start)?,
                end: wb(end)?,
                inclusive,
                step: step.map(wb).transpose()?,
                body: block(body, m, caps, ty, bad)?,
            },
            K::Break(id, v) => K::Break(id, v.map(wb).transpose()?),
            K::Return(v) => K::Return(v.map(wb).transpose()?),
            K::Match(s, arms) => {
                let s = wb(s)?;
                let mut out = Vec::with_capacity(arms.len());
                for a in arms {
                    out.push(MatchArm {
                        ranges: a
                            .ranges
                            .map(|r| r.into_iter().map(|(lo, hi)| Ok((w(lo)?, w(hi)?))).collect::<CResult<Vec<_>>>())
                            .transpose()?,
                        binding: a.binding.map(|b| m(b).ok_or_else(|| bad(b))).transpose()?,
                        guard: a.guard.map(w).transpose()?,
                        body: w(a.body)?,
                        pat_span: a.pat_span,
                    });
                }
                K::Match(s, out)
            }
            k @ (K::Lit(_)
            | K::PendingLit(_)
            | K::Unit
            | K::Zeroed
            | K::Capture(_)
            | K::SharedArray { .. }
            | K::DynSharedArray(_)
            | K::Continue(_)) => k,
        };
        Ok(Expr { kind, ty: e.ty, span })
    }
    fn block(
        b: Block,
        m: &dyn Fn(LocalId) -> Option<LocalId>,
        caps: &HashMap<LocalId, (u32, Ty)>,
        ty: Ty,
        bad: &dyn Fn(LocalId) -> Box<Diagnostic>,
    ) -> CResult<Block> {
        let mut stmts = Vec::with_capacity(b.stmts.len());
        for s in b.stmts {
            stmts.push(match s {
                Stmt::Let(l, init) => Stmt::Let(m(l).ok_or_else(|| bad(l))?, init.map(|x| walk(x, m, caps, ty, bad)).transpose()?),
                Stmt::Expr(x) => Stmt::Expr(walk(x, m, caps, ty, bad)?),
            });
        }
        Ok(Block { stmts, tail: b.tail.map(|t| walk(*t, m, caps, ty, bad).map(Box::new)).transpose()? })
    }
    fn place(
        p: Place,
        m: &dyn Fn(LocalId) -> Option<LocalId>,
        caps: &HashMap<LocalId, (u32, Ty)>,
        ty: Ty,
        bad: &dyn Fn(LocalId) -> Box<Diagnostic>,
    ) -> CResult<Place> {
        Ok(match p {
            Place::Local(l) => match (m(l), caps.get(&l)) {
                (Some(n), _) => Place::Local(n),
                (None, Some((k, _))) => Place::Field(Box::new(Place::Local(0)), *k),
                (None, None) => return Err(bad(l)),
            },
            Place::Index(a, i) => Place::Index(
                Box::new(walk(*a, m, caps, ty, bad)?),
                i.into_iter().map(|x| walk(x, m, caps, ty, bad)).collect::<CResult<Vec<_>>>()?,
            ),
            Place::Field(inner, k) => Place::Field(Box::new(place(*inner, m, caps, ty, bad)?), k),
            Place::Elem(inner, i) => Place::Elem(Box::new(place(*inner, m, caps, ty, bad)?), Box::new(walk(*i, m, caps, ty, bad)?)),
        })
    }
    walk(e, &map_local, caps, ty, &bad)
}
