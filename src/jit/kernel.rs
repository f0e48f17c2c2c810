//! [`Kernel`]: a checked kernel with its captured values; derives its cache key for each target
//! and specialisation, and compiles through the cache (or takes code built elsewhere).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
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
use crate::ir::{CaptureSource, EnumDef, Layout, Program, Ty, Types};
use crate::lang::GenericKernelSig;
use crate::library::CodeLibrary;
use crate::runtime::{ArgValue, Device, Grid, KernelArgs};
use crate::target::{Arch, Options, Specialization, Target};

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
    compiled: Mutex<HashMap<(Options, Specialization), Arc<CompiledKernel>>>,
    /// Set for a generic kernel: its `program` is then its definition, and launches run
    /// instances.
    pub(super) generic: Option<GenericPart>,
    /// Whether its code may be written to the local store and the remote
    /// ([`Module::persist`]).
    pub(super) persist: bool,
    source: Arc<Source>,
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
            generic: None,
            persist: module.persist,
            source: module.source.clone(),
        })
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

    /// The key this kernel is cached under for `target` and `spec`, with each component's hash.
    pub fn explain(&self, target: Target, spec: &Specialization) -> Result<Derivation> {
        let (d, _) = self.derive(&self.inner.jit.config().options(target), spec)?;
        Ok(d)
    }

    fn derive(&self, options: &Options, spec: &Specialization) -> Result<(Derivation, Option<crate::toolchain::Libdevice>)> {
        self.not_generic()?;
        let target = options.target;
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
            && let (Some(dev_arch), Some(v)) = (dev.arch(), dev.driver_version())
        {
            let d = self.explain_cubin(dev_arch, spec, Assembler::Driver(v))?;
            out.push((format!("cubin by the CUDA driver {v} for {dev_arch}, device 0 (the tier of launches)"), d));
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

    /// Compiles (or fetches from the cache) the specialisation for `target` and `spec`.
    pub fn compile(&self, target: Target, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(self.inner.jit.config().options(target), spec, None)
    }

    /// Compiles (or fetches from the cache) the specialisation `spec` with code generation
    /// options given in full rather than taken from the JIT's configuration: host code for a
    /// named CPU ([`HostCpu::Named`](crate::HostCpu)), which the prebuild step links into the
    /// crate it builds. Not public: such code is for another program, and launching it here
    /// would need the named CPU's features.
    pub(crate) fn compile_with(&self, options: Options, spec: &Specialization) -> Result<Arc<CompiledKernel>> {
        self.compile_on(options, spec, None)
    }

    fn compile_on(&self, options: Options, spec: &Specialization, device: Option<&Device>) -> Result<Arc<CompiledKernel>> {
        self.not_generic()?;
        let memo_key = (options, spec.clone());
        if let Some(c) = self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).get(&memo_key) {
            return Ok(c.clone());
        }
        let c = self.compile_uncached(&memo_key.0, spec, device)?;
        self.inner.compiled.lock().unwrap_or_else(|e| e.into_inner()).insert(memo_key, c.clone());
        Ok(c)
    }

    /// Compiles for `device` with every array parameter C-contiguous.
    pub fn compile_for(&self, device: &Device) -> Result<Arc<CompiledKernel>> {
        let options = self.inner.jit.config().options(device.target());
        self.compile_on(options, &Specialization::uniform(&self.inner.program, Layout::C), Some(device))
    }

    fn compile_uncached(&self, options: &Options, spec: &Specialization, device: Option<&Device>) -> Result<Arc<CompiledKernel>> {
        let inner = &self.inner;
        let jit = &inner.jit;
        let cache = jit.cache();
        let target = options.target;
        let (d, libdevice) = self.derive(options, spec)?;
        let mut key = d.key;
        let sig = signature_text(&inner.signature, &inner.enums, &inner.types);
        // On a GPU, fetch the cubin with the PTX in one opening of the store.
        let prefetch: Vec<Key> = match (device.and_then(|d| d.cuda_impl()), target) {
            (Some(dev), Target::Nvptx(arch)) if jit.config().cubin_tier => {
                vec![jit.cubin_derivation(&key, arch, Assembler::Driver(dev.driver_version)).key]
            }
            _ => Vec::new(),
        };
        match cache.lookup_prefetch(&[key], &prefetch).pop().unwrap_or(Lookup::Miss) {
            Lookup::Pinned(any) => {
                if let Ok(c) = any.downcast::<CompiledKernel>() {
                    return Ok(c);
                }
            }
            Lookup::Hit(entry, tier) => match CompiledKernel::from_entry(self, target, spec, key, &entry, tier) {
                Ok(mut c) => {
                    c.libdevice = libdevice.as_ref().map(|l| l.hash);
                    return Ok(Arc::new(c));
                }
                Err(e) => cache
                    .warn_once(&format!("bad-artifact:{key}"), &format!("cached kernel '{}' is unusable ({e}); recompiling", inner.name)),
            },
            Lookup::Miss => {}
        }
        let t0 = Instant::now();
        // The bytes linked are read once and hashed; the entry is keyed by that hash, whatever
        // the file held when the lookup's key was derived.
        let mut libdevice_hash = libdevice.as_ref().map(|l| l.hash);
        let libdevice_bytes = match &libdevice {
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
        );
        ck.libdevice = libdevice_hash;
        match library.persistable() {
            Ok(proof) => {
                let meta = Meta::new(key, &inner.name, &sig, kind, &compiled.entry, compile_ms);
                if inner.persist {
                    cache.store(proof, Entry { meta, payload });
                } else {
                    cache.store_in_memory(proof, Entry { meta, payload });
                }
                Ok(Arc::new(ck))
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
                Ok(ck)
            }
        }
    }

    /// Checks `args` against the signature, compiles the matching specialisation on first use
    /// and launches it on `device`. Nothing runs if an argument does not match.
    ///
    /// A generic kernel runs the instance the argument types need (each type parameter is the
    /// type of the scalars and array elements declared with it), checked and compiled on first
    /// use, then kept.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        self.launch_values(device, grid, args.args()?)
    }

    fn launch_values(&self, device: &Device, grid: Grid, args: Vec<ArgValue>) -> Result<()> {
        if let Some(g) = &self.inner.generic {
            return g.instance_for(&args)?.launch_values(device, grid, args);
        }
        let spec = check_args(&self.inner.name, &self.inner.signature, &self.inner.enums, &self.inner.types, &args, device)?;
        check_capture_locations(&self.inner.name, &self.inner.program, &self.inner.captures, device)?;
        grid.check()?;
        let c = self.compile_on(self.inner.jit.config().options(device.target()), &spec, Some(device))?;
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
        let library = CodeLibrary::assemble(&self.inner.program, &self.inner.captures, None, self.relocatable());
        let entry = abi::symbol_name(&self.inner.program.kernel().name);
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
