//! One connection to the remote, a server or a cluster, plain or TLS: opened with the
//! configured timeouts (rustls with a built-in crypto provider, the system's roots or a private
//! CA), and the few shapes of exchange the tier needs: a pipeline (one round trip, per node on a
//! cluster) and a command sent to one named node (SCAN, PING).

use std::sync::Once;
use std::time::Duration;

use redis::cluster::{ClusterClientBuilder, ClusterConnection};
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, RedisResult, TlsCertificates, Value};

use super::config::{RemoteConfig, Topology};

/// Why the tier could not be used.
#[derive(Debug)]
pub(super) enum Failure {
    /// The server, the cluster or the transport said no, or went away.
    Redis(redis::RedisError),
    /// The connection could not be set up (the CA file, a thread).
    Setup(String),
    /// No answer within the budget.
    Timeout(Duration),
}

impl Failure {
    /// Whether the server refused a command while the connection is fine: an ACL without it, a
    /// replica refusing writes, a server too old for it (`GETEX` came with Redis 6.2). Reads go
    /// on, with commands the server takes.
    pub(super) fn is_refused_command(&self) -> bool {
        match self {
            Failure::Redis(e) => matches!(e.code(), Some("NOPERM" | "READONLY")) || e.to_string().contains("unknown command"),
            _ => false,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Redis(e) => {
                // A pipeline's failure lists every command's: the first says it.
                let text = e.to_string();
                match text.find("), (") {
                    Some(i) => write!(f, "{})…]", &text[..i]),
                    None => f.write_str(&text),
                }
            }
            Failure::Setup(why) => f.write_str(why),
            Failure::Timeout(t) => write!(f, "no answer within {} ms", t.as_millis()),
        }
    }
}

impl From<redis::RedisError> for Failure {
    fn from(e: redis::RedisError) -> Failure {
        Failure::Redis(e)
    }
}

/// A node of a cluster (host and port).
pub(super) type Node = (String, u16);

/// An open connection.
pub(super) enum Link {
    /// To one server.
    Single(redis::Connection),
    /// To every master of a cluster, routed by key slot (boxed: it is several times larger).
    Cluster(Box<ClusterConnection>),
}

/// Installs rustls's ring provider for the process unless one is installed already: the redis
/// crate asks rustls for the process's provider, and without one the first TLS connect panics.
fn crypto_provider() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // An error means another provider was installed first, which serves as well.
        // ring's provider is deprecated since rustls 0.23.48 for lacking post-quantum key
        // exchange; it is kept because it needs no C toolchain or CMake (aws-lc-rs does), and a
        // cache connection carries kernels, not long-lived secrets. Allowed here, at the one
        // call, so that no build of kache or of a crate that depends on it warns.
        #[allow(deprecated)]
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The host of the first listed node (for a master announced without one).
pub(super) fn first_host(config: &RemoteConfig) -> String {
    match config.endpoint().nodes.first().map(|n| n.addr()) {
        Some(redis::ConnectionAddr::Tcp(host, _)) | Some(redis::ConnectionAddr::TcpTls { host, .. }) => host.clone(),
        _ => String::new(),
    }
}

/// The private CA's certificates (PEM), read and checked.
fn ca_certificates(config: &RemoteConfig) -> Result<Option<Vec<u8>>, Failure> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let Some(path) = config.ca_file() else { return Ok(None) };
    // A regular file only, read to a limit: a FIFO there would hold the remote's thread for
    // ever (the caller's budget ends, the thread stays blocked), `/dev/zero` would never end.
    let pem =
        crate::files::read_regular(path, 16 << 20, true).map_err(|e| Failure::Setup(format!("KACHE_REMOTE_CA={}: {e}", path.display())))?;
    let certificates = CertificateDer::pem_slice_iter(&pem).filter(Result::is_ok).count();
    if certificates == 0 {
        return Err(Failure::Setup(format!("KACHE_REMOTE_CA={} holds no PEM certificate", path.display())));
    }
    Ok(Some(pem))
}

