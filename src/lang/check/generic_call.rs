//! Generic parameters inside a body: calls of generic device functions (their generic
//! arguments inferred from the arguments and the expected result, or written with a turbofish),
//! the associated constants of type parameters (`T::ZERO`, `T::MAX`), const parameters in
//! constant expressions, and the instances a body's calls need, made once its types are settled.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg, GenericParamKind, Lit, RetTy, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::body::{CExpr, FnCx};
use super::bounds::HScope;
use super::consts::mentions;
use super::generics::{GenericEnv, GenericValue, array_view, bound_admits, describe_param, satisfies};
use super::unify::{H, Kind, Oblig};
use super::{CResult, plural};

/// What a call supplies for one generic parameter of its callee.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Slot {
    /// A type: a type variable settled by inference, or known from the turbofish.
    Type(H),
    /// A constant from the turbofish (`None`: it depends on a const parameter of a definition).
    Const(Option<ScalarValue>),
}

/// What a call of an item knows before its arguments: the generic arguments of the `impl`
/// block or trait the item belongs to (its first generic parameters), `Self` (for a trait's
/// method), and a method's receiver.
#[derive(Default)]
pub(super) struct CallPre {
    pub(super) prefix: Vec<Slot>,
    pub(super) self_h: Option<H>,
    pub(super) receiver: Option<super::aggregates::Operand>,
    /// Arguments already checked (an operator's right-hand side), before the written ones.
    pub(super) args: Vec<CExpr>,
}

/// The callee of a call in a definition that has no body to check (a trait's required method
/// called on a type parameter): never compiled, never looked up.
pub(super) const DEFINITION_CALL: FuncId = FuncId::MAX / 2;

/// A call of a generic function in a concrete body or an instance, whose callee instance is
/// made once the body's types are settled.
pub(super) struct PendingCall<'m> {
    pub(super) placeholder: FuncId,
    pub(super) func: &'m ast::FnItem,
    pub(super) slots: Vec<Slot>,
    /// `Self` of a trait's provided method (the type it is called on).
    pub(super) self_h: Option<H>,
    pub(super) span: Span,
    /// Arguments whose parameter type is built from the callee's generic parameters
    /// (`w: [T; W]`): the argument's type and where, and the parameter's type, checked once the
    /// instance is known.
    pub(super) deferred: Vec<(H, Span, &'m TypeExpr)>,
    /// The `impl` block of a method and the type it is called on: const parameters of the
    /// block not known at the call (`Stack::new()`) are read from that type once settled.
    pub(super) impl_self: Option<(usize, H)>,
}

/// Placeholder ids of pending calls count down from here; real ids are indices.
const PENDING_BASE: FuncId = FuncId::MAX;

impl<'c, 'm> FnCx<'c, 'm> {
    /// Sets what the generic parameters of the function being checked stand for.
    pub(super) fn set_generics(&mut self, g: GenericEnv) {
        self.u.param_names = g.names();
        self.generics = g;
    }

