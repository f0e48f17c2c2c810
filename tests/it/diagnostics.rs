//! Tests: diagnostics.
