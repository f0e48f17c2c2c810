//! The persistent cache: keys, the writer that never persists device pointers, integrity,
//! recovery, size, many processes, crash safety.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use kache::cache::key::KEY_SCHEMA;
use kache::cache::{Key, LocalStore, Lookup, envelope};
use kache::{Arch, Config, Device, Grid, Jit, Layout, Origin, Specialization, Target};
use proptest::prelude::*;

use crate::common::{disk_jit, fixture, kache_bin, memory_jit};

use crate::capture_scenarios as scenarios;

const SM90: Target = Target::Nvptx(Arch { sm: 90, accelerated: false });

fn key_of(jit: &Jit, name: &str, src: &str, kernel: &str, target: Target) -> Key {
    let k = jit.load_source(name, src).unwrap().kernel(kernel).unwrap();
    let spec = Specialization::uniform(k.program(), Layout::C);
    k.explain(target, &spec).unwrap().key
}

const BASE: &str = r#"
const GAIN: f32 = 2.0;
const UNUSED: i32 = 7;

fn helper(v: f32) -> f32 {
    let t = v * GAIN;
    t + 1.0
}

fn unrelated(x: i32) -> i32 { x * UNUSED }

#[kernel]
pub fn k(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        let acc = helper(x[i]);
        y[i] = acc;
    }
}
"#;

/// Edits that must not change the key: comments, whitespace, local names, unrelated items.
fn neutral() -> impl Strategy<Value = String> {
    let lines: Vec<String> = BASE.lines().map(str::to_string).collect();
    let n = lines.len();
    (0..n, 0usize..6, "[a-z ]{0,12}", 1usize..4).prop_map(move |(at, kind, text, reps)| {
        let mut l = lines.clone();
        match kind {
            0 => l.insert(at, format!("// {text}")),
            1 => l.insert(at, format!("/* {text} */")),
            2 => l[at] = format!("{}{}", " ".repeat(reps * 4), l[at].trim_start()),
            3 => l.insert(at, String::new()),
            4 => l.push(format!("fn extra_{}() -> u32 {{ {} }}", reps, reps)),
            _ => {
                let joined = l.join("\n").replace("acc", &format!("acc_{}", text.replace(' ', "_")));
                return joined;
            }
        }
        l.join("\n")
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn key_ignores_comments_whitespace_names_and_unrelated_items(src in neutral(), file in "[a-z]{1,8}\\.rs") {
        let jit = memory_jit();
        let base = key_of(&jit, "base.rs", BASE, "k", SM90);
        prop_assert_eq!(key_of(&jit, &file, &src, "k", SM90), base);
    }
}

#[test]
fn key_changes_when_any_keyed_input_changes() {
    let jit = memory_jit();
    let base = key_of(&jit, "k.rs", BASE, "k", SM90);
    let edits = [
        ("literal", BASE.replace("t + 1.0", "t + 1.5")),
        ("operator", BASE.replace("t + 1.0", "t - 1.0")),
        ("reached const", BASE.replace("GAIN: f32 = 2.0", "GAIN: f32 = 3.0")),
        ("statement", BASE.replace("y[i] = acc;", "y[i] = acc; y[i] += 0.0;")),
        ("device fn name", BASE.replace("helper", "helper2")),
        ("param type", BASE.replace("x: &[f32]", "x: &mut [f32]")),
        ("condition", BASE.replace("i < y.len()", "i <= y.len()")),
    ];
    let mut seen = vec![base];
    for (what, src) in &edits {
        let k = key_of(&jit, "k.rs", src, "k", SM90);
        assert!(!seen.contains(&k), "{what}: key did not change");
        seen.push(k);
    }
    // Target and options.
    for t in [Target::Nvptx(Arch::parse("sm_80").unwrap()), Target::Nvptx(Arch::parse("sm_90a").unwrap()), Target::Host] {
        let k = key_of(&jit, "k.rs", BASE, "k", t);
        assert!(!seen.contains(&k), "{t}: key did not change");
        seen.push(k);
    }
    for cfg in [
        Config { opt_level: 1, ..Config::in_memory() },
        Config { fast_math: true, ..Config::in_memory() },
        Config { salt: "abandon".into(), ..Config::in_memory() },
    ] {
        let k = key_of(&Jit::new(cfg.clone()).unwrap(), "k.rs", BASE, "k", SM90);
        assert!(!seen.contains(&k), "{cfg:?}: key did not change");
        seen.push(k);
    }
    // Specialisation.
    let kern = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
    let f = kern.explain(SM90, &Specialization::uniform(kern.program(), Layout::F)).unwrap().key;
    assert!(!seen.contains(&f));
    seen.push(f);
    // Captured host values by content.
    let src = "#[kernel] pub fn k(o: &mut [f32]) { o[0] = T[1] * S; }";
    let m = jit.load_source("c.rs", src).unwrap();
    let key = |t: Vec<f32>, s: f32| {
        let k = m.with_global("T", t).unwrap().with_global("S", s).unwrap().kernel("k").unwrap();
        k.explain(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap().key
    };
    let k1 = key(vec![1.0, 2.0], 3.0);
    assert_eq!(k1, key(vec![1.0, 2.0], 3.0), "same values, same key");
    assert_ne!(k1, key(vec![1.0, 2.5], 3.0), "host array content");
    assert_ne!(k1, key(vec![1.0, 2.0, 0.0], 3.0), "host array shape");
    assert_ne!(k1, key(vec![1.0, 2.0], 3.5), "host scalar");
    assert_ne!(k1, key(vec![1.0, 2.0], -0.0f32 + 3.0 + f32::EPSILON * 2.0), "scalar bits");
}

#[test]
fn explain_lists_each_component() {
    let jit = memory_jit();
    let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
    let d = k.explain(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    let names: Vec<&str> = d.components.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["schema", "toolchain", "target", "code", "specialization", "captures", "libdevice", "salt"]);
}

#[test]
fn second_jit_on_the_same_store_hits_without_compiling() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    let run = |expect_cached: bool| {
        let jit = disk_jit(dir.path());
        let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
        for target in [SM90, Target::Host] {
            let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).unwrap();
            if expect_cached {
                assert_eq!(c.origin(), Origin::Cache(kache::cache::Tier::Local), "{target}");
            } else {
                assert!(matches!(c.origin(), Origin::Compiled { .. }), "{target}");
            }
        }
        let x = dev.upload(&[1.0f32, 2.0]).unwrap();
        let mut y = dev.alloc::<f32>(&[2]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (&x, &mut y)).unwrap();
        assert_eq!(y.download().unwrap(), vec![3.0, 5.0]);
    };
    run(false);
    run(true);
    assert!(dir.path().join("CACHEDIR.TAG").is_file());
    assert!(dir.path().join(format!("v{KEY_SCHEMA}")).join("db").is_dir());
}

pub(crate) fn all_store_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        if let Ok(b) = std::fs::read(&entry) {
            out.extend_from_slice(&b);
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                v.extend(walk(&p));
            } else {
                v.push(p);
            }
        }
    }
    v
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.len() <= hay.len() && hay.windows(needle.len()).any(|w| w == needle)
}

