//! Compile speed: the front end (parse + check) and the full compile to PTX, for a small
//! (saxpy), a medium (about 100 lines) and a large (about 1,000 lines) module. Run with
//! `cargo bench --bench compile`.

// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use criterion::{Criterion, criterion_group, criterion_main};
use kache::{Arch, Config, Jit, Layout, Specialization, Target};

#[path = "support.rs"]
mod support;

fn front_end(c: &mut Criterion) {
    let mut g = c.benchmark_group("parse_and_check");
    for (size, src, _) in support::sources() {
        g.bench_function(size, |b| {
            b.iter(|| {
                let m = kache::lang::parse(kache::lang::SourceFile::new("k.rs", src.as_str())).unwrap();
                kache::lang::check_module(&m, &kache::lang::Env::default()).unwrap()
            })
        });
    }
    g.finish();
}

fn compile_to_ptx(c: &mut Criterion) {
    let target = Target::Nvptx(Arch::parse("sm_80").unwrap());
    let mut g = c.benchmark_group("compile_to_ptx");
    g.sample_size(20);
    for (size, src, kernel) in support::sources() {
        g.bench_function(size, |b| {
            b.iter(|| {
                // A fresh in-memory JIT: parse, check, key, miss, LLVM, PTX.
                let jit = Jit::new(Config::in_memory()).unwrap();
                let k = jit.load_source("k.rs", &src).unwrap().kernel(kernel).unwrap();
                let c = k.compile(target, &Specialization::uniform(k.program(), Layout::C)).unwrap();
                assert!(c.ptx().unwrap().len() > 100);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, front_end, compile_to_ptx);
criterion_main!(benches);
