//! Settings of the runtime JIT ([`Config`]) and how they are read from the environment.

use std::path::PathBuf;
use std::time::Duration;

use crate::cache::remote::RemoteConfig;
use crate::cache::{CacheConfig, Toolchain};
use crate::error::{Error, Result};
use crate::target::{Arch, Options, Target};

/// Settings of a [`Jit`](crate::Jit), usually from the environment ([`Config::from_env`]).
#[derive(Clone, Debug)]
pub struct Config {
    /// The cache folder; `None` keeps compiled kernels in memory only.
    pub cache_dir: Option<PathBuf>,
    /// Size limit of the local store (`KACHE_MAX_SIZE`, default 2 GiB).
    pub max_size: u64,
    /// Longest wait for another process's lock on the store (`KACHE_LOCK_TIMEOUT_MS`).
    pub lock_timeout: Duration,
    /// The Redis tier (`KACHE_REMOTE`, `KACHE_REMOTE_KEY`, `KACHE_REMOTE_READONLY`).
    pub remote: Option<RemoteConfig>,
    /// Make "not cached on disk" an error instead of a warning (`KACHE_STRICT=1`).
    pub strict: bool,
    /// Mixed into every key to abandon earlier entries (`KACHE_SALT`).
    pub salt: String,
    /// GPU architecture for compiles without a device (`KACHE_ARCH`, default `sm_70`).
    pub arch: Arch,
    /// LLVM optimisation level (`KACHE_OPT_LEVEL`, default 3).
    pub opt_level: u8,
    /// Fast-math (`KACHE_FAST_MATH=1`).
    pub fast_math: bool,
    /// Floating-point contraction: `a * b + c` as one fused multiply-add (`KACHE_FMAD`, default
    /// on, as nvcc and NVRTC; `KACHE_FMAD=0` for separately rounded operations).
    pub fmad: bool,
    /// On CUDA, also cache the cubin the driver builds from PTX (`KACHE_CUBIN_TIER=0` turns it
    /// off, for measuring the PTX tier alone).
    pub cubin_tier: bool,
    /// The compiler every key is derived for: this kache build and its LLVM
    /// ([`Toolchain::current`], the default, and never read from the environment). Another
    /// value only derives other keys (tests use it to check that another toolchain misses); it
    /// does not change how code is compiled.
    pub toolchain: Toolchain,
    /// How captured device arrays are compiled (`KACHE_CAPTURES`): `false` (the default,
    /// `baked`) puts the address into the code as a constant, as numba does, so such kernels are
    /// never persisted; `true` (`relocatable`) gives each array a slot in the module that the
    /// loader fills, so the code and its key hold no address and the kernel is cached like any
    /// other (`docs/captures.md`, "Relocatable captures").
    pub relocatable_captures: bool,
    /// How many threads a batch of compiles uses (`KACHE_COMPILE_THREADS`, default the machine's
    /// available parallelism): [`Jit::compile_many`](crate::Jit::compile_many),
    /// [`Module::compile_all`](crate::Module::compile_all), the `kache` command and the
    /// prebuild step compile the misses of a batch (and assemble their cubins) on up to this
    /// many threads, each compile on one thread with its own LLVM context. The results (bytes,
    /// keys, their order, errors) are the same whatever the number; 1 compiles on the calling
    /// thread only.
    pub compile_threads: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            cache_dir: CacheConfig::default_dir(),
            max_size: 2 << 30,
            lock_timeout: Duration::from_secs(5),
            remote: None,
            strict: false,
            salt: String::new(),
            arch: Arch { sm: 70, accelerated: false },
            opt_level: 3,
            fast_math: false,
            fmad: true,
            cubin_tier: true,
            toolchain: Toolchain::current(),
            relocatable_captures: false,
            compile_threads: crate::parallel::default_threads(),
        }
    }
}

/// `1 true yes on` or `0 false no off`, in any case.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn env_flag(name: &str) -> bool {
    matches!(std::env::var(name).as_deref().map(str::trim), Ok("1" | "true" | "yes" | "on"))
}

/// Parses a size: `2G`, `512MiB`, `100k`, `1048576`.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => return None,
    };
    let bytes = n * mult as f64;
    // 2^64: past it, `as u64` would saturate to 16 EiB without a word.
    if n < 0.0 || !bytes.is_finite() || bytes >= 18_446_744_073_709_551_616.0 {
        return None;
    }
    Some(bytes as u64)
}

/// `KACHE_COMPILE_THREADS`: a number of threads, at least 1.
fn parse_threads(v: &str) -> Option<usize> {
    v.trim().parse().ok().filter(|n| *n >= 1)
}

/// `KACHE_CAPTURES`: `relocatable` (true) or `baked` (false), in any case.
fn parse_captures(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "relocatable" => Some(true),
        "baked" => Some(false),
        _ => None,
    }
}

