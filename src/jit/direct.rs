//! Direct mode (docs/cache.md#direct-mode): a request for kernels of a source file is looked up
//! by a manifest keyed by its raw inputs (the root file's bytes, the globals, the kernels asked
//! for, the options, the toolchain, the salt), which names every module file read (by content
//! hash) and each kernel's semantic key and interface; a hit reads and hashes files, and never
//! parses or checks. On a miss the full path (parse, check, derive, compile or fetch) serves the
//! request and records the manifest.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use super::batch::CompileRequest;
use super::compiled::{CompiledKernel, Origin, artifact_kind};
use super::kernel::{Kernel, signature_text};
use super::module::{KernelsToCompile, Module};
use super::{FileLoader, Jit, read_source, source_id, source_problem};
use crate::cache::{
    ArtifactKind, Counter, Derivation, Entry, Key, Lookup, Manifest, ManifestInputs, ManifestKernel, ManifestSite, Meta, derive_manifest,
    encode_globals,
};
use crate::capture::{CaptureValue, IntoCapture};
use crate::codegen::Artifact;
use crate::error::{Error, Result};
use crate::ir::Layout;
use crate::lang::SourceLoader;
use crate::runtime::fault::{FaultSites, SiteInfo};
use crate::target::{Options, Specialization, Target};

/// What to compile from a source file: kernels (every one, by default), for a target, with
/// globals bound, bounds-checked or not. Every array parameter is C-contiguous (as
/// [`Kernel::compile_for`]).
#[derive(Clone, Debug)]
pub struct FileRequest {
    /// Kernels and instances (`axpy::<f32>`), as [`Module::kernel`] names them; empty: every
    /// kernel the file lists ([`Module::kernels_to_compile`]).
    pub kernels: Vec<String>,
    /// What to compile for.
    pub target: Target,
    /// Globals bound, in order, as [`Module::with_global`] binds them.
    pub globals: Vec<(String, CaptureValue)>,
    /// Bounds-checked code (the default: what safe launches run), or code without bounds
    /// checks ([`Kernel::compile_unchecked`]: only the `unsafe`
    /// [`CompiledKernel::launch_unchecked`] runs it). Part of the manifest's key, so neither
    /// ever serves the other.
    pub checked: bool,
}

impl FileRequest {
    /// The code generation options of this request for `jit`: its configuration's for the
    /// target, bounds-checked as asked.
    fn options(&self, jit: &Jit) -> Options {
        Options { checked: self.checked, ..jit.config().options(self.target) }
    }

    /// Every kernel of the file, for `target`, bounds-checked, no globals.
    pub fn new(target: Target) -> FileRequest {
        FileRequest { kernels: Vec::new(), target, globals: Vec::new(), checked: true }
    }

    /// The same request for code without bounds checks.
    pub fn unchecked(mut self) -> FileRequest {
        self.checked = false;
        self
    }

    /// The same request with kernel `name` asked for.
    pub fn kernel(mut self, name: &str) -> FileRequest {
        self.kernels.push(name.to_string());
        self
    }

    /// The same request with global `name` bound to `value` (replacing an earlier binding).
    pub fn global(mut self, name: &str, value: impl IntoCapture) -> Result<FileRequest> {
        let value = value.into_capture().map_err(|e| Error::Binding { name: name.to_string(), problem: e.to_string() })?;
        self.globals.retain(|(n, _)| n != name);
        self.globals.push((name.to_string(), value));
        Ok(self)
    }
}

/// Which path served a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// A manifest gave the kernels' keys: nothing was parsed or checked.
    Direct,
    /// Parsed, checked, keyed and compiled (or fetched), then the manifest recorded.
    Full,
}

/// The kernels a [`FileRequest`] asked for, compiled.
#[derive(Clone, Debug)]
pub struct CompiledFile {
    /// Each kernel, in the order asked (or of the file).
    pub kernels: Vec<Arc<CompiledKernel>>,
    /// Generic kernels an every-kernel request left out: their signature, and why.
    pub left_out: Vec<(String, String)>,
    /// Which path served it.
    pub served: Served,
}

/// The answer of a direct lookup.
pub enum Direct {
    /// Served without parsing.
    Hit(CompiledFile),
    /// Not served: [`DirectMiss::compile`] runs the full path (and records the manifest).
    Miss(DirectMiss),
}

/// What direct mode remembers in a process: a manifest and the kernels it gave, held weakly
/// (a compiled kernel holds its JIT, which holds this), so that they are served again while the
/// program holds them, and rebuilt from the memory tier's entries after.
pub(super) struct Remembered {
    manifest: Manifest,
    kernels: Vec<Weak<CompiledKernel>>,
}

