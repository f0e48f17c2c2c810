//! What code is generated for: the GPU architecture or the host, the options that change the
//! generated code, and the specialisation of a kernel's array layouts. No LLVM here, so the
//! runtime can name a target without the compiler.
//!
//! The host CPU is part of what host code is generated for ([`HostCpu`]). Only LLVM knows this
//! machine's CPU by name, so [`Options::encode`], which keys host code by it, lives in
//! `codegen`, next to `codegen::host_cpu`; a [`Target`] displays without it (`host`), which
//! the runtime can do without the compiler.

use std::fmt;

use crate::ir::{Layout, Program, Ty};

/// A GPU architecture, `sm_XX` or `sm_90a`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Compute capability times ten: 70 for `sm_70`.
    pub sm: u32,
    /// The architecture-specific `a` variant (`sm_90a`).
    pub accelerated: bool,
}

/// Architectures kache generates code for.
pub const SUPPORTED_ARCHS: &[&str] = &["sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90", "sm_90a"];

/// An architecture kache does not generate code for.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unsupported GPU architecture `{0}`; supported: {list}", list = SUPPORTED_ARCHS.join(", "))]
pub struct UnsupportedArch(pub String);

impl Arch {
    /// Parses `sm_XX`; an unsupported architecture is an error that lists the supported ones.
    pub fn parse(s: &str) -> Result<Arch, UnsupportedArch> {
        let bad = || UnsupportedArch(s.to_string());
        if !SUPPORTED_ARCHS.contains(&s) {
            return Err(bad());
        }
        let digits = s.trim_start_matches("sm_");
        let (digits, accelerated) = match digits.strip_suffix('a') {
            Some(d) => (d, true),
            None => (digits, false),
        };
        Ok(Arch { sm: digits.parse().map_err(|_| bad())?, accelerated })
    }

    /// The default: `KACHE_ARCH`, else `sm_70`.
    pub fn default_from_env() -> Result<Arch, UnsupportedArch> {
        match std::env::var("KACHE_ARCH") {
            Ok(s) if !s.is_empty() => Arch::parse(&s),
            _ => Ok(Arch { sm: 70, accelerated: false }),
        }
    }

    /// The PTX ISA version emitted for this architecture (the lowest that supports it, so older
    /// drivers load it too).
    pub fn ptx_isa(self) -> (u32, u32) {
        match self.sm {
            90.. => (8, 0),
            89 => (7, 8),
            87 => (7, 4),
            86 => (7, 1),
            80 => (7, 0),
            _ => (6, 3),
        }
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.sm, if self.accelerated { "a" } else { "" })
    }
}

/// Where the code runs: `nvptx sm_90` or `host` when displayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// NVIDIA GPUs: PTX for the given architecture.
    Nvptx(Arch),
    /// The CPU: the host backend.
    Host,
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Nvptx(a) => write!(f, "nvptx {a}"),
            Target::Host => f.write_str("host"),
        }
    }
}

/// The CPU that host code is generated for.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum HostCpu {
    /// This machine's CPU with every feature it has: the JIT, whose code runs where it was
    /// compiled.
    #[default]
    Native,
    /// A CPU by LLVM's name and feature list (`x86-64`, `+sse2,+fxsr`): code compiled on one
    /// machine to run on others, such as the object code of the prebuild step.
    Named {
        /// LLVM's CPU name.
        cpu: String,
        /// LLVM's feature list, `+name` or `-name`, comma-separated.
        features: String,
    },
}

/// Options that change the generated code (all of them are part of the cache key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Target.
    pub target: Target,
    /// LLVM optimisation level, 0..=3.
    pub opt_level: u8,
    /// Allow float reassociation and approximations (`fast` flags on float operations).
    pub fast_math: bool,
    /// Contract a float multiply and a dependent add into one fused multiply-add (one rounding
    /// instead of two), as nvcc and NVRTC do by default (`--fmad=true`). A kernel's
    /// `#[kernel(fmad = ..)]` overrides it.
    pub fmad: bool,
    /// Bounds-check every array access: an out-of-bounds thread records the fault and exits
    /// (`docs/runtime.md`, "Bounds checks"). Safe launches run only checked code; unchecked
    /// code is for `unsafe` launches. Keyed, so neither variant ever serves the other.
    pub checked: bool,
    /// The CPU host code is generated for (ignored for GPU targets).
    pub host_cpu: HostCpu,
    /// Compile without assuming that the launch's arrays are disjoint: no `noalias` on
    /// read-only array parameters, so no loads through the non-coherent cache, and every load
    /// sees every earlier write of its thread through any array. Only the `unsafe`
    /// `launch_aliased` runs such code with overlapping arrays; keyed, so neither variant ever
    /// serves the other.
    pub may_alias: bool,
}

impl Options {
    /// O3, IEEE float semantics with contraction (as nvcc's default), bounds-checked, for
    /// `target` (host code for this machine's CPU).
    pub fn new(target: Target) -> Options {
        Options { target, opt_level: 3, fast_math: false, fmad: true, checked: true, host_cpu: HostCpu::Native, may_alias: false }
    }

    /// Writes the options into a key component; for [`Target::Host`], the CPU host code is
    /// optimised for: `native_cpu` (this machine's name and features) for [`HostCpu::Native`],
    /// else the named CPU and its features. [`Options::encode`] passes this machine's.
    pub fn encode_with_host_cpu(&self, native_cpu: &str, out: &mut Vec<u8>) {
        match self.target {
            Target::Nvptx(a) => {
                out.push(0);
                out.extend_from_slice(&a.sm.to_le_bytes());
                out.push(a.accelerated as u8);
                let (maj, min) = a.ptx_isa();
                out.extend_from_slice(&[maj as u8, min as u8]);
            }
            Target::Host => {
                // A named CPU is written as this machine's would be, `name features`: the
                // same CPU and features give the same code, however they were chosen.
                let named;
                let cpu = match &self.host_cpu {
                    HostCpu::Native => native_cpu,
                    HostCpu::Named { cpu, features } => {
                        named = format!("{cpu} {features}");
                        &named
                    }
                };
                out.push(1);
                out.extend_from_slice(&(cpu.len() as u64).to_le_bytes());
                out.extend_from_slice(cpu.as_bytes());
            }
        }
        out.push(self.opt_level);
        out.push(self.fast_math as u8);
        out.push(self.fmad as u8);
        out.push(self.checked as u8);
        out.push(self.may_alias as u8);
    }
}

/// The layout of each kernel parameter that is an array (`None` for scalars): the specialisation
/// compiled for a launch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Specialization {
    /// One entry per kernel parameter.
    pub layouts: Vec<Option<Layout>>,
}

impl Specialization {
    /// Every array parameter as `layout`.
    pub fn uniform(program: &Program, layout: Layout) -> Specialization {
        let k = program.kernel();
        Specialization { layouts: k.param_decls().iter().map(|p| matches!(p.ty, Ty::Array(_)).then_some(layout)).collect() }
    }

    /// Short text form, `C,-,F`.
    pub fn describe(&self) -> String {
        self.layouts.iter().map(|l| l.map(|l| l.to_string()).unwrap_or_else(|| "-".into())).collect::<Vec<_>>().join(",")
    }
}
