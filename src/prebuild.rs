//! The cargo prebuild step: compile a crate's kernels at `cargo build` time, through the
//! persistent cache, and generate typed launch functions.
//!
//! ```no_run
//! // build.rs
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     kache::prebuild::Builder::new()
//!         .kernels_dir("kernels") // default "kernels"
//!         .arch("sm_80")          // repeatable; default KACHE_ARCH, else sm_70
//!         .build()?;              // writes $OUT_DIR/kache_kernels.rs
//!     Ok(())
//! }
//! ```
//!
//! and in the crate, `include!(concat!(env!("OUT_DIR"), "/kache_kernels.rs"));`. Each kernel
//! file becomes a module with one launch function per kernel; the PTX for each architecture is
//! embedded and loaded once per device. On the host backend, or for array layouts other than
//! C, the same functions compile the embedded source at run time, through the cache.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::capture::{CaptureValue, IntoCapture};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::ir::{Layout, Scalar, Ty};
use crate::jit::{CompiledKernel, Jit, Kernel};
use crate::runtime::{Device, Grid, KernelArgs};
use crate::target::{Arch, Specialization, Target};

/// Environment variables that change what the prebuild step writes; cargo re-runs the build
/// script when one changes.
pub const TRACKED_ENV: &[&str] = &["KACHE_ARCH", "KACHE_OPT_LEVEL", "KACHE_FAST_MATH", "KACHE_LIBDEVICE", "KACHE_SALT", "CUDA_HOME"];

/// Configures and runs the prebuild step from a build script.
#[derive(Debug, Default)]
pub struct Builder {
    kernels_dir: Option<PathBuf>,
    archs: Vec<String>,
    globals: Vec<(String, CaptureValue)>,
    errors: Vec<String>,
    out_file: Option<String>,
}

impl Builder {
    /// A builder with the defaults: kernels in `kernels/`, architecture `$KACHE_ARCH` or
    /// `sm_70`, output `$OUT_DIR/kache_kernels.rs`.
    pub fn new() -> Builder {
        Builder::default()
    }

