//! [`CompiledKernel`]: code for one target and specialisation, where it came from ([`Origin`]),
//! and loading it on the host backend or a CUDA device (through the cubin tier).

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::Jit;
use super::kernel::{Kernel, signature_text};
use super::slots::{CaptureSlot, slot_arrays, slot_values, slots_of};
use crate::abi::{self, ParamAbi};
use crate::cache::{ArtifactKind, Assembler, Entry, Key, Lookup, Meta, Tier};
use crate::capture::CaptureValue;
use crate::codegen::{Artifact, HostModule};
use crate::error::{Error, Result};
use crate::ir::{EnumDef, Ty, Types};
use crate::library::CodeLibrary;
use crate::runtime::Device;
use crate::runtime::cuda;
use crate::runtime::fault::FaultSites;
use crate::runtime::launch::CapturedArray;
use crate::runtime::modules::{DeviceModules, Load};
use crate::target::{Specialization, Target};

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

/// How a compiled kernel's code was loaded on one CUDA device
/// ([`CompiledKernel::loaded_on`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModuleLoad {
    /// Its cubin, for the device's compute capability, from a cache tier: nothing compiled.
    CachedCubin(Tier),
    /// Its PTX, compiled by the driver's JIT; the cubin it made is stored in the cubin tier
    /// and kept for the kernel's loads on other devices of the same compute capability.
    DriverJit,
    /// The cubin this kernel already held for the device's compute capability, built or
    /// fetched by its load on another device: nothing compiled, nothing looked up.
    Reused,
    /// The cubin the kernel was made from ([`Kernel::with_cubin`]).
    GivenCubin,
}

/// A kernel compiled for one target and one specialisation: PTX or host code, ready to load
/// and launch. Keeps every array the kernel captured alive. One compiled kernel serves every
/// device of its target: its code is loaded once per CUDA device (context), and the machine
/// code the first load built or fetched is reused by the next device of the same compute
/// capability.
pub struct CompiledKernel {
    pub(super) name: String,
    pub(super) key: Key,
    pub(super) target: Target,
    pub(super) spec: Specialization,
    pub(super) signature: Vec<(String, Ty)>,
    pub(super) enums: Vec<EnumDef>,
    /// The structs of the signature's types.
    pub(super) types: Types,
    pub(super) abi: Vec<ParamAbi>,
    pub(super) artifact: Artifact,
    pub(super) entry: String,
    pub(super) cooperative: bool,
    pub(super) static_shared: u64,
    /// `#[kernel(max_threads = N)]`: launches with larger blocks are refused (known where the
    /// kernel was compiled from its program in this process; a deserialised or direct-mode
    /// kernel leaves it to the driver, which refuses them on CUDA).
    pub(super) max_threads: Option<u32>,
    pub(super) library: Arc<CodeLibrary>,
    /// The device arrays a launch checks and orders: baked captures, or the arrays bound to
    /// the `slots` of a relocatable kernel (which has no baked captures); kept in step with
    /// the slots by [`bind`](Self::bind), so that a launch builds nothing.
    pub(super) captured: Vec<CapturedArray>,
    /// Bounds-checked code: what the safe `launch` requires.
    pub(super) checked: bool,
    /// Compiled for overlapping arrays (`Options::may_alias`): what `launch_aliased` requires.
    pub(super) may_alias: bool,
    /// How the kernel's fault records are reported.
    pub(super) faults: Arc<FaultSites>,
    /// Relocatable captures: the module variables the loader fills with the arrays' addresses.
    pub(super) slots: Vec<CaptureSlot>,
    /// Registered with the cache's memory tier (baked device captures): unregistered on drop.
    pub(super) pinned: bool,
    /// Its cubins may be written to the local store and the remote ([`Module::persist`](crate::Module::persist)).
    pub(super) persist: bool,
    pub(super) origin: Origin,
    pub(super) jit: Option<Jit>,
    pub(super) host: OnceLock<std::result::Result<Arc<HostModule>, String>>,
    pub(super) cuda: DeviceModules<ModuleLoad>,
    pub(super) cubin_origin: Mutex<Option<Tier>>,
    /// The blake3 of the libdevice its key was derived with, where it links libdevice (direct
    /// mode's manifest records it: the manifest serves only while libdevice is the same).
    pub(super) libdevice: Option<[u8; 32]>,
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
    pub(super) fn new(
        k: &Kernel,
        target: Target,
        spec: &Specialization,
        key: Key,
        artifact: Artifact,
        entry: String,
        library: Arc<CodeLibrary>,
        origin: Origin,
        checked: bool,
    ) -> CompiledKernel {
        let p = &k.inner.program;
        let written = abi::written_captures(p);
        let relocatable = k.inner.jit.config().relocatable_captures;
        let slots = slots_of(p, &k.inner.captures, &written, relocatable);
        let captured = if relocatable {
            slot_arrays(&slots).collect()
        } else {
            p.captures
                .iter()
                .zip(&k.inner.captures)
                .zip(&written)
                .filter_map(|((c, v), w)| match v {
                    CaptureValue::Device(d) => Some(CapturedArray { origin: c.origin.to_string(), desc: d.clone(), written: *w }),
                    _ => None,
                })
                .collect()
        };
        CompiledKernel {
            name: k.inner.name.clone(),
            key,
            target,
            spec: spec.clone(),
            signature: k.inner.signature.clone(),
            enums: k.inner.enums.clone(),
            types: k.inner.types.clone(),
            abi: ParamAbi::of(p),
            artifact,
            entry,
            cooperative: p.funcs.iter().any(|f| f.uses_block_sync),
            static_shared: abi::static_shared_bytes(p),
            max_threads: p.launch_bounds.map(|b| b.max_threads),
            library,
            captured,
            checked,
            may_alias: false,
            faults: k.fault_sites(),
            slots,
            pinned: false,
            persist: k.inner.persist,
            origin,
            jit: Some(k.inner.jit.clone()),
            host: OnceLock::new(),
            cuda: DeviceModules::default(),
            cubin_origin: Mutex::new(None),
            libdevice: None,
        }
    }

