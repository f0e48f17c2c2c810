//! Scenarios: integer and float arithmetic against Rust's own (operators, casts, compound
//! assignment, integer methods, literals and precedence, type inference).

use kache::{Device, Grid};

use super::helpers::*;

/// saxpy.rs: element-wise f32 and f64 with a size that is not a multiple of the block.
pub fn saxpy(dev: &Device) -> Outcome {
    let m = module("saxpy.rs")?;
    let n = 1000;
    let x: Vec<f32> = (0..n).map(|i| (i % 97) as f32 * 0.25).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
    let xd = up(dev, &x)?;
    let mut yd = up(dev, &y0)?;
    launch(&m, "saxpy", dev, Grid::linear(n, 128), (2.5f32, &xd, &mut yd))?;
    let want: Vec<f32> = (0..n).map(|i| 2.5 * x[i] + y0[i]).collect();
    exact("saxpy", &dl(&yd)?, &want)?;

    let n = 777;
    let x: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 100.0).collect();
    let y0: Vec<f64> = (0..n).map(|i| (i * i % 1000) as f64).collect();
    let xd = up(dev, &x)?;
    let mut yd = up(dev, &y0)?;
    launch(&m, "daxpy", dev, Grid::linear(n, 64), (-3.0f64, &xd, &mut yd))?;
    let want: Vec<f64> = (0..n).map(|i| (-3.0f64).mul_add(x[i], y0[i])).collect();
    exact("daxpy", &dl(&yd)?, &want)
}

/// vector_add_ints.rs: wrapping arithmetic on every integer type.
pub fn vector_add_ints(dev: &Device) -> Outcome {
    let m = module("vector_add_ints.rs")?;
    let n = 300;
    let g = Grid::linear(n, 64);

    let a: Vec<i32> = (0..n).map(|i| i32::MAX - i as i32).collect();
    let b: Vec<i32> = (0..n).map(|i| i as i32 * 7 - 50).collect();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "add_i32", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("add_i32", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_add(b[i])).collect::<Vec<_>>())?;

    let a: Vec<i64> = (0..n).map(|i| i64::MIN + i as i64).collect();
    let b: Vec<i64> = (0..n).map(|i| (i * i) as i64 - 1000).collect();
    let mut out = zeros::<i64>(dev, &[n])?;
    launch(&m, "sub_i64", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("sub_i64", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_sub(b[i])).collect::<Vec<_>>())?;

    let a: Vec<u32> = (0..n).map(|i| 0x10001u32.wrapping_mul(i as u32)).collect();
    let b: Vec<u32> = (0..n).map(|i| 0xFFFF + i as u32).collect();
    let mut out = zeros::<u32>(dev, &[n])?;
    launch(&m, "mul_u32", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq("mul_u32", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(b[i])).collect::<Vec<_>>())?;

    let a: Vec<u64> = (0..n).map(|i| u64::MAX - i as u64 * 12345).collect();
    let b: Vec<u64> = (0..n).map(|i| i as u64 + 2).collect();
    let mut out = zeros::<u64>(dev, &[n])?;
    launch(&m, "fma_u64", dev, g, (&up(dev, &a)?, &up(dev, &b)?, 12345u64, &mut out))?;
    eq("fma_u64", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(b[i]).wrapping_add(12345)).collect::<Vec<_>>())?;

    let mut out = zeros::<usize>(dev, &[n])?;
    launch(&m, "iota_usize", dev, g, (17usize, &mut out))?;
    eq("iota_usize", &dl(&out)?, &(0..n).map(|i| i * 3 + 17).collect::<Vec<_>>())
}

