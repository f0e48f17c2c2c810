// What prebuilt host code calls at run time: shared memory and the block barrier (a tree sum
// per block), and the math functions (each float method that is a function call on the CPU).
const BLOCK: usize = 128;

#[kernel]
pub fn block_sums(x: &[f32], sums: &mut [f32]) {
    let tile = shared_array::<f32, BLOCK>();
    let t = thread_idx_x() as usize;
    let i = global_id_x();
    tile[t] = if i < x.len() { x[i] } else { 0.0 };
    sync_threads();
    let mut stride = BLOCK / 2;
    while stride > 0 {
        if t < stride {
            tile[t] += tile[t + stride];
        }
        sync_threads();
        stride /= 2;
    }
    if t == 0 {
        sums[block_idx_x() as usize] = tile[0];
    }
}

#[kernel]
pub fn math64(x: &[f64], out: &mut Array<f64, 2>) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        out[[i, 0]] = v.exp() + v.exp2() + v.ln() + v.log2() + v.log10();
        out[[i, 1]] = v.sin() + v.cos() + v.tan() + (v / 4.0).asin() + (v / 4.0).acos() + v.atan();
        out[[i, 2]] = v.sinh() + v.cosh() + v.tanh() + v.cbrt() + v.atan2(2.0) + v.powf(1.5) + v.hypot(3.0) + v.powi(3);
        out[[i, 3]] = v.exp_m1() + v.ln_1p() + v.rsqrt() + v.exp10() + (v.erf() + v.erfc());
    }
}

#[kernel]
pub fn math32(x: &[f32], out: &mut Array<f32, 2>) {
    let i = global_id_x();
    if i < x.len() {
        let v = x[i];
        out[[i, 0]] = v.exp() + v.exp2() + v.ln() + v.log2() + v.log10();
        out[[i, 1]] = v.sin() + v.cos() + v.tan() + (v / 4.0).asin() + (v / 4.0).acos() + v.atan();
        out[[i, 2]] = v.sinh() + v.cosh() + v.tanh() + v.cbrt() + v.atan2(2.0) + v.powf(1.5) + v.hypot(3.0) + v.powi(3);
        out[[i, 3]] = v.exp_m1() + v.ln_1p() + v.rsqrt() + v.exp10() + (v.erf() + v.erfc());
    }
}
