//! The Redis tier against real redis-servers started by the tests: sharing, authentication,
//! read-only mode, outages, namespaces, expiry, the time budget, round trips, `kache remote`,
//! and secrets kept out of every message. (TLS: `remote_tls.rs`; clusters: `remote_cluster.rs`;
//! the ACL recipes of docs/remote.md: `remote_acl.rs`.)
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kache::cache::remote::{RemoteConfig, RemoteStore};
use kache::cache::{Counters, Key, Tier};
use kache::{Arch, Config, Device, Grid, Jit, Layout, Origin, Specialization, Target};

use crate::redis_servers::{Proxy, Server, fresh_db, shared};

pub const SECRET: &[u8] = b"a shared secret for the tests 0123";
pub const SECRET_TEXT: &str = "a shared secret for the tests 0123";
const SM80: Target = Target::Nvptx(Arch { sm: 80, accelerated: false });

pub fn remote(url: &str, secret: &[u8], read_only: bool) -> RemoteConfig {
    RemoteConfig::new(url.to_string(), secret.to_vec(), read_only, Duration::from_millis(300)).unwrap()
}

pub fn machine(dir: &Path, rc: RemoteConfig) -> Jit {
    Jit::new(Config { remote: Some(rc), ..Config::in_memory().with_cache_dir(dir) }).unwrap()
}

const SRC: &str = r#"
#[kernel]
pub fn k1(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] * 2.0 + 1.0; } }
#[kernel]
pub fn k2(x: &mut [i64]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] << 3; } }
"#;

pub fn compile_all(jit: &Jit) -> Vec<Origin> {
    let m = jit.load_source("k.rs", SRC).unwrap();
    ["k1", "k2"]
        .iter()
        .map(|n| {
            let k = m.kernel(n).unwrap();
            k.compile(SM80, &Specialization::uniform(k.program(), Layout::C)).unwrap().origin()
        })
        .collect()
}

/// A kernel file of `n` kernels, distinct per `tag`.
pub fn kernel_file(dir: &Path, tag: &str, n: usize) -> std::path::PathBuf {
    let mut src = String::new();
    let salt = tag.bytes().fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(b as u32)) % 1000;
    for i in 0..n {
        src.push_str(&format!(
            "#[kernel] pub fn k{i}(x: &mut [f32]) {{ let j = global_id_x(); if j < x.len() {{ x[j] = x[j] * {i}.5 + {salt}.0; }} }}\n"
        ));
    }
    let path = dir.join(format!("{tag}.rs"));
    std::fs::write(&path, src).unwrap();
    path
}

