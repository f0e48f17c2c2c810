//! Math methods checked against Rust's own results, on any device: every float method on
//! `f32` and `f64` over special values and a spread of magnitudes, within a bound in units in
//! the last place (ulps), and every integer method at the edges of each type, exactly.
//!
//! Used by `tests/it/math.rs` (host backend: the host calls Rust's functions, so the bound
//! is 0) and `tests/gpu.rs` (libdevice: the bounds of [`GPU_ULPS`], which
//! `docs/language.md` lists, plus one ulp for Rust's own rounding).
#![allow(dead_code, clippy::unwrap_used)]

use kache::{Device, Grid};

/// Float methods with their GPU bound in ulps (`f32`, `f64`): NVIDIA's documented maximum
/// error of the libdevice function kache calls, 0 for native instructions. `None`: no bound
/// is documented (`powi` multiplies repeatedly).
pub const GPU_ULPS: &[(&str, Option<(u32, u32)>)] = &[
    ("abs", Some((0, 0))),
    ("sqrt", Some((0, 0))),
    ("floor", Some((0, 0))),
    ("ceil", Some((0, 0))),
    ("round", Some((0, 0))),
    ("trunc", Some((0, 0))),
    ("min", Some((0, 0))),
    ("max", Some((0, 0))),
    ("mul_add", Some((0, 0))),
    ("copysign", Some((0, 0))),
    ("signum", Some((0, 0))),
    ("clamp", Some((0, 0))),
    ("rem_euclid", Some((0, 0))),
    ("exp", Some((2, 1))),
    ("exp2", Some((2, 1))),
    ("exp10", Some((2, 1))),
    ("exp_m1", Some((1, 1))),
    ("ln", Some((1, 1))),
    ("log2", Some((1, 1))),
    ("log10", Some((2, 1))),
    ("ln_1p", Some((1, 1))),
    ("sin", Some((2, 2))),
    ("cos", Some((2, 2))),
    ("tan", Some((4, 2))),
    ("asin", Some((2, 2))),
    ("acos", Some((2, 2))),
    ("atan", Some((2, 2))),
    ("atan2", Some((3, 2))),
    ("sinh", Some((3, 2))),
    ("cosh", Some((2, 1))),
    ("tanh", Some((2, 1))),
    ("powf", Some((4, 2))),
    ("powi", None),
    ("cbrt", Some((1, 1))),
    ("hypot", Some((3, 2))),
    ("erf", Some((2, 2))),
    ("erfc", Some((4, 5))),
    ("rsqrt", Some((2, 1))),
];

/// Inputs: special values, then magnitudes from 1e-30 to 1e30 (f64: 1e-300 to 1e300) of both
/// signs, and a dense walk over [-10, 10].
fn inputs(wide: bool) -> Vec<f64> {
    let mut v = vec![0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, 10.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 1e-40, -1e-45];
    let (lo, hi) = if wide { (-300.0, 300.0) } else { (-30.0, 30.0) };
    let steps = 400;
    for k in 0..=steps {
        let e = lo + (hi - lo) * k as f64 / steps as f64;
        let m = 10f64.powf(e) * (1.0 + (k % 7) as f64 / 9.0);
        v.push(m);
        v.push(-m);
    }
    for k in 0..=400 {
        v.push(-10.0 + 20.0 * k as f64 / 400.0 + 1e-3);
    }
    v
}

/// Distance in ulps; NaN equals NaN; infinities and signed zeros must match exactly.
pub fn ulps_f64(a: f64, b: f64) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if a.is_nan() || b.is_nan() || (a.is_infinite() || b.is_infinite()) && a != b {
        return u64::MAX;
    }
    let key = |x: f64| {
        let i = x.to_bits() as i64;
        if i < 0 { i64::MIN - i } else { i }
    };
    key(a).abs_diff(key(b))
}

pub fn ulps_f32(a: f32, b: f32) -> u64 {
    if a.is_nan() && b.is_nan() {
        return 0;
    }
    if a.is_nan() || b.is_nan() || (a.is_infinite() || b.is_infinite()) && a != b {
        return u64::MAX;
    }
    let key = |x: f32| {
        let i = x.to_bits() as i32 as i64;
        if i < 0 { i32::MIN as i64 - i } else { i }
    };
    key(a).abs_diff(key(b))
}

