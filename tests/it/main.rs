//! The one integration-test binary (every test binary links LLVM statically, so there is one
//! plus tests/gpu.rs). Modules by subject.

// Tests and benchmarks fail by panicking: unwrap and expect are their assertions.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
// Shared with tests/gpu.rs; declared once here so that each is compiled once.
#[path = "../shared/capture_scenarios.rs"]
mod capture_scenarios;
#[path = "../shared/foreign.rs"]
mod foreign;

mod aggregates;
mod atomic_access;
mod cache;
mod captures;
mod cli;
mod corpus;
mod diagnostics;
mod direct;
mod dlpack;
mod docs;
mod fast_code;
mod faults;
mod generics;
mod invariants;
mod lang_features;
mod logging;
mod math;
mod modules;
mod multi_device;
mod new_user;
mod parallel;
mod prebuild;
mod prebuild_names;
mod proptests;
mod records;
mod redis_servers;
mod relocatable;
mod remote;
mod remote_acl;
mod remote_cluster;
mod remote_tls;
mod runtime;
mod rust_parity;
mod safety;
mod semantics;
mod serialize;
mod speed_suite;
mod tensor;
mod tma;
mod toolchain_keys;
mod trust;
mod tuning;
mod ui;
mod warp;
mod wgmma;
mod wide_access;
