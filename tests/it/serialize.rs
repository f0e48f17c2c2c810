//! Serialised kernels: one wire format with cache entries (the entry envelope, carrying the
//! kernel's interface), round trips that launch on the host backend, and typed errors for
//! damaged bytes, cache entries, other formats and host code built for another CPU.

use kache::cache::envelope::{self, BuiltFor, ParamTy};
use kache::cache::{ArtifactKind, Meta};
use kache::{Arch, CompiledKernel, Device, Error, Grid, Layout, Order, Origin, Specialization, Target};

use crate::common::memory_jit;

const SRC: &str = r#"
const BLOCK: usize = 64;

#[kernel]
pub fn block_sums(x: &[f32], sums: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride { tile[t] += tile[t + stride]; }
        sync_threads();
        stride /= 2;
    }
    if t == 0 { sums[block_idx_x() as usize] = tile[0]; }
}

#[kernel]
pub fn shift(a: &Array<f64, 2>, by: f64, out: &mut Array<f64, 2>) {
    let i = global_id_y();
    let j = global_id_x();
    if i < a.shape(0) && j < a.shape(1) { out[[i, j]] = a[[i, j]] + by * (10 * i + j) as f64; }
}
"#;

/// `CompiledKernel::deserialize` of bytes that `serialize` wrote, damaged copies of them, or
/// envelopes made here that must be refused; none of what it returns runs anything but
/// kache's own output.
fn load(bytes: &[u8]) -> kache::Result<CompiledKernel> {
    // SAFETY: see above: every byte string given is kache's, damaged (refused) or refused.
    unsafe { CompiledKernel::deserialize(bytes) }
}

fn host_sums() -> kache::Result<Vec<u8>> {
    memory_jit().load_source("ser.rs", SRC)?.kernel("block_sums")?.serialize(Target::Host)
}

fn bad_serialized(r: kache::Result<CompiledKernel>) -> String {
    match r {
        Err(Error::BadSerializedKernel(m)) => m,
        Err(other) => panic!("expected BadSerializedKernel, got {other}"),
        Ok(_) => panic!("bad bytes were loaded"),
    }
}

#[test]
fn a_serialised_kernel_keeps_its_shared_memory_and_block_synchronisation() {
    let dev = Device::host();
    let bytes = host_sums().unwrap();
    let k = load(&bytes).unwrap();
    assert_eq!(k.origin(), Origin::Deserialized);
    assert_eq!(k.target(), Target::Host);
    assert_eq!(k.name(), "block_sums");
    let n = 64 * 5 - 7;
    let x = dev.upload(&(0..n).map(|i| (i % 13) as f32).collect::<Vec<_>>()).unwrap();
    let mut sums = dev.alloc::<f32>(&[5]).unwrap();
    k.launch(&dev, Grid::linear(n, 64), (&x, &mut sums)).unwrap();
    let want: Vec<f32> = (0..5).map(|b| (b * 64..((b + 1) * 64).min(n)).map(|i| (i % 13) as f32).sum()).collect();
    assert_eq!(sums.download().unwrap(), want);
    // The envelope records what the kernel needs to launch without its source.
    let (meta, _) = envelope::decode(&bytes, None).unwrap();
    let interface = meta.interface.unwrap();
    assert!(interface.cooperative);
    // Its 256-byte array, at an odd multiple of its 128-byte alignment (abi::shared_offsets).
    assert_eq!(interface.static_shared, 128 + 64 * 4);
    assert_eq!(interface.built_for, BuiltFor::HostCpu(kache::codegen::host_cpu()));
    assert_eq!(meta.kind, ArtifactKind::HostBitcode);
    assert_eq!(meta.key, k.key(), "the key echo is the compiled kernel's key");
    assert!(matches!(interface.params[0].ty, ParamTy::Array { layout: Layout::C, .. }));
    assert_eq!(interface.params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["x", "sums"]);
}

#[test]
fn a_serialised_specialisation_keeps_its_layouts_and_refuses_others() {
    let dev = Device::host();
    let k = memory_jit().load_source("ser.rs", SRC).unwrap().kernel("shift").unwrap();
    let spec = Specialization { layouts: vec![Some(Layout::F), None, Some(Layout::C)] };
    let loaded = load(&k.compile(Target::Host, &spec).unwrap().serialize().unwrap()).unwrap();
    assert_eq!(loaded.spec(), &spec);
    assert_eq!(loaded.signature(), k.signature());
    let logical: Vec<f64> = (0..12).map(|x| x as f64).collect();
    let f_order: Vec<f64> = (0..4).flat_map(|j| (0..3).map(move |i| (i * 4 + j) as f64)).collect();
    let a = dev.upload_nd(&f_order, &[3, 4], Order::F).unwrap();
    let mut out = dev.alloc::<f64>(&[3, 4]).unwrap();
    loaded.launch(&dev, Grid::new((4u32, 3u32), (2u32, 2u32)), (&a, 2.0f64, &mut out)).unwrap();
    let want: Vec<f64> = (0..3).flat_map(|i| (0..4).map(move |j| (i * 4 + j) as f64 + 2.0 * (10 * i + j) as f64)).collect();
    assert_eq!(out.download().unwrap(), want);
    // A C-ordered input selects another specialisation, which this kernel is not.
    let c = dev.upload_nd(&logical, &[3, 4], Order::C).unwrap();
    let e = loaded.launch(&dev, Grid::new((4u32, 3u32), (2u32, 2u32)), (&c, 2.0f64, &mut out)).unwrap_err();
    assert!(matches!(&e, Error::BadArgument { param, .. } if param == "(layouts)"), "{e}");
}

