fn down<T: Int>(n: T) -> T {
    if n == T::ZERO { n } else { down::<T>(n - T::ONE) }
}

#[kernel]
pub fn k(out: &mut [u32]) {
    out[0] = down(out[0]);
}
