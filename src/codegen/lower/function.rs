//! Functions and entry points: symbols and signatures, a function's body with its parameters,
//! calls between functions, and the host backend's `(ctx, params)` entry wrapper.

use std::collections::{HashMap, HashSet};

use inkwell::IntPredicate;
use inkwell::attributes::AttributeLoc;
use inkwell::module::Module;
use inkwell::types::{BasicMetadataTypeEnum, BasicType};
use inkwell::values::{BasicMetadataValueEnum, FunctionValue, IntValue};

use super::{ArrayVal, Cx, FnLower, R, Slot, Val, llvm_err, value_ty};
use crate::abi::{entry_symbol, symbol_name};
use crate::ir::*;
use crate::target::Target;

/// The symbol of a function of the program.
pub(super) fn func_symbol(p: &Program, id: FuncId, target: Target) -> String {
    let f = &p.funcs[id];
    match f.kind {
        FuncKind::Kernel | FuncKind::KernelClosure { .. } if id == p.kernel => match target {
            Target::Nvptx(_) => symbol_name(&f.name),
            Target::Host => format!("__kache_kernel_{}_k", symbol_name(&f.name)),
        },
        // Every internal symbol ends in a letter: NVPTX's linking merges a declaration of `f2`
        // into a definition of `f` (names that differ by a digit suffix), so no name may be
        // another one plus digits.
        // Two device functions of the same name (from two modules) are told apart by id.
        FuncKind::Closure { .. } => format!("__kache_cl_{}_k", symbol_name(&f.name)),
        _ if p.funcs.iter().filter(|g| g.name == f.name && !matches!(g.kind, FuncKind::Closure { .. })).count() > 1 => {
            format!("__kache_dev_{}_{id}_k", symbol_name(&f.name))
        }
        _ => format!("__kache_dev_{}_k", symbol_name(&f.name)),
    }
}

impl<'a, 'ctx> Cx<'a, 'ctx> {
    /// The LLVM parameters of one parameter of type `ty`: a kernel takes an aggregate as its
    /// scalars, a device function as a pointer to it (as it takes a `&mut self` receiver).
    pub(super) fn param_types(&self, ty: Ty, kernel: bool, by_ref: bool, out: &mut Vec<BasicMetadataTypeEnum<'ctx>>) {
        if by_ref {
            out.push(self.ptr.into());
            return;
        }
        match value_ty(ty) {
            Ty::Scalar(s) => out.push(self.scalar_ty(s).into()),
            Ty::Array(a) => {
                out.push(self.ptr.into());
                for _ in 0..2 * a.ndim {
                    out.push(self.i64.into());
                }
            }
            t @ Ty::Agg(_) if kernel => {
                for (_, s) in self.types().leaves(t).unwrap_or_default() {
                    out.push(self.scalar_ty(s).into());
                }
            }
            Ty::Agg(_) => out.push(self.ptr.into()),
            _ => {}
        }
    }

