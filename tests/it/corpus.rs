//! Tests: corpus.
