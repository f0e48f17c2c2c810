//! The `kache` command: compile kernels, and inspect, verify, trim and move the cache. A thin
//! layer over the library: argument parsing, rendering and exit statuses; compiles are
//! direct mode's (`Jit::direct_file`, `DirectMiss`) and the JIT's batches (`Jit::compile_many`,
//! `Jit::assemble_cubins`, `Kernel::emit_llvm_ir`), the cache operations
//! `kache::cache::{ops, archive}` and `LocalStore`'s.
//!
//! Exit status: 0 on success, 1 on a user error (a diagnostic on stderr), 2 on an internal or
//! environmental error.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

mod output;
mod remote;
mod tune;

use clap::{Parser, Subcommand, ValueEnum};
use indicatif::HumanBytes;
use kache::cache::{LocalStore, archive, envelope, ops};
use kache::logging::StderrLogger;
use kache::{Arch, CaptureValue, CompileRequest, Config, Direct, Error, FileRequest, Jit, Served, Specialization, Target};

#[derive(Parser)]
#[command(name = "kache", version, about = "A GPU kernel compiler for Rust with a persistent kernel cache")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Say what the cache and the compiler do, on stderr: -v debug records (hits, misses,
    /// stores, compile times), -vv trace. Adds to $KACHE_LOG (a filter: `debug`,
    /// `kache::cache=debug`); without either, only warnings (none under $KACHE_QUIET).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Emit {
    /// PTX assembly (through the cache).
    Ptx,
    /// LLVM IR after optimisation (for inspection; not cached).
    LlvmIr,
    /// A cubin assembled by ptxas (through the cache).
    Cubin,
}

