//! The stack host code runs on: stack probes on every function the module defines, so that a
//! frame too large for its thread's stack faults on the stack's guard page instead of writing
//! past it (into another thread's stack), and a bound on the stack one thread of a kernel may
//! use, which the host executor gives each thread (`runtime/host.rs`).

use std::collections::HashMap;

use inkwell::attributes::AttributeLoc;
use inkwell::module::Module;
use inkwell::targets::TargetData;
use inkwell::values::{CallSiteValue, FunctionValue, InstructionOpcode, Operand};

use super::CodegenError;

/// What the code generator may add to a function's frame beyond its allocas (saved registers,
/// alignment) ...
const FRAME: u64 = 4 << 10;
/// ... and per instruction (a spilled value, vector registers included).
const PER_INSTRUCTION: u64 = 16;
/// The stack a call out of the module may take: kache's host calls (libm, `f16` conversions)
/// and the cooperative executor's barrier and warp functions, which switch coroutines.
const CALL_OUT: u64 = 64 << 10;
/// The stack an intrinsic that becomes a library call may take (`memset`, `memcpy`).
const INTRINSIC: u64 = 4 << 10;

/// Adds stack probes to every function `module` defines (`"probe-stack"="inline-asm"`: a frame
/// larger than a page touches each page on the way down, so it reaches the guard page first),
/// and returns the bytes of stack one call of `entry` may use: the allocas of each frame on
/// the deepest chain of calls, with a margin for what the code generator adds. Kernels do not
/// recurse (the checker refuses it); a module that does has no bound, an error.
pub(crate) fn probe_and_bound(module: &Module<'_>, td: &TargetData, entry: &str) -> Result<u64, CodegenError> {
    let probe = module.get_context().create_string_attribute("probe-stack", "inline-asm");
    let mut f = module.get_first_function();
    while let Some(func) = f {
        if func.count_basic_blocks() > 0 {
            func.add_attribute(AttributeLoc::Function, probe);
        }
        f = func.get_next_function();
    }
    let entry = module.get_function(entry).ok_or_else(|| CodegenError::BadArtifact(format!("no entry `{entry}` in the host code")))?;
    bound(entry, td, &mut HashMap::new(), &mut Vec::new())
}

/// The stack a call of `f` may use (see [`probe_and_bound`]).
fn bound<'ctx>(
    f: FunctionValue<'ctx>,
    td: &TargetData,
    known: &mut HashMap<FunctionValue<'ctx>, u64>,
    calling: &mut Vec<FunctionValue<'ctx>>,
) -> Result<u64, CodegenError> {
    if let Some(b) = known.get(&f) {
        return Ok(*b);
    }
    let name = || f.get_name().to_string_lossy().into_owned();
    if calling.contains(&f) {
        return Err(CodegenError::BadArtifact(format!("`{}` calls itself: its stack has no bound", name())));
    }
    calling.push(f);
    let (mut own, mut deepest) = (FRAME, 0u64);
    for block in f.get_basic_block_iter() {
        for i in block.get_instructions() {
            own = own.saturating_add(PER_INSTRUCTION);
            match i.get_opcode() {
                InstructionOpcode::Alloca => {
                    let ty = i.get_allocated_type().map_err(|e| CodegenError::BadArtifact(format!("an alloca of `{}`: {e}", name())))?;
                    let count = match i.get_operand(0) {
                        Some(Operand::Value(v)) if v.is_int_value() => v.into_int_value().get_zero_extended_constant(),
                        _ => None,
                    };
                    let Some(count) = count else {
                        return Err(CodegenError::BadArtifact(format!("`{}` allocates stack of a size known only when it runs", name())));
                    };
                    let align = u64::from(i.get_alignment().unwrap_or(16));
                    own = own.saturating_add(td.get_abi_size(&ty).saturating_mul(count)).saturating_add(align);
                }
                InstructionOpcode::Call => {
                    let callee = CallSiteValue::try_from(i).ok().and_then(|c| c.get_called_fn_value());
                    let b = match callee {
                        Some(g) if g.count_basic_blocks() > 0 => bound(g, td, known, calling)?,
                        Some(g) if g.get_name().to_bytes().starts_with(b"llvm.") => INTRINSIC,
                        _ => CALL_OUT,
                    };
                    deepest = deepest.max(b);
                }
                _ => {}
            }
        }
    }
    calling.pop();
    let b = own.saturating_add(deepest);
    known.insert(f, b);
    Ok(b)
}