    /// The folder of kernel sources, relative to the crate's manifest (default `kernels`).
    pub fn kernels_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.kernels_dir = Some(dir.into());
        self
    }

    /// Adds a GPU architecture to generate PTX for (repeatable).
    pub fn arch(mut self, arch: &str) -> Builder {
        self.archs.push(arch.to_string());
        self
    }

    /// Binds a host scalar or host array global for every kernel file. Device arrays exist only
    /// at run time: kernels that need one are compiled with the JIT instead.
    pub fn global(mut self, name: &str, value: impl IntoCapture) -> Builder {
        match value.into_capture() {
            Ok(v) => self.globals.push((name.to_string(), v)),
            Err(e) => self.errors.push(format!("global '{name}': {e}")),
        }
        self
    }

    /// The generated file's name in `$OUT_DIR` (default `kache_kernels.rs`).
    pub fn out_file(mut self, name: &str) -> Builder {
        self.out_file = Some(name.to_string());
        self
    }

    /// Compiles every kernel of every `.rs` file in the kernels folder for every architecture,
    /// through the cache, and writes the generated launch functions. Kernel errors are printed
    /// like rustc's (cargo shows them) and fail the build.
    pub fn build(self) -> Result<PathBuf> {
        let out_dir = PathBuf::from(
            std::env::var_os("OUT_DIR")
                .ok_or_else(|| Error::Config("OUT_DIR is not set: run the prebuild step from a build script".into()))?,
        );
        let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
        let dir = manifest.join(self.kernels_dir.clone().unwrap_or_else(|| "kernels".into()));
        println!("cargo:rerun-if-changed={}", dir.display());
        for v in TRACKED_ENV {
            println!("cargo:rerun-if-env-changed={v}");
        }
        if let Some(e) = self.errors.first() {
            return Err(Error::Config(e.clone()));
        }
        for (name, v) in &self.globals {
            if let CaptureValue::Device(_) = v {
                return Err(Error::Binding {
                    name: name.clone(),
                    problem: "device arrays exist only at run time; capture them with kache::Jit (Module::with_global) instead".into(),
                });
            }
        }
        let archs: Vec<Arch> = if self.archs.is_empty() {
            vec![Arch::default_from_env()?]
        } else {
            self.archs.iter().map(|a| Arch::parse(a).map_err(Error::from)).collect::<Result<_>>()?
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| Error::io(&dir, e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "rs"))
            .collect();
        files.sort();
        let jit = Jit::new(Config::from_env()?)?;
        let ptx_dir = out_dir.join("kache");
        std::fs::create_dir_all(&ptx_dir).map_err(|e| Error::io(&ptx_dir, e))?;
        let mut modules = Vec::new();
        let mut failed = false;
        for file in &files {
            println!("cargo:rerun-if-changed={}", file.display());
            match self.build_file(&jit, file, &archs, &ptx_dir) {
                Ok(m) => modules.push(m),
                Err(e) => {
                    failed = true;
                    report(&e, file);
                }
            }
        }
        if failed {
            return Err(Error::Config("kernel compilation failed (see the errors above)".into()));
        }
        let code = generate(&modules, &self.globals, &ptx_dir)?;
        let out = out_dir.join(self.out_file.as_deref().unwrap_or("kache_kernels.rs"));
        write_if_changed(&out, code.as_bytes())?;
        Ok(out)
    }

    fn build_file(&self, jit: &Jit, file: &Path, archs: &[Arch], ptx_dir: &Path) -> Result<GenModule> {
        let mut m = jit.load_file(file)?;
        for (n, v) in &self.globals {
            m = m.with_global(n, v.clone())?;
        }
        let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let module_name = crate::abi::symbol_name(&stem).to_lowercase();
        let mut kernels = Vec::new();
        for name in m.kernel_names() {
            let k = m.kernel(&name)?;
            if let Some(c) = k.program().captures.iter().find(|c| matches!(c.ty, crate::ir::CaptureTy::Array { device: true, .. })) {
                return Err(Error::Config(format!(
                    "kernel '{name}' captures {}, a device array, which exists only at run time; compile it with kache::Jit (Module::with_global) instead",
                    c.origin
                )));
            }
            let mut ptx = Vec::new();
            for a in archs {
                let c = k.compile(Target::Nvptx(*a), &Specialization::uniform(k.program(), Layout::C))?;
                let path = ptx_dir.join(format!("{module_name}.{name}.{a}.ptx"));
                write_if_changed(&path, c.ptx().unwrap_or("").as_bytes())?;
                ptx.push((a.to_string(), path));
            }
            kernels.push(GenKernel { name, signature: k.signature().to_vec(), ptx });
        }
        for f in m.factory_names() {
            println!(
                "cargo:warning=kache: {}: factory '{f}' is not prebuilt (its arguments come from the host); instantiate it with kache::Jit",
                file.display()
            );
        }
        Ok(GenModule { module: module_name, source: file.to_path_buf(), kernels })
    }
}

fn report(e: &Error, file: &Path) {
    match e {
        Error::Source(d) => {
            eprint!("{}", d.render(false));
            let unbound = d.items().iter().any(|i| i.message.starts_with("cannot find value"));
            if unbound {
                eprintln!(
                    "note: kernels built by kache::prebuild capture only host values bound with Builder::global; \
                     a kernel that needs a device array, or a value known only at run time, must be compiled at run time \
                     with kache::Jit and Module::with_global"
                );
            }
        }
        other => eprintln!("error: {}: {other}", file.display()),
    }
}

fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    std::fs::write(path, bytes).map_err(|e| Error::io(path, e))
}

struct GenKernel {
    name: String,
    signature: Vec<(String, Ty)>,
    ptx: Vec<(String, PathBuf)>,
}

struct GenModule {
    module: String,
    source: PathBuf,
    kernels: Vec<GenKernel>,
}

fn rust_type(t: &Ty) -> String {
    match t {
        Ty::Scalar(s) => s.name().to_string(),
        Ty::Array(a) if a.writable => format!("&mut ::kache::DeviceArray<{}>", a.elem),
        Ty::Array(a) => format!("&::kache::DeviceArray<{}>", a.elem),
        _ => "()".into(),
    }
}