macro_rules! float_refs {
    ($t:ty, $lib:ident) => {
        /// Rust's result for `name` on the arguments.
        fn reference(name: &str, a: $t, b: $t, c: $t) -> f64 {
            (match name {
                "abs" => a.abs(),
                "sqrt" => a.sqrt(),
                "floor" => a.floor(),
                "ceil" => a.ceil(),
                "round" => a.round(),
                "trunc" => a.trunc(),
                "min" => a.min(b),
                "max" => a.max(b),
                "mul_add" => a.mul_add(b, c),
                "copysign" => a.copysign(b),
                "signum" => a.signum(),
                "clamp" => {
                    // Rust panics for min > max or NaN bounds; the inputs avoid both.
                    a.clamp(b.min(c), b.max(c))
                }
                "rem_euclid" => a.rem_euclid(b),
                "exp" => a.exp(),
                "exp2" => a.exp2(),
                "exp10" => $lib::exp10(a),
                "exp_m1" => a.exp_m1(),
                "ln" => a.ln(),
                "log2" => a.log2(),
                "log10" => a.log10(),
                "ln_1p" => a.ln_1p(),
                "sin" => a.sin(),
                "cos" => a.cos(),
                "tan" => a.tan(),
                "asin" => a.asin(),
                "acos" => a.acos(),
                "atan" => a.atan(),
                "atan2" => a.atan2(b),
                "sinh" => a.sinh(),
                "cosh" => a.cosh(),
                "tanh" => a.tanh(),
                "powf" => a.powf(b),
                "powi" => a.powi((b as i32).clamp(-40, 40)),
                "cbrt" => a.cbrt(),
                "hypot" => a.hypot(b),
                "erf" => $lib::erf(a),
                "erfc" => $lib::erfc(a),
                "rsqrt" => 1.0 / a.sqrt(),
                other => panic!("no reference for {other}"),
            }) as f64
        }
    };
}

mod f32_refs {
    mod lib {
        pub fn exp10(x: f32) -> f32 {
            libm::exp10f(x)
        }
        pub fn erf(x: f32) -> f32 {
            libm::erff(x)
        }
        pub fn erfc(x: f32) -> f32 {
            libm::erfcf(x)
        }
    }
    float_refs!(f32, lib);
    pub fn of(name: &str, a: f32, b: f32, c: f32) -> f32 {
        reference(name, a, b, c) as f32
    }
}

mod f64_refs {
    use libm as lib;
    float_refs!(f64, lib);
    pub fn of(name: &str, a: f64, b: f64, c: f64) -> f64 {
        reference(name, a, b, c)
    }
}

fn arity(name: &str) -> usize {
    match name {
        "min" | "max" | "copysign" | "rem_euclid" | "atan2" | "powf" | "powi" | "hypot" => 2,
        "mul_add" | "clamp" => 3,
        _ => 1,
    }
}

/// The kernel source computing `name` over arrays of `t`.
fn kernel_source(name: &str, t: &str) -> String {
    let call = match (name, arity(name)) {
        ("powi", _) => "a[i].powi((b[i] as i32).clamp(-40, 40))".to_string(),
        ("clamp", _) => "a[i].clamp(b[i].min(c[i]), b[i].max(c[i]))".to_string(),
        (_, 1) => format!("a[i].{name}()"),
        (_, 2) => format!("a[i].{name}(b[i])"),
        _ => format!("a[i].{name}(b[i], c[i])"),
    };
    format!(
        "#[kernel]\npub fn {name}_{t}(a: &[{t}], b: &[{t}], c: &[{t}], y: &mut [{t}]) {{\n    let i = global_id_x();\n    if i < y.len() {{\n        y[i] = {call};\n    }}\n}}\n"
    )
}

