//! [`Kernel`]: a checked kernel with its captured values; derives its cache key for each target
//! and specialisation, and compiles through the cache (or takes code built elsewhere).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::compiled::{CompiledKernel, Origin, artifact_kind};
use super::generic::GenericPart;
use super::launch::{check_args, check_capture_locations};
use super::module::Module;
use super::{Jit, Source};
use crate::abi::{self, CaptureData};
use crate::cache::{Assembler, Derivation, Entry, Key, KeyInputs, Lookup, Meta};
use crate::capture::{CaptureValue, HostData};
use crate::codegen::{self, Artifact};
use crate::error::{Error, Result};
use crate::ir::{CaptureSource, EnumDef, ExprKind, FuncKind, Layout, Program, Ty, Types};
use crate::lang::{GenericKernelSig, SourceFile};
use crate::library::CodeLibrary;
use crate::runtime::fault::{FaultSites, SiteInfo};
use crate::runtime::{ArgValue, Device, Grid, KernelArgs};
use crate::target::{Arch, Options, Specialization, Target};

/// Held while one specialisation compiles.
type CompileGate = Arc<Mutex<()>>;

/// What the clones of a [`Kernel`] share: its checked program and captured values, and the
/// specialisations compiled so far. It holds its source so that the JIT's weak map of parsed
/// sources keeps it while any kernel made from it lives.
pub(super) struct KernelInner {
    pub(super) jit: Jit,
    pub(super) name: String,
    pub(super) program: Program,
    pub(super) captures: Vec<CaptureValue>,
    pub(super) signature: Vec<(String, Ty)>,
    /// The enums of the signature's types, by [`EnumTy::id`](crate::ir::EnumTy).
    pub(super) enums: Vec<EnumDef>,
    /// The structs of the signature's types (the program's table of aggregates).
    pub(super) types: Types,
    /// Compiled so far, by code generation options (bounds checks included) and specialisation.
    compiled: Mutex<HashMap<(Options, Specialization), Arc<CompiledKernel>>>,
    /// Held by the compile of each specialisation on the launch path, so that it runs once
    /// however many threads (devices of one architecture) want it at the same time.
    compiling: Mutex<HashMap<(Options, Specialization), CompileGate>>,
    faults: OnceLock<Arc<FaultSites>>,
    /// Set for a generic kernel: its `program` is then its definition, and launches run
    /// instances.
    pub(super) generic: Option<GenericPart>,
    /// Whether its code may be written to the local store and the remote
    /// ([`Module::persist`]).
    pub(super) persist: bool,
    /// The configurations its tuned launches chose in this process (`#[tune]`).
    pub(super) tuned: super::tune::TunedMemo,
    source: Arc<Source>,
}

/// A compile whose key is derived ([`Kernel::prepare`]): what a batch of compiles looks up
/// together before compiling anything.
pub(super) struct Prepared {
    /// The kernel's key.
    pub(super) key: Key,
    libdevice: Option<crate::toolchain::Libdevice>,
    /// Keys to fetch with it (the cubin's, on a GPU).
    pub(super) prefetch: Vec<Key>,
}

/// Resolves each capture of a program to its value.
fn resolve_captures(program: &Program, bindings: &[CaptureValue]) -> Result<Vec<CaptureValue>> {
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

/// What code generation needs of each capture: device arrays by address, or through a slot
/// where `relocatable`.
fn capture_data(values: &[CaptureValue], relocatable: bool) -> Vec<CaptureData<'_>> {
    values
        .iter()
        .map(|v| match v {
            CaptureValue::Scalar(s) => CaptureData::Scalar(*s),
            CaptureValue::Host(h) => CaptureData::HostArray { shape: &h.shape, strides: &h.strides, bytes: &h.bytes },
            CaptureValue::Device(d) if relocatable => CaptureData::DeviceSlot { shape: &d.shape, strides: &d.strides },
            CaptureValue::Device(d) => CaptureData::DeviceArray { ptr: d.ptr, shape: &d.shape, strides: &d.strides },
        })
        .collect()
}

