#[derive(Clone, Copy)]
struct V { x: f32 }

impl Default for V {
    fn default() -> V {
        V { x: 0.0 }
    }
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = 1.0;
}
