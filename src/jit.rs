//! The runtime JIT: modules with bound globals, kernels, compiled kernels; every compile goes
//! through the cache.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::abi::{CaptureData, ParamAbi};
use crate::cache::remote::RemoteConfig;
use crate::cache::{ArtifactKind, Cache, CacheConfig, Derivation, Entry, Key, KeyInputs, Lookup, Meta, Tier};
use crate::capture::{ArrayDesc, CaptureValue, HostData, IntoCapture, Location};
use crate::codegen::{self, Artifact, HostModule};
use crate::error::{Error, Result};
use crate::ir::{ArrayTy, CaptureSource, CaptureTy, Layout, Program, Scalar, ScalarValue, Ty};
use crate::lang::ast::SourceModule;
use crate::lang::{self, Env, ModuleSummary, SourceFile};
use crate::library::CodeLibrary;
use crate::runtime::{ArgValue, Device, Grid, KernelArgs, cuda, host};
use crate::target::{Arch, Options, Specialization, Target};

/// Settings of a [`Jit`], usually from the environment ([`Config::from_env`]).
#[derive(Clone, Debug)]
pub struct Config {
    /// The cache folder; `None` keeps compiled kernels in memory only.
    pub cache_dir: Option<PathBuf>,
    /// Size limit of the local store (`KACHE_MAX_SIZE`, default 2 GiB).
    pub max_size: u64,
    /// Longest wait for another process's lock on the store (`KACHE_LOCK_TIMEOUT_MS`).
    pub lock_timeout: Duration,
    /// The Redis tier (`KACHE_REMOTE`, `KACHE_REMOTE_KEY`, `KACHE_REMOTE_READONLY`).
    pub remote: Option<RemoteConfig>,
    /// Make "not cached on disk" an error instead of a warning (`KACHE_STRICT=1`).
    pub strict: bool,
    /// Mixed into every key to abandon earlier entries (`KACHE_SALT`).
    pub salt: String,
    /// GPU architecture for compiles without a device (`KACHE_ARCH`, default `sm_70`).
    pub arch: Arch,
    /// LLVM optimisation level (`KACHE_OPT_LEVEL`, default 3).
    pub opt_level: u8,
    /// Fast-math (`KACHE_FAST_MATH=1`).
    pub fast_math: bool,
    /// On CUDA, also cache the cubin the driver builds from PTX (`KACHE_CUBIN_TIER=0` turns it
    /// off, for measuring the PTX tier alone).
    pub cubin_tier: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cache_dir: CacheConfig::default_dir(),
            max_size: 2 << 30,
            lock_timeout: Duration::from_secs(5),
            remote: None,
            strict: false,
            salt: String::new(),
            arch: Arch { sm: 70, accelerated: false },
            opt_level: 3,
            fast_math: false,
            cubin_tier: true,
        }
    }
}

fn env_flag(name: &str) -> bool {
    matches!(std::env::var(name).as_deref().map(str::trim), Ok("1" | "true" | "yes" | "on"))
}

/// Parses a size: `2G`, `512MiB`, `100k`, `1048576`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    if n < 0.0 || !n.is_finite() {
        return None;
    }
    Some((n * mult as f64) as u64)
}

impl Config {
    /// From the environment: `KACHE_DIR` (else `~/.cache/kache`), `KACHE_DISABLE=1` (no disk
    /// cache), `KACHE_MAX_SIZE`, `KACHE_LOCK_TIMEOUT_MS`, `KACHE_STRICT`, `KACHE_SALT`,
    /// `KACHE_ARCH`, `KACHE_OPT_LEVEL`, `KACHE_FAST_MATH`, and the remote's variables.
    pub fn from_env() -> Result<Config> {
        let mut c = Config::default();
        if env_flag("KACHE_DISABLE") {
            c.cache_dir = None;
        }
        if let Ok(v) = std::env::var("KACHE_MAX_SIZE") {
            c.max_size = parse_size(&v).ok_or_else(|| Error::Config(format!("KACHE_MAX_SIZE={v} is not a size (like 2G or 500M)")))?;
        }
        if let Ok(v) = std::env::var("KACHE_LOCK_TIMEOUT_MS") {
            let ms: u64 = v.trim().parse().map_err(|_| Error::Config(format!("KACHE_LOCK_TIMEOUT_MS={v} is not a number")))?;
            c.lock_timeout = Duration::from_millis(ms);
        }
        c.strict = env_flag("KACHE_STRICT");
        c.salt = std::env::var("KACHE_SALT").unwrap_or_default();
        c.arch = Arch::default_from_env()?;
        if let Ok(v) = std::env::var("KACHE_OPT_LEVEL") {
            c.opt_level =
                v.trim().parse().ok().filter(|l| *l <= 3).ok_or_else(|| Error::Config(format!("KACHE_OPT_LEVEL={v} is not 0..=3")))?;
        }
        c.fast_math = env_flag("KACHE_FAST_MATH");
        c.cubin_tier = !matches!(std::env::var("KACHE_CUBIN_TIER").as_deref().map(str::trim), Ok("0" | "false" | "no" | "off"));
        c.remote = RemoteConfig::from_env()?;
        Ok(c)
    }

    /// No disk cache: everything in memory.
    pub fn in_memory() -> Config {
        Config { cache_dir: None, ..Config::default() }
    }

    /// The same settings with the cache in `dir`.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Config {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Code generation options for `target`.
    pub fn options(&self, target: Target) -> Options {
        Options { target, opt_level: self.opt_level, fast_math: self.fast_math }
    }
}

pub(crate) struct Source {
    pub(crate) file: Arc<SourceFile>,
    pub(crate) ast: SourceModule,
}

