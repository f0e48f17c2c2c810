//! The remote tier's settings ([`RemoteConfig`]): where the server or the cluster is, the
//! shared secret, read-only mode, the time budget, expiry and a private CA; and [`Redactor`],
//! which takes every secret out of what kache prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use percent_encoding::{NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

use crate::error::{Error, Result};

/// An entry's time to live when `KACHE_REMOTE_TTL` is not set: 30 days.
pub const DEFAULT_TTL_SECS: u64 = 2_592_000;
/// The time budget of one lookup or store when `KACHE_REMOTE_TIMEOUT_MS` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(250);
/// The longest expiry accepted (about 68 years; Redis refuses expiries past its clock's range).
pub const MAX_TTL_SECS: u64 = i32::MAX as u64;

/// The forms `KACHE_REMOTE` takes, for messages.
const FORMS: &str = "redis://[user:password@]host:port[/db], rediss://… (TLS), \
                     redis+cluster://[user:password@]host1:port1,host2:port2,… or rediss+cluster://…";

/// One server or a Redis Cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topology {
    /// One server (`redis://`, `rediss://`, `unix://`).
    Single,
    /// A Redis Cluster, reached through any of the listed nodes (`redis+cluster://`,
    /// `rediss+cluster://`).
    Cluster,
}

/// Where the remote is, parsed from its URL.
#[derive(Clone)]
pub(super) struct Endpoint {
    pub(super) topology: Topology,
    pub(super) tls: bool,
    /// Each listed node as the redis crate takes it (credentials included).
    pub(super) nodes: Vec<redis::ConnectionInfo>,
    /// The URL with its credentials replaced by `***` and without its query.
    pub(super) shown: String,
}

/// Remote settings: see `docs/remote.md`. The URL's credentials and the shared secret are never
/// shown: [`Debug`](std::fmt::Debug) and every message use [`display_url`](Self::display_url)
/// and the [`redactor`](Self::redactor).
#[derive(Clone)]
pub struct RemoteConfig {
    endpoint: Endpoint,
    secret: Vec<u8>,
    read_only: bool,
    timeout: Duration,
    ttl_secs: u64,
    ca_file: Option<PathBuf>,
    redactor: Redactor,
}

