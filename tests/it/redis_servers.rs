//! Real Redis servers for the remote tier's tests: one server (plain or TLS, with certificates
//! generated here), a three-master cluster, and a loopback proxy that counts round trips. Each
//! server runs under a small shell that kills it when this process's end of a pipe closes, so no
//! server outlives the test binary, even one kept in a `static`. Without `redis-server` (or,
//! for clusters, `redis-cli`) a test is skipped with a message, and fails under
//! `KACHE_REQUIRE_REDIS=1`.
// Tests fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Whether a missing server is a failure (CI) rather than a skip.
pub fn required() -> bool {
    std::env::var("KACHE_REQUIRE_REDIS").as_deref() == Ok("1")
}

fn tool(name: &str) -> Option<PathBuf> {
    for dir in ["/usr/bin", "/usr/local/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// `name`'s path, or `None` with a message (a panic under `KACHE_REQUIRE_REDIS=1`).
pub fn need(name: &str) -> Option<PathBuf> {
    match tool(name) {
        Some(p) => Some(p),
        None if required() => panic!("{name} not found and KACHE_REQUIRE_REDIS=1 (apt-get install redis-server redis-tools)"),
        None => {
            eprintln!("skipping: {name} not found (set KACHE_REQUIRE_REDIS=1 to make this a failure)");
            None
        }
    }
}

/// A free loopback port (free when asked; a server that then fails to bind it is retried).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Certificates for a TLS server: a CA, and the server's certificate signed by it.
pub struct Tls {
    pub dir: tempfile::TempDir,
    /// The CA that signed the server's certificate.
    pub ca: PathBuf,
    /// Another CA, which signed nothing the server shows.
    pub wrong_ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

fn new_ca(name: &str) -> (rcgen::Certificate, rcgen::Issuer<'static, rcgen::KeyPair>) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::DigitalSignature];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert, rcgen::Issuer::new(params, key))
}

impl Tls {
    /// A CA and a server certificate for `names` (DNS names or IP addresses).
    pub fn generate(names: &[&str]) -> Tls {
        let dir = tempfile::tempdir().unwrap();
        let (ca_cert, issuer) = new_ca("kache test CA");
        let (wrong_cert, _) = new_ca("kache test CA");
        let mut params = rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(rcgen::DnType::CommonName, names[0]);
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth, rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &issuer).unwrap();
        let write = |name: &str, text: String| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        Tls {
            ca: write("ca.pem", ca_cert.pem()),
            wrong_ca: write("wrong-ca.pem", wrong_cert.pem()),
            cert: write("server.pem", cert.pem()),
            key: write("server.key", key.serialize_pem()),
            dir,
        }
    }

    fn server_args(&self) -> Vec<String> {
        let p = |p: &PathBuf| p.display().to_string();
        vec![
            "--tls-cert-file".into(),
            p(&self.cert),
            "--tls-key-file".into(),
            p(&self.key),
            "--tls-ca-cert-file".into(),
            p(&self.ca),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    }
}

/// A redis-server of our own; stopped when dropped (or when this process ends).
pub struct Server {
    shell: Child,
    lifeline: Option<ChildStdin>,
    /// The server's process id.
    pub pid: u32,
    /// Its plain port (for administration, and for clients unless TLS is the point).
    pub port: u16,
    /// Its TLS port, if started with certificates.
    pub tls_port: Option<u16>,
    dir: tempfile::TempDir,
}

impl Server {
    /// Starts redis-server with `args` added (`None`: skipped; see [`need`]).
    pub fn start(args: &[&str]) -> Option<Server> {
        Server::start_with(args, None)
    }

    /// Starts redis-server with a TLS port besides its plain one.
    pub fn start_tls(tls: &Tls) -> Option<Server> {
        Server::start_with(&[], Some(tls))
    }

    fn start_with(args: &[&str], tls: Option<&Tls>) -> Option<Server> {
        let bin = need("redis-server")?;
        for _ in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            let port = free_port();
            let tls_port = tls.map(|_| free_port());
            let mut cmd_args: Vec<String> = vec![
                "--port".into(),
                port.to_string(),
                "--bind".into(),
                "127.0.0.1".into(),
                "--save".into(),
                String::new(),
                "--appendonly".into(),
                "no".into(),
                "--daemonize".into(),
                "no".into(),
                "--databases".into(),
                "64".into(),
                "--logfile".into(),
                dir.path().join("redis.log").display().to_string(),
                "--dir".into(),
                dir.path().display().to_string(),
            ];
            if let (Some(t), Some(p)) = (tls, tls_port) {
                cmd_args.extend(["--tls-port".to_string(), p.to_string()]);
                cmd_args.extend(t.server_args());
            }
            cmd_args.extend(args.iter().map(|a| a.to_string()));
            // The shell prints the server's pid, then waits for its stdin to close (this process
            // ending, or the Server dropped) and kills the server.
            let mut shell = Command::new("sh")
                .arg("-c")
                .arg("\"$0\" \"$@\" >/dev/null 2>&1 & echo $!; read _; kill -9 $! 2>/dev/null")
                .arg(&bin)
                .args(&cmd_args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut line = String::new();
            BufReader::new(shell.stdout.take().unwrap()).read_line(&mut line).unwrap();
            let pid: u32 = line.trim().parse().unwrap();
            let lifeline = shell.stdin.take();
            let s = Server { shell, lifeline, pid, port, tls_port, dir };
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                // Up when it answers PING, or asks for a password first.
                let answer = s.admin().map(|mut c| redis::cmd("PING").query::<String>(&mut c));
                if matches!(&answer, Some(Ok(_))) || matches!(&answer, Some(Err(e)) if e.code() == Some("NOAUTH")) {
                    return Some(s);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            eprintln!("redis-server did not start:\n{}", s.log());
        }
        panic!("redis-server did not start");
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// `redis://127.0.0.1:<port>/<db>`.
    pub fn url(&self, db: usize) -> String {
        format!("redis://127.0.0.1:{}/{db}", self.port)
    }

    /// A plain connection to database 0.
    pub fn admin(&self) -> Option<redis::Connection> {
        self.connection(0)
    }

    /// A plain connection to database `db`.
    pub fn connection(&self, db: usize) -> Option<redis::Connection> {
        let c = redis::Client::open(self.url(db)).ok()?.get_connection_with_timeout(Duration::from_millis(500)).ok()?;
        c.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        Some(c)
    }

    /// Every key and value of database `db`.
    pub fn dump(&self, db: usize) -> Vec<(String, Vec<u8>)> {
        let mut c = self.connection(db).expect("redis connection");
        let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
        keys.sort();
        keys.into_iter()
            .map(|k| {
                let v: Vec<u8> = redis::cmd("GET").arg(&k).query(&mut c).unwrap();
                (k, v)
            })
            .collect()
    }

    /// Sends the server a signal (`STOP`, `CONT`, `KILL`).
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill").arg(format!("-{signal}")).arg(self.pid.to_string()).status().unwrap().success();
        assert!(ok, "kill -{signal} {}", self.pid);
    }

    /// Stops the server now.
    pub fn stop(&mut self) {
        self.signal("CONT");
        self.lifeline = None;
        let _ = self.shell.wait();
        // The port is free once the process is gone.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && Path::new(&format!("/proc/{}", self.pid)).exists() {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid)).unwrap_or_default();
            if stat.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.lifeline.is_some() {
            let _ = Command::new("kill").arg("-CONT").arg(self.pid.to_string()).status();
            self.lifeline = None;
            let _ = self.shell.wait();
        }
    }
}

/// A server shared by the tests of this binary that neither stop nor freeze it; each test takes
/// databases of its own ([`fresh_db`]).
pub fn shared() -> Option<&'static Server> {
    static SHARED: Mutex<Option<&'static Server>> = Mutex::new(None);
    let mut s = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if s.is_none() {
        *s = Some(Box::leak(Box::new(Server::start(&[])?)));
    }
    *s
}

/// A database of the shared server no other test uses.
pub fn fresh_db() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(1);
    let db = NEXT.fetch_add(1, Ordering::Relaxed);
    assert!(db < 64, "more than 63 databases taken: raise --databases");
    db
}

/// Three masters on loopback, joined with `redis-cli --cluster create`, every slot covered.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    /// Starts the cluster (`None`: skipped, see [`need`]); with `tls`, each node also has a TLS
    /// port and the cluster bus is TLS.
    pub fn start(tls: Option<&Tls>) -> Option<Cluster> {
        let cli = need("redis-cli")?;
        let mut nodes = Vec::new();
        for _ in 0..3 {
            let bus = free_port().to_string();
            let mut args =
                vec!["--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-port", bus.as_str(), "--databases", "1"];
            if tls.is_some() {
                args.extend_from_slice(&["--tls-cluster", "yes"]);
            }
            nodes.push(Server::start_with(&args, tls)?);
        }
        let mut create = Command::new(&cli);
        create.arg("--cluster").arg("create");
        for n in &nodes {
            create.arg(format!("127.0.0.1:{}", n.port));
        }
        let out = create.arg("--cluster-yes").output().unwrap();
        assert!(
            out.status.success(),
            "redis-cli --cluster create: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let c = Cluster { nodes };
        c.wait_until_ok();
        Some(c)
    }

    /// Waits until every node reports `cluster_state:ok`.
    pub fn wait_until_ok(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let ok = self.nodes.iter().all(|n| {
                n.admin()
                    .and_then(|mut c| redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut c).ok())
                    .is_some_and(|i| i.contains("cluster_state:ok"))
            });
            if ok {
                return;
            }
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `redis+cluster://` with every node.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        format!("redis+cluster://{}", nodes.join(","))
    }

    /// `rediss+cluster://` with every node's TLS port.
    pub fn tls_url(&self) -> String {
        let nodes: Vec<String> = self.nodes.iter().map(|n| format!("127.0.0.1:{}", n.tls_port.unwrap())).collect();
        format!("rediss+cluster://{}", nodes.join(","))
    }

    /// Every key of every node, with the node's index.
    pub fn keys(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let Some(mut c) = n.admin() else { continue };
            let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap_or_default();
            out.extend(keys.into_iter().map(|k| (i, k)));
        }
        out.sort();
        out
    }
}

