#[kernel]
pub fn k(out: &mut [f32]) {
    let double = |x: f32| x * 2.0;
    out[0] = double(1.0);
}