/// The manifests a JIT has served or recorded, by manifest key.
pub(super) type DirectMemo = Mutex<HashMap<Key, Arc<Remembered>>>;

/// A request direct mode did not serve, with the bytes its key was derived from: the full path
/// parses exactly those.
pub struct DirectMiss {
    jit: Jit,
    name: String,
    bytes: Vec<u8>,
    dir: Option<PathBuf>,
    request: FileRequest,
    manifest: Option<Key>,
    why: String,
}

/// What `kache explain` says of direct mode for a request.
#[derive(Clone, Debug)]
pub struct DirectExplanation {
    /// The manifest's key and its components (`None` where direct mode cannot serve the
    /// request at all: a device array is bound).
    pub manifest: Option<Derivation>,
    /// Which path would serve it now.
    pub served: Served,
    /// Why, in words.
    pub why: String,
}

impl Jit {
    /// Compiles the kernels `request` asks for from the source file at `path` (and the module
    /// files its `mod` items name), through the cache, direct mode first: when a manifest
    /// recorded for the same bytes, globals, kernels, options, toolchain and salt is found, and
    /// every module file it names still hashes the same, the kernels are fetched by the keys it
    /// gives, without parsing or checking; else the full path runs and records the manifest.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("fill.rs");
    /// std::fs::write(&path, "#[kernel] pub fn fill(x: &mut [f32], v: f32) { x[global_id_x()] = v; }").unwrap();
    /// let config = kache::Config::in_memory().with_cache_dir(dir.path().join("cache"));
    /// let request = kache::FileRequest::new(kache::Target::Host);
    /// let first = kache::Jit::new(config.clone())?.compile_file(&path, &request)?;
    /// assert_eq!(first.served, kache::Served::Full);
    /// let again = kache::Jit::new(config)?.compile_file(&path, &request)?;   // another process, say
    /// assert_eq!(again.served, kache::Served::Direct);
    /// assert_eq!(again.kernels[0].key(), first.kernels[0].key());
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn compile_file(&self, path: impl AsRef<Path>, request: &FileRequest) -> Result<CompiledFile> {
        match self.direct_file(path, request)? {
            Direct::Hit(c) => Ok(c),
            Direct::Miss(m) => m.compile(),
        }
    }

    /// [`compile_file`](Self::compile_file) for source text with no module files.
    pub fn compile_source(&self, name: &str, text: &str, request: &FileRequest) -> Result<CompiledFile> {
        match self.direct_source(name, text, request) {
            Direct::Hit(c) => Ok(c),
            Direct::Miss(m) => m.compile(),
        }
    }

