//! The entry envelope: one place for the on-disk format of a cache entry and of a serialised
//! kernel (an entry that also carries the kernel's [`Interface`]). Every read verifies all of
//! it; anything that does not verify is a miss.
//!
//! ```text
//! magic "KACHE\0E\x01"  u16 version  [32] key echo
//! str producer  str llvm  u64 created (unix s)  u32 compile_ms
//! str kernel  str signature  u8 kind  str entry symbol
//! u8 interface: 0 (a cache entry), or 1 (no capture slots) or 2 (capture slots) and then
//!   u8 built for: 1 GPU (u32 sm, bool accelerated) or 2 host CPU (str name and features)
//!   bool cooperative  u64 static shared bytes
//!   u32 parameter count, each: str name and
//!     1 scalar (u8 scalar tag) or 2 array (u8 element tag, u8 ndim, bool writable, u8 layout tag)
//!   with 2 only: u32 slot count, each: str symbol  str name  str origin
//!     u8 element tag  u8 ndim  bool writable  u8 layout tag  ndim x (u64 extent, i64 stride)
//! u64 payload length  [32] payload blake3  [32] blake3 of everything before it  payload
//! ```
//! (`str` is a u32 length and UTF-8 bytes; `bool` a byte 0 or 1; integers little-endian; the
//! tags are [`Scalar::tag`] and [`Layout::tag`].)

use super::key::{Key, build_id};
use crate::ir::{ArrayTy, Elem, EnumDef, Layout, Scalar};
use crate::target::Arch;

/// Leading bytes of every entry.
pub const MAGIC: [u8; 8] = *b"KACHE\0E\x01";
/// Format version of the envelope. Version 2 added the [`Interface`]; an entry of any other
/// version does not verify, so entries written before are misses, recompiled and overwritten.
pub const ENVELOPE_VERSION: u16 = 2;
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
    /// Direct mode's manifest ([`Manifest`](super::key::Manifest)): what a request's full
    /// compile found, from which a lookup reaches the kernels' entries without parsing.
    Manifest,
    /// A tuning result ([`TuningRecord`](super::tuning::TuningRecord)): the configuration
    /// chosen for a `#[tune]` kernel, a tuning key's bucket and a device, with what each
    /// candidate measured. No code.
    Tuning,
}

impl ArtifactKind {
    fn tag(self) -> u8 {
        match self {
            ArtifactKind::Ptx => 1,
            ArtifactKind::HostBitcode => 2,
            ArtifactKind::Cubin => 3,
            ArtifactKind::Manifest => 4,
            ArtifactKind::Tuning => 5,
        }
    }
    fn from_tag(t: u8) -> Option<ArtifactKind> {
        Some(match t {
            1 => ArtifactKind::Ptx,
            2 => ArtifactKind::HostBitcode,
            3 => ArtifactKind::Cubin,
            4 => ArtifactKind::Manifest,
            5 => ArtifactKind::Tuning,
            _ => return None,
        })
    }
}

/// How to call a kernel without its source: what a serialised kernel carries beyond a cache
/// entry. Cache entries leave it out: the kernel they are looked up for knows all of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    /// What the payload's code was built for.
    pub built_for: BuiltFor,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// Whether the kernel synchronises the threads of a block (the host backend then runs a
    /// block's threads cooperatively).
    pub cooperative: bool,
    /// Bytes of static shared memory per block.
    pub static_shared: u64,
    /// The capture slots of a kernel compiled with relocatable captures: what array each one
    /// takes; never an address.
    pub slots: Vec<SlotDecl>,
}

/// A capture slot of an [`Interface`]: a device array whose address the code takes as a hidden
/// parameter (CUDA: the slots in order, after the fault record and the token) or reads from the
/// module variable `symbol` (the host backend), which must be bound to an array of exactly this
/// type and shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotDecl {
    /// The host module's variable ([`capture_slot_symbol`](crate::abi::capture_slot_symbol)).
    pub symbol: String,
    /// The name the source uses (a global's, or a factory parameter's).
    pub name: String,
    /// Where it comes from, for messages (`global 'PRICES'`).
    pub origin: String,
    /// Element type, dimensions and whether the code writes it.
    pub ty: ArrayTy,
    /// The layout of `strides`.
    pub layout: Layout,
    /// Extents, compiled in.
    pub shape: Vec<usize>,
    /// Strides in elements, compiled in.
    pub strides: Vec<isize>,
}

