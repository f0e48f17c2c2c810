//! The host's side of generic kernels: a kernel name that names an instance (`axpy::<f32>`),
//! a generic kernel's parameters and definition, and the instance a launch's argument types
//! select (as numba's dispatcher picks a specialisation).

use std::sync::Arc;

use crate::ir::*;
use crate::lang::ast::{self, GenericParamKind, TypeExpr};
use crate::lang::diag::{Diagnostic, Diagnostics};
use crate::lang::source::SourceFile;
use crate::lang::syntax::parse_instance_name;
use crate::span::Span;

use super::generics::{GenericParam, GenericValue, instance_name, params_of};
use super::items::ModuleCx;
use super::{Env, check_shared_total};

/// A kernel name as the host wrote it, resolved: the function and its generic arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct KernelName {
    /// The function's name (`axpy`).
    pub base: String,
    /// Its generic arguments (empty when none were written).
    pub args: Vec<GenericValue>,
    /// The instance's name, the same however the arguments were spelled (`axpy::<f32>`,
    /// `conv1d::<f32, 3>`); the function's name when there are no arguments.
    pub canonical: String,
}

/// A generic kernel's signature: its generic parameters and its parameters.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub struct GenericKernelSig {
    /// The kernel's name.
    pub name: String,
    /// Its generic parameters, in order.
    pub generics: Vec<GenericParam>,
    /// Its parameters: names and types, type parameters as [`Ty::Param`] / [`Ty::ParamArray`].
    pub params: Vec<(String, Ty)>,
    /// `axpy<T: Float>(a: T, x: &[T], y: &mut [T])`.
    pub signature: String,
}

impl GenericKernelSig {
    /// The most instances [`every_instance`](Self::every_instance) lists.
    pub const MAX_INSTANCES: usize = 64;

    /// Every instance of the kernel, when its generic parameters are all type parameters: each
    /// combination of the types their bounds admit, in a fixed order (`axpy::<f16>` ..
    /// `axpy::<f64>`). Otherwise (a const parameter, or more than
    /// [`MAX_INSTANCES`](Self::MAX_INSTANCES) combinations) why not.
    pub fn every_instance(&self) -> Result<Vec<String>, String> {
        let mut lists: Vec<Vec<Scalar>> = Vec::new();
        for g in &self.generics {
            match g.kind {
                GenericParamKind::Type(b) => lists.push(Scalar::ALL.iter().copied().filter(|s| b.admits(*s)).collect()),
                GenericParamKind::Const(_) => {
                    return Err(format!("its const parameter `{}` can take any value: name the instances to compile", g.name));
                }
            }
        }
        let count = lists.iter().try_fold(1usize, |n, l| n.checked_mul(l.len())).unwrap_or(usize::MAX);
        if count > Self::MAX_INSTANCES {
            return Err(format!("it has {count} instances (more than {}): name the instances to compile", Self::MAX_INSTANCES));
        }
        let mut combos: Vec<Vec<GenericValue>> = vec![Vec::new()];
        for l in &lists {
            combos =
                combos.iter().flat_map(|c| l.iter().map(move |s| [c.clone(), vec![GenericValue::Type(Ty::Scalar(*s))]].concat())).collect();
        }
        Ok(combos.iter().map(|c| instance_name(&self.name, c)).collect())
    }
}

/// A file name for a kernel or an instance: `axpy` stays, `axpy::<f32>` becomes `axpy-f32`,
/// `conv1d::<f32, 3>` `conv1d-f32-3` and `k::<-1>` `k-m1` (no two instances of a kernel share
/// one, and no kernel's name has a `-`).
pub fn file_stem(name: &str) -> String {
    let Some((base, args)) = name.split_once("::<") else { return name.to_string() };
    let args = args.trim_end_matches('>');
    let parts: Vec<String> = args.split(',').map(|a| a.trim().replace('-', "m")).collect();
    format!("{base}-{}", parts.join("-"))
}

