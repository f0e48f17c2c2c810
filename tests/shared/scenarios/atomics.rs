//! Scenarios: atomics, reductions, scans and sorts across threads and blocks.

use kache::{Device, Grid};

use super::helpers::*;

/// reduce_shared.rs: multi-block shared-memory reductions (partials, atomics into a 1-d and a
/// 0-d array, a grid smaller than the data).
pub fn reduce_shared(dev: &Device) -> Outcome {
    let m = module("reduce_shared.rs")?;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| (i % 17) as f32).collect();
    let nb = blocks(n, 128) as usize;
    let mut partials = zeros::<f32>(dev, &[nb])?;
    let mut total = zeros::<f32>(dev, &[1])?;
    launch(&m, "block_sum_f32", dev, Grid::linear(n, 128), (&up(dev, &x)?, &mut partials, &mut total))?;
    let want: Vec<f32> = x.chunks(128).map(|c| c.iter().sum()).collect();
    exact("block_sum_f32 partials", &dl(&partials)?, &want)?;
    exact("block_sum_f32 total", &dl(&total)?, &[x.iter().sum::<f32>()])?;

    let n = 5000;
    let x: Vec<i64> = (0..n).map(|i| (i as i64 - 2500) * 1_000_003).collect();
    let mut total = dev.upload_scalar(7i64).ctx("upload_scalar")?;
    // 3 blocks of 128 threads for 5000 elements: the kernel's grid-stride loop covers the rest.
    launch(&m, "block_sum_i64", dev, Grid::new(3u32, 128u32), (&up(dev, &x)?, &mut total))?;
    eq("block_sum_i64", &dl(&total)?, &[7 + x.iter().sum::<i64>()])?;

    let n = 777;
    let x: Vec<i32> = (0..n).map(|i| (rnd(i as u64) % 2_000_000) as i32 - 1_000_000).collect();
    let mut out = up(dev, &[i32::MIN])?;
    launch(&m, "block_max_i32", dev, Grid::linear(n, 128), (&up(dev, &x)?, &mut out))?;
    eq("block_max_i32", &dl(&out)?, &[*x.iter().max().unwrap()])
}

/// reduce_dynamic_shared.rs: dynamic shared memory sized at launch, two block sizes.
pub fn reduce_dynamic_shared(dev: &Device) -> Outcome {
    let m = module("reduce_dynamic_shared.rs")?;
    let n = 500;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 17.0).collect();
    let xd = up(dev, &x)?;
    for block in [64usize, 128] {
        let nb = blocks(n, block) as usize;
        let mut partials = zeros::<f64>(dev, &[nb])?;
        let grid = Grid::linear(n, block as u32).with_shared_mem((block * 8) as u32);
        launch(&m, "dyn_block_sum_f64", dev, grid, (&xd, &mut partials))?;
        let want: Vec<f64> = x.chunks(block).map(|c| c.iter().sum()).collect();
        exact(&format!("dyn_block_sum_f64 (block {block})"), &dl(&partials)?, &want)?;
    }

    let n = 150;
    let x: Vec<i32> = (0..n).map(|i| i as i32 * 3 - 7).collect();
    let mut xd = up(dev, &x)?;
    launch(&m, "dyn_reverse_blocks", dev, Grid::linear(n, 32).with_shared_mem(32 * 4), (&mut xd,))?;
    let want: Vec<i32> = x.chunks(32).flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>()).collect();
    eq("dyn_reverse_blocks", &dl(&xd)?, &want)?;

    // Static and dynamic shared memory past 48 KiB together (32 KiB + 24 KiB), neither alone.
    let n = 384;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 9.0).collect();
    let mut out = zeros::<f32>(dev, &[n])?;
    launch(&m, "dyn_beside_static", dev, Grid::linear(n, 128).with_shared_mem(24 << 10), (&up(dev, &x)?, &mut out))?;
    let want: Vec<f32> = x.chunks(128).flat_map(|c| c.iter().rev().map(|v| 3.0 * v).collect::<Vec<_>>()).collect();
    exact("dyn_beside_static", &dl(&out)?, &want)?;

    let mut out = zeros::<i32>(dev, &[16])?;
    launch(&m, "dyn_aliases", dev, Grid::linear(16, 16).with_shared_mem(16 * 4), (&mut out,))?;
    let mut want: Vec<i32> = (0..16).map(|t| t * 2).collect();
    want[0] = 16;
    eq("dyn_aliases", &dl(&out)?, &want)
}

