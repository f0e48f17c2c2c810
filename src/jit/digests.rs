//! The blake3 digests of the source texts a JIT has keyed, found again by comparing bytes: a
//! request for a text seen before costs one comparison of its bytes (memory speed) instead of
//! hashing them again, which is what keeps an in-process hit of a large kernel cheap
//! (docs/cache.md#direct-mode). A digest is reused only for the very same bytes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The most text the memo keeps (its texts are dropped, all at once, past this).
const MAX_BYTES: usize = 64 << 20;

/// Texts by length, each with its digest.
#[derive(Default)]
pub(super) struct TextDigests {
    inner: Mutex<Texts>,
}

/// A text and its digest.
type Digested = (Arc<[u8]>, [u8; 32]);

#[derive(Default)]
struct Texts {
    by_len: HashMap<usize, Vec<Digested>>,
    bytes: usize,
}

impl TextDigests {
    /// The blake3 digest of `text`: remembered where these bytes were hashed before, else
    /// hashed (outside the lock) and remembered.
    pub(super) fn digest(&self, text: &[u8]) -> [u8; 32] {
        if let Some(d) = self.find(text) {
            return d;
        }
        let digest = *blake3::hash(text).as_bytes();
        if text.len() <= MAX_BYTES / 4 {
            let mut t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            if t.bytes + text.len() > MAX_BYTES {
                *t = Texts::default();
            }
            let same_len = t.by_len.entry(text.len()).or_default();
            if !same_len.iter().any(|(seen, _)| **seen == *text) {
                same_len.push((Arc::from(text), digest));
                t.bytes += text.len();
            }
        }
        digest
    }

    fn find(&self, text: &[u8]) -> Option<[u8; 32]> {
        let t = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        t.by_len.get(&text.len())?.iter().find(|(seen, _)| **seen == *text).map(|(_, d)| *d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_reused_only_for_the_same_bytes() {
        let memo = TextDigests::default();
        let a = b"#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }".to_vec();
        let mut b = a.clone();
        *b.last_mut().unwrap() = b' ';
        assert_eq!(memo.digest(&a), *blake3::hash(&a).as_bytes());
        // Same length, one byte apart: its own digest, never the remembered one.
        assert_eq!(memo.digest(&b), *blake3::hash(&b).as_bytes());
        assert_ne!(memo.digest(&a), memo.digest(&b));
        assert_eq!(memo.inner.lock().unwrap().by_len[&a.len()].len(), 2);
        // Asked again: found, not stored twice.
        assert_eq!(memo.digest(&a), *blake3::hash(&a).as_bytes());
        assert_eq!(memo.inner.lock().unwrap().bytes, a.len() + b.len());
    }

    #[test]
    fn the_memo_forgets_everything_past_its_bound() {
        let memo = TextDigests::default();
        let big = vec![7u8; MAX_BYTES / 4];
        for i in 0..5u8 {
            let mut t = big.clone();
            t[0] = i;
            assert_eq!(memo.digest(&t), *blake3::hash(&t).as_bytes());
        }
        assert!(memo.inner.lock().unwrap().bytes <= MAX_BYTES);
        // Too large to keep: hashed each time, never kept.
        let huge = vec![1u8; MAX_BYTES / 4 + 1];
        assert_eq!(memo.digest(&huge), *blake3::hash(&huge).as_bytes());
        assert!(!memo.inner.lock().unwrap().by_len.contains_key(&huge.len()));
    }
}