#[test]
fn ptx_records_its_architecture() {
    let k = memory_jit().load_source("ser.rs", SRC).unwrap().kernel("block_sums").unwrap();
    let arch = Arch::parse("sm_80").unwrap();
    let bytes = k.serialize(Target::Nvptx(arch)).unwrap();
    let (meta, payload) = envelope::decode(&bytes, None).unwrap();
    assert_eq!(meta.kind, ArtifactKind::Ptx);
    assert_eq!(meta.interface.as_ref().unwrap().built_for, BuiltFor::Gpu(arch));
    let loaded = load(&bytes).unwrap();
    assert_eq!(loaded.target(), Target::Nvptx(arch));
    assert_eq!(loaded.ptx().unwrap().as_bytes(), payload);
    assert!(loaded.ptx().unwrap().contains(".target sm_80"));
    // GPU code does not run on the host backend: a typed error, nothing runs.
    let dev = Device::host();
    let x = dev.upload(&[1.0f32; 4]).unwrap();
    let mut sums = dev.alloc::<f32>(&[1]).unwrap();
    assert!(matches!(loaded.launch(&dev, Grid::linear(4, 64), (&x, &mut sums)), Err(Error::Device(_))));
}

#[test]
fn every_damaged_byte_and_every_truncation_is_a_typed_error() {
    let bytes = host_sums().unwrap();
    let payload_len = envelope::decode(&bytes, None).unwrap().1.len();
    let header = bytes.len() - payload_len;
    // Every byte of the envelope's header, and a spread of the payload's.
    let positions = (0..header).chain((header..bytes.len()).step_by(97)).chain([bytes.len() - 1]);
    for i in positions {
        let mut bad = bytes.clone();
        bad[i] ^= 0x10;
        bad_serialized(load(&bad));
    }
    for n in (0..header).chain((header..bytes.len()).step_by(101)) {
        bad_serialized(load(&bytes[..n]));
    }
    let mut longer = bytes.clone();
    longer.push(0);
    bad_serialized(load(&longer));
}

#[test]
fn host_code_built_for_another_cpu_is_refused_with_both_cpus_named() {
    let bytes = host_sums().unwrap();
    let (mut meta, payload) = envelope::decode(&bytes, None).unwrap();
    let this = kache::codegen::host_cpu();
    let (name, features) = this.split_once(' ').unwrap_or((&this, ""));
    for (other, shown) in [
        ("some-other-cpu +sse2".to_string(), "built for `some-other-cpu`"),
        // Same CPU name, one more feature: the difference is named.
        (format!("{name} {features},+kache-test-feature"), "+kache-test-feature"),
    ] {
        meta.interface.as_mut().unwrap().built_for = BuiltFor::HostCpu(other.clone());
        match load(&envelope::encode(&meta, payload)) {
            Err(e @ Error::ForeignHostCpu { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("'block_sums'") && msg.contains(shown) && msg.contains("Serialise it again"), "{msg}");
                let Error::ForeignHostCpu { built_for, this_cpu, .. } = e else { unreachable!() };
                assert_eq!((built_for, this_cpu), (other, this.clone()));
            }
            Err(other) => panic!("expected ForeignHostCpu, got {other}"),
            Ok(_) => panic!("host code for another CPU was loaded"),
        }
    }
}

#[test]
fn a_kernel_serialised_by_another_kache_build_is_refused_with_both_named() {
    let bytes = host_sums().unwrap();
    let (mut meta, payload) = envelope::decode(&bytes, None).unwrap();
    let this = meta.producer.clone();
    meta.producer = "0.0.1+0123456789abcdef".into();
    let msg = bad_serialized(load(&envelope::encode(&meta, payload)));
    assert!(msg.contains("'block_sums'") && msg.contains("0.0.1+0123456789abcdef") && msg.contains(&this), "{msg}");
    // The same envelope re-encoded with this build's name loads.
    meta.producer = this;
    load(&envelope::encode(&meta, payload)).unwrap();
}

#[test]
fn cache_entries_other_formats_and_mismatched_kinds_are_refused() {
    let bytes = host_sums().unwrap();
    let (meta, payload) = envelope::decode(&bytes, None).unwrap();
    // A cache entry: the same envelope without the interface.
    let entry = Meta { interface: None, ..meta.clone() };
    let msg = bad_serialized(load(&envelope::encode(&entry, payload)));
    assert!(msg.contains("cache entry"), "{msg}");
    // Host bitcode that claims to be for a GPU, with a valid checksum.
    let mut gpu = meta.clone();
    gpu.interface.as_mut().unwrap().built_for = BuiltFor::Gpu(Arch::parse("sm_90").unwrap());
    bad_serialized(load(&envelope::encode(&gpu, payload)));
    // The format before the envelope, and bytes that are no kernel at all.
    let mut old = b"KACHEKRN".to_vec();
    old.extend_from_slice(&1u16.to_le_bytes());
    old.extend_from_slice(&[0; 64]);
    bad_serialized(load(&old));
    bad_serialized(load(b""));
}
