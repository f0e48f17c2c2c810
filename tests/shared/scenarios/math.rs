//! Scenarios: floating-point math (every float method, special values and edge cases).

use kache::{Device, Grid};

use super::helpers::*;

macro_rules! math_reference {
    ($t:ty, $x:expr, $y:expr) => {{
        let x: &[$t] = $x;
        let y: &[$t] = $y;
        let mut want: Vec<$t> = Vec::new();
        for i in 0..x.len() {
            let (a, b) = (x[i], y[i]);
            want.extend([
                (a - b).abs(),
                a.sqrt(),
                (a * 10.0).floor(),
                (a * 10.0).ceil(),
                (a * 10.0).round(),
                (a * -10.0).trunc(),
                a.min(b),
                a.max(b),
                a.mul_add(b, 0.25),
                a.exp(),
                a.exp2(),
                a.ln(),
                a.log2(),
                a.log10(),
                a.sin(),
                a.cos(),
                a.tan(),
                a.asin(),
                a.acos(),
                a.atan(),
                a.atan2(b - 0.5),
                a.sinh(),
                a.cosh(),
                a.tanh(),
                a.powf(b),
                (a + 1.0).powi(i as i32 % 5 - 2),
                (a - 0.5).cbrt(),
                a.hypot(b),
            ]);
        }
        want
    }};
}

/// Columns of the math kernels whose results are exact (no rounding error allowed).
const EXACT_MATH_COLUMNS: &[usize] = &[0, 2, 3, 4, 5, 6, 7, 8];

fn math_inputs(n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut x: Vec<f64> = (0..n).map(|i| rndf(i as u64, 0.05, 0.95)).collect();
    let y: Vec<f64> = (0..n).map(|i| rndf(i as u64 + 999, 0.05, 0.95)).collect();
    // Halves after scaling by 10: round() must round them away from zero.
    x[0] = 0.25;
    x[1] = 0.75;
    x[2] = 0.5;
    (x, y)
}

