//! The pipeline from a checked program to the module code is emitted from: a target machine,
//! each function lowered into its own module, the kernel's module linked with every module it
//! reaches (and libdevice where the kernel needs it), internalised, verified and optimised.

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine, TargetTriple};

use super::{CodegenError, CompileInput, first_libdevice_use, lower};
use crate::abi::entry_symbol;
use crate::ir::Program;
use crate::target::{HostCpu, Options, Target};

/// Registers the LLVM targets kache generates code for, once per process.
pub(super) fn init_targets() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let config = InitializationConfig::default();
        LlvmTarget::initialize_nvptx(&config);
        LlvmTarget::initialize_x86(&config);
    });
}

/// The target machine for the options' target at their optimisation level: NVPTX for the
/// architecture with its PTX ISA, or for the host backend this machine's CPU and features (the
/// JIT, static relocation) or a named CPU and its features (object code for linking into a
/// program, position independent).
pub(super) fn target_machine(options: &Options) -> Result<TargetMachine, CodegenError> {
    init_targets();
    let target = options.target;
    // NVPTX code generation at LLVM's default level even under `-O3`: in LLVM 19's NVPTX pass
    // list the aggressive level differs only by GVN in two places (after the straight-line
    // scalar optimisations, and before the load-store vectoriser) where the default level runs
    // EarlyCSE (`llc -O2`/`-O3 -debug-pass=Structure`), work that ptxas does again. The PTX of
    // the speed suite and the miss kernels is byte-identical, a few corpus kernels' slightly
    // different; instructions per miss (callgrind): tiled matmul -14%, softmax -5%, a
    // 5,000-statement kernel -2.6%.
    let level = match (options.opt_level, target) {
        (0, _) => OptimizationLevel::None,
        (1, _) => OptimizationLevel::Less,
        (2, _) | (_, Target::Nvptx(_)) => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    let (triple, cpu, features) = match target {
        Target::Nvptx(a) => {
            let (maj, min) = a.ptx_isa();
            (TargetTriple::create("nvptx64-nvidia-cuda"), a.to_string(), format!("+ptx{maj}{min}"))
        }
        Target::Host => match &options.host_cpu {
            HostCpu::Native => (
                TargetMachine::get_default_triple(),
                TargetMachine::get_host_cpu_name().to_string(),
                TargetMachine::get_host_cpu_features().to_string(),
            ),
            HostCpu::Named { cpu, features } => (TargetMachine::get_default_triple(), cpu.clone(), features.clone()),
        },
    };
    let t = LlvmTarget::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    let reloc = match (target, &options.host_cpu) {
        (Target::Host, HostCpu::Native) => RelocMode::Static,
        (Target::Host, HostCpu::Named { .. }) => RelocMode::PIC,
        (Target::Nvptx(_), _) => RelocMode::Default,
    };
    t.create_target_machine(&triple, &cpu, &features, level, reloc, CodeModel::Default)
        .ok_or_else(|| CodegenError::Llvm(format!("no target machine for {target}")))
}

/// LLVM's diagnostics of one compile: errors are kept (and fail the compile), warnings and
/// remarks are dropped. Without a handler LLVM prints warnings to the process's stderr and
/// exits the process on an error.
#[derive(Default)]
pub(super) struct Diagnostics {
    errors: std::sync::Mutex<Vec<String>>,
}

extern "C" fn on_diagnostic(info: inkwell::llvm_sys::prelude::LLVMDiagnosticInfoRef, data: *mut std::ffi::c_void) {
    use inkwell::llvm_sys::core::{LLVMDisposeMessage, LLVMGetDiagInfoDescription, LLVMGetDiagInfoSeverity};
    // SAFETY: LLVM passes a live diagnostic; `data` is the `Diagnostics` installed with this
    // handler, which outlives the context (see `Diagnostics::install`).
    unsafe {
        if LLVMGetDiagInfoSeverity(info) != inkwell::llvm_sys::LLVMDiagnosticSeverity::LLVMDSError {
            return;
        }
        let text = LLVMGetDiagInfoDescription(info);
        let msg = std::ffi::CStr::from_ptr(text).to_string_lossy().into_owned();
        LLVMDisposeMessage(text);
        if let Some(d) = (data as *const Diagnostics).as_ref() {
            d.errors.lock().unwrap_or_else(|e| e.into_inner()).push(msg);
        }
    }
}

impl Diagnostics {
    /// Routes `context`'s diagnostics here. `self` must outlive every use of the context.
    pub(super) fn install(&self, context: &Context) {
        // SAFETY: the handler only reads `self` through the pointer, and the caller keeps
        // `self` alive for as long as the context is used.
        unsafe {
            inkwell::llvm_sys::core::LLVMContextSetDiagnosticHandler(
                context.raw(),
                Some(on_diagnostic),
                self as *const Diagnostics as *mut std::ffi::c_void,
            )
        }
    }

    /// The errors LLVM reported, as one failure.
    pub(super) fn check(&self) -> Result<(), CodegenError> {
        let errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errors.is_empty() { Ok(()) } else { Err(CodegenError::Llvm(errors.join("; "))) }
    }
}

/// What [`build`] made: each function's own module as bitcode (where asked for) and the
/// kernel's linked, optimised module.
pub(super) struct Built<'ctx> {
    /// Per function (by `FuncId`), its own unoptimised module as bitcode; empty unless
    /// [`build`] was asked to keep them.
    pub function_bitcode: Vec<Vec<u8>>,
    /// The kernel's module, linked, internalised, verified and optimised.
    pub linked: Module<'ctx>,
    /// The symbol that launches the kernel.
    pub entry: String,
}

