fn total<const N: usize>(a: [u32; N]) -> u32 {
    let mut s = 0;
    for v in a {
        s += v;
    }
    s
}

#[kernel]
pub fn k(x: &[u32], out: &mut [u32]) {
    out[0] = total(x[0]);
}
