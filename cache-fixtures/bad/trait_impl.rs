trait Scale {
    fn scale(&self, by: f32) -> f32;
    fn offset(&self) -> f32;
}

#[derive(Clone, Copy)]
struct V {
    x: f32,
}

impl Scale for V {
    fn scale(&self, by: f32) -> f32 {
        self.x * by
    }
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
