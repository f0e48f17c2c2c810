//! Tests: semantics. Every scenario of `tests/shared/scenarios/` on the host backend: corpus
//! kernels run and compared with plain Rust references.

use crate::foreign;
#[path = "../shared/scenarios/mod.rs"]
mod scenarios;

/// One `#[test]` per scenario (attributes such as `#[ignore = ".."]` go before the name), and
/// the list of names, to check that none of `scenarios::ALL` is left without a test.
macro_rules! host_scenarios {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {
        $(
            #[test]
            $(#[$attr])*
            fn $name() {
                if let Err(e) = scenarios::$name(&kache::Device::host()) {
                    panic!("scenario `{}` failed on the host backend: {e}", stringify!($name));
                }
            }
        )*
        const TESTED: &[&str] = &[$(stringify!($name)),*];
    };
}

host_scenarios! {
    saxpy,
    vector_add_ints,
    reduce_shared,
    reduce_dynamic_shared,
    matmul_2d,
    stencil_3d,
    histogram_atomics,
    atomics_minmax,
    atomic_cas_lock,
    casts,
    operators,
    compound_assign,
    float_remainder,
    control_flow,
    inclusive_and_stepped_ranges_at_type_max,
    device_functions,
    device_function_names_with_digit_suffix,
    consts_statics,
    type_inference,
    math_f32,
    math_f64,
    int_methods,
    thread_indices,
    array_0d,
    array_shapes_strides,
    transpose,
    prefix_scan,
    bool_mask,
    collatz,
    mandelbrot,
    softmax_rows,
    bitonic_sort,
    gather_scatter,
    conv1d,
    grid_stride,
    sparse_csr,
    float_special,
    polynomial_horner,
    rng_xorshift,
    scopes_shadowing,
    nbody,
    shared_device_functions,
    layout_specialised_calls,
    ranges_signed,
    float_edge_cases,
    many_params,
    precedence_literals,
    foreign_arrays,
    image_u8,
    int8_dot,
    axpy_f16,
    bf16_elementwise,
    histogram_small,
    small_casts,
    warp_reduce,
    warp_aggregated_atomics,
    atomics_every_op,
    atomic_load_store,
    softmax_warp,
    block_scan_warp,
    stream_compaction,
    radix_sort_pass,
    math_methods_more,
    tensor_cores,
    tensor_ldmatrix_forms,
    tensor_wgmma,
    tensor_bulk_copy,
    tensor_map_transpose,
    // The speed suite's dry run (speed_suite::the_speed_suite_dry_run_compiles_everything_and_
    // checks_every_kache_kernel) checks these kernels on the host against the same kind of
    // reference; they are scenarios for tests/gpu.rs, whose GPU runs them at these sizes.
    #[ignore = "the speed suite's dry run checks these kernels on the host; tests/gpu.rs runs them on a GPU"]
    tensor_gemms,
    #[ignore = "the speed suite's dry run checks these kernels on the host; tests/gpu.rs runs them on a GPU"]
    tensor_attention,
    bf16_gemm_tile,
    state_machine,
    match_ints,
    split_kernels,
    generic_axpy,
    generic_reduce,
    generic_map,
    generic_matmul_tiled,
    generic_conv1d,
    generic_bits,
    generic_dot,
    generic_device_calls,
    tuples_extremes,
    welford_tuples,
    mat3_local_arrays,
    median_filter_u8,
    complex_struct,
    bbox_shared_structs,
    window_const_generic,
    nbody_structs,
    rows_in_registers,
    wide_access,
    lang_traits,
    lang_operators,
    lang_generic_structs,
    lang_option,
    lang_closures,
}

#[test]
fn every_scenario_has_a_host_test() {
    let all: Vec<&str> = scenarios::ALL.iter().map(|(n, _)| *n).collect();
    let missing: Vec<&&str> = all.iter().filter(|n| !TESTED.contains(n)).collect();
    let unknown: Vec<&&str> = TESTED.iter().filter(|n| !all.contains(n)).collect();
    assert!(missing.is_empty() && unknown.is_empty(), "scenarios without a host test: {missing:?}; tests not in ALL: {unknown:?}");
}