/// A generic kernel: its signature, and its definition checked against its bounds. Its
/// instances are what is compiled.
#[derive(Clone, Debug)]
pub struct GenericKernel {
    /// Generic parameters and parameters.
    pub sig: GenericKernelSig,
    /// The definition as checked: not compilable (its types include type parameters, and the
    /// values that depend on them are placeholders).
    pub program: Program,
}

/// What a launch passes for one parameter, as far as choosing an instance goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "compiler", derive(serde::Serialize, serde::Deserialize))]
pub enum LaunchArg {
    /// A scalar of this type.
    Scalar(Scalar),
    /// An array with elements of this type and this many dimensions.
    Array {
        /// Element type.
        elem: Scalar,
        /// Dimensions.
        ndim: u8,
    },
    /// A tensor map of an array with elements of this type.
    TensorMap {
        /// Element type.
        elem: Scalar,
    },
}

fn name_file(text: &str) -> Arc<SourceFile> {
    SourceFile::new("<kernel name>", text)
}

/// `t` as the source spells it, type parameters by their names.
pub fn show_ty(t: Ty, names: &[String]) -> String {
    let name = |p: TypeParam| names.get(p.index as usize).cloned().unwrap_or_else(|| format!("T{}", p.index));
    match t {
        Ty::Param(p) => name(p),
        Ty::ParamArray(a) => {
            let m = if a.writable { "&mut " } else { "&" };
            if a.ndim == 1 { format!("{m}[{}]", name(a.elem)) } else { format!("{m}Array<{}, {}>", name(a.elem), a.ndim) }
        }
        t => t.to_string(),
    }
}

/// The span of `f`'s generic parameter list.
fn generics_span(f: &ast::FnItem) -> Span {
    match (f.generics.first(), f.generics.last()) {
        (Some(a), Some(b)) => a.span.to(b.span),
        _ => f.name.span,
    }
}

/// Resolves a kernel name the host wrote (`axpy`, `axpy::<f64>`, `conv1d::<f32, { 2 + 1 }>`):
/// parses it, evaluates its constants (which may name `const` items of the module) and checks
/// the arguments against the kernel's generic parameters. Spaces do not matter:
/// `conv1d::<f32,3>` and `conv1d::<f32, 3>` are one instance.
pub fn resolve_kernel_name(m: &ast::SourceModule, env: &Env, text: &str) -> Result<KernelName, Diagnostics> {
    if !text.contains('<') {
        return Ok(KernelName { base: text.to_string(), args: Vec::new(), canonical: text.to_string() });
    }
    let in_name = |d: Box<Diagnostic>| Diagnostics::single(name_file(text), *d);
    let (base, args) = parse_instance_name(text).map_err(in_name)?;
    let cx = ModuleCx::new(m, env);
    let Some(f) = m.func(&base.name).filter(|f| f.is_kernel) else {
        return Err(Diagnostics::in_files(m.files.clone(), vec![cx.no_such_kernel(&base.name)]));
    };
    if !f.is_generic() {
        return Err(Diagnostics::in_files(
            m.files.clone(),
            vec![
                Diagnostic::error(f.name.span, format!("kernel `{}` is not generic", base.name))
                    .label("takes no generic arguments")
                    .help(format!("name it without them: `{}`", base.name)),
            ],
        ));
    }
    let mut cx = cx;
    let values = cx.host_generic_args(f, &args).map_err(in_name)?;
    cx.check_generic_args(f, &values, generics_span(f), text.trim()).map_err(|d| Diagnostics::in_files(m.files.clone(), vec![*d]))?;
    let canonical = instance_name(&base.name, &values);
    Ok(KernelName { base: base.name, args: values, canonical })
}

