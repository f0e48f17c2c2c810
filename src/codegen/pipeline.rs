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
    let level = match options.opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
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

/// What [`build`] made: each function's own module and the kernel's linked, optimised module.
pub(super) struct Built<'ctx> {
    /// Per function (by `FuncId`), its own unoptimised module.
    pub functions: Vec<Module<'ctx>>,
    /// The kernel's module, linked, internalised, verified and optimised.
    pub linked: Module<'ctx>,
    /// The symbol that launches the kernel.
    pub entry: String,
}

/// Lowers every function of the program, links the kernel's module with the modules it reaches
/// (each once) and, on NVPTX, with libdevice if the program needs it, then internalises
/// everything but the entry, verifies and optimises.
pub(super) fn build<'ctx>(context: &'ctx Context, input: &CompileInput<'_>, tm: &TargetMachine) -> Result<Built<'ctx>, CodegenError> {
    let program = input.program;
    let kernel = program.kernel();
    if let Target::Nvptx(_) = input.options.target
        && program.uses_libdevice()
        && input.libdevice.is_none()
    {
        let function = first_libdevice_use(program).unwrap_or_else(|| "a transcendental function".into());
        return Err(CodegenError::NoLibdevice { kernel: kernel.name.clone(), function });
    }
    let functions = lower::lower_program(context, input, tm)?;
    let linked = functions[program.kernel].clone();
    let mut order = Vec::new();
    reach(program, program.kernel, &mut order);
    for id in order.into_iter().filter(|i| *i != program.kernel) {
        linked.link_in_module(functions[id].clone()).map_err(|e| CodegenError::Llvm(format!("link: {e}")))?;
    }
    let entry = entry_symbol(program, input.options.target);
    if let (Target::Nvptx(_), Some(bc)) = (input.options.target, input.libdevice)
        && program.uses_libdevice()
    {
        let buf = MemoryBuffer::create_from_memory_range_copy(bc, "libdevice.10.bc");
        let libdevice = Module::parse_bitcode_from_buffer(&buf, context)
            .map_err(|e| CodegenError::BadLibdevice { path: "libdevice.10.bc".into(), reason: e.to_string() })?;
        libdevice.set_triple(&tm.get_triple());
        libdevice.set_data_layout(&tm.get_target_data().get_data_layout());
        linked.link_in_module(libdevice).map_err(|e| CodegenError::Llvm(format!("link libdevice: {e}")))?;
    }
    internalize(&linked, &entry);
    linked.verify().map_err(|e| CodegenError::Llvm(format!("verify: {}", e.to_string())))?;
    optimize(&linked, tm, input.options.opt_level)?;
    Ok(Built { functions, linked, entry })
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
        if global.get_initializer().is_some() && global.get_linkage() != Linkage::Private {
            global.set_linkage(Linkage::Internal);
        }
    }
}

fn optimize(m: &Module<'_>, tm: &TargetMachine, opt_level: u8) -> Result<(), CodegenError> {
    // Drop what the kernel does not reach (most of libdevice) before the expensive passes.
    let pipeline = format!("globaldce,default<O{}>", opt_level.min(3));
    m.run_passes(&pipeline, tm, PassBuilderOptions::create()).map_err(|e| CodegenError::Llvm(format!("passes: {}", e.to_string())))
}
