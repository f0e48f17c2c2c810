//! Lowering of checked IR into LLVM IR, one module per function.
//!
//! Value representation: scalars are LLVM scalars (`bool` is `i1` in registers, one byte in
//! memory); an array is a pointer (generic address space), one `i64` extent per dimension and
//! one `i64` stride per dimension, counted in elements. Array parameters are passed flattened in
//! that order. On the host backend every function takes a hidden first parameter: a pointer to
//! the thread's `HostCtx` (indices, shared memory, barrier).
//!
//! Defined behaviour where Rust would panic: integer division by zero gives 0 (and `%` gives 0),
//! `MIN / -1` wraps, shift amounts are masked to the operand's width, float-to-int casts
//! saturate (Rust's `as`), arithmetic wraps.

use std::collections::HashMap;

use inkwell::attributes::AttributeLoc;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::llvm_sys;
use inkwell::module::{Linkage, Module};
use inkwell::targets::TargetMachine;
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum, FloatType, IntType};
use inkwell::values::{AsValueRef, BasicMetadataValueEnum, BasicValue, BasicValueEnum, FunctionValue, IntValue, PointerValue};
use inkwell::{AddressSpace, AtomicOrdering, AtomicRMWBinOp, FloatPredicate, IntPredicate};

use super::{CodegenError, CompileInput};
use crate::abi::{CaptureData, entry_symbol, host_ctx_layout, shared_offsets, symbol_name};
use crate::ir::*;
use crate::lang::builtins;
use crate::target::Target;

/// Lowering errors: a real error, or the signal that an operand diverged (`return`, `break`,
/// ..) so the expression around it is never evaluated and is not built.
#[derive(Debug)]
enum LErr {
    Diverged,
    Codegen(CodegenError),
}

impl From<CodegenError> for LErr {
    fn from(e: CodegenError) -> LErr {
        LErr::Codegen(e)
    }
}

impl From<inkwell::builder::BuilderError> for LErr {
    fn from(e: inkwell::builder::BuilderError) -> LErr {
        LErr::Codegen(e.into())
    }
}

fn llvm_err(m: impl Into<String>) -> LErr {
    LErr::Codegen(CodegenError::Llvm(m.into()))
}

type R<T> = Result<T, LErr>;

/// The symbol of a function of the program.
fn func_symbol(p: &Program, id: FuncId, target: Target) -> String {
    let f = &p.funcs[id];
    match f.kind {
        FuncKind::Kernel | FuncKind::KernelClosure { .. } if id == p.kernel => match target {
            Target::Nvptx(_) => symbol_name(&f.name),
            Target::Host => format!("__kache_kernel_{}_k", symbol_name(&f.name)),
        },
        // Every internal symbol ends in a letter: NVPTX's linking merges a declaration of `f2`
        // into a definition of `f` (names that differ by a digit suffix), so no name may be
        // another one plus digits.
        FuncKind::Closure { .. } => format!("__kache_cl_{}_k", symbol_name(&f.name)),
        _ => format!("__kache_dev_{}_k", symbol_name(&f.name)),
    }
}

struct Cx<'a, 'ctx> {
    ctx: &'ctx Context,
    input: &'a CompileInput<'a>,
    target: Target,
    host: bool,
    shared: HashMap<(FuncId, usize), u64>,
    i1: IntType<'ctx>,
    i8: IntType<'ctx>,
    i32: IntType<'ctx>,
    i64: IntType<'ctx>,
    ptr: inkwell::types::PointerType<'ctx>,
    triple: inkwell::targets::TargetTriple,
    layout: String,
}

/// Lowers every function of the program into its own module; index = `FuncId`. Each module is
/// verified, so an invalid one is an error here rather than an abort later.
pub fn lower_program<'ctx>(ctx: &'ctx Context, input: &CompileInput<'_>, tm: &TargetMachine) -> Result<Vec<Module<'ctx>>, CodegenError> {
    let modules = lower_all(ctx, input, tm).map_err(|e| match e {
        LErr::Codegen(c) => c,
        LErr::Diverged => CodegenError::Llvm("a function body diverged outside any expression".into()),
    })?;
    for m in &modules {
        m.verify().map_err(|e| CodegenError::Llvm(format!("verify {}: {}", m.get_name().to_string_lossy(), e.to_string())))?;
    }
    Ok(modules)
}

fn lower_all<'ctx>(ctx: &'ctx Context, input: &CompileInput<'_>, tm: &TargetMachine) -> R<Vec<Module<'ctx>>> {
    let target = input.options.target;
    let (shared, _) = shared_offsets(input.program);
    let cx = Cx {
        ctx,
        input,
        target,
        host: target == Target::Host,
        shared,
        i1: ctx.bool_type(),
        i8: ctx.i8_type(),
        i32: ctx.i32_type(),
        i64: ctx.i64_type(),
        ptr: ctx.ptr_type(AddressSpace::default()),
        triple: tm.get_triple(),
        layout: tm.get_target_data().get_data_layout().as_str().to_str().unwrap_or("").to_string(),
    };
    let _ = &cx.layout;
    let data_layout = tm.get_target_data().get_data_layout();
    let mut out = Vec::new();
    for (id, _) in input.program.funcs.iter().enumerate() {
        let m = ctx.create_module(&func_symbol(input.program, id, target));
        m.set_triple(&cx.triple);
        m.set_data_layout(&data_layout);
        if let Target::Nvptx(_) = target {
            let flag = ctx.i32_type().const_int(0, false);
            m.add_basic_value_flag("nvvm-reflect-ftz", inkwell::module::FlagBehavior::Override, flag);
        }
        cx.lower_function(&m, id)?;
        if id == input.program.kernel && cx.host {
            cx.host_entry(&m, id)?;
        }
        out.push(m);
    }
    Ok(out)
}

#[derive(Clone, Debug)]
struct ArrayVal<'ctx> {
    ptr: PointerValue<'ctx>,
    shape: Vec<IntValue<'ctx>>,
    strides: Vec<IntValue<'ctx>>,
    elem: Scalar,
}

#[derive(Clone, Debug)]
enum Val<'ctx> {
    Unit,
    Never,
    Scalar(BasicValueEnum<'ctx>),
    Array(ArrayVal<'ctx>),
}

impl<'ctx> Val<'ctx> {
    fn array(&self) -> R<ArrayVal<'ctx>> {
        match self {
            Val::Array(a) => Ok(a.clone()),
            Val::Never => Err(LErr::Diverged),
            other => Err(llvm_err(format!("expected an array value, found {other:?}"))),
        }
    }
}

