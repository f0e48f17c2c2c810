fn tile_sum<const N: usize>(x: &[f32], base: usize) -> f32 {
    let mut s = 0.0;
    for k in 0..N {
        s += x[base + k];
    }
    s
}

#[kernel]
pub fn k(x: &[f32], out: &mut [f32], n: usize) {
    out[0] = tile_sum::<n>(x, 0);
}