    pub(super) fn from_entry(
        k: &Kernel,
        target: Target,
        spec: &Specialization,
        key: Key,
        entry: &Entry,
        tier: Tier,
        checked: bool,
    ) -> Result<CompiledKernel> {
        let artifact = match (entry.meta.kind, target) {
            (ArtifactKind::Ptx, Target::Nvptx(_)) => {
                Artifact::Ptx(String::from_utf8(entry.payload.to_vec()).map_err(|_| Error::BadSerializedKernel("PTX is not UTF-8".into()))?)
            }
            (ArtifactKind::HostBitcode, Target::Host) => Artifact::HostBitcode(entry.payload.to_vec()),
            (kind, _) => return Err(Error::BadSerializedKernel(format!("entry holds {kind:?}, not code for {target}"))),
        };
        let library = CodeLibrary::assemble(&k.inner.program, &k.inner.captures, None, k.inner.jit.config().relocatable_captures);
        Ok(CompiledKernel::new(k, target, spec, key, artifact, entry.meta.entry.clone(), library, Origin::Cache(tier), checked))
    }

    /// Kernel name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its cache key.
    pub fn key(&self) -> Key {
        self.key
    }

    /// Where it came from: compiled in this process, found in a cache tier, deserialised or
    /// prebuilt. What tells a hit from a miss for one kernel (`docs/cache.md`).
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The capture slots of a kernel compiled with relocatable captures (empty otherwise): one
    /// per captured device array, with the name the source gives it and whether an array is
    /// bound to it.
    pub fn capture_slots(&self) -> &[CaptureSlot] {
        &self.slots
    }

