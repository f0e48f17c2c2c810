// Kernels the fixture stores in cache-fixtures/stores/ were made from (see
// examples/make_fixtures.rs, which regenerates them).
#[kernel]
pub fn scale(x: &mut [f32], by: f32) {
    let i = global_id_x();
    if i < x.len() {
        x[i] *= by;
    }
}

#[kernel]
pub fn add(a: &[i32], b: &[i32], c: &mut [i32]) {
    let i = global_id_x();
    if i < c.len() {
        c[i] = a[i] + b[i];
    }
}

#[kernel]
pub fn fill(x: &mut [u64], v: u64) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = v;
    }
}
