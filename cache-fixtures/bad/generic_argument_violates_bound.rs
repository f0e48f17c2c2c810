fn lerp<T: Float>(a: T, b: T, t: T) -> T {
    a + (b - a) * t
}

#[kernel]
pub fn k(out: &mut [i32]) {
    out[0] = lerp::<i32>(out[0], out[1], 1);
}
