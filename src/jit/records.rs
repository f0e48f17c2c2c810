//! Front-end records (docs/cache.md, "Direct mode"): what lets [`Jit::load_file`] and the other
//! loads, and [`Module::kernel`], skip the front end for inputs it has already seen, as a
//! manifest lets a [`FileRequest`](super::FileRequest) skip it.
//!
//! - A **parsed-source record**, keyed by the root's name and bytes (and whether module files
//!   are looked for), says that those bytes parse, and which module files the parse read (each
//!   by the blake3 of its bytes, or absent). A load that finds one, and finds every module file
//!   as it was, parses nothing: the module parses on first need, from the very bytes it hashed.
//! - A **checked-kernel record**, keyed by the source's identity (root and module files, by
//!   content), the globals bound (names and values, as the `captures` key component encodes
//!   them) and the kernel's name as asked, holds what checking found: the checked program,
//!   its bounds checks as fault reports name them, and its warnings, rendered (for a generic
//!   kernel asked for without arguments, its signature and checked definition). `kernel` then
//!   checks nothing, and the kernel is the one checking makes, so its compile derives the same
//!   key and gets the same entry.
//! - A **generic-instance record**, keyed by the same and the types of a launch's arguments,
//!   names the instance those types pick, so a launch of a generic kernel finds its instance
//!   without the source.
//!
//! All three are self-verifying envelopes in the manifests' folder (local store only; `clear` and
//! `gc` remove them), keyed with the compiler's build, so a record of another build never
//! serves. Anything missing, damaged or different is a miss: the front end runs and the record
//! is written again. No record is kept for a module that is not persisted or that binds a device
//! array.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::module::Module;
use super::{Jit, Source};
use crate::cache::{ArtifactKind, Entry, Key, Meta, derive_record, encode_globals, encode_root};
use crate::capture::CaptureValue;
use crate::ir::Program;
use crate::lang::{GenericKernelSig, LaunchArg, SourceFile, SourceLoader};
use crate::runtime::fault::FaultSites;

/// Stack a record's encoding or decoding may use: the checked program nests as deep as its
/// expressions (at most `MAX_EXPR_DEPTH`), one serde call per level.
const RED_ZONE: usize = 1 << 20;
const SEGMENT: usize = 16 << 20;

/// What a parsed-source record holds.
#[derive(Serialize, Deserialize)]
struct ParsedSource {
    /// Every module file the parse looked for, in order: its path relative to the root's folder
    /// and the blake3 of its bytes, or `None` where there was none.
    files: Vec<(String, Option<[u8; 32]>)>,
}

/// What a checked-kernel record holds (as written: borrowed).
#[derive(Serialize)]
enum CheckedRef<'a> {
    Kernel { canonical: &'a str, program: &'a Program, sites: &'a FaultSites, warnings: &'a [String] },
    Generic { sig: &'a GenericKernelSig, program: &'a Program },
}

/// What a checked-kernel record holds (as read), variants and fields in [`CheckedRef`]'s order.
#[derive(Deserialize)]
pub(super) enum Checked {
    /// A kernel (or an instance of a generic kernel).
    Kernel {
        /// Its name as checking resolves it.
        canonical: String,
        /// The checked program.
        program: Program,
        /// Its bounds checks, as fault reports name them.
        sites: FaultSites,
        /// What the checker warned about, rendered (`file:line:col: message`).
        warnings: Vec<String>,
    },
    /// A generic kernel asked for without arguments: its signature and checked definition.
    Generic {
        /// Generic parameters and parameters.
        sig: GenericKernelSig,
        /// The definition as checked.
        program: Program,
    },
}

fn parsed_key(jit: &Jit, name: &str, bytes: &[u8], with_modules: bool) -> Key {
    let root = encode_root(name, &jit.inner.digests.digest(bytes));
    let config = jit.config();
    derive_record("parsed source", &config.toolchain, &config.salt, &[("root", &root), ("modules", &[with_modules as u8])]).key
}

/// A source recorded as parsing, not parsed: `None` unless a record of these bytes says they
/// parse and every module file it names reads as it did (`loader`; `None`: a single file).
pub(super) fn recorded_source<'l>(jit: &Jit, name: &str, bytes: &[u8], loader: Option<&mut (dyn SourceLoader + 'l)>) -> Option<Source> {
    jit.cache().local()?;
    let text = std::str::from_utf8(bytes).ok()?;
    let with_modules = loader.is_some();
    let key = parsed_key(jit, name, bytes, with_modules);
    let entry = jit.cache().lookup_manifest(&key)?;
    let record: ParsedSource = postcard::from_bytes(&entry.payload).ok()?;
    let mut modules = Vec::with_capacity(record.files.len());
    match loader {
        None if !record.files.is_empty() => return None,
        None => {}
        Some(loader) => {
            for (path, digest) in record.files {
                match (loader.load(&path), digest) {
                    (Ok(Some(b)), Some(d)) if *blake3::hash(&b).as_bytes() == d => modules.push((path, Some(String::from_utf8(b).ok()?))),
                    (Ok(None), None) => modules.push((path, None)),
                    _ => return None,
                }
            }
        }
    }
    crate::logging::debug!("{name}: parsed before (record {key}), so parsed only if needed");
    Some(Source {
        file: SourceFile::new(name, text.strip_prefix('\u{feff}').unwrap_or(text)),
        ast: OnceLock::new(),
        modules,
        root: bytes.to_vec(),
        with_modules,
    })
}

