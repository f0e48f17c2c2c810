//! Lowering of checked IR into LLVM IR, one module per function: the driver, the types values
//! are lowered to, and the per-function state the other files of this folder build with.
//!
//! Value representation: scalars are LLVM scalars (`bool` is `i1` in registers, one byte in
//! memory); an array is a pointer (generic address space), one `i64` extent per dimension and
//! one `i64` stride per dimension, counted in elements. Array parameters are passed flattened in
//! that order. A tuple, fixed-size array or struct is a pointer to an immutable temporary
//! (`aggregate.rs`): device functions take such pointers and return one through a first
//! pointer parameter; a kernel takes each scalar of an aggregate parameter as a parameter of
//! its own (`abi::ParamAbi::Aggregate`). On the host backend every function takes a hidden first
//! parameter: a pointer to the thread's `HostCtx` (indices, shared memory, barrier, fault
//! record). On the GPU every function takes two: the fault record's address and the launch's
//! kernel token (used only by checked code, passed to all, so that one ABI serves checked and
//! unchecked code alike), then, in relocatable capture mode, the address of each captured
//! device array (`abi::slot_captures`), so that loading the module fills nothing.
//!
//! Defined behaviour where Rust would panic: integer division by zero gives 0 (and `%` gives 0),
//! `MIN / -1` wraps, shift amounts are masked to the operand's width, float-to-int casts
//! saturate (Rust's `as`), arithmetic wraps.

mod aggregate;
mod align;
mod arith;
mod bounds;
mod builtins;
mod expr;
mod function;
mod half;
mod intrinsics;
mod loops;
mod matching;
mod math;
mod mbarrier;
mod memory;
mod tensor;
pub(super) use tensor::Space;
mod version;
mod warp;
mod wgmma;

use std::collections::{HashMap, HashSet};

use inkwell::AddressSpace;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::Module;
use inkwell::targets::TargetMachine;
use inkwell::types::{BasicTypeEnum, IntType};
use inkwell::values::{BasicValueEnum, FunctionValue, IntValue, PointerValue};

use super::{CodegenError, CompileInput};
use crate::abi::{bounds_sites, shared_offsets};
use crate::ir::*;
use crate::target::Target;
use function::func_symbol;

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

struct Cx<'a, 'ctx> {
    ctx: &'ctx Context,
    input: &'a CompileInput<'a>,
    target: Target,
    host: bool,
    /// Float multiplies and adds may be contracted (the kernel's `fmad`, else the options').
    fmad: bool,
    shared: HashMap<(FuncId, usize), u64>,
    /// The program's static shared memory, in bytes.
    shared_total: u64,
    /// The site number of each bounds-checked access, by its array expression.
    sites: HashMap<*const Expr, u32>,
    /// By function: whether it, or anything it calls, has a bounds check (a call to one that
    /// does is followed by the host backend's exit test).
    may_fault: Vec<bool>,
    i1: IntType<'ctx>,
    i8: IntType<'ctx>,
    i32: IntType<'ctx>,
    i64: IntType<'ctx>,
    ptr: inkwell::types::PointerType<'ctx>,
    triple: inkwell::targets::TargetTriple,
    /// On the GPU, the captures compiled relocatably, by capture id: each is a hidden pointer
    /// parameter of every function, after the fault record and the token, in this order
    /// (empty on the host, which reads them from module variables).
    gpu_slots: Vec<CaptureId>,
    /// Whether a kernel whose accesses may be widened gets an aligned copy (`align.rs`).
    aligned: bool,
}

/// Lowers every function of the program into its own module; index = `FuncId`. Each module is
/// verified, so an invalid one is an error here rather than an abort later.
/// With `aligned`, a kernel whose accesses may be widened gets an aligned copy (`align.rs`).
pub fn lower_program<'ctx>(
    ctx: &'ctx Context,
    input: &CompileInput<'_>,
    tm: &TargetMachine,
    aligned: bool,
) -> Result<Vec<Module<'ctx>>, CodegenError> {
    let modules = lower_all(ctx, input, tm, aligned).map_err(|e| match e {
        LErr::Codegen(c) => c,
        LErr::Diverged => CodegenError::Llvm("a function body diverged outside any expression".into()),
    })?;
    for m in &modules {
        m.verify().map_err(|e| CodegenError::Llvm(format!("verify {}: {}", m.get_name().to_string_lossy(), e.to_string())))?;
    }
    Ok(modules)
}

fn lower_all<'ctx>(ctx: &'ctx Context, input: &CompileInput<'_>, tm: &TargetMachine, aligned: bool) -> R<Vec<Module<'ctx>>> {
    let target = input.options.target;
    let (shared, shared_total) = shared_offsets(input.program);
    let cx = Cx {
        ctx,
        input,
        target,
        host: target == Target::Host,
        fmad: input.program.fmad.unwrap_or(input.options.fmad),
        shared,
        shared_total,
        sites: bounds_sites(input.program).iter().enumerate().map(|(n, s)| (s.array as *const Expr, n as u32)).collect(),
        may_fault: may_fault(input.program),
        i1: ctx.bool_type(),
        i8: ctx.i8_type(),
        i32: ctx.i32_type(),
        i64: ctx.i64_type(),
        ptr: ctx.ptr_type(AddressSpace::default()),
        triple: tm.get_triple(),
        gpu_slots: if target == Target::Host { Vec::new() } else { crate::abi::slot_captures(input.captures) },
        aligned,
    };
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
            cx.define_capture_slots(&m);
            cx.host_entry(&m, id)?;
        }
        out.push(m);
    }
    Ok(out)
}

