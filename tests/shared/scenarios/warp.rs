//! Scenarios: warp-level primitives (shuffles, votes, `activemask`, `sync_warp`), every
//! atomic on global and shared memory, and the math methods of the second language version.

use kache::{Device, DeviceArray, Element, Grid, Module, Order};

use super::helpers::kernels_dir;

fn module(file: &str) -> Result<Module, String> {
    let jit = kache::Jit::new(kache::Config::in_memory()).map_err(|e| e.to_string())?;
    jit.load_file(kernels_dir().join(file)).map_err(|e| format!("loading {file}: {e}"))
}

fn run(m: &Module, name: &str, dev: &Device, grid: Grid, args: impl kache::KernelArgs) -> Result<(), String> {
    m.kernel(name).and_then(|k| k.launch(dev, grid, args)).map_err(|e| format!("{name}: {e}"))
}

fn up<T: Element>(dev: &Device, v: &[T]) -> DeviceArray<T> {
    dev.upload(v).unwrap()
}

fn check<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} values, expected {}", got.len(), want.len()));
    }
    match got.iter().zip(want).position(|(a, b)| a != b) {
        Some(i) => Err(format!("{what}[{i}] = {:?}, expected {:?}", got[i], want[i])),
        None => Ok(()),
    }
}

/// warp_reduce: see the corpus file.
pub fn warp_reduce(dev: &Device) -> Result<(), String> {
    let m = module("warp_reduce.rs")?;
    let n = 1000usize;
    let x: Vec<f32> = (0..n).map(|i| ((i * 29) % 97) as f32 * 0.25 - 5.0).collect();
    let mut sums = dev.alloc::<f32>(&[n.div_ceil(32)]).unwrap();
    run(&m, "warp_sums", dev, Grid::linear(n, 128), (&up(dev, &x), &mut sums))?;
    let want: Vec<f32> = x.chunks(32).map(|c| c.iter().sum()).collect();
    check("warp_sums", &sums.download().unwrap(), &want)?;
    let xi: Vec<i64> = (0..n as i64).map(|i| ((i * 7919 % 1013) * if i % 3 == 0 { -1 } else { 1 }) << 33).collect();
    let mut out = dev.alloc::<i64>(&[n]).unwrap();
    run(&m, "warp_max", dev, Grid::linear(n, 64), (&up(dev, &xi), &mut out))?;
    let want: Vec<i64> = (0..n).map(|i| *xi[i / 32 * 32..(i / 32 * 32 + 32).min(n)].iter().max().unwrap()).collect();
    check("warp_max", &out.download().unwrap(), &want)?;
    let xu: Vec<u64> = (0..n as u64).map(|i| i * i * 1_000_003).collect();
    let blocks = n.div_ceil(96);
    let mut bs = dev.alloc::<u64>(&[blocks]).unwrap();
    run(&m, "block_sum_u64", dev, Grid::new(blocks as u32, 96u32), (&up(dev, &xu), &mut bs))?;
    let want: Vec<u64> = xu.chunks(96).map(|c| c.iter().sum()).collect();
    check("block_sum_u64", &bs.download().unwrap(), &want)?;
    let xv: Vec<i32> = (0..n as i32).map(|i| if i % 64 < 32 { 1 + i % 5 } else { i % 5 - 2 }).collect();
    let w = n.div_ceil(32);
    let (mut all, mut any, mut which) =
        (dev.alloc::<bool>(&[w]).unwrap(), dev.alloc::<bool>(&[w]).unwrap(), dev.alloc::<u32>(&[w]).unwrap());
    run(&m, "warp_votes", dev, Grid::linear(w * 32, 64), (&up(dev, &xv), &mut all, &mut any, &mut which))?;
    let chunks: Vec<&[i32]> = xv.chunks(32).collect();
    check("all_sync", &all.download().unwrap(), &chunks.iter().map(|c| c.len() == 32 && c.iter().all(|v| *v > 0)).collect::<Vec<_>>())?;
    check("any_sync", &any.download().unwrap(), &chunks.iter().map(|c| c.iter().any(|v| *v > 0)).collect::<Vec<_>>())?;
    let want: Vec<u32> = chunks.iter().map(|c| c.iter().enumerate().filter(|(_, v)| **v > 0).fold(0, |m, (l, _)| m | 1 << l)).collect();
    check("ballot_sync", &which.download().unwrap(), &want)
}

