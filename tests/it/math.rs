//! Tests: math methods on the host backend against Rust's own results. The host calls Rust's
//! functions (std, and the `libm` crate for `erf`, `erfc`, `exp10`), so every float method
//! must agree to the bit (0 ulps); integer methods agree exactly at the edges of every type.
//! `tests/gpu.rs` runs the same checks on CUDA within the bounds `docs/language.md` lists.

#[path = "../shared/math_check.rs"]
mod math_check;

use kache::Device;

#[test]
fn float_methods_equal_rusts_on_the_host() {
    let worst = math_check::check_float_methods(&Device::host(), |_, _| Some(0)).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(worst.len(), math_check::GPU_ULPS.len());
}

#[test]
fn float_tests_equal_rusts_on_the_host() {
    math_check::check_float_tests(&Device::host()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn integer_methods_equal_rusts_at_the_edges_of_every_type() {
    let d = Device::host();
    for (t, r) in [
        ("i32", math_check::check_i32(&d)),
        ("i64", math_check::check_i64(&d)),
        ("u32", math_check::check_u32(&d)),
        ("u64", math_check::check_u64(&d)),
        ("usize", math_check::check_usize(&d)),
    ] {
        r.unwrap_or_else(|e| panic!("{t}: {e}"));
    }
}

/// The table of GPU bounds in the language reference is the one the GPU test checks.
#[test]
fn the_documented_ulp_table_is_the_checked_one() {
    let doc = std::fs::read_to_string(crate::common::root().join("docs/language.md")).unwrap();
    for (name, bound) in math_check::GPU_ULPS {
        let row = doc
            .lines()
            .find(|l| l.starts_with(&format!("| `{name}` |")))
            .unwrap_or_else(|| panic!("docs/language.md has no row for `{name}` in the math table"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let want = match bound {
            Some((a, b)) => (a.to_string(), b.to_string()),
            None => ("-".to_string(), "-".to_string()),
        };
        assert_eq!((cells[3].to_string(), cells[4].to_string()), want, "row of `{name}`: {row}");
    }
}
