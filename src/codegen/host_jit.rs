//! The host backend's JIT: optimised bitcode in, a callable kernel entry out (LLVM MCJIT).

use std::mem::ManuallyDrop;

use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::execution_engine::ExecutionEngine;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::Module;

use super::CodegenError;
use crate::abi::HostEntry;
use crate::ir::{MathFn, Scalar};
use crate::lang::builtins;

/// Host machine code for one kernel, ready to call. Owns its LLVM context and engine.
pub struct HostModule {
    entry: HostEntry,
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
        super::pipeline::init_targets();
        let bad = |m: String| CodegenError::BadArtifact(m);
        let context = Box::new(Context::create());
        // SAFETY: the box is never moved out of or dropped before the engine (see Drop), so the
        // reference stays valid for as long as anything borrows it.
        let ctx: &'static Context = unsafe { &*(context.as_ref() as *const Context) };
        let buf = MemoryBuffer::create_from_memory_range_copy(bitcode, "kernel");
        let module = Module::parse_bitcode_from_buffer(&buf, ctx).map_err(|e| bad(e.to_string()))?;
        module.verify().map_err(|e| bad(format!("verification failed: {}", e.to_string())))?;
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
            let Some(addr) = host_math_address(&name).or_else(|| host_half_address(&name)) else {
                return Err(bad(format!("unresolved symbol `{name}`")));
            };
            if let Some(f) = module.get_function(&name) {
                engine.add_global_mapping(&f, addr);
            }
        }
        let addr = engine.get_function_address(entry).map_err(|e| bad(format!("entry `{entry}`: {e}")))?;
        // SAFETY: `entry` was generated with exactly this signature (see `lower/function.rs`, `host_entry`).
        let entry: HostEntry = unsafe { std::mem::transmute::<usize, HostEntry>(addr) };
        Ok(HostModule { entry, engine: ManuallyDrop::new(engine), context: ManuallyDrop::new(context) })
    }

    /// The kernel entry.
    pub fn entry(&self) -> HostEntry {
        self.entry
    }
}

/// The symbol of a host helper that converts to or from `f16`/`bf16` (`s`): `op` is `to_f32`,
/// `from_f32`, `from_f64`, `from_i64` or `from_u64`. Half values travel as their bits in 32.
pub fn host_half_symbol(s: Scalar, op: &str) -> String {
    format!("__kache_host_{}_{op}", s.name())
}

fn host_half_address(name: &str) -> Option<usize> {
    use crate::float16::{bf16, f16, f64_to_bf16, f64_to_f16, int_to_bf16, int_to_f16};
    extern "C" fn f16_to_f32(x: u32) -> f32 {
        f16::from_bits(x as u16).to_f32()
    }
    extern "C" fn bf16_to_f32(x: u32) -> f32 {
        bf16::from_bits(x as u16).to_f32()
    }
    extern "C" fn f16_from_f32(x: f32) -> u32 {
        f16::from_f32(x).to_bits() as u32
    }
    extern "C" fn bf16_from_f32(x: f32) -> u32 {
        bf16::from_f32(x).to_bits() as u32
    }
    extern "C" fn f16_from_f64(x: f64) -> u32 {
        f64_to_f16(x).to_bits() as u32
    }
    extern "C" fn bf16_from_f64(x: f64) -> u32 {
        f64_to_bf16(x).to_bits() as u32
    }
    extern "C" fn f16_from_i64(x: i64) -> u32 {
        int_to_f16(x as i128).to_bits() as u32
    }
    extern "C" fn bf16_from_i64(x: i64) -> u32 {
        int_to_bf16(x as i128).to_bits() as u32
    }
    extern "C" fn f16_from_u64(x: u64) -> u32 {
        int_to_f16(x as i128).to_bits() as u32
    }
    extern "C" fn bf16_from_u64(x: u64) -> u32 {
        int_to_bf16(x as i128).to_bits() as u32
    }
    Some(match name {
        "__kache_host_f16_to_f32" => f16_to_f32 as extern "C" fn(u32) -> f32 as usize,
        "__kache_host_bf16_to_f32" => bf16_to_f32 as extern "C" fn(u32) -> f32 as usize,
        "__kache_host_f16_from_f32" => f16_from_f32 as extern "C" fn(f32) -> u32 as usize,
        "__kache_host_bf16_from_f32" => bf16_from_f32 as extern "C" fn(f32) -> u32 as usize,
        "__kache_host_f16_from_f64" => f16_from_f64 as extern "C" fn(f64) -> u32 as usize,
        "__kache_host_bf16_from_f64" => bf16_from_f64 as extern "C" fn(f64) -> u32 as usize,
        "__kache_host_f16_from_i64" => f16_from_i64 as extern "C" fn(i64) -> u32 as usize,
        "__kache_host_bf16_from_i64" => bf16_from_i64 as extern "C" fn(i64) -> u32 as usize,
        "__kache_host_f16_from_u64" => f16_from_u64 as extern "C" fn(u64) -> u32 as usize,
        "__kache_host_bf16_from_u64" => bf16_from_u64 as extern "C" fn(u64) -> u32 as usize,
        _ => return None,
    })
}

