//! Code generation with LLVM (inkwell): the checked IR of a kernel to PTX for NVIDIA GPUs, or to
//! optimised LLVM bitcode for the host backend, which JIT-compiles it.
//!
//! Each function of a program (the kernel, each device function, each closure) is lowered into
//! its own LLVM module (`lower/`), the unit that [`CodeLibrary`](crate::library::CodeLibrary)
//! holds; the kernel's module is then linked with every module it reaches, internalised and
//! optimised (`pipeline.rs`), and [`compile`] and [`emit_llvm_ir`] emit from that one module.
//! Only intrinsics that every supported target lowers are emitted (see `lower/intrinsics.rs`);
//! LLVM must never abort the process. `host_jit.rs` loads host code for the CPU backend.

mod aligned;
mod checks;
mod frames;
mod fuse;
mod host_jit;
mod latches;
mod lower;
mod object;
mod pipeline;
mod spaces;
mod trip_counts;

use inkwell::context::Context;
use inkwell::targets::{FileType, TargetMachine};

pub use host_jit::HostModule;
pub use object::{ObjectTarget, host_object};

pub use crate::error::CodegenError;

use crate::abi::CaptureData;
use crate::ir::Program;
use crate::target::{Options, Specialization, Target};

impl Options {
    /// Writes the options into a key component; host code as optimised for its CPU, this
    /// machine's ([`host_cpu`]) unless the options name another.
    pub fn encode(&self, out: &mut Vec<u8>) {
        self.encode_with_host_cpu(&host_cpu(), out);
    }
}

/// The host CPU's name and features, which host code is optimised for.
pub fn host_cpu() -> String {
    static CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CPU.get_or_init(|| format!("{} {}", host_cpu_name(), host_cpu_features())).clone()
}

/// This machine's CPU as LLVM names it (`znver3`).
pub fn host_cpu_name() -> String {
    TargetMachine::get_host_cpu_name().to_string()
}

/// This machine's CPU features as LLVM lists them (`+avx2,-avx512f,...`).
pub fn host_cpu_features() -> String {
    TargetMachine::get_host_cpu_features().to_string()
}

/// The target triple LLVM was configured for (this machine's).
pub fn default_triple() -> String {
    TargetMachine::get_default_triple().as_str().to_string_lossy().into_owned()
}

/// The LLVM version kache was built against, e.g. "19.1.7".
pub fn llvm_version() -> String {
    let (a, b, c) = inkwell::support::get_llvm_version();
    format!("{a}.{b}.{c}")
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
/// Compiles a checked program: lowers each function into its own module, links the kernel's
/// module with everything it reaches, optimises, and emits PTX or host bitcode.
pub fn compile(input: &CompileInput<'_>) -> Result<Compiled, CodegenError> {
    let tm = pipeline::target_machine(&input.options)?;
    let diagnostics = pipeline::Diagnostics::default();
    let context = Context::create();
    diagnostics.install(&context);
    let built = pipeline::build(&context, input, &tm, true)?;
    diagnostics.check()?;
    let artifact = match input.options.target {
        Target::Nvptx(_) => {
            let buf = tm.write_to_memory_buffer(&built.linked, FileType::Assembly).map_err(|e| CodegenError::Llvm(e.to_string()))?;
            diagnostics.check()?;
            let ptx = latches::conditional_back_edges(&String::from_utf8_lossy(buf.as_slice()));
            Artifact::Ptx(tensor_map_fence_version(ptx))
        }
        Target::Host => Artifact::HostBitcode(built.linked.write_bitcode_to_memory().as_slice().to_vec()),
    };
    Ok(Compiled { function_modules: built.function_bitcode, artifact, entry: built.entry })
}

/// PTX ISA 8.3 for a module that fences tensor maps (`fence.proxy.tensormap`, which came with
/// 8.3; sm_90's code is otherwise 8.0, which every CUDA 12 driver loads): the `.version` line
/// raised, nothing else changed. A function of the program, as the rest of the PTX is.
fn tensor_map_fence_version(ptx: String) -> String {
    const OLD: &str = "\n.version 8.0\n";
    if ptx.contains("fence.proxy.tensormap") && ptx.contains(OLD) { ptx.replacen(OLD, "\n.version 8.3\n", 1) } else { ptx }
}

/// The module [`compile`] emits code from (linked, libdevice included where the kernel needs
/// it, internalised and optimised), as LLVM IR text (`--emit llvm-ir`).
pub fn emit_llvm_ir(input: &CompileInput<'_>) -> Result<String, CodegenError> {
    let tm = pipeline::target_machine(&input.options)?;
    let diagnostics = pipeline::Diagnostics::default();
    let context = Context::create();
    diagnostics.install(&context);
    let built = pipeline::build(&context, input, &tm, false)?;
    diagnostics.check()?;
    Ok(built.linked.print_to_string().to_string())
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
                crate::ir::ExprKind::Builtin(crate::ir::Builtin::Math(m), args) => {
                    let d = crate::lang::builtins::method_def(*m);
                    let s = args.first().and_then(|a| a.ty.scalar());
                    if s.is_some_and(|s| crate::lang::builtins::needs_libdevice(*m, s)) {
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
