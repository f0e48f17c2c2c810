//! Name resolution and type checking: from [`ast`] to a checked [`Program`].
//!
//! Types follow Rust: no implicit numeric conversion, literals take their type from how they
//! are used (else `i32` / `f64`), `let` bindings without an annotation take the type of their
//! initialiser, which may itself be settled later. Inference is unification over type
//! variables; checks that need a settled type (is this operand numeric?) are recorded as
//! obligations and discharged once the function has been walked.
//!
//! One job per file: `items` is the module context (each `fn` checked once, recursion,
//! the function and capture tables), `factory` instantiates kernel factories and their
//! closures, `consts` evaluates `const`/`static` items and `fold` the arithmetic inside them;
//! `body` is the function context (set-up and finishing a body), `unify` the type variables and
//! obligations, `stmt`, `expr`, `path`, `place` and `call` check what their names say, and
//! `resolve` turns the inferred body into the final IR.

mod adt;
mod aggregates;
mod body;
mod bounds;
mod call;
mod chains;
mod checked;
mod closures;
mod const_eval;
mod consts;
mod enums;
mod expr;
mod factory;
mod fold;
mod generic_call;
mod generics;
mod impls;
mod instances;
mod items;
mod iter;
mod let_patterns;
mod matching;
mod mbarrier;
mod methods;
mod ops;
mod option;
mod path;
mod patterns;
mod place;
mod refs;
mod resolve;
mod stmt;
mod structs;
mod templates;
mod tensor;
mod traits;
mod unify;
mod variants;

use crate::ir::*;
use crate::lang::ast::{self, Item, RetTy};
use crate::lang::builtins;
use crate::lang::diag::{Diagnostic, Diagnostics};

use items::ModuleCx;

pub use generics::{GenericParam, GenericValue, instance_name};
pub use instances::{
    GenericKernel, GenericKernelSig, KernelName, LaunchArg, check_generic_kernel, file_stem, infer_instance, resolve_kernel_name, show_ty,
};
pub use tensor::{check_arch, needs_accelerated};

type CResult<T> = Result<T, Box<Diagnostic>>;

/// What the host has bound on the module: the type of each global, by binding number.
#[derive(Clone, Debug, Default)]
pub struct Env {
    /// Global name and type; the index is the binding number
    /// ([`CaptureSource::Binding`]).
    pub globals: Vec<(String, CaptureTy)>,
    /// How the globals were bound, for the remedy a message gives.
    pub binder: Binder,
}

/// How a module's globals were bound: what an error about a global tells its user to change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Binder {
    /// [`Module::with_global`](crate::Module::with_global) in a program.
    #[default]
    Program,
    /// `--define NAME=LITERAL` on the `kache` command line.
    CommandLine,
    /// [`Builder::global`](crate::prebuild::Builder::global) in a build script.
    BuildScript,
}

impl Binder {
    /// Where global `name` was bound, said for this interface.
    pub(crate) fn bound(self, name: &str) -> String {
        match self {
            Binder::Program => format!("the program bound a global `{name}` on the module (`Module::with_global`)"),
            Binder::CommandLine => format!("the command line bound a global `{name}` (`--define {name}=...`)"),
            Binder::BuildScript => format!("the build script bound a global `{name}` (`Builder::global`)"),
        }
    }

    /// How to stop binding global `name`, said for this interface.
    pub(crate) fn unbind(self, name: &str) -> String {
        match self {
            Binder::Program => format!("do not bind `{name}` with `with_global`"),
            Binder::CommandLine => format!("drop `--define {name}=...`"),
            Binder::BuildScript => format!("do not pass `{name}` to `Builder::global`"),
        }
    }
}

impl Env {
    fn global(&self, name: &str) -> Option<(usize, CaptureTy)> {
        let found = self.globals.iter().position(|(n, _)| n == name).map(|i| (i, self.globals[i].1));
        if found.is_some() {
            touched_globals();
        }
        found
    }
}

thread_local! {
    /// Whether the check under way named a bound global, or a value name found nowhere (which
    /// another binding could supply): its result then depends on the module's bindings.
    static TOUCHED_GLOBALS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Notes that the check under way depends on the module's bindings ([`TOUCHED_GLOBALS`]).
pub(super) fn touched_globals() {
    TOUCHED_GLOBALS.with(|t| t.set(true));
}

/// The signature of a kernel or kernel factory, as the host sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelSig {
    /// Kernel name.
    pub name: String,
    /// Parameter names and types.
    pub params: Vec<(String, Ty)>,
    /// The enums of the parameters' types, by [`EnumTy::id`].
    pub enums: Vec<EnumDef>,
    /// The tuples, fixed-size arrays and structs of the parameters' types.
    pub types: Types,
}

