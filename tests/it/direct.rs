//! Direct mode: a request served by its manifest, without parsing or checking, gives what the
//! full path gives; every input flipped is a miss whose output equals a fresh store's; a
//! damaged or outdated manifest is never served.

use std::path::Path;

use kache::cache::{Key, Manifest, envelope};
use kache::{Config, Direct, FileRequest, Jit, Served, Target};

use crate::common::{kache_bin, root};

const ROOT: &str = "mod common;\n\
    #[kernel] pub fn scale(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = common::twice(x[i]) * (RATE as f32); } }\n\
    #[kernel] pub fn shift(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] + (RATE as f32); } }\n";
pub(crate) const COMMON: &str = "pub fn twice(x: f32) -> f32 { 2.0 * x }\n";

/// A source folder with the root file (`k.rs`) and its module (`common.rs`).
pub(crate) fn sources(root_text: &str, common: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("k.rs"), root_text).unwrap();
    std::fs::write(dir.path().join("common.rs"), common).unwrap();
    dir
}

fn config(cache: &Path) -> Config {
    Config::in_memory().with_cache_dir(cache)
}

fn request(target: Target) -> FileRequest {
    FileRequest::new(target).global("RATE", 3.0f32).unwrap()
}

fn sm(a: &str) -> Target {
    Target::Nvptx(kache::Arch::parse(a).unwrap())
}

/// Each kernel's name, key and code.
fn outputs(c: &kache::CompiledFile) -> Vec<(String, Key, Vec<u8>)> {
    c.kernels.iter().map(|k| (k.name().to_string(), k.key(), k.artifact().bytes().to_vec())).collect()
}

/// The request compiled into a fresh store: what any served answer must equal.
fn fresh(config_of: impl Fn(&Path) -> Config, file: &Path, req: &FileRequest) -> Vec<(String, Key, Vec<u8>)> {
    let cache = tempfile::tempdir().unwrap();
    let c = Jit::new(config_of(cache.path())).unwrap().compile_file(file, req).unwrap();
    assert_eq!(c.served, Served::Full);
    outputs(&c)
}

/// A second process (a new JIT on the same store) is served directly, with the same keys and
/// code as the full path, and counts it; the same JIT is served from its memory; the kernels
/// launch.
#[test]
fn a_recorded_request_is_served_directly_with_the_full_paths_output() {
    let src = sources(ROOT, COMMON);
    let file = src.path().join("k.rs");
    let cache = tempfile::tempdir().unwrap();
    for target in [Target::Host, sm("sm_80")] {
        let req = request(target);
        let jit = Jit::new(config(cache.path())).unwrap();
        let first = jit.compile_file(&file, &req).unwrap();
        assert_eq!(first.served, Served::Full);
        assert_eq!(first.kernels.iter().map(|k| k.name()).collect::<Vec<_>>(), ["scale", "shift"]);
        let again = jit.compile_file(&file, &req).unwrap();
        let want = outputs(&first);
        assert_eq!((again.served, outputs(&again)), (Served::Direct, want.clone()));
        // The first JIT gone (its kernels hold it): its bookkeeping is written as it goes, as a
        // process's at exit, and not left to the background writer's timing.
        drop((jit, again, first));
        let other = Jit::new(config(cache.path())).unwrap();
        let served = other.compile_file(&file, &req).unwrap();
        assert_eq!((served.served, outputs(&served)), (Served::Direct, want));
        assert!(matches!(served.kernels[0].origin(), kache::Origin::Cache(kache::cache::Tier::Local)));
        let s = other.cache().stats();
        assert!(s.direct_hits >= 1 && s.direct_misses >= 1, "{s:?}");
        if target == Target::Host {
            let dev = kache::Device::host();
            let mut x = dev.upload(&[1.0f32, 2.0]).unwrap();
            served.kernels[0].launch(&dev, kache::Grid::linear(2, 32), (&mut x,)).unwrap();
            assert_eq!(x.download().unwrap(), vec![6.0, 12.0]);
        }
    }
}