pub(crate) fn assert_no_pointer(bytes: &[u8], ptrs: &[u64]) {
    for &p in ptrs {
        let forms: Vec<Vec<u8>> = vec![
            p.to_le_bytes().to_vec(),
            p.to_string().into_bytes(),
            format!("{p:x}").into_bytes(),
            format!("{p:X}").into_bytes(),
            format!("{:#x}", p).into_bytes(),
        ];
        for f in forms {
            assert!(!contains(bytes, &f), "device pointer {p:#x} found in the store as {:?}", String::from_utf8_lossy(&f));
        }
    }
}

#[test]
fn every_capture_scenario_with_the_cache_on_leaves_no_device_pointer_in_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let dev = Device::host();
    scenarios::JIT.with(|j| *j.borrow_mut() = Some(disk_jit(dir.path())));
    for (name, f) in scenarios::ALL {
        for w in [scenarios::Wrap::Kache, scenarios::Wrap::Foreign] {
            f(&dev, w).unwrap_or_else(|e| panic!("{name} ({w:?}): {e}"));
        }
    }
    let ptrs = scenarios::POINTERS.with(|p| p.borrow().clone());
    assert!(ptrs.len() > 30, "scenarios recorded {} pointers", ptrs.len());
    // Also compile device-capturing kernels for the GPU target with the cache on.
    let jit = scenarios::JIT.with(|j| j.borrow().clone()).unwrap();
    let a = dev.upload(&[1.0f32, 2.0]).unwrap();
    let src = "fn f(i: usize) -> f32 { G[i] } #[kernel] pub fn k(o: &mut [f32]) { o[0] = f(0); }";
    let k = jit.load_source("g.rs", src).unwrap().with_global("G", &a).unwrap().kernel("k").unwrap();
    let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    assert!(c.ptx().unwrap().contains(&a.device_ptr().to_string()), "the PTX embeds the pointer (sanity check of the scan)");
    scenarios::JIT.with(|j| *j.borrow_mut() = None);
    let stats = jit.cache().stats();
    assert!(stats.not_persisted > 0, "{stats:?}");
    assert!(stats.entries > 0, "host-only kernels were persisted: {stats:?}");
    drop(jit);
    let mut ptrs = ptrs;
    ptrs.push(a.device_ptr());
    assert_no_pointer(&all_store_bytes(dir.path()), &ptrs);
}