/// histogram_atomics.rs: contended atomic adds on u32, i64, f64 and u64 (shared then global).
pub fn histogram_atomics(dev: &Device) -> Outcome {
    let m = module("histogram_atomics.rs")?;
    let n = 5000;
    let values: Vec<u32> = (0..n).map(|i| (i * i + 3) as u32).collect();
    let mut bins = zeros::<u32>(dev, &[7])?;
    launch(&m, "histogram_u32", dev, Grid::linear(n, 128), (&up(dev, &values)?, &mut bins))?;
    let mut want = vec![0u32; 7];
    for v in &values {
        want[*v as usize % 7] += 1;
    }
    eq("histogram_u32", &dl(&bins)?, &want)?;

    let n = 3001;
    let values: Vec<i32> = (0..n).map(|i| (i % 25) as i32 - 5).collect();
    let weights: Vec<f64> = (0..n).map(|i| (i % 4) as f64 - 1.0).collect();
    let mut counts = zeros::<i64>(dev, &[6])?;
    let mut sums = zeros::<f64>(dev, &[6])?;
    launch(&m, "histogram_weighted", dev, Grid::linear(n, 256), (&up(dev, &values)?, &up(dev, &weights)?, &mut counts, &mut sums))?;
    let mut wc = vec![0i64; 6];
    let mut ws = vec![0f64; 6];
    for i in 0..n {
        let b = if values[i] < 0 { 0 } else { values[i] as usize % 5 + 1 };
        wc[b] += 1;
        ws[b] += weights[i];
    }
    eq("histogram_weighted counts", &dl(&counts)?, &wc)?;
    exact("histogram_weighted sums", &dl(&sums)?, &ws)?;

    let n = 3000;
    let values: Vec<u32> = (0..n).map(|i| rnd(i as u64) as u32).collect();
    let mut bins = zeros::<u64>(dev, &[16])?;
    launch(&m, "histogram_shared", dev, Grid::linear(n, 128), (&up(dev, &values)?, &mut bins))?;
    let mut want = vec![0u64; 16];
    for v in &values {
        want[(*v & 15) as usize] += 1;
    }
    eq("histogram_shared", &dl(&bins)?, &want)
}