pub(crate) struct JitInner {
    config: Config,
    cache: Cache,
    sources: Mutex<HashMap<[u8; 32], Weak<Source>>>,
    kernels: Mutex<HashMap<[u8; 32], Weak<KernelInner>>>,
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
        })?;
        Ok(Jit { inner: Arc::new(JitInner { config, cache, sources: Mutex::new(HashMap::new()), kernels: Mutex::new(HashMap::new()) }) })
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

    /// Reads and parses a kernel source file.
    pub fn load_file(&self, path: impl AsRef<Path>) -> Result<Module> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        self.load_bytes(&path.display().to_string(), &bytes)
    }

    /// Parses kernel source text; `name` is shown in diagnostics.
    pub fn load_source(&self, name: &str, text: &str) -> Result<Module> {
        self.load_bytes(name, text.as_bytes())
    }

    /// Parses kernel source bytes (non-UTF-8 input is a diagnostic).
    pub fn load_bytes(&self, name: &str, bytes: &[u8]) -> Result<Module> {
        let mut h = blake3::Hasher::new();
        h.update(&(name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update(bytes);
        let id = *h.finalize().as_bytes();
        let cached = self.inner.sources.lock().unwrap_or_else(|e| e.into_inner()).get(&id).and_then(Weak::upgrade);
        let source = match cached {
            Some(s) => s,
            None => {
                let ast = lang::parse_bytes(name, bytes)?;
                let s = Arc::new(Source { file: ast.file.clone(), ast });
                self.inner.sources.lock().unwrap_or_else(|e| e.into_inner()).insert(id, Arc::downgrade(&s));
                s
            }
        };
        Ok(Module { jit: self.clone(), source, source_id: id, globals: Arc::new(Vec::new()) })
    }
}

/// A parsed kernel source with the globals bound on it. Bindings are values:
/// [`with_global`](Module::with_global) returns a new module, and kernels compiled from the old
/// one keep their bindings.
#[derive(Clone)]
pub struct Module {
    jit: Jit,
    source: Arc<Source>,
    source_id: [u8; 32],
    globals: Arc<Vec<(String, CaptureValue)>>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("file", &self.source.file.name())
            .field("globals", &self.globals.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .finish()
    }
}

/// Arguments of a factory: a tuple of values that can be captured (up to 8), or a vector.
pub trait FactoryArgs {
    /// The values, in parameter order.
    fn values(self) -> Result<Vec<CaptureValue>>;
}

impl FactoryArgs for () {
    fn values(self) -> Result<Vec<CaptureValue>> {
        Ok(Vec::new())
    }
}

impl FactoryArgs for Vec<CaptureValue> {
    fn values(self) -> Result<Vec<CaptureValue>> {
        Ok(self)
    }
}

macro_rules! factory_args {
    ($($n:ident),+) => {
        impl<$($n: IntoCapture),+> FactoryArgs for ($($n,)+) {
            #[allow(non_snake_case)]
            fn values(self) -> Result<Vec<CaptureValue>> {
                let ($($n,)+) = self;
                Ok(vec![$($n.into_capture()?),+])
            }
        }
    };
}
factory_args!(A);
factory_args!(A, B);
factory_args!(A, B, C);
factory_args!(A, B, C, D);
factory_args!(A, B, C, D, E);
factory_args!(A, B, C, D, E, F);
factory_args!(A, B, C, D, E, F, G);
factory_args!(A, B, C, D, E, F, G, H);

fn is_identifier(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_alphabetic() || f == '_') && c.all(|x| x.is_alphanumeric() || x == '_') && s != "_"
}

impl Module {
    /// The file name the module was loaded from.
    pub fn name(&self) -> &str {
        self.source.file.name()
    }

    /// Names of the `#[kernel]` functions.
    pub fn kernel_names(&self) -> Vec<String> {
        self.source.ast.kernel_names()
    }

    /// Names of the factories that return `impl Kernel`.
    pub fn factory_names(&self) -> Vec<String> {
        self.source.ast.kernel_factory_names()
    }

    /// Globals bound so far.
    pub fn globals(&self) -> Vec<(&str, CaptureTy)> {
        self.globals.iter().map(|(n, v)| (n.as_str(), v.ty())).collect()
    }

    fn env(&self) -> Env {
        Env { globals: self.globals.iter().map(|(n, v)| (n.clone(), v.ty())).collect() }
    }

    /// Type-checks every item with the bound globals.
    pub fn check(&self) -> Result<ModuleSummary> {
        Ok(lang::check_module(&self.source.ast, &self.env())?)
    }

    /// A new module with global `name` bound to `value` (replacing an earlier binding): host
    /// scalars and arrays are captured as constants, device arrays by pointer.
    pub fn with_global(&self, name: &str, value: impl IntoCapture) -> Result<Module> {
        if !is_identifier(name) {
            return Err(Error::Binding { name: name.to_string(), problem: "not an identifier".into() });
        }
        let value = value.into_capture().map_err(|e| Error::Binding { name: name.to_string(), problem: e.to_string() })?;
        let mut globals: Vec<(String, CaptureValue)> = self.globals.iter().filter(|(n, _)| n != name).cloned().collect();
        globals.push((name.to_string(), value));
        Ok(Module { globals: Arc::new(globals), ..self.clone() })
    }

