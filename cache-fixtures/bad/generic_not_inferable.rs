fn zero<T: Num>() -> T {
    T::ZERO
}

#[kernel]
pub fn k(out: &mut [f32]) {
    let z = zero();
    out[0] = 1.0;
}