/// What a [`Proxy`] saw: each round trip (a burst of client bytes after the server's answer)
/// with the commands it carried.
#[derive(Default, Debug)]
pub struct Traffic {
    /// Per round trip, the names of the commands sent in it.
    pub round_trips: Vec<Vec<String>>,
}

impl Traffic {
    /// The round trips that carried `command`.
    pub fn carrying(&self, command: &str) -> usize {
        self.round_trips.iter().filter(|r| r.iter().any(|c| c == command)).count()
    }
}

/// The command names in a burst of RESP requests (`*N\r\n$L\r\nNAME\r\n$L\r\n…`), read in
/// order so that no payload byte is taken for a command.
fn command_names(bytes: &[u8]) -> Vec<String> {
    fn line(b: &[u8], at: usize) -> Option<(&[u8], usize)> {
        let n = b.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        Some((&b[at..at + n], at + n + 2))
    }
    fn number(text: &[u8]) -> Option<usize> {
        std::str::from_utf8(text).ok()?.parse().ok()
    }
    let mut names = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some((header, next)) = line(bytes, at) else { break };
        let Some(count) = header.strip_prefix(b"*").and_then(number) else { break };
        at = next;
        for i in 0..count {
            let Some((len, next)) = line(bytes, at) else { return names };
            let Some(len) = len.strip_prefix(b"$").and_then(number) else { return names };
            let Some(arg) = bytes.get(next..next + len) else { return names };
            if i == 0 {
                names.push(String::from_utf8_lossy(arg).to_ascii_uppercase());
            }
            at = next + len + 2;
        }
    }
    names
}

