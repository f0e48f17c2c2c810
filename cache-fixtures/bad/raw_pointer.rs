#[kernel]
pub fn k(out: *mut f32) {
}
