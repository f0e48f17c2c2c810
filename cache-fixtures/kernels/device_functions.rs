// Device functions calling device functions, `mut` parameters, functions that take arrays
// (read-only and writable) and return scalars of every type.
fn square(x: f64) -> f64 {
    x * x
}

fn norm2(x: f64, y: f64) -> f64 {
    square(x) + square(y)
}

fn norm(x: f64, y: f64) -> f64 {
    norm2(x, y).sqrt()
}

// `mut` parameters are local copies.
fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

fn lcm(a: u64, b: u64) -> u64 {
    if a == 0 || b == 0 { 0 } else { a / gcd(a, b) * b }
}

fn is_even(x: i32) -> bool {
    x % 2 == 0
}

fn clamp_index(i: i64, n: usize) -> usize {
    if i < 0 {
        0
    } else if i as usize >= n {
        n - 1
    } else {
        i as usize
    }
}

fn sum_window(x: &[f32], center: i64, radius: i64) -> f32 {
    let mut s = 0.0;
    let mut k = -radius;
    while k <= radius {
        s += x[clamp_index(center + k, x.len())];
        k += 1;
    }
    s
}

// Writes through an array parameter of a device function.
fn store_pair(out: &mut [u32], i: usize, a: u32, b: u32) {
    out[2 * i] = a;
    out[2 * i + 1] = b;
}

fn half(x: u32) -> u32 {
    x >> 1
}

fn flag(b: bool) -> bool {
    !b
}

fn to_i32(x: usize) -> i32 {
    x as i32
}

fn to_f32(x: i32) -> f32 {
    x as f32
}

#[kernel]
pub fn norms(x: &[f64], y: &[f64], out: &mut [f64]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = norm(x[i], y[i]);
    }
}

#[kernel]
pub fn gcd_lcm(a: &[u64], b: &[u64], g: &mut [u64], l: &mut [u64]) {
    let i = global_id_x();
    if i < a.len() {
        g[i] = gcd(a[i], b[i]);
        l[i] = lcm(a[i], b[i]);
    }
}

#[kernel]
pub fn windows(x: &[f32], radius: i64, out: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        out[i] = sum_window(x, i as i64, radius);
    }
}

#[kernel]
pub fn helpers(x: &[u32], pairs: &mut [u32], flags: &mut [bool], f: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        store_pair(pairs, i, half(x[i]), x[i] + 1);
        flags[i] = flag(is_even(x[i] as i32));
        f[i] = to_f32(to_i32(i)) + 0.5;
    }
}
