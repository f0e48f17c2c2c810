//! Generic elementwise maps: clamping over any number type through a generic device function,
//! ReLU and a logistic over any float type, and a conversion between two element types (two
//! type parameters, cast with `as`).

fn clamp<T: Num>(x: T, lo: T, hi: T) -> T {
    x.max(lo).min(hi)
}

#[kernel]
pub fn clamp_all<T: Num>(x: &mut [T], lo: T, hi: T) {
    let i = global_id_x();
    if i < x.len() {
        x[i] = clamp(x[i], lo, hi);
    }
}

#[kernel]
pub fn relu<T: Float>(x: &mut [T]) {
    let i = global_id_x();
    if i < x.len() && x[i] < T::ZERO {
        x[i] = T::ZERO;
    }
}

#[kernel]
pub fn logistic<T: Float>(x: &[T], y: &mut [T]) {
    let i = global_id_x();
    if i < y.len() {
        y[i] = T::ONE / (T::ONE + (-x[i]).exp());
    }
}

/// `y[i] = x[i] as D`: every pair of number types is an instance (`convert::<u8, f32>`).
#[kernel]
pub fn convert<S, D>(x: &[S], y: &mut [D])
where
    S: Num,
    D: Num,
{
    let i = global_id_x();
    if i < y.len() {
        y[i] = x[i] as D;
    }
}