    fn request_id(&self, what: &str, name: &str, extra: &[CaptureValue]) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(&self.source_id);
        for s in [what, name] {
            h.update(&(s.len() as u64).to_le_bytes());
            h.update(s.as_bytes());
        }
        let mut sorted: Vec<&(String, CaptureValue)> = self.globals.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        let mut buf = Vec::new();
        for (n, v) in sorted {
            buf.extend_from_slice(&(n.len() as u64).to_le_bytes());
            buf.extend_from_slice(n.as_bytes());
            v.encode(&mut buf);
        }
        for v in extra {
            v.encode(&mut buf);
        }
        h.update(&buf);
        *h.finalize().as_bytes()
    }

    fn memo(&self, id: [u8; 32], make: impl FnOnce() -> Result<KernelInner>) -> Result<Kernel> {
        if let Some(k) = self.jit.inner.kernels.lock().unwrap_or_else(|e| e.into_inner()).get(&id).and_then(Weak::upgrade) {
            return Ok(Kernel { inner: k });
        }
        let k = Arc::new(make()?);
        let mut map = self.jit.inner.kernels.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, w| w.strong_count() > 0);
        map.insert(id, Arc::downgrade(&k));
        Ok(Kernel { inner: k })
    }

    /// The `#[kernel]` function `name`, type-checked with the bound globals (compiled on first
    /// launch, through the cache).
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let id = self.request_id("kernel", name, &[]);
        self.memo(id, || {
            let program = lang::check_kernel(&self.source.ast, &self.env(), name)?;
            let bindings: Vec<CaptureValue> = self.globals.iter().map(|(_, v)| v.clone()).collect();
            KernelInner::new(self, name, program, &bindings)
        })
    }

    /// Instantiates the factory `factory` with `args` (its parameters become the closure's
    /// captured variables) and returns the kernel closure it builds.
    pub fn closure(&self, factory: &str, args: impl FactoryArgs) -> Result<Kernel> {
        let args = args.values()?;
        let id = self.request_id("closure", factory, &args);
        self.memo(id, || {
            let types: Vec<CaptureTy> = args.iter().map(|a| a.ty()).collect();
            let program = lang::check_factory(&self.source.ast, &self.env(), factory, &types)?;
            let mut bindings: Vec<CaptureValue> = self.globals.iter().map(|(_, v)| v.clone()).collect();
            bindings.extend(args.iter().cloned());
            KernelInner::new(self, factory, program, &bindings)
        })
    }
}

pub(crate) struct KernelInner {
    jit: Jit,
    name: String,
    program: Program,
    captures: Vec<CaptureValue>,
    signature: Vec<(String, Ty)>,
    compiled: Mutex<HashMap<(Target, Specialization), Arc<CompiledKernel>>>,
    _source: Arc<Source>,
}

/// Resolves each capture of a program to its value.
pub(crate) fn resolve_captures(program: &Program, bindings: &[CaptureValue]) -> Result<Vec<CaptureValue>> {
    program
        .captures
        .iter()
        .map(|c| match &c.source {
            CaptureSource::Binding(i) => {
                bindings.get(*i).cloned().ok_or_else(|| Error::Binding { name: c.origin.to_string(), problem: "no value bound".into() })
            }
            CaptureSource::Scalar(v) => Ok(CaptureValue::Scalar(*v)),
            CaptureSource::Static(a) => Ok(CaptureValue::Host(Arc::new(static_data(a)))),
        })
        .collect()
}

fn static_data(a: &crate::ir::ConstArray) -> HostData {
    HostData {
        elem: a.elem,
        shape: a.shape.clone(),
        strides: crate::capture::strides_from_shape(&a.shape, 1, crate::capture::Order::C),
        layout: Layout::C,
        bytes: a.bytes.clone(),
        hash: *blake3::hash(&a.bytes).as_bytes(),
    }
}

fn capture_data(values: &[CaptureValue]) -> Vec<CaptureData<'_>> {
    values
        .iter()
        .map(|v| match v {
            CaptureValue::Scalar(s) => CaptureData::Scalar(*s),
            CaptureValue::Host(h) => CaptureData::HostArray { shape: &h.shape, strides: &h.strides, bytes: &h.bytes },
            CaptureValue::Device(d) => CaptureData::DeviceArray { ptr: d.ptr, shape: &d.shape, strides: &d.strides },
        })
        .collect()
}

fn signature_text(sig: &[(String, Ty)]) -> String {
    format!("({})", sig.iter().map(|(n, t)| format!("{n}: {t}")).collect::<Vec<_>>().join(", "))
}

impl KernelInner {
    fn new(module: &Module, name: &str, program: Program, bindings: &[CaptureValue]) -> Result<KernelInner> {
        let captures = resolve_captures(&program, bindings)?;
        let signature = program.kernel().param_decls().iter().map(|p| (p.name.clone(), p.ty)).collect();
        Ok(KernelInner {
            jit: module.jit.clone(),
            name: name.to_string(),
            program,
            captures,
            signature,
            compiled: Mutex::new(HashMap::new()),
            _source: module.source.clone(),
        })
    }
}

/// A kernel of a module (or the kernel closure of a factory instance), with its captures.
/// Compiled on first use for each device and argument layout, through the cache.
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({}{})", self.inner.name, signature_text(&self.inner.signature))
    }
}

impl Kernel {
    /// Kernel name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Parameter names and types.
    pub fn signature(&self) -> &[(String, Ty)] {
        &self.inner.signature
    }

    /// The checked program: the kernel and everything it reaches.
    pub fn program(&self) -> &Program {
        &self.inner.program
    }

    /// The captured values, by capture id.
    pub fn captures(&self) -> &[CaptureValue] {
        &self.inner.captures
    }

    /// The kernel's code library tree (without LLVM modules): what it references and how.
    pub fn library(&self) -> Arc<CodeLibrary> {
        CodeLibrary::assemble(&self.inner.program, &self.inner.captures, None)
    }

    /// The key this kernel is cached under for `target` and `spec`, with each component's hash.
    pub fn explain(&self, target: Target, spec: &Specialization) -> Result<Derivation> {
        let (d, _) = self.derive(target, spec)?;
        Ok(d)
    }