/// `kache` with a cache folder and the remote's variables given (none inherited).
pub fn kache(cache: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(crate::common::kache_bin());
    c.env("KACHE_DIR", cache).env("NO_COLOR", "1");
    for v in [
        "KACHE_REMOTE",
        "KACHE_REMOTE_KEY",
        "KACHE_REMOTE_READONLY",
        "KACHE_REMOTE_TIMEOUT_MS",
        "KACHE_REMOTE_TTL",
        "KACHE_REMOTE_CA",
        "KACHE_ARCH",
        "KACHE_SALT",
        "KACHE_QUIET",
    ] {
        c.env_remove(v);
    }
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

/// stdout and stderr of a run, for messages.
pub fn said(o: &Output) -> String {
    format!("exit {:?}\nstdout: {}\nstderr: {}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// The warnings a run printed.
pub fn warnings(o: &Output) -> Vec<String> {
    String::from_utf8_lossy(&o.stderr).lines().filter(|l| l.contains("warning")).map(str::to_string).collect()
}

/// `kache compile FILE -o OUT/ --arch sm_80` with `env`; its output.
pub fn compile_file(cache: &Path, file: &Path, env: &[(&str, &str)]) -> Output {
    let out = cache.join("out");
    kache(cache, env).arg("compile").arg(file).arg("--arch").arg("sm_80").arg("-o").arg(&out).output().unwrap()
}

/// `kache stats --json` of a cache folder (no remote).
pub fn local_stats(cache: &Path) -> serde_json::Value {
    let o = kache(cache, &[]).args(["stats", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn two_machines_share_kernels_through_redis() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let origins = compile_all(&machine(a.path(), remote(&r.url(db), SECRET, false)));
    assert!(origins.iter().all(|o| matches!(o, Origin::Compiled { .. })));
    assert_eq!(r.dump(db).len(), 2);
    let second = machine(b.path(), remote(&r.url(db), SECRET, false));
    assert_eq!(compile_all(&second), vec![Origin::Cache(Tier::Remote); 2], "the second machine compiled");
    let s = second.cache().stats();
    assert_eq!(s.hits_remote, 2);
    assert!(s.remote_bytes_read > 0);
    drop(second);
    // Backfilled: the second machine's local store now serves them without the remote.
    let offline = Jit::new(Config::in_memory().with_cache_dir(b.path())).unwrap();
    assert_eq!(compile_all(&offline), vec![Origin::Cache(Tier::Local); 2]);
}

#[test]
fn tampered_and_forged_entries_are_rejected_and_never_loaded() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let a = tempfile::tempdir().unwrap();
    compile_all(&machine(a.path(), remote(&r.url(db), SECRET, false)));
    let mut c = r.connection(db).unwrap();
    let entries = r.dump(db);
    // Tamper with one: change a payload byte, keep the MAC.
    let (k0, mut v0) = entries[0].clone();
    let n = v0.len();
    v0[n - 20] ^= 0x01;
    let _: () = redis::cmd("SET").arg(&k0).arg(v0).query(&mut c).unwrap();
    // Forge the other: a valid entry with a MAC from the wrong secret, under the right name.
    let (k1, v1) = entries[1].clone();
    let forger = RemoteStore::new(remote(&r.url(db), b"the wrong secret, also long enough", false)).unwrap();
    let key = Key::from_hex(k1.rsplit(':').next().unwrap()).unwrap();
    let mut forged = forger.mac(&key, &v1[32..]).to_vec();
    forged.extend_from_slice(&v1[32..]);
    let _: () = redis::cmd("SET").arg(&k1).arg(forged).query(&mut c).unwrap();
    let b = tempfile::tempdir().unwrap();
    let jit = machine(b.path(), remote(&r.url(db), SECRET, false));
    let origins = compile_all(&jit);
    assert!(origins.iter().all(|o| matches!(o, Origin::Compiled { .. })), "{origins:?}");
    let s = jit.cache().stats();
    assert_eq!(s.remote_rejected, 2, "{s:?}");
}

#[test]
fn redis_killed_mid_run_every_compile_still_succeeds() {
    let Some(mut r) = Server::start(&[]) else { return };
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(0), SECRET, false));
    let dev = Device::host();
    let mut results = Vec::new();
    for i in 0..12 {
        if i == 4 {
            r.stop();
        }
        let src = format!("#[kernel] pub fn k(x: &mut [i32]) {{ let j = global_id_x(); if j < x.len() {{ x[j] += {i}; }} }}");
        let k = jit.load_source("k.rs", &src).unwrap().kernel("k").unwrap();
        let mut x = dev.upload(&[1i32, 2]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (&mut x,)).unwrap();
        results.push(x.download().unwrap());
    }
    for (i, v) in results.iter().enumerate() {
        assert_eq!(v, &vec![1 + i as i32, 2 + i as i32]);
    }
    let s = jit.cache().stats();
    // One failure, then the tier rests for the back-off: not one error per kernel.
    assert_eq!(s.remote_errors, 1, "{s:?}");
}

#[test]
fn an_unreachable_or_silent_remote_is_skipped_quickly() {
    // Nothing listens on this port.
    let port = crate::redis_servers::free_port();
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&format!("redis://127.0.0.1:{port}/0"), SECRET, false));
    assert!(compile_all(&jit).iter().all(|o| matches!(o, Origin::Compiled { .. })));
    assert_eq!(jit.cache().stats().remote_errors, 1);
    // A server that accepts connections and never answers: the budget applies.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let _keep = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&format!("redis://127.0.0.1:{port}/0"), SECRET, false));
    let t0 = Instant::now();
    assert!(compile_all(&jit).iter().all(|o| matches!(o, Origin::Compiled { .. })));
    assert!(t0.elapsed() < Duration::from_secs(20), "took {:?}", t0.elapsed());
    assert_eq!(jit.cache().stats().remote_errors, 1);
}