#[test]
fn strict_mode_makes_not_persisted_an_error() {
    let dev = Device::host();
    let a = dev.upload(&[1.0f32]).unwrap();
    let jit = Jit::new(Config { strict: true, ..Config::in_memory() }).unwrap();
    let k = jit
        .load_source("s.rs", "#[kernel] pub fn k(o: &mut [f32]) { o[0] = G[0]; }")
        .unwrap()
        .with_global("G", &a)
        .unwrap()
        .kernel("k")
        .unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    let e = k.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("kernel 'k' is not cached on disk: it captures device array 'G' (global)"), "{msg}");
    assert!(msg.contains("Pass the array as a kernel argument, or set KACHE_CAPTURES=relocatable, to make it cacheable."), "{msg}");
}

#[test]
fn device_capturing_kernel_lives_in_memory_keyed_by_the_array() {
    let dev = Device::host();
    let jit = memory_jit();
    let a = dev.upload(&[1.0f32]).unwrap();
    let b = dev.upload(&[2.0f32]).unwrap();
    let src = "#[kernel] pub fn k(o: &mut [f32]) { o[0] = G[0]; }";
    let m = jit.load_source("m.rs", src).unwrap();
    let ka = m.with_global("G", &a).unwrap().kernel("k").unwrap();
    let ca = ka.compile_for(&dev).unwrap();
    // Another module bound to the same array finds the same compiled kernel in memory.
    let ka2 = jit.load_source("other-name.rs", src).unwrap().with_global("G", &a).unwrap().kernel("k").unwrap();
    let ca2 = ka2.compile_for(&dev).unwrap();
    assert!(std::sync::Arc::ptr_eq(&ca, &ca2));
    // Another array: another kernel.
    let cb = m.with_global("G", &b).unwrap().kernel("k").unwrap().compile_for(&dev).unwrap();
    assert_ne!(ca.key(), cb.key());
    let s = jit.cache().stats();
    assert_eq!(s.not_persisted, 2, "{s:?}");
    assert!(s.not_persisted_reasons.iter().all(|r| r.contains("'G' (global)")));
}

fn corrupt_entries(dir: &Path, f: impl Fn(&mut Vec<u8>)) -> usize {
    let store = LocalStore::new(dir, Duration::from_secs(5), 1 << 30).unwrap();
    let recs = store.records();
    for r in &recs {
        let mut b = store.get(&r.key).unwrap();
        f(&mut b);
        store.write_object(&r.key, &b).unwrap();
    }
    recs.len()
}

