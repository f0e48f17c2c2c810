//! The error type of the library, the same whatever features are enabled (features stay
//! additive: a crate matching on [`Error`] builds whether or not another crate in the build
//! enables `compiler`).

use std::path::PathBuf;

use crate::lang::Diagnostics;
use crate::location::Location;
use crate::target::UnsupportedArch;

/// Result with kache's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong, typed. Nothing in kache panics on bad input.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel source has errors; each carries `file:line:col`.
    #[error("{0}")]
    Source(#[from] Diagnostics),
    /// Code generation failed.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// `libcuda.so` is not present: no NVIDIA driver on this machine.
    #[error("no CUDA driver: libcuda.so could not be loaded; use Device::host() to run kernels on the CPU")]
    NoCudaDriver,
    /// The driver is present but there is no such device.
    #[error("no CUDA device {ordinal}: {reason}")]
    NoCudaDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// What the driver said.
        reason: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA error in {op}: {message}")]
    Cuda {
        /// The operation.
        op: &'static str,
        /// The driver's message (and the PTX JIT's log, where there is one).
        message: String,
    },
    /// An array of one device (an argument, a captured array or an array bound to a capture
    /// slot) was given to a launch on another: each device's memory is its own, and nothing
    /// ran. Copy the array to the launch's device (download it, upload it there).
    #[error(
        "kernel `{kernel}`: {array} {}, but the launch is on {launch_on}; a kernel uses only arrays of the device it runs on \
         (copy the array there: download, then upload)",
        array_on_text(array_on)
    )]
    WrongDevice {
        /// Kernel name.
        kernel: String,
        /// The array: "argument `x`", "captured array global 'G'".
        array: String,
        /// Where the array lives.
        array_on: Location,
        /// The device of the launch.
        launch_on: Location,
    },
    /// The kernel was given the wrong number of arguments.
    #[error("kernel `{kernel}` takes {expected} argument{} but {got} {} given", if *expected == 1 { "" } else { "s" }, if *got == 1 { "was" } else { "were" })]
    ArgumentCount {
        /// Kernel name.
        kernel: String,
        /// Parameters declared.
        expected: usize,
        /// Arguments given.
        got: usize,
    },
    /// One argument does not match its parameter.
    #[error("kernel `{kernel}`, argument `{param}`: {problem}")]
    BadArgument {
        /// Kernel name.
        kernel: String,
        /// Parameter name.
        param: String,
        /// What is wrong.
        problem: String,
    },
    /// A generic kernel was asked for something only an instance has (code, a key).
    #[error(
        "kernel `{kernel}` is generic over <{generics}>: compile an instance, like `{kernel}::<{example}>`, or launch it and its \
         argument types choose the instance"
    )]
    GenericKernel {
        /// Kernel name.
        kernel: String,
        /// Its generic parameters (`T: Float, const N: usize`).
        generics: String,
        /// Example generic arguments (`f32, 16`).
        example: String,
    },
    /// An array description is inconsistent.
    #[error("invalid array: {0}")]
    BadArray(String),
    /// The launch configuration is invalid.
    #[error("invalid launch configuration: {0}")]
    BadLaunch(String),
    /// A tuned launch (`#[tune]`, [`Kernel::launch_tuned`](crate::Kernel)) that cannot tune: no
    /// candidate ran and agreed, the space's expressions have no value for these arguments, or
    /// the kernel is not tunable.
    #[error("kernel `{kernel}`: cannot tune: {problem}")]
    Tuning {
        /// Kernel name.
        kernel: String,
        /// Why.
        problem: String,
    },
    /// A bounds-checked kernel indexed an array out of bounds: the thread that did recorded
    /// the fault and exited. The host backend reports it from the launch; CUDA from the first
    /// operation that waits for the device after the kernel ran (`docs/runtime.md`).
    #[error("kernel `{kernel}`: index {index} is out of bounds for {array} of length {len}{}", location.as_ref().map(|l| format!(", at {l}")).unwrap_or_default())]
    Launch {
        /// Kernel name.
        kernel: String,
        /// The array: a parameter, a captured array or a shared array (and the dimension, for
        /// an array of several).
        array: String,
        /// The index.
        index: u64,
        /// The extent it exceeded.
        len: u64,
        /// `file:line:col` of the access, where the kernel's source is known.
        location: Option<String>,
    },
    /// A bounds-checked kernel's tensor-core access (`ldmatrix`, `cp_async`) was in bounds but
    /// could not be made: its element was misaligned, or its array in the wrong memory. The
    /// thread recorded the fault and exited, as for [`Error::Launch`].
    #[error("kernel `{kernel}`: element {index} of {array} {problem}{}", location.as_ref().map(|l| format!(", at {l}")).unwrap_or_default())]
    BadAccess {
        /// Kernel name.
        kernel: String,
        /// The array.
        array: String,
        /// The element's index.
        index: u64,
        /// What is wrong: "is not aligned to 16 bytes", "is not in shared memory".
        problem: String,
        /// `file:line:col` of the access, where the kernel's source is known.
        location: Option<String>,
    },
    /// A thread of a bounds-checked launch called `unwrap()` or `expect(..)` on a `None` value,
    /// where Rust would panic: the thread recorded the fault and exited, and the launch reports
    /// it as it reports an index out of bounds (`docs/runtime.md`).
    #[error("kernel `{kernel}`: {message}{}", location.as_ref().map(|l| format!(", at {l}")).unwrap_or_default())]
    Panic {
        /// Kernel name.
        kernel: String,
        /// What failed (`called \`Option::unwrap()\` on a \`None\` value`, or the message of
        /// `expect`).
        message: String,
        /// `file:line:col` of the call, where the kernel's source is known.
        location: Option<String>,
    },
    /// A value bound on a module or passed to a factory does not fit.
    #[error("binding `{name}`: {problem}")]
    Binding {
        /// Global or parameter name.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// The kernel references device arrays by address and cannot be serialised.
    #[error(
        "cannot serialise kernel '{kernel}': it captures {what}, and a device pointer is meaningless in any other process. \
         Pass the arrays as kernel arguments, or compile with relocatable captures (KACHE_CAPTURES=relocatable), to make the \
         kernel serialisable."
    )]
    NotSerializable {
        /// Kernel name.
        kernel: String,
        /// Every such array (`device array 'G' (global)`, `device arrays 'A' (global) and 'B'
        /// (global)`), where each comes from and the path to it.
        what: String,
    },
    /// A kernel compiled with relocatable captures was launched with a capture slot that no
    /// array fills (a deserialised kernel needs `CompiledKernel::bind` for each).
    #[error(
        "kernel '{kernel}' cannot run: no array is bound to its captured device array '{name}' ({origin}); bind one with \
         CompiledKernel::bind(\"{name}\", &array)"
    )]
    UnboundCapture {
        /// Kernel name.
        kernel: String,
        /// The array's name in the source.
        name: String,
        /// Where it comes from (`global 'PRICES'`).
        origin: String,
    },
    /// `KACHE_STRICT` is set and a kernel could not be cached on disk.
    #[error("{0}")]
    NotPersisted(String),
    /// Serialised kernel bytes are not valid.
    #[error("invalid serialised kernel: {0}")]
    BadSerializedKernel(String),
    /// A serialised kernel holds host code optimised for another CPU, which may use
    /// instructions this CPU lacks.
    #[error(
        "serialised kernel '{kernel}' holds host code optimised for another CPU and cannot run on this one ({}). \
         Serialise it again on this machine.",
        cpu_difference(built_for, this_cpu)
    )]
    ForeignHostCpu {
        /// Kernel name.
        kernel: String,
        /// The CPU it was built for: name and features.
        built_for: String,
        /// This machine's CPU: name and features.
        this_cpu: String,
    },
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// Invalid configuration (environment variables or `Config`).
    #[error("configuration: {0}")]
    Config(String),
    /// A kernel source path that cannot be a source: a FIFO, a device, a folder, or a file past
    /// the source size limit. Refused before it is read (a FIFO would block, `/dev/zero` never
    /// end).
    #[error("cannot read {}: {problem}", path.display())]
    Input {
        /// The path.
        path: PathBuf,
        /// What it is, or how large.
        problem: String,
    },
    /// The build-time prebuild step was set up wrongly (no `OUT_DIR`, kernel or file names that
    /// collide in the generated code, a device array bound at build time, a path that is not
    /// UTF-8).
    #[error("prebuild: {0}")]
    Prebuild(String),
    /// A prebuilt kernel could not be made ready at run time: its embedded source did not load
    /// or check, or the JIT it needs could not be configured. `source` is the first failure,
    /// kept for every later call.
    #[error("prebuilt kernel '{kernel}': {source}")]
    Prebuilt {
        /// The kernel.
        kernel: String,
        /// What failed.
        source: std::sync::Arc<Error>,
    },
    /// A bug in kache: something it produced is not what it expects.
    #[error("internal error (a bug in kache, please report it): {0}")]
    Internal(String),
    /// A device does not support what was asked (e.g. a kernel compiled for another device).
    #[error("{0}")]
    Device(String),
    /// ptxas rejected kache's PTX or could not be run (not the user's mistake).
    #[error("ptxas: {0}")]
    Ptxas(String),
}

