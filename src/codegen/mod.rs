//! Code generation with LLVM (inkwell): the checked IR of a kernel to PTX for NVIDIA GPUs, or to
//! optimised LLVM bitcode for the host backend, which JIT-compiles it.
//!
//! Each function of a program (the kernel, each device function, each closure) is lowered into
//! its own LLVM module, the unit that [`CodeLibrary`](crate::library::CodeLibrary) holds; the
//! kernel's module is then linked with every module it reaches, internalised and optimised.
//! Only intrinsics that every supported target lowers are emitted (see `lower.rs`); LLVM must
//! never abort the process.

mod jit;
mod lower;

use std::fmt;

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, InitializationConfig, RelocMode, Target as LlvmTarget, TargetMachine, TargetTriple};

pub use jit::HostModule;

use crate::abi::{CaptureData, entry_symbol};
use crate::ir::Program;
use crate::target::{Options, Specialization, Target, UnsupportedArch};

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Nvptx(a) => write!(f, "nvptx {a}"),
            Target::Host => write!(f, "host {}", host_cpu()),
        }
    }
}

impl Options {
    /// Writes the options into a key component, host code as optimised for this machine's CPU
    /// ([`host_cpu`]).
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_with_host_cpu(&host_cpu(), out);
    }
}

/// The host CPU's name and features, which host code is optimised for.
pub fn host_cpu() -> String {
    static CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CPU.get_or_init(|| {
        let name = TargetMachine::get_host_cpu_name().to_string();
        let features = TargetMachine::get_host_cpu_features().to_string();
        format!("{name} {features}")
    })
    .clone()
}

/// The LLVM version kache was built against, e.g. "19.1.7".
pub fn llvm_version() -> String {
    let (a, b, c) = inkwell::support::get_llvm_version();
    format!("{a}.{b}.{c}")
}

/// Code generation errors. A kernel that type-checked only fails here for environmental reasons
/// (no libdevice) or because of a kache bug (an LLVM verification failure).
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The architecture is not one kache generates code for.
    #[error(transparent)]
    UnsupportedArch(#[from] UnsupportedArch),
    /// A transcendental function needs libdevice, which was not found.
    #[error(
        "kernel `{kernel}` calls `{function}`, which needs NVIDIA's libdevice on the GPU, and libdevice.10.bc was not found; \
         set KACHE_LIBDEVICE to its path, set CUDA_HOME to a CUDA toolkit, or run `pip install nvidia-cuda-nvcc-cu12`"
    )]
    NoLibdevice {
        /// The kernel.
        kernel: String,
        /// The method that needs it.
        function: String,
    },
    /// The libdevice file could not be read or parsed.
    #[error("libdevice at {path} is unusable: {reason}")]
    BadLibdevice {
        /// Where it was looked for.
        path: String,
        /// Why it failed.
        reason: String,
    },
    /// LLVM reported an error; a kache bug if it happens.
    #[error("internal code generation error (please report it): {0}")]
    Llvm(String),
    /// Stored host bitcode did not load.
    #[error("host code could not be loaded: {0}")]
    BadArtifact(String),
}

impl From<inkwell::builder::BuilderError> for CodegenError {
    fn from(e: inkwell::builder::BuilderError) -> Self {
        CodegenError::Llvm(format!("builder: {e}"))
    }
}

/// What code generation produced.
#[derive(Clone, Debug)]
pub enum Artifact {
    /// PTX assembly.
    Ptx(String),
    /// Optimised LLVM bitcode for the host CPU.
    HostBitcode(Vec<u8>),
    /// GPU machine code (an ELF cubin from `ptxas`) for the target's architecture.
    Cubin(Vec<u8>),
}

impl Artifact {
    /// The bytes stored in the cache.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Artifact::Ptx(s) => s.as_bytes(),
            Artifact::HostBitcode(b) | Artifact::Cubin(b) => b,
        }
    }
}

/// The result of compiling one program.
#[derive(Clone, Debug)]
pub struct Compiled {
    /// Per function (by `FuncId`), its own unoptimised LLVM module as bitcode.
    pub function_modules: Vec<Vec<u8>>,
    /// The linked, optimised output.
    pub artifact: Artifact,
    /// The kernel's symbol (for the host backend: its entry wrapper).
    pub entry: String,
}

/// Inputs of one compile besides the program.
pub struct CompileInput<'a> {
    /// The checked program.
    pub program: &'a Program,
    /// Layouts of the kernel's array parameters.
    pub spec: &'a Specialization,
    /// Values of the program's captures, by capture id.
    pub captures: &'a [CaptureData<'a>],
    /// Target and options.
    pub options: Options,
    /// libdevice bitcode, when the program needs it on NVPTX.
    pub libdevice: Option<&'a [u8]>,
}

fn init_targets() {
    static INIT: std::sync::Once = std::sync::Once::new();
    INIT.call_once(|| {
        let config = InitializationConfig::default();
        LlvmTarget::initialize_nvptx(&config);
        LlvmTarget::initialize_x86(&config);
    });
}

