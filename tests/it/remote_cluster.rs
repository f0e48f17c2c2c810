//! The remote tier on a real three-master Redis Cluster that the test starts on loopback
//! (`redis-server --cluster-enabled yes` ×3, `redis-cli --cluster create`): entries spread over
//! the slots, shared between machines, counted and purged on every master; one master killed
//! mid-run fails no compile; and the same over TLS (`rediss+cluster://`).
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::time::{Duration, Instant};

use kache::{Config, Device, Grid, Jit};

use crate::redis_servers::{Cluster, Tls};
use crate::remote::{SECRET, SECRET_TEXT, compile_file, kache, kernel_file, local_stats, remote, said, warnings};

#[test]
fn a_cluster_spreads_shares_counts_purges_and_survives_a_killed_master() {
    let Some(mut cluster) = Cluster::start(None) else { return };
    let url = cluster.url();
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT)];
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "cluster", 8);
    let o = compile_file(&work.path().join("a"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    let keys = cluster.keys();
    assert_eq!(keys.len(), 8, "{keys:?}");
    let nodes: HashSet<usize> = keys.iter().map(|(n, _)| *n).collect();
    assert!(nodes.len() >= 2, "every entry on one master: {keys:?}");
    assert!(keys.iter().all(|(_, k)| !k.contains('{')), "a hash tag pins a namespace to one slot: {keys:?}");
    // Another machine hits them all.
    let o = compile_file(&work.path().join("b"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("b"))["hits_remote"], 8);
    // `kache remote` on every master.
    let o = kache(work.path(), &env).args(["remote", "ping"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).matches("PONG in").count(), 3, "{}", said(&o));
    let o = kache(work.path(), &env).args(["remote", "stats", "--json"]).output().unwrap();
    assert!(o.status.success(), "{}", said(&o));
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let bytes: u64 = cluster
        .keys()
        .iter()
        .map(|(n, k)| redis::cmd("STRLEN").arg(k).query::<u64>(&mut cluster.nodes[*n].admin().unwrap()).unwrap())
        .sum();
    assert_eq!((s["entries"].as_u64(), s["bytes"].as_u64()), (Some(8), Some(bytes)), "{s}");
    let o = kache(work.path(), &env).args(["remote", "purge"]).output().unwrap();
    assert!(o.status.success() && String::from_utf8_lossy(&o.stdout).contains("removed 8 entries"), "{}", said(&o));
    assert!(cluster.keys().is_empty());

    // One master killed mid-run: every compile succeeds, the remote only warns. Which master a
    // kernel's key lands on follows from the key (and so from kache's build): kernels are
    // compiled until one has met the dead master, each a third of the slots, at most 64 of them.
    let jit = Jit::new(Config { remote: Some(remote(&url, SECRET, false)), ..Config::in_memory().with_cache_dir(work.path().join("c")) })
        .unwrap();
    let dev = Device::host();
    for i in 0..64 {
        if i == 4 {
            cluster.nodes[1].stop();
        }
        if i > 4 && jit.cache().stats().remote_errors >= 1 {
            break;
        }
        let src = format!("#[kernel] pub fn k(x: &mut [i32]) {{ let j = global_id_x(); if j < x.len() {{ x[j] += {i}; }} }}");
        let k = jit.load_source("k.rs", &src).unwrap().kernel("k").unwrap();
        let mut x = dev.upload(&[1i32, 2]).unwrap();
        k.launch(&dev, Grid::linear(2, 32), (&mut x,)).unwrap();
        assert_eq!(x.download().unwrap(), vec![1 + i, 2 + i]);
    }
    assert!(jit.cache().stats().remote_errors >= 1);
    // Once the others mark it failed, they answer CLUSTERDOWN: one warning, a local compile.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !redis::cmd("CLUSTER").arg("INFO").query::<String>(&mut cluster.nodes[0].admin().unwrap()).unwrap().contains("cluster_state:fail")
    {
        assert!(Instant::now() < deadline, "the cluster never noticed");
        std::thread::sleep(Duration::from_millis(100));
    }
    let o = compile_file(&work.path().join("d"), &file, &env);
    assert!(o.status.success(), "{}", said(&o));
    assert_eq!(warnings(&o).len(), 1, "{}", said(&o));
    assert_eq!(std::fs::read_dir(work.path().join("d/out")).unwrap().count(), 8);
    assert_eq!(local_stats(&work.path().join("d"))["remote_errors"], 1);
}

#[test]
fn rediss_cluster_with_a_private_ca() {
    let tls = Tls::generate(&["127.0.0.1"]);
    let Some(cluster) = Cluster::start(Some(&tls)) else { return };
    let url = cluster.tls_url();
    let ca = tls.ca.to_str().unwrap();
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_CA", ca)];
    let work = tempfile::tempdir().unwrap();
    let file = kernel_file(work.path(), "tlscluster", 4);
    let o = compile_file(&work.path().join("a"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(cluster.keys().len(), 4);
    let o = compile_file(&work.path().join("b"), &file, &env);
    assert!(o.status.success() && warnings(&o).is_empty(), "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("b"))["hits_remote"], 4);
    // The wrong CA: refused, one warning, a local compile.
    let wrong = tls.wrong_ca.to_str().unwrap();
    let env = [("KACHE_REMOTE", url.as_str()), ("KACHE_REMOTE_KEY", SECRET_TEXT), ("KACHE_REMOTE_CA", wrong)];
    let o = compile_file(&work.path().join("c"), &file, &env);
    assert!(o.status.success() && warnings(&o).len() == 1, "{}", said(&o));
    assert_eq!(local_stats(&work.path().join("c"))["hits_remote"], 0);
}