/// Each bounds-checked access of `p`, numbered as `abi::bounds_sites` numbers them, described
/// for fault reports: the array (and whose it is) and where the access is in `files` (the
/// root file and its modules, which share one space of offsets).
fn describe_sites(p: &Program, files: &[Arc<SourceFile>], kernel: &str) -> FaultSites {
    let sites = abi::bounds_sites(p)
        .iter()
        .map(|s| {
            let f = &p.funcs[s.func];
            let whose = match &f.kind {
                _ if s.func == p.kernel => String::new(),
                FuncKind::Closure { .. } => format!(" of closure `{}`", f.name),
                _ => format!(" of device function `{}`", f.name),
            };
            let what = |e: &ExprKind| match e {
                ExprKind::Capture(c) => Some(format!("captured array {}", p.captures[*c].origin)),
                ExprKind::SharedArray { elem, len, .. } => Some(format!("shared array `shared_array::<{elem}, {len}>()`")),
                ExprKind::DynSharedArray(elem) => Some(format!("dynamic shared array `dynamic_shared_array::<{elem}>()`")),
                _ => None,
            };
            let file = files.iter().rev().find(|f| f.contains(s.array.span));
            if let ExprKind::Builtin(crate::ir::Builtin::Unwrap, _) = &s.array.kind {
                // The span is the method's name (`unwrap`), or `expect(` and its message.
                let text = file.map(|f| f.snippet(s.array.span)).unwrap_or_default();
                let message = text
                    .strip_prefix("expect")
                    .and_then(|t| t.trim_start().strip_prefix('('))
                    .and_then(|t| syn::parse_str::<syn::LitStr>(t.trim()).ok())
                    .map(|l| l.value())
                    .unwrap_or_else(|| "called `Option::unwrap()` on a `None` value".to_string());
                return SiteInfo { array: format!("{message}{whose}"), ndim: 0, location: file.map(|f| f.location(s.array.span)) };
            }
            let array = match &s.array.kind {
                ExprKind::Local(l) if *l < f.params => format!("parameter `{}`{whose}", f.locals[*l].name),
                ExprKind::Local(l) => match local_init(&f.body, *l).and_then(what) {
                    Some(w) => format!("`{}`{whose}, the {w}", f.locals[*l].name),
                    None => format!("array `{}`{whose}", f.locals[*l].name),
                },
                other => format!("{}{whose}", what(other).unwrap_or_else(|| "an array".into())),
            };
            SiteInfo { array, ndim: s.indices.len(), location: file.map(|f| f.location(s.array.span)) }
        })
        .collect();
    FaultSites { kernel: kernel.to_string(), sites }
}

/// The expression a `let` binds local `l` to, if one does.
fn local_init(body: &crate::ir::Block, l: usize) -> Option<&ExprKind> {
    let mut blocks = vec![body];
    crate::ir::visit_block(body, &mut |e| match &e.kind {
        ExprKind::Block(b) | ExprKind::Loop(_, b) | ExprKind::While(_, _, b) | ExprKind::For { body: b, .. } => blocks.push(b),
        ExprKind::If(_, t, f) => blocks.extend(std::iter::once(t).chain(f)),
        _ => {}
    });
    blocks.iter().flat_map(|b| &b.stmts).find_map(|s| match s {
        crate::ir::Stmt::Let(id, Some(init)) if *id == l => Some(&init.kind),
        _ => None,
    })
}

/// The kernels warned about as "not cached on disk" in this process: each once, whatever
/// `Jit` compiled it.
fn warn_not_persisted_once(id: String, msg: &str) {
    static WARNED: std::sync::OnceLock<Mutex<std::collections::HashSet<String>>> = std::sync::OnceLock::new();
    let mut warned = WARNED.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if warned.insert(id) {
        crate::logging::warning!("{msg}");
    }
}

/// A signature as text: `(a: f32, x: &[f32], mode: Mode)`.
pub(super) fn signature_text(sig: &[(String, Ty)], enums: &[EnumDef], types: &Types) -> String {
    let ty = |t: &Ty| {
        types.name_with(*t, &|t| match t {
            Ty::Enum(e) => enums.get(e.id as usize).map(|d| d.name.clone()).unwrap_or_else(|| t.to_string()),
            t => t.to_string(),
        })
    };
    format!("({})", sig.iter().map(|(n, t)| format!("{n}: {}", ty(t))).collect::<Vec<_>>().join(", "))
}

impl KernelInner {
    pub(super) fn new(module: &Module, name: &str, program: Program, bindings: &[CaptureValue]) -> Result<KernelInner> {
        let captures = resolve_captures(&program, bindings)?;
        let signature = program.kernel().param_decls().iter().map(|p| (p.name.clone(), p.ty)).collect();
        Ok(KernelInner {
            jit: module.jit.clone(),
            enums: program.enums.clone(),
            types: program.types.clone(),
            name: name.to_string(),
            program,
            captures,
            signature,
            compiled: Mutex::new(HashMap::new()),
            compiling: Mutex::new(HashMap::new()),
            generic: None,
            faults: OnceLock::new(),
            persist: module.persist,
            tuned: Default::default(),
            source: module.source.clone(),
        })
    }

    /// The same kernel with its bounds checks described already (from a checked-kernel record:
    /// the description a check of the source makes).
    pub(super) fn with_fault_sites(self, sites: FaultSites) -> KernelInner {
        let _ = self.faults.set(Arc::new(sites));
        self
    }

