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
    /// The type parameters a constant expression may name (`T::DIM`), with what they stand
    /// for.
    pub(super) type_scope: Vec<(String, Ty)>,
    pub(super) consts_in_progress: Vec<usize>,
    /// The enums used so far, by [`EnumTy::id`], and the id of each enum item.
    pub(super) enums: Vec<EnumDef>,
    pub(super) enum_ids: HashMap<usize, EnumTy>,
    /// The enums' names by id, shared with each function's unifier for its messages.
    pub(super) enum_names: Rc<RefCell<Vec<String>>>,
    /// The tuples, fixed-size arrays and structs used so far, shared with each function's
    /// unifier; and the id of each struct item.
    pub(super) types: Rc<RefCell<Types>>,
    pub(super) struct_ids: HashMap<usize, AggId>,
    /// Struct items whose fields are being resolved (a struct that contains itself has no size).
    pub(super) structs_in_progress: Vec<usize>,
    /// The associated items of each type item (struct or enum), by name: built on first use.
    pub(super) assoc: Option<HashMap<usize, Vec<(String, usize)>>>,
    /// What `Self` stands for where a type is being resolved: the type of the `impl` block of
    /// the function, constant or struct being checked.
    pub(super) self_ty: Option<Ty>,
    pub(super) warnings: Vec<(Span, String)>,
    pub(super) factories_in_progress: Vec<String>,
    pub(super) closure_names: HashMap<String, usize>,
    /// The tensor-core fragment types used so far and the struct standing for each
    /// (`check::tensor`).
    pub(super) frags: Vec<(super::tensor::FragTy, AggId)>,
    /// The generic structs and enums with fields, and their instances; shared with each
    /// function's unifier.
    pub(super) adts: Rc<RefCell<super::adt::Adts>>,
    /// The template of `Option`, once used.
    pub(super) option: Option<super::adt::AdtId>,
    /// The `impl` blocks of each trait (built on first use).
    pub(super) impl_index: Option<HashMap<super::traits::TraitId, Vec<usize>>>,
    /// `std::cmp::Ordering`, once used.
    pub(super) ordering: Option<EnumTy>,
    /// The signature of each closure met so far, by its type's template.
    pub(super) closure_sigs: super::closures::ClosureSigs,
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
            type_scope: Vec::new(),
            consts_in_progress: Vec::new(),
            enums: Vec::new(),
            enum_ids: HashMap::new(),
            enum_names: Rc::default(),
            types: Rc::default(),
            struct_ids: HashMap::new(),
            structs_in_progress: Vec::new(),
            assoc: None,
            self_ty: None,
            warnings: Vec::new(),
            factories_in_progress: Vec::new(),
            closure_names: HashMap::new(),
            frags: Vec::new(),
            adts: Rc::default(),
            option: None,
            impl_index: None,
            ordering: None,
            closure_sigs: Default::default(),
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
        let types = self.types.borrow().clone();
        Ok(Program {
            kernel,
            funcs,
            captures: self.captures,
            enums: self.enums,
            warnings: self.warnings,
            fmad: None,
            launch_bounds: None,
            tune: None,
            types,
        })
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
        let per_self = matches!(f.owner, Some(ast::ImplOwner { kind: ast::OwnerKind::Trait(_), .. }));
        let instance_key = (key, if f.is_generic() || per_self { func_name.clone() } else { String::new() });
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
        let mut generics = generics;
        self.owner_self(f, &mut generics)?;
        let saved = std::mem::replace(&mut self.self_ty, generics.self_ty);
        let r = self.check_new_fn(f, generics, func_name, call, key, instance_key);
        self.self_ty = saved;
        r
    }

    fn check_new_fn(
        &mut self,
        f: &'m ast::FnItem,
        generics: GenericEnv,
        func_name: String,
        call: Option<Span>,
        key: usize,
        instance_key: (usize, String),
    ) -> CResult<FuncId> {
        let name = &f.name.name;
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
                    return Err(Diagnostic::error(t.span(), "device functions cannot return array references")
                        .label("returns an array reference")
                        .help("return a value (a scalar, a tuple, a struct or a fixed-size array `[T; N]`), or write into a `&mut` array parameter")
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
        let mut inouts = Vec::new();
        for p in &f.params {
            let Some(t) = &p.ty else {
                return Err(Diagnostic::error(p.span, "parameter types must be written").label("missing type").into());
            };
            let ty = self.ty_in(t, f.module, &generics)?;
            if ty == Ty::Unit {
                return Err(Diagnostic::error(t.span(), "parameters cannot have type `()`").label("here").into());
            }
            if super::refs::is_inout(t) || self.is_mutating_closure_ty(ty) {
                if f.is_kernel {
                    return Err(Diagnostic::error(t.span(), "kernel parameters cannot be `&mut` references to values")
                        .label("a `&mut` reference")
                        .help("write results into a `&mut` array parameter: `out: &mut [T]`")
                        .into());
                }
                inouts.push(ty);
            }
            params.push(ty);
        }
        // A function with `&mut` parameters returns their final values beside its result.
        let declared = ret;
        let ret = if inouts.is_empty() {
            ret
        } else {
            let mut parts = Vec::new();
            if ret != Ty::Unit {
                parts.push(ret);
            }
            parts.extend(inouts);
            Ty::Agg(self.types.borrow_mut().intern(AggTy::Tuple(parts)))
        };
        let id = self.reserve(Sig { params, ret });
        self.fn_ids.insert(instance_key, id);
        self.in_progress.push((key, name.clone(), f.name.span));
        let r = crate::stack::ensure(256 << 10, 8 << 20, || {
            let mut cx = FnCx::new(self, None, f.module);
            cx.set_generics(generics);
            cx.check_fn_body(f, func_name, kind, declared)
        });
        let r = r.map(|mut func| {
            func.ref_self = f.receiver == Some(ast::SelfKind::RefMut);
            func
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
                let t = array_of(&self.types.borrow(), e, *ndim, *mutable);
                t.ok_or_else(|| {
                    let d = Diagnostic::error(*span, "array elements must be scalars or structs").label("not a scalar or struct element type");
                    match e {
                        Ty::Enum(_) => d.help("an array of enum values is passed as an array of their discriminants (`&[u8]` for a `#[repr(u8)]` enum), converted with `as` inside the kernel's logic"),
                        _ => d.help("take an array of a struct that holds the values"),
                    }
                    .into()
                })
            }
            TypeExpr::Named(path, span) => self.named_ty_in(path, *span, module, generics),
            TypeExpr::Generic { path, args, span } => self.generic_named_ty(path, args, *span, module, generics),
            // `&T` is passed by value; a `&mut T` parameter's writes are the caller's (the
            // call writes its place back, `refs.rs`).
            TypeExpr::Ref { inner, .. } => self.ty_in(inner, module, generics),
            TypeExpr::Assoc { base, trait_, name, span } => self.assoc_ty(base, trait_.as_deref(), name, *span, module, generics),
            TypeExpr::Infer(span) => Err(Diagnostic::error(*span, "the type placeholder `_` is not allowed here")
                .label("not allowed in this type")
                .help("write the type out")
                .into()),
            TypeExpr::Builtin { name, args, span } => self.frag_type(name, args, *span, module, generics),
            TypeExpr::Tuple(ts, _) => {
                let mut out = Vec::new();
                for t in ts {
                    let ty = self.ty_in(t, module, generics)?;
                    self.component_ty(ty, t.span(), "a tuple element")?;
                    out.push(ty);
                }
                Ok(Ty::Agg(self.types.borrow_mut().intern(AggTy::Tuple(out))))
            }
            TypeExpr::Fixed { elem, len, span } => {
                let e = self.ty_in(elem, module, generics)?;
                self.component_ty(e, elem.span(), "an array element")?;
                let n = self.eval_len(len, module, generics)?;
                let t = Ty::Agg(self.types.borrow_mut().intern(AggTy::Array { elem: e, len: n }));
                self.check_size(t, *span)?;
                Ok(t)
            }
        }
    }

    /// A type named by a path in `module`: an enum, a struct, or `Self`.
    pub(super) fn named_ty(&mut self, path: &[ast::Ident], span: Span, module: ModId) -> CResult<Ty> {
        self.named_ty_in(path, span, module, &GenericEnv::none())
    }

    /// A type named by a path in `module` (`Self` is what `generics` says, else the `impl`
    /// block's type).
    pub(super) fn named_ty_in(&mut self, path: &[ast::Ident], span: Span, module: ModId, generics: &GenericEnv) -> CResult<Ty> {
        if path.len() == 1 && path[0].name == "Self" {
            return generics.self_ty.or(self.self_ty).ok_or_else(|| {
                Diagnostic::error(span, "`Self` is only available in `impl` blocks and traits")
                    .label("`Self` is only available in impls and traits")
                    .into()
            });
        }
        let res =
            if path.len() == 1 { self.m.scopes.type_name(module, &path[0].name) } else { self.m.scopes.path(self.m, module, path)?.1 };
        let name = path.iter().map(|i| i.name.as_str()).collect::<Vec<_>>().join("::");
        match res {
            Some(Res::Item(i)) if self.is_template(i) => {
                let adt = self.adt_of_item(i, span)?;
                if !self.adts.borrow().def(adt).params.is_empty() {
                    let params: Vec<String> = self.adts.borrow().def(adt).params.iter().map(|(n, _)| n.clone()).collect();
                    return Err(Diagnostic::error(span, format!("missing generics for `{name}`"))
                        .label(format!("expected {} generic argument{}", params.len(), super::plural(params.len())))
                        .help(format!("add the arguments: `{name}<{}>`", params.join(", ")))
                        .into());
                }
                self.adt_instance(adt, &[], span)
            }
            Some(Res::Item(i)) if matches!(self.m.items[i], ast::Item::Enum(_)) => Ok(Ty::Enum(self.enum_ty(i)?)),
            Some(Res::Item(i)) if matches!(self.m.items[i], ast::Item::Struct(_)) => Ok(Ty::Agg(self.struct_ty(i, span)?)),
            Some(Res::Item(i)) if matches!(self.m.items[i], ast::Item::Trait(_)) => {
                Err(Diagnostic::error(span, format!("expected a type, found trait `{name}`"))
                    .label("a trait, not a type")
                    .note("trait objects (`dyn Trait`) are not supported in kernels: calls are resolved statically")
                    .help(format!("take a generic parameter bounded by the trait: `fn f<T: {name}>(x: T)` or `x: impl {name}`"))
                    .into())
            }
            Some(Res::Module(_)) => Err(Diagnostic::error(span, "expected a type, found a module").label("a module").into()),
            None if super::templates::is_ordering_path(path) => Ok(Ty::Enum(self.ordering_ty()?)),
            _ if super::templates::is_option_path(path) => Err(Diagnostic::error(span, "missing generics for `Option`")
                .label("expected 1 generic argument")
                .help("write `Option<T>`: `Option<f32>`")
                .into()),
            _ => Err(Diagnostic::error(span, format!("unknown type `{name}`"))
                .label("not a kernel type")
                .help("supported types: the scalars (`f32`, `u8`, `bool`, ..), `&[T]`, `&mut [T]`, `&Array<T, N>`, `&mut Array<T, N>`, `[T; N]`, tuples, `Option<T>`, and the kernel's structs and enums")
                .into()),
        }
    }

    /// The length of a fixed-size array type: a constant `usize` expression, which may name the
    /// const parameters (in a generic definition, whose constants have no values, the length is
    /// [`UNKNOWN_LEN`]).
    pub(super) fn eval_len(&mut self, len: &ast::Expr, module: ModId, generics: &GenericEnv) -> CResult<u64> {
        let scope = generics.const_scope();
        if scope.iter().any(|(_, _, v)| v.is_none()) && super::consts::mentions(len, &scope) {
            self.const_type(len, Some(Scalar::Usize), &scope, module)?;
            if let Some(lens) = &generics.template_lens
                && let Some(x) = super::templates::len_expr(len, &|n| generics.param_index(n))
            {
                let mut l = lens.borrow_mut();
                l.push(x);
                return Ok(super::adt::Adts::len_marker(l.len() - 1));
            }
            return Ok(UNKNOWN_LEN);
        }
        // `[T; D::DIM]` at a definition, where `D` is a parameter: a length of some value.
        let types: Vec<(String, Ty)> = generics.type_params().map(|(n, t)| (n.to_string(), t)).collect();
        if mentions_param_const(len, &types) {
            return Ok(UNKNOWN_LEN);
        }
        let saved = std::mem::replace(&mut self.const_scope, scope);
        let saved_types = std::mem::replace(&mut self.type_scope, types);
        let r = self.eval_const(len, Some(Scalar::Usize), module);
        self.const_scope = saved;
        self.type_scope = saved_types;
        let v = r?.as_i128().unwrap_or(0);
        u64::try_from(v)
            .ok()
            .filter(|n| *n != UNKNOWN_LEN)
            .ok_or_else(|| Diagnostic::error(len.span, format!("array length {v} is too large")).label("not a length").into())
    }

    /// A type that a tuple, an array or a struct may hold: a value (a scalar, an enum, or
    /// another tuple, array or struct), not an array reference or `()`.
    pub(super) fn component_ty(&self, t: Ty, span: Span, what: &str) -> CResult<()> {
        match t {
            Ty::Scalar(_) | Ty::Enum(_) | Ty::Agg(_) | Ty::Param(_) => Ok(()),
            Ty::Array(_) | Ty::ParamArray(_) => Err(Diagnostic::error(span, format!("{what} cannot be an array reference"))
                .label("an array reference")
                .help("tuples, fixed-size arrays and structs hold values; pass array references as parameters of their own")
                .into()),
            Ty::Unit | Ty::Never => Err(Diagnostic::error(span, format!("{what} cannot have type `()`")).label("no value").into()),
        }
    }

    /// Aggregates live in registers or the thread's local memory: a type larger than this is
    /// an error rather than a stack that cannot exist.
    pub(super) fn check_size(&self, t: Ty, span: Span) -> CResult<()> {
        const MAX: u64 = 64 << 10;
        let size = self.types.borrow().size_align(t).map(|s| s.size);
        match size {
            Some(n) if n > MAX => Err(Diagnostic::error(span, format!("a value of {n} bytes is too large"))
                .label(format!("more than {} KiB", MAX >> 10))
                .note("tuples, fixed-size arrays and structs live in registers or the thread's local memory")
                .help("use `shared_array::<T, N>()` or an array parameter for large data")
                .into()),
            _ => Ok(()),
        }
    }
}

/// Whether a constant expression names a constant of a type parameter that has no value here
/// (`D::DIM` at `D`'s definition).
fn mentions_param_const(e: &ast::Expr, types: &[(String, Ty)]) -> bool {
    use ast::ExprKind as A;
    match &e.kind {
        A::ParamConst { param, .. } => types.iter().any(|(n, t)| *n == param.name && matches!(t, Ty::Param(_))),
        A::Unary(_, x) | A::Cast(x, _) => mentions_param_const(x, types),
        A::Binary(_, a, b) | A::Logic(_, a, b) => mentions_param_const(a, types) || mentions_param_const(b, types),
        A::Block(b) => b.tail.as_ref().is_some_and(|t| mentions_param_const(t, types)),
        _ => false,
    }
}
