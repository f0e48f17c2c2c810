fn half<T: Float>(x: T) -> T {
    x * (0.5 as T)
}

#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = half(out[0]);
}
