//! The runtime JIT: loads kernel sources into modules with bound globals, and compiles their
//! kernels through the cache. This file holds [`Jit`] and the state its modules and kernels
//! share (parsed sources and live kernels, each deduplicated).

mod batch;
mod compiled;
mod digests;
mod direct;
mod generic;
mod kernel;
mod launch;
mod module;
mod records;
mod serialize;
mod slots;
mod tune;

pub use batch::CompileRequest;
pub use compiled::{CompiledKernel, ModuleLoad, Origin};
pub use direct::{CompiledFile, Direct, DirectExplanation, DirectMiss, FileRequest, Served};
pub use kernel::Kernel;
pub use module::{FactoryArgs, KernelsToCompile, Module};
pub use slots::CaptureSlot;
pub use tune::{Tuner, Tuning, TuningCandidate, TuningExplanation, TuningReport, TuningSource};
pub(crate) use tune::{candidate_instances, candidate_names, recorded_tunings};

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use crate::cache::{Assembler, Cache, CacheConfig, CubinInputs, Derivation, Key};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::lang::ast::SourceModule;
use crate::lang::{self, SourceFile};
use crate::target::Arch;
use kernel::KernelInner;

/// A parsed source file, shared by every module loaded from the same name and bytes.
struct Source {
    file: Arc<SourceFile>,
    /// The parsed crate: parsed at load, or on first need where a record showed that these
    /// very bytes parse ([`records`]; docs/cache.md, "Direct mode").
    ast: OnceLock<SourceModule>,
    /// Every module file looked for: path relative to the root's folder, and its text (`None`:
    /// there was none).
    modules: Vec<(String, Option<String>)>,
    /// The root's bytes, for a parse on first need.
    root: Vec<u8>,
    /// Whether module files were looked for (`load_file`, `load_sources`) or not (`load_source`).
    with_modules: bool,
}

impl Source {
    /// A source parsed at load.
    fn parsed(ast: SourceModule, modules: Vec<(String, Option<String>)>, with_modules: bool) -> Source {
        Source { file: ast.file.clone(), ast: OnceLock::from(ast), modules, root: Vec::new(), with_modules }
    }

    /// The parsed crate, parsed now if it was not at load (from the root's bytes and the module
    /// texts read then: the same inputs, so the same tree).
    fn ast(&self) -> Result<&SourceModule> {
        if let Some(a) = self.ast.get() {
            return Ok(a);
        }
        let parsed = if self.with_modules {
            let mut files = lang::MemorySources::new();
            for (path, text) in &self.modules {
                if let Some(t) = text {
                    files = files.with(path, t.as_bytes());
                }
            }
            lang::parse_crate(self.file.name(), &self.root, Some(&mut files))?
        } else {
            lang::parse_bytes(self.file.name(), &self.root)?
        };
        Ok(self.ast.get_or_init(|| parsed))
    }

    /// Its files, root first (parsed on first need; the root alone if that parse fails, which
    /// [`ast_or_log`](Self::ast_or_log) logs).
    fn files(&self) -> &[Arc<SourceFile>] {
        match self.ast_or_log() {
            Some(ast) => &ast.files,
            None => std::slice::from_ref(&self.file),
        }
    }

    /// The parsed crate for what cannot fail: a source parses at load or was recorded as
    /// parsing, so an error here means the record lied; it is logged and `None` returned.
    fn ast_or_log(&self) -> Option<&SourceModule> {
        match self.ast() {
            Ok(a) => Some(a),
            Err(e) => {
                crate::logging::warning!("{}: a source recorded as parsing did not parse again: {e}", self.file.name());
                None
            }
        }
    }
}

/// The identity of a source: its root's name and bytes, and each module file it read (the
/// same bytes as a plain load of a single file give the same id). Texts enter by their
/// digests, which `digests` remembers: loading a text seen before compares it, never hashes it.
fn source_id(digests: &digests::TextDigests, name: &str, bytes: &[u8], modules: &[(String, Option<String>)]) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(&(name.len() as u64).to_le_bytes());
    h.update(name.as_bytes());
    h.update(&digests.digest(bytes));
    for (path, text) in modules {
        h.update(&(path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        match text {
            Some(t) => {
                h.update(&[1]);
                h.update(&digests.digest(t.as_bytes()));
            }
            None => {
                h.update(&[0]);
            }
        }
    }
    *h.finalize().as_bytes()
}

/// Reads module files from the disk, relative to the root file's folder.
struct FileLoader {
    dir: std::path::PathBuf,
}

impl lang::SourceLoader for FileLoader {
    fn load(&mut self, path: &str) -> std::result::Result<Option<Vec<u8>>, String> {
        match read_source(&self.dir.join(path)) {
            Ok(b) => Ok(Some(b)),
            Err(crate::files::ReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(source_problem(&e)),
        }
    }
}

/// A kernel source file's bytes: a regular file (a FIFO would block, `/dev/zero` never end),
/// read to just past the source size limit.
fn read_source(path: &Path) -> std::result::Result<Vec<u8>, crate::files::ReadError> {
    crate::files::read_regular(path, lang::MAX_SOURCE_BYTES as u64, true)
}

/// Why [`read_source`] refused a file, in words.
fn source_problem(e: &crate::files::ReadError) -> String {
    match e {
        crate::files::ReadError::TooLarge { .. } => {
            format!("larger than {} MiB, the limit of a kernel source", lang::MAX_SOURCE_BYTES >> 20)
        }
        e => e.to_string(),
    }
}

/// Keeps every file a loader was asked for, and what it returned.
struct Recorder<'l> {
    inner: &'l mut dyn lang::SourceLoader,
    read: Vec<(String, Option<String>)>,
}

impl lang::SourceLoader for Recorder<'_> {
    fn load(&mut self, path: &str) -> std::result::Result<Option<Vec<u8>>, String> {
        let r = self.inner.load(path)?;
        self.read.push((path.to_string(), r.as_ref().map(|b| String::from_utf8_lossy(b).into_owned())));
        Ok(r)
    }
}

