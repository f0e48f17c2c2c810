//! The build-script side of the prebuild step: [`Builder`] finds a crate's kernel files,
//! compiles every kernel for every architecture through the cache, writes the PTX and the
//! generated file under `OUT_DIR`, and tells cargo what to watch, what went wrong and where.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::generate::{GenGlobal, GenHost, GenKernel, GenModule, GenResult, GenTuned, generate};
use super::host_object;
use super::names::{first_collision, instance_rust_name, rust_name};
use crate::build_script;
use crate::cache::Key;
use crate::capture::{CaptureValue, IntoCapture};
use crate::codegen::ObjectTarget;
use crate::error::{Error, Result};
use crate::ir::CaptureTy;
use crate::target::Options;
use crate::{Arch, CompileRequest, CompiledKernel, Config, Jit, Kernel, Target};

/// Every environment variable the prebuild step reads, directly or through [`Config`], the
/// cache and the toolchain lookups: cargo re-runs the build script when one changes. (Not
/// listed: the variables cargo sets for the build script itself, and `PATH`, which is read to
/// find `ptxas` and the Python that finds NVIDIA's wheel (whose answer is remembered in the
/// cache folder): tracking it would re-run the step whenever a shell's and an editor's `PATH`
/// differ; `KACHE_PTXAS` pins `ptxas` instead.) `tests/it/prebuild.rs` derives the list from the
/// source, so a new variable cannot be forgotten.
pub const TRACKED_ENV: &[&str] = &[
    // What the compiled code depends on.
    "KACHE_ARCH",
    "KACHE_OPT_LEVEL",
    "KACHE_FAST_MATH",
    "KACHE_FMAD",
    "KACHE_CAPTURES",
    "KACHE_SALT",
    "KACHE_LIBDEVICE",
    "CUDA_HOME",
    "CUDA_PATH",
    // The cache: where it is and how it behaves.
    "KACHE_DIR",
    "KACHE_DISABLE",
    "KACHE_MAX_SIZE",
    "KACHE_LOCK_TIMEOUT_MS",
    "KACHE_STRICT",
    "KACHE_CUBIN_TIER",
    "KACHE_COMPILE_THREADS",
    "KACHE_TRUSTED_DIRS",
    "KACHE_REMOTE",
    "KACHE_REMOTE_KEY",
    "KACHE_REMOTE_READONLY",
    "KACHE_REMOTE_TIMEOUT_MS",
    "KACHE_REMOTE_TTL",
    "KACHE_REMOTE_CA",
    // What is printed, and the toolchain.
    "KACHE_QUIET",
    "KACHE_LOG",
    "KACHE_PTXAS",
    // Where the default cache folder is (read by the `dirs` crate).
    "XDG_CACHE_HOME",
    "HOME",
];

/// Whether the prebuild step also assembles each kernel's PTX into GPU machine code (a cubin
/// per architecture) with NVIDIA's `ptxas`, so that the first launch on a GPU of that
/// architecture loads machine code instead of having the driver compile PTX.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cubins {
    /// When `ptxas` is found (`KACHE_PTXAS`, `CUDA_HOME`, `CUDA_PATH`, `/usr/local/cuda`,
    /// `PATH`, the `nvidia-cuda-nvcc-cu12` wheel); PTX only otherwise. The default.
    #[default]
    IfPtxasFound,
    /// Always: no `ptxas` is a build error.
    Always,
    /// Never: PTX only.
    Never,
}

/// Configures and runs the prebuild step from a build script.
#[derive(Debug, Default)]
pub struct Builder {
    kernels_dir: Option<PathBuf>,
    archs: Vec<String>,
    cubins: Cubins,
    globals: Vec<(String, CaptureValue)>,
    /// Instances to build, by generic kernel name: each the generic arguments of a turbofish.
    instances: Vec<(String, Vec<String>)>,
    errors: Vec<(String, String)>,
    out_file: Option<String>,
    out_dir: Option<PathBuf>,
    config: Option<Config>,
}

