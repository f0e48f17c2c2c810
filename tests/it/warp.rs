//! Tests: warp-level primitives on the host backend, against a model of CUDA's definitions
//! written here from the CUDA programming guide (segments of `width` lanes; `up` and `down`
//! keep the lane's own value past the segment's edge; `xor` may read earlier segments but not
//! later ones). Every shuffle form for every 32- and 64-bit type, with and without a width;
//! votes with divergent predicates, exited lanes and a partial last warp; `activemask` in
//! divergent code; `sync_warp`; misuse reported as a launch error instead of a hang; and the
//! PTX of every primitive accepted by ptxas for sm_70, sm_80 and sm_90.
#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use kache::{Arch, Device, DeviceArray, Element, Grid, Layout, Specialization, Target};

use crate::common;

/// The lane CUDA's `__shfl*_sync` reads for `lane`, or `lane` itself where it keeps its value.
fn cuda_source(mode: &str, lane: u32, arg: u32, width: u32) -> u32 {
    let seg = lane / width * width;
    match mode {
        "shfl_sync" => seg + arg % width,
        "shfl_up_sync" => {
            if lane % width >= arg {
                lane - arg
            } else {
                lane
            }
        }
        "shfl_down_sync" => {
            if lane % width + arg < width {
                lane + arg
            } else {
                lane
            }
        }
        _ => {
            let src = lane ^ arg;
            if src / width > lane / width { lane } else { src }
        }
    }
}

/// A value per thread that differs in every bit pattern a type has (high halves included).
trait Probe: Element + PartialEq + std::fmt::Debug {
    const NAME: &'static str;
    fn of(i: u64) -> Self;
}
macro_rules! probe {
    ($t:ty, $e:expr) => {
        impl Probe for $t {
            const NAME: &'static str = stringify!($t);
            fn of(i: u64) -> Self {
                #[allow(clippy::redundant_closure_call)]
                ($e)(i)
            }
        }
    };
}
probe!(i32, |i: u64| (i as i32).wrapping_mul(-7919) - 3);
probe!(u32, |i: u64| (i as u32).wrapping_mul(2_654_435_761));
probe!(i64, |i: u64| (i as i64).wrapping_mul(-0x1234_5678_9abc) + 11);
probe!(u64, |i: u64| i.wrapping_mul(0x9e37_79b9_7f4a_7c15));
probe!(usize, |i: u64| (i as usize).wrapping_mul(0x0101_0101_0101_0101) ^ (1 << 63));
probe!(f32, |i: u64| i as f32 * -1.25 + 0.5);
probe!(f64, |i: u64| i as f64 * 1e300 / 7.0 - 3.0);

fn shuffles_of<T: Probe>(dev: &Device) {
    let t = T::NAME;
    let src = format!(
        r#"
#[kernel]
pub fn idx(x: &[{t}], y: &mut [{t}], a: u32) {{ let i = global_id_x(); y[i] = shfl_sync(0xffff_ffff, x[i], a); }}
#[kernel]
pub fn up(x: &[{t}], y: &mut [{t}], a: u32) {{ let i = global_id_x(); y[i] = shfl_up_sync(0xffff_ffff, x[i], a); }}
#[kernel]
pub fn down(x: &[{t}], y: &mut [{t}], a: u32) {{ let i = global_id_x(); y[i] = shfl_down_sync(0xffff_ffff, x[i], a); }}
#[kernel]
pub fn xor(x: &[{t}], y: &mut [{t}], a: u32) {{ let i = global_id_x(); y[i] = shfl_xor_sync(0xffff_ffff, x[i], a); }}
#[kernel]
pub fn idx_w(x: &[{t}], y: &mut [{t}], a: u32, w: u32) {{ let i = global_id_x(); y[i] = shfl_sync(0xffff_ffff, x[i], a, w); }}
#[kernel]
pub fn up_w(x: &[{t}], y: &mut [{t}], a: u32, w: u32) {{ let i = global_id_x(); y[i] = shfl_up_sync(0xffff_ffff, x[i], a, w); }}
#[kernel]
pub fn down_w(x: &[{t}], y: &mut [{t}], a: u32, w: u32) {{ let i = global_id_x(); y[i] = shfl_down_sync(0xffff_ffff, x[i], a, w); }}
#[kernel]
pub fn xor_w(x: &[{t}], y: &mut [{t}], a: u32, w: u32) {{ let i = global_id_x(); y[i] = shfl_xor_sync(0xffff_ffff, x[i], a, w); }}
"#
    );
    let jit = common::memory_jit();
    let m = jit.load_source(&format!("shfl_{t}.rs"), &src).unwrap();
    let n = 128usize;
    let data: Vec<T> = (0..n as u64).map(T::of).collect();
    let x = dev.upload(&data).unwrap();
    let mut y: DeviceArray<T> = dev.alloc(&[n]).unwrap();
    for (kernel, mode) in [("idx", "shfl_sync"), ("up", "shfl_up_sync"), ("down", "shfl_down_sync"), ("xor", "shfl_xor_sync")] {
        let plain = m.kernel(kernel).unwrap();
        let with_width = m.kernel(&format!("{kernel}_w")).unwrap();
        for a in [0u32, 1, 3, 5, 16, 31] {
            plain.launch(dev, Grid::linear(n, 64), (&x, &mut y, a)).unwrap();
            let got = y.download().unwrap();
            for i in 0..n {
                let want = &data[i / 32 * 32 + cuda_source(mode, (i % 32) as u32, a, 32) as usize];
                assert_eq!(&got[i], want, "{t} {mode}({a}) at thread {i}");
            }
            for w in [1u32, 2, 8, 16, 32] {
                if mode != "shfl_sync" && mode != "shfl_xor_sync" && a >= w {
                    continue;
                }
                with_width.launch(dev, Grid::linear(n, 64), (&x, &mut y, a, w)).unwrap();
                let got = y.download().unwrap();
                for i in 0..n {
                    let want = &data[i / 32 * 32 + cuda_source(mode, (i % 32) as u32, a % 32, w) as usize];
                    assert_eq!(&got[i], want, "{t} {mode}({a}, width {w}) at thread {i}");
                }
            }
        }
    }
}

