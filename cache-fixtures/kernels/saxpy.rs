// y = a * x + y, one thread per element, in single and double precision.
#[kernel]
pub fn saxpy(a: f32, x: &[f32], y: &mut [f32]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a * x[i] + y[i];
    }
}

#[kernel]
pub fn daxpy(a: f64, x: &[f64], y: &mut [f64]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = a.mul_add(x[i], y[i]);
    }
}
