// Every kind of `as` cast: integer widening (sign and zero extension), narrowing, sign
// changes, int <-> float, float widening and narrowing, saturating float -> int, bool -> int.
#[kernel]
pub fn int_casts(a: &[i32], b: &[u64], out_i64: &mut [i64], out_u64: &mut [u64], out_i32: &mut [i32], out_u32: &mut [u32], out_usize: &mut [usize]) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out_i64[2 * i] = x as i64;          // sign extension
        out_i64[2 * i + 1] = y as i64;      // same width, reinterpret
        out_u64[2 * i] = x as u64;          // sign extension then reinterpret
        out_u64[2 * i + 1] = (x as u32) as u64; // zero extension
        out_i32[2 * i] = y as i32;          // truncation
        out_i32[2 * i + 1] = (x as u32 >> 1) as i32;
        out_u32[2 * i] = x as u32;          // reinterpret
        out_u32[2 * i + 1] = y as u32;      // truncation
        out_usize[2 * i] = x as usize;
        out_usize[2 * i + 1] = (y as usize) >> 3;
    }
}

#[kernel]
pub fn float_casts(f: &[f32], d: &[f64], out_f32: &mut [f32], out_f64: &mut [f64]) {
    let i = global_id_x();
    if i < f.len() {
        out_f64[3 * i] = f[i] as f64;       // widening
        out_f64[3 * i + 1] = (f[i] as i32) as f64;
        out_f64[3 * i + 2] = (d[i] as i64) as f64;
        out_f32[3 * i] = d[i] as f32;       // narrowing (rounds)
        out_f32[3 * i + 1] = (d[i] as u32) as f32;
        out_f32[3 * i + 2] = (f[i] as u64) as f32;
    }
}

// Float to integer casts saturate, and NaN becomes 0.
#[kernel]
pub fn saturating_casts(f: &[f32], d: &[f64], oi32: &mut [i32], ou32: &mut [u32], oi64: &mut [i64], ou64: &mut [u64], ousize: &mut [usize]) {
    let i = global_id_x();
    if i < f.len() {
        oi32[2 * i] = f[i] as i32;
        oi32[2 * i + 1] = d[i] as i32;
        ou32[2 * i] = f[i] as u32;
        ou32[2 * i + 1] = d[i] as u32;
        oi64[2 * i] = f[i] as i64;
        oi64[2 * i + 1] = d[i] as i64;
        ou64[2 * i] = f[i] as u64;
        ou64[2 * i + 1] = d[i] as u64;
        ousize[2 * i] = f[i] as usize;
        ousize[2 * i + 1] = d[i] as usize;
    }
}

#[kernel]
pub fn int_to_float(a: &[i64], b: &[u32], out32: &mut [f32], out64: &mut [f64]) {
    let i = global_id_x();
    if i < a.len() {
        out32[2 * i] = a[i] as f32;
        out32[2 * i + 1] = b[i] as f32;
        out64[2 * i] = a[i] as f64;
        out64[2 * i + 1] = (b[i] as usize) as f64;
    }
}

#[kernel]
pub fn bool_casts(flags: &[bool], out_i32: &mut [i32], out_u64: &mut [u64], out_bool: &mut [bool]) {
    let i = global_id_x();
    if i < flags.len() {
        out_i32[i] = flags[i] as i32 * 10;
        out_u64[i] = (flags[i] as u64) << 40;
        out_bool[i] = flags[i] as bool;
    }
}