/// Records that `bytes` parse, reading `modules` (with a local store only).
pub(super) fn record_source(jit: &Jit, name: &str, bytes: &[u8], with_modules: bool, modules: &[(String, Option<String>)]) {
    if jit.cache().local().is_none() {
        return;
    }
    let files = modules.iter().map(|(p, t)| (p.clone(), t.as_ref().map(|t| *blake3::hash(t.as_bytes()).as_bytes()))).collect();
    let Ok(payload) = postcard::to_allocvec(&ParsedSource { files }) else { return };
    let key = parsed_key(jit, name, bytes, with_modules);
    let meta = Meta::new(key, name, "(parsed-source record)", ArtifactKind::Manifest, "", 0);
    jit.cache().store_record(Entry { meta, payload: payload.into() });
}

/// Whether kernels of `module` may have checked-kernel and generic-instance records: records
/// are on for it (not direct mode's full path), it is persisted, binds no device array, and
/// the JIT has a local store.
pub(super) fn eligible(module: &Module) -> bool {
    module.records
        && module.persist
        && module.jit.cache().local().is_some()
        && module.globals.iter().all(|(_, v)| !matches!(v, CaptureValue::Device(_)))
}

fn checked_key(module: &Module, asked: &str) -> Key {
    let config = module.jit.config();
    derive_record(
        "checked kernel",
        &config.toolchain,
        &config.salt,
        &[("source", &module.source_id), ("globals", &encode_globals(&module.globals)), ("kernel", asked.as_bytes())],
    )
    .key
}

/// What checking kernel `asked` of `module` found, if a record of the same inputs holds it.
pub(super) fn recorded_kernel(module: &Module, asked: &str) -> Option<Checked> {
    let key = checked_key(module, asked);
    let entry = module.jit.cache().lookup_manifest(&key)?;
    match crate::stack::ensure(RED_ZONE, SEGMENT, || postcard::from_bytes::<Checked>(&entry.payload)) {
        Ok(c) => Some(c),
        Err(e) => {
            crate::logging::debug!("checked-kernel record {key} did not decode ({e}): checking again");
            None
        }
    }
}

/// Records what checking kernel `asked` of `module` found.
pub(super) fn record_kernel(module: &Module, asked: &str, canonical: &str, program: &Program, sites: &FaultSites, warnings: &[String]) {
    store_checked(module, asked, canonical, &CheckedRef::Kernel { canonical, program, sites, warnings });
}

/// Records what checking generic kernel `asked` of `module` (asked for without arguments) found.
pub(super) fn record_generic(module: &Module, asked: &str, sig: &GenericKernelSig, program: &Program) {
    store_checked(module, asked, &sig.name, &CheckedRef::Generic { sig, program });
}

fn store_checked(module: &Module, asked: &str, name: &str, record: &CheckedRef<'_>) {
    let key = checked_key(module, asked);
    if module.jit.cache().lookup_manifest(&key).is_some() {
        return;
    }
    let Ok(payload) = crate::stack::ensure(RED_ZONE, SEGMENT, || postcard::to_allocvec(record)) else { return };
    let meta = Meta::new(key, name, "(checked-kernel record)", ArtifactKind::Manifest, "", 0);
    module.jit.cache().store_record(Entry { meta, payload: payload.into() });
}

/// The key of the instance of generic kernel `name` that a launch with arguments of `kinds`
/// runs: the source's identity, the globals (their types decide nothing, but they are part of
/// what the source is checked with), the kernel and the arguments' types.
fn instance_key(module: &Module, name: &str, kinds: &[LaunchArg]) -> Key {
    let mut args = Vec::with_capacity(kinds.len() * 3);
    for k in kinds {
        match k {
            LaunchArg::Scalar(s) => args.extend_from_slice(&[0, s.tag(), 0]),
            LaunchArg::Array { elem, ndim } => args.extend_from_slice(&[1, elem.tag(), *ndim]),
            LaunchArg::TensorMap { elem } => args.extend_from_slice(&[2, elem.tag(), 0]),
        }
    }
    let config = module.jit.config();
    derive_record(
        "generic instance",
        &config.toolchain,
        &config.salt,
        &[("source", &module.source_id), ("globals", &encode_globals(&module.globals)), ("kernel", name.as_bytes()), ("arguments", &args)],
    )
    .key
}

/// The instance of generic kernel `name` that arguments of `kinds` pick, if a record holds it.
pub(super) fn recorded_instance(module: &Module, name: &str, kinds: &[LaunchArg]) -> Option<String> {
    let entry = module.jit.cache().lookup_manifest(&instance_key(module, name, kinds))?;
    postcard::from_bytes::<String>(&entry.payload).ok()
}

/// Records the instance of generic kernel `name` that arguments of `kinds` pick.
pub(super) fn record_instance(module: &Module, name: &str, kinds: &[LaunchArg], canonical: &str) {
    let key = instance_key(module, name, kinds);
    if module.jit.cache().lookup_manifest(&key).is_some() {
        return;
    }
    let Ok(payload) = postcard::to_allocvec(canonical) else { return };
    let meta = Meta::new(key, canonical, "(generic-instance record)", ArtifactKind::Manifest, "", 0);
    module.jit.cache().store_record(Entry { meta, payload: payload.into() });
}
