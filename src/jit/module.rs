//! [`Module`]: a parsed kernel source and the globals bound on it, from which kernels and
//! factory closures are made (and shared while alive); [`FactoryArgs`], a factory's arguments.

use std::sync::{Arc, Weak};

use super::kernel::{Kernel, KernelInner};
use super::records;
use super::{Jit, Source};
use crate::capture::{CaptureValue, IntoCapture};
use crate::error::{Error, Result};
use crate::ir::CaptureTy;
use crate::lang::{self, Env, ModuleSummary};

/// A parsed kernel source with the globals bound on it. Bindings are values:
/// [`with_global`](Module::with_global) returns a new module, and kernels compiled from the old
/// one keep their bindings.
#[derive(Clone)]
pub struct Module {
    pub(super) jit: Jit,
    pub(super) source: Arc<Source>,
    pub(super) source_id: [u8; 32],
    pub(super) globals: Arc<Vec<(String, CaptureValue)>>,
    /// Whether kernels of this module may be written to the local store and the remote.
    pub(super) persist: bool,
    /// Whether front-end records may serve its kernels and be written for them
    /// ([`records`](super::records)).
    pub(super) records: bool,
    /// How its globals are bound (for the remedies of messages).
    pub(super) binder: lang::Binder,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Module")
            .field("file", &self.source.file.name())
            .field("globals", &self.globals.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("persist", &self.persist)
            .finish()
    }
}

