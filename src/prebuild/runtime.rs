//! The run-time side of generated code: [`Prebuilt`], one per kernel, which launches the code
//! the build step embedded (a cubin or PTX on a GPU, linked object code on the host backend)
//! with nothing but the runtime; [`Global`], the host values bound at build time. With the
//! `compiler` feature, what has no prebuilt code (array layouts other than C, a device without
//! fitting code) is compiled at run time from the embedded source, through the cache.

use std::sync::{Arc, OnceLock};

use crate::abi::{HostEntry, ParamAbi};
use crate::error::Result;
use crate::ir::{EnumDef, Layout, Scalar, Ty, Types};
use crate::runtime::fault::FaultSites;
use crate::runtime::launch::{self, HostKernel};
use crate::runtime::modules::{DeviceModules, Load};
use crate::runtime::{ArgValue, Device, Grid, KernelArg, KernelArgs, cuda};
use crate::target::Arch;

/// A host value bound at build time (generated code).
#[derive(Clone, Copy, Debug)]
pub enum Global {
    /// `bool`
    Bool(bool),
    /// An integer of the given type (two's complement bits).
    Int(Scalar, u64),
    /// `f32`
    F32(f32),
    /// `f64`
    F64(f64),
    /// `f16` or `bf16` (the first field), by its bits.
    Float16(Scalar, u16),
    /// A host array.
    Array {
        /// Element type.
        elem: Scalar,
        /// Extents.
        shape: &'static [usize],
        /// Column-major data.
        fortran: bool,
        /// Little-endian element bytes.
        bytes: &'static [u8],
    },
}

/// The host values bound at build time, by name (generated code holds one list).
pub type Globals = &'static [(&'static str, Global)];

impl Global {
    /// An `f32` from its bits (generated code writes floats as bits: exact, NaN payloads
    /// included, and without naming the type `f32`, which a kernel file `f32.rs` would shadow).
    pub const fn f32_from_bits(bits: u32) -> Global {
        Global::F32(f32::from_bits(bits))
    }

    /// An `f64` from its bits (see [`Global::f32_from_bits`]).
    pub const fn f64_from_bits(bits: u64) -> Global {
        Global::F64(f64::from_bits(bits))
    }
}

/// Host machine code of one kernel, linked into the program by the build step.
#[derive(Clone, Copy, Debug)]
pub struct HostCode {
    kernel: HostKernel,
}

impl HostCode {
    /// Host code at `entry`, which uses `static_shared` bytes of static shared memory per block,
    /// synchronises a block's threads if `cooperative`, and may use `stack` bytes of stack per
    /// kernel thread (each thread is given at least that).
    ///
    /// # Safety
    ///
    /// `entry` must be the entry of host code that kache's code generator produced for the
    /// kernel whose parameters the [`KernelData`] holding this `HostCode` lists (in its
    /// [`abi`](crate::abi) and for C-contiguous arrays), linked into this program with its
    /// calls resolved against this kache build, and `static_shared`, `cooperative` and `stack`
    /// must be what the code generator reported for it
    /// ([`host_object`](crate::codegen::host_object) gives the stack). The build step's
    /// generated code passes exactly that.
    pub const unsafe fn new(entry: HostEntry, static_shared: u64, cooperative: bool, stack: u64) -> HostCode {
        HostCode { kernel: HostKernel { entry, static_shared, cooperative, stack } }
    }
}

/// The [`HostCode`] of a kernel entry linked into the program, for generated code only: it
/// declares `$symbol` and makes the [`HostCode`], so that the generated file holds no `unsafe`
/// of its own (crates that forbid `unsafe_code` can include it). The promise of
/// [`HostCode::new`] is the build step's, which wrote the call; do not call it by hand.
#[doc(hidden)]
#[macro_export]
macro_rules! __kache_prebuilt_host_code {
    ($symbol:ident, $static_shared:expr, $cooperative:expr, $stack:expr) => {{
        unsafe extern "C" {
            fn $symbol(ctx: *mut u8, params: *const *const u8);
        }
        // SAFETY: written by the prebuild step, which linked `$symbol` (host code it generated
        // for this kernel) into the crate, with the code's static shared size, barrier use and
        // stack per thread.
        unsafe { $crate::prebuild::HostCode::new($symbol, $static_shared, $cooperative, $stack) }
    }};
}