impl std::fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteConfig")
            .field("url", &self.endpoint.shown)
            .field("secret", &"<redacted>")
            .field("read_only", &self.read_only)
            .field("timeout", &self.timeout)
            .field("ttl_secs", &self.ttl_secs)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl RemoteConfig {
    /// From `KACHE_REMOTE`, `KACHE_REMOTE_KEY`, `KACHE_REMOTE_READONLY`,
    /// `KACHE_REMOTE_TIMEOUT_MS`, `KACHE_REMOTE_TTL` and `KACHE_REMOTE_CA`; `None` without
    /// `KACHE_REMOTE`. A remote without a key is refused: a shared writable cache without
    /// authentication lets anyone who can write to it run code on every reader.
    pub fn from_env() -> Result<Option<RemoteConfig>> {
        let Some(url) = env("KACHE_REMOTE") else { return Ok(None) };
        let secret = std::env::var("KACHE_REMOTE_KEY").unwrap_or_default();
        let read_only = matches!(std::env::var("KACHE_REMOTE_READONLY").as_deref().map(str::trim), Ok("1" | "true" | "yes" | "on"));
        let timeout = match env("KACHE_REMOTE_TIMEOUT_MS") {
            Some(v) => match v.trim().parse::<u64>() {
                Ok(ms) if ms > 0 => Duration::from_millis(ms),
                _ => return Err(Error::Config(format!("KACHE_REMOTE_TIMEOUT_MS={v} is not a number of milliseconds above 0"))),
            },
            None => DEFAULT_TIMEOUT,
        };
        let ttl_secs = match env("KACHE_REMOTE_TTL") {
            Some(v) => match v.trim().parse::<u64>() {
                Ok(s) if s <= MAX_TTL_SECS => s,
                _ => {
                    return Err(Error::Config(format!(
                        "KACHE_REMOTE_TTL={v} is not a number of seconds (0 for no expiry, at most {MAX_TTL_SECS})"
                    )));
                }
            },
            None => DEFAULT_TTL_SECS,
        };
        let config = RemoteConfig::new(url.trim().to_string(), secret.into_bytes(), read_only, timeout)?.with_ttl_secs(ttl_secs);
        Ok(Some(match env("KACHE_REMOTE_CA") {
            Some(ca) => config.with_ca_file(ca.trim()),
            None => config,
        }))
    }

    /// Checks and builds a remote configuration (expiry [`DEFAULT_TTL_SECS`], the system's
    /// root certificates). A URL that does not parse, and a secret shorter than 16 bytes, are
    /// configuration errors; nothing is connected yet.
    pub fn new(url: String, secret: Vec<u8>, read_only: bool, timeout: Duration) -> Result<RemoteConfig> {
        let mut redactor = Redactor::default();
        redactor.add_url(&url);
        redactor.add(&secret);
        let endpoint = parse_endpoint(&url).map_err(|why| {
            // Text without a scheme is not shown at all: it may be a secret set in the wrong variable.
            let what = if url.contains("://") { format!("KACHE_REMOTE={}", shown_url(&url)) } else { "KACHE_REMOTE".to_string() };
            Error::Config(redactor.redact(&format!("{what} is not a remote cache URL: {why} (expected {FORMS})")))
        })?;
        if secret.len() < crate::cache::mac::MIN_SECRET {
            return Err(Error::Config(
                "KACHE_REMOTE needs KACHE_REMOTE_KEY, a shared secret of at least 16 bytes: entries from a shared cache are authenticated \
                 so that whoever can write to it cannot run code on every reader"
                    .into(),
            ));
        }
        Ok(RemoteConfig {
            endpoint,
            secret,
            read_only,
            timeout: timeout.max(Duration::from_millis(1)),
            ttl_secs: DEFAULT_TTL_SECS,
            ca_file: None,
            redactor,
        })
    }

    /// The same settings with entries expiring `secs` seconds after they are stored or hit (0:
    /// never; at most [`MAX_TTL_SECS`]).
    pub fn with_ttl_secs(mut self, secs: u64) -> RemoteConfig {
        self.ttl_secs = secs.min(MAX_TTL_SECS);
        self
    }

    /// The same settings trusting only the CA certificates (PEM) in `file` for TLS, instead of
    /// the system's roots.
    pub fn with_ca_file(mut self, file: impl Into<PathBuf>) -> RemoteConfig {
        self.ca_file = Some(file.into());
        self
    }

    /// The URL as it may be shown: credentials replaced by `***`, no query.
    pub fn display_url(&self) -> &str {
        &self.endpoint.shown
    }

    /// One server or a cluster.
    pub fn topology(&self) -> Topology {
        self.endpoint.topology
    }

    /// Whether the transport is TLS.
    pub fn tls(&self) -> bool {
        self.endpoint.tls
    }

    /// Read but never write (developer machines reading what CI wrote).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// The time budget of one lookup or one store, whatever it waits for.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// An entry's time to live in seconds, set on store and on every hit (0: no expiry).
    pub fn ttl_secs(&self) -> u64 {
        self.ttl_secs
    }

    /// The private CA's certificates, if any.
    pub fn ca_file(&self) -> Option<&Path> {
        self.ca_file.as_deref()
    }

    /// The shared secret (`KACHE_REMOTE_KEY`).
    pub(super) fn secret(&self) -> &[u8] {
        &self.secret
    }

    pub(super) fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// What takes this configuration's secrets out of a message.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }
}

/// Parses `url` into the nodes to connect to; the reason it does not parse never contains
/// a credential.
fn parse_endpoint(url: &str) -> std::result::Result<Endpoint, String> {
    let Some((scheme, rest)) = url.split_once("://") else { return Err("no scheme".into()) };
    let (topology, tls, node_scheme) = match scheme.to_ascii_lowercase().as_str() {
        "redis" => (Topology::Single, false, "redis"),
        "rediss" => (Topology::Single, true, "rediss"),
        "redis+cluster" => (Topology::Cluster, false, "redis"),
        "rediss+cluster" => (Topology::Cluster, true, "rediss"),
        "unix" | "redis+unix" => {
            let info = redis::IntoConnectionInfo::into_connection_info(url).map_err(|e| e.category().to_string())?;
            return Ok(Endpoint { topology: Topology::Single, tls: false, nodes: vec![quiet(info)], shown: shown_url(url) });
        }
        other => return Err(format!("unknown scheme `{other}`")),
    };
    let (userinfo, hostpart) = match rest.rfind('@') {
        Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
        None => (None, rest),
    };
    if hostpart.contains('#') {
        return Err("a fragment (`#…`) is not accepted: TLS always verifies the certificate chain and the host name".into());
    }
    let split = hostpart.find(['/', '?']).unwrap_or(hostpart.len());
    let (authority, tail) = hostpart.split_at(split);
    let hosts: Vec<&str> = authority.split(',').map(str::trim).collect();
    if hosts.iter().any(|h| h.is_empty()) {
        return Err("a host is missing".into());
    }
    if topology == Topology::Single && hosts.len() > 1 {
        return Err(format!("several hosts; a Redis Cluster is {node_scheme}+cluster://host1:port1,host2:port2"));
    }
    let path = tail.split('?').next().unwrap_or("");
    if topology == Topology::Cluster && !matches!(path, "" | "/" | "/0") {
        return Err("a Redis Cluster has database 0 only".into());
    }
    let credentials = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    let mut nodes = Vec::new();
    for host in hosts {
        let node = format!("{node_scheme}://{credentials}{host}{tail}");
        let info = redis::IntoConnectionInfo::into_connection_info(node.as_str()).map_err(|e| {
            // The crate's own message may quote the URL: only its category is kept.
            format!("{} for host `{host}`", e.category())
        })?;
        nodes.push(quiet(info));
    }
    Ok(Endpoint { topology, tls, nodes, shown: shown_url(url) })
}