    /// Binds `array` to the capture slot named `name` (a global's name, a factory parameter's,
    /// or `factory::param` where several are so named) of a kernel compiled with relocatable
    /// captures, typically one just deserialised. The array must have the element type,
    /// extents and strides the code was compiled for; the kernel keeps it alive. Every slot
    /// must be bound before the first launch ([`Error::UnboundCapture`]).
    ///
    /// ```
    /// use kache::{CompiledKernel, Config, Device, Grid, Jit, Target};
    ///
    /// let jit = Jit::new(Config::in_memory().relocatable_captures(true))?;
    /// let dev = Device::host();
    /// let table = dev.upload(&[1.0f32, 2.0])?;
    /// let bytes = jit
    ///     .load_source("t.rs", "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < 2 { o[i] = TABLE[i] * 10.0; } }")?
    ///     .with_global("TABLE", &table)?
    ///     .kernel("k")?
    ///     .serialize(Target::Host)?;
    /// // In another process: the bytes hold the slot's name and type, never an address.
    /// let mine = dev.upload(&[3.0f32, 4.0])?;
    /// // SAFETY: the bytes are `serialize`'s output, from this process.
    /// let k = unsafe { CompiledKernel::deserialize(&bytes) }?.bind("TABLE", &mine)?;
    /// let mut out = dev.alloc::<f32>(&[2])?;
    /// k.launch(&dev, Grid::linear(2, 32), (&mut out,))?;
    /// assert_eq!(out.download()?, vec![30.0, 40.0]);
    /// // An array of another shape does not fit the code.
    /// // SAFETY: as above.
    /// assert!(unsafe { CompiledKernel::deserialize(&bytes) }?.bind("TABLE", &dev.upload(&[1.0f32])?).is_err());
    /// # Ok::<(), kache::Error>(())
    /// ```
    pub fn bind(mut self, name: &str, array: impl crate::capture::IntoCapture) -> Result<CompiledKernel> {
        super::slots::bind(&self.name, &mut self.slots, name, array)?;
        self.captured = slot_arrays(&self.slots).collect();
        // A host module loaded so far holds the old addresses; CUDA modules hold none (a launch
        // passes them) and stay loaded.
        self.host = OnceLock::new();
        Ok(self)
    }

