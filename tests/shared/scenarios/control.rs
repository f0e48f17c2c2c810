//! Scenarios: control flow, ranges, device functions, constants and scopes.

use kache::{Device, Grid};

use super::helpers::*;

/// control_flow.rs: if/else values, every loop form, labelled break/continue, early return.
pub fn control_flow(dev: &Device) -> Outcome {
    let m = module("control_flow.rs")?;
    let x: Vec<i32> = vec![0, 5, -5, 100, 101, -1000, i32::MAX - 1, 42];
    let n = x.len();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "if_else_expr", dev, Grid::linear(n, 4), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = x.iter().map(|&v| v.signum() * 1000 + v.abs().min(100)).collect();
    eq("if_else_expr", &dl(&out)?, &want)?;

    let ns: Vec<u32> = vec![0, 1, 2, 3, 10, 11, 100, 1000];
    let n = ns.len();
    let mut out = zeros::<u64>(dev, &[n, 5])?;
    launch(&m, "loop_forms", dev, Grid::linear(n, 4), (&up(dev, &ns)?, &mut out))?;
    let want: Vec<u64> = ns
        .iter()
        .flat_map(|&m| {
            let s: u64 = (1..=m as u64).sum();
            [s, s, s, (0..m as u64 + 1).step_by(3).sum(), (2..=m as u64).step_by(2).sum()]
        })
        .collect();
    eq("loop_forms", &dl(&out)?, &want)?;

    let (r, c) = (6, 5);
    let a: Vec<i32> = (0..r * c).map(|k| if k % c == 0 && (k / c) % 3 == 1 { -1 } else { k as i32 }).collect();
    let targets: Vec<i32> = vec![0, 7, 29, 5, 19, 100, -1, 16];
    let n = targets.len();
    let mut found = zeros::<i64>(dev, &[n, 2])?;
    launch(&m, "labelled_search", dev, Grid::linear(n, 4), (&up_nd(dev, &a, &[r, c])?, &up(dev, &targets)?, &mut found))?;
    let mut want = Vec::new();
    for &t in &targets {
        let mut hit = (-1i64, -1i64);
        'rows: for i in 0..r {
            if a[i * c] < 0 {
                continue;
            }
            for j in 0..c {
                if a[i * c + j] == t {
                    hit = (i as i64, j as i64);
                    break 'rows;
                }
            }
        }
        want.extend([hit.0, hit.1]);
    }
    eq("labelled_search", &dl(&found)?, &want)?;

    let ns: Vec<u32> = vec![0, 1, 2, 3, 10, 100, 500, 97];
    let n = ns.len();
    let mut out = zeros::<u32>(dev, &[n])?;
    launch(&m, "count_primes", dev, Grid::linear(n, 4), (&up(dev, &ns)?, &mut out))?;
    let is_prime = |p: u32| p >= 2 && (2..p).take_while(|d| d * d <= p).all(|d| !p.is_multiple_of(d));
    eq("count_primes", &dl(&out)?, &ns.iter().map(|&m| (2..m).filter(|&p| is_prime(p)).count() as u32).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..33).map(|i| i as f32 * 0.5 - 8.0).collect();
    let mut out = zeros::<f32>(dev, &[33])?;
    launch(&m, "block_tails", dev, Grid::linear(33, 16), (&up(dev, &x)?, &mut out))?;
    exact("block_tails", &dl(&out)?, &x.iter().map(|v| (v * 2.0 + 1.0) * (v * 2.0 + 1.0) - v * 2.0).collect::<Vec<_>>())?;

    let x: Vec<i32> = vec![3, 5, 9, 14, 22, 35];
    let of: Vec<i32> = vec![1, 2, 7, 11, 0, 4, 5, 13];
    let n = of.len();
    let mut out = zeros::<i64>(dev, &[n])?;
    launch(&m, "early_return", dev, Grid::linear(n, 4), (&up(dev, &x)?, &up(dev, &of)?, &mut out))?;
    let want: Vec<i64> = of.iter().map(|&o| x.iter().position(|v| o != 0 && v % o == 0).map(|p| p as i64).unwrap_or(-1)).collect();
    eq("early_return", &dl(&out)?, &want)
}