#[derive(Subcommand)]
enum Command {
    /// Compile every kernel of a file (or those named) to PTX through the cache.
    ///
    /// Without --kernel: every kernel that is not generic, and every instance of each generic
    /// kernel whose generic parameters are all type parameters (each type its bounds admit);
    /// generic kernels with a const parameter are left out with a note.
    Compile {
        /// Kernel source file.
        file: PathBuf,
        /// Compile only this kernel (repeatable); an instance of a generic kernel is named with
        /// its generic arguments: --kernel 'axpy::<f32>'.
        #[arg(long)]
        kernel: Vec<String>,
        /// GPU architecture (default: $KACHE_ARCH, else sm_70). `host` compiles for this CPU.
        #[arg(long)]
        arch: Option<String>,
        /// What to write.
        #[arg(long, value_enum, default_value = "ptx")]
        emit: Emit,
        /// Output file (one kernel), directory (several), or `-` for stdout.
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Bind a host scalar global: NAME=LITERAL, the literal's suffix giving its type
        /// (`0.08f32`, `3u32`; unsuffixed: i64, f64, bool).
        #[arg(long = "define", short = 'D', value_name = "NAME=LITERAL")]
        defines: Vec<String>,
        /// Contract `a * b + c` into fused multiply-adds (default: $KACHE_FMAD, else true, as
        /// nvcc); a kernel's `#[kernel(fmad = ..)]` overrides it.
        #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
        fmad: Option<bool>,
    },
    /// Run the front end only: parse and type-check.
    Check {
        /// Kernel source file.
        file: PathBuf,
        /// Bind a host scalar global (see `compile`).
        #[arg(long = "define", short = 'D', value_name = "NAME=LITERAL")]
        defines: Vec<String>,
    },
    /// Print each key component's hash, so two misses can be compared.
    Explain {
        /// Kernel source file.
        file: PathBuf,
        /// Only this kernel or instance (repeatable), as for `compile`.
        #[arg(long)]
        kernel: Vec<String>,
        /// GPU architecture, or `host`.
        #[arg(long)]
        arch: Option<String>,
        /// Bind a host scalar global (see `compile`).
        #[arg(long = "define", short = 'D', value_name = "NAME=LITERAL")]
        defines: Vec<String>,
        /// Floating-point contraction (see `compile`).
        #[arg(long, value_name = "true|false", action = clap::ArgAction::Set)]
        fmad: Option<bool>,
        /// For a `#[tune]` kernel: an argument of the launch to explain, NAME=VALUE (see
        /// `tune`); with them, says whether the tuned launch would find its result, and why not.
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// The device of the tuned launch: `host`, `cuda` or `cuda:N` (default: CUDA device 0
        /// if there is one, else the host backend).
        #[arg(long)]
        device: Option<String>,
    },
    /// Tune a `#[tune]` kernel on this machine's device and cache the result.
    ///
    /// Runs every candidate configuration on arguments made from --arg (arrays of
    /// pseudo-random values of the given shape), as a tuned launch of the kernel with those
    /// arguments does, and stores the fastest for every later launch, in this process's cache
    /// folder and the remote. A result already cached is shown, not measured again, unless
    /// --retune.
    Tune {
        /// Kernel source file.
        file: PathBuf,
        /// The kernel (declared with `#[tune(..)]`).
        #[arg(long)]
        kernel: String,
        /// An argument of the launch, NAME=VALUE, one per parameter: an array as its element
        /// type and shape (`x=f32[4096]`, `a=f32[1024,1024]`), a scalar as a literal whose
        /// suffix gives its type (`n=4096u32`, `alpha=2.0f32`).
        #[arg(long = "arg", value_name = "NAME=VALUE")]
        args: Vec<String>,
        /// The device to tune on: `host`, `cuda` or `cuda:N` (default: CUDA device 0 if there
        /// is one, else the host backend).
        #[arg(long)]
        device: Option<String>,
        /// Bind a host scalar global (see `compile`).
        #[arg(long = "define", short = 'D', value_name = "NAME=LITERAL")]
        defines: Vec<String>,
        /// Tune even if a result is cached, and store the new one.
        #[arg(long)]
        retune: bool,
    },
    /// Cache statistics, counted across processes.
    Stats {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
        /// Reset the counters.
        #[arg(long)]
        reset: bool,
    },
    /// List the cache's entries.
    Ls {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Show one entry.
    Show {
        /// The entry's key (64 hex digits, or a unique prefix).
        key: String,
    },
    /// Re-hash every entry; report and drop the bad ones.
    Verify,
    /// Evict least recently used entries down to a size.
    Gc {
        /// Target size (default: the configured limit, $KACHE_MAX_SIZE or 2G).
        #[arg(long)]
        max_size: Option<String>,
    },
    /// Remove every entry.
    Clear,
    /// Print the cache folder.
    Dir,
    /// Write every entry to one archive file (for CI cache steps).
    Export {
        /// Archive to write.
        file: PathBuf,
        /// Sign every entry with the secret in $KACHE_ARCHIVE_KEY (else $KACHE_REMOTE_KEY).
        #[arg(long)]
        key: bool,
    },
    /// Read entries from an archive written by `export`.
    Import {
        /// Archive to read.
        file: PathBuf,
        /// Accept only a signed archive, and only entries whose signature verifies with the
        /// secret in $KACHE_ARCHIVE_KEY (else $KACHE_REMOTE_KEY).
        #[arg(long)]
        key: bool,
    },
    /// The remote cache ($KACHE_REMOTE): reachability, this namespace's size, purging it.
    Remote {
        #[command(subcommand)]
        command: remote::RemoteCommand,
    },
}

/// Prints a line on stdout; when the reader has gone (`kache ls | head -1`), the command ends
/// quietly ([`Failure::closed`]) instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {
        write_stdout(format!("{}\n", format_args!($($arg)*)).as_bytes())?
    };
}

/// Writes `bytes` on stdout (see [`say`]).
fn write_stdout(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = std::io::stdout().lock();
    // Flushed here, so that a failure to write (a full device) is reported, not lost at exit.
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::closed()),
        // A full disk or device behind the stream is the environment's, as for a file.
        Err(e) => Err(user(format!("cannot write to standard output: {e}"))),
    }
}

/// An error with its exit status.
struct Failure {
    user: bool,
    message: String,
}

impl Failure {
    /// Standard output was closed by its reader: nothing more to say, and nothing wrong.
    fn closed() -> Failure {
        Failure { user: false, message: String::new() }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        let user = e.is_user_error();
        let message = match &e {
            Error::Source(d) => d.render(color()),
            other => format!("error: {other}"),
        };
        Failure { user, message }
    }
}

fn user(msg: impl Into<String>) -> Failure {
    Failure { user: true, message: format!("error: {}", msg.into()) }
}

fn internal(msg: impl Into<String>) -> Failure {
    Failure { user: false, message: format!("error: {}", msg.into()) }
}

fn color() -> bool {
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.verbose > 0 {
        verbose(cli.verbose);
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) if f.message.is_empty() => ExitCode::SUCCESS,
        Err(f) => {
            // No message carries the remote's password, KACHE_REMOTE_KEY or KACHE_ARCHIVE_KEY,
            // whatever produced it. Not eprintln!: it panics when stderr is a closed pipe.
            let mut redactor = kache::cache::remote::Redactor::from_env();
            if let Some(key) = std::env::var_os("KACHE_ARCHIVE_KEY") {
                redactor.add(key.as_encoded_bytes());
            }
            let msg = redactor.redact(f.message.trim_end());
            let _ = writeln!(std::io::stderr(), "{msg}");
            ExitCode::from(if f.user { 1 } else { 2 })
        }
    }
}

