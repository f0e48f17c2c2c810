// Gathers and scatters through index arrays of different integer types.
#[kernel]
pub fn gather(src: &[f64], idx: &[u32], out: &mut [f64]) {
    let i = global_id_x();
    if i < idx.len() {
        let j = idx[i] as usize;
        out[i] = if j < src.len() { src[j] } else { -1.0 };
    }
}

#[kernel]
pub fn scatter_add(values: &[i64], idx: &[usize], out: &mut [i64]) {
    let i = global_id_x();
    if i < values.len() {
        atomic_add(&mut out[idx[i] % out.len()], values[i]);
    }
}

// Gather from a 2-d table by (row, col) pairs held in a 2-d index array.
#[kernel]
pub fn gather_2d(table: &Array<i32, 2>, pairs: &Array<u64, 2>, out: &mut [i32]) {
    let i = global_id_x();
    if i < pairs.shape(0) {
        out[i] = table[[pairs[[i, 0]] as usize, pairs[[i, 1]] as usize]];
    }
}
