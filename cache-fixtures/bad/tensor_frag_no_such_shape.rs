#[kernel]
pub fn k(out: &mut [f32]) {
    let a: FragA<bf16, 16, 8, 32> = FragA::<bf16, 16, 8, 32>([0.0; 16]);
    out[0] = a.x[0] as f32;
}