/// Lowers every function of the program, links the kernel's module with the modules it reaches
/// (each once) and, on NVPTX, with libdevice if the program needs it, then internalises
/// everything but the entry, verifies and optimises. With `keep_bitcode`, each function's own
/// module is written as bitcode before it is linked: linking consumes the modules themselves,
/// which costs less than linking copies of them (cloning was 5% of a large kernel's compile).
///
/// On NVPTX a kernel lowered with an aligned copy (`lower/align.rs`) that gains no wide access
/// from it (`aligned.rs`) is built again without one, so that its code is what it would be had
/// it never been copied.
pub(super) fn build<'ctx>(
    context: &'ctx Context,
    input: &CompileInput<'_>,
    tm: &TargetMachine,
    keep_bitcode: bool,
) -> Result<Built<'ctx>, CodegenError> {
    match build_with(context, input, tm, keep_bitcode, true)? {
        Some(built) => Ok(built),
        None => build_with(context, input, tm, keep_bitcode, false)?
            .ok_or_else(|| CodegenError::Llvm("an aligned copy made without one".into())),
    }
}

/// [`build`], with or without aligned copies: `None` where the aligned copy bought nothing.
fn build_with<'ctx>(
    context: &'ctx Context,
    input: &CompileInput<'_>,
    tm: &TargetMachine,
    keep_bitcode: bool,
    aligned: bool,
) -> Result<Option<Built<'ctx>>, CodegenError> {
    let program = input.program;
    let kernel = program.kernel();
    if let Target::Nvptx(_) = input.options.target
        && program.uses_libdevice()
        && input.libdevice.is_none()
    {
        let function = first_libdevice_use(program).unwrap_or_else(|| "a transcendental function".into());
        return Err(CodegenError::NoLibdevice { kernel: kernel.name.clone(), function });
    }
    // The caller reports this with its location (`Kernel::derive`); LLVM would abort on an
    // instruction the architecture lacks, so no path may reach it.
    if let Target::Nvptx(arch) = input.options.target
        && let Err(d) = crate::lang::check_arch(program, arch.sm, arch.accelerated)
    {
        return Err(CodegenError::NeedsArch { kernel: kernel.name.clone(), message: d.message });
    }
    let functions = lower::lower_program(context, input, tm, aligned)?;
    let function_bitcode =
        if keep_bitcode { functions.iter().map(|m| m.write_bitcode_to_memory().as_slice().to_vec()).collect() } else { Vec::new() };
    let mut functions: Vec<Option<Module<'ctx>>> = functions.into_iter().map(Some).collect();
    let mut order = Vec::new();
    reach(program, program.kernel, &mut order);
    let taken = |functions: &mut Vec<Option<Module<'ctx>>>, id: usize| {
        functions.get_mut(id).and_then(Option::take).ok_or_else(|| CodegenError::Llvm(format!("link: no module for function {id}")))
    };
    let linked = taken(&mut functions, program.kernel)?;
    // Each function's module was verified on its own (`lower_program`): the linked module is
    // verified again only if something was linked into the kernel's.
    let mut linked_any = order.len() > 1;
    for id in order.into_iter().filter(|i| *i != program.kernel) {
        linked.link_in_module(taken(&mut functions, id)?).map_err(|e| CodegenError::Llvm(format!("link: {e}")))?;
    }
    let entry = entry_symbol(program, input.options.target);
    if let (Target::Nvptx(_), Some(bc)) = (input.options.target, input.libdevice)
        && program.uses_libdevice()
    {
        let libdevice = if link_all_of_libdevice() {
            let buf = MemoryBuffer::create_from_memory_range_copy(bc, "libdevice.10.bc");
            Module::parse_bitcode_from_buffer(&buf, context)
                .map_err(|e| CodegenError::BadLibdevice { path: "libdevice.10.bc".into(), reason: e.to_string() })?
        } else {
            lazy_libdevice(context, bc)?
        };
        libdevice.set_triple(&tm.get_triple());
        libdevice.set_data_layout(&tm.get_target_data().get_data_layout());
        linked.link_in_module(libdevice).map_err(|e| CodegenError::Llvm(format!("link libdevice: {e}")))?;
        inline_reduction_tables(&linked);
        linked_any = true;
    }
    // Internalising gives definitions internal linkage, which keeps a verified module valid.
    internalize(&linked, &entry);
    if linked_any {
        linked.verify().map_err(|e| CodegenError::Llvm(format!("verify: {}", e.to_string())))?;
    }
    optimize(&linked, tm, input.options.opt_level)?;
    if let Target::Nvptx(_) = input.options.target {
        // A shared array's accesses reach here through generic pointers (`addrspacecast` of the
        // array's global), through which LLVM infers no alignment: in its own address space
        // the array's (1024 bytes from 1 KiB) and the index's known low bits give each access
        // its alignment, so that the back end's load-store vectoriser merges a thread's
        // consecutive shared elements (`ld.shared.v4.f32`) as NVIDIA's compiler does for a
        // `float4`.
        linked
            .run_passes("function(infer-address-spaces,infer-alignment)", tm, PassBuilderOptions::create())
            .map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))?;
        if super::spaces::fold_known_spaces(&linked, &entry) > 0 {
            // The guards those tests fed are now `br true`: fold them and what they kept alive.
            // Address spaces inferred first (as the back end would), so that a shared access's
            // alignment test reads its shared address where the array's start is known.
            linked
                .run_passes(
                    "function(infer-address-spaces,instcombine<no-verify-fixpoint>,simplifycfg,adce)",
                    tm,
                    PassBuilderOptions::create(),
                )
                .map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))?;
        }
        if !super::aligned::keep_if_wider(&linked, tm)? {
            return Ok(None);
        }
        reciprocals_through_f64(&linked)?;
        super::fuse::fuse_multiply_adds(&linked)?;
        super::trip_counts::count_down_to_zero(&linked);
    }
    Ok(Some(Built { function_bitcode, linked, entry }))
}