    fn derive(&self, target: Target, spec: &Specialization) -> Result<(Derivation, Option<crate::toolchain::Libdevice>)> {
        let options = self.inner.jit.config().options(target);
        let libdevice = match target {
            Target::Nvptx(_) if self.inner.program.uses_libdevice() => crate::toolchain::libdevice(),
            _ => None,
        };
        if let (Target::Nvptx(_), true, None) = (target, self.inner.program.uses_libdevice(), &libdevice) {
            let function = codegen::first_libdevice_use(&self.inner.program).unwrap_or_else(|| "a transcendental function".into());
            return Err(codegen::CodegenError::NoLibdevice { kernel: self.inner.name.clone(), function }.into());
        }
        let d = crate::cache::derive(&KeyInputs {
            program: &self.inner.program,
            spec,
            captures: &self.inner.captures,
            options: &options,
            libdevice: libdevice.as_ref().map(|l| l.hash),
            salt: &self.inner.jit.config().salt,
        });
        Ok((d, libdevice))
    }

    /// Compiles (or fetches from the cache) the specialisation for `target` and `spec`.
    pub fn compile(&self, target: Target, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(target, spec, None)
    }

    fn compile_on(&self, target: Target, spec: &Specialization, device: Option<&Device>) -> Result<Arc<CompiledKernel>> {
        let memo_key = (target, spec.clone());
        if let Some(c) = self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(&memo_key) {
            return Ok(c.clone());
        }
        let c = self.compile_uncached(target, spec, device)?;
        self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, c.clone());
        Ok(c)
    }

    /// Compiles for `device` with every array parameter C-contiguous.
    pub fn compile_for(&self, device: &Device) -> Result<Arc<CompiledKernel>> {
        self.compile_on(device.target(), &Specialization::uniform(&self.inner.program, Layout::C), Some(device))
    }

    fn compile_uncached(&self, target: Target, spec: &Specialization, device: Option<&Device>) -> Result<Arc<CompiledKernel>> {
        let inner = &self.inner;
        let jit = &inner.jit;
        let cache = jit.cache();
        let (d, libdevice) = self.derive(target, spec)?;
        let key = d.key;
        let sig = signature_text(&inner.signature);
        // On a GPU, fetch the cubin with the PTX in one opening of the store.
        let prefetch: Vec<Key> = match device.and_then(|d| d.cuda_impl()) {
            Some(dev) if jit.config().cubin_tier => vec![crate::cache::cubin_key(&key.0, &dev.arch.to_string(), dev.driver_version)],
            _ => Vec::new(),
        };
        match cache.lookup_prefetch(&[key], &prefetch).pop().unwrap_or(Lookup::Miss) {
            Lookup::Pinned(any) => {
                if let Ok(c) = any.downcast::<CompiledKernel>() {
                    return Ok(c);
                }
            }
            Lookup::Hit(entry, tier) => match CompiledKernel::from_entry(self, target, spec, key, &entry, tier) {
                Ok(c) => return Ok(Arc::new(c)),
                Err(e) => cache
                    .warn_once(&format!("bad-artifact:{key}"), &format!("cached kernel '{}' is unusable ({e}); recompiling", inner.name)),
            },
            Lookup::Miss => {}
        }
        let options = jit.config().options(target);
        let t0 = Instant::now();
        let libdevice_bytes = libdevice.as_ref().and_then(|l| l.bytes());
        let data = capture_data(&inner.captures);
        let compiled = codegen::compile(&codegen::CompileInput {
            program: &inner.program,
            spec,
            captures: &data,
            options,
            libdevice: libdevice_bytes.as_deref(),
        })?;
        let compile_ms = t0.elapsed().as_millis().min(u32::MAX as u128) as u32;
        let library = CodeLibrary::assemble(&inner.program, &inner.captures, Some(&compiled.function_modules));
        let kind = match &compiled.artifact {
            Artifact::Ptx(_) => ArtifactKind::Ptx,
            Artifact::HostBitcode(_) => ArtifactKind::HostBitcode,
            Artifact::Cubin(_) => ArtifactKind::Cubin,
        };
        let payload: Arc<[u8]> = compiled.artifact.bytes().into();
        let ck = Arc::new(CompiledKernel::new(
            self,
            target,
            spec,
            key,
            compiled.artifact,
            compiled.entry.clone(),
            library.clone(),
            Origin::Compiled { ms: compile_ms },
        ));
        match library.persistable() {
            Ok(proof) => {
                let meta = Meta::new(key, &inner.name, &sig, kind, &compiled.entry, compile_ms);
                cache.store(proof, Entry { meta, payload });
            }
            Err(refs) => {
                let what: Vec<String> = refs.iter().map(|r| r.describe()).collect();
                let msg = format!(
                    "kernel '{}' is not cached on disk: it captures device array {}; device pointers are valid only in this process. \
                     Pass the array as a kernel argument to make it cacheable.",
                    inner.name,
                    what.join(" and device array ")
                );
                if jit.config().strict {
                    return Err(Error::NotPersisted(msg));
                }
                let any: Arc<dyn std::any::Any + Send + Sync> = ck.clone();
                cache.pin(key, &any, msg.clone());
                cache.warn_once(&format!("not-persisted:{}", inner.name), &msg);
            }
        }
        Ok(ck)
    }

    /// Checks `args` against the signature, compiles the matching specialisation on first use
    /// and launches it on `device`. Nothing runs if an argument does not match.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = args.args()?;
        let spec = check_args(&self.inner.name, &self.inner.signature, &args, device)?;
        check_capture_locations(&self.inner.name, &self.inner.program, &self.inner.captures, device)?;
        grid.check()?;
        let c = self.compile_on(device.target(), &spec, Some(device))?;
        c.launch_checked(device, grid, &args)
    }

    /// A compiled kernel from PTX produced elsewhere for this kernel (the prebuild step embeds
    /// it), for `target` and `spec`.
    pub fn with_ptx(&self, target: Target, spec: &Specialization, ptx: String) -> Arc<CompiledKernel> {
        self.prebuilt(target, spec, Artifact::Ptx(ptx))
    }

    /// A compiled kernel around code built elsewhere (keyed by its bytes).
    fn prebuilt(&self, target: Target, spec: &Specialization, artifact: Artifact) -> Arc<CompiledKernel> {
        let key = Key(*blake3::hash(artifact.bytes()).as_bytes());
        let library = CodeLibrary::assemble(&self.inner.program, &self.inner.captures, None);
        let entry = crate::abi::symbol_name(&self.inner.program.kernel().name);
        Arc::new(CompiledKernel::new(self, target, spec, key, artifact, entry, library, Origin::Prebuilt))
    }

    /// A compiled kernel from a cubin assembled elsewhere for this kernel and `arch` (for
    /// example by `kache compile --emit cubin --arch sm_90`), with every array parameter
    /// C-contiguous. Loading it needs no compiler and no PTX JIT; a GPU it was not built for
    /// refuses it at the first launch with the driver's reason.
    ///
    /// ```
    /// # let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let k = jit.load_source("s.rs", "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }")?.kernel("k")?;
    /// let arch = kache::Arch::parse("sm_90")?;
    /// // Anything but an ELF image is refused before it reaches the driver.
    /// assert!(k.with_cubin(arch, b"// PTX, not a cubin".to_vec()).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_cubin(&self, arch: Arch, cubin: Vec<u8>) -> Result<Arc<CompiledKernel>> {
        if !cubin.starts_with(b"\x7fELF") {
            return Err(Error::BadSerializedKernel(format!("the cubin given for kernel '{}' is not an ELF image", self.inner.name)));
        }
        Ok(self.prebuilt(Target::Nvptx(arch), &Specialization::uniform(&self.inner.program, Layout::C), Artifact::Cubin(cubin)))
    }

    /// Serialises the kernel compiled for `target` (array parameters C-contiguous) to bytes
    /// that [`CompiledKernel::deserialize`] loads in another process. A kernel that captured a
    /// device array fails with [`Error::NotSerializable`].
    pub fn serialize(&self, target: Target) -> Result<Vec<u8>> {
        let lib = self.library();
        if let Err(refs) = lib.persistable() {
            return Err(Error::NotSerializable { kernel: self.inner.name.clone(), what: refs[0].describe() });
        }
        self.compile(target, &Specialization::uniform(&self.inner.program, Layout::C))?.serialize()
    }
}

