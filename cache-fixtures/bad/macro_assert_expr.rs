#[kernel]
pub fn k(out: &mut [f32]) {
    let ok = assert!(out.len() > 0);
}