/// Installs kache's stderr logger taking kache's debug (or trace) records on top of
/// `KACHE_LOG`. Without `-v` nothing is installed: the library prints its warnings itself,
/// filtered by `KACHE_LOG` and `KACHE_QUIET`.
fn verbose(count: u8) {
    let level = if count > 1 { "trace" } else { "debug" };
    let spec = std::env::var("KACHE_LOG").unwrap_or_default();
    let logger = StderrLogger::try_new(&format!("{spec},kache={level}")).unwrap_or_else(|e| {
        eprintln!("kache: warning: KACHE_LOG=`{spec}` is not a filter ({e}); ignored");
        StderrLogger::new(&format!("kache={level}"))
    });
    let max = logger.max_level();
    if log::set_boxed_logger(Box::new(logger)).is_ok() {
        log::set_max_level(max);
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Compile { file, kernel, arch, emit, output, defines, fmad } => {
            compile(&file, &kernel, arch.as_deref(), emit, output, &defines, fmad)
        }
        Command::Check { file, defines } => check(&file, &defines),
        Command::Explain { file, kernel, arch, defines, fmad, args, device } => {
            explain(&file, &kernel, arch.as_deref(), &defines, fmad, &args, device.as_deref())
        }
        Command::Tune { file, kernel, args, device, defines, retune } => {
            tune::tune(&file, &kernel, &args, device.as_deref(), &defines, retune)
        }
        Command::Stats { json, reset } => stats(json, reset),
        Command::Ls { json } => ls(json),
        Command::Show { key } => show(&key),
        Command::Verify => verify(),
        Command::Gc { max_size } => gc(max_size.as_deref()),
        Command::Clear => clear(),
        Command::Dir => {
            let c = Config::from_env()?;
            match c.cache_dir {
                Some(d) => say!("{}", d.display()),
                None => say!("(no disk cache: KACHE_DISABLE is set)"),
            }
            Ok(())
        }
        Command::Export { file, key } => export(&file, key),
        Command::Import { file, key } => import(&file, key),
        Command::Remote { command } => remote::run(command),
    }
}

/// Parses `NAME=LITERAL` into a host scalar.
fn parse_define(d: &str) -> Result<(String, CaptureValue), Failure> {
    let Some((name, lit)) = d.split_once('=') else {
        return Err(user(format!("--define {d}: expected NAME=LITERAL, like RATE=0.08f32")));
    };
    let name = name.trim();
    let lit = lit.trim();
    let v = kache::lang::parse_scalar_literal(lit).map_err(|m| user(format!("--define {name}={lit}: {m}")))?;
    Ok((name.to_string(), CaptureValue::Scalar(v)))
}

fn load(jit: &Jit, file: &Path, defines: &[String]) -> Result<kache::Module, Failure> {
    let mut m = jit
        .load_file(file)
        .map_err(|e| match e {
            // A missing or unreadable file is the user's to fix.
            Error::Io { path, source } => user(format!("cannot read {}: {source}", path.display())),
            e => Failure::from(e),
        })?
        .bound_by(kache::lang::Binder::CommandLine);
    for d in defines {
        let (n, v) = parse_define(d)?;
        m = m.with_global(&n, v)?;
    }
    Ok(m)
}

fn target_of(arch: Option<&str>, config: &Config) -> Result<Target, Failure> {
    match arch {
        Some("host") => Ok(Target::Host),
        Some(a) => Arch::parse(a).map(Target::Nvptx).map_err(|e| user(e.to_string())),
        None => Ok(Target::Nvptx(config.arch)),
    }
}

/// Generic kernels left out of an every-kernel compile: signature, and why.
type LeftOut = Vec<(String, String)>;

/// The kernels and instances to work on: those named, else every one the module lists (with
/// a note for each generic kernel left out, which is returned too).
fn kernels_of(m: &kache::Module, only: &[String]) -> Result<(Vec<String>, LeftOut), Failure> {
    if !only.is_empty() {
        return Ok((only.to_vec(), Vec::new()));
    }
    let all = m.kernels_to_compile()?;
    note_left_out(m.name(), &all.left_out);
    match all.names {
        names if names.is_empty() && m.kernel_names().is_empty() => Err(user(format!(
            "{} defines no `#[kernel]` functions{}",
            m.name(),
            if m.factory_names().is_empty() {
                String::new()
            } else {
                "; kernel factories are instantiated from the host with Module::closure".to_string()
            }
        ))),
        // Only generic kernels that need their arguments named: nothing to do, which the notes
        // say; not an error.
        names => Ok((names, all.left_out)),
    }
}

