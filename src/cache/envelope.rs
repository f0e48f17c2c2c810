//! The entry envelope: one place for the on-disk format of a cache entry. Every read verifies
//! all of it; anything that does not verify is a miss.
//!
//! ```text
//! magic "KACHE\0E\x01"  u16 version  [32] key echo
//! str producer  str llvm  u64 created (unix s)  u32 compile_ms
//! str kernel  str signature  u8 kind  str entry symbol
//! u64 payload length  [32] payload blake3  [32] blake3 of everything before it  payload
//! ```
//! (`str` is a u32 length and UTF-8 bytes; integers little-endian.)

use super::key::{Key, build_id};

/// Leading bytes of every entry.
pub const MAGIC: [u8; 8] = *b"KACHE\0E\x01";
/// Format version of the envelope.
pub const ENVELOPE_VERSION: u16 = 1;
/// Entries larger than this are refused (a corrupt length must not allocate gigabytes).
pub const MAX_PAYLOAD: u64 = 1 << 30;

/// What an entry's payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum ArtifactKind {
    /// PTX assembly.
    Ptx,
    /// Optimised LLVM bitcode for the host backend.
    HostBitcode,
    /// A cubin from the driver's linker.
    Cubin,
}

impl ArtifactKind {
    fn tag(self) -> u8 {
        match self {
            ArtifactKind::Ptx => 1,
            ArtifactKind::HostBitcode => 2,
            ArtifactKind::Cubin => 3,
        }
    }
    fn from_tag(t: u8) -> Option<ArtifactKind> {
        Some(match t {
            1 => ArtifactKind::Ptx,
            2 => ArtifactKind::HostBitcode,
            3 => ArtifactKind::Cubin,
            _ => return None,
        })
    }
}

/// The envelope's fields besides the payload.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Meta {
    /// The key the entry is stored under.
    #[serde(serialize_with = "ser_key")]
    pub key: Key,
    /// The kache build that wrote it.
    pub producer: String,
    /// LLVM version of the producer.
    pub llvm: String,
    /// Unix seconds.
    pub created: u64,
    /// How long the compile took (what a hit saves).
    pub compile_ms: u32,
    /// Kernel name.
    pub kernel: String,
    /// Kernel signature, for display.
    pub signature: String,
    /// Payload kind.
    pub kind: ArtifactKind,
    /// Symbol to load.
    pub entry: String,
}

fn ser_key<S: serde::Serializer>(k: &Key, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&k.hex())
}

impl Meta {
    /// Metadata for a fresh entry written now by this build.
    pub fn new(key: Key, kernel: &str, signature: &str, kind: ArtifactKind, entry: &str, compile_ms: u32) -> Meta {
        Meta {
            key,
            producer: build_id().to_string(),
            llvm: crate::codegen::llvm_version(),
            created: std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0),
            compile_ms,
            kernel: kernel.to_string(),
            signature: signature.to_string(),
            kind,
            entry: entry.to_string(),
        }
    }
}

/// Why an entry did not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// Too short or cut off.
    #[error("entry is truncated")]
    Truncated,
    /// Not an entry.
    #[error("bad magic")]
    BadMagic,
    /// Written by another envelope version.
    #[error("envelope version {0} is not {ENVELOPE_VERSION}")]
    Version(u16),
    /// Stored under another key.
    #[error("key echo does not match")]
    KeyMismatch,
    /// Unknown payload kind or bad field.
    #[error("malformed field: {0}")]
    Malformed(&'static str),
    /// Header checksum mismatch.
    #[error("header does not match its checksum")]
    BadHeader,
    /// Payload hash mismatch.
    #[error("payload does not match its hash")]
    BadPayload,
    /// Bytes after the payload.
    #[error("trailing bytes after the payload")]
    Trailing,
}