/// A connection that does not send the client library's name (one command less at connect).
fn quiet(info: redis::ConnectionInfo) -> redis::ConnectionInfo {
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    info.set_redis_settings(settings)
}

/// `url` with its credentials replaced by `***` and without query or fragment, for messages;
/// whatever `url` is (it need not parse).
fn shown_url(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let (userinfo, hostpart) = match rest.rfind('@') {
        Some(i) => (Some(&rest[..i]), &rest[i + 1..]),
        None => (None, rest),
    };
    let hostpart = hostpart.split(['?', '#']).next().unwrap_or("");
    let masked = match userinfo {
        Some(u) => match u.split_once(':') {
            Some((user, _)) if !user.contains(['/', '?', '#']) => format!("{user}:***@"),
            _ => "***@".to_string(),
        },
        None => String::new(),
    };
    format!("{scheme}{masked}{hostpart}")
}

/// Takes secrets out of text: each secret in every form a message could carry it in (as is,
/// percent-encoded or -decoded, escaped as Rust's `Debug` or JSON write strings, in hex) is
/// replaced by `***`.
#[derive(Clone, Default)]
pub struct Redactor {
    needles: Vec<String>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} forms)", self.needles.len())
    }
}

impl Redactor {
    /// A redactor for the remote's secrets in the environment (`KACHE_REMOTE`'s credentials,
    /// `KACHE_REMOTE_KEY`), whether or not they are valid.
    pub fn from_env() -> Redactor {
        let mut r = Redactor::default();
        if let Some(url) = std::env::var_os("KACHE_REMOTE") {
            r.add_url(&url.to_string_lossy());
        }
        if let Some(key) = std::env::var_os("KACHE_REMOTE_KEY") {
            r.add(key.as_encoded_bytes());
        }
        r
    }

    /// Adds the credentials in a URL's user information and query (whatever the URL is).
    pub fn add_url(&mut self, url: &str) {
        let rest = url.split_once("://").map_or(url, |(_, r)| r);
        if let Some(i) = rest.rfind('@') {
            let userinfo = &rest[..i];
            // `user:password`, or one word that some tools take for the password.
            match userinfo.split_once(':') {
                Some((_, password)) => self.add(password.as_bytes()),
                None => self.add(userinfo.as_bytes()),
            }
        }
        let after = rest.rfind('@').map_or(rest, |i| &rest[i + 1..]);
        if let Some((_, query)) = after.split_once('?') {
            for pair in query.split('&') {
                if let Some((_, value)) = pair.split_once('=') {
                    self.add(value.as_bytes());
                }
            }
        }
    }

    /// Adds a secret.
    pub fn add(&mut self, secret: &[u8]) {
        if secret.is_empty() {
            return;
        }
        let mut forms: Vec<String> = Vec::new();
        let text = String::from_utf8_lossy(secret).into_owned();
        let mut texts = vec![text.clone()];
        if let Ok(decoded) = percent_decode_str(&text).decode_utf8()
            && decoded != text
        {
            texts.push(decoded.into_owned());
        }
        for t in &texts {
            forms.push(t.clone());
            let encoded = utf8_percent_encode(t, NON_ALPHANUMERIC).to_string();
            forms.push(encoded.to_ascii_lowercase());
            forms.push(encoded);
            forms.push(format!("{t:?}").trim_matches('"').to_string());
            if let Ok(json) = serde_json::to_string(t) {
                forms.push(json.trim_matches('"').to_string());
            }
        }
        let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
        forms.push(hex.to_ascii_uppercase());
        forms.push(hex);
        for f in forms {
            if !f.is_empty() && !self.needles.contains(&f) {
                self.needles.push(f);
            }
        }
        // Longest first, so that a form containing another is replaced whole.
        self.needles.sort_by_key(|n| std::cmp::Reverse(n.len()));
    }

