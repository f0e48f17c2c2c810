trait Scale {
    fn scale(&self, by: f32) -> f32;
}

fn apply(s: &dyn Scale, x: f32) -> f32 {
    s.scale(x)
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