/// math_f32.rs: every float method on f32 (transcendentals to a small relative tolerance).
pub fn math_f32(dev: &Device) -> Outcome {
    let m = module("math_f32.rs")?;
    let (x, y) = math_inputs(50);
    let x: Vec<f32> = x.iter().map(|v| *v as f32).collect();
    let y: Vec<f32> = y.iter().map(|v| *v as f32).collect();
    let mut out = zeros::<f32>(dev, &[50, 28])?;
    launch(&m, "math_f32", dev, Grid::linear(50, 16), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    let got = dl(&out)?;
    let want = math_reference!(f32, &x, &y);
    for c in 0..28 {
        let g: Vec<f32> = (0..50).map(|i| got[i * 28 + c]).collect();
        let w: Vec<f32> = (0..50).map(|i| want[i * 28 + c]).collect();
        if EXACT_MATH_COLUMNS.contains(&c) {
            exact(&format!("math_f32 column {c}"), &g, &w)?;
        } else {
            close(&format!("math_f32 column {c}"), &g, &w, 2e-6, 1e-7)?;
        }
    }
    Ok(())
}

/// math_f64.rs: every float method on f64.
pub fn math_f64(dev: &Device) -> Outcome {
    let m = module("math_f64.rs")?;
    let (x, y) = math_inputs(50);
    let mut out = zeros::<f64>(dev, &[50, 28])?;
    launch(&m, "math_f64", dev, Grid::linear(50, 16), (&up(dev, &x)?, &up(dev, &y)?, &mut out))?;
    let got = dl(&out)?;
    let want = math_reference!(f64, &x, &y);
    for c in 0..28 {
        let g: Vec<f64> = (0..50).map(|i| got[i * 28 + c]).collect();
        let w: Vec<f64> = (0..50).map(|i| want[i * 28 + c]).collect();
        if EXACT_MATH_COLUMNS.contains(&c) {
            exact(&format!("math_f64 column {c}"), &g, &w)?;
        } else {
            close(&format!("math_f64 column {c}"), &g, &w, 1e-14, 1e-16)?;
        }
    }
    Ok(())
}

/// float_special.rs: numeric constants and NaN semantics.
pub fn float_special(dev: &Device) -> Outcome {
    let m = module("float_special.rs")?;
    let g = Grid::linear(1, 32);
    let (mut o32, mut o64) = (zeros::<f32>(dev, &[8])?, zeros::<f64>(dev, &[8])?);
    launch(&m, "float_constants", dev, g, (&mut o32, &mut o64))?;
    exact(
        "float_constants f32",
        &dl(&o32)?,
        &[f32::MAX, f32::MIN, f32::EPSILON, f32::MIN_POSITIVE, f32::INFINITY, f32::NEG_INFINITY, std::f32::consts::PI, std::f32::consts::E],
    )?;
    use std::f64::consts as c;
    exact(
        "float_constants f64",
        &dl(&o64)?,
        &[f64::MAX, c::TAU, c::SQRT_2, c::LN_2, c::FRAC_PI_4, c::LOG2_E, c::FRAC_1_SQRT_2, f64::EPSILON],
    )?;

    let (mut oi32, mut ou32, mut oi64, mut ou64, mut ous) = (
        zeros::<i32>(dev, &[2])?,
        zeros::<u32>(dev, &[2])?,
        zeros::<i64>(dev, &[2])?,
        zeros::<u64>(dev, &[2])?,
        zeros::<usize>(dev, &[2])?,
    );
    launch(&m, "int_constants", dev, g, (&mut oi32, &mut ou32, &mut oi64, &mut ou64, &mut ous))?;
    eq("int_constants i32", &dl(&oi32)?, &[i32::MIN, i32::MAX])?;
    eq("int_constants u32", &dl(&ou32)?, &[u32::MAX, 32])?;
    eq("int_constants i64", &dl(&oi64)?, &[i64::MIN, i64::MAX])?;
    eq("int_constants u64", &dl(&ou64)?, &[u64::MAX, 0])?;
    eq("int_constants usize", &dl(&ous)?, &[usize::MAX, 64])?;

    let x = vec![1.0f32, f32::NAN, f32::NEG_INFINITY, 0.0, -0.0];
    let (mut flags, mut ints) = (zeros::<bool>(dev, &[5, 4])?, up(dev, &[99i32; 5])?);
    launch(&m, "nan_behaviour", dev, Grid::linear(5, 4), (&up(dev, &x)?, &mut flags, &mut ints))?;
    eq("nan_behaviour flags", &dl(&flags)?, &x.iter().flat_map(|v| [false, true, false, v.is_nan()]).collect::<Vec<_>>())?;
    eq("nan_behaviour NaN as i32", &dl(&ints)?, &[0; 5])
}

/// float_edge_cases.rs: methods at NaN, infinities, signed zeros, halves and just below one
/// half (libdevice's `hypot` to a tolerance, everything else exact).
pub fn float_edge_cases(dev: &Device) -> Outcome {
    let m = module("float_edge_cases.rs")?;
    let x = vec![
        f32::NAN,
        -2.5,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.5,
        -3.5,
        2.5,
        -7.0,
        1e-45,
        -0.4,
        0.49999997,
        -0.49999997,
        8388609.0,
        -8388609.0,
        1.5,
        -1.5,
    ];
    let n = x.len();
    let mut out = zeros::<f32>(dev, &[n, 10])?;
    launch(&m, "float_edges", dev, Grid::linear(n, 8), (&up(dev, &x)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f32> = x
        .iter()
        .flat_map(|v| [v.min(1.0), v.max(1.0), v.round(), v.abs(), v.hypot(3.0), v.floor(), v.sqrt(), -v, v.ceil(), v.trunc()])
        .collect();
    for (c, what) in ["min(1)", "max(1)", "round", "abs", "hypot(3)", "floor", "sqrt", "neg", "ceil", "trunc"].iter().enumerate() {
        let (g, w) = (column(&got, 10, c), column(&want, 10, c));
        if c == 4 {
            close(&format!("float_edges f32 {what}"), &g, &w, 2e-7, 0.0)?;
        } else {
            exact(&format!("float_edges f32 {what} (inputs {x:?})"), &g, &w)?;
        }
    }

    let x = vec![
        f64::NAN,
        -2.5,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.5,
        -3.5,
        5.0e-324,
        7.25,
        0.49999999999999994,
        -0.49999999999999994,
        4503599627370497.0,
        -4503599627370497.0,
    ];
    let n = x.len();
    let mut out = zeros::<f64>(dev, &[n, 8])?;
    launch(&m, "float_edges_f64", dev, Grid::linear(n, 8), (&up(dev, &x)?, &mut out))?;
    let got = dl(&out)?;
    let want: Vec<f64> =
        x.iter().flat_map(|v| [v.min(1.0), v.max(1.0), v.round(), v.abs(), v.sqrt(), v.floor() + v.ceil(), v * 0.0, 1.0 / v]).collect();
    for (c, what) in ["min(1)", "max(1)", "round", "abs", "sqrt", "floor + ceil", "* 0", "1 /"].iter().enumerate() {
        exact(&format!("float_edges f64 {what} (inputs {x:?})"), &column(&got, 8, c), &column(&want, 8, c))?;
    }
    Ok(())
}

/// polynomial_horner.rs: mul_add chains over a 2-d static table.
pub fn polynomial_horner(dev: &Device) -> Outcome {
    let m = module("polynomial_horner.rs")?;
    let coeffs = [[1.0f64, 0.0, -2.0, 1.0], [0.5, 0.25, 0.0, -1.0], [0.0, 0.0, 3.0, 0.125]];
    let x: Vec<f64> = (0..50).map(|i| rndf(i, -3.0, 3.0)).collect();
    let mut out = zeros::<f64>(dev, &[50, 3])?;
    launch(&m, "eval_polys", dev, Grid::linear(50, 16), (&up(dev, &x)?, &mut out))?;
    let want: Vec<f64> = x.iter().flat_map(|v| coeffs.map(|row| row.iter().fold(0.0f64, |acc, c| acc.mul_add(*v, *c)))).collect();
    exact("eval_polys", &dl(&out)?, &want)
}