/// Checks a kernel instance (the generic kernel at its definition first, then the instance with
/// its arguments substituted) and everything it reaches.
pub(super) fn check_instance(m: &ast::SourceModule, env: &Env, name: &KernelName) -> Result<Program, Diagnostics> {
    let diag = |d: Box<Diagnostic>| Diagnostics::in_files(m.files.clone(), vec![*d]);
    let mut cx = ModuleCx::new(m, env);
    let Some(f) = m.func(&name.base).filter(|f| f.is_kernel) else {
        return Err(diag(cx.no_such_kernel(&name.base).into()));
    };
    cx.check_generic_args(f, &name.args, generics_span(f), &name.canonical).map_err(diag)?;
    let id = cx.ensure_instance(f, &name.args, None, None).map_err(diag)?;
    let mut p = cx.finish(id).map_err(diag)?;
    // `#[kernel(..)]`'s options are every instance's, as they are a kernel's that is not generic.
    p.fmad = f.options.fmad;
    p.launch_bounds = f.options.max_threads.map(|max_threads| LaunchBounds { max_threads, min_blocks: f.options.min_blocks });
    check_shared_total(&p).map_err(diag)?;
    Ok(p)
}

/// The error for a generic kernel used without its generic arguments.
pub(super) fn needs_instance(f: &ast::FnItem) -> Diagnostic {
    let params: Vec<String> = params_of(f).iter().map(|p| p.to_string()).collect();
    Diagnostic::error(f.name.span, format!("kernel `{}` is generic: name an instance", f.name.name))
        .label(format!("generic over <{}>", params.join(", ")))
        .help(format!(
            "name an instance, like `{}::<{}>`, or launch it and let the argument types choose one",
            f.name.name,
            example_args(f)
        ))
}

