trait Scale {
    fn scale(&self, by: f32) -> f32;
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