/// Code generation errors (also `kache::codegen::CodegenError`). A kernel that type-checked
/// only fails here for environmental reasons (no libdevice) or because of a kache bug (an LLVM
/// verification failure).
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The architecture is not one kache generates code for.
    #[error(transparent)]
    UnsupportedArch(#[from] UnsupportedArch),
    /// A transcendental function needs libdevice, which was not found.
    #[error(
        "kernel `{kernel}` calls `{function}`, which needs NVIDIA's libdevice on the GPU, and libdevice.10.bc was not found; \
         set KACHE_LIBDEVICE to its path, set CUDA_HOME to a CUDA toolkit, or run `pip install nvidia-cuda-nvcc-cu12`"
    )]
    NoLibdevice {
        /// The kernel.
        kernel: String,
        /// The method that needs it.
        function: String,
    },
    /// The libdevice file could not be read or parsed.
    #[error("libdevice at {path} is unusable: {reason}")]
    BadLibdevice {
        /// Where it was looked for.
        path: String,
        /// Why it failed.
        reason: String,
    },
    /// The kernel uses an operation the target architecture does not have (compiles through the
    /// JIT report it located in the source instead, as [`Error::Source`]).
    #[error("kernel `{kernel}`: {message}")]
    NeedsArch {
        /// The kernel.
        kernel: String,
        /// What it uses and which architecture that needs.
        message: String,
    },
    /// LLVM reported an error; a kache bug if it happens.
    #[error("internal code generation error (please report it): {0}")]
    Llvm(String),
    /// Stored host bitcode did not load.
    #[error("host code could not be loaded: {0}")]
    BadArtifact(String),
}

