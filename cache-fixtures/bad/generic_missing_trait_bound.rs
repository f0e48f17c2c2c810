fn largest<T: Copy>(a: T, b: T) -> T {
    if a > b { a } else { b }
}

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = largest(1.0, 2.0);
}