fn check_capture_locations(name: &str, p: &Program, captures: &[CaptureValue], device: &Device) -> Result<()> {
    for (c, v) in p.captures.iter().zip(captures) {
        if let CaptureValue::Device(d) = v {
            if d.location != device.location() {
                return Err(Error::Device(format!(
                    "kernel '{name}' captured device array {} in {} and cannot run on {}",
                    c.origin,
                    d.location,
                    device.describe()
                )));
            }
        }
    }
    Ok(())
}

/// Checks arguments against a signature; returns the specialisation they select.
pub(crate) fn check_args(kernel: &str, sig: &[(String, Ty)], args: &[ArgValue], device: &Device) -> Result<Specialization> {
    if sig.len() != args.len() {
        return Err(Error::ArgumentCount { kernel: kernel.to_string(), expected: sig.len(), got: args.len() });
    }
    let mut layouts = Vec::new();
    for ((pname, pty), a) in sig.iter().zip(args) {
        let bad = |problem: String| Error::BadArgument { kernel: kernel.to_string(), param: pname.clone(), problem };
        match (pty, a) {
            (Ty::Scalar(s), ArgValue::Scalar(v)) => {
                if v.ty() != *s {
                    return Err(bad(format!("expected `{s}`, got `{}`", v.ty())));
                }
                layouts.push(None);
            }
            (Ty::Scalar(s), ArgValue::Array { desc, .. }) => return Err(bad(format!("expected a `{s}` scalar, got {}", desc.describe()))),
            (Ty::Array(t), ArgValue::Scalar(v)) => return Err(bad(format!("expected `{t}`, got the scalar `{}`", v.ty()))),
            (Ty::Array(t), ArgValue::Array { desc, writable }) => {
                check_array_arg(t, desc, *writable).map_err(bad)?;
                if desc.location != device.location() {
                    return Err(bad(format!("the array is in {}, but the kernel is launched on {}", desc.location, device.describe())));
                }
                layouts.push(Some(desc.layout));
            }
            _ => return Err(bad("unsupported parameter type".into())),
        }
    }
    Ok(Specialization { layouts })
}

fn check_array_arg(t: &ArrayTy, d: &ArrayDesc, writable: bool) -> std::result::Result<(), String> {
    if d.elem != t.elem {
        return Err(format!("expected elements of type `{}`, got `{}`", t.elem, d.elem));
    }
    if d.shape.len() != t.ndim as usize {
        return Err(format!("expected a {}-d array, got a {}-d array", t.ndim, d.shape.len()));
    }
    if t.writable && !writable {
        return Err(if d.read_only {
            "the kernel writes this array, but it is read-only".to_string()
        } else {
            "the kernel writes this array: pass it as `&mut`".to_string()
        });
    }
    Ok(())
}

/// How a compiled kernel was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Compiled in this process.
    Compiled {
        /// Milliseconds it took.
        ms: u32,
    },
    /// Found in a cache tier.
    Cache(Tier),
    /// Loaded from serialised bytes.
    Deserialized,
    /// PTX compiled at build time (`kache::prebuild`).
    Prebuilt,
}