/// Each IEEE `f32` reciprocal left after optimisation (`fdiv float 1.0, %x`, what `1.0 / x`
/// becomes) computed in `f64` and rounded once: `rcp.approx.ftz.f64` refined by two Newton steps
/// (`e = 1 - x r`, `r += r e`, each an `fma`), then `cvt.rn.f32.f64`. On NVPTX `rcp.rn.f32`
/// becomes a call to ptxas's own subroutine for its slow path, which in relocatable code (how
/// the driver's linker compiles kache's PTX for the runtime and its cubin tier) follows the
/// full calling convention; this sequence has no call and no branch (the safe softmax of the
/// speed suite: about 0.7% faster, docs/benchmarks.md).
///
/// It is the correctly rounded `f32` reciprocal, IEEE's `1.0 / x`: the `f64` value is within
/// 2^-52.8 of 1/x (relative) for any start within 2^-14, and an `f32` reciprocal that is not a
/// rounding midpoint is at least 2^-49 away from one (1/x = m for a midpoint m of 25 significant
/// bits would need x m = 1; otherwise |1 - x m| is a nonzero multiple of 2^-49 or more), so the
/// one rounding to `f32` gives the nearest `f32` (`tests::f64_reciprocal_steps_round_to_the_f32_reciprocal`).
/// `x` = 0, infinite or NaN makes the steps NaN: those take the first approximation, which is
/// then exact (infinite, zero, NaN). kache never flushes subnormals (`nvvm-reflect-ftz` is 0):
/// an `f32` subnormal is an ordinary `f64`. On an H200 all 2^32 inputs give `rcp.rn.f32`'s bits
/// (tests/gpu.rs, `every_f32_reciprocal_on_cuda_is_ieee`). A division carrying fast-math flags
/// other than contraction, and any other division, is left to the back end.
fn reciprocals_through_f64(m: &Module<'_>) -> Result<(), CodegenError> {
    use inkwell::FloatPredicate;
    use inkwell::intrinsics::Intrinsic;
    use inkwell::types::AnyTypeEnum;
    use inkwell::values::{BasicMetadataValueEnum, BasicValue, FastMathFlags, FloatValue, FunctionValue, InstructionOpcode};

    fn err(what: impl std::fmt::Display) -> CodegenError {
        CodegenError::Llvm(format!("f32 reciprocal: {what}"))
    }
    fn call_float<'ctx>(
        b: &inkwell::builder::Builder<'ctx>,
        f: FunctionValue<'ctx>,
        args: &[BasicMetadataValueEnum<'ctx>],
    ) -> Result<FloatValue<'ctx>, CodegenError> {
        b.build_call(f, args, "")
            .map_err(err)?
            .try_as_basic_value()
            .basic()
            .map(|v| v.into_float_value())
            .ok_or_else(|| err("a call without a value"))
    }

    let ctx = m.get_context();
    let (f32t, f64t) = (ctx.f32_type(), ctx.f64_type());
    let mut sites = Vec::new();
    for f in m.get_functions() {
        for bb in f.get_basic_block_iter() {
            for inst in bb.get_instructions() {
                if inst.get_opcode() != InstructionOpcode::FDiv || inst.get_type() != AnyTypeEnum::FloatType(f32t) {
                    continue;
                }
                let exact = inst.get_fast_math_flags().is_ok_and(|f| (f - FastMathFlags::AllowContract).is_empty());
                let one =
                    inst.get_operand(0).and_then(|o| o.value()).is_some_and(|v| v.into_float_value().get_constant() == Some((1.0, false)));
                match inst.get_operand(1).and_then(|o| o.value()) {
                    Some(x) if exact && one => sites.push((inst, x.into_float_value())),
                    _ => {}
                }
            }
        }
    }
    if sites.is_empty() {
        return Ok(());
    }
    let rcp = Intrinsic::find("llvm.nvvm.rcp.approx.ftz.d")
        .and_then(|i| i.get_declaration(m, &[]))
        .ok_or_else(|| err("no llvm.nvvm.rcp.approx.ftz.d"))?;
    let fma = Intrinsic::find("llvm.fma").and_then(|i| i.get_declaration(m, &[f64t.into()])).ok_or_else(|| err("no llvm.fma.f64"))?;
    let b = ctx.create_builder();
    let one = f64t.const_float(1.0);
    for (inst, x) in sites {
        b.position_before(&inst);
        let d = b.build_float_ext(x, f64t, "").map_err(err)?;
        let r0 = call_float(&b, rcp, &[d.into()])?;
        let n = b.build_float_neg(d, "").map_err(err)?;
        let mut r = r0;
        for _ in 0..2 {
            let e = call_float(&b, fma, &[n.into(), r.into(), one.into()])?;
            r = call_float(&b, fma, &[r.into(), e.into(), r.into()])?;
        }
        let nan = b.build_float_compare(FloatPredicate::UNO, r, r, "").map_err(err)?;
        let r = b.build_select(nan, r0, r, "").map_err(err)?.into_float_value();
        let q = b.build_float_trunc(r, f32t, "").map_err(err)?;
        inst.replace_all_uses_with(&q.as_instruction_value().ok_or_else(|| err("a constant"))?);
        inst.erase_from_basic_block();
    }
    Ok(())
}

