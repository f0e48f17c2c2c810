//! The cache key: blake3 over an explicit, versioned, length-prefixed encoding of every input
//! that can change the compiled code, and nothing else (see docs/cache.md). One place for the
//! key schema: the components and how they are combined here, the encoding of the program in
//! `program.rs` and of captured values in `captures.rs`.

mod captures;
mod manifest;
mod program;
mod tuning;

use std::fmt;

use crate::capture::CaptureValue;
use crate::ir::Program;
use crate::target::{Options, Specialization};
pub use captures::{encode_capture, encode_relocatable};
pub use manifest::{
    Manifest, ManifestError, ManifestInputs, ManifestKernel, ManifestSite, derive_manifest, derive_record, encode_globals, encode_root,
};
pub use program::encode_program;
pub use tuning::{TUNING_COMPONENTS, TuningInputs, derive_tuning, encode_bucket, encode_device, encode_driver, tuning_key_of};

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

/// The compiler a key is derived for: this kache build and its LLVM. An input of every key
/// derivation rather than a constant inside it, so that a test can derive the keys of another
/// toolchain without building one; [`Toolchain::current`] (the default) is the only one a
/// program has any reason to use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toolchain {
    /// kache's version and build ([`build_id`]).
    pub kache: String,
    /// LLVM's version.
    pub llvm: String,
}

impl Toolchain {
    /// This build of kache and the LLVM it links.
    pub fn current() -> Toolchain {
        Toolchain { kache: build_id().to_string(), llvm: crate::codegen::llvm_version() }
    }

    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for s in [&self.kache, &self.llvm] {
            out.extend_from_slice(&(s.len() as u64).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        out
    }
}

impl Default for Toolchain {
    fn default() -> Toolchain {
        Toolchain::current()
    }
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
    /// The compiler.
    pub toolchain: &'a Toolchain,
    /// `KACHE_SALT`.
    pub salt: &'a str,
    /// Device arrays are captured relocatably (their addresses in slots the loader fills),
    /// so their addresses are not keyed ([`encode_relocatable`]).
    pub relocatable_captures: bool,
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

/// The key over named component hashes.
fn combine(comps: Vec<(&'static str, [u8; 32])>) -> Derivation {
    let mut all = blake3::Hasher::new();
    for (name, h) in &comps {
        all.update(&(name.len() as u64).to_le_bytes());
        all.update(name.as_bytes());
        all.update(h);
    }
    Derivation { key: Key(*all.finalize().as_bytes()), components: comps }
}

/// Derives the key. Never runs LLVM: it encodes the checked IR.
pub fn derive(k: &KeyInputs<'_>) -> Derivation {
    let mut comps = Vec::with_capacity(8);
    comps.push(component("schema", &KEY_SCHEMA.to_le_bytes()));
    comps.push(component("toolchain", &k.toolchain.encode()));
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
        match c {
            CaptureValue::Device(d) if k.relocatable_captures => encode_relocatable(d, &mut one),
            c => encode_capture(c, &mut one),
        }
        caps.extend_from_slice(&(one.len() as u64).to_le_bytes());
        caps.extend_from_slice(&one);
    }
    comps.push(component("captures", &caps));
    comps.push(component("libdevice", k.libdevice.as_ref().map(|h| h.as_slice()).unwrap_or(&[])));
    comps.push(component("salt", k.salt.as_bytes()));
    combine(comps)
}

/// What turns PTX into a cubin.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Assembler<'a> {
    /// The CUDA driver's linker (`cuLinkComplete`), by the driver's version.
    Driver(i32),
    /// ptxas, by the blake3 of its binary and its `--version` output.
    Ptxas {
        /// blake3 of the binary.
        binary: &'a [u8; 32],
        /// What `ptxas --version` printed.
        version: &'a str,
    },
}

/// Everything a cubin depends on.
pub struct CubinInputs<'a> {
    /// The PTX it is built from: the kernel's key (which determines its PTX exactly, and is known
    /// before the PTX is read, so one opening of the store fetches both), or the PTX's hash for
    /// PTX from elsewhere.
    pub ptx: &'a [u8; 32],
    /// The architecture it is built for, as the assembler names it (`sm_90`).
    pub arch: &'a str,
    /// What builds it.
    pub assembler: Assembler<'a>,
    /// The compiler (it chooses how the assembler is run).
    pub toolchain: &'a Toolchain,
    /// `KACHE_SALT`.
    pub salt: &'a str,
}

/// Derives a cubin's key, with the hash of each component (`kache explain` shows them).
pub fn derive_cubin(c: &CubinInputs<'_>) -> Derivation {
    let mut assembler = Vec::new();
    match c.assembler {
        Assembler::Driver(v) => {
            assembler.push(1);
            assembler.extend_from_slice(&v.to_le_bytes());
        }
        Assembler::Ptxas { binary, version } => {
            assembler.push(2);
            assembler.extend_from_slice(binary);
            assembler.extend_from_slice(&(version.len() as u64).to_le_bytes());
            assembler.extend_from_slice(version.as_bytes());
        }
    }
    combine(vec![
        component("schema", &KEY_SCHEMA.to_le_bytes()),
        component("artifact", b"cubin"),
        component("toolchain", &c.toolchain.encode()),
        ("ptx", *c.ptx),
        component("arch", c.arch.as_bytes()),
        component("assembler", &assembler),
        component("salt", c.salt.as_bytes()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cubin is keyed by everything that makes its bytes: the PTX, the architecture, the
    /// assembler (ptxas by content and version, or the driver by version), the toolchain, and
    /// the salt; ptxas's and the driver's never share a key.
    #[test]
    fn cubins_are_keyed_by_every_input() {
        let ptxas = *blake3::hash(b"ptxas 12.8").as_bytes();
        let toolchain = Toolchain { kache: "k".into(), llvm: "19".into() };
        let inputs = |ptx: &'static [u8; 32], arch, assembler, toolchain, salt| CubinInputs { ptx, arch, assembler, toolchain, salt };
        let key = |c: CubinInputs<'_>| derive_cubin(&c).key;
        let base = key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &toolchain, ""));
        let other_toolchain = Toolchain { llvm: "20".into(), ..toolchain.clone() };
        let other_ptxas = *blake3::hash(b"ptxas 12.9").as_bytes();
        for other in [
            key(inputs(&[2; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &toolchain, "")),
            key(inputs(&[1; 32], "sm_80", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &toolchain, "")),
            key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &other_ptxas, version: "V12.8" }, &toolchain, "")),
            key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.9" }, &toolchain, "")),
            key(inputs(&[1; 32], "sm_90", Assembler::Driver(12080), &toolchain, "")),
            key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &other_toolchain, "")),
            key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &toolchain, "salt")),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(base, key(inputs(&[1; 32], "sm_90", Assembler::Ptxas { binary: &ptxas, version: "V12.8" }, &toolchain, "")));
    }
}
