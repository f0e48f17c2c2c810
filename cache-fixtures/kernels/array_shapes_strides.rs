// len/shape/stride on arrays of 1 to 4 dimensions; strides are in elements and depend on the
// argument's layout (C, F or any), so the same kernel reports different strides.
#[kernel]
pub fn describe_1d(a: &Array<f32, 1>, out: &mut [usize]) {
    if global_id_x() == 0 {
        out[0] = a.len();
        out[1] = a.shape(0);
        out[2] = a.stride(0);
    }
}

#[kernel]
pub fn describe_2d(a: &Array<i64, 2>, out: &mut [usize]) {
    if global_id_x() == 0 {
        out[0] = a.len();
        for d in 0..2 {
            out[1 + d] = a.shape(d);
            out[3 + d] = a.stride(d);
        }
    }
}

#[kernel]
pub fn describe_3d(a: &mut Array<u32, 3>, out: &mut [usize]) {
    if global_id_x() == 0 {
        out[0] = a.len();
        for d in 0..3 {
            out[1 + d] = a.shape(d);
            out[4 + d] = a.stride(d);
        }
        a[[0, 0, 0]] += 1;
    }
}

#[kernel]
pub fn describe_4d(a: &Array<f64, 4>, out: &mut [usize]) {
    if global_id_x() == 0 {
        out[0] = a.len();
        let mut d = 0;
        while d < 4 {
            out[1 + d] = a.shape(d);
            out[5 + d] = a.stride(d);
            d += 1;
        }
    }
}

// Sum over the last axis of a 4-d array into a 3-d array, one thread per output element.
#[kernel]
pub fn sum_last_axis_4d(a: &Array<f64, 4>, out: &mut Array<f64, 3>) {
    let i = global_id_x();
    let n0 = a.shape(0);
    let n1 = a.shape(1);
    let n2 = a.shape(2);
    if i < n0 * n1 * n2 {
        let p = i / (n1 * n2);
        let q = (i / n2) % n1;
        let r = i % n2;
        let mut s = 0.0;
        for l in 0..a.shape(3) {
            s += a[[p, q, r, l]];
        }
        out[[p, q, r]] = s;
    }
}

// Permutes a 4-d array's axes: out[[l, k, j, i]] = a[[i, j, k, l]] * 2.
#[kernel]
pub fn permute_4d(a: &Array<i32, 4>, out: &mut Array<i32, 4>) {
    let n = a.len();
    let idx = global_id_x();
    if idx < n {
        let l = idx % a.shape(3);
        let k = (idx / a.shape(3)) % a.shape(2);
        let j = (idx / (a.shape(3) * a.shape(2))) % a.shape(1);
        let i = idx / (a.shape(3) * a.shape(2) * a.shape(1));
        out[[l, k, j, i]] = a[[i, j, k, l]] * 2;
    }
}

// 1-d `&mut Array<T, 1>` indexed both ways.
#[kernel]
pub fn array1_both_index_forms(a: &mut Array<u64, 1>) {
    let i = global_id_x();
    if i < a.len() {
        a[[i]] = a[i] * 10 + 1;
    }
}