/// A kernel compiled for one target and one specialisation: PTX or host code, ready to load
/// and launch. Keeps every array the kernel captured alive.
pub struct CompiledKernel {
    name: String,
    key: Key,
    target: Target,
    spec: Specialization,
    signature: Vec<(String, Ty)>,
    abi: Vec<ParamAbi>,
    artifact: Artifact,
    entry: String,
    cooperative: bool,
    static_shared: u64,
    library: Arc<CodeLibrary>,
    device_captures: Vec<Location>,
    origin: Origin,
    jit: Option<Jit>,
    host: OnceLock<std::result::Result<Arc<HostModule>, String>>,
    cuda: Mutex<HashMap<usize, Arc<cuda::LoadedFunction>>>,
    cubin_origin: Mutex<Option<Tier>>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("name", &self.name)
            .field("key", &self.key)
            .field("target", &self.target)
            .field("spec", &self.spec.describe())
            .field("origin", &self.origin)
            .finish()
    }
}

impl CompiledKernel {
    #[allow(clippy::too_many_arguments)]
    fn new(
        k: &Kernel,
        target: Target,
        spec: &Specialization,
        key: Key,
        artifact: Artifact,
        entry: String,
        library: Arc<CodeLibrary>,
        origin: Origin,
    ) -> CompiledKernel {
        let p = &k.inner.program;
        CompiledKernel {
            name: k.inner.name.clone(),
            key,
            target,
            spec: spec.clone(),
            signature: k.inner.signature.clone(),
            abi: ParamAbi::of(p),
            artifact,
            entry,
            cooperative: p.funcs.iter().any(|f| f.uses_block_sync),
            static_shared: crate::abi::static_shared_bytes(p),
            library,
            device_captures: k
                .inner
                .captures
                .iter()
                .filter_map(|c| if let CaptureValue::Device(d) = c { Some(d.location) } else { None })
                .collect(),
            origin,
            jit: Some(k.inner.jit.clone()),
            host: OnceLock::new(),
            cuda: Mutex::new(HashMap::new()),
            cubin_origin: Mutex::new(None),
        }
    }

    fn from_entry(k: &Kernel, target: Target, spec: &Specialization, key: Key, entry: &Entry, tier: Tier) -> Result<CompiledKernel> {
        let artifact = match (entry.meta.kind, target) {
            (ArtifactKind::Ptx, Target::Nvptx(_)) => {
                Artifact::Ptx(String::from_utf8(entry.payload.to_vec()).map_err(|_| Error::BadSerializedKernel("PTX is not UTF-8".into()))?)
            }
            (ArtifactKind::HostBitcode, Target::Host) => Artifact::HostBitcode(entry.payload.to_vec()),
            (kind, _) => return Err(Error::BadSerializedKernel(format!("entry holds {kind:?}, not code for {target}"))),
        };
        let library = CodeLibrary::assemble(&k.inner.program, &k.inner.captures, None);
        Ok(CompiledKernel::new(k, target, spec, key, artifact, entry.meta.entry.clone(), library, Origin::Cache(tier)))
    }

    /// Kernel name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its cache key.
    pub fn key(&self) -> Key {
        self.key
    }

    /// Where it came from.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Where the cubin came from on the last CUDA load (`None`: built from PTX by the driver).
    pub fn cubin_origin(&self) -> Option<Tier> {
        *self.cubin_origin.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The specialisation.
    pub fn spec(&self) -> &Specialization {
        &self.spec
    }

    /// The PTX, for CUDA targets.
    pub fn ptx(&self) -> Option<&str> {
        match &self.artifact {
            Artifact::Ptx(s) => Some(s),
            _ => None,
        }
    }

    /// The compiled artifact.
    pub fn artifact(&self) -> &Artifact {
        &self.artifact
    }

    /// The entry symbol.
    pub fn entry(&self) -> &str {
        &self.entry
    }

    /// Its code library: what it links and references.
    pub fn library(&self) -> &Arc<CodeLibrary> {
        &self.library
    }

    /// Parameter names and types.
    pub fn signature(&self) -> &[(String, Ty)] {
        &self.signature
    }

    /// Launches with arguments checked against the signature and the specialisation.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = args.args()?;
        let spec = check_args(&self.name, &self.signature, &args, device)?;
        if spec != self.spec {
            return Err(Error::BadArgument {
                kernel: self.name.clone(),
                param: "(layouts)".into(),
                problem: format!("compiled for array layouts {} but given {}", self.spec.describe(), spec.describe()),
            });
        }
        grid.check()?;
        self.launch_checked(device, grid, &args)
    }

    fn launch_checked(&self, device: &Device, grid: Grid, args: &[ArgValue]) -> Result<()> {
        if device.target() != self.target && !(device.is_cuda() && matches!(self.target, Target::Nvptx(_))) {
            return Err(Error::Device(format!("kernel '{}' was compiled for {}, not for {}", self.name, self.target, device.describe())));
        }
        for loc in &self.device_captures {
            if *loc != device.location() {
                return Err(Error::Device(format!(
                    "kernel '{}' captured an array in {loc} and cannot run on {}",
                    self.name,
                    device.describe()
                )));
            }
        }
        // One 8-byte slot per flattened parameter.
        let mut slots: Vec<u64> = Vec::new();
        for (abi, a) in self.abi.iter().zip(args) {
            match (abi, a) {
                (ParamAbi::Scalar(_), ArgValue::Scalar(v)) => slots.push(scalar_slot(*v)),
                (ParamAbi::Array { .. }, ArgValue::Array { desc, .. }) => {
                    slots.push(desc.ptr);
                    slots.extend(desc.shape.iter().map(|d| *d as u64));
                    slots.extend(desc.strides.iter().map(|s| *s as i64 as u64));
                }
                _ => return Err(Error::BadArgument { kernel: self.name.clone(), param: "?".into(), problem: "argument kind".into() }),
            }
        }
        let g = [grid.grid.0, grid.grid.1, grid.grid.2];
        let b = [grid.block.0, grid.block.1, grid.block.2];
        match device.cuda_impl() {
            None => {
                let m = self.host_module()?;
                let ptrs: Vec<*const u8> = slots.iter().map(|s| s as *const u64 as *const u8).collect();
                // SAFETY: `m` owns the entry's code and outlives the launch; `slots` holds one value
                // per flattened parameter of this kernel's ABI, checked against its signature.
                unsafe {
                    host::run(
                        m.entry(),
                        host::HostLaunch {
                            grid: g,
                            block: b,
                            dyn_shared: grid.shared_mem as usize,
                            static_shared: self.static_shared as usize,
                            cooperative: self.cooperative,
                        },
                        &ptrs,
                    )
                }
            }
            Some(dev) => {
                let f = self.cuda_function(dev)?;
                let mut ptrs: Vec<*mut std::ffi::c_void> = slots.iter_mut().map(|s| s as *mut u64 as *mut std::ffi::c_void).collect();
                dev.launch(&f, g, b, grid.shared_mem, &mut ptrs)
            }
        }
    }

