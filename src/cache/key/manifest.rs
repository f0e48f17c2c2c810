//! Direct mode's manifest (as ccache's direct mode): a key over the raw inputs of a request
//! (the root source file's bytes, the globals bound, the kernels asked for, the options, the
//! toolchain, the salt), under which the store keeps what a full compile found: the content
//! hash of every module file it read, and for each kernel its semantic key, interface and
//! bounds checks. A lookup through it reads files and hashes them; it never parses or checks
//! (docs/cache.md).

use super::{KEY_SCHEMA, Toolchain, component, encode_capture};
use crate::cache::envelope::{self, Meta};
use crate::capture::CaptureValue;
use crate::target::Options;

/// Everything a manifest is looked up by: the request's raw inputs.
pub struct ManifestInputs<'a> {
    /// The root file's name as given (its warnings are rendered with it).
    pub root_name: &'a str,
    /// The blake3 digest of the root file's bytes (a JIT remembers the digests of texts it has
    /// seen, so a repeated request compares bytes instead of hashing them).
    pub root_digest: &'a [u8; 32],
    /// The globals bound, in the order they were bound.
    pub globals: &'a [(String, CaptureValue)],
    /// The kernels and instances asked for, as asked; empty: every kernel of the file.
    pub kernels: &'a [String],
    /// Target and code generation options.
    pub options: &'a Options,
    /// The compiler.
    pub toolchain: &'a Toolchain,
    /// `KACHE_SALT`.
    pub salt: &'a str,
}

fn strings(out: &mut Vec<u8>, items: impl ExactSizeIterator<Item = impl AsRef<[u8]>>) {
    out.extend_from_slice(&(items.len() as u64).to_le_bytes());
    for s in items {
        out.extend_from_slice(&(s.as_ref().len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_ref());
    }
}

fn bytes(out: &mut Vec<u8>, b: &[u8]) {
    out.extend_from_slice(&(b.len() as u64).to_le_bytes());
    out.extend_from_slice(b);
}

/// A root file as keys name it: its name as given and the blake3 of its bytes.
pub fn encode_root(name: &str, digest: &[u8; 32]) -> Vec<u8> {
    let mut root = Vec::with_capacity(name.len() + 48);
    strings(&mut root, [name.as_bytes()].into_iter());
    root.extend_from_slice(digest);
    root
}

/// Globals bound, in the order they were bound: each name and value, values as the `captures`
/// component encodes them.
pub fn encode_globals(globals: &[(String, CaptureValue)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(globals.len() as u64).to_le_bytes());
    for (name, v) in globals {
        strings(&mut out, [name.as_bytes()].into_iter());
        let mut one = Vec::new();
        encode_capture(v, &mut one);
        strings(&mut out, [one].into_iter());
    }
    out
}

/// The manifest's key. Its components are the semantic key's raw counterparts: `schema`,
/// `artifact` ("manifest", so it is never a kernel's key), `toolchain`, `target`, `root` (name
/// and content hash), `globals` (each name and value, as the `captures` component encodes
/// values), `kernels`, `layouts` (every array C-contiguous, the only one direct mode serves),
/// `salt`.
pub fn derive_manifest(m: &ManifestInputs<'_>) -> super::Derivation {
    let mut target = Vec::new();
    m.options.encode(&mut target);
    let root = encode_root(m.root_name, m.root_digest);
    let globals = encode_globals(m.globals);
    let mut kernels = Vec::new();
    strings(&mut kernels, m.kernels.iter());
    super::combine(vec![
        component("schema", &KEY_SCHEMA.to_le_bytes()),
        component("artifact", b"manifest"),
        component("toolchain", &m.toolchain.encode()),
        component("target", &target),
        component("root", &root),
        component("globals", &globals),
        component("kernels", &kernels),
        component("layouts", b"C"),
        component("salt", m.salt.as_bytes()),
    ])
}

/// The key of a front-end record (docs/cache.md, "Direct mode"): `schema`, `artifact` (what
/// the record says: "parsed source" or "checked kernel", so it is never a kernel's or a
/// manifest's key), `toolchain` (the compiler's build: a record of another build never
/// serves), the record's own raw inputs, and `salt`.
pub fn derive_record(artifact: &'static str, toolchain: &Toolchain, salt: &str, inputs: &[(&'static str, &[u8])]) -> super::Derivation {
    let mut comps = vec![
        component("schema", &KEY_SCHEMA.to_le_bytes()),
        component("artifact", artifact.as_bytes()),
        component("toolchain", &toolchain.encode()),
    ];
    comps.extend(inputs.iter().map(|(name, bytes)| component(name, bytes)));
    comps.push(component("salt", salt.as_bytes()));
    super::combine(comps)
}

/// What a full compile of a request found, stored under the request's manifest key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    /// Every module file the front end looked for, by path relative to the root file's folder:
    /// the blake3 of its bytes, or `None` where there was none. A lookup reads each again and
    /// serves only if every one is what it was.
    pub files: Vec<(String, Option<[u8; 32]>)>,
    /// The kernels, in the order they were compiled.
    pub kernels: Vec<ManifestKernel>,
    /// Generic kernels left out of an every-kernel request: their signature and why.
    pub left_out: Vec<(String, String)>,
    /// What the checker warned about, rendered (`file:line:col: message`), printed again on a
    /// direct hit.
    pub warnings: Vec<String>,
}