pub(crate) fn target_machine(target: Target, opt_level: u8) -> Result<TargetMachine, CodegenError> {
    init_targets();
    let level = match opt_level {
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
        Target::Host => (
            TargetMachine::get_default_triple(),
            TargetMachine::get_host_cpu_name().to_string(),
            TargetMachine::get_host_cpu_features().to_string(),
        ),
    };
    let t = LlvmTarget::from_triple(&triple).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    let reloc = if target == Target::Host { RelocMode::Static } else { RelocMode::Default };
    t.create_target_machine(&triple, &cpu, &features, level, reloc, CodeModel::Default)
        .ok_or_else(|| CodegenError::Llvm(format!("no target machine for {target}")))
}

/// Compiles a checked program: lowers each function into its own module, links the kernel's
/// module with everything it reaches, optimises, and emits PTX or host bitcode.
pub fn compile(input: &CompileInput<'_>) -> Result<Compiled, CodegenError> {
    let program = input.program;
    let kernel = program.kernel();
    if let Target::Nvptx(_) = input.options.target {
        if program.uses_libdevice() && input.libdevice.is_none() {
            let function = first_libdevice_use(program).unwrap_or_else(|| "a transcendental function".into());
            return Err(CodegenError::NoLibdevice { kernel: kernel.name.clone(), function });
        }
    }
    let tm = target_machine(input.options.target, input.options.opt_level)?;
    let context = Context::create();
    let modules = lower::lower_program(&context, input, &tm)?;
    let function_modules: Vec<Vec<u8>> = modules.iter().map(|m| m.write_bitcode_to_memory().as_slice().to_vec()).collect();

    // Link the kernel's module with the modules it reaches (each once).
    let linked = modules[program.kernel].clone();
    let mut order = Vec::new();
    reach(program, program.kernel, &mut order);
    for id in order.into_iter().filter(|i| *i != program.kernel) {
        linked.link_in_module(modules[id].clone()).map_err(|e| CodegenError::Llvm(format!("link: {e}")))?;
    }
    let entry = entry_symbol(program, input.options.target);
    if let (Target::Nvptx(_), Some(bc)) = (input.options.target, input.libdevice) {
        if program.uses_libdevice() {
            let buf = MemoryBuffer::create_from_memory_range_copy(bc, "libdevice.10.bc");
            let libdevice = Module::parse_bitcode_from_buffer(&buf, &context)
                .map_err(|e| CodegenError::BadLibdevice { path: "libdevice.10.bc".into(), reason: e.to_string() })?;
            libdevice.set_triple(&tm.get_triple());
            libdevice.set_data_layout(&tm.get_target_data().get_data_layout());
            linked.link_in_module(libdevice).map_err(|e| CodegenError::Llvm(format!("link libdevice: {e}")))?;
        }
    }
    internalize(&linked, &entry);
    linked.verify().map_err(|e| CodegenError::Llvm(format!("verify: {}", e.to_string())))?;
    optimize(&linked, &tm, input.options.opt_level)?;
    let artifact = match input.options.target {
        Target::Nvptx(_) => {
            let buf = tm.write_to_memory_buffer(&linked, FileType::Assembly).map_err(|e| CodegenError::Llvm(e.to_string()))?;
            Artifact::Ptx(String::from_utf8_lossy(buf.as_slice()).into_owned())
        }
        Target::Host => Artifact::HostBitcode(linked.write_bitcode_to_memory().as_slice().to_vec()),
    };
    Ok(Compiled { function_modules, artifact, entry })
}

/// The program's kernel module, linked but not optimised, as LLVM IR text (`--emit llvm-ir`).
pub fn emit_llvm_ir(input: &CompileInput<'_>) -> Result<String, CodegenError> {
    let tm = target_machine(input.options.target, input.options.opt_level)?;
    let context = Context::create();
    let modules = lower::lower_program(&context, input, &tm)?;
    let linked = modules[input.program.kernel].clone();
    let mut order = Vec::new();
    reach(input.program, input.program.kernel, &mut order);
    for id in order.into_iter().filter(|i| *i != input.program.kernel) {
        linked.link_in_module(modules[id].clone()).map_err(|e| CodegenError::Llvm(format!("link: {e}")))?;
    }
    let entry = entry_symbol(input.program, input.options.target);
    internalize(&linked, &entry);
    optimize(&linked, &tm, input.options.opt_level)?;
    Ok(linked.print_to_string().to_string())
}

/// The first method call of the program that needs libdevice, for messages.
pub fn first_libdevice_use(p: &Program) -> Option<String> {
    let mut out = None;
    for f in &p.funcs {
        crate::ir::visit_block(&f.body, &mut |e| {
            if out.is_some() {
                return;
            }
            match &e.kind {
                crate::ir::ExprKind::Builtin(crate::ir::Builtin::Math(m), _) => {
                    let d = crate::lang::builtins::method_def(*m);
                    if d.libdevice.is_some() {
                        out = Some(format!("{}()", d.name));
                    }
                }
                crate::ir::ExprKind::Binary(crate::ir::BinOp::Rem, a, _)
                | crate::ir::ExprKind::CompoundAssign(crate::ir::BinOp::Rem, _, a)
                    if a.ty.scalar().is_some_and(|s| s.is_float()) =>
                {
                    out = Some("`%` on floats".into());
                }
                _ => {}
            }
        });
    }
    out
}

/// Every function reachable from `id`, in a fixed order, `id` first.
pub(crate) fn reach(p: &Program, id: usize, out: &mut Vec<usize>) {
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