/// Every input of a request, flipped on a store that holds the base request's manifest: a
/// miss (the full path serves it) whose output equals a fresh store's. The base request is
/// still served directly afterwards.
#[test]
fn every_input_flipped_is_a_miss_with_a_fresh_stores_output() {
    let cache = tempfile::tempdir().unwrap();
    let src = sources(ROOT, COMMON);
    let file = src.path().join("k.rs");
    let base = request(Target::Host);
    let base_config = |c: &Path| config(c);
    Jit::new(config(cache.path())).unwrap().compile_file(&file, &base).unwrap();
    let check = |what: &str, config_of: &dyn Fn(&Path) -> Config, file: &Path, req: &FileRequest| {
        let jit = Jit::new(config_of(cache.path())).unwrap();
        let got = jit.compile_file(file, req).unwrap();
        assert_eq!(got.served, Served::Full, "{what}: served directly");
        assert_eq!(outputs(&got), fresh(config_of, file, req), "{what}: not what a fresh store gives");
        // And recorded: served directly now.
        assert_eq!(Jit::new(config_of(cache.path())).unwrap().compile_file(file, req).unwrap().served, Served::Direct, "{what}");
    };
    // The root's content: code, and only formatting (a manifest miss, a semantic hit).
    let edited = sources(&ROOT.replace("2.0 * x", "x").replace("x[i] + (RATE", "x[i] - (RATE"), COMMON);
    check("root code", &base_config, &edited.path().join("k.rs"), &base);
    let spaced = sources(&ROOT.replace("\n#[kernel]", "\n\n#[kernel]"), COMMON);
    check("root formatting", &base_config, &spaced.path().join("k.rs"), &base);
    // Globals: value, type, name, none.
    check("global value", &base_config, &file, &FileRequest::new(Target::Host).global("RATE", 5.0f32).unwrap());
    check("global type", &base_config, &file, &FileRequest::new(Target::Host).global("RATE", 3.0f64).unwrap());
    let renamed = sources(&ROOT.replace("RATE", "GAIN"), COMMON);
    check("global name", &base_config, &renamed.path().join("k.rs"), &FileRequest::new(Target::Host).global("GAIN", 3.0f32).unwrap());
    // Kernels asked for.
    check("kernels", &base_config, &file, &request(Target::Host).kernel("shift"));
    // Target and code generation options.
    check("target", &base_config, &file, &request(sm("sm_80")));
    check("arch", &base_config, &file, &request(sm("sm_90")));
    check("fmad", &|c: &Path| config(c).fmad(false), &file, &base);
    check("opt level", &|c: &Path| Config { opt_level: 1, ..config(c) }, &file, &base);
    check("fast math", &|c: &Path| Config { fast_math: true, ..config(c) }, &file, &base);
    check("bounds checks", &base_config, &file, &base.clone().unchecked());
    // Salt and toolchain.
    check("salt", &|c: &Path| Config { salt: "other".into(), ..config(c) }, &file, &base);
    let toolchain =
        |c: &Path| Config { toolchain: kache::cache::Toolchain { llvm: "19.0.0-other".into(), ..Default::default() }, ..config(c) };
    check("toolchain", &toolchain, &file, &base);
    // The base request is still served directly.
    assert_eq!(Jit::new(config(cache.path())).unwrap().compile_file(&file, &base).unwrap().served, Served::Direct);
    // A module file's content, changed in place (same name, same size), and back: the
    // manifest names one version of it (the last compiled), so each change is a miss.
    std::fs::write(src.path().join("common.rs"), COMMON.replace("2.0", "4.0")).unwrap();
    check("module file", &base_config, &file, &base);
    std::fs::write(src.path().join("common.rs"), COMMON).unwrap();
    check("module file restored", &base_config, &file, &base);
}