impl KernelSig {
    /// A parameter type as the source writes it (an enum or a struct by its name).
    pub fn type_name(&self, t: Ty) -> String {
        self.types.name_with(t, &|t| match t {
            Ty::Enum(e) => self.enums.get(e.id as usize).map(|d| d.name.clone()).unwrap_or_else(|| t.to_string()),
            t => t.to_string(),
        })
    }
}

/// What `check_module` found.
#[derive(Clone, Debug, Default)]
pub struct ModuleSummary {
    /// `#[kernel]` functions.
    pub kernels: Vec<KernelSig>,
    /// Factories returning `impl Kernel`: their names and parameters.
    pub kernel_factories: Vec<KernelSig>,
    /// Device functions (generic ones included).
    pub device_functions: Vec<String>,
    /// Generic `#[kernel]` functions, checked at their definitions.
    pub generic_kernels: Vec<GenericKernelSig>,
    /// Warnings about the kernels (an unreachable `match` arm), each `file:line:col: message`.
    pub warnings: Vec<String>,
}

/// Checks the `#[kernel]` function `name` and everything it reaches. `name` may name an
/// instance of a generic kernel (`axpy::<f32>`); a generic kernel without its arguments is an
/// error that says to name one.
pub fn check_kernel(m: &ast::SourceModule, env: &Env, name: &str) -> Result<Program, Diagnostics> {
    if name.contains('<') {
        let k = resolve_kernel_name(m, env, name)?;
        return instances::check_instance(m, env, &k);
    }
    let diag = |d| Diagnostics::in_files(m.files.clone(), vec![d]);
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
    if f.is_generic() {
        return Err(diag(instances::needs_instance(f)));
    }
    let id = cx.ensure_fn(f, None).map_err(|d| diag(*d))?;
    let mut p = cx.finish(id).map_err(|d| diag(*d))?;
    p.fmad = f.options.fmad;
    p.launch_bounds = f.options.max_threads.map(|max_threads| LaunchBounds { max_threads, min_blocks: f.options.min_blocks });
    p.tune = f.tune.clone();
    check_shared_total(&p).map_err(|d| diag(*d))?;
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
                total = total.div_ceil(16) * 16 + len * p.types.elem_size(*elem);
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
            return Err(d.into());
        }
    }
    Ok(())
}

/// Checks the factory `name` instantiated with arguments of the given types (their binding
/// numbers follow the globals': `env.globals.len() + i`).
pub fn check_factory(m: &ast::SourceModule, env: &Env, name: &str, args: &[CaptureTy]) -> Result<Program, Diagnostics> {
    let diag = |d| Diagnostics::in_files(m.files.clone(), vec![d]);
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
    let id = cx.instantiate_factory(f, bound, f.name.span).map_err(|d| diag(*d))?;
    let p = cx.finish(id).map_err(|d| diag(*d))?;
    check_shared_total(&p).map_err(|d| diag(*d))?;
    Ok(p)
}

/// Checks every item of the module: kernels, device functions and factories (whose parameters
/// are taken as the declared types, arrays as device arrays).
pub fn check_module(m: &ast::SourceModule, env: &Env) -> Result<ModuleSummary, Diagnostics> {
    check_items(m, env, true)
}

/// Checks every item of the module whose check does not depend on the globals bound on it:
/// what makes a kernel of the module, on every path (the JIT, `kache compile`, the prebuild
/// step), so that an item wrong in itself (a recursive struct, a generic body missing a
/// bound) fails every kernel of its file, as in Rust, even where no kernel uses it. An item that
/// names a bound global, or a value found nowhere (which another binding could supply), and a
/// factory with parameters (bound when it is instantiated), are checked with the kernels that
/// reach them, with their bindings: a module may hold kernels for several bindings, as
/// numba-cuda's do.
pub fn check_unbound_items(m: &ast::SourceModule, env: &Env) -> Result<(), Diagnostics> {
    check_items(m, env, false).map(|_| ())
}