/// warp_aggregated_atomics: see the corpus file.
pub fn warp_aggregated_atomics(dev: &Device) -> Result<(), String> {
    let m = module("warp_aggregated_atomics.rs")?;
    let n = 5000usize;
    let x: Vec<i32> = (0..n as i32).map(|i| (i * 7919) % 201 - 100).collect();
    let mut out = dev.alloc::<i32>(&[n]).unwrap();
    let mut count = dev.alloc::<u32>(&[1]).unwrap();
    run(&m, "keep_positive", dev, Grid::linear(n, 128), (&up(dev, &x), &mut out, &mut count))?;
    let c = count.download().unwrap()[0] as usize;
    let mut got = out.download().unwrap()[..c.min(n)].to_vec();
    got.sort();
    let mut want: Vec<i32> = x.iter().copied().filter(|v| *v > 0).collect();
    want.sort();
    check("keep_positive (sorted)", &got, &want)?;
    // The last block sums every partial; the ticket wraps back to 0, so a second launch works.
    let xs: Vec<u32> = (0..n as u32).map(|i| i % 17).collect();
    let blocks = n.div_ceil(256);
    let mut partials = dev.alloc::<u32>(&[blocks]).unwrap();
    let mut ticket = dev.alloc::<u32>(&[1]).unwrap();
    let mut total = dev.alloc::<u32>(&[1]).unwrap();
    let xd = up(dev, &xs);
    for round in 0..2 {
        run(&m, "last_block_sum", dev, Grid::new(blocks as u32, 256u32), (&xd, &mut partials, &mut ticket, &mut total))?;
        check(&format!("last_block_sum total, round {round}"), &total.download().unwrap(), &[xs.iter().sum()])?;
        check("ticket after the launch", &ticket.download().unwrap(), &[0])?;
    }
    Ok(())
}