    fn host_module(&self) -> Result<Arc<HostModule>> {
        let r = self.host.get_or_init(|| match &self.artifact {
            Artifact::HostBitcode(b) => HostModule::load(b, &self.entry).map(Arc::new).map_err(|e| e.to_string()),
            Artifact::Ptx(_) | Artifact::Cubin(_) => {
                Err(format!("kernel '{}' was compiled for a GPU, not for the host backend", self.name))
            }
        });
        r.clone().map_err(Error::Device)
    }

    fn cuda_function(&self, dev: &cuda::CudaDevice) -> Result<Arc<cuda::LoadedFunction>> {
        if let Some(f) = self.cuda.lock().unwrap_or_else(|e| e.into_inner()).get(&dev.ordinal) {
            return Ok(f.clone());
        }
        if let Artifact::Cubin(image) = &self.artifact {
            let built = match self.target {
                Target::Nvptx(a) => a.to_string(),
                Target::Host => "the host".to_string(),
            };
            let f = dev.load_image(image, &self.entry).map_err(|e| {
                Error::Device(format!(
                    "the cubin of kernel '{}' (built for {built}) did not load on {} ({}): {e}",
                    self.name, dev.name, dev.arch
                ))
            })?;
            let f = Arc::new(f);
            self.cuda.lock().unwrap_or_else(|e| e.into_inner()).insert(dev.ordinal, f.clone());
            return Ok(f);
        }
        let ptx = self.ptx().ok_or_else(|| Error::Device(format!("kernel '{}' was compiled for the host backend", self.name)))?;
        let proof = self.library.persistable().ok();
        let cache = self.jit.as_ref().filter(|j| j.config().cubin_tier).map(|j| j.cache());
        let ckey = crate::cache::cubin_key(&self.key.0, &dev.arch.to_string(), dev.driver_version);
        let mut loaded = None;
        if let (Some(cache), Some(_)) = (cache, &proof) {
            if let Lookup::Hit(e, tier) = cache.lookup(&ckey) {
                if e.meta.kind == ArtifactKind::Cubin {
                    match dev.load_image(&e.payload, &self.entry) {
                        Ok(f) => {
                            *self.cubin_origin.lock().unwrap_or_else(|e| e.into_inner()) = Some(tier);
                            loaded = Some(f);
                        }
                        Err(err) => cache.warn_once(
                            &format!("cubin:{ckey}"),
                            &format!("a cached cubin for '{}' did not load ({err}); rebuilding it from PTX", self.name),
                        ),
                    }
                }
            }
        }
        let f = match loaded {
            Some(f) => f,
            None => {
                let t0 = Instant::now();
                let (f, cubin) = dev.load_ptx(ptx, &self.entry)?;
                if let (Some(cache), Some(proof), Some(cubin)) = (cache, proof, cubin) {
                    let ms = t0.elapsed().as_millis().min(u32::MAX as u128) as u32;
                    let meta = Meta::new(ckey, &self.name, &signature_text(&self.signature), ArtifactKind::Cubin, &self.entry, ms);
                    cache.store(proof, Entry { meta, payload: cubin.into() });
                }
                f
            }
        };
        let f = Arc::new(f);
        self.cuda.lock().unwrap_or_else(|e| e.into_inner()).insert(dev.ordinal, f.clone());
        Ok(f)
    }

    /// Serialises to bytes that [`deserialize`](Self::deserialize) loads in another process.
    /// A kernel whose library references a device array, directly or through any linked
    /// library, fails with [`Error::NotSerializable`].
    pub fn serialize(&self) -> Result<Vec<u8>> {
        if let Err(refs) = self.library.persistable() {
            return Err(Error::NotSerializable { kernel: self.name.clone(), what: refs[0].describe() });
        }
        let mut out = Vec::new();
        out.extend_from_slice(SER_MAGIC);
        out.extend_from_slice(&SER_VERSION.to_le_bytes());
        let mut opts = Vec::new();
        self.jit.as_ref().map(|j| j.config().options(self.target)).unwrap_or(Options::new(self.target)).encode(&mut opts);
        match self.target {
            Target::Nvptx(a) => {
                out.push(0);
                out.extend_from_slice(&a.sm.to_le_bytes());
                out.push(a.accelerated as u8);
            }
            Target::Host => out.push(1),
        }
        put_str(&mut out, &self.name);
        put_str(&mut out, &self.entry);
        out.push(self.cooperative as u8);
        out.extend_from_slice(&self.static_shared.to_le_bytes());
        out.extend_from_slice(&(self.signature.len() as u32).to_le_bytes());
        for (n, t) in &self.signature {
            put_str(&mut out, n);
            match t {
                Ty::Scalar(s) => out.extend_from_slice(&[0, *s as u8, 0, 0]),
                Ty::Array(a) => out.extend_from_slice(&[1, a.elem as u8, a.ndim, a.writable as u8]),
                _ => out.extend_from_slice(&[2, 0, 0, 0]),
            }
        }
        out.extend_from_slice(&(self.spec.layouts.len() as u32).to_le_bytes());
        for l in &self.spec.layouts {
            out.push(match l {
                None => 0,
                Some(Layout::C) => 1,
                Some(Layout::F) => 2,
                Some(Layout::A) => 3,
            });
        }
        let bytes = self.artifact.bytes();
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
        let h = *blake3::hash(&out).as_bytes();
        out.extend_from_slice(&h);
        Ok(out)
    }

