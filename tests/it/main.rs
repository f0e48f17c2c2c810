//! The one integration-test binary (every test binary links LLVM statically, so there is one
//! plus tests/gpu.rs). Modules by subject.

mod common;

mod cache;
mod captures;
mod cli;
mod corpus;
mod diagnostics;
mod docs;
mod invariants;
mod prebuild;
mod prebuild_names;
mod proptests;
mod redis_servers;
mod remote;
mod remote_acl;
mod remote_cluster;
mod remote_tls;
mod runtime;
mod semantics;
mod serialize;