/// libdevice read lazily into `context`, every definition made link-once, so that linking it
/// brings in only what the kernel reaches: the functions the kernel declares, and what those
/// use, each body read from the bitcode only then (LLVM's link-only-needed, which the C API
/// does not offer: the linker pulls a link-once definition only when something linked refers
/// to it). Reading the module this way costs a small fraction of parsing all of it (about 350
/// functions), and the optimiser never sees what the kernel does not use.
fn lazy_libdevice<'ctx>(context: &'ctx Context, bc: &[u8]) -> Result<Module<'ctx>, CodegenError> {
    use inkwell::llvm_sys::bit_reader::LLVMGetBitcodeModuleInContext2;
    let bad = |reason: &str| CodegenError::BadLibdevice { path: "libdevice.10.bc".into(), reason: reason.into() };
    let buf = MemoryBuffer::create_from_memory_range_copy(bc, "libdevice.10.bc");
    let mut raw = std::ptr::null_mut();
    // SAFETY: the context and the buffer are live. LLVM takes the buffer over whether or not
    // it succeeds (the module owns it, or LLVM drops its handle without freeing it), so the
    // wrapper must not free it: it is forgotten below.
    let failed = unsafe { LLVMGetBitcodeModuleInContext2(context.raw(), buf.as_mut_ptr(), &mut raw) };
    std::mem::forget(buf);
    if failed != 0 || raw.is_null() {
        return Err(bad("not LLVM bitcode LLVM can read"));
    }
    // SAFETY: `raw` is a module LLVM just created in `context`, owned by no one else.
    let module = unsafe { Module::new(raw) };
    let mut f = module.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        // A body not read yet is a definition to LLVM (it is materialisable), not a declaration.
        if func.as_global_value().is_declaration() {
            continue;
        }
        if !matches!(func.get_linkage(), Linkage::Internal | Linkage::Private) {
            func.set_linkage(Linkage::LinkOnceODR);
        }
    }
    let mut g = module.get_first_global();
    while let Some(global) = g {
        g = global.get_next_global();
        if global.get_initializer().is_some() && !matches!(global.get_linkage(), Linkage::Internal | Linkage::Private | Linkage::Appending)
        {
            global.set_linkage(Linkage::LinkOnceODR);
        }
    }
    Ok(module)
}

/// libdevice's constant tables: the bits of 2/pi, which the slow path of its `sin`, `cos`,
/// `tan` and `sincos` reads to reduce a huge argument (f32 past |x| = 105615), and the
/// coefficients of the f64 `sin`/`cos` polynomials (two sets of eight, picked by quadrant).
const LIBDEVICE_TABLES: [&str; 3] = ["__cudart_i2opi_f", "__cudart_i2opi_d", "__cudart_sin_cos_coeffs"];

