//! The module context: the program being built, one function at a time. Checks each `fn` item once
//! (its signature, then its body), rejects recursion, and owns the capture and function tables.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

use crate::ir::*;
use crate::lang::ast::{self, ModId, RetTy, TypeExpr};
use crate::lang::diag::Diagnostic;
use crate::lang::names::Res;
use crate::span::Span;

use super::body::FnCx;
use super::consts::ConstVal;
use super::generics::{GenericEnv, array_of};
use super::{CResult, Env, close_matches};

/// The signature of a function of the program, known before its body is checked.
#[derive(Clone, Debug)]
pub(super) struct Sig {
    pub(super) params: Vec<Ty>,
    pub(super) ret: Ty,
}

/// The program being built from one source module.
pub(super) struct ModuleCx<'m> {
    pub(super) m: &'m ast::SourceModule,
    pub(super) env: &'m Env,
    pub(super) funcs: Vec<Option<Func>>,
    pub(super) sigs: Vec<Sig>,
    /// Functions by their item (its address) and instance (its name; empty for a function that
    /// is not generic, the function's name for a generic definition).
    fn_ids: HashMap<(usize, String), FuncId>,
    /// Functions whose bodies are being checked, outermost first, by item (an instance counts as
    /// its generic function: a generic function that reaches itself recurses).
    pub(super) in_progress: Vec<(usize, String, Span)>,
    /// Generic functions checked at their definition in this context, by item.
    pub(super) definitions_checked: HashSet<usize>,
    pub(super) captures: Vec<Capture>,
    /// Constants by their item (index into `m.items`).
    pub(super) consts: HashMap<usize, ConstVal>,
    /// The const parameters a constant expression being evaluated may name, with their types
    /// and values (set while a body of a generic function evaluates one).
    pub(super) const_scope: Vec<(String, Scalar, Option<ScalarValue>)>,
    pub(super) consts_in_progress: Vec<usize>,
    /// The enums used so far, by [`EnumTy::id`], and the id of each enum item.
    pub(super) enums: Vec<EnumDef>,
    pub(super) enum_ids: HashMap<usize, EnumTy>,
    /// The enums' names by id, shared with each function's unifier for its messages.
    pub(super) enum_names: Rc<RefCell<Vec<String>>>,
    pub(super) warnings: Vec<(Span, String)>,
    pub(super) factories_in_progress: Vec<String>,
    pub(super) closure_names: HashMap<String, usize>,
}

impl<'m> ModuleCx<'m> {
    pub(super) fn new(m: &'m ast::SourceModule, env: &'m Env) -> Self {
        ModuleCx {
            m,
            env,
            funcs: Vec::new(),
            sigs: Vec::new(),
            fn_ids: HashMap::new(),
            in_progress: Vec::new(),
            definitions_checked: HashSet::new(),
            captures: Vec::new(),
            consts: HashMap::new(),
            const_scope: Vec::new(),
            consts_in_progress: Vec::new(),
            enums: Vec::new(),
            enum_ids: HashMap::new(),
            enum_names: Rc::default(),
            warnings: Vec::new(),
            factories_in_progress: Vec::new(),
            closure_names: HashMap::new(),
        }
    }

    /// The checked program. A function's slot is filled once its body has checked, and a body
    /// that fails ends the whole check, so every slot is filled here; an empty one would be a
    /// bug in the checker, reported as an error rather than a panic.
    pub(super) fn finish(self, kernel: FuncId) -> CResult<Program> {
        let Some(funcs) = self.funcs.into_iter().collect::<Option<Vec<Func>>>() else {
            return Err(Diagnostic::error(Span::default(), "internal error: a function was reserved but never checked")
                .label("while checking this file")
                .into());
        };
        Ok(Program { kernel, funcs, captures: self.captures, enums: self.enums, warnings: self.warnings, fmad: None })
    }