/// Says which generic kernels an every-kernel compile leaves out, and how to name an instance.
fn note_left_out(file: &str, left_out: &[(String, String)]) {
    for (sig, why) in left_out {
        eprintln!("note: {file}: generic kernel `{sig}` is not compiled: {why}, for example --kernel '{}'", example_instance(sig));
    }
}

/// Checks every kernel of `names` before compiling any, so errors come first and nothing is
/// half done.
fn check_all(m: &kache::Module, names: &[String]) -> Result<Vec<kache::Kernel>, Failure> {
    let mut kernels = Vec::new();
    let mut errors = Vec::new();
    for n in names {
        match m.kernel(n) {
            Ok(k) => kernels.push(k),
            Err(e) => errors.push(Failure::from(e)),
        }
    }
    if !errors.is_empty() {
        let msg = errors.iter().map(|f| f.message.trim_end().to_string()).collect::<Vec<_>>().join("\n");
        return Err(Failure { user: errors.iter().all(|f| f.user), message: msg });
    }
    Ok(kernels)
}

/// The request `compile` and `explain` make of direct mode.
fn request_of(target: Target, only: &[String], defines: &[String]) -> Result<FileRequest, Failure> {
    let mut request = FileRequest::new(target);
    request.kernels = only.to_vec();
    for d in defines {
        let (n, v) = parse_define(d)?;
        request = request.global(&n, v)?;
    }
    Ok(request)
}

/// A source file that cannot be read is the user's to fix.
fn unreadable(e: Error) -> Failure {
    match e {
        Error::Io { path, source } => user(format!("cannot read {}: {source}", path.display())),
        e => Failure::from(e),
    }
}

/// `matmul::<16>` for the signature `matmul<const TILE: usize>(..)`: how to name an instance.
fn example_instance(sig: &str) -> String {
    let (name, rest) = sig.split_once('<').unwrap_or((sig, ""));
    let params = rest.split_once(">(").map(|(p, _)| p).unwrap_or("");
    let args: Vec<&str> = params
        .split(',')
        .map(|p| match p.trim() {
            p if p.starts_with("const") && p.ends_with("bool") => "true",
            p if p.starts_with("const") => "16",
            p if p.ends_with("Int") => "i32",
            _ => "f32",
        })
        .collect();
    format!("{name}::<{}>", args.join(", "))
}