/// Each load from one of libdevice's [`LIBDEVICE_TABLES`] becomes a chain of selects over the
/// table's constants, and the table goes. Any variable in a module (a `.global` in its PTX)
/// makes `cuModuleLoadData` about 0.07 ms slower on the H200 (measured for issue 17), and these
/// tables were the only variables a kernel's module held: every kernel that used `sin` paid it
/// on its first launch. The optimiser folds each chain to what the index can be: the slow
/// path's loop over the 2/pi table keeps a chain of five `selp`, and an f64 polynomial
/// coefficient (at 8 * (quadrant & 1) + k) becomes one `selp` instead of a load. The values are
/// the table's, so every result is the same bit for bit. A table used in any other way than
/// loads of one element (through one or two GEPs, at indices computed at run time or not) is
/// left as it is.
fn inline_reduction_tables(m: &Module<'_>) {
    use inkwell::llvm_sys::LLVMIntPredicate::LLVMIntEQ;
    use inkwell::llvm_sys::LLVMTypeKind::{LLVMArrayTypeKind, LLVMDoubleTypeKind, LLVMFloatTypeKind, LLVMIntegerTypeKind};
    use inkwell::llvm_sys::core::*;
    use inkwell::llvm_sys::prelude::{LLVMTypeRef, LLVMValueRef};
    use inkwell::values::AsValueRef;

    /// A load of one table element, and the offset an element GEP between it and the table's
    /// GEP adds to that GEP's index (none if it loads through the table's GEP itself).
    type Load = (LLVMValueRef, Option<LLVMValueRef>);

    /// Whether `v` is a non-volatile load of an `element`.
    ///
    /// # Safety
    /// `v` and `element` must be live references of one module.
    unsafe fn plain_load(v: LLVMValueRef, element: LLVMTypeRef) -> bool {
        // SAFETY: the caller's promise.
        unsafe { !LLVMIsALoadInst(v).is_null() && LLVMGetVolatile(v) == 0 && LLVMTypeOf(v) == element }
    }

    /// The users of `v`, in use order.
    ///
    /// # Safety
    /// `v` must be a live value.
    unsafe fn users_of(v: LLVMValueRef) -> Vec<LLVMValueRef> {
        let mut out = Vec::new();
        // SAFETY: the caller's promise; a use list is walked, not changed.
        unsafe {
            let mut u = LLVMGetFirstUse(v);
            while !u.is_null() {
                out.push(LLVMGetUser(u));
                u = LLVMGetNextUse(u);
            }
        }
        out
    }

    /// The loads through `gep`, a pointer to one of `element`s: its users, which must be loads
    /// or element GEPs on it whose users are all loads; `None` if any is something else.
    ///
    /// # Safety
    /// `gep` and `element` must be live references of one module.
    unsafe fn loads_through(gep: LLVMValueRef, element: LLVMTypeRef) -> Option<Vec<Load>> {
        let mut out = Vec::new();
        // SAFETY: `gep`, its users and theirs are live values of one module (the caller's promise).
        unsafe {
            for user in users_of(gep) {
                if plain_load(user, element) {
                    out.push((user, None));
                    continue;
                }
                let element_gep = !LLVMIsAGetElementPtrInst(user).is_null()
                    && LLVMGetOperand(user, 0) == gep
                    && LLVMGetNumOperands(user) == 2
                    && LLVMGetGEPSourceElementType(user) == element;
                let loads = users_of(user);
                if !element_gep || loads.is_empty() || !loads.iter().all(|l| plain_load(*l, element)) {
                    return None;
                }
                let offset = LLVMGetOperand(user, 1);
                out.extend(loads.into_iter().map(|l| (l, Some(offset))));
            }
        }
        Some(out)
    }

    /// Every use of the table `g` (of `n` `element`s, type `table`): a GEP instruction to one
    /// element (`[n x T], 0, i` or `T, i`), with its index and the loads through it; `None` if
    /// any use has another form.
    ///
    /// # Safety
    /// `g`, `table` and `element` must be live references of one module.
    unsafe fn table_uses(
        g: LLVMValueRef,
        table: LLVMTypeRef,
        element: LLVMTypeRef,
    ) -> Option<Vec<(LLVMValueRef, LLVMValueRef, Vec<Load>)>> {
        let mut out = Vec::new();
        // SAFETY: the caller's promise.
        unsafe {
            for gep in users_of(g) {
                if LLVMIsAGetElementPtrInst(gep).is_null() || LLVMGetOperand(gep, 0) != g {
                    return None;
                }
                let source = LLVMGetGEPSourceElementType(gep);
                let index = match LLVMGetNumOperands(gep) {
                    3 if source == table => {
                        let first = LLVMGetOperand(gep, 1);
                        if LLVMIsAConstantInt(first).is_null() || LLVMConstIntGetZExtValue(first) != 0 {
                            return None;
                        }
                        LLVMGetOperand(gep, 2)
                    }
                    2 if source == element => LLVMGetOperand(gep, 1),
                    _ => return None,
                };
                let loads = loads_through(gep, element)?;
                // An offset added to the index must be of the index's type.
                if loads.iter().any(|(_, off)| off.is_some_and(|o| LLVMTypeOf(o) != LLVMTypeOf(index))) {
                    return None;
                }
                out.push((gep, index, loads));
            }
        }
        Some(out)
    }

    for name in LIBDEVICE_TABLES {
        let Some(global) = m.get_global(name) else { continue };
        let g = global.as_value_ref();
        // SAFETY: every reference below comes from `m`'s own values and types, live while `m`
        // is; nothing is changed until the whole table's uses are known to have the expected
        // form, and each instruction is erased once, after its last use.
        unsafe {
            let init = LLVMGetInitializer(g);
            let table = LLVMGlobalGetValueType(g);
            if init.is_null() || LLVMGetTypeKind(table) != LLVMArrayTypeKind {
                continue;
            }
            let element = LLVMGetElementType(table);
            let n = LLVMGetArrayLength2(table);
            let scalar = matches!(LLVMGetTypeKind(element), LLVMIntegerTypeKind | LLVMFloatTypeKind | LLVMDoubleTypeKind);
            if !scalar || n == 0 || n > 64 {
                continue;
            }
            let values: Vec<LLVMValueRef> = (0..n as u32).map(|i| LLVMGetAggregateElement(init, i)).collect();
            if values.iter().any(|v| v.is_null()) {
                continue;
            }
            let Some(geps) = table_uses(g, table, element) else { continue };
            let builder = LLVMCreateBuilderInContext(LLVMGetModuleContext(m.as_mut_ptr()));
            for (gep, index, loads) in geps {
                let index_type = LLVMTypeOf(index);
                for (load, offset) in loads {
                    LLVMPositionBuilderBefore(builder, load);
                    let at = match offset {
                        Some(o) => LLVMBuildAdd(builder, index, o, c"".as_ptr()),
                        None => index,
                    };
                    let mut value = values[values.len() - 1];
                    for k in (0..values.len() - 1).rev() {
                        let is_k = LLVMBuildICmp(builder, LLVMIntEQ, at, LLVMConstInt(index_type, k as u64, 0), c"".as_ptr());
                        value = LLVMBuildSelect(builder, is_k, values[k], value, c"".as_ptr());
                    }
                    LLVMReplaceAllUsesWith(load, value);
                    LLVMInstructionEraseFromParent(load);
                }
                // What still uses the GEP is the element GEPs on it, whose loads are gone.
                for inner in users_of(gep) {
                    LLVMInstructionEraseFromParent(inner);
                }
                LLVMInstructionEraseFromParent(gep);
            }
            LLVMDisposeBuilder(builder);
            if LLVMGetFirstUse(g).is_null() {
                LLVMDeleteGlobal(g);
            }
        }
    }
}