impl Config {
    /// From the environment: `KACHE_DIR` (else `~/.cache/kache`), `KACHE_DISABLE=1` (no disk
    /// cache), `KACHE_MAX_SIZE`, `KACHE_LOCK_TIMEOUT_MS`, `KACHE_STRICT`, `KACHE_SALT`,
    /// `KACHE_ARCH`, `KACHE_OPT_LEVEL`, `KACHE_FAST_MATH`, `KACHE_FMAD`, `KACHE_CAPTURES`
    /// (`baked` or `relocatable`), `KACHE_COMPILE_THREADS`, and the remote's variables.
    pub fn from_env() -> Result<Config> {
        let mut c = Config::default();
        if env_flag("KACHE_DISABLE") {
            c.cache_dir = None;
        }
        if let Ok(v) = std::env::var("KACHE_MAX_SIZE") {
            c.max_size = parse_size(&v).ok_or_else(|| Error::Config(format!("KACHE_MAX_SIZE={v} is not a size (like 2G or 500M)")))?;
        }
        if let Ok(v) = std::env::var("KACHE_LOCK_TIMEOUT_MS") {
            let ms: u64 = v.trim().parse().map_err(|_| Error::Config(format!("KACHE_LOCK_TIMEOUT_MS={v} is not a number")))?;
            c.lock_timeout = Duration::from_millis(ms);
        }
        c.strict = env_flag("KACHE_STRICT");
        c.salt = std::env::var("KACHE_SALT").unwrap_or_default();
        c.arch = Arch::default_from_env()?;
        if let Ok(v) = std::env::var("KACHE_OPT_LEVEL") {
            c.opt_level =
                v.trim().parse().ok().filter(|l| *l <= 3).ok_or_else(|| Error::Config(format!("KACHE_OPT_LEVEL={v} is not 0..=3")))?;
        }
        c.fast_math = env_flag("KACHE_FAST_MATH");
        if let Ok(v) = std::env::var("KACHE_FMAD") {
            c.fmad = parse_bool(&v).ok_or_else(|| Error::Config(format!("KACHE_FMAD={v} is not a boolean (1/0, true/false)")))?;
        }
        c.cubin_tier = !matches!(std::env::var("KACHE_CUBIN_TIER").as_deref().map(str::trim), Ok("0" | "false" | "no" | "off"));
        if let Ok(v) = std::env::var("KACHE_CAPTURES") {
            c.relocatable_captures =
                parse_captures(&v).ok_or_else(|| Error::Config(format!("KACHE_CAPTURES={v} is neither `baked` nor `relocatable`")))?;
        }
        if let Ok(v) = std::env::var("KACHE_COMPILE_THREADS") {
            c.compile_threads = parse_threads(&v)
                .ok_or_else(|| Error::Config(format!("KACHE_COMPILE_THREADS={v} is not a number of threads (1 or more)")))?;
        }
        c.remote = RemoteConfig::from_env()?;
        Ok(c)
    }

    /// No disk cache: everything in memory.
    pub fn in_memory() -> Config {
        Config { cache_dir: None, ..Config::default() }
    }

    /// The same settings with the cache in `dir`.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Config {
        self.cache_dir = Some(dir.into());
        self
    }

    /// The same settings with floating-point contraction on or off (see [`Config::fmad`](field@Config::fmad)).
    pub fn fmad(mut self, on: bool) -> Config {
        self.fmad = on;
        self
    }

    /// The same settings with captured device arrays compiled as slots the loader fills
    /// (`true`) or as addresses baked into the code (`false`, the default); see
    /// [`Config::relocatable_captures`](field@Config::relocatable_captures).
    ///
    /// ```
    /// let c = kache::Config::in_memory().relocatable_captures(true);
    /// assert!(c.relocatable_captures);
    /// ```
    pub fn relocatable_captures(mut self, on: bool) -> Config {
        self.relocatable_captures = on;
        self
    }

    /// The same settings compiling a batch on up to `threads` threads (at least 1; see
    /// [`Config::compile_threads`](field@Config::compile_threads)).
    ///
    /// ```
    /// let c = kache::Config::in_memory().compile_threads(1);
    /// assert_eq!(c.compile_threads, 1);
    /// ```
    pub fn compile_threads(mut self, threads: usize) -> Config {
        self.compile_threads = threads.max(1);
        self
    }

    /// Code generation options for `target`, bounds-checked (what safe launches run).
    pub fn options(&self, target: Target) -> Options {
        Options {
            target,
            opt_level: self.opt_level,
            fast_math: self.fast_math,
            fmad: self.fmad,
            checked: true,
            host_cpu: crate::target::HostCpu::Native,
            may_alias: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_captures, parse_size, parse_threads};

    #[test]
    fn capture_modes_parse() {
        assert_eq!(parse_captures("relocatable"), Some(true));
        assert_eq!(parse_captures(" Baked "), Some(false));
        assert_eq!(parse_captures("pointer"), None);
        assert_eq!(parse_captures(""), None);
    }

    #[test]
    fn thread_counts_parse() {
        assert_eq!(parse_threads(" 4 "), Some(4));
        assert_eq!(parse_threads("1"), Some(1));
        for bad in ["0", "-2", "two", "", "1.5"] {
            assert_eq!(parse_threads(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn sizes_parse_with_and_without_units() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("2G"), Some(2 << 30));
        assert_eq!(parse_size("512MiB"), Some(512 << 20));
        assert_eq!(parse_size(" 100k "), Some(100 << 10));
        assert_eq!(parse_size("1.5kb"), Some(1536));
        assert_eq!(parse_size("1T"), Some(1 << 40));
    }

    #[test]
    fn non_sizes_are_refused() {
        for s in ["", "G", "12 parsecs", "-1", "1e3", "NaN", "99999999999999999999999G", "16777216T", "18446744073709551616"] {
            assert_eq!(parse_size(s), None, "{s:?}");
        }
    }
}
