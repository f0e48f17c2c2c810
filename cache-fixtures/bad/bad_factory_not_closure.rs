pub fn make_scale(factor: f32) -> impl Kernel {
    factor * 2.0
}