    /// A generic kernel: its definition, from which launches make instances.
    pub(super) fn new_generic(module: &Module, g: crate::lang::GenericKernel, bindings: &[CaptureValue]) -> Result<KernelInner> {
        let mut k = KernelInner::new(module, &g.sig.name, g.program, bindings)?;
        k.generic = Some(GenericPart::new(g.sig, module.clone()));
        Ok(k)
    }
}

/// A kernel of a module (or the kernel closure of a factory instance), with its captures.
/// Compiled on first use for each device and argument layout, through the cache.
#[derive(Clone)]
pub struct Kernel {
    pub(super) inner: Arc<KernelInner>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.generic {
            Some(g) => write!(f, "Kernel({})", g.sig.signature),
            None => write!(f, "Kernel({}{})", self.inner.name, signature_text(&self.inner.signature, &self.inner.enums, &self.inner.types)),
        }
    }
}

impl Kernel {
    /// Kernel name; an instance's name for an instance (`axpy::<f32>`).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// Parameter names and types (for a generic kernel, with [`Ty::Param`] types).
    pub fn signature(&self) -> &[(String, Ty)] {
        &self.inner.signature
    }

    /// The enums of the signature's types, by [`EnumTy::id`](crate::ir::EnumTy): an enum
    /// parameter takes the enum's discriminant as its integer type (`2u8`), checked to be a
    /// variant's at launch.
    pub fn enums(&self) -> &[EnumDef] {
        &self.inner.enums
    }

    /// Whether this is a generic kernel (not one of its instances): launching it runs the
    /// instance its argument types need; code and keys exist only for instances.
    pub fn is_generic(&self) -> bool {
        self.inner.generic.is_some()
    }

    /// A generic kernel's generic parameters and parameters; `None` for a kernel that is not
    /// generic (instances included).
    pub fn generic_signature(&self) -> Option<&GenericKernelSig> {
        self.inner.generic.as_ref().map(|g| &g.sig)
    }

    /// The instance of this generic kernel for the generic arguments `args`, written as in a
    /// turbofish: `k.instance("f64")` is `module.kernel("axpy::<f64>")`. Made once and kept.
    ///
    /// ```
    /// # let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let m = jit.load_source("g.rs", "#[kernel] pub fn fill<T: Num>(x: &mut [T], v: T) { let i = global_id_x(); if i < x.len() { x[i] = v; } }")?;
    /// let fill = m.kernel("fill")?;
    /// assert!(fill.is_generic());
    /// assert_eq!(fill.instance("u32")?.name(), "fill::<u32>");
    /// assert!(fill.instance("bool").is_err()); // `bool` is not `Num`
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn instance(&self, args: &str) -> Result<Kernel> {
        let Some(g) = &self.inner.generic else {
            return Err(Error::BadArgument {
                kernel: self.inner.name.clone(),
                param: "(generic arguments)".into(),
                problem: "the kernel is not generic".into(),
            });
        };
        g.instance_named(&format!("{}::<{args}>", self.inner.name))
    }

    /// The names of the instances this generic kernel has made so far (by launches and by
    /// [`Kernel::instance`]), sorted; empty for a kernel that is not generic.
    pub fn instances(&self) -> Vec<String> {
        self.inner.generic.as_ref().map(|g| g.instance_names()).unwrap_or_default()
    }

    fn not_generic(&self) -> Result<()> {
        match &self.inner.generic {
            Some(g) => Err(g.not_an_instance()),
            None => Ok(()),
        }
    }

    /// The checked program: the kernel and everything it reaches (for a generic kernel, its
    /// definition as checked against its bounds, which is not compiled).
    pub fn program(&self) -> &Program {
        &self.inner.program
    }

    /// The captured values, by capture id.
    pub fn captures(&self) -> &[CaptureValue] {
        &self.inner.captures
    }

    /// The kernel's code library tree (without LLVM modules): what it references and how.
    pub fn library(&self) -> Arc<CodeLibrary> {
        CodeLibrary::assemble(&self.inner.program, &self.inner.captures, None, self.relocatable())
    }

    /// Whether device arrays are captured through slots (the JIT's configuration).
    fn relocatable(&self) -> bool {
        self.inner.jit.config().relocatable_captures
    }

    /// How its fault records are reported (computed once per kernel).
    pub(super) fn fault_sites(&self) -> Arc<FaultSites> {
        self.inner.faults.get_or_init(|| Arc::new(describe_sites(&self.inner.program, self.inner.source.files(), &self.inner.name))).clone()
    }

    /// The key this kernel's bounds-checked code is cached under for `target` and `spec`, with
    /// each component's hash.
    pub fn explain(&self, target: Target, spec: &Specialization) -> Result<Derivation> {
        let (d, _) = self.derive(&self.inner.jit.config().options(target), spec)?;
        Ok(d)
    }