#[test]
fn device_capturing_kernels_leave_nothing_in_redis() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let dev = Device::host();
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(db), SECRET, false));
    let a = dev.upload(&[1.0f32, 2.0]).unwrap();
    let src = r#"
        fn f(i: usize) -> f32 { G[i] }
        #[kernel] pub fn k(o: &mut [f32]) { o[0] = f(0); }
        pub fn make(t: &[f32]) -> impl Kernel { move |o: &mut [f32]| { o[0] = t[1]; } }
    "#;
    let m = jit.load_source("g.rs", src).unwrap().with_global("G", &a).unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    m.kernel("k").unwrap().launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    let k = m.kernel("k").unwrap();
    k.compile(SM80, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    let c = m.closure("make", (&a,)).unwrap();
    c.launch(&dev, Grid::linear(1, 1), (&mut out,)).unwrap();
    c.compile(SM80, &Specialization::uniform(c.program(), Layout::C)).unwrap();
    assert_eq!(out.download().unwrap(), vec![2.0]);
    let p = a.device_ptr();
    for (k, v) in r.dump(db) {
        for needle in [p.to_le_bytes().to_vec(), p.to_string().into_bytes(), format!("{p:x}").into_bytes()] {
            assert!(
                !v.windows(needle.len()).any(|w| w == needle) && !k.as_bytes().windows(needle.len()).any(|w| w == needle),
                "pointer found in redis entry {k}"
            );
        }
    }
    assert!(r.dump(db).is_empty(), "device-capturing kernels were sent to the remote");
}

#[test]
fn read_only_mode_writes_nothing() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(db), SECRET, true));
    compile_all(&jit);
    assert!(r.dump(db).is_empty());
    // But it reads what a writer stored.
    let w = tempfile::tempdir().unwrap();
    compile_all(&machine(w.path(), remote(&r.url(db), SECRET, false)));
    let reader = tempfile::tempdir().unwrap();
    assert_eq!(compile_all(&machine(reader.path(), remote(&r.url(db), SECRET, true))), vec![Origin::Cache(Tier::Remote); 2]);
}

#[test]
fn a_remote_without_a_key_is_refused() {
    let e = RemoteConfig::new("redis://127.0.0.1:6379/0".into(), Vec::new(), false, Duration::from_millis(100)).unwrap_err();
    assert!(e.to_string().contains("KACHE_REMOTE_KEY"), "{e}");
    let e = RemoteConfig::new("http://example".into(), SECRET.to_vec(), false, Duration::from_millis(100)).unwrap_err();
    assert!(e.to_string().contains("redis://"), "{e}");
    // Through the CLI's environment as well: the only configuration errors are a malformed
    // KACHE_REMOTE and a missing key.
    let dir = tempfile::tempdir().unwrap();
    let o = kache(dir.path(), &[("KACHE_REMOTE", "redis://127.0.0.1:1/0")]).arg("stats").output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KACHE_REMOTE_KEY"));
    let o = kache(dir.path(), &[("KACHE_REMOTE", "redis://127.0.0.1:notaport/0"), ("KACHE_REMOTE_KEY", SECRET_TEXT)])
        .arg("stats")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KACHE_REMOTE"), "{}", said(&o));
}

