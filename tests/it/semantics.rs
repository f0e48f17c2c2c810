//! Tests: semantics.