/// The kernels [`Module::kernels_to_compile`] lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelsToCompile {
    /// Kernel and instance names, in source order (instances in the order of their types).
    pub names: Vec<String>,
    /// Generic kernels left out (their signature), and why.
    pub left_out: Vec<(String, String)>,
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

    /// Whether its source has been parsed in this process. With a local store, a load whose
    /// root and module files a record shows to parse parses nothing, and a kernel whose check
    /// a record holds (same source, globals and name) is not checked again: the source is
    /// parsed only when something needs its syntax (docs/cache.md, "Direct mode").
    pub fn parsed(&self) -> bool {
        self.source.ast.get().is_some()
    }

    /// Every source file of the module: the root, then each file its `mod` items named, in
    /// the order they were read (their names are paths, as loaded; their texts as parsed).
    pub fn files(&self) -> &[std::sync::Arc<crate::lang::SourceFile>] {
        self.source.files()
    }

    /// The module files read for it (after the root), by path relative to the root file's
    /// folder (`common.rs`, `geo/mod.rs`), with their texts.
    pub fn module_files(&self) -> Vec<(String, String)> {
        self.source.modules.iter().filter_map(|(p, t)| Some((p.clone(), t.clone()?))).collect()
    }

    /// Names of the `#[kernel]` functions (`name` in the root file, `module::name` in a module).
    pub fn kernel_names(&self) -> Vec<String> {
        self.source.ast_or_log().map(|a| a.kernel_names()).unwrap_or_default()
    }

    /// Names of the factories that return `impl Kernel`.
    pub fn factory_names(&self) -> Vec<String> {
        self.source.ast_or_log().map(|a| a.kernel_factory_names()).unwrap_or_default()
    }

    /// Globals bound so far.
    pub fn globals(&self) -> Vec<(&str, CaptureTy)> {
        self.globals.iter().map(|(n, v)| (n.as_str(), v.ty())).collect()
    }

    fn env(&self) -> Env {
        Env { globals: self.globals.iter().map(|(n, v)| (n.clone(), v.ty())).collect(), binder: self.binder }
    }

    /// Logs what the checker warned about (once per checked kernel).
    fn warn(&self, p: &crate::ir::Program) {
        for w in self.warnings(p) {
            crate::logging::warning!("{w}");
        }
    }

    /// What the checker warned about in `p`, each as `file:line:col: message`.
    pub(super) fn warnings(&self, p: &crate::ir::Program) -> Vec<String> {
        p.warnings
            .iter()
            .map(|(span, msg)| {
                let file = self.files().iter().rev().find(|f| f.contains(*span)).unwrap_or(&self.source.file);
                format!("{}: {msg}", file.location(*span))
            })
            .collect()
    }

    /// Checks every item of the source whose check does not depend on the bound globals
    /// ([`lang::check_unbound_items`]), once per process for the same source and globals: a
    /// kernel is given only from a source whose every such item checks (a recursive struct or
    /// a generic body missing a bound that no kernel uses included), on every path that makes
    /// one (the JIT, `kache compile`, the prebuild step), as [`check`](Self::check) and
    /// `kache check` reject it. The kernel's own errors come first (its check runs before this).
    fn check_items(&self) -> Result<()> {
        let mut h = blake3::Hasher::new();
        h.update(&self.source_id);
        let mut globals: Vec<String> = self.globals.iter().map(|(n, v)| format!("{n}: {:?}", v.ty())).collect();
        globals.sort();
        for g in &globals {
            h.update(&(g.len() as u64).to_le_bytes());
            h.update(g.as_bytes());
        }
        let id = *h.finalize().as_bytes();
        if self.jit.inner.checked_items.lock().unwrap_or_else(|e| e.into_inner()).contains(&id) {
            return Ok(());
        }
        lang::check_unbound_items(self.source.ast()?, &self.env())?;
        self.jit.inner.checked_items.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
        Ok(())
    }

    /// Type-checks every item with the bound globals.
    pub fn check(&self) -> Result<ModuleSummary> {
        Ok(lang::check_module(self.source.ast()?, &self.env())?)
    }

    /// A new module with global `name` bound to `value` (replacing an earlier binding): host
    /// scalars and arrays (an [`ArrayInterface`](crate::ArrayInterface) in
    /// [`Location::HostMemory`](crate::Location::HostMemory) included) are copied in as
    /// constants, device arrays are captured by address (`docs/captures.md`). A `const` or
    /// `static` of the source with the same name is an error naming both.
    pub fn with_global(&self, name: &str, value: impl IntoCapture) -> Result<Module> {
        if !is_identifier(name) {
            return Err(Error::Binding { name: name.to_string(), problem: "not an identifier".into() });
        }
        let value = value.into_capture().map_err(|e| Error::Binding { name: name.to_string(), problem: e.to_string() })?;
        let mut globals: Vec<(String, CaptureValue)> = self.globals.iter().filter(|(n, _)| n != name).cloned().collect();
        globals.push((name.to_string(), value));
        Ok(Module { globals: Arc::new(globals), ..self.clone() })
    }

    /// A new module whose messages about globals speak of `binder`'s way of binding them
    /// (`--define` for the command line, `Builder::global` for a build script; the default is
    /// [`Binder::Program`](lang::Binder::Program), `with_global`). Nothing else changes.
    pub fn bound_by(&self, binder: lang::Binder) -> Module {
        Module { binder, ..self.clone() }
    }

    /// A new module whose kernels are (`true`, the default) or are not (`false`) written to the
    /// local store and the remote, as numba's `cache=False`: they are compiled once per process
    /// and kept in its memory, a kernel that captures a device array prints no "not cached on
    /// disk" warning, and `KACHE_STRICT` does not make it an error.
    ///
    /// ```
    /// use kache::{Config, Device, Jit};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let jit = Jit::new(Config::in_memory().with_cache_dir(dir.path()))?;
    /// let k = jit.load_source("p.rs", "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }")?.persist(false).kernel("k")?;
    /// k.compile_for(&Device::host())?;
    /// assert_eq!(jit.cache().stats().entries, 0); // nothing on disk
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn persist(&self, on: bool) -> Module {
        Module { persist: on, ..self.clone() }
    }

    fn request_id(&self, what: &str, name: &str, extra: &[CaptureValue]) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(&self.source_id);
        h.update(&[self.persist as u8]);
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
            crate::cache::key::encode_capture(v, &mut buf);
        }
        for v in extra {
            crate::cache::key::encode_capture(v, &mut buf);
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
    ///
    /// `name` may name an instance of a generic kernel, `axpy::<f64>` or `conv1d::<f32, 3>`
    /// (spaces do not matter; constants may be expressions and `const` items). A generic kernel
    /// named without arguments is checked against its bounds and returned as a generic
    /// [`Kernel`]: each launch runs the instance its argument types need.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let asked = name.trim();
        let eligible = records::eligible(self);
        // Not parsed (a record showed the source parses): a record of this kernel's check serves.
        if eligible
            && !self.parsed()
            && let Some(k) = self.recorded_kernel(asked)
        {
            return Ok(k);
        }
        let ast = self.source.ast()?;
        let env = self.env();
        let resolved = lang::resolve_kernel_name(ast, &env, asked)?;
        let name = resolved.canonical.as_str();
        let id = self.request_id("kernel", name, &[]);
        let mut checked = false;
        let k = self.memo(id, || {
            let bindings: Vec<CaptureValue> = self.globals.iter().map(|(_, v)| v.clone()).collect();
            if resolved.args.is_empty() && ast.func(name).is_some_and(|f| f.is_kernel && f.is_generic()) {
                let g = lang::check_generic_kernel(ast, &env, name)?;
                self.check_items()?;
                checked = true;
                return KernelInner::new_generic(self, g, &bindings);
            }
            let program = lang::check_kernel(ast, &env, name)?;
            self.check_items()?;
            self.warn(&program);
            checked = true;
            KernelInner::new(self, name, program, &bindings)
        })?;
        if checked && eligible {
            match &k.inner.generic {
                Some(g) => records::record_generic(self, asked, &g.sig, k.program()),
                None => {
                    let warnings = self.warnings(k.program());
                    records::record_kernel(self, asked, name, k.program(), &k.fault_sites(), &warnings);
                }
            }
        }
        Ok(k)
    }

    /// Kernel `asked` from the record of its check, if one holds it: nothing parsed or checked.
    fn recorded_kernel(&self, asked: &str) -> Option<Kernel> {
        // Asked for before in this process (and still held): the same kernel.
        let live = self
            .jit
            .inner
            .kernels
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&self.request_id("kernel", asked, &[]))
            .and_then(Weak::upgrade);
        if let Some(k) = live {
            return Some(Kernel { inner: k });
        }
        let bindings: Vec<CaptureValue> = self.globals.iter().map(|(_, v)| v.clone()).collect();
        let made = match records::recorded_kernel(self, asked)? {
            records::Checked::Kernel { canonical, program, sites, warnings } => {
                self.memo(self.request_id("kernel", &canonical, &[]), || {
                    for w in &warnings {
                        crate::logging::warning!("{w}");
                    }
                    Ok(KernelInner::new(self, &canonical, program, &bindings)?.with_fault_sites(sites))
                })
            }
            records::Checked::Generic { sig, program } => self.memo(self.request_id("kernel", &sig.name, &[]), || {
                KernelInner::new_generic(self, lang::GenericKernel { sig, program }, &bindings)
            }),
        };
        made.ok()
    }

    /// What compiling every kernel of the module means (`kache compile FILE` without
    /// `--kernel`, the prebuild step without an instance list): each kernel that is not generic,
    /// and each instance of each generic kernel whose generic parameters are all type
    /// parameters (every type its bounds admit; `axpy<T: Float>` gives `axpy::<f16>` ..
    /// `axpy::<f64>`), and the instances the candidates of a `#[tune]` kernel whose generic
    /// parameters are all constants run (`matmul::<8>`, `matmul::<16>` ..). Another generic
    /// kernel with a const parameter, or with more than
    /// [`GenericKernelSig::MAX_INSTANCES`](lang::GenericKernelSig::MAX_INSTANCES) instances, is
    /// left out, with the reason.
    ///
    /// ```
    /// # let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let m = jit.load_source("g.rs", r#"
    ///     #[kernel] pub fn zero(x: &mut [f32]) { x[0] = 0.0; }
    ///     #[kernel] pub fn neg<T: Float>(x: &mut [T]) { x[0] = -x[0]; }
    ///     #[kernel] pub fn tile<const N: usize>(x: &mut [f32]) { x[0] = N as f32; }
    /// "#)?;
    /// let all = m.kernels_to_compile()?;
    /// assert_eq!(all.names, ["zero", "neg::<f16>", "neg::<bf16>", "neg::<f32>", "neg::<f64>"]);
    /// assert_eq!(all.left_out[0].0, "tile<const N: usize>(x: &mut [f32])");
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn kernels_to_compile(&self) -> Result<KernelsToCompile> {
        let generic = self.generic_kernels()?;
        let mut out = KernelsToCompile::default();
        for name in self.kernel_names() {
            match generic.iter().find(|g| g.name == name) {
                None => out.names.push(name),
                Some(g) => match g.every_instance() {
                    Ok(names) => out.names.extend(names),
                    // A tuned kernel's candidates name its instances (`#[tune]`).
                    Err(why) => match self.kernel(&name).ok().as_ref().and_then(super::tune::candidate_instances) {
                        Some(names) => out.names.extend(names),
                        None => out.left_out.push((g.signature.clone(), why)),
                    },
                },
            }
        }
        Ok(out)
    }

    /// The generic kernels of the module with their generic parameters and parameters, each
    /// checked against its bounds.
    ///
    /// ```
    /// # let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let m = jit.load_source("g.rs", r#"
    ///     #[kernel]
    ///     pub fn scale<T: Float, const N: usize>(x: &mut [T], by: T) {
    ///         let i = global_id_x();
    ///         if i < x.len() { x[i] *= by; }
    ///     }
    /// "#)?;
    /// let g = m.generic_kernels()?;
    /// assert_eq!(g[0].signature, "scale<T: Float, const N: usize>(x: &mut [T], by: T)");
    /// assert_eq!(g[0].generics[1].to_string(), "const N: usize");
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn generic_kernels(&self) -> Result<Vec<lang::GenericKernelSig>> {
        let env = self.env();
        let ast = self.source.ast()?;
        let mut out = Vec::new();
        for f in ast.items.iter().filter_map(|i| match i {
            lang::ast::Item::Fn(f) if f.is_kernel && f.is_generic() => Some(f),
            _ => None,
        }) {
            out.push(lang::check_generic_kernel(ast, &env, &ast.qualified(f.module, &f.name.name))?.sig);
        }
        Ok(out)
    }

    /// Instantiates the factory `factory` with `args` (its parameters become the closure's
    /// captured variables) and returns the kernel closure it builds.
    pub fn closure(&self, factory: &str, args: impl FactoryArgs) -> Result<Kernel> {
        let args = args.values()?;
        let id = self.request_id("closure", factory, &args);
        self.memo(id, || {
            let types: Vec<CaptureTy> = args.iter().map(|a| a.ty()).collect();
            let program = lang::check_factory(self.source.ast()?, &self.env(), factory, &types)?;
            self.check_items()?;
            self.warn(&program);
            let mut bindings: Vec<CaptureValue> = self.globals.iter().map(|(_, v)| v.clone()).collect();
            bindings.extend(args.iter().cloned());
            KernelInner::new(self, factory, program, &bindings)
        })
    }
}
