//! The functions host kernel code calls by symbol (the transcendental math functions, the
//! conversions to and from `f16` and `bf16`, whose values travel as their bits in 32): one
//! table, which the JIT resolves by name ([`address`]) and which every build of kache exports
//! for linked object code, under names that carry this build's identity ([`linked_symbol`]),
//! so prebuilt and JIT-compiled kernels call the very same functions, and two kache builds in
//! one program never clash.
//!
//! Host code declares each as `__kache_host_<method>_<type>` (see `codegen::host_jit`); the
//! prebuild step renames the declarations in the object code it links to [`linked_symbol`].
//! A leaf beside `abi` (it is part of the same contract), compiled in every build, so the
//! runtime alone exports what linked object code calls.

use crate::float16::{bf16, f16, f64_to_bf16, f64_to_f16, int_to_bf16, int_to_f16};

/// The host call that copies a tensor map's box on the host backend:
/// `__kache_host_tma_load_2d(map: *const HostTensorMap, dst: u64, x: i32, y: i32) -> u32`,
/// the box's bytes.
pub const HOST_TMA_LOAD_2D: &str = "__kache_host_tma_load_2d";

/// A tiled tensor map of a 2-d array in host memory, as the host backend's launches pass it
/// (by address, in the `TensorMap` parameter's one slot): what `cuTensorMapEncodeTiled` encodes
/// for a GPU, in plain fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTensorMap {
    /// Address of element (0, 0).
    pub base: u64,
    /// Elements in a row.
    pub width: u64,
    /// Rows.
    pub height: u64,
    /// Bytes from a row to the next.
    pub pitch: u64,
    /// Bytes of an element.
    pub elem_size: u32,
    /// Elements in a row of the box.
    pub box_w: u32,
    /// Rows of the box.
    pub box_h: u32,
    /// Swizzle in bytes: 0, 32, 64 or 128.
    pub swizzle: u32,
}

impl HostTensorMap {
    /// Bytes of a box.
    pub fn box_bytes(&self) -> u64 {
        self.box_w as u64 * self.box_h as u64 * self.elem_size as u64
    }

    /// Copies the box at element (`x`, `y`) (column, row) to `dst`, as the tensor memory
    /// accelerator does: elements outside the array are zeros, and byte `o` of the box lands at
    /// `dst + ir::tensor_map_swizzle(o, swizzle)`.
    ///
    /// # Safety
    /// `base` .. the last row's end is readable (the map was built from a live array of that
    /// shape and pitch), and `dst` .. `dst + box_bytes()` is writable and not read by anything
    /// else while this runs.
    pub unsafe fn copy_box(&self, dst: *mut u8, x: i32, y: i32) {
        let es = self.elem_size as u64;
        let row = self.box_w as u64 * es;
        for r in 0..self.box_h as i64 {
            let gy = y as i64 + r;
            for c in 0..self.box_w as i64 {
                let gx = x as i64 + c;
                let o = r as u64 * row + c as u64 * es;
                let to = crate::ir::tensor_map_swizzle(o, self.swizzle as u64);
                let inside = gy >= 0 && (gy as u64) < self.height && gx >= 0 && (gx as u64) < self.width;
                // SAFETY: the caller promised `dst` holds the box (`to` is a permutation of the
                // box's offsets within 16-byte chunks of an 8-row atom) and the array's rows are
                // readable; `(gx, gy)` is inside the array here.
                unsafe {
                    let d = dst.add(to as usize);
                    if inside {
                        let s = (self.base + gy as u64 * self.pitch + gx as u64 * es) as *const u8;
                        std::ptr::copy_nonoverlapping(s, d, es as usize);
                    } else {
                        std::ptr::write_bytes(d, 0, es as usize);
                    }
                }
            }
        }
    }
}

/// The identity of this kache build (a hash of its source), which the exported names carry.
const BUILD_ID: &str = env!("KACHE_BUILD_ID");

/// The exported name of host call `name` (`__kache_host_exp_f32`) in this kache build: what
/// object code linked against it calls.
pub fn linked_symbol(name: &str) -> String {
    format!("{name}_{BUILD_ID}")
}

macro_rules! host_calls {
    ($($symbol:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block)*) => {
        $(
            // SAFETY: the name is unique to this kache build (it carries BUILD_ID), so no other
            // symbol of the program has it; the function is plain Rust with a C signature.
            #[unsafe(export_name = concat!(stringify!($symbol), "_", env!("KACHE_BUILD_ID")))]
            extern "C" fn $symbol($($arg: $ty),*) -> $ret $body
        )*

        /// The address of host call `name` (`__kache_host_exp_f32`), for the JIT.
        pub fn address(name: &str) -> Option<usize> {
            match name {
                $(stringify!($symbol) => Some($symbol as extern "C" fn($($ty),*) -> $ret as usize),)*
                _ => None,
            }
        }
    };
}

