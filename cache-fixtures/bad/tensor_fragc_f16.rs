#[kernel]
pub fn k(out: &mut [f32]) {
    let c = FragC::<f16, 16, 8>([0.0; 4]);
    out[0] = c.x[0] as f32;
}