    /// A call of `f` (generic or not, an associated function or method of an `impl` block or a
    /// trait): `pre` says what the call knows already (the block's or trait's generic
    /// arguments, `Self`, the receiver of a method), `generics` are the turbofish of `f`'s own.
    pub(super) fn call_item(
        &mut self,
        f: &'m ast::FnItem,
        func: &ast::Ident,
        generics: &[GenericArg],
        pre: CallPre,
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let name = &f.name.name;
        let own = &f.generics[pre.prefix.len().min(f.generics.len())..];
        if !generics.is_empty() && generics.len() != own.len() {
            let at = generics[0].span().to(generics[generics.len() - 1].span());
            let want = own.len();
            let decl: Vec<String> = super::generics::params_of(f).iter().map(|p| p.to_string()).collect();
            return Err(Diagnostic::error(
                at,
                format!(
                    "`{name}` takes {want} generic argument{} but {} {} supplied",
                    plural(want),
                    generics.len(),
                    if generics.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {want} generic argument{}", plural(want)))
            .secondary(f.name.span, format!("`{name}<{}>` declared here", decl.join(", ")))
            .into());
        }
        let CallPre { prefix, self_h, receiver, args: given } = pre;
        let with_receiver = receiver.is_some();
        // The parameters the call's arguments are for (a method's receiver is given).
        let params: &[ast::Param] = if with_receiver { f.params.get(1..).unwrap_or(&[]) } else { &f.params };
        let n_given = given.len();
        // Arguments checked early to infer a const parameter from an array's length, by index
        // among all the arguments (the given ones first).
        let mut early: Vec<Option<CExpr>> = given.into_iter().map(Some).collect();
        early.extend((0..args.len()).map(|_| None));
        let total = early.len();
        let mut slots = prefix;
        for (i, g) in f.generics.iter().enumerate().skip(slots.len()) {
            let written = generics.get(i - (f.generics.len() - own.len()));
            let slot = match (g.kind, written) {
                (GenericParamKind::Type(bound), None | Some(GenericArg::Infer(_))) => {
                    let h = self.u.var(Kind::Any);
                    self.obligations.push(Oblig::Bound { h, bound, param: g.name.name.clone(), func: name.clone(), span });
                    Slot::Type(h)
                }
                (GenericParamKind::Type(bound), Some(GenericArg::Type(t))) => {
                    let ty = self.ty_of(t)?;
                    if matches!(ty, Ty::Array(_) | Ty::ParamArray(_) | Ty::Unit) || !satisfies(ty, bound) {
                        let shown = self.u.ty_name(ty);
                        return Err(Diagnostic::error(
                            t.span(),
                            format!("the type `{shown}` does not satisfy the bound `{}`", describe_param(&g.name.name, bound)),
                        )
                        .label(format!("`{shown}` is not {}", bound_admits(bound)))
                        .secondary(g.span, format!("`{}` of `{name}` is bounded here", g.name.name))
                        .into());
                    }
                    Slot::Type(self.u.known(ty))
                }
                (GenericParamKind::Type(bound), Some(GenericArg::Const(e))) => match &e.kind {
                    // A struct's name parses as a constant: it is a type here.
                    A::Path(n) if self.mcx.m.scopes.type_name(self.module, &n.name).is_some() => {
                        let ty = self.ty_of(&TypeExpr::Named(vec![n.clone()], n.span))?;
                        if !satisfies(ty, bound) {
                            let shown = self.u.ty_name(ty);
                            return Err(Diagnostic::error(
                                e.span,
                                format!("the type `{shown}` does not satisfy the bound `{}`", describe_param(&g.name.name, bound)),
                            )
                            .label(format!("`{shown}` is not {}", bound_admits(bound)))
                            .into());
                        }
                        Slot::Type(self.u.known(ty))
                    }
                    _ => {
                        let msg = match &e.kind {
                            A::Path(n) => format!("cannot find type `{}` in this scope", n.name),
                            _ => format!("expected a type for `{}`, found a constant", g.name.name),
                        };
                        return Err(Diagnostic::error(e.span, msg)
                            .label("not a type")
                            .secondary(g.span, format!("`{}` of `{name}` is a type parameter", g.name.name))
                            .into());
                    }
                },
                (GenericParamKind::Const(s), Some(GenericArg::Const(e))) => Slot::Const(self.eval_const_here(e, Some(s))?),
                (GenericParamKind::Const(s), Some(GenericArg::Type(t))) => {
                    return Err(Diagnostic::error(t.span(), format!("expected a `{s}` constant for `{}`, found a type", g.name.name))
                        .label("not a constant")
                        .secondary(g.span, format!("`{}` of `{name}` is a const parameter", g.name.name))
                        .into());
                }
                (GenericParamKind::Const(s), None | Some(GenericArg::Infer(_)))
                    if let Some(j) = length_param(params, &g.name.name).filter(|j| *j < total) =>
                {
                    // `fn f<const N: usize>(a: [T; N])`: `N` is the argument's length, as in Rust.
                    if early[j].is_none() {
                        early[j] = Some(self.expr(&args[j - n_given])?);
                    }
                    let x = early[j].as_ref().map(|x| (x.ty, x.span));
                    let len = x.and_then(|(h, _)| match self.u.compound(h) {
                        Some(super::unify::Compound::Array(_, len)) => Some(len),
                        _ => None,
                    });
                    match len {
                        Some(UNKNOWN_LEN) => Slot::Const(None),
                        Some(n) if s.is_int() => Slot::Const(Some(ScalarValue::Int(s, n))),
                        _ => {
                            let (h, at) = x.unwrap_or((self.u.known(Ty::Unit), span));
                            let d = self.u.describe(h);
                            return Err(Diagnostic::error(at, format!("mismatched types: expected a fixed-size array, found `{d}`"))
                                .label(format!("its length is `{}` of `{name}`", g.name.name))
                                .secondary(g.span, "declared here")
                                .into());
                        }
                    }
                }
                (GenericParamKind::Const(_), None | Some(GenericArg::Infer(_))) => {
                    return Err(Diagnostic::error(
                        func.span,
                        format!("cannot infer the value of const parameter `{}` of `{name}`", g.name.name),
                    )
                    .label("needs its generic arguments")
                    .secondary(g.span, "declared here")
                    .help(format!("name them: `{name}::<{}>(..)`", turbofish_example(f)))
                    .into());
                }
            };
            slots.push(slot);
        }
        if params.len() != total {
            let want = params.len();
            let d = if with_receiver {
                Diagnostic::error(
                    span,
                    format!(
                        "this method takes {want} argument{} but {} argument{} {} supplied",
                        plural(want),
                        total,
                        plural(total),
                        if total == 1 { "was" } else { "were" }
                    ),
                )
            } else {
                Diagnostic::error(
                    span,
                    format!(
                        "`{name}` takes {want} argument{} but {} {} supplied",
                        plural(want),
                        total,
                        if total == 1 { "was" } else { "were" }
                    ),
                )
            };
            return Err(d.label(format!("expected {want} argument{}", plural(want))).secondary(f.sig_span, "declared here").into());
        }
        let self_h = match (self_h, &f.owner) {
            (Some(h), _) => Some(h),
            (None, Some(ast::ImplOwner { kind: ast::OwnerKind::Impl(i), .. })) => {
                let d = &self.mcx.m.impls[*i];
                let scope = HScope { generics: &f.generics, slots: &slots, self_h: None, impl_of: Some(*i), pattern: false };
                Some(self.mcx.texpr_h(&mut self.u, &d.self_ty, d.module, &scope)?)
            }
            _ => None,
        };
        let impl_of = match &f.owner {
            Some(ast::ImplOwner { kind: ast::OwnerKind::Impl(i), .. }) => Some(*i),
            _ => None,
        };
        // The receiver: `self`'s type is `Self`.
        let mut receiver_out = None;
        if let Some(r) = receiver {
            let rh = match &r {
                super::aggregates::Operand::Place(_, h) => *h,
                super::aggregates::Operand::Value(v) => v.ty,
            };
            if let Some(sh) = self_h
                && !self.u.unify(sh, rh)
            {
                let (w, g) = (self.u.describe(sh), self.u.describe(rh));
                return Err(Diagnostic::error(span, format!("mismatched types: the method `{name}` is for `{w}`, the value is `{g}`"))
                    .label("this call")
                    .into());
            }
            receiver_out = Some(r);
        }
        let mut out = Vec::with_capacity(args.len());
        let mut deferred = Vec::new();
        let mut inout = Vec::new();
        let mut closure_back = Vec::new();
        for (k, (p, pre)) in params.iter().zip(early).enumerate() {
            let a = args.get(k.wrapping_sub(n_given));
            let Some(t) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
            };
            if let (TypeExpr::Ref { mutable: true, inner, .. }, Some(a)) = (t, a)
                && !matches!(**inner, TypeExpr::ArrayRef { .. })
            {
                // `&mut T`: the argument is a place, written back after the call.
                let scope = HScope { generics: &f.generics, slots: &slots, self_h, impl_of, pattern: false };
                let want = self.mcx.texpr_h(&mut self.u, inner, f.module, &scope)?;
                let (place, x) = self.inout_arg(a, want, span)?;
                inout.push((k, place));
                out.push(x);
                continue;
            }
            let x = match (pre, a) {
                (Some(x), _) => x,
                (None, Some(a)) => self.expr(a)?,
                (None, None) => return Err(Diagnostic::error(span, "internal error: an argument is missing").label("here").into()),
            };
            match t {
                TypeExpr::ArrayRef { elem, ndim, mutable, .. } if matches!(**elem, TypeExpr::Param(_)) => {
                    let TypeExpr::Param(id) = &**elem else { continue };
                    let h = self.slot_type(f, &slots, id)?;
                    self.param_array_arg(h, *ndim, *mutable, &x, &p.name.name, span)?;
                }
                TypeExpr::Param(id) => {
                    let h = self.slot_type(f, &slots, id)?;
                    self.assign_compatible(h, &x, span)?;
                    self.apply_fn_bound(f, &slots, &id.name, x.ty, x.span)?;
                    if self.is_mutating_closure(x.ty) && !self.generics.is_definition() {
                        // A closure that changes its state: passed as a `&mut` parameter is.
                        let (place, v, back) = self.closure_place(a, x, span)?;
                        inout.push((k, place));
                        closure_back.extend(back);
                        out.push(v);
                        continue;
                    }
                }
                TypeExpr::ArrayRef { .. } => {
                    let want = self.mcx.ty_in(t, f.module, &GenericEnv::none())?;
                    let want = self.u.known(want);
                    self.assign_compatible(want, &x, span)?;
                }
                other => {
                    self.builtin_elem_arg(f, &slots, other, &x)?;
                    let scope = HScope { generics: &f.generics, slots: &slots, self_h, impl_of, pattern: false };
                    match self.mcx.texpr_h(&mut self.u, other, f.module, &scope) {
                        Ok(want) => self.assign_compatible(want, &x, span)?,
                        // Known once the instance is (in a definition, a fragment of a type
                        // parameter is checked by each instance).
                        Err(_) if mentions_generics(other, f) => {
                            if !self.generics.is_definition() {
                                deferred.push((x.ty, x.span, other));
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
            }
            out.push(x);
        }
        let ret = match &f.ret {
            RetTy::Ty(TypeExpr::Param(id)) => self.slot_type(f, &slots, id)?,
            RetTy::Ty(t) => {
                let scope = HScope { generics: &f.generics, slots: &slots, self_h, impl_of, pattern: false };
                self.mcx.texpr_h(&mut self.u, t, f.module, &scope)?
            }
            _ => self.u.known(Ty::Unit),
        };
        if f.generics.iter().any(|g| !g.bounds.is_empty()) {
            self.trait_checks.push((f, slots.clone(), self_h, span));
        }
        let plain = f.generics.is_empty() && !matches!(f.owner, Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(_), .. }));
        let id = if plain {
            let id = self.mcx.ensure_fn(f, Some(func.span))?;
            if !self.callees.contains(&id) {
                self.callees.push(id);
            }
            id
        } else if self.generics.is_definition() {
            // A definition calls the callee's definition: its arguments may be type parameters,
            // and its body is checked against its bounds once (a trait's required method has no
            // body: the instance calls an `impl`'s).
            if f.required {
                DEFINITION_CALL
            } else {
                let env = self.mcx.definition_env(f)?;
                let id = self.mcx.ensure_checked(f, env, name.clone(), Some(func.span))?;
                if !self.callees.contains(&id) {
                    self.callees.push(id);
                }
                id
            }
        } else {
            let placeholder = PENDING_BASE - self.pending.len();
            let impl_self = impl_of.zip(self_h);
            self.pending.push(PendingCall {
                placeholder,
                func: f,
                slots,
                span,
                deferred,
                self_h: if impl_of.is_some() { None } else { self_h },
                impl_self,
            });
            placeholder
        };
        let call = match receiver_out {
            Some(super::aggregates::Operand::Place(p, _)) if f.receiver == Some(ast::SelfKind::RefMut) => {
                self.check_borrow_mut_place(&p, span)?;
                Expr { kind: ExprKind::CallRef(id, p, out), ty: ret, span }
            }
            Some(super::aggregates::Operand::Value(v)) if f.receiver == Some(ast::SelfKind::RefMut) => {
                // A temporary is a place of its own, as in Rust.
                let h = v.ty;
                let tmp = self.declare(&ast::Ident { name: "_".into(), span: v.span }, h, true, false);
                let call = Expr { kind: ExprKind::CallRef(id, Place::Local(tmp), out), ty: ret, span };
                Expr { kind: ExprKind::Block(Block { stmts: vec![Stmt::Let(tmp, Some(v))], tail: Some(Box::new(call)) }), ty: ret, span }
            }
            Some(r) => {
                let v = self.operand_value(r, span);
                let mut all = vec![v];
                all.extend(out);
                Expr { kind: ExprKind::Call(id, all), ty: ret, span }
            }
            None => Expr { kind: ExprKind::Call(id, out), ty: ret, span },
        };
        if inout.is_empty() {
            return Ok(call);
        }
        let x = self.write_back(call, inout, with_receiver, span)?;
        if closure_back.is_empty() {
            return Ok(x);
        }
        // The variables the closures passed in changed, written back from them.
        Ok(self.then_stmts(x, closure_back, span))
    }

    /// `{ let t = x; stmts; t }` (`{ x; stmts }` for `()`): a value, then statements.
    pub(super) fn then_stmts(&mut self, x: CExpr, more: Vec<Stmt<H>>, span: Span) -> CExpr {
        let ty = x.ty;
        if self.u.ty(ty) == Some(Ty::Unit) {
            let mut stmts = vec![Stmt::Expr(x)];
            stmts.extend(more);
            let unit = self.mk(ExprKind::Unit, Ty::Unit, span);
            return Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(unit)) }), ty, span };
        }
        let t = self.declare(&ast::Ident { name: "_".into(), span }, ty, false, false);
        let mut stmts = vec![Stmt::Let(t, Some(x))];
        stmts.extend(more);
        let tail = Expr { kind: ExprKind::Local(t), ty, span };
        Expr { kind: ExprKind::Block(Block { stmts, tail: Some(Box::new(tail)) }), ty, span }
    }

    fn slot_type(&mut self, f: &ast::FnItem, slots: &[Slot], id: &ast::Ident) -> CResult<H> {
        match f.generics.iter().position(|g| g.name.name == id.name).and_then(|i| slots.get(i)) {
            Some(Slot::Type(h)) => Ok(*h),
            _ => Err(Diagnostic::error(id.span, format!("cannot find type `{}` in this scope", id.name))
                .label("not a type parameter")
                .into()),
        }
    }

    /// An argument for a parameter of a builtin type whose element type is a type parameter
    /// (`map: &TensorMap<T, 64, 128, 128>`, `acc: WgAcc<T, 256>`): a value of that builtin type
    /// settles `T` with its element type, as an array's settles `&[T]`'s.
    fn builtin_elem_arg(&mut self, f: &ast::FnItem, slots: &[Slot], t: &TypeExpr, x: &CExpr) -> CResult<()> {
        let inner = match t {
            TypeExpr::Ref { inner, .. } => &**inner,
            t => t,
        };
        let TypeExpr::Builtin { name, args, .. } = inner else { return Ok(()) };
        let Some(GenericArg::Type(TypeExpr::Param(id))) = args.first() else { return Ok(()) };
        let Some(frag) = self.u.ty(x.ty).and_then(|t| self.mcx.frag_of(t)) else { return Ok(()) };
        if frag.kind.name() != name.name {
            return Ok(());
        }
        let h = self.slot_type(f, slots, id)?;
        if self.u.ty(h).is_none() {
            let elem = self.u.known(frag.elem);
            self.u.unify(h, elem);
        }
        Ok(())
    }

    /// An argument for a parameter `&[T]` (or `&mut Array<T, N>`) of a generic callee: an array
    /// of that shape, whose element type settles `T`.
    fn param_array_arg(&mut self, t: H, ndim: u8, mutable: bool, x: &CExpr, param: &str, call: Span) -> CResult<()> {
        let got = self.u.ty(x.ty).and_then(array_view);
        let Some(v) = got.filter(|v| v.ndim == ndim) else {
            let shape = if ndim == 1 { "a 1-d array (`&[T]`)".to_string() } else { format!("a {ndim}-d array (`&Array<T, {ndim}>`)") };
            let d = self.u.describe(x.ty);
            return Err(Diagnostic::error(x.span, format!("mismatched types: expected {shape}, found `{d}`"))
                .label(format!("argument `{param}`"))
                .secondary(call, "in this call")
                .into());
        };
        if mutable && !v.writable {
            let d = self.u.describe(x.ty);
            return Err(Diagnostic::error(x.span, "this array is read-only")
                .label(format!("found `{d}`"))
                .secondary(call, format!("`{param}` requires a writable array"))
                .into());
        }
        let e = self.u.known(v.elem);
        if !self.u.unify(t, e) {
            let (want, got) = (self.u.describe(t), self.u.describe(e));
            return Err(Diagnostic::error(x.span, format!("mismatched types: expected elements of type `{want}`, found `{got}`"))
                .label(format!("argument `{param}` has `{got}` elements"))
                .secondary(call, "one type parameter stands for one type in a call")
                .note("kache follows Rust: numbers are never converted implicitly")
                .into());
        }
        Ok(())
    }

    /// Makes the instance each pending call needs, now that the body's types are settled.
    pub(super) fn instantiate_pending(&mut self) -> CResult<()> {
        let pending = std::mem::take(&mut self.pending);
        for mut p in pending {
            if let Some((imp, h)) = p.impl_self
                && p.slots.iter().any(|s| matches!(s, Slot::Const(None)))
            {
                // `impl<T, const N: usize> Stack<T, N>`: `N` of the type the call settled on.
                let d = &self.mcx.m.impls[imp];
                let n = d.generics.len().min(p.slots.len());
                let head: Vec<Slot> = p.slots[..n].to_vec();
                let head = self.mcx.const_slots(&mut self.u, &d.self_ty, &d.generics, head, h);
                p.slots[..n].copy_from_slice(&head);
            }
            let mut values = Vec::with_capacity(p.slots.len());
            for (g, s) in p.func.generics.iter().zip(&p.slots) {
                values.push(match s {
                    Slot::Type(h) => match self.u.settle(*h) {
                        Some(t) => GenericValue::Type(t),
                        None => return Err(cannot_infer(p.func, &g.name.name, p.span).into()),
                    },
                    Slot::Const(Some(v)) => GenericValue::Const(*v),
                    Slot::Const(None) => {
                        return Err(Diagnostic::error(p.span, "internal error: a constant of an instance was not evaluated")
                            .label("here")
                            .into());
                    }
                });
            }
            let self_ty = match p.self_h {
                Some(h) => match self.u.settle(h) {
                    Some(t) => Some(t),
                    None => {
                        return Err(Diagnostic::error(p.span, "type annotations needed")
                            .label("cannot infer the type this is called on")
                            .help("annotate the value's type, or name it: `Type::f(..)`")
                            .into());
                    }
                },
                None => None,
            };
            // A trait's function called on a type: the `impl` block's, else the trait's own.
            let (func, values, self_ty) = match (&p.func.owner, self_ty) {
                (Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(t), .. }), Some(st)) => {
                    self.mcx.resolve_trait_member(*t, p.func, values, st, p.span)?
                }
                _ => (p.func, values, self_ty),
            };
            self.mcx.check_generic_args(func, &values, p.span, &super::generics::instance_name(&func.name.name, &values))?;
            if !p.deferred.is_empty() {
                let env = GenericEnv::instance(p.func, &values);
                for (h, at, t) in &p.deferred {
                    let want = self.mcx.ty_in(t, p.func.module, &env)?;
                    if self.u.settle(*h) != Some(want) {
                        let wh = self.u.known(want);
                        return Err(self.mismatch(*at, wh, *h, "").into());
                    }
                }
            }
            let id = if func.generics.is_empty() && self_ty.is_none() {
                self.mcx.ensure_fn(func, Some(p.span))?
            } else {
                self.mcx.ensure_instance(func, &values, self_ty, Some(p.span))?
            };
            self.instantiated.push((p.placeholder, id));
            if !self.callees.contains(&id) {
                self.callees.push(id);
            }
        }
        Ok(())
    }

    /// Checks the trait bounds of every call's callee, now that the body's types are settled:
    /// rustc's E0277 where a type does not implement a bound's trait.
    pub(super) fn check_call_bounds(&mut self) -> CResult<()> {
        let checks = std::mem::take(&mut self.trait_checks);
        for (f, slots, self_h, span) in checks {
            let mut values = Vec::with_capacity(slots.len());
            for s in &slots {
                values.push(match s {
                    Slot::Type(h) => match self.u.settle(*h) {
                        Some(t) => GenericValue::Type(t),
                        // Unsettled: reported as such elsewhere.
                        None => return Ok(()),
                    },
                    Slot::Const(Some(v)) => GenericValue::Const(*v),
                    Slot::Const(None) => GenericValue::Const(ScalarValue::Int(Scalar::Usize, 0)),
                });
            }
            let mut env = GenericEnv::instance(f, &values);
            env.self_ty = self_h.and_then(|h| self.u.settle(h));
            for (g, v) in f.generics.iter().zip(&values) {
                let GenericValue::Type(t) = v else { continue };
                for b in &g.bounds {
                    let Some(r) = self.mcx.trait_ref(b, f.module, &env, *t)? else { continue };
                    if self.mcx.implements(*t, &r, &self.generics)? {
                        continue;
                    }
                    let shown = self.mcx.ty_name_in(*t, &self.generics);
                    let tr = self.mcx.trait_text(&r, &|x| self.mcx.ty_name_in(x, &self.generics));
                    let mut d = Diagnostic::error(span, format!("the trait bound `{shown}: {tr}` is not satisfied"))
                        .label(format!("the trait `{tr}` is not implemented for `{shown}`"))
                        .secondary(b.span, format!("required by this bound in `{}`", f.name.name));
                    d = if matches!(t, Ty::Param(_)) {
                        d.help(format!("consider restricting type parameter `{shown}` with trait `{tr}`: `{shown}: {tr}`"))
                    } else {
                        d.help(format!("implement the trait: `impl {tr} for {shown} {{ .. }}`"))
                    };
                    return Err(d.into());
                }
            }
        }
        Ok(())
    }

    /// The real id of a call's callee (pending calls have placeholders until their instance is
    /// made).
    pub(super) fn callee_id(&self, id: FuncId) -> FuncId {
        self.instantiated.iter().find(|(p, _)| *p == id).map(|(_, r)| *r).unwrap_or(id)
    }

    /// `T::ZERO`, `T::MAX`, ...: a constant of a type parameter's type.
    pub(super) fn param_const(&mut self, param: &ast::Ident, name: &ast::Ident, span: Span) -> CResult<CExpr> {
        let Some(ty) = self.generics.type_param(&param.name) else {
            return Err(Diagnostic::error(param.span, format!("cannot find type `{}` in this scope", param.name))
                .label("not a type parameter")
                .into());
        };
        // A constant of a trait (`T::N` with `T: Dim`, or any trait `T`'s value implements).
        if let Some(x) = self.trait_const(ty, name, span)? {
            return Ok(x);
        }
        // A function of a trait called without its parentheses is not a value.
        let assoc_fn = match ty {
            Ty::Param(_) => self
                .generics
                .bounds_of(ty)
                .any(|b| matches!(b.id, super::traits::TraitId::User(t) if self.mcx.trait_member(t, &name.name).is_some())),
            _ => false,
        };
        if assoc_fn {
            return Err(Diagnostic::error(span, format!("`{}::{}` is a function", param.name, name.name))
                .label("call it")
                .help(format!("write `{}::{}(..)`", param.name, name.name))
                .into());
        }
        let (needs, result) = match name.name.as_str() {
            "ZERO" | "ONE" | "MIN" | "MAX" => (Bound::Num, None),
            "EPSILON" | "MIN_POSITIVE" | "INFINITY" | "NEG_INFINITY" | "NAN" => (Bound::Float, None),
            "BITS" => (Bound::Int, Some(Scalar::U32)),
            other => {
                return Err(Diagnostic::error(name.span, format!("no associated constant `{other}` on type parameter `{}`", param.name))
                    .label("unknown constant")
                    .note("type parameters have `ZERO`, `ONE`, `MIN` and `MAX` (`Num`), `EPSILON`, `MIN_POSITIVE`, `INFINITY`, `NEG_INFINITY` and `NAN` (`Float`), and `BITS` (`Int`)")
                    .into());
            }
        };
        match ty {
            Ty::Param(p) => {
                if !p.bound.implies(needs) {
                    let has = match p.bound.name() {
                        Some(b) => format!("`{}` is only bounded by `{b}`", param.name),
                        None => format!("`{}` has no bound", param.name),
                    };
                    return Err(Diagnostic::error(
                        span,
                        format!("`{}::{}` needs the bound `{}`", param.name, name.name, describe_param(&param.name, needs)),
                    )
                    .label(has)
                    .help(format!("restrict the type parameter: `{}`", describe_param(&param.name, needs)))
                    .into());
                }
                // The value depends on the instance; the definition only needs its type.
                let t = result.map(Ty::Scalar).unwrap_or(ty);
                Ok(self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::U32, 0)), t, span))
            }
            Ty::Scalar(s) => {
                let e = match (name.name.as_str(), s.is_numeric()) {
                    ("ZERO", true) => Some(ast::Expr { kind: A::Lit(Lit::Int(0, Some(s))), span }),
                    ("ONE", true) => Some(ast::Expr { kind: A::Lit(Lit::Int(1, Some(s))), span }),
                    (n, _) => crate::lang::syntax::assoc_const(&[s.name(), n], span),
                };
                match e {
                    Some(e) => self.expr(&e),
                    None => Err(Diagnostic::error(span, format!("`{s}` has no associated constant `{}`", name.name)).label("here").into()),
                }
            }
            _ => Err(Diagnostic::error(span, format!("`{}` has no associated constants", param.name)).label("here").into()),
        }
    }

    /// A constant expression in this body (a length, a turbofish constant): evaluated where the
    /// const parameters have values; only type-checked in a definition, where they have none.
    pub(super) fn eval_const_here(&mut self, e: &ast::Expr, expected: Option<Scalar>) -> CResult<Option<ScalarValue>> {
        let scope = self.generics.const_scope();
        if scope.iter().any(|(_, _, v)| v.is_none()) && mentions(e, &scope) {
            self.mcx.const_type(e, expected, &scope, self.module)?;
            return Ok(None);
        }
        let types: Vec<(String, Ty)> = self.generics.type_params().map(|(n, t)| (n.to_string(), t)).collect();
        if types.iter().any(|(_, t)| matches!(t, Ty::Param(_))) && mentions_type_param_const(e) {
            return Ok(None);
        }
        let saved = std::mem::replace(&mut self.mcx.const_scope, scope);
        let saved_types = std::mem::replace(&mut self.mcx.type_scope, types);
        let r = self.mcx.eval_const(e, expected, self.module);
        self.mcx.const_scope = saved;
        self.mcx.type_scope = saved_types;
        r.map(Some)
    }
}