fn compile(
    file: &Path,
    only: &[String],
    arch: Option<&str>,
    emit: Emit,
    output: Option<PathBuf>,
    defines: &[String],
    fmad: Option<bool>,
) -> Result<(), Failure> {
    let mut config = Config::from_env()?;
    if let Some(on) = fmad {
        config = config.fmad(on);
    }
    let jit = Jit::new(config.clone())?;
    let target = target_of(arch, &config)?;
    if emit == Emit::Cubin && target == Target::Host {
        return Err(user("--emit cubin needs a GPU architecture, not `host`"));
    }
    // Everything is built before anything is written. Direct mode first: a manifest recorded
    // for the same bytes, defines, kernels and options gives the kernels without parsing; else
    // the full path, which records it. The full path looks every kernel of the file up
    // together, then compiles the misses and stores them together, and --emit cubin assembles
    // the cubins in one more batch: with a remote cache, one round trip for the lookups and one
    // for the stores of each.
    // The outputs, in order: PTX borrowed from the compiled kernels (`compiled` outlives them,
    // so a hit writes the entry's code without another copy of it), IR and cubins owned.
    let mut compiled: Vec<std::sync::Arc<kache::CompiledKernel>> = Vec::new();
    let mut owned: Vec<(String, Vec<u8>)> = Vec::new();
    if emit == Emit::LlvmIr {
        let m = load(&jit, file, defines)?;
        let (names, _) = kernels_of(&m, only)?;
        for k in check_all(&m, &names)? {
            owned.push((
                k.name().to_string(),
                k.emit_llvm_ir(target, &Specialization::uniform(k.program(), kache::Layout::C))?.into_bytes(),
            ));
        }
    } else {
        let request = request_of(target, only, defines)?;
        compiled = match jit.direct_file(file, &request).map_err(unreadable)? {
            Direct::Hit(c) => {
                if only.is_empty() {
                    note_left_out(&file.display().to_string(), &c.left_out);
                }
                c.kernels
            }
            Direct::Miss(miss) => {
                let m = miss.module().map_err(unreadable)?.bound_by(kache::lang::Binder::CommandLine);
                let (names, left_out) = kernels_of(&m, only)?;
                let kernels = check_all(&m, &names)?;
                let requests: Vec<CompileRequest> = kernels.iter().map(|k| CompileRequest::new(k, target)).collect();
                // Every kernel that failed is reported, in the file's order, whichever thread
                // compiled it.
                let (mut done, mut failed) = (Vec::new(), Vec::new());
                for (k, r) in kernels.into_iter().zip(jit.compile_many(&requests)) {
                    match r {
                        Ok(c) => done.push((k, c)),
                        Err(e) => failed.push(Failure::from(e)),
                    }
                }
                if !failed.is_empty() {
                    let msg = failed.iter().map(|f| f.message.trim_end().to_string()).collect::<Vec<_>>().join("\n");
                    return Err(Failure { user: failed.iter().all(|f| f.user), message: msg });
                }
                miss.record(&m, &done, &left_out);
                done.into_iter().map(|(_, c)| c).collect::<Vec<_>>()
            }
        };
        if emit == Emit::Cubin {
            let refs: Vec<&kache::CompiledKernel> = compiled.iter().map(|c| c.as_ref()).collect();
            for (c, r) in compiled.iter().zip(jit.assemble_cubins(&refs)) {
                owned.push((c.name().to_string(), r?));
            }
        }
    }
    let outputs: Vec<(&str, &[u8])> = if emit == Emit::Ptx {
        compiled.iter().map(|c| (c.name(), c.artifact().bytes())).collect()
    } else {
        owned.iter().map(|(n, b)| (n.as_str(), b.as_slice())).collect()
    };
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "kernels".into());
    let ext = match (emit, target) {
        (Emit::Ptx, Target::Host) => "bc",
        (Emit::Ptx, _) => "ptx",
        (Emit::LlvmIr, _) => "ll",
        (Emit::Cubin, _) => "cubin",
    };
    let several = outputs.len() > 1;
    let to_stdout = output.as_deref() == Some(Path::new("-"));
    if to_stdout && several {
        return Err(user("-o - writes one kernel to stdout; pick it with --kernel"));
    }
    // One kernel goes to the file -o names (a directory there is refused, as cc refuses one:
    // `-o DIR/` writes into it).
    let into_dir = output.as_deref().filter(|p| !to_stdout && (several || p.to_string_lossy().ends_with('/')));
    let make = |dir: &Path| std::fs::create_dir_all(dir).map_err(|e| user(format!("cannot create {}: {e}", dir.display())));
    // The output folder is made once, not once per kernel.
    if let Some(dir) = into_dir {
        make(dir)?;
    }
    for (name, bytes) in outputs {
        let path = match (&output, into_dir) {
            (Some(_), _) if to_stdout => {
                write_stdout(bytes)?;
                continue;
            }
            (_, Some(dir)) => dir.join(format!("{}.{ext}", kache::lang::file_stem(name))),
            (Some(p), None) => p.clone(),
            (None, _) => PathBuf::from(format!("{stem}-{}.{ext}", kache::lang::file_stem(name))),
        };
        // One file named by -o, or one per kernel in this folder: its parent made here.
        if let (None, Some(parent)) = (into_dir, path.parent().filter(|p| !p.as_os_str().is_empty())) {
            make(parent)?;
        }
        // Where the bytes went through a stream or a device (perhaps stdout), nothing is added.
        if output::write(&path, bytes).map_err(|e| user(e.0))? == output::Written::File {
            say!("{}: {} -> {}", file.display(), name, path.display());
        }
    }
    Ok(())
}

fn check(file: &Path, defines: &[String]) -> Result<(), Failure> {
    let jit = Jit::new(Config { cache_dir: None, ..Config::from_env()? })?;
    let m = load(&jit, file, defines)?;
    let s = m.check()?;
    say!(
        "{}: ok ({} kernel{}, {} kernel factor{}, {} device function{})",
        file.display(),
        s.kernels.len() + s.generic_kernels.len(),
        if s.kernels.len() + s.generic_kernels.len() == 1 { "" } else { "s" },
        s.kernel_factories.len(),
        if s.kernel_factories.len() == 1 { "y" } else { "ies" },
        s.device_functions.len(),
        if s.device_functions.len() == 1 { "" } else { "s" }
    );
    for k in &s.kernels {
        let params: Vec<String> = k.params.iter().map(|(n, t)| format!("{n}: {}", k.type_name(*t))).collect();
        say!("  kernel {}({})", k.name, params.join(", "));
    }
    for k in &s.generic_kernels {
        say!("  kernel {}", k.signature);
    }
    for k in &s.kernel_factories {
        let params: Vec<String> = k.params.iter().map(|(n, t)| format!("{n}: {}", k.type_name(*t))).collect();
        say!("  factory {}({}) -> impl Kernel", k.name, params.join(", "));
    }
    for w in &s.warnings {
        let _ = writeln!(std::io::stderr(), "warning: {w}");
    }
    Ok(())
}