/// Whether to link all of libdevice, the way kache did before [`lazy_libdevice`]: only tests
/// ask, to show that linking what is needed makes the same code.
#[cfg(test)]
fn link_all_of_libdevice() -> bool {
    tests::LINK_ALL.with(|c| c.get())
}

#[cfg(not(test))]
fn link_all_of_libdevice() -> bool {
    false
}

/// Every function reachable from `id`, in a fixed order, `id` first.
fn reach(p: &Program, id: usize, out: &mut Vec<usize>) {
    let mut stack = vec![id];
    while let Some(f) = stack.pop() {
        if out.contains(&f) {
            continue;
        }
        out.push(f);
        for c in p.funcs[f].callees.iter().rev() {
            stack.push(*c);
        }
    }
}

fn internalize(m: &Module<'_>, entry: &str) {
    let mut f = m.get_first_function();
    while let Some(func) = f {
        f = func.get_next_function();
        let name = func.get_name().to_str().unwrap_or("");
        if func.count_basic_blocks() > 0 && name != entry {
            func.set_linkage(Linkage::Internal);
        }
    }
    let mut g = m.get_first_global();
    while let Some(global) = g {
        g = global.get_next_global();
        // Capture slots stay visible: the loader finds them by name.
        let slot = global.get_name().to_str().is_ok_and(|n| n.starts_with(crate::abi::CAPTURE_SLOT_PREFIX));
        // Appending globals (`llvm.used`) must keep their linkage.
        let keep = matches!(global.get_linkage(), Linkage::Private | Linkage::Appending);
        if global.get_initializer().is_some() && !keep && !slot {
            global.set_linkage(Linkage::Internal);
        }
    }
}

