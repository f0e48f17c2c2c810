// Element-wise integer arithmetic on every integer type; arithmetic wraps.
#[kernel]
pub fn add_i32(a: &[i32], b: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] + b[i];
    }
}

#[kernel]
pub fn sub_i64(a: &[i64], b: &[i64], out: &mut [i64]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] - b[i];
    }
}

#[kernel]
pub fn mul_u32(a: &[u32], b: &[u32], out: &mut [u32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] * b[i];
    }
}

#[kernel]
pub fn fma_u64(a: &[u64], b: &[u64], c: u64, out: &mut [u64]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = a[i] * b[i] + c;
    }
}

#[kernel]
pub fn iota_usize(offset: usize, out: &mut [usize]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = i * 3 + offset;
    }
}