/// atomics_every_op: see the corpus file.
pub fn atomics_every_op(dev: &Device) -> Result<(), String> {
    let m = module("warp_aggregated_atomics.rs")?;
    let n = 640usize;
    let v: Vec<u32> = (0..n as u32).map(|i| (i * 37 + 11) % 97).collect();
    let init32 = [1_000_000u32, u32::MAX, 0, 0, 0, 0, 0, u32::MAX, 0, u32::MAX, 0, 0];
    let init64 = [0i64, 0, 0, 0, -1, 0];
    let mut g32 = up(dev, &init32);
    let mut g64 = up(dev, &init64);
    let mut olds = dev.alloc::<u32>(&[n]).unwrap();
    let threads = 64usize;
    run(&m, "int_atomics", dev, Grid::new((n / threads) as u32, threads as u32), (&up(dev, &v), &mut g32, &mut g64, &mut olds))?;
    let (g32, g64) = (g32.download().unwrap(), g64.download().unwrap());
    let bits_and = |init: u32, vs: &[u32]| vs.iter().fold(init, |a, x| a & !(1u32 << (x % 32)));
    let (mut inc, mut dec) = (0u32, 0u32);
    for _ in 0..n {
        inc = if inc >= 9 { 0 } else { inc + 1 };
        dec = if dec == 0 || dec > 6 { 6 } else { dec - 1 };
    }
    let mut s_inc = 0u32;
    let mut s_xor = 0u32;
    for b in v.chunks(threads) {
        s_inc += b.len() as u32;
        s_xor ^= b.iter().fold(0, |a, x| a ^ x);
    }
    let want32 = [
        1_000_000u32.wrapping_sub(v.iter().sum::<u32>()),
        bits_and(u32::MAX, &v),
        v.iter().fold(0, |a, x| a | 1u32 << (x % 32)),
        v.iter().fold(0, |a, x| a ^ x),
        inc,
        dec,
        *v.iter().max().unwrap(),
        *v.iter().min().unwrap(),
        v.iter().sum(),
        v.chunks(threads).fold(u32::MAX, |a, b| a & bits_and(u32::MAX, b)),
        s_inc,
        s_xor,
    ];
    check("int_atomics (u32 cells)", &g32, &want32)?;
    let want64 = [
        v.iter().map(|x| *x as i64 - 50).sum(),
        -v.iter().map(|x| *x as i64).sum::<i64>(),
        v.iter().fold(0i64, |a, x| a ^ ((*x as i64) << 33)),
        v.iter().fold(0i64, |a, x| a | 1i64 << (x % 64)),
        v.iter().fold(-1i64, |a, x| a & !(1i64 << (x % 64))),
        v.iter().map(|x| *x as i64 - 1000).min().unwrap(),
    ];
    check("int_atomics (i64 cells)", &g64, &want64)?;
    // atomic_inc's old values: each of 0..=9 equally often, in some order.
    let mut o = olds.download().unwrap();
    o.sort();
    let mut want: Vec<u32> = (0..n as u32).map(|k| k % 10).collect();
    want.sort();
    check("atomic_inc old values (sorted)", &o, &want)?;
    // Exchanges: the old values and the final value are the initial value and every written one.
    let fv: Vec<f32> = (0..n).map(|i| i as f32 * 0.5 + 1.0).collect();
    let mut slot = up(dev, &[-1.0f32]);
    let mut olds = dev.alloc::<f32>(&[n]).unwrap();
    let mut g = up(dev, &[0.0f64, f64::NEG_INFINITY, 0.0]);
    let mut s_out = up(dev, &[0.0f64, f64::INFINITY]);
    run(
        &m,
        "exch_and_float_atomics",
        dev,
        Grid::new((n / threads) as u32, threads as u32),
        (&up(dev, &fv), &mut slot, &mut olds, &mut g, &mut s_out),
    )?;
    let mut seen = olds.download().unwrap();
    seen.push(slot.download().unwrap()[0]);
    seen.sort_by(f32::total_cmp);
    let mut want = fv.clone();
    want.push(-1.0);
    want.sort_by(f32::total_cmp);
    check("atomic_exch values", &seen, &want)?;
    let sum: f64 = fv.iter().map(|x| *x as f64).sum();
    check("float atomics (global)", &g.download().unwrap(), &[sum, *fv.last().unwrap() as f64, 2.5])?;
    check("float atomics (shared)", &s_out.download().unwrap(), &[sum, 1.0])
}

/// softmax_warp: see the corpus file.
pub fn softmax_warp(dev: &Device) -> Result<(), String> {
    let m = module("softmax_warp.rs")?;
    let (rows, cols) = (37usize, 300usize);
    let x: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 1000) as f32 / 100.0 - 5.0).collect();
    let xd = dev.upload_nd(&x, &[rows, cols], Order::C).unwrap();
    let mut y = dev.alloc::<f32>(&[rows, cols]).unwrap();
    run(&m, "softmax_rows_warp", dev, Grid::linear(rows * 32, 128), (&xd, &mut y))?;
    let y = y.download().unwrap();
    for r in 0..rows {
        let row = &x[r * cols..(r + 1) * cols];
        let mx = row.iter().fold(f64::NEG_INFINITY, |a, v| a.max(*v as f64));
        let s: f64 = row.iter().map(|v| (*v as f64 - mx).exp()).sum();
        for c in 0..cols {
            let want = (row[c] as f64 - mx).exp() / s;
            let got = y[r * cols + c] as f64;
            if (got - want).abs() > 1e-5 * want.max(1e-3) {
                return Err(format!("softmax[{r}][{c}] = {got}, expected {want}"));
            }
        }
    }
    Ok(())
}