/// A kernel file and the module it becomes.
struct KernelFile {
    /// Its place among the crate's kernel files (sorted by path).
    index: usize,
    path: PathBuf,
    /// The path the documentation shows (relative to the crate where it can be).
    shown: String,
    module: String,
}

/// The files the step writes under `OUT_DIR/kache/`, and the removal of what earlier runs
/// wrote there and this one did not (kernels and files since removed or renamed).
struct DataFiles {
    dir: PathBuf,
    written: HashSet<PathBuf>,
}

impl DataFiles {
    fn new(dir: PathBuf) -> Result<DataFiles> {
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        Ok(DataFiles { dir, written: HashSet::new() })
    }

    /// Writes `bytes` to the file `name` (unless it holds them already); returns its path, as
    /// generated code names it.
    fn write(&mut self, name: &str, bytes: &[u8]) -> Result<String> {
        let path = self.dir.join(name);
        write_if_changed(&path, bytes)?;
        let text = utf8(&path)?;
        self.written.insert(path);
        Ok(text)
    }

    fn remove_stale(&self) {
        for e in std::fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_file() && !self.written.contains(&p) {
                // A file left behind is unused, not wrong.
                let _ = std::fs::remove_file(&p);
            }
        }
    }
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

    /// Whether to embed cubins assembled by `ptxas` beside the PTX (default
    /// [`Cubins::IfPtxasFound`]).
    pub fn cubins(mut self, cubins: Cubins) -> Builder {
        self.cubins = cubins;
        self
    }

    /// Binds a host scalar or host array global for every kernel file. Device arrays exist only
    /// at run time: kernels that need one are compiled with the JIT instead.
    pub fn global(mut self, name: &str, value: impl IntoCapture) -> Builder {
        match value.into_capture() {
            Ok(v) => self.globals.push((name.to_string(), v)),
            Err(e) => self.errors.push((name.to_string(), e.to_string())),
        }
        self
    }

    /// Lists the instances of the generic kernel `kernel` to build, each written as the
    /// arguments of its turbofish: `.instances("axpy", ["f32", "f64"])` builds `axpy::<f32>`
    /// and `axpy::<f64>`, `.instances("conv1d", ["f32, 3"])` builds `conv1d::<f32, 3>`.
    /// Repeatable; the list applies to the generic kernel of that name in every kernel file.
    /// A generic kernel without a list gets what `kache compile` builds without `--kernel`:
    /// every instance when its generic parameters are all type parameters
    /// ([`Module::kernels_to_compile`](crate::Module::kernels_to_compile)), else nothing and a
    /// warning. Each instance gets its own typed launch function: `axpy::<f32>` becomes
    /// `axpy_f32` (docs/prebuild.md, "Generic kernels").
    pub fn instances<I, S>(mut self, kernel: &str, args: I) -> Builder
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let list: Vec<String> = args.into_iter().map(|a| a.as_ref().to_string()).collect();
        match self.instances.iter_mut().find(|(k, _)| k == kernel) {
            Some((_, l)) => l.extend(list),
            None => self.instances.push((kernel.to_string(), list)),
        }
        self
    }

    /// The generated file's name in the output folder (default `kache_kernels.rs`).
    pub fn out_file(mut self, name: &str) -> Builder {
        self.out_file = Some(name.to_string());
        self
    }

    /// The output folder (default `$OUT_DIR`, the one cargo gives the build script).
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Builder {
        self.out_dir = Some(dir.into());
        self
    }

    /// The compiler and cache settings (default [`Config::from_env`]).
    pub fn config(mut self, config: Config) -> Builder {
        self.config = Some(config);
        self
    }

    /// Compiles every kernel of every `.rs` file in the kernels folder for every architecture,
    /// through the cache, and writes the generated launch functions. Errors are printed first,
    /// kernel errors rendered like rustc's (in a build script as `cargo::error=` lines, which
    /// cargo shows before its dump of the script's output), and fail the build; the error
    /// returned is the first (every kernel file is compiled, and every error printed).
    pub fn build(self) -> Result<PathBuf> {
        let mut reported = false;
        let result = self.run(&mut reported);
        if let (Err(e), false) = (&result, reported) {
            report(e, None);
        }
        result
    }

    /// [`Builder::build`]; when kernel files fail, it prints every error, sets `reported` and
    /// returns the first.
    fn run(&self, reported: &mut bool) -> Result<PathBuf> {
        let out_dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(
                std::env::var_os("OUT_DIR")
                    .ok_or_else(|| Error::Prebuild("OUT_DIR is not set: run the prebuild step from a build script".into()))?,
            ),
        };
        let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_else(|| ".".into()));
        let dir = manifest.join(self.kernels_dir.clone().unwrap_or_else(|| "kernels".into()));
        build_script::instruction("rerun-if-changed", &dir.display().to_string());
        for v in TRACKED_ENV {
            build_script::instruction("rerun-if-env-changed", v);
        }
        if let Some((name, problem)) = self.errors.first() {
            return Err(Error::Binding { name: name.clone(), problem: problem.clone() });
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
        let files = kernel_files(&dir, &manifest)?;
        let config = match &self.config {
            Some(c) => c.clone(),
            None => Config::from_env()?,
        };
        let ptxas = match self.cubins {
            Cubins::Never => None,
            Cubins::IfPtxasFound => crate::toolchain::find_ptxas(),
            Cubins::Always => Some(crate::toolchain::find_ptxas().ok_or_else(|| {
                Error::Ptxas(
                    "Cubins::Always, and ptxas was not found: set KACHE_PTXAS, CUDA_HOME or CUDA_PATH, put ptxas on PATH, \
                     or `pip install nvidia-cuda-nvcc-cu12`"
                        .into(),
                )
            })?),
        };
        let host = match host_object::object_target() {
            Ok(t) => Some(t),
            Err(why) => {
                crate::logging::warning!(
                    "kernels are not prebuilt for the host backend ({why}); it compiles them at run time with kache's `compiler` feature"
                );
                None
            }
        };
        let jit = Jit::new(config)?;
        // Each generated file has its data folder: two builders of one build script (each its
        // `out_file`) leave each other's files alone.
        let data_dir = match self.out_file.as_deref() {
            None | Some("kache_kernels.rs") => "kache".to_string(),
            Some(f) => format!("kache-{}", f.strip_suffix(".rs").unwrap_or(f)),
        };
        let mut data = DataFiles::new(out_dir.join(&data_dir))?;
        let host = host.map(|t| {
            let options = Options { host_cpu: host_object::host_cpu(&t), ..jit.config().options(Target::Host) };
            (t, options)
        });
        let mut code =
            Code { archs: &archs, cubins: ptxas.is_some(), host, identity: host_object::crate_identity(&out_dir), ahead: Ahead::default() };
        let mut modules = Vec::new();
        let mut objects = Vec::new();
        let mut first_error = None;
        let mut listed_used: HashSet<&str> = HashSet::new();
        // A file another kernel file includes with `mod` is part of that one, not a kernel
        // file of its own.
        let loaded: Vec<Result<crate::jit::Module>> = files.iter().map(|f| jit.load_file(&f.path)).collect();
        let mut included = std::collections::HashSet::new();
        for (file, m) in files.iter().zip(&loaded) {
            if let Ok(m) = m {
                let dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
                for (rel, _) in m.module_files() {
                    let p = dir.join(&rel);
                    build_script::instruction("rerun-if-changed", &p.display().to_string());
                    included.insert(p);
                }
            }
        }
        let (ahead_modules, ahead_files): (Vec<&crate::jit::Module>, Vec<&KernelFile>) =
            files.iter().zip(&loaded).filter(|(f, _)| !included.contains(&f.path)).filter_map(|(f, m)| Some((m.as_ref().ok()?, f))).unzip();
        if ahead_files.len() > 1 {
            code.ahead = self.compile_ahead(&jit, &ahead_modules, &ahead_files, &code);
        }
        for (file, m) in files.iter().zip(loaded) {
            build_script::instruction("rerun-if-changed", &file.path.display().to_string());
            if included.contains(&file.path) {
                continue;
            }
            match m.and_then(|m| self.build_file(&jit, m, file, &code, &mut data, &mut objects)) {
                Ok((m, used)) => {
                    modules.push(m);
                    listed_used.extend(self.instances.iter().filter(|(k, _)| used.contains(k)).map(|(k, _)| k.as_str()));
                }
                Err(e) => {
                    report(&e, Some(&file.path));
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            *reported = true;
            return Err(e);
        }
        if let Some((k, _)) = self.instances.iter().find(|(k, _)| !listed_used.contains(k.as_str())) {
            return Err(Error::Prebuild(format!(
                "Builder::instances lists instances of `{k}`, but no kernel file has a generic kernel of that name"
            )));
        }
        let mut globals = Vec::new();
        for (i, (name, value)) in self.globals.iter().enumerate() {
            let bytes_file = match value {
                CaptureValue::Host(h) => Some(data.write(&format!("global-{i}.bin"), &h.bytes)?),
                _ => None,
            };
            globals.push(GenGlobal { name, value, bytes_file });
        }
        if let (Some((target, _)), false) = (&code.host, objects.is_empty()) {
            // Named by the build and the data folder: each builder's library is its own.
            let mut h = blake3::Hasher::new();
            h.update(code.identity.as_bytes());
            h.update(data_dir.as_bytes());
            let name = format!("kache_kernels_{}", &h.finalize().to_hex()[..16]);
            host_object::archive(&name, &data.dir, &objects, target)?;
            data.written.insert(data.dir.join(format!("lib{name}.a")));
            // The archiver's copy for MSVC-style linkers, where it makes one.
            data.written.insert(data.dir.join(format!("{name}.lib")));
        }
        let text = generate(&modules, &globals)?;
        let out = out_dir.join(self.out_file.as_deref().unwrap_or("kache_kernels.rs"));
        write_if_changed(&out, text.as_bytes())?;
        // Kept even where `out_file` puts it among the data files.
        data.written.insert(out.clone());
        data.remove_stale();
        Ok(out)
    }

    /// The kernels and instances of a file to build: its kernels that are not generic, the
    /// listed instances of its generic kernels, and the default instances of the others (with a
    /// warning for each generic kernel left out). Also the generic kernels whose list was used.
    fn names_of(&self, m: &crate::Module, file: &KernelFile, warn: bool) -> Result<(Vec<String>, Vec<String>)> {
        let generic = m.generic_kernels()?;
        let (mut names, mut used) = (Vec::new(), Vec::new());
        for name in m.kernel_names() {
            let Some(g) = generic.iter().find(|g| g.name == name) else {
                names.push(name);
                continue;
            };
            // A tuned kernel's candidates are built whatever else is listed (its tuned launch
            // function picks among them).
            let tuned = m.kernel(&name).ok().as_ref().and_then(crate::jit::candidate_instances).unwrap_or_default();
            if let Some((_, list)) = self.instances.iter().find(|(k, _)| *k == name) {
                used.push(name.clone());
                for args in list {
                    let k = m.kernel(&format!("{name}::<{args}>"))?;
                    if !names.contains(&k.name().to_string()) {
                        names.push(k.name().to_string());
                    }
                }
                for t in tuned {
                    let k = m.kernel(&t)?;
                    if !names.contains(&k.name().to_string()) {
                        names.push(k.name().to_string());
                    }
                }
                continue;
            }
            if !tuned.is_empty() {
                for t in tuned {
                    names.push(m.kernel(&t)?.name().to_string());
                }
                continue;
            }
            match g.every_instance() {
                Ok(all) => names.extend(all),
                Err(_) if !warn => {}
                Err(why) => crate::logging::warning!(
                    "{}: generic kernel `{}` is not prebuilt: {why}, with Builder::instances(\"{name}\", [..])",
                    file.path.display(),
                    g.signature
                ),
            }
        }
        Ok((names, used))
    }

    /// The module with the builder's globals bound.
    fn bound(&self, m: crate::jit::Module) -> Result<crate::jit::Module> {
        let mut m = m.bound_by(crate::lang::Binder::BuildScript);
        for (n, v) in &self.globals {
            m = m.with_global(n, v.clone())?;
        }
        Ok(m)
    }

    /// The kernels of a file to build, each checked, by name ([`names_of`](Self::names_of),
    /// `warn` saying whether to warn of generic kernels left out), and the generic kernels
    /// whose listed instances were used.
    fn kernels_of(&self, m: &crate::jit::Module, file: &KernelFile, warn: bool) -> Result<(Named, Vec<String>)> {
        let (names, used) = self.names_of(m, file, warn)?;
        if let Some((a, b, rust)) = first_collision(names.iter().map(|n| (n.as_str(), instance_rust_name(n)))) {
            return Err(Error::Prebuild(format!(
                "kernels `{a}` and `{b}` both become the Rust function `{rust}` (docs/prebuild.md, \"Names\"): rename one"
            )));
        }
        let mut checked = Vec::new();
        for name in names {
            let k = m.kernel(&name)?;
            if let Some(c) = k.program().captures.iter().find(|c| matches!(c.ty, CaptureTy::Array { device: true, .. })) {
                return Err(Error::Prebuild(format!(
                    "kernel '{name}' captures {}, a device array, which exists only at run time; compile it with kache::Jit (Module::with_global) instead",
                    c.origin
                )));
            }
            checked.push((name, k));
        }
        Ok((checked, used))
    }

    /// Every kernel file's kernels compiled, and their cubins assembled, in one batch before
    /// the files are built one by one, so that a crate of many small kernel files uses every
    /// core of the batch ([`Config::compile_threads`]), not only as many as one file has
    /// kernels. Each file's own batch then finds its kernels compiled in this process's memory
    /// (the kernels returned keep them there) and takes their cubins from what is returned. A
    /// file or kernel that fails is left to its own pass, which reports it where it belongs.
    fn compile_ahead(&self, jit: &Jit, modules: &[&crate::jit::Module], files: &[&KernelFile], code: &Code<'_>) -> Ahead {
        let mut kernels: Named = Vec::new();
        for (m, file) in modules.iter().zip(files) {
            if let Ok((checked, _)) = self.bound((*m).clone()).and_then(|m| self.kernels_of(&m, file, false)) {
                kernels.extend(checked);
            }
        }
        let (requests, options) = requests_of(jit, &kernels, code);
        let compiled: Vec<Arc<CompiledKernel>> = jit
            .compile_many_with(&requests, &options)
            .into_iter()
            .zip(&requests)
            .filter_map(|(c, r)| c.ok().filter(|_| r.target != Target::Host))
            .collect();
        let mut cubins = HashMap::new();
        if code.cubins {
            let assembled = jit.assemble_cubins(&compiled.iter().map(|c| &**c).collect::<Vec<_>>());
            for (c, a) in compiled.iter().zip(assembled) {
                if let Ok(bytes) = a {
                    cubins.insert(c.key(), bytes);
                }
            }
        }
        Ahead { _kernels: kernels.into_iter().map(|(_, k)| k).collect(), cubins }
    }

    fn build_file(
        &self,
        jit: &Jit,
        m: crate::jit::Module,
        file: &KernelFile,
        code: &Code<'_>,
        data: &mut DataFiles,
        objects: &mut Vec<PathBuf>,
    ) -> Result<(GenModule, Vec<String>)> {
        let dir = file.path.parent().map(Path::to_path_buf).unwrap_or_default();
        let module_files = m
            .module_files()
            .into_iter()
            .map(|(rel, _)| {
                let p = dir.join(&rel);
                Ok((rel, p.to_str().ok_or_else(|| not_utf8(&p))?.to_string()))
            })
            .collect::<Result<Vec<_>>>()?;
        let m = self.bound(m)?;
        let file_name = file.path.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
        let (checked, used) = self.kernels_of(&m, file, true)?;
        // The file's kernels for every architecture, and for the host, in one batch: one pass
        // over the cache (one round trip to a remote cache) for the lookups, one for the stores.
        let (requests, options) = requests_of(jit, &checked, code);
        let all: Vec<_> = jit.compile_many_with(&requests, &options).into_iter().collect::<Result<_>>()?;
        let mut hosts = Vec::new();
        let mut compiled = Vec::new();
        for (c, r) in all.into_iter().zip(&requests) {
            if r.target == Target::Host { hosts.push(c) } else { compiled.push(c) }
        }
        // Their cubins the same way: one lookup pass, one store pass.
        let assembled: Vec<Vec<u8>> = if code.cubins {
            // Those assembled ahead are taken as they are (looked up and counted once).
            let missing: Vec<&CompiledKernel> =
                compiled.iter().filter(|c| !code.ahead.cubins.contains_key(&c.key())).map(|c| &**c).collect();
            let mut fresh = jit.assemble_cubins(&missing).into_iter();
            compiled
                .iter()
                .map(|c| match code.ahead.cubins.get(&c.key()) {
                    Some(b) => Ok(b.clone()),
                    None => fresh.next().unwrap_or_else(|| Err(Error::Internal("a cubin was lost".into()))),
                })
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let (mut compiled, mut assembled, mut hosts) = (compiled.iter(), assembled.into_iter(), hosts.into_iter());
        let mut kernels = Vec::new();
        for (k_index, (name, k)) in checked.into_iter().enumerate() {
            let rust = instance_rust_name(&name);
            // Numbered, so that names differing only in case stay apart on any file system.
            let stem = format!("f{}-k{k_index}-{}-{rust}", file.index, file.module);
            let (mut ptx, mut cubins) = (Vec::new(), Vec::new());
            let mut entry = crate::abi::symbol_name(&name);
            for a in code.archs {
                let lost = || Error::Internal(format!("kernel '{name}' was not compiled for {a}"));
                let c = compiled.next().ok_or_else(lost)?;
                entry = c.entry().to_string();
                ptx.push((a.to_string(), data.write(&format!("{stem}.{a}.ptx"), c.ptx().unwrap_or("").as_bytes())?));
                if code.cubins {
                    let cubin = assembled.next().ok_or_else(lost)?;
                    cubins.push((a.to_string(), data.write(&format!("{stem}.{a}.cubin"), &cubin)?));
                }
            }
            let host = match &code.host {
                Some((target, options)) => {
                    let c = hosts.next().ok_or_else(|| Error::Internal(format!("kernel '{name}' was not compiled for the host")))?;
                    let crate::codegen::Artifact::HostBitcode(bitcode) = c.artifact() else {
                        return Err(Error::Internal(format!("kernel '{name}' compiled for the host is not host code")));
                    };
                    let symbol = host_object::entry_symbol(&code.identity, &c.key(), &file.module, &name);
                    let (object, stack) = crate::codegen::host_object(bitcode, c.entry(), &symbol, target, options.opt_level)?;
                    let path = data.write(&format!("{stem}.o"), &object)?;
                    objects.push(PathBuf::from(path));
                    let program = k.program();
                    Some(GenHost {
                        symbol,
                        static_shared: crate::abi::static_shared_bytes(program),
                        cooperative: program.funcs.iter().any(|f| f.uses_block_sync),
                        stack,
                    })
                }
                None => None,
            };
            let types = &k.program().types;
            let tensor_maps = k
                .signature()
                .iter()
                .filter_map(|(_, t)| match t {
                    crate::ir::Ty::Agg(id) if types.is_tensor_map(*t) => Some((*id, types.name(*t))),
                    _ => None,
                })
                .collect();
            kernels.push(GenKernel {
                name,
                rust,
                tensor_maps,
                signature: k.signature().to_vec(),
                enums: k.enums().to_vec(),
                entry,
                ptx,
                cubins,
                host,
                tuned_only: false,
            });
        }
        let tuned = self.tuned_of(&m, file, code, &mut kernels)?;
        for f in m.factory_names() {
            crate::logging::warning!(
                "{}: factory '{f}' is not prebuilt (its arguments come from the host); instantiate it with kache::Jit",
                file.path.display()
            );
        }
        Ok((
            GenModule {
                rust: file.module.clone(),
                source: utf8(&file.path)?,
                modules: module_files,
                shown: file.shown.clone(),
                file: file_name,
                kernels,
                tuned,
            },
            used,
        ))
    }

    /// The `#[tune]` kernels of a file: each with its candidates (kernels built among `kernels`;
    /// a kernel that is not generic is then launched through its tuned function alone) and the
    /// tuning results the cache holds for the targets built for.
    fn tuned_of(&self, m: &crate::jit::Module, file: &KernelFile, code: &Code<'_>, kernels: &mut [GenKernel]) -> Result<Vec<GenTuned>> {
        let mut targets: Vec<Target> = code.archs.iter().map(|a| Target::Nvptx(*a)).collect();
        // Results tuned by the JIT on this machine's CPU, for the host backend.
        targets.push(Target::Host);
        let mut out = Vec::new();
        for name in m.kernel_names() {
            let k = m.kernel(&name)?;
            let Some(space) = k.tune_space() else { continue };
            let configs = space.candidates().map_err(|e| Error::Tuning { kernel: name.clone(), problem: e.to_string() })?;
            let names: Vec<String> = match (k.is_generic(), crate::jit::candidate_names(&k)) {
                (false, _) => vec![name.clone(); configs.len()],
                (true, Some(n)) => n.iter().map(|n| Ok(m.kernel(n)?.name().to_string())).collect::<Result<_>>()?,
                (true, None) => {
                    crate::logging::warning!(
                        "{}: tuned kernel `{name}` has a type parameter: its instances are built as listed, without a tuned launch function",
                        file.path.display()
                    );
                    continue;
                }
            };
            let mut candidates = Vec::with_capacity(configs.len());
            let mut signature = Vec::new();
            for (config, n) in configs.iter().zip(&names) {
                let g = kernels
                    .iter_mut()
                    .find(|g| &g.name == n)
                    .ok_or_else(|| Error::Internal(format!("candidate `{n}` of tuned kernel `{name}` was not built")))?;
                if !k.is_generic() {
                    // Its own launch function and accessor would take the tuned one's name.
                    g.tuned_only = true;
                }
                signature = g.signature.clone();
                candidates.push((config.clone(), g.rust.clone()));
            }
            let results = crate::jit::recorded_tunings(&k, &targets)?
                .into_iter()
                .map(|r| GenResult {
                    device: r.device.name.clone(),
                    multiprocessors: r.device.multiprocessors,
                    compute_capability: r.device.compute_capability,
                    driver: r.device.driver,
                    bucket: r.bucket.clone(),
                    chosen: r.chosen,
                })
                .collect();
            out.push(GenTuned { name: name.clone(), rust: rust_name(&name), signature, space: space.clone(), candidates, results });
        }
        Ok(out)
    }
}

/// Kernels by name (an instance's name with its generic arguments).
type Named = Vec<(String, Kernel)>;

/// What [`Builder::compile_ahead`] made: the kernels it compiled (held, so that each file's
/// batch finds them compiled), and the cubins it assembled, by the compiled kernel's key.
#[derive(Default)]
struct Ahead {
    _kernels: Vec<Kernel>,
    cubins: HashMap<Key, Vec<u8>>,
}

/// The compile requests of `kernels`: each for every architecture, and for the host where host
/// code is built, with their options.
fn requests_of(jit: &Jit, kernels: &Named, code: &Code<'_>) -> (Vec<CompileRequest>, Vec<Options>) {
    let (mut requests, mut options) = (Vec::new(), Vec::new());
    for (_, k) in kernels {
        for a in code.archs {
            requests.push(CompileRequest::new(k, Target::Nvptx(*a)));
            options.push(jit.config().options(Target::Nvptx(*a)));
        }
        if let Some((_, o)) = &code.host {
            requests.push(CompileRequest::new(k, Target::Host));
            options.push(o.clone());
        }
    }
    (requests, options)
}

/// What the step builds for every kernel: PTX for the architectures, cubins with `ptxas` (if
/// found), host object code for the crate's target (if any: the target, and the options that
/// compile for its CPU), under the crate's identity.
struct Code<'a> {
    archs: &'a [Arch],
    /// Whether to assemble cubins (ptxas was found).
    cubins: bool,
    host: Option<(ObjectTarget, Options)>,
    identity: String,
    /// What was compiled ahead of the files ([`Builder::compile_ahead`]).
    ahead: Ahead,
}

/// The `.rs` files of the kernels folder, sorted, each with its module name; two files that
/// would become one module are an error.
fn kernel_files(dir: &Path, manifest: &Path) -> Result<Vec<KernelFile>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs") && p.is_file())
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for (index, path) in paths.into_iter().enumerate() {
        let stem = path.file_stem().and_then(|s| s.to_str()).ok_or_else(|| not_utf8(&path))?;
        let shown = path.strip_prefix(manifest).unwrap_or(&path).display().to_string();
        files.push(KernelFile { index, module: rust_name(stem), shown, path });
    }
    if let Some((a, b, module)) = first_collision(files.iter().map(|f| (f.shown.as_str(), f.module.clone()))) {
        return Err(Error::Prebuild(format!(
            "kernel files {a} and {b} both become the module `{module}` (docs/prebuild.md, \"Names\"): rename one"
        )));
    }
    Ok(files)
}

