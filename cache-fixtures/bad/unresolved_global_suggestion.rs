// test-env: globals (PRICES: device &[f32], RATE: f32)
#[kernel]
pub fn k(out: &mut [f32]) {
    let i = global_id_x();
    if i < out.len() {
        out[i] = PRICE[i] * RATE;
    }
}
