//! The keyed MAC of cache entries, for the remote tier's values and signed archives: blake3
//! keyed by a key derived from a shared secret, over the entry's key and the entry. An
//! envelope's own hashes detect damage; only this detects tampering, by anyone without the
//! secret.

use super::key::Key;

/// Fewest bytes a shared secret may have.
pub const MIN_SECRET: usize = 16;

/// Computes and checks entry MACs under one secret.
#[derive(Clone)]
pub struct EntryMac {
    key: [u8; 32],
}

impl std::fmt::Debug for EntryMac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EntryMac(<secret>)")
    }
}

impl EntryMac {
    /// MACs under `secret`, which must have at least [`MIN_SECRET`] bytes. The key derivation
    /// is the remote tier's, so an archive signed with the remote's secret carries the MACs the
    /// remote stores.
    pub fn new(secret: &[u8]) -> Result<EntryMac, String> {
        if secret.len() < MIN_SECRET {
            return Err(format!("the secret has {} bytes; at least {MIN_SECRET} are needed", secret.len()));
        }
        Ok(EntryMac { key: blake3::derive_key("kache remote entry MAC v1", secret) })
    }

    /// The MAC of `entry` stored under `key`.
    pub fn mac(&self, key: &Key, entry: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.key);
        h.update(&key.0);
        h.update(entry);
        *h.finalize().as_bytes()
    }

    /// Whether `mac` is the MAC of `entry` under `key` (compared in constant time).
    pub fn verify(&self, key: &Key, entry: &[u8], mac: &[u8; 32]) -> bool {
        blake3::Hash::from(self.mac(key, entry)) == blake3::Hash::from(*mac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macs_depend_on_secret_key_and_entry() {
        assert!(EntryMac::new(b"short").is_err());
        let m = EntryMac::new(b"0123456789abcdef").unwrap();
        let k = Key([1; 32]);
        let mac = m.mac(&k, b"entry");
        assert!(m.verify(&k, b"entry", &mac));
        assert!(!m.verify(&k, b"entrY", &mac));
        assert!(!m.verify(&Key([2; 32]), b"entry", &mac));
        assert!(!EntryMac::new(b"0123456789abcdeF").unwrap().verify(&k, b"entry", &mac));
    }
}