fn check_items(m: &ast::SourceModule, env: &Env, bound_too: bool) -> Result<ModuleSummary, Diagnostics> {
    let mut errors = Vec::new();
    let mut summary = ModuleSummary::default();
    let mut warned = Vec::new();
    let outer = TOUCHED_GLOBALS.with(|t| t.replace(false));
    for (index, item) in m.items.iter().enumerate() {
        TOUCHED_GLOBALS.with(|t| t.set(false));
        let mut cx = ModuleCx::new(m, env);
        let r = match item {
            // A trait's constant has a value for each type (checked where used); so has a
            // generic `impl` block's.
            Item::Const(c)
                if matches!(c.owner, Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(_), .. }))
                    || matches!(c.owner, Some(ast::ImplOwner { kind: ast::OwnerKind::Impl(i), .. }) if !m.impls[i].generics.is_empty()) =>
            {
                Ok(())
            }
            Item::Const(c) => cx.const_value(index, c.name.span).map(|_| ()),
            Item::Enum(e) if e.is_c_like() => cx.enum_ty(index).map(|_| ()),
            Item::Enum(e) => cx.adt_of_item(index, e.name.span).map(|_| ()),
            Item::Struct(s) if s.generics.is_empty() => cx.struct_ty(index, s.name.span).map(|_| ()),
            Item::Struct(s) => cx.adt_of_item(index, s.name.span).map(|_| ()),
            Item::Trait(_) => cx.check_trait(index),
            Item::Fn(f) if matches!(f.owner, Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(_), .. })) => {
                if f.required {
                    Ok(())
                } else {
                    cx.ensure_definition(f, None)
                }
            }
            Item::Fn(f) => match &f.ret {
                RetTy::ImplKernel(_) | RetTy::ImplFn { .. } => {
                    let mut bound = Vec::new();
                    let mut r = Ok(());
                    for p in &f.params {
                        match p.ty.as_ref().map(|t| cx.capture_ty_of_decl(t, f.module)) {
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
                            let params = f
                                .params
                                .iter()
                                .filter_map(|p| Some((p.name.name.clone(), cx.ty_of(p.ty.as_ref()?, f.module).ok()?)))
                                .collect();
                            let enums = cx.enums.clone();
                            let types = cx.types.borrow().clone();
                            summary.kernel_factories.push(KernelSig { name: m.qualified(f.module, &f.name.name), params, enums, types });
                        }
                    })
                }
                _ if f.is_kernel && f.is_generic() => match check_generic_kernel(m, env, &m.qualified(f.module, &f.name.name)) {
                    Ok(g) => {
                        summary.generic_kernels.push(g.sig);
                        Ok(())
                    }
                    Err(d) => Err(Box::new(d.items()[0].clone())),
                },
                _ if f.is_generic() => cx.ensure_definition(f, None).map(|_| summary.device_functions.push(f.name.name.clone())),
                _ if f.is_kernel => match check_kernel(m, env, &m.qualified(f.module, &f.name.name)) {
                    Ok(p) => {
                        for (span, msg) in &p.warnings {
                            let at = Diagnostics::in_files(m.files.clone(), vec![Diagnostic::error(*span, msg.clone())]).location();
                            let w = format!("{at}: {msg}");
                            if !warned.contains(&w) {
                                warned.push(w);
                            }
                        }
                        summary.kernels.push(KernelSig {
                            name: m.qualified(f.module, &f.name.name),
                            params: p.kernel().param_decls().iter().map(|l| (l.name.clone(), l.ty)).collect(),
                            enums: p.enums.clone(),
                            types: p.types.clone(),
                        });
                        Ok(())
                    }
                    Err(d) => Err(Box::new(d.items()[0].clone())),
                },
                _ => cx.ensure_fn(f, None).map(|id| {
                    let func = cx.funcs[id].as_ref();
                    if f.is_kernel {
                        summary.kernels.push(KernelSig {
                            name: f.name.name.clone(),
                            params: func
                                .map(|func| func.param_decls().iter().map(|l| (l.name.clone(), l.ty)).collect())
                                .unwrap_or_default(),
                            enums: cx.enums.clone(),
                            types: cx.types.borrow().clone(),
                        });
                    } else {
                        summary.device_functions.push(m.qualified(f.module, &f.name.name));
                    }
                }),
            },
        };
        // A factory's parameters are bound when it is instantiated, as globals are: its check
        // with the declared types stands for instances it may never have.
        let factory_with_params =
            matches!(item, Item::Fn(f) if matches!(f.ret, RetTy::ImplKernel(_) | RetTy::ImplFn { .. }) && !f.params.is_empty());
        let bound = factory_with_params || TOUCHED_GLOBALS.with(|t| t.get());
        if let Err(e) = r
            && (bound_too || !bound)
            && !errors.contains(&*e)
        {
            errors.push(*e);
        }
    }
    // The `impl` blocks: their types, traits and members.
    for k in 0..m.impls.len() {
        TOUCHED_GLOBALS.with(|t| t.set(false));
        let mut cx = ModuleCx::new(m, env);
        if let Err(e) = cx.check_impl(k)
            && (bound_too || !TOUCHED_GLOBALS.with(|t| t.get()))
            && !errors.contains(&*e)
        {
            errors.push(*e);
        }
    }
    TOUCHED_GLOBALS.with(|t| t.set(outer));
    summary.warnings = warned;
    if errors.is_empty() { Ok(summary) } else { Err(Diagnostics::in_files(m.files.clone(), errors)) }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
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
