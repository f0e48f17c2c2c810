// The math methods of the second language version, named as Rust names them: special
// functions, float tests, and the integer families (saturating, wrapping, bit tricks).
#[kernel]
pub fn special_f32(x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        y[i] = v.erf() + v.erfc() + v.exp_m1() + v.abs().ln_1p() + v.exp10() + (v.abs() + 1.0).rsqrt();
    }
}

#[kernel]
pub fn shaping_f64(x: &[f64], lo: f64, hi: f64, y: &mut [f64], flags: &mut [u32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        y[i] = v.clamp(lo, hi).copysign(-1.0) + v.signum() + v.rem_euclid(2.5);
        flags[i] = v.is_nan() as u32 | (v.is_finite() as u32) << 1 | (v.is_infinite() as u32) << 2;
    }
}

#[kernel]
pub fn integer_families(a: &[i64], b: &[i64], e: &[u32], y: &mut [i64], d: &mut [u64]) {
    let i = global_id_x();
    if i < a.len() {
        let p = a[i];
        let q = b[i];
        y[i] = p.saturating_add(q) ^ p.saturating_sub(q) ^ p.saturating_mul(q) ^ p.wrapping_div(q) ^ p.wrapping_rem(q)
            ^ p.wrapping_neg() ^ p.wrapping_shl(e[i]) ^ p.wrapping_shr(e[i]) ^ p.wrapping_pow(e[i]) ^ p.pow(3)
            ^ p.wrapping_abs() ^ p.signum() ^ p.clamp(-5, 5) ^ p.rem_euclid(7) ^ p.reverse_bits();
        d[i] = p.abs_diff(q);
    }
}
