#[kernel]
#[tune(V = [1, 300], block = 32, grid = 1)]
pub fn k<const V: u8>(x: &mut [f32]) {
    x[0] = V as f32;
}