/// control_flow.rs: `a..=MAX` and `(a..b).step_by(s)` near the top of the type terminate and
/// visit exactly what Rust's iterators visit (no wrap-around).
pub fn inclusive_and_stepped_ranges_at_type_max(dev: &Device) -> Outcome {
    let m = module("control_flow.rs")?;
    let mut out = zeros::<u32>(dev, &[4])?;
    launch(&m, "ranges_near_max", dev, Grid::linear(1, 1), (&mut out,))?;
    let want = [
        (u32::MAX - 3..=u32::MAX).count() as u32,
        (u32::MAX - 10..u32::MAX).step_by(4).count() as u32,
        (0..=10u32).step_by(5).map(|k| k + 1).sum::<u32>(),
        (i32::MAX - 2..=i32::MAX).count() as u32,
    ];
    eq("ranges_near_max [a..=u32::MAX, (MAX-10..MAX).step_by(4), (0..=10).step_by(5), a..=i32::MAX]", &dl(&out)?, &want)
}

/// ranges_signed.rs: signed and empty ranges, short-circuited side effects, labelled `while`.
pub fn ranges_signed(dev: &Device) -> Outcome {
    let m = module("ranges_signed.rs")?;
    let mut out = zeros::<i64>(dev, &[7])?;
    launch(&m, "signed_ranges", dev, Grid::linear(1, 1), (&mut out,))?;
    let s2 = (-10i64..10).step_by(3).fold(0i64, |acc, i| acc * 2 + i);
    eq("signed_ranges", &dl(&out)?, &[-3, 6, s2, 0, 1 << 40, 1000, 20])
}

/// device_functions.rs: call chains, `mut` parameters, array parameters, every return type.
pub fn device_functions(dev: &Device) -> Outcome {
    let m = module("device_functions.rs")?;
    // `norms` is checked by `device_function_names_with_digit_suffix`.
    let a: Vec<u64> = vec![12, 0, 17, 1 << 40, 1071, 6, 0, 999_999_937];
    let b: Vec<u64> = vec![18, 5, 5, 1 << 20, 462, 6, 0, 3];
    let gcd = |mut a: u64, mut b: u64| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let (mut g, mut l) = (zeros::<u64>(dev, &[8])?, zeros::<u64>(dev, &[8])?);
    launch(&m, "gcd_lcm", dev, Grid::linear(8, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut g, &mut l))?;
    eq("gcd", &dl(&g)?, &(0..8).map(|i| gcd(a[i], b[i])).collect::<Vec<_>>())?;
    eq("lcm", &dl(&l)?, &(0..8).map(|i| if a[i] == 0 || b[i] == 0 { 0 } else { a[i] / gcd(a[i], b[i]) * b[i] }).collect::<Vec<_>>())?;

    let x: Vec<f32> = (0..45).map(|i| (i % 9) as f32).collect();
    let mut out = zeros::<f32>(dev, &[45])?;
    launch(&m, "windows", dev, Grid::linear(45, 16), (&up(dev, &x)?, 2i64, &mut out))?;
    let want: Vec<f32> = (0..45i64).map(|c| (c - 2..=c + 2).map(|k| x[k.clamp(0, 44) as usize]).sum()).collect();
    exact("windows", &dl(&out)?, &want)?;

    let x: Vec<u32> = (0..30).map(|i| (rnd(i) % 1000) as u32).collect();
    let (mut pairs, mut flags, mut f) = (zeros::<u32>(dev, &[60])?, zeros::<bool>(dev, &[30])?, zeros::<f32>(dev, &[30])?);
    launch(&m, "helpers", dev, Grid::linear(30, 8), (&up(dev, &x)?, &mut pairs, &mut flags, &mut f))?;
    eq("helpers pairs", &dl(&pairs)?, &x.iter().flat_map(|v| [v >> 1, v + 1]).collect::<Vec<_>>())?;
    eq("helpers flags", &dl(&flags)?, &x.iter().map(|v| v % 2 != 0).collect::<Vec<_>>())?;
    exact("helpers floats", &dl(&f)?, &(0..30).map(|i| i as f32 + 0.5).collect::<Vec<_>>())
}