/// casts.rs: every cast kind against Rust's `as`.
pub fn casts(dev: &Device) -> Outcome {
    let m = module("casts.rs")?;
    let a: Vec<i32> = vec![0, 1, -1, 7, -7, i32::MAX, i32::MIN, 123456789, -98765, 0x4000_0000, 255, -256];
    let b: Vec<u64> =
        vec![0, 1, u64::MAX, 1 << 32, (1 << 32) + 5, 0x8000_0000_0000_0000, 0xDEAD_BEEF_CAFE_F00D, 255, 1 << 31, 42, 7, 1 << 63 | 1];
    let n = a.len();
    let g = Grid::linear(n, 8);
    let (mut oi64, mut ou64, mut oi32, mut ou32, mut ous) = (
        zeros::<i64>(dev, &[2 * n])?,
        zeros::<u64>(dev, &[2 * n])?,
        zeros::<i32>(dev, &[2 * n])?,
        zeros::<u32>(dev, &[2 * n])?,
        zeros::<usize>(dev, &[2 * n])?,
    );
    launch(&m, "int_casts", dev, g, (&up(dev, &a)?, &up(dev, &b)?, &mut oi64, &mut ou64, &mut oi32, &mut ou32, &mut ous))?;
    eq("int_casts -> i64", &dl(&oi64)?, &(0..n).flat_map(|i| [a[i] as i64, b[i] as i64]).collect::<Vec<_>>())?;
    eq("int_casts -> u64", &dl(&ou64)?, &(0..n).flat_map(|i| [a[i] as u64, (a[i] as u32) as u64]).collect::<Vec<_>>())?;
    eq("int_casts -> i32", &dl(&oi32)?, &(0..n).flat_map(|i| [b[i] as i32, (a[i] as u32 >> 1) as i32]).collect::<Vec<_>>())?;
    eq("int_casts -> u32", &dl(&ou32)?, &(0..n).flat_map(|i| [a[i] as u32, b[i] as u32]).collect::<Vec<_>>())?;
    eq("int_casts -> usize", &dl(&ous)?, &(0..n).flat_map(|i| [a[i] as usize, (b[i] as usize) >> 3]).collect::<Vec<_>>())?;

    let f: Vec<f32> = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        1e20,
        -1e20,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        16777217.0,
        0.1,
        -0.9,
        4294967296.0,
        3.999,
    ];
    let d: Vec<f64> = vec![
        0.0,
        -0.0,
        1.5,
        -1.5,
        2.5e9,
        -2.5e9,
        1e300,
        -1e300,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        4294967295.7,
        0.1,
        1e-300,
        9.3e18,
        1.8446744073709552e19,
    ];
    let n = f.len();
    let g = Grid::linear(n, 8);
    let (mut of32, mut of64) = (zeros::<f32>(dev, &[3 * n])?, zeros::<f64>(dev, &[3 * n])?);
    launch(&m, "float_casts", dev, g, (&up(dev, &f)?, &up(dev, &d)?, &mut of32, &mut of64))?;
    exact(
        "float_casts -> f64",
        &dl(&of64)?,
        &(0..n).flat_map(|i| [f[i] as f64, (f[i] as i32) as f64, (d[i] as i64) as f64]).collect::<Vec<_>>(),
    )?;
    exact(
        "float_casts -> f32",
        &dl(&of32)?,
        &(0..n).flat_map(|i| [d[i] as f32, (d[i] as u32) as f32, (f[i] as u64) as f32]).collect::<Vec<_>>(),
    )?;

    let (mut oi32, mut ou32, mut oi64, mut ou64, mut ous) = (
        zeros::<i32>(dev, &[2 * n])?,
        zeros::<u32>(dev, &[2 * n])?,
        zeros::<i64>(dev, &[2 * n])?,
        zeros::<u64>(dev, &[2 * n])?,
        zeros::<usize>(dev, &[2 * n])?,
    );
    launch(&m, "saturating_casts", dev, g, (&up(dev, &f)?, &up(dev, &d)?, &mut oi32, &mut ou32, &mut oi64, &mut ou64, &mut ous))?;
    eq("saturating_casts -> i32", &dl(&oi32)?, &(0..n).flat_map(|i| [f[i] as i32, d[i] as i32]).collect::<Vec<_>>())?;
    eq("saturating_casts -> u32", &dl(&ou32)?, &(0..n).flat_map(|i| [f[i] as u32, d[i] as u32]).collect::<Vec<_>>())?;
    eq("saturating_casts -> i64", &dl(&oi64)?, &(0..n).flat_map(|i| [f[i] as i64, d[i] as i64]).collect::<Vec<_>>())?;
    eq("saturating_casts -> u64", &dl(&ou64)?, &(0..n).flat_map(|i| [f[i] as u64, d[i] as u64]).collect::<Vec<_>>())?;
    eq("saturating_casts -> usize", &dl(&ous)?, &(0..n).flat_map(|i| [f[i] as usize, d[i] as usize]).collect::<Vec<_>>())?;

    let a: Vec<i64> = vec![0, -1, i64::MAX, i64::MIN, 16777217, -16777217, 9007199254740993, 123];
    let b: Vec<u32> = vec![0, 1, u32::MAX, 16777217, 1 << 31, 3, 4294967293, 77];
    let n = a.len();
    let (mut o32, mut o64) = (zeros::<f32>(dev, &[2 * n])?, zeros::<f64>(dev, &[2 * n])?);
    launch(&m, "int_to_float", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut o32, &mut o64))?;
    exact("int_to_float -> f32", &dl(&o32)?, &(0..n).flat_map(|i| [a[i] as f32, b[i] as f32]).collect::<Vec<_>>())?;
    exact("int_to_float -> f64", &dl(&o64)?, &(0..n).flat_map(|i| [a[i] as f64, (b[i] as usize) as f64]).collect::<Vec<_>>())?;

    let flags: Vec<bool> = (0..37).map(|i| i % 3 == 1 || i % 5 == 0).collect();
    let n = flags.len();
    let (mut oi, mut ou, mut ob) = (zeros::<i32>(dev, &[n])?, zeros::<u64>(dev, &[n])?, zeros::<bool>(dev, &[n])?);
    launch(&m, "bool_casts", dev, Grid::linear(n, 16), (&up(dev, &flags)?, &mut oi, &mut ou, &mut ob))?;
    eq("bool_casts -> i32", &dl(&oi)?, &flags.iter().map(|f| *f as i32 * 10).collect::<Vec<_>>())?;
    eq("bool_casts -> u64", &dl(&ou)?, &flags.iter().map(|f| (*f as u64) << 40).collect::<Vec<_>>())?;
    eq("bool_casts -> bool", &dl(&ob)?, &flags)
}

