//! The remote tier: a Redis server shared by a team or a CI fleet.
//!
//! Entries are authenticated: each value is a blake3 keyed MAC (secret from
//! `KACHE_REMOTE_KEY`) over the key and the entry, followed by the entry. A value whose MAC
//! does not verify is a miss, counted and never loaded. The remote never fails a compile:
//! connection and read timeouts are short, and after a failure the remote is left alone for a
//! while (warned once, counted).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::counters::{Counter, Counters};
use super::key::{KEY_SCHEMA, Key};
use crate::error::{Error, Result};

/// Remote settings.
#[derive(Clone)]
pub struct RemoteConfig {
    /// `redis://host:port/db`
    pub url: String,
    /// The shared secret for the MAC.
    pub secret: Vec<u8>,
    /// Read but never write (developer machines reading what CI wrote).
    pub read_only: bool,
    /// Connect, read and write timeout.
    pub timeout: Duration,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .field("read_only", &self.read_only)
            .field("timeout", &self.timeout)
            .finish()
    }
}

impl RemoteConfig {
    /// From `KACHE_REMOTE`, `KACHE_REMOTE_KEY`, `KACHE_REMOTE_READONLY` and
    /// `KACHE_REMOTE_TIMEOUT_MS`; `None` without `KACHE_REMOTE`. A remote without a key is
    /// refused: a shared writable cache without authentication lets anyone who can write to it
    /// run code on every reader.
    pub fn from_env() -> Result<Option<RemoteConfig>> {
        let url = match std::env::var("KACHE_REMOTE") {
            Ok(u) if !u.trim().is_empty() => u.trim().to_string(),
            _ => return Ok(None),
        };
        let secret = std::env::var("KACHE_REMOTE_KEY").unwrap_or_default();
        let read_only = matches!(std::env::var("KACHE_REMOTE_READONLY").as_deref(), Ok("1" | "true" | "yes"));
        let timeout = match std::env::var("KACHE_REMOTE_TIMEOUT_MS") {
            Ok(v) => {
                Duration::from_millis(v.trim().parse().map_err(|_| Error::Config(format!("KACHE_REMOTE_TIMEOUT_MS={v} is not a number")))?)
            }
            Err(_) => Duration::from_millis(250),
        };
        RemoteConfig::new(url, secret.into_bytes(), read_only, timeout).map(Some)
    }

    /// Checks and builds a remote configuration.
    pub fn new(url: String, secret: Vec<u8>, read_only: bool, timeout: Duration) -> Result<RemoteConfig> {
        if !url.starts_with("redis://") && !url.starts_with("rediss://") && !url.starts_with("unix://") {
            return Err(Error::Config(format!("KACHE_REMOTE={url} is not a redis:// URL")));
        }
        if secret.len() < 16 {
            return Err(Error::Config(
                "KACHE_REMOTE needs KACHE_REMOTE_KEY, a shared secret of at least 16 bytes: entries from a shared cache are authenticated \
                 so that whoever can write to it cannot run code on every reader"
                    .into(),
            ));
        }
        Ok(RemoteConfig { url, secret, read_only, timeout })
    }
}

struct State {
    conn: Option<redis::Connection>,
    down_until: Option<Instant>,
}

/// The Redis store.
pub struct RemoteStore {
    config: RemoteConfig,
    client: redis::Client,
    mac_key: [u8; 32],
    state: Mutex<State>,
    warned: Mutex<HashSet<&'static str>>,
}

/// How long the remote is left alone after a failure.
const BACKOFF: Duration = Duration::from_secs(30);

impl RemoteStore {
    /// A store for `config` (connects lazily).
    pub fn new(config: RemoteConfig) -> Result<RemoteStore> {
        let client = redis::Client::open(config.url.as_str()).map_err(|e| Error::Config(format!("KACHE_REMOTE={}: {e}", config.url)))?;
        let mac_key = blake3::derive_key("kache remote entry MAC v1", &config.secret);
        Ok(RemoteStore {
            config,
            client,
            mac_key,
            state: Mutex::new(State { conn: None, down_until: None }),
            warned: Mutex::new(HashSet::new()),
        })
    }