/// block_scan_warp: see the corpus file.
pub fn block_scan_warp(dev: &Device) -> Result<(), String> {
    let m = module("block_scan_warp.rs")?;
    let n = 1000usize;
    let x: Vec<i64> = (0..n as i64).map(|i| (i * 31) % 17 - 8 + (i << 35)).collect();
    let mut y = dev.alloc::<i64>(&[n]).unwrap();
    run(&m, "block_inclusive_scan_i64", dev, Grid::new(n.div_ceil(128) as u32, 128u32), (&up(dev, &x), &mut y))?;
    let mut want = Vec::new();
    for c in x.chunks(128) {
        let mut acc = 0;
        want.extend(c.iter().map(|v| {
            acc += v;
            acc
        }));
    }
    check("block_inclusive_scan_i64", &y.download().unwrap(), &want)?;
    let xf: Vec<f64> = (0..n).map(|i| ((i * 13) % 11) as f64 - 3.0).collect();
    let mut yf = dev.alloc::<f64>(&[n]).unwrap();
    run(&m, "block_exclusive_scan_f64", dev, Grid::new(n.div_ceil(128) as u32, 128u32), (&up(dev, &xf), &mut yf))?;
    let mut want = Vec::new();
    for c in xf.chunks(128) {
        let mut acc = 0.0;
        want.extend(c.iter().map(|v| {
            let before = acc;
            acc += v;
            before
        }));
    }
    check("block_exclusive_scan_f64", &yf.download().unwrap(), &want)
}

/// stream_compaction: see the corpus file.
pub fn stream_compaction(dev: &Device) -> Result<(), String> {
    let m = module("stream_compaction.rs")?;
    let n = 3000usize;
    let x: Vec<f32> = (0..n)
        .map(|i| match i % 23 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            _ => ((i * 7919) % 100) as f32 / 100.0,
        })
        .collect();
    let blocks = n.div_ceil(256);
    let xd = up(dev, &x);
    let mut counts = dev.alloc::<u32>(&[blocks]).unwrap();
    run(&m, "count_kept", dev, Grid::new(blocks as u32, 256u32), (&xd, &mut counts))?;
    let counts = counts.download().unwrap();
    let mut offsets = vec![0u32; blocks];
    for b in 1..blocks {
        offsets[b] = offsets[b - 1] + counts[b - 1];
    }
    let want: Vec<f32> = x.iter().copied().filter(|v| v.is_finite() && *v > 0.5).collect();
    let mut out = dev.alloc::<f32>(&[want.len().max(1)]).unwrap();
    run(&m, "scatter_kept", dev, Grid::new(blocks as u32, 256u32), (&xd, &up(dev, &offsets), &mut out))?;
    check("stream_compaction", &out.download().unwrap()[..want.len()], &want)
}

/// radix_sort_pass: see the corpus file.
pub fn radix_sort_pass(dev: &Device) -> Result<(), String> {
    let m = module("radix_sort_pass.rs")?;
    let n = 2000usize;
    let mut keys: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) ^ (i >> 3)).collect();
    let blocks = n.div_ceil(256);
    for pass in 0..8u32 {
        let shift = pass * 4;
        let kd = up(dev, &keys);
        let mut counts = dev.alloc::<u32>(&[16 * blocks]).unwrap();
        run(&m, "digit_counts", dev, Grid::new(blocks as u32, 64u32), (&kd, shift, &mut counts))?;
        let counts = counts.download().unwrap();
        let mut offsets = vec![0u32; 16 * blocks];
        for k in 1..16 * blocks {
            offsets[k] = offsets[k - 1] + counts[k - 1];
        }
        let mut out = dev.alloc::<u32>(&[n]).unwrap();
        run(&m, "scatter_digits", dev, Grid::new(blocks as u32, 32u32), (&kd, shift, &up(dev, &offsets), &mut out))?;
        let mut want = keys.clone();
        want.sort_by_key(|k| (k >> shift) & 15);
        let got = out.download().unwrap();
        check(&format!("radix pass {pass} (stable by digit)"), &got, &want)?;
        keys = got;
    }
    let mut sorted = keys.clone();
    sorted.sort();
    check("radix sort, eight passes", &keys, &sorted)
}

