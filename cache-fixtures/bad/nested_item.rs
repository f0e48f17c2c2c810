#[kernel]
pub fn k(out: &mut [f32]) {
    fn helper() -> f32 {
        1.0
    }
    out[0] = helper();
}
