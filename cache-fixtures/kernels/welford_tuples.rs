//! Mean and variance per row with Welford's method: the running state is a tuple
//! `(count, mean, m2)` passed to and returned from device functions, and two states are merged
//! as Chan et al. do, which is how a parallel reduction combines partial results.

fn push(state: (f32, f32, f32), x: f32) -> (f32, f32, f32) {
    let (n, mean, m2) = state;
    let n1 = n + 1.0;
    let d = x - mean;
    let mean1 = mean + d / n1;
    (n1, mean1, m2 + d * (x - mean1))
}

fn merge(a: (f32, f32, f32), b: (f32, f32, f32)) -> (f32, f32, f32) {
    let (na, ma, qa) = a;
    let (nb, mb, qb) = b;
    if nb == 0.0 {
        return a;
    }
    let n = na + nb;
    let d = mb - ma;
    (n, ma + d * nb / n, qa + qb + d * d * na * nb / n)
}

#[kernel]
pub fn row_mean_var(x: &Array<f32, 2>, mean: &mut [f32], var: &mut [f32]) {
    let r = global_id_x();
    if r < x.shape(0) {
        let cols = x.shape(1);
        let half = cols / 2;
        // Two halves, each folded on its own, then merged.
        let mut left = (0.0f32, 0.0f32, 0.0f32);
        for c in 0..half {
            left = push(left, x[[r, c]]);
        }
        let mut right = (0.0, 0.0, 0.0);
        for c in half..cols {
            right = push(right, x[[r, c]]);
        }
        let (n, m, q) = merge(left, right);
        mean[r] = m;
        var[r] = if n > 1.0 { q / (n - 1.0) } else { 0.0 };
    }
}