/// The machine a payload's code was built for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuiltFor {
    /// A GPU architecture (PTX or a cubin).
    Gpu(Arch),
    /// A host CPU, by name and features (as `codegen::host_cpu()` gives them): host code is
    /// optimised for the CPU it was built on and may use instructions another CPU lacks.
    HostCpu(String),
}

/// A kernel parameter of an [`Interface`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its type (an enum's is its discriminant's scalar type).
    pub ty: ParamTy,
    /// For an enum parameter, the enum: its name and variants, to check arguments at launch.
    pub enum_def: Option<EnumDef>,
}

/// A parameter's type; for an array, also the layout the code was specialised for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamTy {
    /// A scalar.
    Scalar(Scalar),
    /// An array reference.
    Array {
        /// Element type, dimensions and mutability.
        ty: ArrayTy,
        /// The layout the code expects.
        layout: Layout,
    },
}

/// Largest parameter count a decoded [`Interface`] may claim.
const MAX_PARAMS: u32 = 4096;

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
    /// The kernel's interface: present in serialised kernels, absent in cache entries (which
    /// is why listings of the store, the one use of this serialisation, leave it out).
    #[serde(skip)]
    pub interface: Option<Interface>,
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
            interface: None,
        }
    }

    /// The same metadata carrying `interface`: a serialised kernel's.
    pub fn with_interface(self, interface: Interface) -> Meta {
        Meta { interface: Some(interface), ..self }
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
    match &meta.interface {
        None => out.push(0),
        Some(i) => {
            out.push(if i.slots.is_empty() { 1 } else { 2 });
            put_interface(&mut out, i);
        }
    }
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

fn put_interface(out: &mut Vec<u8>, i: &Interface) {
    match &i.built_for {
        BuiltFor::Gpu(a) => {
            out.push(1);
            out.extend_from_slice(&a.sm.to_le_bytes());
            out.push(a.accelerated as u8);
        }
        BuiltFor::HostCpu(cpu) => {
            out.push(2);
            put_str(out, cpu);
        }
    }
    out.push(i.cooperative as u8);
    out.extend_from_slice(&i.static_shared.to_le_bytes());
    out.extend_from_slice(&(i.params.len() as u32).to_le_bytes());
    for p in &i.params {
        put_str(out, &p.name);
        match (p.ty, &p.enum_def) {
            (ParamTy::Scalar(_), Some(e)) => {
                out.extend_from_slice(&[3, e.repr.tag()]);
                put_str(out, &e.name);
                out.extend_from_slice(&(e.variants.len() as u32).to_le_bytes());
                for (n, d) in &e.variants {
                    put_str(out, n);
                    out.extend_from_slice(&d.to_le_bytes());
                }
            }
            (ParamTy::Scalar(s), None) => out.extend_from_slice(&[1, s.tag()]),
            (ParamTy::Array { ty, layout }, _) => {
                // Serialised kernels take arrays of scalars (`CompiledKernel::serialize` refuses
                // struct elements); a tag no scalar has would not decode.
                let elem = ty.elem.scalar().map(Scalar::tag).unwrap_or(u8::MAX);
                out.extend_from_slice(&[2, elem, ty.ndim, ty.writable as u8, layout.tag()])
            }
        }
    }
    if i.slots.is_empty() {
        return;
    }
    out.extend_from_slice(&(i.slots.len() as u32).to_le_bytes());
    for s in &i.slots {
        for t in [&s.symbol, &s.name, &s.origin] {
            put_str(out, t);
        }
        // Captured arrays hold scalars (a host value has no struct elements).
        let elem = s.ty.elem.scalar().map(Scalar::tag).unwrap_or(u8::MAX);
        out.extend_from_slice(&[elem, s.ty.ndim, s.ty.writable as u8, s.layout.tag()]);
        for (d, st) in s.shape.iter().zip(&s.strides) {
            out.extend_from_slice(&(*d as u64).to_le_bytes());
            out.extend_from_slice(&(*st as i64).to_le_bytes());
        }
    }
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
    fn bool(&mut self, what: &'static str) -> Result<bool, EnvelopeError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(EnvelopeError::Malformed(what)),
        }
    }
    fn str(&mut self, what: &'static str) -> Result<String, EnvelopeError> {
        let n = self.u32()? as usize;
        if n > 1 << 20 {
            return Err(EnvelopeError::Malformed(what));
        }
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| EnvelopeError::Malformed(what))
    }
    fn interface(&mut self) -> Result<Option<Interface>, EnvelopeError> {
        let with_slots = match self.u8()? {
            0 => return Ok(None),
            1 => false,
            2 => true,
            _ => return Err(EnvelopeError::Malformed("interface")),
        };
        let built_for = match self.u8()? {
            1 => BuiltFor::Gpu(Arch { sm: self.u32()?, accelerated: self.bool("arch")? }),
            2 => BuiltFor::HostCpu(self.str("host CPU")?),
            _ => return Err(EnvelopeError::Malformed("built for")),
        };
        let cooperative = self.bool("cooperative")?;
        let static_shared = self.u64()?;
        let n = self.u32()?;
        if n > MAX_PARAMS {
            return Err(EnvelopeError::Malformed("parameter count"));
        }
        let mut params = Vec::new();
        for _ in 0..n {
            let name = self.str("parameter name")?;
            let scalar = |t: u8| Scalar::from_tag(t).ok_or(EnvelopeError::Malformed("scalar type"));
            let mut enum_def = None;
            let ty = match self.u8()? {
                1 => ParamTy::Scalar(scalar(self.u8()?)?),
                3 => {
                    let repr = scalar(self.u8()?)?;
                    let ename = self.str("enum name")?;
                    let count = self.u32()?;
                    if count > 1 << 16 || !repr.is_int() {
                        return Err(EnvelopeError::Malformed("enum parameter"));
                    }
                    let mut variants = Vec::new();
                    for _ in 0..count {
                        let vname = self.str("variant name")?;
                        let d = i128::from_le_bytes(self.take(16)?.try_into().map_err(|_| EnvelopeError::Truncated)?);
                        variants.push((vname, d));
                    }
                    enum_def = Some(EnumDef { name: ename, repr, variants });
                    ParamTy::Scalar(repr)
                }
                2 => {
                    let elem = scalar(self.u8()?)?;
                    let ndim = self.u8()?;
                    if ndim > 4 {
                        return Err(EnvelopeError::Malformed("array dimensions"));
                    }
                    let writable = self.bool("array mutability")?;
                    let layout = Layout::from_tag(self.u8()?).ok_or(EnvelopeError::Malformed("layout"))?;
                    ParamTy::Array { ty: ArrayTy { elem: Elem::Scalar(elem), ndim, writable }, layout }
                }
                _ => return Err(EnvelopeError::Malformed("parameter type")),
            };
            params.push(Param { name, ty, enum_def });
        }
        let slots = if with_slots { self.slots()? } else { Vec::new() };
        Ok(Some(Interface { built_for, params, cooperative, static_shared, slots }))
    }

    fn slots(&mut self) -> Result<Vec<SlotDecl>, EnvelopeError> {
        let n = self.u32()?;
        if n == 0 || n > MAX_PARAMS {
            return Err(EnvelopeError::Malformed("slot count"));
        }
        let mut slots = Vec::new();
        for _ in 0..n {
            let symbol = self.str("slot symbol")?;
            let name = self.str("slot name")?;
            let origin = self.str("slot origin")?;
            let elem = Scalar::from_tag(self.u8()?).ok_or(EnvelopeError::Malformed("slot element type"))?;
            let ndim = self.u8()?;
            if ndim > 4 || !symbol.starts_with(crate::abi::CAPTURE_SLOT_PREFIX) {
                return Err(EnvelopeError::Malformed("slot"));
            }
            let writable = self.bool("slot mutability")?;
            let layout = Layout::from_tag(self.u8()?).ok_or(EnvelopeError::Malformed("slot layout"))?;
            let (mut shape, mut strides) = (Vec::new(), Vec::new());
            for _ in 0..ndim {
                shape.push(usize::try_from(self.u64()?).map_err(|_| EnvelopeError::Malformed("slot extent"))?);
                strides.push(self.u64()? as i64 as isize);
            }
            slots.push(SlotDecl { symbol, name, origin, ty: ArrayTy { elem: Elem::Scalar(elem), ndim, writable }, layout, shape, strides });
        }
        Ok(slots)
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
    if expected.is_some_and(|e| *e != key) {
        return Err(EnvelopeError::KeyMismatch);
    }
    let producer = r.str("producer")?;
    let llvm = r.str("llvm")?;
    let created = r.u64()?;
    let compile_ms = r.u32()?;
    let kernel = r.str("kernel")?;
    let signature = r.str("signature")?;
    let kind = ArtifactKind::from_tag(r.u8()?).ok_or(EnvelopeError::Malformed("kind"))?;
    let entry = r.str("entry")?;
    let interface = r.interface()?;
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
    Ok((Meta { key, producer, llvm, created, compile_ms, kernel, signature, kind, entry, interface }, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> (Meta, Vec<u8>) {
        let meta = Meta::new(Key([7; 32]), "saxpy", "(a: f32, x: &[f32], y: &mut [f32])", ArtifactKind::Ptx, "saxpy", 12);
        (meta, b"//\n.version 6.3\n".to_vec())
    }

    /// A serialised kernel's envelope: the sample with its interface.
    fn sample_kernel(built_for: BuiltFor) -> (Meta, Vec<u8>) {
        let (meta, payload) = sample();
        let array = |writable, layout| ParamTy::Array { ty: ArrayTy { elem: Elem::Scalar(Scalar::F32), ndim: 1, writable }, layout };
        let interface = Interface {
            built_for,
            params: vec![
                Param { name: "a".into(), ty: ParamTy::Scalar(Scalar::F32), enum_def: None },
                Param {
                    name: "mode".into(),
                    ty: ParamTy::Scalar(Scalar::U8),
                    enum_def: Some(EnumDef { name: "Mode".into(), repr: Scalar::U8, variants: vec![("Add".into(), 0), ("Mul".into(), 7)] }),
                },
                Param { name: "x".into(), ty: array(false, Layout::C), enum_def: None },
                Param { name: "y".into(), ty: array(true, Layout::F), enum_def: None },
            ],
            cooperative: true,
            static_shared: 4096,
            slots: vec![SlotDecl {
                symbol: crate::abi::capture_slot_symbol(2),
                name: "PRICES".into(),
                origin: "global 'PRICES'".into(),
                ty: ArrayTy { elem: Scalar::F64.into(), ndim: 2, writable: true },
                layout: Layout::F,
                shape: vec![3, 4],
                strides: vec![1, 3],
            }],
        };
        (meta.with_interface(interface), payload)
    }

    fn samples() -> Vec<(Meta, Vec<u8>)> {
        vec![
            sample(),
            sample_kernel(BuiltFor::Gpu(Arch { sm: 90, accelerated: true })),
            sample_kernel(BuiltFor::HostCpu("znver3 +avx2,+fma".into())),
        ]
    }

    #[test]
    fn round_trip() {
        for (m, p) in samples() {
            let b = encode(&m, &p);
            let (m2, p2) = decode(&b, Some(&m.key)).unwrap();
            assert_eq!(m, m2);
            assert_eq!(p, p2);
            assert_eq!(encode(&m2, p2), b);
        }
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        for (m, p) in samples() {
            let b = encode(&m, &p);
            for i in 0..b.len() * 8 {
                let mut c = b.clone();
                c[i / 8] ^= 1 << (i % 8);
                assert!(decode(&c, Some(&m.key)).is_err(), "flip of bit {i} accepted");
            }
        }
    }

    #[test]
    fn every_truncation_is_rejected() {
        for (m, p) in samples() {
            let b = encode(&m, &p);
            for n in 0..b.len() {
                assert!(decode(&b[..n], Some(&m.key)).is_err(), "truncated to {n} bytes accepted");
            }
        }
    }

    #[test]
    fn wrong_key_and_version_are_rejected() {
        let (m, p) = sample();
        let b = encode(&m, &p);
        assert_eq!(decode(&b, Some(&Key([8; 32]))).unwrap_err(), EnvelopeError::KeyMismatch);
        for v in [1, 3] {
            let mut c = b.clone();
            c[8] = v;
            assert_eq!(decode(&c, None).unwrap_err(), EnvelopeError::Version(v as u16));
        }
    }

    /// An entry exactly as version 1 wrote it (no interface byte) is refused for its version,
    /// even with a correct checksum: entries written before version 2 are never misread.
    #[test]
    fn version_1_entries_are_refused() {
        let (m, p) = sample();
        let v2 = encode(&m, &p);
        let header_end = v2.len() - p.len() - 32;
        let interface_byte = header_end - 32 - 8 - 1;
        assert_eq!(v2[interface_byte], 0, "a cache entry carries no interface");
        let mut v1 = [&v2[..interface_byte], &v2[interface_byte + 1..header_end]].concat();
        v1[8..10].copy_from_slice(&1u16.to_le_bytes());
        let h = *blake3::hash(&v1).as_bytes();
        v1.extend_from_slice(&h);
        v1.extend_from_slice(&p);
        assert_eq!(decode(&v1, Some(&m.key)).unwrap_err(), EnvelopeError::Version(1));
    }

    #[test]
    fn malformed_interfaces_are_rejected_even_with_a_good_checksum() {
        let (mut m, p) = sample_kernel(BuiltFor::Gpu(Arch { sm: 90, accelerated: false }));
        let with_slots = encode(&m, &p);
        if let Some(i) = &mut m.interface {
            i.slots.clear();
        }
        malformed_fields_are_refused(
            &encode(&m, &p),
            &p,
            &[
                // The last parameter is `y`: [2, elem, ndim, writable, layout].
                (1, 9, "layout"),
                (2, 2, "array mutability"),
                (3, 5, "array dimensions"),
                (4, 200, "scalar type"),
                // (3 is an enum parameter's tag.)
                (5, 4, "parameter type"),
            ],
        );
        // The last slot: [elem, ndim, writable, layout] and two (extent, stride) pairs.
        malformed_fields_are_refused(
            &with_slots,
            &p,
            &[(33, 9, "slot layout"), (34, 2, "slot mutability"), (35, 5, "slot"), (36, 200, "slot element type")],
        );
    }

    /// Each (offset, value, field): the byte at `offset` (counted back from the payload length
    /// field) rewritten to `value`, and the checksum fixed, is refused for `field`.
    fn malformed_fields_are_refused(b: &[u8], p: &[u8], cases: &[(usize, u8, &'static str)]) {
        let header_end = b.len() - p.len() - 32;
        // Rewrites the byte at `at` (counted back from the payload length field) and fixes
        // the checksum, so only the field's meaning can refuse it.
        let rewrite = |at: usize, v: u8| {
            let mut c = b[..header_end].to_vec();
            let i = header_end - 8 - 32 - at;
            c[i] = v;
            let h = *blake3::hash(&c).as_bytes();
            c.extend_from_slice(&h);
            c.extend_from_slice(p);
            decode(&c, None).map(|_| ())
        };
        for (at, v, field) in cases {
            assert_eq!(rewrite(*at, *v).unwrap_err(), EnvelopeError::Malformed(field), "byte {at} set to {v}");
        }
    }
}