    fn derive(&self, options: &Options, spec: &Specialization) -> Result<(Derivation, Option<crate::toolchain::Libdevice>)> {
        self.not_generic()?;
        let target = options.target;
        if let Target::Nvptx(arch) = target {
            crate::lang::check_arch(&self.inner.program, arch.sm, arch.accelerated)
                .map_err(|d| Error::Source(crate::lang::Diagnostics::in_files(self.inner.source.files().to_vec(), vec![*d])))?;
        }
        let libdevice = match target {
            Target::Nvptx(_) if self.inner.program.uses_libdevice() => crate::toolchain::libdevice(),
            _ => None,
        };
        if let (Target::Nvptx(_), true, None) = (target, self.inner.program.uses_libdevice(), &libdevice) {
            let function = codegen::first_libdevice_use(&self.inner.program).unwrap_or_else(|| "a transcendental function".into());
            return Err(codegen::CodegenError::NoLibdevice { kernel: self.inner.name.clone(), function }.into());
        }
        Ok((self.derive_with(options, spec, libdevice.as_ref().map(|l| l.hash)), libdevice))
    }

    fn derive_with(&self, options: &Options, spec: &Specialization, libdevice: Option<[u8; 32]>) -> Derivation {
        let config = self.inner.jit.config();
        crate::cache::derive(&KeyInputs {
            program: &self.inner.program,
            spec,
            captures: &self.inner.captures,
            options,
            libdevice,
            toolchain: &config.toolchain,
            salt: &config.salt,
            relocatable_captures: config.relocatable_captures,
        })
    }

    /// The keys of the cubins of this kernel's PTX for `arch`, each with a title: the one
    /// `CompiledKernel::assemble_cubin` uses, where ptxas is found (or why it cannot be used),
    /// and the one launches on CUDA device 0 use, where there is one. What `kache explain`
    /// shows of the cubin tier.
    pub fn explain_cubins(&self, arch: Arch, spec: &Specialization) -> Result<Vec<(String, Derivation)>> {
        let mut out = Vec::new();
        if let Some(Ok(ptxas)) = crate::toolchain::Ptxas::find() {
            let d = self.explain_cubin(arch, spec, Assembler::Ptxas { binary: &ptxas.hash, version: &ptxas.version })?;
            let version = ptxas.version.lines().last().unwrap_or("").trim().to_string();
            out.push((format!("cubin by ptxas for {arch} (compile --emit cubin; {}, {version})", ptxas.path.display()), d));
        }
        if let Ok(dev) = Device::cuda(0)
            && let Some(cuda) = dev.cuda_impl()
        {
            // PTX for the device's architecture, compiled by the driver for its own machine.
            let (ptx, _) = self.derive(&self.inner.jit.config().options(Target::Nvptx(cuda.arch)), spec)?;
            let (machine, v) = (cuda.machine_arch(), cuda.driver_version);
            let d = self.inner.jit.cubin_derivation(&ptx.key, machine, Assembler::Driver(v));
            out.push((format!("cubin by the CUDA driver {v} for {machine}, device 0 (the tier of launches)"), d));
        }
        Ok(out)
    }

    /// The key of the cubin that `assembler` builds for `arch` from this kernel's PTX for
    /// `arch` (array parameters as `spec` lays them out), with each component's hash: what
    /// `kache explain` shows of the cubin tier.
    pub fn explain_cubin(&self, arch: Arch, spec: &Specialization, assembler: Assembler<'_>) -> Result<Derivation> {
        let (d, _) = self.derive(&self.inner.jit.config().options(Target::Nvptx(arch)), spec)?;
        Ok(self.inner.jit.cubin_derivation(&d.key, arch, assembler))
    }

    /// Compiles (or fetches from the cache) the bounds-checked specialisation for `target` and
    /// `spec`: what safe launches run.
    pub fn compile(&self, target: Target, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(self.inner.jit.config().options(target), spec, None)
    }

    /// Compiles (or fetches from the cache) the specialisation without bounds checks. Compiling
    /// it is safe; running it takes the `unsafe` [`CompiledKernel::launch_unchecked`] (the safe
    /// `launch` refuses it). It is cached under its own key.
    pub fn compile_unchecked(&self, target: Target, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(Options { checked: false, ..self.inner.jit.config().options(target) }, spec, None)
    }

    /// Compiles (or fetches from the cache) the bounds-checked specialisation for overlapping
    /// arrays ([`launch_aliased`](Self::launch_aliased)): no `noalias`, no non-coherent loads.
    /// It is cached under its own key; safe launches never run it with overlapping arrays.
    pub fn compile_aliased(&self, target: Target, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(Options { may_alias: true, ..self.inner.jit.config().options(target) }, spec, None)
    }

