//! Generic device functions calling each other: type arguments inferred from arguments and
//! from the expected result, written with a turbofish, a `where` clause, a const parameter
//! (`window::<T, 3>`), and generic functions called from a kernel that is not generic.

fn lerp<T>(a: T, b: T, t: T) -> T
where
    T: Float,
{
    a + (b - a) * t
}

fn square<T: Num>(x: T) -> T {
    x * x
}

fn zero<T: Num>() -> T {
    T::ZERO
}

fn window<T: Num, const W: usize>(x: &[T], i: usize) -> T {
    let mut s: T = zero();
    for k in 0..W {
        if i + k < x.len() {
            s += x[i + k];
        }
    }
    s
}

fn sum_of_squares<T: Num>(x: &[T], base: usize, n: usize) -> T {
    let mut s = T::ZERO;
    for k in 0..n {
        if base + k < x.len() {
            s += square(x[base + k]);
        }
    }
    s
}

#[kernel]
pub fn device_calls<T: Float>(x: &[T], out: &mut [T]) {
    let i = global_id_x();
    if i < out.len() {
        let half = T::ONE / (2.0 as T);
        out[i] = lerp(x[i], square(x[i]), half) + window::<T, 3>(x, i) + sum_of_squares::<T>(x, i, 2);
    }
}

#[kernel]
pub fn concrete_calls(x: &[i32], y: &[f64], out_i: &mut [i32], out_f: &mut [f64]) {
    let i = global_id_x();
    if i < out_i.len() {
        out_i[i] = square(x[i]) + window::<i32, 4>(x, i) - zero::<i32>();
        out_f[i] = square(y[i]) + lerp(1.0, 2.0, y[i]) + window::<_, 2>(y, i);
    }
}
