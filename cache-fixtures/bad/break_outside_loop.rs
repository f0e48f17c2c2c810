#[kernel]
pub fn k(out: &mut [f32]) {
    if out.len() > 0 {
        break;
    }
}
