#[kernel]
pub fn fill(out: &mut [f32]) {
    out[0] = 1.0;
}

fn helper(out: &mut [f32]) {
    fill(out);
}

#[kernel]
pub fn k(out: &mut [f32]) {
    helper(out);
}