#[test]
fn bad_entries_are_counted_recompiled_and_overwritten() {
    type Corruption = (&'static str, fn(&mut Vec<u8>));
    let cases: [Corruption; 5] = [
        ("flipped payload bit", |b| {
            let n = b.len();
            b[n - 3] ^= 0x10;
        }),
        ("flipped header bit", |b| b[20] ^= 1),
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("other envelope version", |b| b[8] = 9),
        ("garbage", |b| *b = b"not an entry at all".to_vec()),
    ];
    for (what, f) in cases {
        let dir = tempfile::tempdir().unwrap();
        let fresh = {
            let jit = disk_jit(dir.path());
            let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
            k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap().ptx().unwrap().to_string()
        };
        assert_eq!(corrupt_entries(dir.path(), f), 1);
        let jit = disk_jit(dir.path());
        let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
        let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        assert!(matches!(c.origin(), Origin::Compiled { .. }), "{what}: a bad entry was loaded");
        assert_eq!(c.ptx().unwrap(), fresh, "{what}");
        assert_eq!(jit.cache().stats().bad_entries, 1, "{what}");
        drop(jit);
        // Overwritten: the next process hits.
        let jit = disk_jit(dir.path());
        let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
        let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        assert_eq!(c.origin(), Origin::Cache(kache::cache::Tier::Local), "{what}: not overwritten");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

#[test]
fn a_store_that_cannot_be_opened_is_moved_aside_and_recreated() {
    for fixture_name in ["garbage-file-as-store", "garbage-files-in-store", "future-format"] {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&fixture("stores").join(fixture_name), dir.path());
        let jit = disk_jit(dir.path());
        let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
        let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        assert!(c.ptx().unwrap().contains(".entry k"), "{fixture_name}");
        // The cache writes its bookkeeping (which opens the catalogue) off the compile path, and
        // at the latest when it goes away with the last kernel of its JIT.
        drop((c, k, jit));
        let jit = disk_jit(dir.path());
        let k = jit.load_source("k.rs", BASE).unwrap().kernel("k").unwrap();
        let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        assert_eq!(c.origin(), Origin::Cache(kache::cache::Tier::Local), "{fixture_name}: the recreated store does not work");
        let aside: Vec<_> = std::fs::read_dir(dir.path().join(format!("v{KEY_SCHEMA}")))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with("db.broken"))
            .collect();
        assert_eq!(aside.len(), 1, "{fixture_name}: the broken store was not kept aside");
    }
}

#[test]
fn old_format_entries_in_fixture_stores_are_never_misread() {
    // Stores written with other envelope versions and bit-flipped/truncated payloads: `verify`
    // drops exactly the bad ones, and nothing from them is ever loaded.
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("stores").join("bad-entries"), dir.path());
    let store = LocalStore::new(dir.path(), Duration::from_secs(5), 1 << 30).unwrap();
    let (mut good, mut bad) = (0, 0);
    for r in store.records() {
        match envelope::decode(&store.get(&r.key).unwrap(), Some(&r.key)) {
            Ok(_) => good += 1,
            Err(_) => bad += 1,
        }
    }
    let manifest = std::fs::read_to_string(fixture("stores").join("bad-entries").join("MANIFEST")).unwrap();
    let want_bad = manifest.lines().filter(|l| l.starts_with("bad ")).count();
    let want_good = manifest.lines().filter(|l| l.starts_with("good ")).count();
    assert_eq!((good, bad), (want_good, want_bad), "{manifest}");
    let out = Command::new(kache_bin()).arg("verify").env("KACHE_DIR", dir.path()).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{} bad (dropped)", want_bad)), "{text}");
    // A lookup of every key in the fixture, good or bad, never returns a bad entry.
    let jit = disk_jit(dir.path());
    for line in manifest.lines() {
        let Some(hex) = line.split_whitespace().nth(1) else { continue };
        let key = Key::from_hex(hex).unwrap();
        if let Lookup::Hit(e, _) = jit.cache().lookup(&key) {
            assert!(line.starts_with("good"), "bad entry {hex} was returned");
            assert_eq!(e.meta.key, key);
        }
    }
}

#[test]
fn size_limit_evicts_least_recently_used_entries() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { max_size: 6 << 10, ..Config::in_memory().with_cache_dir(dir.path()) };
    let jit = Jit::new(cfg.clone()).unwrap();
    let mut keys = Vec::new();
    for i in 0..12 {
        let src =
            format!("#[kernel] pub fn k{i}(o: &mut [f32]) {{ let j = global_id_x(); if j < o.len() {{ o[j] = {i}.0 * o[j] + 1.5; }} }}");
        let k = jit.load_source("k.rs", &src).unwrap().kernel(&format!("k{i}")).unwrap();
        keys.push(k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap().key());
    }
    let s = jit.cache().stats();
    assert!(s.bytes <= 6 << 10, "{s:?}");
    assert!(s.entries < 12, "nothing was evicted: {s:?}");
    drop(jit);
    // The newest entry survived.
    let store = LocalStore::new(dir.path(), Duration::from_secs(5), 6 << 10).unwrap();
    let present = store.get(keys.last().unwrap()).is_some();
    assert!(present);
}

/// A compile returns once its entry's file is in place: another cache on the same store hits it
/// at once, while the first still owes the catalogue its bookkeeping (written off the compile
/// path, by a background thread and when the cache goes away). Every count reaches the store.
#[test]
fn entries_are_visible_when_a_compile_returns_and_their_bookkeeping_follows() {
    let dir = tempfile::tempdir().unwrap();
    let writer = disk_jit(dir.path());
    let mut written = 0;
    let mut kernels = Vec::new();
    for i in 0..12 {
        let src = format!("#[kernel] pub fn k{i}(o: &mut [f32]) {{ let j = global_id_x(); if j < o.len() {{ o[j] = {i}.0 * o[j]; }} }}");
        let k = writer.load_source("k.rs", &src).unwrap().kernel(&format!("k{i}")).unwrap();
        let c = k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        assert!(matches!(c.origin(), Origin::Compiled { .. }));
        written += c.artifact().bytes().len();
        let reader = disk_jit(dir.path());
        let again = reader.load_source("k.rs", &src).unwrap().kernel(&format!("k{i}")).unwrap();
        let hit = again.compile(SM90, &Specialization::uniform(again.program(), Layout::C)).unwrap();
        assert_eq!(hit.origin(), Origin::Cache(kache::cache::Tier::Local), "entry {i} was not in place when its compile returned");
        kernels.push((k, c));
    }
    drop((kernels, writer));
    let o = kache(dir.path()).args(["stats", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["misses"].as_u64(), v["hits"].as_u64(), v["entries"].as_u64()), (Some(12), Some(12), Some(12)), "{v}");
    assert!(v["bytes_written"].as_u64().unwrap() > written as u64, "every entry's write is counted (with its envelope): {v}");
}