/// The symbol a host module calls for a transcendental math function.
pub fn host_math_symbol(m: MathFn, s: Scalar) -> String {
    format!("__kache_host_{}_{}", builtins::method_def(m).name, s.name())
}

macro_rules! host_math {
    ($($f:ident),*) => {
        fn host_math_address(name: &str) -> Option<usize> {
            $(
                {
                    extern "C" fn f32_(x: f32) -> f32 { x.$f() }
                    extern "C" fn f64_(x: f64) -> f64 { x.$f() }
                    if name == concat!("__kache_host_", stringify!($f), "_f32") { return Some(f32_ as extern "C" fn(f32) -> f32 as usize); }
                    if name == concat!("__kache_host_", stringify!($f), "_f64") { return Some(f64_ as extern "C" fn(f64) -> f64 as usize); }
                }
            )*
            extern "C" fn atan2_f32(x: f32, y: f32) -> f32 { x.atan2(y) }
            extern "C" fn atan2_f64(x: f64, y: f64) -> f64 { x.atan2(y) }
            extern "C" fn powf_f32(x: f32, y: f32) -> f32 { x.powf(y) }
            extern "C" fn powf_f64(x: f64, y: f64) -> f64 { x.powf(y) }
            extern "C" fn hypot_f32(x: f32, y: f32) -> f32 { x.hypot(y) }
            extern "C" fn hypot_f64(x: f64, y: f64) -> f64 { x.hypot(y) }
            extern "C" fn powi_f32(x: f32, n: i32) -> f32 { x.powi(n) }
            extern "C" fn powi_f64(x: f64, n: i32) -> f64 { x.powi(n) }
            // Not in Rust's std (erf and erfc are unstable there): the `libm` crate, Rust's own
            // port of musl's libm; rsqrt as Rust code writes it.
            extern "C" fn erf_f32(x: f32) -> f32 { libm::erff(x) }
            extern "C" fn erf_f64(x: f64) -> f64 { libm::erf(x) }
            extern "C" fn erfc_f32(x: f32) -> f32 { libm::erfcf(x) }
            extern "C" fn erfc_f64(x: f64) -> f64 { libm::erfc(x) }
            extern "C" fn exp10_f32(x: f32) -> f32 { libm::exp10f(x) }
            extern "C" fn exp10_f64(x: f64) -> f64 { libm::exp10(x) }
            extern "C" fn rsqrt_f32(x: f32) -> f32 { 1.0 / x.sqrt() }
            extern "C" fn rsqrt_f64(x: f64) -> f64 { 1.0 / x.sqrt() }
            Some(match name {
                "__kache_host_atan2_f32" => atan2_f32 as extern "C" fn(f32, f32) -> f32 as usize,
                "__kache_host_atan2_f64" => atan2_f64 as extern "C" fn(f64, f64) -> f64 as usize,
                "__kache_host_powf_f32" => powf_f32 as extern "C" fn(f32, f32) -> f32 as usize,
                "__kache_host_powf_f64" => powf_f64 as extern "C" fn(f64, f64) -> f64 as usize,
                "__kache_host_hypot_f32" => hypot_f32 as extern "C" fn(f32, f32) -> f32 as usize,
                "__kache_host_hypot_f64" => hypot_f64 as extern "C" fn(f64, f64) -> f64 as usize,
                "__kache_host_powi_f32" => powi_f32 as extern "C" fn(f32, i32) -> f32 as usize,
                "__kache_host_powi_f64" => powi_f64 as extern "C" fn(f64, i32) -> f64 as usize,
                "__kache_host_erf_f32" => erf_f32 as extern "C" fn(f32) -> f32 as usize,
                "__kache_host_erf_f64" => erf_f64 as extern "C" fn(f64) -> f64 as usize,
                "__kache_host_erfc_f32" => erfc_f32 as extern "C" fn(f32) -> f32 as usize,
                "__kache_host_erfc_f64" => erfc_f64 as extern "C" fn(f64) -> f64 as usize,
                "__kache_host_exp10_f32" => exp10_f32 as extern "C" fn(f32) -> f32 as usize,
                "__kache_host_exp10_f64" => exp10_f64 as extern "C" fn(f64) -> f64 as usize,
                "__kache_host_rsqrt_f32" => rsqrt_f32 as extern "C" fn(f32) -> f32 as usize,
                "__kache_host_rsqrt_f64" => rsqrt_f64 as extern "C" fn(f64) -> f64 as usize,
                _ => return None,
            })
        }
    };
}

host_math!(exp, exp2, ln, log2, log10, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh, cbrt, exp_m1, ln_1p);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_transcendental_has_a_host_implementation() {
        for d in builtins::METHODS.iter().filter(|d| d.libdevice.is_some()) {
            for s in [Scalar::F32, Scalar::F64] {
                let sym = host_math_symbol(d.func, s);
                assert!(host_math_address(&sym).is_some(), "{sym} has no host implementation");
            }
        }
        for s in [Scalar::F16, Scalar::Bf16] {
            for op in ["to_f32", "from_f32", "from_f64", "from_i64", "from_u64"] {
                assert!(host_half_address(&host_half_symbol(s, op)).is_some(), "{s} {op} has no host helper");
            }
        }
    }
}