    /// Reads the file at `path` (refused as [`load_file`](Self::load_file) refuses it) and
    /// looks `request` up in direct mode.
    pub fn direct_file(&self, path: impl AsRef<Path>, request: &FileRequest) -> Result<Direct> {
        let path = path.as_ref();
        let bytes = read_source(path).map_err(|e| match e {
            crate::files::ReadError::Io(e) => Error::io(path, e),
            e => Error::Input { path: path.to_path_buf(), problem: source_problem(&e) },
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(self.direct(path.display().to_string(), Cow::Owned(bytes), Some(dir), request))
    }

    /// Looks `request` up in direct mode for source text with no module files.
    pub fn direct_source(&self, name: &str, text: &str, request: &FileRequest) -> Direct {
        self.direct(name.to_string(), Cow::Borrowed(text.as_bytes()), None, request)
    }

    /// What direct mode would do with `request` for the file at `path` now, and the manifest's
    /// key: what `kache explain` prints. Counts nothing.
    pub fn explain_direct(&self, path: impl AsRef<Path>, request: &FileRequest) -> Result<DirectExplanation> {
        let path = path.as_ref();
        let bytes = read_source(path).map_err(|e| match e {
            crate::files::ReadError::Io(e) => Error::io(path, e),
            e => Error::Input { path: path.to_path_buf(), problem: source_problem(&e) },
        })?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
        let Some(d) = self.manifest_derivation(&path.display().to_string(), &bytes, request) else {
            return Ok(DirectExplanation { manifest: None, served: Served::Full, why: device_array_bound() });
        };
        let (served, why) = match self.probe(&d.key, Some(&mut FileLoader { dir }), request.target) {
            Ok((m, _)) => (
                Served::Direct,
                format!(
                    "a manifest gives the key of {}, without parsing",
                    m.kernels.iter().map(|k| k.meta.kernel.as_str()).collect::<Vec<_>>().join(", ")
                ),
            ),
            Err(why) => (Served::Full, why),
        };
        Ok(DirectExplanation { manifest: Some(d), served, why })
    }

    /// The manifest key of `request` for this root, `None` where a device array is bound (such
    /// kernels are never persisted).
    fn manifest_derivation(&self, name: &str, bytes: &[u8], request: &FileRequest) -> Option<Derivation> {
        if request.globals.iter().any(|(_, v)| matches!(v, CaptureValue::Device(_))) {
            return None;
        }
        let config = self.config();
        Some(derive_manifest(&ManifestInputs {
            root_name: name,
            root_digest: &self.inner.digests.digest(bytes),
            globals: &request.globals,
            kernels: &request.kernels,
            options: &request.options(self),
            toolchain: &config.toolchain,
            salt: &config.salt,
        }))
    }

    /// `bytes` is borrowed where the caller's text is: a hit copies nothing.
    fn direct(&self, name: String, bytes: Cow<'_, [u8]>, dir: Option<PathBuf>, request: &FileRequest) -> Direct {
        let manifest = self.manifest_derivation(&name, &bytes, request).map(|d| d.key);
        let why = match &manifest {
            None => device_array_bound(),
            Some(key) => {
                let mut loader = dir.clone().map(|dir| FileLoader { dir });
                match self.serve(key, loader.as_mut().map(|l| l as &mut dyn SourceLoader), request) {
                    Ok(c) => return Direct::Hit(c),
                    Err(why) => {
                        self.cache().count(Counter::DirectMisses, 1);
                        crate::logging::debug!("direct miss {key}: {why}");
                        why
                    }
                }
            }
        };
        Direct::Miss(DirectMiss { jit: self.clone(), name, bytes: bytes.into_owned(), dir, request: request.clone(), manifest, why })
    }

    /// Serves a request from its manifest: this process's memory of it, else the cache's.
    fn serve(
        &self,
        key: &Key,
        mut loader: Option<&mut (dyn SourceLoader + '_)>,
        request: &FileRequest,
    ) -> std::result::Result<CompiledFile, String> {
        let cache = self.cache();
        let target = request.target;
        let remembered = self.inner.direct.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned();
        if let Some(r) = remembered
            && let Some(kernels) = r.kernels.iter().map(Weak::upgrade).collect::<Option<Vec<_>>>()
            && unchanged(&r.manifest, loader.as_deref_mut()).is_ok()
        {
            cache.count(Counter::DirectHits, 1);
            cache.count(Counter::Hits, kernels.len() as u64);
            cache.count(Counter::HitsMemory, kernels.len() as u64);
            return Ok(CompiledFile { kernels, left_out: r.manifest.left_out.clone(), served: Served::Direct });
        }
        let (manifest, found) = self.probe(key, loader, target)?;
        let mut kernels = Vec::with_capacity(found.len());
        for (mk, (entry, tier)) in manifest.kernels.iter().zip(&found) {
            let artifact = match (entry.meta.kind, target) {
                (ArtifactKind::Ptx, Target::Nvptx(_)) => Artifact::Ptx(
                    String::from_utf8(entry.payload.to_vec()).map_err(|_| format!("the PTX of {} is not UTF-8", mk.meta.kernel))?,
                ),
                (ArtifactKind::HostBitcode, Target::Host) => Artifact::HostBitcode(entry.payload.to_vec()),
                (kind, _) => return Err(format!("the entry of {} holds {kind:?}, not code for {target}", mk.meta.kernel)),
            };
            let interface = mk.meta.interface.clone().ok_or_else(|| format!("{} has no interface", mk.meta.kernel))?;
            let mut c = CompiledKernel::from_interface(
                mk.meta.key,
                mk.meta.kernel.clone(),
                entry.meta.entry.clone(),
                interface,
                target,
                artifact,
                Origin::Cache(*tier),
                Some(self.clone()),
                request.checked,
            );
            c.libdevice = mk.libdevice;
            // Fault reports name the array and the source location, as the full path's do.
            let sites =
                mk.sites.iter().map(|s| SiteInfo { array: s.array.clone(), ndim: s.ndim as usize, location: s.location.clone() }).collect();
            c.faults = Arc::new(FaultSites { kernel: mk.meta.kernel.clone(), sites });
            kernels.push(Arc::new(c));
        }
        cache.count(Counter::DirectHits, 1);
        for (mk, (entry, tier)) in manifest.kernels.iter().zip(found) {
            cache.count_kernel_lookup(&mk.meta.key, &Lookup::Hit(entry, tier));
        }
        for w in &manifest.warnings {
            crate::logging::warning!("{w}");
        }
        crate::logging::debug!("direct hit {key}: {} kernels, nothing parsed", kernels.len());
        let left_out = manifest.left_out.clone();
        self.remember(*key, Remembered { manifest, kernels: kernels.iter().map(Arc::downgrade).collect() });
        Ok(CompiledFile { kernels, left_out, served: Served::Direct })
    }

    /// Finds the manifest `key` and checks it still holds: every module file hashes as it did,
    /// libdevice is the one its kernels were keyed with, and every kernel's entry is there (code
    /// for `target`). Counts nothing but bad entries; the entries are returned with their tier.
    #[allow(clippy::type_complexity)]
    fn probe(
        &self,
        key: &Key,
        loader: Option<&mut (dyn SourceLoader + '_)>,
        target: Target,
    ) -> std::result::Result<(Manifest, Vec<(Arc<Entry>, crate::cache::Tier)>), String> {
        let cache = self.cache();
        let entry = cache.lookup_manifest(key).ok_or_else(|| "no manifest for these inputs".to_string())?;
        let manifest = Manifest::decode(&entry.payload).map_err(|e| e.to_string())?;
        unchanged(&manifest, loader)?;
        if manifest.kernels.is_empty() {
            return Err("the manifest names no kernel".into());
        }
        let keys: Vec<Key> = manifest.kernels.iter().map(|k| k.meta.key).collect();
        let mut found = Vec::with_capacity(keys.len());
        for (mk, l) in manifest.kernels.iter().zip(cache.lookup_quiet(&keys)) {
            match l {
                Lookup::Hit(e, tier) if e.meta.kind == expected_kind(target) => found.push((e, tier)),
                _ => return Err(format!("the entry of {} ({}) is not in the cache", mk.meta.kernel, mk.meta.key)),
            }
        }
        Ok((manifest, found))
    }

    fn remember(&self, key: Key, r: Remembered) {
        self.inner.direct.lock().unwrap_or_else(|e| e.into_inner()).insert(key, Arc::new(r));
    }
}

fn device_array_bound() -> String {
    "a device array is bound: its kernels are never persisted, so direct mode does not serve them".into()
}

fn expected_kind(target: Target) -> ArtifactKind {
    match target {
        Target::Nvptx(_) => ArtifactKind::Ptx,
        Target::Host => ArtifactKind::HostBitcode,
    }
}

/// Whether every module file of `manifest` is what it was (read again and hashed), and
/// libdevice is the one its kernels were keyed with; why not, in words.
fn unchanged(manifest: &Manifest, loader: Option<&mut (dyn SourceLoader + '_)>) -> std::result::Result<(), String> {
    if !manifest.files.is_empty() {
        let Some(loader) = loader else {
            return Err("the manifest names module files, and there are none here".into());
        };
        for (path, hash) in &manifest.files {
            let now = match loader.load(path) {
                Ok(b) => b.map(|b| *blake3::hash(&b).as_bytes()),
                Err(why) => return Err(format!("module file {path}: {why}")),
            };
            if now != *hash {
                return Err(format!("module file {path} changed"));
            }
        }
    }
    if let Some(want) = manifest.kernels.iter().find_map(|k| k.libdevice) {
        let now = crate::toolchain::libdevice().map(|l| l.hash);
        if manifest.kernels.iter().filter_map(|k| k.libdevice).any(|h| Some(h) != now) || now != Some(want) {
            return Err("libdevice changed".into());
        }
    }
    Ok(())
}

impl DirectMiss {
    /// Why direct mode did not serve the request.
    pub fn why(&self) -> &str {
        &self.why
    }

    /// The module of the full path: the bytes the manifest key was derived from, parsed (with
    /// the module files they name), with the request's globals bound.
    pub fn module(&self) -> Result<Module> {
        let mut m = match &self.dir {
            Some(dir) => self.jit.load_crate(&self.name, &self.bytes, &mut FileLoader { dir: dir.clone() }, false)?,
            None => self.jit.load_bytes_with(&self.name, &self.bytes, false)?,
        };
        for (n, v) in &self.request.globals {
            m = m.with_global(n, v.clone())?;
        }
        Ok(m)
    }

    /// The full path: parses, checks every kernel asked for (before compiling any, so errors
    /// come first and nothing is half done), compiles them through the cache in one batch
    /// ([`Jit::compile_many`]: every key looked up together, the misses stored together), and
    /// records the manifest.
    pub fn compile(self) -> Result<CompiledFile> {
        let module = self.module()?;
        let KernelsToCompile { names, left_out } = self.names(&module)?;
        let kernels = names.iter().map(|n| module.kernel(n)).collect::<Result<Vec<Kernel>>>()?;
        let requests: Vec<CompileRequest> = kernels.iter().map(|k| CompileRequest::new(k, self.request.target)).collect();
        let options = vec![self.request.options(&self.jit); requests.len()];
        let mut compiled = Vec::with_capacity(kernels.len());
        for (k, c) in kernels.into_iter().zip(self.jit.compile_many_with(&requests, &options)) {
            compiled.push((k, c?));
        }
        self.record(&module, &compiled, &left_out);
        Ok(CompiledFile { kernels: compiled.into_iter().map(|(_, c)| c).collect(), left_out, served: Served::Full })
    }

    /// The kernels the request asks for in `module`, and the generic kernels an every-kernel
    /// request leaves out.
    fn names(&self, module: &Module) -> Result<KernelsToCompile> {
        if self.request.kernels.is_empty() {
            module.kernels_to_compile()
        } else {
            Ok(KernelsToCompile { names: self.request.kernels.clone(), left_out: Vec::new() })
        }
    }

    /// Records the manifest of the request: `module` must be [`module`](Self::module)'s, and
    /// `kernels` what the request asked for, in its order, each compiled from `module` with the
    /// request's options (every kernel of an every-kernel request, with `left_out`). Nothing is
    /// recorded unless that holds, and every kernel was stored (none captured a device array,
    /// none of a module with `persist(false)`) with C-contiguous arrays.
    pub fn record(&self, module: &Module, kernels: &[(Kernel, Arc<CompiledKernel>)], left_out: &[(String, String)]) {
        let Some(key) = self.manifest else { return };
        if kernels.is_empty()
            || module.source_id != source_id(&self.jit.inner.digests, &self.name, &self.bytes, &module.source.modules)
            || !same_globals(&module.globals, &self.request.globals)
        {
            return;
        }
        // Exactly the kernels asked for, each the one the module gives for its name.
        let Ok(KernelsToCompile { names, .. }) = self.names(module) else { return };
        if names.len() != kernels.len() || names.iter().zip(kernels).any(|(n, (k, _))| module.kernel(n).map_or(true, |m| !m.same_kernel(k)))
        {
            return;
        }
        let options = self.request.options(&self.jit);
        let mut manifest = Manifest { files: Vec::new(), kernels: Vec::new(), left_out: left_out.to_vec(), warnings: Vec::new() };
        for (k, c) in kernels {
            let uniform = Specialization::uniform(k.program(), Layout::C);
            // Compiled by `k` with the request's options (target, bounds checks) and C-contiguous
            // arrays: what `k` remembers having compiled for them.
            if !k.memoized(&options, &uniform).is_some_and(|m| Arc::ptr_eq(&m, c)) {
                return;
            }
            // Not persisted or holding capture slots to bind: the next process must not find it
            // through a manifest.
            if c.library.persistable().is_err()
                || !c.persist
                || !c.slots.is_empty()
                || !matches!(c.origin, Origin::Compiled { .. } | Origin::Cache(_))
            {
                return;
            }
            let Ok(interface) = c.interface() else { return };
            let compile_ms = match c.origin {
                Origin::Compiled { ms } => ms,
                _ => 0,
            };
            let meta = Meta::new(
                c.key,
                &c.name,
                &signature_text(&c.signature, &c.enums, &c.types),
                artifact_kind(&c.artifact),
                &c.entry,
                compile_ms,
            )
            .with_interface(interface);
            let sites = c
                .faults
                .sites
                .iter()
                .map(|s| ManifestSite { array: s.array.clone(), ndim: s.ndim as u32, location: s.location.clone() })
                .collect();
            manifest.kernels.push(ManifestKernel { meta, libdevice: c.libdevice, sites });
            manifest.warnings.extend(module.warnings(k.program()));
        }
        manifest.files =
            module.source.modules.iter().map(|(p, t)| (p.clone(), t.as_ref().map(|t| *blake3::hash(t.as_bytes()).as_bytes()))).collect();
        let meta = Meta::new(key, &self.name, "(direct mode's manifest)", ArtifactKind::Manifest, "", 0);
        let jit = &self.jit;
        jit.cache().store_manifest(Entry { meta, payload: manifest.encode().into() });
        crate::logging::debug!(
            "recorded manifest {key} of {}: {} kernels, {} module files",
            self.name,
            kernels.len(),
            manifest.files.len()
        );
        jit.remember(key, Remembered { manifest, kernels: kernels.iter().map(|(_, c)| Arc::downgrade(c)).collect() });
    }
}

/// Whether a module's globals are the request's (names and values, in order).
fn same_globals(bound: &[(String, CaptureValue)], asked: &[(String, CaptureValue)]) -> bool {
    encode_globals(bound) == encode_globals(asked)
}