    /// Its configuration.
    pub fn config(&self) -> &RemoteConfig {
        &self.config
    }

    /// The Redis key of an entry.
    pub fn redis_key(key: &Key) -> String {
        format!("kache:v{KEY_SCHEMA}:{}", key.hex())
    }

    /// The MAC of an entry under `key`.
    pub fn mac(&self, key: &Key, entry: &[u8]) -> [u8; 32] {
        let mut h = blake3::Hasher::new_keyed(&self.mac_key);
        h.update(&key.0);
        h.update(entry);
        *h.finalize().as_bytes()
    }

    fn with_conn<R>(&self, counters: &Counters, f: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<R>) -> Option<R> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = st.down_until {
            if Instant::now() < t {
                return None;
            }
            st.down_until = None;
        }
        if st.conn.is_none() {
            match self.client.get_connection_with_timeout(self.config.timeout) {
                Ok(c) => {
                    let _ = c.set_read_timeout(Some(self.config.timeout));
                    let _ = c.set_write_timeout(Some(self.config.timeout));
                    st.conn = Some(c);
                }
                Err(e) => {
                    self.fail(counters, &mut st, &e.to_string());
                    return None;
                }
            }
        }
        let conn = st.conn.as_mut()?;
        match f(conn) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(counters, &mut st, &e.to_string());
                None
            }
        }
    }

    fn fail(&self, counters: &Counters, st: &mut State, why: &str) {
        st.conn = None;
        st.down_until = Some(Instant::now() + BACKOFF);
        counters.add(Counter::RemoteErrors, 1);
        self.warn_once(
            "remote-down",
            &format!("the remote cache {} is unreachable ({why}); continuing with the local cache", self.config.url),
        );
    }

    /// Prints `msg` once per store for each `id`.
    fn warn_once(&self, id: &'static str, msg: &str) {
        if self.warned.lock().unwrap_or_else(|e| e.into_inner()).insert(id) {
            crate::logging::warning!("{msg}");
        }
    }

    /// Fetches and authenticates the entry under `key`; `None` on a miss, a failure or a bad
    /// MAC (counted).
    pub fn get(&self, counters: &Counters, key: &Key) -> Option<Vec<u8>> {
        let rk = Self::redis_key(key);
        let v: Vec<u8> = self.with_conn(counters, |c| redis::cmd("GET").arg(&rk).query::<Option<Vec<u8>>>(c))??;
        counters.add(Counter::RemoteBytesRead, v.len() as u64);
        if v.len() < 32 {
            counters.add(Counter::RemoteRejected, 1);
            return None;
        }
        let (mac, entry) = v.split_at(32);
        let want = self.mac(key, entry);
        // Constant-time comparison through blake3's Hash equality.
        if blake3::Hash::from(want) != blake3::Hash::from(<[u8; 32]>::try_from(mac).ok()?) {
            counters.add(Counter::RemoteRejected, 1);
            self.warn_once(
                "remote-mac",
                "an entry from the remote cache failed authentication and was ignored (wrong KACHE_REMOTE_KEY, or tampering)",
            );
            return None;
        }
        Some(entry.to_vec())
    }

    /// Stores an entry with its MAC (not in read-only mode).
    pub fn put(&self, counters: &Counters, key: &Key, entry: &[u8]) {
        if self.config.read_only {
            return;
        }
        let mut v = Vec::with_capacity(entry.len() + 32);
        v.extend_from_slice(&self.mac(key, entry));
        v.extend_from_slice(entry);
        let rk = Self::redis_key(key);
        let n = v.len() as u64;
        if self.with_conn(counters, |c| redis::cmd("SET").arg(&rk).arg(v).query::<()>(c)).is_some() {
            counters.add(Counter::RemoteBytesWritten, n);
        }
    }
}
