//! Generic parameters inside a body: calls of generic device functions (their generic
//! arguments inferred from the arguments and the expected result, or written with a turbofish),
//! the associated constants of type parameters (`T::ZERO`, `T::MAX`), const parameters in
//! constant expressions, and the instances a body's calls need, made once its types are settled.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg, GenericParamKind, Lit, RetTy, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::body::{CExpr, FnCx};
use super::generics::{GenericEnv, GenericValue, array_view, bound_admits, describe_param, satisfies};
use super::items::ModuleCx;
use super::unify::{H, Kind, Oblig};
use super::{CResult, plural};

/// What a call supplies for one generic parameter of its callee.
#[derive(Clone, Copy, Debug)]
pub(super) enum Slot {
    /// A type: a type variable settled by inference, or known from the turbofish.
    Type(H),
    /// A constant from the turbofish (`None`: it depends on a const parameter of a definition).
    Const(Option<ScalarValue>),
}

/// A call of a generic function in a concrete body or an instance, whose callee instance is
/// made once the body's types are settled.
pub(super) struct PendingCall<'m> {
    pub(super) placeholder: FuncId,
    pub(super) func: &'m ast::FnItem,
    pub(super) slots: Vec<Slot>,
    pub(super) span: Span,
    /// Arguments whose parameter type is built from the callee's generic parameters
    /// (`w: [T; W]`): the argument's type and where, and the parameter's type, checked once the
    /// instance is known.
    pub(super) deferred: Vec<(H, Span, &'m TypeExpr)>,
}

/// Placeholder ids of pending calls count down from here; real ids are indices.
const PENDING_BASE: FuncId = FuncId::MAX;

impl<'c, 'm> FnCx<'c, 'm> {
    /// Sets what the generic parameters of the function being checked stand for.
    pub(super) fn set_generics(&mut self, g: GenericEnv) {
        self.u.param_names = g.names();
        self.generics = g;
    }

