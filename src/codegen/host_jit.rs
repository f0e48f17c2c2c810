//! The host backend's JIT: optimised bitcode in, a callable kernel entry out (LLVM MCJIT).

use std::mem::ManuallyDrop;

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;
use inkwell::targets::TargetData;

use super::CodegenError;
use crate::abi::HostEntry;
use crate::host_calls;
use crate::ir::{MathFn, Scalar};
use crate::lang::builtins;

/// Host machine code for one kernel, ready to call. Owns its LLVM context and engine.
pub struct HostModule {
    entry: HostEntry,
    /// Bytes of stack one kernel thread may use (`frames.rs`).
    stack: u64,
    // Field order is drop order: the engine (which owns the module) before its context.
    engine: ManuallyDrop<ExecutionEngine<'static>>,
    context: ManuallyDrop<Box<Context>>,
}

// SAFETY: after construction the engine and context are never touched again except by Drop, and
// the JIT-compiled entry is plain machine code that is safe to call from any thread.
unsafe impl Send for HostModule {}
// SAFETY: as above; shared references only read `entry`.
unsafe impl Sync for HostModule {}

impl Drop for HostModule {
    fn drop(&mut self) {
        // SAFETY: dropped exactly once, engine first since it borrows the context.
        unsafe {
            ManuallyDrop::drop(&mut self.engine);
            ManuallyDrop::drop(&mut self.context);
        }
    }
}

impl std::fmt::Debug for HostModule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostModule").finish_non_exhaustive()
    }
}

impl HostModule {
    /// JIT-compiles host bitcode produced by [`compile`](super::compile) and finds `entry`.
    pub fn load(bitcode: &[u8], entry: &str) -> Result<HostModule, CodegenError> {
        Self::load_with_slots(bitcode, entry, &[])
    }

    /// [`load`](Self::load), then fills each capture slot named in `slots` (see
    /// [`capture_slot_symbol`](crate::abi::capture_slot_symbol)) with its address; a slot the
    /// module does not define is an error.
    pub fn load_with_slots(bitcode: &[u8], entry: &str, slots: &[(String, u64)]) -> Result<HostModule, CodegenError> {
        super::pipeline::init_targets();
        let bad = |m: String| CodegenError::BadArtifact(m);
        let context = Box::new(Context::create());
        // SAFETY: the box is never moved out of or dropped before the engine (see Drop), so the
        // reference stays valid for as long as anything borrows it.
        let ctx: &'static Context = unsafe { &*(context.as_ref() as *const Context) };
        let buf = MemoryBuffer::create_from_memory_range_copy(bitcode, "kernel");
        let module = Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| bad(e.to_string()))?;
        module.verify().map_err(|e| bad(format!("verification failed: {}", e.to_string())))?;
        // Probes in every function, so a frame too large for its stack faults at the guard page;
        // and the stack each kernel thread is then given.
        let layout = module.get_data_layout().as_str().to_string_lossy().into_owned();
        let stack = super::frames::probe_and_bound(&module, &TargetData::create(&layout), entry)?;
        let names: Vec<String> = {
            let mut v = Vec::new();
            let mut f = module.get_first_function();
            while let Some(func) = f {
                if func.count_basic_blocks() == 0 {
                    v.push(func.get_name().to_string_lossy().into_owned());
                }
                f = func.get_next_function();
            }
            v
        };
        let engine = module.create_jit_execution_engine(OptimizationLevel::Aggressive).map_err(|e| bad(e.to_string()))?;
        for name in names {
            if name.starts_with("llvm.") {
                continue;
            }
            let Some(addr) = host_calls::address(&name) else {
                return Err(bad(format!("unresolved symbol `{name}`")));
            };
            if let Some(f) = module.get_function(&name) {
                engine.add_global_mapping(&f, addr);
            }
        }
        let addr = engine.get_function_address(entry).map_err(|e| bad(format!("entry `{entry}`: {e}")))?;
        for (name, value) in slots {
            let c_name = std::ffi::CString::new(name.as_str()).map_err(|_| bad(format!("capture slot `{name}`: NUL in the name")))?;
            // SAFETY: the engine is live and owns the module; the name is a NUL-terminated string.
            let at = unsafe { inkwell::llvm_sys::execution_engine::LLVMGetGlobalValueAddress(engine.as_mut_ptr(), c_name.as_ptr()) };
            if at == 0 || at % 8 != 0 || module.get_global(name).is_none() {
                return Err(bad(format!("capture slot `{name}` is not an 8-byte variable of the module")));
            }
            // SAFETY: `at` is the address of the module's own 8-byte, 8-aligned pointer variable
            // `name` (defined by the code generator, checked above), in writable data the engine
            // owns; nothing runs the module's code yet.
            unsafe { std::ptr::write(at as *mut u64, *value) };
        }
        // SAFETY: `entry` was generated with exactly this signature (see `lower/function.rs`, `host_entry`).
        let entry: HostEntry = unsafe { std::mem::transmute::<usize, HostEntry>(addr) };
        Ok(HostModule { entry, stack, engine: ManuallyDrop::new(engine), context: ManuallyDrop::new(context) })
    }

    /// The kernel entry.
    pub fn entry(&self) -> HostEntry {
        self.entry
    }

    /// Bytes of stack one thread of the kernel may use at most: its frames' allocas on the
    /// deepest chain of calls, with a margin for what the code generator adds. The host
    /// executor gives each thread that much; every function probes its frame, so code that
    /// used more would fault on the guard page, never write past the stack.
    pub fn stack_bytes(&self) -> u64 {
        self.stack
    }
}

/// The symbol of a host helper that converts to or from `f16`/`bf16` (`s`): `op` is `to_f32`,
/// `from_f32`, `from_f64`, `from_i64` or `from_u64` (one of the host calls of
/// `host_calls`). Half values travel as their bits in 32.
pub fn host_half_symbol(s: Scalar, op: &str) -> String {
    format!("__kache_host_{}_{op}", s.name())
}

/// The symbol a host module calls for a transcendental math function (one of the host calls
/// of `host_calls`).
pub fn host_math_symbol(m: MathFn, s: Scalar) -> String {
    format!("__kache_host_{}_{}", builtins::method_def(m).name, s.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transcendental_has_a_host_implementation() {
        // `sin_cos` is libdevice's `sincos` on the GPU and the host calls `sin` and `cos` here.
        for d in builtins::METHODS.iter().filter(|d| d.libdevice.is_some() && d.func != MathFn::SinCos) {
            for s in [Scalar::F32, Scalar::F64] {
                let sym = host_math_symbol(d.func, s);
                assert!(host_calls::address(&sym).is_some(), "{sym} has no host implementation");
            }
        }
        for s in [Scalar::F16, Scalar::Bf16] {
            for op in ["to_f32", "from_f32", "from_f64", "from_i64", "from_u64"] {
                assert!(host_calls::address(&host_half_symbol(s, op)).is_some(), "{s} {op} has no host helper");
            }
        }
    }
}