/// Bounds-checked and unchecked code of one file are two manifests leading to two entries:
/// each served directly gives its own code (the checked one runs through the safe launch, the
/// unchecked one only through `launch_unchecked`), never the other's. A fault of the checked
/// kernel served directly names the array and the source location, as the full path's does.
#[test]
fn checked_and_unchecked_requests_never_serve_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("oob.rs");
    std::fs::write(
        &file,
        "#[kernel]\npub fn k(x: &[f32], y: &mut [f32]) {\n    let i = global_id_x();\n    if i < y.len() { y[i] = x[i]; }\n}\n",
    )
    .unwrap();
    let cache = tempfile::tempdir().unwrap();
    let checked = FileRequest::new(Target::Host);
    let unchecked = FileRequest::new(Target::Host).unchecked();
    let full_checked = Jit::new(config(cache.path())).unwrap().compile_file(&file, &checked).unwrap();
    let full_unchecked = Jit::new(config(cache.path())).unwrap().compile_file(&file, &unchecked).unwrap();
    assert_eq!((full_checked.served, full_unchecked.served), (Served::Full, Served::Full));
    assert_ne!(full_checked.kernels[0].key(), full_unchecked.kernels[0].key());
    assert_ne!(full_checked.kernels[0].artifact().bytes(), full_unchecked.kernels[0].artifact().bytes());
    let jit = Jit::new(config(cache.path())).unwrap();
    let c = jit.compile_file(&file, &checked).unwrap();
    let u = jit.compile_file(&file, &unchecked).unwrap();
    assert_eq!((c.served, outputs(&c)), (Served::Direct, outputs(&full_checked)));
    assert_eq!((u.served, outputs(&u)), (Served::Direct, outputs(&full_unchecked)));
    assert!(c.kernels[0].is_checked() && !u.kernels[0].is_checked());
    let dev = kache::Device::host();
    let x = dev.upload(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let mut y = dev.alloc::<f32>(&[4]).unwrap();
    assert!(matches!(u.kernels[0].launch(&dev, kache::Grid::linear(4, 4), (&x, &mut y)), Err(kache::Error::BadLaunch(_))));
    // SAFETY: x and y both have 4 elements and the grid has 4 threads: every access is in bounds.
    unsafe { u.kernels[0].launch_unchecked(&dev, kache::Grid::linear(4, 4), (&x, &mut y)).unwrap() };
    assert_eq!(y.download().unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    // Out of bounds: the same report from a kernel served directly as from the full path.
    let mut y8 = dev.alloc::<f32>(&[8]).unwrap();
    let served = c.kernels[0].launch(&dev, kache::Grid::linear(8, 8), (&x, &mut y8)).unwrap_err();
    let full = full_checked.kernels[0].launch(&dev, kache::Grid::linear(8, 8), (&x, &mut y8)).unwrap_err();
    match (&served, &full) {
        (kache::Error::Launch { array: a, location: la, .. }, kache::Error::Launch { array: b, location: lb, .. }) => {
            assert_eq!((a.as_str(), la.as_deref()), ("parameter `x`", Some(file.display().to_string() + ":4:29").as_deref()));
            assert_eq!((a, la), (b, lb));
        }
        other => panic!("expected two launch faults, got {other:?}"),
    }
}

/// A module file that was absent when the manifest was recorded (`util.rs`, where `util/mod.rs`
/// was used) appearing is a miss: the lookup never takes the manifest's word for it.
#[test]
fn a_module_file_appearing_is_a_miss() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("util")).unwrap();
    std::fs::write(dir.path().join("util/mod.rs"), COMMON).unwrap();
    let file = dir.path().join("k.rs");
    std::fs::write(&file, "mod util;\n#[kernel] pub fn k(x: &mut [f32]) { x[0] = util::twice(x[0]); }\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let req = FileRequest::new(Target::Host);
    assert_eq!(Jit::new(config(cache.path())).unwrap().compile_file(&file, &req).unwrap().served, Served::Full);
    assert_eq!(Jit::new(config(cache.path())).unwrap().compile_file(&file, &req).unwrap().served, Served::Direct);
    std::fs::write(dir.path().join("util.rs"), COMMON).unwrap();
    match Jit::new(config(cache.path())).unwrap().direct_file(&file, &req).unwrap() {
        Direct::Miss(m) => assert!(m.why().contains("util.rs"), "{}", m.why()),
        Direct::Hit(_) => panic!("served directly though util.rs appeared"),
    }
}

/// The manifest's file, by its key (manifests live beside the entries, not among them).
fn object(cache: &Path, key: &Key) -> std::path::PathBuf {
    let hex = key.hex();
    cache.join(format!("v{}", kache::cache::key::KEY_SCHEMA)).join("manifests").join(&hex[..2]).join(&hex)
}

fn manifest_key(cache: &Path, file: &Path, req: &FileRequest) -> Key {
    Jit::new(config(cache)).unwrap().explain_direct(file, req).unwrap().manifest.unwrap().key
}

