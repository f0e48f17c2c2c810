#[kernel]
pub fn k(out: &mut [f32]) {
    let acc = 0.0;
    acc += 1.0;
    out[0] = acc;
}
