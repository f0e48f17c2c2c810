//! The runtime JIT: loads kernel sources into modules with bound globals, and compiles their
//! kernels through the cache. This file holds [`Jit`] and the state its modules and kernels
//! share (parsed sources and live kernels, each deduplicated).

mod batch;
mod compiled;
mod kernel;
mod launch;
mod module;
mod serialize;

pub use batch::CompileRequest;
pub use compiled::{CompiledKernel, Origin};
pub use kernel::Kernel;
pub(crate) use launch::check_args;
pub use module::{FactoryArgs, Module};

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, Weak};

use crate::cache::{Cache, CacheConfig};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::lang::ast::SourceModule;
use crate::lang::{self, SourceFile};
use kernel::KernelInner;

/// A parsed source file, shared by every module loaded from the same name and bytes.
struct Source {
    file: Arc<SourceFile>,
    ast: SourceModule,
}

/// What the clones of a [`Jit`] share: parsed sources and live kernels are kept by weak
/// reference, so loading the same text twice parses once and asking for the same kernel with
/// the same bindings checks once, while nothing is kept alive past its last user.
struct JitInner {
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
