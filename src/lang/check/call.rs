//! Calls: device functions and closures, builtin functions (thread indices, atomics, shared memory)
//! and methods on numbers and arrays.

use crate::ir::*;
use crate::lang::ast::{self, ExprKind as A, GenericArg, TypeExpr};
use crate::lang::builtins::{self, ArgTy, Function, Receiver};
use crate::lang::diag::Diagnostic;
use crate::span::Span;

use super::aggregates::Operand;
use super::body::{CExpr, FnCx};
use super::generics::{array_of, array_view};
use super::unify::Class;
use super::unify::Compound;
use super::{CResult, close_matches, plural};

impl<'c, 'm> FnCx<'c, 'm> {
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
            return Err(d.into());
        }
        Ok(())
    }

    pub(super) fn call_fn(&mut self, id: FuncId, name: &str, args: &[ast::Expr], span: Span, decl: Option<Span>) -> CResult<CExpr> {
        let sig = self.mcx.sigs[id].clone();
        self.arity(name, sig.params.len(), args.len(), span, decl)?;
        let out = self.call_args(args, &sig.params, span)?;
        if !self.callees.contains(&id) {
            self.callees.push(id);
        }
        Ok(self.mk(ExprKind::Call(id, out), sig.ret, span))
    }

    /// The arguments of a call, each checked against its parameter's type.
    fn call_args(&mut self, args: &[ast::Expr], params: &[Ty], span: Span) -> CResult<Vec<CExpr>> {
        let mut out = Vec::new();
        for (a, p) in args.iter().zip(params) {
            let x = self.expr(a)?;
            let want = self.u.known(*p);
            self.assign_compatible(want, &x, span)?;
            out.push(x);
        }
        Ok(out)
    }

    pub(super) fn builtin_call(
        &mut self,
        b: Function,
        func: &ast::Ident,
        generics: &[GenericArg],
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
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
                let want = match bi {
                    Builtin::AtomicCas => 3,
                    Builtin::AtomicLoad => 1,
                    _ => 2,
                };
                self.arity(name, want, args.len(), span, None)?;
                // `atomic_load` reads, so it takes `&a[i]` (as Rust's `load(&self)`); `&mut a[i]`
                // says no more than that and is accepted too.
                let load = bi == Builtin::AtomicLoad;
                let form = if load { format!("`{name}(&a[i])`") } else { format!("`{name}(&mut a[i], ..)`") };
                let target = match &args[0].kind {
                    A::RefMut(target) => target,
                    A::Ref(target) if load => target,
                    _ => {
                        let (first, expected) = if load {
                            ("`&a[i]`", "expected a reference to an array element")
                        } else {
                            ("`&mut a[i]`", "expected a mutable reference to an array element")
                        };
                        return Err(Diagnostic::error(args[0].span, format!("the first argument of `{name}` is {first}"))
                            .label(expected)
                            .help(format!("write {form}"))
                            .into());
                    }
                };
                let A::Index { .. } = target.kind else {
                    return Err(Diagnostic::error(target.span, "atomics operate on array elements")
                        .label("not an array element")
                        .help(format!("write {form}"))
                        .into());
                };
                let (place, pty) = if load { self.atomic_load_place(target)? } else { self.place(target)? };
                let Place::Index(arr, idx) = place else {
                    return Err(Diagnostic::error(target.span, "atomics operate on array elements")
                        .label("not an array element")
                        .help(format!("write {form}"))
                        .into());
                };
                self.atomic_element(bi, name, pty, target.span)?;
                let elem_ref = Expr { kind: ExprKind::Index(arr, idx), ty: pty, span: target.span };
                let mut out = vec![elem_ref];
                for a in &args[1..] {
                    let x = self.expr(a)?;
                    if matches!(bi, Builtin::AtomicInc | Builtin::AtomicDec) {
                        let u = self.u.known(Ty::Scalar(Scalar::U32));
                        self.unify_or(x.span, u, x.ty, &format!(" (the limit of `{name}`)"))?;
                    } else {
                        self.unify_or(x.span, pty, x.ty, &format!(" (the element type of the array `{name}` updates)"))?;
                    }
                    out.push(x);
                }
                let ty = if bi == Builtin::AtomicStore { self.u.known(Ty::Unit) } else { pty };
                Ok(Expr { kind: ExprKind::Builtin(bi, out), ty, span })
            }
            Function::WarpQuery(bi) => {
                self.no_generics(generics)?;
                self.arity(name, 0, args.len(), span, None)?;
                Ok(self.mk(ExprKind::Builtin(bi, Vec::new()), Ty::Scalar(Scalar::U32), span))
            }
            Function::Fence(scope) => {
                self.no_generics(generics)?;
                self.arity(name, 0, args.len(), span, None)?;
                Ok(self.mk(ExprKind::Builtin(Builtin::Fence(scope), Vec::new()), Ty::Unit, span))
            }
            Function::ActiveMask => {
                self.no_generics(generics)?;
                self.arity(name, 0, args.len(), span, None)?;
                self.uses_block_sync = true;
                Ok(self.mk(ExprKind::Builtin(Builtin::ActiveMask, Vec::new()), Ty::Scalar(Scalar::U32), span))
            }
            Function::SyncWarp => {
                self.no_generics(generics)?;
                self.arity(name, 1, args.len(), span, None)?;
                let mask = self.mask_arg(name, &args[0])?;
                self.uses_block_sync = true;
                Ok(self.mk(ExprKind::Builtin(Builtin::SyncWarp, vec![mask]), Ty::Unit, span))
            }
            Function::Vote(bi) => {
                self.no_generics(generics)?;
                self.arity(name, 2, args.len(), span, None)?;
                let mask = self.mask_arg(name, &args[0])?;
                let pred = self.expr(&args[1])?;
                let b = self.u.known(Ty::Scalar(Scalar::Bool));
                self.unify_or(pred.span, b, pred.ty, &format!(" (the predicate of `{name}`)"))?;
                self.uses_block_sync = true;
                let ty = if bi == Builtin::Ballot { Scalar::U32 } else { Scalar::Bool };
                Ok(self.mk(ExprKind::Builtin(bi, vec![mask, pred]), Ty::Scalar(ty), span))
            }
            Function::Shuffle(mode) => {
                self.no_generics(generics)?;
                if args.len() != 3 && args.len() != 4 {
                    let what = if mode == ShflMode::Idx {
                        "lane"
                    } else if mode == ShflMode::Xor {
                        "lane_mask"
                    } else {
                        "delta"
                    };
                    return Err(Diagnostic::error(
                        span,
                        format!(
                            "`{name}` takes 3 arguments (or 4 with a width) but {} {} supplied",
                            args.len(),
                            if args.len() == 1 { "was" } else { "were" }
                        ),
                    )
                    .label("expected 3 arguments")
                    .help(format!("write `{name}(mask, value, {what})` or `{name}(mask, value, {what}, width)`"))
                    .into());
                }
                let mask = self.mask_arg(name, &args[0])?;
                let v = self.expr(&args[1])?;
                self.need(v.ty, Class::Numeric, v.span, format!("`{name}`"))
                    .map_err(|d| d.help("warp shuffles move integers and floats; convert a `bool` with `as u32`"))?;
                let lane = self.u32_arg(name, &args[2], "lane")?;
                let width = match args.get(3) {
                    Some(w) => Some(self.u32_arg(name, w, "width")?),
                    None => None,
                };
                let width_c = width.as_ref().and_then(const_u128);
                if let (Some(w), Some(we)) = (width_c, &width)
                    && (w == 0 || w > builtins::WARP_SIZE as u128 || !w.is_power_of_two())
                {
                    return Err(Diagnostic::error(we.span, format!("a shuffle width of {w} is not a power of two from 1 to 32"))
                        .label("invalid width")
                        .help("the width splits the warp into segments of 1, 2, 4, 8, 16 or 32 lanes")
                        .into());
                }
                if let Some(l) = const_u128(&lane) {
                    let limit = width_c.unwrap_or(builtins::WARP_SIZE as u128);
                    if l >= limit {
                        let what = match mode {
                            ShflMode::Idx => "lane",
                            ShflMode::Xor => "lane mask",
                            _ => "delta",
                        };
                        return Err(Diagnostic::error(
                            lane.span,
                            format!("{what} {l} is out of range for a warp segment of {limit} lanes"),
                        )
                        .label(format!("expected 0..{limit}"))
                        .note("lanes are numbered 0 to 31 within a warp (0 to width - 1 within a segment)")
                        .into());
                    }
                }
                self.uses_block_sync = true;
                let vty = v.ty;
                let mut out = vec![mask, v, lane];
                out.extend(width);
                Ok(Expr { kind: ExprKind::Builtin(Builtin::Shfl(mode), out), ty: vty, span })
            }
            Function::Tensor(t) => self.tensor_call(t, func, generics, args, span),
            Function::SharedArray => {
                self.arity(name, 0, args.len(), span, None)?;
                let usage = "write `shared_array::<T, N>()`, for example `shared_array::<f32, 256>()`";
                // A bare name in the element's place was parsed as a constant: a struct's name.
                let named;
                let (t, n) = match generics {
                    [GenericArg::Type(t), GenericArg::Const(n)] => (t, n),
                    [GenericArg::Const(ast::Expr { kind: A::Path(name), span: at }), GenericArg::Const(n)] => {
                        named = TypeExpr::Named(vec![name.clone()], *at);
                        (&named, n)
                    }
                    _ => {
                        return Err(Diagnostic::error(span, "`shared_array` needs an element type and a length")
                            .label("missing generic arguments")
                            .help(usage)
                            .into());
                    }
                };
                let elem_ty = self.shared_elem(t)?;
                let len = self.eval_const_here(n, Some(Scalar::Usize)).map_err(|d| d.help(usage))?;
                let elem = self.mcx.types.borrow().elem_of(elem_ty);
                let Some((elem, len)) = elem.zip(len.map(|l| l.as_i128().unwrap_or(0) as u64)) else {
                    // A definition: the element type or the length depends on the instance, which
                    // checks them. Nothing here is compiled.
                    self.uses_block_sync = true;
                    let ty = array_of(&self.mcx.types.borrow(), elem_ty, 1, true).unwrap_or(Ty::Unit);
                    return Ok(self.mk(ExprKind::SharedArray { elem: Elem::Scalar(Scalar::U32), len: 1, site: usize::MAX }, ty, span));
                };
                if len == 0 {
                    return Err(Diagnostic::error(n.span, "a shared array needs at least one element")
                        .label("zero length")
                        .help("give the number of elements, for example `shared_array::<f32, 256>()`")
                        .into());
                }
                let bytes = len.saturating_mul(self.mcx.types.borrow().elem_size(elem));
                if bytes > builtins::MAX_SHARED_BYTES {
                    return Err(Diagnostic::error(n.span, format!("shared array of {bytes} bytes is too large"))
                        .label(format!("more than {} bytes", builtins::MAX_SHARED_BYTES))
                        .help("static shared memory is limited to 48 KiB per block; use `dynamic_shared_array::<T>()` for more")
                        .into());
                }
                self.uses_block_sync = true;
                let site = self.shared_sites;
                self.shared_sites += 1;
                Ok(self.mk(ExprKind::SharedArray { elem, len, site }, Ty::Array(ArrayTy { elem, ndim: 1, writable: true }), span))
            }
            Function::DynSharedArray => {
                self.arity(name, 0, args.len(), span, None)?;
                let named;
                let t = match generics {
                    [GenericArg::Type(t)] => t,
                    [GenericArg::Const(ast::Expr { kind: A::Path(name), span: at })] => {
                        named = TypeExpr::Named(vec![name.clone()], *at);
                        &named
                    }
                    _ => {
                        return Err(Diagnostic::error(span, "`dynamic_shared_array` needs an element type")
                            .label("missing generic argument")
                            .help("write `dynamic_shared_array::<f32>()`")
                            .into());
                    }
                };
                let elem_ty = self.shared_elem(t)?;
                self.uses_block_sync = true;
                let ty = array_of(&self.mcx.types.borrow(), elem_ty, 1, true).unwrap_or(Ty::Unit);
                // At a definition the element type is a parameter; nothing there is compiled.
                let elem = self.mcx.types.borrow().elem_of(elem_ty).unwrap_or(Elem::Scalar(Scalar::U32));
                Ok(self.mk(ExprKind::DynSharedArray(elem), ty, span))
            }
        }
    }

    /// The element type of a shared array: a scalar, a struct, or a type parameter.
    fn shared_elem(&mut self, t: &TypeExpr) -> CResult<Ty> {
        let named_struct = match t {
            TypeExpr::Named(..) | TypeExpr::Generic { .. } => {
                matches!(self.ty_of(t)?, Ty::Agg(id) if self.mcx.types.borrow().strukt(id).is_some())
            }
            _ => false,
        };
        match t {
            TypeExpr::Scalar(..) | TypeExpr::Param(_) => self.ty_of(t),
            TypeExpr::Named(..) | TypeExpr::Generic { .. } if named_struct => self.ty_of(t),
            other => Err(Diagnostic::error(other.span(), "shared array elements are scalars or structs")
                .label("not a scalar type")
                .help("write `shared_array::<f32, 256>()`")
                .into()),
        }
    }

    /// The element of `atomic_load(&a[i])`: an element of a writable array. A read-only array
    /// is written by nothing during a launch (a launch refuses one passed as `&` and `&mut`), so
    /// `a[i]` reads the same; its loads go through the non-coherent cache, which has no atomic
    /// form.
    fn atomic_load_place(&mut self, target: &ast::Expr) -> CResult<(Place<super::unify::H>, super::unify::H)> {
        let Operand::Place(p, h) = self.operand(target)? else {
            return Err(Diagnostic::error(target.span, "atomics operate on array elements").label("not an array element").into());
        };
        if let Place::Index(a, _) = &p
            && let Some(at) = self.u.ty(a.ty).and_then(array_view)
            && !at.writable
        {
            let (name, why, _) = self.readonly_reason(a, super::place::index_root(target));
            return Err(Diagnostic::error(
                target.span,
                format!("`atomic_load` reads an element of a writable array; `{name}` is read-only"),
            )
            .label(why)
            .help(format!("read it as `{name}[..]` (nothing writes a read-only array during a launch), or take the array as `&mut`"))
            .note("`atomic_load` is for elements other threads write: those of `&mut` arrays and shared arrays")
            .into());
        }
        Ok((p, h))
    }

    /// The element type an atomic updates must suit the operation: numbers for add, max, min
    /// and exch, integers for the bitwise ops and sub, `u32` for inc and dec, 32- and 64-bit
    /// integers and floats for load and store.
    fn atomic_element(&mut self, bi: Builtin, name: &str, pty: super::unify::H, span: Span) -> CResult<()> {
        let (class, on) = match bi {
            Builtin::AtomicCas => (Class::Scalar, "integers and floats"),
            Builtin::AtomicSub | Builtin::AtomicAnd | Builtin::AtomicOr | Builtin::AtomicXor => (Class::Int, "integers"),
            Builtin::AtomicInc | Builtin::AtomicDec => (Class::Int, "`u32`"),
            Builtin::AtomicLoad | Builtin::AtomicStore => (Class::Numeric, "32- and 64-bit integers and floats"),
            _ => (Class::Numeric, "integers and floats"),
        };
        let help = |d: Diagnostic| d.help(format!("`{name}` takes {on}"));
        self.need(pty, class, span, format!("`{name}`")).map_err(|d| help(*d))?;
        match self.u.ty(pty) {
            Some(Ty::Scalar(Scalar::Bool)) => {
                Err(help(Diagnostic::error(span, format!("`{name}` does not take `bool` elements")).label("here")).into())
            }
            Some(Ty::Scalar(s)) if matches!(bi, Builtin::AtomicLoad | Builtin::AtomicStore) && s.size() < 4 => Err(help(
                Diagnostic::error(span, format!("`{name}` takes 32- and 64-bit elements, not `{s}`"))
                    .label(format!("a {}-bit element", s.bits()))
                    .note("atomic loads and stores move 32- and 64-bit words: a flag is a `u32`"),
            )
            .into()),
            Some(Ty::Scalar(s)) if matches!(bi, Builtin::AtomicInc | Builtin::AtomicDec) && s != Scalar::U32 => Err(help(
                Diagnostic::error(span, format!("`{name}` takes `u32` elements, not `{s}`"))
                    .label("not `u32`")
                    .note("CUDA's atomicInc and atomicDec wrap at a limit and exist for 32-bit unsigned integers only"),
            )
            .into()),
            _ => Ok(()),
        }
    }

    /// A `u32` argument of a warp-level builtin (or an mbarrier's).
    pub(super) fn u32_arg(&mut self, name: &str, a: &ast::Expr, what: &str) -> CResult<CExpr> {
        let x = self.expr(a)?;
        let u = self.u.known(Ty::Scalar(Scalar::U32));
        self.unify_or(x.span, u, x.ty, &format!(" (the {what} of `{name}` is a `u32`)"))?;
        Ok(x)
    }

    /// The lane mask of a warp-level builtin: a `u32` naming at least one lane.
    fn mask_arg(&mut self, name: &str, a: &ast::Expr) -> CResult<CExpr> {
        let m = self.u32_arg(name, a, "mask")?;
        if const_u128(&m) == Some(0) {
            return Err(Diagnostic::error(m.span, format!("the mask of `{name}` names no lane"))
                .label("mask 0")
                .help("bit i of the mask stands for lane i; `0xffff_ffff` is the whole warp, `activemask()` the lanes here now")
                .into());
        }
        Ok(m)
    }

    /// A builtin method: on numbers, arrays and fixed-size arrays.
    pub(super) fn builtin_method(
        &mut self,
        r: Operand,
        receiver: &ast::Expr,
        method: &ast::Ident,
        args: &[ast::Expr],
        span: Span,
    ) -> CResult<CExpr> {
        let name = method.name.as_str();
        let rh = match &r {
            Operand::Place(_, h) => *h,
            Operand::Value(v) => v.ty,
        };
        if let Some(Compound::Array(_, n)) = self.u.compound(rh) {
            if name == "len" {
                self.arity(name, 0, args.len(), span, None)?;
                return Ok(self.mk(ExprKind::Lit(ScalarValue::Int(Scalar::Usize, n)), Ty::Scalar(Scalar::Usize), span));
            }
            let d = self.u.describe(rh);
            return Err(Diagnostic::error(method.span, format!("no method `{name}` on type `{d}`"))
                .label("unknown method")
                .note("fixed-size arrays have `len()`")
                .into());
        }
        if let Some(Compound::Tuple(_)) = self.u.compound(rh) {
            let d = self.u.describe(rh);
            return Err(Diagnostic::error(method.span, format!("no method `{name}` on type `{d}`")).label("unknown method").into());
        }
        let r = self.operand_value(r, receiver.span);
        if let Some(at) = self.u.ty(r.ty).and_then(array_view) {
            let Some(&(_, b, nargs)) = builtins::ARRAY_METHODS.iter().find(|(n, _, _)| *n == name) else {
                let close = close_matches(name, builtins::ARRAY_METHODS.iter().map(|(n, _, _)| *n));
                let mut d = Diagnostic::error(method.span, format!("no method `{name}` on arrays"))
                    .label("unknown method")
                    .note("array methods: `len()`, `shape(d)`, `stride(d)`");
                if let Some(c) = close.first() {
                    d = d.help(format!("did you mean `{c}`?"));
                }
                return Err(d.into());
            };
            self.arity(name, nargs, args.len(), span, None)?;
            let mut out = vec![r];
            if nargs == 1 {
                if at.ndim == 0 {
                    return Err(Diagnostic::error(method.span, format!("a 0-d array has no `{name}`")).label("no dimensions").into());
                }
                let x = self.expr(&args[0])?;
                let u = self.u.known(Ty::Scalar(Scalar::Usize));
                self.unify_or(x.span, u, x.ty, " (dimensions are `usize`)")?;
                if let ExprKind::PendingLit(PendingLit { int: Some(d), .. }) = x.kind
                    && d >= at.ndim as u128
                {
                    return Err(Diagnostic::error(x.span, format!("dimension {d} is out of range for a {}-d array", at.ndim))
                        .label(format!("valid dimensions: 0..{}", at.ndim))
                        .into());
                }
                out.push(x);
            }
            return Ok(self.mk(ExprKind::Builtin(b, out), Ty::Scalar(Scalar::Usize), span));
        }
        if let Some(Ty::Unit) = self.u.ty(r.ty) {
            return Err(Diagnostic::error(method.span, format!("no method `{name}` on type `()`")).label("unknown method").into());
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
            return Err(diag.into());
        };
        self.arity(name, def.args, args.len(), span, None)?;
        let class = match def.receiver {
            Receiver::Float => Class::Float,
            Receiver::Int => Class::Int,
            Receiver::SignedOrFloat => Class::SignedOrFloat,
            Receiver::Numeric => Class::Numeric,
            Receiver::SignedInt => Class::SignedInt,
        };
        let on_param = matches!(self.u.ty(r.ty), Some(Ty::Param(_)));
        self.need(r.ty, class, method.span, format!("method `{name}`")).map_err(|d| {
            if on_param {
                // The bound is what to change, not the value.
                return *d;
            }
            let on = match def.receiver {
                Receiver::Float => "floats (`f16`, `bf16`, `f32`, `f64`)",
                Receiver::Int => "integers",
                Receiver::SignedOrFloat => "signed integers and floats",
                Receiver::Numeric => "numbers",
                Receiver::SignedInt => "signed integers",
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
                ArgTy::U32 => self.u.known(Ty::Scalar(Scalar::U32)),
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
            builtins::RetTy::Bool => self.u.known(Ty::Scalar(Scalar::Bool)),
            builtins::RetTy::SelfPair => self.u.tuple(vec![rty, rty]),
            builtins::RetTy::Unsigned => {
                // Rust's `abs_diff` answers in the unsigned type of the receiver's width: the
                // receiver's type must be known here.
                let s = match self.u.ty(rty) {
                    Some(Ty::Scalar(s)) => s,
                    _ => {
                        self.u.settle(rty);
                        self.u.ty(rty).and_then(|t| t.scalar()).unwrap_or(Scalar::I32)
                    }
                };
                self.u.known(Ty::Scalar(unsigned_of(s)))
            }
        };
        Ok(Expr { kind: ExprKind::Builtin(Builtin::Math(def.func), out), ty, span })
    }
}

/// The value of an integer literal or constant, where the argument is one.
fn const_u128(e: &CExpr) -> Option<u128> {
    match &e.kind {
        ExprKind::PendingLit(PendingLit { int: Some(v), neg: false, .. }) => Some(*v),
        ExprKind::Lit(v @ ScalarValue::Int(..)) => v.as_i128().and_then(|v| u128::try_from(v).ok()),
        _ => None,
    }
}

/// The unsigned integer type of `s`'s width (`s` itself when unsigned).
fn unsigned_of(s: Scalar) -> Scalar {
    match s {
        Scalar::I8 => Scalar::U8,
        Scalar::I16 => Scalar::U16,
        Scalar::I32 => Scalar::U32,
        Scalar::I64 => Scalar::U64,
        other => other,
    }
}