    pub(super) fn fn_type(&self, f: &Func, kernel: bool) -> inkwell::types::FunctionType<'ctx> {
        let mut params = Vec::new();
        params.push(self.ptr.into());
        if !self.host {
            params.push(self.i32.into());
            params.extend(self.gpu_slots.iter().map(|_| BasicMetadataTypeEnum::from(self.ptr)));
        }
        if matches!(f.ret, Ty::Agg(_)) {
            // Where the value is returned.
            params.push(self.ptr.into());
        }
        for (i, p) in f.param_decls().iter().enumerate() {
            self.param_types(p.ty, kernel, i == 0 && f.ref_self, &mut params);
        }
        match value_ty(f.ret) {
            Ty::Scalar(s) => self.scalar_ty(s).fn_type(&params, false),
            _ => self.ctx.void_type().fn_type(&params, false),
        }
    }

    pub(super) fn enum_attr(&self, name: &str) -> inkwell::attributes::Attribute {
        self.ctx.create_enum_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id(name), 0)
    }

    pub(super) fn declare(&self, m: &Module<'ctx>, id: FuncId) -> FunctionValue<'ctx> {
        let p = self.input.program;
        let name = func_symbol(p, id, self.target);
        m.get_function(&name).unwrap_or_else(|| m.add_function(&name, self.fn_type(&p.funcs[id], id == p.kernel), None))
    }

    pub(super) fn lower_function(&self, m: &Module<'ctx>, id: FuncId) -> R<()> {
        let p = self.input.program;
        let f = &p.funcs[id];
        let fv = self.declare(m, id);
        let is_kernel = id == p.kernel;
        // Kernels and device functions finish or do something observable, as C++ (CUDA)
        // promises: LLVM may then assume a loop without side effects terminates, which lets it
        // compute trip counts of loops whose index it cannot prove free of wrapping.
        fv.add_attribute(AttributeLoc::Function, self.enum_attr("mustprogress"));
        if !self.host {
            // Every function may reach a warp or block collective (a shuffle, a vote, a barrier),
            // which all the threads it names must meet at the same call: as clang does for CUDA,
            // each function is `convergent` until LLVM proves it reaches none (function-attrs
            // removes the attribute then). Without it LLVM may clone a call into the arms of a
            // divergent branch: call-site splitting did so to the speed suite's scan, giving lane
            // 0 its own copy of a look-back loop full of shuffles and votes, which the warp then
            // ran twice (2.8x slower than NVRTC on the H200).
            fv.add_attribute(AttributeLoc::Function, self.enum_attr("convergent"));
        }
        if is_kernel {
            if let Target::Nvptx(_) = self.target {
                fv.set_call_conventions(71); // ptx_kernel
            }
        } else {
            fv.add_attribute(AttributeLoc::Function, self.enum_attr("alwaysinline"));
        }
        let entry = self.ctx.append_basic_block(fv, "");
        let builder = self.ctx.create_builder();
        builder.position_at_end(entry);
        let mut fl = FnLower {
            cx: self,
            m,
            f,
            fid: id,
            fv,
            b: builder,
            alloca_b: self.ctx.create_builder(),
            entry,
            locals: vec![Slot::None; f.locals.len()],
            written: super::version::written_locals(&f.body),
            loops: HashMap::new(),
            host_ctx: None,
            gpu_fault: None,
            gpu_slots: Vec::new(),
            activemask_sites: 0,
            sret: None,
            proven: HashSet::new(),
            version_depth: 0,
            in_fallback: false,
            guards: 0,
            skip_stmts: Vec::new(),
            aligned_copy: false,
        };
        fl.alloca_b.position_at_end(entry);
        let first = fv.get_nth_param(0).map(|v| v.into_pointer_value()).ok_or_else(|| llvm_err("missing hidden parameter"))?;
        let mut idx = 1u32;
        if self.host {
            fl.host_ctx = Some(first);
        } else {
            let token = fv.get_nth_param(1).map(|v| v.into_int_value()).ok_or_else(|| llvm_err("missing kernel token"))?;
            fl.gpu_fault = Some((first, token));
            idx = 2;
            for _ in &self.gpu_slots {
                fl.gpu_slots.push(fv.get_nth_param(idx).ok_or_else(|| llvm_err("missing capture slot parameter"))?.into_pointer_value());
                idx += 1;
            }
        }
        if matches!(f.ret, Ty::Agg(_)) {
            fl.sret = Some(fv.get_nth_param(idx).ok_or_else(|| llvm_err("sret"))?.into_pointer_value());
            idx += 1;
        }
        let spec = self.input.spec;
        for (li, decl) in f.param_decls().iter().enumerate() {
            if li == 0 && f.ref_self {
                // `&mut self`: the caller's place is the method's `self`.
                let p = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?.into_pointer_value();
                idx += 1;
                fl.locals[li] = match value_ty(decl.ty) {
                    Ty::Scalar(s) => Slot::Scalar(p, s),
                    t => Slot::Agg(p, t),
                };
                continue;
            }
            match value_ty(decl.ty) {
                t @ Ty::Agg(_) if is_kernel => {
                    // The kernel's parameter is its scalars: the value is put back together.
                    let slot = fl.temp(t)?;
                    for (off, s) in self.types().leaves(t).unwrap_or_default() {
                        let v = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?;
                        idx += 1;
                        fl.store_at(slot, off, s, v)?;
                        if self.types().is_tensor_map(t) {
                            fl.tensor_map_acquire(v.into_int_value())?;
                        }
                    }
                    fl.locals[li] = Slot::Agg(slot, t);
                }
                t @ Ty::Agg(_) => {
                    // A copy: the parameter is the callee's own (it may be `mut`).
                    let src = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?.into_pointer_value();
                    idx += 1;
                    let slot = fl.temp(t)?;
                    fl.copy(slot, src, t)?;
                    fl.locals[li] = Slot::Agg(slot, t);
                }
                Ty::Scalar(s) => {
                    let v = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?;
                    idx += 1;
                    fl.locals[li] = fl.scalar_local(li, s, v)?;
                }
                Ty::Array(a) => {
                    let n = a.ndim as u32;
                    if is_kernel && !a.writable && !self.input.options.may_alias {
                        // A read-only array is never written during the launch, through it or
                        // otherwise (a launch refuses one array passed as `&` and `&mut`): on
                        // NVPTX its loads go through the non-coherent cache (`ld.global.nc`).
                        // Not in code compiled for overlapping arrays (`Options::may_alias`).
                        fv.add_attribute(AttributeLoc::Param(idx), self.enum_attr("noalias"));
                        fv.add_attribute(AttributeLoc::Param(idx), self.enum_attr("readonly"));
                    }
                    let ptr = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?.into_pointer_value();
                    let shape: Vec<IntValue> = (0..n).filter_map(|d| fv.get_nth_param(idx + 1 + d)).map(|v| v.into_int_value()).collect();
                    let mut strides: Vec<IntValue> =
                        (0..n).filter_map(|d| fv.get_nth_param(idx + 1 + n + d)).map(|v| v.into_int_value()).collect();
                    idx += 1 + 2 * n;
                    if is_kernel {
                        // The launch's specialisation: contiguous layouts compute their strides.
                        match spec.layouts.get(li).copied().flatten() {
                            Some(Layout::C) => strides = fl.contiguous_strides(&shape, false)?,
                            Some(Layout::F) => strides = fl.contiguous_strides(&shape, true)?,
                            _ => {}
                        }
                    }
                    fl.locals[li] = Slot::Array(ArrayVal { ptr, shape, strides, elem: a.elem });
                }
                _ => {}
            }
        }
        let v = match self.align_plan(id) {
            Some(plan) => fl.aligned_versions(&plan, &f.body)?,
            None => fl.block(&f.body)?,
        };
        if !fl.terminated() {
            match (value_ty(f.ret), v) {
                (Ty::Scalar(_), Val::Scalar(v)) => {
                    fl.b.build_return(Some(&v))?;
                }
                (t @ Ty::Agg(_), Val::Agg(src)) => {
                    let dst = fl.sret.ok_or_else(|| llvm_err("sret"))?;
                    fl.copy(dst, src, t)?;
                    fl.b.build_return(None)?;
                }
                (Ty::Agg(_), _) => {
                    fl.b.build_unreachable()?;
                }
                (Ty::Scalar(_), _) => {
                    fl.b.build_unreachable()?;
                }
                _ => {
                    fl.b.build_return(None)?;
                }
            }
        }
        fl.seal_dead_blocks()?;
        if is_kernel && let Target::Nvptx(_) = self.target {
            let md = self.ctx.metadata_node(&[
                fv.as_global_value().as_pointer_value().into(),
                self.ctx.metadata_string("kernel").into(),
                self.i32.const_int(1, false).into(),
            ]);
            m.add_global_metadata("nvvm.annotations", &md).map_err(|e| llvm_err(e.to_string()))?;
            // `#[kernel(max_threads = N, min_blocks = M)]`: `.maxntid N, 1, 1` and
            // `.minnctapersm M`, which bound the registers ptxas gives each thread.
            if let Some(b) = p.launch_bounds {
                let mut hints = vec![("maxntidx", b.max_threads), ("maxntidy", 1), ("maxntidz", 1)];
                hints.extend(b.min_blocks.map(|m| ("minctasm", m)));
                for (name, value) in hints {
                    let md = self.ctx.metadata_node(&[
                        fv.as_global_value().as_pointer_value().into(),
                        self.ctx.metadata_string(name).into(),
                        self.i32.const_int(value as u64, false).into(),
                    ]);
                    m.add_global_metadata("nvvm.annotations", &md).map_err(|e| llvm_err(e.to_string()))?;
                }
            }
        }
        Ok(())
    }

    /// `void entry(HostCtx*, void** params)`: loads each flattened parameter through its pointer
    /// and calls the kernel.
    pub(super) fn host_entry(&self, m: &Module<'ctx>, id: FuncId) -> R<()> {
        let p = self.input.program;
        let kernel = self.declare(m, id);
        let ty = self.ctx.void_type().fn_type(&[self.ptr.into(), self.ptr.into()], false);
        let w = m.add_function(&entry_symbol(p, self.target), ty, None);
        let bb = self.ctx.append_basic_block(w, "");
        let b = self.ctx.create_builder();
        b.position_at_end(bb);
        let ctx = w.get_nth_param(0).ok_or_else(|| llvm_err("ctx"))?.into_pointer_value();
        let params = w.get_nth_param(1).ok_or_else(|| llvm_err("params"))?.into_pointer_value();
        let mut args: Vec<BasicMetadataValueEnum> = vec![ctx.into()];
        let mut flat = Vec::new();
        for decl in p.funcs[id].param_decls() {
            match value_ty(decl.ty) {
                Ty::Scalar(s) => flat.push(Some(s)),
                Ty::Array(a) => {
                    flat.push(None);
                    for _ in 0..2 * a.ndim {
                        flat.push(Some(Scalar::I64));
                    }
                }
                t @ Ty::Agg(_) => flat.extend(self.types().leaves(t).unwrap_or_default().into_iter().map(|(_, s)| Some(s))),
                _ => {}
            }
        }
        for (i, s) in flat.into_iter().enumerate() {
            // SAFETY: `params` holds one pointer per flattened parameter, so slot `i` is inside it.
            let slot = unsafe { b.build_gep(self.ptr, params, &[self.i64.const_int(i as u64, false)], "")? };
            let arg_ptr = b.build_load(self.ptr, slot, "")?.into_pointer_value();
            let v = match s {
                None => b.build_load(self.ptr, arg_ptr, "")?,
                Some(Scalar::Bool) => {
                    let byte = b.build_load(self.i8, arg_ptr, "")?.into_int_value();
                    b.build_int_compare(IntPredicate::NE, byte, self.i8.const_zero(), "")?.into()
                }
                Some(s) => b.build_load(self.scalar_ty(s), arg_ptr, "")?,
            };
            args.push(v.into());
        }
        b.build_call(kernel, &args, "")?;
        b.build_return(None)?;
        Ok(())
    }
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    pub(super) fn push_args(&mut self, e: &Expr, out: &mut Vec<BasicMetadataValueEnum<'ctx>>) -> R<()> {
        match e.ty {
            Ty::Array(_) => {
                let a = self.expr(e)?.array()?;
                out.push(a.ptr.into());
                out.extend(a.shape.iter().map(|v| BasicMetadataValueEnum::from(*v)));
                out.extend(a.strides.iter().map(|v| BasicMetadataValueEnum::from(*v)));
            }
            Ty::Agg(_) => out.push(self.agg_of(e)?.into()),
            _ => out.push(self.scalar_of(e)?.into()),
        }
        Ok(())
    }

    pub(super) fn call(&mut self, id: FuncId, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        self.call_with(id, None, args, ty)
    }

    /// A call of a `&mut self` method: the receiver's place is passed by address.
    pub(super) fn call_ref(&mut self, id: FuncId, receiver: &Place, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let p = match self.place_addr(receiver)? {
            super::aggregate::Addr::Reg(p, _) | super::aggregate::Addr::Mem(p, _) => p,
        };
        self.call_with(id, Some(p), args, ty)
    }

    fn call_with(&mut self, id: FuncId, receiver: Option<inkwell::values::PointerValue<'ctx>>, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let callee = self.cx.declare(self.m, id);
        let mut a: Vec<BasicMetadataValueEnum> = Vec::new();
        if let Some(ctx) = self.host_ctx {
            a.push(ctx.into());
        }
        if let Some((record, token)) = self.gpu_fault {
            a.push(record.into());
            a.push(token.into());
            a.extend(self.gpu_slots.iter().map(|p| BasicMetadataValueEnum::from(*p)));
        }
        let sret = match ty {
            t @ Ty::Agg(_) => {
                let p = self.temp(t)?;
                a.push(p.into());
                Some(p)
            }
            _ => None,
        };
        if let Some(r) = receiver {
            a.push(r.into());
        }
        for e in args {
            self.push_args(e, &mut a)?;
        }
        let c = self.b.build_call(callee, &a, "")?;
        if self.cx.may_fault[id] {
            self.propagate_exit()?;
        }
        if let Some(p) = sret {
            return Ok(Val::Agg(p));
        }
        Ok(match value_ty(ty) {
            Ty::Scalar(_) => Val::Scalar(c.try_as_basic_value().basic().ok_or_else(|| llvm_err("call value"))?),
            Ty::Never => {
                self.b.build_unreachable()?;
                self.start_dead_block();
                Val::Never
            }
            _ => Val::Unit,
        })
    }
}
