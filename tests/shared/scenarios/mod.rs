//! Device-generic semantic scenarios over the kernel corpus (`cache-fixtures/kernels/`).
//!
//! Each scenario loads corpus kernels, runs them on the given device and compares every
//! result with a plain Rust reference computed here: exact equality for integers, bools and
//! float results that are exactly representable (the inputs are chosen so that they are), a
//! small tolerance where transcendental functions are involved.
//!
//! Included by `tests/it/semantics.rs` (host backend) and `tests/gpu.rs` (CUDA), next to
//! `foreign.rs` (as the sibling module `foreign`). The scenarios live in one file per theme.
#![allow(dead_code)]
// A failed unwrap in a scenario is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use kache::Device;

mod aggregates;
mod arithmetic;
mod arrays;
mod atomics;
mod control;
mod generics;
pub mod helpers;
mod language;
mod matching;
mod math;
mod programs;
mod small_types;
mod tensor;
mod warp;
mod wide;

pub use aggregates::*;
pub use arithmetic::*;
pub use arrays::*;
pub use atomics::*;
pub use control::*;
pub use generics::*;
pub use language::*;
pub use matching::*;
pub use math::*;
pub use programs::*;
pub use small_types::*;
pub use tensor::*;
pub use warp::*;
pub use wide::*;

/// A scenario: runs on a device, `Err` says what differed.
pub type Scenario = fn(&Device) -> helpers::Outcome;

/// Every scenario, by name.
pub const ALL: &[(&str, Scenario)] = &[
    ("saxpy", saxpy),
    ("vector_add_ints", vector_add_ints),
    ("reduce_shared", reduce_shared),
    ("reduce_dynamic_shared", reduce_dynamic_shared),
    ("matmul_2d", matmul_2d),
    ("stencil_3d", stencil_3d),
    ("histogram_atomics", histogram_atomics),
    ("atomics_minmax", atomics_minmax),
    ("atomic_cas_lock", atomic_cas_lock),
    ("casts", casts),
    ("operators", operators),
    ("compound_assign", compound_assign),
    ("float_remainder", float_remainder),
    ("control_flow", control_flow),
    ("inclusive_and_stepped_ranges_at_type_max", inclusive_and_stepped_ranges_at_type_max),
    ("device_functions", device_functions),
    ("consts_statics", consts_statics),
    ("type_inference", type_inference),
    ("math_f32", math_f32),
    ("math_f64", math_f64),
    ("int_methods", int_methods),
    ("thread_indices", thread_indices),
    ("array_0d", array_0d),
    ("array_shapes_strides", array_shapes_strides),
    ("transpose", transpose),
    ("prefix_scan", prefix_scan),
    ("bool_mask", bool_mask),
    ("collatz", collatz),
    ("mandelbrot", mandelbrot),
    ("softmax_rows", softmax_rows),
    ("bitonic_sort", bitonic_sort),
    ("gather_scatter", gather_scatter),
    ("conv1d", conv1d),
    ("grid_stride", grid_stride),
    ("sparse_csr", sparse_csr),
    ("float_special", float_special),
    ("polynomial_horner", polynomial_horner),
    ("rng_xorshift", rng_xorshift),
    ("scopes_shadowing", scopes_shadowing),
    ("nbody", nbody),
    ("shared_device_functions", shared_device_functions),
    ("layout_specialised_calls", layout_specialised_calls),
    ("ranges_signed", ranges_signed),
    ("float_edge_cases", float_edge_cases),
    ("many_params", many_params),
    ("precedence_literals", precedence_literals),
    ("foreign_arrays", foreign_arrays),
    // Device functions named like another plus digits (norm, norm2): NVPTX linking once merged
    // them, and the kernel recursed until it faulted on the GPU.
    ("device_function_names_with_digit_suffix", device_function_names_with_digit_suffix),
    // The small integer and 16-bit float types.
    ("image_u8", image_u8),
    ("int8_dot", int8_dot),
    ("axpy_f16", axpy_f16),
    ("bf16_elementwise", bf16_elementwise),
    ("histogram_small", histogram_small),
    ("small_casts", small_casts),
    ("bf16_gemm_tile", bf16_gemm_tile),
    // Groups of contiguous elements per thread, on aligned arrays and misaligned views.
    ("wide_access", wide_access),
    // Warp-level primitives, every atomic, the math methods of the second language version.
    ("warp_reduce", warp_reduce),
    ("warp_aggregated_atomics", warp_aggregated_atomics),
    ("atomics_every_op", atomics_every_op),
    ("atomic_load_store", atomic_load_store),
    ("softmax_warp", softmax_warp),
    ("block_scan_warp", block_scan_warp),
    ("stream_compaction", stream_compaction),
    ("radix_sort_pass", radix_sort_pass),
    ("math_methods_more", math_methods_more),
    // The tensor cores: mma, ldmatrix, cp_async (sm_80 and later on a GPU).
    ("tensor_cores", tensor_cores),
    ("tensor_ldmatrix_forms", tensor_ldmatrix_forms),
    // The warpgroup MMA (sm_90a on a GPU), bulk copies and mbarriers (sm_90).
    ("tensor_wgmma", tensor_wgmma),
    ("tensor_bulk_copy", tensor_bulk_copy),
    // The speed suite's GEMMs and attention (benches/speed/kernels/) at small sizes.
    ("tensor_gemms", tensor_gemms),
    ("tensor_attention", tensor_attention),
    // `match`, enums and kernels across files.
    ("state_machine", state_machine),
    ("match_ints", match_ints),
    ("split_kernels", split_kernels),
    // Generic kernels, each launched with several element types or named instances.
    ("generic_axpy", generic_axpy),
    ("generic_reduce", generic_reduce),
    ("generic_map", generic_map),
    ("generic_matmul_tiled", generic_matmul_tiled),
    ("generic_conv1d", generic_conv1d),
    ("generic_bits", generic_bits),
    ("generic_dot", generic_dot),
    ("generic_device_calls", generic_device_calls),
    // Tuples, fixed-size local arrays and structs.
    ("tuples_extremes", tuples_extremes),
    ("welford_tuples", welford_tuples),
    ("mat3_local_arrays", mat3_local_arrays),
    ("median_filter_u8", median_filter_u8),
    ("complex_struct", complex_struct),
    ("bbox_shared_structs", bbox_shared_structs),
    ("window_const_generic", window_const_generic),
    ("nbody_structs", nbody_structs),
    // A register array read and written by loops that the GPU code unrolls whole.
    ("rows_in_registers", rows_in_registers),
    // The language Rust users expect: traits, operator traits, generic structs, `Option`,
    // closures.
    ("lang_traits", lang_traits),
    ("lang_operators", lang_operators),
    ("lang_generic_structs", lang_generic_structs),
    ("lang_option", lang_option),
    ("lang_closures", lang_closures),
    // Tensor copies (sm_90), last: a fault of the tensor memory accelerator is sticky on a GPU
    // (the context is lost for the rest of the process), so it stops nothing after it.
    ("tensor_map_transpose", tensor_map_transpose),
];
