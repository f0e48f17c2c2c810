//! The remote tier: a Redis server or a Redis Cluster shared by a team or a CI fleet.
//!
//! Entries are authenticated and namespaced: each value is a blake3 keyed MAC (its key derived
//! from `KACHE_REMOTE_KEY`) over the key and the entry, followed by the entry, one Redis string
//! per entry, under a Redis key that starts with the namespace (another keyed derivation of the
//! same secret, never the secret), so clients with different secrets never touch each other's
//! entries. A value whose MAC does not verify is a miss, counted and never loaded. Lookups and
//! stores of a batch are one pipeline each, and each has one time budget, whatever it waits for
//! ([`worker`]). The remote never fails a compile: after a failure it is left alone for
//! [`BACKOFF`] (warned once per process, counted).

mod config;
mod link;
mod worker;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use config::{DEFAULT_TIMEOUT, DEFAULT_TTL_SECS, MAX_TTL_SECS, Redactor, RemoteConfig, Topology};
use link::{Failure, Node};
use redis::Value;
use worker::{Session, Worker};

use super::counters::{Counter, Counters};
use super::key::{KEY_SCHEMA, Key};
use super::mac::EntryMac;
use crate::error::Result;

/// How long the remote is left alone after a failure.
pub const BACKOFF: Duration = Duration::from_secs(30);

/// Keys a `SCAN` step asks for (a hint to the server).
const SCAN_COUNT: usize = 1000;

/// A failed remote-management operation (`kache remote …`); its message holds no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("remote cache {url}: {why}")]
pub struct RemoteError {
    /// The remote, credentials hidden.
    pub url: String,
    /// What went wrong.
    pub why: String,
}

/// One node's answer to `PING`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NodePing {
    /// `host:port`, or the URL for a single server.
    pub node: String,
    /// The round trip of `PING`, in milliseconds.
    pub round_trip_ms: f64,
}

/// What [`RemoteStore::ping`] measured.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Ping {
    /// Connecting (and the TLS handshake and authentication, where there are), in milliseconds.
    pub connect_ms: f64,
    /// Each node's `PING` (every master of a cluster).
    pub nodes: Vec<NodePing>,
}

/// This namespace's share of the remote, as [`RemoteStore::usage`] counts it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Usage {
    /// Entries.
    pub entries: u64,
    /// Bytes of their values (MAC and envelope included).
    pub bytes: u64,
}

#[derive(Default)]
struct Health {
    /// Left alone until then, after a failure.
    down_until: Option<Instant>,
    /// The server refused `GETEX` (an ACL without it, a replica): lookups use `GET`.
    getex_refused: bool,
    /// The server refused `SET`: this process stores nothing more.
    writes_refused: bool,
}

/// The Redis store.
pub struct RemoteStore {
    config: Arc<RemoteConfig>,
    mac: EntryMac,
    namespace: String,
    worker: Worker,
    health: Mutex<Health>,
    warned: Mutex<HashSet<&'static str>>,
}

impl std::fmt::Debug for RemoteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteStore").field("config", &self.config).field("namespace", &self.namespace).finish_non_exhaustive()
    }
}

/// The namespace of a secret: 128 bits of a keyed derivation, in hex.
fn namespace_of(secret: &[u8]) -> String {
    let derived = blake3::derive_key("kache remote namespace v1", secret);
    derived[..16].iter().map(|b| format!("{b:02x}")).collect()
}

