//! The run-time side of generated code: [`Prebuilt`], one per kernel, which launches the
//! embedded PTX on a GPU it fits and compiles the embedded source elsewhere; and [`Global`],
//! the host values bound at build time.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use crate::capture::CaptureValue;
use crate::error::{Error, Result};
use crate::ir::{Layout, Scalar};
use crate::runtime::{ArgValue, Device, Grid, KernelArg, KernelArgs};
use crate::{Arch, CompiledKernel, Jit, Kernel, Target};

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
    modules: &'static [(&'static str, &'static str)],
    ptx: &'static [(&'static str, &'static str)],
    globals: Globals,
    state: OnceLock<std::result::Result<State, Arc<Error>>>,
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

/// The JIT every prebuilt kernel of the process shares, configured from the environment; its
/// configuration error, if any, kept for every later call.
fn runtime_jit() -> std::result::Result<Jit, Arc<Error>> {
    static JIT: OnceLock<std::result::Result<Jit, Arc<Error>>> = OnceLock::new();
    JIT.get_or_init(|| Jit::from_env().map_err(Arc::new)).clone()
}

impl Prebuilt {
    /// Used by generated code.
    pub const fn new(
        name: &'static str,
        file: &'static str,
        source: &'static str,
        modules: &'static [(&'static str, &'static str)],
        ptx: &'static [(&'static str, &'static str)],
        globals: Globals,
    ) -> Prebuilt {
        Prebuilt { name, file, source, modules, ptx, globals, state: OnceLock::new() }
    }

    fn state(&self) -> Result<&State> {
        let s = self.state.get_or_init(|| {
            let jit = runtime_jit()?;
            let build = || -> Result<State> {
                let files = self.modules.iter().fold(crate::lang::MemorySources::new(), |s, (p, t)| s.with(p, *t));
                let mut m = jit.load_sources(self.file, self.source, files)?;
                for (n, g) in self.globals {
                    m = m.with_global(n, g.value()?)?;
                }
                Ok(State { kernel: m.kernel(self.name)?, loaded: Mutex::new(BTreeMap::new()) })
            };
            build().map_err(Arc::new)
        });
        s.as_ref().map_err(|e| Error::Prebuilt { kernel: self.name.to_string(), source: e.clone() })
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
        let spec = crate::jit::check_args(self.name, st.kernel.signature(), st.kernel.enums(), &args, device)?;
        let all_c = spec.layouts.iter().all(|l| matches!(l, None | Some(Layout::C)));
        if let (Some(arch), true) = (device.arch(), all_c)
            && let Some(ptx) = self.ptx_for(arch)
        {
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
        st.kernel.launch(device, grid, args)
    }

    /// [`Prebuilt::launch`] with the arguments as a slice of any length (generated launch
    /// functions use it: a tuple of arguments has at most 12).
    pub fn launch_with(&self, device: &Device, grid: Grid, args: &[&dyn KernelArg]) -> Result<()> {
        let args: Vec<ArgValue> = args.iter().map(|a| a.arg()).collect::<Result<_>>()?;
        self.launch(device, grid, args)
    }
}
