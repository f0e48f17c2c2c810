//! Tests: remote.