/// atomics_minmax.rs: atomic max/min on every numeric type, atomic add on every type, all
/// threads contending for one element.
pub fn atomics_minmax(dev: &Device) -> Outcome {
    let m = module("atomics_minmax.rs")?;
    let n = 999;
    let g = Grid::linear(n, 128);

    let x: Vec<i32> = (0..n).map(|i| rnd(i as u64) as i32).collect();
    let mut mx = up(dev, &[i32::MIN])?;
    let mut mn = up(dev, &[i32::MAX])?;
    let mut old = zeros::<i32>(dev, &[n])?;
    launch(&m, "minmax_i32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn, &mut old))?;
    let top = *x.iter().max().unwrap();
    eq("minmax_i32 max", &dl(&mx)?, &[top])?;
    eq("minmax_i32 min", &dl(&mn)?, &[*x.iter().min().unwrap()])?;
    for (i, o) in dl(&old)?.iter().enumerate() {
        if *o != i32::MIN && !x.contains(o) {
            return Err(format!("minmax_i32: atomic_max returned {o} to thread {i}, which is neither the initial value nor an input"));
        }
    }
    if !dl(&old)?.contains(&i32::MIN) {
        return Err("minmax_i32: no thread saw the initial value as the old value".into());
    }

    let x: Vec<u32> = (0..n).map(|i| rnd(i as u64 + 1000) as u32).collect();
    let (mut mx, mut mn) = (up(dev, &[0u32])?, up(dev, &[u32::MAX])?);
    launch(&m, "minmax_u32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_u32", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<i64> = (0..n).map(|i| rnd(i as u64 + 2000) as i64).collect();
    let (mut mx, mut mn) = (up(dev, &[i64::MIN])?, up(dev, &[i64::MAX])?);
    launch(&m, "minmax_i64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_i64", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<u64> = (0..n).map(|i| rnd(i as u64 + 3000)).collect();
    let (mut mx, mut mn) = (up(dev, &[0u64])?, up(dev, &[u64::MAX])?);
    launch(&m, "minmax_u64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    eq("minmax_u64", &[dl(&mx)?[0], dl(&mn)?[0]], &[*x.iter().max().unwrap(), *x.iter().min().unwrap()])?;

    let x: Vec<f32> = (0..n).map(|i| rndf(i as u64 + 4000, -1e6, 1e6) as f32).collect();
    let (mut mx, mut mn) = (up(dev, &[f32::MIN])?, up(dev, &[f32::MAX])?);
    launch(&m, "minmax_f32", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    let (fmax, fmin) = (x.iter().copied().fold(f32::MIN, f32::max), x.iter().copied().fold(f32::MAX, f32::min));
    exact("minmax_f32", &[dl(&mx)?[0], dl(&mn)?[0]], &[fmax, fmin])?;

    let x: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 5000, -1e300, 1e300)).collect();
    let (mut mx, mut mn) = (up(dev, &[f64::NEG_INFINITY])?, up(dev, &[f64::INFINITY])?);
    launch(&m, "minmax_f64", dev, g, (&up(dev, &x)?, &mut mx, &mut mn))?;
    let (dmax, dmin) = (x.iter().copied().fold(f64::MIN, f64::max), x.iter().copied().fold(f64::MAX, f64::min));
    exact("minmax_f64", &[dl(&mx)?[0], dl(&mn)?[0]], &[dmax, dmin])?;

    // Negative floats only: a max/min that compared bit patterns as integers would fail here.
    let x: Vec<f32> = (0..200).map(|i| -1.0 - i as f32 * 0.5).collect();
    let (mut mx, mut mn) = (up(dev, &[f32::NEG_INFINITY])?, up(dev, &[0.0f32])?);
    launch(&m, "minmax_f32", dev, Grid::linear(200, 64), (&up(dev, &x)?, &mut mx, &mut mn))?;
    exact("minmax_f32 (negative inputs)", &[dl(&mx)?[0], dl(&mn)?[0]], &[-1.0, -100.5])?;

    let n = 1000;
    let mut si32 = zeros::<i32>(dev, &[1])?;
    let mut su32 = zeros::<u32>(dev, &[1])?;
    let mut si64 = zeros::<i64>(dev, &[1])?;
    let mut su64 = zeros::<u64>(dev, &[1])?;
    let mut sf32 = zeros::<f32>(dev, &[1])?;
    let mut sf64 = zeros::<f64>(dev, &[1])?;
    let mut susize = zeros::<usize>(dev, &[10])?;
    launch(
        &m,
        "add_all_types",
        dev,
        Grid::linear(n, 128),
        (n, &mut si32, &mut su32, &mut si64, &mut su64, &mut sf32, &mut sf64, &mut susize),
    )?;
    eq("add_all_types i32", &dl(&si32)?, &[(0..n as i32).map(|i| i - 50).sum::<i32>()])?;
    eq("add_all_types u32", &dl(&su32)?, &[(0..n as u32).sum::<u32>()])?;
    eq("add_all_types i64", &dl(&si64)?, &[-(0..n as i64).sum::<i64>()])?;
    eq("add_all_types u64", &dl(&su64)?, &[(0..n as u64).fold(0u64, |a, i| a.wrapping_add(i << 33))])?;
    exact("add_all_types f32", &dl(&sf32)?, &[(0..n).map(|i| (i % 7) as f32).sum::<f32>()])?;
    exact("add_all_types f64", &dl(&sf64)?, &[(0..n).map(|i| i as f64 * 0.5).sum::<f64>()])?;
    eq("add_all_types usize", &dl(&susize)?, &[100usize; 10])
}

/// atomic_cas_lock.rs: compare-and-swap loops (counter, float max), slot claiming, every type.
// The reference loops index by position, as the kernels do.
#[allow(clippy::needless_range_loop)]
pub fn atomic_cas_lock(dev: &Device) -> Outcome {
    let m = module("atomic_cas_lock.rs")?;
    let n = 700;
    let mut counter = zeros::<u64>(dev, &[1])?;
    let mut tickets = zeros::<u64>(dev, &[n])?;
    launch(&m, "cas_counter", dev, Grid::linear(n, 128), (n, &mut counter, &mut tickets))?;
    eq("cas_counter total", &dl(&counter)?, &[n as u64])?;
    let mut t = dl(&tickets)?;
    t.sort_unstable();
    eq("cas_counter tickets (sorted)", &t, &(0..n as u64).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..500).map(|i| rndf(i, -50.0, 50.0) as f32).collect();
    let mut out = up(dev, &[f32::MIN])?;
    launch(&m, "cas_float_max", dev, Grid::linear(500, 64), (&up(dev, &x)?, &mut out))?;
    exact("cas_float_max", &dl(&out)?, &[x.iter().copied().fold(f32::MIN, f32::max)])?;

    let n = 400;
    let keys: Vec<i32> = (0..n).map(|i| ((i * 7) % 50) as i32).collect();
    let mut owner = up(dev, &vec![-1i32; 64])?;
    let mut won = zeros::<i32>(dev, &[n])?;
    launch(&m, "claim_slots", dev, Grid::linear(n, 64), (&up(dev, &keys)?, &mut owner, &mut won))?;
    let (owner, won) = (dl(&owner)?, dl(&won)?);
    for s in 0..64usize {
        let claimants: Vec<usize> = (0..n).filter(|&i| keys[i] as usize % 64 == s).collect();
        let winners: Vec<usize> = claimants.iter().copied().filter(|&i| won[i] == 1).collect();
        if claimants.is_empty() {
            if owner[s] != -1 {
                return Err(format!("claim_slots: slot {s} nobody claimed has owner {}", owner[s]));
            }
        } else if winners.len() != 1 || owner[s] != winners[0] as i32 {
            return Err(format!("claim_slots: slot {s}: owner {}, winners {winners:?}", owner[s]));
        }
    }
    if won.iter().any(|w| *w != 0 && *w != 1) {
        return Err("claim_slots: `won` holds something other than 0 or 1".into());
    }

    let n = 10;
    let a0: Vec<i64> = (0..n).map(|i| 5 * i as i64).collect();
    let b0: Vec<u32> = (0..n).map(|i| if i % 3 == 0 { i as u32 } else { i as u32 + 1 }).collect();
    let c0: Vec<f64> = (0..n).map(|i| if i % 2 == 1 { 1.5 } else { 0.0 }).collect();
    let (mut a, mut b, mut c) = (up(dev, &a0)?, up(dev, &b0)?, up(dev, &c0)?);
    let mut olds = zeros::<i64>(dev, &[n])?;
    launch(&m, "cas_types", dev, Grid::linear(n, 4), (&mut a, &mut b, &mut c, &mut olds))?;
    eq("cas_types i64", &dl(&a)?, &(0..n).map(|i| if i % 2 == 0 { 100 + i as i64 } else { a0[i] }).collect::<Vec<_>>())?;
    eq("cas_types old values", &dl(&olds)?, &a0)?;
    eq("cas_types u32", &dl(&b)?, &(0..n).map(|i| if b0[i] == i as u32 { 7 } else { b0[i] }).collect::<Vec<_>>())?;
    exact("cas_types f64", &dl(&c)?, &c0.iter().map(|v| if *v == 1.5 { -2.5 } else { *v }).collect::<Vec<_>>())
}

/// prefix_scan.rs: a multi-block inclusive scan in two launches.
pub fn prefix_scan(dev: &Device) -> Outcome {
    let m = module("prefix_scan.rs")?;
    let n = 300;
    let x: Vec<i32> = (0..n).map(|i| (i % 11) as i32 - 5).collect();
    let nb = blocks(n, 64) as usize;
    let (mut out, mut totals) = (zeros::<i32>(dev, &[n])?, zeros::<i32>(dev, &[nb])?);
    launch(&m, "block_scan_i32", dev, Grid::linear(n, 64), (&up(dev, &x)?, &mut out, &mut totals))?;
    let block_scan: Vec<i32> = x
        .chunks(64)
        .flat_map(|c| {
            c.iter()
                .scan(0, |s, v| {
                    *s += v;
                    Some(*s)
                })
                .collect::<Vec<_>>()
        })
        .collect();
    eq("block_scan_i32", &dl(&out)?, &block_scan)?;
    eq("block_scan_i32 totals", &dl(&totals)?, &x.chunks(64).map(|c| c.iter().sum::<i32>()).collect::<Vec<_>>())?;
    launch(&m, "add_block_offsets", dev, Grid::linear(n, 64), (&mut out, &totals))?;
    eq(
        "prefix scan",
        &dl(&out)?,
        &x.iter()
            .scan(0, |s, v| {
                *s += v;
                Some(*s)
            })
            .collect::<Vec<_>>(),
    )
}

/// bitonic_sort.rs: per-block sort in shared memory, the last block partial.
pub fn bitonic_sort(dev: &Device) -> Outcome {
    let m = module("bitonic_sort.rs")?;
    let n = 200;
    let keys: Vec<u32> = (0..n).map(|i| (rnd(i as u64) % 1000) as u32).collect();
    let mut kd = up(dev, &keys)?;
    launch(&m, "bitonic_sort_blocks", dev, Grid::linear(n, 64), (&mut kd,))?;
    let want: Vec<u32> = keys
        .chunks(64)
        .flat_map(|c| {
            let mut v = c.to_vec();
            v.sort_unstable();
            v
        })
        .collect();
    eq("bitonic_sort_blocks", &dl(&kd)?, &want)
}