fn kache(dir: &Path) -> Command {
    let mut c = Command::new(kache_bin());
    c.env("KACHE_DIR", dir).env_remove("KACHE_REMOTE").env("KACHE_QUIET", "1");
    c
}

pub(crate) fn write_kernels(dir: &Path, n: usize) -> Vec<std::path::PathBuf> {
    (0..n)
        .map(|i| {
            let p = dir.join(format!("k{i}.rs"));
            std::fs::write(
                &p,
                format!(
                    "fn f(x: f32) -> f32 {{ x * {i}.0 + {}.5 }}\n#[kernel]\npub fn k{i}(x: &[f32], y: &mut [f32]) {{ let j = global_id_x(); if j < y.len() {{ y[j] = f(x[j]); }} }}\n",
                    i % 3
                ),
            )
            .unwrap();
            p
        })
        .collect()
}

#[test]
fn sixteen_concurrent_processes_into_one_fresh_store_all_succeed_with_identical_output() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let files = write_kernels(work.path(), 6);
    let mut running = Vec::new();
    for p in 0..16 {
        let out = work.path().join(format!("out{p}"));
        // Overlapping sets: each process runs `kache compile` on 4 of the 6 files in turn.
        let script: Vec<String> = files
            .iter()
            .cycle()
            .skip(p % 6)
            .take(4)
            .map(|f| format!("{} compile {} -o {}/", kache_bin().display(), f.display(), out.display()))
            .collect();
        let child = Command::new("sh")
            .arg("-c")
            .arg(script.join(" && "))
            .env("KACHE_DIR", cache.path())
            .env("KACHE_QUIET", "1")
            .env_remove("KACHE_REMOTE")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        running.push((p, out, child));
    }
    let mut outputs: std::collections::HashMap<String, Vec<u8>> = std::collections::HashMap::new();
    for (p, out, child) in running {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "process {p} failed: {}", String::from_utf8_lossy(&o.stderr));
        for f in std::fs::read_dir(&out).unwrap().flatten() {
            let name = f.file_name().to_string_lossy().into_owned();
            let bytes = std::fs::read(f.path()).unwrap();
            if let Some(prev) = outputs.get(&name) {
                assert_eq!(prev, &bytes, "process {p} produced different output for {name}");
            } else {
                outputs.insert(name, bytes);
            }
        }
    }
    assert_eq!(outputs.len(), 6);
    let s = Command::new(kache_bin()).args(["stats", "--json"]).env("KACHE_DIR", cache.path()).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&s.stdout).unwrap();
    assert_eq!(v["entries"], 6, "{v}");
    assert_eq!(v["bad_entries"], 0, "{v}");
}