    /// Where the cubin came from on the last CUDA load that looked it up (`None`: built from
    /// PTX by the driver). A load that reused the cubin of another device's does not change it.
    pub fn cubin_origin(&self) -> Option<Tier> {
        *self.cubin_origin.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How its code was loaded on `device`: `None` before its first launch there (and on the
    /// host backend, whose code is loaded once per process).
    pub fn loaded_on(&self, device: &Device) -> Option<ModuleLoad> {
        self.cuda.how(device.cuda_impl()?.ordinal)
    }

    /// The target.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The specialisation.
    pub fn spec(&self) -> &Specialization {
        &self.spec
    }

    /// Whether its code bounds-checks every array access (what [`launch`](Self::launch)
    /// requires; unchecked code runs only through the `unsafe`
    /// [`launch_unchecked`](Self::launch_unchecked)).
    pub fn is_checked(&self) -> bool {
        self.checked
    }

    /// Whether the code was compiled for overlapping arrays ([`Kernel::launch_aliased`]
    /// (crate::Kernel::launch_aliased)).
    pub fn may_alias(&self) -> bool {
        self.may_alias
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

    /// A cubin of this kernel for its architecture, assembled from its PTX by ptxas (found by
    /// [`find_ptxas`](crate::toolchain::find_ptxas)), through the cache: keyed by this kernel's
    /// key (which determines its PTX), the architecture, ptxas by its content and its
    /// `--version` output, the toolchain and the salt ([`derive_cubin`]), counted in the cubin
    /// tier's figures, and stored unless the kernel captured a device array. A kernel that
    /// holds a cubin already returns it. Errors: compiled for the host ([`Error::Device`]), no
    /// ptxas ([`Error::Config`]), a ptxas that cannot be read or run, or rejects the PTX
    /// ([`Error::Ptxas`]).
    ///
    /// [`derive_cubin`]: crate::cache::derive_cubin
    pub fn assemble_cubin(&self) -> Result<Vec<u8>> {
        self.assemble_cubin_with(&find_ptxas()?)
    }

    /// [`assemble_cubin`](Self::assemble_cubin) with the given ptxas.
    pub fn assemble_cubin_with(&self, ptxas: &crate::toolchain::Ptxas) -> Result<Vec<u8>> {
        assemble_cubins(self.jit.as_ref(), ptxas, &[self])
            .pop()
            .unwrap_or_else(|| Err(Error::Device(format!("no cubin for '{}'", self.name))))
    }

    pub(super) fn host_module(&self) -> Result<Arc<HostModule>> {
        // Loaded: its slots were filled (an unbound one stops the load below), and `bind`
        // drops the module.
        if let Some(Ok(m)) = self.host.get() {
            return Ok(m.clone());
        }
        let slots = slot_values(&self.name, &self.slots)?;
        let r = self.host.get_or_init(|| match &self.artifact {
            Artifact::HostBitcode(b) => HostModule::load_with_slots(b, &self.entry, &slots).map(Arc::new).map_err(|e| e.to_string()),
            Artifact::Ptx(_) | Artifact::Cubin(_) => {
                Err(format!("kernel '{}' was compiled for a GPU, not for the host backend", self.name))
            }
        });
        r.clone().map_err(Error::Device)
    }

    /// The kernel's module on `dev`, loaded on first use there ([`DeviceModules`]). Its capture
    /// slots are parameters of each launch (`slots::slot_addresses`): loading fills nothing.
    pub(super) fn cuda_function(&self, dev: &cuda::CudaDevice) -> Result<Arc<cuda::LoadedFunction>> {
        if let Some(f) = self.cuda.loaded(dev.ordinal) {
            return Ok(f);
        }
        self.cuda.get_or_load(dev, &self.entry, ModuleLoad::Reused, || self.load_on(dev))
    }

    /// Loads the kernel's code on `dev`: its own cubin, else its cubin from the cubin tier,
    /// else its PTX through the driver's JIT (the cubin that makes is stored in the tier).
    fn load_on(&self, dev: &cuda::CudaDevice) -> Result<Load<ModuleLoad>> {
        if let Artifact::Cubin(image) = &self.artifact {
            let built = match self.target {
                Target::Nvptx(a) => a.to_string(),
                Target::Host => "the host".to_string(),
            };
            let function = dev.load_image(image, &self.entry).map_err(|e| {
                Error::Device(format!(
                    "the cubin of kernel '{}' (built for {built}) did not load on {} ({}): {e}",
                    self.name, dev.name, dev.arch
                ))
            })?;
            return Ok(Load { function, cubin: None, how: ModuleLoad::GivenCubin });
        }
        let ptx = self.ptx().ok_or_else(|| Error::Device(format!("kernel '{}' was compiled for the host backend", self.name)))?;
        let proof = self.library.persistable().ok().filter(|_| self.persist);
        let jit = self.jit.as_ref().filter(|j| j.config().cubin_tier);
        let cache = jit.map(|j| j.cache());
        let ckey =
            jit.map(|j| j.cubin_derivation(&self.key, dev.machine_arch(), Assembler::Driver(dev.driver_version)).key).unwrap_or(self.key);
        if let (Some(cache), Some(_)) = (cache, &proof)
            && let Lookup::Hit(e, tier) = cache.lookup_cubin(&ckey)
            && e.meta.kind == ArtifactKind::Cubin
        {
            match dev.load_image(&e.payload, &self.entry) {
                Ok(function) => {
                    *self.cubin_origin.lock().unwrap_or_else(|e| e.into_inner()) = Some(tier);
                    return Ok(Load { function, cubin: Some(e.payload.clone()), how: ModuleLoad::CachedCubin(tier) });
                }
                Err(err) => cache.warn_once(
                    &format!("cubin:{ckey}"),
                    &format!("a cached cubin for '{}' did not load ({err}); rebuilding it from PTX", self.name),
                ),
            }
        }
        let t0 = Instant::now();
        let (function, cubin) = dev.load_ptx(ptx, &self.entry)?;
        let cubin: Option<Arc<[u8]>> = cubin.map(Into::into);
        if let (Some(cache), Some(proof), Some(cubin)) = (cache, proof, &cubin) {
            let ms = t0.elapsed().as_millis().min(u32::MAX as u128) as u32;
            let meta = Meta::new(
                ckey,
                &self.name,
                &signature_text(&self.signature, &self.enums, &self.types),
                ArtifactKind::Cubin,
                &self.entry,
                ms,
            );
            cache.store(proof, Entry { meta, payload: cubin.clone() });
        }
        Ok(Load { function, cubin, how: ModuleLoad::DriverJit })
    }
}

impl Drop for CompiledKernel {
    fn drop(&mut self) {
        // The memory tier's entry for a pinned kernel goes with the last kernel using it, so a
        // process that keeps binding fresh arrays does not grow.
        if self.pinned
            && let Some(jit) = &self.jit
        {
            jit.cache().unpin(&self.key);
        }
    }
}

/// The cache's name for what an artifact holds.
pub(super) fn artifact_kind(artifact: &Artifact) -> ArtifactKind {
    match artifact {
        Artifact::Ptx(_) => ArtifactKind::Ptx,
        Artifact::HostBitcode(_) => ArtifactKind::HostBitcode,
        Artifact::Cubin(_) => ArtifactKind::Cubin,
    }
}

/// ptxas, found and identified by content, or why it cannot be used.
pub(super) fn find_ptxas() -> Result<crate::toolchain::Ptxas> {
    let ptxas = crate::toolchain::find_ptxas().ok_or_else(|| {
        Error::Config(
            "assembling a cubin needs ptxas: install a CUDA toolkit (CUDA_HOME), put ptxas on PATH, set KACHE_PTXAS, \
             or `pip install nvidia-cuda-nvcc-cu12`"
                .into(),
        )
    })?;
    crate::toolchain::Ptxas::at(&ptxas).map_err(Error::Ptxas)
}

/// [`CompiledKernel::assemble_cubin_with`] for several kernels, keyed under `jit`'s toolchain
/// and salt and through its cache: every cubin looked up in one pass over the cache (one round
/// trip to a remote cache, counted in the cubin tier's figures), the ones assembled stored
/// together. In the kernels' order.
pub(super) fn assemble_cubins(jit: Option<&Jit>, ptxas: &crate::toolchain::Ptxas, kernels: &[&CompiledKernel]) -> Vec<Result<Vec<u8>>> {
    let mut out: Vec<Option<Result<Vec<u8>>>> = Vec::new();
    // (index, architecture, key) of each cubin to look up.
    let mut wanted = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        match (&k.artifact, k.target) {
            (Artifact::Cubin(image), _) => out.push(Some(Ok(image.clone()))),
            (Artifact::Ptx(_), Target::Nvptx(arch)) => {
                let key =
                    jit.map(|j| j.cubin_derivation(&k.key, arch, Assembler::Ptxas { binary: &ptxas.hash, version: &ptxas.version }).key);
                wanted.push((i, arch, key));
                out.push(None);
            }
            _ => out.push(Some(Err(Error::Device(format!(
                "kernel '{}' was compiled for {}: a cubin needs a GPU architecture",
                k.name, k.target
            ))))),
        }
    }
    let cache = jit.map(|j| j.cache());
    let keys: Vec<Key> = wanted.iter().filter_map(|(_, _, key)| *key).collect();
    let mut found = match cache {
        Some(c) => c.lookup_cubins(&keys).into_iter(),
        None => Vec::new().into_iter(),
    };
    let mut missed = Vec::new();
    for (i, arch, key) in wanted {
        if key.is_some()
            && let Some(Lookup::Hit(e, _)) = found.next()
            && e.meta.kind == ArtifactKind::Cubin
        {
            out[i] = Some(Ok(e.payload.to_vec()));
            continue;
        }
        missed.push((i, arch, key));
    }
    // One ptxas process per cubin, several at once.
    let threads = jit.map(|j| j.config().compile_threads).unwrap_or_else(crate::parallel::default_threads);
    let results = crate::parallel::map(threads, &missed, |(i, arch, _)| {
        let t0 = Instant::now();
        let cubin = ptxas.assemble(kernels[*i].ptx().unwrap_or_default(), &arch.to_string());
        (cubin, t0.elapsed().as_millis().min(u32::MAX as u128) as u32)
    });
    let mut assembled = Vec::new();
    for ((i, arch, key), result) in missed.into_iter().zip(results) {
        let k = kernels[i];
        let (cubin, ms) = result.unwrap_or_else(|panic| (Err(format!("assembling it panicked: {panic}")), 0));
        let cubin = match cubin {
            Ok(c) => c,
            Err(e) => {
                out[i] = Some(Err(Error::Ptxas(format!("{} rejected the PTX of '{}': {e}", ptxas.path.display(), k.name))));
                continue;
            }
        };
        // A kernel of a module that opted out of persisting (Module::persist(false)) stores nothing.
        if let (Some(key), true) = (key, k.persist) {
            crate::logging::debug!("assembled the cubin of '{}' for {arch} with ptxas in {ms} ms ({key})", k.name);
            let meta = Meta::new(key, &k.name, &signature_text(&k.signature, &k.enums, &k.types), ArtifactKind::Cubin, &k.entry, ms);
            assembled.push((i, Entry { meta, payload: cubin.clone().into() }));
        }
        out[i] = Some(Ok(cubin));
    }
    if let Some(cache) = cache {
        let stores: Vec<_> = assembled.into_iter().filter_map(|(i, e)| Some((kernels[i].library.persistable().ok()?, e))).collect();
        if !stores.is_empty() {
            cache.store_many(stores);
        }
    }
    out.into_iter().map(|o| o.unwrap_or_else(|| Err(Error::Device("no cubin was assembled".into())))).collect()
}