/// One kernel of a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestKernel {
    /// The kernel's envelope fields with its interface (how to call it without its source);
    /// `meta.key` is its semantic key, the entry that holds its code.
    pub meta: Meta,
    /// The blake3 of the libdevice its key was derived with, when it links libdevice: served
    /// only while the libdevice found now hashes the same.
    pub libdevice: Option<[u8; 32]>,
    /// Its bounds checks, by number, as its fault reports name them (empty for code without
    /// bounds checks).
    pub sites: Vec<ManifestSite>,
}

/// One bounds check of a [`ManifestKernel`]: what a fault report says of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestSite {
    /// The array, in words ("parameter `x`").
    pub array: String,
    /// Its number of dimensions.
    pub ndim: u32,
    /// `file:line:col` of the access.
    pub location: Option<String>,
}

/// Why a manifest's payload did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed manifest: {0}")]
pub struct ManifestError(&'static str);

/// Largest count any list of a decoded manifest may claim.
const MAX_ITEMS: u64 = 1 << 16;

impl Manifest {
    /// Its payload bytes (the manifest entry's envelope verifies them).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.files.len() as u64).to_le_bytes());
        for (path, hash) in &self.files {
            bytes(&mut out, path.as_bytes());
            match hash {
                Some(h) => {
                    out.push(1);
                    out.extend_from_slice(h);
                }
                None => out.push(0),
            }
        }
        out.extend_from_slice(&(self.kernels.len() as u64).to_le_bytes());
        for k in &self.kernels {
            bytes(&mut out, &envelope::encode(&k.meta, &[]));
            match &k.libdevice {
                Some(h) => {
                    out.push(1);
                    out.extend_from_slice(h);
                }
                None => out.push(0),
            }
            out.extend_from_slice(&(k.sites.len() as u64).to_le_bytes());
            for site in &k.sites {
                bytes(&mut out, site.array.as_bytes());
                out.extend_from_slice(&site.ndim.to_le_bytes());
                match &site.location {
                    Some(l) => {
                        out.push(1);
                        bytes(&mut out, l.as_bytes());
                    }
                    None => out.push(0),
                }
            }
        }
        out.extend_from_slice(&(self.left_out.len() as u64).to_le_bytes());
        for (sig, why) in &self.left_out {
            strings(&mut out, [sig.as_bytes(), why.as_bytes()].into_iter());
        }
        strings(&mut out, self.warnings.iter());
        out
    }

    /// Decodes [`encode`](Self::encode)'s bytes; each kernel's envelope is verified.
    pub fn decode(bytes: &[u8]) -> Result<Manifest, ManifestError> {
        let mut r = Reader { bytes, at: 0 };
        let mut files = Vec::new();
        for _ in 0..r.count()? {
            let path = r.string()?;
            let hash = r.hash()?;
            files.push((path, hash));
        }
        let mut kernels = Vec::new();
        for _ in 0..r.count()? {
            let n = r.count_of(u64::MAX)?;
            let env = r.take(n)?;
            let (meta, payload) = envelope::decode(env, None).map_err(|_| ManifestError("a kernel's envelope does not verify"))?;
            if !payload.is_empty() || meta.interface.is_none() {
                return Err(ManifestError("a kernel without its interface"));
            }
            let libdevice = r.hash()?;
            let mut sites = Vec::new();
            for _ in 0..r.count()? {
                let array = r.string()?;
                let ndim = r.u32()?;
                let location = match r.take(1)?[0] {
                    0 => None,
                    1 => Some(r.string()?),
                    _ => return Err(ManifestError("a bad presence tag")),
                };
                sites.push(ManifestSite { array, ndim, location });
            }
            kernels.push(ManifestKernel { meta, libdevice, sites });
        }
        let mut left_out = Vec::new();
        for _ in 0..r.count()? {
            if r.count()? != 2 {
                return Err(ManifestError("a left-out kernel is not a pair"));
            }
            left_out.push((r.string()?, r.string()?));
        }
        let mut warnings = Vec::new();
        for _ in 0..r.count()? {
            warnings.push(r.string()?);
        }
        if r.at != bytes.len() {
            return Err(ManifestError("trailing bytes"));
        }
        Ok(Manifest { files, kernels, left_out, warnings })
    }
}