    /// A call of the generic function `f`.
    pub(super) fn call_generic(
        &mut self,
        f: &'m ast::FnItem,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let name = &f.name.name;
        if !generics.is_empty() && generics.len() != f.generics.len() {
            let at = generics[0].span().to(generics[generics.len() - 1].span());
            let want = f.generics.len();
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
        // Arguments checked early to infer a const parameter from an array's length, by index.
        let mut early: Vec<Option<CExpr>> = (0..args.len()).map(|_| None).collect();
        let mut slots = Vec::with_capacity(f.generics.len());
        for (i, g) in f.generics.iter().enumerate() {
            let slot = match (g.kind, generics.get(i)) {
                (GenericParamKind::Type(bound), None | Some(GenericArg::Infer(_))) => {
                    let h = self.u.var(Kind::Any);
                    self.obligations.push(Oblig::Bound { h, bound, param: g.name.name.clone(), func: name.clone(), span });
                    Slot::Type(h)
                }
                (GenericParamKind::Type(bound), Some(GenericArg::Type(t))) => {
                    let ty = self.ty_of(t)?;
                    if !matches!(ty, Ty::Scalar(_) | Ty::Param(_)) || !satisfies(ty, bound) {
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
                (GenericParamKind::Type(_), Some(GenericArg::Const(e))) => {
                    let msg = match &e.kind {
                        A::Path(n) => format!("cannot find type `{}` in this scope", n.name),
                        _ => format!("expected a type for `{}`, found a constant", g.name.name),
                    };
                    return Err(Diagnostic::error(e.span, msg)
                        .label("not a type")
                        .secondary(g.span, format!("`{}` of `{name}` is a type parameter", g.name.name))
                        .into());
                }
                (GenericParamKind::Const(s), Some(GenericArg::Const(e))) => Slot::Const(self.eval_const_here(e, Some(s))?),
                (GenericParamKind::Const(s), Some(GenericArg::Type(t))) => {
                    return Err(Diagnostic::error(t.span(), format!("expected a `{s}` constant for `{}`, found a type", g.name.name))
                        .label("not a constant")
                        .secondary(g.span, format!("`{}` of `{name}` is a const parameter", g.name.name))
                        .into());
                }
                (GenericParamKind::Const(s), None | Some(GenericArg::Infer(_)))
                    if let Some(j) = length_param(f, &g.name.name).filter(|j| *j < args.len()) =>
                {
                    // `fn f<const N: usize>(a: [T; N])`: `N` is the argument's length, as in Rust.
                    if early[j].is_none() {
                        early[j] = Some(self.expr(&args[j])?);
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
        if f.params.len() != args.len() {
            let want = f.params.len();
            return Err(Diagnostic::error(
                span,
                format!(
                    "`{name}` takes {want} argument{} but {} {} supplied",
                    plural(want),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label(format!("expected {want} argument{}", plural(want)))
            .secondary(f.sig_span, "declared here")
            .into());
        }
        let mut out = Vec::with_capacity(args.len());
        let mut deferred = Vec::new();
        for ((a, p), pre) in args.iter().zip(&f.params).zip(early) {
            let x = match pre {
                Some(x) => x,
                None => self.expr(a)?,
            };
            let Some(t) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
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
                }
                // A type built from the callee's parameters (`[T; W]`, `(T, u32)`): known once
                // the instance is; a definition's call is not compiled, its instances are.
                other if mentions_generics(other, f) => match self.callee_ty_now(f, &slots, other)? {
                    Some(want) => {
                        let want = self.u.known(want);
                        self.assign_compatible(want, &x, span)?;
                    }
                    // Unknown parameters: the argument's type settles them (`(T, T)` given a
                    // `(f32, f32)`), or the instance checks it.
                    None => match self.callee_ty_vars(f, &slots, other)? {
                        Some(want) => self.unify_or(x.span, want, x.ty, "")?,
                        None if !self.generics.is_definition() => deferred.push((x.ty, x.span, other)),
                        None => {}
                    },
                },
                other => {
                    let want = self.mcx.ty_of(other, f.module)?;
                    let want = self.u.known(want);
                    self.assign_compatible(want, &x, span)?;
                }
            }
            out.push(x);
        }
        let ret = match &f.ret {
            RetTy::Ty(TypeExpr::Param(id)) => self.slot_type(f, &slots, id)?,
            RetTy::Ty(t) if mentions_generics(t, f) => self.generic_ret(f, &slots, t, span)?,
            RetTy::Ty(t) => {
                let t = self.mcx.ty_of(t, f.module)?;
                self.u.known(t)
            }
            _ => self.u.known(Ty::Unit),
        };
        let id = if self.generics.is_definition() {
            // A definition calls the callee's definition: its arguments may be type parameters,
            // and its body is checked against its bounds once.
            let id = self.mcx.ensure_checked(f, GenericEnv::definition(f), name.clone(), Some(func.span))?;
            if !self.callees.contains(&id) {
                self.callees.push(id);
            }
            id
        } else {
            let placeholder = PENDING_BASE - self.pending.len();
            self.pending.push(PendingCall { placeholder, func: f, slots, span, deferred });
            placeholder
        };
        Ok(Expr { kind: ExprKind::Call(id, out), ty: ret, span })
    }

    /// The result type of a call whose callee returns a type built from its generic parameters
    /// (`-> [T; N]`): the type the call's generic arguments, known by now (written, or inferred
    /// from earlier arguments), give it.
    fn generic_ret(&mut self, f: &'m ast::FnItem, slots: &[Slot], t: &TypeExpr, span: Span) -> CResult<H> {
        match self.callee_ty_now(f, slots, t)? {
            Some(want) => Ok(self.u.known(want)),
            None => match self.callee_ty_vars(f, slots, t)? {
                Some(h) => Ok(h),
                None => {
                    let g = f.generics.iter().zip(slots).find(|(_, s)| matches!(s, Slot::Type(h) if self.u.ty(*h).is_none()));
                    let name = g.map(|(g, _)| g.name.name.clone()).unwrap_or_default();
                    Err(cannot_infer(f, &name, span).into())
                }
            },
        }
    }

    /// A callee's declared type with its type parameters as this call's type variables, which
    /// unifying it with an argument settles: for types made of type parameters, scalars, named
    /// types, tuples, and arrays whose length is known (`None` otherwise).
    fn callee_ty_vars(&mut self, f: &'m ast::FnItem, slots: &[Slot], t: &TypeExpr) -> CResult<Option<H>> {
        Ok(match t {
            TypeExpr::Param(id) => Some(self.slot_type(f, slots, id)?),
            TypeExpr::Tuple(ts, _) => {
                let mut hs = Vec::with_capacity(ts.len());
                for t in ts {
                    match self.callee_ty_vars(f, slots, t)? {
                        Some(h) => hs.push(h),
                        None => return Ok(None),
                    }
                }
                Some(self.u.tuple(hs))
            }
            TypeExpr::Fixed { elem, len, .. } => {
                let generic = |n: &str| f.generics.iter().position(|g| g.name.name == n).and_then(|i| slots.get(i));
                let n = match &len.kind {
                    A::Path(n) if generic(&n.name).is_some() => match generic(&n.name) {
                        Some(Slot::Const(Some(v))) => v.as_i128().and_then(|v| u64::try_from(v).ok()),
                        _ => None,
                    },
                    // A constant of the module (`[T; 3]`, `[T; TILE]`); one built from a const
                    // parameter (`N + 1`) does not evaluate here.
                    _ => self
                        .mcx
                        .eval_const(len, Some(Scalar::Usize), f.module)
                        .ok()
                        .and_then(|v| v.as_i128())
                        .and_then(|v| u64::try_from(v).ok()),
                };
                let Some(n) = n else { return Ok(None) };
                match self.callee_ty_vars(f, slots, elem)? {
                    Some(e) => Some(self.u.array(e, n)),
                    None => None,
                }
            }
            TypeExpr::ArrayRef { .. } => None,
            // A fragment of a type parameter is known once the instance is.
            TypeExpr::Builtin { .. } if mentions_generics(t, f) => None,
            other => {
                let t = self.mcx.ty_of(other, f.module)?;
                Some(self.u.known(t))
            }
        })
    }

    /// A callee's declared type in the terms of this call, if every type argument is known now
    /// (a constant of a definition may be unknown: an array's length is then unknown too).
    fn callee_ty_now(&mut self, f: &'m ast::FnItem, slots: &[Slot], t: &TypeExpr) -> CResult<Option<Ty>> {
        let mut args = Vec::with_capacity(slots.len());
        for s in slots {
            args.push(match s {
                Slot::Type(h) => match self.u.ty(*h) {
                    Some(t) => (Some(t), None),
                    None => return Ok(None),
                },
                Slot::Const(v) => (None, *v),
            });
        }
        let definition = self.generics.is_definition();
        if !definition && args.iter().zip(&f.generics).any(|((_, v), g)| matches!(g.kind, GenericParamKind::Const(_)) && v.is_none()) {
            return Ok(None);
        }
        let env = GenericEnv::at_call(f, &args, definition);
        self.mcx.ty_in(t, f.module, &env).map(Some)
    }

    fn slot_type(&mut self, f: &ast::FnItem, slots: &[Slot], id: &ast::Ident) -> CResult<H> {
        match f.generics.iter().position(|g| g.name.name == id.name).and_then(|i| slots.get(i)) {
            Some(Slot::Type(h)) => Ok(*h),
            _ => Err(Diagnostic::error(id.span, format!("cannot find type `{}` in this scope", id.name))
                .label("not a type parameter")
                .into()),
        }
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
        for p in pending {
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
            self.mcx.check_generic_args(p.func, &values, p.span, &super::generics::instance_name(&p.func.name.name, &values))?;
            let env = GenericEnv::instance(p.func, &values);
            for (h, at, t) in &p.deferred {
                let want = self.mcx.ty_in(t, p.func.module, &env)?;
                if self.u.settle(*h) != Some(want) {
                    let wh = self.u.known(want);
                    return Err(self.mismatch(*at, wh, *h, "").into());
                }
            }
            let id = self.mcx.ensure_instance(p.func, &values, Some(p.span))?;
            self.instantiated.push((p.placeholder, id));
            if !self.callees.contains(&id) {
                self.callees.push(id);
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
        let saved = std::mem::replace(&mut self.mcx.const_scope, scope);
        let r = self.mcx.eval_const(e, expected, self.module);
        self.mcx.const_scope = saved;
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
fn length_param(f: &ast::FnItem, name: &str) -> Option<usize> {
    f.params.iter().position(|p| matches!(&p.ty, Some(TypeExpr::Fixed { len, .. }) if matches!(&len.kind, A::Path(n) if n.name == name)))
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
        TypeExpr::Unit(_) | TypeExpr::Scalar(..) | TypeExpr::Named(..) => false,
    }
}

pub(super) fn mentions(e: &ast::Expr, scope: &[(String, Scalar, Option<ScalarValue>)]) -> bool {
    match &e.kind {
        A::Path(n) => scope.iter().any(|(s, _, _)| *s == n.name),
        A::Unary(_, x) | A::Cast(x, _) => mentions(x, scope),
        A::Binary(_, a, b) | A::Logic(_, a, b) => mentions(a, scope) || mentions(b, scope),
        A::Block(b) => b.tail.as_ref().is_some_and(|t| mentions(t, scope)),
        _ => false,
    }
}

impl<'m> ModuleCx<'m> {
    /// The type of a constant expression that depends on const parameters without values:
    /// the rules of `eval_const`, without evaluating.
    pub(super) fn const_type(
        &mut self,
        e: &ast::Expr,
        expected: Option<Scalar>,
        scope: &[(String, Scalar, Option<ScalarValue>)],
        module: ast::ModId,
    ) -> CResult<Scalar> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.const_type_inner(e, expected, scope, module))
    }

    fn const_type_inner(
        &mut self,
        e: &ast::Expr,
        expected: Option<Scalar>,
        scope: &[(String, Scalar, Option<ScalarValue>)],
        module: ast::ModId,
    ) -> CResult<Scalar> {
        let check = |t: Scalar| -> CResult<Scalar> {
            match expected {
                Some(x) if x != t => Err(Diagnostic::error(e.span, format!("mismatched types: expected `{x}`, found `{t}`"))
                    .label(format!("expected `{x}`"))
                    .into()),
                _ => Ok(t),
            }
        };
        match &e.kind {
            A::Path(n) if scope.iter().any(|(s, _, _)| *s == n.name) => {
                let t = scope.iter().find(|(s, _, _)| *s == n.name).map(|(_, t, _)| *t).unwrap_or(Scalar::Usize);
                check(t)
            }
            A::Unary(_, x) => self.const_type(x, expected, scope, module),
            A::Binary(op, a, b) => {
                if op.is_comparison() {
                    let ta = self.const_type(a, None, scope, module)?;
                    self.const_type(b, Some(ta), scope, module)?;
                    check(Scalar::Bool)
                } else if op.is_shift() {
                    let ta = self.const_type(a, expected, scope, module)?;
                    self.const_type(b, None, scope, module)?;
                    Ok(ta)
                } else {
                    let ta = self.const_type(a, expected, scope, module)?;
                    self.const_type(b, Some(ta), scope, module)
                }
            }
            A::Logic(_, a, b) => {
                self.const_type(a, Some(Scalar::Bool), scope, module)?;
                self.const_type(b, Some(Scalar::Bool), scope, module)?;
                check(Scalar::Bool)
            }
            A::Cast(x, t) => {
                self.const_type(x, None, scope, module)?;
                match t {
                    TypeExpr::Scalar(s, _) => check(*s),
                    _ => Err(Diagnostic::error(t.span(), "casts are to scalar types").label("here").into()),
                }
            }
            A::Block(b) if b.stmts.is_empty() && b.tail.is_some() => match &b.tail {
                Some(t) => self.const_type(t, expected, scope, module),
                None => Err(Diagnostic::error(e.span, "expected a constant expression").label("not constant").into()),
            },
            // Everything else does not depend on the parameters: its value gives its type.
            _ => {
                let v = self.eval_const(e, expected, module)?;
                Ok(v.ty())
            }
        }
    }
}
