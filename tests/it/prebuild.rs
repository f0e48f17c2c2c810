//! The prebuild step with real `cargo build`s: a workspace of two crates (copies of
//! examples/prebuild-crate, which depends on the runtime alone and builds with the compiler)
//! whose build scripts compile their kernels through one cache, and whose binaries run them on
//! the host backend from linked object code, with no LLVM in them; and the environment
//! variables the step must tell cargo about, derived from the source.

// A failed unwrap in a helper is a failed test, with its location.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::{kache_bin, root};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (p, t) = (e.path(), to.join(e.file_name()));
        if e.file_name() == "target" || e.file_name() == "Cargo.lock" {
            continue;
        }
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

struct Workspace {
    dir: tempfile::TempDir,
    cache: tempfile::TempDir,
    target: PathBuf,
}

impl Workspace {
    fn new() -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let example = root().join("examples/prebuild-crate");
        for m in ["a", "b"] {
            let d = dir.path().join(m);
            copy_dir(&example, &d);
            let toml = std::fs::read_to_string(d.join("Cargo.toml")).unwrap();
            let toml = toml
                .replace("name = \"prebuild-demo\"", &format!("name = \"demo-{m}\""))
                .replace("path = \"../..\"", &format!("path = {:?}", root().display().to_string()));
            // Members of the test's workspace, not workspaces of their own.
            let toml = toml.split("# Its own workspace").next().unwrap().to_string();
            std::fs::write(d.join("Cargo.toml"), toml).unwrap();
            let main = std::fs::read_to_string(d.join("src/main.rs")).unwrap().replace("prebuild_demo::", &format!("demo_{m}::"));
            std::fs::write(d.join("src/main.rs"), main).unwrap();
            if m == "b" {
                // Crate b's kernels compute the same results with different code, so the two
                // crates share no cache entry and the counts below are exact.
                let edit = |f: &str, from: &str, to: &str| {
                    let p = d.join("kernels").join(f);
                    let t = std::fs::read_to_string(&p).unwrap();
                    assert!(t.contains(from));
                    std::fs::write(&p, t.replace(from, to)).unwrap();
                };
                edit("saxpy.rs", "a * x[i] + y[i]", "y[i] + a * x[i]");
                edit(
                    "filters.rs",
                    "GAIN * (tap(x, i, 0) + tap(x, i, 1) + tap(x, i, 2))",
                    "(tap(x, i, 0) + tap(x, i, 1) + tap(x, i, 2)) * GAIN",
                );
                edit("generic.rs", "x[i] *= by;", "x[i] = by * x[i];");
                edit("tuned.rs", "a * x[i] + y[i]", "y[i] + a * x[i]");
                edit(
                    "filters.rs",
                    "atomic_add(&mut bins[(values[i] as usize) % bins.len()], 1);",
                    "let b = (values[i] as usize) % bins.len();\n        atomic_add(&mut bins[b], 1);",
                );
                edit("blocks.rs", "tile[t] += tile[t + stride];", "tile[t] = tile[t + stride] + tile[t];");
                edit("../kernels-sm90/tensor_rows.rs", "2.0 * tile[t]", "tile[t] * 2.0");
                for (from, to) in [("v.exp() + v.exp2()", "v.exp2() + v.exp()"), ("v.sin() + v.cos()", "v.cos() + v.sin()")] {
                    let p = d.join("kernels/blocks.rs");
                    let t = std::fs::read_to_string(&p).unwrap();
                    assert_eq!(t.matches(from).count(), 2);
                    std::fs::write(&p, t.replace(from, to)).unwrap();
                }
                // Crate b embeds no cubins (Cubins::Never): both policies are built and run.
                let build = std::fs::read_to_string(d.join("build.rs")).unwrap();
                assert!(build.contains(".build()?"));
                std::fs::write(
                    d.join("build.rs"),
                    build.replace(".build()?", ".cubins(kache::prebuild::Cubins::Never)\n        .build()?"),
                )
                .unwrap();
            }
        }
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"3\"\n\n[profile.dev]\ndebug = false\n\n[profile.dev.package.\"*\"]\nopt-level = 1\n",
        )
        .unwrap();
        // The versions this repository locked, so the test resolves nothing from the network
        // (every cargo call below is `--offline`): a slow or unreachable registry can neither
        // hang nor change this test. What the newest versions do is check-package.sh's job.
        std::fs::copy(root().join("Cargo.lock"), dir.path().join("Cargo.lock")).unwrap();
        // Dependencies are compiled once and reused across runs of this test.
        let target = root().join("target").join("prebuild-it");
        Workspace { dir, cache: tempfile::tempdir().unwrap(), target }
    }

    fn cargo(&self, args: &[&str]) -> Output {
        self.cargo_with(args, &[])
    }

    /// Cargo in the workspace, with the test's environment changed by `env` (a `None` value
    /// removes the variable). Cargo's own output is never quiet, so that `Compiling` lines and
    /// warnings can be asserted on.
    fn cargo_with(&self, args: &[&str], env: &[(&str, Option<&str>)]) -> Output {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.args(args)
            .arg("--offline")
            .current_dir(self.dir.path())
            .env("CARGO_TARGET_DIR", &self.target)
            .env("KACHE_DIR", self.cache.path())
            .env("KACHE_QUIET", "1")
            .env("CARGO_TERM_COLOR", "never")
            .env_remove("CARGO_TERM_QUIET")
            .env_remove("KACHE_REMOTE")
            .env_remove("KACHE_ARCH")
            .env_remove("CUDA_PATH")
            .env_remove("RUSTFLAGS");
        for (k, v) in env {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        output_within(c, std::time::Duration::from_secs(900))
    }

    fn build(&self) -> String {
        self.build_with(&[])
    }

    fn build_with(&self, env: &[(&str, Option<&str>)]) -> String {
        let o = self.cargo_with(&["build"], env);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "cargo build failed:\n{err}");
        err
    }

    fn stats(&self) -> Counts {
        let o = Command::new(kache_bin()).args(["stats", "--json"]).env("KACHE_DIR", self.cache.path()).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        // Counts read without the catalogue would be only the parked ones: say so, not a
        // puzzling difference of counts.
        assert!(v["unavailable"].is_null(), "kache stats could not read the catalogue: {v}");
        let n = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
        Counts { misses: n("misses"), hits: n("hits"), cubin_misses: n("cubin_misses"), cubin_hits: n("cubin_hits") }
    }
}

