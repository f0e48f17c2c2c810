#[kernel]
pub fn k(x: &[bf16], y: &[f16], out: &mut [f32]) {
    let a = FragA::<bf16, 16, 8, 16>([x[0]; 8]);
    let b = FragB::<f16, 16, 8, 16>([y[0]; 4]);
    let d = mma(a, b, FragC::<f32, 16, 8>([0.0; 4]));
    out[0] = d.x[0];
}