#[test]
fn clients_with_different_keys_never_touch_each_others_entries() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let other: &[u8] = b"another team's secret, 16+ bytes";
    let (a, b, c) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    compile_all(&machine(a.path(), remote(&r.url(db), SECRET, false)));
    let before = r.dump(db);
    assert_eq!(before.len(), 2);
    // A writable client with another key compiles the same kernels: misses (nothing rejected,
    // nothing overwritten), and its entries go to its own namespace.
    let intruder = machine(b.path(), remote(&r.url(db), other, false));
    assert!(compile_all(&intruder).iter().all(|o| matches!(o, Origin::Compiled { .. })));
    let s = intruder.cache().stats();
    assert_eq!((s.remote_rejected, s.hits_remote), (0, 0), "{s:?}");
    let after = r.dump(db);
    assert_eq!(after.len(), 4);
    for entry in &before {
        assert!(after.contains(entry), "an entry of the first namespace changed");
    }
    let ns_a = RemoteStore::new(remote(&r.url(db), SECRET, false)).unwrap();
    let ns_b = RemoteStore::new(remote(&r.url(db), other, false)).unwrap();
    assert_ne!(ns_a.namespace(), ns_b.namespace());
    for (k, _) in &after {
        assert!(k.starts_with(&format!("kache:{}:", ns_a.namespace())) || k.starts_with(&format!("kache:{}:", ns_b.namespace())), "{k}");
        // The namespace is derived from the key, never the key itself.
        assert!(!k.contains("secret"), "{k}");
    }
    // The right key's readers still hit.
    assert_eq!(compile_all(&machine(c.path(), remote(&r.url(db), SECRET, false))), vec![Origin::Cache(Tier::Remote); 2]);
    // `kache remote purge` with the other key removes its entries only.
    let other_text = std::str::from_utf8(other).unwrap();
    let o = kache(a.path(), &[("KACHE_REMOTE", &r.url(db)), ("KACHE_REMOTE_KEY", other_text)]).args(["remote", "purge"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(r.dump(db), before);
}

#[test]
fn entries_expire_after_the_configured_ttl_and_hits_refresh_it() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let mut admin = r.connection(db).unwrap();
    let ttls = |admin: &mut redis::Connection| -> Vec<i64> {
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(admin).unwrap();
        keys.iter().map(|k| redis::cmd("TTL").arg(k).query(admin).unwrap()).collect()
    };
    let dir = tempfile::tempdir().unwrap();
    compile_all(&machine(dir.path(), remote(&r.url(db), SECRET, false)));
    let stored = ttls(&mut admin);
    assert_eq!(stored.len(), 2);
    assert!(stored.iter().all(|t| (2_591_998..=2_592_000).contains(t)), "default TTL: {stored:?}");
    // Shorten them, then hit them from another machine: back to the configured TTL.
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
    for k in &keys {
        let _: i64 = redis::cmd("EXPIRE").arg(k).arg(100).query(&mut admin).unwrap();
    }
    let hit = tempfile::tempdir().unwrap();
    assert_eq!(compile_all(&machine(hit.path(), remote(&r.url(db), SECRET, false))), vec![Origin::Cache(Tier::Remote); 2]);
    assert!(ttls(&mut admin).iter().all(|t| (2_591_998..=2_592_000).contains(t)), "refreshed: {:?}", ttls(&mut admin));
    // A reader configured with another TTL refreshes to its own.
    for k in &keys {
        let _: i64 = redis::cmd("EXPIRE").arg(k).arg(100).query(&mut admin).unwrap();
    }
    let hour = tempfile::tempdir().unwrap();
    compile_all(&machine(hour.path(), remote(&r.url(db), SECRET, true).with_ttl_secs(3600)));
    assert!(ttls(&mut admin).iter().all(|t| (3598..=3600).contains(t)), "{:?}", ttls(&mut admin));
    // KACHE_REMOTE_TTL=0: no expiry, on store and on hit; through the CLI's environment.
    let _: () = redis::cmd("FLUSHDB").query(&mut admin).unwrap();
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "ttl", 2);
    let url = r.url(db);
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_TTL", "0")];
    let o = compile_file(work.path().join("c1").as_path(), &file, &env);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(ttls(&mut admin), vec![-1, -1]);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut admin).unwrap();
    for k in &keys {
        let _: i64 = redis::cmd("EXPIRE").arg(k).arg(100).query(&mut admin).unwrap();
    }
    let o = compile_file(work.path().join("c2").as_path(), &file, &env);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("c2"))["hits_remote"], 2);
    assert_eq!(ttls(&mut admin), vec![-1, -1]);
    let o = kache(work.path(), &[("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_TTL", "soon")])
        .arg("stats")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
}