impl RemoteStore {
    /// A store for `config` (connects on first use, on its own thread).
    pub fn new(config: RemoteConfig) -> Result<RemoteStore> {
        // The configuration checked the secret's length already.
        let mac = EntryMac::new(config.secret()).map_err(|why| crate::Error::Config(format!("KACHE_REMOTE_KEY: {why}")))?;
        let namespace = namespace_of(config.secret());
        let config = Arc::new(config);
        Ok(RemoteStore {
            worker: Worker::new(config.clone()),
            config,
            mac,
            namespace,
            health: Mutex::new(Health::default()),
            warned: Mutex::new(HashSet::new()),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &RemoteConfig {
        &self.config
    }

    /// The namespace: 32 hex digits derived from `KACHE_REMOTE_KEY` by a keyed hash; every
    /// Redis key of this store starts with `kache:<namespace>:`.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The Redis key of an entry: `kache:<namespace>:v<key schema>:<key in hex>`. No hash tag:
    /// a cluster spreads entries over its slots.
    pub fn redis_key(&self, key: &Key) -> String {
        format!("kache:{}:v{KEY_SCHEMA}:{}", self.namespace, key.hex())
    }

    /// The `SCAN MATCH` pattern of this namespace's keys (every key schema).
    pub fn key_pattern(&self) -> String {
        format!("kache:{}:*", self.namespace)
    }

    /// The MAC of an entry under `key`.
    pub fn mac(&self, key: &Key, entry: &[u8]) -> [u8; 32] {
        self.mac.mac(key, entry)
    }

    /// Prints `msg`, without secrets, once per store for each `id`.
    fn warn_once(&self, id: &'static str, msg: &str) {
        if self.warned.lock().unwrap_or_else(|e| e.into_inner()).insert(id) {
            let msg = self.config.redactor().redact(msg);
            crate::logging::warning!("{msg}");
        }
    }

    /// Whether the tier may be used now (not resting after a failure).
    fn available(&self) -> bool {
        let mut h = self.health.lock().unwrap_or_else(|e| e.into_inner());
        match h.down_until {
            Some(t) if Instant::now() < t => false,
            Some(_) => {
                h.down_until = None;
                true
            }
            None => true,
        }
    }

    fn fail(&self, counters: &Counters, failure: &Failure) {
        self.health.lock().unwrap_or_else(|e| e.into_inner()).down_until = Some(Instant::now() + BACKOFF);
        counters.add(Counter::RemoteErrors, 1);
        self.warn_once(
            "remote-down",
            &format!(
                "the remote cache {} is unavailable ({failure}); continuing with the local cache (retried in {} s)",
                self.config.display_url(),
                BACKOFF.as_secs()
            ),
        );
    }

    fn lookup_commands(&self, keys: &[Key], refresh: bool) -> Vec<redis::Cmd> {
        let ttl = self.config.ttl_secs();
        keys.iter()
            .map(|k| {
                let rk = self.redis_key(k);
                match (refresh, ttl) {
                    (false, _) => redis::cmd("GET").arg(rk).to_owned(),
                    (true, 0) => redis::cmd("GETEX").arg(rk).arg("PERSIST").to_owned(),
                    (true, t) => redis::cmd("GETEX").arg(rk).arg("EX").arg(t).to_owned(),
                }
            })
            .collect()
    }

    /// Fetches and authenticates the entry under `key`; `None` on a miss, a failure or a bad
    /// MAC (counted).
    pub fn get(&self, counters: &Counters, key: &Key) -> Option<Vec<u8>> {
        self.get_many(counters, std::slice::from_ref(key)).pop().flatten()
    }

    /// Fetches and authenticates the entries under `keys` in one round trip (one pipeline of
    /// `GETEX`, which resets each hit's expiry to the configured one), within one time budget:
    /// for each key its entry, or `None` on a miss, a failure or a bad MAC (counted). A server
    /// that refuses `GETEX` (a read-only ACL user, a replica, a server older than 6.2) is asked
    /// with `GET` instead, at the cost of a second round trip once per process.
    pub fn get_many(&self, counters: &Counters, keys: &[Key]) -> Vec<Option<Vec<u8>>> {
        let misses = || vec![None; keys.len()];
        if keys.is_empty() || !self.available() {
            return misses();
        }
        let started = Instant::now();
        let deadline = started + self.config.timeout();
        let refresh = !self.health.lock().unwrap_or_else(|e| e.into_inner()).getex_refused;
        let commands = self.lookup_commands(keys, refresh);
        let mut reply = self.worker.call(deadline, move |s: &mut Session| s.run(|link| link.pipeline(commands)));
        if refresh && reply.as_ref().err().is_some_and(Failure::is_refused_command) {
            self.health.lock().unwrap_or_else(|e| e.into_inner()).getex_refused = true;
            let commands = self.lookup_commands(keys, false);
            reply = self.worker.call(deadline, move |s: &mut Session| s.run(|link| link.pipeline(commands)));
        }
        match reply {
            Ok(values) => {
                let found: Vec<Option<Vec<u8>>> = keys
                    .iter()
                    .zip(values.into_iter().chain(std::iter::repeat(Value::Nil)))
                    .map(|(k, v)| self.authenticate(counters, k, v))
                    .collect();
                crate::logging::debug!(
                    "remote: {} looked up, {} found, in {:.2} ms",
                    keys.len(),
                    found.iter().filter(|f| f.is_some()).count(),
                    ms(started.elapsed())
                );
                found
            }
            Err(f) => {
                self.fail(counters, &f);
                misses()
            }
        }
    }

    /// The entry in `value` if its MAC verifies for `key`.
    fn authenticate(&self, counters: &Counters, key: &Key, value: Value) -> Option<Vec<u8>> {
        let Value::BulkString(v) = value else { return None };
        counters.add(Counter::RemoteBytesRead, v.len() as u64);
        let reject = |this: &RemoteStore| {
            counters.add(Counter::RemoteRejected, 1);
            this.warn_once(
                "remote-mac",
                "an entry from the remote cache failed authentication and was ignored (wrong KACHE_REMOTE_KEY, or tampering)",
            );
            None
        };
        if v.len() < 32 {
            return reject(self);
        }
        let (mac, entry) = v.split_at(32);
        let Ok(mac) = <[u8; 32]>::try_from(mac) else { return reject(self) };
        if !self.mac.verify(key, entry, &mac) {
            return reject(self);
        }
        Some(entry.to_vec())
    }

    /// Stores an entry with its MAC (not in read-only mode).
    pub fn put(&self, counters: &Counters, key: &Key, entry: &[u8]) {
        self.put_many(counters, &[(*key, entry.to_vec())]);
    }

    /// Stores entries with their MACs and the configured expiry, in one round trip (one
    /// pipeline of `SET`) within one time budget (not in read-only mode).
    pub fn put_many(&self, counters: &Counters, entries: &[(Key, Vec<u8>)]) {
        if entries.is_empty() || self.config.read_only() || self.health.lock().unwrap_or_else(|e| e.into_inner()).writes_refused {
            return;
        }
        if !self.available() {
            return;
        }
        let ttl = self.config.ttl_secs();
        let mut bytes = 0u64;
        let commands: Vec<redis::Cmd> = entries
            .iter()
            .map(|(k, entry)| {
                let mut v = Vec::with_capacity(entry.len() + 32);
                v.extend_from_slice(&self.mac(k, entry));
                v.extend_from_slice(entry);
                bytes += v.len() as u64;
                let mut c = redis::cmd("SET");
                c.arg(self.redis_key(k)).arg(v);
                if ttl > 0 {
                    c.arg("EX").arg(ttl);
                }
                c
            })
            .collect();
        let started = Instant::now();
        let deadline = started + self.config.timeout();
        match self.worker.call(deadline, move |s: &mut Session| s.run(|link| link.pipeline(commands))) {
            Ok(_) => {
                counters.add(Counter::RemoteBytesWritten, bytes);
                crate::logging::debug!("remote: {} stored, {bytes} bytes, in {:.2} ms", entries.len(), ms(started.elapsed()));
            }
            Err(f) if f.is_refused_command() => {
                self.health.lock().unwrap_or_else(|e| e.into_inner()).writes_refused = true;
                counters.add(Counter::RemoteErrors, 1);
                self.warn_once(
                    "remote-write-refused",
                    &format!(
                        "the remote cache {} refuses writes ({f}); reading only (set KACHE_REMOTE_READONLY=1 where that is meant)",
                        self.config.display_url()
                    ),
                );
            }
            Err(f) => self.fail(counters, &f),
        }
    }

    fn admin_error(&self, failure: &Failure) -> RemoteError {
        RemoteError { url: self.config.display_url().to_string(), why: self.config.redactor().redact(&failure.to_string()) }
    }

    /// Runs one exchange of a management operation with its own time budget.
    fn exchange<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> std::result::Result<R, Failure> + Send + 'static,
    ) -> std::result::Result<R, RemoteError> {
        self.worker.call(Instant::now() + self.config.timeout(), f).map_err(|e| self.admin_error(&e))
    }

    /// Connects and sends `PING` to the server, or to every master of a cluster, each within the
    /// time budget; an error if any does not answer `PONG`.
    pub fn ping(&self) -> std::result::Result<Ping, RemoteError> {
        let url = self.config.display_url().to_string();
        self.exchange(move |s: &mut Session| {
            let t0 = Instant::now();
            let fallback = link::first_host(s.config());
            let masters = s.run(|link| link.masters(&fallback))?;
            let connect_ms = ms(t0.elapsed());
            let targets: Vec<(Option<Node>, String)> = match masters {
                None => vec![(None, url)],
                Some(m) => m.into_iter().map(|n| (Some(n.clone()), format!("{}:{}", n.0, n.1))).collect(),
            };
            let mut nodes = Vec::new();
            for (node, name) in targets {
                let t = Instant::now();
                let pong = s.run(|link| link.on_node(node.as_ref(), &redis::cmd("PING")))?;
                let round_trip_ms = ms(t.elapsed());
                if !matches!(&pong, Value::SimpleString(p) if p == "PONG") && !matches!(&pong, Value::BulkString(p) if p == b"PONG") {
                    return Err(Failure::Setup(format!("{name} answered {pong:?} to PING")));
                }
                nodes.push(NodePing { node: name, round_trip_ms });
            }
            Ok(Ping { connect_ms, nodes })
        })
    }

    /// The nodes to scan: the server (`None`) or every master of a cluster.
    fn scan_targets(&self) -> std::result::Result<Vec<Option<Node>>, RemoteError> {
        let masters = self.exchange(|s: &mut Session| {
            let fallback = link::first_host(s.config());
            s.run(|link| link.masters(&fallback))
        })?;
        Ok(match masters {
            None => vec![None],
            Some(m) => m.into_iter().map(Some).collect(),
        })
    }

    /// Walks this namespace's keys with `SCAN` (on every master of a cluster), one step per
    /// time budget, handing each step's keys to `visit` (run on the worker, same budget). A
    /// server that answers with a cursor it gave before would be walked for ever (a full
    /// iteration never repeats one): that is an error.
    fn scan<T: Send + 'static>(
        &self,
        visit: impl Fn(&mut Session, Vec<Vec<u8>>) -> std::result::Result<T, Failure> + Send + Sync + Clone + 'static,
        mut collect: impl FnMut(T),
    ) -> std::result::Result<(), RemoteError> {
        for node in self.scan_targets()? {
            let mut cursor = 0u64;
            let mut seen = HashSet::new();
            loop {
                let pattern = self.key_pattern();
                let node = node.clone();
                let visit = visit.clone();
                let (next, found) = self.exchange(move |s: &mut Session| {
                    let cmd = redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(pattern).arg("COUNT").arg(SCAN_COUNT).to_owned();
                    let reply = s.run(|link| link.on_node(node.as_ref(), &cmd))?;
                    let (next, keys): (u64, Vec<Vec<u8>>) =
                        redis::from_redis_value(reply).map_err(|e| Failure::Setup(format!("unexpected SCAN reply: {e}")))?;
                    let found = if keys.is_empty() { None } else { Some(visit(s, keys)?) };
                    Ok((next, found))
                })?;
                if let Some(t) = found {
                    collect(t);
                }
                if next == 0 {
                    break;
                }
                if !seen.insert(next) {
                    return Err(RemoteError {
                        url: self.config.display_url().to_string(),
                        why: format!("the server's SCAN came back to cursor {next}, so it would never end"),
                    });
                }
                cursor = next;
            }
        }
        Ok(())
    }

    /// This namespace's entries and their bytes (`SCAN` and `STRLEN`; on every master of a
    /// cluster).
    pub fn usage(&self) -> std::result::Result<Usage, RemoteError> {
        let mut usage = Usage::default();
        self.scan(
            |s, keys| {
                let commands = keys.into_iter().map(|k| redis::cmd("STRLEN").arg(k).to_owned()).collect();
                let lengths = s.run(|link| link.pipeline(commands))?;
                Ok(lengths.iter().map(|v| if let Value::Int(n) = v { *n as u64 } else { 0 }).fold((0u64, 0u64), |(n, b), l| (n + 1, b + l)))
            },
            |(n, b)| {
                usage.entries += n;
                usage.bytes += b;
            },
        )?;
        Ok(usage)
    }

    /// Removes every entry of this namespace (`SCAN` and `UNLINK`; on every master of a
    /// cluster), and only those; the number removed.
    pub fn purge(&self) -> std::result::Result<u64, RemoteError> {
        if self.config.read_only() {
            return Err(RemoteError {
                url: self.config.display_url().to_string(),
                why: "KACHE_REMOTE_READONLY is set: purging writes to the remote".into(),
            });
        }
        let mut removed = 0;
        self.scan(
            |s, keys| {
                let commands = keys.into_iter().map(|k| redis::cmd("UNLINK").arg(k).to_owned()).collect();
                let replies = s.run(|link| link.pipeline(commands))?;
                Ok(replies.iter().map(|v| if let Value::Int(n) = v { *n as u64 } else { 0 }).sum::<u64>())
            },
            |n| removed += n,
        )?;
        Ok(removed)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
