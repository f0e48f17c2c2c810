// test-env: globals (PRICES: device &[f32], RATE: f32)
#[kernel]
pub fn k(out: &mut [f32]) {
    PRICES[0] = out[0];
}
