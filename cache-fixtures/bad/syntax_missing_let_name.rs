#[kernel]
pub fn k(out: &mut [f32]) {
    let = 5;
}