/// The cache's statistics: kernel lookups (PTX, host code) and the cubin tier's own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    misses: u64,
    hits: u64,
    cubin_misses: u64,
    cubin_hits: u64,
}

impl std::ops::Add for Counts {
    type Output = Counts;
    fn add(self, o: Counts) -> Counts {
        Counts {
            misses: self.misses + o.misses,
            hits: self.hits + o.hits,
            cubin_misses: self.cubin_misses + o.cubin_misses,
            cubin_hits: self.cubin_hits + o.cubin_hits,
        }
    }
}

/// Cache lookups of one crate's build step when `changed` of its kernels are compiled anew and
/// the others found in the cache. Per kernel: PTX for each of the two architectures and the host
/// object code; a cubin for each architecture where the crate embeds them.
fn lookups(kernels: u64, changed: u64, cubins: bool) -> Counts {
    let c = if cubins { 2 } else { 0 };
    Counts { misses: changed * 3, hits: (kernels - changed) * 3, cubin_misses: changed * c, cubin_hits: (kernels - changed) * c }
}

/// The lookups of a build of the sm_90 builder's one kernel (kernels-sm90/: PTX for sm_90 and
/// host code; a cubin where `cubins`), `changed` (0 or 1) of it new.
fn lookups_sm90(changed: u64, cubins: bool) -> Counts {
    let c = u64::from(cubins);
    Counts { misses: changed * 2, hits: (1 - changed) * 2, cubin_misses: changed * c, cubin_hits: (1 - changed) * c }
}

/// Only the misses of `c`: what a build leaves counted when nothing was in the cache before.
fn misses_only(c: Counts) -> Counts {
    Counts { misses: c.misses, cubin_misses: c.cubin_misses, ..Counts::default() }
}

/// Symbols of `binary` that come from code the runtime must not contain: LLVM (its C++
/// namespace and its C API), and the compiler's, the cache's and the CLI's crates.
fn foreign_symbols(binary: &Path) -> Vec<String> {
    let o = Command::new("nm").arg("--demangle").arg(binary).output().unwrap_or_else(|e| panic!("nm (binutils) is needed here: {e}"));
    assert!(o.status.success(), "nm {}: {}", binary.display(), String::from_utf8_lossy(&o.stderr));
    let crates = [
        "llvm::",
        "inkwell::",
        "llvm_sys::",
        "syn::",
        "proc_macro2::",
        "quote::",
        "prettyplease::",
        "sled::",
        "redis::",
        "clap::",
        "indicatif::",
        "serde_json::",
    ];
    let listing = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(listing.lines().count() > 100, "nm listed almost nothing for {}: is it stripped?", binary.display());
    listing
        .lines()
        .filter(|l| {
            let name = l.rsplit(' ').next().unwrap_or("");
            let c_api = name.strip_prefix("LLVM").is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()));
            c_api || crates.iter().any(|c| l.contains(c))
        })
        .map(str::to_string)
        .collect()
}

