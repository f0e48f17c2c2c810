//! Tests: runtime.
