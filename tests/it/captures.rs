//! Tests: captures.
