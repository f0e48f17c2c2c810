//! Load on the remote tier: 64 concurrent clients (each its own `RemoteStore` and connection,
//! as 64 machines of a fleet) × 1,000 lookups each, half hits and half misses, against one
//! Redis and against a three-master Redis Cluster, both started here on loopback. Reports each
//! lookup's latency (p50, p99, max), the throughput, and the failures: remote errors, rejected
//! entries and wrong answers (a hit that is not the stored entry, a miss that finds one), which
//! must all be zero (the run exits 1 otherwise).
//!
//! `cargo bench --bench remote_load [-- CLIENTS LOOKUPS]`; under `cargo test` a small run
//! (4 × 50) checks that it works. Needs redis-server and redis-cli.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use kache::cache::remote::{DEFAULT_TIMEOUT, RemoteConfig, RemoteStore};
use kache::cache::{Counter, Counters, Key};

#[path = "../tests/it/redis_servers.rs"]
mod redis_servers;

const SECRET: &[u8] = b"the load test's shared secret 0123";
/// Entries stored before the clients start (hits are drawn from them).
const STORED: usize = 256;
/// Bytes of each entry (about a small kernel's PTX).
const ENTRY_BYTES: usize = 4096;

struct Outcome {
    latencies: Vec<Duration>,
    hits: u64,
    misses: u64,
    wrong: u64,
    errors: u64,
    rejected: u64,
    wall: Duration,
}

fn entry(i: usize) -> (Key, Vec<u8>) {
    let key = Key(*blake3::hash(format!("stored {i}").as_bytes()).as_bytes());
    let bytes: Vec<u8> = (0..ENTRY_BYTES).map(|b| (b * 31 + i * 7) as u8).collect();
    (key, bytes)
}

fn run(url: &str, clients: usize, lookups: usize) -> Outcome {
    let config = RemoteConfig::new(url.to_string(), SECRET.to_vec(), false, DEFAULT_TIMEOUT).unwrap();
    let writer = RemoteStore::new(config.clone()).unwrap();
    let counters = Counters::default();
    let stored: Vec<(Key, Vec<u8>)> = (0..STORED).map(entry).collect();
    writer.put_many(&counters, &stored);
    assert_eq!(counters.peek().get(Counter::RemoteErrors), 0, "storing the entries failed");
    let stored = Arc::new(stored);
    let barrier = Arc::new(Barrier::new(clients + 1));
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let (config, stored, barrier) = (config.clone(), stored.clone(), barrier.clone());
            std::thread::spawn(move || {
                let store = RemoteStore::new(config).unwrap();
                let counters = Counters::default();
                // Connect before the clock starts.
                store.get_many(&counters, &[Key([0xee; 32])]);
                barrier.wait();
                let mut out = Outcome {
                    latencies: Vec::with_capacity(lookups),
                    hits: 0,
                    misses: 0,
                    wrong: 0,
                    errors: 0,
                    rejected: 0,
                    wall: Duration::ZERO,
                };
                for i in 0..lookups {
                    let hit = (i + c) % 2 == 0;
                    let (key, want) = if hit {
                        let (k, v) = &stored[(c * 7919 + i * 13) % STORED];
                        (*k, Some(v))
                    } else {
                        (Key(*blake3::hash(format!("never stored {c} {i}").as_bytes()).as_bytes()), None)
                    };
                    let t0 = Instant::now();
                    let got = store.get_many(&counters, &[key]).pop().flatten();
                    out.latencies.push(t0.elapsed());
                    match (&got, want) {
                        (Some(g), Some(w)) if g == w => out.hits += 1,
                        (None, None) => out.misses += 1,
                        _ => out.wrong += 1,
                    }
                }
                let counts = counters.peek();
                out.errors = counts.get(Counter::RemoteErrors);
                out.rejected = counts.get(Counter::RemoteRejected);
                out
            })
        })
        .collect();
    barrier.wait();
    let t0 = Instant::now();
    let mut all = Outcome { latencies: Vec::new(), hits: 0, misses: 0, wrong: 0, errors: 0, rejected: 0, wall: Duration::ZERO };
    for h in handles {
        let o = h.join().unwrap();
        all.latencies.extend(o.latencies);
        all.hits += o.hits;
        all.misses += o.misses;
        all.wrong += o.wrong;
        all.errors += o.errors;
        all.rejected += o.rejected;
    }
    all.wall = t0.elapsed();
    all.latencies.sort();
    all
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let benching = std::env::args().any(|a| a == "--bench");
    let (clients, lookups) = match (args.first(), args.get(1)) {
        (Some(c), Some(l)) => (c.parse().unwrap(), l.parse().unwrap()),
        _ if benching => (64, 1000),
        _ => (4, 50),
    };
    let Some(single) = redis_servers::Server::start(&[]) else { return };
    let Some(cluster) = redis_servers::Cluster::start(None) else { return };
    println!(
        "remote load: {clients} clients x {lookups} lookups (half hits, {ENTRY_BYTES}-byte entries), budget {} ms",
        DEFAULT_TIMEOUT.as_millis()
    );
    println!(
        "{:<8} {:>8} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>14}",
        "remote", "lookups", "hits", "misses", "failures", "p50 (ms)", "p99 (ms)", "max (ms)", "lookups/s"
    );
    let mut failed = false;
    for (name, url) in [("redis", single.url(0)), ("cluster", cluster.url())] {
        let o = run(&url, clients, lookups);
        let failures = o.wrong + o.errors + o.rejected;
        failed |= failures > 0;
        println!(
            "{:<8} {:>8} {:>7} {:>7} {:>8} {:>9.3} {:>9.3} {:>9.3} {:>14.0}",
            name,
            o.latencies.len(),
            o.hits,
            o.misses,
            failures,
            percentile(&o.latencies, 0.50),
            percentile(&o.latencies, 0.99),
            percentile(&o.latencies, 1.0),
            o.latencies.len() as f64 / o.wall.as_secs_f64()
        );
    }
    if failed {
        eprintln!("remote load: failures (remote errors, rejected entries or wrong answers)");
        std::process::exit(1);
    }
}
