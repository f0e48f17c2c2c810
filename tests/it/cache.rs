//! Tests: cache.