/// The [`Prebuilt`] of a kernel, for generated code only: it calls the `unsafe`
/// [`Prebuilt::new`], so that the generated file holds no `unsafe` of its own. The promise of
/// [`Prebuilt::new`] is the build step's, which wrote the call with the code it compiled; do
/// not call it by hand.
#[doc(hidden)]
#[macro_export]
macro_rules! __kache_prebuilt {
    ($data:expr) => {{
        // SAFETY: written by the prebuild step, with the code, signature and entry it compiled
        // from the embedded source and globals.
        unsafe { $crate::prebuild::Prebuilt::new($data) }
    }};
}

/// A C-like enum of a kernel parameter's type, as generated code writes it: an argument of the
/// type is passed as its discriminant, which the launch checks is one of the variants'.
#[derive(Debug)]
pub struct EnumData {
    /// Its name, qualified by its module outside the root.
    pub name: &'static str,
    /// The integer type of its discriminants.
    pub repr: Scalar,
    /// Variant names and discriminants, in declaration order.
    pub variants: &'static [(&'static str, i128)],
}

/// Everything generated code knows about one kernel: names, parameters, the embedded code and
/// source, and the globals it was compiled with.
#[derive(Debug)]
pub struct KernelData {
    /// The kernel's name in the kernel language.
    pub name: &'static str,
    /// Its file's name, for messages.
    pub file: &'static str,
    /// The kernel file's source (compiled at run time where no prebuilt code fits, with the
    /// `compiler` feature).
    pub source: &'static str,
    /// The module files it includes (`mod name;`): path relative to its folder, and text.
    pub modules: &'static [(&'static str, &'static str)],
    /// Parameter names and types, in order.
    pub params: &'static [(&'static str, Ty)],
    /// The enums of the parameters' types, by [`EnumTy::id`](crate::ir::EnumTy).
    pub enums: &'static [EnumData],
    /// The symbol of the kernel's entry in its PTX and cubins.
    pub entry: &'static str,
    /// `(architecture, PTX)` for each architecture built for.
    pub ptx: &'static [(&'static str, &'static str)],
    /// `(architecture, cubin)` for each architecture assembled with ptxas at build time.
    pub cubins: &'static [(&'static str, &'static [u8])],
    /// Host machine code linked into the program, for C-contiguous arrays.
    pub host: Option<HostCode>,
    /// The host values bound at build time.
    pub globals: Globals,
    /// The type names of the tensor maps its parameters take (`TensorMap<bf16, 64, 128,
    /// 128>`): a parameter of type `Ty::Agg(i)` takes the map named `tensor_maps[i]`.
    pub tensor_maps: &'static [&'static str],
}

/// A kernel compiled at build time (generated code holds one per kernel). On a GPU it loads
/// the embedded cubin that runs there (one per device, once), else the embedded PTX that fits;
/// on the host backend it runs the linked object code. All of it for array arguments in C
/// layout; other layouts, and devices no embedded code fits, need the `compiler` feature,
/// which compiles the embedded source at run time through the cache.
pub struct Prebuilt {
    data: KernelData,
    signature: OnceLock<Vec<(String, Ty)>>,
    enums: OnceLock<Vec<EnumDef>>,
    /// The parameters' aggregate types: the tensor maps, by index.
    types: OnceLock<Types>,
    abi: OnceLock<Vec<ParamAbi>>,
    faults: OnceLock<Arc<FaultSites>>,
    /// Loaded on each CUDA device, once.
    loaded: DeviceModules<()>,
    #[cfg(feature = "compiler")]
    jit: OnceLock<std::result::Result<jit_fallback::State, Arc<crate::Error>>>,
}

