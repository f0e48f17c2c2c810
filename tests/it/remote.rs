//! The Redis tier against a real redis-server, started by the tests on a free port.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kache::cache::remote::{RemoteConfig, RemoteStore};
use kache::{Arch, Config, Device, Grid, Jit, Layout, Origin, Specialization, Target};

const SECRET: &[u8] = b"a shared secret for the tests 0123";
const SM80: Target = Target::Nvptx(Arch { sm: 80, accelerated: false });

/// A redis-server of our own; killed when dropped.
struct Redis {
    child: Option<Child>,
    port: u16,
    _dir: tempfile::TempDir,
}

fn redis_server() -> Option<PathBuf> {
    for p in ["/usr/bin/redis-server", "/usr/local/bin/redis-server"] {
        if std::path::Path::new(p).is_file() {
            return Some(p.into());
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("redis-server")).find(|p| p.is_file())
}

impl Redis {
    fn start() -> Option<Redis> {
        let Some(bin) = redis_server() else {
            if std::env::var("KACHE_REQUIRE_REDIS").as_deref() == Ok("1") {
                panic!("redis-server not found and KACHE_REQUIRE_REDIS=1 (apt-get install redis-server)");
            }
            eprintln!("skipping: redis-server not found (set KACHE_REQUIRE_REDIS=1 to make this a failure)");
            return None;
        };
        for _ in 0..5 {
            let dir = tempfile::tempdir().ok()?;
            let port = std::net::TcpListener::bind("127.0.0.1:0").ok()?.local_addr().ok()?.port();
            let child = Command::new(&bin)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--daemonize", "no"])
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            let mut r = Redis { child: Some(child), port, _dir: dir };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if r.client().and_then(|mut c| redis::cmd("PING").query::<String>(&mut c).ok()).is_some() {
                    return Some(r);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            r.kill();
        }
        panic!("redis-server did not start");
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    fn client(&self) -> Option<redis::Connection> {
        redis::Client::open(self.url()).ok()?.get_connection_with_timeout(Duration::from_millis(200)).ok()
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Every key and value in the server.
    fn dump(&self) -> Vec<(String, Vec<u8>)> {
        let mut c = self.client().expect("redis connection");
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
        keys.into_iter()
            .map(|k| {
                let v: Vec<u8> = redis::cmd("GET").arg(&k).query(&mut c).unwrap();
                (k, v)
            })
            .collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

fn remote(url: &str, secret: &[u8], read_only: bool) -> RemoteConfig {
    RemoteConfig::new(url.to_string(), secret.to_vec(), read_only, Duration::from_millis(300)).unwrap()
}

fn machine(dir: &std::path::Path, rc: RemoteConfig) -> Jit {
    Jit::new(Config { remote: Some(rc), ..Config::in_memory().with_cache_dir(dir) }).unwrap()
}

const SRC: &str = r#"
#[kernel]
pub fn k1(x: &mut [f32]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] * 2.0 + 1.0; } }
#[kernel]
pub fn k2(x: &mut [i64]) { let i = global_id_x(); if i < x.len() { x[i] = x[i] << 3; } }
"#;

fn compile_all(jit: &Jit) -> Vec<Origin> {
    let m = jit.load_source("k.rs", SRC).unwrap();
    ["k1", "k2"]
        .iter()
        .map(|n| {
            let k = m.kernel(n).unwrap();
            k.compile(SM80, &Specialization::uniform(k.program(), Layout::C)).unwrap().origin()
        })
        .collect()
}

#[test]
fn two_machines_share_kernels_through_redis() {
    let Some(r) = Redis::start() else { return };
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let origins = compile_all(&machine(a.path(), remote(&r.url(), SECRET, false)));
    assert!(origins.iter().all(|o| matches!(o, Origin::Compiled { .. })));
    assert_eq!(r.dump().len(), 2);
    let second = machine(b.path(), remote(&r.url(), SECRET, false));
    assert_eq!(compile_all(&second), vec![Origin::Cache(kache::cache::Tier::Remote); 2], "the second machine compiled");
    let s = second.cache().stats();
    assert_eq!(s.hits_remote, 2);
    assert!(s.remote_bytes_read > 0);
    drop(second);
    // Backfilled: the second machine's local store now serves them without the remote.
    let offline = Jit::new(Config::in_memory().with_cache_dir(b.path())).unwrap();
    assert_eq!(compile_all(&offline), vec![Origin::Cache(kache::cache::Tier::Local); 2]);
}

#[test]
fn tampered_and_forged_entries_are_rejected_and_never_loaded() {
    let Some(r) = Redis::start() else { return };
    let a = tempfile::tempdir().unwrap();
    compile_all(&machine(a.path(), remote(&r.url(), SECRET, false)));
    let mut c = r.client().unwrap();
    let entries = r.dump();
    // Tamper with one: change a payload byte, keep the MAC.
    let (k0, mut v0) = entries[0].clone();
    let n = v0.len();
    v0[n - 20] ^= 0x01;
    let _: () = redis::cmd("SET").arg(&k0).arg(v0).query(&mut c).unwrap();
    // Forge the other: a valid entry with a MAC from the wrong secret.
    let (k1, v1) = entries[1].clone();
    let forger = RemoteStore::new(remote(&r.url(), b"the wrong secret, also long enough", false)).unwrap();
    let key = kache::cache::Key::from_hex(k1.rsplit(':').next().unwrap()).unwrap();
    let mut forged = forger.mac(&key, &v1[32..]).to_vec();
    forged.extend_from_slice(&v1[32..]);
    let _: () = redis::cmd("SET").arg(&k1).arg(forged).query(&mut c).unwrap();
    let b = tempfile::tempdir().unwrap();
    let jit = machine(b.path(), remote(&r.url(), SECRET, false));
    let origins = compile_all(&jit);
    assert!(origins.iter().all(|o| matches!(o, Origin::Compiled { .. })), "{origins:?}");
    let s = jit.cache().stats();
    assert_eq!(s.remote_rejected, 2, "{s:?}");
}

#[test]
fn redis_killed_mid_run_every_compile_still_succeeds() {
    let Some(mut r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(), SECRET, false));
    let dev = Device::host();
    let mut results = Vec::new();
    for i in 0..12 {
        if i == 4 {
            r.kill();
        }
        let src = format!("#[kernel] pub fn k(x: &mut [i32]) {{ let j = global_id_x(); if j < x.len() {{ x[j] += {i}; }} }}");
        let k = jit.load_source("k.rs", &src).unwrap().kernel("k").unwrap();
        let mut x = dev.upload(&[1i32, 2]).unwrap();
        let t0 = Instant::now();
        k.launch(&dev, Grid::linear(2, 32), (&mut x,)).unwrap();
        results.push((x.download().unwrap(), t0.elapsed()));
    }
    for (i, (v, _)) in results.iter().enumerate() {
        assert_eq!(v, &vec![1 + i as i32, 2 + i as i32]);
    }
    let s = jit.cache().stats();
    assert!(s.remote_errors >= 1, "{s:?}");
}

#[test]
fn an_unreachable_or_silent_remote_is_skipped_quickly() {
    // Nothing listens on this port.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&format!("redis://127.0.0.1:{port}/0"), SECRET, false));
    assert!(compile_all(&jit).iter().all(|o| matches!(o, Origin::Compiled { .. })));
    assert!(jit.cache().stats().remote_errors >= 1);
    // A server that accepts connections and never answers: the read timeout applies.
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
}

#[test]
fn device_capturing_kernels_leave_nothing_in_redis() {
    let Some(r) = Redis::start() else { return };
    let dev = Device::host();
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(), SECRET, false));
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
    for (k, v) in r.dump() {
        for needle in [p.to_le_bytes().to_vec(), p.to_string().into_bytes(), format!("{p:x}").into_bytes()] {
            assert!(
                !v.windows(needle.len()).any(|w| w == needle) && !k.as_bytes().windows(needle.len()).any(|w| w == needle),
                "pointer found in redis entry {k}"
            );
        }
    }
    assert!(r.dump().is_empty(), "device-capturing kernels were sent to the remote");
}

#[test]
fn read_only_mode_writes_nothing() {
    let Some(r) = Redis::start() else { return };
    let dir = tempfile::tempdir().unwrap();
    let jit = machine(dir.path(), remote(&r.url(), SECRET, true));
    compile_all(&jit);
    assert!(r.dump().is_empty());
    // But it reads what a writer stored.
    let w = tempfile::tempdir().unwrap();
    compile_all(&machine(w.path(), remote(&r.url(), SECRET, false)));
    let reader = tempfile::tempdir().unwrap();
    assert_eq!(compile_all(&machine(reader.path(), remote(&r.url(), SECRET, true))), vec![Origin::Cache(kache::cache::Tier::Remote); 2]);
}

#[test]
fn a_remote_without_a_key_is_refused() {
    let e = RemoteConfig::new("redis://127.0.0.1:6379/0".into(), Vec::new(), false, Duration::from_millis(100)).unwrap_err();
    assert!(e.to_string().contains("KACHE_REMOTE_KEY"), "{e}");
    let e = RemoteConfig::new("http://example".into(), SECRET.to_vec(), false, Duration::from_millis(100)).unwrap_err();
    assert!(e.to_string().contains("redis://"), "{e}");
    // Through the CLI's environment as well.
    let o = Command::new(crate::common::kache_bin())
        .arg("stats")
        .env("KACHE_REMOTE", "redis://127.0.0.1:1/0")
        .env_remove("KACHE_REMOTE_KEY")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KACHE_REMOTE_KEY"));
}
