// Closures as values: local closures capturing by value, passed to generic functions bounded
// by `Fn` and `FnMut` and to `impl Fn` parameters and called there (in loops too), `move`
// closures with state, and closures that change what they capture.

fn apply<F: Fn(f32) -> f32>(f: F, x: f32) -> f32 {
    f(x)
}

fn apply_twice(f: impl Fn(f32) -> f32, x: f32) -> f32 {
    f(f(x))
}

fn sum_over<F>(n: usize, f: F) -> f32
where
    F: Fn(usize) -> f32,
{
    let mut s = 0.0;
    for k in 0..n {
        s += f(k);
    }
    s
}

fn for_each<F: FnMut(usize)>(n: usize, mut f: F) {
    for k in 0..n {
        f(k);
    }
}

fn compose<A: Fn(i32) -> i32, B: Fn(i32) -> i32>(a: A, b: B, x: i32) -> i32 {
    b(a(x))
}

fn double(x: f32) -> f32 {
    x * 2.0
}

#[kernel]
pub fn closures(x: &[f32], out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        let scale = x[i];
        let offset = 0.5;
        let affine = |v: f32| v * scale + offset;
        let square = |v| v * v;
        let mut r = apply(affine, 2.0) + apply_twice(square, 1.5) + apply(double, x[i]);
        r += sum_over(4, |k| x[(i + k) % x.len()] * affine(k as f32));
        let mut acc = 0.0;
        for_each(3, |k| acc += x[(i + k) % x.len()]);
        r += acc;
        let mut count = 0;
        let mut bump = || {
            count += 2;
            count
        };
        bump();
        r += bump() as f32 + count as f32;
        out[i] = r;
    }
}

#[kernel]
pub fn stateful(x: &[i32], out: &mut [i32]) {
    let i = global_id_x();
    if i < out.len() {
        let base = x[i];
        let mut next = {
            let mut n = base;
            move || {
                n += 1;
                n
            }
        };
        let a = next();
        let b = next();
        let add = |y: i32| y + base;
        let neg = |y: i32| -y;
        out[i] = a * 10 + b + compose(add, neg, 3) + compose(|y| y * 3, add, b);
    }
}
