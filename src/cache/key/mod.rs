//! The cache key: blake3 over an explicit, versioned, length-prefixed encoding of every input
//! that can change the compiled code, and nothing else (see docs/cache.md). One place for the
//! key schema: the components and how they are combined here, the encoding of the program in
//! `program.rs` and of captured values in `captures.rs`.

mod captures;
mod program;

use std::fmt;

use crate::capture::CaptureValue;
use crate::ir::Program;
use crate::target::{Options, Specialization};
pub use captures::encode_capture;
pub use program::encode_program;

/// Bumped whenever the encoding below changes; also names the store's subfolder, so entries
/// written under an older schema are simply never seen. Version 2: captured arrays' layouts are
/// encoded by [`Layout::tag`](crate::ir::Layout::tag), the one numbering (version 1 wrote the
/// enum's position, 0 to 2, there, and the tag, 1 to 3, in the specialisation).
pub const KEY_SCHEMA: u32 = 2;

/// A 32-byte content key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

impl Key {
    /// Lower-case hex.
    pub fn hex(&self) -> String {
        blake3::Hash::from_bytes(self.0).to_hex().to_string()
    }

    /// Parses 64 hex digits (surrounding whitespace ignored).
    pub fn from_hex(s: &str) -> Option<Key> {
        blake3::Hash::from_hex(s.trim()).ok().map(|h| Key(*h.as_bytes()))
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.hex())
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({})", &self.hex()[..16])
    }
}

/// The identity of this kache build: version plus a hash of the compiler's own source, so a
/// development build that changes code generation never hits entries of another build.
pub fn build_id() -> &'static str {
    concat!(env!("CARGO_PKG_VERSION"), "+", env!("KACHE_BUILD_ID"))
}

/// Everything a compile depends on.
pub struct KeyInputs<'a> {
    /// The checked program (the kernel and every item it reaches).
    pub program: &'a Program,
    /// Layouts of the kernel's array parameters.
    pub spec: &'a Specialization,
    /// Values of the program's captures, by capture id.
    pub captures: &'a [CaptureValue],
    /// Target and code generation options.
    pub options: &'a Options,
    /// blake3 of libdevice, when the program links it.
    pub libdevice: Option<[u8; 32]>,
    /// `KACHE_SALT`.
    pub salt: &'a str,
}

/// A derived key with the hash of each component, for `kache explain`.
#[derive(Clone, Debug)]
pub struct Derivation {
    /// The key.
    pub key: Key,
    /// Component name and its blake3.
    pub components: Vec<(&'static str, [u8; 32])>,
}

fn component(name: &'static str, bytes: &[u8]) -> (&'static str, [u8; 32]) {
    (name, *blake3::hash(bytes).as_bytes())
}

/// Derives the key. Never runs LLVM: it encodes the checked IR.
pub fn derive(k: &KeyInputs<'_>) -> Derivation {
    let mut comps = Vec::with_capacity(8);
    comps.push(component("schema", &KEY_SCHEMA.to_le_bytes()));
    let mut tool = Vec::new();
    for s in [build_id(), &crate::codegen::llvm_version()] {
        tool.extend_from_slice(&(s.len() as u64).to_le_bytes());
        tool.extend_from_slice(s.as_bytes());
    }
    comps.push(component("toolchain", &tool));
    let mut target = Vec::new();
    k.options.encode(&mut target);
    comps.push(component("target", &target));
    let mut code = Vec::with_capacity(4096);
    encode_program(k.program, &mut code);
    comps.push(component("code", &code));
    // 0 for a scalar parameter, else the layout's tag (which leaves 0 free for this).
    let spec: Vec<u8> = k.spec.layouts.iter().map(|l| l.map_or(0, |l| l.tag())).collect();
    comps.push(component("specialization", &spec));
    let mut caps = Vec::new();
    caps.extend_from_slice(&(k.captures.len() as u64).to_le_bytes());
    for c in k.captures {
        let mut one = Vec::new();
        encode_capture(c, &mut one);
        caps.extend_from_slice(&(one.len() as u64).to_le_bytes());
        caps.extend_from_slice(&one);
    }
    comps.push(component("captures", &caps));
    comps.push(component("libdevice", k.libdevice.as_ref().map(|h| h.as_slice()).unwrap_or(&[])));
    comps.push(component("salt", k.salt.as_bytes()));
    let mut all = blake3::Hasher::new();
    for (name, h) in &comps {
        all.update(&(name.len() as u64).to_le_bytes());
        all.update(name.as_bytes());
        all.update(h);
    }
    Derivation { key: Key(*all.finalize().as_bytes()), components: comps }
}

/// The key of a cubin built for `arch` by the driver of `driver_version` from the PTX
/// identified by `ptx_identity`: the kernel's own key (which determines its PTX exactly, and is
/// known before the PTX is read, so one opening of the store fetches both).
pub fn cubin_key(ptx_identity: &[u8; 32], arch: &str, driver_version: i32) -> Key {
    cubin_key_of(b"kache-cubin\0", ptx_identity, arch, &driver_version.to_le_bytes())
}

/// The key of a cubin assembled by ptxas for `arch` from `ptx`: the PTX's content and the
/// ptxas binary's (`ptxas` is its blake3), so another ptxas build never answers.
pub fn ptxas_cubin_key(ptx: &str, arch: &str, ptxas: &[u8; 32]) -> Key {
    cubin_key_of(b"kache-ptxas-cubin\0", blake3::hash(ptx.as_bytes()).as_bytes(), arch, ptxas)
}

fn cubin_key_of(domain: &[u8], ptx_identity: &[u8; 32], arch: &str, builder: &[u8]) -> Key {
    let mut h = blake3::Hasher::new();
    h.update(domain);
    h.update(&KEY_SCHEMA.to_le_bytes());
    h.update(ptx_identity);
    h.update(&(arch.len() as u64).to_le_bytes());
    h.update(arch.as_bytes());
    h.update(builder);
    Key(*h.finalize().as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cubin assembled by ptxas is keyed by everything that makes its bytes: the PTX, the
    /// architecture and the ptxas binary (by content), and never shares a key with the cubin
    /// tier's.
    #[test]
    fn ptxas_cubins_are_keyed_by_ptx_arch_and_ptxas_content() {
        let ptxas = *blake3::hash(b"ptxas 12.8").as_bytes();
        let base = ptxas_cubin_key(".entry k", "sm_90", &ptxas);
        assert_ne!(base, ptxas_cubin_key(".entry j", "sm_90", &ptxas));
        assert_ne!(base, ptxas_cubin_key(".entry k", "sm_80", &ptxas));
        assert_ne!(base, ptxas_cubin_key(".entry k", "sm_90", blake3::hash(b"ptxas 12.9").as_bytes()));
        assert_eq!(base, ptxas_cubin_key(".entry k", "sm_90", &ptxas));
        assert_ne!(base, cubin_key(blake3::hash(b".entry k").as_bytes(), "sm_90", 0));
    }
}