#[test]
fn every_shuffle_of_every_type_reads_the_lane_cuda_defines() {
    let dev = Device::host();
    shuffles_of::<i32>(&dev);
    shuffles_of::<u32>(&dev);
    shuffles_of::<i64>(&dev);
    shuffles_of::<u64>(&dev);
    shuffles_of::<usize>(&dev);
    shuffles_of::<f32>(&dev);
    shuffles_of::<f64>(&dev);
}

const VOTES: &str = r#"
#[kernel]
pub fn votes(x: &[u32], ballot: &mut [u32], all: &mut [bool], any: &mut [bool], lanes: &mut [u32]) {
    let i = global_id_x();
    if x[i] == 7 {
        return;
    }
    let p = x[i] % 2 == 1;
    ballot[i] = ballot_sync(0xffff_ffff, p);
    all[i] = all_sync(0xffff_ffff, p);
    any[i] = any_sync(0xffff_ffff, x[i] > 100);
    lanes[i] = lane_id() + 100 * warp_size();
}
"#;

#[test]
fn votes_count_the_lanes_that_take_part_exited_and_missing_ones_excluded() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let k = jit.load_source("votes.rs", VOTES).unwrap().kernel("votes").unwrap();
    // 3 blocks of 40 threads: warps of 32 and of 8 lanes. 7 means "return at once".
    let block = 40usize;
    let n = 3 * block;
    let x: Vec<u32> = (0..n as u32)
        .map(|i| {
            if i % 11 == 3 {
                7
            } else if i == 45 {
                101
            } else {
                i * 3 % 4
            }
        })
        .collect();
    let xd = dev.upload(&x).unwrap();
    let mut ballot = dev.alloc::<u32>(&[n]).unwrap();
    let mut all = dev.alloc::<bool>(&[n]).unwrap();
    let mut any = dev.alloc::<bool>(&[n]).unwrap();
    let mut lanes = dev.alloc::<u32>(&[n]).unwrap();
    k.launch(&dev, Grid::new(3u32, block as u32), (&xd, &mut ballot, &mut all, &mut any, &mut lanes)).unwrap();
    let (ballot, all, any, lanes) =
        (ballot.download().unwrap(), all.download().unwrap(), any.download().unwrap(), lanes.download().unwrap());
    for b in 0..3 {
        for (start, len) in [(0, 32), (32, 8)] {
            let ids: Vec<usize> = (start..start + len).map(|t| b * block + t).collect();
            let live: Vec<usize> = ids.iter().copied().filter(|i| x[*i] != 7).collect();
            let want_ballot = live.iter().filter(|i| x[**i] % 2 == 1).fold(0u32, |m, i| m | 1 << ((i - b * block - start) as u32));
            let want_all = live.iter().all(|i| x[*i] % 2 == 1);
            let want_any = live.iter().any(|i| x[*i] > 100);
            for &i in &live {
                assert_eq!(ballot[i], want_ballot, "ballot at {i}");
                assert_eq!(all[i], want_all, "all at {i}");
                assert_eq!(any[i], want_any, "any at {i}");
                assert_eq!(lanes[i], ((i - b * block) % 32) as u32 + 3200, "lane_id, warp_size at {i}");
            }
        }
    }
    assert!(any[45] && !any[0], "block 1's first warp has the value 101; block 0 does not");
}

