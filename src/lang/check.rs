//! Name resolution and type checking: from [`ast`](super::ast) to a checked [`Program`].
//!
//! Types follow Rust: no implicit numeric conversion, literals take their type from how they
//! are used (else `i32` / `f64`), `let` bindings without an annotation take the type of their
//! initialiser, which may itself be settled later. Inference is unification over type
//! variables; checks that need a settled type (is this operand numeric?) are recorded as
//! obligations and discharged once the function has been walked.

use std::collections::HashMap;

use super::ast::{self, ExprKind as A, GenericArg, Item, Lit, RetTy, Stmt as AStmt, TypeExpr};
use super::builtins::{self, ArgTy, Function, Receiver};
use super::diag::{Diagnostic, Diagnostics};
use crate::ir::*;
use crate::span::Span;

type CResult<T> = Result<T, Diagnostic>;

/// What the host has bound on the module: the type of each global, by binding number.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Global name and type; the index is the binding number
    /// ([`CaptureSource::Binding`]).
    pub globals: Vec<(String, CaptureTy)>,
}

impl Env {
    fn global(&self, name: &str) -> Option<(usize, CaptureTy)> {
        self.globals.iter().position(|(n, _)| n == name).map(|i| (i, self.globals[i].1))
    }
}

/// The signature of a kernel or kernel factory, as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSig {
    /// Kernel name.
    pub name: String,
    /// Parameter names and types.
    pub params: Vec<(String, Ty)>,
}

/// What `check_module` found.
#[derive(Clone, Debug, Default)]
pub struct ModuleSummary {
    /// `#[kernel]` functions.
    pub kernels: Vec<KernelSig>,
    /// Factories returning `impl Kernel`: their names and parameters.
    pub kernel_factories: Vec<KernelSig>,
    /// Device functions.
    pub device_functions: Vec<String>,
}

/// Checks the `#[kernel]` function `name` and everything it reaches.
pub fn check_kernel(m: &ast::SourceModule, env: &Env, name: &str) -> Result<Program, Diagnostics> {
    let diag = |d| Diagnostics::single(m.file.clone(), d);
    let mut cx = ModuleCx::new(m, env);
    let f = match m.func(name) {
        Some(f) if f.is_kernel => f,
        Some(f) if matches!(f.ret, RetTy::ImplKernel(_)) => {
            return Err(diag(
                Diagnostic::error(f.name.span, format!("`{name}` is a kernel factory, not a kernel"))
                    .label("returns `impl Kernel`")
                    .help("instantiate it with `Module::closure` and its arguments"),
            ));
        }
        Some(f) => {
            return Err(diag(
                Diagnostic::error(f.name.span, format!("`{name}` is not a kernel"))
                    .label("a device function")
                    .help("mark kernels with `#[kernel]`"),
            ));
        }
        None => return Err(diag(cx.no_such_kernel(name))),
    };
    let id = cx.ensure_fn(f, None).map_err(diag)?;
    let p = cx.finish(id);
    check_shared_total(&p).map_err(diag)?;
    Ok(p)
}

/// The static shared memory of a whole kernel (every `shared_array` of every function it
/// reaches) fits in a block.
fn check_shared_total(p: &Program) -> CResult<()> {
    let mut total = 0u64;
    for f in &p.funcs {
        let mut err = None;
        visit_block(&f.body, &mut |e| {
            if let ExprKind::SharedArray { elem, len, .. } = &e.kind {
                total = total.div_ceil(16) * 16 + len * elem.size() as u64;
                if total > builtins::MAX_SHARED_BYTES && err.is_none() {
                    err = Some(
                        Diagnostic::error(e.span, format!("kernel `{}` uses {total} bytes of static shared memory", p.kernel().name))
                            .label(format!("the total passes {} bytes here", builtins::MAX_SHARED_BYTES))
                            .note("every `shared_array` of the kernel and of the functions it calls shares one block's 48 KiB")
                            .help("use smaller arrays, or `dynamic_shared_array::<T>()` sized at launch"),
                    );
                }
            }
        });
        if let Some(d) = err {
            return Err(d);
        }
    }
    Ok(())
}

/// Checks the factory `name` instantiated with arguments of the given types (their binding
/// numbers follow the globals': `env.globals.len() + i`).
pub fn check_factory(m: &ast::SourceModule, env: &Env, name: &str, args: &[CaptureTy]) -> Result<Program, Diagnostics> {
    let diag = |d| Diagnostics::single(m.file.clone(), d);
    let mut cx = ModuleCx::new(m, env);
    let Some(f) = m.func(name) else {
        return Err(diag(cx.no_such_kernel(name)));
    };
    if !matches!(f.ret, RetTy::ImplKernel(_)) {
        let d = if matches!(f.ret, RetTy::ImplFn { .. }) {
            Diagnostic::error(f.name.span, format!("factory `{name}` returns a device closure, not a kernel"))
                .label("returns `impl Fn`")
                .help("only factories returning `impl Kernel` can be launched; call this one from another factory")
        } else {
            Diagnostic::error(f.name.span, format!("`{name}` is not a factory"))
                .label("does not return `impl Kernel`")
                .help("a factory returns a `move` closure: `fn make(x: f32) -> impl Kernel { move |out: &mut [f32]| { .. } }`")
        };
        return Err(diag(d));
    }
    let base = env.globals.len();
    let mut bound = Vec::new();
    for (i, (p, ty)) in f.params.iter().zip(args).enumerate() {
        let id = cx.add_capture(
            CaptureOrigin::FactoryArg { factory: name.to_string(), param: p.name.name.clone() },
            *ty,
            CaptureSource::Binding(base + i),
        );
        bound.push((id, *ty));
    }
    if args.len() != f.params.len() {
        return Err(diag(
            Diagnostic::error(
                f.sig_span,
                format!(
                    "factory `{name}` takes {} argument{} but {} {} given",
                    f.params.len(),
                    plural(f.params.len()),
                    args.len(),
                    if args.len() == 1 { "was" } else { "were" }
                ),
            )
            .label("declared here"),
        ));
    }
    let id = cx.instantiate_factory(f, bound, f.name.span).map_err(diag)?;
    let p = cx.finish(id);
    check_shared_total(&p).map_err(diag)?;
    Ok(p)
}

/// Checks every item of the module: kernels, device functions and factories (whose parameters
/// are taken as the declared types, arrays as device arrays).
pub fn check_module(m: &ast::SourceModule, env: &Env) -> Result<ModuleSummary, Diagnostics> {
    let mut errors = Vec::new();
    let mut summary = ModuleSummary::default();
    for item in &m.items {
        let mut cx = ModuleCx::new(m, env);
        let r = match item {
            Item::Const(c) => cx.const_value(&c.name.name, c.name.span).map(|_| ()),
            Item::Fn(f) => match &f.ret {
                RetTy::ImplKernel(_) | RetTy::ImplFn { .. } => {
                    let mut bound = Vec::new();
                    let mut r = Ok(());
                    for p in &f.params {
                        match p.ty.as_ref().map(|t| cx.capture_ty_of_decl(t)) {
                            Some(Ok(ty)) => {
                                let id = cx.add_capture(
                                    CaptureOrigin::FactoryArg { factory: f.name.name.clone(), param: p.name.name.clone() },
                                    ty,
                                    CaptureSource::Binding(env.globals.len() + bound.len()),
                                );
                                bound.push((id, ty));
                            }
                            Some(Err(e)) => r = Err(e),
                            None => {}
                        }
                    }
                    r.and_then(|_| cx.instantiate_factory(f, bound, f.name.span)).map(|_| {
                        if matches!(f.ret, RetTy::ImplKernel(_)) {
                            summary.kernel_factories.push(KernelSig {
                                name: f.name.name.clone(),
                                params: f
                                    .params
                                    .iter()
                                    .filter_map(|p| Some((p.name.name.clone(), type_of_decl(p.ty.as_ref()?).ok()?)))
                                    .collect(),
                            });
                        }
                    })
                }
                _ if f.is_kernel => match check_kernel(m, env, &f.name.name) {
                    Ok(p) => {
                        summary.kernels.push(KernelSig {
                            name: f.name.name.clone(),
                            params: p.kernel().param_decls().iter().map(|l| (l.name.clone(), l.ty)).collect(),
                        });
                        Ok(())
                    }
                    Err(d) => Err(d.items()[0].clone()),
                },
                _ => cx.ensure_fn(f, None).map(|id| {
                    let func = cx.funcs[id].as_ref();
                    if f.is_kernel {
                        summary.kernels.push(KernelSig {
                            name: f.name.name.clone(),
                            params: func
                                .map(|func| func.param_decls().iter().map(|l| (l.name.clone(), l.ty)).collect())
                                .unwrap_or_default(),
                        });
                    } else {
                        summary.device_functions.push(f.name.name.clone());
                    }
                }),
            },
        };
        if let Err(e) = r {
            if !errors.contains(&e) {
                errors.push(e);
            }
        }
    }
    if errors.is_empty() { Ok(summary) } else { Err(Diagnostics::new(m.file.clone(), errors)) }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The type a declared parameter or annotation stands for.
fn type_of_decl(t: &TypeExpr) -> CResult<Ty> {
    match t {
        TypeExpr::Unit(_) => Ok(Ty::Unit),
        TypeExpr::Scalar(s, _) => Ok(Ty::Scalar(*s)),
        TypeExpr::ArrayRef { elem, ndim, mutable, .. } => Ok(Ty::Array(ArrayTy { elem: *elem, ndim: *ndim, writable: *mutable })),
        TypeExpr::Fixed { span, .. } => Err(Diagnostic::error(*span, "fixed-size arrays are only supported in `static` and `const` items")
            .label("not supported here")
            .help("take a slice: `&[T]` or `&mut [T]`")),
    }
}

fn close_matches<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<(f64, String)> = candidates
        .filter(|c| *c != name)
        .map(|c| (strsim::jaro_winkler(name, c), c.to_string()))
        .filter(|(s, c)| *s > 0.8 || (name.len() > 2 && c.contains(name)))
        .collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v.into_iter().take(3).map(|(_, c)| c).collect()
}

// ---------------------------------------------------------------------------------------------
// Module context: functions, captures and constants of the program being built.

#[derive(Clone, Debug)]
enum ConstVal {
    Scalar(ScalarValue),
    Array(ConstArray),
}

#[derive(Clone, Debug)]
struct Sig {
    params: Vec<Ty>,
    ret: Ty,
}

#[derive(Clone, Debug)]
enum ScopeItem {
    Capture(CaptureId, CaptureTy),
    Closure(FuncId),
}

#[derive(Debug)]
struct FactoryScope {
    factory: String,
    names: Vec<(String, ScopeItem, Span)>,
}

impl FactoryScope {
    fn get(&self, name: &str) -> Option<&ScopeItem> {
        self.names.iter().rev().find(|(n, _, _)| n == name).map(|(_, i, _)| i)
    }
}

struct ModuleCx<'m> {
    m: &'m ast::SourceModule,
    env: &'m Env,
    funcs: Vec<Option<Func>>,
    sigs: Vec<Sig>,
    fn_ids: HashMap<String, FuncId>,
    in_progress: Vec<(String, Span)>,
    captures: Vec<Capture>,
    consts: HashMap<String, ConstVal>,
    consts_in_progress: Vec<String>,
    factories_in_progress: Vec<String>,
    closure_names: HashMap<String, usize>,
}

impl<'m> ModuleCx<'m> {
    fn new(m: &'m ast::SourceModule, env: &'m Env) -> Self {
        ModuleCx {
            m,
            env,
            funcs: Vec::new(),
            sigs: Vec::new(),
            fn_ids: HashMap::new(),
            in_progress: Vec::new(),
            captures: Vec::new(),
            consts: HashMap::new(),
            consts_in_progress: Vec::new(),
            factories_in_progress: Vec::new(),
            closure_names: HashMap::new(),
        }
    }

    fn finish(self, kernel: FuncId) -> Program {
        Program {
            kernel,
            funcs: self.funcs.into_iter().map(|f| f.expect("every reserved function is filled before finish")).collect(),
            captures: self.captures,
        }
    }

    fn no_such_kernel(&self, name: &str) -> Diagnostic {
        let mut names = self.m.kernel_names();
        names.extend(self.m.kernel_factory_names());
        let mut d = Diagnostic::error(Span::new(0, 0), format!("no kernel named `{name}` in this file")).label("searched this file");
        if names.is_empty() {
            d = d.note("the file defines no kernels: mark one with `#[kernel]`");
        } else {
            d = d.note(format!("kernels here: {}", names.join(", ")));
        }
        let close = close_matches(name, names.iter().map(String::as_str));
        if let Some(c) = close.first() {
            d = d.help(format!("did you mean `{c}`?"));
        }
        d
    }