#[test]
fn cargo_builds_compile_kernels_once_and_reuse_them() {
    let ws = Workspace::new();
    let cubins = kache::toolchain::find_ptxas().is_some();
    if !cubins && std::env::var("KACHE_REQUIRE_PTXAS").as_deref() == Ok("1") {
        panic!(
            "ptxas not found and KACHE_REQUIRE_PTXAS=1: the build steps would embed no cubins; `make deps` installs it (the nvidia-cuda-nvcc-cu12 wheel, into target/toolchain/), and the Makefile sets KACHE_PTXAS"
        );
    }
    // Kernels per crate: saxpy, 2 in filters.rs, 3 in blocks.rs, 2 instances of generic.rs's,
    // the 2 instances tuned.rs's tuned kernel runs; and the sm_90 builder's one.
    let kernels = 10;
    let all_new = lookups(kernels, kernels, cubins) + lookups(kernels, kernels, false) + lookups_sm90(1, cubins) + lookups_sm90(1, false);
    let all_cached = lookups(kernels, 0, cubins) + lookups(kernels, 0, false) + lookups_sm90(0, cubins) + lookups_sm90(0, false);
    // Before the first build, a program tunes crate a's tuned kernel on the host backend (its
    // two instances compiled for this CPU: two misses), with a timer that makes ITEMS = 2,
    // BLOCK = 128 the fastest: the build step finds the result in the cache and records it.
    let tuned_first = tune_crate_a(&ws);
    // First build: both crates' build scripts run (in parallel) against one fresh cache.
    ws.build();
    assert_eq!(ws.stats(), misses_only(all_new) + tuned_first);
    // The generated launch functions run on the host backend from the object code linked into
    // the binaries, which depend on kache's runtime alone: nothing is compiled when they run
    // (they could not: there is no compiler in them), so no cache folder is even created.
    let run_cache = tempfile::tempdir().unwrap();
    let run_dir = run_cache.path().join("kache");
    for (m, embeds_cubins) in [("demo-a", cubins), ("demo-b", false)] {
        let binary = ws.target.join("debug").join(m);
        let o = Command::new(&binary).env("KACHE_DIR", &run_dir).env("KACHE_QUIET", "1").output().unwrap();
        assert!(o.status.success(), "{m}: {}", String::from_utf8_lossy(&o.stderr));
        let cubin_archs = if embeds_cubins { "[\"sm_80\", \"sm_90\"]" } else { "[]" };
        let want = format!("on host backend (CPU): ok (PTX for [\"sm_80\", \"sm_90\"], cubins for {cubin_archs}, host code: linked)");
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(&want), "{m}: {out}");
        // Crate a launches the choice recorded at build time, without a compiler; crate b's
        // kernel is other code, which nothing tuned: it tunes among its prebuilt candidates.
        let tuned = if m == "demo-a" {
            "tuned kernel axpy_tuned: ITEMS = 2, BLOCK = 128 (recorded at build time; 1 result(s) recorded)"
        } else {
            "(tuned at run time; 0 result(s) recorded)"
        };
        assert!(out.contains(tuned), "{m}: {out}");
        let foreign = foreign_symbols(&binary);
        assert!(foreign.is_empty(), "{m} links code the runtime must not contain:\n{}", foreign[..foreign.len().min(20)].join("\n"));
        // Without LLVM a binary is a few megabytes (the release build, stripped, is about one:
        // docs/benchmarks.md); with it, it would be tens.
        let size = std::fs::metadata(&binary).unwrap().len();
        assert!(size < 8 << 20, "{m} is {size} bytes");
    }
    assert!(!run_dir.exists(), "running prebuilt kernels created a cache folder");
    // A second build recompiles nothing: cargo does not even run the build scripts.
    let err = ws.build();
    assert!(!err.contains("Compiling demo-"), "{err}");
    assert_eq!(ws.stats(), misses_only(all_new) + tuned_first);
    // After cargo clean, every kernel is a cache hit.
    let o = ws.cargo(&["clean", "-p", "demo-a", "-p", "demo-b"]);
    assert!(o.status.success());
    ws.build();
    let mut expected = misses_only(all_new) + tuned_first + all_cached;
    assert_eq!(ws.stats(), expected);
    // Editing one kernel recompiles exactly that one (its PTX and cubins for the two
    // architectures, its host code); crate b's build script does not run.
    let f = ws.dir.path().join("a/kernels/saxpy.rs");
    std::fs::write(&f, std::fs::read_to_string(&f).unwrap().replace("a * x[i] + y[i]", "a * x[i] + y[i] + 0.0")).unwrap();
    ws.build();
    expected = expected + lookups(kernels, 1, cubins) + lookups_sm90(0, cubins);
    assert_eq!(ws.stats(), expected);
    // A variable the step reads through the toolchain lookups re-runs the build scripts.
    let err = ws.build_with(&[("CUDA_PATH", Some("/nonexistent/cuda"))]);
    assert!(err.contains("Compiling demo-a") && err.contains("Compiling demo-b"), "{err}");
    expected = expected + all_cached;
    assert_eq!(ws.stats(), expected);
    // A kache warning inside a build script reaches cargo's output without -vv: here, a cache
    // folder that cannot be created (it would be inside a file).
    let not_a_dir = ws.dir.path().join("a/Cargo.toml").join("cache");
    let err = ws.build_with(&[("KACHE_DIR", Some(not_a_dir.to_str().unwrap())), ("KACHE_QUIET", None)]);
    assert!(err.contains("warning: demo-a@0.1.0: kache: ") && err.contains("continuing without the local cache"), "{err}");
    // A bad kernel fails the build with a located diagnostic, printed before cargo's dump of
    // the build script's output.
    std::fs::write(ws.dir.path().join("b/kernels/bad.rs"), "#[kernel]\npub fn bad(x: &mut [f32]) {\n    x[0] = 1.0f64;\n}\n").unwrap();
    let o = ws.cargo(&["build"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.rs:3:12") && err.contains("mismatched types"), "{err}");
    let first = |needle: &str| err.find(needle).unwrap_or_else(|| panic!("no `{needle}` in:\n{err}"));
    assert!(first("error: demo-b@0.1.0: ") < first("failed to run custom build command"), "{err}");
    assert!(first("bad.rs:3:12") < first("failed to run custom build command"), "{err}");
    // An unbound global is a build error that says to use the JIT.
    std::fs::write(ws.dir.path().join("b/kernels/bad.rs"), "#[kernel]\npub fn bad(x: &mut [f32]) {\n    x[0] = PRICES[0];\n}\n").unwrap();
    let o = ws.cargo(&["build"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.rs:3:12") && err.contains("kache::Jit"), "{err}");
}

/// Tunes crate a's `axpy_tuned` (kernels/tuned.rs) for 1,000 elements on the host backend
/// through the JIT, into the cache its builds use, making ITEMS = 2, BLOCK = 128 the fastest;
/// returns what that counted in the store (its two instances compiled for this CPU).
fn tune_crate_a(ws: &Workspace) -> Counts {
    struct Favour;
    impl kache::LaunchTimer for Favour {
        fn time(
            &self,
            _: &kache::Device,
            c: &kache::TuneCandidate<'_>,
            _: &mut dyn FnMut() -> kache::Result<()>,
        ) -> kache::Result<std::time::Duration> {
            Ok(std::time::Duration::from_micros(if c.description == "ITEMS = 2, BLOCK = 128" { 1 } else { 9 }))
        }
    }
    let jit = kache::Jit::new(kache::Config::in_memory().with_cache_dir(ws.cache.path())).unwrap();
    let k = jit.load_file(ws.dir.path().join("a/kernels/tuned.rs")).unwrap().kernel("axpy_tuned").unwrap();
    let dev = kache::Device::host();
    let x = dev.upload(&vec![1.0f32; 1000]).unwrap();
    let mut y = dev.upload(&vec![1.0f32; 1000]).unwrap();
    let t = k.tuner().timer(Favour).launch(&dev, (2.0f32, &x, &mut y)).unwrap();
    assert_eq!(t.kernel, "axpy_tuned::<2>");
    assert!(matches!(t.source, kache::TuningSource::Tuned(_)));
    drop((k, jit));
    Counts { misses: 2, ..Counts::default() }
}

/// Environment variable names that kache's library reads: the string literal of every direct
/// read (`var`, `var_os`, `env_flag`) and every `KACHE_*` or `CUDA_*` literal (read through a
/// loop or a helper), in the code of `src/` outside the CLI. Compile-time `env!` is left out.
fn variables_read() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut files = vec![root().join("src")];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n == "bin") {
                continue;
            }
            files.extend(std::fs::read_dir(&p).unwrap().flatten().map(|e| e.path()));
            continue;
        }
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for (i, _) in line.match_indices('"') {
                let rest = &line[i + 1..];
                let Some(end) = rest.find('"') else { continue };
                let literal = &rest[..end];
                let before = &line[..i];
                let direct = ["var(", "var_os(", "env_flag("].iter().any(|f| before.ends_with(f));
                let named = (literal.starts_with("KACHE_") || literal.starts_with("CUDA_"))
                    && literal.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if (direct || named) && !before.ends_with("env!(") {
                    names.insert(literal.to_string());
                }
            }
        }
    }
    names
}

