#[kernel]
pub fn k(out: &mut [f32]) {
    let name = "saxpy";
    out[0] = 1.0;
}