fn example_args(f: &ast::FnItem) -> String {
    f.generics
        .iter()
        .map(|g| match g.kind {
            GenericParamKind::Type(Bound::Int) => "i32",
            GenericParamKind::Type(_) => "f32",
            GenericParamKind::Const(Scalar::Bool) => "true",
            GenericParamKind::Const(_) => "16",
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks the generic kernel `name` at its definition.
pub fn check_generic_kernel(m: &ast::SourceModule, env: &Env, name: &str) -> Result<GenericKernel, Diagnostics> {
    let diag = |d: Box<Diagnostic>| Diagnostics::in_files(m.files.clone(), vec![*d]);
    let mut cx = ModuleCx::new(m, env);
    let Some(f) = m.func(name).filter(|f| f.is_kernel && f.is_generic()) else {
        return Err(diag(cx.no_such_kernel(name).into()));
    };
    let env = cx.definition_env(f).map_err(diag)?;
    let id = cx.ensure_checked(f, env, f.name.name.clone(), None).map_err(diag)?;
    let mut program = cx.finish(id).map_err(diag)?;
    program.tune = f.tune.clone();
    let generics = params_of(f);
    let names: Vec<String> = generics.iter().map(|g| g.name.clone()).collect();
    let params: Vec<(String, Ty)> = program.kernel().param_decls().iter().map(|l| (l.name.clone(), l.ty)).collect();
    let signature = format!(
        "{}<{}>({})",
        name,
        generics.iter().map(|g| g.to_string()).collect::<Vec<_>>().join(", "),
        params
            .iter()
            .map(|(n, t)| {
                // A struct or builtin type (`TensorMap<T, 64, 128, 128>`) by the name it was declared with.
                let shown = if let Ty::Agg(_) = t { program.types.name(*t) } else { show_ty(*t, &names) };
                format!("{n}: {shown}")
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(GenericKernel { sig: GenericKernelSig { name: name.to_string(), generics, params, signature }, program })
}

/// The instance of generic kernel `name` that a launch with arguments of these types needs:
/// each type parameter is the type of the scalar arguments and array elements declared with
/// it. A parameter no argument determines (a const parameter, a type used only inside the
/// body), and arguments that disagree on one, are errors located at the kernel.
pub fn infer_instance(m: &ast::SourceModule, name: &str, args: &[LaunchArg]) -> Result<KernelName, Diagnostics> {
    let diag = |d: Diagnostic| Diagnostics::in_files(m.files.clone(), vec![d]);
    let Some(f) = m.func(name).filter(|f| f.is_kernel && f.is_generic()) else {
        return Err(diag(
            Diagnostic::error(Span::new(0, 0), format!("no generic kernel named `{name}` in this file")).label("searched this file"),
        ));
    };
    let mut found: Vec<Option<(Scalar, usize)>> = vec![None; f.generics.len()];
    for (i, (p, a)) in f.params.iter().zip(args).enumerate() {
        // What the parameter is of its type parameter: 0 the value, 1 an array's elements, 2 a
        // tensor map's (`map: &TensorMap<T, ..>`).
        let (param_name, form) = match &p.ty {
            Some(TypeExpr::Param(id)) => (&id.name, 0),
            Some(TypeExpr::ArrayRef { elem, .. }) => match &**elem {
                TypeExpr::Param(id) => (&id.name, 1),
                _ => continue,
            },
            Some(t @ (TypeExpr::Ref { .. } | TypeExpr::Builtin { .. })) => {
                let inner = match t {
                    TypeExpr::Ref { inner, .. } => &**inner,
                    t => t,
                };
                match inner {
                    TypeExpr::Builtin { name, args, .. } if name.name == "TensorMap" => match args.first() {
                        Some(ast::GenericArg::Type(TypeExpr::Param(id))) => (&id.name, 2),
                        _ => continue,
                    },
                    _ => continue,
                }
            }
            _ => continue,
        };
        let Some(g) = f.generics.iter().position(|g| &g.name.name == param_name) else { continue };
        let got = match (a, form) {
            (LaunchArg::Scalar(s), 0) => *s,
            (LaunchArg::Array { elem, .. }, 1) => *elem,
            (LaunchArg::TensorMap { elem }, 2) => *elem,
            // A scalar for an array or the like: the instance's own check of the arguments says so.
            _ => continue,
        };
        match found[g] {
            None => found[g] = Some((got, i)),
            Some((prev, at)) if prev != got => {
                let t = &f.generics[g].name.name;
                let first = &f.params[at];
                return Err(diag(
                    Diagnostic::error(
                        p.span,
                        format!(
                            "conflicting types for `{t}` in a launch of `{name}`: `{prev}` from `{}`, `{got}` from `{}`",
                            first.name.name, p.name.name
                        ),
                    )
                    .label(format!("`{}` makes `{t}` = `{got}`", p.name.name))
                    .secondary(first.span, format!("`{}` makes `{t}` = `{prev}`", first.name.name))
                    .secondary(f.generics[g].span, format!("one type parameter `{t}` stands for one type"))
                    .note("kache follows Rust: numbers are never converted implicitly")
                    .help(format!("pass arguments of one type for `{t}`, or convert the arrays first")),
                ));
            }
            Some(_) => {}
        }
    }
    let mut values = Vec::with_capacity(f.generics.len());
    for (g, v) in f.generics.iter().zip(&found) {
        match (g.kind, v) {
            (GenericParamKind::Type(_), Some((s, _))) => values.push(GenericValue::Type(Ty::Scalar(*s))),
            (kind, _) => {
                let why = match kind {
                    GenericParamKind::Const(_) => format!("`{}` is a const parameter: launch arguments do not give its value", g.name.name),
                    GenericParamKind::Type(_) => format!("no parameter of `{name}` has the type `{}` (or arrays of it)", g.name.name),
                };
                let help = match (kind, &f.tune) {
                    // A tuned kernel's launch chooses its constants.
                    (GenericParamKind::Const(_), Some(_)) => format!(
                        "launch it with `launch_tuned(&device, args)`, which takes `{}` from its `#[tune]` space, or name the instance: `module.kernel(\"{name}::<{}>\")`",
                        g.name.name,
                        example_args(f)
                    ),
                    _ => format!("name the instance: `module.kernel(\"{name}::<{}>\")`", example_args(f)),
                };
                return Err(diag(
                    Diagnostic::error(g.span, format!("cannot infer `{}` of kernel `{name}` from the launch arguments", g.name.name))
                        .label("not inferable from the arguments")
                        .note(why)
                        .help(help),
                ));
            }
        }
    }
    let canonical = instance_name(name, &values);
    Ok(KernelName { base: name.to_string(), args: values, canonical })
}
