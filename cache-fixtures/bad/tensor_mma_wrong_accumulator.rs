#[kernel]
pub fn k(x: &[i8], out: &mut [f32]) {
    let a = FragA::<i8, 16, 8, 32>([x[0]; 16]);
    let b = FragB::<i8, 16, 8, 32>([x[1]; 8]);
    let d = mma(a, b, FragC::<f32, 16, 8>([0.0; 4]));
    out[0] = d.x[0];
}