#[test]
fn a_files_lookups_and_stores_take_one_round_trip_each() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let proxy = Proxy::start(r.port);
    let url = format!("redis://127.0.0.1:{}/{db}", proxy.port);
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)];
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "eight", 8);
    // All misses: the lookups in one round trip, the stores in one.
    let o = compile_file(&work.path().join("c1"), &file, &env);
    assert!(o.status.success(), "{}", said(&o));
    let t = proxy.take();
    assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (1, 1), "{t:?}");
    assert_eq!(t.round_trips.iter().map(|r| r.iter().filter(|c| *c == "GETEX").count()).sum::<usize>(), 8, "{t:?}");
    assert_eq!(r.dump(db).len(), 8);
    // All hits on another machine: one round trip, nothing stored.
    let o = compile_file(&work.path().join("c2"), &file, &env);
    assert!(o.status.success(), "{}", said(&o));
    let t = proxy.take();
    assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (1, 0), "{t:?}");
    assert_eq!(local_stats(&work.path().join("c2"))["hits_remote"], 8);
    // --emit cubin: the PTX lookups, then the cubins' (keyed by the PTX), and as many stores.
    if crate::common::ptxas().is_some() {
        let cubins = kernel_file(work.path(), "cubins", 4);
        let out = work.path().join("cubin-out");
        let o = kache(&work.path().join("c5"), &env)
            .arg("compile")
            .arg(&cubins)
            .args(["--arch", "sm_80", "--emit", "cubin", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", said(&o));
        let t = proxy.take();
        assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (2, 2), "{t:?}");
        let o = kache(&work.path().join("c6"), &env)
            .arg("compile")
            .arg(&cubins)
            .args(["--arch", "sm_80", "--emit", "cubin", "-o"])
            .arg(&out)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", said(&o));
        let t = proxy.take();
        assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (2, 0), "{t:?}");
        // The PTX and the cubin of each kernel, from the remote (cubins count in their own figures).
        let s = local_stats(&work.path().join("c6"));
        assert_eq!((s["hits_remote"].as_u64(), s["cubin_hits"].as_u64()), (Some(4), Some(4)), "{s}");
    }
    // Through the library: a module's kernels compiled together.
    let jit = machine(&work.path().join("c3"), remote(&url, SECRET, false));
    let m = jit.load_file(kernel_file(work.path(), "lib", 5)).unwrap();
    assert_eq!(m.compile_all(SM80).unwrap().len(), 5);
    let t = proxy.take();
    assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (1, 1), "{t:?}");
    // And the prebuild step: a file's kernels for two architectures.
    let kernels = work.path().join("kernels");
    std::fs::create_dir_all(&kernels).unwrap();
    kernel_file(&kernels, "pre", 3);
    let config = Config { remote: Some(remote(&url, SECRET, false)), ..Config::in_memory().with_cache_dir(work.path().join("c4")) };
    let out = work.path().join("out");
    kache::prebuild::Builder::new().kernels_dir(&kernels).out_dir(&out).arch("sm_70").arch("sm_80").config(config).build().unwrap();
    let t = proxy.take();
    // PTX for both architectures and host code in one pass; the cubins (assembled from that
    // PTX, where ptxas is found) in a second.
    let passes = if kache::toolchain::find_ptxas().is_some() { 2 } else { 1 };
    assert_eq!((t.carrying("GETEX"), t.carrying("SET")), (passes, passes), "{t:?}");
}

