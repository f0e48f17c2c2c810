//! Tests: proptests.
