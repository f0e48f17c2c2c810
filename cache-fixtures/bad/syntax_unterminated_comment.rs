#[kernel]
pub fn k(out: &mut [f32]) {
    /* this comment never ends
    out[0] = 1.0;
}