#[test]
fn a_frozen_server_costs_the_timeout_once_per_process() {
    let Some(r) = Server::start(&[]) else { return };
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "frozen", 8);
    // Without a remote, twice: the compile's own time.
    let mut alone = Duration::ZERO;
    for i in 0..2 {
        let t0 = Instant::now();
        let o = compile_file(&work.path().join(format!("alone{i}")), &file, &[]);
        assert!(o.status.success(), "{}", said(&o));
        alone = alone.max(t0.elapsed());
    }
    r.signal("STOP");
    let timeout = Duration::from_millis(2000);
    let url = r.url(0);
    let ms = timeout.as_millis().to_string();
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_TIMEOUT_MS", ms.as_str())];
    let t0 = Instant::now();
    let o = compile_file(&work.path().join("frozen"), &file, &env);
    let took = t0.elapsed();
    r.signal("CONT");
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(warnings(&o).len(), 1, "{}", said(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("no answer within 2000 ms"), "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("frozen"))["remote_errors"], 1);
    // The lookups waited the budget once; the stores, during the back-off, not at all.
    let cost = took.saturating_sub(alone);
    assert!(took >= timeout && cost < 2 * timeout, "a frozen server cost {cost:?} (timeout {timeout:?}, compile alone {alone:?})");
    // Through the library, kernel by kernel (no batch): the back-off keeps it to one timeout.
    r.signal("STOP");
    let jit = Jit::new(Config { remote: Some(remote(&url, SECRET, false)), ..Config::in_memory().with_cache_dir(work.path().join("lib")) })
        .unwrap();
    let m = jit.load_file(&file).unwrap();
    let t0 = Instant::now();
    for n in m.kernel_names() {
        let k = m.kernel(&n).unwrap();
        k.compile(SM80, &Specialization::uniform(k.program(), Layout::C)).unwrap();
    }
    let took = t0.elapsed();
    r.signal("CONT");
    assert_eq!(jit.cache().stats().remote_errors, 1);
    assert!(took < alone + 2 * Duration::from_millis(300) + Duration::from_millis(1500), "8 kernels took {took:?}");
}

#[test]
fn kache_remote_ping_stats_and_purge() {
    let Some(r) = shared() else { return };
    let db = fresh_db();
    let url = r.url(db);
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)];
    let work = tempfile::tempdir().unwrap();
    let o = kache(work.path(), &env).args(["remote", "ping"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("PONG in ") && text.contains(" ms"), "{text}");
    let stats = |work: &Path| {
        let o = kache(work, &env).args(["remote", "stats", "--json"]).output().unwrap();
        assert!(o.status.success(), "{}", said(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    assert_eq!((stats(work.path())["entries"].as_u64(), stats(work.path())["bytes"].as_u64()), (Some(0), Some(0)));
    let file = kernel_file(work.path(), "three", 3);
    assert!(compile_file(&work.path().join("c"), &file, &env).status.success());
    // Another namespace's entry and an unrelated key: not counted, not purged.
    let mut admin = r.connection(db).unwrap();
    let _: () = redis::cmd("SET").arg("unrelated").arg("x").query(&mut admin).unwrap();
    compile_all(&machine(&work.path().join("other"), remote(&url, b"another secret of 16+ bytes", false)));
    let values: u64 = r.dump(db).iter().filter(|(k, _)| k.starts_with("kache:")).map(|(_, v)| v.len() as u64).sum();
    let s = stats(work.path());
    assert_eq!(s["entries"].as_u64(), Some(3), "{s}");
    let other_bytes: u64 = {
        let ns = RemoteStore::new(remote(&url, b"another secret of 16+ bytes", false)).unwrap();
        r.dump(db).iter().filter(|(k, _)| k.starts_with(&format!("kache:{}:", ns.namespace()))).map(|(_, v)| v.len() as u64).sum()
    };
    assert_eq!(s["bytes"].as_u64(), Some(values - other_bytes), "{s}");
    let o = kache(work.path(), &env).args(["remote", "stats"]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("entries: 3\n") && text.contains(&format!("bytes: {}\n", values - other_bytes)), "{text}");
    let o = kache(work.path(), &env).args(["remote", "purge"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("removed 3 entries"), "{}", said(&o));
    assert_eq!(stats(work.path())["entries"].as_u64(), Some(0));
    let left: Vec<String> = r.dump(db).into_iter().map(|(k, _)| k).collect();
    assert_eq!(left.len(), 3, "{left:?}");
    assert!(left.contains(&"unrelated".to_string()));
    // Unreachable: non-zero exits, one line each.
    let closed = format!("redis://127.0.0.1:{}/0", crate::redis_servers::free_port());
    for cmd in [&["remote", "ping"][..], &["remote", "stats"], &["remote", "purge"]] {
        let o = kache(work.path(), &[("KACHE_REMOTE", closed.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)]).args(cmd).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{cmd:?}: {}", said(&o));
    }
    let o = kache(work.path(), &[]).args(["remote", "ping"]).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", said(&o));
}

#[test]
fn no_message_carries_the_password_or_the_key() {
    let password = "S3kr1t@pw/x:y";
    let Some(r) = Server::start(&["--requirepass", password]) else { return };
    let key = "KEY-do-not-print-0123456789";
    let encoded = "S3kr1t%40pw%2Fx%3Ay";
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "secret", 2);
    let good = format!("redis://:{encoded}@127.0.0.1:{}/0", r.port);
    let wrong = format!("redis://default:W0ng%40pw%2Fz@127.0.0.1:{}/0", r.port);
    let closed = format!("redis://:{encoded}@127.0.0.1:{}/0", crate::redis_servers::free_port());
    let malformed = format!("redis://:{encoded}@127.0.0.1:notaport/0");
    let tls_to_plain = format!("rediss://:{encoded}@127.0.0.1:{}/0", r.port);
    let cluster_closed = format!("redis+cluster://:{encoded}@127.0.0.1:{},127.0.0.1:1", crate::redis_servers::free_port());
    let missing_ca = work.path().join("no-such-ca.pem");
    let mut outputs = Vec::new();
    for (i, url) in [&good, &wrong, &closed, &malformed, &tls_to_plain, &cluster_closed].into_iter().enumerate() {
        let cache = work.path().join(format!("c{i}"));
        let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", key)];
        outputs.push(compile_file(&cache, &file, &env));
        for cmd in
            [&["stats"][..], &["stats", "--json"], &["remote", "ping"], &["remote", "stats"], &["remote", "stats", "--json"], &["explain"]]
        {
            let mut c = kache(&cache, &env);
            c.args(cmd);
            if cmd == ["explain"] {
                c.arg(&file);
            }
            outputs.push(c.output().unwrap());
        }
        let ca = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", key), ("KACHE_REMOTE_CA", missing_ca.to_str().unwrap())];
        outputs.push(compile_file(&cache, &file, &ca));
        outputs.push(kache(&cache, &ca).args(["remote", "ping"]).output().unwrap());
    }
    let hex: String = key.bytes().map(|b| format!("{b:02x}")).collect();
    for o in &outputs {
        let text = said(o).to_lowercase();
        for needle in ["s3kr1t", "kr1t", "w0ng", "do-not-print", &hex[..24]] {
            assert!(!text.contains(needle), "`{needle}` in\n{text}");
        }
    }
    // Every failing remote above still let the compile through.
    assert!(outputs.iter().filter(|o| o.status.code() == Some(1)).all(|o| String::from_utf8_lossy(&o.stderr).contains("KACHE_REMOTE")));
    // The library's Debug output of the settings.
    let config = RemoteConfig::new(good.clone(), key.as_bytes().to_vec(), false, Duration::from_millis(200)).unwrap();
    let jit = Jit::new(Config { remote: Some(config.clone()), ..Config::in_memory() }).unwrap();
    let store = RemoteStore::new(config.clone()).unwrap();
    for text in [format!("{config:?}"), format!("{jit:?}"), format!("{store:?}"), format!("{:?}", jit.config())] {
        let text = text.to_lowercase();
        assert!(!text.contains("kr1t") && !text.contains("do-not-print"), "{text}");
    }
    // The wrong password was refused with one warning, and the right one worked.
    assert!(outputs[0].status.success() && warnings(&outputs[0]).is_empty(), "{}", said(&outputs[0]));
    // Nine runs per URL: the second URL's compile is the tenth.
    let refused = &outputs[9];
    assert!(refused.status.success() && warnings(refused).len() == 1, "{}", said(refused));
    let counters = Counters::default();
    assert_eq!(store.get_many(&counters, &[Key([7; 32])]), vec![None]);
}

/// Answers every command of one client: `+OK`, and to `SCAN` the cursor 1 again and again with
/// no keys (a broken or hostile server, or a proxy in front of one).
fn serve_a_scan_that_never_ends(mut conn: std::net::TcpStream) {
    use std::io::{Read, Write};
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let Ok(n) = conn.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        pending.extend_from_slice(&buf[..n]);
        // Whole commands (`*N`, then N bulk strings) are answered; a partial one waits.
        while let Some((name, used)) = first_command(&pending) {
            pending.drain(..used);
            let reply: &[u8] = if name.eq_ignore_ascii_case("SCAN") { b"*2\r\n$1\r\n1\r\n*0\r\n" } else { b"+OK\r\n" };
            if conn.write_all(reply).is_err() {
                return;
            }
        }
    }
}

/// The name of the first whole RESP command in `b`, and how many bytes it takes.
fn first_command(b: &[u8]) -> Option<(String, usize)> {
    let line = |at: usize| -> Option<(&[u8], usize)> {
        let end = b[at..].windows(2).position(|w| w == b"\r\n")? + at;
        Some((&b[at..end], end + 2))
    };
    let number = |t: &[u8]| std::str::from_utf8(t).ok()?.parse::<usize>().ok();
    let (head, mut at) = line(0)?;
    let count = number(head.strip_prefix(b"*")?)?;
    let mut name = String::new();
    for i in 0..count {
        let (len, next) = line(at)?;
        let len = number(len.strip_prefix(b"$")?)?;
        if b.len() < next + len + 2 {
            return None;
        }
        if i == 0 {
            name = String::from_utf8_lossy(&b[next..next + len]).into_owned();
        }
        at = next + len + 2;
    }
    Some((name, at))
}

/// `SCAN` of a server that keeps answering with a cursor it gave before would go round for
/// ever: `kache remote stats` and `purge` are an error instead. Before, they never returned.
#[test]
fn a_scan_whose_cursor_comes_back_is_an_error_not_a_loop_without_end() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || serve_a_scan_that_never_ends(conn));
        }
    });
    let store = RemoteStore::new(remote(&format!("redis://127.0.0.1:{port}"), SECRET, false)).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send((store.usage().map(|_| ()), store.purge().map(|_| ())));
    });
    let (usage, purge) = rx.recv_timeout(Duration::from_secs(30)).expect("SCAN went round for 30 s");
    for e in [usage.unwrap_err(), purge.unwrap_err()] {
        assert!(e.to_string().contains("came back to cursor 1"), "{e}");
    }
}

/// `KACHE_REMOTE_CA` naming a FIFO (or a device) is refused at once, as every file kache reads
/// is: before, reading it blocked the remote's thread for ever, and every exchange ran out of its
/// time budget behind it ("no answer within ...").
#[test]
fn a_ca_file_that_is_not_a_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("ca.pem");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let port = crate::redis_servers::free_port();
    let url = format!("rediss://127.0.0.1:{port}");
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_CA", fifo.to_str().unwrap())];
    let o = crate::faults::run_within(kache(dir.path(), &env).args(["remote", "ping"]), Duration::from_secs(60));
    assert!(!o.status.success(), "{}", said(&o));
    assert!(said(&o).contains("not a regular file (a FIFO)"), "{}", said(&o));
}
