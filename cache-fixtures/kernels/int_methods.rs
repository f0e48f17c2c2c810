// Integer methods: wrapping_add/sub/mul, count_ones, leading_zeros, trailing_zeros, min, max,
// abs, on i32, i64, u32 and u64 (and usize).
#[kernel]
pub fn int_methods_i32(a: &[i32], b: &[i32], out: &mut Array<i32, 2>, bits: &mut Array<u32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x.wrapping_add(y);
        out[[i, 1]] = x.wrapping_sub(y);
        out[[i, 2]] = x.wrapping_mul(y);
        out[[i, 3]] = x.min(y);
        out[[i, 4]] = x.max(y);
        out[[i, 5]] = x.abs();
        bits[[i, 0]] = x.count_ones();
        bits[[i, 1]] = x.leading_zeros();
        bits[[i, 2]] = x.trailing_zeros();
    }
}

#[kernel]
pub fn int_methods_i64(a: &[i64], b: &[i64], out: &mut Array<i64, 2>, bits: &mut Array<u32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x.wrapping_add(y);
        out[[i, 1]] = x.wrapping_sub(y);
        out[[i, 2]] = x.wrapping_mul(y);
        out[[i, 3]] = x.min(y);
        out[[i, 4]] = x.max(y);
        out[[i, 5]] = x.abs();
        bits[[i, 0]] = x.count_ones();
        bits[[i, 1]] = x.leading_zeros();
        bits[[i, 2]] = x.trailing_zeros();
    }
}

#[kernel]
pub fn int_methods_u32(a: &[u32], b: &[u32], out: &mut Array<u32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x.wrapping_add(y);
        out[[i, 1]] = x.wrapping_sub(y);
        out[[i, 2]] = x.wrapping_mul(y);
        out[[i, 3]] = x.min(y);
        out[[i, 4]] = x.max(y);
        out[[i, 5]] = x.count_ones();
        out[[i, 6]] = x.leading_zeros();
        out[[i, 7]] = x.trailing_zeros();
    }
}

#[kernel]
pub fn int_methods_u64(a: &[u64], b: &[u64], out: &mut Array<u64, 2>, bits: &mut Array<u32, 2>) {
    let i = global_id_x();
    if i < a.len() {
        let x = a[i];
        let y = b[i];
        out[[i, 0]] = x.wrapping_add(y);
        out[[i, 1]] = x.wrapping_sub(y);
        out[[i, 2]] = x.wrapping_mul(y);
        out[[i, 3]] = x.min(y);
        out[[i, 4]] = x.max(y);
        bits[[i, 0]] = x.count_ones();
        bits[[i, 1]] = x.leading_zeros();
        bits[[i, 2]] = x.trailing_zeros();
    }
}

#[kernel]
pub fn int_methods_usize(a: &[usize], out: &mut [usize], bits: &mut [u32]) {
    let i = global_id_x();
    if i < a.len() {
        out[i] = a[i].wrapping_mul(3).max(i).min(1 << 40);
        bits[i] = a[i].count_ones() + a[i].leading_zeros() * 100;
    }
}