impl From<UnsupportedArch> for Error {
    fn from(e: UnsupportedArch) -> Error {
        Error::Codegen(e.into())
    }
}

impl Error {
    #[cfg_attr(not(feature = "compiler"), allow(dead_code))]
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io { path: path.into(), source }
    }

    /// Whether this is the user's mistake (exit status 1 in the CLI) rather than the
    /// environment's or kache's (2).
    pub fn is_user_error(&self) -> bool {
        match self {
            Error::Prebuilt { source, .. } => source.is_user_error(),
            e => !matches!(
                e,
                Error::Codegen(CodegenError::Llvm(_)) | Error::Cuda { .. } | Error::Io { .. } | Error::Ptxas(_) | Error::Internal(_)
            ),
        }
    }
}

/// Where an array lives, as the end of a sentence about it.
fn array_on_text(on: &Location) -> String {
    match on {
        Location::HostMemory => "is in host memory".to_string(),
        device => format!("is on {device}"),
    }
}

/// How two CPUs, each given as name and features (`znver3 +avx2,-avx512f,...`), differ: their
/// names, and the features the first was built with that the second does not match.
fn cpu_difference(built_for: &str, this_cpu: &str) -> String {
    let (name, features) = built_for.split_once(' ').unwrap_or((built_for, ""));
    let (this_name, this_features) = this_cpu.split_once(' ').unwrap_or((this_cpu, ""));
    let here: std::collections::HashSet<&str> = this_features.split(',').collect();
    let differing: Vec<&str> = features.split(',').filter(|f| !f.is_empty() && !here.contains(f)).collect();
    let mut text = if name == this_name {
        format!("`{name}` on both, with other features")
    } else {
        format!("built for `{name}`, this is `{this_name}`")
    };
    if !differing.is_empty() {
        let shown = differing.iter().take(8).copied().collect::<Vec<_>>().join(",");
        let more = if differing.len() > 8 { format!(" and {} more", differing.len() - 8) } else { String::new() };
        text.push_str(&format!("; built with {shown}{more}"));
    }
    text
}
