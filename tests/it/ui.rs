//! The guards the type system enforces, as compile-fail tests (one trybuild run for all of
//! tests/ui, since each run checks kache in a target folder of its own): an Element without
//! bytemuck's guarantees, a safe ArrayInterface impl, forged array descriptions, the unsafe
//! trust points called without `unsafe`, and cudarc slices or views captured without an Arc.

#[test]
fn what_would_be_unsound_does_not_compile() {
    let t = trybuild::TestCases::new();
    t.compile_fail(crate::common::root().join("tests/ui/*.rs"));
}