impl std::fmt::Debug for Prebuilt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prebuilt")
            .field("name", &self.data.name)
            .field("file", &self.data.file)
            .field("ptx", &self.archs())
            .field("cubins", &self.cubin_archs())
            .field("host_code", &self.data.host.is_some())
            .finish()
    }
}

/// Whether a cubin for `arch` runs on a device of compute capability `cc`: GPU machine code
/// runs on its own major version at its minor version or newer, an `a` variant on its own
/// architecture only.
fn cubin_fits(arch: Arch, (major, minor): (i32, i32)) -> bool {
    let (a_major, a_minor) = ((arch.sm / 10) as i32, (arch.sm % 10) as i32);
    if arch.accelerated { (a_major, a_minor) == (major, minor) } else { a_major == major && a_minor <= minor }
}

impl Prebuilt {
    /// Used by generated code.
    ///
    /// # Safety
    ///
    /// `data` must be what `prebuild::Builder` generates for the kernel `data.name` of
    /// `data.source` (with its `modules`) and `data.globals` bound: each `(arch, ptx)` of
    /// `data.ptx` and each `(arch, cubin)` of `data.cubins` kache's bounds-checked compilation
    /// of that kernel for `arch` with every array parameter C-contiguous, `data.params` and
    /// `data.enums` its signature, and `data.entry` its entry symbol. [`launch`](Self::launch)
    /// runs that code on a GPU as checked code with arguments checked against `data.params`,
    /// and kache cannot verify machine code. (`data.host` carries the promise of
    /// [`HostCode::new`].) Generated code calls this through a macro, so that it holds no
    /// `unsafe` of its own.
    pub const unsafe fn new(data: KernelData) -> Prebuilt {
        Prebuilt {
            data,
            signature: OnceLock::new(),
            enums: OnceLock::new(),
            types: OnceLock::new(),
            abi: OnceLock::new(),
            faults: OnceLock::new(),
            loaded: DeviceModules::new(),
            #[cfg(feature = "compiler")]
            jit: OnceLock::new(),
        }
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.data.name
    }

    /// Parameter names and types.
    pub fn signature(&self) -> &[(String, Ty)] {
        self.signature.get_or_init(|| self.data.params.iter().map(|(n, t)| (n.to_string(), *t)).collect())
    }

    /// The enums of the parameters' types, by [`EnumTy::id`](crate::ir::EnumTy).
    pub fn enums(&self) -> &[EnumDef] {
        self.enums.get_or_init(|| {
            self.data
                .enums
                .iter()
                .map(|e| EnumDef {
                    name: e.name.to_string(),
                    repr: e.repr,
                    variants: e.variants.iter().map(|(n, d)| (n.to_string(), *d)).collect(),
                })
                .collect()
        })
    }

    fn abi(&self) -> &[ParamAbi] {
        self.abi.get_or_init(|| ParamAbi::of_signature(self.signature(), self.types()))
    }

    /// The parameters' aggregate types: each tensor map's struct, its index its id.
    fn types(&self) -> &Types {
        self.types.get_or_init(|| {
            let mut types = Types::default();
            for name in self.data.tensor_maps {
                types.add_struct(crate::ir::StructDef::tensor_map(name.to_string()));
            }
            types
        })
    }

    /// How a failed bounds check of the prebuilt code is reported: the kernel and the check's
    /// number (generated code carries no description of its checks; the JIT's compilation of the
    /// same source names the array and the source line).
    fn faults(&self) -> &Arc<FaultSites> {
        self.faults.get_or_init(|| Arc::new(FaultSites { kernel: self.data.name.to_string(), sites: Vec::new() }))
    }