    fn add_capture(&mut self, origin: CaptureOrigin, ty: CaptureTy, source: CaptureSource) -> CaptureId {
        if let Some(i) = self.captures.iter().position(|c| c.origin == origin && c.source == source) {
            return i;
        }
        self.captures.push(Capture { origin, ty, source });
        self.captures.len() - 1
    }

    fn reserve(&mut self, sig: Sig) -> FuncId {
        self.funcs.push(None);
        self.sigs.push(sig);
        self.funcs.len() - 1
    }

    fn capture_ty_of_decl(&self, t: &TypeExpr) -> CResult<CaptureTy> {
        Ok(match type_of_decl(t)? {
            Ty::Scalar(s) => CaptureTy::Scalar(s),
            Ty::Array(a) => CaptureTy::Array { ty: a, device: true, layout: Layout::A },
            _ => return Err(Diagnostic::error(t.span(), "factory parameters are scalars or arrays").label("here")),
        })
    }

    /// Checks a `fn` item (kernel or device function) once; detects recursion.
    fn ensure_fn(&mut self, f: &'m ast::FnItem, call: Option<Span>) -> CResult<FuncId> {
        let name = &f.name.name;
        if let Some(pos) = self.in_progress.iter().position(|(n, _)| n == name) {
            let mut chain: Vec<&str> = self.in_progress[pos..].iter().map(|(n, _)| n.as_str()).collect();
            chain.push(name);
            let span = call.unwrap_or(f.name.span);
            let what = if chain.len() <= 2 {
                format!("`{name}` calls itself")
            } else {
                format!(
                    "`{name}` calls itself through {}",
                    chain[1..chain.len() - 1].iter().map(|c| format!("`{c}`")).collect::<Vec<_>>().join(", ")
                )
            };
            return Err(Diagnostic::error(span, format!("recursion is not supported: {what}"))
                .label(if chain.len() == 2 { "recursive call".to_string() } else { format!("call cycle: {}", chain.join(" -> ")) })
                .secondary(f.name.span, "defined here")
                .note("GPU threads have tiny stacks; kache inlines device functions and rejects recursion")
                .help("rewrite the recursion as a loop"));
        }
        if let Some(&id) = self.fn_ids.get(name) {
            return Ok(id);
        }
        let (kind, ret) = match &f.ret {
            RetTy::Unit => (if f.is_kernel { FuncKind::Kernel } else { FuncKind::Device }, Ty::Unit),
            RetTy::Ty(t) => {
                if f.is_kernel {
                    return Err(Diagnostic::error(t.span(), format!("kernel `{name}` has a return type"))
                        .label("kernels do not return a value")
                        .help("write results into a `&mut` array parameter"));
                }
                let ty = type_of_decl(t)?;
                if let Ty::Array(_) = ty {
                    return Err(Diagnostic::error(t.span(), "device functions cannot return arrays")
                        .label("returns an array")
                        .help("return a scalar, or write into a `&mut` array parameter"));
                }
                (FuncKind::Device, ty)
            }
            RetTy::ImplKernel(s) | RetTy::ImplFn { span: s, .. } => {
                let d = if f.is_kernel {
                    Diagnostic::error(*s, "a factory cannot be a `#[kernel]`")
                        .label("returns a closure")
                        .help("remove `#[kernel]`; the closure it returns is the kernel")
                } else {
                    Diagnostic::error(call.unwrap_or(f.name.span), format!("`{name}` is a factory"))
                        .label("factories are not called from device code")
                        .help("bind it with `let` in a factory body, or instantiate it from the host with `Module::closure`")
                };
                return Err(d);
            }
        };
        let mut params = Vec::new();
        for p in &f.params {
            let Some(t) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type"));
            };
            let ty = type_of_decl(t)?;
            if ty == Ty::Unit {
                return Err(Diagnostic::error(t.span(), "parameters cannot have type `()`").label("here"));
            }
            params.push(ty);
        }
        let id = self.reserve(Sig { params, ret });
        self.fn_ids.insert(name.clone(), id);
        self.in_progress.push((name.clone(), f.name.span));
        let r = crate::stack::ensure(256 << 10, 8 << 20, || {
            let mut cx = FnCx::new(self, None);
            cx.check_fn_body(f, id, kind, ret)
        });
        self.in_progress.pop();
        let func = r?;
        self.funcs[id] = Some(func);
        Ok(id)
    }

    /// Instantiates a factory with the given captured arguments; returns its final closure.
    fn instantiate_factory(&mut self, f: &'m ast::FnItem, args: Vec<(CaptureId, CaptureTy)>, call: Span) -> CResult<FuncId> {
        let fname = f.name.name.clone();
        if self.factories_in_progress.contains(&fname) {
            return Err(Diagnostic::error(call, format!("recursion is not supported: factory `{fname}` instantiates itself"))
                .label("recursive instantiation")
                .help("rewrite the recursion as a loop"));
        }
        for (p, (_, ty)) in f.params.iter().zip(&args) {
            let Some(decl) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type"));
            };
            let want = type_of_decl(decl)?;
            let ok = match (want, ty) {
                (Ty::Scalar(a), CaptureTy::Scalar(b)) => a == *b,
                (Ty::Array(a), CaptureTy::Array { ty: b, .. }) => a.elem == b.elem && a.ndim == b.ndim && (!a.writable || b.writable),
                _ => false,
            };
            if !ok {
                return Err(Diagnostic::error(p.span, format!("factory `{fname}`: argument `{}` has the wrong type", p.name.name))
                    .label(format!("expects `{want}`, got {}", describe_capture(ty)))
                    .secondary(call, "instantiated here"));
            }
        }
        self.factories_in_progress.push(fname.clone());
        let r = crate::stack::ensure(256 << 10, 8 << 20, || self.factory_body(f, args));
        self.factories_in_progress.pop();
        r
    }

    fn factory_body(&mut self, f: &'m ast::FnItem, args: Vec<(CaptureId, CaptureTy)>) -> CResult<FuncId> {
        let fname = f.name.name.clone();
        let mut scope = FactoryScope { factory: fname.clone(), names: Vec::new() };
        for (p, (id, ty)) in f.params.iter().zip(args) {
            scope.names.push((p.name.name.clone(), ScopeItem::Capture(id, ty), p.name.span));
        }
        let shape_help = "a factory body is a sequence of `let` bindings of closures or factory calls, ending in a `move` closure";
        for s in &f.body.stmts {
            let AStmt::Let { name, ty, init: Some(init), .. } = s else {
                let span = match s {
                    AStmt::Let { span, .. } => *span,
                    AStmt::Expr(e, _) => e.span,
                };
                return Err(Diagnostic::error(span, "unsupported statement in a factory body")
                    .label("not a closure binding")
                    .help(shape_help));
            };
            if let Some(t) = ty {
                return Err(Diagnostic::error(t.span(), "closure bindings take no type annotation").label("remove it"));
            }
            match &init.kind {
                A::Closure { params, ret, body } => {
                    let id = self.check_closure(&scope, &name.name, params, ret.as_ref(), body, init.span, None, false)?;
                    scope.names.push((name.name.clone(), ScopeItem::Closure(id), name.span));
                }
                A::Call { func, generics, args } if generics.is_empty() => {
                    let Some(inner) = self.m.func(&func.name).filter(|g| matches!(g.ret, RetTy::ImplFn { .. } | RetTy::ImplKernel(_)))
                    else {
                        return Err(Diagnostic::error(func.span, format!("`{}` is not a factory", func.name))
                            .label("expected a factory call or a closure")
                            .help(shape_help));
                    };
                    if matches!(inner.ret, RetTy::ImplKernel(_)) {
                        return Err(Diagnostic::error(
                            init.span,
                            format!("factory `{}` returns a kernel, which cannot be called", func.name),
                        )
                        .label("returns `impl Kernel`")
                        .help("bind factories that return `impl Fn(..) -> T`"));
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
                        .secondary(inner.sig_span, "declared here"));
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
                        .help(shape_help));
                }
            }
        }
        let Some(tail) = &f.body.tail else {
            return Err(Diagnostic::error(f.body.span, format!("factory `{fname}` must end in a `move` closure"))
                .label("no closure returned")
                .help(shape_help));
        };
        let A::Closure { params, ret, body } = &tail.kind else {
            return Err(Diagnostic::error(tail.span, format!("factory `{fname}` must end in a `move` closure"))
                .label("not a closure")
                .help(shape_help));
        };
        match &f.ret {
            RetTy::ImplKernel(_) => {
                if let Some(r) = ret {
                    if !matches!(r, TypeExpr::Unit(_)) {
                        return Err(Diagnostic::error(r.span(), "kernel closures do not return a value")
                            .label("remove the return type")
                            .help("write results into a `&mut` array parameter"));
                    }
                }
                self.check_closure(&scope, &fname, params, None, body, tail.span, None, true)
            }
            RetTy::ImplFn { params: want, ret: want_ret, span } => {
                let want: Vec<Ty> = want.iter().map(type_of_decl).collect::<CResult<_>>()?;
                let want_ret = match want_ret {
                    Some(t) => type_of_decl(t)?,
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
                    .secondary(*span, "declared here"));
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
            _ => Err(Diagnostic::error(f.name.span, "not a factory").label("here")),
        }
    }

    fn factory_arg(&mut self, scope: &FactoryScope, a: &ast::Expr, p: &ast::Param, inner: &str) -> CResult<(CaptureId, CaptureTy)> {
        let Some(decl) = &p.ty else {
            return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type"));
        };
        if let A::Path(n) = &a.kind {
            match scope.get(&n.name) {
                Some(ScopeItem::Capture(id, ty)) => return Ok((*id, *ty)),
                Some(ScopeItem::Closure(_)) => {
                    return Err(Diagnostic::error(a.span, "closures cannot be passed to factories")
                        .label("a closure")
                        .help("factory parameters are scalars and arrays"));
                }
                None => {}
            }
            if let Some(c) = self.m.items.iter().find_map(|i| match i {
                Item::Const(c) if c.name.name == n.name => Some(c),
                _ => None,
            }) {
                if let ConstVal::Array(arr) = self.const_value(&c.name.name, n.span)? {
                    let ty = CaptureTy::Array {
                        ty: ArrayTy { elem: arr.elem, ndim: arr.shape.len() as u8, writable: false },
                        device: false,
                        layout: Layout::C,
                    };
                    let id = self.add_capture(CaptureOrigin::Static(n.name.clone()), ty, CaptureSource::Static(arr));
                    return Ok((id, ty));
                }
            }
            if let Some((i, ty)) = self.env.global(&n.name) {
                let id = self.add_capture(CaptureOrigin::Global(n.name.clone()), ty, CaptureSource::Binding(i));
                return Ok((id, ty));
            }
        }
        let want = type_of_decl(decl)?;
        let Ty::Scalar(s) = want else {
            return Err(Diagnostic::error(a.span, format!("argument `{}` of factory `{inner}` must be an array", p.name.name))
                .label("pass a parameter of this factory, a global or a `static`"));
        };
        let v = self.eval_const(a, Some(s))?;
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
        let mut cx = FnCx::new(self, Some(scope));
        let func = cx.check_closure_body(&full, kind, params, ret, body, span, expected, is_kernel)?;
        self.sigs[id] = Sig { params: func.param_decls().iter().map(|l| l.ty).collect(), ret: func.ret };
        self.funcs[id] = Some(func);
        Ok(id)
    }

    // --- constants ---

    fn const_item(&self, name: &str) -> Option<&'m ast::ConstItem> {
        self.m.items.iter().find_map(|i| match i {
            Item::Const(c) if c.name.name == name => Some(c),
            _ => None,
        })
    }

    fn const_value(&mut self, name: &str, use_span: Span) -> CResult<ConstVal> {
        if let Some(v) = self.consts.get(name) {
            return Ok(v.clone());
        }
        let Some(c) = self.const_item(name) else {
            return Err(Diagnostic::error(use_span, format!("no constant named `{name}`")).label("not found"));
        };
        if self.consts_in_progress.iter().any(|n| n == name) {
            return Err(Diagnostic::error(c.name.span, format!("constant `{name}` depends on itself"))
                .label("cycle")
                .secondary(use_span, "used here"));
        }
        self.consts_in_progress.push(name.to_string());
        let r = self.eval_const_item(c);
        self.consts_in_progress.pop();
        let v = r?;
        self.consts.insert(name.to_string(), v.clone());
        Ok(v)
    }

    fn eval_const_item(&mut self, c: &'m ast::ConstItem) -> CResult<ConstVal> {
        match &c.ty {
            TypeExpr::Scalar(s, _) => Ok(ConstVal::Scalar(self.eval_const(&c.value, Some(*s))?)),
            TypeExpr::Fixed { .. } => {
                let mut shape = Vec::new();
                let mut t = &c.ty;
                while let TypeExpr::Fixed { elem, len, .. } = t {
                    shape.push(*len as usize);
                    t = elem;
                }
                let TypeExpr::Scalar(elem, _) = t else {
                    return Err(Diagnostic::error(t.span(), "array elements must be scalars").label("here"));
                };
                let count = shape.iter().try_fold(1usize, |a, d| a.checked_mul(*d)).unwrap_or(usize::MAX);
                if count > (64 << 20) {
                    return Err(Diagnostic::error(c.ty.span(), "constant array is too large").label("more than 64 Mi elements"));
                }
                let mut bytes = Vec::with_capacity(count * elem.size());
                self.eval_const_array(&c.value, &shape, *elem, &mut bytes)?;
                Ok(ConstVal::Array(ConstArray { elem: *elem, shape, bytes: bytes.into() }))
            }
            TypeExpr::Unit(s) | TypeExpr::ArrayRef { span: s, .. } => {
                Err(Diagnostic::error(*s, "constants are scalars or fixed-size arrays")
                    .label("unsupported type")
                    .help("write `const N: u32 = 4;` or `static T: [f32; 3] = [..];`"))
            }
        }
    }

    fn eval_const_array(&mut self, e: &ast::Expr, shape: &[usize], elem: Scalar, out: &mut Vec<u8>) -> CResult<()> {
        let Some((&n, rest)) = shape.split_first() else {
            let v = self.eval_const(e, Some(elem))?;
            out.extend_from_slice(&v.to_le_bytes());
            return Ok(());
        };
        match &e.kind {
            A::ArrayLit(items) => {
                if items.len() != n {
                    return Err(Diagnostic::error(e.span, format!("expected an array of {n} elements, found {}", items.len()))
                        .label("wrong length"));
                }
                for x in items {
                    self.eval_const_array(x, rest, elem, out)?;
                }
                Ok(())
            }
            A::ArrayRepeat(x, len) => {
                let l = self.eval_const(len, Some(Scalar::Usize))?;
                if l.as_i128() != Some(n as i128) {
                    return Err(Diagnostic::error(len.span, format!("expected an array of {n} elements")).label("wrong length"));
                }
                let start = out.len();
                self.eval_const_array(x, rest, elem, out)?;
                let chunk = out[start..].to_vec();
                for _ in 1..n {
                    out.extend_from_slice(&chunk);
                }
                Ok(())
            }
            _ => Err(Diagnostic::error(e.span, "expected an array literal").label("write `[a, b, ..]` or `[x; n]`")),
        }
    }

    /// Evaluates a constant expression; `expected` types its literals.
    fn eval_const(&mut self, e: &ast::Expr, expected: Option<Scalar>) -> CResult<ScalarValue> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.eval_const_inner(e, expected))
    }

    fn eval_const_inner(&mut self, e: &ast::Expr, expected: Option<Scalar>) -> CResult<ScalarValue> {
        let not_const = || {
            Diagnostic::error(e.span, "expected a constant expression")
                .label("not constant")
                .help("constants are built from literals, other constants, arithmetic and `as` casts")
        };
        let check_ty = |v: ScalarValue| -> CResult<ScalarValue> {
            match expected {
                Some(t) if t != v.ty() => Err(Diagnostic::error(e.span, format!("mismatched types: expected `{t}`, found `{}`", v.ty()))
                    .label(format!("expected `{t}`"))),
                _ => Ok(v),
            }
        };
        match &e.kind {
            A::Lit(l) => {
                let v = lit_value(*l, false, expected, e.span)?;
                check_ty(v)
            }
            A::Unary(UnOp::Neg, x) if matches!(x.kind, A::Lit(Lit::Int(..) | Lit::Float { .. })) => {
                let A::Lit(l) = x.kind else { return Err(not_const()) };
                let v = lit_value(l, true, expected, e.span)?;
                check_ty(v)
            }
            A::Path(n) => {
                if self.const_item(&n.name).is_none() {
                    return Err(not_const().label(format!("`{}` is not a constant", n.name)));
                }
                match self.const_value(&n.name, n.span)? {
                    ConstVal::Scalar(v) => check_ty(v),
                    ConstVal::Array(_) => {
                        Err(Diagnostic::error(e.span, format!("`{}` is an array, expected a scalar", n.name)).label("array"))
                    }
                }
            }
            A::Unary(op, x) => {
                let v = self.eval_const(x, expected)?;
                fold_unary(*op, v).ok_or_else(|| {
                    Diagnostic::error(e.span, format!("cannot apply `{}` to `{v}` in a constant", if *op == UnOp::Neg { "-" } else { "!" }))
                        .label(if v.ty().is_signed() { "overflows" } else { "not defined for this type" })
                })
            }
            A::Binary(op, a, b) => {
                let (va, vb) = if op.is_comparison() {
                    let va = self.eval_const(a, None)?;
                    (va, self.eval_const(b, Some(va.ty()))?)
                } else if op.is_shift() {
                    (self.eval_const(a, expected)?, self.eval_const(b, None)?)
                } else {
                    let va = self.eval_const(a, expected)?;
                    (va, self.eval_const(b, Some(va.ty()))?)
                };
                let r = fold_binary(*op, va, vb).map_err(|m| Diagnostic::error(e.span, m).label("in this constant"))?;
                check_ty(r)
            }
            A::Logic(op, a, b) => {
                let va = self.eval_const(a, Some(Scalar::Bool))?;
                let vb = self.eval_const(b, Some(Scalar::Bool))?;
                let (ScalarValue::Bool(x), ScalarValue::Bool(y)) = (va, vb) else { return Err(not_const()) };
                check_ty(ScalarValue::Bool(if *op == LogicOp::And { x && y } else { x || y }))
            }
            A::Cast(x, t) => {
                let TypeExpr::Scalar(s, _) = t else {
                    return Err(Diagnostic::error(t.span(), "casts are to scalar types").label("here"));
                };
                let v = self.eval_const(x, None)?;
                let r = fold_cast(v, *s)
                    .ok_or_else(|| Diagnostic::error(e.span, format!("cannot cast `{}` to `{s}`", v.ty())).label("invalid cast"))?;
                check_ty(r)
            }
            A::Block(b) if b.stmts.is_empty() && b.tail.is_some() => self.eval_const(b.tail.as_ref().ok_or_else(not_const)?, expected),
            _ => Err(not_const()),
        }
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

fn int_range(s: Scalar) -> (i128, i128) {
    let bits = s.bits();
    if s.is_signed() { (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1) } else { (0, (1i128 << bits) - 1) }
}

fn int_value(s: Scalar, v: i128) -> ScalarValue {
    let mask: u128 = if s.bits() >= 64 { u64::MAX as u128 } else { (1u128 << s.bits()) - 1 };
    ScalarValue::Int(s, (v as u128 & mask) as u64)
}

fn lit_value(l: Lit, neg: bool, expected: Option<Scalar>, span: Span) -> CResult<ScalarValue> {
    match l {
        Lit::Bool(b) => Ok(ScalarValue::Bool(b)),
        Lit::Int(v, suffix) => {
            let s = suffix.or(expected.filter(|e| e.is_int())).unwrap_or(Scalar::I32);
            let (lo, hi) = int_range(s);
            match signed_literal(v, neg) {
                Some(val) if val >= lo && val <= hi => Ok(int_value(s, val)),
                _ => Err(lit_range_error(s, span, neg, v)),
            }
        }
        Lit::Float { f64: v64, f32: v32, suffix } => {
            let s = suffix.or(expected.filter(|e| e.is_float())).unwrap_or(Scalar::F64);
            if s == Scalar::F32 && v32.is_infinite() && v64.is_finite() {
                return Err(Diagnostic::error(span, "literal out of range for `f32`")
                    .label("rounds to infinity as an `f32`")
                    .help("use `f64`"));
            }
            let sign = if neg { -1.0 } else { 1.0 };
            Ok(if s == Scalar::F32 { ScalarValue::F32(sign as f32 * v32) } else { ScalarValue::F64(sign * v64) })
        }
    }
}

/// The value of an integer literal, negated if written with `-`; `None` beyond i128.
fn signed_literal(v: u128, neg: bool) -> Option<i128> {
    if neg { (v <= 1u128 << 127).then(|| (v as i128).wrapping_neg()) } else { i128::try_from(v).ok() }
}

fn lit_range_error(s: Scalar, span: Span, neg: bool, v: u128) -> Diagnostic {
    let (lo, hi) = int_range(s);
    let d = Diagnostic::error(span, format!("literal out of range for `{s}`"))
        .label(format!("does not fit in `{s}`"))
        .note(format!("the literal `{}{v}` does not fit into the type `{s}` whose range is `{lo}..={hi}`", if neg { "-" } else { "" }));
    if neg && !s.is_signed() {
        d.help(format!("`{s}` is unsigned; use a signed type such as `i64`"))
    } else {
        d.help("use a wider type, such as `i64` or `u64`")
    }
}

fn fold_unary(op: UnOp, v: ScalarValue) -> Option<ScalarValue> {
    Some(match (op, v) {
        (UnOp::Neg, ScalarValue::F32(x)) => ScalarValue::F32(-x),
        (UnOp::Neg, ScalarValue::F64(x)) => ScalarValue::F64(-x),
        (UnOp::Neg, ScalarValue::Int(s, _)) if s.is_signed() => {
            let n = -v.as_i128()?;
            let (lo, hi) = int_range(s);
            if n < lo || n > hi {
                return None;
            }
            int_value(s, n)
        }
        (UnOp::Not, ScalarValue::Bool(b)) => ScalarValue::Bool(!b),
        (UnOp::Not, ScalarValue::Int(s, x)) => int_value(s, !(x as i128)),
        _ => return None,
    })
}

fn fold_binary(op: BinOp, a: ScalarValue, b: ScalarValue) -> Result<ScalarValue, String> {
    use ScalarValue as V;
    let mismatch = || format!("mismatched types in constant: `{}` {} `{}`", a.ty(), op.symbol(), b.ty());
    if op.is_shift() {
        let (V::Int(s, _), V::Int(..)) = (a, b) else { return Err(mismatch()) };
        let x = a.as_i128().unwrap_or(0);
        let n = b.as_i128().unwrap_or(0);
        if n < 0 || n >= s.bits() as i128 {
            return Err(format!("shift by {n} overflows `{s}`"));
        }
        let r = if op == BinOp::Shl { x << n } else { x >> n };
        return Ok(int_value(s, r));
    }
    if a.ty() != b.ty() {
        return Err(mismatch());
    }
    if op.is_comparison() {
        let ord = match (a, b) {
            (V::F32(x), V::F32(y)) => x.partial_cmp(&y),
            (V::F64(x), V::F64(y)) => x.partial_cmp(&y),
            _ => a.as_i128().partial_cmp(&b.as_i128()),
        };
        use std::cmp::Ordering::*;
        let r = match op {
            BinOp::Eq => ord == Some(Equal),
            BinOp::Ne => ord != Some(Equal),
            BinOp::Lt => ord == Some(Less),
            BinOp::Le => matches!(ord, Some(Less | Equal)),
            BinOp::Gt => ord == Some(Greater),
            _ => matches!(ord, Some(Greater | Equal)),
        };
        return Ok(V::Bool(r));
    }
    match (a, b) {
        (V::F32(x), V::F32(y)) => Ok(V::F32(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            _ => return Err(format!("`{}` is not defined for `f32`", op.symbol())),
        })),
        (V::F64(x), V::F64(y)) => Ok(V::F64(match op {
            BinOp::Add => x + y,
            BinOp::Sub => x - y,
            BinOp::Mul => x * y,
            BinOp::Div => x / y,
            BinOp::Rem => x % y,
            _ => return Err(format!("`{}` is not defined for `f64`", op.symbol())),
        })),
        (V::Bool(x), V::Bool(y)) => Ok(V::Bool(match op {
            BinOp::BitAnd => x & y,
            BinOp::BitOr => x | y,
            BinOp::BitXor => x ^ y,
            _ => return Err(format!("`{}` is not defined for `bool`", op.symbol())),
        })),
        (V::Int(s, _), V::Int(..)) => {
            let (x, y) = (a.as_i128().unwrap_or(0), b.as_i128().unwrap_or(0));
            let r = match op {
                BinOp::Add => x + y,
                BinOp::Sub => x - y,
                BinOp::Mul => x.checked_mul(y).ok_or_else(|| format!("overflow in constant of type `{s}`"))?,
                BinOp::Div | BinOp::Rem if y == 0 => return Err("division by zero in constant".to_string()),
                BinOp::Div => x / y,
                BinOp::Rem => x % y,
                BinOp::BitAnd => x & y,
                BinOp::BitOr => x | y,
                BinOp::BitXor => x ^ y,
                _ => return Err(mismatch()),
            };
            let (lo, hi) = int_range(s);
            if r < lo || r > hi {
                return Err(format!("overflow in constant of type `{s}`"));
            }
            Ok(int_value(s, r))
        }
        _ => Err(mismatch()),
    }
}

