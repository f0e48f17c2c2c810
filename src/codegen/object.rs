//! Host code as a relocatable object file, for the prebuild step to link into the crate it
//! builds: a kernel's optimised host bitcode with its entry renamed to a symbol no other code
//! has (and hidden, so no shared library exports it), its calls into the runtime renamed to
//! the names this kache build exports for them (`host_calls`), emitted for the crate's
//! target triple and CPU as position-independent code.

use inkwell::GlobalVisibility;
use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::{CodeModel, FileType, RelocMode, Target as LlvmTarget, TargetTriple};
use inkwell::values::FunctionValue;

use super::CodegenError;
use crate::host_calls;

/// What object code is generated for: the target triple (cargo's `TARGET`, an LLVM triple for
/// x86-64 targets) and the CPU, by LLVM's name and feature list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectTarget {
    /// The target triple, e.g. `x86_64-unknown-linux-gnu`.
    pub triple: String,
    /// LLVM's CPU name, e.g. `x86-64`.
    pub cpu: String,
    /// LLVM's features, e.g. `+sse2,+fxsr`.
    pub features: String,
}

/// Emits the host bitcode of one kernel (from [`compile`](super::compile) for
/// [`Target::Host`](crate::Target::Host) with the same CPU) as an object file whose only
/// global symbol is `symbol`, the kernel's entry ([`HostEntry`](crate::abi::HostEntry)
/// signature), which calls nothing but the runtime's host calls (under this build's exported
/// names) and what the C library and the Rust runtime provide. Every function probes its
/// frame; with the object comes the stack one kernel thread may use
/// ([`HostModule::stack_bytes`](super::HostModule::stack_bytes)).
pub fn host_object(
    bitcode: &[u8],
    entry: &str,
    symbol: &str,
    target: &ObjectTarget,
    opt_level: u8,
) -> Result<(Vec<u8>, u64), CodegenError> {
    super::pipeline::init_targets();
    let bad = |m: String| CodegenError::BadArtifact(m);
    // Declared before the context, so it outlives it: LLVM must report, never exit the process.
    let diagnostics = super::pipeline::Diagnostics::default();
    let context = Context::create();
    diagnostics.install(&context);
    let buf = MemoryBuffer::create_from_memory_range_copy(bitcode, "kernel");
    let module = Module::parse_bitcode_from_buffer(&buf, &context).map_err(|e| bad(e.to_string()))?;
    let entry_fn = module.get_function(entry).ok_or_else(|| bad(format!("no entry `{entry}` in the host code")))?;
    if module.get_function(symbol).is_some() {
        return Err(bad(format!("the host code already has a symbol `{symbol}`")));
    }
    entry_fn.as_global_value().set_name(symbol);
    entry_fn.as_global_value().set_visibility(GlobalVisibility::Hidden);
    for f in declarations(&module) {
        let name = f.get_name().to_string_lossy().into_owned();
        if name.starts_with("llvm.") {
            continue;
        }
        if host_calls::address(&name).is_none() {
            return Err(bad(format!("the host code calls `{name}`, which the runtime does not provide")));
        }
        f.as_global_value().set_name(&host_calls::linked_symbol(&name));
    }
    let level = match opt_level {
        0 => OptimizationLevel::None,
        1 => OptimizationLevel::Less,
        2 => OptimizationLevel::Default,
        _ => OptimizationLevel::Aggressive,
    };
    let triple = TargetTriple::create(&target.triple);
    let t = LlvmTarget::from_triple(&triple).map_err(|e| bad(format!("target {}: {e}", target.triple)))?;
    let tm = t
        .create_target_machine(&triple, &target.cpu, &target.features, level, RelocMode::PIC, CodeModel::Default)
        .ok_or_else(|| bad(format!("no target machine for {} ({})", target.triple, target.cpu)))?;
    module.set_triple(&triple);
    module.set_data_layout(&tm.get_target_data().get_data_layout());
    let stack = super::frames::probe_and_bound(&module, &tm.get_target_data(), symbol)?;
    let object = tm.write_to_memory_buffer(&module, FileType::Object).map_err(|e| CodegenError::Llvm(e.to_string()))?;
    diagnostics.check()?;
    Ok((object.as_slice().to_vec(), stack))
}

/// The functions the module declares without defining.
fn declarations<'ctx>(module: &Module<'ctx>) -> Vec<FunctionValue<'ctx>> {
    let mut out = Vec::new();
    let mut f = module.get_first_function();
    while let Some(func) = f {
        if func.count_basic_blocks() == 0 {
            out.push(func);
        }
        f = func.get_next_function();
    }
    out
}