fn not_utf8(path: &Path) -> Error {
    Error::Prebuild(format!("{}: the path is not UTF-8, and generated code names it in a string", path.display()))
}

fn utf8(path: &Path) -> Result<String> {
    path.to_str().map(str::to_owned).ok_or_else(|| not_utf8(path))
}

/// Prints an error of the build step: a kernel's diagnostics rendered like rustc's, anything
/// else on one line; in a build script as `cargo::error=` lines.
fn report(e: &Error, file: Option<&Path>) {
    let text = match e {
        Error::Source(d) => {
            let mut text = d.render(false);
            if d.items().iter().any(|i| i.message.starts_with("cannot find value")) {
                text.push_str(
                    "note: kernels built by kache::prebuild capture only host values bound with Builder::global; \
                     a kernel that needs a device array, or a value known only at run time, must be compiled at run time \
                     with kache::Jit and Module::with_global\n",
                );
            }
            text
        }
        other => match file {
            Some(f) => format!("error: {}: {other}\n", f.display()),
            None => format!("error: kache: {other}\n"),
        },
    };
    if build_script::running() {
        build_script::instruction("error", &text);
    } else {
        eprint!("{text}");
    }
}

/// Writes `bytes` to `path` unless it holds them already (cargo then sees no change), through a
/// temporary file renamed into place, so no reader sees a partial file.
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, bytes).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}