fn fold_cast(v: ScalarValue, to: Scalar) -> Option<ScalarValue> {
    use ScalarValue as V;
    Some(match (v, to) {
        (_, Scalar::Bool) => match v {
            V::Bool(_) => v,
            _ => return None,
        },
        (V::Bool(b), t) if t.is_int() => int_value(t, b as i128),
        (V::Bool(_), _) => return None,
        (V::Int(..), t) if t.is_int() => int_value(t, v.as_i128()?),
        (V::Int(..), Scalar::F32) => V::F32(v.as_i128()? as f32),
        (V::Int(..), _) => V::F64(v.as_i128()? as f64),
        (V::F32(x), Scalar::F32) => V::F32(x),
        (V::F32(x), Scalar::F64) => V::F64(x as f64),
        (V::F64(x), Scalar::F32) => V::F32(x as f32),
        (V::F64(x), Scalar::F64) => V::F64(x),
        (V::F32(x), t) => float_to_int(x as f64, t),
        (V::F64(x), t) => float_to_int(x, t),
    })
}

/// Rust's saturating float-to-int `as` cast.
fn float_to_int(x: f64, t: Scalar) -> ScalarValue {
    let (lo, hi) = int_range(t);
    let v = if x.is_nan() {
        0
    } else if x <= lo as f64 {
        lo
    } else if x >= hi as f64 {
        hi
    } else {
        x as i128
    };
    int_value(t, v)
}