fn generate(modules: &[GenModule], globals: &[(String, CaptureValue)], ptx_dir: &Path) -> Result<String> {
    let mut g = String::new();
    let mut global_items = Vec::new();
    for (i, (name, v)) in globals.iter().enumerate() {
        match v {
            CaptureValue::Scalar(s) => {
                let value = match s {
                    crate::ir::ScalarValue::Bool(b) => format!("::kache::prebuild::Global::Bool({b})"),
                    crate::ir::ScalarValue::Int(t, bits) => format!("::kache::prebuild::Global::Int(::kache::Scalar::{:?}, {bits}u64)", t),
                    crate::ir::ScalarValue::F32(x) => format!("::kache::prebuild::Global::F32(f32::from_bits({}u32))", x.to_bits()),
                    crate::ir::ScalarValue::F64(x) => format!("::kache::prebuild::Global::F64(f64::from_bits({}u64))", x.to_bits()),
                    crate::ir::ScalarValue::F16(_) | crate::ir::ScalarValue::Bf16(_) => {
                        format!("::kache::prebuild::Global::Float16(::kache::Scalar::{:?}, {}u16)", s.ty(), s.bits())
                    }
                };
                global_items.push(format!("({name:?}, {value})"));
            }
            CaptureValue::Host(h) => {
                let path = ptx_dir.join(format!("global-{i}.bin"));
                write_if_changed(&path, &h.bytes)?;
                global_items.push(format!(
                    "({name:?}, ::kache::prebuild::Global::Array {{ elem: ::kache::Scalar::{:?}, shape: &{:?}, fortran: {}, bytes: include_bytes!({:?}) }})",
                    h.elem,
                    h.shape,
                    h.layout == Layout::F,
                    path.display().to_string()
                ));
            }
            CaptureValue::Device(_) => {}
        }
    }
    let _ = writeln!(g, "#[allow(dead_code)] const KACHE_GLOBALS: &[(&str, ::kache::prebuild::Global)] = &[{}];", global_items.join(", "));
    for m in modules {
        let _ = writeln!(g, "/// Kernels of `{}`.", m.source.display());
        let _ = writeln!(g, "#[allow(dead_code, clippy::too_many_arguments)] pub mod {} {{", m.module);
        let _ = writeln!(g, "const SOURCE: &str = include_str!({:?});", m.source.display().to_string());
        for k in &m.kernels {
            let upper = k.name.to_uppercase();
            let ptx: Vec<String> = k.ptx.iter().map(|(a, p)| format!("({a:?}, include_str!({:?}))", p.display().to_string())).collect();
            let file = m.source.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
            let _ = writeln!(
                g,
                "static {upper}: ::kache::prebuild::Prebuilt = ::kache::prebuild::Prebuilt::new({:?}, {file:?}, SOURCE, &[{}], super::KACHE_GLOBALS);",
                k.name,
                ptx.join(", ")
            );
            let sig: Vec<String> = k.signature.iter().map(|(n, t)| format!("{n}: {t}")).collect();
            let params: Vec<String> = k.signature.iter().map(|(n, t)| format!("{n}: {}", rust_type(t))).collect();
            let args: Vec<String> = k.signature.iter().map(|(n, _)| n.clone()).collect();
            let _ = writeln!(g, "/// Launches kernel `{}({})` of `{file}` on `kache_device`.", k.name, sig.join(", "));
            let _ = writeln!(
                g,
                "pub fn {}(kache_device: &::kache::Device, kache_grid: ::kache::Grid{}{}) -> ::kache::Result<()> {{ {upper}.launch(kache_device, kache_grid, ({}{})) }}",
                k.name,
                if params.is_empty() { "" } else { ", " },
                params.join(", "),
                args.join(", "),
                if args.len() == 1 { "," } else { "" }
            );
            let _ = writeln!(g, "/// The prebuilt kernel `{}`, for launching with any arguments (`KernelArgs`).", k.name);
            let _ = writeln!(g, "pub fn {}_kernel() -> &'static ::kache::prebuild::Prebuilt {{ &{upper} }}", k.name);
        }
        let _ = writeln!(g, "}}");
    }
    let file = syn::parse_file(&g).map_err(|e| Error::Config(format!("internal error: generated code does not parse: {e}")))?;
    Ok(format!("// @generated by kache::prebuild from the crate's kernels; do not edit.\n{}", prettyplease::unparse(&file)))
}

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
    /// `f16` or `bf16`, by its bits.
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
                    .ok_or_else(|| crate::error::Error::BadArray(format!("`{s}` is not a 16-bit float type")))?,
            ),
            Global::Array { elem, shape, fortran, bytes } => {
                let order = if fortran { crate::capture::Order::F } else { crate::capture::Order::C };
                CaptureValue::Host(Arc::new(crate::capture::HostData::from_bytes(elem, shape, order, bytes)?))
            }
        })
    }
}