/// math_methods_more: see the corpus file.
pub fn math_methods_more(dev: &Device) -> Result<(), String> {
    let m = module("math_methods_more.rs")?;
    let n = 200usize;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.05 - 5.0).collect();
    let mut y = dev.alloc::<f32>(&[n]).unwrap();
    run(&m, "special_f32", dev, Grid::linear(n, 64), (&up(dev, &x), &mut y))?;
    let y = y.download().unwrap();
    for i in 0..n {
        let v = x[i];
        let want = libm::erff(v) + libm::erfcf(v) + v.exp_m1() + v.abs().ln_1p() + libm::exp10f(v) + 1.0 / (v.abs() + 1.0).sqrt();
        if (y[i] - want).abs() > 1e-4 * want.abs().max(1.0) {
            return Err(format!("special_f32({v}) = {}, expected {want}", y[i]));
        }
    }
    let xd: Vec<f64> = (0..n)
        .map(|i| match i % 50 {
            0 => f64::NAN,
            1 => f64::NEG_INFINITY,
            2 => -0.0,
            _ => i as f64 * 0.37 - 30.0,
        })
        .collect();
    let mut yd = dev.alloc::<f64>(&[n]).unwrap();
    let mut flags = dev.alloc::<u32>(&[n]).unwrap();
    run(&m, "shaping_f64", dev, Grid::linear(n, 64), (&up(dev, &xd), -4.0f64, 9.5f64, &mut yd, &mut flags))?;
    let (yd, flags) = (yd.download().unwrap(), flags.download().unwrap());
    for i in 0..n {
        let v = xd[i];
        let want = v.clamp(-4.0, 9.5).copysign(-1.0) + v.signum() + v.rem_euclid(2.5);
        if !(yd[i] == want || yd[i].is_nan() && want.is_nan()) {
            return Err(format!("shaping_f64({v}) = {}, expected {want}", yd[i]));
        }
        let wf = v.is_nan() as u32 | (v.is_finite() as u32) << 1 | (v.is_infinite() as u32) << 2;
        if flags[i] != wf {
            return Err(format!("float tests of {v}: {:03b}, expected {wf:03b}", flags[i]));
        }
    }
    let a: Vec<i64> = (0..n as i64).map(|i| (i - 100) * 0x1_2345_6789).collect();
    let b: Vec<i64> = (0..n as i64).map(|i| if i % 9 == 0 { 0 } else { 1000 - i * 37 }).collect();
    let e: Vec<u32> = (0..n as u32).map(|i| i % 70).collect();
    let mut yi = dev.alloc::<i64>(&[n]).unwrap();
    let mut d = dev.alloc::<u64>(&[n]).unwrap();
    run(&m, "integer_families", dev, Grid::linear(n, 64), (&up(dev, &a), &up(dev, &b), &up(dev, &e), &mut yi, &mut d))?;
    let (yi, d) = (yi.download().unwrap(), d.download().unwrap());
    for i in 0..n {
        let (p, q, ex) = (a[i], b[i], e[i]);
        let (div, rem) = if q == 0 { (0, 0) } else { (p.wrapping_div(q), p.wrapping_rem(q)) };
        let want = p.saturating_add(q)
            ^ p.saturating_sub(q)
            ^ p.saturating_mul(q)
            ^ div
            ^ rem
            ^ p.wrapping_neg()
            ^ p.wrapping_shl(ex)
            ^ p.wrapping_shr(ex)
            ^ p.wrapping_pow(ex)
            ^ p.wrapping_pow(3)
            ^ p.wrapping_abs()
            ^ p.signum()
            ^ p.clamp(-5, 5)
            ^ p.rem_euclid(7)
            ^ p.reverse_bits();
        if yi[i] != want || d[i] != p.abs_diff(q) {
            return Err(format!("integer_families({p}, {q}, {ex}) = ({}, {}), expected ({want}, {})", yi[i], d[i], p.abs_diff(q)));
        }
    }
    Ok(())
}