    fn compile_on(&self, options: Options, spec: &Specialization, device: Option<&Device>) -> Result<Arc<CompiledKernel>> {
        self.not_generic()?;
        if let Some(c) = self.memoized(&options, spec) {
            return Ok(c);
        }
        // Threads that want this specialisation while it compiles (the first launches on two
        // GPUs of one architecture) wait for that compile and take its result.
        let gate =
            self.inner.compiling.lock().unwrap_or_else(|e| e.into_inner()).entry((options.clone(), spec.clone())).or_default().clone();
        let _turn = gate.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = self.memoized(&options, spec) {
            return Ok(c);
        }
        let prepared = self.prepare(&options, spec, device)?;
        let cache = self.inner.jit.cache();
        let found = cache.lookup_prefetch(&[prepared.key], &prepared.prefetch).pop().unwrap_or(Lookup::Miss);
        let c = match self.take_hit(options.target, spec, &prepared, found, options.checked, options.may_alias) {
            Some(c) => c,
            None => {
                let (c, entry) = self.build(&options, spec, &prepared)?;
                if let (Some(entry), Ok(proof)) = (entry, c.library().persistable()) {
                    cache.store(proof, entry);
                }
                c
            }
        };
        Ok(self.memoize(&options, spec, c))
    }

    /// What this kernel compiles for on `device`: the device's target, except that a kernel
    /// using an instruction of sm_90a (`wgmma`) compiles for sm_90a on a GPU of compute
    /// capability 9.0, the one architecture whose PTX has it.
    pub(super) fn target_on(&self, device: &Device) -> Target {
        match (device.target(), device.compute_capability()) {
            (Target::Nvptx(a), Some((9, 0))) if a.sm == 90 && crate::lang::needs_accelerated(&self.inner.program) => {
                Target::Nvptx(Arch { sm: 90, accelerated: true })
            }
            (t, _) => t,
        }
    }

    /// Compiles the bounds-checked code for `device` with every array parameter C-contiguous.
    pub fn compile_for(&self, device: &Device) -> Result<Arc<CompiledKernel>> {
        let options = self.inner.jit.config().options(self.target_on(device));
        self.compile_on(options, &Specialization::uniform(&self.inner.program, Layout::C), Some(device))
    }

    /// Whether `other` is this kernel or a clone of it.
    pub(super) fn same_kernel(&self, other: &Kernel) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// The specialisation compiled earlier by this kernel or a clone.
    pub(super) fn memoized(&self, options: &Options, spec: &Specialization) -> Option<Arc<CompiledKernel>> {
        self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(&(options.clone(), spec.clone())).cloned()
    }

