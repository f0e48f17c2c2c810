const N: u32 = 4;
static TABLE: [f32; N] = [1.0, 2.0, 3.0, 4.0];

#[kernel]
pub fn k(out: &mut [f32]) {
    out[0] = TABLE[0];
}