impl Link {
    /// Connects; every wait is bounded by the configured timeout.
    pub(super) fn open(config: &RemoteConfig) -> Result<Link, Failure> {
        let endpoint = config.endpoint();
        let timeout = config.timeout();
        if !endpoint.tls && config.ca_file().is_some() {
            return Err(Failure::Setup(
                "KACHE_REMOTE_CA is set but the remote is not TLS (rediss:// or rediss+cluster://); refusing to send credentials in clear"
                    .into(),
            ));
        }
        let certificates = if endpoint.tls {
            crypto_provider();
            Some(TlsCertificates { client_tls: None, root_cert: ca_certificates(config)? })
        } else {
            None
        };
        match endpoint.topology {
            Topology::Single => {
                let info = endpoint.nodes.first().cloned().ok_or_else(|| Failure::Setup("no host".into()))?;
                let client = match certificates {
                    Some(c) => redis::Client::build_with_tls(info, c)?,
                    None => redis::Client::open(info)?,
                };
                let conn = client.get_connection_with_timeout(timeout)?;
                conn.set_read_timeout(Some(timeout))?;
                conn.set_write_timeout(Some(timeout))?;
                Ok(Link::Single(conn))
            }
            Topology::Cluster => {
                let mut builder = ClusterClientBuilder::new(endpoint.nodes.clone())
                    .connection_timeout(timeout)
                    .response_timeout(timeout)
                    // A redirection after a topology change is retried; a node that is down
                    // fails the operation at once (the tier then rests), instead of the crate's
                    // default of 16 retries waiting up to minutes.
                    .retries(2)
                    .min_retry_wait(5)
                    .max_retry_wait(timeout.as_millis().clamp(10, 1000) as u64);
                if let Some(c) = certificates {
                    builder = builder.certs(c);
                }
                let conn = builder.build()?.get_connection()?;
                conn.set_write_timeout(Some(timeout))?;
                Ok(Link::Cluster(Box::new(conn)))
            }
        }
    }

    /// Sends `commands` at once and reads their replies: one round trip (on a cluster, one per
    /// node holding their keys, all sent before any reply is read).
    pub(super) fn pipeline(&mut self, commands: Vec<Cmd>) -> RedisResult<Vec<Value>> {
        if commands.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Link::Single(c) => {
                let mut p = redis::pipe();
                for cmd in commands {
                    p.add_command(cmd);
                }
                p.query(c)
            }
            Link::Cluster(c) => {
                let mut p = redis::cluster::cluster_pipe();
                for cmd in commands {
                    p.add_command(cmd);
                }
                p.query(c)
            }
        }
    }

    /// The masters of a cluster, from `CLUSTER SLOTS`; `None` for a single server.
    /// `fallback_host` stands for a master announced without a host (the node that answered).
    pub(super) fn masters(&mut self, fallback_host: &str) -> RedisResult<Option<Vec<Node>>> {
        let Link::Cluster(c) = self else { return Ok(None) };
        let reply = c.route_command(redis::cmd("CLUSTER").arg("SLOTS"), RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random))?;
        let mut masters: Vec<Node> = Vec::new();
        if let Value::Array(ranges) = reply {
            for range in ranges {
                let Value::Array(fields) = range else { continue };
                let Some(Value::Array(master)) = fields.get(2) else { continue };
                let host = match master.first() {
                    Some(Value::BulkString(h)) if !h.is_empty() => String::from_utf8_lossy(h).into_owned(),
                    _ => fallback_host.to_string(),
                };
                let Some(Value::Int(port)) = master.get(1) else { continue };
                let node = (host, *port as u16);
                if !masters.contains(&node) {
                    masters.push(node);
                }
            }
        }
        masters.sort();
        Ok(Some(masters))
    }

    /// Sends `cmd` to one node: the server, or the named master of a cluster.
    pub(super) fn on_node(&mut self, node: Option<&Node>, cmd: &Cmd) -> RedisResult<Value> {
        match (self, node) {
            (Link::Single(c), _) => cmd.query(c),
            (Link::Cluster(c), Some((host, port))) => {
                c.route_command(cmd, RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host: host.clone(), port: *port }))
            }
            (Link::Cluster(c), None) => c.route_command(cmd, RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random)),
        }
    }
}
