// test-env: globals (PRICES: device &[f32], RATE: f32)
#[kernel]
pub fn k(out: &mut [f32]) {
    RATE = 2.0;
}
