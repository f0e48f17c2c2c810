// Single-pass ("online") softmax, one warp per row: each lane keeps a running maximum and a
// sum of exponentials rescaled to it over its columns, the warp combines the lanes' pairs with
// a butterfly of shuffles, then every lane writes its columns.
const FULL: u32 = 0xffff_ffff;

#[kernel]
pub fn softmax_rows_warp(x: &Array<f32, 2>, y: &mut Array<f32, 2>) {
    let row = global_id_x() / 32;
    if row < x.shape(0) {
        let lane = lane_id() as usize;
        let cols = x.shape(1);
        let mut m = f32::NEG_INFINITY;
        let mut s = 0.0f32;
        for j in (lane..cols).step_by(32) {
            let v = x[[row, j]];
            let m2 = m.max(v);
            s = s * (m - m2).exp() + (v - m2).exp();
            m = m2;
        }
        for k in 0..5 {
            let om = shfl_xor_sync(FULL, m, 1u32 << k);
            let os = shfl_xor_sync(FULL, s, 1u32 << k);
            let m2 = m.max(om);
            let a = if s == 0.0 { 0.0 } else { s * (m - m2).exp() };
            let b = if os == 0.0 { 0.0 } else { os * (om - m2).exp() };
            s = a + b;
            m = m2;
        }
        let inv = 1.0 / s;
        for j in (lane..cols).step_by(32) {
            y[[row, j]] = (x[[row, j]] - m).exp() * inv;
        }
    }
}