/// `f32, 16`: placeholder generic arguments of `f`, for messages.
fn turbofish_example(f: &ast::FnItem) -> String {
    f.generics
        .iter()
        .map(|g| match g.kind {
            GenericParamKind::Type(Bound::Int) => "i32".to_string(),
            GenericParamKind::Type(_) => "f32".to_string(),
            GenericParamKind::Const(Scalar::Bool) => "true".to_string(),
            GenericParamKind::Const(_) => "16".to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error for a type parameter of a call that nothing settles.
pub(super) fn cannot_infer(f: &ast::FnItem, param: &str, span: Span) -> Diagnostic {
    Diagnostic::error(span, format!("type annotations needed: cannot infer the type parameter `{param}` of `{}`", f.name.name))
        .label(format!("cannot infer `{param}`"))
        .help(format!("name the generic arguments: `{}::<{}>(..)`, or annotate the value it returns", f.name.name, turbofish_example(f)))
}

/// Whether `e` names one of the const parameters in `scope` (its value is needed).
/// The parameter of `f` whose type is an array of length `name` (`a: [T; N]`), which
/// gives the const parameter `name` its value at a call.
fn length_param(params: &[ast::Param], name: &str) -> Option<usize> {
    params.iter().position(|p| matches!(&p.ty, Some(TypeExpr::Fixed { len, .. }) if matches!(&len.kind, A::Path(n) if n.name == name)))
}

/// Whether a declared type is built from `f`'s generic parameters (a type parameter, or a
/// length naming a const parameter).
fn mentions_generics(t: &TypeExpr, f: &ast::FnItem) -> bool {
    match t {
        TypeExpr::Param(_) => true,
        TypeExpr::ArrayRef { elem, .. } => mentions_generics(elem, f),
        TypeExpr::Tuple(ts, _) => ts.iter().any(|t| mentions_generics(t, f)),
        TypeExpr::Fixed { elem, len, .. } => {
            let scope: Vec<(String, Scalar, Option<ScalarValue>)> = f
                .generics
                .iter()
                .filter_map(|g| match g.kind {
                    GenericParamKind::Const(s) => Some((g.name.name.clone(), s, None)),
                    GenericParamKind::Type(_) => None,
                })
                .collect();
            mentions_generics(elem, f) || mentions(len, &scope)
        }
        TypeExpr::Builtin { args, .. } => args.iter().any(|a| match a {
            ast::GenericArg::Type(t) => mentions_generics(t, f),
            ast::GenericArg::Const(e) => {
                let scope: Vec<(String, Scalar, Option<ScalarValue>)> = f
                    .generics
                    .iter()
                    .filter_map(|g| match g.kind {
                        GenericParamKind::Const(s) => Some((g.name.name.clone(), s, None)),
                        GenericParamKind::Type(_) => None,
                    })
                    .collect();
                mentions(e, &scope)
            }
            ast::GenericArg::Infer(_) => false,
        }),
        TypeExpr::Named(p, _) => p.len() == 1 && p[0].name == "Self" && f.owner.is_some(),
        TypeExpr::Generic { args, .. } => args.iter().any(|a| match a {
            GenericArg::Type(t) => mentions_generics(t, f),
            GenericArg::Const(e) => matches!(&e.kind, A::Path(n) if f.generics.iter().any(|g| g.name.name == n.name)),
            GenericArg::Infer(_) => false,
        }),
        TypeExpr::Ref { inner, .. } => mentions_generics(inner, f),
        TypeExpr::Assoc { .. } => true,
        TypeExpr::Unit(_) | TypeExpr::Scalar(..) | TypeExpr::Infer(_) => false,
    }
}

/// Whether a constant expression names a constant of a type parameter (`D::DIM`).
fn mentions_type_param_const(e: &ast::Expr) -> bool {
    match &e.kind {
        A::ParamConst { .. } => true,
        A::Unary(_, x) | A::Cast(x, _) => mentions_type_param_const(x),
        A::Binary(_, a, b) | A::Logic(_, a, b) => mentions_type_param_const(a) || mentions_type_param_const(b),
        A::Block(b) => b.tail.as_ref().is_some_and(|t| mentions_type_param_const(t)),
        _ => false,
    }
}