fn div0<T: Default + PartialEq>(y: T, f: impl FnOnce() -> T) -> T {
    if y == T::default() { T::default() } else { f() }
}

/// operators.rs: every operator with the language's defined behaviour at the edges.
pub fn operators(dev: &Device) -> Outcome {
    let m = module("operators.rs")?;
    let a: Vec<i32> = vec![7, -7, 7, -7, i32::MIN, i32::MIN, i32::MAX, 0, 123456, -1, 5, 1, 1, -8, 1000, 3];
    let b: Vec<i32> = vec![2, 2, -2, -2, -1, 1, 1, 5, 0, 0, 33, 31, 32, 1, -1, -3];
    let n = a.len();
    let mut out = zeros::<i32>(dev, &[n, 12])?;
    launch(&m, "int_ops_i32", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<i32> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                div0(y, || x.wrapping_div(y)),
                div0(y, || x.wrapping_rem(y)),
                x & y,
                x | y,
                x ^ y,
                x.wrapping_shl(y as u32),
                x.wrapping_shr(y as u32),
                x.wrapping_neg(),
                !x,
            ]
        })
        .collect();
    eq("int_ops_i32", &dl(&out)?, &want)?;

    let a: Vec<u64> = vec![7, 7, u64::MAX, 0, 1 << 63, 12345678901234, 1, 1, 99, u64::MAX - 1];
    let b: Vec<u64> = vec![2, 0, 2, 5, 3, 1000, 64, 65, 99, u64::MAX];
    let n = a.len();
    let mut out = zeros::<u64>(dev, &[n, 11])?;
    launch(&m, "int_ops_u64", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<u64> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            [
                x.wrapping_add(y),
                x.wrapping_sub(y),
                x.wrapping_mul(y),
                div0(y, || x / y),
                div0(y, || x % y),
                x & y,
                x | y,
                x ^ y,
                x.wrapping_shl(y as u32),
                x.wrapping_shr(y as u32),
                !x,
            ]
        })
        .collect();
    eq("int_ops_u64", &dl(&out)?, &want)?;

    let a: Vec<i64> = vec![1, -1, i64::MIN, 0x0123_4567_89AB_CDEF, -1000, 5, 37, -64];
    let s: Vec<u32> = vec![0, 63, 1, 4, 64, 65, 200, 3];
    let n = a.len();
    let (mut out, mut out_u) = (zeros::<i64>(dev, &[2 * n])?, zeros::<u32>(dev, &[n])?);
    launch(&m, "mixed_shifts", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &s)?, &mut out, &mut out_u))?;
    eq("mixed_shifts i64", &dl(&out)?, &(0..n).flat_map(|i| [a[i].wrapping_shl(s[i]), a[i].wrapping_shr(s[i])]).collect::<Vec<_>>())?;
    eq("mixed_shifts u32", &dl(&out_u)?, &(0..n).map(|i| 0x8000_0000u32 >> (a[i] & 31)).collect::<Vec<_>>())?;

    let a: Vec<f64> = vec![7.5, -7.5, 1.0, 0.0, -0.0, f64::INFINITY, f64::NAN, 1e308, 5.25, -3.0];
    let b: Vec<f64> = vec![2.0, 2.0, 0.0, 0.0, 3.0, 2.0, 1.0, 10.0, -0.5, f64::INFINITY];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n, 6])?;
    launch(&m, "float_ops", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f64> = (0..n).flat_map(|i| [a[i] + b[i], a[i] - b[i], a[i] * b[i], a[i] / b[i], a[i] % b[i], -a[i]]).collect();
    // Column 4 (`%`) is checked by the `float_remainder` scenario.
    for (c, op) in [(0, "+"), (1, "-"), (2, "*"), (3, "/"), (5, "unary -")] {
        exact(&format!("float_ops `{op}`"), &column(&got, 6, c), &column(&want, 6, c))?;
    }

    let a: Vec<f32> = vec![1.0, 1.0, -1.0, 0.0, -0.0, f32::NAN, 2.0, f32::NEG_INFINITY, 3.0];
    let b: Vec<f32> = vec![1.0, 2.0, 1.0, -0.0, 0.0, 1.0, f32::NAN, -1.0, -3.0];
    let n = a.len();
    let mut out = zeros::<bool>(dev, &[n, 13])?;
    launch(&m, "comparisons", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    let want: Vec<bool> = (0..n)
        .flat_map(|i| {
            let (x, y) = (a[i], b[i]);
            let (p, q) = (x > 0.0, y > 0.0);
            [x == y, x != y, x < y, x <= y, x > y, x >= y, !p, p & q, p | q, p ^ q, p && q, p || q, p == q]
        })
        .collect();
    eq("comparisons", &dl(&out)?, &want)?;

    let data: Vec<i32> = vec![4, -3, 0, 7, 10];
    let idx: Vec<usize> = vec![0, 1, 2, 3, 4, 5, 100, usize::MAX];
    let n = idx.len();
    let mut out = zeros::<i32>(dev, &[n])?;
    launch(&m, "short_circuit", dev, Grid::linear(n, 4), (&up(dev, &idx)?, &up(dev, &data)?, &mut out))?;
    let want: Vec<i32> = idx
        .iter()
        .map(|&j| {
            let in_range = j < data.len() && data[j] > 0;
            let either = j >= data.len() || data[j] % 2 == 0;
            in_range as i32 + 2 * either as i32
        })
        .collect();
    eq("short_circuit", &dl(&out)?, &want)
}

/// compound_assign.rs: every compound assignment on locals and elements.
pub fn compound_assign(dev: &Device) -> Outcome {
    let m = module("compound_assign.rs")?;
    let a: Vec<i32> = (0..50).map(|i| (rnd(i) % 100_000) as i32 - 50_000).collect();
    let b: Vec<i32> = (0..50).map(|i| (rnd(i + 77) % 200) as i32 - 100).collect();
    let n = a.len();
    let mut ad = up(dev, &a)?;
    launch(&m, "compound_i32", dev, Grid::linear(n, 16), (&mut ad, &up(dev, &b)?))?;
    let want: Vec<i32> = (0..n)
        .map(|i| {
            let y = b[i];
            let mut x = a[i];
            x = x.wrapping_add(y);
            x = x.wrapping_sub(3);
            x = x.wrapping_mul(y);
            x /= 2;
            x %= 1000;
            x &= 0x7fff;
            x |= 0x100;
            x ^= y;
            x = x.wrapping_shl(2);
            x >>= 1;
            x
        })
        .collect();
    eq("compound_i32", &dl(&ad)?, &want)?;

    let n = 12;
    let a: Vec<u32> = (0..n * 10).map(|k| (rnd(k as u64) % 100_000) as u32).collect();
    let b: Vec<u32> = vec![3, 0, 1, 7, 31, 32, 35, 100, u32::MAX, 2, 64, 5];
    let mut ad = up_nd(dev, &a, &[n, 10])?;
    launch(&m, "compound_elements_u32", dev, Grid::linear(n, 8), (&mut ad, &up(dev, &b)?))?;
    let mut want = a.clone();
    for i in 0..n {
        let y = b[i];
        let r = &mut want[i * 10..i * 10 + 10];
        r[0] = r[0].wrapping_add(y);
        r[1] = r[1].wrapping_sub(y);
        r[2] = r[2].wrapping_mul(y);
        r[3] = div0(y, || r[3] / y);
        r[4] = div0(y, || r[4] % y);
        r[5] &= y;
        r[6] |= y;
        r[7] ^= y;
        r[8] = r[8].wrapping_shl(y);
        r[9] = r[9].wrapping_shr(y);
    }
    eq("compound_elements_u32", &dl(&ad)?, &want)?;

    // `compound_float` (which ends in `%=`) is checked by the `float_remainder` scenario.

    let a = vec![false, false, true, true];
    let b = vec![false, true, false, true];
    let mut ad = up(dev, &a)?;
    launch(&m, "compound_bool", dev, Grid::linear(4, 4), (&mut ad, &up(dev, &b)?))?;
    eq("compound_bool", &dl(&ad)?, &(0..4).map(|i| ((a[i] & b[i]) | !b[i]) ^ true).collect::<Vec<_>>())
}

/// float_remainder.rs (and the `%` of operators.rs and compound_assign.rs): `%` on floats is
/// Rust's exact fmod, with the dividend's sign on zero results.
pub fn float_remainder(dev: &Device) -> Outcome {
    let m = module("float_remainder.rs")?;
    let a: Vec<f64> = vec![
        7.5,
        -7.5,
        7.5,
        -7.5,
        -0.0,
        0.0,
        -3.0,
        3.0,
        5.0,
        0.7,
        1e22,
        1e17,
        1e308,
        123456789012345.0,
        1.0,
        f64::INFINITY,
        f64::NAN,
        2.5,
        -1e-310,
    ];
    let b: Vec<f64> = vec![2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 3.0, -3.0, 0.1, 0.1, 3.0, 7.0, 10.0, 0.1, 0.0, 2.0, 1.0, f64::INFINITY, 1e-300];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n])?;
    launch(&m, "rem_f64", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("rem_f64 (a[i] % b[i] with a, b as listed in the scenario)", &dl(&out)?, &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let a: Vec<f32> = vec![7.5, -7.5, -0.0, -3.0, 5.0, 0.7, 1e20, 16777217.0, 1.0, f32::NEG_INFINITY, -2.5, 3e38];
    let b: Vec<f32> = vec![2.0, 2.0, 3.0, 3.0, 0.1, 0.1, 3.0, 7.0, 0.0, 2.0, f32::INFINITY, 1e-3];
    let n = a.len();
    let mut out = zeros::<f32>(dev, &[n])?;
    launch(&m, "rem_f32", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("rem_f32", &dl(&out)?, &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let a: Vec<f32> = (0..40).map(|i| i as f32 * 0.75 - 10.0).collect();
    let mut ad = up(dev, &a)?;
    launch(&m, "rem_assign_f32", dev, Grid::linear(40, 16), (&mut ad, 1.5f32))?;
    exact("rem_assign_f32", &dl(&ad)?, &a.iter().map(|v| v % 1.5).collect::<Vec<_>>())?;

    let ops = module("operators.rs")?;
    let a: Vec<f64> = vec![7.5, -7.5, 1.0, 0.0, -0.0, f64::INFINITY, f64::NAN, 1e308, 5.25, -3.0];
    let b: Vec<f64> = vec![2.0, 2.0, 0.0, 0.0, 3.0, 2.0, 1.0, 10.0, -0.5, f64::INFINITY];
    let n = a.len();
    let mut out = zeros::<f64>(dev, &[n, 6])?;
    launch(&ops, "float_ops", dev, Grid::linear(n, 8), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    exact("operators.rs float_ops `%`", &column(&dl(&out)?, 6, 4), &(0..n).map(|i| a[i] % b[i]).collect::<Vec<_>>())?;

    let ca = module("compound_assign.rs")?;
    let a: Vec<f32> = (0..40).map(|i| i as f32 * 0.75 - 10.0).collect();
    let b: Vec<f32> = (0..40).map(|i| (i % 6) as f32 * 1.25).collect();
    let mut ad = up(dev, &a)?;
    launch(&ca, "compound_float", dev, Grid::linear(40, 16), (&mut ad, &up(dev, &b)?))?;
    exact(
        "compound_assign.rs compound_float (ends in `%= 3.0`)",
        &dl(&ad)?,
        &(0..40).map(|i| ((a[i] + b[i]) * 2.0 - 1.0) / 4.0 % 3.0).collect::<Vec<_>>(),
    )
}

/// int_methods.rs: integer methods on every integer type.
pub fn int_methods(dev: &Device) -> Outcome {
    let m = module("int_methods.rs")?;
    let a: Vec<i32> = vec![0, 1, -1, i32::MIN, i32::MAX, 12345, -98765, 1 << 20, 0x00F0_0F00];
    let b: Vec<i32> = vec![0, -1, 1, -1, 1, 54321, 3, i32::MAX, -7];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<i32>(dev, &[n, 6])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_i32", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_i32",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].wrapping_abs(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_i32 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<i64> = vec![0, 1, -1, i64::MIN, i64::MAX, 1 << 40, -(1 << 50) + 3, 0x0F0F];
    let b: Vec<i64> = vec![0, -1, 1, -1, 1, 3, i64::MAX, -7];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<i64>(dev, &[n, 6])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_i64", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_i64",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].wrapping_abs(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_i64 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<u32> = vec![0, 1, u32::MAX, 1 << 31, 12345, 0x8000_0001, 6];
    let b: Vec<u32> = vec![0, u32::MAX, 1, 1 << 31, 54321, 2, 6];
    let n = a.len();
    let mut out = zeros::<u32>(dev, &[n, 8])?;
    launch(&m, "int_methods_u32", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out))?;
    eq(
        "int_methods_u32",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| {
                [
                    a[i].wrapping_add(b[i]),
                    a[i].wrapping_sub(b[i]),
                    a[i].wrapping_mul(b[i]),
                    a[i].min(b[i]),
                    a[i].max(b[i]),
                    a[i].count_ones(),
                    a[i].leading_zeros(),
                    a[i].trailing_zeros(),
                ]
            })
            .collect::<Vec<_>>(),
    )?;

    let a: Vec<u64> = vec![0, 1, u64::MAX, 1 << 63, 1 << 33, 0xDEAD_BEEF_0000];
    let b: Vec<u64> = vec![0, u64::MAX, 2, 1 << 63, 7, 3];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<u64>(dev, &[n, 5])?, zeros::<u32>(dev, &[n, 3])?);
    launch(&m, "int_methods_u64", dev, Grid::linear(n, 4), (&up(dev, &a)?, &up(dev, &b)?, &mut out, &mut bits))?;
    eq(
        "int_methods_u64",
        &dl(&out)?,
        &(0..n)
            .flat_map(|i| [a[i].wrapping_add(b[i]), a[i].wrapping_sub(b[i]), a[i].wrapping_mul(b[i]), a[i].min(b[i]), a[i].max(b[i])])
            .collect::<Vec<_>>(),
    )?;
    eq(
        "int_methods_u64 bits",
        &dl(&bits)?,
        &a.iter().flat_map(|v| [v.count_ones(), v.leading_zeros(), v.trailing_zeros()]).collect::<Vec<_>>(),
    )?;

    let a: Vec<usize> = vec![0, 1, 5, 1 << 50, usize::MAX, 12345];
    let n = a.len();
    let (mut out, mut bits) = (zeros::<usize>(dev, &[n])?, zeros::<u32>(dev, &[n])?);
    launch(&m, "int_methods_usize", dev, Grid::linear(n, 4), (&up(dev, &a)?, &mut out, &mut bits))?;
    eq("int_methods_usize", &dl(&out)?, &(0..n).map(|i| a[i].wrapping_mul(3).max(i).min(1 << 40)).collect::<Vec<_>>())?;
    eq("int_methods_usize bits", &dl(&bits)?, &a.iter().map(|v| v.count_ones() + v.leading_zeros() * 100).collect::<Vec<_>>())
}

/// type_inference.rs: types inferred from later uses and default literal types.
pub fn type_inference(dev: &Device) -> Outcome {
    let m = module("type_inference.rs")?;
    let x: Vec<i64> = vec![0, -37, 1 << 40, i64::MAX - 37];
    let mut out = zeros::<i64>(dev, &[4])?;
    launch(&m, "infer_from_later_use", dev, Grid::linear(4, 4), (&up(dev, &x)?, &mut out))?;
    eq("infer_from_later_use", &dl(&out)?, &x.iter().map(|s| s + 5 + 32).collect::<Vec<_>>())?;

    let x: Vec<f32> = vec![0.0, 1.5, -2.25, 100.0];
    let mut out = zeros::<f32>(dev, &[4])?;
    launch(&m, "infer_float", dev, Grid::linear(4, 4), (&up(dev, &x)?, &mut out))?;
    exact("infer_float", &dl(&out)?, &x.iter().map(|v| v * 2.0 + 3.0).collect::<Vec<_>>())?;

    let (mut out, mut shifts) = (zeros::<u64>(dev, &[20])?, zeros::<u32>(dev, &[20])?);
    launch(&m, "infer_through_calls", dev, Grid::linear(20, 8), (&mut out, &mut shifts))?;
    eq("infer_through_calls", &dl(&out)?, &(0..20).map(|i| 41u64 << i).collect::<Vec<_>>())?;
    eq("infer_through_calls shifts", &dl(&shifts)?, &[3u32; 20])?;

    let (mut oi, mut of) = (zeros::<i32>(dev, &[3])?, zeros::<f64>(dev, &[3])?);
    launch(&m, "default_literal_types", dev, Grid::linear(3, 4), (&mut oi, &mut of))?;
    eq("default_literal_types i32", &dl(&oi)?, &[7; 3])?;
    exact("default_literal_types f64", &dl(&of)?, &[2.5; 3])
}

/// precedence_literals.rs: the same expressions evaluated by rustc and by the kernel.
pub fn precedence_literals(dev: &Device) -> Outcome {
    let m = module("precedence_literals.rs")?;
    let n = 64;
    let a: Vec<i32> = (0..n).map(|i| (rnd(i) % 101) as i32 - 50).collect();
    let b: Vec<i32> = (0..n).map(|i| (rnd(i + 300) % 101) as i32 - 50).collect();
    let c: Vec<i32> = (0..n).map(|i| (rnd(i + 600) % 101) as i32 - 50).collect();
    let mut out = zeros::<i32>(dev, &[n as usize, 12])?;
    launch(&m, "precedence", dev, Grid::linear(n as usize, 16), (&up(dev, &a)?, &up(dev, &b)?, &up(dev, &c)?, &mut out))?;
    let mut want = Vec::new();
    for i in 0..n as usize {
        let (x, y, z) = (a[i], b[i], c[i]);
        #[allow(clippy::precedence, clippy::nonminimal_bool)]
        want.extend([
            x + y * z,
            x - y - z,
            x * y % 7 / 2,
            x + y << 2 & z | x ^ y,
            -x.abs() + !y & z,
            (x > y && y > z || x == z) as i32,
            (-x as u32 >> 1) as i32,
            x as i64 as i32 * 2 - (y as f32 / 2.0) as i32,
            (x | y) ^ (z & 7) << 1,
            -(x - y) * -z,
            x >> 1 >> 1 << 3,
            (x < 0) as i32 + (y == 0 || z / y > 1) as i32,
        ]);
    }
    eq("precedence", &dl(&out)?, &want)?;

    let (mut oi, mut of, mut ou) = (zeros::<i64>(dev, &[5])?, zeros::<f64>(dev, &[6])?, zeros::<u32>(dev, &[2])?);
    launch(&m, "literals", dev, Grid::linear(1, 1), (&mut oi, &mut of, &mut ou))?;
    eq("literals i64", &dl(&oi)?, &[0x1F + 0o17 + 0b1010 + 1_000, i64::MIN, -1, u32::MAX as i64, -1])?;
    exact("literals f64", &dl(&of)?, &[1e3, 2.5e-1f32 as f64, 2.0f64.sqrt(), std::f32::consts::PI as f64, 1.0, -0.0])?;
    eq("literals u32", &dl(&ou)?, &[1 + 29, 3_000_000_000])?;

    let x: Vec<i32> = vec![5, -1, 0, 1, 10, -7, 3];
    let mut out = up(dev, &vec![-100i32; x.len()])?;
    launch(&m, "never_branches", dev, Grid::linear(x.len(), 4), (&up(dev, &x)?, &mut out))?;
    let want: Vec<i32> = x.iter().map(|&v| if v < 0 { -100 } else { (2 * v).max(1) + 1 + x[0] }).collect();
    eq("never_branches", &dl(&out)?, &want)
}
