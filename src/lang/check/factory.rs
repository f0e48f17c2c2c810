//! Kernel factories and their closures: instantiating a factory with its arguments, the `let`
//! bindings of its body, and checking each closure it defines.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, RetTy, Stmt as AStmt, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::body::FnCx;
use super::consts::ConstVal;
use super::items::{ModuleCx, Sig};
use super::{CResult, plural};
use crate::lang::ast::ModId;
use crate::lang::names::Res;

/// What a name bound in a factory body stands for.
#[derive(Clone, Debug)]
pub(super) enum ScopeItem {
    Capture(CaptureId, CaptureTy),
    Closure(FuncId),
}

/// The names a factory body has bound so far, innermost last.
#[derive(Debug)]
pub(super) struct FactoryScope {
    factory: String,
    /// The module of the factory, whose names its body sees.
    module: ModId,
    pub(super) names: Vec<(String, ScopeItem, Span)>,
}

impl FactoryScope {
    pub(super) fn get(&self, name: &str) -> Option<&ScopeItem> {
        self.names.iter().rev().find(|(n, _, _)| n == name).map(|(_, i, _)| i)
    }
}

impl<'m> ModuleCx<'m> {
    /// Instantiates a factory with the given captured arguments; returns its final closure.
    pub(super) fn instantiate_factory(&mut self, f: &'m ast::FnItem, args: Vec<(CaptureId, CaptureTy)>, call: Span) -> CResult<FuncId> {
        let fname = f.name.name.clone();
        if let Some(g) = f.generics.first() {
            return Err(Diagnostic::error(g.span, format!("factory `{fname}` is generic"))
                .label("factories take no generic parameters")
                .help("make the device functions its closures call generic instead, or write one factory per type")
                .into());
        }
        if self.factories_in_progress.contains(&fname) {
            return Err(Diagnostic::error(call, format!("recursion is not supported: factory `{fname}` instantiates itself"))
                .label("recursive instantiation")
                .help("rewrite the recursion as a loop")
                .into());
        }
        for (p, (_, ty)) in f.params.iter().zip(&args) {
            let Some(decl) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
            };
            let want = self.ty_of(decl, f.module)?;
            let ok = match (want, ty) {
                (Ty::Scalar(a), CaptureTy::Scalar(b)) => a == *b,
                (Ty::Array(a), CaptureTy::Array { ty: b, .. }) => a.elem == b.elem && a.ndim == b.ndim && (!a.writable || b.writable),
                _ => false,
            };
            if !ok {
                return Err(Diagnostic::error(p.span, format!("factory `{fname}`: argument `{}` has the wrong type", p.name.name))
                    .label(format!("expects `{want}`, got {}", describe_capture(ty)))
                    .secondary(call, "instantiated here")
                    .into());
            }
        }
        self.factories_in_progress.push(fname.clone());
        let r = crate::stack::ensure(256 << 10, 8 << 20, || self.factory_body(f, args));
        self.factories_in_progress.pop();
        r
    }

    fn factory_body(&mut self, f: &'m ast::FnItem, args: Vec<(CaptureId, CaptureTy)>) -> CResult<FuncId> {
        let fname = f.name.name.clone();
        let mut scope = FactoryScope { factory: fname.clone(), module: f.module, names: Vec::new() };
        for (p, (id, ty)) in f.params.iter().zip(args) {
            scope.names.push((p.name.name.clone(), ScopeItem::Capture(id, ty), p.name.span));
        }
        let shape_help = "a factory body is a sequence of `let` bindings of closures or factory calls, ending in a `move` closure";
        for s in &f.body.stmts {
            let AStmt::Let { name, ty, init: Some(init), .. } = s else {
                let span = match s {
                    AStmt::Let { span, .. } | AStmt::LetPat { span, .. } | AStmt::LetElse { span, .. } => *span,
                    AStmt::Expr(e, _) => e.span,
                };
                return Err(Diagnostic::error(span, "unsupported statement in a factory body")
                    .label("not a closure binding")
                    .help(shape_help)
                    .into());
            };
            if let Some(t) = ty {
                return Err(Diagnostic::error(t.span(), "closure bindings take no type annotation").label("remove it").into());
            }
            match &init.kind {
                A::Closure { params, ret, body, .. } => {
                    let id = self.check_closure(&scope, &name.name, params, ret.as_ref(), body, init.span, None, false)?;
                    scope.names.push((name.name.clone(), ScopeItem::Closure(id), name.span));
                }
                A::Call { qualifier, func, generics, args, qself: None, .. } if generics.is_empty() => {
                    let res = if qualifier.is_empty() {
                        self.m.scopes.value(f.module, &func.name)
                    } else {
                        let mut path = qualifier.clone();
                        path.push(func.clone());
                        self.m.scopes.path(self.m, f.module, &path)?.0
                    };
                    let m = self.m;
                    let inner = match res {
                        Some(Res::Item(i)) => match &m.items[i] {
                            ast::Item::Fn(g) if matches!(g.ret, RetTy::ImplFn { .. } | RetTy::ImplKernel(_)) => Some(g),
                            _ => None,
                        },
                        _ => None,
                    };
                    let Some(inner) = inner else {
                        return Err(Diagnostic::error(func.span, format!("`{}` is not a factory", func.name))
                            .label("expected a factory call or a closure")
                            .help(shape_help)
                            .into());
                    };
                    if matches!(inner.ret, RetTy::ImplKernel(_)) {
                        return Err(Diagnostic::error(
                            init.span,
                            format!("factory `{}` returns a kernel, which cannot be called", func.name),
                        )
                        .label("returns `impl Kernel`")
                        .help("bind factories that return `impl Fn(..) -> T`")
                        .into());
                    }
                    if args.len() != inner.params.len() {
                        return Err(Diagnostic::error(
                            init.span,
                            format!(
                                "factory `{}` takes {} argument{} but {} {} given",
                                func.name,
                                inner.params.len(),
                                plural(inner.params.len()),
                                args.len(),
                                if args.len() == 1 { "was" } else { "were" }
                            ),
                        )
                        .label("wrong number of arguments")
                        .secondary(inner.sig_span, "declared here")
                        .into());
                    }
                    let mut bound = Vec::new();
                    for (a, p) in args.iter().zip(&inner.params) {
                        bound.push(self.factory_arg(&scope, a, p, &func.name)?);
                    }
                    let id = self.instantiate_factory(inner, bound, init.span)?;
                    scope.names.push((name.name.clone(), ScopeItem::Closure(id), name.span));
                }
                _ => {
                    return Err(Diagnostic::error(init.span, "unsupported binding in a factory body")
                        .label("expected a closure or a factory call")
                        .help(shape_help)
                        .into());
                }
            }
        }
        let Some(tail) = &f.body.tail else {
            return Err(Diagnostic::error(f.body.span, format!("factory `{fname}` must end in a `move` closure"))
                .label("no closure returned")
                .help(shape_help)
                .into());
        };
        let A::Closure { params, ret, body, .. } = &tail.kind else {
            return Err(Diagnostic::error(tail.span, format!("factory `{fname}` must end in a `move` closure"))
                .label("not a closure")
                .help(shape_help)
                .into());
        };
        match &f.ret {
            RetTy::ImplKernel(_) => {
                if let Some(r) = ret
                    && !matches!(r, TypeExpr::Unit(_))
                {
                    return Err(Diagnostic::error(r.span(), "kernel closures do not return a value")
                        .label("remove the return type")
                        .help("write results into a `&mut` array parameter")
                        .into());
                }
                self.check_closure(&scope, &fname, params, None, body, tail.span, None, true)
            }
            RetTy::ImplFn { params: want, ret: want_ret, span } => {
                let want: Vec<Ty> = want.iter().map(|t| self.ty_of(t, f.module)).collect::<CResult<_>>()?;
                let want_ret = match want_ret {
                    Some(t) => self.ty_of(t, f.module)?,
                    None => Ty::Unit,
                };
                if want.len() != params.len() {
                    return Err(Diagnostic::error(
                        tail.span,
                        format!(
                            "the closure takes {} parameter{} but the factory's type says {}",
                            params.len(),
                            plural(params.len()),
                            want.len()
                        ),
                    )
                    .label("returned here")
                    .secondary(*span, "declared here")
                    .into());
                }
                self.check_closure(
                    &scope,
                    &format!("{fname}::closure"),
                    params,
                    ret.as_ref(),
                    body,
                    tail.span,
                    Some((want, want_ret)),
                    false,
                )
            }
            _ => Err(Diagnostic::error(f.name.span, "not a factory").label("here").into()),
        }
    }

    fn factory_arg(&mut self, scope: &FactoryScope, a: &ast::Expr, p: &ast::Param, inner: &str) -> CResult<(CaptureId, CaptureTy)> {
        let Some(decl) = &p.ty else {
            return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
        };
        if let A::Path(n) = &a.kind {
            match scope.get(&n.name) {
                Some(ScopeItem::Capture(id, ty)) => return Ok((*id, *ty)),
                Some(ScopeItem::Closure(_)) => {
                    return Err(Diagnostic::error(a.span, "closures cannot be passed to factories")
                        .label("a closure")
                        .help("factory parameters are scalars and arrays")
                        .into());
                }
                None => {}
            }
            if let Some(c) = self.const_named(scope.module, &n.name)
                && let ConstVal::Array(arr) = self.const_value(c, n.span)?
            {
                let ty = CaptureTy::Array {
                    ty: ArrayTy { elem: Elem::Scalar(arr.elem), ndim: arr.shape.len() as u8, writable: false },
                    device: false,
                    layout: Layout::C,
                };
                let id = self.add_capture(CaptureOrigin::Static(n.name.clone()), ty, CaptureSource::Static(arr));
                return Ok((id, ty));
            }
            if let Some((i, ty)) = self.env.global(&n.name) {
                let id = self.add_capture(CaptureOrigin::Global(n.name.clone()), ty, CaptureSource::Binding(i));
                return Ok((id, ty));
            }
        }
        let want = self.ty_of(decl, scope.module)?;
        let Ty::Scalar(s) = want else {
            return Err(Diagnostic::error(a.span, format!("argument `{}` of factory `{inner}` must be an array", p.name.name))
                .label("pass a parameter of this factory, a global or a `static`")
                .into());
        };
        let v = self.eval_const(a, Some(s), scope.module)?;
        let ty = CaptureTy::Scalar(s);
        let id = self.add_capture(
            CaptureOrigin::FactoryArg { factory: inner.to_string(), param: p.name.name.clone() },
            ty,
            CaptureSource::Scalar(v),
        );
        let _ = scope;
        Ok((id, ty))
    }

    #[allow(clippy::too_many_arguments)]
    fn check_closure(
        &mut self,
        scope: &FactoryScope,
        name: &str,
        params: &[ast::Param],
        ret: Option<&TypeExpr>,
        body: &ast::Expr,
        span: Span,
        expected: Option<(Vec<Ty>, Ty)>,
        is_kernel: bool,
    ) -> CResult<FuncId> {
        let n = self.closure_names.entry(name.to_string()).or_insert(0);
        *n += 1;
        let full = if *n == 1 || is_kernel { name.to_string() } else { format!("{name}#{n}") };
        let full = if is_kernel { full } else { format!("{}::{}", scope.factory, full.rsplit("::").next().unwrap_or(&full)) };
        let kind = if is_kernel {
            FuncKind::KernelClosure { factory: scope.factory.clone() }
        } else {
            FuncKind::Closure { factory: scope.factory.clone() }
        };
        let id = self.reserve(Sig { params: Vec::new(), ret: Ty::Unit });
        let mut cx = FnCx::new(self, Some(scope), scope.module);
        let func = cx.check_closure_body(&full, kind, params, ret, body, span, expected, is_kernel)?;
        self.sigs[id] = Sig { params: func.param_decls().iter().map(|l| l.ty).collect(), ret: func.ret };
        self.funcs[id] = Some(func);
        Ok(id)
    }
}

fn describe_capture(t: &CaptureTy) -> String {
    match t {
        CaptureTy::Scalar(s) => format!("`{s}`"),
        CaptureTy::Array { ty, device, .. } => format!(
            "a {}-d `{}` {} array{}",
            ty.ndim,
            ty.elem,
            if *device { "device" } else { "host" },
            if ty.writable { "" } else { " (read-only)" }
        ),
    }
}