    /// Architectures with embedded PTX.
    pub fn archs(&self) -> Vec<&'static str> {
        self.data.ptx.iter().map(|p| p.0).collect()
    }

    /// Architectures with an embedded cubin.
    pub fn cubin_archs(&self) -> Vec<&'static str> {
        self.data.cubins.iter().map(|p| p.0).collect()
    }

    /// Whether host machine code is linked in (the host backend then needs no compiler).
    pub fn has_host_code(&self) -> bool {
        self.data.host.is_some()
    }

    /// The embedded PTX that runs on `arch`: its own, else the newest older one (PTX is
    /// forward compatible), never an `a` variant for another architecture.
    pub fn ptx_for(&self, arch: Arch) -> Option<&'static str> {
        let mut best: Option<(Arch, &'static str)> = None;
        for (a, ptx) in self.data.ptx {
            let Ok(pa) = Arch::parse(a) else { continue };
            let fits = pa == arch || (!pa.accelerated && pa.sm <= arch.sm);
            if fits && best.is_none_or(|(b, _)| pa.sm > b.sm || (pa.sm == b.sm && pa.accelerated)) {
                best = Some((pa, ptx));
            }
        }
        best.map(|b| b.1)
    }

    /// The embedded cubin that runs on a device of compute capability `cc`: built for it
    /// exactly if there is one, else for the newest older minor version of its major version.
    pub fn cubin_for(&self, cc: (i32, i32)) -> Option<&'static [u8]> {
        let mut best: Option<(Arch, &'static [u8])> = None;
        for (a, cubin) in self.data.cubins {
            let Ok(pa) = Arch::parse(a) else { continue };
            if cubin_fits(pa, cc) && best.is_none_or(|(b, _)| (pa.sm, pa.accelerated) > (b.sm, b.accelerated)) {
                best = Some((pa, cubin));
            }
        }
        best.map(|b| b.1)
    }

    /// Launches with arguments checked against the signature: the prebuilt code where some
    /// fits (every array argument C-contiguous), else, with the `compiler` feature, the
    /// embedded source compiled at run time through the cache.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let args = args.args()?;
        let spec = launch::check_args(self.data.name, self.signature(), self.enums(), self.types(), &args, device)?;
        grid.check()?;
        let not_c = spec.layouts.iter().zip(self.data.params).find(|(l, _)| !matches!(l, None | Some(Layout::C)));
        if not_c.is_none() {
            match device.cuda_impl() {
                None => {
                    if let Some(host) = &self.data.host {
                        launch::check_aliasing(self.data.name, self.signature(), &args, &[])?;
                        let slots = launch::param_slots(self.data.name, self.abi(), &args)?;
                        // SAFETY: `HostCode::new`'s promise: the entry is kache's bounds-checked
                        // host code for this kernel's parameters, linked into the program; the
                        // arguments were checked against the same signature and for aliasing,
                        // and are all C-contiguous.
                        return unsafe { launch::run_host(host.kernel, &grid, &slots, self.faults()) };
                    }
                }
                Some(dev) => {
                    if let Some(f) = self.cuda_function(dev)? {
                        launch::check_aliasing(self.data.name, self.signature(), &args, &[])?;
                        let slots = launch::param_slots(self.data.name, self.abi(), &args)?;
                        let cuda = launch::CudaLaunch {
                            faults: self.faults(),
                            queues: launch::queues_of(&args).collect(),
                            checked: true,
                            captured: &[],
                        };
                        // SAFETY: `Prebuilt::new`'s promise: the embedded code is kache's
                        // bounds-checked compilation of this kernel; the arguments were checked
                        // against its signature and for aliasing.
                        return unsafe { launch::run_cuda(dev, &f, &grid, &slots, cuda) };
                    }
                }
            }
        }
        #[cfg(feature = "compiler")]
        {
            let _ = not_c;
            self.launch_jit(device, grid, args)
        }
        #[cfg(not(feature = "compiler"))]
        Err(self.no_code(device, not_c.map(|(l, (name, _))| (*name, l.unwrap_or(Layout::C)))))
    }

    /// [`Prebuilt::launch`] with the arguments as a slice of any length (generated launch
    /// functions use it: a tuple of arguments has at most 12).
    pub fn launch_with(&self, device: &Device, grid: Grid, args: &[&dyn KernelArg]) -> Result<()> {
        let args: Vec<ArgValue> = args.iter().map(|a| a.arg()).collect::<Result<_>>()?;
        self.launch(device, grid, args)
    }

    /// The kernel loaded on CUDA device `dev` from the embedded code that fits it (once per
    /// device): a cubin for its architecture, else PTX, which the driver compiles; `None`
    /// where nothing embedded fits (or, with the `compiler` feature, where only PTX does: the
    /// JIT then loads it through the cache's cubin tier).
    fn cuda_function(&self, dev: &cuda::CudaDevice) -> Result<Option<Arc<cuda::LoadedFunction>>> {
        if let Some(f) = self.loaded.loaded(dev.ordinal) {
            return Ok(Some(f));
        }
        let entry = self.data.entry;
        let cubin = self.cubin_for(dev.compute_capability);
        let ptx = if cfg!(feature = "compiler") { None } else { self.ptx_for(dev.arch) };
        if cubin.is_none() && ptx.is_none() {
            return Ok(None);
        }
        // Set where nothing embedded loaded: the JIT's turn, not an error.
        let mut nothing_fits = false;
        let load = || -> Result<Load<()>> {
            if let Some(cubin) = cubin {
                match dev.load_image(cubin, entry) {
                    Ok(function) => {
                        crate::logging::debug!("prebuilt kernel '{}': loaded its cubin on {}", self.data.name, dev.name);
                        return Ok(Load { function, cubin: None, how: () });
                    }
                    Err(e) => crate::logging::warning!(
                        "the prebuilt cubin of kernel '{}' did not load on {} ({e}); loading its PTX instead",
                        self.data.name,
                        dev.name
                    ),
                }
            }
            let Some(ptx) = ptx else {
                nothing_fits = true;
                return Err(crate::Error::Device(format!("no embedded code of '{}' loaded on {}", self.data.name, dev.name)));
            };
            // The cubin the driver makes serves the next device of this compute capability.
            let (function, built) = dev.load_ptx(ptx, entry)?;
            crate::logging::debug!("prebuilt kernel '{}': loaded its PTX on {} (the driver compiled it)", self.data.name, dev.name);
            Ok(Load { function, cubin: built.map(Into::into), how: () })
        };
        match self.loaded.get_or_load(dev, entry, (), load) {
            Ok(f) => Ok(Some(f)),
            Err(_) if nothing_fits => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Why nothing prebuilt runs this launch, and what would.
    #[cfg(not(feature = "compiler"))]
    fn no_code(&self, device: &Device, not_c: Option<(&str, Layout)>) -> crate::Error {
        let name = self.data.name;
        let why = match (not_c, device.cuda_impl()) {
            (Some((param, layout)), _) => format!(
                "its prebuilt code takes C-contiguous arrays, and argument `{param}` is in layout {layout}; pass a C-contiguous array"
            ),
            (None, None) => "it has no host code: the build step made none for this target".to_string(),
            (None, Some(_)) => {
                format!(
                    "none of its embedded code runs on {} (PTX for {:?}); add the architecture with Builder::arch",
                    device.describe(),
                    self.archs()
                )
            }
        };
        crate::Error::Device(format!(
            "prebuilt kernel '{name}' cannot run: {why}, or enable kache's `compiler` feature to compile it at run time"
        ))
    }
}

/// With the `compiler` feature: the kernel compiled at run time from its embedded source, for
/// launches no prebuilt code serves.
#[cfg(feature = "compiler")]
mod jit_fallback {
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex, OnceLock};

    use super::{Global, Prebuilt};
    use crate::capture::CaptureValue;
    use crate::error::{Error, Result};
    use crate::ir::Layout;
    use crate::runtime::{ArgValue, Device, Grid};
    use crate::target::Arch;
    use crate::{CompiledKernel, Jit, Kernel, Target};

    pub(super) struct State {
        pub(super) kernel: Kernel,
        /// The embedded PTX, by architecture: each compiled kernel loads on every device of
        /// its architecture, through the cache's cubin tier.
        loaded: Mutex<BTreeMap<Arch, Arc<CompiledKernel>>>,
    }

    /// The JIT every prebuilt kernel of the process shares, configured from the environment;
    /// its configuration error, if any, kept for every later call.
    fn runtime_jit() -> std::result::Result<Jit, Arc<Error>> {
        static JIT: OnceLock<std::result::Result<Jit, Arc<Error>>> = OnceLock::new();
        JIT.get_or_init(|| Jit::from_env().map_err(Arc::new)).clone()
    }

    impl Global {
        fn value(&self) -> Result<CaptureValue> {
            use crate::ir::ScalarValue as V;
            Ok(match *self {
                Global::Bool(b) => CaptureValue::Scalar(V::Bool(b)),
                Global::Int(s, bits) => CaptureValue::Scalar(V::Int(s, bits)),
                Global::F32(x) => CaptureValue::Scalar(V::F32(x)),
                Global::F64(x) => CaptureValue::Scalar(V::F64(x)),
                Global::Float16(s, bits) => CaptureValue::Scalar(
                    V::from_le_bytes(s, &bits.to_le_bytes())
                        .filter(|v| v.ty().is_half())
                        .ok_or_else(|| Error::BadArray(format!("`{s}` is not a 16-bit float type")))?,
                ),
                Global::Array { elem, shape, fortran, bytes } => {
                    let order = if fortran { crate::capture::Order::F } else { crate::capture::Order::C };
                    CaptureValue::Host(Arc::new(crate::capture::HostData::from_bytes(elem, shape, order, bytes)?))
                }
            })
        }
    }

    impl Prebuilt {
        fn jit_state(&self) -> Result<&State> {
            let s = self.jit.get_or_init(|| {
                let jit = runtime_jit()?;
                let build = || -> Result<State> {
                    let files = self.data.modules.iter().fold(crate::lang::MemorySources::new(), |s, (p, t)| s.with(p, *t));
                    let mut m = jit.load_sources(self.data.file, self.data.source, files)?.bound_by(crate::lang::Binder::BuildScript);
                    for (n, g) in self.data.globals {
                        m = m.with_global(n, g.value()?)?;
                    }
                    Ok(State { kernel: m.kernel(self.data.name)?, loaded: Mutex::new(BTreeMap::new()) })
                };
                build().map_err(Arc::new)
            });
            s.as_ref().map_err(|e| Error::Prebuilt { kernel: self.data.name.to_string(), source: e.clone() })
        }

        /// The kernel, parsed and checked from the embedded source (`compiler` feature).
        pub fn kernel(&self) -> Result<&Kernel> {
            Ok(&self.jit_state()?.kernel)
        }

        /// Launches through the JIT: the embedded PTX on a GPU it fits (loaded through the
        /// cache's cubin tier, once per device) when every array is C-contiguous, else the
        /// kernel compiled for the device and the arguments' layouts.
        pub(super) fn launch_jit(&self, device: &Device, grid: Grid, args: Vec<ArgValue>) -> Result<()> {
            let st = self.jit_state()?;
            let spec = crate::runtime::launch::check_args(
                self.data.name,
                st.kernel.signature(),
                st.kernel.enums(),
                &crate::ir::Types::default(),
                &args,
                device,
            )?;
            let all_c = spec.layouts.iter().all(|l| matches!(l, None | Some(Layout::C)));
            if let (Some(arch), true) = (device.arch(), all_c)
                && let Some(ptx) = self.ptx_for(arch)
            {
                let c = {
                    let mut loaded = st.loaded.lock().unwrap_or_else(|e| e.into_inner());
                    match loaded.get(&arch) {
                        Some(c) => c.clone(),
                        None => {
                            // SAFETY: `Prebuilt::new`'s caller (the generated code) vouched that
                            // the embedded PTX is kache's checked compilation of this kernel.
                            let c = unsafe { st.kernel.with_ptx(Target::Nvptx(arch), &spec, ptx.to_string()) };
                            loaded.insert(arch, c.clone());
                            c
                        }
                    }
                };
                return c.launch(device, grid, args);
            }
            st.kernel.launch(device, grid, args)
        }
    }
}