fn optimize(m: &Module<'_>, tm: &TargetMachine, opt_level: u8) -> Result<(), CodegenError> {
    let run = |passes: &str| {
        m.run_passes(passes, tm, PassBuilderOptions::create()).map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))
    };
    // Drop what the kernel does not reach (most of libdevice) before the expensive passes.
    run("globaldce")?;
    if opt_level >= 2 {
        super::checks::fold_proven_checks(m, tm)?;
    }
    run(&format!("default<O{}>", opt_level.min(3)))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use inkwell::context::Context;

    use super::*;
    use crate::{Arch, Layout, Specialization};

    thread_local! {
        pub(super) static LINK_ALL: Cell<bool> = const { Cell::new(false) };
    }

    /// libdevice's bytes, or `None` with a printed reason; a failure under
    /// `KACHE_REQUIRE_PTXAS=1` (where CI installs the wheel that holds it).
    fn libdevice_bytes() -> Option<std::sync::Arc<[u8]>> {
        let found = crate::toolchain::libdevice().and_then(|l| l.load()).map(|(b, _)| b);
        if found.is_none() {
            assert_ne!(std::env::var("KACHE_REQUIRE_PTXAS").as_deref(), Ok("1"), "libdevice not found and KACHE_REQUIRE_PTXAS=1");
            crate::logging::warning!("skipping: libdevice not found (KACHE_REQUIRE_PTXAS=1 makes this a failure)");
        }
        found
    }

    fn defined_functions(m: &Module<'_>) -> Vec<String> {
        let mut out = Vec::new();
        let mut f = m.get_first_function();
        while let Some(func) = f {
            f = func.get_next_function();
            if func.count_basic_blocks() > 0 {
                out.push(func.get_name().to_string_lossy().into_owned());
            }
        }
        out
    }

    #[test]
    fn linking_libdevice_brings_in_only_what_is_reached() {
        let Some(bc) = libdevice_bytes() else { return };
        let context = Context::create();
        let diagnostics = Diagnostics::default();
        diagnostics.install(&context);
        let kernel = context.create_module("k");
        let f32t = context.f32_type();
        let f64t = context.f64_type();
        kernel.add_function("__nv_sinf", f32t.fn_type(&[f32t.into()], false), None);
        kernel.add_function("__nv_fmod", f64t.fn_type(&[f64t.into(), f64t.into()], false), None);
        let all = Module::parse_bitcode_from_buffer(&MemoryBuffer::create_from_memory_range_copy(&bc, "l"), &context).unwrap();
        let in_libdevice = defined_functions(&all).len();
        kernel.link_in_module(lazy_libdevice(&context, &bc).unwrap()).unwrap();
        diagnostics.check().unwrap();
        let linked = defined_functions(&kernel);
        assert!(linked.contains(&"__nv_sinf".to_string()) && linked.contains(&"__nv_fmod".to_string()), "{linked:?}");
        assert!(!linked.contains(&"__nv_expf".to_string()), "{linked:?}");
        // sinf's slow path (and the table it reads) comes along; the rest does not.
        assert!(linked.len() < 10 && in_libdevice > 300, "{} of {in_libdevice} linked: {linked:?}", linked.len());
        assert!(kernel.get_global("__cudart_i2opi_f").is_some(), "sinf's reduction table was not linked");
        assert!(kernel.verify().is_ok());
    }

    /// `1.0 / x` on `f32` becomes the `f64` sequence of `reciprocals_through_f64` (no call to
    /// ptxas's `rcp.rn.f32` subroutine); another dividend, an `f64` reciprocal and a reciprocal
    /// of a constant (folded) are left as they were; ptxas accepts the result.
    #[test]
    fn f32_reciprocals_become_f64_newton_steps_and_other_divisions_stay() {
        init_targets();
        let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32], z: &mut [f64]) { let i = global_id_x(); if i < x.len() { \
                   y[i] = 1.0 / x[i] + 2.0 / x[i] + 1.0 / 3.0; z[i] = 1.0 / (x[i] as f64); } }";
        let ptx = ptx_of(src, &[]);
        let count = |op: &str| ptx.matches(op).count();
        assert_eq!(count("rcp.approx.ftz.f64"), 1, "{ptx}");
        assert_eq!(count("fma.rn.f64"), 4, "{ptx}");
        assert_eq!(count("cvt.rn.f32.f64"), 1, "{ptx}");
        assert_eq!(count("rcp.rn.f32"), 0, "{ptx}");
        assert_eq!(count("div.rn.f32"), 1, "{ptx}");
        assert_eq!(count("rcp.rn.f64"), 1, "{ptx}");
        if let Some(ptxas) = crate::toolchain::find_ptxas() {
            crate::toolchain::ptxas(&ptxas, &ptx, "sm_80").unwrap();
        }
    }

    /// The arithmetic of `reciprocals_through_f64`, in Rust (`mul_add` is the `fma`, `as f32`
    /// the `cvt.rn`): from any start within 2^-14 of 1/x, two Newton steps in `f64` round to
    /// `1.0 / x` in `f32`, over a spread of every binade (subnormals, the largest values, and
    /// the inputs next to powers of two) and the special values; one step does not.
    #[test]
    fn f64_reciprocal_steps_round_to_the_f32_reciprocal() {
        fn rcp(x: f32, off: f64, steps: usize) -> f32 {
            let d = x as f64;
            let exact = 1.0 / d;
            let r0 = if exact.is_finite() && exact != 0.0 { exact * (1.0 + off) } else { exact };
            let n = -d;
            let mut r = r0;
            for _ in 0..steps {
                let e = n.mul_add(r, 1.0);
                r = r.mul_add(e, r);
            }
            (if r.is_nan() { r0 } else { r }) as f32
        }
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        let mut inputs: Vec<u32> = (0..u32::MAX / 4093).map(|k| k * 4093).collect();
        for e in 0..256u32 {
            for m in [0u32, 1, 2, 0x7f_fffe, 0x7f_ffff, 0x40_0000, 0x2a_aaab, 0x55_5555] {
                inputs.extend([(e << 23) | m, (1 << 31) | (e << 23) | m]);
            }
        }
        inputs.extend(0..4096u32);
        let offs = [0.0, 2f64.powi(-14), -(2f64.powi(-14)), 2f64.powi(-20) * 3.0, -(2f64.powi(-17)) * 5.0];
        let mut one_step_wrong = 0;
        for &bits in &inputs {
            let x = f32::from_bits(bits);
            let want = 1.0 / x;
            for &off in &offs {
                let got = rcp(x, off, 2);
                assert!(same(got, want), "1/{x:e} ({bits:#010x}) from a start off by {off:e}: {got:e}, not {want:e}");
                if !same(rcp(x, off, 1), want) {
                    one_step_wrong += 1;
                }
            }
        }
        assert!(one_step_wrong > 1000, "one Newton step was wrong only {one_step_wrong} times");
    }

    /// PTX for sm_80 of the one kernel of `src`, through the whole pipeline.
    fn ptx_of(src: &str, bc: &[u8]) -> String {
        let ast = crate::lang::parse(crate::lang::SourceFile::new("k.rs", src)).unwrap();
        let program = crate::lang::check_kernel(&ast, &crate::lang::Env::default(), "k").unwrap();
        let spec = Specialization::uniform(&program, Layout::C);
        let compiled = crate::codegen::compile(&crate::codegen::CompileInput {
            program: &program,
            spec: &spec,
            captures: &[],
            options: Options::new(Target::Nvptx(Arch::parse("sm_80").unwrap())),
            libdevice: Some(bc),
        });
        match compiled.unwrap().artifact {
            crate::codegen::Artifact::Ptx(p) => p,
            other => panic!("not PTX: {other:?}"),
        }
    }

    /// The rewrite on hand-written IR, run on the host: a table read through one or two GEPs
    /// becomes selects that give the table's values; a table also stored to is left alone.
    #[test]
    fn table_loads_become_selects_with_the_same_values_and_other_uses_keep_the_table() {
        init_targets();
        let ir = r#"
@__cudart_i2opi_f = internal global [6 x i32] [i32 11, i32 22, i32 33, i32 44, i32 55, i32 66], align 4
@__cudart_sin_cos_coeffs = internal constant [4 x double] [double 1.5, double 2.5, double 3.5, double 4.5]
@__cudart_i2opi_d = internal global [3 x i64] [i64 7, i64 8, i64 9]
define i32 @at(i64 %i) {
  %p = getelementptr inbounds [6 x i32], ptr @__cudart_i2opi_f, i64 0, i64 %i
  %v = load i32, ptr %p
  ret i32 %v
}
define double @coeff(i64 %q, i64 %k) {
  %base = getelementptr inbounds double, ptr @__cudart_sin_cos_coeffs, i64 %q
  %p = getelementptr inbounds double, ptr %base, i64 %k
  %v = load double, ptr %p
  %w = load double, ptr %base
  %s = fadd double %v, %w
  ret double %s
}
define void @put(i64 %v) {
  %p = getelementptr inbounds [3 x i64], ptr @__cudart_i2opi_d, i64 0, i64 1
  store i64 %v, ptr %p
  ret void
}
define i64 @read_d(i64 %i) {
  %p = getelementptr inbounds [3 x i64], ptr @__cudart_i2opi_d, i64 0, i64 %i
  %v = load i64, ptr %p
  ret i64 %v
}
"#;
        let context = Context::create();
        let m = context.create_module_from_ir(MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), "t")).unwrap();
        inline_reduction_tables(&m);
        m.verify().unwrap();
        assert!(m.get_global("__cudart_i2opi_f").is_none() && m.get_global("__cudart_sin_cos_coeffs").is_none());
        assert!(m.get_global("__cudart_i2opi_d").is_some(), "a table that is stored to stays");
        let ee = m.create_jit_execution_engine(OptimizationLevel::None).unwrap();
        // SAFETY: the signatures are the IR's.
        unsafe {
            let at = ee.get_function::<unsafe extern "C" fn(u64) -> u32>("at").unwrap();
            let coeff = ee.get_function::<unsafe extern "C" fn(u64, u64) -> f64>("coeff").unwrap();
            let read_d = ee.get_function::<unsafe extern "C" fn(u64) -> u64>("read_d").unwrap();
            let put = ee.get_function::<unsafe extern "C" fn(u64)>("put").unwrap();
            assert_eq!((0..6).map(|i| at.call(i)).collect::<Vec<_>>(), [11, 22, 33, 44, 55, 66]);
            let c = [1.5, 2.5, 3.5, 4.5];
            for (q, k) in [(0, 0), (0, 1), (2, 0), (2, 1), (1, 2)] {
                assert_eq!(coeff.call(q, k), c[(q + k) as usize] + c[q as usize], "q {q} k {k}");
            }
            put.call(80);
            assert_eq!((0..3).map(|i| read_d.call(i)).collect::<Vec<_>>(), [7, 80, 9]);
        }
    }

    #[test]
    fn trig_reduction_tables_become_selects_and_the_module_holds_no_variable() {
        let Some(bc) = libdevice_bytes() else { return };
        let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32], z: &mut [f64]) { let i = global_id_x(); if i < x.len() { \
                   let v = x[i]; y[i] = v.sin() + v.cos() * v.tan(); let d = v as f64; z[i] = d.sin() + d.cos(); } }";
        let ptx = ptx_of(src, &bc);
        // Both slow paths are there (one reduction each for f32 and f64), reading no table.
        assert!(ptx.matches("nounroll").count() >= 2, "{ptx}");
        assert!(!ptx.contains("i2opi"), "{ptx}");
        let variables: Vec<&str> = ptx
            .lines()
            .map(str::trim_start)
            .filter(|l| [".global", ".const", ".visible .global", ".visible .const"].iter().any(|p| l.starts_with(p)))
            .collect();
        assert!(variables.is_empty(), "module variables: {variables:?}");
        if let Some(ptxas) = crate::toolchain::find_ptxas() {
            crate::toolchain::ptxas(&ptxas, &ptx, "sm_80").unwrap();
        }
    }

    #[test]
    fn linking_what_is_needed_makes_the_ptx_of_linking_all() {
        if libdevice_bytes().is_none() {
            return;
        }
        let src = "#[kernel] pub fn k(x: &[f32], y: &mut [f32], z: &mut [f64]) { let i = global_id_x(); if i < x.len() { \
                   let v = x[i]; y[i] = v.exp() + v.sin() * v.powf(1.5) + v % 3.0 + v.tanh() + v.atan2(2.0); \
                   let d = v as f64; z[i] = d.sin() + d.cos() + d.exp() + d % 7.0 + d.erf(); } }";
        let ast = crate::lang::parse(crate::lang::SourceFile::new("k.rs", src)).unwrap();
        let program = crate::lang::check_kernel(&ast, &crate::lang::Env::default(), "k").unwrap();
        let bc = libdevice_bytes().unwrap();
        let spec = Specialization::uniform(&program, Layout::C);
        let ptx = |link_all: bool| {
            LINK_ALL.with(|c| c.set(link_all));
            let compiled = crate::codegen::compile(&crate::codegen::CompileInput {
                program: &program,
                spec: &spec,
                captures: &[],
                options: Options::new(Target::Nvptx(Arch::parse("sm_80").unwrap())),
                libdevice: Some(&bc),
            });
            LINK_ALL.with(|c| c.set(false));
            match compiled.unwrap().artifact {
                crate::codegen::Artifact::Ptx(p) => p,
                other => panic!("not PTX: {other:?}"),
            }
        };
        // NVPTX numbers call sites in comments from a counter global to the process: those
        // comments differ between any two compiles in one process.
        let code = |ptx: String| ptx.lines().map(|l| l.split("// callseq").next().unwrap_or(l).to_string()).collect::<Vec<_>>();
        let needed = code(ptx(false));
        assert!(needed.iter().any(|l| l.contains(".entry")) && needed.iter().any(|l| l.contains("__internal_trig_reduction")));
        assert_eq!(needed, code(ptx(true)));
    }
}
