//! Tuples: per-row arg-min and arg-max returned as a tuple of tuples from a device function,
//! destructuring `let`, tuples as parameters, return values and annotations, tuple fields
//! written in place, and `sin_cos` (a tuple) rotating points.

fn arg_extremes(x: &[f32], start: usize, n: usize) -> ((usize, f32), (usize, f32)) {
    let mut lo = (start, x[start]);
    let mut hi: (usize, f32) = (start, x[start]);
    for i in start + 1..start + n {
        let v = x[i];
        if v < lo.1 {
            lo = (i, v);
        }
        if v > hi.1 {
            hi.0 = i;
            hi.1 = v;
        }
    }
    (lo, hi)
}

#[kernel]
pub fn row_extremes(x: &[f32], n: usize, arg_min: &mut [u32], min: &mut [f32], arg_max: &mut [u32], max: &mut [f32]) {
    let r = global_id_x();
    if r < min.len() {
        let ((i_lo, v_lo), (i_hi, v_hi)) = arg_extremes(x, r * n, n);
        arg_min[r] = (i_lo - r * n) as u32;
        min[r] = v_lo;
        arg_max[r] = (i_hi - r * n) as u32;
        max[r] = v_hi;
    }
}

fn rotate(p: (f32, f32), angle: f32) -> (f32, f32) {
    let (s, c) = angle.sin_cos();
    let (x, y) = p;
    (x * c - y * s, x * s + y * c)
}

#[kernel]
pub fn rotate_points(xs: &mut [f32], ys: &mut [f32], angle: f32) {
    let i = global_id_x();
    if i < xs.len() {
        let (x, y) = rotate((xs[i], ys[i]), angle);
        xs[i] = x;
        ys[i] = y;
    }
}

#[kernel]
pub fn sin_cos_f64(x: &[f64], s: &mut [f64], c: &mut [f64]) {
    let i = global_id_x();
    if i < x.len() {
        let sc: (f64, f64) = x[i].sin_cos();
        s[i] = sc.0;
        c[i] = sc.1;
    }
}

/// Integer division and remainder in one call, as a pair.
fn div_rem(a: u32, b: u32) -> (u32, u32) {
    (a / b, a % b)
}

#[kernel]
pub fn unflatten(index: &[u32], cols: u32, row: &mut [u32], col: &mut [u32]) {
    let i = global_id_x();
    if i < index.len() {
        let (r, c) = div_rem(index[i], cols);
        let (row_out, _, col_out) = (r, 0u8, c);
        row[i] = row_out;
        col[i] = col_out;
    }
}