    /// Remembers a compiled specialisation; the one remembered first wins a race.
    pub(super) fn memoize(&self, options: &Options, spec: &Specialization, c: Arc<CompiledKernel>) -> Arc<CompiledKernel> {
        self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).entry((options.clone(), spec.clone())).or_insert(c).clone()
    }

    /// The first step of a compile: the key (and on a GPU, the cubin's key, fetched in the same
    /// pass), so that several compiles can be looked up together.
    pub(super) fn prepare(&self, options: &Options, spec: &Specialization, device: Option<&Device>) -> Result<Prepared> {
        let target = options.target;
        let (d, libdevice) = self.derive(options, spec)?;
        let key = d.key;
        let jit = &self.inner.jit;
        let prefetch: Vec<Key> = match (device.and_then(|d| d.cuda_impl()), target) {
            (Some(dev), Target::Nvptx(_)) if jit.config().cubin_tier => {
                vec![jit.cubin_derivation(&key, dev.machine_arch(), Assembler::Driver(dev.driver_version)).key]
            }
            _ => Vec::new(),
        };
        Ok(Prepared { key, libdevice, prefetch })
    }

    /// The compiled kernel a lookup found, if it is usable (an unusable entry is warned about
    /// and recompiled).
    pub(super) fn take_hit(
        &self,
        target: Target,
        spec: &Specialization,
        prepared: &Prepared,
        found: Lookup,
        checked: bool,
        may_alias: bool,
    ) -> Option<Arc<CompiledKernel>> {
        let key = prepared.key;
        match found {
            Lookup::Pinned(any) => any.downcast::<CompiledKernel>().ok(),
            Lookup::Hit(entry, tier) => match CompiledKernel::from_entry(self, target, spec, key, &entry, tier, checked) {
                Ok(mut c) => {
                    c.libdevice = prepared.libdevice.as_ref().map(|l| l.hash);
                    c.may_alias = may_alias;
                    Some(Arc::new(c))
                }
                Err(e) => {
                    self.inner.jit.cache().warn_once(
                        &format!("bad-artifact:{key}"),
                        &format!("cached kernel '{}' is unusable ({e}); recompiling", self.inner.name),
                    );
                    None
                }
            },
            Lookup::Miss => None,
        }
    }

    /// Compiles after a miss. Returns the kernel and the entry to store, or no entry for a
    /// kernel that captured a device array (kept in memory only, warned about once; an error
    /// with `KACHE_STRICT`).
    pub(super) fn build(
        &self,
        options: &Options,
        spec: &Specialization,
        prepared: &Prepared,
    ) -> Result<(Arc<CompiledKernel>, Option<Entry>)> {
        let inner = &self.inner;
        #[cfg(test)]
        super::batch::tests::panic_if_asked(&inner.name);
        let jit = &inner.jit;
        let cache = jit.cache();
        let mut key = prepared.key;
        let sig = signature_text(&inner.signature, &inner.enums, &inner.types);
        let target = options.target;
        let t0 = Instant::now();
        // The bytes linked are read once and hashed; the entry is keyed by that hash, whatever
        // the file held when the lookup's key was derived.
        let mut libdevice_hash = prepared.libdevice.as_ref().map(|l| l.hash);
        let libdevice_bytes = match &prepared.libdevice {
            Some(l) => {
                let Some((bytes, hash)) = l.load() else {
                    let function = codegen::first_libdevice_use(&inner.program).unwrap_or_else(|| "a transcendental function".into());
                    return Err(codegen::CodegenError::NoLibdevice { kernel: inner.name.clone(), function }.into());
                };
                if hash != l.hash {
                    key = self.derive_with(options, spec, Some(hash)).key;
                    libdevice_hash = Some(hash);
                }
                Some(bytes)
            }
            None => None,
        };
        let relocatable = self.relocatable();
        let data = capture_data(&inner.captures, relocatable);
        let compiled = codegen::compile(&codegen::CompileInput {
            program: &inner.program,
            spec,
            captures: &data,
            options: options.clone(),
            libdevice: libdevice_bytes.as_deref(),
        })?;
        let compile_ms = t0.elapsed().as_millis().min(u32::MAX as u128) as u32;
        crate::logging::debug!("compiled '{}' for {target} in {compile_ms} ms ({key})", inner.name);
        let library = CodeLibrary::assemble(&inner.program, &inner.captures, Some(&compiled.function_modules), relocatable);
        let kind = artifact_kind(&compiled.artifact);
        let payload: Arc<[u8]> = compiled.artifact.bytes().into();
        let mut ck = CompiledKernel::new(
            self,
            target,
            spec,
            key,
            compiled.artifact,
            compiled.entry.clone(),
            library.clone(),
            Origin::Compiled { ms: compile_ms },
            options.checked,
        );
        ck.libdevice = libdevice_hash;
        ck.may_alias = options.may_alias;
        match library.persistable() {
            Ok(_) => {
                let meta = Meta::new(key, &inner.name, &sig, kind, &compiled.entry, compile_ms);
                if inner.persist {
                    Ok((Arc::new(ck), Some(Entry { meta, payload })))
                } else {
                    // Module::persist(false): this process's memory tier only.
                    let ck = Arc::new(ck);
                    if let Ok(proof) = ck.library().persistable() {
                        cache.store_in_memory(proof, Entry { meta, payload });
                    }
                    Ok((ck, None))
                }
            }
            Err(refs) => {
                let what: Vec<String> = refs.iter().map(|r| r.describe()).collect();
                let msg = format!(
                    "kernel '{}' is not cached on disk: it captures device array {}; device pointers are valid only in this process. \
                     Pass the array as a kernel argument, or set KACHE_CAPTURES=relocatable, to make it cacheable.",
                    inner.name,
                    what.join(" and device array ")
                );
                if jit.config().strict && inner.persist {
                    return Err(Error::NotPersisted(msg));
                }
                ck.pinned = true;
                let ck = Arc::new(ck);
                let any: Arc<dyn std::any::Any + Send + Sync> = ck.clone();
                cache.pin(key, &any, msg.clone());
                if inner.persist {
                    warn_not_persisted_once(format!("{}\0{}", self.inner.source.file.name(), inner.name), &msg);
                }
                Ok((ck, None))
            }
        }
    }

    /// Checks `args` against the signature, compiles the matching bounds-checked
    /// specialisation on first use and launches it on `device`. Nothing runs if an argument
    /// does not match or two arrays overlap where one is written. An out-of-bounds index is
    /// [`Error::Launch`]: from this call on the host backend, from the next operation that
    /// waits for the device on CUDA (`docs/runtime.md`, "Bounds checks").
    ///
    /// A generic kernel runs the instance the argument types need (each type parameter is the
    /// type of the scalars and array elements declared with it), checked and compiled on first
    /// use, then kept.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        self.launch_values(device, grid, args.args()?, LaunchMode { checked: true, may_alias: false })
    }

    /// As [`launch`](Self::launch), but runs the kernel compiled without bounds checks (cached
    /// under its own key): the fastest code, for benchmarks and trusted hot paths.
    ///
    /// # Safety
    ///
    /// Every array access that the kernel makes in this launch must be in bounds: each index
    /// below the extent of its dimension, for parameters, captured arrays, `shared_array`s and
    /// the `dynamic_shared_array` (whose length is the launch's dynamic shared memory divided by
    /// the element size). An out-of-bounds access reads or writes memory outside the array: on
    /// the host backend that is this process's memory, on a GPU another allocation. The tensor
    /// cores' accesses (`ldmatrix`, `cp_async`) must also be aligned and in the memory their
    /// instruction uses, as `launch` checks (docs/runtime.md, "Bounds checks"). A kernel that
    /// calls `setmaxnreg_inc` must give back at least as many registers (`setmaxnreg_dec`, in
    /// other warpgroups of its block) as it takes beyond the count the kernel is compiled to
    /// (ptxas's "Used N registers"), or its `inc` waits for ever (`launch` runs such a kernel
    /// without them). Everything else is still checked as for `launch` (arguments, devices,
    /// overlapping arrays, the grid).
    pub unsafe fn launch_unchecked(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        self.launch_values(device, grid, args.args()?, LaunchMode { checked: false, may_alias: false })
    }

    /// As [`launch`](Self::launch), bounds-checked, but with arrays that may overlap: an
    /// argument passed as `&` and as `&mut`, overlapping views of one buffer, or an argument
    /// that is also a captured array the kernel writes (the numba-cuda kernels that read a
    /// captured array they are also passed and write). The kernel is compiled without the
    /// no-overlap assumption safe launches rest on (no `noalias`, no loads through the
    /// non-coherent cache: every load sees every earlier write of its own thread, through any
    /// array), cached under its own key, and the overlap check is skipped. Safe launches of the
    /// same kernel keep refusing overlapping arrays.
    ///
    /// # Safety
    ///
    /// Overlapping arrays let two threads reach one element through two names, which kache no
    /// longer sees: the caller promises that no element written by a thread of this launch is
    /// read or written by another thread of the launch, through any array, unless the kernel
    /// orders the two accesses itself (a `sync_threads` between them within a block, or
    /// atomics). Within one thread any mix of reads and writes through any names is defined.
    /// Everything else is checked as for `launch` (arguments, devices, bounds, the grid).
    ///
    /// ```
    /// use kache::{Config, Device, Grid, Jit};
    ///
    /// let jit = Jit::new(Config::in_memory())?;
    /// let device = Device::host();
    /// let data = device.upload(&[1.0f32, 2.0, 3.0, 4.0])?;
    /// // The kernel reads the captured `DATA` and writes `out`, here the same array.
    /// let k = jit
    ///     .load_source("a.rs", "#[kernel] pub fn twice(out: &mut [f32]) { let i = global_id_x(); if i < out.len() { out[i] = DATA[i] * 2.0; } }")?
    ///     .with_global("DATA", &data)?
    ///     .kernel("twice")?;
    /// let mut out = device.upload(&[0.0f32; 4])?;
    /// k.launch(&device, Grid::linear(4, 64), (&mut out,))?; // separate arrays: a safe launch
    /// let mut same = data.clone(); // another handle to DATA's memory
    /// assert!(k.launch(&device, Grid::linear(4, 64), (&mut same,)).is_err()); // overlap: refused
    /// // SAFETY: each thread reads and writes only its own element.
    /// unsafe { k.launch_aliased(&device, Grid::linear(4, 64), (&mut same,))? };
    /// assert_eq!(data.download()?, vec![2.0, 4.0, 6.0, 8.0]);
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub unsafe fn launch_aliased(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        self.launch_values(device, grid, args.args()?, LaunchMode { checked: true, may_alias: true })
    }

    /// Launches checked code, or (`checked` false: only from `launch_unchecked`, whose caller
    /// vouched for every access) unchecked code; with `may_alias` (only from `launch_aliased`,
    /// whose caller vouched for the overlapping accesses), code compiled for overlapping arrays,
    /// which may then overlap.
    fn launch_values(&self, device: &Device, grid: Grid, args: Vec<ArgValue>, mode: LaunchMode) -> Result<()> {
        if let Some(g) = &self.inner.generic {
            return g.instance_for(&args)?.launch_values(device, grid, args, mode);
        }
        let spec = check_args(&self.inner.name, &self.inner.signature, &self.inner.enums, &self.inner.types, &args, device)?;
        check_capture_locations(&self.inner.name, &self.inner.program, &self.inner.captures, device)?;
        grid.check()?;
        let options =
            Options { checked: mode.checked, may_alias: mode.may_alias, ..self.inner.jit.config().options(self.target_on(device)) };
        let c = self.compile_on(options, &spec, Some(device))?;
        // SAFETY: `c` is checked code when `checked` is set; otherwise this is
        // `launch_unchecked`, whose caller promised that every access is in bounds. With
        // `may_alias`, `c` was compiled for overlapping arrays (its key has the option) and
        // this is `launch_aliased`, whose caller promised the accesses do not race.
        unsafe { c.run_with(device, grid, &args, mode.may_alias) }
    }

    /// A compiled kernel from PTX produced elsewhere for this kernel (the prebuild step embeds
    /// it), for `target` and `spec`. Its launches are safe launches of checked code.
    ///
    /// # Safety
    ///
    /// `ptx` must be kache's bounds-checked compilation of this kernel for `target` and `spec`
    /// (what `kache::prebuild` embeds, or `kache compile --emit ptx` writes with its default
    /// options): kache cannot verify PTX, and runs it as if it were.
    pub unsafe fn with_ptx(&self, target: Target, spec: &Specialization, ptx: String) -> Arc<CompiledKernel> {
        self.prebuilt(target, spec, Artifact::Ptx(ptx))
    }

    /// A compiled kernel around code built elsewhere (keyed by its bytes).
    fn prebuilt(&self, target: Target, spec: &Specialization, artifact: Artifact) -> Arc<CompiledKernel> {
        let key = Key(*blake3::hash(artifact.bytes()).as_bytes());
        let library = CodeLibrary::assemble(&self.inner.program, &self.inner.captures, None, self.relocatable());
        let entry = abi::symbol_name(&self.inner.program.kernel().name);
        Arc::new(CompiledKernel::new(self, target, spec, key, artifact, entry, library, Origin::Prebuilt, true))
    }

    /// A compiled kernel from a cubin assembled elsewhere for this kernel and `arch` (for
    /// example by `kache compile --emit cubin --arch sm_90`), with every array parameter
    /// C-contiguous. Loading it needs no compiler and no PTX JIT; a GPU it was not built for
    /// refuses it at the first launch with the driver's reason. Anything that is not an ELF
    /// image is refused at once.
    ///
    /// # Safety
    ///
    /// `cubin` must be kache's bounds-checked compilation of this kernel for `arch` with C
    /// layouts (`kache compile --emit cubin` with its default options): kache cannot verify
    /// machine code, and its launches run it as checked code.
    ///
    /// ```
    /// # let jit = kache::Jit::new(kache::Config::in_memory())?;
    /// let k = jit.load_source("s.rs", "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }")?.kernel("k")?;
    /// let arch = kache::Arch::parse("sm_90")?;
    /// // SAFETY: refused before anything could run it.
    /// assert!(unsafe { k.with_cubin(arch, b"// PTX, not a cubin".to_vec()) }.is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub unsafe fn with_cubin(&self, arch: Arch, cubin: Vec<u8>) -> Result<Arc<CompiledKernel>> {
        self.not_generic()?;
        if !cubin.starts_with(b"\x7fELF") {
            return Err(Error::BadSerializedKernel(format!("the cubin given for kernel '{}' is not an ELF image", self.inner.name)));
        }
        Ok(self.prebuilt(Target::Nvptx(arch), &Specialization::uniform(&self.inner.program, Layout::C), Artifact::Cubin(cubin)))
    }

    /// The LLVM IR that [`compile`](Self::compile) generates code from for `target` and
    /// `spec`: the linked, optimised module, libdevice included where the kernel needs it. For
    /// inspection (`kache compile --emit llvm-ir`); not cached.
    pub fn emit_llvm_ir(&self, target: Target, spec: &Specialization) -> Result<String> {
        let options = self.inner.jit.config().options(target);
        let (_, libdevice) = self.derive(&options, spec)?;
        let libdevice_bytes = libdevice.as_ref().and_then(|l| l.load()).map(|(bytes, _)| bytes);
        let data = capture_data(&self.inner.captures, self.relocatable());
        Ok(codegen::emit_llvm_ir(&codegen::CompileInput {
            program: &self.inner.program,
            spec,
            captures: &data,
            options,
            libdevice: libdevice_bytes.as_deref(),
        })?)
    }

    /// Serialises the kernel compiled for `target` (array parameters C-contiguous) to bytes
    /// that [`CompiledKernel::deserialize`] loads in another process. A kernel whose code holds
    /// the address of a device array (baked captures) fails with [`Error::NotSerializable`]
    /// naming every such array; with relocatable captures the bytes name the slots instead,
    /// which [`CompiledKernel::bind`] fills.
    pub fn serialize(&self, target: Target) -> Result<Vec<u8>> {
        self.not_generic()?;
        let lib = self.library();
        if let Err(refs) = lib.persistable() {
            return Err(Error::NotSerializable { kernel: self.inner.name.clone(), what: crate::library::describe_device_arrays(&refs) });
        }
        self.compile(target, &Specialization::uniform(&self.inner.program, Layout::C))?.serialize()
    }
}

/// How [`Kernel::launch_values`] compiles and runs: bounds-checked or not, for overlapping
/// arrays or not.
#[derive(Clone, Copy, Debug)]
struct LaunchMode {
    checked: bool,
    may_alias: bool,
}
