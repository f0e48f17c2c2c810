#[kernel]
pub fn k(out: &mut [f32]) {
    let p = Pointt { x: 1.0 };
    out[0] = 1.0;
}