/// Reads a manifest's payload, every length checked against what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], ManifestError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len()).ok_or(ManifestError("truncated"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self) -> Result<u32, ManifestError> {
        let mut a = [0; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self) -> Result<u64, ManifestError> {
        let b = self.take(8)?;
        let mut a = [0; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A count, or a length in bytes: no more than `cap`, nor than the bytes left (every item
    /// takes at least one).
    fn count_of(&mut self, cap: u64) -> Result<usize, ManifestError> {
        let n = self.u64()?;
        if n > cap || n > (self.bytes.len() - self.at) as u64 {
            return Err(ManifestError("a count larger than the manifest"));
        }
        Ok(n as usize)
    }

    fn count(&mut self) -> Result<usize, ManifestError> {
        self.count_of(MAX_ITEMS)
    }

    fn string(&mut self) -> Result<String, ManifestError> {
        let n = self.count_of(u64::MAX)?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| ManifestError("a string that is not UTF-8"))
    }

    fn hash(&mut self) -> Result<Option<[u8; 32]>, ManifestError> {
        match self.take(1)?[0] {
            0 => Ok(None),
            1 => {
                let mut h = [0; 32];
                h.copy_from_slice(self.take(32)?);
                Ok(Some(h))
            }
            _ => Err(ManifestError("a bad presence tag")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::envelope::{BuiltFor, Interface, Param, ParamTy};
    use crate::cache::{ArtifactKind, Key};
    use crate::ir::Scalar;
    use crate::target::{Arch, Target};

    fn sample() -> Manifest {
        let iface = Interface {
            built_for: BuiltFor::Gpu(Arch::parse("sm_90").unwrap()),
            params: vec![Param { name: "a".into(), ty: ParamTy::Scalar(Scalar::F32), enum_def: None }],
            cooperative: false,
            static_shared: 0,
            slots: Vec::new(),
        };
        let meta = Meta::new(Key([7; 32]), "k", "(a: f32)", ArtifactKind::Ptx, "k", 3).with_interface(iface);
        Manifest {
            files: vec![("common.rs".into(), Some([1; 32])), ("common/mod.rs".into(), None)],
            kernels: vec![ManifestKernel {
                meta,
                libdevice: Some([2; 32]),
                sites: vec![
                    ManifestSite { array: "parameter `a`".into(), ndim: 1, location: Some("k.rs:3:5".into()) },
                    ManifestSite { array: "shared array".into(), ndim: 2, location: None },
                ],
            }],
            left_out: vec![("t<const N: usize>()".into(), "a const parameter".into())],
            warnings: vec!["k.rs:1:2: unused".into()],
        }
    }

    /// A manifest decodes to what was encoded, and every cut or flipped byte of it is refused
    /// or decodes to something else, never panics.
    #[test]
    fn manifests_round_trip_and_refuse_damage() {
        let m = sample();
        let bytes = m.encode();
        assert_eq!(Manifest::decode(&bytes).unwrap(), m);
        for cut in 0..bytes.len() {
            assert!(Manifest::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            if let Ok(d) = Manifest::decode(&b) {
                assert_ne!(d, m, "flip at {i}");
            }
        }
    }

    /// Each raw input gives another manifest key.
    #[test]
    fn manifest_keys_cover_every_input() {
        let tc = Toolchain { kache: "k".into(), llvm: "19".into() };
        let tc2 = Toolchain { llvm: "20".into(), ..tc.clone() };
        let sm90 = Options::new(Target::Nvptx(Arch::parse("sm_90").unwrap()));
        let sm80 = Options::new(Target::Nvptx(Arch::parse("sm_80").unwrap()));
        let nofma = Options { fmad: false, ..sm90.clone() };
        let global = |name: &str, ty, v| vec![(name.to_string(), CaptureValue::Scalar(crate::ir::ScalarValue::Int(ty, v)))];
        let g1 = global("N", Scalar::U32, 1);
        let g2 = global("N", Scalar::U32, 2);
        let g3 = global("M", Scalar::U32, 1);
        let g4 = global("N", Scalar::I32, 1);
        let one = vec!["k".to_string()];
        let key = |name: &str,
                   root: &[u8],
                   globals: &[(String, CaptureValue)],
                   kernels: &[String],
                   options: &Options,
                   tc: &Toolchain,
                   salt: &str| {
            let root_digest = blake3::hash(root).into();
            derive_manifest(&ManifestInputs { root_name: name, root_digest: &root_digest, globals, kernels, options, toolchain: tc, salt })
                .key
        };
        let base = key("k.rs", b"fn", &g1, &one, &sm90, &tc, "");
        assert_eq!(base, key("k.rs", b"fn", &g1, &one, &sm90, &tc, ""));
        for other in [
            key("j.rs", b"fn", &g1, &one, &sm90, &tc, ""),
            key("k.rs", b"fn ", &g1, &one, &sm90, &tc, ""),
            key("k.rs", b"fn", &g2, &one, &sm90, &tc, ""),
            key("k.rs", b"fn", &g3, &one, &sm90, &tc, ""),
            key("k.rs", b"fn", &g4, &one, &sm90, &tc, ""),
            key("k.rs", b"fn", &[], &one, &sm90, &tc, ""),
            key("k.rs", b"fn", &g1, &[], &sm90, &tc, ""),
            key("k.rs", b"fn", &g1, &one, &sm80, &tc, ""),
            key("k.rs", b"fn", &g1, &one, &nofma, &tc, ""),
            key("k.rs", b"fn", &g1, &one, &sm90, &tc2, ""),
            key("k.rs", b"fn", &g1, &one, &sm90, &tc, "s"),
        ] {
            assert_ne!(base, other);
        }
    }
}
