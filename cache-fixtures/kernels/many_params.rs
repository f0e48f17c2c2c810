// A kernel with a parameter of every scalar type and arrays of several ranks.
#[kernel]
pub fn many_params(a: i32, b: u32, c: i64, d: u64, e: usize, f: f32, g: f64, h: bool, x: &[f32], y: &Array<f64, 2>, z: &Array<i32, 0>, out: &mut [f64]) {
    if global_id_x() == 0 {
        out[0] = a as f64 + b as f64 + c as f64 + d as f64 + e as f64 + f as f64 + g + h as i32 as f64 + x[0] as f64 + y[[1, 1]] + z[[]] as f64;
        out[1] = if h { x.len() as f64 } else { -1.0 };
    }
}
