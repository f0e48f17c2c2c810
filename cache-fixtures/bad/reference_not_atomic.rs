fn set(v: &f32) {
    *v = 2.0;
}

#[kernel]
pub fn k(out: &mut [f32]) {
    let x = 1.0;
    set(&x);
    out[0] = x;
}