/// What the clones of a [`Jit`] share: parsed sources and live kernels are kept by weak
/// reference, so loading the same text twice parses once and asking for the same kernel with
/// the same bindings checks once, while nothing is kept alive past its last user.
struct JitInner {
    config: Config,
    cache: Cache,
    sources: Mutex<HashMap<[u8; 32], Weak<Source>>>,
    kernels: Mutex<HashMap<[u8; 32], Weak<KernelInner>>>,
    /// The (source, global types) whose every item has checked ([`Module::check_items`]): a
    /// module's items are checked once per process, whichever of its kernels asks first.
    checked_items: Mutex<std::collections::HashSet<[u8; 32]>>,
    /// Direct mode's manifests served or recorded in this process, with their kernels.
    direct: direct::DirectMemo,
    /// The digests of the root texts direct mode has keyed.
    digests: digests::TextDigests,
}

/// The runtime JIT compiler: loads kernel sources into [`Module`]s and compiles their kernels
/// through the cache.
///
/// ```
/// let jit = kache::Jit::new(kache::Config::in_memory())?;
/// let device = kache::Device::host();
/// let module = jit.load_source("scale.rs", r#"
///     #[kernel]
///     pub fn scale(x: &mut [f32], by: f32) {
///         let i = global_id_x();
///         if i < x.len() { x[i] *= by; }
///     }
/// "#)?;
/// let mut x = device.upload(&[1.0f32, 2.0, 3.0])?;
/// module.kernel("scale")?.launch(&device, kache::Grid::linear(3, 64), (&mut x, 2.0f32))?;
/// assert_eq!(x.download()?, vec![2.0, 4.0, 6.0]);
/// # Ok::<(), kache::Error>(())
/// ```
#[derive(Clone)]
pub struct Jit {
    inner: Arc<JitInner>,
}

impl std::fmt::Debug for Jit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jit").field("config", &self.inner.config).finish_non_exhaustive()
    }
}

impl Jit {
    /// A JIT with the given settings.
    pub fn new(config: Config) -> Result<Jit> {
        let cache = Cache::new(CacheConfig {
            dir: config.cache_dir.clone(),
            max_size: config.max_size,
            lock_timeout: config.lock_timeout,
            remote: config.remote.clone(),
            write_threads: config.compile_threads,
        })?;
        Ok(Jit {
            inner: Arc::new(JitInner {
                config,
                cache,
                sources: Mutex::new(HashMap::new()),
                kernels: Mutex::new(HashMap::new()),
                checked_items: Mutex::new(std::collections::HashSet::new()),
                direct: Mutex::new(HashMap::new()),
                digests: digests::TextDigests::default(),
            }),
        })
    }

    /// A JIT configured from the environment ([`Config::from_env`]).
    pub fn from_env() -> Result<Jit> {
        Jit::new(Config::from_env()?)
    }

    /// Its settings.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Its cache.
    pub fn cache(&self) -> &Cache {
        &self.inner.cache
    }

    /// The key of a cubin that `assembler` builds for `arch` from the PTX identified by `ptx` (a
    /// kernel's key, or the PTX's hash), under this JIT's toolchain and salt.
    pub(crate) fn cubin_derivation(&self, ptx: &Key, arch: Arch, assembler: Assembler<'_>) -> Derivation {
        let config = self.config();
        crate::cache::derive_cubin(&CubinInputs {
            ptx: &ptx.0,
            arch: &arch.to_string(),
            assembler,
            toolchain: &config.toolchain,
            salt: &config.salt,
        })
    }