struct State {
    kernel: Kernel,
    loaded: Mutex<BTreeMap<usize, Arc<CompiledKernel>>>,
}

/// A kernel compiled at build time (generated code holds one per kernel): its embedded PTX,
/// loaded once per device, and its source, compiled at run time through the cache where no PTX
/// fits (the host backend, layouts other than C).
pub struct Prebuilt {
    name: &'static str,
    file: &'static str,
    source: &'static str,
    ptx: &'static [(&'static str, &'static str)],
    globals: &'static [(&'static str, Global)],
    state: OnceLock<std::result::Result<State, String>>,
}

impl std::fmt::Debug for Prebuilt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prebuilt")
            .field("name", &self.name)
            .field("file", &self.file)
            .field("archs", &self.ptx.iter().map(|p| p.0).collect::<Vec<_>>())
            .finish()
    }
}

fn runtime_jit() -> Result<Jit> {
    static JIT: OnceLock<std::result::Result<Jit, String>> = OnceLock::new();
    JIT.get_or_init(|| Jit::from_env().map_err(|e| e.to_string())).clone().map_err(Error::Config)
}

impl Prebuilt {
    /// Used by generated code.
    pub const fn new(
        name: &'static str,
        file: &'static str,
        source: &'static str,
        ptx: &'static [(&'static str, &'static str)],
        globals: &'static [(&'static str, Global)],
    ) -> Prebuilt {
        Prebuilt { name, file, source, ptx, globals, state: OnceLock::new() }
    }

    fn state(&self) -> Result<&State> {
        let s = self.state.get_or_init(|| {
            let build = || -> Result<State> {
                let mut m = runtime_jit()?.load_source(self.file, self.source)?;
                for (n, g) in self.globals {
                    m = m.with_global(n, g.value()?)?;
                }
                Ok(State { kernel: m.kernel(self.name)?, loaded: Mutex::new(BTreeMap::new()) })
            };
            build().map_err(|e| e.to_string())
        });
        s.as_ref().map_err(|e| Error::Config(format!("prebuilt kernel '{}': {e}", self.name)))
    }

    /// The kernel (parsed and checked from the embedded source).
    pub fn kernel(&self) -> Result<&Kernel> {
        Ok(&self.state()?.kernel)
    }

    /// Architectures with embedded PTX.
    pub fn archs(&self) -> Vec<&'static str> {
        self.ptx.iter().map(|p| p.0).collect()
    }

    /// The embedded PTX that runs on `arch`: its own, else the newest older one (PTX is
    /// forward compatible), never an `a` variant for another architecture.
    pub fn ptx_for(&self, arch: Arch) -> Option<&'static str> {
        let mut best: Option<(Arch, &'static str)> = None;
        for (a, ptx) in self.ptx {
            let Ok(pa) = Arch::parse(a) else { continue };
            let fits = pa == arch || (!pa.accelerated && pa.sm <= arch.sm);
            if fits && best.is_none_or(|(b, _)| pa.sm > b.sm || (pa.sm == b.sm && pa.accelerated)) {
                best = Some((pa, ptx));
            }
        }
        best.map(|b| b.1)
    }

    /// Launches with arguments checked against the signature: the embedded PTX on a GPU it fits
    /// (loaded once per device), else the source compiled at run time through the cache.
    pub fn launch(&self, device: &Device, grid: Grid, args: impl KernelArgs) -> Result<()> {
        let st = self.state()?;
        let args = args.args()?;
        let spec = crate::jit::check_args(self.name, st.kernel.signature(), &args, device)?;
        let all_c = spec.layouts.iter().all(|l| matches!(l, None | Some(Layout::C)));
        if let (Some(arch), true) = (device.arch(), all_c) {
            if let Some(ptx) = self.ptx_for(arch) {
                let ordinal = match device.location() {
                    crate::capture::Location::Cuda(o) => o,
                    _ => 0,
                };
                let c = {
                    let mut loaded = st.loaded.lock().unwrap_or_else(|e| e.into_inner());
                    match loaded.get(&ordinal) {
                        Some(c) => c.clone(),
                        None => {
                            let c = st.kernel.with_ptx(Target::Nvptx(arch), &spec, ptx.to_string());
                            loaded.insert(ordinal, c.clone());
                            c
                        }
                    }
                };
                return c.launch(device, grid, args);
            }
        }
        st.kernel.launch(device, grid, args)
    }
}
