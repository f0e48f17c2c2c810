//! `kache remote ping|stats|purge`: the remote cache's reachability and latency, this
//! namespace's entries and bytes, and their removal; rendering over
//! `kache::cache::remote::RemoteStore`.

use clap::Subcommand;
use kache::Config;
use kache::cache::remote::{RemoteError, RemoteStore};

use super::{Failure, internal, user};

/// What `kache remote` does.
#[derive(Subcommand)]
pub enum RemoteCommand {
    /// Connect and PING the remote (every master of a cluster); prints each round trip.
    /// Exits non-zero when the remote does not answer.
    Ping,
    /// This namespace's entries and their bytes on the remote.
    Stats {
        /// Machine-readable output.
        #[arg(long)]
        json: bool,
    },
    /// Remove every entry of this namespace from the remote (and nothing else), without asking.
    Purge,
}

fn store() -> Result<RemoteStore, Failure> {
    let config = Config::from_env()?;
    let rc = config.remote.ok_or_else(|| user("KACHE_REMOTE is not set: there is no remote cache (see docs/remote.md)"))?;
    Ok(RemoteStore::new(rc)?)
}

fn failed(e: RemoteError) -> Failure {
    internal(e.to_string())
}

/// Runs a `kache remote` command.
pub fn run(command: RemoteCommand) -> Result<(), Failure> {
    let store = store()?;
    match command {
        RemoteCommand::Ping => {
            let ping = store.ping().map_err(failed)?;
            println!("{}: connected in {:.3} ms", store.config().display_url(), ping.connect_ms);
            for n in &ping.nodes {
                println!("{}: PONG in {:.3} ms", n.node, n.round_trip_ms);
            }
            println!("namespace: {}", store.namespace());
        }
        RemoteCommand::Stats { json } => {
            let usage = store.usage().map_err(failed)?;
            if json {
                let value = serde_json::json!({
                    "remote": store.config().display_url(),
                    "namespace": store.namespace(),
                    "entries": usage.entries,
                    "bytes": usage.bytes,
                });
                println!("{}", serde_json::to_string_pretty(&value).map_err(|e| internal(e.to_string()))?);
            } else {
                println!("remote: {}", store.config().display_url());
                println!("namespace: {}", store.namespace());
                println!("entries: {}", usage.entries);
                println!("bytes: {}", usage.bytes);
            }
        }
        RemoteCommand::Purge => {
            if store.config().read_only() {
                return Err(user("KACHE_REMOTE_READONLY is set: purging writes to the remote"));
            }
            let removed = store.purge().map_err(failed)?;
            println!("removed {removed} entries of namespace {} from {}", store.namespace(), store.config().display_url());
        }
    }
    Ok(())
}