fn explain(
    file: &Path,
    only: &[String],
    arch: Option<&str>,
    defines: &[String],
    fmad: Option<bool>,
    args: &[String],
    device: Option<&str>,
) -> Result<(), Failure> {
    let mut config = Config::from_env()?;
    if let Some(on) = fmad {
        config = config.fmad(on);
    }
    if !args.is_empty() || device.is_some() {
        return tune::explain(file, only, config, defines, args, device);
    }
    let jit = Jit::new(Config { cache_dir: None, ..config.clone() })?;
    let m = load(&jit, file, defines)?;
    let target = target_of(arch, &config)?;
    // Which path `kache compile` with the same arguments would take now.
    let direct = Jit::new(config.clone())?.explain_direct(file, &request_of(target, only, defines)?).map_err(unreadable)?;
    for n in kernels_of(&m, only)?.0 {
        let k = m.kernel(&n)?;
        if k.is_generic() && k.tune_space().is_some() {
            say!("kernel {} is tuned: --arg NAME=VALUE for each parameter explains its tuned launch", k.name());
            continue;
        }
        let spec = Specialization::uniform(k.program(), kache::Layout::C);
        let d = k.explain(target, &spec)?;
        say!("kernel {} ({target}, layouts {})", k.name(), spec.describe());
        for (name, h) in &d.components {
            say!("  {name:<15} {}", blake3::Hash::from_bytes(*h).to_hex());
        }
        say!("  {:<15} {}", "key", d.key);
        if let Target::Nvptx(a) = target {
            explain_cubins(&k, a, &spec)?;
        }
    }
    match (&direct.manifest, direct.served) {
        (Some(d), Served::Direct) => say!("served by: direct mode (manifest {}): {}", d.key, direct.why),
        (Some(d), Served::Full) => say!("served by: the full path (manifest {}: {}; compiling records it)", d.key, direct.why),
        (None, _) => say!("served by: the full path ({})", direct.why),
    }
    if let Some(d) = &direct.manifest {
        say!("manifest");
        for (name, h) in &d.components {
            say!("  {name:<15} {}", blake3::Hash::from_bytes(*h).to_hex());
        }
    }
    Ok(())
}

/// The components of the keys of the cubins built from a kernel's PTX (see
/// `Kernel::explain_cubins`).
fn explain_cubins(k: &kache::Kernel, arch: Arch, spec: &Specialization) -> Result<(), Failure> {
    let cubins = k.explain_cubins(arch, spec)?;
    if cubins.is_empty() {
        say!("  cubin: no ptxas and no CUDA device here, so no cubin key to show");
    }
    for (title, d) in &cubins {
        say!("  {title}");
        for (name, h) in &d.components {
            say!("    {name:<13} {}", blake3::Hash::from_bytes(*h).to_hex());
        }
        say!("    {:<13} {}", "key", d.key);
    }
    Ok(())
}

fn open_store() -> Result<LocalStore, Failure> {
    let c = Config::from_env()?;
    let dir = c.cache_dir.ok_or_else(|| user("no disk cache: KACHE_DISABLE is set"))?;
    LocalStore::new(&dir, c.lock_timeout, c.max_size).map_err(store_err)
}

fn store_err(e: kache::cache::StoreError) -> Failure {
    match e {
        // The user's folder, the user's to fix (or trust).
        kache::cache::StoreError::Untrusted(_) => user(e.to_string()),
        e => internal(e.to_string()),
    }
}

