//! The prebuild step with real `cargo build`s: a workspace of two crates (copies of
//! examples/prebuild-crate) whose build scripts compile their kernels through one cache.

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
                edit(
                    "filters.rs",
                    "atomic_add(&mut bins[(values[i] as usize) % bins.len()], 1);",
                    "let b = (values[i] as usize) % bins.len();\n        atomic_add(&mut bins[b], 1);",
                );
            }
        }
        std::fs::write(
            dir.path().join("Cargo.toml"),
            "[workspace]\nmembers = [\"a\", \"b\"]\nresolver = \"3\"\n\n[profile.dev]\ndebug = false\n\n[profile.dev.package.\"*\"]\nopt-level = 1\n",
        )
        .unwrap();
        // Dependencies are compiled once and reused across runs of this test.
        let target = root().join("target").join("prebuild-it");
        Workspace { dir, cache: tempfile::tempdir().unwrap(), target }
    }

    fn cargo(&self, args: &[&str]) -> Output {
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(args)
            .current_dir(self.dir.path())
            .env("CARGO_TARGET_DIR", &self.target)
            .env("KACHE_DIR", self.cache.path())
            .env("KACHE_QUIET", "1")
            .env_remove("KACHE_REMOTE")
            .env_remove("KACHE_ARCH")
            .env_remove("RUSTFLAGS")
            .output()
            .unwrap()
    }

    fn build(&self) -> String {
        let o = self.cargo(&["build"]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "cargo build failed:\n{err}");
        err
    }

    fn stats(&self) -> (u64, u64) {
        let o = Command::new(kache_bin()).args(["stats", "--json"]).env("KACHE_DIR", self.cache.path()).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["misses"].as_u64().unwrap(), v["hits"].as_u64().unwrap())
    }
}

#[test]
fn cargo_builds_compile_kernels_once_and_reuse_them() {
    let ws = Workspace::new();
    // First build: both crates' build scripts run (in parallel) against one fresh cache.
    // 2 crates x 3 kernels x 2 architectures.
    ws.build();
    assert_eq!(ws.stats(), (12, 0));
    // The generated launch functions work (host backend here, compiling the embedded source
    // through its own cache; the embedded PTX on a GPU).
    let run_cache = tempfile::tempdir().unwrap();
    for m in ["demo-a", "demo-b"] {
        let o = Command::new(ws.target.join("debug").join(m)).env("KACHE_DIR", run_cache.path()).env("KACHE_QUIET", "1").output().unwrap();
        assert!(o.status.success(), "{m}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stdout).contains("ok (PTX for [\"sm_80\", \"sm_90\"])"));
    }
    // A second build recompiles nothing: cargo does not even run the build scripts.
    let err = ws.build();
    assert!(!err.contains("Compiling demo-"), "{err}");
    assert_eq!(ws.stats(), (12, 0));
    // After cargo clean, every kernel is a cache hit.
    let o = ws.cargo(&["clean", "-p", "demo-a", "-p", "demo-b"]);
    assert!(o.status.success());
    ws.build();
    assert_eq!(ws.stats(), (12, 12));
    // Editing one kernel recompiles exactly that one (for its two architectures).
    let f = ws.dir.path().join("a/kernels/saxpy.rs");
    std::fs::write(&f, std::fs::read_to_string(&f).unwrap().replace("a * x[i] + y[i]", "a * x[i] + y[i] + 0.0")).unwrap();
    ws.build();
    assert_eq!(ws.stats(), (14, 16));
    // A bad kernel fails the build with a located diagnostic.
    std::fs::write(ws.dir.path().join("b/kernels/bad.rs"), "#[kernel]\npub fn bad(x: &mut [f32]) {\n    x[0] = 1.0f64;\n}\n").unwrap();
    let o = ws.cargo(&["build"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.rs:3:12") && err.contains("mismatched types"), "{err}");
    // An unbound global is a build error that says to use the JIT.
    std::fs::write(ws.dir.path().join("b/kernels/bad.rs"), "#[kernel]\npub fn bad(x: &mut [f32]) {\n    x[0] = PRICES[0];\n}\n").unwrap();
    let o = ws.cargo(&["build"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("bad.rs:3:12") && err.contains("kache::Jit"), "{err}");
}