    /// Loads a kernel serialised by [`serialize`](Self::serialize). Anything that does not
    /// verify is an error.
    pub fn deserialize(bytes: &[u8]) -> Result<CompiledKernel> {
        let bad = |m: &str| Error::BadSerializedKernel(m.to_string());
        if bytes.len() < SER_MAGIC.len() + 2 + 32 || &bytes[..SER_MAGIC.len()] != SER_MAGIC {
            return Err(bad("not a serialised kache kernel"));
        }
        let (body, hash) = bytes.split_at(bytes.len() - 32);
        if blake3::hash(body).as_bytes() != hash {
            return Err(bad("checksum mismatch"));
        }
        let mut r = SerReader { b: &body[SER_MAGIC.len()..] };
        let v = u16::from_le_bytes(r.take(2)?.try_into().map_err(|_| bad("version"))?);
        if v != SER_VERSION {
            return Err(bad(&format!("format version {v} is not {SER_VERSION}")));
        }
        let target = match r.u8()? {
            0 => {
                let sm = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| bad("arch"))?);
                let accelerated = r.u8()? != 0;
                Target::Nvptx(Arch { sm, accelerated })
            }
            1 => Target::Host,
            _ => return Err(bad("target")),
        };
        let name = r.str()?;
        let entry = r.str()?;
        let cooperative = r.u8()? != 0;
        let static_shared = u64::from_le_bytes(r.take(8)?.try_into().map_err(|_| bad("shared"))?);
        let n = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| bad("params"))?) as usize;
        if n > 4096 {
            return Err(bad("parameter count"));
        }
        let mut signature = Vec::new();
        for _ in 0..n {
            let pname = r.str()?;
            let t = r.take(4)?;
            let scalar = |x: u8| Scalar::from_tag(x).ok_or_else(|| bad("scalar type"));
            let ty = match t[0] {
                0 => Ty::Scalar(scalar(t[1])?),
                1 if t[2] <= 4 => Ty::Array(ArrayTy { elem: scalar(t[1])?, ndim: t[2], writable: t[3] != 0 }),
                _ => return Err(bad("parameter type")),
            };
            signature.push((pname, ty));
        }
        let nl = u32::from_le_bytes(r.take(4)?.try_into().map_err(|_| bad("layouts"))?) as usize;
        if nl != n {
            return Err(bad("layout count"));
        }
        let mut layouts = Vec::new();
        for _ in 0..nl {
            layouts.push(match r.u8()? {
                0 => None,
                1 => Some(Layout::C),
                2 => Some(Layout::F),
                3 => Some(Layout::A),
                _ => return Err(bad("layout")),
            });
        }
        let len = u64::from_le_bytes(r.take(8)?.try_into().map_err(|_| bad("length"))?) as usize;
        let art = r.take(len)?.to_vec();
        if !r.b.is_empty() {
            return Err(bad("trailing bytes"));
        }
        let artifact = match target {
            // PTX is text; a cubin is an ELF image.
            Target::Nvptx(_) if art.starts_with(b"\x7fELF") => Artifact::Cubin(art),
            Target::Nvptx(_) => Artifact::Ptx(String::from_utf8(art).map_err(|_| bad("PTX is not UTF-8"))?),
            Target::Host => Artifact::HostBitcode(art),
        };
        let abi = signature
            .iter()
            .map(|(_, t)| match t {
                Ty::Array(a) => ParamAbi::Array { elem: a.elem, ndim: a.ndim },
                Ty::Scalar(s) => ParamAbi::Scalar(*s),
                _ => ParamAbi::Scalar(Scalar::Bool),
            })
            .collect();
        let library = Arc::new(CodeLibrary::new(name.clone(), crate::library::LibraryKind::Kernel, None, Vec::new()));
        Ok(CompiledKernel {
            key: Key(*blake3::hash(bytes).as_bytes()),
            name,
            target,
            spec: Specialization { layouts },
            signature,
            abi,
            artifact,
            entry,
            cooperative,
            static_shared,
            library,
            device_captures: Vec::new(),
            origin: Origin::Deserialized,
            jit: None,
            host: OnceLock::new(),
            cuda: Mutex::new(HashMap::new()),
            cubin_origin: Mutex::new(None),
        })
    }
}

const SER_MAGIC: &[u8] = b"KACHEKRN";
const SER_VERSION: u16 = 1;

fn put_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

struct SerReader<'a> {
    b: &'a [u8],
}

impl<'a> SerReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(Error::BadSerializedKernel("truncated".into()));
        }
        let (h, t) = self.b.split_at(n);
        self.b = t;
        Ok(h)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn str(&mut self) -> Result<String> {
        let n = u32::from_le_bytes(self.take(4)?.try_into().map_err(|_| Error::BadSerializedKernel("string".into()))?) as usize;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Error::BadSerializedKernel("string is not UTF-8".into()))
    }
}

fn scalar_slot(v: ScalarValue) -> u64 {
    match v {
        ScalarValue::Bool(b) => b as u64,
        ScalarValue::Int(_, bits) => bits,
        ScalarValue::F16(x) => x.to_bits() as u64,
        ScalarValue::Bf16(x) => x.to_bits() as u64,
        ScalarValue::F32(x) => x.to_bits() as u64,
        ScalarValue::F64(x) => x.to_bits(),
    }
}