/// Every float method of [`GPU_ULPS`] on `dev`, each result within `bound(name, f32?)` ulps of
/// Rust's (`None`: not checked). Returns the worst error seen per method, or what failed.
pub fn check_float_methods(dev: &Device, bound: impl Fn(&str, bool) -> Option<u64>) -> Result<Vec<(String, u64, u64)>, String> {
    let jit = kache::Jit::new(kache::Config::in_memory()).map_err(|e| e.to_string())?;
    let mut worst = Vec::new();
    // Every method is measured even after one fails, so one GPU run reports them all.
    let mut failures: Vec<String> = Vec::new();
    for (name, _) in GPU_ULPS {
        let mut failed = false;
        let src = format!("{}{}", kernel_source(name, "f32"), kernel_source(name, "f64"));
        let m = jit.load_source(&format!("math_{name}.rs"), &src).map_err(|e| format!("{name}: {e}"))?;
        let mut worst_pair = (0u64, 0u64);
        for wide in [false, true] {
            let xs = inputs(wide);
            let n = xs.len();
            let bs: Vec<f64> = (0..n).map(|i| xs[(i * 7 + 3) % n]).collect();
            let cs: Vec<f64> = (0..n).map(|i| xs[(i * 13 + 5) % n]).collect();
            let grid = Grid::linear(n, 128);
            if !wide {
                let a: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
                let b: Vec<f32> = bs.iter().map(|v| *v as f32).collect();
                let c: Vec<f32> = cs.iter().map(|v| *v as f32).collect();
                let (da, db, dc) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap(), dev.upload(&c).unwrap());
                let mut y = dev.alloc::<f32>(&[n]).unwrap();
                m.kernel(&format!("{name}_f32"))
                    .and_then(|k| k.launch(dev, grid, (&da, &db, &dc, &mut y)))
                    .map_err(|e| format!("{name}_f32: {e}"))?;
                let got = y.download().unwrap();
                for i in 0..n {
                    if name == &"clamp" && (b[i].is_nan() || c[i].is_nan()) {
                        continue;
                    }
                    let want = f32_refs::of(name, a[i], b[i], c[i]);
                    let d = ulps_f32(got[i], want);
                    worst_pair.0 = worst_pair.0.max(d);
                    if let Some(limit) = bound(name, true)
                        && d > limit
                        && !failed
                    {
                        failed = true;
                        failures.push(format!(
                            "{name}(f32 {:e}, {:e}, {:e}) = {:e}, Rust {:e}: {d} ulps > {limit}",
                            a[i], b[i], c[i], got[i], want
                        ));
                    }
                }
            }
            let (da, db, dc) = (dev.upload(&xs).unwrap(), dev.upload(&bs).unwrap(), dev.upload(&cs).unwrap());
            let mut y = dev.alloc::<f64>(&[n]).unwrap();
            m.kernel(&format!("{name}_f64"))
                .and_then(|k| k.launch(dev, grid, (&da, &db, &dc, &mut y)))
                .map_err(|e| format!("{name}_f64: {e}"))?;
            let got = y.download().unwrap();
            for i in 0..n {
                if name == &"clamp" && (bs[i].is_nan() || cs[i].is_nan()) {
                    continue;
                }
                let want = f64_refs::of(name, xs[i], bs[i], cs[i]);
                let d = ulps_f64(got[i], want);
                worst_pair.1 = worst_pair.1.max(d);
                if let Some(limit) = bound(name, false)
                    && d > limit
                    && !failed
                {
                    failed = true;
                    failures.push(format!(
                        "{name}(f64 {:e}, {:e}, {:e}) = {:e}, Rust {:e}: {d} ulps > {limit}",
                        xs[i], bs[i], cs[i], got[i], want
                    ));
                }
            }
        }
        worst.push((name.to_string(), worst_pair.0, worst_pair.1));
    }
    for (name, w32, w64) in &worst {
        eprintln!("{name:>12}: worst {w32} ulps (f32), {w64} ulps (f64)");
    }
    if failures.is_empty() { Ok(worst) } else { Err(failures.join("\n")) }
}

