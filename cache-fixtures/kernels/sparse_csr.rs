// Sparse matrix-vector product, CSR format, one thread per row.
#[kernel]
pub fn spmv_csr(row_ptr: &[u32], cols: &[u32], vals: &[f64], x: &[f64], y: &mut [f64]) {
    let r = global_id_x();
    if r + 1 < row_ptr.len() {
        let mut s = 0.0;
        for k in row_ptr[r]..row_ptr[r + 1] {
            let kk = k as usize;
            s += vals[kk] * x[cols[kk] as usize];
        }
        y[r] = s;
    }
}

// Row lengths and the largest column index of each row, in integers.
#[kernel]
pub fn csr_row_stats(row_ptr: &[u32], cols: &[u32], len: &mut [u32], max_col: &mut [i64]) {
    let r = global_id_x();
    if r + 1 < row_ptr.len() {
        len[r] = row_ptr[r + 1] - row_ptr[r];
        let mut m: i64 = -1;
        for k in row_ptr[r] as usize..row_ptr[r + 1] as usize {
            m = m.max(cols[k] as i64);
        }
        max_col[r] = m;
    }
}