#[test]
fn activemask_names_the_lanes_of_a_divergent_branch_and_sync_warp_orders_shared_memory() {
    let src = r#"
#[kernel]
pub fn k(x: &[u32], masks: &mut [u32], swapped: &mut [u32]) {
    let tile = shared_array::<u32, 64>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    if x[i] % 3 == 0 {
        masks[i] = activemask();
    } else {
        masks[i] = activemask() | 0x8000_0000;
    }
    tile[t] = x[i];
    sync_warp(0xffff_ffff);
    swapped[i] = tile[t ^ 1];
}
"#;
    let dev = Device::host();
    let jit = common::memory_jit();
    let k = jit.load_source("active.rs", src).unwrap().kernel("k").unwrap();
    let n = 64usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i * 7 + i / 5).collect();
    let xd = dev.upload(&x).unwrap();
    let mut masks = dev.alloc::<u32>(&[n]).unwrap();
    let mut swapped = dev.alloc::<u32>(&[n]).unwrap();
    k.launch(&dev, Grid::linear(n, 64), (&xd, &mut masks, &mut swapped)).unwrap();
    let (masks, swapped) = (masks.download().unwrap(), swapped.download().unwrap());
    for i in 0..n {
        let w = i / 32 * 32;
        let same = (w..w + 32).filter(|j| x[*j].is_multiple_of(3) == x[i].is_multiple_of(3)).fold(0u32, |m, j| m | 1 << (j - w));
        let want = if x[i].is_multiple_of(3) { same } else { same | 0x8000_0000 };
        assert_eq!(masks[i], want, "activemask at {i}");
        assert_eq!(swapped[i], x[i ^ 1], "sync_warp exchange at {i}");
    }
}

/// A warp-shuffle reduction, a block scan with `shfl_up_sync`, and `ballot_sync` compaction:
/// the speed suite's warp kernels give Rust's answers.
#[test]
fn the_speed_suites_warp_kernels_match_rust() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let m = jit.load_file(common::root().join("benches/speed/kernels.rs")).unwrap();
    let n = 10_000usize;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 37) % 101) as f32 * 0.25).collect();
    let x = dev.upload(&xs).unwrap();
    let mut out = dev.alloc::<f32>(&[1]).unwrap();
    m.kernel("reduce_warp").unwrap().launch(&dev, Grid::new(8u32, 256u32), (&x, &mut out)).unwrap();
    let want: f64 = xs.iter().map(|v| *v as f64).sum();
    assert_eq!(out.download().unwrap()[0] as f64, want, "every partial sum is exact in f32");
    // The single-pass scan: 200,000 elements are 49 tiles of 4096, so the look-back of the
    // later tiles reads windows of 32 statuses; three launches on the same statuses (epochs 1,
    // 2 and 3) give the same answer.
    let n = 200_000usize;
    let tile = 4096;
    let us: Vec<u32> = (0..n as u32).map(|i| i % 13).collect();
    let u = dev.upload(&us).unwrap();
    let tiles = n.div_ceil(tile);
    let mut status = dev.alloc::<u64>(&[tiles]).unwrap();
    let mut acc = 0u32;
    let want: Vec<u32> = us
        .iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    for epoch in 1..=3u64 {
        let mut y = dev.alloc::<u32>(&[n]).unwrap();
        m.kernel("scan").unwrap().launch(&dev, Grid::new(tiles as u32, 256u32), (&u, &mut y, &mut status, epoch)).unwrap();
        assert_eq!(y.download().unwrap(), want, "launch {epoch}");
        // Every tile ends with its inclusive prefix, published in this launch's epoch.
        let words = status.download().unwrap();
        for (t, w) in words.iter().enumerate() {
            assert_eq!((w >> 34, (w >> 32) & 3, *w as u32), (epoch, 2, want[(tile * (t + 1)).min(n) - 1]), "tile {t}");
        }
    }
}