#[derive(Clone)]
enum Slot<'ctx> {
    Scalar(PointerValue<'ctx>, Scalar),
    Array(ArrayVal<'ctx>),
    None,
}

struct LoopBlocks<'ctx> {
    cont: BasicBlock<'ctx>,
    exit: BasicBlock<'ctx>,
    value: Option<(PointerValue<'ctx>, Scalar)>,
}

impl<'a, 'ctx> Cx<'a, 'ctx> {
    fn scalar_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        match s {
            Scalar::Bool => self.i1.into(),
            Scalar::I8 | Scalar::U8 => self.i8.into(),
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::Bf16 => self.ctx.i16_type().into(),
            Scalar::I32 | Scalar::U32 => self.i32.into(),
            Scalar::I64 | Scalar::U64 | Scalar::Usize => self.i64.into(),
            Scalar::F32 => self.ctx.f32_type().into(),
            Scalar::F64 => self.ctx.f64_type().into(),
        }
    }

    fn mem_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        if s == Scalar::Bool { self.i8.into() } else { self.scalar_ty(s) }
    }

    fn param_types(&self, ty: Ty, out: &mut Vec<BasicMetadataTypeEnum<'ctx>>) {
        match ty {
            Ty::Scalar(s) => out.push(self.scalar_ty(s).into()),
            Ty::Array(a) => {
                out.push(self.ptr.into());
                for _ in 0..2 * a.ndim {
                    out.push(self.i64.into());
                }
            }
            _ => {}
        }
    }

    fn fn_type(&self, f: &Func) -> inkwell::types::FunctionType<'ctx> {
        let mut params = Vec::new();
        if self.host {
            params.push(self.ptr.into());
        }
        for p in f.param_decls() {
            self.param_types(p.ty, &mut params);
        }
        match f.ret {
            Ty::Scalar(s) => self.scalar_ty(s).fn_type(&params, false),
            _ => self.ctx.void_type().fn_type(&params, false),
        }
    }

    fn declare(&self, m: &Module<'ctx>, id: FuncId) -> FunctionValue<'ctx> {
        let p = self.input.program;
        let name = func_symbol(p, id, self.target);
        m.get_function(&name).unwrap_or_else(|| m.add_function(&name, self.fn_type(&p.funcs[id]), None))
    }

    fn lower_function(&self, m: &Module<'ctx>, id: FuncId) -> R<()> {
        let p = self.input.program;
        let f = &p.funcs[id];
        let fv = self.declare(m, id);
        let is_kernel = id == p.kernel;
        if is_kernel {
            if let Target::Nvptx(_) = self.target {
                fv.set_call_conventions(71); // ptx_kernel
            }
        } else {
            let inline = self.ctx.create_enum_attribute(inkwell::attributes::Attribute::get_named_enum_kind_id("alwaysinline"), 0);
            fv.add_attribute(AttributeLoc::Function, inline);
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
            loops: HashMap::new(),
            host_ctx: None,
        };
        fl.alloca_b.position_at_end(entry);
        let mut idx = 0u32;
        if self.host {
            fl.host_ctx = Some(fv.get_nth_param(0).map(|v| v.into_pointer_value()).ok_or_else(|| llvm_err("missing ctx"))?);
            idx = 1;
        }
        let spec = self.input.spec;
        for (li, decl) in f.param_decls().iter().enumerate() {
            match decl.ty {
                Ty::Scalar(s) => {
                    let v = fv.get_nth_param(idx).ok_or_else(|| llvm_err("param"))?;
                    idx += 1;
                    let slot = fl.alloca(s)?;
                    fl.b.build_store(slot, v)?;
                    fl.locals[li] = Slot::Scalar(slot, s);
                }
                Ty::Array(a) => {
                    let n = a.ndim as u32;
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
        let v = fl.block(&f.body)?;
        if !fl.terminated() {
            match (f.ret, v) {
                (Ty::Scalar(_), Val::Scalar(v)) => {
                    fl.b.build_return(Some(&v))?;
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
        if is_kernel {
            if let Target::Nvptx(_) = self.target {
                let md = self.ctx.metadata_node(&[
                    fv.as_global_value().as_pointer_value().into(),
                    self.ctx.metadata_string("kernel").into(),
                    self.i32.const_int(1, false).into(),
                ]);
                m.add_global_metadata("nvvm.annotations", &md).map_err(|e| llvm_err(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// `void entry(HostCtx*, void** params)`: loads each flattened parameter through its pointer
    /// and calls the kernel.
    fn host_entry(&self, m: &Module<'ctx>, id: FuncId) -> R<()> {
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
            match decl.ty {
                Ty::Scalar(s) => flat.push(Some(s)),
                Ty::Array(a) => {
                    flat.push(None);
                    for _ in 0..2 * a.ndim {
                        flat.push(Some(Scalar::I64));
                    }
                }
                _ => {}
            }
        }
        for (i, s) in flat.into_iter().enumerate() {
            // SAFETY of the GEP: `params` holds one pointer per flattened parameter.
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

struct FnLower<'c, 'a, 'ctx> {
    cx: &'c Cx<'a, 'ctx>,
    m: &'c Module<'ctx>,
    f: &'a Func,
    fid: FuncId,
    fv: FunctionValue<'ctx>,
    b: Builder<'ctx>,
    alloca_b: Builder<'ctx>,
    entry: BasicBlock<'ctx>,
    locals: Vec<Slot<'ctx>>,
    loops: HashMap<LoopId, LoopBlocks<'ctx>>,
    host_ctx: Option<PointerValue<'ctx>>,
}

impl<'c, 'a, 'ctx> FnLower<'c, 'a, 'ctx> {
    fn ctx(&self) -> &'ctx Context {
        self.cx.ctx
    }

    fn terminated(&self) -> bool {
        self.b.get_insert_block().and_then(|bb| bb.get_terminator()).is_some()
    }

    /// After a terminator, code that follows is unreachable: give it a block of its own.
    fn start_dead_block(&self) {
        let bb = self.ctx().append_basic_block(self.fv, "");
        self.b.position_at_end(bb);
    }

    fn seal_dead_blocks(&self) -> R<()> {
        let mut bb = self.fv.get_first_basic_block();
        let tmp = self.ctx().create_builder();
        while let Some(block) = bb {
            if block.get_terminator().is_none() {
                tmp.position_at_end(block);
                tmp.build_unreachable()?;
            }
            bb = block.get_next_basic_block();
        }
        Ok(())
    }

    fn alloca(&self, s: Scalar) -> R<PointerValue<'ctx>> {
        match self.entry.get_first_instruction() {
            Some(i) => self.alloca_b.position_before(&i),
            None => self.alloca_b.position_at_end(self.entry),
        }
        let p = self.alloca_b.build_alloca(self.cx.scalar_ty(s), "")?;
        Ok(p)
    }

    fn i64c(&self, v: u64) -> IntValue<'ctx> {
        self.cx.i64.const_int(v, false)
    }

    fn contiguous_strides(&self, shape: &[IntValue<'ctx>], fortran: bool) -> R<Vec<IntValue<'ctx>>> {
        let n = shape.len();
        let mut strides = vec![self.i64c(1); n];
        if fortran {
            for d in 1..n {
                strides[d] = self.b.build_int_mul(strides[d - 1], shape[d - 1], "")?;
            }
        } else {
            for d in (0..n.saturating_sub(1)).rev() {
                strides[d] = self.b.build_int_mul(strides[d + 1], shape[d + 1], "")?;
            }
        }
        Ok(strides)
    }

    // --- blocks ---

    fn block(&mut self, b: &Block) -> R<Val<'ctx>> {
        let mut diverged = false;
        for s in &b.stmts {
            if let Stmt::Expr(e) | Stmt::Let(_, Some(e)) = s {
                diverged |= e.ty == Ty::Never;
            }
            match s {
                Stmt::Let(l, init) => {
                    let decl = &self.f.locals[*l];
                    match decl.ty {
                        Ty::Array(_) => {
                            if let Some(e) = init {
                                let v = self.expr(e)?;
                                if let Val::Array(a) = v {
                                    self.locals[*l] = Slot::Array(a);
                                }
                            }
                        }
                        Ty::Scalar(s) => {
                            let slot = self.alloca(s)?;
                            let v = match init {
                                Some(e) => self.expr(e)?,
                                None => Val::Scalar(self.cx.scalar_ty(s).const_zero()),
                            };
                            if let Val::Scalar(v) = v {
                                self.b.build_store(slot, v)?;
                            }
                            self.locals[*l] = Slot::Scalar(slot, s);
                        }
                        _ => {
                            if let Some(e) = init {
                                self.expr(e)?;
                            }
                        }
                    }
                }
                Stmt::Expr(e) => {
                    self.expr(e)?;
                }
            }
            if self.terminated() {
                self.start_dead_block();
            }
        }
        match &b.tail {
            Some(t) => self.expr(t),
            None if diverged => Ok(Val::Never),
            None => Ok(Val::Unit),
        }
    }

    // --- expressions ---

    fn expr(&mut self, e: &Expr) -> R<Val<'ctx>> {
        match crate::stack::ensure(64 << 10, 4 << 20, || self.expr_inner(e)) {
            // An operand diverged: this expression is never evaluated either.
            Err(LErr::Diverged) => Ok(Val::Never),
            other => other,
        }
    }

    /// A scalar operand; if it diverges, the expression being built diverges too.
    fn scalar_of(&mut self, e: &Expr) -> R<BasicValueEnum<'ctx>> {
        match self.expr(e)? {
            Val::Scalar(v) => Ok(v),
            Val::Never => Err(LErr::Diverged),
            other => Err(llvm_err(format!("expected scalar, found {other:?}"))),
        }
    }

    fn const_scalar(&self, v: ScalarValue) -> BasicValueEnum<'ctx> {
        match v {
            ScalarValue::Bool(b) => self.cx.i1.const_int(b as u64, false).into(),
            ScalarValue::Int(s, bits) => self.cx.scalar_ty(s).into_int_type().const_int(bits, false).into(),
            ScalarValue::F16(x) => self.ctx().i16_type().const_int(x.to_bits() as u64, false).into(),
            ScalarValue::Bf16(x) => self.ctx().i16_type().const_int(x.to_bits() as u64, false).into(),
            ScalarValue::F32(x) => self.ctx().f32_type().const_float(x as f64).into(),
            ScalarValue::F64(x) => self.ctx().f64_type().const_float(x).into(),
        }
    }

    fn expr_inner(&mut self, e: &Expr) -> R<Val<'ctx>> {
        use ExprKind as K;
        Ok(match &e.kind {
            K::Lit(v) => Val::Scalar(self.const_scalar(*v)),
            K::PendingLit(_) => return Err(llvm_err("unresolved literal")),
            K::Unit => Val::Unit,
            K::Local(l) => match &self.locals[*l] {
                Slot::Scalar(p, s) => Val::Scalar(self.b.build_load(self.cx.scalar_ty(*s), *p, "")?),
                Slot::Array(a) => Val::Array(a.clone()),
                Slot::None => return Err(llvm_err(format!("local {l} has no storage"))),
            },
            K::Capture(c) => self.capture(*c)?,
            K::Unary(op, x) => {
                let v = self.scalar_of(x)?;
                let s = x.ty.scalar().unwrap_or(Scalar::I32);
                Val::Scalar(match (op, s.is_float()) {
                    (UnOp::Neg, true) => self.b.build_float_neg(v.into_float_value(), "")?.into(),
                    (UnOp::Neg, false) => self.b.build_int_neg(v.into_int_value(), "")?.into(),
                    (UnOp::Not, _) => self.b.build_not(v.into_int_value(), "")?.into(),
                })
            }
            K::Binary(op, a, b) => {
                let x = self.scalar_of(a)?;
                let y = self.scalar_of(b)?;
                let s = a.ty.scalar().unwrap_or(Scalar::I32);
                let ys = b.ty.scalar().unwrap_or(s);
                Val::Scalar(self.binary(*op, s, x, y, ys)?)
            }
            K::Logic(op, a, b) => self.logic(*op, a, b)?,
            K::Cast(x) => {
                let v = self.scalar_of(x)?;
                let from = x.ty.scalar().unwrap_or(Scalar::I32);
                let to = e.ty.scalar().unwrap_or(from);
                Val::Scalar(self.cast(v, from, to)?)
            }
            K::Index(a, idx) => {
                let arr = self.expr(a)?;
                let Val::Array(arr) = arr else { return Ok(Val::Never) };
                let p = self.element_ptr(&arr, idx)?;
                Val::Scalar(self.load_elem(p, arr.elem)?)
            }
            K::Assign(place, v) => {
                let val = self.scalar_of(v)?;
                self.store_place(place, val)?;
                Val::Unit
            }
            K::CompoundAssign(op, place, v) => {
                let rhs = self.scalar_of(v)?;
                let vs = v.ty.scalar().unwrap_or(Scalar::I32);
                match place {
                    Place::Local(l) => {
                        let Slot::Scalar(p, s) = self.locals[*l].clone() else {
                            return Err(llvm_err("compound assign to non-scalar"));
                        };
                        let cur = self.b.build_load(self.cx.scalar_ty(s), p, "")?;
                        let r = self.binary(*op, s, cur, rhs, vs)?;
                        self.b.build_store(p, r)?;
                    }
                    Place::Index(a, idx) => {
                        let Val::Array(arr) = self.expr(a)? else { return Ok(Val::Never) };
                        let ptr = self.element_ptr(&arr, idx)?;
                        let cur = self.load_elem(ptr, arr.elem)?;
                        let r = self.binary(*op, arr.elem, cur, rhs, vs)?;
                        self.store_elem(ptr, arr.elem, r)?;
                    }
                }
                Val::Unit
            }
            K::Call(id, args) => self.call(*id, args, e.ty)?,
            K::Builtin(b, args) => self.builtin(*b, args, e.ty)?,
            K::SharedArray { elem, len, site } => Val::Array(self.shared_array(*elem, *len, *site)?),
            K::DynSharedArray(elem) => Val::Array(self.dyn_shared(*elem)?),
            K::If(c, t, f) => self.if_expr(c, t, f.as_ref(), e.ty)?,
            K::Block(b) => self.block(b)?,
            K::While(id, c, body) => {
                let head = self.ctx().append_basic_block(self.fv, "");
                let bodyb = self.ctx().append_basic_block(self.fv, "");
                let exit = self.ctx().append_basic_block(self.fv, "");
                self.b.build_unconditional_branch(head)?;
                self.b.position_at_end(head);
                let cv = self.scalar_of(c)?;
                if !self.terminated() {
                    self.b.build_conditional_branch(cv.into_int_value(), bodyb, exit)?;
                }
                self.b.position_at_end(bodyb);
                self.loops.insert(*id, LoopBlocks { cont: head, exit, value: None });
                self.block(body)?;
                if !self.terminated() {
                    self.b.build_unconditional_branch(head)?;
                }
                self.b.position_at_end(exit);
                Val::Unit
            }
            K::Loop(id, body) => {
                let bodyb = self.ctx().append_basic_block(self.fv, "");
                let exit = self.ctx().append_basic_block(self.fv, "");
                let value = match e.ty {
                    Ty::Scalar(s) => Some((self.alloca(s)?, s)),
                    _ => None,
                };
                self.b.build_unconditional_branch(bodyb)?;
                self.b.position_at_end(bodyb);
                self.loops.insert(*id, LoopBlocks { cont: bodyb, exit, value });
                self.block(body)?;
                if !self.terminated() {
                    self.b.build_unconditional_branch(bodyb)?;
                }
                self.b.position_at_end(exit);
                match value {
                    Some((p, s)) => Val::Scalar(self.b.build_load(self.cx.scalar_ty(s), p, "")?),
                    None if e.ty == Ty::Never => {
                        self.b.build_unreachable()?;
                        self.start_dead_block();
                        Val::Never
                    }
                    None => Val::Unit,
                }
            }
            K::For { id, var, start, end, inclusive, step, body } => {
                self.for_loop(*id, *var, start, end, *inclusive, step.as_deref(), body)?;
                Val::Unit
            }
            K::Break(id, v) => {
                let val = match v {
                    Some(v) => Some(self.scalar_of(v)?),
                    None => None,
                };
                let Some(lb) = self.loops.get(id) else { return Err(llvm_err("break target")) };
                let (exit, slot) = (lb.exit, lb.value);
                if let (Some(val), Some((p, _))) = (val, slot) {
                    self.b.build_store(p, val)?;
                }
                if !self.terminated() {
                    self.b.build_unconditional_branch(exit)?;
                }
                self.start_dead_block();
                Val::Never
            }
            K::Continue(id) => {
                let Some(lb) = self.loops.get(id) else { return Err(llvm_err("continue target")) };
                let cont = lb.cont;
                if !self.terminated() {
                    self.b.build_unconditional_branch(cont)?;
                }
                self.start_dead_block();
                Val::Never
            }
            K::Return(v) => {
                let val = match v {
                    Some(v) => Some(self.expr(v)?),
                    None => None,
                };
                if !self.terminated() {
                    match val {
                        Some(Val::Scalar(x)) if matches!(self.f.ret, Ty::Scalar(_)) => {
                            self.b.build_return(Some(&x))?;
                        }
                        _ if matches!(self.f.ret, Ty::Scalar(_)) => {
                            self.b.build_unreachable()?;
                        }
                        _ => {
                            self.b.build_return(None)?;
                        }
                    }
                }
                self.start_dead_block();
                Val::Never
            }
        })
    }

    fn logic(&mut self, op: LogicOp, a: &Expr, b: &Expr) -> R<Val<'ctx>> {
        let x = self.scalar_of(a)?.into_int_value();
        let from = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        let rhs_bb = self.ctx().append_basic_block(self.fv, "");
        let merge = self.ctx().append_basic_block(self.fv, "");
        match op {
            LogicOp::And => self.b.build_conditional_branch(x, rhs_bb, merge)?,
            LogicOp::Or => self.b.build_conditional_branch(x, merge, rhs_bb)?,
        };
        self.b.position_at_end(rhs_bb);
        let y = self.scalar_of(b)?.into_int_value();
        let rhs_end = self.b.get_insert_block().ok_or_else(|| llvm_err("no block"))?;
        let rhs_live = !self.terminated();
        if rhs_live {
            self.b.build_unconditional_branch(merge)?;
        }
        self.b.position_at_end(merge);
        let phi = self.b.build_phi(self.cx.i1, "")?;
        let short = self.cx.i1.const_int((op == LogicOp::Or) as u64, false);
        phi.add_incoming(&[(&short, from)]);
        if rhs_live {
            phi.add_incoming(&[(&y, rhs_end)]);
        }
        Ok(Val::Scalar(phi.as_basic_value()))
    }

    fn if_expr(&mut self, c: &Expr, t: &Block, f: Option<&Block>, ty: Ty) -> R<Val<'ctx>> {
        let cv = self.scalar_of(c)?.into_int_value();
        let then_bb = self.ctx().append_basic_block(self.fv, "");
        let else_bb = self.ctx().append_basic_block(self.fv, "");
        let merge = self.ctx().append_basic_block(self.fv, "");
        if !self.terminated() {
            self.b.build_conditional_branch(cv, then_bb, else_bb)?;
        }
        let slot = match ty {
            Ty::Scalar(s) => Some((self.alloca(s)?, s)),
            _ => None,
        };
        for (bb, blk) in [(then_bb, Some(t)), (else_bb, f)] {
            self.b.position_at_end(bb);
            let v = match blk {
                Some(b) => self.block(b)?,
                None => Val::Unit,
            };
            if !self.terminated() {
                if let (Some((p, _)), Val::Scalar(v)) = (slot, v) {
                    self.b.build_store(p, v)?;
                }
                self.b.build_unconditional_branch(merge)?;
            }
        }
        self.b.position_at_end(merge);
        Ok(match (ty, slot) {
            (Ty::Never, _) => {
                self.b.build_unreachable()?;
                self.start_dead_block();
                Val::Never
            }
            (_, Some((p, s))) => Val::Scalar(self.b.build_load(self.cx.scalar_ty(s), p, "")?),
            _ => Val::Unit,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn for_loop(
        &mut self,
        id: LoopId,
        var: LocalId,
        start: &Expr,
        end: &Expr,
        inclusive: bool,
        step: Option<&Expr>,
        body: &Block,
    ) -> R<()> {
        let s = start.ty.scalar().unwrap_or(Scalar::I32);
        let it = self.cx.scalar_ty(s).into_int_type();
        let lo = self.scalar_of(start)?.into_int_value();
        let hi = self.scalar_of(end)?.into_int_value();
        let step_v = match step {
            Some(st) => {
                let v = self.scalar_of(st)?.into_int_value();
                // step_by(0) would loop forever; it steps by one instead.
                let zero = self.cx.i64.const_zero();
                let is0 = self.b.build_int_compare(IntPredicate::EQ, v, zero, "")?;
                let v = self.b.build_select(is0, self.cx.i64.const_int(1, false), v, "")?.into_int_value();
                Some(self.b.build_int_cast_sign_flag(v, it, false, "")?)
            }
            None => None,
        };
        let slot = self.alloca(s)?;
        self.b.build_store(slot, lo)?;
        self.locals[var] = Slot::Scalar(slot, s);
        let head = self.ctx().append_basic_block(self.fv, "");
        let bodyb = self.ctx().append_basic_block(self.fv, "");
        let latch = self.ctx().append_basic_block(self.fv, "");
        let exit = self.ctx().append_basic_block(self.fv, "");
        let (lt, le) = if s.is_signed() { (IntPredicate::SLT, IntPredicate::SLE) } else { (IntPredicate::ULT, IntPredicate::ULE) };
        self.b.build_unconditional_branch(head)?;
        self.b.position_at_end(head);
        let i = self.b.build_load(it, slot, "")?.into_int_value();
        let go = self.b.build_int_compare(if inclusive { le } else { lt }, i, hi, "")?;
        self.b.build_conditional_branch(go, bodyb, exit)?;
        self.b.position_at_end(bodyb);
        self.loops.insert(id, LoopBlocks { cont: latch, exit, value: None });
        self.block(body)?;
        if !self.terminated() {
            self.b.build_unconditional_branch(latch)?;
        }
        self.b.position_at_end(latch);
        let i = self.b.build_load(it, slot, "")?.into_int_value();
        // Never step past the bound: `i + step` may overflow the type near its maximum.
        let remaining = self.b.build_int_sub(hi, i, "")?;
        let stop = match step_v {
            Some(st) => {
                let pred = if inclusive { IntPredicate::ULT } else { IntPredicate::ULE };
                self.b.build_int_compare(pred, remaining, st, "")?
            }
            None if inclusive => self.b.build_int_compare(IntPredicate::EQ, remaining, it.const_zero(), "")?,
            None => self.cx.i1.const_zero(),
        };
        let next = self.b.build_int_add(i, step_v.unwrap_or(it.const_int(1, false)), "")?;
        self.b.build_store(slot, next)?;
        let cont = self.ctx().append_basic_block(self.fv, "");
        self.b.build_conditional_branch(stop, exit, cont)?;
        self.b.position_at_end(cont);
        if inclusive || step_v.is_some() {
            self.b.build_unconditional_branch(bodyb)?;
        } else {
            self.b.build_unconditional_branch(head)?;
        }
        self.b.position_at_end(exit);
        Ok(())
    }

    // --- captures ---

    fn capture(&mut self, c: CaptureId) -> R<Val<'ctx>> {
        let data = self.cx.input.captures.get(c).ok_or_else(|| llvm_err(format!("capture {c} has no value")))?;
        let cap = &self.cx.input.program.captures[c];
        Ok(match data {
            CaptureData::Scalar(v) => Val::Scalar(self.const_scalar(*v)),
            CaptureData::HostArray { shape, strides, bytes } => {
                let CaptureTy::Array { ty, .. } = cap.ty else { return Err(llvm_err("capture type")) };
                let init = self.ctx().const_string(bytes, false);
                let space = if self.cx.host { AddressSpace::default() } else { AddressSpace::from(1u16) };
                let g = self.m.add_global(init.get_type(), Some(space), &format!("__kache_const_{c}_k"));
                g.set_initializer(&init);
                g.set_constant(true);
                g.set_linkage(Linkage::Private);
                g.set_alignment(16);
                let ptr = if self.cx.host {
                    g.as_pointer_value()
                } else {
                    self.b.build_address_space_cast(g.as_pointer_value(), self.cx.ptr, "")?
                };
                Val::Array(ArrayVal {
                    ptr,
                    shape: shape.iter().map(|d| self.i64c(*d as u64)).collect(),
                    strides: strides.iter().map(|d| self.i64c(*d as i64 as u64)).collect(),
                    elem: ty.elem,
                })
            }
            CaptureData::DeviceArray { ptr, shape, strides } => {
                let CaptureTy::Array { ty, .. } = cap.ty else { return Err(llvm_err("capture type")) };
                let p = self.b.build_int_to_ptr(self.i64c(*ptr), self.cx.ptr, "")?;
                Val::Array(ArrayVal {
                    ptr: p,
                    shape: shape.iter().map(|d| self.i64c(*d as u64)).collect(),
                    strides: strides.iter().map(|d| self.i64c(*d as i64 as u64)).collect(),
                    elem: ty.elem,
                })
            }
        })
    }

    // --- memory ---

    fn element_ptr(&mut self, arr: &ArrayVal<'ctx>, idx: &[Expr]) -> R<PointerValue<'ctx>> {
        let mut off: Option<IntValue<'ctx>> = None;
        for (d, ie) in idx.iter().enumerate() {
            let i = self.scalar_of(ie)?.into_int_value();
            let stride = arr.strides.get(d).copied().unwrap_or(self.i64c(1));
            let term = self.b.build_int_mul(i, stride, "")?;
            off = Some(match off {
                Some(o) => self.b.build_int_add(o, term, "")?,
                None => term,
            });
        }
        let off = off.unwrap_or(self.i64c(0));
        // SAFETY of the GEP: indexing is unchecked by design (like CUDA C++); the offset stays in
        // the array for in-bounds indices.
        let p = unsafe { self.b.build_gep(self.cx.mem_ty(arr.elem), arr.ptr, &[off], "")? };
        Ok(p)
    }

    fn load_elem(&self, p: PointerValue<'ctx>, s: Scalar) -> R<BasicValueEnum<'ctx>> {
        let v = self.b.build_load(self.cx.mem_ty(s), p, "")?;
        if s == Scalar::Bool {
            return Ok(self.b.build_int_compare(IntPredicate::NE, v.into_int_value(), self.cx.i8.const_zero(), "")?.into());
        }
        Ok(v)
    }

    fn store_elem(&self, p: PointerValue<'ctx>, s: Scalar, v: BasicValueEnum<'ctx>) -> R<()> {
        if s == Scalar::Bool {
            let byte = self.b.build_int_z_extend(v.into_int_value(), self.cx.i8, "")?;
            self.b.build_store(p, byte)?;
        } else {
            self.b.build_store(p, v)?;
        }
        Ok(())
    }

    fn store_place(&mut self, place: &Place, v: BasicValueEnum<'ctx>) -> R<()> {
        match place {
            Place::Local(l) => {
                if let Slot::Scalar(p, _) = self.locals[*l] {
                    self.b.build_store(p, v)?;
                }
            }
            Place::Index(a, idx) => {
                let Val::Array(arr) = self.expr(a)? else { return Ok(()) };
                let p = self.element_ptr(&arr, idx)?;
                self.store_elem(p, arr.elem, v)?;
            }
        }
        Ok(())
    }

    fn shared_array(&mut self, elem: Scalar, len: u64, site: usize) -> R<ArrayVal<'ctx>> {
        let ptr = if self.cx.host {
            let off = self.cx.shared.get(&(self.fid, site)).copied().unwrap_or(0);
            let base = self.ctx_field_ptr(host_ctx_layout::SHARED)?;
            // SAFETY of the GEP: the runtime allocates the program's static shared size.
            unsafe { self.b.build_gep(self.cx.i8, base, &[self.i64c(off)], "")? }
        } else {
            let ty = self.cx.mem_ty(elem).array_type(len as u32);
            let g = self.m.add_global(ty, Some(AddressSpace::from(3u16)), &format!("__kache_shared_{}_{}_k", self.fid, site));
            g.set_initializer(&ty.get_undef());
            g.set_linkage(Linkage::Internal);
            g.set_alignment(16);
            self.b.build_address_space_cast(g.as_pointer_value(), self.cx.ptr, "")?
        };
        Ok(ArrayVal { ptr, shape: vec![self.i64c(len)], strides: vec![self.i64c(1)], elem })
    }

    fn dyn_shared(&mut self, elem: Scalar) -> R<ArrayVal<'ctx>> {
        let (ptr, bytes) = if self.cx.host {
            let p = self.ctx_field_ptr(host_ctx_layout::DYN_SHARED)?;
            let n = self.ctx_field_i64(host_ctx_layout::DYN_SHARED_LEN)?;
            (p, n)
        } else {
            let name = "__kache_dynamic_shared";
            let ty = self.cx.i8.array_type(0);
            let g = self.m.get_global(name).unwrap_or_else(|| {
                let g = self.m.add_global(ty, Some(AddressSpace::from(3u16)), name);
                g.set_linkage(Linkage::External);
                g.set_alignment(16);
                g
            });
            let p = self.b.build_address_space_cast(g.as_pointer_value(), self.cx.ptr, "")?;
            let asm_ty = self.cx.i32.fn_type(&[], false);
            let asm =
                self.ctx().create_inline_asm(asm_ty, "mov.u32 $0, %dynamic_smem_size;".into(), "=r".into(), false, false, None, false);
            let call = self.b.build_indirect_call(asm_ty, asm, &[], "")?;
            let v = call.try_as_basic_value().basic().ok_or_else(|| llvm_err("asm"))?.into_int_value();
            (p, self.b.build_int_z_extend(v, self.cx.i64, "")?)
        };
        let len = self.b.build_int_unsigned_div(bytes, self.i64c(elem.size() as u64), "")?;
        Ok(ArrayVal { ptr, shape: vec![len], strides: vec![self.i64c(1)], elem })
    }

    fn ctx_field_addr(&self, off: u64) -> R<PointerValue<'ctx>> {
        let ctx = self.host_ctx.ok_or_else(|| llvm_err("no host ctx"))?;
        // SAFETY of the GEP: `off` is a field offset inside HostCtx.
        Ok(unsafe { self.b.build_gep(self.cx.i8, ctx, &[self.i64c(off)], "")? })
    }

    fn ctx_field_ptr(&self, off: u64) -> R<PointerValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.ptr, a, "")?.into_pointer_value())
    }

    fn ctx_field_i64(&self, off: u64) -> R<IntValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.i64, a, "")?.into_int_value())
    }

    fn ctx_field_u32(&self, off: u64) -> R<IntValue<'ctx>> {
        let a = self.ctx_field_addr(off)?;
        Ok(self.b.build_load(self.cx.i32, a, "")?.into_int_value())
    }

    // --- operators ---

    fn set_fast(&self, v: BasicValueEnum<'ctx>) {
        if self.cx.input.options.fast_math {
            if let Some(i) = v.as_instruction_value() {
                let _ = i.set_fast_math_flags(inkwell::values::FastMathFlags::all());
            }
        }
    }

    fn binary(&self, op: BinOp, s: Scalar, x: BasicValueEnum<'ctx>, y: BasicValueEnum<'ctx>, ys: Scalar) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if s.is_float() {
            let (x, y) = (x.into_float_value(), y.into_float_value());
            let v: BasicValueEnum = match op {
                BinOp::Add => b.build_float_add(x, y, "")?.into(),
                BinOp::Sub => b.build_float_sub(x, y, "")?.into(),
                BinOp::Mul => b.build_float_mul(x, y, "")?.into(),
                BinOp::Div => b.build_float_div(x, y, "")?.into(),
                // NVPTX lowers `frem` as x - trunc(x / y) * y, which is wrong for large quotients
                // and loses the sign of zero; libdevice's fmod is exact, like Rust's `%`.
                BinOp::Rem if !self.cx.host => {
                    let name = if s == Scalar::F32 { "__nv_fmodf" } else { "__nv_fmod" };
                    let t = self.cx.scalar_ty(s);
                    let f = self.intrinsic(name, t, &[t, t]);
                    self.call_basic(f, &[x.into(), y.into()])?
                }
                BinOp::Rem => b.build_float_rem(x, y, "")?.into(),
                cmp => {
                    let p = match cmp {
                        BinOp::Eq => FloatPredicate::OEQ,
                        BinOp::Ne => FloatPredicate::UNE,
                        BinOp::Lt => FloatPredicate::OLT,
                        BinOp::Le => FloatPredicate::OLE,
                        BinOp::Gt => FloatPredicate::OGT,
                        _ => FloatPredicate::OGE,
                    };
                    return Ok(b.build_float_compare(p, x, y, "")?.into());
                }
            };
            self.set_fast(v);
            return Ok(v);
        }
        let (x, y) = (x.into_int_value(), y.into_int_value());
        let it = x.get_type();
        let signed = s.is_signed();
        Ok(match op {
            BinOp::Add => b.build_int_add(x, y, "")?.into(),
            BinOp::Sub => b.build_int_sub(x, y, "")?.into(),
            BinOp::Mul => b.build_int_mul(x, y, "")?.into(),
            BinOp::Div | BinOp::Rem => self.div_rem(op, x, y, signed)?.into(),
            BinOp::BitAnd => b.build_and(x, y, "")?.into(),
            BinOp::BitOr => b.build_or(x, y, "")?.into(),
            BinOp::BitXor => b.build_xor(x, y, "")?.into(),
            BinOp::Shl | BinOp::Shr => {
                // Shift amounts are masked to the width, like Rust's `wrapping_shl`.
                let amount = if ys.bits() == s.bits() {
                    y
                } else if ys.bits() > s.bits() {
                    b.build_int_truncate(y, it, "")?
                } else {
                    b.build_int_z_extend(y, it, "")?
                };
                let masked = b.build_and(amount, it.const_int(s.bits() as u64 - 1, false), "")?;
                if op == BinOp::Shl {
                    b.build_left_shift(x, masked, "")?.into()
                } else {
                    b.build_right_shift(x, masked, signed, "")?.into()
                }
            }
            cmp => {
                let p = match (cmp, signed) {
                    (BinOp::Eq, _) => IntPredicate::EQ,
                    (BinOp::Ne, _) => IntPredicate::NE,
                    (BinOp::Lt, true) => IntPredicate::SLT,
                    (BinOp::Lt, false) => IntPredicate::ULT,
                    (BinOp::Le, true) => IntPredicate::SLE,
                    (BinOp::Le, false) => IntPredicate::ULE,
                    (BinOp::Gt, true) => IntPredicate::SGT,
                    (BinOp::Gt, false) => IntPredicate::UGT,
                    (_, true) => IntPredicate::SGE,
                    (_, false) => IntPredicate::UGE,
                };
                b.build_int_compare(p, x, y, "")?.into()
            }
        })
    }

    /// Division without traps: `x / 0 == 0`, `x % 0 == 0`, `MIN / -1 == MIN`, `MIN % -1 == 0`.
    fn div_rem(&self, op: BinOp, x: IntValue<'ctx>, y: IntValue<'ctx>, signed: bool) -> R<IntValue<'ctx>> {
        let b = &self.b;
        let it = x.get_type();
        let zero = it.const_zero();
        let one = it.const_int(1, false);
        let is0 = b.build_int_compare(IntPredicate::EQ, y, zero, "")?;
        let mut bad = is0;
        if signed {
            let minus1 = it.const_all_ones();
            let isneg1 = b.build_int_compare(IntPredicate::EQ, y, minus1, "")?;
            bad = b.build_or(is0, isneg1, "")?;
            let safe = b.build_select(bad, one, y, "")?.into_int_value();
            let q = if op == BinOp::Div { b.build_int_signed_div(x, safe, "")? } else { b.build_int_signed_rem(x, safe, "")? };
            let special = if op == BinOp::Div {
                // x / -1 == -x (wrapping), x / 0 == 0
                let neg = b.build_int_neg(x, "")?;
                b.build_select(is0, zero, neg, "")?.into_int_value()
            } else {
                zero
            };
            return Ok(b.build_select(bad, special, q, "")?.into_int_value());
        }
        let safe = b.build_select(bad, one, y, "")?.into_int_value();
        let q = if op == BinOp::Div { b.build_int_unsigned_div(x, safe, "")? } else { b.build_int_unsigned_rem(x, safe, "")? };
        Ok(b.build_select(is0, zero, q, "")?.into_int_value())
    }

    fn cast(&self, v: BasicValueEnum<'ctx>, from: Scalar, to: Scalar) -> R<BasicValueEnum<'ctx>> {
        let b = &self.b;
        if from == to {
            return Ok(v);
        }
        let tt = self.cx.scalar_ty(to);
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) => {
                let fv = v.into_float_value();
                let ft: FloatType = tt.into_float_type();
                if to.bits() > from.bits() { b.build_float_ext(fv, ft, "")?.into() } else { b.build_float_trunc(fv, ft, "")?.into() }
            }
            (true, false) => {
                // Rust's `as`: saturating, NaN to zero.
                let fv = v.into_float_value();
                let name = format!("llvm.{}.sat.i{}.f{}", if to.is_signed() { "fptosi" } else { "fptoui" }, to.bits(), from.bits());
                let ft = tt.into_int_type().fn_type(&[fv.get_type().into()], false);
                let f = self.m.get_function(&name).unwrap_or_else(|| self.m.add_function(&name, ft, None));
                self.call_basic(f, &[fv.into()])?
            }
            (false, true) => {
                let iv = v.into_int_value();
                let ft = tt.into_float_type();
                if from.is_signed() {
                    b.build_signed_int_to_float(iv, ft, "")?.into()
                } else {
                    b.build_unsigned_int_to_float(iv, ft, "")?.into()
                }
            }
            (false, false) => {
                let iv = v.into_int_value();
                let it = tt.into_int_type();
                if to.bits() < from.bits() {
                    b.build_int_truncate(iv, it, "")?.into()
                } else if to.bits() == from.bits() {
                    iv.into()
                } else if from.is_signed() {
                    b.build_int_s_extend(iv, it, "")?.into()
                } else {
                    b.build_int_z_extend(iv, it, "")?.into()
                }
            }
        })
    }

    fn call_basic(&self, f: FunctionValue<'ctx>, args: &[BasicMetadataValueEnum<'ctx>]) -> R<BasicValueEnum<'ctx>> {
        let c = self.b.build_call(f, args, "")?;
        c.try_as_basic_value().basic().ok_or_else(|| llvm_err("call without value"))
    }

    fn intrinsic(&self, name: &str, ret: BasicTypeEnum<'ctx>, args: &[BasicTypeEnum<'ctx>]) -> FunctionValue<'ctx> {
        let params: Vec<BasicMetadataTypeEnum> = args.iter().map(|a| (*a).into()).collect();
        self.m.get_function(name).unwrap_or_else(|| self.m.add_function(name, ret.fn_type(&params, false), None))
    }

    // --- calls and builtins ---

    fn push_args(&mut self, e: &Expr, out: &mut Vec<BasicMetadataValueEnum<'ctx>>) -> R<()> {
        match e.ty {
            Ty::Array(_) => {
                let a = self.expr(e)?.array()?;
                out.push(a.ptr.into());
                out.extend(a.shape.iter().map(|v| BasicMetadataValueEnum::from(*v)));
                out.extend(a.strides.iter().map(|v| BasicMetadataValueEnum::from(*v)));
            }
            _ => out.push(self.scalar_of(e)?.into()),
        }
        Ok(())
    }

    fn call(&mut self, id: FuncId, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let callee = self.cx.declare(self.m, id);
        let mut a: Vec<BasicMetadataValueEnum> = Vec::new();
        if let Some(ctx) = self.host_ctx {
            a.push(ctx.into());
        }
        for e in args {
            self.push_args(e, &mut a)?;
        }
        let c = self.b.build_call(callee, &a, "")?;
        Ok(match ty {
            Ty::Scalar(_) => Val::Scalar(c.try_as_basic_value().basic().ok_or_else(|| llvm_err("call value"))?),
            Ty::Never => {
                self.b.build_unreachable()?;
                self.start_dead_block();
                Val::Never
            }
            _ => Val::Unit,
        })
    }

    fn index_query(&mut self, b: Builtin) -> R<IntValue<'ctx>> {
        let (field, d) = match b {
            Builtin::ThreadIdx(d) => (0, d),
            Builtin::BlockIdx(d) => (1, d),
            Builtin::BlockDim(d) => (2, d),
            Builtin::GridDim(d) => (3, d),
            _ => return Err(llvm_err("not an index query")),
        };
        if self.cx.host {
            use host_ctx_layout as L;
            let base = [L::THREAD_IDX, L::BLOCK_IDX, L::BLOCK_DIM, L::GRID_DIM][field];
            return self.ctx_field_u32(base + 4 * d as u64);
        }
        let reg = ["tid", "ctaid", "ntid", "nctaid"][field];
        let name = format!("llvm.nvvm.read.ptx.sreg.{reg}.{}", ["x", "y", "z"][d as usize]);
        let f = self.intrinsic(&name, self.cx.i32.into(), &[]);
        Ok(self.call_basic(f, &[])?.into_int_value())
    }

    fn builtin(&mut self, b: Builtin, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        Ok(match b {
            Builtin::ThreadIdx(_) | Builtin::BlockIdx(_) | Builtin::BlockDim(_) | Builtin::GridDim(_) => {
                Val::Scalar(self.index_query(b)?.into())
            }
            Builtin::GlobalId(d) => {
                let bid = self.index_query(Builtin::BlockIdx(d))?;
                let bdim = self.index_query(Builtin::BlockDim(d))?;
                let tid = self.index_query(Builtin::ThreadIdx(d))?;
                let z = |v| self.b.build_int_z_extend(v, self.cx.i64, "");
                let (bid, bdim, tid) = (z(bid)?, z(bdim)?, z(tid)?);
                let m = self.b.build_int_mul(bid, bdim, "")?;
                Val::Scalar(self.b.build_int_add(m, tid, "")?.into())
            }
            Builtin::SyncThreads => {
                if self.cx.host {
                    let fp = self.ctx_field_ptr(host_ctx_layout::BARRIER_FN)?;
                    let ctx = self.host_ctx.ok_or_else(|| llvm_err("ctx"))?;
                    let fty = self.ctx().void_type().fn_type(&[self.cx.ptr.into()], false);
                    self.b.build_indirect_call(fty, fp, &[ctx.into()], "")?;
                } else {
                    let f = self
                        .m
                        .get_function("llvm.nvvm.barrier0")
                        .unwrap_or_else(|| self.m.add_function("llvm.nvvm.barrier0", self.ctx().void_type().fn_type(&[], false), None));
                    self.b.build_call(f, &[], "")?;
                }
                Val::Unit
            }
            Builtin::AtomicAdd | Builtin::AtomicMax | Builtin::AtomicMin | Builtin::AtomicCas => self.atomic(b, args)?,
            Builtin::Len => {
                let a = self.expr(&args[0])?.array()?;
                let mut n = self.i64c(1);
                for d in &a.shape {
                    n = self.b.build_int_mul(n, *d, "")?;
                }
                Val::Scalar(n.into())
            }
            Builtin::Shape | Builtin::Stride => {
                let a = self.expr(&args[0])?.array()?;
                let d = self.scalar_of(&args[1])?.into_int_value();
                let list = if b == Builtin::Shape { &a.shape } else { &a.strides };
                // Out-of-range dimensions give 0.
                let mut v = self.i64c(0);
                for (k, x) in list.iter().enumerate() {
                    let is = self.b.build_int_compare(IntPredicate::EQ, d, self.i64c(k as u64), "")?;
                    v = self.b.build_select(is, *x, v, "")?.into_int_value();
                }
                Val::Scalar(v.into())
            }
            Builtin::Math(m) => self.math(m, args, ty)?,
        })
    }

    fn atomic(&mut self, b: Builtin, args: &[Expr]) -> R<Val<'ctx>> {
        let ExprKind::Index(arr_e, idx) = &args[0].kind else {
            return Err(llvm_err("atomic target"));
        };
        let arr = self.expr(arr_e)?.array()?;
        let p = self.element_ptr(&arr, idx)?;
        let s = arr.elem;
        let v = self.scalar_of(&args[1])?;
        let ord = AtomicOrdering::Monotonic;
        if b == Builtin::AtomicCas {
            let new = self.scalar_of(&args[2])?;
            let (cmp, new) = if s.is_float() {
                let it = if s == Scalar::F32 { self.cx.i32 } else { self.cx.i64 };
                (self.b.build_bit_cast(v, it, "")?, self.b.build_bit_cast(new, it, "")?)
            } else {
                (v, new)
            };
            let pair = self.b.build_cmpxchg(p, cmp, new, ord, ord)?;
            let old = self.b.build_extract_value(pair, 0, "")?;
            let old = if s.is_float() { self.b.build_bit_cast(old, self.cx.scalar_ty(s), "")? } else { old };
            return Ok(Val::Scalar(old));
        }
        use llvm_sys::LLVMAtomicRMWBinOp as Op;
        let op = match (b, s.is_float(), s.is_signed()) {
            (Builtin::AtomicAdd, true, _) => Op::LLVMAtomicRMWBinOpFAdd,
            (Builtin::AtomicAdd, false, _) => Op::LLVMAtomicRMWBinOpAdd,
            (Builtin::AtomicMax, true, _) => Op::LLVMAtomicRMWBinOpFMax,
            (Builtin::AtomicMax, false, true) => Op::LLVMAtomicRMWBinOpMax,
            (Builtin::AtomicMax, false, false) => Op::LLVMAtomicRMWBinOpUMax,
            (_, true, _) => Op::LLVMAtomicRMWBinOpFMin,
            (_, false, true) => Op::LLVMAtomicRMWBinOpMin,
            (_, false, false) => Op::LLVMAtomicRMWBinOpUMin,
        };
        let _ = AtomicRMWBinOp::Add;
        // SAFETY: the builder is positioned, `p` points to an element of type `s` and `v` has
        // that type; LLVMBuildAtomicRMW only reads these handles.
        let r = unsafe {
            llvm_sys::core::LLVMBuildAtomicRMW(
                self.b.as_mut_ptr(),
                op,
                p.as_value_ref(),
                v.as_value_ref(),
                llvm_sys::LLVMAtomicOrdering::LLVMAtomicOrderingMonotonic,
                0,
            )
        };
        // SAFETY: `r` is the instruction just built, of the element's type.
        let r = unsafe { BasicValueEnum::new(r) };
        Ok(Val::Scalar(r))
    }

    fn math(&mut self, m: MathFn, args: &[Expr], ty: Ty) -> R<Val<'ctx>> {
        let s = args[0].ty.scalar().unwrap_or(Scalar::F64);
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.scalar_of(a)?);
        }
        let t = self.cx.scalar_ty(s);
        let def = builtins::method_def(m);
        if s.is_float() {
            if let Some((f32n, f64n)) = def.libdevice {
                let name = if self.cx.host {
                    super::jit::host_math_symbol(m, s)
                } else {
                    (if s == Scalar::F32 { f32n } else { f64n }).to_string()
                };
                let arg_tys: Vec<BasicTypeEnum> = vals.iter().map(|v| v.get_type()).collect();
                let f = self.intrinsic(&name, t, &arg_tys);
                let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
                return Ok(Val::Scalar(self.call_basic(f, &args)?));
            }
            let bits = s.bits();
            let name = match m {
                MathFn::Abs => "fabs",
                MathFn::Sqrt => "sqrt",
                MathFn::Floor => "floor",
                MathFn::Ceil => "ceil",
                MathFn::Round => "round",
                MathFn::Trunc => "trunc",
                MathFn::Min => "minnum",
                MathFn::Max => "maxnum",
                MathFn::MulAdd => "fma",
                _ => return Err(llvm_err(format!("no float lowering for {m:?}"))),
            };
            let f = self.intrinsic(&format!("llvm.{name}.f{bits}"), t, &vec![t; vals.len()]);
            let args: Vec<BasicMetadataValueEnum> = vals.iter().map(|v| (*v).into()).collect();
            let r = self.call_basic(f, &args)?;
            return Ok(Val::Scalar(r));
        }
        let x = vals[0].into_int_value();
        let it = x.get_type();
        let bits = s.bits();
        let signed = s.is_signed();
        let r: BasicValueEnum = match m {
            MathFn::Abs => {
                let f = self.intrinsic(&format!("llvm.abs.i{bits}"), t, &[t, self.cx.i1.into()]);
                self.call_basic(f, &[x.into(), self.cx.i1.const_zero().into()])?
            }
            MathFn::Min | MathFn::Max => {
                let n = match (m, signed) {
                    (MathFn::Min, true) => "smin",
                    (MathFn::Min, false) => "umin",
                    (_, true) => "smax",
                    (_, false) => "umax",
                };
                let f = self.intrinsic(&format!("llvm.{n}.i{bits}"), t, &[t, t]);
                self.call_basic(f, &[x.into(), vals[1].into()])?
            }
            MathFn::WrappingAdd => self.b.build_int_add(x, vals[1].into_int_value(), "")?.into(),
            MathFn::WrappingSub => self.b.build_int_sub(x, vals[1].into_int_value(), "")?.into(),
            MathFn::WrappingMul => self.b.build_int_mul(x, vals[1].into_int_value(), "")?.into(),
            MathFn::CountOnes | MathFn::LeadingZeros | MathFn::TrailingZeros => {
                let (n, extra) = match m {
                    MathFn::CountOnes => ("ctpop", false),
                    MathFn::LeadingZeros => ("ctlz", true),
                    _ => ("cttz", true),
                };
                let name = format!("llvm.{n}.i{bits}");
                let r = if extra {
                    let f = self.intrinsic(&name, t, &[t, self.cx.i1.into()]);
                    self.call_basic(f, &[x.into(), self.cx.i1.const_zero().into()])?
                } else {
                    let f = self.intrinsic(&name, t, &[t]);
                    self.call_basic(f, &[x.into()])?
                };
                let r = r.into_int_value();
                let u32t = self.cx.i32;
                if bits > 32 { self.b.build_int_truncate(r, u32t, "")?.into() } else { r.into() }
            }
            _ => return Err(llvm_err(format!("no integer lowering for {m:?}"))),
        };
        let _ = (it, ty);
        Ok(Val::Scalar(r))
    }
}