// ---------------------------------------------------------------------------------------------
// Type inference.

type H = u32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Any,
    Int,
    Float,
}

#[derive(Clone, Copy, Debug)]
enum Node {
    Link(H),
    Known(Ty),
    Var(Kind),
}

#[derive(Default)]
struct Unifier {
    nodes: Vec<Node>,
}

impl Unifier {
    fn var(&mut self, k: Kind) -> H {
        self.nodes.push(Node::Var(k));
        (self.nodes.len() - 1) as H
    }
    fn known(&mut self, t: Ty) -> H {
        self.nodes.push(Node::Known(t));
        (self.nodes.len() - 1) as H
    }
    fn find(&mut self, h: H) -> H {
        let mut r = h;
        while let Node::Link(n) = self.nodes[r as usize] {
            r = n;
        }
        let mut c = h;
        while let Node::Link(n) = self.nodes[c as usize] {
            self.nodes[c as usize] = Node::Link(r);
            c = n;
        }
        r
    }
    fn get(&mut self, h: H) -> Node {
        let r = self.find(h);
        self.nodes[r as usize]
    }
    fn ty(&mut self, h: H) -> Option<Ty> {
        match self.get(h) {
            Node::Known(t) => Some(t),
            _ => None,
        }
    }
    fn describe(&mut self, h: H) -> String {
        match self.get(h) {
            Node::Known(t) => t.to_string(),
            Node::Var(Kind::Int) => "{integer}".into(),
            Node::Var(Kind::Float) => "{float}".into(),
            Node::Var(Kind::Any) => "_".into(),
            Node::Link(_) => "_".into(),
        }
    }
    fn unify(&mut self, a: H, b: H) -> bool {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra == rb {
            return true;
        }
        match (self.nodes[ra as usize], self.nodes[rb as usize]) {
            (Node::Known(Ty::Never), _) | (_, Node::Known(Ty::Never)) => true,
            (Node::Known(x), Node::Known(y)) => match (x, y) {
                (Ty::Array(p), Ty::Array(q)) => p.elem == q.elem && p.ndim == q.ndim,
                _ => x == y,
            },
            (Node::Var(k), Node::Known(t)) => {
                if kind_accepts(k, t) {
                    self.nodes[ra as usize] = Node::Link(rb);
                    true
                } else {
                    false
                }
            }
            (Node::Known(t), Node::Var(k)) => {
                if kind_accepts(k, t) {
                    self.nodes[rb as usize] = Node::Link(ra);
                    true
                } else {
                    false
                }
            }
            (Node::Var(k1), Node::Var(k2)) => {
                let k = match (k1, k2) {
                    (Kind::Any, k) | (k, Kind::Any) => k,
                    (a, b) if a == b => a,
                    _ => return false,
                };
                self.nodes[ra as usize] = Node::Link(rb);
                self.nodes[rb as usize] = Node::Var(k);
                true
            }
            _ => false,
        }
    }
    /// The settled type: variables default like Rust's (`i32`, `f64`); `None` if unconstrained.
    fn settle(&mut self, h: H) -> Option<Ty> {
        let r = self.find(h);
        match self.nodes[r as usize] {
            Node::Known(t) => Some(t),
            Node::Var(Kind::Int) => {
                self.nodes[r as usize] = Node::Known(Ty::Scalar(Scalar::I32));
                Some(Ty::Scalar(Scalar::I32))
            }
            Node::Var(Kind::Float) => {
                self.nodes[r as usize] = Node::Known(Ty::Scalar(Scalar::F64));
                Some(Ty::Scalar(Scalar::F64))
            }
            _ => None,
        }
    }
}

fn kind_accepts(k: Kind, t: Ty) -> bool {
    match k {
        Kind::Any => !matches!(t, Ty::Never),
        Kind::Int => matches!(t, Ty::Scalar(s) if s.is_int()),
        Kind::Float => matches!(t, Ty::Scalar(s) if s.is_float()),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Numeric,
    Int,
    Float,
    SignedOrFloat,
    IntOrBool,
    Scalar,
}

impl Class {
    fn accepts(self, s: Scalar) -> bool {
        match self {
            Class::Numeric => s.is_numeric(),
            Class::Int => s.is_int(),
            Class::Float => s.is_float(),
            Class::SignedOrFloat => s.is_signed() || s.is_float(),
            Class::IntOrBool => s.is_int() || s == Scalar::Bool,
            Class::Scalar => true,
        }
    }
    fn kind_ok(self, k: Kind) -> bool {
        match (self, k) {
            (_, Kind::Any) => true,
            (Class::Float, Kind::Int) | (Class::Int | Class::IntOrBool, Kind::Float) => false,
            _ => true,
        }
    }
    fn describe(self) -> &'static str {
        match self {
            Class::Numeric => "a number",
            Class::Int => "an integer",
            Class::Float => "a float (`f32` or `f64`)",
            Class::SignedOrFloat => "a signed integer or a float",
            Class::IntOrBool => "an integer or `bool`",
            Class::Scalar => "a scalar",
        }
    }
}

#[derive(Debug)]
enum Oblig {
    Class { h: H, class: Class, span: Span, what: String },
    Cast { h: H, to: Scalar, span: Span },
    Settled { h: H, span: Span },
}

struct LocalInfo {
    name: String,
    ty: H,
    mutable: bool,
    /// `let x;` without initialiser: assignments initialise it.
    deferred_init: bool,
    span: Span,
    /// Array params and captured arrays, for messages about writes.
    declared_readonly: bool,
}

struct LoopInfo {
    label: Option<String>,
    id: LoopId,
    is_loop: bool,
    break_ty: Option<H>,
    has_break: bool,
}

struct FnCx<'c, 'm> {
    mcx: &'c mut ModuleCx<'m>,
    scope_items: Option<&'c FactoryScope>,
    u: Unifier,
    locals: Vec<LocalInfo>,
    scope: Vec<(String, LocalId)>,
    loops: Vec<LoopInfo>,
    next_loop: usize,
    ret: H,
    obligations: Vec<Oblig>,
    callees: Vec<FuncId>,
    captures: Vec<CaptureId>,
    shared_sites: usize,
    uses_libdevice: bool,
    uses_block_sync: bool,
}

type CExpr = Expr<H>;
type CBlock = Block<H>;

