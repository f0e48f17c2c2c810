#[kernel]
pub fn k(x: &[bf16], out: &mut [f32]) {
    let a = FragA::<bf16, 16, 8, 16>([x[0]; 8]);
    let b = FragB::<bf16, 16, 8, 16>([x[1]; 4]);
    let d = mma(b, a, FragC::<f32, 16, 8>([0.0; 4]));
    out[0] = d.x[0];
}
