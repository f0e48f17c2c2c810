//! Tests: invariants.