impl<'c, 'm> FnCx<'c, 'm> {
    fn new(mcx: &'c mut ModuleCx<'m>, scope_items: Option<&'c FactoryScope>) -> Self {
        let mut u = Unifier::default();
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
        }
    }

    fn declare(&mut self, name: &ast::Ident, ty: H, mutable: bool, deferred_init: bool) -> LocalId {
        let id = self.locals.len();
        let declared_readonly = matches!(self.u.ty(ty), Some(Ty::Array(a)) if !a.writable);
        self.locals.push(LocalInfo { name: name.name.clone(), ty, mutable, deferred_init, span: name.span, declared_readonly });
        if name.name != "_" {
            self.scope.push((name.name.clone(), id));
        }
        id
    }

    fn lookup_local(&self, name: &str) -> Option<LocalId> {
        self.scope.iter().rev().find(|(n, _)| n == name).map(|(_, id)| *id)
    }

    fn mk(&mut self, kind: ExprKind<H>, ty: Ty, span: Span) -> CExpr {
        let ty = self.u.known(ty);
        Expr { kind, ty, span }
    }

    fn need(&mut self, h: H, class: Class, span: Span, what: impl Into<String>) -> CResult<()> {
        let what = what.into();
        match self.u.get(h) {
            Node::Known(Ty::Scalar(s)) if !class.accepts(s) => Err(self.class_error(s.name(), class, span, &what)),
            Node::Known(Ty::Never) => Ok(()),
            Node::Known(t @ (Ty::Unit | Ty::Array(_))) => Err(self.class_error(&t.to_string(), class, span, &what)),
            Node::Var(k) if !class.kind_ok(k) => {
                let d = self.u.describe(h);
                Err(self.class_error(&d, class, span, &what))
            }
            _ => {
                self.obligations.push(Oblig::Class { h, class, span, what });
                Ok(())
            }
        }
    }

    fn class_error(&self, found: &str, class: Class, span: Span, what: &str) -> Diagnostic {
        Diagnostic::error(span, format!("{what} cannot be applied to type `{found}`"))
            .label(format!("expected {}, found `{found}`", class.describe()))
    }

    fn mismatch(&mut self, span: Span, expected: H, found: H, context: &str) -> Diagnostic {
        let (e, f) = (self.u.describe(expected), self.u.describe(found));
        let mut d = Diagnostic::error(span, format!("mismatched types: expected `{e}`, found `{f}`"))
            .label(format!("expected `{e}`{context}"))
            .note("kache follows Rust: numbers are never converted implicitly");
        if is_num(&e) && is_num(&f) {
            d = d.help(format!("convert with `as`: `(..) as {}`", if e.starts_with('{') { "T" } else { &e }));
        }
        d
    }

    fn unify_or(&mut self, span: Span, expected: H, found: H, context: &str) -> CResult<()> {
        if self.u.unify(expected, found) { Ok(()) } else { Err(self.mismatch(span, expected, found, context)) }
    }

    // --- functions ---

    fn check_fn_body(&mut self, f: &ast::FnItem, id: FuncId, kind: FuncKind, ret: Ty) -> CResult<Func> {
        let _ = id;
        self.ret = self.u.known(ret);
        for p in &f.params {
            let t = type_of_decl(p.ty.as_ref().ok_or_else(|| Diagnostic::error(p.span, "missing type").label("here"))?)?;
            let h = self.u.known(t);
            self.declare(&p.name, h, p.mutable, false);
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
            return Err(d);
        }
        self.finish(f.name.name.clone(), kind, params, body, f.name.span)
    }

    #[allow(clippy::too_many_arguments)]
    fn check_closure_body(
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
                    let ty = type_of_decl(t)?;
                    if let Some((want, _)) = exp {
                        if want.get(i).is_some_and(|w| !same_shape(*w, ty)) {
                            return Err(Diagnostic::error(
                                t.span(),
                                format!("closure parameter has type `{ty}` but the factory's type says `{}`", want[i]),
                            )
                            .label("mismatched parameter type"));
                        }
                    }
                    self.u.known(ty)
                }
                (None, Some((want, _))) => self.u.known(want[i]),
                (None, None) if is_kernel => {
                    return Err(Diagnostic::error(p.span, "kernel closure parameters need type annotations")
                        .label("write `name: Type`")
                        .help("the parameters of a kernel closure are its launch signature"));
                }
                (None, None) => self.u.var(Kind::Any),
            };
            if matches!(self.u.ty(h), Some(Ty::Unit)) {
                return Err(Diagnostic::error(p.span, "parameters cannot have type `()`").label("here"));
            }
            self.declare(&p.name, h, p.mutable, false);
            self.obligations.push(Oblig::Settled { h, span: p.span });
        }
        self.ret = match (ret, &expected) {
            (Some(t), _) => {
                let t = type_of_decl(t)?;
                self.u.known(t)
            }
            (None, Some((_, r))) => self.u.known(*r),
            (None, None) if is_kernel => self.u.known(Ty::Unit),
            (None, None) => self.u.var(Kind::Any),
        };
        let body_e = self.expr(body)?;
        let bt = body_e.ty;
        if !self.u.unify(self.ret, bt) {
            return Err(self.mismatch(body.span, self.ret, bt, " as the closure's return type"));
        }
        if let Some(Ty::Array(_)) = self.u.ty(self.ret) {
            return Err(Diagnostic::error(body.span, "closures cannot return arrays").label("returns an array"));
        }
        self.obligations.push(Oblig::Settled { h: self.ret, span });
        let block = Block { stmts: Vec::new(), tail: Some(Box::new(body_e)) };
        let name_span = span;
        self.finish(name.to_string(), kind, params.len(), block, name_span)
    }

    fn finish(&mut self, name: String, kind: FuncKind, params: usize, body: CBlock, span: Span) -> CResult<Func> {
        // Discharge obligations in order (earliest source position first gives the first error).
        let obligations = std::mem::take(&mut self.obligations);
        for o in &obligations {
            if let Oblig::Class { h, .. } | Oblig::Cast { h, .. } = o {
                self.u.settle(*h);
            }
        }
        for o in obligations {
            match o {
                Oblig::Class { h, class, span, what } => match self.u.settle(h) {
                    Some(Ty::Scalar(s)) if !class.accepts(s) => return Err(self.class_error(s.name(), class, span, &what)),
                    Some(Ty::Scalar(_)) | Some(Ty::Never) => {}
                    Some(t) => return Err(self.class_error(&t.to_string(), class, span, &what)),
                    None => {
                        return Err(Diagnostic::error(span, "type annotations needed")
                            .label("cannot infer the type of this value")
                            .help("annotate the variable: `let x: f32 = ..`"));
                    }
                },
                Oblig::Cast { h, to, span } => match self.u.settle(h) {
                    Some(Ty::Scalar(from)) => {
                        let ok = match (from, to) {
                            (_, Scalar::Bool) => from == Scalar::Bool,
                            (Scalar::Bool, t) => t.is_int(),
                            _ => true,
                        };
                        if !ok {
                            let mut d =
                                Diagnostic::error(span, format!("invalid cast from `{from}` to `{to}`")).label("not a valid `as` cast");
                            if to == Scalar::Bool {
                                d = d.help("compare instead: `x != 0`");
                            }
                            return Err(d);
                        }
                    }
                    Some(Ty::Never) => {}
                    Some(t) => {
                        return Err(Diagnostic::error(span, format!("invalid cast from `{t}` to `{to}`")).label("only scalars can be cast"));
                    }
                    None => return Err(Diagnostic::error(span, "type annotations needed").label("cannot infer the type of this value")),
                },
                Oblig::Settled { h, span } => {
                    if self.u.settle(h).is_none() {
                        return Err(Diagnostic::error(span, "type annotations needed")
                            .label("cannot infer the type")
                            .help("annotate it: `let x: f32 = ..` or `|i: usize| ..`"));
                    }
                }
            }
        }
        let mut locals = Vec::new();
        for i in 0..self.locals.len() {
            let h = self.locals[i].ty;
            let Some(ty) = self.u.settle(h) else {
                return Err(Diagnostic::error(self.locals[i].span, "type annotations needed")
                    .label(format!("cannot infer the type of `{}`", self.locals[i].name))
                    .help("annotate it: `let x: f32 = ..`"));
            };
            locals.push(LocalDecl { name: self.locals[i].name.clone(), ty });
        }
        let ret = self.u.settle(self.ret).unwrap_or(Ty::Unit);
        let body = self.resolve_block(body)?;
        if let Some((l, used)) = super::assign::first_unassigned_use(&body, params, locals.len()) {
            let info = &self.locals[l];
            return Err(Diagnostic::error(used, format!("used binding `{}` isn't initialized", info.name))
                .label(format!("`{}` used here but it isn't initialized on every path to here", info.name))
                .secondary(info.span, "binding declared here but left uninitialized")
                .help(format!("give it a value where it is declared: `let {} = ..;`, or assign it on every path first", info.name)));
        }
        let once: Vec<bool> = self.locals.iter().map(|l| !l.mutable && l.deferred_init).collect();
        if let Some((l, at)) = super::assign::first_reassignment(&body, &once) {
            let info = &self.locals[l];
            return Err(Diagnostic::error(at, format!("cannot assign twice to immutable variable `{}`", info.name))
                .label("cannot assign twice: it may already have a value here")
                .secondary(info.span, "declared here without `mut`")
                .help(format!("make it mutable: `let mut {}`", info.name)));
        }
        // Float `%` is libdevice's fmod on the GPU.
        visit_block(&body, &mut |e| {
            let float_rem = match &e.kind {
                ExprKind::Binary(BinOp::Rem, a, _) | ExprKind::CompoundAssign(BinOp::Rem, _, a) => {
                    a.ty.scalar().is_some_and(|s| s.is_float())
                }
                _ => false,
            };
            self.uses_libdevice |= float_rem;
        });
        Ok(Func {
            name,
            kind,
            params,
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

    // --- resolution of inferred types into the final IR ---

    fn rty(&mut self, h: H, span: Span) -> CResult<Ty> {
        self.u.settle(h).ok_or_else(|| Diagnostic::error(span, "type annotations needed").label("cannot infer the type of this expression"))
    }

    fn resolve_block(&mut self, b: CBlock) -> CResult<Block> {
        let mut stmts = Vec::with_capacity(b.stmts.len());
        for s in b.stmts {
            stmts.push(match s {
                Stmt::Let(l, e) => Stmt::Let(l, e.map(|e| self.resolve(e)).transpose()?),
                Stmt::Expr(e) => Stmt::Expr(self.resolve(e)?),
            });
        }
        let tail = match b.tail {
            Some(t) => Some(Box::new(self.resolve(*t)?)),
            None => None,
        };
        Ok(Block { stmts, tail })
    }

    fn resolve_box(&mut self, e: Box<CExpr>) -> CResult<Box<Expr>> {
        Ok(Box::new(self.resolve(*e)?))
    }

    fn resolve_vec(&mut self, v: Vec<CExpr>) -> CResult<Vec<Expr>> {
        v.into_iter().map(|e| self.resolve(e)).collect()
    }

    fn resolve_place(&mut self, p: Place<H>) -> CResult<Place> {
        Ok(match p {
            Place::Local(l) => Place::Local(l),
            Place::Index(a, i) => Place::Index(self.resolve_box(a)?, self.resolve_vec(i)?),
        })
    }

    fn resolve(&mut self, e: CExpr) -> CResult<Expr> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.resolve_inner(e))
    }

    fn resolve_inner(&mut self, e: CExpr) -> CResult<Expr> {
        let span = e.span;
        let ty = self.rty(e.ty, span)?;
        use ExprKind as K;
        let kind = match e.kind {
            K::PendingLit(l) => {
                let Ty::Scalar(s) = ty else {
                    return Err(Diagnostic::error(span, "a literal here has no scalar type").label("here"));
                };
                K::Lit(match l.int {
                    Some(v) if s.is_int() => {
                        let (lo, hi) = int_range(s);
                        match signed_literal(v, l.neg) {
                            Some(val) if val >= lo && val <= hi => int_value(s, val),
                            _ => return Err(lit_range_error(s, span, l.neg, v)),
                        }
                    }
                    _ if s == Scalar::F32 && l.f32.is_infinite() && l.f64.is_finite() => {
                        return Err(Diagnostic::error(span, "literal out of range for `f32`")
                            .label("rounds to infinity as an `f32`")
                            .note(format!("the largest `f32` is {:e}", f32::MAX))
                            .help("use `f64`, or `f32::INFINITY` if infinity is meant"));
                    }
                    _ if s == Scalar::F32 => ScalarValue::F32(if l.neg { -l.f32 } else { l.f32 }),
                    _ if s == Scalar::F64 => ScalarValue::F64(if l.neg { -l.f64 } else { l.f64 }),
                    _ => return Err(Diagnostic::error(span, format!("a literal cannot have type `{s}`")).label("here")),
                })
            }
            K::Lit(v) => K::Lit(v),
            K::Unit => K::Unit,
            K::Local(l) => K::Local(l),
            K::Capture(c) => K::Capture(c),
            K::Unary(op, x) => K::Unary(op, self.resolve_box(x)?),
            K::Binary(op, a, b) => K::Binary(op, self.resolve_box(a)?, self.resolve_box(b)?),
            K::Logic(op, a, b) => K::Logic(op, self.resolve_box(a)?, self.resolve_box(b)?),
            K::Cast(x) => K::Cast(self.resolve_box(x)?),
            K::Index(a, i) => K::Index(self.resolve_box(a)?, self.resolve_vec(i)?),
            K::Assign(p, v) => K::Assign(self.resolve_place(p)?, self.resolve_box(v)?),
            K::CompoundAssign(op, p, v) => K::CompoundAssign(op, self.resolve_place(p)?, self.resolve_box(v)?),
            K::Call(f, args) => K::Call(f, self.resolve_vec(args)?),
            K::Builtin(b, args) => K::Builtin(b, self.resolve_vec(args)?),
            K::SharedArray { elem, len, site } => K::SharedArray { elem, len, site },
            K::DynSharedArray(s) => K::DynSharedArray(s),
            K::If(c, t, f) => K::If(self.resolve_box(c)?, self.resolve_block(t)?, f.map(|b| self.resolve_block(b)).transpose()?),
            K::Block(b) => K::Block(self.resolve_block(b)?),
            K::While(id, c, b) => K::While(id, self.resolve_box(c)?, self.resolve_block(b)?),
            K::Loop(id, b) => K::Loop(id, self.resolve_block(b)?),
            K::For { id, var, start, end, inclusive, step, body } => K::For {
                id,
                var,
                start: self.resolve_box(start)?,
                end: self.resolve_box(end)?,
                inclusive,
                step: step.map(|s| self.resolve_box(s)).transpose()?,
                body: self.resolve_block(body)?,
            },
            K::Break(id, v) => K::Break(id, v.map(|v| self.resolve_box(v)).transpose()?),
            K::Continue(id) => K::Continue(id),
            K::Return(v) => K::Return(v.map(|v| self.resolve_box(v)).transpose()?),
        };
        Ok(Expr { kind, ty, span })
    }

    // --- blocks and statements ---

    fn block(&mut self, b: &ast::Block) -> CResult<CBlock> {
        let mark = self.scope.len();
        let r = self.block_inner(b);
        self.scope.truncate(mark);
        r
    }

    fn block_inner(&mut self, b: &ast::Block) -> CResult<CBlock> {
        let mut stmts = Vec::new();
        for s in &b.stmts {
            match s {
                AStmt::Let { name, mutable, ty, init, span } => {
                    let ann = match ty {
                        Some(t) => {
                            let ty = type_of_decl(t)?;
                            if ty == Ty::Unit {
                                return Err(Diagnostic::error(t.span(), "variables of type `()` are not supported").label("here"));
                            }
                            Some((self.u.known(ty), t.span()))
                        }
                        None => None,
                    };
                    let init = match init {
                        Some(e) => {
                            if let A::Closure { .. } = e.kind {
                                return Err(closure_outside_factory(e.span));
                            }
                            Some(self.expr(e)?)
                        }
                        None => None,
                    };
                    let h = match (&ann, &init) {
                        (Some((a, aspan)), Some(i)) => {
                            self.assign_compatible(*a, i, *aspan)?;
                            *a
                        }
                        (Some((a, _)), None) => *a,
                        (None, Some(i)) => {
                            if let Some(Ty::Unit) = self.u.ty(i.ty) {
                                return Err(
                                    Diagnostic::error(i.span, "this expression has type `()`, which cannot be stored").label("no value")
                                );
                            }
                            if let Some(Ty::Never) = self.u.ty(i.ty) { self.u.var(Kind::Any) } else { i.ty }
                        }
                        (None, None) => {
                            let v = self.u.var(Kind::Any);
                            self.obligations.push(Oblig::Settled { h: v, span: *span });
                            v
                        }
                    };
                    let deferred = init.is_none();
                    let id = self.declare(name, h, *mutable, deferred);
                    stmts.push(Stmt::Let(id, init));
                }
                AStmt::Expr(e, semi) => {
                    if let A::Closure { .. } = e.kind {
                        return Err(closure_outside_factory(e.span));
                    }
                    let x = self.expr(e)?;
                    if !semi {
                        // A block-like expression statement without `;` must be `()`, like Rust.
                        let unit = self.u.known(Ty::Unit);
                        if !self.u.unify(unit, x.ty) {
                            let d = self.u.describe(x.ty);
                            return Err(Diagnostic::error(e.span, format!("mismatched types: expected `()`, found `{d}`"))
                                .label("this value is not used")
                                .help("add `;` after it, or make it the last expression of the block"));
                        }
                    }
                    stmts.push(Stmt::Expr(x));
                }
            }
        }
        let tail = match &b.tail {
            Some(t) => {
                if let A::Closure { .. } = t.kind {
                    return Err(closure_outside_factory(t.span));
                }
                Some(Box::new(self.expr(t)?))
            }
            None => None,
        };
        Ok(Block { stmts, tail })
    }

    /// `let x: T = init` / argument passing: arrays by shape and writability, scalars by unification.
    fn assign_compatible(&mut self, want: H, got: &CExpr, span: Span) -> CResult<()> {
        match (self.u.ty(want), self.u.ty(got.ty)) {
            (Some(Ty::Array(w)), Some(Ty::Array(g))) => {
                if w.elem != g.elem || w.ndim != g.ndim {
                    return Err(self.mismatch(got.span, want, got.ty, ""));
                }
                if w.writable && !g.writable {
                    return Err(Diagnostic::error(got.span, "this array is read-only")
                        .label(format!("expected `{w}`, found `{g}`"))
                        .secondary(span, "requires a writable array"));
                }
                Ok(())
            }
            _ => self.unify_or(got.span, want, got.ty, ""),
        }
    }

    // --- expressions ---

    fn expr(&mut self, e: &ast::Expr) -> CResult<CExpr> {
        crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e))
    }

    fn expr_inner(&mut self, e: &ast::Expr) -> CResult<CExpr> {
        let span = e.span;
        match &e.kind {
            A::Lit(l) => self.lit(*l, false, span),
            A::Unit => Ok(self.mk(ExprKind::Unit, Ty::Unit, span)),
            A::Path(n) => self.path(n),
            A::Unary(op, x) => {
                if let (UnOp::Neg, A::Lit(l @ (Lit::Int(..) | Lit::Float { .. }))) = (op, &x.kind) {
                    let r = self.lit(*l, true, span)?;
                    self.need(r.ty, Class::SignedOrFloat, span, "unary `-`")?;
                    return Ok(r);
                }
                let x = self.expr(x)?;
                let (class, what) = match op {
                    UnOp::Neg => (Class::SignedOrFloat, "unary `-`"),
                    UnOp::Not => (Class::IntOrBool, "unary `!`"),
                };
                self.need(x.ty, class, span, what)?;
                let ty = x.ty;
                Ok(Expr { kind: ExprKind::Unary(*op, Box::new(x)), ty, span })
            }
            A::Binary(op, a, b) => {
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                self.binary(*op, a, b, span)
            }
            A::Logic(op, a, b) => {
                let a = self.expr(a)?;
                let b = self.expr(b)?;
                let t = self.u.known(Ty::Scalar(Scalar::Bool));
                let sym = if *op == LogicOp::And { "&&" } else { "||" };
                self.unify_or(a.span, t, a.ty, &format!(" (operands of `{sym}` are `bool`)"))?;
                self.unify_or(b.span, t, b.ty, &format!(" (operands of `{sym}` are `bool`)"))?;
                Ok(Expr { kind: ExprKind::Logic(*op, Box::new(a), Box::new(b)), ty: t, span })
            }
            A::Assign(lhs, rhs) => {
                let rhs = self.expr(rhs)?;
                let (place, pty) = self.place(lhs)?;
                self.unify_or(rhs.span, pty, rhs.ty, " (the type of the assigned place)")?;
                Ok(self.mk(ExprKind::Assign(place, Box::new(rhs)), Ty::Unit, span))
            }
            A::CompoundAssign(op, lhs, rhs) => {
                let rhs = self.expr(rhs)?;
                let (place, pty) = self.place(lhs)?;
                let what = format!("`{}=`", op.symbol());
                if op.is_shift() {
                    self.need(pty, Class::Int, lhs.span, &what)?;
                    self.need(rhs.ty, Class::Int, rhs.span, &what)?;
                } else {
                    self.unify_or(rhs.span, pty, rhs.ty, &format!(" (both sides of {what} have one type)"))?;
                    let class = if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) { Class::IntOrBool } else { Class::Numeric };
                    self.need(pty, class, span, &what)?;
                }
                Ok(self.mk(ExprKind::CompoundAssign(*op, place, Box::new(rhs)), Ty::Unit, span))
            }
            A::Cast(x, t) => {
                let x = self.expr(x)?;
                let TypeExpr::Scalar(to, _) = t else {
                    return Err(Diagnostic::error(t.span(), "`as` casts to scalar types only").label("not a scalar type"));
                };
                if let Some(Ty::Array(_) | Ty::Unit) = self.u.ty(x.ty) {
                    let d = self.u.describe(x.ty);
                    return Err(Diagnostic::error(span, format!("invalid cast from `{d}` to `{to}`")).label("only scalars can be cast"));
                }
                self.obligations.push(Oblig::Cast { h: x.ty, to: *to, span });
                Ok(self.mk(ExprKind::Cast(Box::new(x)), Ty::Scalar(*to), span))
            }
            A::Index { array, indices, multi } => {
                let (a, elem, idx) = self.index(array, indices, *multi, span)?;
                Ok(self.mk(ExprKind::Index(Box::new(a), idx), Ty::Scalar(elem), span))
            }
            A::Call { func, generics, args } => self.call(func, generics, args, span),
            A::MethodCall { receiver, method, args } => self.method(receiver, method, args, span),
            A::If(c, t, f) => self.if_expr(c, t, f.as_deref(), span),
            A::While(label, c, body) => {
                let c = self.expr(c)?;
                let b = self.u.known(Ty::Scalar(Scalar::Bool));
                self.unify_or(c.span, b, c.ty, " (the condition of `while`)")
                    .map_err(|d| d.help("conditions are `bool`: compare, for example `x != 0`"))?;
                let id = self.push_loop(label, false);
                let body = self.loop_body(body);
                self.loops.pop();
                let body = body?;
                Ok(self.mk(ExprKind::While(id, Box::new(c), body), Ty::Unit, span))
            }
            A::Loop(label, body) => {
                let id = self.push_loop(label, true);
                let body = self.loop_body(body);
                let info = self.loops.pop();
                let body = body?;
                let ty = match info {
                    Some(LoopInfo { break_ty: Some(h), .. }) => h,
                    Some(LoopInfo { has_break: true, .. }) => self.u.known(Ty::Unit),
                    _ => self.u.known(Ty::Never),
                };
                Ok(Expr { kind: ExprKind::Loop(id, body), ty, span })
            }
            A::For { label, var, start, end, inclusive, step, body } => {
                let s = self.expr(start)?;
                let en = self.expr(end)?;
                self.unify_or(en.span, s.ty, en.ty, " (both ends of a range have one type)")?;
                self.need(s.ty, Class::Int, start.span, "a `for` range")?;
                let step = match step {
                    Some(st) => {
                        let st = self.expr(st)?;
                        let u = self.u.known(Ty::Scalar(Scalar::Usize));
                        self.unify_or(st.span, u, st.ty, " (`step_by` takes a `usize`)")?;
                        Some(Box::new(st))
                    }
                    None => None,
                };
                let mark = self.scope.len();
                let v = self.declare(var, s.ty, false, false);
                let id = self.push_loop(label, false);
                let b = self.loop_body(body);
                self.loops.pop();
                self.scope.truncate(mark);
                let b = b?;
                Ok(self.mk(
                    ExprKind::For { id, var: v, start: Box::new(s), end: Box::new(en), inclusive: *inclusive, step, body: b },
                    Ty::Unit,
                    span,
                ))
            }
            A::Break(label, value) => {
                let i = self.find_loop(label.as_ref(), span, "break")?;
                let value = match value {
                    Some(v) => {
                        if !self.loops[i].is_loop {
                            return Err(Diagnostic::error(v.span, "`break` with a value is only allowed in `loop`")
                                .label("`while` and `for` loops have no value")
                                .help("remove the value, or use `loop`"));
                        }
                        let v = self.expr(v)?;
                        match self.loops[i].break_ty {
                            Some(h) => self.unify_or(v.span, h, v.ty, " (every `break` of a loop gives one type)")?,
                            None => self.loops[i].break_ty = Some(v.ty),
                        }
                        Some(Box::new(v))
                    }
                    None => {
                        if let Some(h) = self.loops[i].break_ty {
                            let unit = self.u.known(Ty::Unit);
                            self.unify_or(span, h, unit, " (every `break` of a loop gives one type)")?;
                        }
                        None
                    }
                };
                self.loops[i].has_break = true;
                let id = self.loops[i].id;
                Ok(self.mk(ExprKind::Break(id, value), Ty::Never, span))
            }
            A::Continue(label) => {
                let i = self.find_loop(label.as_ref(), span, "continue")?;
                let id = self.loops[i].id;
                Ok(self.mk(ExprKind::Continue(id), Ty::Never, span))
            }
            A::Return(v) => {
                let v = match v {
                    Some(v) => {
                        let x = self.expr(v)?;
                        let r = self.ret;
                        self.unify_or(x.span, r, x.ty, " (the return type)")?;
                        Some(Box::new(x))
                    }
                    None => {
                        let unit = self.u.known(Ty::Unit);
                        let r = self.ret;
                        if !self.u.unify(r, unit) {
                            let d = self.u.describe(r);
                            return Err(Diagnostic::error(span, format!("`return` needs a value of type `{d}`")).label("no value returned"));
                        }
                        None
                    }
                };
                Ok(self.mk(ExprKind::Return(v), Ty::Never, span))
            }
            A::Block(b) => {
                let b = self.block(b)?;
                let ty = self.body_type(&b);
                Ok(Expr { kind: ExprKind::Block(b), ty, span })
            }
            A::Closure { .. } => Err(closure_outside_factory(span)),
            A::RefMut(_) => Err(Diagnostic::error(span, "`&mut` is only written as the first argument of an atomic")
                .label("not supported here")
                .help("arrays are passed by name; `atomic_add(&mut a[i], v)` takes a reference to an element")),
            A::ArrayLit(_) | A::ArrayRepeat(..) => {
                Err(Diagnostic::error(span, "array literals are only supported in `static` and `const` items")
                    .label("not supported here")
                    .help("declare a `static` array, or use `shared_array::<T, N>()` for scratch memory"))
            }
        }
    }

    /// The type of a block: its tail's, `!` if a statement diverges, else `()`.
    fn body_type(&mut self, b: &CBlock) -> H {
        if let Some(t) = &b.tail {
            return t.ty;
        }
        for s in &b.stmts {
            let e = match s {
                Stmt::Expr(e) | Stmt::Let(_, Some(e)) => e,
                Stmt::Let(_, None) => continue,
            };
            if self.u.ty(e.ty) == Some(Ty::Never) {
                return self.u.known(Ty::Never);
            }
        }
        self.u.known(Ty::Unit)
    }

    fn lit(&mut self, l: Lit, neg: bool, span: Span) -> CResult<CExpr> {
        Ok(match l {
            Lit::Bool(b) => self.mk(ExprKind::Lit(ScalarValue::Bool(b)), Ty::Scalar(Scalar::Bool), span),
            Lit::Int(v, suffix) => {
                if let Some(s) = suffix {
                    let (lo, hi) = int_range(s);
                    let val = signed_literal(v, neg);
                    if neg && !s.is_signed() {
                        return Err(Diagnostic::error(span, format!("cannot apply unary operator `-` to type `{s}`"))
                            .label("unsigned values cannot be negative")
                            .help("use a signed type such as `i64`"));
                    }
                    if !val.is_some_and(|val| val >= lo && val <= hi) {
                        return Err(lit_range_error(s, span, neg, v));
                    }
                }
                let ty = match suffix {
                    Some(s) => self.u.known(Ty::Scalar(s)),
                    None => self.u.var(Kind::Int),
                };
                Expr { kind: ExprKind::PendingLit(PendingLit { int: Some(v), neg, f64: v as f64, f32: v as f32 }), ty, span }
            }
            Lit::Float { f64, f32, suffix } => {
                let ty = match suffix {
                    Some(s) => self.u.known(Ty::Scalar(s)),
                    None => self.u.var(Kind::Float),
                };
                Expr { kind: ExprKind::PendingLit(PendingLit { int: None, neg, f64, f32 }), ty, span }
            }
        })
    }

    fn binary(&mut self, op: BinOp, a: CExpr, b: CExpr, span: Span) -> CResult<CExpr> {
        let what = format!("binary `{}`", op.symbol());
        if op.is_shift() {
            self.need(a.ty, Class::Int, a.span, &what)?;
            self.need(b.ty, Class::Int, b.span, &what)?;
            let ty = a.ty;
            return Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span });
        }
        if !self.u.unify(a.ty, b.ty) {
            let (ta, tb) = (self.u.describe(a.ty), self.u.describe(b.ty));
            let mut d = Diagnostic::error(b.span, format!("mismatched types: `{ta}` {} `{tb}`", op.symbol()))
                .label(format!("expected `{ta}`, found `{tb}`"))
                .secondary(a.span, format!("this is `{ta}`"))
                .note("kache follows Rust: both operands of an arithmetic or comparison operator have the same type");
            if is_num(&ta) && is_num(&tb) {
                d = d.help(format!("convert one side with `as`, for example `(..) as {}`", if ta.starts_with('{') { &tb } else { &ta }));
            }
            return Err(d);
        }
        let (class, ty) = if op.is_comparison() {
            (Class::Scalar, self.u.known(Ty::Scalar(Scalar::Bool)))
        } else if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) {
            (Class::IntOrBool, a.ty)
        } else {
            (Class::Numeric, a.ty)
        };
        self.need(a.ty, class, span, &what)?;
        Ok(Expr { kind: ExprKind::Binary(op, Box::new(a), Box::new(b)), ty, span })
    }

    fn if_expr(&mut self, c: &ast::Expr, t: &ast::Block, f: Option<&ast::Expr>, span: Span) -> CResult<CExpr> {
        let c = self.expr(c)?;
        let b = self.u.known(Ty::Scalar(Scalar::Bool));
        self.unify_or(c.span, b, c.ty, " (the condition of `if`)")
            .map_err(|d| d.help("conditions are `bool`: compare, for example `x != 0`"))?;
        let then = self.block(t)?;
        let tt = self.body_type(&then);
        let (els, ty) = match f {
            None => {
                let unit = self.u.known(Ty::Unit);
                if !self.u.unify(unit, tt) {
                    let d = self.u.describe(tt);
                    return Err(Diagnostic::error(
                        t.tail.as_ref().map(|x| x.span).unwrap_or(t.span),
                        format!("`if` without `else` has type `()`, found `{d}`"),
                    )
                    .label("this value has nowhere to go")
                    .help("add an `else` branch, or end the expression with `;`"));
                }
                (None, unit)
            }
            Some(fe) => {
                let eb = match &fe.kind {
                    A::Block(b) => self.block(b)?,
                    _ => {
                        let x = self.expr(fe)?;
                        Block { stmts: Vec::new(), tail: Some(Box::new(x)) }
                    }
                };
                let et = self.body_type(&eb);
                let ty = match (self.u.ty(tt), self.u.ty(et)) {
                    (Some(Ty::Never), _) => et,
                    (_, Some(Ty::Never)) => tt,
                    _ => {
                        if !self.u.unify(tt, et) {
                            let (x, y) = (self.u.describe(tt), self.u.describe(et));
                            return Err(Diagnostic::error(fe.span, format!("`if` and `else` have incompatible types: `{x}` and `{y}`"))
                                .label(format!("expected `{x}`, found `{y}`"))
                                .secondary(t.span, format!("this branch has type `{x}`")));
                        }
                        tt
                    }
                };
                (Some(eb), ty)
            }
        };
        Ok(Expr { kind: ExprKind::If(Box::new(c), then, els), ty, span })
    }

    fn push_loop(&mut self, label: &Option<ast::Ident>, is_loop: bool) -> LoopId {
        let id = self.next_loop;
        self.next_loop += 1;
        self.loops.push(LoopInfo { label: label.as_ref().map(|l| l.name.clone()), id, is_loop, break_ty: None, has_break: false });
        id
    }

    fn loop_body(&mut self, body: &ast::Block) -> CResult<CBlock> {
        let b = self.block(body)?;
        let unit = self.u.known(Ty::Unit);
        let bt = self.body_type(&b);
        if !self.u.unify(unit, bt) {
            let d = self.u.describe(bt);
            return Err(Diagnostic::error(
                body.tail.as_ref().map(|t| t.span).unwrap_or(body.span),
                format!("loop bodies have type `()`, found `{d}`"),
            )
            .label("this value has nowhere to go")
            .help("end the expression with `;`"));
        }
        Ok(b)
    }

    fn find_loop(&self, label: Option<&ast::Ident>, span: Span, what: &str) -> CResult<usize> {
        match label {
            None => self
                .loops
                .len()
                .checked_sub(1)
                .ok_or_else(|| Diagnostic::error(span, format!("`{what}` outside of a loop")).label(format!("cannot `{what}` here"))),
            Some(l) => self.loops.iter().rposition(|x| x.label.as_deref() == Some(&l.name)).ok_or_else(|| {
                let labels: Vec<&str> = self.loops.iter().filter_map(|x| x.label.as_deref()).collect();
                let d =
                    Diagnostic::error(l.span, format!("use of undeclared label `{}`", l.name)).label("no enclosing loop has this label");
                match close_matches(&l.name, labels.iter().copied()).first() {
                    Some(c) => d.help(format!("a label with a similar name is in scope: `{c}`")),
                    None if labels.is_empty() => d.help("label the loop: `'outer: for ..` and `break 'outer`"),
                    None => d.help(format!("labels in scope: {}", labels.join(", "))),
                }
            }),
        }
    }

    // --- names ---

    fn path(&mut self, n: &ast::Ident) -> CResult<CExpr> {
        let span = n.span;
        if let Some(l) = self.lookup_local(&n.name) {
            let ty = self.locals[l].ty;
            return Ok(Expr { kind: ExprKind::Local(l), ty, span });
        }
        if let Some(scope) = self.scope_items {
            match scope.get(&n.name) {
                Some(ScopeItem::Capture(id, ty)) => {
                    let (id, ty) = (*id, *ty);
                    return Ok(self.capture_expr(id, ty, span));
                }
                Some(ScopeItem::Closure(_)) => {
                    return Err(Diagnostic::error(span, format!("closure `{}` must be called", n.name))
                        .label("closures are not values in kernels")
                        .help(format!("call it: `{}(..)`", n.name)));
                }
                None => {}
            }
        }
        if let Some(c) = self.mcx.const_item(&n.name) {
            let is_static = c.is_static;
            return match self.mcx.const_value(&n.name, span)? {
                ConstVal::Scalar(v) => Ok(self.mk(ExprKind::Lit(v), Ty::Scalar(v.ty()), span)),
                ConstVal::Array(arr) => {
                    let ty = CaptureTy::Array {
                        ty: ArrayTy { elem: arr.elem, ndim: arr.shape.len() as u8, writable: false },
                        device: false,
                        layout: Layout::C,
                    };
                    let _ = is_static;
                    let id = self.mcx.add_capture(CaptureOrigin::Static(n.name.clone()), ty, CaptureSource::Static(arr));
                    Ok(self.capture_expr(id, ty, span))
                }
            };
        }
        if let Some(f) = self.mcx.m.func(&n.name) {
            return Err(Diagnostic::error(span, format!("`{}` is a function", n.name))
                .label("functions are not values in kernels")
                .secondary(f.name.span, "defined here")
                .help(format!("call it: `{}(..)`", n.name)));
        }
        if let Some((i, ty)) = self.mcx.env.global(&n.name) {
            let id = self.mcx.add_capture(CaptureOrigin::Global(n.name.clone()), ty, CaptureSource::Binding(i));
            return Ok(self.capture_expr(id, ty, span));
        }
        if builtins::function(&n.name).is_some() {
            return Err(Diagnostic::error(span, format!("builtin `{}` must be called", n.name))
                .label("not a value")
                .help(format!("write `{}()`", n.name)));
        }
        Err(self.unresolved(n))
    }

    fn unresolved(&self, n: &ast::Ident) -> Diagnostic {
        let globals: Vec<&str> = self.mcx.env.globals.iter().map(|(g, _)| g.as_str()).collect();
        let mut d = Diagnostic::error(n.span, format!("cannot find value `{}` in this scope", n.name)).label("not found");
        d = if globals.is_empty() {
            d.note("no globals are bound on this module")
        } else {
            d.note(format!("globals bound on this module: {}", globals.join(", ")))
        };
        let mut candidates: Vec<&str> = self.scope.iter().map(|(s, _)| s.as_str()).collect();
        candidates.extend(globals.iter().copied());
        if let Some(s) = self.scope_items {
            candidates.extend(s.names.iter().map(|(n, _, _)| n.as_str()));
        }
        for i in &self.mcx.m.items {
            if let Item::Const(c) = i {
                candidates.push(&c.name.name);
            }
        }
        let close = close_matches(&n.name, candidates.into_iter());
        if let Some(c) = close.first() {
            d = d.help(format!("a name with a similar spelling exists: `{c}`"));
        } else {
            d = d.help(format!(
                "bind it on the module with `with_global(\"{}\", value)`, or `--define {}=VALUE` on the command line",
                n.name, n.name
            ));
        }
        d
    }

    fn capture_expr(&mut self, id: CaptureId, ty: CaptureTy, span: Span) -> CExpr {
        if !self.captures.contains(&id) {
            self.captures.push(id);
        }
        let t = match ty {
            CaptureTy::Scalar(s) => Ty::Scalar(s),
            CaptureTy::Array { ty, .. } => Ty::Array(ty),
        };
        self.mk(ExprKind::Capture(id), t, span)
    }

    // --- places, indexing ---

    fn place(&mut self, lhs: &ast::Expr) -> CResult<(Place<H>, H)> {
        match &lhs.kind {
            A::Path(n) => {
                if let Some(l) = self.lookup_local(&n.name) {
                    let info = &mut self.locals[l];
                    if let Some(Ty::Array(_)) = self.u.ty(info.ty) {
                        return Err(Diagnostic::error(lhs.span, format!("cannot assign to array `{}`", n.name))
                            .label("arrays are references")
                            .help("assign to an element: `a[i] = v`"));
                    }
                    // `let x;` is initialised by assignment, possibly on several paths
                    // (`if c { x = 1 } else { x = 2 }`): whether it is assigned only once on
                    // each path is checked on the finished body (`assign::first_reassignment`).
                    if !info.mutable && !info.deferred_init {
                        let decl = info.span;
                        return Err(Diagnostic::error(lhs.span, format!("cannot assign twice to immutable variable `{}`", n.name))
                            .label("cannot assign twice")
                            .secondary(decl, "declared here")
                            .help(format!("make it mutable: `let mut {}`", n.name)));
                    }
                    let ty = self.locals[l].ty;
                    return Ok((Place::Local(l), ty));
                }
                let (what, help) = if self.scope_items.and_then(|s| s.get(&n.name)).is_some() {
                    (
                        "a captured closure variable",
                        "captured scalars are constants compiled into the closure; pass a value that changes as a kernel argument",
                    )
                } else if self.mcx.const_item(&n.name).is_some() {
                    ("a constant", "declare a local copy: `let mut x = NAME;`")
                } else if self.mcx.env.global(&n.name).is_some() {
                    (
                        "a global captured as a constant",
                        "captured scalars are constants compiled into the kernel; pass a value that changes as a kernel argument",
                    )
                } else {
                    return Err(self.unresolved(n));
                };
                Err(Diagnostic::error(lhs.span, format!("cannot assign to `{}`: it is {what}", n.name)).label("read-only").help(help))
            }
            A::Index { array, indices, multi } => {
                let (a, elem, idx) = self.index(array, indices, *multi, lhs.span)?;
                if let Some(Ty::Array(at)) = self.u.ty(a.ty) {
                    if !at.writable {
                        return Err(self.readonly_write(&a, array, lhs.span));
                    }
                }
                let ty = self.u.known(Ty::Scalar(elem));
                Ok((Place::Index(Box::new(a), idx), ty))
            }
            _ => Err(Diagnostic::error(lhs.span, "invalid left-hand side of assignment")
                .label("cannot assign to this expression")
                .help("assign to a `let mut` variable or an array element")),
        }
    }

    fn readonly_write(&self, a: &CExpr, array_src: &ast::Expr, span: Span) -> Diagnostic {
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
        Diagnostic::error(span, format!("cannot write to read-only array `{name}`")).label(why).help(help)
    }

    fn index(&mut self, array: &ast::Expr, indices: &[ast::Expr], multi: bool, span: Span) -> CResult<(CExpr, Scalar, Vec<CExpr>)> {
        let a = self.expr(array)?;
        let Some(Ty::Array(at)) = self.u.ty(a.ty) else {
            let d = self.u.describe(a.ty);
            return Err(Diagnostic::error(array.span, format!("cannot index into a value of type `{d}`"))
                .label("not an array")
                .help("only arrays (`&[T]`, `&Array<T, N>`, captured arrays, shared arrays) can be indexed"));
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
                .help(format!("write `{form}`")));
        }
        if multi && indices.len() != n {
            return Err(Diagnostic::error(
                span,
                format!("a {n}-d array is indexed with {n} ind{}, found {}", if n == 1 { "ex" } else { "ices" }, indices.len()),
            )
            .label("wrong number of indices"));
        }
        let mut idx = Vec::new();
        for i in indices {
            let x = self.expr(i)?;
            let u = self.u.known(Ty::Scalar(Scalar::Usize));
            if !self.u.unify(u, x.ty) {
                let d = self.u.describe(x.ty);
                return Err(Diagnostic::error(i.span, format!("array indices are `usize`, found `{d}`"))
                    .label("expected `usize`")
                    .help("convert with `as usize`"));
            }
            idx.push(x);
        }
        Ok((a, at.elem, idx))
    }

    // --- calls ---

    fn call(&mut self, func: &ast::Ident, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        if let Some(l) = self.lookup_local(&func.name) {
            return Err(Diagnostic::error(func.span, format!("`{}` is a variable, not a function", func.name))
                .label("not callable")
                .secondary(self.locals[l].span, "declared here"));
        }
        if let Some(scope) = self.scope_items {
            match scope.get(&func.name) {
                Some(ScopeItem::Closure(id)) => {
                    let id = *id;
                    self.no_generics(generics)?;
                    return self.call_fn(id, &func.name, args, span, None);
                }
                Some(ScopeItem::Capture(..)) => {
                    return Err(
                        Diagnostic::error(func.span, format!("`{}` is a captured value, not a function", func.name)).label("not callable")
                    );
                }
                None => {}
            }
        }
        if let Some(f) = self.mcx.m.func(&func.name) {
            self.no_generics(generics)?;
            if f.is_kernel {
                return Err(Diagnostic::error(func.span, format!("`{}` is a kernel", func.name))
                    .label("kernels cannot be called from device code")
                    .secondary(f.name.span, "defined here")
                    .help("move the shared code into a device function (a `fn` without `#[kernel]`)"));
            }
            let id = self.mcx.ensure_fn(f, Some(func.span))?;
            let decl = f.sig_span;
            return self.call_fn(id, &func.name, args, span, Some(decl));
        }
        if let Some(b) = builtins::function(&func.name) {
            return self.builtin_call(b, func, generics, args, span);
        }
        if self.mcx.const_item(&func.name).is_some() || self.mcx.env.global(&func.name).is_some() {
            return Err(Diagnostic::error(func.span, format!("`{}` is a value, not a function", func.name)).label("not callable"));
        }
        let mut names: Vec<&str> = builtins::FUNCTIONS.iter().map(|(n, _)| *n).collect();
        for i in &self.mcx.m.items {
            if let Item::Fn(f) = i {
                names.push(&f.name.name);
            }
        }
        if let Some(s) = self.scope_items {
            names.extend(s.names.iter().map(|(n, _, _)| n.as_str()));
        }
        let close = close_matches(&func.name, names.into_iter());
        let mut d = Diagnostic::error(func.span, format!("cannot find function `{}`", func.name)).label("not found");
        if let Some(c) = close.first() {
            d = d.help(format!("a function with a similar name exists: `{c}`"));
        } else {
            d = d.help("call a device function of this file, a closure of the factory, or a builtin (see the language reference)");
        }
        Err(d)
    }

    fn no_generics(&self, g: &[GenericArg]) -> CResult<()> {
        if let Some(first) = g.first() {
            let span = match first {
                GenericArg::Type(t) => t.span(),
                GenericArg::Const(e) => e.span,
            };
            return Err(Diagnostic::error(span, "device functions take no generic arguments").label("remove this"));
        }
        Ok(())
    }

    fn arity(&self, name: &str, want: usize, got: usize, span: Span, decl: Option<Span>) -> CResult<()> {
        if want != got {
            let mut d = Diagnostic::error(
                span,
                format!("`{name}` takes {want} argument{} but {got} {} supplied", plural(want), if got == 1 { "was" } else { "were" }),
            )
            .label(format!("expected {want} argument{}", plural(want)));
            if let Some(s) = decl {
                d = d.secondary(s, "declared here");
            }
            return Err(d);
        }
        Ok(())
    }

    fn call_fn(&mut self, id: FuncId, name: &str, args: &[ast::Expr], span: Span, decl: Option<Span>) -> CResult<CExpr> {
        let sig = self.mcx.sigs[id].clone();
        self.arity(name, sig.params.len(), args.len(), span, decl)?;
        let mut out = Vec::new();
        for (a, p) in args.iter().zip(&sig.params) {
            let x = self.expr(a)?;
            let want = self.u.known(*p);
            self.assign_compatible(want, &x, span)?;
            out.push(x);
        }
        if !self.callees.contains(&id) {
            self.callees.push(id);
        }
        Ok(self.mk(ExprKind::Call(id, out), sig.ret, span))
    }

    fn builtin_call(&mut self, b: Function, func: &ast::Ident, generics: &[GenericArg], args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let name = func.name.as_str();
        match b {
            Function::Index(bi) => {
                self.no_generics(generics)?;
                self.arity(name, 0, args.len(), span, None)?;
                let ty = if matches!(bi, Builtin::GlobalId(_)) { Scalar::Usize } else { Scalar::U32 };
                Ok(self.mk(ExprKind::Builtin(bi, Vec::new()), Ty::Scalar(ty), span))
            }
            Function::SyncThreads => {
                self.no_generics(generics)?;
                self.arity(name, 0, args.len(), span, None)?;
                self.uses_block_sync = true;
                Ok(self.mk(ExprKind::Builtin(Builtin::SyncThreads, Vec::new()), Ty::Unit, span))
            }
            Function::Atomic(bi) => {
                self.no_generics(generics)?;
                let want = if bi == Builtin::AtomicCas { 3 } else { 2 };
                self.arity(name, want, args.len(), span, None)?;
                let A::RefMut(target) = &args[0].kind else {
                    return Err(Diagnostic::error(args[0].span, format!("the first argument of `{name}` is `&mut a[i]`"))
                        .label("expected a mutable reference to an array element")
                        .help(format!("write `{name}(&mut a[i], ..)`")));
                };
                let A::Index { .. } = target.kind else {
                    return Err(Diagnostic::error(target.span, "atomics operate on array elements")
                        .label("not an array element")
                        .help(format!("write `{name}(&mut a[i], ..)`")));
                };
                let (place, pty) = self.place(target)?;
                let Place::Index(arr, idx) = place else {
                    return Err(Diagnostic::error(target.span, "atomics operate on array elements").label("here"));
                };
                let class = if bi == Builtin::AtomicCas { Class::Scalar } else { Class::Numeric };
                self.need(pty, class, target.span, format!("`{name}`"))?;
                if let Some(Ty::Scalar(Scalar::Bool)) = self.u.ty(pty) {
                    return Err(Diagnostic::error(target.span, format!("`{name}` does not take `bool` elements")).label("here"));
                }
                let elem_ref = Expr { kind: ExprKind::Index(arr, idx), ty: pty, span: target.span };
                let mut out = vec![elem_ref];
                for a in &args[1..] {
                    let x = self.expr(a)?;
                    self.unify_or(x.span, pty, x.ty, &format!(" (the element type of the array `{name}` updates)"))?;
                    out.push(x);
                }
                Ok(Expr { kind: ExprKind::Builtin(bi, out), ty: pty, span })
            }
            Function::SharedArray => {
                self.arity(name, 0, args.len(), span, None)?;
                let usage = "write `shared_array::<T, N>()`, for example `shared_array::<f32, 256>()`";
                let [GenericArg::Type(TypeExpr::Scalar(elem, _)), GenericArg::Const(n)] = generics else {
                    return Err(Diagnostic::error(span, "`shared_array` needs an element type and a length")
                        .label("missing generic arguments")
                        .help(usage));
                };
                let len = self.mcx.eval_const(n, Some(Scalar::Usize)).map_err(|d| d.help(usage))?;
                let len = len.as_i128().unwrap_or(0) as u64;
                if len == 0 {
                    return Err(Diagnostic::error(n.span, "a shared array needs at least one element")
                        .label("zero length")
                        .help("give the number of elements, for example `shared_array::<f32, 256>()`"));
                }
                let bytes = len.saturating_mul(elem.size() as u64);
                if bytes > builtins::MAX_SHARED_BYTES {
                    return Err(Diagnostic::error(n.span, format!("shared array of {bytes} bytes is too large"))
                        .label(format!("more than {} bytes", builtins::MAX_SHARED_BYTES))
                        .help("static shared memory is limited to 48 KiB per block; use `dynamic_shared_array::<T>()` for more"));
                }
                self.uses_block_sync = true;
                let site = self.shared_sites;
                self.shared_sites += 1;
                Ok(self.mk(
                    ExprKind::SharedArray { elem: *elem, len, site },
                    Ty::Array(ArrayTy { elem: *elem, ndim: 1, writable: true }),
                    span,
                ))
            }
            Function::DynSharedArray => {
                self.arity(name, 0, args.len(), span, None)?;
                let [GenericArg::Type(TypeExpr::Scalar(elem, _))] = generics else {
                    return Err(Diagnostic::error(span, "`dynamic_shared_array` needs an element type")
                        .label("missing generic argument")
                        .help("write `dynamic_shared_array::<f32>()`"));
                };
                self.uses_block_sync = true;
                Ok(self.mk(ExprKind::DynSharedArray(*elem), Ty::Array(ArrayTy { elem: *elem, ndim: 1, writable: true }), span))
            }
        }
    }

    fn method(&mut self, receiver: &ast::Expr, method: &ast::Ident, args: &[ast::Expr], span: Span) -> CResult<CExpr> {
        let r = self.expr(receiver)?;
        let name = method.name.as_str();
        if let Some(Ty::Array(at)) = self.u.ty(r.ty) {
            let Some(&(_, b, nargs)) = builtins::ARRAY_METHODS.iter().find(|(n, _, _)| *n == name) else {
                let close = close_matches(name, builtins::ARRAY_METHODS.iter().map(|(n, _, _)| *n));
                let mut d = Diagnostic::error(method.span, format!("no method `{name}` on arrays"))
                    .label("unknown method")
                    .note("array methods: `len()`, `shape(d)`, `stride(d)`");
                if let Some(c) = close.first() {
                    d = d.help(format!("did you mean `{c}`?"));
                }
                return Err(d);
            };
            self.arity(name, nargs, args.len(), span, None)?;
            let mut out = vec![r];
            if nargs == 1 {
                if at.ndim == 0 {
                    return Err(Diagnostic::error(method.span, format!("a 0-d array has no `{name}`")).label("no dimensions"));
                }
                let x = self.expr(&args[0])?;
                let u = self.u.known(Ty::Scalar(Scalar::Usize));
                self.unify_or(x.span, u, x.ty, " (dimensions are `usize`)")?;
                if let ExprKind::PendingLit(PendingLit { int: Some(d), .. }) = x.kind {
                    if d >= at.ndim as u128 {
                        return Err(Diagnostic::error(x.span, format!("dimension {d} is out of range for a {}-d array", at.ndim))
                            .label(format!("valid dimensions: 0..{}", at.ndim)));
                    }
                }
                out.push(x);
            }
            return Ok(self.mk(ExprKind::Builtin(b, out), Ty::Scalar(Scalar::Usize), span));
        }
        if let Some(Ty::Unit) = self.u.ty(r.ty) {
            return Err(Diagnostic::error(method.span, format!("no method `{name}` on type `()`")).label("unknown method"));
        }
        let Some(def) = builtins::method(name) else {
            let d = self.u.describe(r.ty);
            let close =
                close_matches(name, builtins::METHODS.iter().map(|m| m.name).chain(builtins::ARRAY_METHODS.iter().map(|(n, _, _)| *n)));
            let mut diag = Diagnostic::error(method.span, format!("no method `{name}` on type `{d}`"))
                .label("unknown method")
                .note(format!("methods on numbers: {}", builtins::METHODS.iter().map(|m| m.name).collect::<Vec<_>>().join(", ")));
            if let Some(c) = close.first() {
                diag = diag.help(format!("did you mean `{c}`?"));
            }
            return Err(diag);
        };
        self.arity(name, def.args, args.len(), span, None)?;
        let class = match def.receiver {
            Receiver::Float => Class::Float,
            Receiver::Int => Class::Int,
            Receiver::SignedOrFloat => Class::SignedOrFloat,
            Receiver::Numeric => Class::Numeric,
        };
        self.need(r.ty, class, method.span, format!("method `{name}`")).map_err(|d| {
            let on = match def.receiver {
                Receiver::Float => "`f32` and `f64`",
                Receiver::Int => "integers",
                Receiver::SignedOrFloat => "signed integers and floats",
                Receiver::Numeric => "numbers",
            };
            d.help(format!("`{name}` is defined for {on}; convert the value with `as` first"))
        })?;
        let rty = r.ty;
        let mut out = vec![r];
        for a in args {
            let x = self.expr(a)?;
            let want = match def.arg_ty {
                ArgTy::SameAsSelf => rty,
                ArgTy::I32 => self.u.known(Ty::Scalar(Scalar::I32)),
            };
            self.unify_or(x.span, want, x.ty, &format!(" (the argument of `{name}`)"))?;
            out.push(x);
        }
        if def.libdevice.is_some() {
            self.uses_libdevice = true;
        }
        let ty = match def.ret {
            builtins::RetTy::SameAsSelf => rty,
            builtins::RetTy::U32 => self.u.known(Ty::Scalar(Scalar::U32)),
        };
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Math(def.func), out), ty, span })
    }
}

fn same_shape(a: Ty, b: Ty) -> bool {
    match (a, b) {
        (Ty::Array(x), Ty::Array(y)) => x.elem == y.elem && x.ndim == y.ndim && x.writable == y.writable,
        _ => a == b,
    }
}

fn is_num(s: &str) -> bool {
    s.starts_with('{') || Scalar::from_name(s).is_some_and(|s| s.is_numeric())
}

fn closure_outside_factory(span: Span) -> Diagnostic {
    Diagnostic::error(span, "closures are only supported in factories")
        .label("closure outside a factory")
        .help("define a factory: `fn make(x: f32) -> impl Kernel { let f = move |i: usize| ..; move |out: &mut [f32]| { .. } }`, or write a device function")
}