    /// Reads and parses a kernel source file, and the files its `mod` items name (`name.rs` or
    /// `name/mod.rs` beside it, as Rust finds them). Only a regular file of at most
    /// [`MAX_SOURCE_BYTES`](crate::lang::MAX_SOURCE_BYTES) is read: anything else
    /// ([`Error::Input`]) is refused at once.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let bytes = read_source(path).map_err(|e| match e {
            crate::files::ReadError::Io(e) => Error::io(path, e),
            e => Error::Input { path: path.to_path_buf(), problem: source_problem(&e) },
        })?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => std::path::PathBuf::from("."),
        };
        self.load_crate(&path.display().to_string(), &bytes, &mut FileLoader { dir }, true)
    }

    /// Parses kernel source text whose `mod` items name the files of `modules` (paths relative
    /// to `name`'s folder: `common.rs`, `util/mod.rs`), given as text.
    ///
    /// ```
    /// # use kache::{Config, Jit, lang::MemorySources};
    /// let jit = Jit::new(Config::in_memory())?;
    /// let common = "pub fn twice(x: f32) -> f32 { 2.0 * x }";
    /// let m = jit.load_sources(
    ///     "k.rs",
    ///     "mod common;\n#[kernel] pub fn k(x: &mut [f32]) { x[0] = common::twice(x[0]); }",
    ///     MemorySources::new().with("common.rs", common),
    /// )?;
    /// assert_eq!(m.kernel_names(), vec!["k"]);
    /// assert_eq!(m.files().len(), 2);
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn load_sources(&self, name: &str, text: &str, mut modules: lang::MemorySources) -> Result<Module> {
        self.load_crate(name, text.as_bytes(), &mut modules, true)
    }

    /// Parses a crate whose module files come from `loader`. A source already loaded is
    /// reused when its root and every module file it read are unchanged.
    /// (`records`: whether front-end records may serve and be written, [`records`]; the
    /// direct mode's full path does without them, its manifest serving the next request.)
    fn load_crate(&self, name: &str, bytes: &[u8], loader: &mut dyn lang::SourceLoader, records: bool) -> Result<Module> {
        let root_id = source_id(&self.inner.digests, name, bytes, &[]);
        let cached = self.inner.sources.lock().unwrap_or_else(|e| e.into_inner()).get(&root_id).and_then(Weak::upgrade);
        if let Some(s) = cached {
            // The same root: its module files (read again, in the order they were) must be too.
            let same = s.modules.iter().all(|(path, text)| match (loader.load(path), text) {
                (Ok(Some(b)), Some(t)) => b == t.as_bytes(),
                (Ok(None), None) => true,
                _ => false,
            });
            if same {
                let id = source_id(&self.inner.digests, name, bytes, &s.modules);
                return Ok(self.module(s, id, records));
            }
        }
        let s = self.keep_source(root_id, self.new_source(name, bytes, Some(loader), records)?);
        let id = source_id(&self.inner.digests, name, bytes, &s.modules);
        Ok(self.module(s, id, records))
    }

    /// The source of `name`'s bytes, not seen in this process: from its parsed-source record
    /// where `records` and one serves (parsed on first need), else parsed now (and recorded).
    /// `loader` reads its module files (`None`: a single file, whose `mod` items are errors).
    fn new_source<'l>(
        &self,
        name: &str,
        bytes: &[u8],
        mut loader: Option<&mut (dyn lang::SourceLoader + 'l)>,
        records: bool,
    ) -> Result<Source> {
        if records && let Some(s) = records::recorded_source(self, name, bytes, loader.as_deref_mut()) {
            return Ok(s);
        }
        let with_modules = loader.is_some();
        let (ast, modules) = match loader {
            Some(inner) => {
                let mut recorder = Recorder { inner, read: Vec::new() };
                let ast = lang::parse_crate(name, bytes, Some(&mut recorder))?;
                (ast, recorder.read)
            }
            None => (lang::parse_bytes(name, bytes)?, Vec::new()),
        };
        if records {
            records::record_source(self, name, bytes, with_modules, &modules);
        }
        Ok(Source::parsed(ast, modules, with_modules))
    }

    /// Keeps `s` for later loads of the same root (`root_id`) while anything uses it.
    fn keep_source(&self, root_id: [u8; 32], s: Source) -> Arc<Source> {
        let s = Arc::new(s);
        self.inner.sources.lock().unwrap_or_else(|e| e.into_inner()).insert(root_id, Arc::downgrade(&s));
        s
    }

    /// A module of `source` with no globals bound.
    fn module(&self, source: Arc<Source>, source_id: [u8; 32], records: bool) -> Module {
        Module {
            jit: self.clone(),
            source,
            source_id,
            globals: Arc::new(Vec::new()),
            persist: true,
            records,
            binder: lang::Binder::Program,
        }
    }

    /// Parses kernel source text; `name` is shown in diagnostics.
    pub fn load_source(&self, name: &str, text: &str) -> Result<Module> {
        self.load_bytes(name, text.as_bytes())
    }

    /// Parses kernel source bytes (non-UTF-8 input is a diagnostic).
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<Module> {
        self.load_bytes_with(name, bytes, true)
    }

    /// [`load_bytes`](Self::load_bytes), with or without front-end records (as
    /// [`load_crate`](Self::load_crate)).
    fn load_bytes_with(&self, name: &str, bytes: &[u8], records: bool) -> Result<Module> {
        let id = source_id(&self.inner.digests, name, bytes, &[]);
        let cached = self.inner.sources.lock().unwrap_or_else(|e| e.into_inner()).get(&id).and_then(Weak::upgrade);
        let source = match cached {
            Some(s) => s,
            None => self.keep_source(id, self.new_source(name, bytes, None, records)?),
        };
        Ok(self.module(source, id, records))
    }
}