/// device_functions.rs `norms`: a chain of device functions where one name is another's name
/// followed by a digit (`norm` calls `norm2`, which calls `square`).
pub fn device_function_names_with_digit_suffix(dev: &Device) -> Outcome {
    let m = module("device_functions.rs")?;
    let x: Vec<f64> = (0..60).map(|i| rndf(i, -10.0, 10.0)).collect();
    let y: Vec<f64> = (0..60).map(|i| rndf(i + 100, -10.0, 10.0)).collect();
    let mut out = zeros::<f64>(dev, &[60])?;
    launch(&m, "norms", dev, Grid::linear(60, 32), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    close("norms", &dl(&out)?, &(0..60).map(|i| (x[i] * x[i] + y[i] * y[i]).sqrt()).collect::<Vec<_>>(), 1e-15, 0.0)
}

/// shared_device_functions.rs: shared arrays passed to device functions, a barrier in a device
/// function, a shared length from a constant expression, static bools, 0-d compound updates.
pub fn shared_device_functions(dev: &Device) -> Outcome {
    let m = module("shared_device_functions.rs")?;
    let mut out = zeros::<f32>(dev, &[33])?;
    launch(&m, "shared_to_device_fn", dev, Grid::linear(32, 32), (&mut out,))?;
    let mut want = vec![(0..32).sum::<i32>() as f32];
    want.extend((0..32).rev().map(|t| t as f32));
    exact("shared_to_device_fn", &dl(&out)?, &want)?;

    let mut out = zeros::<i32>(dev, &[2])?;
    let mut z = dev.upload_scalar(1i32).ctx("scalar")?;
    launch(&m, "shared_const_expr_len", dev, Grid::linear(32, 32), (&mut out, &mut z))?;
    eq("shared_const_expr_len", &dl(&out)?, &[5, 131])?;
    eq("shared_const_expr_len 0-d", &dl(&z)?, &[12])
}

/// consts_statics.rs: constants and 1-d, 2-d and 3-d static tables.
pub fn consts_statics(dev: &Device) -> Outcome {
    let m = module("consts_statics.rs")?;
    let n = 21;
    let x: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 2.0).collect();
    let idx: Vec<u32> = (0..n).map(|i| (rnd(i as u64) % 1000) as u32).collect();
    let (mut of, mut ou, mut oi) = (zeros::<f32>(dev, &[n])?, zeros::<u32>(dev, &[n])?, zeros::<i64>(dev, &[n])?);
    launch(&m, "lookup", dev, Grid::linear(n, 8), (&up(dev, &x)?, &up(dev, &idx)?, &mut of, &mut ou, &mut oi))?;
    let coef = [1.0f32, -2.0, 0.5, 0.25];
    let primes = [2u32, 3, 5, 7, 11, 13, 17, 19];
    let poly = |x: f32| {
        let (mut acc, mut p) = (0.0f32, 1.0f32);
        for c in coef {
            acc += c * p;
            p *= x;
        }
        acc
    };
    exact("lookup floats", &dl(&of)?, &x.iter().map(|v| poly(*v) * 0.5 + 3.0).collect::<Vec<_>>())?;
    eq("lookup primes", &dl(&ou)?, &idx.iter().map(|v| primes[(v & 15) as usize % 8]).collect::<Vec<_>>())?;
    eq("lookup 3-d static", &dl(&oi)?, &(0..n).map(|i| -(1i64 << 40) + (2 + 4 * (i % 2) + 2 * ((i / 2) % 2)) as i64).collect::<Vec<_>>())?;

    let p: Vec<f64> = (0..14).map(|i| i as f64 - 6.5).collect();
    let mut out = zeros::<f64>(dev, &[7, 2])?;
    let mut half = zeros::<u64>(dev, &[1])?;
    launch(&m, "rotate", dev, Grid::linear(7, 4), (&up_nd(dev, &p, &[7, 2])?, &mut out, &mut half))?;
    let want: Vec<f64> = (0..7).flat_map(|i| [-p[2 * i + 1], p[2 * i]]).collect();
    close("rotate", &dl(&out)?, &want, 0.0, 1e-12)?;
    eq("rotate U64_MAX_HALF", &dl(&half)?, &[u64::MAX / 2])
}

/// scopes_shadowing.rs: shadowing, deferred initialisation, `mut` kernel parameters.
pub fn scopes_shadowing(dev: &Device) -> Outcome {
    let m = module("scopes_shadowing.rs")?;
    let x: Vec<i32> = (0..40).map(|i| i - 20).collect();
    let mut out = up(dev, &vec![-5i64; 30])?;
    launch(&m, "shadowing", dev, Grid::linear(40, 16), (1000usize, &up(dev, &x)?, &mut out))?;
    let want: Vec<i64> = (0..30)
        .map(|i| {
            let v = x[i] as i64 * 3;
            let w = if v > 10 { v - 10 } else { 10 - v };
            1000 + v + w
        })
        .collect();
    eq("shadowing", &dl(&out)?, &want)?;

    let mut out = zeros::<f32>(dev, &[25])?;
    launch(&m, "mut_params", dev, Grid::linear(25, 16), (1.5f32, 3u32, &mut out))?;
    exact("mut_params", &dl(&out)?, &(0..25).map(|i| (1.5 + i as f32) * 6.0).collect::<Vec<_>>())
}
