static TABLE: [f32; 4] = [0.0, 1.0, 2.0, 4.0];

#[kernel]
pub fn k(out: &mut [f32]) {
    TABLE[0] = out[0];
}
