// Row-wise softmax of a 2-d f32 array, one thread per row: max, exp, sum, normalise.
#[kernel]
pub fn softmax_rows(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let r = global_id_x();
    if r >= x.shape(0) {
        return;
    }
    let n = x.shape(1);
    let mut m = f32::NEG_INFINITY;
    for c in 0..n {
        m = m.max(x[[r, c]]);
    }
    let mut s = 0.0;
    for c in 0..n {
        let e = (x[[r, c]] - m).exp();
        y[[r, c]] = e;
        s += e;
    }
    let inv = 1.0 / s;
    for c in 0..n {
        y[[r, c]] *= inv;
    }
}

// Log-sum-exp per row in f64, with the result in a 1-d array.
#[kernel]
pub fn logsumexp_rows(x: &Array<f64, 2>, out: &mut [f64]) {
    let r = global_id_x();
    if r < x.shape(0) {
        let mut m = f64::MIN;
        for c in 0..x.shape(1) {
            if x[[r, c]] > m {
                m = x[[r, c]];
            }
        }
        let mut s = 0.0;
        for c in 0..x.shape(1) {
            s += (x[[r, c]] - m).exp();
        }
        out[r] = m + s.ln();
    }
}