/// By function: whether it or anything it reaches has a bounds-checked access.
fn may_fault(p: &Program) -> Vec<bool> {
    let sites = bounds_sites(p);
    (0..p.funcs.len())
        .map(|f| {
            let mut seen = vec![false; p.funcs.len()];
            let mut stack = vec![f];
            while let Some(g) = stack.pop() {
                if std::mem::replace(&mut seen[g], true) {
                    continue;
                }
                stack.extend(&p.funcs[g].callees);
            }
            sites.iter().any(|s| seen[s.func])
        })
        .collect()
}

#[derive(Clone, Debug)]
struct ArrayVal<'ctx> {
    ptr: PointerValue<'ctx>,
    shape: Vec<IntValue<'ctx>>,
    strides: Vec<IntValue<'ctx>>,
    elem: Elem,
}

#[derive(Clone, Debug)]
enum Val<'ctx> {
    Unit,
    Never,
    Scalar(BasicValueEnum<'ctx>),
    Array(ArrayVal<'ctx>),
    /// A tuple, fixed-size array or struct: a pointer to a temporary holding it.
    Agg(PointerValue<'ctx>),
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
    /// A scalar parameter or `let` that nothing assigns or lends: its value itself, with no
    /// storage (fewer instructions for LLVM to promote; the PTX is the same).
    Value(BasicValueEnum<'ctx>),
    Array(ArrayVal<'ctx>),
    /// A tuple, fixed-size array or struct local: its storage and type.
    Agg(PointerValue<'ctx>, Ty),
    None,
}

struct LoopBlocks<'ctx> {
    cont: BasicBlock<'ctx>,
    exit: BasicBlock<'ctx>,
    value: Option<aggregate::ValueSlot<'ctx>>,
}

/// The type a value is lowered as: an enum is its discriminant.
fn value_ty(t: Ty) -> Ty {
    match t {
        Ty::Enum(e) => Ty::Scalar(e.repr),
        t => t,
    }
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

    /// The integer type of `bits` bits (8, 16, 32 or 64): a value's bits as an integer.
    fn int_bits(&self, bits: u32) -> IntType<'ctx> {
        match bits {
            8 => self.i8,
            16 => self.ctx.i16_type(),
            32 => self.i32,
            _ => self.i64,
        }
    }

    fn mem_ty(&self, s: Scalar) -> BasicTypeEnum<'ctx> {
        if s == Scalar::Bool { self.i8.into() } else { self.scalar_ty(s) }
    }

    /// On the host backend, the slot of relocatable capture `c` in module `m`: declared where a
    /// function reads it, defined once, in the kernel's module ([`Cx::define_capture_slots`]),
    /// so linking joins them; the loader writes the array's address into it. (On the GPU the
    /// address is a hidden parameter instead: [`Cx::gpu_slots`].)
    fn capture_slot(&self, m: &Module<'ctx>, c: CaptureId) -> inkwell::values::GlobalValue<'ctx> {
        let name = crate::abi::capture_slot_symbol(c);
        if let Some(g) = m.get_global(&name) {
            return g;
        }
        let g = m.add_global(self.ptr, Some(AddressSpace::default()), &name);
        g.set_alignment(8);
        g.set_externally_initialized(true);
        g
    }

    /// Defines, in the kernel's module for the host backend, the slot of every device array the
    /// program captured relocatably, visible by name for the loader (none in baked mode; the
    /// GPU passes the addresses as parameters instead).
    fn define_capture_slots(&self, m: &Module<'ctx>) {
        for (c, data) in self.input.captures.iter().enumerate() {
            if let crate::abi::CaptureData::DeviceSlot { .. } = data {
                let g = self.capture_slot(m, c);
                g.set_initializer(&self.ptr.const_null());
                g.set_linkage(inkwell::module::Linkage::External);
            }
        }
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
    /// The locals the function assigns or lends to a `&mut self` method.
    written: HashSet<LocalId>,
    loops: HashMap<LoopId, LoopBlocks<'ctx>>,
    host_ctx: Option<PointerValue<'ctx>>,
    /// On the GPU: the fault record and the kernel's token (hidden parameters).
    gpu_fault: Option<(PointerValue<'ctx>, IntValue<'ctx>)>,
    /// On the GPU: the addresses of the relocatable captures (hidden parameters, in the order
    /// of [`Cx::gpu_slots`]).
    gpu_slots: Vec<PointerValue<'ctx>>,
    /// `activemask()` call sites lowered so far (the host numbers each site).
    activemask_sites: u32,
    /// Where a function returning an aggregate writes its value.
    sret: Option<PointerValue<'ctx>>,
    /// Array accesses (by their array expression) whose bounds the enclosing versioned loop
    /// proved before it started (`version.rs`): their checks are left out.
    proven: HashSet<*const Expr>,
    /// How many versioned loops enclose the code being lowered.
    version_depth: u32,
    /// Lowering the checked copy of a versioned loop (`loops.rs`): loops nested in it are
    /// neither versioned again nor unrolled.
    in_fallback: bool,
    /// Statements left out wherever their block is lowered: the increment of a strided `while`
    /// (or `loop`) lowered as the `for` loop it is (`loops::StridedWhile`), whose latch steps
    /// instead, and a `loop`'s exit test, which the `for` loop's trip count stands for.
    skip_stmts: Vec<*const Stmt>,
    /// Lowering the aligned copy of a kernel's body (`align.rs`), whose returns are marked.
    aligned_copy: bool,
    /// Bounds checks lowered so far: each one's fault path is tagged with its number
    /// (`FAULT_TAG`), which `pipeline::fold_proven_checks` finds it by.
    guards: u32,
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
}