/// A cache hit never opens the catalogue (sled): it reads the entry's file and parks its
/// counts and access stamp, and once many parked files have piled up a hit-only process folds
/// them into one, still without the catalogue. The catalogue here is garbage that opening it
/// would move aside; it is still there after 70 hit-only processes (in-process caches here),
/// and `kache stats`, which opens it (moving it aside), then counts every hit.
#[test]
fn hits_never_open_the_catalogue() {
    let cache = tempfile::tempdir().unwrap();
    let src = "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 1.0; }";
    let compile = || {
        let jit = disk_jit(cache.path());
        let k = jit.load_source("k.rs", src).unwrap().kernel("k").unwrap();
        k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap().origin()
    };
    assert!(matches!(compile(), Origin::Compiled { .. }));
    let versioned = cache.path().join(format!("v{KEY_SCHEMA}"));
    let db = versioned.join("db");
    std::fs::remove_dir_all(&db).unwrap();
    std::fs::write(&db, b"not a catalogue").unwrap();
    for _ in 0..70 {
        assert_eq!(compile(), Origin::Cache(kache::cache::Tier::Local));
    }
    assert_eq!(std::fs::read(&db).unwrap(), b"not a catalogue", "a hit opened the catalogue");
    let parked = std::fs::read_dir(versioned.join("parked-stats"))
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert!((1..=64).contains(&parked), "{parked} parked files");
    let o = kache(cache.path()).args(["stats", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // (The first process's miss was counted in the catalogue replaced above.)
    assert_eq!((v["hits"].as_u64(), v["misses"].as_u64()), (Some(70), Some(0)), "{v}");
}

/// Hit-only processes folding the parked files at once (64 already parked, 16 hits finishing
/// together, each in its own cache) claim each file once: no count is lost or counted twice.
#[test]
fn hit_only_processes_folding_parked_files_at_once_count_every_hit_once() {
    let cache = tempfile::tempdir().unwrap();
    let src = "#[kernel] pub fn k(x: &mut [f32]) { x[0] = 2.0; }";
    let compile = || {
        let jit = disk_jit(cache.path());
        let k = jit.load_source("k.rs", src).unwrap().kernel("k").unwrap();
        k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap().origin()
    };
    assert!(matches!(compile(), Origin::Compiled { .. }));
    let parked = cache.path().join(format!("v{KEY_SCHEMA}")).join("parked-stats");
    std::fs::create_dir_all(&parked).unwrap();
    for i in 0..64 {
        std::fs::write(parked.join(format!("earlier-{i}")), "hits 1\nhits_local 1\n").unwrap();
    }
    let start = std::sync::Barrier::new(16);
    std::thread::scope(|s| {
        for _ in 0..16 {
            s.spawn(|| {
                let jit = disk_jit(cache.path());
                let k = jit.load_source("k.rs", src).unwrap().kernel("k").unwrap();
                let spec = Specialization::uniform(k.program(), Layout::C);
                start.wait();
                let origin = k.compile(Target::Nvptx(Arch::parse("sm_80").unwrap()), &spec).unwrap().origin();
                assert_eq!(origin, Origin::Cache(kache::cache::Tier::Local));
            });
        }
    });
    let left = std::fs::read_dir(&parked).unwrap().flatten().filter(|e| !e.file_name().to_string_lossy().starts_with('.')).count();
    assert!(left < 64 + 16, "{left} parked files: none were folded");
    let o = kache(cache.path()).args(["stats", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["hits"].as_u64(), v["hits_local"].as_u64(), v["misses"].as_u64()), (Some(80), Some(80), Some(1)), "{v}");
    assert_eq!(std::fs::read_dir(&parked).unwrap().count(), 0, "stats merged every parked file");
}

#[test]
fn writers_never_wait_for_the_catalogue_and_their_parked_bookkeeping_is_merged_later() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let files = write_kernels(work.path(), 6);
    // Hold the catalogue open in this process (sled locks it exclusively).
    let store = LocalStore::new(cache.path(), Duration::from_secs(5), 1 << 30).unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<()>();
    let holder = std::thread::spawn(move || {
        store
            .batch(|_| {
                ready_tx.send(()).ok();
                rx.recv().ok();
            })
            .unwrap();
    });
    ready_rx.recv().unwrap();
    // A limit that holds about three entries (each is about 1.3 KiB).
    let limit = "4K";
    for f in &files[..5] {
        let out = work.path().join("out.ptx");
        // The lock timeout is long: a writer must not wait for it.
        let t = std::time::Instant::now();
        let o = kache(cache.path())
            .env("KACHE_LOCK_TIMEOUT_MS", "60000")
            .env("KACHE_MAX_SIZE", limit)
            .arg("compile")
            .arg(f)
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(t.elapsed() < Duration::from_secs(30), "the writer waited for the catalogue");
        let stem = f.file_stem().unwrap().to_string_lossy().into_owned();
        assert!(std::fs::read_to_string(&out).unwrap().contains(&format!(".entry {stem}")));
    }
    // Every entry was written without the catalogue.
    let held = LocalStore::new(cache.path(), Duration::from_secs(5), 1 << 30).unwrap();
    assert_eq!(held.records().len(), 5);
    tx.send(()).unwrap();
    holder.join().unwrap();
    // The next writer merges the parked bookkeeping: sizes reach the catalogue, so the size
    // limit evicts; the busy counts reach the statistics.
    let o = kache(cache.path())
        .env("KACHE_MAX_SIZE", limit)
        .arg("compile")
        .arg(&files[5])
        .arg("-o")
        .arg(work.path().join("6.ptx"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = kache(cache.path()).args(["stats", "--json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["busy"].as_u64().unwrap() >= 5, "{v}");
    assert!(v["misses"].as_u64().unwrap() >= 6, "{v}");
    assert!(v["bytes"].as_u64().unwrap() <= 4096, "the limit was not applied to parked writes: {v}");
    assert!(v["entries"].as_u64().unwrap() < 6, "{v}");
    // What is left verifies, and the newest entry survived.
    let o = kache(cache.path()).arg("verify").output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let o = kache(cache.path()).arg("compile").arg(&files[5]).arg("-o").arg(work.path().join("6b.ptx")).output().unwrap();
    assert!(o.status.success());
    let o = kache(cache.path()).args(["stats", "--json"]).output().unwrap();
    let w: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(w["misses"], v["misses"], "the newest entry was evicted: {w}");
}

/// The PTX of each kernel `k<i>` of `files` for sm_70, from a cache-free compile.
fn reference_ptx(files: &[std::path::PathBuf]) -> Vec<String> {
    files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let jit = memory_jit();
            let k = jit.load_file(f).unwrap().kernel(&format!("k{i}")).unwrap();
            k.compile(Target::Nvptx(Arch::parse("sm_70").unwrap()), &Specialization::uniform(k.program(), Layout::C))
                .unwrap()
                .ptx()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Compiles every file with `kache compile` into `out_dir` through the store at `cache` and
/// checks each output against `expected`.
fn compile_all_to(cache: &Path, files: &[std::path::PathBuf], expected: &[String], out_dir: &Path, tag: &str) {
    for (i, f) in files.iter().enumerate() {
        let out = out_dir.join(format!("{tag}{i}.ptx"));
        let o = kache(cache).arg("compile").arg(f).args(["--arch", "sm_70", "-o"]).arg(&out).output().unwrap();
        assert!(o.status.success(), "{tag}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(std::fs::read_to_string(&out).unwrap(), expected[i], "{tag}: kernel {i}");
    }
}

/// A small deterministic random number generator (xorshift64).
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

#[test]
fn sigkilled_writers_never_leave_anything_unverified_behind() {
    let cache = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let files = write_kernels(work.path(), 8);
    // The expected output of every kernel, from a cache-free compile.
    let expected = reference_ptx(&files);
    let mut next = xorshift(0x2545f4914f6cdd1d);
    let mut rand = move |n: u64| next() % n;
    for trial in 0..120 {
        let i = rand(files.len() as u64) as usize;
        let mut child = kache(cache.path())
            .arg("compile")
            .arg(&files[i])
            .arg("--arch")
            .arg("sm_70")
            .arg("-o")
            .arg(work.path().join(format!("t{trial}.ptx")))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_micros(rand(40_000)));
        let _ = child.kill();
        let _ = child.wait();
        if trial % 20 == 19 {
            // The store opens and every entry in it verifies.
            let o = kache(cache.path()).arg("verify").output().unwrap();
            assert!(o.status.success(), "trial {trial}: {}", String::from_utf8_lossy(&o.stderr));
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(text.contains(" 0 bad"), "trial {trial}: {text}");
        }
    }
    // Compiles through the store give correct output.
    compile_all_to(cache.path(), &files, &expected, work.path(), "final");
}

#[test]
fn random_bytes_over_every_file_of_the_store_lose_nothing_but_the_cache() {
    let work = tempfile::tempdir().unwrap();
    let files = write_kernels(work.path(), 4);
    let expected = reference_ptx(&files);
    let compile_all = |cache: &Path, tag: &str| compile_all_to(cache, &files, &expected, work.path(), tag);
    let mut rand = xorshift(0x9e3779b97f4a7c15);
    for round in 0..4 {
        let cache = tempfile::tempdir().unwrap();
        // Entries, a catalogue, and parked bookkeeping (a hit-only process parks its counts).
        compile_all(cache.path(), "fill");
        compile_all(cache.path(), "hit");
        let all = walk(cache.path());
        assert!(all.iter().any(|p| p.to_string_lossy().contains("parked-stats")), "no parked file to damage: {all:?}");
        for p in &all {
            // Same length, shorter, longer, or empty: random bytes every time.
            let len = match round {
                0 => std::fs::metadata(p).unwrap().len() as usize,
                1 => (rand() % 64) as usize,
                2 => std::fs::metadata(p).unwrap().len() as usize + (rand() % 4096) as usize,
                _ => 0,
            };
            let bytes: Vec<u8> = (0..len).map(|_| rand() as u8).collect();
            std::fs::write(p, bytes).unwrap();
        }
        // Every compile still succeeds with the right output; the store heals.
        compile_all(cache.path(), &format!("damaged{round}-"));
        compile_all(cache.path(), &format!("healed{round}-"));
        for cmd in [&["stats", "--json"][..], &["verify"], &["ls"]] {
            let o = kache(cache.path()).args(cmd).output().unwrap();
            assert!(o.status.success(), "round {round}: kache {cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
        }
        let o = kache(cache.path()).args(["stats", "--json"]).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert!(v["hits"].as_u64().unwrap() >= 4, "round {round}: the healed store serves nothing: {v}");
    }
}

#[test]
fn archives_stream_both_ways_refuse_damage_whole_and_concurrent_exports_do_not_collide() {
    use kache::cache::archive::{self, ArchiveError};
    let dir = tempfile::tempdir().unwrap();
    {
        let jit = disk_jit(dir.path());
        for i in 0..3 {
            let src = format!("#[kernel] pub fn k{i}(o: &mut [f32]) {{ o[0] = {i}.5; }}");
            let k = jit.load_source("k.rs", &src).unwrap().kernel(&format!("k{i}")).unwrap();
            k.compile(SM90, &Specialization::uniform(k.program(), Layout::C)).unwrap();
        }
    }
    let store = LocalStore::new(dir.path(), Duration::from_secs(5), 1 << 30).unwrap();
    let keys: Vec<Key> = store.records().iter().map(|r| r.key).collect();
    assert_eq!(keys.len(), 3);
    // Two exports at once whose names share a stem (the old fixed temporary name was
    // `<stem>.partial`, shared by both).
    let out = tempfile::tempdir().unwrap();
    let (a, b) = (out.path().join("cache.kar"), out.path().join("cache.tar"));
    std::thread::scope(|s| {
        for p in [&a, &b] {
            let store = &store;
            s.spawn(move || {
                for _ in 0..5 {
                    assert_eq!(archive::export(store, p, &mut |_, _| {}).unwrap(), 3);
                }
            });
        }
    });
    let names: Vec<_> = std::fs::read_dir(out.path()).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).collect();
    assert_eq!(names.len(), 2, "temporary files left behind: {names:?}");
    for p in [&a, &b] {
        let fresh = tempfile::tempdir().unwrap();
        let other = LocalStore::new(fresh.path(), Duration::from_secs(5), 1 << 30).unwrap();
        let mut seen = 0;
        let done = archive::import(&other, p, &mut |d, t| {
            assert!(d <= t && t == 3);
            seen = d;
        })
        .unwrap();
        assert_eq!((done.stored, done.skipped, seen), (3, 0, 3));
        for k in &keys {
            assert_eq!(other.get(k), store.get(k));
        }
    }
    // Damage anywhere, or a cut, is refused before anything is stored.
    let bytes = std::fs::read(&a).unwrap();
    for (what, damaged) in [
        ("flipped bit", {
            let mut d = bytes.clone();
            d[bytes.len() / 2] ^= 1;
            d
        }),
        ("truncated", bytes[..bytes.len() - 40].to_vec()),
        ("empty", Vec::new()),
    ] {
        std::fs::write(&b, &damaged).unwrap();
        let fresh = tempfile::tempdir().unwrap();
        let other = LocalStore::new(fresh.path(), Duration::from_secs(5), 1 << 30).unwrap();
        let e = archive::import(&other, &b, &mut |_, _| {}).unwrap_err();
        assert!(matches!(e, ArchiveError::Invalid { .. }) && e.is_user_error(), "{what}: {e}");
        assert!(other.records().is_empty(), "{what}: entries of a damaged archive were stored");
    }
    // An archive that cannot be written is a user error, and leaves nothing.
    let e = archive::export(&store, &out.path().join("missing/x.kar"), &mut |_, _| {}).unwrap_err();
    assert!(e.is_user_error(), "{e}");
    assert!(!out.path().join("missing").exists());
}

/// Each scalar type's byte in keys, entries and serialised kernels never changes: the eight
/// types of the first language keep their numbers, the six added after them take new ones.
#[test]
fn scalar_tags_are_stable() {
    use kache::Scalar as S;
    let pinned = [
        (S::Bool, 0),
        (S::I32, 1),
        (S::I64, 2),
        (S::U32, 3),
        (S::U64, 4),
        (S::Usize, 5),
        (S::F32, 6),
        (S::F64, 7),
        (S::I8, 8),
        (S::U8, 9),
        (S::I16, 10),
        (S::U16, 11),
        (S::F16, 12),
        (S::Bf16, 13),
    ];
    assert_eq!(pinned.len(), S::ALL.len(), "a scalar type without a pinned tag");
    for (s, t) in pinned {
        assert_eq!(s.tag(), t, "{s}");
        assert_eq!(s as u8, t, "{s}: `as u8` and tag() disagree");
        assert_eq!(S::from_tag(t), Some(s));
    }
    assert_eq!(S::from_tag(14), None);
}