/// Bursts of client bytes, one per round trip.
#[derive(Default)]
struct Bursts {
    bursts: Vec<Vec<u8>>,
    server_spoke: bool,
}

/// A loopback TCP proxy in front of a server that counts round trips: a round trip starts when
/// the client sends after the server last spoke (or first).
pub struct Proxy {
    pub port: u16,
    bursts: Arc<Mutex<Bursts>>,
}

impl Proxy {
    /// A proxy to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let bursts = Arc::new(Mutex::new(Bursts { bursts: Vec::new(), server_spoke: true }));
        let shared = bursts.clone();
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else { continue };
                let (mut c_read, mut s_write) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (mut s_read, mut c_write) = (server, client);
                let up = shared.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n) = c_read.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        {
                            let mut b = up.lock().unwrap();
                            if b.server_spoke {
                                b.bursts.push(Vec::new());
                                b.server_spoke = false;
                            }
                            b.bursts.last_mut().unwrap().extend_from_slice(&buf[..n]);
                        }
                        if s_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = s_write.shutdown(std::net::Shutdown::Write);
                });
                let down = shared.clone();
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 1 << 16];
                    while let Ok(n) = s_read.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        down.lock().unwrap().server_spoke = true;
                        if c_write.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = c_write.shutdown(std::net::Shutdown::Write);
                });
            }
        });
        Proxy { port, bursts }
    }

    /// What it saw so far, leaving it empty.
    pub fn take(&self) -> Traffic {
        let mut b = self.bursts.lock().unwrap();
        b.server_spoke = true;
        Traffic { round_trips: std::mem::take(&mut b.bursts).iter().map(|burst| command_names(burst)).collect() }
    }
}

#[test]
fn resp_requests_are_read_command_by_command() {
    let mut bytes = Vec::new();
    // A value that looks like a command (`*1\r\n$3\r\nGET`, 11 bytes) is not one.
    bytes.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$11\r\n*1\r\n$3\r\nGET\r\n");
    bytes.extend_from_slice(b"*2\r\n$5\r\nGETEX\r\n$1\r\nk\r\n");
    assert_eq!(command_names(&bytes), vec!["SET", "GETEX"]);
}
