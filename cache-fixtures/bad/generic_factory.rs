pub fn make_fill<T: Num>(v: f32) -> impl Kernel {
    move |out: &mut [f32]| {
        out[0] = v;
    }
}
