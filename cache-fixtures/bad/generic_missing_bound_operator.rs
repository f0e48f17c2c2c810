fn sum<T>(a: T, b: T) -> T {
    a + b
}

#[kernel]
pub fn k(out: &mut [i32]) {
    out[0] = sum(out[0], out[1]);
}
