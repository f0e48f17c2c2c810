//! Tests: what kache prints on stderr, through the `kache` command (a fresh process each, since
//! the environment is read once per process): warnings as `kache: warning: ...` by default,
//! `KACHE_QUIET` and `KACHE_LOG` filtering them, `KACHE_LOG` and `-v` asking for debug records.

use std::path::Path;
use std::process::Command;

use crate::common::kache_bin;

const SAXPY: &str = "#[kernel]\npub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    if i < y.len() { y[i] = a * x[i] + y[i]; }\n}\n";

/// Runs `kache <args> compile saxpy.rs -o -` with the cache in `cache` and `env` set (`None`
/// removes a variable); returns its stderr.
fn compile(work: &Path, cache: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> String {
    let src = work.join("saxpy.rs");
    std::fs::write(&src, SAXPY).unwrap();
    let mut c = Command::new(kache_bin());
    c.args(args).arg("compile").arg(&src).args(["-o", "-"]).env("KACHE_DIR", cache);
    for v in ["KACHE_REMOTE", "KACHE_QUIET", "KACHE_LOG", "KACHE_ARCH"] {
        c.env_remove(v);
    }
    for (k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "kache {args:?} compile failed: {err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains(".entry"), "no PTX on stdout");
    err
}

/// A cache folder that cannot be created (it would be inside a file): every run warns that it
/// continues without the local cache.
fn unusable_cache(work: &Path) -> std::path::PathBuf {
    let file = work.join("a-file");
    std::fs::write(&file, "").unwrap();
    file.join("cache")
}

const WARNING: &str = "kache: warning: ";
const CONTINUING: &str = "continuing without the local cache";

#[test]
fn warnings_reach_stderr_as_before_unless_quiet_or_filtered_out() {
    let work = tempfile::tempdir().unwrap();
    let cache = unusable_cache(work.path());
    let err = compile(work.path(), &cache, &[], &[]);
    assert!(err.contains(WARNING) && err.contains(CONTINUING), "{err}");
    assert!(!err.contains("debug"), "debug records without asking: {err}");
    // A filter of module directives alone keeps the warnings of every other module.
    let err = compile(work.path(), &cache, &[], &[("KACHE_LOG", Some("kache::jit=debug"))]);
    assert!(err.contains(WARNING) && err.contains(CONTINUING), "{err}");
    for (k, v) in [("KACHE_QUIET", "1"), ("KACHE_LOG", "error"), ("KACHE_LOG", "off")] {
        let err = compile(work.path(), &cache, &[], &[(k, Some(v))]);
        assert!(!err.contains("kache:"), "{k}={v} printed: {err}");
    }
}

#[test]
fn kache_log_asks_for_debug_records_by_module() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let err = compile(work.path(), &cache, &[], &[("KACHE_LOG", Some("kache::cache=debug"))]);
    assert!(err.contains("kache: debug: cache: miss "), "{err}");
    assert!(err.contains("kache: debug: cache: store ") && err.contains("(Ptx): saxpy"), "{err}");
    assert!(!err.contains("compiled 'saxpy'"), "a record of kache::jit passed a filter for kache::cache: {err}");
    let err = compile(work.path(), &cache, &[], &[("KACHE_LOG", Some("debug"))]);
    assert!(err.contains("kache: debug: cache: hit ") && err.contains("(Local): saxpy"), "{err}");
    assert!(!err.contains("miss"), "{err}");
    // A filter that does not parse is said so, and warnings stay.
    let err = compile(work.path(), &cache, &[], &[("KACHE_LOG", Some("kache=loud"))]);
    assert!(err.contains("kache: warning: KACHE_LOG=`kache=loud` is not a filter"), "{err}");
}

#[test]
fn verbose_flag_shows_what_the_cache_and_the_compiler_do() {
    let work = tempfile::tempdir().unwrap();
    let cache = work.path().join("cache");
    let err = compile(work.path(), &cache, &["-v"], &[]);
    assert!(err.contains("kache: debug: cache: miss "), "{err}");
    assert!(err.contains("kache: debug: jit::kernel: compiled 'saxpy' for nvptx sm_70 in "), "{err}");
    let err = compile(work.path(), &cache, &["--verbose"], &[]);
    assert!(err.contains("kache: debug: cache: hit ") && !err.contains("compiled 'saxpy'"), "{err}");
    // Without it, a hit prints nothing.
    assert_eq!(compile(work.path(), &cache, &[], &[]), "");
}