#[test]
fn prebuild_tracks_every_environment_variable_kache_reads() {
    let read = variables_read();
    // Cargo sets these for the build script itself (a change of target, flags or package is a
    // new build of the crate anyway); PATH only finds ptxas and the Python prefixes where the
    // wheel may be (docs/prebuild.md says why PATH is not tracked).
    let untracked = [
        "OUT_DIR",
        "CARGO_MANIFEST_DIR",
        "HOST",
        "TARGET",
        "CARGO_CFG_TARGET_ARCH",
        "CARGO_CFG_TARGET_FEATURE",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_PKG_NAME",
        "CARGO_PKG_VERSION",
        "PATH",
        // Like PATH, these only say which Python prefixes to look for NVIDIA's wheel in; the
        // answer is remembered in the cache folder, and what is found is keyed by its content.
        "PYTHONPATH",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "PYENV_ROOT",
        // Read only by unit tests in src/ (a missing libdevice fails them under it).
        "KACHE_REQUIRE_PTXAS",
        // libnvrtc, which kache never loads (toolchain::find_nvrtc is for the benchmarks): no
        // build step depends on it.
        "KACHE_NVRTC",
    ];
    // Read by a dependency (`dirs`, for the default cache folder), not by kache's own code.
    let through_dependencies = ["XDG_CACHE_HOME", "HOME"];
    for known in ["KACHE_ARCH", "KACHE_DIR", "CUDA_HOME", "CUDA_PATH", "KACHE_REMOTE", "OUT_DIR"] {
        assert!(read.contains(known), "the scan misses {known}: {read:?}");
    }
    let tracked: BTreeSet<String> = kache::prebuild::TRACKED_ENV.iter().map(|s| s.to_string()).collect();
    let missing: Vec<_> = read.iter().filter(|v| !tracked.contains(*v) && !untracked.contains(&v.as_str())).collect();
    assert!(missing.is_empty(), "read by kache but not in prebuild::TRACKED_ENV: {missing:?}");
    let stale: Vec<_> = tracked.iter().filter(|v| !read.contains(*v) && !through_dependencies.contains(&v.as_str())).collect();
    assert!(stale.is_empty(), "in prebuild::TRACKED_ENV but read nowhere: {stale:?}");
    let docs = std::fs::read_to_string(root().join("docs/prebuild.md")).unwrap();
    let undocumented: Vec<_> = tracked.iter().filter(|v| !docs.contains(&format!("`{v}`"))).collect();
    assert!(undocumented.is_empty(), "tracked but not in docs/prebuild.md: {undocumented:?}");
    // kache's own variables are in the cache's environment table too.
    let cache_doc = std::fs::read_to_string(root().join("docs/cache.md")).unwrap();
    let environment = &cache_doc[cache_doc.find("## Environment").expect("docs/cache.md has an Environment section")..];
    let unlisted: Vec<_> = read
        .iter()
        .filter(|v| v.starts_with("KACHE_") || v.starts_with("CUDA_"))
        .filter(|v| !environment.contains(&format!("`{v}")))
        .collect();
    assert!(unlisted.is_empty(), "read by kache but not in docs/cache.md's Environment table: {unlisted:?}");
}

/// Runs `c` to its end and returns what it printed, as `Command::output` does; a command still
/// running after `limit` is killed and fails the test with what it had printed, so a stalled
/// cargo is a red test that says where it stalled rather than a suite that never ends.
fn output_within(mut c: Command, limit: std::time::Duration) -> Output {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            v
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            let err = String::from_utf8_lossy(&err.join().unwrap()).into_owned();
            panic!("{c:?} still ran after {limit:?}; killed. Its stderr:\n{err}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() }
}
