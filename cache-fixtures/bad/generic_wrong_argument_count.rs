fn lerp<T: Float>(a: T, b: T, t: T) -> T {
    a + (b - a) * t
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = lerp::<f32, f32>(out[0], out[1], 0.5);
}