host_calls! {
    __kache_host_exp_f32(x: f32) -> f32 { x.exp() }
    __kache_host_exp_f64(x: f64) -> f64 { x.exp() }
    __kache_host_exp2_f32(x: f32) -> f32 { x.exp2() }
    __kache_host_exp2_f64(x: f64) -> f64 { x.exp2() }
    __kache_host_ln_f32(x: f32) -> f32 { x.ln() }
    __kache_host_ln_f64(x: f64) -> f64 { x.ln() }
    __kache_host_log2_f32(x: f32) -> f32 { x.log2() }
    __kache_host_log2_f64(x: f64) -> f64 { x.log2() }
    __kache_host_log10_f32(x: f32) -> f32 { x.log10() }
    __kache_host_log10_f64(x: f64) -> f64 { x.log10() }
    __kache_host_sin_f32(x: f32) -> f32 { x.sin() }
    __kache_host_sin_f64(x: f64) -> f64 { x.sin() }
    __kache_host_cos_f32(x: f32) -> f32 { x.cos() }
    __kache_host_cos_f64(x: f64) -> f64 { x.cos() }
    __kache_host_tan_f32(x: f32) -> f32 { x.tan() }
    __kache_host_tan_f64(x: f64) -> f64 { x.tan() }
    __kache_host_asin_f32(x: f32) -> f32 { x.asin() }
    __kache_host_asin_f64(x: f64) -> f64 { x.asin() }
    __kache_host_acos_f32(x: f32) -> f32 { x.acos() }
    __kache_host_acos_f64(x: f64) -> f64 { x.acos() }
    __kache_host_atan_f32(x: f32) -> f32 { x.atan() }
    __kache_host_atan_f64(x: f64) -> f64 { x.atan() }
    __kache_host_sinh_f32(x: f32) -> f32 { x.sinh() }
    __kache_host_sinh_f64(x: f64) -> f64 { x.sinh() }
    __kache_host_cosh_f32(x: f32) -> f32 { x.cosh() }
    __kache_host_cosh_f64(x: f64) -> f64 { x.cosh() }
    __kache_host_tanh_f32(x: f32) -> f32 { x.tanh() }
    __kache_host_tanh_f64(x: f64) -> f64 { x.tanh() }
    __kache_host_cbrt_f32(x: f32) -> f32 { x.cbrt() }
    __kache_host_cbrt_f64(x: f64) -> f64 { x.cbrt() }
    __kache_host_exp_m1_f32(x: f32) -> f32 { x.exp_m1() }
    __kache_host_exp_m1_f64(x: f64) -> f64 { x.exp_m1() }
    __kache_host_ln_1p_f32(x: f32) -> f32 { x.ln_1p() }
    __kache_host_ln_1p_f64(x: f64) -> f64 { x.ln_1p() }
    // Not in Rust's std (erf and erfc are unstable there): the `libm` crate, Rust's own port of
    // musl's libm; rsqrt as Rust code writes it.
    __kache_host_erf_f32(x: f32) -> f32 { libm::erff(x) }
    __kache_host_erf_f64(x: f64) -> f64 { libm::erf(x) }
    __kache_host_erfc_f32(x: f32) -> f32 { libm::erfcf(x) }
    __kache_host_erfc_f64(x: f64) -> f64 { libm::erfc(x) }
    __kache_host_exp10_f32(x: f32) -> f32 { libm::exp10f(x) }
    __kache_host_exp10_f64(x: f64) -> f64 { libm::exp10(x) }
    __kache_host_rsqrt_f32(x: f32) -> f32 { 1.0 / x.sqrt() }
    __kache_host_rsqrt_f64(x: f64) -> f64 { 1.0 / x.sqrt() }
    __kache_host_atan2_f32(x: f32, y: f32) -> f32 { x.atan2(y) }
    __kache_host_atan2_f64(x: f64, y: f64) -> f64 { x.atan2(y) }
    __kache_host_powf_f32(x: f32, y: f32) -> f32 { x.powf(y) }
    __kache_host_powf_f64(x: f64, y: f64) -> f64 { x.powf(y) }
    __kache_host_hypot_f32(x: f32, y: f32) -> f32 { x.hypot(y) }
    __kache_host_hypot_f64(x: f64, y: f64) -> f64 { x.hypot(y) }
    __kache_host_powi_f32(x: f32, n: i32) -> f32 { x.powi(n) }
    __kache_host_powi_f64(x: f64, n: i32) -> f64 { x.powi(n) }
    __kache_host_f16_to_f32(x: u32) -> f32 { f16::from_bits(x as u16).to_f32() }
    __kache_host_bf16_to_f32(x: u32) -> f32 { bf16::from_bits(x as u16).to_f32() }
    __kache_host_f16_from_f32(x: f32) -> u32 { f16::from_f32(x).to_bits() as u32 }
    __kache_host_bf16_from_f32(x: f32) -> u32 { bf16::from_f32(x).to_bits() as u32 }
    __kache_host_f16_from_f64(x: f64) -> u32 { f64_to_f16(x).to_bits() as u32 }
    __kache_host_bf16_from_f64(x: f64) -> u32 { f64_to_bf16(x).to_bits() as u32 }
    __kache_host_f16_from_i64(x: i64) -> u32 { int_to_f16(x as i128).to_bits() as u32 }
    __kache_host_bf16_from_i64(x: i64) -> u32 { int_to_bf16(x as i128).to_bits() as u32 }
    __kache_host_f16_from_u64(x: u64) -> u32 { int_to_f16(x as i128).to_bits() as u32 }
    __kache_host_bf16_from_u64(x: u64) -> u32 { int_to_bf16(x as i128).to_bits() as u32 }
    __kache_host_tma_load_2d(map: u64, dst: u64, x: i32, y: i32) -> u32 {
        // SAFETY: generated code passes the map of the launch's `TensorMap` argument (a live
        // `HostTensorMap` the launch keeps, of an array it keeps alive) and a destination the
        // kernel's checks (or its unsafe launch's caller) vouch for; see `HostTensorMap`.
        unsafe {
            let m = &*(map as *const HostTensorMap);
            m.copy_box(dst as *mut u8, x, y);
            m.box_bytes() as u32
        }
    }
}