/// atomic_load_store: see the corpus file.
pub fn atomic_load_store(dev: &Device) -> Result<(), String> {
    let m = module("atomic_load_store.rs")?;
    let (blocks, threads) = (3usize, 64usize);
    let n = blocks * threads;
    let (mut a, mut b, mut c) =
        (dev.alloc::<i32>(&[2 * n]).unwrap(), dev.alloc::<u32>(&[2 * n]).unwrap(), dev.alloc::<i64>(&[2 * n]).unwrap());
    let (mut d, mut e) = (dev.alloc::<u64>(&[2 * n]).unwrap(), dev.alloc::<usize>(&[2 * n]).unwrap());
    let (mut f, mut g) = (dev.alloc::<f32>(&[2 * n]).unwrap(), dev.alloc::<f64>(&[2 * n]).unwrap());
    run(&m, "pass_right", dev, Grid::new(blocks as u32, threads as u32), (&mut a, &mut b, &mut c, &mut d, &mut e, &mut f, &mut g))?;
    // Thread i's value in the first half of each array, its right-hand neighbour's (read back
    // with atomic_load) in the second.
    let right = |i: usize| i - i % threads + (i % threads + 1) % threads;
    fn stored_and_read<T: PartialEq + std::fmt::Debug>(
        what: &str,
        got: Vec<T>,
        n: usize,
        right: impl Fn(usize) -> usize,
        value: impl Fn(usize) -> T,
    ) -> Result<(), String> {
        check(&format!("{what} stored"), &got[..n], &(0..n).map(&value).collect::<Vec<_>>())?;
        check(&format!("{what} read from the neighbour"), &got[n..], &(0..n).map(|i| value(right(i))).collect::<Vec<_>>())
    }
    stored_and_read("i32", a.download().unwrap(), n, right, |i| -(i as i32) - 1)?;
    stored_and_read("u32", b.download().unwrap(), n, right, |i| (i as u32).wrapping_mul(2_654_435_761))?;
    stored_and_read("i64", c.download().unwrap(), n, right, |i| (i as i64 - 40) << 35)?;
    stored_and_read("usize", e.download().unwrap(), n, right, |i| i * 1_000_003)?;
    stored_and_read("f64", g.download().unwrap(), n, right, |i| i as f64 * 0.25 - 1e10)?;
    // The u64 and f32 neighbours' values are combined with those read from shared memory.
    let d = d.download().unwrap();
    check("u64 stored", &d[..n], &(0..n).map(|i| u64::MAX - i as u64).collect::<Vec<_>>())?;
    let want: Vec<u64> = (0..n).map(|i| (u64::MAX - right(i) as u64) ^ ((right(i) as u64) << 40 | 7)).collect();
    check("u64 read from the neighbour, global ^ shared", &d[n..], &want)?;
    let f = f.download().unwrap();
    check("f32 stored", &f[..n], &(0..n).map(|i| i as f32 * 0.5 - 3.0).collect::<Vec<_>>())?;
    let want: Vec<f32> = (0..n).map(|i| (right(i) as f32 * 0.5 - 3.0) + -(right(i) as f32)).collect();
    check("f32 read from the neighbour, global + shared", &f[n..], &want)?;

    // 40 blocks chained by flags: each running total is every element before its chunk's end.
    let (blocks, threads) = (40usize, 64usize);
    let x: Vec<u32> = (0..blocks * threads - 5).map(|i| (i as u32 * 7919) % 1000).collect();
    let mut totals = dev.alloc::<u64>(&[blocks]).unwrap();
    let mut ready = dev.alloc::<u32>(&[blocks]).unwrap();
    let mut ticket = dev.alloc::<u32>(&[1]).unwrap();
    run(&m, "chained_totals", dev, Grid::new(blocks as u32, threads as u32), (&up(dev, &x), &mut totals, &mut ready, &mut ticket))?;
    let want: Vec<u64> = (0..blocks).map(|k| x[..((k + 1) * threads).min(x.len())].iter().map(|v| *v as u64).sum()).collect();
    check("chained_totals", &totals.download().unwrap(), &want)?;
    check("chained_totals flags", &ready.download().unwrap(), &vec![1; blocks])
}