#[test]
fn a_lane_outside_its_own_mask_and_a_deadlock_are_launch_errors() {
    let dev = Device::host();
    let jit = common::memory_jit();
    let src = r#"
#[kernel]
pub fn outside(x: &mut [u32]) {
    let i = global_id_x();
    x[i] = shfl_sync(0x0000_ffff, x[i], 0);
}
#[kernel]
pub fn split(x: &mut [u32]) {
    let i = global_id_x();
    if lane_id() < 16 {
        x[i] = shfl_sync(0xffff_ffff, x[i], 0);
    } else {
        x[i] = ballot_sync(0xffff_ffff, true);
    }
}
#[kernel]
pub fn barrier_in_warp(x: &mut [u32]) {
    let i = global_id_x();
    if lane_id() == 3 {
        sync_threads();
    } else {
        x[i] = shfl_down_sync(0xffff_ffff, x[i], 1);
    }
}
"#;
    let m = jit.load_source("bad_warps.rs", src).unwrap();
    let mut x = dev.alloc::<u32>(&[64]).unwrap();
    for (kernel, want) in [
        ("outside", "lane 16 calls shfl_sync with mask 0x0000ffff, which leaves the lane itself out"),
        ("split", "deadlock: thread 0 (warp 0, lane 0) waits in shfl_sync with mask 0xffffffff for lane 16, which waits in ballot_sync"),
        ("barrier_in_warp", "for lane 3, which waits at sync_threads"),
    ] {
        let e = m.kernel(kernel).unwrap().launch(&dev, Grid::linear(64, 64), (&mut x,)).unwrap_err().to_string();
        assert!(e.contains(want), "{kernel}: {e}");
    }
}

#[test]
fn fences_run_on_the_host_and_every_primitive_assembles_for_sm_70_80_90() {
    let src = r#"
#[kernel]
pub fn all_of_them(x: &mut [u64], f: &mut [f64], flags: &mut [u32]) {
    let i = global_id_x();
    let mask = activemask();
    let a = shfl_sync(mask, x[i], 0);
    let b = shfl_up_sync(0xffff_ffff, f[i], 1);
    let c = shfl_down_sync(0xffff_ffff, i as i32, 2, 16);
    let d = shfl_xor_sync(0xffff_ffff, x[i] as f32, 4);
    let v = ballot_sync(0xffff_ffff, a > 3);
    if all_sync(mask, b > 0.0) || any_sync(mask, c < 0) {
        flags[i] = v;
    }
    sync_warp(mask);
    x[i] = a + d as u64 + (lane_id() + warp_size()) as u64;
    threadfence_block();
    threadfence();
    threadfence_system();
    f[i] = b;
}
"#;
    let jit = common::memory_jit();
    let k = jit.load_source("all.rs", src).unwrap().kernel("all_of_them").unwrap();
    let dev = Device::host();
    let mut x = dev.upload(&(0..64u64).collect::<Vec<_>>()).unwrap();
    let mut f = dev.upload(&(0..64).map(|i| i as f64).collect::<Vec<_>>()).unwrap();
    let mut flags = dev.alloc::<u32>(&[64]).unwrap();
    k.launch(&dev, Grid::linear(64, 64), (&mut x, &mut f, &mut flags)).unwrap();
    let f = f.download().unwrap();
    assert_eq!(f[0], 0.0);
    assert_eq!(f[1], 0.0, "shfl_up by one: lane 1 reads lane 0");
    assert_eq!(f[33], 32.0);
    let ptxas = common::ptxas();
    for arch in ["sm_70", "sm_80", "sm_90"] {
        let c = k.compile(Target::Nvptx(Arch::parse(arch).unwrap()), &Specialization::uniform(k.program(), Layout::C)).unwrap();
        let ptx = c.ptx().unwrap();
        for want in [
            "activemask.b32",
            "shfl.sync.idx.b32",
            "shfl.sync.up.b32",
            "shfl.sync.down.b32",
            "shfl.sync.bfly.b32",
            "vote.sync.ballot.b32",
            "vote.sync.all.pred",
            "vote.sync.any.pred",
            "bar.warp.sync",
            "membar.cta",
            "membar.gl",
            "membar.sys",
        ] {
            assert!(ptx.contains(want), "{arch}: no `{want}` in\n{ptx}");
        }
        // The width-16 down-shuffle packs c = ((32 - 16) << 8) | 31 = 4127.
        assert!(ptx.contains("4127"), "{arch}: width 16 is not in the shuffle's operand:\n{ptx}");
        if let Some(p) = &ptxas {
            kache::toolchain::ptxas(p, ptx, arch).unwrap_or_else(|e| panic!("ptxas {arch}: {e}"));
        }
    }
}