/// A damaged manifest does not verify: counted as a bad entry, the full path serves the request
/// with the right output and records it again.
#[test]
fn a_damaged_manifest_is_a_miss_and_is_rewritten() {
    let src = sources(ROOT, COMMON);
    let file = src.path().join("k.rs");
    let cache = tempfile::tempdir().unwrap();
    let req = request(Target::Host);
    let first = Jit::new(config(cache.path())).unwrap().compile_file(&file, &req).unwrap();
    let path = object(cache.path(), &manifest_key(cache.path(), &file, &req));
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 3] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let jit = Jit::new(config(cache.path())).unwrap();
    let got = jit.compile_file(&file, &req).unwrap();
    assert_eq!((got.served, outputs(&got)), (Served::Full, outputs(&first)));
    assert!(jit.cache().stats().bad_entries >= 1);
    assert_eq!(Jit::new(config(cache.path())).unwrap().compile_file(&file, &req).unwrap().served, Served::Direct);
}

/// A manifest whose kernels were keyed with another libdevice (re-sealed, so that it
/// verifies) is not served: libdevice is checked by content on every direct lookup.
#[test]
fn a_manifest_of_another_libdevice_is_not_served() {
    if crate::common::libdevice().is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("e.rs");
    std::fs::write(&file, "#[kernel] pub fn e(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = x[i].exp(); } }\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let req = FileRequest::new(sm("sm_80"));
    Jit::new(config(cache.path())).unwrap().compile_file(&file, &req).unwrap();
    let key = manifest_key(cache.path(), &file, &req);
    let path = object(cache.path(), &key);
    let bytes = std::fs::read(&path).unwrap();
    let (meta, payload) = envelope::decode(&bytes, Some(&key)).unwrap();
    let mut m = Manifest::decode(payload).unwrap();
    assert!(m.kernels[0].libdevice.is_some(), "the kernel links libdevice");
    m.kernels[0].libdevice = Some([9; 32]);
    std::fs::write(&path, envelope::encode(&meta, &m.encode())).unwrap();
    match Jit::new(config(cache.path())).unwrap().direct_file(&file, &req).unwrap() {
        Direct::Miss(miss) => assert!(miss.why().contains("libdevice"), "{}", miss.why()),
        Direct::Hit(_) => panic!("served a manifest keyed with another libdevice"),
    }
}

/// A device array bound: never persisted, so never served directly, and said so.
#[test]
fn device_arrays_bound_are_never_served_directly() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("d.rs");
    std::fs::write(&file, "#[kernel] pub fn d(x: &mut [f32]) { x[0] = TABLE[0]; }\n").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let dev = kache::Device::host();
    let table = dev.upload(&[4.0f32]).unwrap();
    let req = FileRequest::new(Target::Host).global("TABLE", &table).unwrap();
    let jit = Jit::new(config(cache.path())).unwrap();
    for _ in 0..2 {
        assert_eq!(jit.compile_file(&file, &req).unwrap().served, Served::Full);
    }
    let e = jit.explain_direct(&file, &req).unwrap();
    assert!(e.manifest.is_none() && e.why.contains("device array"), "{e:?}");
}

/// `kache compile` serves a second run directly (`-v` says so) with the same output, and
/// `kache explain` says which path serves it, before and after.
#[test]
fn the_command_serves_directly_and_explain_says_which_path() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let saxpy = root().join("examples/kernels/saxpy.rs");
    let kache = |args: &[&str]| {
        let o = std::process::Command::new(kache_bin())
            .env("KACHE_DIR", cache.path())
            .env_remove("KACHE_SALT")
            .env_remove("KACHE_ARCH")
            .env_remove("KACHE_REMOTE")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let file = saxpy.to_str().unwrap();
    let (before, _) = kache(&["explain", file]);
    assert!(before.contains("served by: the full path") && before.contains("no manifest"), "{before}");
    let a = work.path().join("a.ptx");
    let b = work.path().join("b.ptx");
    let (_, log) = kache(&["-v", "compile", file, "-o", a.to_str().unwrap()]);
    assert!(log.contains("direct miss"), "{log}");
    let (_, log) = kache(&["-v", "compile", file, "-o", b.to_str().unwrap()]);
    assert!(log.contains("direct hit"), "{log}");
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let (after, _) = kache(&["explain", file]);
    assert!(after.contains("served by: direct mode"), "{after}");
}