fn stats(json: bool, reset: bool) -> Result<(), Failure> {
    let jit = Jit::new(Config::from_env()?)?;
    if reset {
        jit.cache().reset_stats().map_err(store_err)?;
        say!("statistics reset");
        return Ok(());
    }
    let s = jit.cache().stats();
    if json {
        let mut v = serde_json::to_value(&s).map_err(|e| internal(e.to_string()))?;
        if s.unavailable.is_some() {
            // Counts that could not be read are null, never 0; what was parked is shown apart.
            let mut parked = serde_json::Map::new();
            for c in kache::cache::Counter::ALL {
                parked.insert(c.name().to_string(), v[c.name()].take());
            }
            v["parked"] = serde_json::Value::Object(parked);
        }
        say!("{}", serde_json::to_string_pretty(&v).map_err(|e| internal(e.to_string()))?);
    } else {
        let dir = jit.config().cache_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_else(|| "(none)".into());
        say!("cache folder       {dir}");
        say!("entries            {}", s.entries);
        say!(
            "size               {} of {} (entries {}, catalogue {})",
            HumanBytes(s.bytes + s.catalogue_bytes),
            HumanBytes(jit.config().max_size),
            HumanBytes(s.bytes),
            HumanBytes(s.catalogue_bytes)
        );
        if s.unavailable.is_some() {
            say!("counters           unavailable (the catalogue is held by another process); parked in files:");
        }
        say!("hits               {} (memory {}, local {}, remote {})", s.hits, s.hits_memory, s.hits_local, s.hits_remote);
        say!("misses             {}", s.misses);
        say!("cubins             {} hits, {} misses", s.cubin_hits, s.cubin_misses);
        say!("tunings            {} hits, {} misses", s.tuning_hits, s.tuning_misses);
        say!("not persisted      {}", s.not_persisted);
        say!("bad entries        {}", s.bad_entries);
        say!("busy               {}", s.busy);
        say!("compile time saved {} ms", s.compile_ms_saved);
        if jit.config().remote.is_some() {
            say!(
                "remote             errors {}, rejected {}, read {}, written {}",
                s.remote_errors,
                s.remote_rejected,
                HumanBytes(s.remote_bytes_read),
                HumanBytes(s.remote_bytes_written)
            );
        }
    }
    match s.unavailable {
        Some(why) => Err(internal(format!("the statistics are incomplete: {why}"))),
        None => Ok(()),
    }
}

fn ls(json: bool) -> Result<(), Failure> {
    let listed = ops::list(&open_store()?);
    if json {
        say!("{}", serde_json::to_string_pretty(&listed).map_err(|e| internal(e.to_string()))?);
    } else {
        for l in &listed {
            // A tuning result's "signature" is the configuration it chose.
            let sep = if l.kind == envelope::ArtifactKind::Tuning { ": " } else { "" };
            say!(
                "{}  {:<6}  {:>9}  {}{sep}{}",
                &l.key.hex()[..16],
                format!("{:?}", l.kind).to_lowercase(),
                HumanBytes(l.size).to_string(),
                l.kernel,
                l.signature
            );
        }
        say!("{} entries", listed.len());
    }
    Ok(())
}

fn show(key: &str) -> Result<(), Failure> {
    if let Err(e @ ops::FindError::NotAKey(_)) = ops::find_key(key) {
        return Err(user(e.to_string()));
    }
    let (m, payload) = ops::find(&open_store()?, key).map_err(|e| user(e.to_string()))?;
    say!("key        {}", m.key);
    let sep = if m.kind == envelope::ArtifactKind::Tuning { ": " } else { "" };
    say!("kernel     {}{sep}{}", m.kernel, m.signature);
    say!("kind       {:?}", m.kind);
    say!("entry      {}", m.entry);
    say!("producer   {} (LLVM {})", m.producer, m.llvm);
    say!("created    {} (unix)", m.created);
    say!("compile    {} ms", m.compile_ms);
    say!("payload    {} bytes", payload.len());
    if m.kind == envelope::ArtifactKind::Ptx {
        say!("");
        write_stdout(String::from_utf8_lossy(&payload).as_bytes())?;
    }
    if m.kind == envelope::ArtifactKind::Tuning {
        let r =
            kache::cache::TuningRecord::decode(&payload, &m.key).map_err(|e| user(format!("the tuning result does not verify: {e}")))?;
        say!("device     {}", r.device);
        say!("key values {:?}", r.bucket);
        say!("tuned in   {} ms", r.tuning_ms);
        for (i, c) in r.candidates.iter().enumerate() {
            let mark = if i == r.chosen { "  <- chosen" } else { "" };
            match &c.outcome {
                Ok(t) => say!("  {:<32} {:>10.4} ms{mark}", r.describe(&c.config), t.as_secs_f64() * 1e3),
                Err(why) => say!("  {:<32} dropped: {why}", r.describe(&c.config)),
            }
        }
    }
    Ok(())
}

/// A progress bar on stderr, drawn only on a terminal; fed `(done, total)`.
fn progress(what: &str) -> (indicatif::ProgressBar, impl FnMut(u64, u64)) {
    let pb = indicatif::ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        pb.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    pb.set_message(what.to_string());
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len}") {
        pb.set_style(style);
    }
    let bar = pb.clone();
    (pb, move |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
}

