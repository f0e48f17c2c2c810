// Operator precedence and associativity (compared with the same expressions compiled by
// rustc), literal forms (hex, octal, binary, separators, exponents, suffixes), `return` and
// `continue` in value positions, and an index variable inferred as `usize`.
#[kernel]
pub fn precedence(a: &[i32], b: &[i32], c: &[i32], out: &mut Array<i32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        let z = c[i];
        out[[i, 0]] = x + y * z;
        out[[i, 1]] = x - y - z;
        out[[i, 2]] = x * y % 7 / 2;
        out[[i, 3]] = x + y << 2 & z | x ^ y;
        out[[i, 4]] = -x.abs() + !y & z;
        out[[i, 5]] = (x > y && y > z || x == z) as i32;
        out[[i, 6]] = (-x as u32 >> 1) as i32;
        out[[i, 7]] = x as i64 as i32 * 2 - (y as f32 / 2.0) as i32;
        out[[i, 8]] = (x | y) ^ (z & 7) << 1;
        out[[i, 9]] = -(x - y) * -z;
        out[[i, 10]] = x >> 1 >> 1 << 3;
        out[[i, 11]] = (x < 0) as i32 + (y == 0 || z / y > 1) as i32;
    }
}

#[kernel]
pub fn literals(out_i: &mut [i64], out_f: &mut [f64], out_u: &mut [u32]) {
    if global_id_x() == 0 {
        out_i[0] = 0x1F + 0o17 + 0b1010 + 1_000;
        out_i[1] = -9223372036854775808i64;
        out_i[2] = -1i32 as i64;
        out_i[3] = (-1i32 as u32) as i64;
        out_i[4] = 0xFFFF_FFFFu32 as i32 as i64;
        out_f[0] = 1e3;
        out_f[1] = 2.5e-1f32 as f64;
        out_f[2] = 2.0f64.sqrt();
        out_f[3] = f32::consts::PI as f64;
        out_f[4] = 1.;
        out_f[5] = -0.0;
        out_u[0] = 1u32.count_ones() + (7u32).leading_zeros();
        out_u[1] = 3_000_000_000;
    }
}

#[kernel]
pub fn never_branches(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < x.len() {
        let v = if x[i] >= 0 { x[i] * 2 } else { return; };
        let mut k = 0;
        let w = loop {
            k += 1;
            if k < v {
                continue;
            } else {
                break k + 1;
            }
        };
        let j = 0;
        out[i] = w + x[j];
    }
}
