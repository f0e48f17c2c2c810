// A `let` without a value, read on a path where it was never assigned.
#[kernel]
pub fn k(out: &mut [f32], flag: bool) {
    let scale: f32;
    if flag {
        scale = 2.0;
    }
    out[0] = out[0] * scale;
}