/// The float tests (`is_nan`, `is_finite`, `is_infinite`), exactly.
pub fn check_float_tests(dev: &Device) -> Result<(), String> {
    let src = r#"
#[kernel]
pub fn tests_f32(a: &[f32], out: &mut [u32]) {
    let i = global_id_x();
    if i < a.len() { out[i] = a[i].is_nan() as u32 | (a[i].is_finite() as u32) << 1 | (a[i].is_infinite() as u32) << 2; }
}
#[kernel]
pub fn tests_f64(a: &[f64], out: &mut [u32]) {
    let i = global_id_x();
    if i < a.len() { out[i] = a[i].is_nan() as u32 | (a[i].is_finite() as u32) << 1 | (a[i].is_infinite() as u32) << 2; }
}
"#;
    let jit = kache::Jit::new(kache::Config::in_memory()).map_err(|e| e.to_string())?;
    let m = jit.load_source("float_tests.rs", src).map_err(|e| e.to_string())?;
    let xs = inputs(true);
    let n = xs.len();
    let want = |x: f64| x.is_nan() as u32 | (x.is_finite() as u32) << 1 | (x.is_infinite() as u32) << 2;
    let d = dev.upload(&xs).unwrap();
    let mut out = dev.alloc::<u32>(&[n]).unwrap();
    m.kernel("tests_f64").and_then(|k| k.launch(dev, Grid::linear(n, 128), (&d, &mut out))).map_err(|e| e.to_string())?;
    let got = out.download().unwrap();
    for i in 0..n {
        if got[i] != want(xs[i]) {
            return Err(format!("f64 tests of {:e}: {:03b}, Rust {:03b}", xs[i], got[i], want(xs[i])));
        }
    }
    let x32: Vec<f32> = xs.iter().map(|v| *v as f32).collect();
    let d = dev.upload(&x32).unwrap();
    m.kernel("tests_f32").and_then(|k| k.launch(dev, Grid::linear(n, 128), (&d, &mut out))).map_err(|e| e.to_string())?;
    let got = out.download().unwrap();
    for i in 0..n {
        if got[i] != want(x32[i] as f64) {
            return Err(format!("f32 tests of {:e}: {:03b}, Rust {:03b}", x32[i], got[i], want(x32[i] as f64)));
        }
    }
    Ok(())
}