/// Serialises an entry.
pub fn encode(meta: &Meta, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 256);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&ENVELOPE_VERSION.to_le_bytes());
    out.extend_from_slice(&meta.key.0);
    for s in [&meta.producer, &meta.llvm] {
        put_str(&mut out, s);
    }
    out.extend_from_slice(&meta.created.to_le_bytes());
    out.extend_from_slice(&meta.compile_ms.to_le_bytes());
    put_str(&mut out, &meta.kernel);
    put_str(&mut out, &meta.signature);
    out.push(meta.kind.tag());
    put_str(&mut out, &meta.entry);
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    let header = *blake3::hash(&out).as_bytes();
    out.extend_from_slice(&header);
    out.extend_from_slice(payload);
    out
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], EnvelopeError> {
        if self.b.len() < n {
            return Err(EnvelopeError::Truncated);
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8, EnvelopeError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, EnvelopeError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().map_err(|_| EnvelopeError::Truncated)?))
    }
    fn u32(&mut self) -> Result<u32, EnvelopeError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| EnvelopeError::Truncated)?))
    }
    fn u64(&mut self) -> Result<u64, EnvelopeError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().map_err(|_| EnvelopeError::Truncated)?))
    }
    fn str(&mut self, what: &'static str) -> Result<String, EnvelopeError> {
        let n = self.u32()? as usize;
        if n > 1 << 20 {
            return Err(EnvelopeError::Malformed(what));
        }
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| EnvelopeError::Malformed(what))
    }
}

/// Verifies and splits an entry. `expected` is the key it was looked up under (`None` when
/// listing a store). The payload is returned only if its hash matches.
pub fn decode<'a>(bytes: &'a [u8], expected: Option<&Key>) -> Result<(Meta, &'a [u8]), EnvelopeError> {
    let mut r = Reader { b: bytes };
    if r.take(8).map_err(|_| EnvelopeError::BadMagic)? != MAGIC {
        return Err(EnvelopeError::BadMagic);
    }
    let v = r.u16()?;
    if v != ENVELOPE_VERSION {
        return Err(EnvelopeError::Version(v));
    }
    let mut key = [0u8; 32];
    key.copy_from_slice(r.take(32)?);
    let key = Key(key);
    if let Some(e) = expected {
        if *e != key {
            return Err(EnvelopeError::KeyMismatch);
        }
    }
    let producer = r.str("producer")?;
    let llvm = r.str("llvm")?;
    let created = r.u64()?;
    let compile_ms = r.u32()?;
    let kernel = r.str("kernel")?;
    let signature = r.str("signature")?;
    let kind = ArtifactKind::from_tag(r.u8()?).ok_or(EnvelopeError::Malformed("kind"))?;
    let entry = r.str("entry")?;
    let len = r.u64()?;
    if len > MAX_PAYLOAD {
        return Err(EnvelopeError::Malformed("payload length"));
    }
    let mut hash = [0u8; 32];
    hash.copy_from_slice(r.take(32)?);
    let header_len = bytes.len() - r.b.len();
    let header_hash = r.take(32)?;
    if blake3::hash(&bytes[..header_len]).as_bytes() != header_hash {
        return Err(EnvelopeError::BadHeader);
    }
    let payload = r.take(len as usize)?;
    if !r.b.is_empty() {
        return Err(EnvelopeError::Trailing);
    }
    if *blake3::hash(payload).as_bytes() != hash {
        return Err(EnvelopeError::BadPayload);
    }
    Ok((Meta { key, producer, llvm, created, compile_ms, kernel, signature, kind, entry }, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Meta, Vec<u8>) {
        let meta = Meta::new(Key([7; 32]), "saxpy", "(a: f32, x: &[f32], y: &mut [f32])", ArtifactKind::Ptx, "saxpy", 12);
        (meta, b"//\n.version 6.3\n".to_vec())
    }

    #[test]
    fn round_trip() {
        let (m, p) = sample();
        let b = encode(&m, &p);
        let (m2, p2) = decode(&b, Some(&m.key)).unwrap();
        assert_eq!(m, m2);
        assert_eq!(p, p2);
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let (m, p) = sample();
        let b = encode(&m, &p);
        for i in 0..b.len() * 8 {
            let mut c = b.clone();
            c[i / 8] ^= 1 << (i % 8);
            assert!(decode(&c, Some(&m.key)).is_err(), "flip of bit {i} accepted");
        }
    }

    #[test]
    fn every_truncation_is_rejected() {
        let (m, p) = sample();
        let b = encode(&m, &p);
        for n in 0..b.len() {
            assert!(decode(&b[..n], Some(&m.key)).is_err(), "truncated to {n} bytes accepted");
        }
    }

    #[test]
    fn wrong_key_and_version_are_rejected() {
        let (m, p) = sample();
        let b = encode(&m, &p);
        assert_eq!(decode(&b, Some(&Key([8; 32]))).unwrap_err(), EnvelopeError::KeyMismatch);
        let mut c = b.clone();
        c[8] = 2;
        assert_eq!(decode(&c, None).unwrap_err(), EnvelopeError::Version(2));
    }
}