    /// `text` without any of the secrets.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_string();
        for n in &self.needles {
            if out.contains(n.as_str()) {
                out = out.replace(n.as_str(), "***");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"a shared secret for the tests 0123";

    fn config(url: &str) -> Result<RemoteConfig> {
        RemoteConfig::new(url.into(), KEY.to_vec(), false, Duration::from_millis(100))
    }

    #[test]
    fn urls_of_each_form_parse() {
        let c = config("redis://127.0.0.1:6379/0").unwrap();
        assert_eq!((c.topology(), c.tls(), c.endpoint().nodes.len()), (Topology::Single, false, 1));
        let c = config("rediss://cache.internal:6380").unwrap();
        assert_eq!((c.topology(), c.tls()), (Topology::Single, true));
        let c = config("redis+cluster://10.0.0.1:7000,10.0.0.2:7001, 10.0.0.3:7002").unwrap();
        assert_eq!((c.topology(), c.tls(), c.endpoint().nodes.len()), (Topology::Cluster, false, 3));
        let c = config("rediss+cluster://:pw@a:1,b:2/").unwrap();
        assert_eq!((c.topology(), c.tls(), c.endpoint().nodes.len()), (Topology::Cluster, true, 2));
        assert_eq!(c.endpoint().nodes[1].redis_settings().password(), Some("pw"));
        assert_eq!(c.display_url(), "rediss+cluster://:***@a:1,b:2/");
        let c = config("unix:///run/redis.sock").unwrap();
        assert_eq!(c.topology(), Topology::Single);
    }

    #[test]
    fn malformed_urls_are_configuration_errors_that_show_no_password() {
        for url in [
            "http://user:hunter2hunter2@example",
            "redis://:hunter2hunter2@a:1,b:2",
            "redis+cluster://:hunter2hunter2@a:1/3",
            "rediss://:hunter2hunter2@host:6379#insecure",
            "redis://:hunter2hunter2@host:notaport",
            "redis+cluster://:hunter2hunter2@a:1,,b:2",
            "hunter2hunter2",
        ] {
            let e = config(url).unwrap_err();
            let text = format!("{e} {e:?}");
            assert!(matches!(e, Error::Config(_)), "{url}: {e:?}");
            assert!(!text.contains("hunter2"), "{url}: {text}");
            assert!(text.contains("KACHE_REMOTE"), "{url}: {text}");
        }
    }

    #[test]
    fn debug_shows_no_secret() {
        let c = config("redis://kache:p%40ss%2Fw0rd@host:6379/2").unwrap();
        let text = format!("{c:?}");
        assert!(text.contains("redis://kache:***@host:6379/2"), "{text}");
        for needle in ["p%40ss", "p@ss", "a shared secret", "p%40ss%2Fw0rd"] {
            assert!(!text.contains(needle), "{needle} in {text}");
        }
    }

    #[test]
    fn the_redactor_knows_every_form() {
        let mut r = Redactor::default();
        r.add_url("redis://u:p%40ss%2Fw%22rd@host/0");
        r.add(KEY);
        let hex: String = KEY.iter().map(|b| format!("{b:02x}")).collect();
        for form in ["p%40ss%2Fw%22rd", "p@ss/w\"rd", "p@ss/w\\\"rd", "p%40ss%2fw%22rd", "a shared secret for the tests 0123", &hex] {
            let said = r.redact(&format!("before {form} after"));
            assert_eq!(said, "before *** after", "{form}");
        }
        assert_eq!(r.redact("nothing secret here"), "nothing secret here");
    }

    #[test]
    fn expiry_defaults_to_thirty_days_and_is_bounded() {
        let c = config("redis://h").unwrap();
        assert_eq!(c.ttl_secs(), 2_592_000);
        assert_eq!(c.clone().with_ttl_secs(0).ttl_secs(), 0);
        assert_eq!(c.with_ttl_secs(u64::MAX).ttl_secs(), MAX_TTL_SECS);
    }
}