    pub(super) fn no_such_kernel(&self, name: &str) -> Diagnostic {
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

    pub(super) fn add_capture(&mut self, origin: CaptureOrigin, ty: CaptureTy, source: CaptureSource) -> CaptureId {
        if let Some(i) = self.captures.iter().position(|c| c.origin == origin && c.source == source) {
            return i;
        }
        self.captures.push(Capture { origin, ty, source });
        self.captures.len() - 1
    }

    pub(super) fn reserve(&mut self, sig: Sig) -> FuncId {
        self.funcs.push(None);
        self.sigs.push(sig);
        self.funcs.len() - 1
    }

    pub(super) fn capture_ty_of_decl(&mut self, t: &TypeExpr, module: ModId) -> CResult<CaptureTy> {
        Ok(match self.ty_of(t, module)? {
            Ty::Scalar(s) => CaptureTy::Scalar(s),
            Ty::Array(a) => CaptureTy::Array { ty: a, device: true, layout: Layout::A },
            _ => return Err(Diagnostic::error(t.span(), "factory parameters are scalars or arrays").label("here").into()),
        })
    }

    /// Checks a `fn` item (kernel or device function) that is not generic once; detects
    /// recursion.
    pub(super) fn ensure_fn(&mut self, f: &'m ast::FnItem, call: Option<Span>) -> CResult<FuncId> {
        if f.is_generic() {
            return Err(Diagnostic::error(
                call.unwrap_or(f.name.span),
                "internal error: a generic function was checked without its arguments",
            )
            .label("here")
            .into());
        }
        self.ensure_checked(f, GenericEnv::none(), f.name.name.clone(), call)
    }

    /// Checks `f` with its generic parameters standing for what `generics` says, once per
    /// `key` (the function's name, or an instance's name); detects recursion.
    pub(super) fn ensure_checked(
        &mut self,
        f: &'m ast::FnItem,
        generics: GenericEnv,
        func_name: String,
        call: Option<Span>,
    ) -> CResult<FuncId> {
        let name = &f.name.name;
        let key = f as *const ast::FnItem as usize;
        let instance_key = (key, if f.is_generic() { func_name.clone() } else { String::new() });
        if let Some(pos) = self.in_progress.iter().position(|(k, _, _)| *k == key) {
            let mut chain: Vec<&str> = self.in_progress[pos..].iter().map(|(_, n, _)| n.as_str()).collect();
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
                .help("rewrite the recursion as a loop")
                .into());
        }
        if let Some(&id) = self.fn_ids.get(&instance_key) {
            return Ok(id);
        }
        let (kind, ret) = match &f.ret {
            RetTy::Unit => (if f.is_kernel { FuncKind::Kernel } else { FuncKind::Device }, Ty::Unit),
            RetTy::Ty(t) => {
                if f.is_kernel {
                    return Err(Diagnostic::error(t.span(), format!("kernel `{name}` has a return type"))
                        .label("kernels do not return a value")
                        .help("write results into a `&mut` array parameter")
                        .into());
                }
                let ty = self.ty_in(t, f.module, &generics)?;
                if let Ty::Array(_) | Ty::ParamArray(_) = ty {
                    return Err(Diagnostic::error(t.span(), "device functions cannot return arrays")
                        .label("returns an array")
                        .help("return a scalar, or write into a `&mut` array parameter")
                        .into());
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
                return Err(d.into());
            }
        };
        let mut params = Vec::new();
        for p in &f.params {
            let Some(t) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
            };
            let ty = self.ty_in(t, f.module, &generics)?;
            if ty == Ty::Unit {
                return Err(Diagnostic::error(t.span(), "parameters cannot have type `()`").label("here").into());
            }
            params.push(ty);
        }
        let id = self.reserve(Sig { params, ret });
        self.fn_ids.insert(instance_key, id);
        self.in_progress.push((key, name.clone(), f.name.span));
        let r = crate::stack::ensure(256 << 10, 8 << 20, || {
            let mut cx = FnCx::new(self, None, f.module);
            cx.set_generics(generics);
            cx.check_fn_body(f, func_name, kind, ret)
        });
        self.in_progress.pop();
        let func = r?;
        self.funcs[id] = Some(func);
        Ok(id)
    }

    /// The type a declared parameter or annotation stands for, names resolved in `module`.
    pub(super) fn ty_of(&mut self, t: &TypeExpr, module: ModId) -> CResult<Ty> {
        self.ty_in(t, module, &GenericEnv::none())
    }

    /// The type a declared type stands for in `module`, with the generic parameters of the
    /// function being checked standing for what `generics` says.
    pub(super) fn ty_in(&mut self, t: &TypeExpr, module: ModId, generics: &GenericEnv) -> CResult<Ty> {
        match t {
            TypeExpr::Unit(_) => Ok(Ty::Unit),
            TypeExpr::Scalar(s, _) => Ok(Ty::Scalar(*s)),
            TypeExpr::Param(id) => generics.type_param(&id.name).ok_or_else(|| {
                Diagnostic::error(id.span, format!("cannot find type `{}` in this scope", id.name))
                    .label("not a type here")
                    .help("type parameters are declared on the function that uses them: `fn f<T: Float>(..)`")
                    .into()
            }),
            TypeExpr::ArrayRef { elem, ndim, mutable, span } => {
                let e = self.ty_in(elem, module, generics)?;
                array_of(e, *ndim, *mutable)
                    .ok_or_else(|| Diagnostic::error(*span, "array elements must be scalars").label("not a scalar element type").into())
            }
            TypeExpr::Named(path, span) => {
                let res = if path.len() == 1 {
                    self.m.scopes.type_name(module, &path[0].name)
                } else {
                    self.m.scopes.path(self.m, module, path)?.1
                };
                match res {
                    Some(Res::Item(i)) if matches!(self.m.items[i], ast::Item::Enum(_)) => Ok(Ty::Enum(self.enum_ty(i)?)),
                    Some(Res::Module(_)) => Err(Diagnostic::error(*span, "expected a type, found a module").label("a module").into()),
                    _ => {
                        let name = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
                        Err(Diagnostic::error(*span, format!("unknown type `{name}`"))
                            .label("not a kernel type")
                            .help("supported types: the scalars (`f32`, `u8`, `bool`, ..), `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`, and the kernel's enums")
                            .into())
                    }
                }
            }
            TypeExpr::Fixed { span, .. } => {
                Err(Diagnostic::error(*span, "fixed-size arrays are only supported in `static` and `const` items")
                    .label("not supported here")
                    .help("take a slice: `&[T]` or `&mut [T]`")
                    .into())
            }
        }
    }
}
