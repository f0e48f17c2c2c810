//! Sorting pieces: a bitonic sort step, a radix sort's digit histograms and stream compaction
//! (benches/speed/kernels/sort.rs and sort.cu).

use kache::Grid;

use super::super::harness::*;

/// One compare-and-exchange step of a bitonic sort over 2^28 keys (stage k = 2^20, partners
/// 2^12 apart), out of place.
pub fn bitonic(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 1 << 12);
    let (j, k) = if run.full_size() { (1u32 << 12, 1u32 << 20) } else { (1 << 5, 1 << 9) };
    let mut r = rng(41);
    let x: Vec<u32> = (0..n).map(|_| (r() >> 32) as u32).collect();
    let xd = run.dev.upload(&x).map_err(msg)?;
    let yd = run.dev.alloc::<u32>(&[n]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let y = yd.download().map_err(msg)?;
        for i in 0..n {
            let p = i ^ j as usize;
            let ascending = i & k as usize == 0;
            let want = if (i < p) == ascending { x[i].min(x[p]) } else { x[i].max(x[p]) };
            if y[i] != want {
                return Err(format!("y[{i}] = {}, expected {want}", y[i]));
            }
        }
        Ok("exact".into())
    };
    let zero = vec![0u32; n];
    let reset = |_: &Run| yd.copy_from(&zero).map_err(msg);
    let work = Work::Bytes(8.0 * n as f64);
    let kern = run.k("bitonic_step")?;
    let blocks = n.div_ceil(256) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(kern, r, grid, checked, (&xd, &mut yd.clone(), j, k));
    let (px, py) = (xd.device_ptr(), yd.device_ptr());
    let nvrtc =
        |r: &Run| r.nvrtc()?.call("bitonic_step", (blocks, 1, 1), (256, 1, 1), &[A::P(px), A::P(py), A::I(n as i32), A::U(j), A::U(k)]);
    run.rows("bitonic_step", work, &reset, &kache, &nvrtc, &verify)
}

/// The four 8-bit digit histograms of 2^28 random 32-bit keys, in one grid-strided pass.
pub fn radix_hist(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 1 << 16);
    let mut r = rng(42);
    let keys: Vec<u32> = (0..n).map(|_| (r() >> 32) as u32).collect();
    let mut want = vec![0u64; 4 * 256];
    for key in &keys {
        for d in 0..4 {
            want[d * 256 + ((key >> (8 * d)) & 255) as usize] += 1;
        }
    }
    let kd = run.dev.upload(&keys).map_err(msg)?;
    let cd = run.dev.alloc::<u32>(&[4 * 256]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = cd.download().map_err(msg)?;
        match (0..4 * 256).find(|b| got[*b] as u64 != want[*b]) {
            Some(b) => Err(format!("digit {} bin {}: {}, expected {}", b / 256, b % 256, got[b], want[b])),
            None => Ok("exact".into()),
        }
    };
    let reset = |_: &Run| cd.copy_from(&[0u32; 4 * 256]).map_err(msg);
    let work = Work::Bytes(4.0 * n as f64);
    let k = run.k("radix_hist")?;
    let grid = Grid::new(STRIDED_BLOCKS, 256u32);
    let kache = |r: &Run, checked: bool| kache_launch!(k, r, grid, checked, (&kd, &mut cd.clone()));
    let (pk, pc) = (kd.device_ptr(), cd.device_ptr());
    let nvrtc = |r: &Run| r.nvrtc()?.call("radix_hist", (STRIDED_BLOCKS, 1, 1), (256, 1, 1), &[A::P(pk), A::I(n as i32), A::P(pc)]);
    run.rows("radix_hist", work, &reset, &kache, &nvrtc, &verify)
}

/// Stream compaction of 2^28 values uniform in [0, 1), keeping those above 0.5 (about half):
/// each launch starts from a zeroed count (a memset on the stream, in the timed launches too,
/// for every implementation).
pub fn compact(run: &mut Run) -> Result<(), String> {
    let n = run.size(1 << 28, 10_000);
    let threshold = 0.5f32;
    let x = uniform_f32(n, 43);
    // Every value is k / 2^24 (`uniform_f32`): count the kept ones by k.
    let key = |v: f32| (v as f64 * (1u64 << 24) as f64) as usize;
    let kept: usize = x.iter().filter(|v| **v > threshold).count();
    let xd = run.dev.upload(&x).map_err(msg)?;
    let od = run.dev.alloc::<f32>(&[n]).map_err(msg)?;
    let count = run.dev.alloc::<u32>(&[1]).map_err(msg)?;
    let verify = |_: &Run| -> Result<String, String> {
        let got = count.download().map_err(msg)?[0] as usize;
        if got != kept {
            return Err(format!("count {got}, expected {kept}"));
        }
        // The output is the kept values in some order: the same multiset.
        let out = od.download().map_err(msg)?;
        let mut times = vec![0i32; 1 << 24];
        for v in x.iter().filter(|v| **v > threshold) {
            times[key(*v)] += 1;
        }
        for (i, v) in out[..kept].iter().enumerate() {
            let k = key(*v);
            let whole = k as f64 == *v as f64 * (1u64 << 24) as f64;
            let left = *v > threshold && whole && k < times.len() && times[k] > 0;
            if !left {
                return Err(format!("out[{i}] = {v}: not one of the values kept (or kept too often)"));
            }
            times[k] -= 1;
        }
        Ok(format!("exact ({kept} kept, as a multiset)"))
    };
    let reset = |_: &Run| od.copy_from(&vec![0f32; n]).map_err(msg);
    // The count starts from zero in every launch.
    let zero_count = |r: &Run| if r.gpu.is_some() { zero_words(count.device_ptr(), 1) } else { count.copy_from(&[0]).map_err(msg) };
    let work = Work::Bytes(4.0 * (n + kept) as f64);
    let k = run.k("compact")?;
    let blocks = n.div_ceil(256) as u32;
    let grid = Grid::new(blocks, 256u32);
    let kache = |r: &Run, checked: bool| {
        zero_count(r)?;
        kache_launch!(k, r, grid, checked, (&xd, threshold, &mut od.clone(), &mut count.clone()))
    };
    let (px, po, pc) = (xd.device_ptr(), od.device_ptr(), count.device_ptr());
    let nvrtc = |r: &Run| {
        zero_count(r)?;
        r.nvrtc()?.call("compact", (blocks, 1, 1), (256, 1, 1), &[A::P(px), A::I(n as i32), A::F(threshold), A::P(po), A::P(pc)])
    };
    run.rows("compact", work, &reset, &kache, &nvrtc, &verify)
}