/// A manifest is no entry: `stats` counts only the kernels' entries and `ls` lists only them;
/// `clear` and `gc` remove the manifest too, so the next request runs the full path.
#[test]
fn manifests_are_not_entries_and_clear_and_gc_remove_them() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let kache = |args: &[&str]| {
        let o = std::process::Command::new(kache_bin())
            .env("KACHE_DIR", cache.path())
            .env_remove("KACHE_SALT")
            .env_remove("KACHE_ARCH")
            .env_remove("KACHE_REMOTE")
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let file = root().join("examples/kernels/saxpy.rs");
    let file = file.to_str().unwrap();
    let out = work.path().join("a.ptx");
    let compile = || kache(&["compile", file, "-o", out.to_str().unwrap()]);
    let manifests = cache.path().join(format!("v{}", kache::cache::key::KEY_SCHEMA)).join("manifests");
    let count = |dir: &Path| walkdir_files(dir);
    compile();
    assert_eq!(count(&manifests), 1);
    let stats: serde_json::Value = serde_json::from_str(&kache(&["stats", "--json"])).unwrap();
    assert_eq!(stats["entries"].as_u64(), Some(1), "{stats}");
    let ls: serde_json::Value = serde_json::from_str(&kache(&["ls", "--json"])).unwrap();
    assert!(ls.as_array().unwrap().iter().all(|e| e["kind"] != "Manifest"), "{ls}");
    assert!(kache(&["explain", file]).contains("served by: direct mode"));
    kache(&["clear"]);
    assert_eq!(count(&manifests), 0);
    assert!(kache(&["explain", file]).contains("served by: the full path"));
    compile();
    assert_eq!(count(&manifests), 1);
    kache(&["gc"]);
    assert_eq!(count(&manifests), 0);
    assert!(kache(&["explain", file]).contains("served by: the full path"));
}

/// How many files are under `dir` (none where it does not exist).
fn walkdir_files(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else { return 0 };
    rd.flatten().map(|e| if e.file_type().unwrap().is_dir() { walkdir_files(&e.path()) } else { 1 }).sum()
}

/// In one JIT, a source text asked for again is served from memory without hashing it again,
/// and a text of the same length one byte apart (what a digest remembered by length or by
/// address would confuse) is a miss with its own code, equal to a fresh store's.
#[test]
fn the_same_jit_tells_texts_of_the_same_length_apart() {
    let text =
        |c: char| format!("#[kernel] pub fn k(x: &mut [f32]) {{ let i = global_id_x(); if i < x.len() {{ x[i] = x[i] * {c}.0; }} }}\n");
    let (two, three) = (text('2'), text('3'));
    assert_eq!(two.len(), three.len());
    let cache = tempfile::tempdir().unwrap();
    let jit = Jit::new(config(cache.path())).unwrap();
    let req = FileRequest::new(Target::Host);
    let first = jit.compile_source("k.rs", &two, &req).unwrap();
    assert_eq!(first.served, Served::Full);
    let again = jit.compile_source("k.rs", &two, &req).unwrap();
    assert_eq!(again.served, Served::Direct);
    assert_eq!(outputs(&again), outputs(&first));
    let other = jit.compile_source("k.rs", &three, &req).unwrap();
    assert_eq!(other.served, Served::Full, "a text one byte apart must not be served the first one's kernels");
    assert_ne!(other.kernels[0].key(), first.kernels[0].key());
    let fresh_jit = Jit::new(Config::in_memory()).unwrap();
    assert_eq!(outputs(&other), outputs(&fresh_jit.compile_source("k.rs", &three, &req).unwrap()));
    // The kernels run: x * 3.
    let device = kache::Device::host();
    let mut x = device.upload(&[1.0f32, 2.0]).unwrap();
    other.kernels[0].launch(&device, kache::Grid::linear(2, 32), (&mut x,)).unwrap();
    assert_eq!(x.download().unwrap(), vec![3.0, 6.0]);
    assert_eq!(jit.compile_source("k.rs", &three, &req).unwrap().served, Served::Direct);
}