macro_rules! int_check {
    ($fname:ident, $t:ty, $u:ty, $signed:expr) => {
        /// Every integer method on this type, at the type's edges, against Rust's (exactly;
        /// where Rust would panic the kernel's defined value is not compared).
        pub fn $fname(dev: &Device) -> Result<(), String> {
            let t = stringify!($t);
            let u = stringify!($u);
            let signed_only = if $signed {
                "out[n * 17 + i] = a[i].signum();\n        out[n * 18 + i] = a[i].wrapping_abs();"
            } else {
                "out[n * 17 + i] = 0;\n        out[n * 18 + i] = 0;"
            };
            let src = format!(
                r#"
#[kernel]
pub fn ints(a: &[{t}], b: &[{t}], e: &[u32], out: &mut [{t}], diffs: &mut [{u}], bits: &mut [u32]) {{
    let i = global_id_x();
    let n = a.len();
    if i < n {{
        out[i] = a[i].wrapping_add(b[i]);
        out[n + i] = a[i].wrapping_sub(b[i]);
        out[n * 2 + i] = a[i].wrapping_mul(b[i]);
        out[n * 3 + i] = a[i].wrapping_div(b[i]);
        out[n * 4 + i] = a[i].wrapping_rem(b[i]);
        out[n * 5 + i] = a[i].wrapping_neg();
        out[n * 6 + i] = a[i].wrapping_shl(e[i]);
        out[n * 7 + i] = a[i].wrapping_shr(e[i]);
        out[n * 8 + i] = a[i].wrapping_pow(e[i] % 70);
        out[n * 9 + i] = a[i].pow(e[i] % 70);
        out[n * 10 + i] = a[i].saturating_add(b[i]);
        out[n * 11 + i] = a[i].saturating_sub(b[i]);
        out[n * 12 + i] = a[i].saturating_mul(b[i]);
        out[n * 13 + i] = a[i].reverse_bits();
        out[n * 14 + i] = a[i].clamp(b[i].min(a[(i + 1) % n]), b[i].max(a[(i + 1) % n]));
        out[n * 15 + i] = a[i].rem_euclid(b[i]);
        out[n * 16 + i] = a[i].min(b[i]) ^ a[i].max(b[i]);
        {signed_only}
        diffs[i] = a[i].abs_diff(b[i]);
        bits[i] = a[i].count_ones() | a[i].leading_zeros() << 8 | a[i].trailing_zeros() << 16;
    }}
}}
"#
            );
            let jit = kache::Jit::new(kache::Config::in_memory()).map_err(|e| e.to_string())?;
            let k = jit.load_source(&format!("ints_{t}.rs"), &src).and_then(|m| m.kernel("ints")).map_err(|e| e.to_string())?;
            let mut edges: Vec<$t> = vec![<$t>::MIN, <$t>::MIN + 1, <$t>::MAX, <$t>::MAX - 1, 0, 1, 2, 3, 7, 100, 12345];
            if $signed {
                edges.extend([0 as $t, 1, 2, 5].iter().map(|v| v.wrapping_neg()));
            }
            let mut a = Vec::new();
            let mut b = Vec::new();
            for x in &edges {
                for y in &edges {
                    a.push(*x);
                    b.push(*y);
                }
            }
            let n = a.len();
            let e: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) % 200).collect();
            let (da, db, de) = (dev.upload(&a).unwrap(), dev.upload(&b).unwrap(), dev.upload(&e).unwrap());
            let mut out = dev.alloc::<$t>(&[19 * n]).unwrap();
            let mut diffs = dev.alloc::<$u>(&[n]).unwrap();
            let mut bits = dev.alloc::<u32>(&[n]).unwrap();
            k.launch(dev, Grid::linear(n, 64), (&da, &db, &de, &mut out, &mut diffs, &mut bits)).map_err(|e| e.to_string())?;
            let (out, diffs, bits) = (out.download().unwrap(), diffs.download().unwrap(), bits.download().unwrap());
            let names = [
                "wrapping_add",
                "wrapping_sub",
                "wrapping_mul",
                "wrapping_div",
                "wrapping_rem",
                "wrapping_neg",
                "wrapping_shl",
                "wrapping_shr",
                "wrapping_pow",
                "pow",
                "saturating_add",
                "saturating_sub",
                "saturating_mul",
                "reverse_bits",
                "clamp",
                "rem_euclid",
                "min ^ max",
                "signum",
                "wrapping_abs",
            ];
            for i in 0..n {
                let (x, y, ex) = (a[i], b[i], e[i]);
                let nx = a[(i + 1) % n];
                let want: [Option<$t>; 19] = [
                    Some(x.wrapping_add(y)),
                    Some(x.wrapping_sub(y)),
                    Some(x.wrapping_mul(y)),
                    (y != 0).then(|| x.wrapping_div(y)),
                    (y != 0).then(|| x.wrapping_rem(y)),
                    Some(x.wrapping_neg()),
                    Some(x.wrapping_shl(ex)),
                    Some(x.wrapping_shr(ex)),
                    Some(x.wrapping_pow(ex % 70)),
                    Some(x.wrapping_pow(ex % 70)),
                    Some(x.saturating_add(y)),
                    Some(x.saturating_sub(y)),
                    Some(x.saturating_mul(y)),
                    Some(x.reverse_bits()),
                    Some(x.clamp(y.min(nx), y.max(nx))),
                    (y != 0).then(|| x.wrapping_rem_euclid(y)),
                    Some(x.min(y) ^ x.max(y)),
                    Some(if $signed { (x as i64).signum() as $t } else { 0 }),
                    Some(if $signed { (x as i64).wrapping_abs() as $t } else { 0 }),
                ];
                for (k, w) in want.iter().enumerate() {
                    if let Some(w) = w
                        && out[k * n + i] != *w
                    {
                        return Err(format!("{t} {}({x}, {y}, {ex}) = {}, Rust {w}", names[k], out[k * n + i]));
                    }
                }
                if diffs[i] != x.abs_diff(y) {
                    return Err(format!("{t} abs_diff({x}, {y}) = {}, Rust {}", diffs[i], x.abs_diff(y)));
                }
                let wb = x.count_ones() | x.leading_zeros() << 8 | x.trailing_zeros() << 16;
                if bits[i] != wb {
                    return Err(format!("{t} bit counts of {x}: {:#x}, Rust {wb:#x}", bits[i]));
                }
            }
            // Defined where Rust panics: division and remainder by zero give 0.
            for i in (0..n).filter(|i| b[*i] == 0) {
                if out[3 * n + i] != 0 || out[4 * n + i] != 0 || out[15 * n + i] != 0 {
                    return Err(format!("{t}: {} / 0 is not 0", a[i]));
                }
            }
            Ok(())
        }
    };
}

int_check!(check_i32, i32, u32, true);
int_check!(check_i64, i64, u64, true);
int_check!(check_u32, u32, u32, false);
int_check!(check_u64, u64, u64, false);
int_check!(check_usize, usize, usize, false);