fn verify() -> Result<(), Failure> {
    let store = open_store()?;
    let (pb, mut tick) = progress("verifying");
    let v = ops::verify(&store, &mut tick);
    pb.finish_and_clear();
    for k in &v.dropped {
        say!("dropped {k}: does not verify");
    }
    for st in &v.strays {
        say!("removed {}: a {} where an entry belongs", st.path.display(), st.kind);
    }
    if v.swept > 0 {
        say!("removed {} files left by interrupted writers", v.swept);
    }
    say!("{} entries checked, {} bad (dropped)", v.checked, v.dropped.len());
    if !v.strays_left.is_empty() {
        let left: Vec<String> = v.strays_left.iter().map(|st| format!("{} (a {})", st.path.display(), st.kind)).collect();
        return Err(internal(format!("could not remove what is no entry: {}", left.join(", "))));
    }
    Ok(())
}

fn gc(max_size: Option<&str>) -> Result<(), Failure> {
    let store = open_store()?;
    let target = match max_size {
        Some(s) => kache::config::parse_size(s).ok_or_else(|| user(format!("`{s}` is not a size (like 500M or 2G, at most 16 EiB)")))?,
        None => store.max_size(),
    };
    let (n, bytes) = store.gc(target).map_err(store_err)?;
    say!("evicted {n} entries ({}); limit {}", HumanBytes(bytes), HumanBytes(target));
    Ok(())
}

fn clear() -> Result<(), Failure> {
    let c = open_store()?.clear().map_err(store_err)?;
    if c.strays > 0 {
        say!("removed {} entries and {} other things where entries belong", c.entries, c.strays);
    } else {
        say!("removed {} entries", c.entries);
    }
    if c.failed > 0 {
        let named: Vec<String> = c.failed_paths.iter().map(|(p, why)| format!("\n  {}: {why}", p.display())).collect();
        return Err(internal(format!("{} could not be removed:{}", c.failed, named.concat())));
    }
    Ok(())
}

fn archive_err(e: archive::ArchiveError) -> Failure {
    if e.is_user_error() { user(e.to_string()) } else { internal(e.to_string()) }
}

/// The archive signing secret: `KACHE_ARCHIVE_KEY`, else `KACHE_REMOTE_KEY` (never printed).
fn archive_mac() -> Result<kache::cache::mac::EntryMac, Failure> {
    let (name, secret) = ["KACHE_ARCHIVE_KEY", "KACHE_REMOTE_KEY"]
        .into_iter()
        .find_map(|v| std::env::var_os(v).filter(|s| !s.is_empty()).map(|s| (v, s)))
        .ok_or_else(|| user("--key needs a shared secret of at least 16 bytes in KACHE_ARCHIVE_KEY (or KACHE_REMOTE_KEY)"))?;
    kache::cache::mac::EntryMac::new(secret.as_encoded_bytes()).map_err(|e| user(format!("{name}: {e}")))
}

fn export(file: &Path, key: bool) -> Result<(), Failure> {
    let signer = if key { Some(archive_mac()?) } else { None };
    let store = open_store()?;
    // `-` is standard output, as for `compile -o -`.
    let file = if file == Path::new("-") { Path::new("/dev/stdout") } else { file };
    let (pb, mut tick) = progress("exporting");
    let n = archive::export_with(&store, file, signer.as_ref(), &mut tick).map_err(archive_err)?;
    pb.finish_and_clear();
    // Where the archive went through a stream or a device (perhaps stdout), nothing is added.
    if matches!(kache::files::output_path(file), Ok(kache::files::OutputPath::Replace(_))) {
        say!("exported {n} entries to {}{}", file.display(), if key { " (signed)" } else { "" });
    }
    Ok(())
}

fn import(file: &Path, key: bool) -> Result<(), Failure> {
    let verifier = if key { Some(archive_mac()?) } else { None };
    let store = open_store()?;
    let (pb, mut tick) = progress("importing");
    let done = archive::import_with(&store, file, verifier.as_ref(), &mut tick).map_err(archive_err)?;
    pb.finish_and_clear();
    say!(
        "imported {} entries from {}{}",
        done.stored,
        file.display(),
        if done.skipped > 0 { format!(" ({} did not verify and were skipped)", done.skipped) } else { String::new() }
    );
    if done.rejected > 0 {
        return Err(user(format!(
            "{} entries of {} failed authentication and were refused (another secret, or tampering)",
            done.rejected,
            file.display()
        )));
    }
    Ok(())
}
