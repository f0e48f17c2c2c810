struct Bad<'a> {
    data: &'a [f32],
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
