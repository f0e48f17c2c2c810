//! `as` casts to and from the small integer and half-precision types, with Rust's rules:
//! integers wrap, floats saturate into integers with NaN as 0, and every conversion into a
//! float rounds once to nearest even. Also the small types' arithmetic (wrapping, division by
//! zero as 0, masked shifts) and their `MIN`/`MAX` constants.

#[kernel]
pub fn from_i64(x: &[i64], a: &mut [i8], b: &mut [u8], c: &mut [i16], d: &mut [u16], e: &mut [f16], f: &mut [bf16]) {
    let i = global_id_x();
    if i < x.len() {
        a[i] = x[i] as i8;
        b[i] = x[i] as u8;
        c[i] = x[i] as i16;
        d[i] = x[i] as u16;
        e[i] = x[i] as f16;
        f[i] = x[i] as bf16;
    }
}

#[kernel]
pub fn from_u64(x: &[u64], e: &mut [f16], f: &mut [bf16], g: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        e[i] = x[i] as f16;
        f[i] = x[i] as bf16;
        g[i] = x[i] as f32;
    }
}

#[kernel]
pub fn from_f32(x: &[f32], a: &mut [i8], b: &mut [u8], c: &mut [i16], d: &mut [u16], e: &mut [f16], f: &mut [bf16]) {
    let i = global_id_x();
    if i < x.len() {
        a[i] = x[i] as i8;
        b[i] = x[i] as u8;
        c[i] = x[i] as i16;
        d[i] = x[i] as u16;
        e[i] = x[i] as f16;
        f[i] = x[i] as bf16;
    }
}

#[kernel]
pub fn from_f16(x: &[f16], a: &mut [i8], b: &mut [u8], c: &mut [i32], d: &mut [u64], e: &mut [f64], f: &mut [bf16]) {
    let i = global_id_x();
    if i < x.len() {
        a[i] = x[i] as i8;
        b[i] = x[i] as u8;
        c[i] = x[i] as i32;
        d[i] = x[i] as u64;
        e[i] = x[i] as f64;
        f[i] = x[i] as bf16;
    }
}

#[kernel]
pub fn from_small(a: &[i8], b: &[u16], w: &mut [i64], x: &mut [u32], y: &mut [f16], z: &mut [usize]) {
    let i = global_id_x();
    if i < a.len() {
        w[i] = a[i] as i64 + b[i] as i64;
        x[i] = a[i] as u32;
        y[i] = b[i] as f16;
        z[i] = (a[i] as u8) as usize + (b[i] as i8) as usize;
    }
}

#[kernel]
pub fn small_arith(a: &[i8], b: &[i8], c: &[u16], d: &[u16], out8: &mut [i8], out16: &mut [u16]) {
    let i = global_id_x();
    if i < a.len() {
        let s = a[i] + b[i];
        let p = a[i] * b[i];
        let q = a[i] / b[i];
        let r = a[i] % b[i];
        out8[5 * i] = s;
        out8[5 * i + 1] = p;
        out8[5 * i + 2] = q;
        out8[5 * i + 3] = r;
        out8[5 * i + 4] = (a[i] >> (b[i] as u32)) ^ !(b[i] << 3);
        let mut m = c[i];
        m -= d[i];
        m <<= 20;
        out16[3 * i] = m;
        out16[3 * i + 1] = c[i] / d[i] + c[i] % d[i];
        out16[3 * i + 2] = c[i].max(d[i]) - c[i].min(d[i]) + c[i].leading_zeros() as u16;
    }
}

#[kernel]
pub fn limits(ints: &mut [i64], floats: &mut [f64]) {
    if global_id_x() == 0 {
        ints[0] = i8::MIN as i64;
        ints[1] = i8::MAX as i64;
        ints[2] = u8::MIN as i64;
        ints[3] = u8::MAX as i64;
        ints[4] = i16::MIN as i64;
        ints[5] = i16::MAX as i64;
        ints[6] = u16::MAX as i64;
        ints[7] = u32::MAX as i64;
        floats[0] = f16::MAX as f64;
        floats[1] = f16::MIN as f64;
        floats[2] = f16::MIN_POSITIVE as f64;
        floats[3] = f16::EPSILON as f64;
        floats[4] = bf16::MAX as f64;
        floats[5] = bf16::MIN as f64;
        floats[6] = bf16::MIN_POSITIVE as f64;
        floats[7] = bf16::EPSILON as f64;
        let h: f16 = 1.5;
        let b: bf16 = -2.25;
        floats[8] = (h * h) as f64 + (b * b) as f64;
        floats[9] = f16::consts::PI as f64;
    }
}

#[kernel]
pub fn scalar_params(a: i8, b: i16, c: u16, d: u8, e: f16, f: bf16, out: &mut [i64]) {
    if global_id_x() == 0 {
        out[0] = a as i64 * b as i64 + c as i64 - d as i64;
        out[1] = (e * 2.0) as i64 + (f - 0.5) as i64;
    }
}
