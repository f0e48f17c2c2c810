//! Cache speed: in-process hit against miss, hit latency as the store grows, and key derivation
//! over large captured host arrays. Run with `cargo bench --bench cache`; whole-process figures
//! (a cold process served from the cache) come from `cargo run --release --example cold_hit`.
// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use kache::cache::Cache;
use kache::cache::{ArtifactKind, Key, LocalStore, Lookup, Meta, envelope};
use kache::{Arch, Config, Jit, Layout, Specialization, Target};

#[path = "support.rs"]
mod support;

fn target() -> Target {
    Target::Nvptx(Arch::parse("sm_80").unwrap())
}

fn hit_vs_miss(c: &mut Criterion) {
    let mut g = c.benchmark_group("in_process");
    g.sample_size(20);
    for (size, src, kernel) in support::sources() {
        // Hit: the same source and kernel again in a process that compiled it (a program
        // launching a kernel repeatedly, or loading the same module twice).
        let jit = Jit::new(Config::in_memory()).unwrap();
        let k = jit.load_source("k.rs", &src).unwrap().kernel(kernel).unwrap();
        k.compile(target(), &Specialization::uniform(k.program(), Layout::C)).unwrap();
        g.bench_function(BenchmarkId::new("hit", size), |b| {
            b.iter(|| {
                let k = jit.load_source("k.rs", &src).unwrap().kernel(kernel).unwrap();
                k.compile(target(), &Specialization::uniform(k.program(), Layout::C)).unwrap()
            })
        });
        // Hit in the memory tier from a new kernel object: key derivation plus lookup.
        g.bench_function(BenchmarkId::new("memory_tier_hit", size), |b| {
            let spec = Specialization::uniform(k.program(), Layout::C);
            b.iter(|| {
                let d = k.explain(target(), &spec).unwrap();
                assert!(matches!(jit.cache().lookup(&d.key), Lookup::Hit(..)));
            })
        });
        g.bench_function(BenchmarkId::new("miss", size), |b| {
            b.iter(|| {
                let jit = Jit::new(Config::in_memory()).unwrap();
                let k = jit.load_source("k.rs", &src).unwrap().kernel(kernel).unwrap();
                k.compile(target(), &Specialization::uniform(k.program(), Layout::C)).unwrap()
            })
        });
    }
    g.finish();
}

fn fake_entry(i: u64) -> (Key, Vec<u8>) {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&i.to_le_bytes());
    let key = Key(*blake3::hash(&k).as_bytes());
    let payload: Vec<u8> = (0..3000u32).map(|x| (x as u64 * 31 + i) as u8).collect();
    let meta = Meta::new(key, "k", "()", ArtifactKind::Ptx, "k", 5);
    (key, envelope::encode(&meta, &payload))
}

fn store_size(c: &mut Criterion) {
    let mut g = c.benchmark_group("local_store_hit");
    g.sample_size(30);
    for n in [10u64, 1_000, 10_000] {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalStore::new(dir.path(), Duration::from_secs(5), 1 << 40).unwrap();
        store
            .batch(|batch| {
                for i in 0..n {
                    let (k, b) = fake_entry(i);
                    batch.put(&k, &b)?;
                }
                Ok::<_, kache::cache::StoreError>(())
            })
            .unwrap()
            .unwrap();
        let (probe, _) = fake_entry(n / 2);
        // A fresh cache per lookup: memory tier empty, the store opened, read and closed, as
        // for the first lookup of a process.
        g.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                let cache = Cache::new(kache::cache::CacheConfig {
                    dir: Some(dir.path().to_path_buf()),
                    max_size: 1 << 40,
                    lock_timeout: Duration::from_secs(5),
                    remote: None,
                    write_threads: 1,
                })
                .unwrap();
                assert!(matches!(cache.lookup(&probe), Lookup::Hit(..)));
            })
        });
    }
    g.finish();
}

fn key_derivation(c: &mut Criterion) {
    let mut g = c.benchmark_group("key_with_captured_host_array");
    g.sample_size(10);
    let src = "#[kernel] pub fn k(o: &mut [f32]) { let i = global_id_x(); if i < o.len() { o[i] = T[i]; } }";
    let jit = Jit::new(Config::in_memory()).unwrap();
    let m = jit.load_source("k.rs", src).unwrap();
    for mb in [1usize, 100] {
        let data: Vec<f32> = (0..mb * (1 << 20) / 4).map(|i| i as f32).collect();
        g.throughput(Throughput::Bytes((data.len() * 4) as u64));
        g.bench_function(BenchmarkId::new("bind_and_derive_MiB", mb), |b| {
            b.iter(|| {
                // Binding copies and hashes the array; the key then uses its hash.
                let k = m.with_global("T", &data).unwrap().kernel("k").unwrap();
                k.explain(target(), &Specialization::uniform(k.program(), Layout::C)).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, hit_vs_miss, store_size, key_derivation);
criterion_main!(benches);
