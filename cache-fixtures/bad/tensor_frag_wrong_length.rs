#[kernel]
pub fn k(out: &mut [f32]) {
    let a = FragA::<bf16, 16, 8, 16>([0.0; 4]);
    out[0] = a.x[0] as f32;
}
