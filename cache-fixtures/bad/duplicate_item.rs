fn helper() -> f32 {
    1.0
}

fn helper() -> f32 {
    2.0
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = helper();
}
